/* The sequence state through the runtime (recur_seqstate in recur_io), on
 * the host stand-in for the driver (hostcu.h):
 *
 * - A variant whose manifest lists "state": ["reset"] gets io->state->reset
 *   as its "state:reset" argument in both passes, and a null pointer when
 *   the call gives none (the kernels test it).
 * - A field the variant's kernels do not take (reset for a variant without
 *   it, h0 or index for one taking reset only), and ndocs without
 *   cu_seqlens, are refused before any launch, naming the field and what
 *   the variant takes.
 * - recur_manifest_variant_state reports what each variant takes, and
 *   recur_manifest_variant_scan its scan ("hierarchical" when the manifest
 *   names none).
 * - In place: hT == h0 is refused for a states variant (its kernels read h0
 *   after another wrote hT) and taken by a decode step (scan "decode"),
 *   dh0 == dhT refused; each before anything reaches the driver.
 * - The row's map (state map_loga, map_h): map_loga reaches its slot; the
 *   map without h0, or map_h without hT, is refused before any driver
 *   call; a variant without the map refuses it, naming map = { true }.
 * - A decode step (scan "decode", state h0 hT index, "backward": []) loads,
 *   gets h0, hT and index in its forward's arg slots, runs in place, and
 *   refuses recur_backward, recur_backward_ws and a graph with a backward
 *   before anything reaches the driver, naming the variant; an h0 or hT
 *   off a 16-byte boundary is refused before any launch; its backward
 *   workspaces take no room in recur_workspace_sizes.
 * - cu_seqlens (a docs variant, state reset cu_seqlens h0 hT dhT dh0):
 *   the offsets reach "state:cu_seqlens" and ndocs "i32:ndocs" (0 for a
 *   call without them); B != 1, ndocs outside 1..L, and cu_seqlens with
 *   reset marks are refused before any launch, naming what is wrong; a
 *   variant that does not take cu_seqlens refuses it.
 * - Manifests that contradict themselves are refused at load: an arg
 *   naming a field the variant's "state" does not list, a name that is no
 *   field, a field listed twice, an unknown scan, no forward launch.
 */
#include "seqstate.h"
#include "hostcu.h"
#include "check.h"
#include "testfs.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static const char *ptx =
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry fwd(.param .u64 a0, .param .u64 a1, .param .u64 a2, .param .u32 a3)\n{\n\tret;\n}\n"
        ".visible .entry bwd(.param .u64 a0, .param .u64 a1, .param .u64 a2, .param .u32 a3)\n{\n\tret;\n}\n"
        ".visible .entry step(.param .u64 a0, .param .u64 a1, .param .u64 a2, .param .u64 a3, .param .u64 a4, "
        ".param .u32 a5)\n{\n\tret;\n}\n";

#define VARIANT(name, state, sarg)                                                                                     \
	"{\"name\": \"" name "\", \"mixer\": \"toy\", \"ptx\": \"k.ptx\", \"vars\": [], \"rules\": [],"                  \
	" \"workspaces\": [], \"state\": " state ",\n"                                                                 \
	" \"forward\": [{\"kernel\": \"fwd\", \"grid\": [\"B\", 1, 1], \"block\": [64, 1, 1],"                        \
	" \"args\": [\"y\", \"x\", \"" sarg "\", \"i32:L\"]}],\n"                                                    \
	" \"backward\": [{\"kernel\": \"bwd\", \"grid\": [\"B\", 1, 1], \"block\": [64, 1, 1],"                       \
	" \"args\": [\"dx\", \"dy\", \"" sarg "\", \"i32:L\"]}]}"
/* a decode-style step: y, x, h0, hT, index, L; a forward and a backward
 * workspace, the backward's never used when back is [] */
#define STEP(name, scan, state, back)                                                                                  \
	"{\"name\": \"" name "\", \"mixer\": \"toy\", \"ptx\": \"k.ptx\", \"vars\": [], \"rules\": []," scan          \
	" \"workspaces\": [{\"name\": \"fw\", \"bytes\": \"64*B\", \"life\": \"forward\"},"                        \
	" {\"name\": \"bw\", \"bytes\": \"4096*B\", \"life\": \"backward\"},"                                         \
	" {\"name\": \"bz\", \"bytes\": \"8*B\", \"life\": \"backward\", \"zero\": true}],"                           \
	" \"state\": " state ",\n"                                                                                     \
	" \"forward\": [{\"kernel\": \"step\", \"grid\": [\"B\", 1, 1], \"block\": [64, 1, 1],"                      \
	" \"args\": [\"y\", \"x\", \"state:h0\", \"state:hT\", \"state:index\", \"i32:L\"]}],\n"                   \
	" \"backward\": " back "}"
