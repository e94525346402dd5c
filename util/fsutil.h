/* Small file-system helpers shared by the generator and the command line. */
#ifndef RECUR_FSUTIL_H
#define RECUR_FSUTIL_H
#include <stddef.h>

/* mkdir -p of the directory that holds path (path itself is not created).
 * Returns 0, or -1 with the folder that could not be made in err. */
int fs_mkdirs_for(const char *path, char *err, size_t errlen);

/* path's whole content from data; -1 with the path and the reason in err */
int fs_write_file(const char *path, const char *data, size_t n, char *err, size_t errlen);

/* path's whole content, malloc'd with a NUL after its n bytes (text can be
 * used as a C string); NULL with the path and the reason in err */
char *fs_read_file(const char *path, size_t *n, char *err, size_t errlen);

/* Which files of a folder a writer owns: it never deletes any other. */
typedef int (*FsOwns)(const char *name);

/* Whether dir may be replaced whole by a folder its writer (`who`, for the
 * message) generated: it does not exist, or it is a real folder (not a
 * link) holding only regular files that owns() accepts. -1 with the reason
 * and the way out otherwise. */
int fs_replaceable(const char *dir, FsOwns owns, const char *who, char *err, size_t errlen);

/* Creates the folder path, empty, for this process's output; a leftover of
 * that name (a process of the same id) loses only what fs_rm_owned may
 * remove. */
int fs_mkdtemp_fresh(const char *path, FsOwns owns, char *err, size_t errlen);

/* Moves the finished folder tmp to dir (fs_replaceable must hold), the old
 * one first aside then removed; on failure dir is what it was. */
int fs_replace_dir(const char *tmp, const char *dir, FsOwns owns, char *err, size_t errlen);

/* Removes the regular files of dir that owns() accepts, then dir if that
 * left it empty; nothing else. Best effort, nothing reported. */
void fs_rm_owned(const char *dir, FsOwns owns);

#endif
