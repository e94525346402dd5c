/* Work items of a reference spread over the machine's cores. Each item
 * must write data no other item touches, so the result is the same bits
 * whatever the number of threads. */
#ifndef RECUR_REF_PAR_H
#define RECUR_REF_PAR_H

/* fn(ctx, i) for every i in [0, n), on up to min(n, cores) threads; returns
 * when all are done (sequentially when no thread can be started) */
void ref_parallel(int n, void (*fn)(void *ctx, int i), void *ctx);
/* the same on at most maxthreads threads (0: one per core; at most
 * REF_MAXTHREADS); with 1, the items run in order on the calling thread */
#define REF_MAXTHREADS 64
void ref_parallel_n(int n, int maxthreads, void (*fn)(void *ctx, int i), void *ctx);

#endif
