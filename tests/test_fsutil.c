/* The output folder's helpers (util/fsutil.h) that recur gen publishes
 * through: fs_replace_dir puts a finished folder in place of the old one
 * (or of none) and leaves neither the temporary nor the old folder behind;
 * fs_sweep_staged finds a killed writer's folders beside the output
 * however the output's path is spelled (absolute, relative, a trailing
 * slash) and removes only those it may.
 */
#include "check.h"
#include "fsutil.h"
#include "testfs.h"
#include <errno.h>
#include <sys/stat.h>
#include <sys/time.h>

static int owns(const char *name) { return !strcmp(name, "manifest.json") || strstr(name, ".ptx") != NULL; }

/* dir/sub := a folder holding manifest.json (and notes.txt when foreign),
 * last changed age_s seconds ago */
static void folder(const char *dir, const char *sub, long age_s, int foreign)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, sub);
	mkdir(p, 0755);
	write_in(p, "manifest.json", "{}");
	if (foreign)
		write_in(p, "notes.txt", "mine");
	struct timeval t[2];
	gettimeofday(&t[0], NULL);
	t[0].tv_sec -= age_s;
	t[1] = t[0];
	utimes(p, t);
}

/* dir/sub and what folder() put there, gone */
static void unfold(const char *dir, const char *sub)
{
	char p[512], f[600];
	snprintf(p, sizeof p, "%s/%s", dir, sub);
	snprintf(f, sizeof f, "%s/notes.txt", p);
	unlink(f);
	fs_rm_owned(p, owns);
}

static int exists(const char *dir, const char *sub)
{
	char p[512];
	struct stat sb;
	snprintf(p, sizeof p, "%s/%s", dir, sub);
	return lstat(p, &sb) == 0;
}

/* a process id no process has: above the largest the kernel gives */
static long dead_pid(void)
{
	long max = 4194304;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 4194304;
		fclose(f);
	}
	return max + 1;
}

static void sweeps(const char *dir)
{
	long dead = dead_pid();
	char name[5][64], spelled[600], first[600];
	snprintf(name[0], sizeof name[0], "out.tmp.%ld", dead);
	snprintf(name[1], sizeof name[1], "out.old.%ld", dead + 1);
	snprintf(name[2], sizeof name[2], "out.tmp.%ld", dead + 2);   /* foreign file */
	snprintf(name[3], sizeof name[3], "out.tmp.%ld", dead + 3);   /* young */
	snprintf(name[4], sizeof name[4], "out.tmp.%ld", (long)getppid());   /* a live process */
	const char *spell[] = { "%s/out", "%s/out/", "out", "./out/" }, *label[] = { "DIR/out", "DIR/out/", "out", "./out/" };
	for (int s = 0; s < 4; s++) {
		folder(dir, name[0], 7200, 0);
		folder(dir, name[1], 7200, 0);
		folder(dir, name[2], 7200, 1);
		folder(dir, name[3], 5, 0);
		folder(dir, name[4], 7200, 0);
		folder(dir, "outer.tmp.1", 7200, 0);   /* another output's name */
		snprintf(spelled, sizeof spelled, spell[s], dir);
		char here[512] = "";
		if (s >= 2 && (!getcwd(here, sizeof here) || chdir(dir) != 0)) {
			check(0, "chdir into the test folder", "%s", strerror(errno));
			return;
		}
		first[0] = 0;
		int n = fs_sweep_staged(spelled, owns, 3600, first, sizeof first);
		if (here[0] && chdir(here) != 0)
			check(0, "chdir back", "%s", strerror(errno));
		char what[160];
		snprintf(what, sizeof what, "output spelled \"%s\": the dead process's two old folders removed",
		         label[s]);
		check(n == 2 && !exists(dir, name[0]) && !exists(dir, name[1]), what, "%d removed, first %s", n, first);
		check(strstr(first, ".tmp.") || strstr(first, ".old."), "the first named", "%s", first);
		check(exists(dir, name[2]) && exists(dir, name[3]) && exists(dir, name[4]) && exists(dir, "outer.tmp.1"),
		      "a foreign file's, a young, a live process's and another output's folder kept", NULL);
		char p[512];
		snprintf(p, sizeof p, "%s/%s/notes.txt", dir, name[2]);
		struct stat sb;
		snprintf(what, sizeof what, "%s/%s/manifest.json", dir, name[2]);
		check(stat(p, &sb) == 0 && stat(what, &sb) == 0, "the foreign file's folder kept whole", NULL);
		for (int i = 2; i < 5; i++)
			unfold(dir, name[i]);
		unfold(dir, "outer.tmp.1");
	}
}

static void replaces(const char *dir)
{
	char out[512], tmp[512], err[512], p[600];
	snprintf(out, sizeof out, "%s/rep", dir);
	snprintf(tmp, sizeof tmp, "%s/rep.tmp.%ld", dir, (long)getpid());
	/* into no folder, then over the first */
	for (int round = 0; round < 2; round++) {
		int made = fs_mkdtemp_fresh(tmp, owns, err, sizeof err);
		check(made == 0, "a fresh temporary folder", "%s", made ? err : "");
		write_in(tmp, round ? "b.ptx" : "a.ptx", "x");
		write_in(tmp, "manifest.json", round ? "{\"round\": 1}" : "{}");
		int rc = fs_replace_dir(tmp, out, owns, err, sizeof err);
		snprintf(p, sizeof p, "%s/%s", out, round ? "b.ptx" : "a.ptx");
		struct stat sb;
		check(rc == 0 && stat(p, &sb) == 0 && lstat(tmp, &sb) != 0,
		      round ? "a folder replaced: the new files there, the temporary folder gone"
		            : "a new folder put in place", "%s", rc ? err : "");
		if (round) {
			snprintf(p, sizeof p, "%s/a.ptx", out);
			check(stat(p, &sb) != 0, "the old folder's files gone with it", NULL);
			snprintf(p, sizeof p, "rep.old.%ld", (long)getpid());
			check(!exists(dir, p), "no old folder left beside it", NULL);
		}
	}
	/* an output holding a file its writer did not write is refused, kept whole */
	write_in(out, "notes.txt", "mine");
	fs_mkdtemp_fresh(tmp, owns, err, sizeof err);
	write_in(tmp, "manifest.json", "{}");
	int rc = fs_replace_dir(tmp, out, owns, err, sizeof err);
	snprintf(p, sizeof p, "%s/notes.txt", out);
	struct stat sb;
	check(rc != 0 && stat(p, &sb) == 0 && has(err, "notes.txt"), "a folder with a foreign file refused and kept",
	      "%s", err);
	fs_rm_owned(tmp, owns);
	unlink(p);
	fs_rm_owned(out, owns);
}

int main(void)
{
	char dir[512];
	if (make_test_dir(dir, sizeof dir, "recur_fsutil") != 0)
		return 1;
	sweeps(dir);
	replaces(dir);
	rmdir(dir);
	check(!exists(dir, "."), "the test folder left empty and removed", NULL);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
