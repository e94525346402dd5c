/* The sequence state through the runtime (recur_seqstate in recur_io), on
 * the host stand-in for the driver (hostcu.h):
 *
 * - A variant whose manifest lists "state": ["reset"] gets io->state->reset
 *   as its "state:reset" argument in both passes, and a null pointer when
 *   the call gives none (the kernels test it).
 * - A field the variant's kernels do not take (reset for a variant without
 *   it, h0 for every variant today), and ndocs without cu_seqlens, are
 *   refused before any launch, naming the field and what the variant takes.
 * - recur_manifest_variant_state reports what each variant takes.
 * - Manifests that contradict themselves are refused at load: an arg
 *   naming a field the variant's "state" does not list, a name that is no
 *   field, a field listed twice.
 */
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
        ".visible .entry bwd(.param .u64 a0, .param .u64 a1, .param .u64 a2, .param .u32 a3)\n{\n\tret;\n}\n";

#define VARIANT(name, state, sarg)                                                                                     \
	"{\"name\": \"" name "\", \"mixer\": \"toy\", \"ptx\": \"k.ptx\", \"vars\": [], \"rules\": [],"                  \
	" \"workspaces\": [], \"state\": " state ",\n"                                                                 \
	" \"forward\": [{\"kernel\": \"fwd\", \"grid\": [\"B\", 1, 1], \"block\": [64, 1, 1],"                        \
	" \"args\": [\"y\", \"x\", \"" sarg "\", \"i32:L\"]}],\n"                                                    \
	" \"backward\": [{\"kernel\": \"bwd\", \"grid\": [\"B\", 1, 1], \"block\": [64, 1, 1],"                       \
	" \"args\": [\"dx\", \"dy\", \"" sarg "\", \"i32:L\"]}]}"
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
	      "an h0 no kernel takes yet: refused, naming what the variant takes", "%s", err);
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
	if (rc == 0)
		calls(rt);
	recur_rt_close(rt);
	bad_manifests();
	const char *const names[] = {"k.ptx", "manifest.json"};
	remove_test_dir(dir, names, 2);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