#define DECODE_SCAN " \"scan\": \"decode\","
#define DECODE_STATE "[\"h0\", \"hT\", \"index\"]"
#define MANIFEST(variants)                                                                                             \
	"{\"format\": 1, \"mixers\": {\"toy\": {\"params\": []}},\n \"variants\": [" variants "]}\n"

static CUdeviceptr arg(int k)
{
	CUdeviceptr a;
	memcpy(&a, hc.launch[(hc.nlaunch - 1) % HC_MAXLAUNCH].params[k], 8);
	return a;
}

static recur_manifest *load(const char *text, char *err, size_t n)
{
	char path[300];
	write_in(dir, "manifest.json", text);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	recur_manifest *m = NULL;
	return recur_manifest_load(path, &m, err, n) ? NULL : m;
}

static void calls(recur_rt *rt)
{
	char err[1024] = "";
	recur_manifest *m = load(MANIFEST(VARIANT("resets", "[\"reset\"]", "state:reset") ","
	                                  VARIANT("plain", "[]", "x")), err, sizeof err);
	check(m != NULL, "a manifest with a variant taking reset marks loads", "%s", err);
	if (!m)
		return;
	check(!strcmp(recur_manifest_variant_state(m, 0), "reset") && !strcmp(recur_manifest_variant_state(m, 1), ""),
	      "recur_manifest_variant_state: \"reset\", and \"\" for the plain one", "\"%s\", \"%s\"",
	      recur_manifest_variant_state(m, 0), recur_manifest_variant_state(m, 1));
	recur_shape s = {2, 37, 64};
	size_t bytes = 0;
	CUdeviceptr t[5] = {0};
	int rc = recur_tensor_bytes(s, 2, &bytes, err, sizeof err);
	for (int i = 0; i < 4 && !rc; i++)
		rc = recur_alloc(rt, bytes, &t[i], err, sizeof err);
	rc = rc || recur_alloc(rt, (size_t)s.B * (size_t)s.L, &t[4], err, sizeof err);
	recur_seqstate st = {.reset = t[4]};
	recur_io io = {.x = t[0], .y = t[1], .dy = t[2], .dx = t[3], .state = &st};
	recur_variant *v = NULL, *p = NULL;
	rc = rc || recur_variant_load(rt, m, "resets", &v, err, sizeof err) ||
	     recur_variant_load(rt, m, "plain", &p, err, sizeof err);
	check(rc == 0, "both variants load", "%s", err);
	if (rc)
		goto out;
	hc.nlaunch = 0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	CUdeviceptr f = rc ? 1 : arg(2);
	rc = rc || recur_backward(v, s, &io, 0, err, sizeof err);
	check(rc == 0 && f == t[4] && arg(2) == t[4], "both passes get the marks as state:reset", "%s", err);
	io.state = NULL;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc == 0 && arg(2) == 0, "a call without a state: state:reset is a null pointer", "%s", err);

	io.state = &st;
	hc.nlaunch = 0;
	rc = recur_forward(p, s, &io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && has(err, "plain") && has(err, "gives reset") && has(err, "take: none") &&
	              has(err, "resets = { true }"),
	      "marks for a variant without them: refused before any launch, saying how to get one", "%s", err);
	recur_seqstate h0 = {.h0 = t[4]};
	io.state = &h0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && has(err, "gives h0") && has(err, "take: reset"),
	      "an h0 the variant does not take: refused, naming what the variant takes", "%s", err);
	recur_seqstate ix = {.index = t[4]};
	io.state = &ix;
	hc.nlaunch = 0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && has(err, "resets") && has(err, "gives index") && has(err, "take: reset"),
	      "an index for a variant that does not list it: refused before any launch, naming index", "%s", err);
	recur_seqstate nd = {.ndocs = 3};
	io.state = &nd;
	rc = recur_backward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && has(err, "ndocs = 3 without cu_seqlens"), "ndocs without cu_seqlens: refused", "%s", err);
	recur_seqstate none = {0};
	err[0] = 0;
	io.state = &none;
	rc = recur_forward(p, s, &io, 0, err, sizeof err);
	check(rc == 0, "an all-zero state is the plain call, for any variant", "%s", err);
