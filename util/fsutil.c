/* Small file-system helpers (see fsutil.h). */
#define _GNU_SOURCE   /* realpath; renameat2's RENAME_EXCHANGE (glibc 2.28) */
#include "fsutil.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

int fs_mkdirs_for(const char *path, char *err, size_t errlen)
{
	char d[4096];
	snprintf(d, sizeof d, "%s", path);
	char *slash = strrchr(d, '/');
	if (!slash || slash == d)
		return 0;
	*slash = 0;
	for (char *p = d + 1; ; p++) {
		if (*p == '/' || *p == 0) {
			char c = *p;
			*p = 0;
			if (mkdir(d, 0755) != 0 && errno != EEXIST) {
				snprintf(err, errlen, "cannot create folder %s: %s", d, strerror(errno));
				return -1;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	return 0;
}

int fs_write_file(const char *path, const char *data, size_t n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	int ok = fwrite(data, 1, n, f) == n;
	int werr = errno;
	if (fclose(f) != 0 && ok) {   /* a delayed write error shows at close */
		ok = 0;
		werr = errno;
	}
	if (!ok) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(werr));
		return -1;
	}
	return 0;
}

/* The file a target names: a symbolic link's target, so the link stays. */
static void out_target(const char *path, char *out, size_t n)
{
	struct stat st;
	char *real = NULL;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		real = realpath(path, NULL);   /* NULL for a dangling link: then the link is replaced */
	snprintf(out, n, "%s", real ? real : path);
	free(real);
}

/* A new temporary file beside o->path: its descriptor, or -1 with errno. */
static int out_create(FsOut *o)
{
	for (int k = 0; k < 100; k++) {
		snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%d", o->path, (long)getpid(), k);
		int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

int fs_out_open(FsOut *o, const char *path, char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	if (strlen(path) >= sizeof o->path - 1) {
		snprintf(err, errlen, "cannot write %.200s...: the path is longer than %zu characters", path,
		         sizeof o->path - 2);
		return -1;
	}
	out_target(path, o->path, sizeof o->path);
	struct stat st;
	int had = stat(o->path, &st) == 0;
	if (had && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "cannot write %s: it is a folder", path);
		return -1;
	}
	if (had && !S_ISREG(st.st_mode)) {
		/* a device or a pipe (/dev/null, /dev/stdout): nothing to replace
		 * atomically, and a rename would put a regular file where it was */
		o->direct = 1;
		if (!(o->f = fopen(o->path, "w"))) {
			snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
			return -1;
		}
		return 0;
	}
	int fd = out_create(o);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write %s: creating %s: %s", path, o->tmp, strerror(errno));
		o->tmp[0] = 0;
		return -1;
	}
	if (had)
		(void)fchmod(fd, st.st_mode & 07777);   /* best effort: the data matters, the mode is a courtesy */
	if (!(o->f = fdopen(fd, "w"))) {
		snprintf(err, errlen, "cannot write %s: fdopen: %s", o->tmp, strerror(errno));
		close(fd);
		fs_out_abort(o);
		return -1;
	}
	return 0;
}

void fs_out_abort(FsOut *o)
{
	if (o->f)
		fclose(o->f);
	o->f = NULL;
	if (!o->direct && o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = 0;
}

int fs_out_commit(FsOut *o, char *err, size_t errlen)
{
	if (o->direct) {
		int bad = fflush(o->f) != 0, e = errno;
		bad |= fclose(o->f) != 0;
		o->f = NULL;
		if (bad)
			snprintf(err, errlen, "cannot write %s: %s", o->path, strerror(e ? e : errno));
		return bad ? -1 : 0;
	}
	/* the data must be on disk before the rename makes it the file */
	int bad = fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
	int e = errno;
	bad |= fclose(o->f) != 0;
	o->f = NULL;
	if (bad) {
		snprintf(err, errlen, "cannot write %s: %s", o->tmp, strerror(e ? e : errno));
		fs_out_abort(o);
		return -1;
	}
	if (rename(o->tmp, o->path) != 0) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", o->tmp, o->path, strerror(errno));
		fs_out_abort(o);
		return -1;
	}
	o->tmp[0] = 0;
	return 0;
}

char *fs_read_file(const char *path, size_t *n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	long len = -1;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)len + 1)) && fread(buf, 1, (size_t)len, f) == (size_t)len) {
		buf[len] = 0;
		fclose(f);
		*n = (size_t)len;
		return buf;
	}
	snprintf(err, errlen, "cannot read %s: %s", path,
	         buf ? "short read" : len < 0 ? strerror(errno) : "out of host memory");
	free(buf);
	fclose(f);
	return NULL;
}

void fs_rm_owned(const char *dir, FsOwns owns)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[4096];
	struct stat sb;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !owns(e->d_name))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode))
			unlink(p);
	}
	closedir(d);
	rmdir(dir);   /* fails, as it should, where anything else is left */
}

