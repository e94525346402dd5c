/* See ptxjoin.h. */
#include "ptxjoin.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A module of one kernel, cut where ptx_join needs it:
 *   head   up to the kernel's "// .globl" line (".version", ".target", ...)
 *   globl  that line
 *   decls  the module's declarations after it (".extern .shared ..."), then a blank line
 *   body   the kernel, from ".visible .entry" to its closing brace */
typedef struct {
	const char *head, *globl, *decls, *body;
	size_t nhead, nglobl, ndecls, nbody;
	size_t nout;   /* body's length once renumbered for its place */
} Part;

static const char GLOBL[] = "\n\t// .globl\t", BB[] = "$L__BB", DEPOT[] = "__local_depot";

/* 1 when s starts with the prefix p */
static int starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

/* the length of the name at s to quote in a message, at most 40 */
static int name_len(const char *s)
{
	size_t n = strspn(s, "$_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
	return n < 40 ? (int)n : 40;
}

/* body[0..n) with the names LLVM numbers by a function's place ($L__BB<n>_,
 * __local_depot<n>) renumbered from `from` to `to`, into out (NULL: only
 * checked and measured): the length written, or -1 with *bad at a name of
 * another number, or -2 with *bad at a call prototype (numbered by the
 * module, which no kernel built alone can number) */
static long renumber(const char *body, size_t n, int from, int to, char *out, const char **bad)
{
	char f[16], t[16];
	size_t nf = (size_t)snprintf(f, sizeof f, "%d", from), nt = (size_t)snprintf(t, sizeof t, "%d", to), len = 0;
	for (size_t i = 0; i < n;) {
		const char *s = body + i;
		size_t k = starts(s, BB) ? strlen(BB) : starts(s, DEPOT) ? strlen(DEPOT) : 0;
		if (k == 0 && starts(s, "prototype_")) {
			*bad = s;
			return -2;
		}
		if (k == 0) {
			if (out)
				out[len] = *s;
			len++;
			i++;
			continue;
		}
		/* $L__BB<from>_7 or __local_depot<from> (then no digit) */
		char after = s[k + nf];
		if (strncmp(s + k, f, nf) || (k == strlen(BB) ? after != '_' : after >= '0' && after <= '9')) {
			*bad = s;
			return -1;
		}
		if (out) {
			memcpy(out + len, s, k);
			memcpy(out + len + k, t, nt);
		}
		len += k + nt;
		i += k + nf;
	}
	return (long)len;
}

/* Cuts part s (the i-th) into p: 0, or -1 with why it is not a module of
 * one kernel, all its numbered names 0, to be joined at place i. */
static int cut(const char *s, int i, Part *p, char *err, size_t errlen)
{
	const char *g = strstr(s, GLOBL);
	if (!g || strstr(g + 1, GLOBL)) {
		snprintf(err, errlen, "part %d holds %s kernels, not one", i, g ? "several" : "no");
		return -1;
	}
	const char *eol = strchr(g + 1, '\n');
	const char *blank = eol ? strstr(eol, "\n\n") : NULL;
	if (!blank) {
		snprintf(err, errlen, "part %d: no blank line after its declarations", i);
		return -1;
	}
	p->head = s;
	p->nhead = (size_t)(g + 1 - s);
	p->globl = g + 1;
	p->nglobl = (size_t)(eol + 1 - p->globl);
	p->decls = eol + 1;
	p->ndecls = (size_t)(blank + 1 - p->decls);
	p->body = blank + 2;
	p->nbody = strlen(p->body);
	char kname[128];
	snprintf(kname, sizeof kname, "%.*s", (int)(p->nglobl - strlen(GLOBL)), p->globl + strlen(GLOBL) - 1);
	if (!(starts(p->body, ".visible .entry ") || starts(p->body, ".entry ")) || p->nbody < 2 ||
	    strcmp(p->body + p->nbody - 2, "}\n")) {
		snprintf(err, errlen, "kernel %s: its text is not one entry ending in a brace", kname);
		return -1;
	}
	const char *bad = NULL;
	long w = renumber(p->body, p->nbody, 0, i, NULL, &bad);
	if (w == -2)
		snprintf(err, errlen, "kernel %s: a call prototype, which a kernel built alone cannot number", kname);
	else if (w < 0)
		snprintf(err, errlen, "kernel %s: a name numbered by another function (%.*s) in a module of one",
		         kname, name_len(bad), bad);
	p->nout = w < 0 ? 0 : (size_t)w;
	return w < 0 ? -1 : 0;
}

/* n + a, or -1 (SIZE_MAX) on overflow, sticky */
static size_t add_sz(size_t n, size_t a)
{
	size_t r;
	return __builtin_add_overflow(n, a, &r) ? (size_t)-1 : r;
}

int ptx_join(const char *const *part, int n, char **out, char *err, size_t errlen)
{
	*out = NULL;
	if (n < 1) {
		snprintf(err, errlen, "a module of no kernel");
		return -1;
	}
	Part *p = calloc((size_t)n, sizeof *p);
	if (!p) {
		snprintf(err, errlen, "out of memory joining %d kernels", n);
		return -1;
	}
	size_t total = 0;
	int rc = 0, dk = 0;   /* dk: a part with the module's declarations, if any has some */
	for (int i = 0; i < n && rc == 0; i++) {
		rc = cut(part[i], i, &p[i], err, errlen);
		if (rc == 0 && p[i].ndecls > 0 && p[dk].ndecls == 0)
			dk = i;
		/* the same header; declarations the same, or none where a kernel uses no global */
		if (rc == 0 && (p[i].nhead != p[0].nhead || memcmp(p[i].head, p[0].head, p[0].nhead) ||
		                (p[i].ndecls > 0 && (p[i].ndecls != p[dk].ndecls ||
		                                     memcmp(p[i].decls, p[dk].decls, p[dk].ndecls))))) {
			snprintf(err, errlen, "kernels %d and %d differ in their header or declarations: one module cannot "
			         "hold both", i, p[i].ndecls > 0 ? dk : 0);
			rc = -1;
		}
		if (rc == 0)
			total = add_sz(add_sz(total, p[i].nglobl), p[i].nout);
	}
	total = add_sz(add_sz(add_sz(total, p[0].nhead), p[dk].ndecls), 2);
	char *o = rc == 0 && total != (size_t)-1 ? malloc(total) : NULL;
	if (rc == 0 && !o) {
		snprintf(err, errlen, "out of memory joining %d kernels", n);
		rc = -1;
	}
	if (rc == 0) {
		char *e = o;
		memcpy(e, p[0].head, p[0].nhead);
		e += p[0].nhead;
		for (int i = 0; i < n; i++) {
			memcpy(e, p[i].globl, p[i].nglobl);
			e += p[i].nglobl;
			if (i == 0) {   /* the module's declarations once, after its first kernel's line */
				memcpy(e, p[dk].decls, p[dk].ndecls);
				e += p[dk].ndecls;
				*e++ = '\n';
			}
			const char *bad;
			e += renumber(p[i].body, p[i].nbody, 0, i, e, &bad);   /* (checked by cut) */
		}
		*e = 0;
		*out = o;
	}
	free(p);
	return rc;
}

/* 1 when the global a declaration line declares (its last name before "[",
 * ";" or " =") is named in text[0..n) */
static int declared_used(const char *line, size_t len, const char *text, size_t n)
{
	size_t e = 0;
	while (e < len && line[e] != '[' && line[e] != ';' && line[e] != '=')
		e++;
	while (e > 0 && line[e - 1] == ' ')
		e--;
	size_t b = e;
	while (b > 0 && line[b - 1] != ' ' && line[b - 1] != '\t')
		b--;
	if (e == b)
		return 1;   /* nothing to tell by: keep it */
	for (size_t i = 0; i + (e - b) <= n; i++)
		if (!memcmp(text + i, line + b, e - b))
			return 1;
	return 0;
}

int ptx_part(const char *module, int want, char **out, char *err, size_t errlen)
{
	*out = NULL;
	const char *g = strstr(module, GLOBL);
	const char *eol = g ? strchr(g + 1, '\n') : NULL;
	const char *blank = eol ? strstr(eol, "\n\n") : NULL;
	if (!blank) {
		snprintf(err, errlen, "no kernel in the form LLVM prints");
		return -1;
	}
	size_t nhead = (size_t)(g + 1 - module);
	const char *decls = eol + 1, *at = g + 1, *body = blank + 2;
	size_t ndecls = (size_t)(blank + 1 - decls);
	/* kernel k: its ".globl" line at `at`, its text from body to the next line */
	for (int k = 0; k < want; k++) {
		const char *next = strstr(body, GLOBL);
		if (!next) {
			snprintf(err, errlen, "no kernel %d: the module has %d", want, k + 1);
			return -1;
		}
		at = next + 1;
		body = strchr(at, '\n') + 1;
	}
	const char *end = strstr(body, GLOBL);
	size_t nglobl = (size_t)(strchr(at, '\n') + 1 - at), nbody = end ? (size_t)(end + 1 - body) : strlen(body);
	/* its numbered names back to 0, checked to be its own: no longer than they were */
	const char *bad = NULL;
	long w = renumber(body, nbody, want, 0, NULL, &bad);
	if (w < 0) {
		snprintf(err, errlen, "kernel %d: %s (%.*s)", want, w == -2 ? "a call prototype" :
		         "a name numbered by another kernel", name_len(bad), bad);
		return -1;
	}
	size_t cap = nhead + nglobl + ndecls + 1 + (size_t)w + 1, o = 0;
	char *s = malloc(cap);
	if (!s) {
		snprintf(err, errlen, "out of memory cutting kernel %d", want);
		return -1;
	}
	memcpy(s, module, nhead);
	o = nhead;
	memcpy(s + o, at, nglobl);
	o += nglobl;
	for (const char *l = decls; l < decls + ndecls;) {   /* the declarations its text names */
		const char *le = memchr(l, '\n', (size_t)(decls + ndecls - l));
		size_t len = (size_t)(le - l) + 1;
		if (declared_used(l, len - 1, body, nbody)) {
			memcpy(s + o, l, len);
			o += len;
		}
		l += len;
	}
	s[o++] = '\n';
	o += (size_t)renumber(body, nbody, want, 0, s + o, &bad);
	s[o] = 0;
	*out = s;
	return 0;
}
