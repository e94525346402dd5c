/* The command line's grammar and shared value parsers (see args.h). */
#include "args.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
		fprintf(stderr, "recur %s: %s%s %s: %s\n", c->name, prefix, c->opts[k].name, *v ? v : "\"\"", err);
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

int cli_parse_path(const char *s, const char **out, char *err, size_t errlen)
{
	if (!*s) {
		snprintf(err, errlen, "want a path, not an empty string");
		return -1;
	}
	*out = s;
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

/* ---- shapes ---- */

#define SHAPE_DIM_MAX 2147483647LL
#define SHAPE_QUOTE 48   /* characters of a refused item quoted in the message */

/* One dimension at *p, up to 'x' or the end: digits only, 1..SHAPE_DIM_MAX.
 * 0, or -1 with why (naming the dimension) in why. */
static int shape_dim(const char **p, const char *name, long long *out, char *why, size_t n)
{
	const char *s = *p;
	long long v = 0;
	size_t digits = strspn(s, "0123456789");
	if (digits == 0) {
		snprintf(why, n, "%s is not a whole number", name);
		return -1;
	}
	for (size_t i = 0; i < digits; i++) {
		/* checked: any run of digits past the limit is refused, never wrapped */
		if (v > (SHAPE_DIM_MAX - (s[i] - '0')) / 10) {
			snprintf(why, n, "%s = %.*s is above %lld", name, (int)(digits < 24 ? digits : 24), s, SHAPE_DIM_MAX);
			return -1;
		}
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1) {
		snprintf(why, n, "%s = 0: each of B, L, D is at least 1", name);
		return -1;
	}
	*p = s + digits;
	*out = v;
	return 0;
}

/* B, L, D of s into v, with the reason in why on a refusal. */
static int shape_dims(const char *s, long long v[3], char *why, size_t n)
{
	static const char *const name[3] = { "B", "L", "D" };
	const char *p = s;
	for (int k = 0; k < 3; k++) {
		if (shape_dim(&p, name[k], &v[k], why, n))
			return -1;
		if (k < 2 && *p++ != 'x') {
			snprintf(why, n, "want three numbers joined by 'x'");
			return -1;
		}
	}
	if (*p) {
		snprintf(why, n, "unexpected text after D");
		return -1;
	}
	long long e;
	if (__builtin_mul_overflow(v[0], v[1], &e) || __builtin_mul_overflow(e, v[2], &e) || e > RECUR_MAX_ELEMS) {
		snprintf(why, n, "B*L*D is more than %lld elements", (long long)RECUR_MAX_ELEMS);
		return -1;
	}
	return 0;
}

int cli_parse_shape(const char *s, recur_shape *out, char *err, size_t errlen)
{
	long long v[3];
	char why[160];
	if (shape_dims(s, v, why, sizeof why)) {
		size_t len = strlen(s);
		snprintf(err, errlen, "bad shape \"%.*s%s\": %s (want BxLxD, e.g. 1x8192x1024: each of B, L, D from 1 "
		         "to %lld, B*L*D at most 2^40)", (int)(len > SHAPE_QUOTE ? SHAPE_QUOTE : len), s,
		         len > SHAPE_QUOTE ? "..." : "", why, SHAPE_DIM_MAX);
		return -1;
	}
	*out = (recur_shape){ (int)v[0], (int)v[1], (int)v[2] };
	return 0;
}

int cli_parse_shapes(const char *list, recur_shape *out, int max, char *err, size_t errlen)
{
	int n = 0;
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		char *item = strndup(p, len);
		if (!item) {
			snprintf(err, errlen, "out of host memory reading the shapes");
			return -1;
		}
		recur_shape s;
		int rc = cli_parse_shape(item, &s, err, errlen);
		free(item);
		if (rc)
			return -1;
		if (n == max) {
			snprintf(err, errlen, "more than %d shapes", max);
			return -1;
		}
		out[n++] = s;
		p += len;
		if (*p == ',')
			p++;
	}
	if (n == 0) {
		snprintf(err, errlen, "no shapes in \"%.*s\" (want BxLxD,...)", SHAPE_QUOTE, list);
		return -1;
	}
	return n;
}

const char *cli_lua_root(void)
{
	const char *e = getenv("RECUR_LUA");
	if (e && *e)
		return e;
	if (access(RECUR_SOURCE_DIR "/lua/recur.lua", R_OK) == 0)
		return RECUR_SOURCE_DIR "/lua";
	return "lua";
}
