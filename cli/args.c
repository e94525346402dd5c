/* The command line's grammar and shared value parsers (see args.h). */
#include "args.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SYNOPSIS_WIDTH 100   /* columns a synopsis line wraps at */
#define HELP_COLUMN 28       /* where an option's help starts in --help */

static int find_opt(const CliCmd *c, const char *name)
{
	for (int k = 0; k < c->nopts; k++)
		if (!strcmp(c->opts[k].name, name))
			return k;
	return -1;
}

static int is_help(const char *a)
{
	return !strcmp(a, "-h") || !strcmp(a, "--help");
}

/* "-" alone is a word (a file name), not an option */
static int looks_like_option(const char *a)
{
	return a[0] == '-' && a[1] != 0;
}

/* Hands one value to set; a refusal is reported with the option and value. */
static int store(const CliCmd *c, CliSet set, void *ctx, int k, const char *v, const char *prefix)
{
	char err[1024] = "";
	if (set(ctx, k, v, err, sizeof err) == 0)
		return 0;
	if (k == CLI_OPERAND)
		fprintf(stderr, "recur %s: %s (see recur %s --help)\n", c->name, err, c->name);
	else if (v)
		fprintf(stderr, "recur %s: %s%s %s: %s\n", c->name, prefix, c->opts[k].name, v, err);
	else
		fprintf(stderr, "recur %s: %s%s: %s\n", c->name, prefix, c->opts[k].name, err);
	return -1;
}

/* One word of argv at *i (advanced past a consumed value): 0, or -1 after a message. */
static int parse_word(const CliCmd *c, int argc, char **argv, int *i, CliSet set, void *ctx, unsigned char *seen)
{
	const char *a = argv[*i];
	if (!looks_like_option(a)) {
		if (c->operands)
			return store(c, set, ctx, CLI_OPERAND, a, "");
		fprintf(stderr, "recur %s: unexpected argument %s: %s takes options only (see recur %s --help)\n",
		        c->name, a, c->name, c->name);
		return -1;
	}
	int k = find_opt(c, a);
	if (k < 0) {
		fprintf(stderr, "recur %s: unknown option %s (see recur %s --help)\n", c->name, a, c->name);
		return -1;
	}
	const char *v = NULL;
	if (c->opts[k].value) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "recur %s: option %s needs a value (%s %s; see recur %s --help)\n", c->name, a, a,
			        c->opts[k].value, c->name);
			return -1;
		}
		v = argv[++*i];
	}
	seen[k] = 1;
	return store(c, set, ctx, k, v, "");
}

int cli_parse(const CliCmd *c, int argc, char **argv, CliSet set, void *ctx)
{
	unsigned char seen[CLI_MAXOPTS] = { 0 };
	if (c->nopts > CLI_MAXOPTS) {
		fprintf(stderr, "recur %s: %d options in its table, more than the parser's %d (CLI_MAXOPTS)\n", c->name,
		        c->nopts, CLI_MAXOPTS);
		return -1;
	}
	for (int i = 1; i < argc; i++) {
		if (is_help(argv[i])) {
			cli_help(stdout, c);
			return 1;
		}
		if (parse_word(c, argc, argv, &i, set, ctx, seen))
			return -1;
	}
	/* defaults last, and only for what was not given: a repeatable option's
	 * default must not join the values the user gave */
	for (int k = 0; k < c->nopts; k++)
		if (!seen[k] && c->opts[k].value && c->opts[k].def &&
		    store(c, set, ctx, k, c->opts[k].def, "the default of "))
			return -1;
	return 0;
}

/* "[--dir DIR]", "[--mixer NAME]...", "[--graph]" */
static void opt_token(const CliOpt *o, char *out, size_t n)
{
	snprintf(out, n, "[%s%s%s]%s", o->name, o->value ? " " : "", o->value ? o->value : "", o->repeat ? "..." : "");
}

/* Writes word at column *col, wrapping to indent when the line would pass the width. */
static void put_word(FILE *f, const char *word, int indent, int *col)
{
	int len = (int)strlen(word);
	if (*col > indent && *col + 1 + len > SYNOPSIS_WIDTH) {
		fprintf(f, "\n%*s", indent, "");
		*col = indent;
	} else if (*col > indent) {
		fputc(' ', f);
		(*col)++;
	}
	fputs(word, f);
	*col += len;
}

/* "recur bench [--dir DIR] ...", wrapped under the first option. */
static void synopsis(FILE *f, const char *lead, const CliCmd *c)
{
	int indent = fprintf(f, "%srecur %s ", lead, c->name), col = indent;
	if (c->operands) {
		char words[256], *save = NULL;
		snprintf(words, sizeof words, "%s", c->operands);
		for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
			put_word(f, w, indent, &col);
	}
	for (int k = 0; k < c->nopts; k++) {
		char t[128];
		opt_token(&c->opts[k], t, sizeof t);
		put_word(f, t, indent, &col);
	}
	fputc('\n', f);
}

static void help_line(FILE *f, const char *left, const char *help, const char *def)
{
	int w = fprintf(f, "  %s", left);
	fprintf(f, "%*s%s", w < HELP_COLUMN ? HELP_COLUMN - w : 2, "", help);
	if (def)
		fprintf(f, " (default: %s)", def);
	fputc('\n', f);
}

void cli_help(FILE *f, const CliCmd *c)
{
	synopsis(f, "usage: ", c);
	fprintf(f, "%s\n\noptions:\n", c->summary);
	for (int k = 0; k < c->nopts; k++) {
		const CliOpt *o = &c->opts[k];
		char left[128];
		/* "..." as in the synopsis: may be given more than once */
		snprintf(left, sizeof left, "%s%s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "",
		         o->repeat ? "..." : "");
		help_line(f, left, o->help, o->value ? o->def : NULL);
	}
	help_line(f, "-h, --help", "print this help and exit", NULL);
}

void cli_usage(FILE *f, const CliCmd *const *cmds, int n)
{
	fputs("usage: recur COMMAND [options]    (recur COMMAND --help: its options, defaults and meaning)\n", f);
	for (int i = 0; i < n; i++) {
		fputc('\n', f);
		synopsis(f, "", cmds[i]);
		fprintf(f, "    %s\n", cmds[i]->summary);
	}
}

int cli_parse_int(const char *s, int lo, int hi, int *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*s == 0 || *end != 0 || errno == ERANGE || v < lo || v > hi) {
		snprintf(err, errlen, "want an integer in %d..%d", lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int cli_parse_positive(const char *s, double lo, double hi, double *out, char *err, size_t errlen)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end != 0 || !(v > lo && v <= hi)) {
		snprintf(err, errlen, "want a number above %g, up to %g", lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_parse_seed(const char *s, uint64_t *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	/* strtoull takes "-3" as 2^64-3 and skips leading blanks: a digit must come first */
	if (*s < '0' || *s > '9' || *end != 0 || errno == ERANGE) {
		snprintf(err, errlen, "want a whole number from 0 to 2^64-1");
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

int cli_add_value(const char **list, int *count, int max, const char *v, char *err, size_t errlen)
{
	if (*count == max) {
		snprintf(err, errlen, "given more than %d times", max);
		return -1;
	}
	list[(*count)++] = v;
	return 0;
}

int cli_mixer_wanted(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return 1;
	return n == 0;
}
