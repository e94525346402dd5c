/* Small file-system helpers shared by the generator and the command line. */
#ifndef RECUR_FSUTIL_H
#define RECUR_FSUTIL_H
#include <stddef.h>
#include <stdio.h>

/* mkdir -p of the directory that holds path (path itself is not created).
 * Returns 0, or -1 with the folder that could not be made in err. */
int fs_mkdirs_for(const char *path, char *err, size_t errlen);

/* path's whole content from data, written in place: for files inside a
 * folder of the writer's own that is itself replaced whole once complete
 * (gen's temporary folder, fs_replace_dir), where several threads write at
 * once. A file others may be reading is written through FsOut instead.
 * -1 with the path and the reason in err. */
int fs_write_file(const char *path, const char *data, size_t n, char *err, size_t errlen);

/* A file written whole or not at all: the data goes to a new file beside
 * the target (PATH.tmp.PID.N, created exclusively, in the same folder so
 * that the rename cannot cross file systems), which replaces the target
 * only once complete and on disk (fflush, fsync, rename). Until then the
 * target is untouched, and a failure or fs_out_abort removes the temporary
 * file. A target that is a symbolic link stays one: the file it names is
 * replaced. An existing target's permissions are kept. A device or a pipe
 * (/dev/null) is written in place; a folder is refused. No signal handling
 * here: the command line adds it (cli/results.h, CliOut). */
typedef struct {
	FILE *f;
	int direct;                  /* a device or a pipe: written in place */
	char path[4096];             /* the target (a link resolved) */
	char tmp[4160];
} FsOut;
/* opens o->f on the temporary file: 0, or -1 with the path and the reason */
int  fs_out_open(FsOut *o, const char *path, char *err, size_t errlen);
/* flush, fsync, close, rename over the target: 0, or -1 (tmp removed) */
int  fs_out_commit(FsOut *o, char *err, size_t errlen);
void fs_out_abort(FsOut *o);

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

/* Moves the finished folder tmp to dir (fs_replaceable must hold) and
 * removes the old one: swapped with it in one step where Linux and the file
 * system can (renameat2's RENAME_EXCHANGE), else moved aside first; on
 * failure dir is what it was. */
int fs_replace_dir(const char *tmp, const char *dir, FsOwns owns, char *err, size_t errlen);

/* The folders a writer of dir left when it was killed outright (no signal
 * handler runs for SIGKILL or the OOM killer): "<dir>.tmp.PID" and
 * "<dir>.old.PID" beside dir whose process no longer exists and that were
 * not changed in min_age_s seconds (a process of another machine sharing
 * the folder looks dead here, but writes its folder within seconds) are
 * removed where they hold only files owns() accepts (fs_replaceable);
 * any other is left whole. How many went; the first one's path in first. */
int fs_sweep_staged(const char *dir, FsOwns owns, int min_age_s, char *first, size_t firstlen);

/* Removes the regular files of dir that owns() accepts, then dir if that
 * left it empty; nothing else. Best effort, nothing reported. */
void fs_rm_owned(const char *dir, FsOwns owns);

#endif
