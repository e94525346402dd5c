/* See cache.h. */
#include "cache.h"
#include "fsutil.h"
#include "hash.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DIR/KEY.ptx; 0, or -1 where it does not fit */
static int entry_path(const char *dir, const char *key, char *out, size_t n)
{
	int w = snprintf(out, n, "%s/%s.ptx", dir, key);
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

int cache_get_ptx(const char *dir, const char *key, char **ptx)
{
	*ptx = NULL;
	char path[4200], err[256];
	size_t n;
	if (entry_path(dir, key, path, sizeof path) != 0)
		return 0;
	char *data = fs_read_file(path, &n, err, sizeof err);
	if (!data)
		return 0;
	/* the checksum's 64 hex digits and a newline, then the PTX: text, no NUL inside */
	char got[HASH_HEX];
	const size_t head = HASH_HEX;
	if (n <= head || data[head - 1] != '\n' || strlen(data) != n) {
		free(data);
		return 0;
	}
	hash_of(data + head, n - head, got);
	if (memcmp(got, data, HASH_HEX - 1) != 0) {
		free(data);
		return 0;
	}
	memmove(data, data + head, n - head + 1);   /* the NUL fs_read_file put after the data comes along */
	*ptx = data;
	return 1;
}

int cache_put_ptx(const char *dir, const char *key, const char *ptx, char *err, size_t errlen)
{
	char path[4200], sum[HASH_HEX];
	if (entry_path(dir, key, path, sizeof path) != 0) {
		snprintf(err, errlen, "the cache folder's path %.200s... is too long", dir);
		return -1;
	}
	if (fs_mkdirs_for(path, err, errlen) != 0)
		return -1;
	size_t n = strlen(ptx);
	hash_of(ptx, n, sum);
	FsOut o;
	if (fs_out_open(&o, path, err, errlen) != 0)
		return -1;
	if (fprintf(o.f, "%s\n", sum) < 0 || fwrite(ptx, 1, n, o.f) != n) {
		snprintf(err, errlen, "cannot write %s", o.tmp);
		fs_out_abort(&o);
		return -1;
	}
	return fs_out_commit(&o, err, errlen);
}
