/* Fuzzed .npy files: hostile headers written by hand (shapes that overflow
 * or lie about the data, huge header lengths, dtypes, versions, broken
 * dict syntax), truncated and overlong data, and deterministic random byte
 * changes of valid files. Wanted of each: npy_read returns an array whose
 * element count matches its shape, or -1 with a message that starts with
 * the file's path (never empty, never "(null)"); no crash, no sanitizer
 * report, no allocation the file's size does not justify. Then the shape
 * checks verify needs of a golden file (npy_read_shaped, npy_check_shape),
 * npy_elems, and writes that must be refused (negative or huge shapes)
 * without leaving a temporary file.
 */
#include "npy.h"
#include "check.h"
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N_FLIPS 240

static char dir[256], path[320];
static int cases, faults;
static char first_fault[1024];

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x9e3779b97f4a7c15ull;
}

static void put(const char *p, const void *data, size_t n)
{
	FILE *f = fopen(p, "wb");
	if (f) {
		fwrite(data, 1, n, f);
		fclose(f);
	}
}

static void fault(const char *name, const char *what)
{
	faults++;
	if (!first_fault[0])
		snprintf(first_fault, sizeof first_fault, "%s: %s", name, what);
}

/* Reads path; holds the outcome to what every read must be. */
static int read_case(const char *name, const char *p)
{
	double *data = NULL;
	long shape[NPY_MAXDIM];
	int ndim = -1;
	char err[1024] = "";
	cases++;
	int rc = npy_read(p, &data, shape, &ndim, err, sizeof err);
	if (rc) {
		char m[1200];
		snprintf(m, sizeof m, "message \"%s\"", err);
		if (!err[0] || strncmp(err, p, strlen(p)) || strstr(err, "(null)"))
			fault(name, m);
		return -1;
	}
	long n;
	if (ndim < 0 || ndim > NPY_MAXDIM || npy_elems(shape, ndim, &n) || !data)
		fault(name, "read, but its shape is not one npy_elems accepts");
	free(data);
	return 0;
}

/* A file: magic, version, header length (2 bytes for 1.x, 4 otherwise),
 * dict padded as numpy does, then data bytes of a given length. */
static void raw(const char *p, int major, const char *dict, long long hlen_field, size_t data_bytes)
{
	size_t dl = strlen(dict), pre = major == 1 ? 10 : 12;
	size_t hlen = (pre + dl + 1 + 63) / 64 * 64 - pre;
	size_t total = pre + hlen + data_bytes;
	unsigned char *b = calloc(1, total + 1);
	if (!b)
		return;
	memcpy(b, "\x93NUMPY", 6);
	b[6] = (unsigned char)major;
	b[7] = 0;
	unsigned long long hf = hlen_field >= 0 ? (unsigned long long)hlen_field : hlen;
	for (size_t i = 0; i < pre - 8; i++)
		b[8 + i] = (unsigned char)(hf >> (8 * i));
	memcpy(b + pre, dict, dl);
	memset(b + pre + dl, ' ', hlen - dl - 1);
	b[pre + hlen - 1] = '\n';
	for (size_t i = 0; i < data_bytes; i++)
		b[pre + hlen + i] = (unsigned char)(i * 7);
	put(p, b, total);
	free(b);
}

typedef struct {
	const char *name, *dict;
	int major;
	long long hlen; /* -1: the true length */
	size_t data;    /* bytes of data after the header */
	int ok;         /* 1: must read; 0: must be refused */
} Hdr;

#define D(shape, descr) "{'descr': '" descr "', 'fortran_order': False, 'shape': " shape ", }"

