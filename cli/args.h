/* The command line's grammar: each subcommand declares its options once, as
 * a table of CliOpt, and that table both drives parsing (cli_parse) and
 * prints the subcommand's --help and its line of `recur --help`, so the
 * three can never disagree. The value parsers the subcommands share live
 * here too.
 */
#ifndef RECUR_CLI_ARGS_H
#define RECUR_CLI_ARGS_H
#include "recur.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One option of a subcommand. */
typedef struct {
	const char *name;    /* as typed: "--dir", "-o" */
	const char *value;   /* the value's placeholder ("DIR"); NULL: a flag, no value */
	/* Applied, exactly as if given, when the option is absent (so the
	 * default --help shows is the one that runs); NULL: none. A repeatable
	 * option's default may be several values separated by spaces. */
	const char *def;
	const char *help;    /* one line */
	int repeat;          /* may be given more than once, each adding a value */
} CliOpt;

/* A subcommand: its options, its operands and what runs it. */
typedef struct {
	const char *name;      /* "bench" */
	const char *operands;  /* synopsis of its operands ("RESULTS [REFERENCE]"); NULL: none */
	const char *summary;   /* one line: what it does */
	const CliOpt *opts;
	int nopts;
	int (*run)(int argc, char **argv);   /* argv[0] is the subcommand's name */
} CliCmd;

/* The folder gen writes and the other subcommands read, by default. */
#define CLI_PTX_DIR "out/ptx"
/* Table entries that several subcommands share, spelled once. */
#define CLI_OPT_DIR { "--dir", "DIR", CLI_PTX_DIR, "the generated folder, holding manifest.json", 0 }
#define CLI_OPT_SEED { "--seed", "N", "1", "random seed of the inputs and parameters", 0 }

#define CLI_NOPTS(t) ((int)(sizeof(t) / sizeof *(t)))
#define CLI_MAXOPTS 32

/* The opt argument of a CliSet for an operand (a word not starting with '-'). */
#define CLI_OPERAND (-1)

/* Stores one value: opt indexes the table (or is CLI_OPERAND), value is
 * NULL for a flag. 0, or -1 with why the value is refused in err (without
 * the option's name: cli_parse adds it). */
typedef int (*CliSet)(void *ctx, int opt, const char *value, char *err, size_t errlen);

/* Parses argv[1..argc-1] against cmd's table, calling set for each option
 * and operand in order, then once per absent option's default. -h/--help
 * print cmd's help on stdout. Returns 0; 1 when the help was printed (exit
 * 0); -1 after a message on stderr naming the subcommand (exit 2): an
 * unknown option, a missing value, an unexpected operand or a refused value. */
int cli_parse(const CliCmd *cmd, int argc, char **argv, CliSet set, void *ctx);

/* `recur CMD --help`: synopsis, summary, one line per option with its default. */
void cli_help(FILE *f, const CliCmd *cmd);
/* `recur --help`: the synopsis and summary of every subcommand. */
void cli_usage(FILE *f, const CliCmd *const *cmds, int n);

/* The value parsers: 0, or -1 with out untouched and what they want in err
 * (for cli_parse to print after the option and its value). */
/* a whole decimal integer in [lo, hi] */
int cli_parse_int(const char *s, int lo, int hi, int *out, char *err, size_t errlen);
/* a number (all of s, as strtod reads it) in (lo, hi] */
int cli_parse_positive(const char *s, double lo, double hi, double *out, char *err, size_t errlen);
/* a random seed: a whole unsigned decimal that fits 64 bits */
int cli_parse_seed(const char *s, uint64_t *out, char *err, size_t errlen);
/* a path or name that must not be empty: 0 and *out = s, or -1 ("" would
 * name the current folder, or no file, far from where the error shows) */
int cli_parse_path(const char *s, const char **out, char *err, size_t errlen);
/* one more value of a repeatable option, list holding *count of at most max */
int cli_add_value(const char **list, int *count, int max, const char *v, char *err, size_t errlen);
/* A shape "BxLxD": B, L and D whole decimals (digits only) from 1 to
 * 2147483647 (recur_shape holds ints), and B*L*D at most RECUR_MAX_ELEMS
 * (2^40) elements, the runtime's own limit. A wrapped or truncated number
 * is refused, never read as another. */
int cli_parse_shape(const char *s, recur_shape *out, char *err, size_t errlen);
/* "1x8192x1024,2x1000x64" (a trailing comma is harmless): the count, at
 * most max, or -1 with the bad item and why in err. */
int cli_parse_shapes(const char *list, recur_shape *out, int max, char *err, size_t errlen);
/* --mixer's filter: 1 when name is among the n names, or n is 0 (every mixer) */
int cli_mixer_wanted(const char *const *names, int n, const char *name);

/* The folder of recur.lua when --lua is not given: $RECUR_LUA, else lua/
 * beside the source tree the binary was built from, else ./lua. */
const char *cli_lua_root(void);

#endif
