/* Nothing built twice: the modules of the output folder's last generation,
 * by content key, and their kernels by theirs, for `recur gen` to take over
 * instead of rebuilding. */
#ifndef RECUR_GEN_REUSE_H
#define RECUR_GEN_REUSE_H
#include <stddef.h>
#include "hash.h"

typedef struct Reuse Reuse;

/* The modules dir's manifest.json lists with their keys; an absent or
 * unreadable manifest gives an empty table (everything is built), never an
 * error: the folder's old content is only a cache. NULL when out of memory. */
Reuse *reuse_open(const char *dir);
void reuse_close(Reuse *r);

/* The PTX of content key `key` (the manifest's "key") from the old folder,
 * read back and checked against the checksum the manifest recorded: 1 with
 * it malloc'd, or 0 (not there, changed since, unreadable: build it).
 * Thread-safe: reads only. */
int reuse_ptx(const Reuse *r, const char *key, char **ptx);
/* The PTX of the kernel of key kernel_key (in a module's "kernel_keys")
 * as its module of one (ptxjoin.h's ptx_part), cut from an old module that
 * has it, that module checked as reuse_ptx checks it: 1 with it malloc'd,
 * or 0. Thread-safe: reads only. */
int reuse_kernel(const Reuse *r, const char *kernel_key, char **ptx);
/* The same for a cubin of key `cubin_key` (the manifest's "cubin_key"). */
int reuse_cubin(const Reuse *r, const char *cubin_key, char **cubin, size_t *n);

#endif
