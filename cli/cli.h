/* Subcommands of the recur binary: each file that implements one defines
 * its CliCmd (its option table and entry point, args.h); main.c only
 * dispatches to them, and none of them depends on main.c. */
#ifndef RECUR_CLI_H
#define RECUR_CLI_H
#include "args.h"

extern const CliCmd cli_gen_cmd;         /* generate.c */
extern const CliCmd cli_check_cmd;       /* check.c */
extern const CliCmd cli_list_cmd;        /* list.c */
extern const CliCmd cli_verify_cmd;      /* verify.c */
extern const CliCmd cli_calibrate_cmd;   /* calibrate.c */
extern const CliCmd cli_bench_cmd;       /* bench.c */
extern const CliCmd cli_compare_cmd;     /* compare.c */

/* The entry points (argv[0] is the subcommand's name): 0, 1 for a failed
 * run, 2 for a command line refused before anything ran. */
int cli_gen(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_verify(int argc, char **argv);
int cli_calibrate(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_compare(int argc, char **argv);

#endif
