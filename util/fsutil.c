/* Small file-system helpers (see fsutil.h). */
#include "fsutil.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
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

int fs_replace_dir(const char *tmp, const char *dir, FsOwns owns, char *err, size_t errlen)
{
	char why[1024];
	if (fs_replaceable(dir, owns, "this program", why, sizeof why) != 0) {
		snprintf(err, errlen, "%s (it changed while the output was made)", why);
		return -1;
	}
	char old[4400];
	snprintf(old, sizeof old, "%s.old.%ld", dir, (long)getpid());
	struct stat sb;
	int had = lstat(dir, &sb) == 0;
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
