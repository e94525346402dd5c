/* The check of the script, autodiff and reference tests: one line per
 * check, "ok" or "FAIL" and a printf-formatted description, counted for
 * the closing "N passed, M failed" line (check.h's check takes a name and
 * a detail instead). Included once by each test program: the counters are
 * that program's. */
#ifndef RECUR_TEST_CHECKF_H
#define RECUR_TEST_CHECKF_H
#include <stdarg.h>
#include <stdio.h>

static int n_pass, n_fail;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s ", ok ? "ok  " : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	ok ? n_pass++ : n_fail++;
}

#endif
