/* Small file-system helpers (see fsutil.h). */
#include "fsutil.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
