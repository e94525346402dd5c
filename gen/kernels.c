/* See kernels.h. */
#include "kernels.h"
#include "diag.h"
#include "hash.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	char key[HASH_HEX];
	int done;        /* published */
	char *ptx;       /* NULL when its build failed */
	char *err;
} Entry;

struct KernelTable {
	pthread_mutex_t mu;
	pthread_cond_t published;
	Entry *e;
	int n, cap;
};

KernelTable *ktable_new(void)
{
	KernelTable *t = calloc(1, sizeof *t);
	CHECK(t);
	CHECK(pthread_mutex_init(&t->mu, NULL) == 0);
	CHECK(pthread_cond_init(&t->published, NULL) == 0);
	return t;
}

void ktable_free(KernelTable *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++) {
		free(t->e[i].ptx);
		free(t->e[i].err);
	}
	free(t->e);
	pthread_cond_destroy(&t->published);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* the entry of key, or NULL; under t->mu */
static Entry *find(KernelTable *t, const char *key)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->e[i].key, key))
			return &t->e[i];
	return NULL;
}

int ktable_claim(KernelTable *t, const char *key)
{
	pthread_mutex_lock(&t->mu);
	int mine = find(t, key) == NULL;
	if (mine) {
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 64;
			t->e = realloc(t->e, (size_t)t->cap * sizeof *t->e);
			CHECK(t->e);
		}
		Entry *e = &t->e[t->n++];
		memset(e, 0, sizeof *e);
		snprintf(e->key, sizeof e->key, "%s", key);
	}
	pthread_mutex_unlock(&t->mu);
	return mine;
}

void ktable_publish(KernelTable *t, const char *key, const char *ptx, const char *err)
{
	pthread_mutex_lock(&t->mu);
	Entry *e = find(t, key);
	CHECK(e && !e->done);
	e->ptx = ptx ? strdup(ptx) : NULL;
	e->err = strdup(err ? err : "");
	CHECK((!ptx || e->ptx) && e->err);
	e->done = 1;
	pthread_cond_broadcast(&t->published);
	pthread_mutex_unlock(&t->mu);
}

int ktable_wait(KernelTable *t, const char *key, char **ptx, char *err, size_t errlen)
{
	pthread_mutex_lock(&t->mu);
	Entry *e;
	/* (the entry is looked up again after each wait: the array may have
	 * moved; a key nobody claimed would never be published) */
	for (;;) {
		e = find(t, key);
		CHECK(e != NULL);
		if (e->done)
			break;
		pthread_cond_wait(&t->published, &t->mu);
	}
	int rc = 0;
	*ptx = e->ptx ? strdup(e->ptx) : NULL;
	if (e->ptx)
		CHECK(*ptx);
	else {
		snprintf(err, errlen, "%s", e->err);
		rc = -1;
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}
