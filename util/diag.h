/* Internal errors: a broken invariant of the generator stops with the C file
 * and line. User mistakes never come here: they are located messages
 * returned to the caller (script file:line, variant, shape). */
#ifndef RECUR_DIAG_H
#define RECUR_DIAG_H
#include <stdio.h>
#include <stdlib.h>

#define DIE(...) do { fprintf(stderr, "recur: internal error at %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)
#define CHECK(c) do { if (!(c)) DIE("check failed: %s", #c); } while (0)

#endif
