/* See par.h. Items are dealt round-robin: thread k runs k, k + T, ... */
#include "par.h"
#include <pthread.h>
#include <unistd.h>

typedef struct {
	int n, nt, k;
	void (*fn)(void *, int);
	void *ctx;
} Worker;

static void *work(void *arg)
{
	Worker *w = arg;
	for (int i = w->k; i < w->n; i += w->nt)
		w->fn(w->ctx, i);
	return NULL;
}

void ref_parallel(int n, void (*fn)(void *ctx, int i), void *ctx)
{
	enum { MAXT = 64 };
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = cores < 1 ? 1 : cores > MAXT ? MAXT : (int)cores;
	if (nt > n)
		nt = n;
	Worker w[MAXT];
	pthread_t th[MAXT];
	int started[MAXT] = { 0 };
	for (int k = 0; k < nt; k++) {
		w[k] = (Worker){ n, nt, k, fn, ctx };
		if (k > 0)
			started[k] = pthread_create(&th[k], NULL, work, &w[k]) == 0;
	}
	if (nt > 0)
		work(&w[0]);
	/* a thread that could not start has its items run here */
	for (int k = 1; k < nt; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		else
			work(&w[k]);
	}
}