static const Hdr HDRS[] = {
        {"a valid f8 (2, 3)", D("(2, 3)", "<f8"), 1, -1, 48, 1},
        {"a valid f4 (5,)", D("(5,)", "<f4"), 1, -1, 20, 1},
        {"a scalar", D("()", "<f8"), 1, -1, 8, 1},
        {"an empty array (0, 3)", D("(0, 3)", "<f4"), 1, -1, 0, 1},
        {"version 2.0", D("(3,)", "<f8"), 2, -1, 24, 1},
        {"version 3.0", D("(3,)", "<f8"), 3, -1, 24, 1},
        {"version 0.0", D("(3,)", "<f8"), 0, -1, 24, 0},
        {"version 255", D("(3,)", "<f8"), 255, -1, 24, 0},
        {"a dimension of 20 digits", D("(99999999999999999999,)", "<f8"), 1, -1, 8, 0},
        {"a dimension of 2^63-1", D("(9223372036854775807,)", "<f8"), 1, -1, 8, 0},
        {"2^32 x 2^32 elements (the product wraps 64 bits as bytes)", D("(4294967296, 4294967296)", "<f8"), 1, -1, 8,
         0},
        {"2^31 x 2^31 x 4 elements", D("(2147483648, 2147483648, 4)", "<f4"), 1, -1, 8, 0},
        {"2^40 + 1 elements", D("(1099511627777,)", "<f4"), 1, -1, 8, 0},
        {"2^36 elements, 8 bytes of data", D("(68719476736,)", "<f8"), 1, -1, 8, 0},
        {"a negative dimension", D("(-1,)", "<f8"), 1, -1, 8, 0},
        {"9 dimensions", D("(1, 1, 1, 1, 1, 1, 1, 1, 1)", "<f8"), 1, -1, 8, 0},
        {"8 dimensions", D("(1, 1, 1, 1, 1, 1, 1, 2)", "<f8"), 1, -1, 16, 1},
        {"an unclosed shape", D("(3,", "<f8"), 1, -1, 24, 0},
        {"a shape of a lone comma", D("(,)", "<f8"), 1, -1, 8, 0},
        {"dimensions without a comma", D("(3 4)", "<f8"), 1, -1, 96, 0},
        {"a hexadecimal dimension", D("(0x10,)", "<f8"), 1, -1, 128, 0},
        {"a real dimension", D("(1e3,)", "<f8"), 1, -1, 8, 0},
        {"a shape that is a list", D("[3]", "<f8"), 1, -1, 24, 0},
        {"dtype float16", D("(3,)", "<f2"), 1, -1, 6, 0},
        {"dtype big-endian f8", D("(3,)", ">f8"), 1, -1, 24, 0},
        {"dtype uint8", D("(3,)", "|u1"), 1, -1, 3, 0},
        {"a dtype of 100 characters",
         D("(3,)", "<f8xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
         1, -1, 24, 0},
        {"fortran order", "{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }", 1, -1, 24, 0},
        {"fortran order as a string", "{'descr': '<f8', 'fortran_order': 'False', 'shape': (3,), }", 1, -1, 24, 0},
        {"no shape", "{'descr': '<f8', 'fortran_order': False, }", 1, -1, 24, 0},
        {"an unknown key", "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'x': 1, }", 1, -1, 24, 0},
        {"an unterminated key", "{'descr", 1, -1, 24, 0},
        {"not a dict", "[1, 2, 3]", 1, -1, 24, 0},
        {"an empty header", "", 1, -1, 24, 0},
        {"text after the dict", D("(3,)", "<f8") " junk", 1, -1, 24, 0},
        {"a key of 40 characters", "{'descrdescrdescrdescrdescrdescrdescrdescr': '<f8'}", 1, -1, 24, 0},
        {"a key given twice", "{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 1, -1, 12,
         1},
        {"data one byte short", D("(3,)", "<f8"), 1, -1, 23, 0},
        {"data one byte long", D("(3,)", "<f8"), 1, -1, 25, 0},
        {"no data at all", D("(3,)", "<f8"), 1, -1, 0, 0},
        {"a header length of 0", D("(3,)", "<f8"), 1, 0, 24, 0},
        {"a header length past the file", D("(3,)", "<f8"), 1, 65535, 24, 0},
        {"a 2.0 header length of 2^32-1", D("(3,)", "<f8"), 2, 4294967295LL, 24, 0},
        {"a 2.0 header length of 1 MiB", D("(3,)", "<f8"), 2, 1 << 20, 24, 0},
};

static void header_cases(void)
{
	int wrong = 0;
	char first[512] = "";
	for (size_t i = 0; i < sizeof HDRS / sizeof *HDRS; i++) {
		const Hdr *h = &HDRS[i];
		raw(path, h->major, h->dict, h->hlen, h->data);
		int rc = read_case(h->name, path);
		if ((rc == 0) != h->ok) {
			wrong++;
			if (!first[0])
				snprintf(first, sizeof first, "%s: %s", h->name, rc ? "refused" : "read");
		}
	}
	check(wrong == 0, "hand-made headers: the valid ones read, every other refused with a message", "%zu files; %s",
	      sizeof HDRS / sizeof *HDRS, first);
	/* not .npy files at all */
	put(path, "", 0);
	read_case("an empty file", path);
	put(path, "\x93NUMPY", 6);
	read_case("six bytes", path);
	put(path, "PK\x03\x04 not numpy", 15);
	read_case("a zip", path);
	read_case("a folder", dir);
	char missing[400];
	snprintf(missing, sizeof missing, "%s/no/such.npy", dir);
	read_case("a missing file", missing);
	check(faults == 0, "and every refusal a message starting with the file's path", "%s", first_fault);
}

/* Valid files of several shapes, each changed at random bytes. */
static void flip_cases(void)
{
	static const long shapes[][3] = {{2, 37, 64}, {5, 0, 0}, {3, 4, 0}};
	static const int nd[] = {3, 1, 2};
	int read_ok = 0;
	for (int i = 0; i < N_FLIPS; i++) {
		int k = i % 3, f32 = (i / 3) % 2;
		char err[512];
		long n = 1;
		for (int d = 0; d < nd[k]; d++)
			n *= shapes[k][d];
		double *v = calloc((size_t)n + 1, sizeof *v);
		float *w = calloc((size_t)n + 1, sizeof *w);
		int rc = f32 ? npy_write_f32(path, w, shapes[k], nd[k], err, sizeof err)
		             : npy_write_f64(path, v, shapes[k], nd[k], err, sizeof err);
		free(v);
		free(w);
		if (rc) {
			fault("a valid write", err);
			continue;
		}
		FILE *f = fopen(path, "r+b");
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		long size = ftell(f);
		int changes = 1 + (int)(rnd() % 4);
		for (int c = 0; c < changes; c++) {
			/* mostly in the header, where the parsing is */
			long at = (long)(rnd() % (uint64_t)(rnd() % 4 ? (size < 128 ? size : 128) : size));
			fseek(f, at, SEEK_SET);
			fputc((int)(rnd() & 0xff), f);
		}
		fclose(f);
		if (rnd() % 5 == 0 && truncate(path, (off_t)(rnd() % (uint64_t)size)) != 0)
			fault("truncate", path);
		char name[64];
		snprintf(name, sizeof name, "byte change %d", i);
		read_ok += read_case(name, path) == 0;
	}
	check(faults == 0, "random byte changes of valid files: read or refused with a message, never a crash",
	      "%d files, %d still read; %s", N_FLIPS, read_ok, first_fault);
}

/* Every tests/fuzz/npy/NAME.npy: files that once broke something. */
static void corpus_cases(void)
{
	const char *src = getenv("RECUR_SOURCE_DIR");
	char cdir[512];
	snprintf(cdir, sizeof cdir, "%s/tests/fuzz/npy", src && *src ? src : RECUR_SOURCE_DIR);
	DIR *d = opendir(cdir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".npy"))
			continue;
		char p[1024];
		snprintf(p, sizeof p, "%s/%s", cdir, e->d_name);
		read_case(e->d_name, p);
		n++;
	}
	if (d)
		closedir(d);
	check(n > 0 && faults == 0, "the corpus of tests/fuzz/npy: read or refused with a message", "%d files; %s", n,
	      first_fault);
}

