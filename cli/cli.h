/* Subcommands of the recur binary. */
#ifndef RECUR_CLI_H
#define RECUR_CLI_H
#include "recur.h"
#include <stdint.h>

const char *cli_lua_root(void);
int cli_parse_shape(const char *s, recur_shape *sh);
/* a whole decimal integer in [lo, hi]: 0, or -1 (out untouched) */
int cli_parse_int(const char *s, int lo, int hi, int *out);
/* a number (all of s, as strtod reads it) in (lo, hi]: 0, or -1 (out untouched) */
int cli_parse_positive(const char *s, double lo, double hi, double *out);
/* a random seed: a whole unsigned decimal that fits 64 bits; 0, or -1
 * after telling stderr which command's --seed value was refused */
int cli_parse_seed(const char *cmd, const char *s, uint64_t *out);
/* --mixer's filter: 1 when name is among the n names, or n is 0 (every mixer) */
int cli_mixer_wanted(const char *const *names, int n, const char *name);
int cli_verify(int argc, char **argv);
int cli_calibrate(int argc, char **argv);   /* calibrate.c */
int cli_bench(int argc, char **argv);       /* bench.c */
int cli_compare(int argc, char **argv);     /* compare.c */

#endif
