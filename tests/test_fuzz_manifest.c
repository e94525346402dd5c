/* Fuzzed manifests: hundreds of hostile mutations of a generated manifest
 * (tests/fuzz/manifests/base.json: two variants of lua/variants, rglru
 * and samu), each loaded by the real loader and, when it loads, run
 * through everything that reads it: shape checks, launch plans, bytes,
 * parameters, and forward + backward on a host-memory stand-in for the
 * driver (hostcu.h), whose launches are held against the manifest (every
 * buffer a kernel gets inside an allocation).
 *
 * The cases: named hostile patches (deep parentheses, long expressions,
 * sizes near 2^62, int64 edges, wrong types, names used twice, ...), every
 * other tests/fuzz/manifests/NAME.json as it stands (the corpus grows with
 * each bug found), then deterministic random mutations of the JSON tree
 * and of its bytes (fixed seed). Wanted of each: no crash, no sanitizer
 * report, and every refusal a message that names the manifest and says
 * where (never empty, never "(null)"). A mutation that loads must still
 * give messages naming the variant when a call refuses it.
 */
#include "hostcu.h"
#include "check.h"
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N_TREE 300  /* random mutations of the JSON tree */
#define N_BYTES 120 /* random mutations of the text */
#define MAXFILES 64

static char dir[256], mpath[320];
static char *made[MAXFILES]; /* stub PTX files written for the current case */
static int nmade;
static int cases, loaded, refused, ran, faults;
static int verbose; /* RECUR_FUZZ_VERBOSE=1: every refusal's message */
static char first_fault[2048];

/* ---- deterministic randomness ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static size_t pick(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

/* ---- the outcome of a case ---- */