out:
	recur_variant_free(v);
	recur_variant_free(p);
	for (int i = 0; i < 5; i++)
		recur_free(rt, t[i]);
	recur_manifest_free(m);
}

static int32_t arg_i32(int k)
{
	int32_t a;
	memcpy(&a, hc.launch[(hc.nlaunch - 1) % HC_MAXLAUNCH].params[k], 4);
	return a;
}

/* cu_seqlens and ndocs through a docs variant's first kernel */
static void packed(recur_rt *rt)
{
	char err[1024] = "";
	recur_manifest *m = load(MANIFEST("{\"name\": \"docs\", \"mixer\": \"toy\", \"ptx\": \"k.ptx\", \"vars\": [],"
	                                  " \"rules\": [], \"workspaces\": [],"
	                                  " \"state\": [\"reset\", \"cu_seqlens\", \"h0\", \"hT\", \"dhT\", \"dh0\"],\n"
	                                  " \"forward\": [{\"kernel\": \"fwd\", \"grid\": [\"B\", 1, 1], \"block\": [64, 1, 1],"
	                                  " \"args\": [\"y\", \"x\", \"state:cu_seqlens\", \"i32:ndocs\"]}],\n"
	                                  " \"backward\": [{\"kernel\": \"bwd\", \"grid\": [\"B\", 1, 1], \"block\": [64, 1, 1],"
	                                  " \"args\": [\"dx\", \"dy\", \"state:reset\", \"i32:ndocs\"]}]}, "
	                                  VARIANT("resets", "[\"reset\"]", "state:reset")), err, sizeof err);
	check(m != NULL, "a manifest with a variant taking cu_seqlens and an i32:ndocs argument loads", "%s", err);
	if (!m)
		return;
	recur_shape s = {1, 37, 64};
	size_t bytes = 0;
	CUdeviceptr t[5] = {0};
	int rc = recur_tensor_bytes(s, 2, &bytes, err, sizeof err);
	for (int i = 0; i < 4 && !rc; i++)
		rc = recur_alloc(rt, bytes, &t[i], err, sizeof err);
	rc = rc || recur_alloc(rt, 4 * 38, &t[4], err, sizeof err);
	recur_variant *v = NULL, *r = NULL;
	rc = rc || recur_variant_load(rt, m, "docs", &v, err, sizeof err) ||
	     recur_variant_load(rt, m, "resets", &r, err, sizeof err);
	check(rc == 0, "the docs variant loads", "%s", err);
	if (rc)
		goto out;
	recur_seqstate st = {.cu_seqlens = t[4], .ndocs = 3};
	recur_io io = {.x = t[0], .y = t[1], .dy = t[2], .dx = t[3], .state = &st};
	hc.nlaunch = 0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc == 0 && arg(2) == t[4] && arg_i32(3) == 3, "the offsets reach state:cu_seqlens and ndocs i32:ndocs",
	      "%s", err);
	io.state = NULL;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc == 0 && arg(2) == 0 && arg_i32(3) == 0, "a call without them: a null pointer and ndocs 0", "%s", err);
	/* one variant, one shape, ndocs changing from call to call: the values
	 * the runtime keeps from the last call must follow it */
	int seen[3] = {0};
	const int want[3] = {5, 3, 5};
	for (int i = 0; i < 3 && rc == 0; i++) {
		recur_seqstate si = {.cu_seqlens = t[4], .ndocs = want[i]};
		io.state = &si;
		hc.nlaunch = 0;
		rc = recur_forward(v, s, &io, 0, err, sizeof err);
		seen[i] = rc ? -1 : arg_i32(3);
	}
	check(rc == 0 && !memcmp(seen, want, sizeof want), "ndocs 5, 3, 5 on one variant after 3 and none: each call's "
	      "own", "%d %d %d: %s", seen[0], seen[1], seen[2], err);
	io.state = &st;
	recur_shape s2 = {2, 37, 64};
	hc.nlaunch = 0;
	rc = recur_forward(v, s2, &io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && has(err, "B must be 1, not 2"), "cu_seqlens at B = 2: refused", "%s", err);
	recur_seqstate z = {.cu_seqlens = t[4], .ndocs = 0}, big = {.cu_seqlens = t[4], .ndocs = 38};
	io.state = &z;
	rc = recur_backward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && has(err, "ndocs = 0") && has(err, "1 to L = 37"), "cu_seqlens with ndocs = 0: refused", "%s",
	      err);
	io.state = &big;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && has(err, "ndocs = 38"), "more documents than tokens: refused", "%s", err);
	/* the token codes hold a state index of 28 bits (docs.c): one more
	 * document, or row, is refused before any launch */
	recur_shape sl = {1, SEQSTATE_MAX_DOCS + 1, 64}, sb = {SEQSTATE_MAX_DOCS + 1, 1, 64};
	recur_seqstate many = {.cu_seqlens = t[4], .ndocs = SEQSTATE_MAX_DOCS + 1};
	io.state = &many;
	hc.nlaunch = 0;
	rc = recur_forward(v, sl, &io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && has(err, "268435457 documents") && has(err, "at most 268435456"),
	      "2^28 + 1 documents: refused", "%s", err);
	io.state = NULL;
	rc = recur_backward(v, sb, &io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && has(err, "268435457 rows"), "2^28 + 1 rows: refused", "%s", err);
	recur_seqstate both = {.cu_seqlens = t[4], .ndocs = 2, .reset = t[4]};
	io.state = &both;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && has(err, "both cu_seqlens and reset"), "cu_seqlens with reset marks: refused", "%s", err);
	io.state = &st;
	rc = recur_forward(r, s, &io, 0, err, sizeof err);
	check(rc != 0 && has(err, "gives cu_seqlens") && has(err, "take: reset") && has(err, "docs = { true }"),
	      "cu_seqlens for a variant without it: refused, naming what it takes and the grid option", "%s", err);
