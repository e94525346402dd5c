/* The shape language (grammar in shapex.h): a recursive-descent evaluator
 * over int64.
 *
 * Parsing and evaluation are one pass: every rule returns its value. The
 * right side of a decided '&&' / '||' is still parsed (so that syntax and
 * names are always checked) but in "quiet" mode, where arithmetic faults
 * (division by zero, overflow) are not errors: "D>0 && L/D>1" must not fail
 * for D=0. shapex_check runs the whole expression quietly, which is how the
 * manifest loader validates expressions before any shape is known.
 * Overflow is an error rather than C's undefined behaviour, and so is
 * nesting deeper than SHAPEX_MAXDEPTH: the descent recurses once per level,
 * and an expression read from a file must not be able to exhaust the stack.
 */
#include "shapex.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#define SHAPEX_QUOTE 160   /* characters of an expression a message quotes */

typedef struct {
	const char *src;      /* the whole expression, quoted in messages */
	const char *s;        /* cursor */
	const ShapeVars *v;
	int quiet;            /* > 0: arithmetic faults yield 0 instead of an error */
	int depth;            /* nesting of px_unary: parentheses, unary '-', call arguments */
	int failed;
	char *err;
	size_t errlen;
} Px;

static void px_fail(Px *p, const char *fmt, ...)
{
	if (p->failed)
		return;       /* keep the first, innermost message */
	p->failed = 1;
	if (!p->err || !p->errlen)
		return;
	char what[192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	/* a long expression is quoted by its head: the message must say what
	 * is wrong, whatever the length */
	int n = (int)strlen(p->src);
	snprintf(p->err, p->errlen, "shape expression \"%.*s%s\": %s (at offset %d)", n > SHAPEX_QUOTE ? SHAPEX_QUOTE : n,
	         p->src, n > SHAPEX_QUOTE ? "..." : "", what, (int)(p->s - p->src));
}

/* Arithmetic faults: an error unless quiet. */
static int64_t px_fault(Px *p, const char *what)
{
	if (!p->quiet)
		px_fail(p, "%s", what);
	return 0;
}

static void px_ws(Px *p)
{
	while (isspace((unsigned char)*p->s))
		p->s++;
}

/* Consumes tok, an operator of one or two characters, when it comes next
 * (after blanks). Compared character by character, not through strncmp:
 * the runtime evaluates a variant's expressions at every call, and the
 * library calls were most of its host time (perf, 2026-12-07). */
static inline int px_eat(Px *p, const char *tok)
{
	px_ws(p);
	if (p->s[0] != tok[0] || (tok[1] && p->s[1] != tok[1]))
		return 0;
	p->s += tok[1] ? 2 : 1;
	return 1;
}

/* The slot of the variable named by the n characters at name, or -1 where
 * v has none: a name longer than a slot holds matches nothing. The first
 * characters are compared before memcmp is called (most names differ
 * there), and [n] is read only after n characters matched, so it lies
 * inside the slot's name or on its end. */
static int px_var(const ShapeVars *v, const char *name, size_t n)
{
	if (!v || n >= sizeof v->name[0])
		return -1;
	for (int i = 0; i < v->n; i++)
		if (v->name[i][0] == name[0] && !memcmp(v->name[i], name, n) && v->name[i][n] == '\0')
			return i;
	return -1;
}

static int64_t px_or(Px *p);

static int64_t px_div(Px *p, int64_t a, int64_t b, int rem)
{
	if (b == 0)
		return px_fault(p, "division by zero");
	if (a == INT64_MIN && b == -1)
		return rem ? 0 : px_fault(p, "integer overflow");
	return rem ? a % b : a / b;
}

static int64_t px_call(Px *p, const char *name, size_t n)
{
	int64_t arg[2];
	int na = 0;
	do {
		int64_t x = px_or(p);
		if (p->failed)
			return 0;
		if (na < 2)
			arg[na] = x;
		na++;
	} while (px_eat(p, ","));
	if (!px_eat(p, ")")) {
		px_fail(p, "expected ',' or ')' in the arguments of %.*s", (int)n, name);
		return 0;
	}
	int fn = n == 4 && !strncmp(name, "cdiv", 4) ? 0 :
	         n == 3 && !strncmp(name, "min", 3) ? 1 :
	         n == 3 && !strncmp(name, "max", 3) ? 2 : -1;
	if (fn < 0) {
		p->s = name;
		px_fail(p, "unknown function '%.*s' (known: cdiv, min, max)", (int)n, name);
		return 0;
	}
	if (na != 2) {
		px_fail(p, "%.*s takes 2 arguments, got %d", (int)n, name, na);
		return 0;
	}
	int64_t a = arg[0], b = arg[1];
	if (fn == 1)
		return a < b ? a : b;
	if (fn == 2)
		return a > b ? a : b;
	/* cdiv: ceil(a/b) for any signs; '/' truncates toward zero, so round up
	 * only when the exact quotient is positive and inexact. */
	if (b == 0)
		return px_fault(p, "division by zero in cdiv");
	/* px_div for both: a % b is undefined for INT64_MIN % -1 as a / b is */
	int64_t q = px_div(p, a, b, 0), r = px_div(p, a, b, 1);
	if (r != 0 && ((a < 0) == (b < 0)))
		q++;   /* no overflow: q is at most |a| / 2 here */
	return q;
}

static int64_t px_unary_at(Px *p);

/* Every level of nesting passes here once, so the depth is counted here. */
static int64_t px_unary(Px *p)
{
	if (p->depth >= SHAPEX_MAXDEPTH) {
		px_fail(p, "nested more than %d levels deep", SHAPEX_MAXDEPTH);
		return 0;
	}
	p->depth++;
	int64_t x = px_unary_at(p);
	p->depth--;
	return x;
}

static int64_t px_unary_at(Px *p)
{
	px_ws(p);
	const char *at = p->s;
	if (px_eat(p, "-")) {
		int64_t x = px_unary(p);
		return x == INT64_MIN ? px_fault(p, "integer overflow") : -x;
	}
	if (px_eat(p, "(")) {
		int64_t x = px_or(p);
		if (!p->failed && !px_eat(p, ")"))
			px_fail(p, "expected ')'");
		return x;
	}
	if (isdigit((unsigned char)*p->s)) {
		int64_t x = 0;
		while (isdigit((unsigned char)*p->s)) {
			int d = *p->s++ - '0';
			if (x > (INT64_MAX - d) / 10) {
				p->s = at;
				px_fail(p, "integer literal too large");
				return 0;
			}
			x = x * 10 + d;
		}
		return x;
	}
	if (isalpha((unsigned char)*p->s) || *p->s == '_') {
		const char *name = p->s;
		while (isalnum((unsigned char)*p->s) || *p->s == '_')
			p->s++;
		size_t n = p->s - name;
		if (px_eat(p, "("))
			return px_call(p, name, n);
		int i = px_var(p->v, name, n);
		if (i >= 0)
			return p->v->value[i];
		p->s = name;
		px_fail(p, "unknown name '%.*s'", (int)n, name);
		return 0;
	}
	if (!*p->s)
		px_fail(p, "unexpected end of expression");
	else
		px_fail(p, "unexpected character '%c'", *p->s);
	return 0;
}

static int64_t px_prod(Px *p)
{
	int64_t a = px_unary(p);
	while (!p->failed) {
		int64_t b;
		if (px_eat(p, "*")) {
			b = px_unary(p);
			if (__builtin_mul_overflow(a, b, &a))
				a = px_fault(p, "integer overflow");
		} else if (px_eat(p, "/")) {
			b = px_unary(p);
			a = p->failed ? 0 : px_div(p, a, b, 0);
		} else if (px_eat(p, "%")) {
			b = px_unary(p);
			a = p->failed ? 0 : px_div(p, a, b, 1);
		} else
			break;
	}
	return a;
}

static int64_t px_sum(Px *p)
{
	int64_t a = px_prod(p);
	while (!p->failed) {
		if (px_eat(p, "+")) {
			if (__builtin_add_overflow(a, px_prod(p), &a))
				a = px_fault(p, "integer overflow");
		} else if (px_eat(p, "-")) {
			if (__builtin_sub_overflow(a, px_prod(p), &a))
				a = px_fault(p, "integer overflow");
		} else
			break;
	}
	return a;
}

static int64_t px_cmp(Px *p)
{
	int64_t a = px_sum(p);
	if (p->failed)
		return 0;
	/* two-character operators first, so "<=" is not read as "<" "=" */
	static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
	for (int i = 0; i < 6; i++) {
		if (!px_eat(p, ops[i]))
			continue;
		int64_t b = px_sum(p);
		switch (i) {
		case 0: return a == b;
		case 1: return a != b;
		case 2: return a <= b;
		case 3: return a >= b;
		case 4: return a < b;
		default: return a > b;
		}
	}
	return a;
}

static int64_t px_and(Px *p)
{
	int64_t a = px_cmp(p);
	while (!p->failed && px_eat(p, "&&")) {
		int decided = a == 0;
		p->quiet += decided;
		int64_t b = px_cmp(p);
		p->quiet -= decided;
		a = !decided && b != 0;
	}
	return a;
}

static int64_t px_or(Px *p)
{
	int64_t a = px_and(p);
	while (!p->failed && px_eat(p, "||")) {
		int decided = a != 0;
		p->quiet += decided;
		int64_t b = px_and(p);
		p->quiet -= decided;
		a = decided || b != 0;
	}
	return a;
}

static int px_run(const char *expr, const ShapeVars *v, int quiet, int64_t *out, char *err, size_t errlen)
{
	Px p = {expr ? expr : "", expr ? expr : "", v, quiet, 0, 0, err, errlen};
	px_ws(&p);
	if (!*p.s) {
		px_fail(&p, "empty expression");
		return -1;
	}
	int64_t x = px_or(&p);
	px_ws(&p);
	if (!p.failed && *p.s)
		px_fail(&p, "trailing characters \"%s\"", p.s);
	if (p.failed)
		return -1;
	if (out)
		*out = x;
	return 0;
}

/* 1 where memo m was filled at v's names and values */
static int memo_current(const ShapexMemo *m, const ShapeVars *v)
{
	return m->at.n == v->n && !memcmp(m->at.value, v->value, (size_t)v->n * sizeof v->value[0]) &&
	       !memcmp(m->at.name, v->name, (size_t)v->n * sizeof v->name[0]);
}

/* the slot of expr in m, or the empty slot where it would go (SHAPEX_MEMO: none left) */
static size_t memo_slot(const ShapexMemo *m, const char *expr)
{
	size_t h = (size_t)((uintptr_t)expr >> 3) * 0x9E3779B97F4A7C15u;
	size_t i = h >> 20;
	for (int k = 0; k < SHAPEX_MEMO; k++, i++) {
		i &= SHAPEX_MEMO - 1;
		if (!m->slot[i].expr || m->slot[i].expr == expr)
			return i;
	}
	return SHAPEX_MEMO;
}

int shapex_eval(const char *expr, const ShapeVars *v, int64_t *out, char *err, size_t errlen)
{
	ShapexMemo *m = v && expr ? v->memo : NULL;
	if (!m)
		return px_run(expr, v, 0, out, err, errlen);
	if (!memo_current(m, v)) {
		memset(m, 0, sizeof *m);
		memcpy(m->at.name, v->name, sizeof v->name);
		memcpy(m->at.value, v->value, sizeof v->value);
		m->at.n = v->n;
	}
	size_t i = memo_slot(m, expr);
	if (i < SHAPEX_MEMO && m->slot[i].expr) {
		if (out)
			*out = m->slot[i].value;
		return 0;
	}
	int64_t x;
	if (px_run(expr, v, 0, &x, err, errlen))
		return -1;
	/* kept while a quarter of the slots stay free, so probes stay short */
	if (i < SHAPEX_MEMO && m->used < SHAPEX_MEMO * 3 / 4) {
		m->slot[i].expr = expr;
		m->slot[i].value = x;
		m->used++;
	}
	if (out)
		*out = x;
	return 0;
}

int shapex_check(const char *expr, const ShapeVars *v, char *err, size_t errlen)
{
	return px_run(expr, v, 1, NULL, err, errlen);
}

void shapex_set(ShapeVars *v, const char *name, int64_t value)
{
	for (int i = 0; i < v->n; i++)
		if (!strcmp(v->name[i], name)) {
			v->value[i] = value;
			return;
		}
	/* A name that does not fit is dropped, never truncated (a truncated
	 * name could alias another): an expression using it then fails with
	 * "unknown name". The manifest loader refuses such names up front. */
	if (v->n >= SHAPEX_MAXVAR || strlen(name) >= sizeof v->name[0])
		return;
	snprintf(v->name[v->n], sizeof v->name[0], "%s", name);
	v->value[v->n++] = value;
}

int shapex_mentions(const char *expr, const char *name)
{
	size_t n = strlen(name);
	for (const char *s = expr; *s;) {
		if (!(isalpha((unsigned char)*s) || *s == '_')) {
			s++;
			continue;
		}
		const char *w = s;
		while (isalnum((unsigned char)*s) || *s == '_')
			s++;
		const char *after = s;
		while (*after == ' ' || *after == '\t')
			after++;
		if ((size_t)(s - w) == n && !strncmp(w, name, n) && *after != '(')
			return 1;
	}
	return 0;
}
