/* Subcommands of the recur binary. */
#ifndef RECUR_CLI_H
#define RECUR_CLI_H
#include "recur.h"

const char *cli_lua_root(void);
int cli_parse_shape(const char *s, recur_shape *sh);
int cli_verify(int argc, char **argv);

#endif