static void fault(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fault(const char *name, const char *fmt, ...)
{
	faults++;
	if (first_fault[0])
		return;
	char what[1800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(first_fault, sizeof first_fault, "%s: %s", name, what);
}

/* A refusal's message: there, and no "(null)". */
static void message_ok(const char *name, const char *call, const char *err)
{
	if (!err[0])
		fault(name, "%s failed without a message", call);
	else if (strstr(err, "(null)"))
		fault(name, "%s: \"(null)\" in the message: %s", call, err);
}

/* ---- files ---- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s) {
		s[n] = 0;
		*len = (size_t)n;
	}
	fclose(f);
	return s;
}

static void put(const char *path, const char *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(data, 1, n, f);
		fclose(f);
	}
}

static void clear_stubs(void)
{
	for (int i = 0; i < nmade; i++) {
		unlink(made[i]);
		free(made[i]);
	}
	nmade = 0;
}

/* A PTX of one .entry per kernel the variant launches, each with a .param
 * for each arg of its first launch, of the arg's size (i32: 4 bytes, a
 * tensor map 128, else 8): what the stand-in reads. */
static void stub_ptx(json_t *variant)
{
	const char *ptx = json_string_value(json_object_get(variant, "ptx"));
	if (!ptx || !*ptx || strchr(ptx, '/') || strlen(ptx) > 200 || nmade == MAXFILES ||
	    !strcmp(ptx, "manifest.json"))
		return;
	size_t cap = 1 << 16, used = 0;
	char *text = malloc(cap);
	if (!text)
		return;
	used += (size_t)snprintf(text, cap, ".version 8.0\n.target sm_90\n.address_size 64\n");
	static const char *const passes[2] = {"forward", "backward"};
	for (int p = 0; p < 2; p++) {
		size_t i;
		json_t *l;
		json_array_foreach(json_object_get(variant, passes[p]), i, l)
		{
			const char *k = json_string_value(json_object_get(l, "kernel"));
			json_t *args = json_object_get(l, "args");
			size_t na = json_array_size(args);
			if (!k || strlen(k) > 100 || strstr(text, k) || used + 64 + na * 40 > cap)
				continue;
			used += (size_t)snprintf(text + used, cap - used, ".visible .entry %s(", k);
			for (size_t a = 0; a < na && a < 64; a++) {
				const char *as = json_string_value(json_array_get(args, a));
				const char *ty = as && !strncmp(as, "i32:", 4) ? ".u32"
				                 : as && (!strncmp(as, "tmap:", 5) || !strncmp(as, "tmaprows:", 9)) ? ".align 64 .b8"
				                 : ".u64";
				used += (size_t)snprintf(text + used, cap - used, "%s.param %s p%zu%s", a ? ", " : "", ty, a,
				                         ty[1] == 'a' ? "[128]" : "");
			}
			used += (size_t)snprintf(text + used, cap - used, ")\n{\n\tret;\n}\n");
		}
	}
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, ptx);
	struct stat st;
	if (stat(path, &st) != 0) {
		put(path, text, used);
		made[nmade++] = strdup(path);
	}
	free(text);
}

/* ---- what a loaded manifest goes through ---- */

static const recur_shape SHAPES[] = {
        {1, 1, 64}, {2, 37, 64},           {3, 1000, 128}, {1, 8192, 1024},       {7, 13, 4},
        {1, 1, 1},  {INT_MAX, INT_MAX, 1}, {0, 5, 64},     {1, 2147483647, 1024},
};
#define NSHAPES ((int)(sizeof SHAPES / sizeof *SHAPES))

static void queries(const char *name, recur_manifest *m, int vi)
{
	char err[4096];
	for (int k = 0; k < NSHAPES; k++) {
		recur_shape s = SHAPES[k];
		err[0] = 0;
		if (recur_check_shape(m, vi, s, err, sizeof err)) {
			message_ok(name, "recur_check_shape", err);
			continue;
		}
		for (int p = 0; p < 2; p++)
			for (int i = 0; i < recur_launch_count(m, vi, p); i++) {
				recur_plan_info pi;
				double b;
				err[0] = 0;
				if (recur_launch_plan(m, vi, p, i, s, &pi, err, sizeof err))
					message_ok(name, "recur_launch_plan", err);
				err[0] = 0;
				if (recur_launch_bytes(m, vi, p, i, s, &b, err, sizeof err))
					message_ok(name, "recur_launch_bytes", err);
			}
		for (int p = 0; p < recur_param_count(m, vi); p++) {
			long dims[RECUR_MAXDIM];
			double a, b;
			err[0] = 0;
			if (!recur_param_name(m, vi, p))
				fault(name, "parameter %d has no name", p);
			if (recur_param_elems(m, vi, p, s, err, sizeof err) < 0)
				message_ok(name, "recur_param_elems", err);
			recur_param_dims(m, vi, p, s, dims);
			recur_param_init(m, vi, p, s, &a, &b);
		}
	}
}

typedef struct {
	CUdeviceptr x, y, dy, dx, p[32], g[32];
	int np;
} Bufs;

static void bufs_free(recur_rt *rt, Bufs *b)
{
	recur_free(rt, b->x);
	recur_free(rt, b->y);
	recur_free(rt, b->dy);
	recur_free(rt, b->dx);
	for (int i = 0; i < b->np; i++) {
		recur_free(rt, b->p[i]);
		recur_free(rt, b->g[i]);
	}
	memset(b, 0, sizeof *b);
}

/* The caller's buffers at s: 0, or 1 when they are more than a test should hold. */
static int bufs_alloc(recur_rt *rt, recur_manifest *m, int vi, recur_shape s, Bufs *b, char *err, size_t n)
{
	size_t bytes;
	memset(b, 0, sizeof *b);
	if (recur_tensor_bytes(s, 2, &bytes, err, n) || bytes > HC_BACKED)
		return 1;
	int np = recur_param_count(m, vi);
	if (np < 0 || np > 32)
		return 1;
	if (recur_alloc(rt, bytes, &b->x, err, n) || recur_alloc(rt, bytes, &b->y, err, n) ||
	    recur_alloc(rt, bytes, &b->dy, err, n) || recur_alloc(rt, bytes, &b->dx, err, n))
		return -1;
	for (; b->np < np; b->np++) {
		long e = recur_param_elems(m, vi, b->np, s, err, n);
		if (e < 0 || (size_t)e * 4 > HC_BACKED)
			return 1;
		if (recur_alloc(rt, (size_t)e * 4 + 4, &b->p[b->np], err, n) ||
		    recur_alloc(rt, (size_t)e * 4 + 4, &b->g[b->np], err, n))
			return -1;
	}
	return 0;
}

/* Forward then backward of variant vi at s on the stand-in. */
static void run_one(const char *name, recur_rt *rt, recur_manifest *m, int vi, recur_shape s)
{
	char err[4096] = "";
	const char *vn = recur_manifest_variant_name(m, vi);
	Bufs b;
	int rc = bufs_alloc(rt, m, vi, s, &b, err, sizeof err);
	if (rc) {
		bufs_free(rt, &b);
		return;
	}
	recur_variant *v = NULL;
	recur_io io = {.x = b.x, .y = b.y, .dy = b.dy, .dx = b.dx, .params = b.p, .grads = b.g};
	if (recur_variant_load(rt, m, vn, &v, err, sizeof err)) {
		message_ok(name, "recur_variant_load", err);
		if (!strstr(err, vn))
			fault(name, "recur_variant_load's message does not name variant %s: %s", vn, err);
		bufs_free(rt, &b);
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		err[0] = 0;
		hc.nlaunch = 0;
		rc = pass ? recur_backward(v, s, &io, 0, err, sizeof err)
		          : recur_forward(v, s, &io, 0, err, sizeof err);
		if (rc) {
			message_ok(name, pass ? "recur_backward" : "recur_forward", err);
			if (!strstr(err, vn))
				fault(name, "a %s's message does not name variant %s: %s", rt_pass_name[pass], vn, err);
			break;
		}
		ran++;
		if (hc_check_pass(m, vi, pass, s, err, sizeof err))
			fault(name, "variant %s at %dx%dx%d: %s", vn, s.B, s.L, s.D, err);
	}
	recur_variant_free(v);
	bufs_free(rt, &b);
}

/* One manifest text: loaded, and when it loads, used. */
static void file_case(const char *name, const char *text, size_t len, recur_rt *rt);

static void one_case(const char *name, const char *text, size_t len, recur_rt *rt)
{
	put(mpath, text, len);
	file_case(name, text, len, rt);
}

/* The manifest already in mpath (text: what it holds, for the PTX stubs). */
static void file_case(const char *name, const char *text, size_t len, recur_rt *rt)
{
	cases++;
	json_t *doc = json_loadb(text, len, 0, NULL);
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(doc, "variants"), i, v) stub_ptx(v);
	json_decref(doc);
	char err[4096] = "";
	recur_manifest *m = NULL;
	if (recur_manifest_load(dir, &m, err, sizeof err)) {
		refused++;
		if (verbose)
			printf("  %s: %.300s\n", name, err);
		message_ok(name, "recur_manifest_load", err);
		if (strncmp(err, mpath, strlen(mpath)))
			fault(name, "the loader's message does not start with the manifest's path: %s", err);
		clear_stubs();
		return;
	}
	loaded++;
	int nv = recur_manifest_nvariants(m);
	for (int k = 0; k < nv && k < 4; k++) {
		queries(name, m, k);
		run_one(name, rt, m, k, (recur_shape){2, 37, 64});
		run_one(name, rt, m, k, (recur_shape){3, 1000, 128});
	}
	recur_manifest_free(m);
	clear_stubs();
}

