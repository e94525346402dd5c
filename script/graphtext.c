/* A mixer's expression graph as lines of text (see graphtext.h). */
#include "graphtext.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GT_MAXLINE 128 /* the longest line read: 4 words */
#define GT_MAXNODES (1 << 20)

static const char *const pkind_name[] = {
        [PK_CHANNEL] = "channel", [PK_BLOCKDIAG] = "blockdiag", [PK_SCALAR] = "scalar"};

/* Operands of op, from the enum's grouping in expr.h (leaves, unary, binary, where). */
static int gt_arity(ExOp op)
{
	if (op < EX_NEG)
		return 0;
	if (op <= EX_RSQRT)
		return 1;
	if (op <= EX_GT)
		return 2;
	return 3;
}

static int gt_fail(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- writing ------------------------------------------------------------ */

/* A malloc'd formatted string; NULL out of memory. */
static char *gt_fmt(const char *fmt, ...)
{
	char buf[GT_MAXLINE];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return strdup(buf);
}

static char *gt_node_line(const ExGraph *g, int id, const int *line)
{
	const ExNode *n = &g->n[id];
	switch (gt_arity(n->op)) {
	case 0:
		if (n->op == EX_X || n->op == EX_H || n->op == EX_FIRST)
			return gt_fmt("%s", ex_opname(n->op));
		if (n->op == EX_PARAM || n->op == EX_PROJ)
			return gt_fmt("%s %d", ex_opname(n->op), n->idx);
		return gt_fmt("const %.17g", n->k);
	case 1:
		return gt_fmt("%s %d", ex_opname(n->op), line[n->a]);
	case 2:
		return gt_fmt("%s %d %d", ex_opname(n->op), line[n->a], line[n->b]);
	default:
		return gt_fmt("%s %d %d %d", ex_opname(n->op), line[n->a], line[n->b], line[n->c]);
	}
}

/* line[id]: the line of each node log_a, b and y reach, -1 for the others;
 * returns how many. */
static int gt_number(const Mixer *mx, int *line)
{
	const ExGraph *g = &mx->g;
	for (int id = 0; id < g->len; id++)
		line[id] = -1;
	line[mx->log_a] = line[mx->b] = line[mx->y] = 0;
	for (int id = g->len - 1; id >= 0; id--) { /* operands have smaller ids */
		if (line[id] < 0)
			continue;
		const ExNode *n = &g->n[id];
		if (n->a >= 0)
			line[n->a] = 0;
		if (n->b >= 0)
			line[n->b] = 0;
		if (n->c >= 0)
			line[n->c] = 0;
	}
	int k = 0;
	for (int id = 0; id < g->len; id++)
		if (line[id] == 0)
			line[id] = k++;
	return k;
}

static int gt_write_nodes(const Mixer *mx, GraphText *t, int *line, char *err, size_t n)
{
	const ExGraph *g = &mx->g;
	t->nnode = gt_number(mx, line);
	t->node = calloc((size_t)t->nnode + 1, sizeof *t->node);
	if (!t->node)
		return gt_fail(err, n, "out of memory for %d graph lines", t->nnode);
	for (int id = 0, k = 0; id < g->len; id++) {
		if (line[id] < 0)
			continue;
		ExOp op = g->n[id].op;
		if (op == EX_SEED || op == EX_TOK)
			return gt_fail(err, n, "mixer %s: node %d is a %s, which no script builds", mx->name, id,
			               ex_opname(op));
		if (op == EX_CONST && !isfinite(g->n[id].k))
			return gt_fail(err, n, "mixer %s: node %d is the constant %g", mx->name, id, g->n[id].k);
		if (!(t->node[k++] = gt_node_line(g, id, line)))
			return gt_fail(err, n, "out of memory for the graph's lines");
	}
	t->log_a = line[mx->log_a];
	t->b = line[mx->b];
	t->y = line[mx->y];
	return 0;
}

static int gt_write_decls(const Mixer *mx, GraphText *t, char *err, size_t n)
{
	t->param = calloc((size_t)mx->nparam + 1, sizeof *t->param);
	t->proj = calloc((size_t)mx->nproj + 1, sizeof *t->proj);
	if (!t->param || !t->proj)
		return gt_fail(err, n, "out of memory for the graph's declarations");
	for (int i = 0; i < mx->nparam; i++, t->nparam++)
		if (!(t->param[i] = gt_fmt("%s %s", mx->param[i].name, pkind_name[mx->param[i].kind])))
			return gt_fail(err, n, "out of memory for the graph's declarations");
	for (int i = 0; i < mx->nproj; i++, t->nproj++) {
		const MxProj *p = &mx->proj[i];
		t->proj[i] = p->kind == PJ_BLOCKDIAG ? gt_fmt("%s blockdiag %d %d", p->name, p->weight, p->bias)
		                                     : gt_fmt("%s token %d %d %s", p->name, p->weight, p->bias,
		                                              p->scale_rsqrt_d ? "rsqrt_d" : "none");
		if (!t->proj[i])
			return gt_fail(err, n, "out of memory for the graph's declarations");
	}
	return 0;
}

int gt_write(const Mixer *mx, GraphText *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	const ExGraph *g = &mx->g;
	if (mx->log_a < 0 || mx->log_a >= g->len || mx->b < 0 || mx->b >= g->len || mx->y < 0 || mx->y >= g->len)
		return gt_fail(err, errlen, "mixer %s: a root is not a node of its graph", mx->name);
	int *line = malloc(((size_t)g->len + 1) * sizeof *line);
	int rc = line ? gt_write_nodes(mx, t, line, err, errlen) : gt_fail(err, errlen, "out of memory");
	free(line);
	if (rc == 0)
		rc = gt_write_decls(mx, t, err, errlen);
	if (rc != 0)
		gt_free(t);
	return rc;
}

static void gt_free_lines(const char **l, int n)
{
	if (!l)
		return;
	for (int i = 0; i < n; i++)
		free((void *)l[i]);
	free((void *)l);
}

void gt_free(GraphText *t)
{
	/* the write fills arrays front to back: a partial one has NULLs after its last line */
	gt_free_lines(t->node, t->nnode);
	gt_free_lines(t->param, t->nparam);
	gt_free_lines(t->proj, t->nproj);
	memset(t, 0, sizeof *t);
}

/* ---- reading ------------------------------------------------------------ */

/* Splits line into at most 5 space-separated words (in buf); the count, or
 * -1 for a line too long or too many words. */
static int gt_words(const char *line, char *buf, char **w)
{
	if (strlen(line) >= GT_MAXLINE)
		return -1;
	strcpy(buf, line);
	int n = 0;
	for (char *save = NULL, *s = strtok_r(buf, " ", &save); s; s = strtok_r(NULL, " ", &save)) {
		if (n == 5)
			return -1;
		w[n++] = s;
	}
	return n;
}

/* A whole decimal in [lo, hi]: 0, or -1. */
static int gt_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int gt_name(const char *s, char *dst)
{
	size_t len = strlen(s);
	if (len == 0 || len >= MX_NAME)
		return -1;
	memcpy(dst, s, len + 1);
	return 0;
}

static int gt_read_params(const GraphText *t, Mixer *mx, char *err, size_t n)
{
	if (t->nparam < 0 || t->nparam > MX_MAXPARAM)
		return gt_fail(err, n, "graph: %d parameters, at most %d", t->nparam, MX_MAXPARAM);
	mx->nparam = t->nparam;
	for (int i = 0; i < t->nparam; i++) {
		char buf[GT_MAXLINE], *w[5];
		MxParam *p = &mx->param[i];
		int nw = gt_words(t->param[i], buf, w), kind = -1;
		for (int k = 0; nw == 2 && k < 3; k++)
			if (!strcmp(w[1], pkind_name[k]))
				kind = k;
		if (kind < 0 || gt_name(w[0], p->name))
			return gt_fail(err, n, "graph: parameter %d \"%s\": want \"NAME channel|blockdiag|scalar\"", i,
			               t->param[i]);
		p->kind = (ParamKind)kind;
		for (int k = 0; k < i; k++)
			if (!strcmp(mx->param[k].name, p->name))
				return gt_fail(err, n, "graph: parameter %s declared twice", p->name);
	}
	return 0;
}

/* Projection i's weight and bias must be the kinds its kind takes (as m:project and m:token_project check). */
static int gt_check_proj(const Mixer *mx, const MxProj *p, int i, const char *line, char *err, size_t n)
{
	ParamKind wk = mx->param[p->weight].kind, bk = mx->param[p->bias].kind;
	int ok = p->kind == PJ_BLOCKDIAG ? wk == PK_BLOCKDIAG && bk == PK_CHANNEL : wk == PK_CHANNEL && bk == PK_SCALAR;
	if (!ok)
		return gt_fail(err, n, "graph: projection %d \"%s\": a %s projection takes a %s weight and a %s bias",
		               i, line, p->kind == PJ_BLOCKDIAG ? "blockdiag" : "token",
		               p->kind == PJ_BLOCKDIAG ? "blockdiag" : "channel",
		               p->kind == PJ_BLOCKDIAG ? "channel" : "scalar");
	return 0;
}

static int gt_read_projs(const GraphText *t, Mixer *mx, char *err, size_t n)
{
	if (t->nproj < 0 || t->nproj > MX_MAXPROJ)
		return gt_fail(err, n, "graph: %d projections, at most %d", t->nproj, MX_MAXPROJ);
	mx->nproj = t->nproj;
	for (int i = 0; i < t->nproj; i++) {
		char buf[GT_MAXLINE], *w[5];
		MxProj *p = &mx->proj[i];
		int nw = gt_words(t->proj[i], buf, w), hi = mx->nparam - 1;
		int blk = nw == 4 && !strcmp(w[1], "blockdiag");
		int tok = nw == 5 && !strcmp(w[1], "token") && (!strcmp(w[4], "none") || !strcmp(w[4], "rsqrt_d"));
		if ((!blk && !tok) || gt_name(w[0], p->name) || gt_int(w[2], 0, hi, &p->weight) ||
		    gt_int(w[3], 0, hi, &p->bias))
			return gt_fail(err, n,
			               "graph: projection %d \"%s\": want \"NAME blockdiag W BIAS\" or "
			               "\"NAME token W BIAS none|rsqrt_d\" with W, BIAS parameter indices below %d",
			               i, t->proj[i], mx->nparam);
		p->kind = blk ? PJ_BLOCKDIAG : PJ_TOKEN;
		p->scale_rsqrt_d = tok && !strcmp(w[4], "rsqrt_d");
		if (gt_check_proj(mx, p, i, t->proj[i], err, n))
			return -1;
	}
	return 0;
}

/* The node of a leaf line ("x", "param 2", "const 8"); -1 with why in err. */
static int gt_leaf(Mixer *mx, ExOp op, char **w, int nw, char *err, size_t n)
{
	int idx = 0;
	if (op == EX_X || op == EX_H || op == EX_FIRST)
		return nw == 1 ? ex_leaf(&mx->g, op, 0) : gt_fail(err, n, "takes no operand");
	if (op == EX_CONST) {
		char *end;
		double k = nw == 2 ? strtod(w[1], &end) : NAN;
		if (nw != 2 || *end || !isfinite(k))
			return gt_fail(err, n, "want \"const K\" with K a finite number");
		return ex_const(&mx->g, k);
	}
	if (op == EX_PARAM && nw == 2 && gt_int(w[1], 0, mx->nparam - 1, &idx) == 0) {
		if (mx->param[idx].kind == PK_BLOCKDIAG)
			return gt_fail(err, n,
			               "parameter %s is a block-diagonal weight, used only through a projection",
			               mx->param[idx].name);
		return ex_leaf(&mx->g, op, idx);
	}
	if (op == EX_PROJ && nw == 2 && gt_int(w[1], 0, mx->nproj - 1, &idx) == 0)
		return ex_leaf(&mx->g, op, idx);
	return gt_fail(err, n, "want \"%s I\" with I below %d", ex_opname(op), op == EX_PARAM ? mx->nparam : mx->nproj);
}

/* The node of line i, its operands mapped through id[] (lines before i). */
static int gt_node(Mixer *mx, const char *line, int i, const int *id, char *err, size_t n)
{
	char buf[GT_MAXLINE], *w[5];
	int nw = gt_words(line, buf, w), op = -1;
	for (int k = 0; nw > 0 && k < EX_NOPS; k++)
		if (k != EX_SEED && k != EX_TOK && !strcmp(w[0], ex_opname((ExOp)k)))
			op = k;
	if (op < 0)
		return gt_fail(err, n, "an unknown node kind");
	int ar = gt_arity((ExOp)op), a[3] = {-1, -1, -1};
	if (ar == 0)
		return gt_leaf(mx, (ExOp)op, w, nw, err, n);
	if (nw != ar + 1)
		return gt_fail(err, n, "%s takes %d operand%s", w[0], ar, ar > 1 ? "s" : "");
	for (int k = 0; k < ar; k++)
		if (gt_int(w[k + 1], 0, i - 1, &a[k]))
			return gt_fail(err, n, "operand %s is not an earlier line", w[k + 1]);
	if (ar == 1)
		return ex_un(&mx->g, (ExOp)op, id[a[0]]);
	if (ar == 2)
		return ex_bin(&mx->g, (ExOp)op, id[a[0]], id[a[1]]);
	return ex_where(&mx->g, id[a[0]], id[a[1]], id[a[2]]);
}

static int gt_read_nodes(const GraphText *t, Mixer *mx, char *err, size_t n)
{
	if (t->nnode < 1 || t->nnode > GT_MAXNODES)
		return gt_fail(err, n, "graph: %d lines, want 1 to %d", t->nnode, GT_MAXNODES);
	int *id = malloc((size_t)t->nnode * sizeof *id);
	if (!id)
		return gt_fail(err, n, "out of memory for %d graph lines", t->nnode);
	int rc = 0;
	for (int i = 0; i < t->nnode && rc == 0; i++) {
		char why[256] = "the node constructors refused it";
		id[i] = gt_node(mx, t->node[i], i, id, why, sizeof why);
		if (id[i] < 0)
			rc = gt_fail(err, n, "graph: line %d \"%s\": %s", i, t->node[i], why);
	}
	int roots[3] = {t->log_a, t->b, t->y};
	for (int k = 0; k < 3 && rc == 0; k++)
		if (roots[k] < 0 || roots[k] >= t->nnode)
			rc = gt_fail(err, n, "graph: root %d is not a line (%d lines)", roots[k], t->nnode);
	if (rc == 0) {
		mx->log_a = id[t->log_a];
		mx->b = id[t->b];
		mx->y = id[t->y];
	}
	free(id);
	return rc;
}

int gt_read(const GraphText *t, Mixer *mx, char *err, size_t errlen)
{
	ex_init(&mx->g);
	int rc = gt_read_params(t, mx, err, errlen) || gt_read_projs(t, mx, err, errlen) ||
	                gt_read_nodes(t, mx, err, errlen)
	        ? -1
	        : 0;
	/* the recurrence must stay linear, as m:recurrence checks */
	if (rc == 0 && (ex_depends(&mx->g, mx->log_a, EX_H, -1) || ex_depends(&mx->g, mx->b, EX_H, -1)))
		rc = gt_fail(err, errlen, "graph: log_a or b depends on h: the recurrence would not be linear");
	if (rc != 0)
		ex_free(&mx->g);
	return rc;
}
