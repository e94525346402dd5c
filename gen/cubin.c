/* See cubin.h. */
#include "cubin.h"
#include "fsutil.h"
#include "proc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The last non-empty line of text, into out. */
static void last_line(const char *text, char *out, size_t n)
{
	const char *best = text, *p = text;
	size_t blen = 0;
	while (*p) {
		size_t k = strcspn(p, "\n");
		if (k > 0) {
			best = p;
			blen = k;
		}
		p += k + (p[k] == '\n');
	}
	snprintf(out, n, "%.*s", (int)blen, best);
}

/* A temporary folder of the caller's own; 0 or -1 with why. */
static int scratch_dir(char *dir, size_t n, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, n, "%s/recur-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		snprintf(err, errlen, "cannot make a temporary folder %s for ptxas", dir);
		return -1;
	}
	return 0;
}

int ptxas_open(Ptxas *p, const char *sm, char *err, size_t errlen)
{
	memset(p, 0, sizeof *p);
	snprintf(p->sm, sizeof p->sm, "%s", sm);
	const char *env = getenv("PTXAS");
	static const char *const fallback[] = { "/usr/local/cuda/bin", NULL };
	if (env && *env) {
		if (access(env, X_OK) != 0) {
			snprintf(err, errlen, "--cubin: PTXAS=%s is not an executable file", env);
			return -1;
		}
		snprintf(p->path, sizeof p->path, "%s", env);
	} else if (proc_find("ptxas", fallback, p->path, sizeof p->path) != 0) {
		snprintf(err, errlen, "--cubin: no ptxas on PATH nor in /usr/local/cuda/bin (set PTXAS to its path, "
		         "or leave --cubin out: the driver then compiles the PTX at load)");
		return -1;
	}
	char dir[4096], log[4200];
	if (scratch_dir(dir, sizeof dir, err, errlen) != 0)
		return -1;
	snprintf(log, sizeof log, "%s/version.txt", dir);
	const char *argv[] = { p->path, "--version", NULL };
	int rc = proc_run(argv, log, err, errlen);
	size_t n = 0;
	char *text = rc == 0 ? fs_read_file(log, &n, err, errlen) : NULL;
	if (rc > 0)
		snprintf(err, errlen, "--cubin: %s --version exited with %d", p->path, rc);
	if (text)
		last_line(text, p->version, sizeof p->version);
	free(text);
	unlink(log);
	rmdir(dir);
	return text ? 0 : -1;
}

int ptxas_compile(const Ptxas *p, const char *name, const char *ptx, char **cubin, size_t *n, char *err,
                  size_t errlen)
{
	*cubin = NULL;
	char dir[4096], in[4200], out[4200], log[4200], arch[32];
	if (scratch_dir(dir, sizeof dir, err, errlen) != 0)
		return -1;
	snprintf(in, sizeof in, "%s/m.ptx", dir);
	snprintf(out, sizeof out, "%s/m.cubin", dir);
	snprintf(log, sizeof log, "%s/log.txt", dir);
	snprintf(arch, sizeof arch, "-arch=%s", p->sm);
	int rc = fs_write_file(in, ptx, strlen(ptx), err, errlen);
	if (rc == 0) {
		const char *argv[] = { p->path, arch, "-O3", "-o", out, in, NULL };
		rc = proc_run(argv, log, err, errlen);
		if (rc > 0) {
			size_t ln = 0;
			char *said = fs_read_file(log, &ln, err, errlen);
			snprintf(err, errlen, "module %s: ptxas %s exited with %d: %.1500s", name, arch, rc,
			         said ? said : "(no output)");
			free(said);
			rc = -1;
		}
	}
	if (rc == 0 && !(*cubin = fs_read_file(out, n, err, errlen)))
		rc = -1;
	unlink(in);
	unlink(out);
	unlink(log);
	rmdir(dir);
	return rc;
}