static void tree_case(const char *name, json_t *doc, recur_rt *rt)
{
	char *text = json_dumps(doc, JSON_COMPACT);
	if (!text) {
		fault(name, "the mutation could not be written as JSON");
		return;
	}
	one_case(name, text, strlen(text), rt);
	free(text);
}

/* ---- hostile values ---- */

static char *repeat(const char *head, char c, size_t n, const char *tail)
{
	size_t h = strlen(head), t = strlen(tail);
	char *s = malloc(h + n + t + 1);
	if (!s)
		return NULL;
	memcpy(s, head, h);
	memset(s + h, c, n);
	memcpy(s + h + n, tail, t + 1);
	return s;
}

/* "((((...1...))))" n deep */
static char *parens(size_t n)
{
	char *s = malloc(2 * n + 2);
	if (!s)
		return NULL;
	memset(s, '(', n);
	s[n] = '1';
	memset(s + n + 1, ')', n);
	s[2 * n + 1] = 0;
	return s;
}

static const char *const EXPRS[] = {
        "",
        " ",
        "B*L*D*4611686018427387904",
        "4611686018427387904",
        "9223372036854775807",
        "-9223372036854775807-1",
        "cdiv(-9223372036854775807-1,-1)",
        "(-9223372036854775807-1)/-1",
        "(-9223372036854775807-1)%-1",
        "1/0",
        "D%0",
        "cdiv(D,0)",
        "D +* 3",
        "2*(",
        ")",
        "min(1)",
        "max(1,2,3)",
        "nosuch(1,2)",
        "Q",
        "L-L",
        "0",
        "-1",
        "B*L*D*B*L*D*B*L*D",
        "99999999999999999999999",
        "\xc3\xa9",
        "%s%s%n",
        "B B",
        "B,L",
        "((B)",
        "D/K*K*K*K*K*K*K*K*K*K*K*K",
        "cdiv(L,T)*-1",
        "2147483648",
        "-2147483649",
};
#define NEXPRS (sizeof EXPRS / sizeof *EXPRS)

