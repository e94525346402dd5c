/* Running a generator script: Lua in, mixers and variant grids out.
 *
 * A script returns either one variant set (R.variants{...}) or a list of
 * them. Errors anywhere in the script (unknown name, wrong kind, illegal
 * combination) come back as "FILE:LINE: message" in err and nothing is
 * returned: the caller writes nothing.
 */
#ifndef RECUR_SCRIPT_H
#define RECUR_SCRIPT_H
#include <stddef.h>
#include "mixer.h"

/* lua_root: the directory that holds recur.lua and arch/ (added to package.path).
 * On success *sets is a malloc'd array of *nsets sets (free with script_free). */
int script_run(const char *path, const char *lua_root, VariantSet **sets, int *nsets,
               char *err, size_t errlen);
void script_free(VariantSet *sets, int nsets);

#endif
