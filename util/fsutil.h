/* Small file-system helpers shared by the generator and the command line. */
#ifndef RECUR_FSUTIL_H
#define RECUR_FSUTIL_H
#include <stddef.h>

/* mkdir -p of the directory that holds path (path itself is not created).
 * Returns 0, or -1 with the folder that could not be made in err. */
int fs_mkdirs_for(const char *path, char *err, size_t errlen);

/* path's whole content from data; -1 with the path and the reason in err */
int fs_write_file(const char *path, const char *data, size_t n, char *err, size_t errlen);

/* removes the files of a flat folder (the generator's own temporary one)
 * and the folder itself; best effort, nothing reported */
void fs_rm_tree(const char *dir);

#endif
