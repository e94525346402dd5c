/* What the float64 reference tests share before their checks: the source
 * tree's lua/ ($RECUR_SOURCE_DIR, else the tree this was built from), a
 * scratch folder of their own, and a fresh seed, printed so that
 * RECUR_TEST_SEED repeats the run. Included once by each such test. */
#ifndef RECUR_TEST_REFENV_H
#define RECUR_TEST_REFENV_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* 0 with lua, tmp and seed set; 77 (skipped, said why) without the tree's
 * lua/; 1 when no scratch folder can be made. name: the folder's prefix. */
static int refenv_open(const char *name, char *lua, size_t nlua, char *tmp, size_t ntmp, uint64_t *seed)
{
	const char *root = getenv("RECUR_SOURCE_DIR");
	if (!root || !*root)
		root = RECUR_SOURCE_DIR;
	snprintf(lua, nlua, "%s/lua", root);
	char probe[1200];
	snprintf(probe, sizeof probe, "%s/recur.lua", lua);
	if (access(probe, R_OK) != 0) {
		printf("skipped: %s not found (set RECUR_SOURCE_DIR to the source tree)\n", probe);
		return 77;
	}
	const char *tmpdir = getenv("TMPDIR");
	snprintf(tmp, ntmp, "%s/%s.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp", name);
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	const char *es = getenv("RECUR_TEST_SEED");
	*seed = es && *es ? strtoull(es, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	printf("seed %llu (RECUR_TEST_SEED=%llu repeats this run)\n", (unsigned long long)*seed,
	       (unsigned long long)*seed);
	return 0;
}

#endif