out:
	recur_variant_free(v);
	recur_variant_free(r);
	for (int i = 0; i < 5; i++)
		recur_free(rt, t[i]);
	recur_manifest_free(m);
}

/* hT == h0 and dh0 == dhT on a states variant that is no decode step */
static void in_place(recur_rt *rt)
{
	char err[1024] = "";
	recur_manifest *m = load(MANIFEST(VARIANT("states", "[\"h0\", \"hT\", \"dhT\", \"dh0\"]", "state:hT")),
	                         err, sizeof err);
	check(m != NULL, "a manifest with a states variant loads", "%s", err);
	if (!m)
		return;
	recur_shape s = {2, 16, 64};
	size_t bytes = 0, sb = (size_t)s.B * (size_t)s.D * 4;
	CUdeviceptr t[8] = {0};
	recur_variant *v = NULL;
	int rc = recur_tensor_bytes(s, 2, &bytes, err, sizeof err);
	for (int i = 0; i < 8 && !rc; i++)
		rc = recur_alloc(rt, i < 4 ? bytes : sb, &t[i], err, sizeof err);
	rc = rc || recur_variant_load(rt, m, "states", &v, err, sizeof err);
	check(rc == 0, "the states variant loads", "%s", err);
	if (rc)
		goto out;
	check(!strcmp(recur_manifest_variant_scan(m, 0), "hierarchical"),
	      "recur_manifest_variant_scan: hierarchical where the manifest names no scan", "\"%s\"",
	      recur_manifest_variant_scan(m, 0));
	recur_seqstate st = {.h0 = t[4], .hT = t[5]};
	recur_io io = {.x = t[0], .y = t[1], .dy = t[2], .dx = t[3], .state = &st};
	hc.nlaunch = 0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc == 0 && hc.nlaunch == 1 && arg(2) == t[5], "h0 and hT apart: the forward runs, hT in its slot", "%s",
	      err);
	st.hT = st.h0;
	hc.nlaunch = 0;
	long calls = hc.calls;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && hc.nlaunch == 0 && hc.calls == calls && has(err, "states") && has(err, "hT == h0") &&
	              has(err, "race") && has(err, "decode"),
	      "hT == h0 on a variant that is no decode step: refused before any driver call, saying why and who "
	      "updates in place", "%s", err);
	rc = recur_graph_create(v, s, &io, RECUR_GRAPH_FORWARD, &(recur_graph *){NULL}, err, sizeof err);
	check(rc != 0 && hc.calls == calls && has(err, "hT == h0"), "hT == h0: a graph of the forward refused too",
	      "%s", err);
	st = (recur_seqstate){.h0 = t[4], .hT = t[5], .dhT = t[6], .dh0 = t[7]};
	err[0] = 0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err) || recur_backward(v, s, &io, 0, err, sizeof err);
	check(rc == 0, "dhT and dh0 apart: forward and backward run", "%s", err);
	st.dh0 = st.dhT;
	hc.nlaunch = 0;
	calls = hc.calls;
	rc = recur_backward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && hc.calls == calls && has(err, "states") && has(err, "dh0 == dhT") && has(err, "race"),
	      "dh0 == dhT: the backward refused before any driver call", "%s", err);
