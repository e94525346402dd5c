/* The shape language of manifests (util/shapex.h): arithmetic and its
 * precedence, cdiv/min/max, comparisons, && and || (with short-circuit), and
 * errors, whose messages must quote the expression and say what is wrong.
 */
#include "shapex.h"
#include <stdio.h>
#include <string.h>

static int passed, failed;

static void verdict(int ok, const char *what, const char *detail)
{
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
	ok ? passed++ : failed++;
}

static ShapeVars vars;

static void value(const char *expr, int64_t want)
{
	char err[512] = "", what[256], got[600];
	int64_t x = -12345;
	int rc = shapex_eval(expr, &vars, &x, err, sizeof err);
	snprintf(what, sizeof what, "%s == %lld", expr, (long long)want);
	if (rc)
		snprintf(got, sizeof got, "error: %s", err);
	else
		snprintf(got, sizeof got, "got %lld", (long long)x);
	verdict(rc == 0 && x == want, what, rc == 0 && x == want ? "" : got);
}

/* must fail, with a message holding the expression and each of the words */
static void error(const char *expr, const char *word1, const char *word2)
{
	char err[512] = "", what[256], quoted[256];
	int64_t x = 0;
	int rc = shapex_eval(expr, &vars, &x, err, sizeof err);
	snprintf(what, sizeof what, "error for \"%s\" mentions '%s'%s%s%s", expr, word1,
	         word2 ? " and '" : "", word2 ? word2 : "", word2 ? "'" : "");
	snprintf(quoted, sizeof quoted, "\"%s\"", expr);
	int ok = rc != 0 && strstr(err, quoted) && strstr(err, word1) && (!word2 || strstr(err, word2));
	verdict(ok, what, rc ? err : "no error");
}

/* A memo (shapex.h) gives what evaluation gives: at the variables it was
 * filled at, and again after they change, by name or by value; failures
 * are never kept; beyond its capacity expressions still evaluate. The
 * expressions are strings that live as long as the memo, as a manifest's do. */
static void memo_tests(void)
{
	static ShapexMemo memo;
	static const char *const ex[] = { "cdiv(L, 64) * B", "L / D", "min(L, 100) + D" };
	static char many[SHAPEX_MEMO * 2][24];
	char err[512] = "";
	ShapeVars v = { .n = 0 };
	shapex_set(&v, "B", 2);
	shapex_set(&v, "L", 1000);
	shapex_set(&v, "D", 10);
	v.memo = &memo;
	int64_t x[3], y[3];
	int rc = 0;
	for (int round = 0; round < 2; round++)   /* the second round from the memo */
		for (int i = 0; i < 3; i++)
			rc |= shapex_eval(ex[i], &v, round ? &y[i] : &x[i], err, sizeof err);
	verdict(rc == 0 && x[0] == 32 && x[1] == 100 && x[2] == 110 && !memcmp(x, y, sizeof x) && memo.used == 3,
	        "a memo keeps each expression's value at its variables", err);

	shapex_set(&v, "L", 130);
	rc = shapex_eval(ex[0], &v, &x[0], err, sizeof err) || shapex_eval(ex[1], &v, &x[1], err, sizeof err);
	verdict(rc == 0 && x[0] == 6 && x[1] == 13, "a changed value is evaluated anew, not read from the memo", err);

	ShapeVars w = { .n = 0 };   /* the same values under other names */
	shapex_set(&w, "D", 2);
	shapex_set(&w, "L", 130);
	shapex_set(&w, "B", 10);
	w.memo = &memo;
	rc = shapex_eval(ex[0], &w, &x[0], err, sizeof err);
	verdict(rc == 0 && x[0] == 30, "other names with the values are evaluated anew", err);

	shapex_set(&w, "D", 0);
	int f1 = shapex_eval(ex[1], &w, &x[1], err, sizeof err) != 0 && strstr(err, "division by zero");
	shapex_set(&w, "D", 5);
	rc = shapex_eval(ex[1], &w, &x[1], err, sizeof err);
	shapex_set(&w, "D", 0);
	err[0] = 0;
	int f2 = shapex_eval(ex[1], &w, &x[2], err, sizeof err) != 0 && strstr(err, "division by zero");
	verdict(f1 && rc == 0 && x[1] == 26 && f2, "a failure is not kept: it fails with its message each time", err);

	shapex_set(&w, "D", 1);
	err[0] = 0;
	int ok = 1;
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < SHAPEX_MEMO * 2; i++) {
			snprintf(many[i], sizeof many[i], "L * 1000 + %d", i);
			int64_t got = -1;
			ok &= shapex_eval(many[i], &w, &got, err, sizeof err) == 0 && got == 130000 + i;
		}
	verdict(ok && memo.used <= SHAPEX_MEMO, "past its capacity every expression still evaluates", err);
}

