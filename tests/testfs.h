/* What the runtime tests on the host stand-in share: a substring check
 * for messages, and writing a test's manifest and PTX into its folder.
 * Included once by each test program. */
#ifndef RECUR_TEST_TESTFS_H
#define RECUR_TEST_TESTFS_H
#include <stdio.h>
#include <string.h>

static int has(const char *s, const char *w)
{
	return s && strstr(s, w) != NULL;
}

/* dir/name := text (a test that cannot write its files fails on loading them) */
static void write_in(const char *dir, const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

#endif
