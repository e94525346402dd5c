/* See par.h. Items are taken in order from a shared counter: a thread that
 * draws cheap items takes more of them. */
#include "par.h"
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

typedef struct {
	int n;
	atomic_int next;
	void (*fn)(void *, int);
	void *ctx;
} Pool;

static void *work(void *arg)
{
	Pool *p = arg;
	for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
		p->fn(p->ctx, i);
	return NULL;
}

void par_run(int n, void (*fn)(void *ctx, int i), void *ctx)
{
	par_run_n(n, 0, fn, ctx);
}

int par_threads(int maxthreads)
{
	long cores = maxthreads > 0 ? maxthreads : sysconf(_SC_NPROCESSORS_ONLN);
	return cores < 1 ? 1 : cores > PAR_MAXTHREADS ? PAR_MAXTHREADS : (int)cores;
}

void par_run_n(int n, int maxthreads, void (*fn)(void *ctx, int i), void *ctx)
{
	enum { MAXT = PAR_MAXTHREADS };
	int nt = par_threads(maxthreads);
	if (nt > n)
		nt = n;
	Pool p = { .n = n, .fn = fn, .ctx = ctx };
	atomic_init(&p.next, 0);
	pthread_t th[MAXT];
	int started = 1;
	for (; started < nt; started++)
		if (pthread_create(&th[started], NULL, work, &p) != 0)
			break;   /* fewer threads: the running ones take every item */
	work(&p);
	for (int k = 1; k < started; k++)
		pthread_join(th[k], NULL);
}
