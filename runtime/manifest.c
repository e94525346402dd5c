/* manifest.json -> recur_manifest (format in manifest.h), and the manifest
 * functions of recur.h.
 *
 * Everything is validated at load time, so that the per-call paths in plan.c
 * can trust the data: keys and types, arg kinds, workspace lives, references
 * (mixers, parameters, workspaces), that the PTX file exists, and that every
 * shape expression parses and names only B, L, D and the variant's vars
 * (shapex_check). Messages name the manifest path and where in it:
 *   out/manifest.json: variants[2] (fused_chunk16): forward[1]: args[3]: unknown arg kind "foo" ...
 * The parsed data lives in one arena, freed whole by recur_manifest_free.
 */
#include "rt_impl.h"
#include "manifest.h"
#include <jansson.h>
#include <stdarg.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <math.h>
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const rt_pass_name[2] = {"forward", "backward"};

/* ---- arena ---- */

struct rt_chunk {
	rt_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

static void *ar_alloc(recur_manifest *m, size_t n)
{
	n = (n + alignof(max_align_t) - 1) / alignof(max_align_t) * alignof(max_align_t);
	rt_chunk *c = m->arena;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > 16384 ? n : 16384;
		c = malloc(sizeof *c + cap);
		if (!c) {
			fprintf(stderr, "recur: out of host memory (%s:%d)\n", __FILE__, __LINE__);
			abort();
		}
		c->next = m->arena;
		c->used = 0;
		c->cap = cap;
		m->arena = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	memset(p, 0, n);
	return p;
}

static const char *ar_str(recur_manifest *m, const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(ar_alloc(m, n), s, n);
}

/* ---- located errors ---- */

typedef struct {
	recur_manifest *m;
	char *err;
	size_t errlen;
	char where[320];       /* "variants[2] (name): forward[1]" */
} Ld;

static int ld_fail(Ld *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ld_fail(Ld *L, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(L->err, L->errlen, "%s: %s%s%s", L->m->path, L->where, *L->where ? ": " : "", msg);
	return -1;
}

/* Appends to the location; returns the old length, to restore with ld_pop. */
static size_t ld_push(Ld *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t ld_push(Ld *L, const char *fmt, ...)
{
	size_t n = strlen(L->where);
	if (n && n + 2 < sizeof L->where)
		strcat(L->where, ": ");
	size_t k = strlen(L->where);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(L->where + k, sizeof L->where - k, fmt, ap);
	va_end(ap);
	return n;
}

static void ld_pop(Ld *L, size_t n)
{
	L->where[n] = 0;
}

static const char *json_kind(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE: case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

/* ---- typed getters: -1 (with the message) on a missing or mistyped key ---- */

static json_t *ld_key(Ld *L, json_t *obj, const char *key, int required)
{
	json_t *j = json_object_get(obj, key);
	if (!j && required)
		ld_fail(L, "missing key \"%s\"", key);
	return j;
}

static int ld_str(Ld *L, json_t *obj, const char *key, int required, const char **out)
{
	*out = NULL;
	json_t *j = ld_key(L, obj, key, required);
	if (!j)
		return required ? -1 : 0;
	if (!json_is_string(j))
		return ld_fail(L, "key \"%s\" must be a string, not %s", key, json_kind(j));
	*out = ar_str(L->m, json_string_value(j));
	return 0;
}

/* a string, or null (then *out = NULL) */
static int ld_str_or_null(Ld *L, json_t *obj, const char *key, const char **out)
{
	json_t *j = json_object_get(obj, key);
	if (j && json_is_null(j)) {
		*out = NULL;
		return 0;
	}
	if (j && !json_is_string(j))
		return ld_fail(L, "key \"%s\" must be a string or null, not %s", key, json_kind(j));
	return ld_str(L, obj, key, 0, out);
}

static int ld_int(Ld *L, json_t *obj, const char *key, int required, int *out)
{
	json_t *j = ld_key(L, obj, key, required);
	if (!j)
		return required ? -1 : 0;
	if (!json_is_integer(j))
		return ld_fail(L, "key \"%s\" must be an integer, not %s", key, json_kind(j));
	json_int_t v = json_integer_value(j);
	if (v < -2147483647 || v > 2147483647)
		return ld_fail(L, "key \"%s\" is out of range: %lld", key, (long long)v);
	*out = (int)v;
	return 0;
}

static int ld_bool(Ld *L, json_t *obj, const char *key, int *out)
{
	json_t *j = json_object_get(obj, key);
	if (!j)
		return 0;
	if (!json_is_boolean(j))
		return ld_fail(L, "key \"%s\" must be true or false, not %s", key, json_kind(j));
	*out = json_is_true(j);
	return 0;
}

static int ld_array(Ld *L, json_t *obj, const char *key, int required, json_t **out)
{
	*out = ld_key(L, obj, key, required);
	if (!*out)
		return required ? -1 : 0;
	if (!json_is_array(*out))
		return ld_fail(L, "key \"%s\" must be an array, not %s", key, json_kind(*out));
	return 0;
}

static int ld_object(Ld *L, json_t *j, const char *what)
{
	if (!json_is_object(j))
		return ld_fail(L, "%s must be an object, not %s", what, json_kind(j));
	return 0;
}

/* Shape expressions are parsed by recursive descent (shapex.c), one level
 * per parenthesis and per unary minus, whenever a call evaluates them, on
 * whatever thread (and stack) the caller has. Bounded here, once, at load:
 * generated expressions are a few hundred characters nested a few deep,
 * and a hostile one is refused with its place instead of overflowing a
 * stack later. */
#define RT_EXPR_MAXLEN 4096
#define RT_EXPR_MAXNEST 64

static int ld_expr_guard(Ld *L, const char *what, const char *e)
{
	size_t n = strlen(e);
	if (n > RT_EXPR_MAXLEN)
		return ld_fail(L, "%s: a shape expression of %zu characters, more than %d", what, n, RT_EXPR_MAXLEN);
	int depth = 0, signs = 0, most = 0;
	for (const char *p = e; *p; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth > 0)
			depth--;
		if (*p == '-')
			signs++;   /* a run of minus signs nests like parentheses */
		else if (!isspace((unsigned char)*p))
			signs = 0;
		if (depth + signs > most)
			most = depth + signs;
	}
	if (most > RT_EXPR_MAXNEST)
		return ld_fail(L, "%s: shape expression \"%.40s%s\" nests %d deep (parentheses and minus signs), more "
		               "than %d", what, e, n > 40 ? "..." : "", most, RT_EXPR_MAXNEST);
	return 0;
}

/* A shape expression: a string, or an integer (kept as its decimal text). */
static int ld_expr_value(Ld *L, json_t *j, const char *what, const char **out)
{
	char buf[32];
	if (json_is_integer(j)) {
		snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(j));
		*out = ar_str(L->m, buf);
		return 0;
	}
	if (!json_is_string(j))
		return ld_fail(L, "%s must be a shape expression (a string), not %s", what, json_kind(j));
	if (ld_expr_guard(L, what, json_string_value(j)))
		return -1;
	*out = ar_str(L->m, json_string_value(j));
	return 0;
}

static int ld_expr(Ld *L, json_t *obj, const char *key, int required, const char *dflt, const char **out)
{
	json_t *j = ld_key(L, obj, key, required);
	if (!j) {
		*out = dflt;
		return required ? -1 : 0;
	}
	char what[80];
	snprintf(what, sizeof what, "key \"%s\"", key);
	return ld_expr_value(L, j, what, out);
}

/* Syntax and names of an expression against the vars known at that point. */
static int ld_check(Ld *L, const char *what, const char *expr, const ShapeVars *sv)
{
	char e[512];
	if (shapex_check(expr, sv, e, sizeof e))
		return ld_fail(L, "%s: %s", what, e);
	return 0;
}

/* ---- mixers ---- */

static const char *const init_kinds[] = {"zeros", "const", "normal", "decay"};

/* init "a"/"b": a number, or a string "EXPR" / "rsqrt(EXPR)" (a value that
 * depends on the shape, e.g. std = 1/sqrt(K)). */
static int ld_init_value(Ld *L, json_t *init, const char *key, double *num, const char **expr)
{
	json_t *j = json_object_get(init, key);
	*num = 0;
	*expr = NULL;
	if (!j)
		return 0;
	if (json_is_number(j)) {
		*num = json_number_value(j);
		/* parameters are fp32: a value past FLT_MAX would become inf there */
		if (!(fabs(*num) <= FLT_MAX))
			return ld_fail(L, "init key \"%s\" = %g does not fit a float32 (parameters are fp32)", key, *num);
		return 0;
	}
	if (json_is_string(j)) {
		char what[32];
		snprintf(what, sizeof what, "init \"%s\"", key);
		if (ld_expr_guard(L, what, json_string_value(j)))
			return -1;
		*expr = ar_str(L->m, json_string_value(j));
		return 0;
	}
	return ld_fail(L, "init key \"%s\" must be a number or a shape expression, not %s", key, json_kind(j));
}

static int ld_param(Ld *L, json_t *j, rt_param *p)
{
	if (ld_object(L, j, "a parameter") || ld_str(L, j, "name", 1, &p->name))
		return -1;
	json_t *dims, *init;
	if (ld_array(L, j, "dims", 1, &dims))
		return -1;
	p->ndim = (int)json_array_size(dims);
	if (p->ndim > RECUR_MAXDIM)
		return ld_fail(L, "%d dims, at most %d", p->ndim, RECUR_MAXDIM);
	p->dims = ar_alloc(L->m, (p->ndim + 1) * sizeof *p->dims);
	for (int i = 0; i < p->ndim; i++) {
		char what[32];
		snprintf(what, sizeof what, "dims[%d]", i);
		if (ld_expr_value(L, json_array_get(dims, i), what, &p->dims[i]))
			return -1;
	}
	if (!(init = ld_key(L, j, "init", 1)) || ld_object(L, init, "key \"init\""))
		return -1;
	if (ld_str(L, init, "kind", 1, &p->init))
		return -1;
	int known = 0;
	for (int i = 0; i < 4; i++)
		known |= !strcmp(p->init, init_kinds[i]);
	if (!known)
		return ld_fail(L, "unknown init kind \"%s\" (expected zeros, const, normal or decay)", p->init);
	return ld_init_value(L, init, "a", &p->a, &p->a_expr) || ld_init_value(L, init, "b", &p->b, &p->b_expr);
}

static int ld_mixer(Ld *L, const char *name, json_t *j, rt_mixer *mx)
{
	size_t at = ld_push(L, "mixers.%s", name);
	json_t *params;
	mx->name = ar_str(L->m, name);
	if (ld_object(L, j, "a mixer") || ld_str(L, j, "script", 0, &mx->script) ||
	    ld_int(L, j, "k", 0, &mx->k) || ld_str_or_null(L, j, "controller", &mx->controller) ||
	    ld_expr(L, j, "dynamic_control_values_per_token", 0, NULL, &mx->dyn_per_token) ||
	    ld_array(L, j, "params", 1, &params))
		return -1;
	mx->nparam = (int)json_array_size(params);
	mx->param = ar_alloc(L->m, (mx->nparam + 1) * sizeof *mx->param);
	for (int i = 0; i < mx->nparam; i++) {
		size_t at2 = ld_push(L, "params[%d]", i);
		if (ld_param(L, json_array_get(params, i), &mx->param[i]))
			return -1;
		for (int k = 0; k < i; k++)
			if (!strcmp(mx->param[k].name, mx->param[i].name))
				return ld_fail(L, "parameter \"%s\" declared twice", mx->param[i].name);
		ld_pop(L, at2);
	}
	ld_pop(L, at);
	return 0;
}

/* ---- variants ---- */

static int find_param(const rt_mixer *mx, const char *name)
{
	for (int i = 0; i < mx->nparam; i++)
		if (!strcmp(mx->param[i].name, name))
			return i;
	return -1;
}

/* the workspace named by the n characters at name, or -1 */
static int find_ws_n(const rt_vdesc *d, const char *name, size_t n)
{
	for (int i = 0; i < d->nws; i++)
		if (strlen(d->ws[i].name) == n && !strncmp(d->ws[i].name, name, n))
			return i;
	return -1;
}

static int find_ws(const rt_vdesc *d, const char *name) { return find_ws_n(d, name, strlen(name)); }

static int valid_name(const char *s)
{
	if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

static int ld_vars(Ld *L, json_t *vars, rt_vdesc *d, ShapeVars *sv)
{
	memset(sv, 0, sizeof *sv);
	shapex_set(sv, "B", 1);
	shapex_set(sv, "L", 1);
	shapex_set(sv, "D", 1);
	shapex_set(sv, "ndocs", 1);   /* the call's documents (cu_seqlens), 0 without */
	shapex_set(sv, "SMS", 1);     /* the device's multiprocessors */
	d->nvar = (int)json_array_size(vars);
	if (d->nvar > SHAPEX_MAXVAR - 5)
		return ld_fail(L, "%d vars, at most %d", d->nvar, SHAPEX_MAXVAR - 5);
	d->var = ar_alloc(L->m, (d->nvar + 1) * sizeof *d->var);
	for (int i = 0; i < d->nvar; i++) {
		json_t *pair = json_array_get(vars, i);
		size_t at = ld_push(L, "vars[%d]", i);
		if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_string(json_array_get(pair, 0)))
			return ld_fail(L, "must be a pair [\"NAME\", \"EXPR\"]");
		const char *name = json_string_value(json_array_get(pair, 0));
		if (!valid_name(name) || strlen(name) >= sizeof sv->name[0])
			return ld_fail(L, "\"%s\" is not a valid variable name (a letter or '_', then letters, "
			               "digits or '_', at most %zu characters)", name, sizeof sv->name[0] - 1);
		for (int k = 0; k < sv->n; k++)
			if (!strcmp(sv->name[k], name))
				return ld_fail(L, "variable \"%s\" defined twice (B, L, D, ndocs and SMS are given)", name);
		d->var[i].name = ar_str(L->m, name);
		if (ld_expr_value(L, json_array_get(pair, 1), "its expression", &d->var[i].expr) ||
		    ld_check(L, name, d->var[i].expr, sv))
			return -1;
		shapex_set(sv, name, 1);
		ld_pop(L, at);
	}
	return 0;
}

static int ld_rules(Ld *L, json_t *rules, rt_vdesc *d, const ShapeVars *sv)
{
	d->nrule = (int)json_array_size(rules);
	d->rule = ar_alloc(L->m, (d->nrule + 1) * sizeof *d->rule);
	for (int i = 0; i < d->nrule; i++) {
		json_t *j = json_array_get(rules, i);
		size_t at = ld_push(L, "rules[%d]", i);
		if (ld_object(L, j, "a rule") || ld_expr(L, j, "expr", 1, NULL, &d->rule[i].expr) ||
		    ld_str(L, j, "message", 1, &d->rule[i].message) ||
		    ld_check(L, "expr", d->rule[i].expr, sv))
			return -1;
		ld_pop(L, at);
	}
	return 0;
}

/* Whether expr depends on SMS, the device's multiprocessors: it names SMS
 * or a var that does, through the vars before it (each names only earlier
 * ones, so one pass in order finds them all) */
static int on_sms(const rt_vdesc *d, const char *expr)
{
	int dep[SHAPEX_MAXVAR] = {0};
	for (int i = 0; i < d->nvar && i < SHAPEX_MAXVAR; i++) {
		dep[i] = shapex_mentions(d->var[i].expr, "SMS");
		for (int j = 0; j < i && !dep[i]; j++)
			dep[i] = dep[j] && shapex_mentions(d->var[i].expr, d->var[j].name);
	}
	int on = shapex_mentions(expr, "SMS");
	for (int i = 0; i < d->nvar && i < SHAPEX_MAXVAR && !on; i++)
		on = dep[i] && shapex_mentions(expr, d->var[i].name);
	return on;
}

static int ld_workspaces(Ld *L, json_t *wss, rt_vdesc *d, const ShapeVars *sv)
{
	static const char *const lives[] = {"forward", "saved", "backward", "each"};
	d->nws = (int)json_array_size(wss);
	d->ws = ar_alloc(L->m, (d->nws + 1) * sizeof *d->ws);
	for (int i = 0; i < d->nws; i++) {
		json_t *j = json_array_get(wss, i);
		rt_ws *w = &d->ws[i];
		const char *life;
		size_t at = ld_push(L, "workspaces[%d]", i);
		if (ld_object(L, j, "a workspace") || ld_str(L, j, "name", 1, &w->name) ||
		    ld_expr(L, j, "bytes", 1, NULL, &w->bytes) || ld_str(L, j, "life", 1, &life) ||
		    ld_bool(L, j, "zero", &w->zero) || ld_check(L, "bytes", w->bytes, sv))
			return -1;
		/* a caller sizes its workspaces from the manifest alone
		 * (recur_workspace_size), where SMS is 132 */
		if (on_sms(d, w->bytes))
			return ld_fail(L, "bytes \"%s\" depend on SMS, the device's multiprocessors: a workspace must "
			               "be the same on every device", w->bytes);
		int k = 0;
		while (k < 4 && strcmp(life, lives[k]))
			k++;
		if (k == 4)
			return ld_fail(L, "unknown workspace life \"%s\" (expected forward, saved, backward or each)", life);
		w->life = (rt_life)k;
		/* each pass's kernels make it; a zeroed one would be cleared in
		 * both passes' part of the arena, which holds a workspace once */
		if (w->life == RT_LIFE_EACH && w->zero)
			return ld_fail(L, "workspace \"%s\" of life \"each\" is zeroed: a workspace both passes make "
			               "cannot be cleared by the arena", w->name);
		if (find_ws(d, w->name) < i)
			return ld_fail(L, "workspace \"%s\" declared twice", w->name);
		ld_pop(L, at);
	}
	return 0;
}

/* the call's tensors, in the order of RT_ARG_X.. */
static const char *const io_tensors[] = {"x", "y", "dy", "dx"};

/* RT_ARG_X + k for the n characters at name, or -1 */
static int io_tensor_kind(const char *name, size_t n)
{
	for (int k = 0; k < 4; k++)
		if (strlen(io_tensors[k]) == n && !strncmp(name, io_tensors[k], n))
			return RT_ARG_X + k;
	return -1;
}

/* workspace name (n characters) of arg s, used in pass: its index into
 * *index, a workspace of the other pass refused */
static int ld_ws_index(Ld *L, const char *s, const char *name, size_t n, const rt_vdesc *d, int pass, int *index)
{
	if ((*index = find_ws_n(d, name, n)) < 0)
		return ld_fail(L, "\"%s\" names no workspace of this variant", s);
	rt_life life = d->ws[*index].life;
	if ((life == RT_LIFE_FORWARD && pass == RT_BWD) || (life == RT_LIFE_BACKWARD && pass == RT_FWD))
		return ld_fail(L, "\"%s\": workspace of life \"%s\" used in the %s", s,
		               life == RT_LIFE_FORWARD ? "forward" : "backward", rt_pass_name[pass]);
	return 0;
}

/* "tmap:TENSOR:RxC": a TMA tensor map of x, y, dy, dx or a workspace
 * (ws:NAME), each [B][L][D] bf16, whose box is R rows of C columns, passed
 * by value (128 bytes); the runtime encodes it at each call
 * (rt_tmap_encode). C is 64: a box row is the 128 bytes of the 128-byte
 * swizzle that wgmma's operands are laid out in. "tmaprows:" the same
 * over the B*L rows as one sequence (a box may span two). */
static int ld_tmap(Ld *L, const char *s, const char *rest, const rt_vdesc *d, int pass, rt_arg *a)
{
	const char *colon = strrchr(rest, ':');
	size_t n = colon ? (size_t)(colon - rest) : strlen(rest);
	a->index = -1;
	if (n > 3 && !strncmp(rest, "ws:", 3)) {
		if (ld_ws_index(L, s, rest + 3, n - 3, d, pass, &a->index))
			return -1;
		a->tmap_ws = 1;
	} else {
		int k = io_tensor_kind(rest, n);
		a->index = k < 0 ? -1 : k - RT_ARG_X;
	}
	if (a->index < 0)
		return ld_fail(L, "\"%s\": a tensor map is of x, y, dy, dx or ws:NAME, not \"%.*s\"", s, (int)n, rest);
	/* strtol, not sscanf's %d: a number past int is no undefined behaviour */
	char *end = NULL;
	long rows = colon && isdigit((unsigned char)colon[1]) ? strtol(colon + 1, &end, 10) : -1, cols = -1;
	if (end && *end == 'x' && isdigit((unsigned char)end[1]))
		cols = strtol(end + 1, &end, 10);
	if (rows < 0 || cols < 0 || *end)
		return ld_fail(L, "\"%s\": expected %.*s:TENSOR:RxC, the box's rows and columns", s,
		               (int)(strchr(s, ':') - s), s);
	if (rows < 1 || rows > 256)
		return ld_fail(L, "\"%s\": a box of %ld rows, outside TMA's 1..256", s, rows);
	if (cols != 64)
		return ld_fail(L, "\"%s\": a box of %ld columns; the runtime encodes 64 (the 128 bytes of a "
		               "128-byte swizzle's row)", s, cols);
	a->box[0] = (int)rows;
	a->box[1] = (int)cols;
	return 0;
}

static int ld_arg(Ld *L, const char *s, const rt_mixer *mx, const rt_vdesc *d, int pass,
                  const ShapeVars *sv, rt_arg *a)
{
	a->text = ar_str(L->m, s);
	int k = io_tensor_kind(s, strlen(s));
	if (k >= 0) {
		a->kind = (rt_argkind)k;
		return 0;
	}
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : 0;
	const char *rest = colon ? colon + 1 : "";
	if (n == 5 && (!strncmp(s, "param", 5))) {
		a->kind = RT_ARG_PARAM;
	} else if (n == 4 && !strncmp(s, "grad", 4)) {
		a->kind = RT_ARG_GRAD;
	} else if (n == 2 && !strncmp(s, "ws", 2)) {
		a->kind = RT_ARG_WS;
		return ld_ws_index(L, s, rest, strlen(rest), d, pass, &a->index);
	} else if (n == 5 && !strncmp(s, "state", 5)) {
		a->kind = RT_ARG_STATE;
		for (a->index = 0; a->index < RT_NSTATE && strcmp(rest, rt_state_name[a->index]); a->index++)
			;
		if (a->index == RT_NSTATE)
			return ld_fail(L, "\"%s\" names no field of the sequence state (%s)", s, rt_state_names);
		if (!(d->state >> a->index & 1))
			return ld_fail(L, "\"%s\": the variant's \"state\" does not list %s", s, rest);
		return 0;
	} else if ((n == 4 && !strncmp(s, "tmap", 4)) || (n == 8 && !strncmp(s, "tmaprows", 8))) {
		a->kind = RT_ARG_TMAP;
		a->tmap_rows = n == 8;
		return ld_tmap(L, s, rest, d, pass, a);
	} else if (!strcmp(s, "zero:base") || !strcmp(s, "zero:words")) {
		a->kind = s[5] == 'b' ? RT_ARG_ZBASE : RT_ARG_ZWORDS;
		return 0;
	} else if (n == 3 && (!strncmp(s, "i32", 3) || !strncmp(s, "i64", 3))) {
		a->kind = s[1] == '3' ? RT_ARG_I32 : RT_ARG_I64;
		if (ld_expr_guard(L, s[1] == '3' ? "i32" : "i64", rest))
			return -1;
		a->expr = ar_str(L->m, rest);
		return ld_check(L, s, a->expr, sv);
	} else {
		return ld_fail(L, "unknown arg kind \"%s\" (expected x, y, dy, dx, param:NAME, grad:NAME, "
		               "ws:NAME, state:NAME, zero:base, zero:words, i32:EXPR, i64:EXPR, tmap:TENSOR:RxC or "
		               "tmaprows:TENSOR:RxC)", s);
	}
	if ((a->index = find_param(mx, rest)) < 0)
		return ld_fail(L, "\"%s\" names no parameter of mixer %s", s, mx->name);
	return 0;
}

static int ld_launch(Ld *L, json_t *j, const rt_mixer *mx, const rt_vdesc *d, int pass,
                     const ShapeVars *sv, rt_launch *l)
{
	json_t *grid, *block, *args;
	if (ld_object(L, j, "a launch") || ld_str(L, j, "kernel", 1, &l->kernel) ||
	    ld_array(L, j, "grid", 1, &grid) || ld_array(L, j, "block", 1, &block) ||
	    ld_expr(L, j, "smem", 0, "0", &l->smem) || ld_array(L, j, "args", 1, &args) ||
	    ld_check(L, "smem", l->smem, sv) || ld_expr(L, j, "cluster", 0, "1", &l->cluster) ||
	    ld_check(L, "cluster", l->cluster, sv) || ld_expr(L, j, "bytes", 0, "0", &l->bytes) ||
	    ld_check(L, "bytes", l->bytes, sv) || ld_expr(L, j, "flops", 0, "0", &l->flops) ||
	    ld_check(L, "flops", l->flops, sv) || ld_bool(L, j, "resident", &l->resident) ||
	    ld_bool(L, j, "early", &l->early) || ld_bool(L, j, "clears", &l->clears))
		return -1;
	if (!*l->kernel)
		return ld_fail(L, "empty kernel name");
	if (json_array_size(grid) != 3 || json_array_size(block) != 3)
		return ld_fail(L, "grid and block must have 3 entries (x, y, z)");
	long threads = 1;
	for (int k = 0; k < 3; k++) {
		char what[32];
		snprintf(what, sizeof what, "grid[%d]", k);
		if (ld_expr_value(L, json_array_get(grid, k), what, &l->grid[k]) || ld_check(L, what, l->grid[k], sv))
			return -1;
		json_t *b = json_array_get(block, k);
		static const int bmax[3] = {1024, 1024, 64};
		if (!json_is_integer(b) || json_integer_value(b) < 1 || json_integer_value(b) > bmax[k])
			return ld_fail(L, "block[%d] must be an integer in 1..%d", k, bmax[k]);
		l->block[k] = (int)json_integer_value(b);
		threads *= l->block[k];
	}
	if (threads > 1024)
		return ld_fail(L, "block %dx%dx%d has %ld threads, at most 1024", l->block[0], l->block[1],
		               l->block[2], threads);
	l->narg = (int)json_array_size(args);
	l->arg = ar_alloc(L->m, (l->narg + 1) * sizeof *l->arg);
	for (int i = 0; i < l->narg; i++) {
		json_t *a = json_array_get(args, i);
		size_t at = ld_push(L, "args[%d]", i);
		if (!json_is_string(a))
			return ld_fail(L, "must be a string, not %s", json_kind(a));
		if (ld_arg(L, json_string_value(a), mx, d, pass, sv, &l->arg[i]))
			return -1;
		ld_pop(L, at);
	}
	/* the runtime leaves the arena to a launch that clears: it must be
	 * told where the arena is, and only such a launch is */
	int nzero = 0;
	for (int i = 0; i < l->narg; i++)
		nzero += l->arg[i].kind == RT_ARG_ZBASE || l->arg[i].kind == RT_ARG_ZWORDS;
	if (l->clears && nzero != 2)
		return ld_fail(L, "a launch with \"clears\" takes the args zero:base and zero:words, once each");
	if (!l->clears && nzero)
		return ld_fail(L, "zero:base and zero:words are the args of a launch with \"clears\"");
	return 0;
}

/* The mixer's parameter dims and init expressions, against this variant's vars. */
static int ld_check_params(Ld *L, const rt_mixer *mx, const ShapeVars *sv)
{
	for (int i = 0; i < mx->nparam; i++) {
		const rt_param *p = &mx->param[i];
		size_t at = ld_push(L, "mixer %s parameter %s", mx->name, p->name);
		for (int k = 0; k < p->ndim; k++) {
			char what[32];
			snprintf(what, sizeof what, "dims[%d]", k);
			if (ld_check(L, what, p->dims[k], sv))
				return -1;
		}
		const char *ex[2] = {p->a_expr, p->b_expr};
		for (int k = 0; k < 2; k++) {
			if (!ex[k])
				continue;
			const char *e = ex[k];
			char inner[256];
			size_t n = strlen(e);
			if (!strncmp(e, "rsqrt(", 6) && n > 7 && e[n - 1] == ')' && n - 7 < sizeof inner) {
				memcpy(inner, e + 6, n - 7);
				inner[n - 7] = 0;
				e = inner;
			}
			if (ld_check(L, k ? "init b" : "init a", e, sv))
				return -1;
		}
		ld_pop(L, at);
	}
	return 0;
}

int rt_parse_sm(const char *s, int *major, int *minor, int *arch_specific)
{
	if (!s || strncmp(s, "sm_", 3) != 0)
		return -1;
	const char *p = s + 3;
	size_t nd = strspn(p, "0123456789");
	if (nd < 2 || nd > 3 || (p[nd] && strcmp(p + nd, "a") != 0))
		return -1;
	int v = atoi(p);
	*major = v / 10;
	*minor = v % 10;
	*arch_specific = p[nd] == 'a';
	return 0;
}

/* A module file of the variant (what: "ptx", "cubin"), beside the manifest
 * unless its path is absolute: it must be there, a regular file. */
static int ld_module_file(Ld *L, const char *what, const char *name, const char **path_out)
{
	recur_manifest *m = L->m;
	size_t n = strlen(m->dir) + strlen(name) + 2;
	char *path = ar_alloc(m, n);
	if (name[0] == '/')
		snprintf(path, n, "%s", name);
	else
		snprintf(path, n, "%s/%s", m->dir, name);
	*path_out = path;
	struct stat st;
	if (stat(path, &st) != 0)
		return ld_fail(L, "%s file %s is missing: %s", what, path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return ld_fail(L, "%s file %s is not a regular file", what, path);
	return 0;
}

const char *const rt_state_name[RT_NSTATE] = {"h0", "reset", "cu_seqlens", "hT", "dhT", "dh0", "map_loga",
                                               "map_h", "index"};
const char rt_state_names[] = "h0, reset, cu_seqlens, hT, dhT, dh0, map_loga, map_h, index";

/* "scan": the kind of scan of the variant's kernels (absent, as in
 * manifests before it: hierarchical). A decode step runs forward only and
 * updates a pool of states, in place where hT is h0 (plan.c lets it). */
static int ld_scan(Ld *L, json_t *j, rt_vdesc *d)
{
	static const char *const scans[] = {"hierarchical", "lookback", "onepass", "decode"};
	const char *scan;
	if (ld_str(L, j, "scan", 0, &scan))
		return -1;
	d->scan = scans[0];
	d->decode = 0;
	if (!scan)
		return 0;
	for (size_t k = 0; k < sizeof scans / sizeof *scans; k++)
		if (!strcmp(scan, scans[k])) {
			d->scan = scans[k];
			d->decode = !strcmp(scan, "decode");
			return 0;
		}
	return ld_fail(L, "unknown scan \"%s\" (expected hierarchical, lookback, onepass or decode)", scan);
}

/* "state": the names of the sequence state's fields the kernels take
 * (absent, as in manifests before it: none) */
static int ld_state(Ld *L, json_t *j, rt_vdesc *d)
{
	json_t *a = json_object_get(j, "state");
	d->state = 0;
	d->state_text[0] = 0;
	if (!a)
		return 0;
	if (!json_is_array(a))
		return ld_fail(L, "\"state\" must be a list of names");
	size_t k;
	json_t *e;
	json_array_foreach(a, k, e) {
		const char *n = json_string_value(e);
		int i = 0;
		while (n && i < RT_NSTATE && strcmp(n, rt_state_name[i]))
			i++;
		if (!n || i == RT_NSTATE)
			return ld_fail(L, "\"state\"[%zu] is not a field of the sequence state (%s)", k, rt_state_names);
		if (d->state >> i & 1)
			return ld_fail(L, "\"state\" lists %s twice", n);
		d->state |= 1u << i;
		size_t at = strlen(d->state_text);
		snprintf(d->state_text + at, sizeof d->state_text - at, "%s%s", at ? " " : "", n);
	}
	return 0;
}

static int ld_variant(Ld *L, int vi, json_t *j, rt_vdesc *d)
{
	recur_manifest *m = L->m;
	json_t *vars, *rules, *wss, *passes[2];
	const char *ctl;
	int ival, bval;
	size_t at = ld_push(L, "variants[%d]", vi);
	if (ld_object(L, j, "a variant") || ld_str(L, j, "name", 1, &d->name))
		return -1;
	ld_pop(L, at);
	ld_push(L, "variants[%d] (%s)", vi, d->name);
	/* a name twice only for two targets (recur gen --sm with a list) */
	if (ld_str(L, j, "target", 0, &d->target))
		return -1;
	if (!d->target)
		d->target = m->target;
	int tmaj, tmin, tarch;
	if (d->target && rt_parse_sm(d->target, &tmaj, &tmin, &tarch) != 0)
		return ld_fail(L, "target \"%s\" is no target (sm_ and two or three digits, then an optional a)", d->target);
	for (int k = 0; k < vi; k++)
		if (!strcmp(m->variant[k].name, d->name) &&
		    (!d->target || !m->variant[k].target || !strcmp(m->variant[k].target, d->target)))
			return ld_fail(L, "variant name used twice%s%s", d->target ? " for target " : "",
			               d->target ? d->target : "");
	if (ld_str(L, j, "mixer", 1, &d->mixer_name) || ld_str(L, j, "ptx", 1, &d->ptx) ||
	    ld_int(L, j, "chunk", 0, &ival) || ld_int(L, j, "prefix", 0, &ival) ||
	    ld_bool(L, j, "fused", &bval) || ld_bool(L, j, "shared_sfu", &bval) ||
	    ld_bool(L, j, "fused_output", &bval) || ld_bool(L, j, "fused_write", &bval) ||
	    ld_bool(L, j, "materialized", &bval) || ld_str_or_null(L, j, "controller", &ctl) ||
	    ld_array(L, j, "vars", 1, &vars) || ld_array(L, j, "rules", 1, &rules) ||
	    ld_array(L, j, "workspaces", 1, &wss) || ld_array(L, j, "forward", 1, &passes[RT_FWD]) ||
	    ld_array(L, j, "backward", 1, &passes[RT_BWD]))
		return -1;

	d->mixer = -1;
	for (int k = 0; k < m->nmixer; k++)
		if (!strcmp(m->mixer[k].name, d->mixer_name))
			d->mixer = k;
	if (d->mixer < 0)
		return ld_fail(L, "mixer \"%s\" is not among the manifest's mixers", d->mixer_name);
	const rt_mixer *mx = &m->mixer[d->mixer];

	const char *cubin;
	int cmaj, cmin, carch;
	if (ld_module_file(L, "ptx", d->ptx, &d->ptx_path) || ld_str(L, j, "cubin", 0, &cubin) ||
	    (cubin && (ld_str(L, j, "cubin_target", 1, &d->cubin_target) ||
	               ld_module_file(L, "cubin", cubin, &d->cubin_path))))
		return -1;
	if (cubin && rt_parse_sm(d->cubin_target, &cmaj, &cmin, &carch) != 0)
		return ld_fail(L, "cubin_target \"%s\" is no target (sm_ and two or three digits, then an optional a)",
		               d->cubin_target);

	if (ld_state(L, j, d) || ld_scan(L, j, d))
		return -1;
	ShapeVars sv;
	if (ld_vars(L, vars, d, &sv) || ld_rules(L, rules, d, &sv) || ld_workspaces(L, wss, d, &sv) ||
	    ld_check_params(L, mx, &sv))
		return -1;
	for (int p = 0; p < 2; p++) {
		d->nlaunch[p] = (int)json_array_size(passes[p]);
		d->launch[p] = ar_alloc(m, (d->nlaunch[p] + 1) * sizeof *d->launch[p]);
		for (int i = 0; i < d->nlaunch[p]; i++) {
			size_t at2 = ld_push(L, "%s[%d]", rt_pass_name[p], i);
			if (ld_launch(L, json_array_get(passes[p], i), mx, d, p, &sv, &d->launch[p][i]))
				return -1;
			if (d->launch[p][i].clears && (p != RT_FWD || i != 0))
				return ld_fail(L, "\"clears\": only the forward's first launch may clear the zeroed workspaces "
				               "(the memset it replaces comes before the forward)");
			ld_pop(L, at2);
		}
	}
	if (d->nlaunch[RT_FWD] == 0)
		return ld_fail(L, "no forward launches");
	ld_pop(L, at);
	return 0;
}

static int ld_top(Ld *L, json_t *root)
{
	recur_manifest *m = L->m;
	json_t *mixers, *variants;
	int format;
	if (ld_object(L, root, "the document") || ld_int(L, root, "format", 1, &format))
		return -1;
	if (format != RECUR_MANIFEST_FORMAT)
		return ld_fail(L, "format %d is not supported (this runtime reads format %d); regenerate with "
		               "this version of recur gen", format, RECUR_MANIFEST_FORMAT);
	if (ld_str(L, root, "generator", 0, &m->generator) || ld_str(L, root, "llvm", 0, &m->llvm) ||
	    ld_str(L, root, "target", 0, &m->target) || ld_str(L, root, "ptx_isa", 0, &m->ptx_isa))
		return -1;
	if (!(mixers = ld_key(L, root, "mixers", 1)) || ld_object(L, mixers, "key \"mixers\"") ||
	    ld_array(L, root, "variants", 1, &variants))
		return -1;
	m->nmixer = (int)json_object_size(mixers);
	m->mixer = ar_alloc(m, (m->nmixer + 1) * sizeof *m->mixer);
	const char *key;
	json_t *val;
	int i = 0;
	json_object_foreach(mixers, key, val) {
		if (ld_mixer(L, key, val, &m->mixer[i++]))
			return -1;
	}
	m->nvariant = (int)json_array_size(variants);
	m->variant = ar_alloc(m, (m->nvariant + 1) * sizeof *m->variant);
	for (i = 0; i < m->nvariant; i++)
		if (ld_variant(L, i, json_array_get(variants, i), &m->variant[i]))
			return -1;
	return 0;
}

/* 64 MiB: every variant of the full grid takes under 0.5 MiB */
#define RT_MANIFEST_MAXBYTES ((long long)64 << 20)

int recur_manifest_load(const char *dir, recur_manifest **out, char *err, size_t errlen)
{
	*out = NULL;
	recur_manifest *m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "out of host memory loading the manifest in %s", dir);
		return -1;
	}
	/* a directory holding manifest.json, or the manifest file itself */
	struct stat st;
	size_t n = strlen(dir) + sizeof "/manifest.json";
	char *path = ar_alloc(m, n);
	if (stat(dir, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(path, n, "%s", dir);
		char *d = (char *)ar_str(m, dir), *slash = strrchr(d, '/');
		if (slash)
			*slash = 0;
		m->dir = slash ? (*d ? d : "/") : ".";
	} else {
		snprintf(path, n, "%s/manifest.json", dir);
		m->dir = ar_str(m, dir);
	}
	m->path = path;

	Ld L = {m, err, errlen, ""};
	json_error_t je;
	json_t *root = NULL;
	int rc;
	/* the whole document is held in memory: refuse what no generator writes */
	if (stat(path, &st) == 0 && st.st_size > RT_MANIFEST_MAXBYTES) {
		rc = ld_fail(&L, "%lld bytes, more than a manifest may have (%lld)", (long long)st.st_size,
		             (long long)RT_MANIFEST_MAXBYTES);
	} else if (!(root = json_load_file(path, JSON_REJECT_DUPLICATES, &je))) {
		if (access(path, R_OK) != 0)
			rc = ld_fail(&L, "cannot read the manifest: %s (run `recur gen` to write one)", strerror(errno));
		else if (je.line < 1)   /* not parsed at all: a folder, an unreadable file */
			rc = ld_fail(&L, "cannot read the manifest: %s", je.text);
		else
			rc = ld_fail(&L, "bad JSON at line %d, column %d: %s", je.line, je.column, je.text);
	} else {
		rc = ld_top(&L, root);
		json_decref(root);
	}
	if (rc) {
		recur_manifest_free(m);
		return -1;
	}
	*out = m;
	return 0;
}

void recur_manifest_free(recur_manifest *m)
{
	if (!m)
		return;
	for (rt_chunk *c = m->arena, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(m);
}

/* ---- queries ---- */

int recur_manifest_nvariants(const recur_manifest *m)
{
	return m->nvariant;
}

static const rt_vdesc *vdesc(const recur_manifest *m, int i)
{
	return m && i >= 0 && i < m->nvariant ? &m->variant[i] : NULL;
}

static const rt_param *param_of(const recur_manifest *m, int variant, int p)
{
	const rt_vdesc *d = vdesc(m, variant);
	if (!d || p < 0 || p >= m->mixer[d->mixer].nparam)
		return NULL;
	return &m->mixer[d->mixer].param[p];
}

const char *recur_manifest_variant_name(const recur_manifest *m, int i)
{
	const rt_vdesc *d = vdesc(m, i);
	return d ? d->name : NULL;
}

const char *recur_manifest_variant_mixer(const recur_manifest *m, int i)
{
	const rt_vdesc *d = vdesc(m, i);
	return d ? d->mixer_name : NULL;
}

const char *recur_manifest_variant_target(const recur_manifest *m, int i)
{
	const rt_vdesc *d = vdesc(m, i);
	return d && d->target ? d->target : "";
}

const char *recur_manifest_variant_state(const recur_manifest *m, int i)
{
	const rt_vdesc *d = vdesc(m, i);
	return d ? d->state_text : "";
}

const char *recur_manifest_variant_scan(const recur_manifest *m, int i)
{
	const rt_vdesc *d = vdesc(m, i);
	return d ? d->scan : NULL;
}

CUdeviceptr rt_state_ptr(const recur_seqstate *st, int i)
{
	if (!st)
		return 0;
	const CUdeviceptr f[RT_NSTATE] = {
		[RT_STATE_H0] = st->h0, [RT_STATE_RESET] = st->reset, [RT_STATE_CU_SEQLENS] = st->cu_seqlens,
		[RT_STATE_HT] = st->hT, [RT_STATE_DHT] = st->dhT, [RT_STATE_DH0] = st->dh0,
		[RT_STATE_MAP_LOGA] = st->map_loga, [RT_STATE_MAP_H] = st->map_h, [RT_STATE_INDEX] = st->index,
	};
	return i >= 0 && i < RT_NSTATE ? f[i] : 0;
}

/* How well a module of target t suits a device of compute capability
 * major.minor: 2 its own target, 1 an older one of the same major or an
 * older major whose PTX the driver compiles for the device (never an
 * sm_XYa one, which runs on its own target only), 0 not at all. The newer
 * of two that suit as well wins (rank). */
static int suits(const char *t, int major, int minor, int *rank)
{
	int tm, tn, ta;
	if (!t || rt_parse_sm(t, &tm, &tn, &ta) != 0)
		return 1;   /* a manifest that names no target: its modules are all there is */
	*rank = tm * 10 + tn;
	if (tm == major && tn == minor)
		return ta ? 3 : 2;   /* sm_90a before sm_90 on its own device: its kernels use what only it has */
	if (ta || tm > major || (tm == major && tn > minor))
		return 0;
	return 1;
}

int rt_manifest_pick(const recur_manifest *m, const char *name, int major, int minor)
{
	int best = -1, bs = 0, br = -1;
	for (int i = 0; i < m->nvariant; i++) {
		if (strcmp(m->variant[i].name, name) != 0)
			continue;
		int r = 0, sc = suits(m->variant[i].target, major, minor, &r);
		if (sc > bs || (sc == bs && sc > 0 && r > br)) {
			best = i;
			bs = sc;
			br = r;
		}
	}
	return bs > 0 ? best : -1;
}

/* The newest target recur gen makes that a device of compute capability
 * major.minor runs: its own where recur gen has it, else the newest older
 * one (ir/target.c's table, sm_90a left out: it runs on sm_90 alone) */
const char *rt_gen_target(int major, int minor)
{
	static const struct { int cc; const char *sm; } t[] = {
		{ 90, "sm_90" }, { 89, "sm_89" }, { 86, "sm_86" }, { 80, "sm_80" },
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++)
		if (major * 10 + minor >= t[i].cc)
			return t[i].sm;
	return "sm_80";
}

int rt_manifest_no_module(const recur_manifest *m, const char *name, int major, int minor, char *err, size_t errlen)
{
	char list[256] = "";
	size_t used = 0;
	for (int k = 0; k < m->nvariant && used < sizeof list; k++)
		if (!strcmp(m->variant[k].name, name))
			used += snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
			                 m->variant[k].target ? m->variant[k].target : "?");
	if (major < 8)
		snprintf(err, errlen, "variant %s has modules for %s only; the device is sm_%d%d, and the kernels need "
		         "sm_80 or newer (bf16 tensor cores)", name, list, major, minor);
	else if (major * 10 + minor > 90)
		snprintf(err, errlen, "variant %s has modules for %s only; the device is sm_%d%d: regenerate with recur "
		         "gen --sm sm_90 (the driver compiles sm_90 PTX for newer GPUs; sm_90a's runs on sm_90 alone)",
		         name, list, major, minor);
	else
		snprintf(err, errlen, "variant %s has modules for %s only; the device is sm_%d%d: regenerate with recur "
		         "gen --sm %s (each target's layouts fit its own shared memory: sm_80's ask for more than the 99 KB a "
		         "block of sm_86 and sm_89)", name, list, major, minor,
		         rt_gen_target(major, minor));
	return -1;
}

int recur_manifest_select(recur_manifest *m, int major, int minor, char *err, size_t errlen)
{
	/* every name first, so that a refusal leaves m as it was */
	for (int i = 0; i < m->nvariant; i++)
		if (rt_manifest_pick(m, m->variant[i].name, major, minor) < 0)
			return rt_manifest_no_module(m, m->variant[i].name, major, minor, err, errlen);
	int n = 0;
	for (int i = 0; i < m->nvariant; i++) {
		int pick = rt_manifest_pick(m, m->variant[i].name, major, minor);
		if (pick < 0)
			return rt_manifest_no_module(m, m->variant[i].name, major, minor, err, errlen);
		if (pick == i)
			m->variant[n++] = m->variant[i];
	}
	m->nvariant = n;
	return 0;
}

int recur_manifest_find(const recur_manifest *m, const char *variant)
{
	if (!m || !variant)
		return -1;
	for (int i = 0; i < m->nvariant; i++)
		if (!strcmp(m->variant[i].name, variant))
			return i;
	return -1;
}

const char *recur_manifest_info(const recur_manifest *m, const char *key)
{
	if (!m || !key) return NULL;
	if (!strcmp(key, "generator")) return m->generator;
	if (!strcmp(key, "llvm")) return m->llvm;
	if (!strcmp(key, "target")) return m->target;
	if (!strcmp(key, "ptx_isa")) return m->ptx_isa;
	if (!strcmp(key, "path")) return m->path;
	if (!strcmp(key, "dir")) return m->dir;
	return NULL;
}

int recur_param_count(const recur_manifest *m, int variant)
{
	const rt_vdesc *d = vdesc(m, variant);
	return d ? m->mixer[d->mixer].nparam : -1;
}

const char *recur_param_name(const recur_manifest *m, int variant, int p)
{
	const rt_param *pr = param_of(m, variant, p);
	return pr ? pr->name : NULL;
}

/* ---- shapes ---- */

/* Puts "variant NAME: " before the message in err; returns -1. */
static int in_variant(const rt_vdesc *d, char *err, size_t errlen)
{
	char t[2048];
	snprintf(t, sizeof t, "variant %s: %s", d->name, err);
	snprintf(err, errlen, "%s", t);
	return -1;
}


/* an expression of launch i of a pass (bytes or flops) at shape s */
static int launch_value(const recur_manifest *m, int variant, int backward, int i, recur_shape s, int flops,
                        double *out, char *err, size_t errlen)
{
	const rt_vdesc *d = vdesc(m, variant);
	ShapeVars sv;
	int pass = backward ? RT_BWD : RT_FWD;
	if (!d) {
		snprintf(err, errlen, "no variant %d in %s", variant, m ? m->path : "(no manifest)");
		return -1;
	}
	if (i < 0 || i >= d->nlaunch[pass]) {
		snprintf(err, errlen, "variant %s has no %s launch %d", d->name, rt_pass_name[pass], i);
		return -1;
	}
	if (rt_shape_vars(m, variant, s, 0, &sv, err, errlen))
		return in_variant(d, err, errlen);
	int64_t b;
	char e[512];
	const rt_launch *l = &d->launch[pass][i];
	if (shapex_eval(flops ? l->flops : l->bytes, &sv, &b, e, sizeof e)) {
		snprintf(err, errlen, "variant %s, %s launch %d (%s): %s: %s", d->name, rt_pass_name[pass], i, l->kernel,
		         flops ? "flops" : "bytes", e);
		return -1;
	}
	*out = (double)b;
	return 0;
}

int recur_launch_bytes(const recur_manifest *m, int variant, int backward, int i, recur_shape s,
                       double *bytes, char *err, size_t errlen)
{
	return launch_value(m, variant, backward, i, s, 0, bytes, err, errlen);
}

int recur_launch_flops(const recur_manifest *m, int variant, int backward, int i, recur_shape s,
                       double *flops, char *err, size_t errlen)
{
	return launch_value(m, variant, backward, i, s, 1, flops, err, errlen);
}

int rt_launch_geom(const rt_launch *l, const ShapeVars *sv, rt_plan_geom *g, char *e, size_t n)
{
	char x_e[512];
	static const int64_t gmax[3] = {2147483647, 65535, 65535};
	for (int k = 0; k < 3; k++) {
		int64_t x;
		if (shapex_eval(l->grid[k], sv, &x, x_e, sizeof x_e)) {
			snprintf(e, n, "grid[%d]: %s", k, x_e);
			return -1;
		}
		if (x < 1 || x > gmax[k]) {
			snprintf(e, n, "grid[%d] = \"%s\" = %lld, outside 1..%lld", k, l->grid[k], (long long)x,
			         (long long)gmax[k]);
			return -1;
		}
		g->grid[k] = (unsigned)x;
	}
	if (shapex_eval(l->smem, sv, &g->smem, x_e, sizeof x_e)) {
		snprintf(e, n, "smem: %s", x_e);
		return -1;
	}
	if (g->smem < 0) {
		snprintf(e, n, "dynamic shared memory \"%s\" = %lld bytes, below 0", l->smem, (long long)g->smem);
		return -1;
	}
	/* 8: the largest cluster every sm_90 part schedules without opting in */
	int64_t cl;
	if (shapex_eval(l->cluster, sv, &cl, x_e, sizeof x_e)) {
		snprintf(e, n, "cluster: %s", x_e);
		return -1;
	}
	if (cl < 1 || cl > 8 || g->grid[0] % (unsigned)cl) {
		snprintf(e, n, "cluster \"%s\" = %lld blocks: must be 1..8 and divide grid x = %u", l->cluster,
		         (long long)cl, g->grid[0]);
		return -1;
	}
	g->cluster = (unsigned)cl;
	return 0;
}

int recur_launch_plan(const recur_manifest *m, int variant, int backward, int i, recur_shape s,
                      recur_plan_info *info, char *err, size_t errlen)
{
	const rt_vdesc *d = vdesc(m, variant);
	int pass = backward ? RT_BWD : RT_FWD;
	if (!d || i < 0 || i >= d->nlaunch[pass]) {
		snprintf(err, errlen, "variant %d of %s has no %s launch %d", variant, m ? m->path : "(no manifest)",
		         rt_pass_name[pass], i);
		return -1;
	}
	ShapeVars sv;
	if (rt_shape_vars(m, variant, s, 1, &sv, err, errlen))
		return in_variant(d, err, errlen);
	const rt_launch *l = &d->launch[pass][i];
	rt_plan_geom g;
	char e[768];
	if (rt_launch_geom(l, &sv, &g, e, sizeof e)) {
		snprintf(err, errlen, "variant %s: %s[%d] kernel %s at shape B=%d L=%d D=%d: %s", d->name,
		         rt_pass_name[pass], i, l->kernel, s.B, s.L, s.D, e);
		return -1;
	}
	*info = (recur_plan_info){ .kernel = l->kernel, .block = l->block[0] * l->block[1] * l->block[2],
	                           .dyn_smem = g.smem, .cluster = (int)g.cluster };
	memcpy(info->grid, g.grid, sizeof info->grid);
	return 0;
}

int recur_launch_count(const recur_manifest *m, int variant, int backward)
{
	const rt_vdesc *d = vdesc(m, variant);
	return d ? d->nlaunch[backward ? RT_BWD : RT_FWD] : 0;
}

/* B, L, D >= 1 and B*L*D within RECUR_MAX_ELEMS: 0, or -1 with why after head. */
static int shape_limits(recur_shape s, const char *head, char *why, size_t n)
{
	const char *bad = s.B < 1 ? "B" : s.L < 1 ? "L" : s.D < 1 ? "D" : NULL;
	if (bad) {
		snprintf(why, n, "%s: %s must be >= 1", head, bad);
		return -1;
	}
	/* ints below 2^31: the product of two fits int64, of three may not */
	int64_t bl = (int64_t)s.B * s.L, e;
	if (__builtin_mul_overflow(bl, (int64_t)s.D, &e) || e > RECUR_MAX_ELEMS) {
		snprintf(why, n, "%s: B*L*D is more than %lld elements (RECUR_MAX_ELEMS)", head,
		         (long long)RECUR_MAX_ELEMS);
		return -1;
	}
	return 0;
}

void rt_shape_name(recur_shape s, char *out, size_t n) { snprintf(out, n, "shape B=%d L=%d D=%d", s.B, s.L, s.D); }

int recur_tensor_bytes(recur_shape s, size_t elem_bytes, size_t *bytes, char *err, size_t errlen)
{
	char head[96];
	rt_shape_name(s, head, sizeof head);
	*bytes = 0;
	if (shape_limits(s, head, err, errlen))
		return -1;
	size_t e = (size_t)s.B * (size_t)s.L * (size_t)s.D;   /* <= 2^40 after shape_limits */
	if (__builtin_mul_overflow(e, elem_bytes, bytes)) {
		snprintf(err, errlen, "%s: %zu elements of %zu bytes overflow a size", head, e, elem_bytes);
		return -1;
	}
	return 0;
}

int rt_shape_vars(const recur_manifest *m, int variant, recur_shape s, int rules,
                  ShapeVars *v, char *why, size_t n)
{
	return rt_shape_vars_on(m, variant, s, rules, RT_SMS_DEFAULT, v, why, n);
}

int rt_shape_vars_on(const recur_manifest *m, int variant, recur_shape s, int rules, int sms,
                     ShapeVars *v, char *why, size_t n)
{
	char head[96], e[512];
	rt_shape_name(s, head, sizeof head);
	const rt_vdesc *d = vdesc(m, variant);
	if (!d) {
		snprintf(why, n, "%s: no variant %d in %s", head, variant, m ? m->path : "(no manifest)");
		return -1;
	}
	if (shape_limits(s, head, why, n))
		return -1;
	memset(v, 0, sizeof *v);
	shapex_set(v, "B", s.B);
	shapex_set(v, "L", s.L);
	shapex_set(v, "D", s.D);
	shapex_set(v, "ndocs", 0);   /* a call sets it from its sequence state (recur_forward) */
	shapex_set(v, "SMS", sms);
	for (int i = 0; i < d->nvar; i++) {
		int64_t x;
		if (shapex_eval(d->var[i].expr, v, &x, e, sizeof e)) {
			snprintf(why, n, "%s: variable %s of variant %s: %s", head, d->var[i].name, d->name, e);
			return -1;
		}
		shapex_set(v, d->var[i].name, x);
	}
	for (int i = 0; rules && i < d->nrule; i++) {
		int64_t ok;
		if (shapex_eval(d->rule[i].expr, v, &ok, e, sizeof e)) {
			snprintf(why, n, "%s: rule %d of variant %s: %s", head, i, d->name, e);
			return -1;
		}
		if (!ok) {
			snprintf(why, n, "%s: %s", head, d->rule[i].message);
			return -1;
		}
	}
	return 0;
}

int recur_check_shape(const recur_manifest *m, int variant, recur_shape s, char *why, size_t n)
{
	ShapeVars v;
	return rt_shape_vars(m, variant, s, 1, &v, why, n);
}

/* dims at a shape; -1 with err naming the variant, the parameter and the shape */
static int param_dims(const recur_manifest *m, int variant, int p, recur_shape s, long *dims,
                      char *err, size_t errlen)
{
	const rt_param *pr = param_of(m, variant, p);
	if (!pr) {
		snprintf(err, errlen, "%s: variant %d has no parameter %d", m ? m->path : "(no manifest)", variant, p);
		return -1;
	}
	const char *vn = m->variant[variant].name;
	ShapeVars v;
	if (rt_shape_vars(m, variant, s, 1, &v, err, errlen))
		return in_variant(&m->variant[variant], err, errlen);
	for (int k = 0; k < pr->ndim; k++) {
		int64_t x;
		char e[512];
		if (shapex_eval(pr->dims[k], &v, &x, e, sizeof e)) {
			snprintf(err, errlen, "variant %s: parameter %s dims[%d] at shape B=%d L=%d D=%d: %s", vn, pr->name,
			         k, s.B, s.L, s.D, e);
			return -1;
		}
		if (x < 0 || x > RECUR_MAX_ELEMS) {
			snprintf(err, errlen, "variant %s: parameter %s dims[%d] = \"%s\" is %lld at shape B=%d L=%d D=%d, "
			         "outside 0..%lld", vn, pr->name, k, pr->dims[k], (long long)x, s.B, s.L, s.D,
			         (long long)RECUR_MAX_ELEMS);
			return -1;
		}
		dims[k] = (long)x;
	}
	return pr->ndim;
}

/* Checked like a shape's B*L*D: at most RECUR_MAX_ELEMS, so callers may
 * form byte counts of up to 16 bytes per element. */
long recur_param_elems(const recur_manifest *m, int variant, int p, recur_shape s, char *err, size_t errlen)
{
	long dims[RECUR_MAXDIM], n = 1;
	int nd = param_dims(m, variant, p, s, dims, err, errlen);
	if (nd < 0)
		return -1;
	for (int k = 0; k < nd; k++)
		if (__builtin_mul_overflow(n, dims[k], &n) || n > RECUR_MAX_ELEMS) {
			snprintf(err, errlen, "variant %s: parameter %s has more than %lld elements at shape B=%d L=%d D=%d",
			         m->variant[variant].name, recur_param_name(m, variant, p), (long long)RECUR_MAX_ELEMS, s.B,
			         s.L, s.D);
			return -1;
		}
	return n;
}

int recur_param_dims(const recur_manifest *m, int variant, int p, recur_shape s, long *dims)
{
	char err[512];
	return param_dims(m, variant, p, s, dims, err, sizeof err);
}

static int init_value(const char *expr, double num, const ShapeVars *v, double *out)
{
	if (!expr) {
		*out = num;
		return 0;
	}
	char inner[256], e[512];
	size_t n = strlen(expr);
	int rsq = !strncmp(expr, "rsqrt(", 6) && n > 7 && expr[n - 1] == ')' && n - 7 < sizeof inner;
	if (rsq) {
		memcpy(inner, expr + 6, n - 7);
		inner[n - 7] = 0;
		expr = inner;
	}
	int64_t x;
	if (shapex_eval(expr, v, &x, e, sizeof e) || (rsq && x <= 0))
		return -1;
	*out = rsq ? 1.0 / sqrt((double)x) : (double)x;
	return 0;
}

const char *recur_param_init(const recur_manifest *m, int variant, int p, recur_shape s, double *a, double *b)
{
	const rt_param *pr = param_of(m, variant, p);
	if (!pr)
		return NULL;
	ShapeVars v;
	char why[512];
	memset(&v, 0, sizeof v);
	if ((pr->a_expr || pr->b_expr) && rt_shape_vars(m, variant, s, 1, &v, why, sizeof why))
		return NULL;
	if (init_value(pr->a_expr, pr->a, &v, a) || init_value(pr->b_expr, pr->b, &v, b))
		return NULL;
	return pr->init;
}
