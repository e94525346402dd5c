/* The run's kernels by content key, each kernel built in a module of its
 * own (irb.h), so that a kernel several variants share is built once
 * (ptxjoin.h puts a variant's module back together).
 *
 * The table is shared by the build threads. A job claims the keys of its
 * kernels that no job has claimed, builds them and publishes each (its PTX
 * or its failure) before it waits for any kernel another job claimed:
 * since no job waits while holding an unpublished claim, every wait ends. */
#ifndef RECUR_GEN_KERNELS_H
#define RECUR_GEN_KERNELS_H
#include <stddef.h>

typedef struct KernelTable KernelTable;

KernelTable *ktable_new(void);
void ktable_free(KernelTable *t);

/* 1 when the caller is the first to claim key (it must then publish it),
 * 0 when another has. */
int ktable_claim(KernelTable *t, const char *key);
/* The claimed kernel's PTX (copied), or its failure (ptx NULL, err why). */
void ktable_publish(KernelTable *t, const char *key, const char *ptx, const char *err);
/* Waits until key is published: 0 with its PTX malloc'd in *ptx, or -1 with
 * the builder's reason in err. */
int ktable_wait(KernelTable *t, const char *key, char **ptx, char *err, size_t errlen);

#endif
