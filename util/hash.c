/* See hash.h. */
#include "hash.h"
#include <stdio.h>
#include <string.h>

void hash_init(Hash *h) { sha256_init(&h->c); }

void hash_bytes(Hash *h, const void *data, size_t n)
{
	/* nettle takes size_t lengths: no chunking needed */
	sha256_update(&h->c, n, data);
}

void hash_str(Hash *h, const char *s) { hash_bytes(h, s, strlen(s) + 1); }

void hash_hex(Hash *h, char out[HASH_HEX])
{
	unsigned char d[SHA256_DIGEST_SIZE];
	sha256_digest(&h->c, sizeof d, d);
	for (size_t i = 0; i < sizeof d; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

void hash_of(const void *data, size_t n, char out[HASH_HEX])
{
	Hash h;
	hash_init(&h);
	hash_bytes(&h, data, n);
	hash_hex(&h, out);
}