static const char *const ARGS[] = {
        "x",
        "ws:nope",
        "param:",
        "param:nosuch",
        "grad:",
        "i32:",
        "i64:((",
        "i32:2147483648",
        "i64:B*L*D*4611686018427387904",
        "zero:base",
        "zero:words",
        "ws:",
        ":",
        "",
        "xx",
        "i32:L-L-1",
        "tmap:",
        "tmap:x",
        "tmap:x:",
        "tmap:x:64x",
        "tmap:x:0x64",
        "tmap:x:2147483648x64",
        "tmap:ws::64x64",
        "tmap:ws:nope:64x64",
        "tmap:ws:ws:ws:64x64",
        "tmap:dx:64x64:64x64",
        "tmaprows:",
        "tmaprows:ws:x:64x64",
        "tmaprowsx:x:64x64",
};
#define NARGS (sizeof ARGS / sizeof *ARGS)

/* A hostile value for a place that held old. */
static json_t *hostile(const json_t *old)
{
	switch (pick(12)) {
	case 0:
		return json_null();
	case 1:
		return json_boolean(pick(2));
	case 2: {
		static const json_int_t ints[] = {0,          -1,           1,
		                                  2147483647, 2147483648LL, -2147483649LL,
		                                  INT64_MAX,  INT64_MIN,    4611686018427387904LL,
		                                  1025,       65,           9};
		return json_integer(ints[pick(sizeof ints / sizeof *ints)]);
	}
	case 3: {
		static const double reals[] = {1e300, -1e300, 0.5, -0.0, 1e-310};
		return json_real(reals[pick(5)]);
	}
	case 4:
		return json_array();
	case 5:
		return json_object();
	case 6:
		return json_string(ARGS[pick(NARGS)]);
	case 7:
		if (json_is_integer(old))
			return json_integer(json_integer_value(old) * (json_int_t)(pick(3) + 1) - (json_int_t)pick(3) -
			                    1);
		/* fall through */
	default:
		return json_string(EXPRS[pick(NEXPRS)]);
	}
}

/* Every (container, key or index) of the tree, iteratively. */
typedef struct {
	json_t *parent;
	const char *key;
	size_t index;
} Slot;

static size_t slots(json_t *root, Slot *out, size_t max)
{
	json_t *stack[4096];
	size_t n = 0, sp = 0;
	stack[sp++] = root;
	while (sp) {
		json_t *c = stack[--sp];
		if (json_is_object(c)) {
			const char *k;
			json_t *v;
			json_object_foreach(c, k, v)
			{
				if (n < max)
					out[n++] = (Slot){c, k, 0};
				if (sp < 4096 && (json_is_object(v) || json_is_array(v)))
					stack[sp++] = v;
			}
		} else if (json_is_array(c)) {
			size_t i;
			json_t *v;
			json_array_foreach(c, i, v)
			{
				if (n < max)
					out[n++] = (Slot){c, NULL, i};
				if (sp < 4096 && (json_is_object(v) || json_is_array(v)))
					stack[sp++] = v;
			}
		}
	}
	return n;
}

static json_t *slot_get(const Slot *s)
{
	return s->key ? json_object_get(s->parent, s->key) : json_array_get(s->parent, s->index);
}

static void slot_set(const Slot *s, json_t *v)
{
	if (s->key)
		json_object_set_new(s->parent, s->key, v);
	else
		json_array_set_new(s->parent, s->index, v);
}

/* One random change of doc: a value replaced, a key or element removed or
 * duplicated, a key renamed. */
