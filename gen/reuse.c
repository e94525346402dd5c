/* See reuse.h. */
#include "reuse.h"
#include "fsutil.h"
#include "ptxjoin.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	const char *key, *ptx, *ptx_sha, *cubin_key, *cubin, *cubin_sha;
	json_t *kernel_keys;   /* its kernels' keys in order (manifests from before them: NULL) */
} Old;

struct Reuse {
	char dir[4096];
	json_t *man;   /* owns the strings of old[] */
	Old *old;
	int nold;
};

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* a file name the old manifest may point at: beside it, no folders */
static int plain_name(const char *s) { return s && *s && !strchr(s, '/') && strcmp(s, "..") && strcmp(s, "."); }

Reuse *reuse_open(const char *dir)
{
	Reuse *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	char path[4200];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	r->man = json_load_file(path, 0, NULL);
	json_t *vs = r->man ? json_object_get(r->man, "variants") : NULL;
	size_t nv = json_is_array(vs) ? json_array_size(vs) : 0;
	r->old = calloc(nv + 1, sizeof *r->old);
	if (!r->old) {
		reuse_close(r);
		return NULL;
	}
	for (size_t i = 0; i < nv; i++) {
		json_t *v = json_array_get(vs, i);
		json_t *kk = json_object_get(v, "kernel_keys");
		Old o = { str(v, "key"), str(v, "ptx"), str(v, "ptx_sha256"), str(v, "cubin_key"), str(v, "cubin"),
		          str(v, "cubin_sha256"), json_is_array(kk) ? kk : NULL };
		if (o.key)
			r->old[r->nold++] = o;
	}
	return r;
}

void reuse_close(Reuse *r)
{
	if (!r)
		return;
	json_decref(r->man);
	free(r->old);
	free(r);
}

/* file name's content if its SHA-256 is sha, else NULL */
static char *read_checked(const Reuse *r, const char *name, const char *sha, size_t *n)
{
	if (!plain_name(name) || !sha)
		return NULL;
	char path[4400], err[256], got[HASH_HEX];
	snprintf(path, sizeof path, "%s/%s", r->dir, name);
	char *data = fs_read_file(path, n, err, sizeof err);
	if (!data)
		return NULL;
	hash_of(data, *n, got);
	if (strcmp(got, sha) != 0) {
		free(data);
		return NULL;
	}
	return data;
}

int reuse_ptx(const Reuse *r, const char *key, char **ptx)
{
	*ptx = NULL;
	for (int i = 0; r && i < r->nold; i++) {
		size_t n;
		if (strcmp(r->old[i].key, key) != 0 || !(*ptx = read_checked(r, r->old[i].ptx, r->old[i].ptx_sha, &n)))
			continue;
		if (strlen(*ptx) == n)   /* PTX is text: a NUL inside is no module of ours */
			return 1;
		free(*ptx);
		*ptx = NULL;
	}
	return 0;
}

int reuse_kernel(const Reuse *r, const char *kernel_key, char **ptx)
{
	*ptx = NULL;
	for (int i = 0; r && i < r->nold; i++) {
		size_t at, n;
		json_t *k;
		json_array_foreach(r->old[i].kernel_keys, at, k) {
			if (!json_is_string(k) || strcmp(json_string_value(k), kernel_key))
				continue;
			char *m = read_checked(r, r->old[i].ptx, r->old[i].ptx_sha, &n), err[256];
			int ok = m && strlen(m) == n && ptx_part(m, (int)at, ptx, err, sizeof err) == 0;
			free(m);
			if (ok)
				return 1;
			break;   /* that module is no longer what its manifest says: try another */
		}
	}
	return 0;
}

int reuse_cubin(const Reuse *r, const char *cubin_key, char **cubin, size_t *n)
{
	*cubin = NULL;
	for (int i = 0; r && i < r->nold; i++)
		if (r->old[i].cubin_key && !strcmp(r->old[i].cubin_key, cubin_key) &&
		    (*cubin = read_checked(r, r->old[i].cubin, r->old[i].cubin_sha, n)))
			return 1;
	return 0;
}
