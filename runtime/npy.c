/* NumPy .npy files: the format of the golden cases and of the arrays the CLI
 * reads and writes.
 *
 * A file is the magic "\x93NUMPY", a version (1.0: 2-byte header length;
 * 2.0 and 3.0: 4-byte), then a Python dict literal such as
 *   {'descr': '<f8', 'fortran_order': False, 'shape': (2, 37, 128), }
 * padded with spaces and '\n', then the raw data in C order. Only the dicts
 * numpy itself writes for float32/float64 arrays are accepted; anything else
 * is reported with the file name, so a bad input is a message, not garbage.
 * Bytes are assembled explicitly as little endian, so the host's order does
 * not matter.
 */
#include "npy.h"
#include "fsutil.h"
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NPY_MAX_HEADER 65536   /* numpy's own reader refuses more than 10000 by default */
#define NPY_MAX_ELEMS ((long)1 << 40)

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
	if (err && errlen) {
		int n = snprintf(err, errlen, "%s: ", path);
		if (n >= 0 && (size_t)n < errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(err + n, errlen - n, fmt, ap);
			va_end(ap);
		}
	}
	return -1;
}

/* a message that names the path itself (util/fsutil.h's) */
static int fail_as(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return -1;
}

/* ---- header dict parsing ---- */

typedef struct { const char *p, *end; } Cur;