static void mutate_tree(json_t *doc, char *what, size_t n)
{
	static Slot s[8192];
	size_t ns = slots(doc, s, 8192);
	if (!ns)
		return;
	Slot *t = &s[pick(ns)];
	json_t *old = slot_get(t);
	int op = (int)pick(10);
	const char *where = t->key ? t->key : "[i]";
	if (op < 6) {
		snprintf(what, n, "%s replaced", where);
		slot_set(t, hostile(old));
	} else if (op == 6) {
		snprintf(what, n, "%s removed", where);
		if (t->key)
			json_object_del(t->parent, t->key);
		else
			json_array_remove(t->parent, t->index);
	} else if (op == 7 && !t->key) {
		snprintf(what, n, "an element duplicated");
		json_array_append_new(t->parent, json_deep_copy(old));
	} else if (op == 8 && t->key) {
		char k2[64];
		snprintf(k2, sizeof k2, "%.40s_", t->key);
		snprintf(what, n, "%s renamed", where);
		json_object_set(t->parent, k2, old);
		json_object_del(t->parent, t->key);
	} else {
		snprintf(what, n, "%s deeply replaced", where);
		char *e = pick(2) ? parens(40 + pick(40)) : repeat("", '-', 50 + pick(40), "1");
		slot_set(t, json_string(e ? e : "1"));
		free(e);
	}
}

/* One random change of the text. */
static void mutate_bytes(char *t, size_t *len)
{
	if (!*len)
		return;
	size_t at = pick(*len);
	switch (pick(4)) {
	case 0:
		t[at] = (char)(rnd() & 0xff);
		break;
	case 1:
		*len = at;
		break; /* truncated */
	case 2: {      /* a range removed */
		size_t k = pick(64);
		if (at + k > *len)
			k = *len - at;
		memmove(t + at, t + at + k, *len - at - k);
		*len -= k;
		break;
	}
	default: {
		static const char *const ins[] = {"{", "}", "[", "]", "\"", ",", ":", "\\u0000", "1e999", "-", "null"};
		const char *s = ins[pick(sizeof ins / sizeof *ins)];
		size_t k = strlen(s);
		memmove(t + at + k, t + at, *len - at);
		memcpy(t + at, s, k);
		*len += k;
	}
	}
	t[*len] = 0;
}

/* ---- the named cases ---- */

typedef struct {
	const char *name;
	const char *path; /* "variants/0/vars/1/1": where the value goes */
	json_t *(*make)(void);
} Named;

/* a JSON string of s, which is freed (a failed allocation gives "1") */
static json_t *owned(char *s)
{
	json_t *j = json_string(s ? s : "1");
	free(s);
	return j;
}

/* "B+B+...+B" of n characters (n odd) */
static char *sum_of_b(size_t n)
{
	char *s = malloc(n + 1);
	for (size_t i = 0; s && i < n; i++)
		s[i] = i % 2 ? '+' : 'B';
	if (s)
		s[n] = 0;
	return s;
}

static json_t *deep_parens(void)
{
	return owned(parens(30000));
}
static json_t *many_minus(void)
{
	return owned(repeat("", '-', 30000, "1"));
}
static json_t *long_expr(void)
{
	return owned(sum_of_b(99999));
}
static json_t *nest65(void)
{
	return owned(parens(65));
}
static json_t *nest60(void)
{
	return owned(parens(60));
}
static json_t *big_ws(void)
{
	return json_string("4611686018427387904");
}
static json_t *int_min_cdiv(void)
{
	return json_string("cdiv(-9223372036854775807-1,-1)");
}
static json_t *int_min_mod(void)
{
	return json_string("(-9223372036854775807-1)%-1");
}
static json_t *huge_int(void)
{
	return json_integer(INT64_MAX);
}
static json_t *neg_int(void)
{
	return json_integer(-1);
}
static json_t *empty_str(void)
{
	return json_string("");
}
static json_t *nul(void)
{
	return json_null();
}
static json_t *bad_arg(void)
{
	return json_string("ws:nope");
}
static json_t *i32_big(void)
{
	return json_string("i32:B*L*D*1000000");
}
static json_t *many_dims(void)
{
	json_t *a = json_array();
	for (int i = 0; i < 9; i++)
		json_array_append_new(a, json_string("1"));
	return a;
}
static json_t *many_vars(void)
{
	json_t *a = json_array();
	for (int i = 0; i < 40; i++) {
		char n[16];
		snprintf(n, sizeof n, "V%d", i);
		json_t *p = json_array();
		json_array_append_new(p, json_string(n));
		json_array_append_new(p, json_string("1"));
		json_array_append_new(a, p);
	}
	return a;
}
static json_t *long_name(void)
{
	return json_string("ABCDEFGHIJKLMNOPQRSTUVWXYZ");
}
static json_t *pct(void)
{
	return json_string("%s%s%s%n");
}
static json_t *rsqrt_neg(void)
{
	return json_string("rsqrt(-D)");
}
static json_t *grid_zero(void)
{
	return json_string("L-L");
}
static json_t *cluster_9(void)
{
	return json_string("9");
}
static json_t *smem_huge(void)
{
	return json_string("4611686018427387904");
}
static json_t *block_big(void)
{
	json_t *a = json_array();
	json_array_append_new(a, json_integer(1024));
	json_array_append_new(a, json_integer(2));
	json_array_append_new(a, json_integer(1));
	return a;
}

