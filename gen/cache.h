/* A store of generated PTX shared by every output folder (recur gen
 * --cache DIR, or $RECUR_GEN_CACHE): one file a module, DIR/KEY.ptx, KEY
 * the module's content key (gen.c's module_key: its kernels' keys), and
 * one a kernel in DIR/kernels (these functions on that folder; KEY
 * gen.c's kernel_key: the kernel's IR before O3, the generator's and
 * LLVM's versions, the target, the PTX ISA, the pipeline). The file
 * holds the PTX's SHA-256 on its first line, then the PTX; it is written whole (fsutil's FsOut: a temporary file renamed) and
 * read back only when the checksum holds. An absent, damaged or unwritable
 * store means building more, never a failed generation. */
#ifndef RECUR_GEN_CACHE_H
#define RECUR_GEN_CACHE_H
#include <stddef.h>

/* 1 with the PTX of key malloc'd in *ptx, or 0 (not there, damaged,
 * unreadable). Thread-safe: reads only. */
int cache_get_ptx(const char *dir, const char *key, char **ptx);

/* Stores ptx under key (the folder made if missing): 0, or -1 with the
 * path and the reason in err. Thread-safe: each writer renames its own
 * temporary file, and writers of one key write the same bytes. */
int cache_put_ptx(const char *dir, const char *key, const char *ptx, char *err, size_t errlen);

#endif
