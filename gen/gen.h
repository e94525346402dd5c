/* recur gen: scripts in, PTX and manifest.json out. */
#ifndef RECUR_GEN_H
#define RECUR_GEN_H
#include <stddef.h>

#define GEN_MAXINC 16

typedef struct {
	const char *lua_root;  /* folder of recur.lua */
	const char *include[GEN_MAXINC];   /* more folders to search for modules (-I), in order */
	int ninclude;
	const char *outdir;
	const char *sm;        /* "sm_90", or a list "sm_80,sm_90": every variant for each */
	const char *ptx;       /* PTX ISA version, "8.0" */
	const char *only;      /* restrict dumps to this variant */
	int dump_ir, dump_ptx, verbose;
	int timings;           /* per-stage times on stderr at the end */
	int cubin;             /* also a cubin per variant, by ptxas */
	int rebuild;           /* build every module, taking none over from outdir or the cache */
	const char *cache;     /* a store of PTX by content key shared by output folders (gen/cache.h), or NULL */
	int jobs;              /* variants built at once; 0 = one per CPU (at most 64) */
	int check;             /* build and check every launch against the target, write nothing (no O3, no PTX) */
} GenOpts;

/* 0, or -1 with a located message; on failure outdir is left as it was. */
int gen_run(const char *script, const GenOpts *o, char *err, size_t errlen);

#endif
