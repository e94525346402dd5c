/* The shape language of manifests: integer expressions over named shape
 * variables, used for grid sizes, workspace bytes, kernel arguments and
 * shape rules, so that the runtime needs no mixer- or variant-specific code.
 * In util/ because both sides read it: the runtime evaluates manifests, and
 * the script reader checks a script's rules at the script's line.
 *
 *   expr := or ; or := and ('||' and)* ; and := cmp ('&&' cmp)*
 *   cmp  := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
 *   sum  := prod (('+'|'-') prod)* ; prod := unary (('*'|'/'|'%') unary)*
 *   unary := '-' unary | '(' expr ')' | INTEGER | NAME | NAME '(' expr (',' expr)* ')'
 * Functions: cdiv(a,b) = ceil(a/b), min(a,b), max(a,b). Arithmetic is int64;
 * comparisons give 0 or 1; '/' truncates; division by zero and overflow
 * are errors, and so is nesting (parentheses, unary '-', function calls)
 * deeper than SHAPEX_MAXDEPTH levels.
 */
#ifndef RECUR_SHAPEX_H
#define RECUR_SHAPEX_H
#include <stddef.h>
#include <stdint.h>

#define SHAPEX_MAXVAR 32
#define SHAPEX_MAXDEPTH 100
#define SHAPEX_MEMO 256   /* expressions a memo holds (a power of 2) */

typedef struct ShapexMemo ShapexMemo;

typedef struct {
	char name[SHAPEX_MAXVAR][16];
	int64_t value[SHAPEX_MAXVAR];
	int n;
	ShapexMemo *memo;   /* optional (NULL: none): see ShapexMemo */
} ShapeVars;

/* Values of expressions already evaluated, by the expression's address:
 * a runtime evaluates the same manifest strings at the same shape on every
 * call of a training loop (56 of them a pass for RecurrentGemma's variant,
 * most of its host time), so a caller that keeps its strings alive
 * attaches one to its ShapeVars. An entry is used only while the variables
 * are those it was evaluated at, names and values (the memo keeps a copy
 * and starts over when they differ); only successes are kept, so a failing
 * expression fails with its message every time. Not shared between threads. */
struct ShapexMemo {
	ShapeVars at;
	int used;
	struct { const char *expr; int64_t value; } slot[SHAPEX_MEMO];
};

void shapex_set(ShapeVars *v, const char *name, int64_t value);   /* adds or replaces */
/* Returns 0 and *out, or -1 with a message quoting the expression in err.
 * With v->memo, the value of an expression at these variables may come from it. */
int shapex_eval(const char *expr, const ShapeVars *v, int64_t *out, char *err, size_t errlen);
/* Syntax and names only (arithmetic faults such as division by zero are not
 * errors): how a manifest's expressions are validated before any shape is
 * known. The values in v are ignored. Returns 0, or -1 with a message. */
int shapex_check(const char *expr, const ShapeVars *v, char *err, size_t errlen);
/* 1 when expr names the variable `name` (as a name, not a function), else 0. */
int shapex_mentions(const char *expr, const char *name);

#endif
