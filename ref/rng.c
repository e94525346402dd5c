/* xoshiro256** (Blackman & Vigna) seeded through splitmix64, so that any
 * 64-bit seed, even 0, gives a well-mixed, non-zero state. The generator
 * state lives in the caller's Rng: no hidden globals, so runs with the same
 * seed give the same numbers whatever else ran before. */
#include "rng.h"
#include <math.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void rng_seed(Rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

uint64_t rng_next(Rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double rng_uniform(Rng *r)
{
	/* the top 53 bits are the best ones of xoshiro256** and fill a double's mantissa exactly */
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

double rng_normal(Rng *r)
{
	/* Box-Muller without caching the second value, so the state stays in Rng alone;
	 * 1 - u keeps the log's argument in (0, 1]. */
	double u1 = 1.0 - rng_uniform(r);
	double u2 = rng_uniform(r);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

uint16_t bf16_bits(float v)
{
	uint32_t u;
	memcpy(&u, &v, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		/* a NaN whose payload sits in the low 16 bits would truncate to Inf: force the quiet bit */
		return (uint16_t)((u >> 16) | 0x0040u);
	/* round to nearest, ties to even; a carry out of the mantissa correctly rounds up to Inf */
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

float bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float v;
	memcpy(&v, &u, sizeof v);
	return v;
}

float bf16_round(float v)
{
	return bf16_to_float(bf16_bits(v));
}