out:
	recur_variant_free(v);
	for (int i = 0; i < 8; i++)
		recur_free(rt, t[i]);
	recur_manifest_free(m);
}

/* The row's map (a map variant: state h0 hT dhT dh0 map_loga map_h):
 * map_loga reaches its slot; the map without h0, or map_h without hT, is
 * refused before any driver call, saying what to give; a states variant
 * without the map refuses it, naming the grid option. */
static void row_map(recur_rt *rt)
{
	char err[1024] = "";
	recur_manifest *m =
	        load(MANIFEST(VARIANT("map", "[\"h0\", \"hT\", \"dhT\", \"dh0\", \"map_loga\", \"map_h\"]",
	                              "state:map_loga") ","
	                      VARIANT("states", "[\"h0\", \"hT\", \"dhT\", \"dh0\"]", "state:hT")),
	             err, sizeof err);
	check(m != NULL, "a manifest with a map variant loads", "%s", err);
	if (!m)
		return;
	recur_shape s = {2, 16, 64};
	size_t bytes = 0, sb = (size_t)s.B * (size_t)s.D * 4;
	CUdeviceptr t[8] = {0};
	recur_variant *v = NULL, *w = NULL;
	int rc = recur_tensor_bytes(s, 2, &bytes, err, sizeof err);
	for (int i = 0; i < 8 && !rc; i++)
		rc = recur_alloc(rt, i < 4 ? bytes : sb, &t[i], err, sizeof err);
	rc = rc || recur_variant_load(rt, m, "map", &v, err, sizeof err) ||
	     recur_variant_load(rt, m, "states", &w, err, sizeof err);
	check(rc == 0, "both variants load", "%s", err);
	if (rc)
		goto out;
	check(!strcmp(recur_manifest_variant_state(m, 0), "h0 hT dhT dh0 map_loga map_h"),
	      "recur_manifest_variant_state lists the map", "\"%s\"", recur_manifest_variant_state(m, 0));
	recur_seqstate st = {.h0 = t[4], .hT = t[5], .map_loga = t[6], .map_h = t[7]};
	recur_io io = {.x = t[0], .y = t[1], .dy = t[2], .dx = t[3], .state = &st};
	hc.nlaunch = 0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc == 0 && hc.nlaunch == 1 && arg(2) == t[6], "h0, hT and the map: the forward runs, map_loga in its slot",
	      "%s", err);
	st = (recur_seqstate){.hT = t[5], .map_loga = t[6]};
	long calls = hc.calls;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && hc.calls == calls && has(err, "map_loga without h0") && has(err, "zeros"),
	      "map_loga without h0: refused before any driver call, saying to give h0 (zeros)", "%s", err);
	st = (recur_seqstate){.h0 = t[4], .map_h = t[7]};
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc != 0 && hc.calls == calls && has(err, "map_h without hT"),
	      "map_h without hT: refused before any driver call", "%s", err);
	st = (recur_seqstate){.h0 = t[4], .map_loga = t[6]};
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc == 0, "map_loga with h0 and no hT runs (map_h alone needs hT)", "%s", err);
	st = (recur_seqstate){.h0 = t[4], .hT = t[5], .map_loga = t[6]};
	calls = hc.calls;
	rc = recur_forward(w, s, &io, 0, err, sizeof err);
	check(rc != 0 && hc.calls == calls && has(err, "gives map_loga") && has(err, "map = { true }"),
	      "map_loga for a variant without the map: refused, naming the grid option", "%s", err);
out:
	recur_variant_free(v);
	recur_variant_free(w);
	for (int i = 0; i < 8; i++)
		recur_free(rt, t[i]);
	recur_manifest_free(m);
}

