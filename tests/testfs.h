/* What the runtime tests on the host stand-in share: a substring check
 * for messages, and a folder of their own for a test's manifest and PTX.
 * Included once by each test program. */
#ifndef RECUR_TEST_TESTFS_H
#define RECUR_TEST_TESTFS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* dir := a new folder NAME.XXXXXX in $TMPDIR (else /tmp): 0, or -1 with
 * the reason printed */
static int make_test_dir(char *dir, size_t n, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, n, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
	if (mkdtemp(dir))
		return 0;
	perror("mkdtemp");
	return -1;
}

/* the files a test wrote into dir, then dir */
__attribute__((unused)) static void remove_test_dir(const char *dir, const char *const *names, size_t n)
{
	char p[512];
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

#endif
