/* .npy reading and writing: float32/float64 round trips over several shapes
 * (a scalar and an empty array included), a hand-made version 2.0 file, and
 * malformed or missing files, whose error messages must name the path.
 */
#include "npy.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

static int passed, failed;
static char dir[256];

static void verdict(int ok, const char *what, const char *detail)
{
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
	ok ? passed++ : failed++;
}

static void round_trip(int f32, const long *shape, int ndim)
{
	char path[512], err[512], what[128];
	long n = 1;
	int k = snprintf(what, sizeof what, "round trip %s shape (", f32 ? "f32" : "f64");
	for (int i = 0; i < ndim; i++) {
		n *= shape[i];
		k += snprintf(what + k, sizeof what - k, i ? ", %ld" : "%ld", shape[i]);
	}
	snprintf(what + k, sizeof what - k, ")");
	snprintf(path, sizeof path, "%s/a.npy", dir);

	double *ref = malloc((n ? n : 1) * sizeof(double));
	float *ref32 = malloc((n ? n : 1) * sizeof(float));
	for (long i = 0; i < n; i++) {
		/* values exact in float32 for the f32 case, full doubles otherwise */
		ref32[i] = (float)(i * 0.37 - 3.1);
		ref[i] = f32 ? ref32[i] : i * 0.1234567890123 + 1.0 / 3.0;
	}
	int rc = f32 ? npy_write_f32(path, ref32, shape, ndim, err, sizeof err)
	             : npy_write_f64(path, ref, shape, ndim, err, sizeof err);
	double *got = NULL;
	long gshape[NPY_MAXDIM];
	int gndim = -1, ok = rc == 0;
	if (ok)
		ok = npy_read(path, &got, gshape, &gndim, err, sizeof err) == 0;
	if (ok) {
		ok = gndim == ndim;
		for (int i = 0; ok && i < ndim; i++)
			ok = gshape[i] == shape[i];
		for (long i = 0; ok && i < n; i++)
			ok = got[i] == ref[i];
		if (!ok)
			snprintf(err, sizeof err, "shape or values differ");
	}
	/* the atomic write leaves no temporary behind */
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	if (ok && access(tmp, F_OK) == 0) {
		ok = 0;
		snprintf(err, sizeof err, "temporary file left behind");
	}
	verdict(ok, what, ok ? "" : err);
	free(got);
	free(ref);
	free(ref32);
	remove(path);
}

static void write_raw(const char *path, const void *bytes, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(bytes, 1, n, f);
		fclose(f);
	}
}

/* A file with the given version and dict, followed by nbytes of data. */
static void write_npy(const char *path, int major, const char *dict, size_t nbytes)
{
	unsigned char buf[4096] = { 0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0 };
	size_t len = strlen(dict), off = major == 1 ? 10 : 12;
	size_t hlen = len + 1;
	for (int i = 0; i < (major == 1 ? 2 : 4); i++)
		buf[8 + i] = (unsigned char)(hlen >> (8 * i));
	memcpy(buf + off, dict, len);
	buf[off + len] = '\n';
	memset(buf + off + hlen, 0, nbytes);   /* zero bytes are 0.0 in both dtypes */
	write_raw(path, buf, off + hlen + nbytes);
}

/* npy_read must fail with a message that contains the path (and the hint). */
static void must_fail(const char *what, const char *path, const char *hint)
{
	char err[512] = "";
	double *d = NULL;
	long shape[NPY_MAXDIM];
	int ndim;
	int rc = npy_read(path, &d, shape, &ndim, err, sizeof err);
	int ok = rc != 0 && strstr(err, path) && (!hint || strstr(err, hint));
	char detail[700];
	snprintf(detail, sizeof detail, "rc %d, message \"%s\"", rc, err);
	verdict(ok, what, detail);
	if (rc == 0)
		free(d);
	remove(path);
}