/* A decode step: forward only, in place, with the slots of its rows */
static void decode(recur_rt *rt)
{
	char err[1024] = "";
	recur_manifest *m = load(MANIFEST(STEP("decode", DECODE_SCAN, DECODE_STATE, "[]") ","
	                                  STEP("lonely", " \"scan\": \"onepass\",", DECODE_STATE, "[]")),
	                         err, sizeof err);
	check(m != NULL, "a decode manifest (scan decode, state h0 hT index, backward []) loads", "%s", err);
	if (!m)
		return;
	check(!strcmp(recur_manifest_variant_scan(m, 0), "decode") &&
	              !strcmp(recur_manifest_variant_scan(m, 1), "onepass") && !recur_manifest_variant_scan(m, 2),
	      "recur_manifest_variant_scan: decode, onepass, NULL past the last variant", "\"%s\", \"%s\"",
	      recur_manifest_variant_scan(m, 0), recur_manifest_variant_scan(m, 1));
	check(!strcmp(recur_manifest_variant_state(m, 0), "h0 hT index") && recur_launch_count(m, 0, 1) == 0,
	      "its state is h0 hT index, its backward has no launch", "\"%s\", %d", recur_manifest_variant_state(m, 0),
	      recur_launch_count(m, 0, 1));
	recur_shape s = {3, 5, 64};
	recur_ws_sizes z = {1, 1};
	int rc = recur_workspace_sizes(m, 0, s, &z, err, sizeof err);
	check(rc == 0 && z.saved == 0 && z.scratch == 64 * (size_t)s.B,
	      "recur_workspace_sizes: the backward's workspaces of a variant without one take nothing",
	      "saved %zu scratch %zu (want 0, %zu) %s", z.saved, z.scratch, 64 * (size_t)s.B, err);

	size_t bytes = 0, pool = 8 * (size_t)s.D * 4;
	CUdeviceptr t[7] = {0};
	recur_variant *v = NULL, *w = NULL;
	rc = recur_tensor_bytes(s, 2, &bytes, err, sizeof err);
	for (int i = 0; i < 7 && !rc; i++)
		rc = recur_alloc(rt, i < 4 ? bytes : i < 6 ? pool : 4 * (size_t)s.B, &t[i], err, sizeof err);
	rc = rc || recur_variant_load(rt, m, "decode", &v, err, sizeof err) ||
	     recur_variant_load(rt, m, "lonely", &w, err, sizeof err);
	check(rc == 0, "both forward-only variants load", "%s", err);
	if (rc)
		goto out;
	recur_seqstate st = {.h0 = t[4], .hT = t[5], .index = t[6]};
	recur_io io = {.x = t[0], .y = t[1], .dy = t[2], .dx = t[3], .state = &st};
	hc.nlaunch = 0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc == 0 && hc.nlaunch == 1 && arg(2) == t[4] && arg(3) == t[5] && arg(4) == t[6],
	      "the forward gets h0, hT and index in their slots", "%s", err);
	st.hT = st.h0;
	hc.nlaunch = 0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc == 0 && hc.nlaunch == 1 && arg(2) == t[4] && arg(3) == t[4] && arg(4) == t[6],
	      "hT == h0 (in place): the decode step runs, both slots the pool", "%s", err);
	recur_graph *g = NULL;
	rc = recur_graph_create(v, s, &io, RECUR_GRAPH_FORWARD, &g, err, sizeof err);
	check(rc == 0 && g, "a graph of the forward in place is made", "%s", err);
	recur_graph_free(g);
	st.index = 0;
	rc = recur_forward(v, s, &io, 0, err, sizeof err);
	check(rc == 0 && arg(4) == 0, "no index: a null pointer in its slot (slot b for row b)", "%s", err);
	for (int k = 0; k < 2; k++) {   /* h0, then hT, 4 bytes past a 16-byte boundary */
		st = (recur_seqstate){.h0 = t[4] + (k == 0 ? 4 : 0), .hT = t[5] + (k == 1 ? 4 : 0)};
		hc.nlaunch = 0;
		err[0] = 0;
		rc = recur_forward(v, s, &io, 0, err, sizeof err);
		check(rc != 0 && hc.nlaunch == 0 && has(err, k == 0 ? "state's h0" : "state's hT") &&
		          has(err, "not 16-byte aligned"),
		      "a state 4 bytes off a 16-byte boundary: refused before any launch, naming it", "%s", err);
	}

	/* after a forward, so that no "without a forward" answers instead; hT
	 * apart from h0, which the variant that is no decode step refuses */
	recur_ws ws = {0};
	st = (recur_seqstate){.h0 = t[4], .hT = t[5], .index = t[6]};
	struct { recur_variant *v; const char *name, *why; } fo[] = {{v, "decode", "a decode step"},
	                                                            {w, "lonely", "no backward launches"}};
	for (int k = 0; k < 2; k++) {
		err[0] = 0;
		rc = recur_forward(fo[k].v, s, &io, 0, err, sizeof err);
		check(rc == 0, "a forward-only variant's forward runs", "%s: %s", fo[k].name, err);
		hc.nlaunch = 0;
		long calls = hc.calls;
		char e[3][1024] = {"", "", ""};
		int r0 = recur_backward(fo[k].v, s, &io, 0, e[0], sizeof e[0]);
		int r1 = recur_backward_ws(fo[k].v, s, &io, &ws, 0, e[1], sizeof e[1]);
		int r2 = recur_graph_create(fo[k].v, s, &io, RECUR_GRAPH_FORWARD | RECUR_GRAPH_BACKWARD, &g, e[2],
		                            sizeof e[2]);
		for (int i = 0; i < 3; i++) {
			static const char *const call[3] = {"recur_backward", "recur_backward_ws",
			                                    "recur_graph_create with a backward"};
			char what[160];
			snprintf(what, sizeof what, "%s of %s: refused before any driver call, naming it and why", call[i],
			         fo[k].name);
			int r = i == 0 ? r0 : i == 1 ? r1 : r2;
			char name[80];
			snprintf(name, sizeof name, "variant %s: no backward", fo[k].name);
			check(r != 0 && hc.nlaunch == 0 && hc.calls == calls && has(e[i], name) && has(e[i], fo[k].why),
			      what, "%s", e[i]);
		}
	}
