/* Running a generator script: Lua in, mixers and variant grids out.
 *
 * A script returns either one variant set (R.variants{...}) or a list of
 * them. Errors anywhere in the script (unknown name, wrong kind, illegal
 * combination, a result that is not what R.variants makes, a script past
 * its budget) come back as "FILE:LINE: message" in err and nothing is
 * returned: the caller writes nothing.
 *
 * A script is code, run with the user's rights (README "Scripts are
 * code"); what it may not do is what would break the generator: load
 * precompiled chunks or C modules, end the process, replace the hooks,
 * set finalizers, or run past its budget of instructions and memory.
 */
#ifndef RECUR_SCRIPT_H
#define RECUR_SCRIPT_H
#include <stddef.h>
#include "mixer.h"

/* The default budget: thousands of times what a mixer script takes
 * (lua/variants/all.lua runs in about 12000 instructions and 200 KiB),
 * low enough that an endless loop stops within seconds. */
#define SCRIPT_MAX_STEPS 50000000ULL
#define SCRIPT_MAX_BYTES ((size_t)256 << 20)

typedef struct {
	/* the directory that holds recur.lua and arch/ (NULL: none, and
	 * require "recur" is searched like any module) */
	const char *lua_root;
	/* more directories to search for modules (recur gen -I), in order */
	const char *const *include;
	int ninclude;
	unsigned long long max_steps;   /* VM instructions; 0: SCRIPT_MAX_STEPS */
	size_t max_bytes;               /* Lua memory and expression graphs; 0: SCRIPT_MAX_BYTES */
} ScriptOpts;

/* Modules (require "a.b" is a/b.lua) are searched in the script's
 * directory, its parent, each o->include, each directory of $RECUR_PATH
 * (':'-separated), then o->lua_root; the error lists every file tried.
 * On success *sets is a malloc'd array of *nsets sets (free with
 * script_free). */
int script_run_opts(const char *path, const ScriptOpts *o, VariantSet **sets, int *nsets,
                    char *err, size_t errlen);
/* script_run_opts with lua_root and the defaults */
int script_run(const char *path, const char *lua_root, VariantSet **sets, int *nsets,
               char *err, size_t errlen);
void script_free(VariantSet *sets, int nsets);

#endif
