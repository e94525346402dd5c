/* Small file-system helpers shared by the generator and the command line. */
#ifndef RECUR_FSUTIL_H
#define RECUR_FSUTIL_H
#include <stddef.h>

/* mkdir -p of the directory that holds path (path itself is not created).
 * Returns 0, or -1 with the folder that could not be made in err. */
int fs_mkdirs_for(const char *path, char *err, size_t errlen);

#endif