out:
	recur_variant_free(v);
	recur_variant_free(w);
	for (int i = 0; i < 7; i++)
		recur_free(rt, t[i]);
	recur_manifest_free(m);
}

static void bad_manifests(void)
{
	static const struct { const char *text, *what, *w1, *w2; } bad[] = {
		{MANIFEST(VARIANT("v", "[]", "state:reset")), "an arg of a field the variant's state does not list",
		 "state:reset", "does not list reset"},
		{MANIFEST(VARIANT("v", "[\"reset\"]", "state:resets")), "an arg naming no field", "state:resets",
		 "names no field"},
		{MANIFEST(VARIANT("v", "[\"reset\", \"reset\"]", "x")), "a field listed twice", "lists reset twice", "v"},
		{MANIFEST(VARIANT("v", "[\"hidden\"]", "x")), "a name that is no field", "\"state\"[0]", "not a field"},
		{MANIFEST(VARIANT("v", "\"reset\"", "x")), "state not a list", "\"state\"", "list of names"},
		{MANIFEST(STEP("sw", " \"scan\": \"sideways\",", DECODE_STATE, "[]")), "an unknown scan, naming the variant",
		 "variants[0] (sw)", "unknown scan \"sideways\""},
		{MANIFEST(STEP("sn", " \"scan\": 3,", DECODE_STATE, "[]")), "a scan that is no string", "(sn)",
		 "\"scan\" must be a string"},
		{MANIFEST(STEP("si", DECODE_SCAN, "[\"h0\", \"hT\"]", "[]")), "an index arg the state does not list",
		 "state:index", "does not list index"},
		{MANIFEST("{\"name\": \"nf\", \"mixer\": \"toy\", \"ptx\": \"k.ptx\", \"vars\": [], \"rules\": [],"
		          " \"workspaces\": [], \"forward\": [], \"backward\": []}"),
		 "an empty forward (an empty backward is a forward-only variant)", "(nf)", "no forward launches"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char err[1024] = "";
		recur_manifest *m = load(bad[i].text, err, sizeof err);
		check(!m && has(err, bad[i].w1) && has(err, bad[i].w2), bad[i].what, "%s", err);
		recur_manifest_free(m);
	}
}

int main(void)
{
	if (make_test_dir(dir, sizeof dir, "test_runtime_state"))
		return 1;
	write_in(dir, "k.ptx", ptx);
	hc_reset();
	recur_rt *rt = NULL;
	char err[1024] = "";
	int rc = hc_open(&rt, err, sizeof err);
	check(rc == 0, "the runtime opens on the host stand-in", "%s", err);
	if (rc == 0) {
		calls(rt);
		packed(rt);
		in_place(rt);
		row_map(rt);
		decode(rt);
	}
	recur_rt_close(rt);
	bad_manifests();
	const char *const names[] = {"k.ptx", "manifest.json"};
	remove_test_dir(dir, names, 2);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