/* What verify needs of a golden file: its shape against B, L, D. */
static void shape_checks(void)
{
	char err[512];
	long shp[3] = {2, 37, 64}, want[3] = {2, 37, 128}, one[1] = {5};
	double v[2 * 37 * 64] = {0};
	float *w = calloc(2 * 37 * 64, sizeof *w);
	double *data = NULL;
	npy_write_f32(path, w, shp, 3, err, sizeof err);
	free(w);
	int rc = npy_read_shaped(path, &data, shp, 3, "(B, L, D)", err, sizeof err);
	check(rc == 0 && data, "a golden file of the expected shape reads", "%s", rc ? err : "");
	free(data);
	data = (double *)v;
	rc = npy_read_shaped(path, &data, want, 3, "(B, L, D)", err, sizeof err);
	check(rc != 0 && !data && strstr(err, path) && strstr(err, "(2, 37, 64)") &&
	              strstr(err, "(B, L, D) is (2, 37, 128)"),
	      "one of another shape: refused, both shapes in the message, *data NULL", "%s", err);
	rc = npy_read_shaped(path, &data, one, 1, "parameter lam (D,)", err, sizeof err);
	check(rc != 0 && strstr(err, "(5,)"), "and of another rank", "%s", err);
	rc = npy_check_shape("g.npy", shp, 3, shp, 3, "(B, L, D)", err, sizeof err);
	check(rc == 0, "npy_check_shape of equal shapes", NULL);

	long n = -1, big[2] = {1L << 20, (1L << 20) + 1}, neg[2] = {3, -1}, ovf[3] = {1L << 62, 4, 4};
	rc = npy_elems(shp, 3, &n);
	check(rc == 0 && n == 2 * 37 * 64, "npy_elems of (2, 37, 64)", "%ld", n);
	check(npy_elems(big, 2, &n) != 0, "npy_elems past 2^40", NULL);
	check(npy_elems(neg, 2, &n) != 0, "npy_elems of a negative dimension", NULL);
	check(npy_elems(ovf, 3, &n) != 0, "npy_elems whose product wraps 64 bits", NULL);
	check(npy_elems(shp, NPY_MAXDIM + 1, &n) != 0 && npy_elems(shp, -1, &n) != 0, "npy_elems of a bad rank", NULL);
	rc = npy_elems(shp, 0, &n);
	check(rc == 0 && n == 1, "npy_elems of a scalar: 1", "%ld", n);
}

