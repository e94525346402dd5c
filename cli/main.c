/* recur: the command-line front door. It only dispatches: every subcommand
 * declares its options in its own file (cli.h), and `recur --help` is
 * printed from those tables (args.h).
 */
#include "cli.h"
#include <stdio.h>
#include <string.h>


static const CliCmd *const COMMANDS[] = {
	&cli_gen_cmd, &cli_check_cmd, &cli_list_cmd, &cli_verify_cmd, &cli_calibrate_cmd, &cli_bench_cmd,
	&cli_compare_cmd,
};
#define NCOMMANDS ((int)(sizeof COMMANDS / sizeof *COMMANDS))

static const CliCmd *find_command(const char *name)
{
	for (int i = 0; i < NCOMMANDS; i++)
		if (!strcmp(COMMANDS[i]->name, name))
			return COMMANDS[i];
	return NULL;
}

static int is_help(const char *a)
{
	return !strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "help");
}

static void unknown_command(const char *name)
{
	fprintf(stderr, "recur: unknown command %s (commands:", name);
	for (int i = 0; i < NCOMMANDS; i++)
		fprintf(stderr, " %s", COMMANDS[i]->name);
	fputs("; see recur --help)\n", stderr);
}

/* recur help [COMMAND] */
static int help(int argc, char **argv)
{
	if (argc < 3) {
		cli_usage(stdout, COMMANDS, NCOMMANDS);
		return 0;
	}
	const CliCmd *c = find_command(argv[2]);
	if (!c) {
		unknown_command(argv[2]);
		return 2;
	}
	cli_help(stdout, c);
	return 0;
}

int main(int argc, char **argv)
{
	/* Tables go to stdout and progress to stderr; sent to one file (`> log
	 * 2>&1`), a fully buffered stdout would be written in 4 KB pieces
	 * that cut its lines where a progress line lands. Whole lines, in the
	 * order printed. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		cli_usage(stderr, COMMANDS, NCOMMANDS);
		return 2;
	}
	if (is_help(argv[1]))
		return help(argc, argv);
	const CliCmd *c = find_command(argv[1]);
	if (!c) {
		unknown_command(argv[1]);
		return 2;
	}
	return c->run(argc - 1, argv + 1);
}
