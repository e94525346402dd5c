/* What the C examples share: their command-line numbers. */
#ifndef RECUR_EXAMPLE_ARGS_H
#define RECUR_EXAMPLE_ARGS_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* A whole decimal in 1..max into *out (atoi would wrap or take "12abc");
 * else -1 with a message naming the argument. */
static int whole(const char *s, const char *name, int max, int *out, char *err, size_t n)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno == ERANGE || v < 1 || v > max) {
		snprintf(err, n, "%s = \"%s\": want a whole number from 1 to %d", name, s, max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

#endif
