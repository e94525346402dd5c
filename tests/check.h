/* The check of the bench/results/compare tests: one line per check, PASS or
 * FAIL with a detail, counted for the closing "N passed, M failed" line.
 * Included once by each test program (the counters are that program's). */
#ifndef RECUR_TEST_CHECK_H
#define RECUR_TEST_CHECK_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int passed, failed;

static void check(int ok, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(int ok, const char *what, const char *fmt, ...)
{
	char detail[1024] = "";
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(detail, sizeof detail, fmt, ap);
		va_end(ap);
	}
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail[0] ? ": " : "", detail);
	ok ? passed++ : failed++;
}

/* the seed results file: $RECUR_SEED, else beside the source tree */
static inline const char *seed_path(char *buf, size_t n)
{
	const char *e = getenv("RECUR_SEED");
	if (e && *e)
		return e;
	const char *src = getenv("RECUR_SOURCE_DIR");
	snprintf(buf, n, "%s/../shared/seed/000_c94c45093349daa5.txt", src && *src ? src : RECUR_SOURCE_DIR);
	return buf;
}

#endif