static const Named NAMED[] = {
        {"30000 nested parentheses in a var", "variants/0/vars/1/1", deep_parens},
        {"30000 minus signs in a rule", "variants/0/rules/0/expr", many_minus},
        {"an expression of 100000 characters", "variants/1/workspaces/0/bytes", long_expr},
        {"65 nested parentheses in an arg", "variants/0/forward/0/grid/0", nest65},
        {"60 nested parentheses: within the limit", "variants/0/forward/0/grid/0", nest60},
        {"a zeroed workspace of 2^62 bytes", "variants/0/workspaces/0/bytes", big_ws},
        {"cdiv(INT64_MIN, -1) in a var", "variants/0/vars/1/1", int_min_cdiv},
        {"INT64_MIN % -1 in a rule", "variants/1/rules/0/expr", int_min_mod},
        {"format INT64_MAX", "format", huge_int},
        {"block -1", "variants/0/forward/0/block/0", neg_int},
        {"an empty kernel name", "variants/1/backward/0/kernel", empty_str},
        {"an empty ptx file name", "variants/0/ptx", empty_str},
        {"a null mixer", "variants/0/mixer", nul},
        {"an arg naming no workspace", "variants/0/forward/0/args/7", bad_arg},
        {"an i32 arg past 32 bits", "variants/1/forward/0/args/2", i32_big},
        {"9 dims of a parameter", "mixers/rglru/params/0/dims", many_dims},
        {"40 vars", "variants/0/vars", many_vars},
        {"a var name of 26 characters", "variants/0/vars/0/0", long_name},
        {"printf directives in a kernel name", "variants/0/forward/0/kernel", pct},
        {"printf directives in a rule's message", "variants/0/rules/0/message", pct},
        {"rsqrt of a negative in an init", "mixers/samu/params/0/init/a", rsqrt_neg},
        {"a zero grid", "variants/1/forward/0/grid/0", grid_zero},
        {"a cluster of 9", "variants/0/backward/2/cluster", cluster_9},
        {"dynamic shared memory of 2^62", "variants/0/forward/0/smem", smem_huge},
        {"a block of 2048 threads", "variants/0/forward/0/block", block_big},
};

/* The value at a path like "variants/0/vars/1/1" set to v. */
static int set_path(json_t *doc, const char *path, json_t *v)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	json_t *c = doc;
	char *save = NULL, *tok = strtok_r(buf, "/", &save);
	while (tok) {
		char *next = strtok_r(NULL, "/", &save);
		int is_index = tok[0] >= '0' && tok[0] <= '9';
		if (!next) {
			if (is_index)
				return json_array_set_new(c, (size_t)atoi(tok), v);
			return json_object_set_new(c, tok, v);
		}
		c = is_index ? json_array_get(c, (size_t)atoi(tok)) : json_object_get(c, tok);
		if (!c)
			break;
		tok = next;
	}
	json_decref(v);
	return -1;
}

static void named_cases(json_t *base, recur_rt *rt)
{
	int missing = 0;
	for (size_t i = 0; i < sizeof NAMED / sizeof *NAMED; i++) {
		json_t *doc = json_deep_copy(base);
		if (set_path(doc, NAMED[i].path, NAMED[i].make())) {
			missing++;
			printf("  (no %s in the base manifest for: %s)\n", NAMED[i].path, NAMED[i].name);
		}
		tree_case(NAMED[i].name, doc, rt);
		json_decref(doc);
	}
	/* two of one name: a variant and a parameter */
	json_t *doc = json_deep_copy(base);
	json_t *vs = json_object_get(doc, "variants");
	json_array_append_new(vs, json_deep_copy(json_array_get(vs, 0)));
	tree_case("a variant twice", doc, rt);
	json_decref(doc);
	doc = json_deep_copy(base);
	json_t *ps = json_object_get(json_object_get(json_object_get(doc, "mixers"), "rglru"), "params");
	json_array_append_new(ps, json_deep_copy(json_array_get(ps, 0)));
	tree_case("a parameter twice", doc, rt);
	json_decref(doc);
	/* JSON nested past the parser's depth, and a manifest past the size limit */
	char *deep = repeat("{\"format\": 1, \"mixers\": ", '[', 100000, "");
	if (deep) {
		one_case("JSON nested 100000 deep", deep, strlen(deep), rt);
		free(deep);
	}
	/* past 64 MiB: a sparse file, as large as its size says, costs nothing */
	put(mpath, "{\"format\": 1, \"pad\": \"", 21);
	if (truncate(mpath, ((off_t)64 << 20) + 16) == 0)
		file_case("a manifest past 64 MiB", "", 0, rt);
	one_case("an empty file", "", 0, rt);
	check(missing == 0, "every named case found its place in the base manifest", "%d missing", missing);
}