int fs_replaceable(const char *dir, FsOwns owns, const char *who, char *err, size_t errlen)
{
	struct stat sb;
	if (lstat(dir, &sb) != 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot read %s: %s", dir, strerror(errno));
		return -1;
	}
	if (S_ISLNK(sb.st_mode)) {
		snprintf(err, errlen, "%s is a symbolic link: %s replaces its output folder whole, so give it the "
		         "folder itself (the link's target) or a new path", dir, who);
		return -1;
	}
	if (!S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a folder: %s writes a folder there", dir, who);
		return -1;
	}
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(err, errlen, "cannot read the folder %s: %s", dir, strerror(errno));
		return -1;
	}
	struct dirent *e;
	char p[4096];
	int rc = 0;
	while (rc == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (!owns(e->d_name) || lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) {
			snprintf(err, errlen, "%s holds %s, which %s did not write: it replaces its output folder whole "
			         "and deletes nothing it did not write; choose a new or empty folder, or move that away",
			         dir, e->d_name, who);
			rc = -1;
		}
	}
	closedir(d);
	return rc;
}

int fs_mkdtemp_fresh(const char *path, FsOwns owns, char *err, size_t errlen)
{
	if (mkdir(path, 0755) == 0)
		return 0;
	if (errno == EEXIST) {
		fs_rm_owned(path, owns);
		if (mkdir(path, 0755) == 0)
			return 0;
	}
	snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
	return -1;
}

/* tmp and dir (both there) swapped in one step, so that no moment has no
 * dir, not even for a process killed outright: 1 done, 0 where the system
 * or the file system cannot (then the two renames), -1 with errno */
static int exchange_dirs(const char *tmp, const char *dir)
{
#ifdef RENAME_EXCHANGE
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0)
		return 1;
	return errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ? 0 : -1;
#else
	(void)tmp;
	(void)dir;
	return 0;
#endif
}

int fs_replace_dir(const char *tmp, const char *dir, FsOwns owns, char *err, size_t errlen)
{
	char why[1024];
	if (fs_replaceable(dir, owns, "this program", why, sizeof why) != 0) {
		snprintf(err, errlen, "%s (it changed while the output was made)", why);
		return -1;
	}
	struct stat sb;
	int had = lstat(dir, &sb) == 0;
	int x = had ? exchange_dirs(tmp, dir) : 0;
	if (x == 1) {
		fs_rm_owned(tmp, owns);   /* the old folder, now under tmp's name */
		return 0;
	}
	if (x < 0) {
		snprintf(err, errlen, "cannot put %s in place of %s: %s", tmp, dir, strerror(errno));
		return -1;
	}
	char old[4400];
	snprintf(old, sizeof old, "%s.old.%ld", dir, (long)getpid());
	if (had && rename(dir, old) != 0) {
		snprintf(err, errlen, "cannot move the old %s aside: %s", dir, strerror(errno));
		return -1;
	}
	if (rename(tmp, dir) != 0) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, dir, strerror(errno));
		if (had && rename(old, dir) != 0)
			snprintf(err + strlen(err), errlen - strlen(err), "; the old folder is at %s", old);
		return -1;
	}
	if (had)
		fs_rm_owned(old, owns);
	return 0;
}

/* the process id N of "<base>.tmp.N" or "<base>.old.N", else 0 */
static long staged_pid(const char *name, const char *base)
{
	size_t n = strlen(base);
	if (strncmp(name, base, n) != 0 || (strncmp(name + n, ".tmp.", 5) != 0 && strncmp(name + n, ".old.", 5) != 0))
		return 0;
	const char *d = name + n + 5;
	char *end;
	errno = 0;
	long pid = strtol(d, &end, 10);
	return *d >= '0' && *d <= '9' && !*end && errno == 0 && pid > 0 ? pid : 0;
}

int fs_sweep_staged(const char *dir, FsOwns owns, int min_age_s, char *first, size_t firstlen)
{
	char parent[4096], base[4096];
	snprintf(parent, sizeof parent, "%s", dir);
	size_t n = strlen(parent);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = 0;
	char *slash = strrchr(parent, '/');
	snprintf(base, sizeof base, "%s", slash ? slash + 1 : parent);
	if (!slash)
		snprintf(parent, sizeof parent, ".");
	else if (slash == parent)
		parent[1] = 0;   /* a folder of the root */
	else
		*slash = 0;
	DIR *d = opendir(parent);
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *e;
	char p[8300];
	struct stat sb;
	while ((e = readdir(d))) {
		long pid = *base ? staged_pid(e->d_name, base) : 0;
		if (!pid || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;   /* not a staged name, or its process (or one of its id) runs */
		snprintf(p, sizeof p, "%s/%s", parent, e->d_name);
		char why[256];
		if (lstat(p, &sb) != 0 || !S_ISDIR(sb.st_mode) || difftime(time(NULL), sb.st_mtime) < min_age_s ||
		    fs_replaceable(p, owns, "", why, sizeof why) != 0)
			continue;   /* young, or holding anything its writer does not write: left whole */
		fs_rm_owned(p, owns);
		if (lstat(p, &sb) != 0 && removed++ == 0 && first)
			snprintf(first, firstlen, "%s", p);
	}
	closedir(d);
	return removed;
}
