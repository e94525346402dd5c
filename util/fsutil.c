/* Small file-system helpers (see fsutil.h). */
#include "fsutil.h"
#include <errno.h>
#include <stdio.h>
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

void fs_rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[4096];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}