int main(void)
{
	shapex_set(&vars, "B", 2);
	shapex_set(&vars, "L", 37);
	shapex_set(&vars, "D", 1024);
	shapex_set(&vars, "K", 64);
	shapex_set(&vars, "T", 512);
	shapex_set(&vars, "Z", 0);
	shapex_set(&vars, "D", 1024);   /* replacing keeps one entry */
	verdict(vars.n == 6, "shapex_set replaces an existing name", "");

	/* arithmetic and precedence */
	value("42", 42);
	value("  7 ", 7);
	value("1+2*3", 7);
	value("(1+2)*3", 9);
	value("10-4-3", 3);
	value("100/10/5", 2);
	value("7/2", 3);
	value("-7/2", -3);
	value("7%3", 1);
	value("-7%3", -1);
	value("2*3%4", 2);
	value("-3*-2", 6);
	value("--5", 5);
	value("-(2+3)*2", -10);
	value("D/K", 16);
	value("B*L*D*2", 2 * 37 * 1024 * 2);
	value("4294967296*4", 17179869184LL);
	value("9223372036854775807", INT64_MAX);

	/* functions */
	value("cdiv(L,T)", 1);
	value("cdiv(1024,512)", 2);
	value("cdiv(1025,512)", 3);
	value("cdiv(0,5)", 0);
	value("cdiv(-7,2)", -3);
	value("cdiv(7,-2)", -3);
	value("cdiv(-7,-2)", 4);
	value("min(L,T)", 37);
	value("max(L,T)", 512);
	value("min(3, max(1, 2))", 2);
	value("cdiv( L , 8 ) * 8", 40);
	value("max(-1,-2)", -1);

	/* comparisons */
	value("D%64==0", 1);
	value("D%48==0", 0);
	value("L!=37", 0);
	value("L<38", 1);
	value("L<=37", 1);
	value("L>37", 0);
	value("L>=37", 1);
	value("1+1==2", 1);
	value("(1<2)+(3>2)", 2);

	/* logic, short-circuit */
	value("1&&1", 1);
	value("1&&0", 0);
	value("0||0", 0);
	value("0||5", 1);
	value("7&&3", 1);
	value("1||0&&0", 1);       /* && binds tighter */
	value("(1||0)&&0", 0);
	value("D%64==0 && L>=1", 1);
	value("Z>0 && L/Z>1", 0);  /* right side not evaluated: no division by zero */
	value("Z==0 || L/Z>1", 1);

	/* errors */
	error("D/Q", "unknown name", "'Q'");
	error("L/Z", "division by zero", NULL);
	error("L%(D-D)", "division by zero", NULL);
	error("cdiv(L,Z)", "division by zero", NULL);
	error("D+1 )", "trailing", NULL);
	error("1 2", "trailing", NULL);
	error("L<D<B", "trailing", NULL);
	error("2 ** 3", "unexpected", NULL);
	error("(L+1", "expected ')'", NULL);
	error("", "empty", NULL);
	error("L+", "end of expression", NULL);
	error("foo(1,2)", "unknown function", "foo");
	error("min(1)", "2 arguments", NULL);
	error("cdiv(1,2,3)", "2 arguments", NULL);
	error("D + $", "unexpected character", NULL);
	error("D $ 2", "trailing", NULL);
	error("99999999999999999999", "too large", NULL);
	error("9223372036854775807+1", "overflow", NULL);
	error("Z>0 && Q>1", "unknown name", "'Q'");   /* names are checked even where not evaluated */
	error("L = 37", "trailing", NULL);

	/* shapex_check: syntax and names only */
	char err[512] = "";
	verdict(shapex_check("L/Z", &vars, err, sizeof err) == 0, "check accepts division by zero", err);
	verdict(shapex_check("L/Q", &vars, err, sizeof err) != 0 && strstr(err, "unknown name"),
	        "check refuses an unknown name", err);
	verdict(shapex_check("L+(", &vars, err, sizeof err) != 0 && strstr(err, "\"L+(\""),
	        "check refuses bad syntax, quoting the expression", err);

	/* too long a name is not added (never truncated into another name) */
	shapex_set(&vars, "a_name_longer_than_15", 1);
	verdict(vars.n == 6, "an over-long name is not added", "");

	/* mentions: a name as a name, whole, not as a function or part of another */
	verdict(shapex_mentions("SMS", "SMS") && shapex_mentions("min(NR,max(1,2*SMS/NX))", "SMS") &&
	                shapex_mentions("cdiv(L, SMS )", "SMS"),
	        "mentions finds a name alone, inside calls, and between spaces", "");
	verdict(!shapex_mentions("SMSX+XSMS+S_MS", "SMS") && !shapex_mentions("min (1,2)", "min") &&
	                !shapex_mentions("12", "SMS") && !shapex_mentions("", "SMS"),
	        "mentions skips longer names, function names and numbers", "");

	/* a name that is another's prefix, or has it as a prefix, is not it */
	ShapeVars pv = { .n = 0 };   /* the longer first: a lookup by prefix alone would find them */
	shapex_set(&pv, "NNN_longest_15", 7);
	shapex_set(&pv, "NN", 5);
	shapex_set(&pv, "N", 3);
	int64_t a = 0, b = 0, c = 0;
	err[0] = 0;
	int rc = shapex_eval("N", &pv, &a, err, sizeof err) || shapex_eval("NN", &pv, &b, err, sizeof err) ||
	         shapex_eval("NNN_longest_15", &pv, &c, err, sizeof err);
	verdict(rc == 0 && a == 3 && b == 5 && c == 7, "names that prefix each other are told apart", err);
	verdict(shapex_eval("NNNN", &pv, &a, err, sizeof err) != 0 && strstr(err, "unknown name"),
	        "a longer name that starts like known ones is unknown", err);

	memo_tests();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