/* the number of entries of dir whose name holds ".tmp." (a writer's leftovers) */
static int leftovers(void)
{
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strstr(e->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return n;
}

static int read_first(const char *path, double *v)
{
	double *d = NULL;
	long shape[NPY_MAXDIM];
	int ndim = 0;
	char err[512];
	int ok = npy_read(path, &d, shape, &ndim, err, sizeof err) == 0 && ndim == 1 && shape[0] >= 1;
	if (ok)
		*v = d[0];
	free(d);
	return ok;
}

/* A written file replaces its target whole (util/fsutil.h's FsOut): a link
 * stays a link to the rewritten file, the target's permissions stay, no
 * temporary file is left, and a failed write leaves the old file and
 * names the path. */
static void replace_whole(void)
{
	char file[512], link[512], err[512];
	long s1[] = { 1 };
	double one = 1.0, two = 2.0, v = 0;
	snprintf(file, sizeof file, "%s/target.npy", dir);
	snprintf(link, sizeof link, "%s/link.npy", dir);
	int ok = npy_write_f64(file, &one, s1, 1, err, sizeof err) == 0 && chmod(file, 0640) == 0 &&
	         symlink("target.npy", link) == 0 && npy_write_f64(link, &two, s1, 1, err, sizeof err) == 0;
	struct stat st, sl;
	ok = ok && lstat(link, &sl) == 0 && S_ISLNK(sl.st_mode) && stat(file, &st) == 0 && (st.st_mode & 0777) == 0640 &&
	     read_first(file, &v) && v == 2.0;
	verdict(ok, "a write through a link rewrites the file it names, the link and the mode kept", ok ? "" : err);
	verdict(leftovers() == 0, "no temporary file is left beside the written files", NULL);
	/* a folder in the way of the temporary file: the write fails before the target is touched */
	char blocker[600];
	snprintf(blocker, sizeof blocker, "%s.tmp.%ld.0", file, (long)getpid());
	int rc = mkdir(blocker, 0755) == 0 ? 0 : -1;
	for (int k = 1; rc == 0 && k < 100; k++) {
		snprintf(blocker, sizeof blocker, "%s.tmp.%ld.%d", file, (long)getpid(), k);
		rc = mkdir(blocker, 0755);
	}
	rc = rc == 0 ? npy_write_f64(file, &one, s1, 1, err, sizeof err) : 0;
	ok = rc != 0 && strstr(err, file) && read_first(file, &v) && v == 2.0;
	verdict(ok, "a write that cannot start leaves the old file and names it", err);
	for (int k = 0; k < 100; k++) {
		snprintf(blocker, sizeof blocker, "%s.tmp.%ld.%d", file, (long)getpid(), k);
		rmdir(blocker);
	}
	/* a device is written in place; one that fills up is an error naming it */
	if (access("/dev/full", W_OK) == 0) {
		rc = npy_write_f64("/dev/full", &one, s1, 1, err, sizeof err);
		verdict(rc != 0 && strstr(err, "/dev/full"), "a write to a full device fails and names it", err);
	}
	remove(link);
	remove(file);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_npy.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		printf("SKIP: cannot create a temporary directory under %s\n", base ? base : "/tmp");
		return 77;
	}
	long s1[] = { 7 }, s2[] = { 3, 4 }, s3[] = { 2, 3, 5 }, s0[] = { 0 }, s4[] = { 1, 1, 2, 1 };
	for (int f32 = 0; f32 < 2; f32++) {
		round_trip(f32, NULL, 0);
		round_trip(f32, s1, 1);
		round_trip(f32, s2, 2);
		round_trip(f32, s3, 3);
		round_trip(f32, s0, 1);
		round_trip(f32, s4, 4);
	}

	char path[512], err[512];
	snprintf(path, sizeof path, "%s/v2.npy", dir);
	write_npy(path, 2, "{\"shape\": (2, 3), \"fortran_order\": False, \"descr\": \"<f4\"}", 24);
	{
		double *d = NULL;
		long shape[NPY_MAXDIM];
		int ndim = 0;
		int ok = npy_read(path, &d, shape, &ndim, err, sizeof err) == 0 && ndim == 2 &&
		         shape[0] == 2 && shape[1] == 3 && d[5] == 0.0;
		verdict(ok, "version 2.0 header, keys reordered, double quotes", ok ? "" : err);
		free(d);
		remove(path);
	}

	snprintf(path, sizeof path, "%s/missing.npy", dir);
	must_fail("missing file", path, NULL);
	snprintf(path, sizeof path, "%s/bad.npy", dir);
	write_raw(path, "not numpy at all", 16);
	must_fail("bad magic", path, "magic");
	write_npy(path, 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", 16);
	must_fail("big-endian descr", path, ">f8");
	write_npy(path, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8);
	must_fail("integer descr", path, "<i4");
	write_npy(path, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", 32);
	must_fail("fortran order", path, "fortran");
	write_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, }", 8);
	must_fail("no shape", path, "shape");
	write_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, x), }", 16);
	must_fail("bad shape", path, "shape");
	write_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,) ", 16);
	must_fail("unterminated dict", path, NULL);
	write_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 16);
	must_fail("truncated data", path, "truncated");
	write_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", 16);
	must_fail("trailing data", path, NULL);
	write_npy(path, 7, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", 8);
	must_fail("unknown version", path, "version");
	write_raw(path, "\x93NUMPY\x01\x00\x50\x00{'descr'", 17);
	must_fail("truncated header", path, "header");

	long big[NPY_MAXDIM + 1] = { 0 };
	snprintf(path, sizeof path, "%s/toomany.npy", dir);
	int rc = npy_write_f64(path, NULL, big, NPY_MAXDIM + 1, err, sizeof err);
	verdict(rc != 0 && strstr(err, path), "write refuses too many dimensions", err);

	replace_whole();

	rmdir(dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