/* Every other tests/fuzz/manifests/NAME.json, as it stands. */
static void corpus_cases(const char *cdir, recur_rt *rt)
{
	DIR *d = opendir(cdir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".json") || !strcmp(e->d_name, "base.json"))
			continue;
		char path[1024];
		size_t tl;
		snprintf(path, sizeof path, "%s/%s", cdir, e->d_name);
		char *t = slurp(path, &tl);
		if (t) {
			one_case(e->d_name, t, tl, rt);
			n++;
		}
		free(t);
	}
	if (d)
		closedir(d);
	printf("  %d manifests of the corpus\n", n);
}

int main(void)
{
	const char *src = getenv("RECUR_SOURCE_DIR");
	char cdir[512], bpath[600];
	verbose = getenv("RECUR_FUZZ_VERBOSE") && *getenv("RECUR_FUZZ_VERBOSE") == '1';
	snprintf(cdir, sizeof cdir, "%s/tests/fuzz/manifests", src && *src ? src : RECUR_SOURCE_DIR);
	snprintf(bpath, sizeof bpath, "%s/base.json", cdir);
	size_t blen;
	char *btext = slurp(bpath, &blen);
	json_t *base = btext ? json_loadb(btext, blen, 0, NULL) : NULL;
	if (!base) {
		printf("FAIL cannot read the base manifest %s\n", bpath);
		return 1;
	}
	snprintf(dir, sizeof dir, "/tmp/test_fuzz_manifest.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
	hc_reset();
	recur_rt *rt = NULL;
	char err[1024];
	if (hc_open(&rt, err, sizeof err)) {
		printf("FAIL the host stand-in: %s\n", err);
		return 1;
	}

	/* the base itself loads and runs everything */
	one_case("the base manifest", btext, blen, rt);
	check(loaded == 1 && faults == 0 && ran >= 8, "the base manifest loads, and every variant runs on the stand-in",
	      "%d runs %s", ran, first_fault);

	named_cases(base, rt);
	check(faults == 0, "named hostile manifests: a located message or a clean run each", "%d cases; %s", cases,
	      first_fault);
	corpus_cases(cdir, rt);

	int before = cases;
	for (int i = 0; i < N_TREE; i++) {
		json_t *doc = json_deep_copy(base);
		char what[128] = "", name[160];
		int k = 1 + (int)pick(3); /* one to three changes */
		for (int j = 0; j < k; j++)
			mutate_tree(doc, what, sizeof what);
		snprintf(name, sizeof name, "tree mutation %d (%s)", i, what);
		tree_case(name, doc, rt);
		json_decref(doc);
	}
	for (int i = 0; i < N_BYTES; i++) {
		char *t = malloc(blen + 1024);
		size_t len = blen;
		memcpy(t, btext, blen + 1);
		int k = 1 + (int)pick(4);
		for (int j = 0; j < k; j++)
			mutate_bytes(t, &len);
		char name[64];
		snprintf(name, sizeof name, "byte mutation %d", i);
		one_case(name, t, len, rt);
		free(t);
	}
	check(faults == 0, "random mutations of the tree and the text: a located message or a clean run each",
	      "%d cases: %d loaded, %d refused; %s", cases - before, loaded, refused, first_fault);
	printf("  %d manifests in all: %d loaded, %d refused with a message; %d passes run on the stand-in\n", cases,
	       loaded, refused, ran);

	recur_rt_close(rt);
	check(hc.nblk == 0, "nothing left on the stand-in's device", "%d blocks", hc.nblk);
	hc_reset();
	unlink(mpath);
	rmdir(dir);
	json_decref(base);
	free(btext);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
