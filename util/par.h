/* Work items spread over the machine's cores. Each item
 * must write data no other item touches, so the result is the same bits
 * whatever the number of threads. */
#ifndef RECUR_UTIL_PAR_H
#define RECUR_UTIL_PAR_H

/* fn(ctx, i) for every i in [0, n), on up to min(n, cores) threads; returns
 * when all are done (sequentially when no thread can be started) */
void par_run(int n, void (*fn)(void *ctx, int i), void *ctx);
/* the same on at most maxthreads threads (0: one per core; at most
 * PAR_MAXTHREADS); with 1, the items run in order on the calling thread */
#define PAR_MAXTHREADS 64
void par_run_n(int n, int maxthreads, void (*fn)(void *ctx, int i), void *ctx);
/* the threads par_run_n(n >= that, maxthreads, ...) would use */
int par_threads(int maxthreads);

#endif
