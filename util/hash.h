/* SHA-256 (nettle's) as the project uses it: content keys of generated
 * modules and checksums of the files a manifest names. */
#ifndef RECUR_UTIL_HASH_H
#define RECUR_UTIL_HASH_H
#include <stddef.h>
#include <nettle/sha2.h>

#define HASH_HEX 65   /* 64 hex digits and the NUL */

typedef struct {
	struct sha256_ctx c;
} Hash;

void hash_init(Hash *h);
void hash_bytes(Hash *h, const void *data, size_t n);
/* a string and its terminating NUL, so that ("ab", "c") and ("a", "bc") differ */
void hash_str(Hash *h, const char *s);
void hash_hex(Hash *h, char out[HASH_HEX]);
/* the SHA-256 of data, in hex */
void hash_of(const void *data, size_t n, char out[HASH_HEX]);

#endif