static void skip_ws(Cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int at(Cur *c, char ch)
{
	skip_ws(c);
	return c->p < c->end && *c->p == ch;
}

static int eat(Cur *c, char ch)
{
	if (!at(c, ch))
		return 0;
	c->p++;
	return 1;
}

/* a Python string literal in ' or " quotes, without escapes */
static int quoted(Cur *c, char *out, size_t n)
{
	skip_ws(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return 0;
	char q = *c->p++;
	size_t k = 0;
	while (c->p < c->end && *c->p != q) {
		if (k + 1 >= n)
			return 0;
		out[k++] = *c->p++;
	}
	if (c->p >= c->end)
		return 0;
	c->p++;
	out[k] = 0;
	return 1;
}

static int word(Cur *c, const char *w)
{
	size_t n = strlen(w);
	skip_ws(c);
	if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
		c->p += n;
		return 1;
	}
	return 0;
}

typedef struct {
	char descr[16];
	int have_descr, have_order, have_shape, fortran;
	long shape[NPY_MAXDIM];
	int ndim;
} Header;

/* Fills h from the dict text; on error returns a static description. */
static const char *parse_dict(const char *text, size_t len, Header *h)
{
	Cur c = { text, text + len };
	char key[32];
	memset(h, 0, sizeof *h);
	if (!eat(&c, '{'))
		return "header is not a dict";
	while (!eat(&c, '}')) {
		if (!quoted(&c, key, sizeof key))
			return "header dict has a malformed key";
		if (!eat(&c, ':'))
			return "header dict lacks ':' after a key";
		if (strcmp(key, "descr") == 0) {
			if (!quoted(&c, h->descr, sizeof h->descr))
				return "header 'descr' is not a short string";
			h->have_descr = 1;
		} else if (strcmp(key, "fortran_order") == 0) {
			if (word(&c, "False"))
				h->fortran = 0;
			else if (word(&c, "True"))
				h->fortran = 1;
			else
				return "header 'fortran_order' is neither True nor False";
			h->have_order = 1;
		} else if (strcmp(key, "shape") == 0) {
			if (!eat(&c, '('))
				return "header 'shape' is not a tuple";
			h->ndim = 0;
			while (!eat(&c, ')')) {
				skip_ws(&c);
				if (c.p >= c.end || *c.p < '0' || *c.p > '9')
					return "header 'shape' holds something other than non-negative integers";
				if (h->ndim == NPY_MAXDIM)
					return "header 'shape' has more dimensions than supported";
				long v = 0;
				while (c.p < c.end && *c.p >= '0' && *c.p <= '9') {
					if (v > (LONG_MAX - 9) / 10)
						return "header 'shape' has a dimension too large";
					v = v * 10 + (*c.p++ - '0');
				}
				h->shape[h->ndim++] = v;
				if (!eat(&c, ',') && !at(&c, ')'))
					return "header 'shape' tuple is malformed";
			}
			h->have_shape = 1;
		} else {
			return "header dict has an unknown key";
		}
		if (!eat(&c, ',') && !at(&c, '}'))
			return "header dict lacks ',' between entries";
	}
	skip_ws(&c);
	if (c.p != c.end)
		return "header has text after the dict";
	if (!h->have_descr || !h->have_order || !h->have_shape)
		return "header lacks one of 'descr', 'fortran_order', 'shape'";
	return NULL;
}

/* ---- shapes ---- */

int npy_elems(const long *shape, int ndim, long *n)
{
	long e = 1;
	if (ndim < 0 || ndim > NPY_MAXDIM)
		return -1;
	for (int i = 0; i < ndim; i++)
		if (shape[i] < 0 || __builtin_mul_overflow(e, shape[i], &e) || e > NPY_MAX_ELEMS)
			return -1;
	*n = e;
	return 0;
}

void npy_shape_text(const long *shape, int ndim, char *out, size_t n)
{
	size_t k = (size_t)snprintf(out, n, "(");
	for (int i = 0; i < ndim && k < n; i++)
		k += (size_t)snprintf(out + k, n - k, i ? ", %ld" : "%ld", shape[i]);
	if (k < n)
		snprintf(out + k, n - k, ndim == 1 ? ",)" : ")");
}

int npy_check_shape(const char *path, const long *shape, int ndim, const long *want, int nwant, const char *what,
                    char *err, size_t errlen)
{
	int same = ndim == nwant;
	for (int i = 0; same && i < ndim; i++)
		same = shape[i] == want[i];
	if (same)
		return 0;
	char got[NPY_SHAPE_TEXT], exp[NPY_SHAPE_TEXT];
	npy_shape_text(shape, ndim, got, sizeof got);
	npy_shape_text(want, nwant, exp, sizeof exp);
	return fail(err, errlen, path, "shape %s, but %s is %s", got, what, exp);
}

int npy_read_shaped(const char *path, double **data, const long *want, int nwant, const char *what, char *err,
                    size_t errlen)
{
	long shape[NPY_MAXDIM];
	int ndim;
	*data = NULL;
	if (npy_read(path, data, shape, &ndim, err, errlen))
		return -1;
	if (npy_check_shape(path, shape, ndim, want, nwant, what, err, errlen)) {
		free(*data);
		*data = NULL;
		return -1;
	}
	return 0;
}

/* ---- reading ---- */

/* Bytes from f's position to its end; -1 when f is not a regular file. */
static long long bytes_left(FILE *f)
{
	struct stat st;
	long at = ftell(f);
	if (at < 0 || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	return (long long)st.st_size - at;
}

static uint64_t le(const unsigned char *b, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static int read_body(FILE *f, const char *path, double **data, long *shape, int *ndim,
                     char *err, size_t errlen)
{
	unsigned char pre[12];
	if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
		return fail(err, errlen, path, "not a .npy file (bad magic)");
	int major = pre[6];
	size_t hlen;
	if (major == 1) {
		hlen = (size_t)le(pre + 8, 2);
	} else if (major == 2 || major == 3) {
		/* 3.0 differs from 2.0 only in allowing utf-8, which our dicts never need */
		if (fread(pre + 10, 1, 2, f) != 2)
			return fail(err, errlen, path, "truncated header length");
		hlen = (size_t)le(pre + 8, 4);
	} else {
		return fail(err, errlen, path, "unsupported .npy version %d.%d", major, pre[7]);
	}
	if (hlen > NPY_MAX_HEADER)
		return fail(err, errlen, path, "header of %zu bytes, more than %d (numpy writes under 200)", hlen,
		            NPY_MAX_HEADER);
	char *text = malloc(hlen + 1);
	if (!text)
		return fail(err, errlen, path, "out of host memory for a header of %zu bytes", hlen);
	if (fread(text, 1, hlen, f) != hlen) {
		free(text);
		return fail(err, errlen, path, "truncated header (expected %zu bytes)", hlen);
	}
	text[hlen] = 0;
	Header h;
	const char *why = parse_dict(text, hlen, &h);
	free(text);
	if (why)
		return fail(err, errlen, path, "%s", why);
	int size;
	if (strcmp(h.descr, "<f8") == 0)
		size = 8;
	else if (strcmp(h.descr, "<f4") == 0)
		size = 4;
	else
		return fail(err, errlen, path, "dtype '%s' not supported (need '<f8' or '<f4')", h.descr);
	if (h.fortran)
		return fail(err, errlen, path, "fortran_order True not supported (need C order)");

	long n;
	char shp[NPY_SHAPE_TEXT];
	npy_shape_text(h.shape, h.ndim, shp, sizeof shp);
	if (npy_elems(h.shape, h.ndim, &n))
		return fail(err, errlen, path, "shape %s has more than 2^40 elements", shp);
	/* the data must be exactly what the shape says: checked against the
	 * file's size before anything that large is allocated */
	long long left = bytes_left(f);
	if (left >= 0 && left != (long long)n * size)
		return fail(err, errlen, path, "%s: '%s' data of shape %s is %lld bytes, the file holds %lld after its "
		            "header", left < (long long)n * size ? "truncated data" : "data longer than its shape", h.descr,
		            shp, (long long)n * size, left);
	double *out = malloc((n ? n : 1) * sizeof(double));
	unsigned char *raw = malloc((n ? n : 1) * (size_t)size);
	if (!out || !raw) {
		free(out);
		free(raw);
		return fail(err, errlen, path, "out of memory for %ld elements", n);
	}
	size_t got = fread(raw, (size_t)size, (size_t)n, f);
	if (got != (size_t)n || fgetc(f) != EOF) {
		free(out);
		free(raw);
		return got != (size_t)n
			? fail(err, errlen, path, "truncated data: %zu of %ld elements present", got, n)
			: fail(err, errlen, path, "data longer than the %ld elements of its shape", n);
	}
	for (long i = 0; i < n; i++) {
		uint64_t u = le(raw + i * size, size);
		if (size == 8) {
			memcpy(&out[i], &u, 8);
		} else {
			uint32_t u32 = (uint32_t)u;
			float v;
			memcpy(&v, &u32, 4);
			out[i] = v;
		}
	}
	free(raw);
	*data = out;
	*ndim = h.ndim;
	memcpy(shape, h.shape, h.ndim * sizeof(long));
	return 0;
}

int npy_read(const char *path, double **data, long *shape, int *ndim, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errlen, path, "cannot open: %s", strerror(errno));
	int rc = read_body(f, path, data, shape, ndim, err, errlen);
	fclose(f);
	return rc;
}

/* ---- writing ---- */

static int write_any(const char *path, const void *data, int size, const long *shape, int ndim,
                     char *err, size_t errlen)
{
	if (ndim < 0 || ndim > NPY_MAXDIM)
		return fail(err, errlen, path, "cannot write %d dimensions (at most %d)", ndim, NPY_MAXDIM);
	char dict[64 + NPY_MAXDIM * 24];
	int k = snprintf(dict, sizeof dict, "{'descr': '<f%d', 'fortran_order': False, 'shape': ", size);
	long n;
	char shp[NPY_SHAPE_TEXT];
	npy_shape_text(shape, ndim, shp, sizeof shp);
	if (npy_elems(shape, ndim, &n))
		return fail(err, errlen, path, "cannot write shape %s: a negative dimension, or more than 2^40 elements",
		            shp);
	k += snprintf(dict + k, sizeof dict - k, "%s, }", shp);
	/* numpy pads magic + length + dict + '\n' to a multiple of 64 bytes so the data is aligned */
	int hlen = (k + 1 + 10 + 63) / 64 * 64 - 10;
	unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
	                          (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8) };

	/* whole or not at all: a reader never sees half a file, and a failed
	 * write leaves the old one (util/fsutil.h) */
	FsOut o;
	char why[4400];
	if (fs_out_open(&o, path, why, sizeof why) != 0)
		return fail_as(err, errlen, why);
	FILE *f = o.f;
	int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, k, f) == (size_t)k;
	for (int i = k; ok && i < hlen - 1; i++)
		ok = fputc(' ', f) != EOF;
	ok = ok && fputc('\n', f) != EOF;
	for (long i = 0; ok && i < n; i++) {
		unsigned char b[8];
		uint64_t u = 0;
		if (size == 8) {
			memcpy(&u, (const double *)data + i, 8);
		} else {
			uint32_t u32;
			memcpy(&u32, (const float *)data + i, 4);
			u = u32;
		}
		for (int j = 0; j < size; j++)
			b[j] = (unsigned char)(u >> (8 * j));
		ok = fwrite(b, 1, size, f) == (size_t)size;
	}
	if (!ok) {
		int saved = errno;
		fs_out_abort(&o);
		return fail(err, errlen, path, "write failed: %s", strerror(saved));
	}
	if (fs_out_commit(&o, why, sizeof why) != 0)
		return fail_as(err, errlen, why);
	return 0;
}

int npy_write_f32(const char *path, const float *data, const long *shape, int ndim, char *err, size_t errlen)
{
	return write_any(path, data, 4, shape, ndim, err, errlen);
}

int npy_write_f64(const char *path, const double *data, const long *shape, int ndim, char *err, size_t errlen)
{
	return write_any(path, data, 8, shape, ndim, err, errlen);
}
