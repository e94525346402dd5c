/* Work items of a reference spread over the machine's cores. Each item
 * must write data no other item touches, so the result is the same bits
 * whatever the number of threads. */
#ifndef RECUR_REF_PAR_H
#define RECUR_REF_PAR_H

/* fn(ctx, i) for every i in [0, n), on up to min(n, cores) threads; returns
 * when all are done (sequentially when no thread can be started) */
void ref_parallel(int n, void (*fn)(void *ctx, int i), void *ctx);

#endif