/* Writes that must be refused, leaving nothing behind. */
static void write_refusals(void)
{
	char err[512], out[400];
	float x[4] = {0};
	long neg[1] = {-4}, ovf[3] = {1L << 62, 4, 4}, ok[1] = {4};
	snprintf(out, sizeof out, "%s/w.npy", dir);
	int rc = npy_write_f32(out, x, neg, 1, err, sizeof err);
	check(rc != 0 && strstr(err, out), "a negative dimension is not written", "%s", err);
	rc = npy_write_f32(out, x, ovf, 3, err, sizeof err);
	check(rc != 0 && strstr(err, "2^40"), "a shape whose product wraps is not written", "%s", err);
	rc = npy_write_f32(out, x, ok, NPY_MAXDIM + 1, err, sizeof err);
	check(rc != 0, "nor 9 dimensions", "%s", err);
	rc = npy_write_f32(dir, x, ok, 1, err, sizeof err);
	check(rc != 0 && strstr(err, dir), "writing over a folder: refused, named", "%s", err);
	snprintf(out, sizeof out, "%s/no/such/w.npy", dir);
	rc = npy_write_f32(out, x, ok, 1, err, sizeof err);
	check(rc != 0 && strstr(err, out), "writing into a missing folder: refused, named", "%s", err);
	/* nothing but the test's own file is left in the folder */
	DIR *d = opendir(dir);
	struct dirent *e;
	int stray = 0;
	while (d && (e = readdir(d)))
		stray += strstr(e->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	check(stray == 0, "no temporary file left behind", "%d", stray);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_fuzz_npy.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof path, "%s/f.npy", dir);
	header_cases();
	corpus_cases();
	flip_cases();
	shape_checks();
	write_refusals();
	printf("  %d files read\n", cases);
	unlink(path);
	char w[400];
	snprintf(w, sizeof w, "%s/w.npy", dir);
	unlink(w);
	rmdir(dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
