/* A grid generated in a test's folder, then its manifest opened by the
 * runtime on the host stand-in (hostsession.h): what the test_gen_* tests
 * that run generated variants on the CPU share. */
#ifndef RECUR_TEST_GENSESSION_H
#define RECUR_TEST_GENSESSION_H
#include "gen.h"
#include "hostsession.h"
#include "check.h"
#include "testfs.h"

/* The test's folder (dir) and the tree (*src, from RECUR_SOURCE_DIR, which
 * ctest sets): 0, or the exit status to return (77: skipped) */
static int gen_test_begin(const char *name, char *dir, size_t n, const char **src)
{
	*src = getenv("RECUR_SOURCE_DIR");
	if (!*src || !**src) {
		printf("SKIP RECUR_SOURCE_DIR is not set (ctest sets it)\n");
		return 77;
	}
	return make_test_dir(dir, n, name) ? 1 : 0;
}

/* the session closed, nothing left on the stand-in's device, the folder
 * removed: the test's exit status */
static int gen_test_end(Session *r, const char *dir)
{
	session_close(r);
	check(hc.nblk == 0, "closing the runtime leaves nothing on the device", "%d blocks", hc.nblk);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("note: %s was not removed\n", dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* grid (a Lua script's text) written to dir/grid.lua and generated for sm
 * into dir/out with the tree's lua/ (src); 0, or -1 with err */
static int gen_grid(const char *dir, const char *src, const char *grid, const char *sm, char *err, size_t n)
{
	char lua[512], out[512], script[512];
	write_in(dir, "grid.lua", grid);
	snprintf(lua, sizeof lua, "%s/lua", src);
	snprintf(out, sizeof out, "%s/out", dir);
	snprintf(script, sizeof script, "%s/grid.lua", dir);
	GenOpts o = {.lua_root = lua, .outdir = out, .sm = sm, .ptx = "8.0", .jobs = 2};
	return gen_run(script, &o, err, n);
}

/* the stand-in reset and the runtime opened on dir/out's manifest, the
 * tensors at s with nparam parameters of pbytes each */
static int gen_session(Session *r, const char *dir, recur_shape s, int nparam, size_t pbytes, char *err, size_t n)
{
	char path[600];
	snprintf(path, sizeof path, "%s/out/manifest.json", dir);
	hc_reset();
	return session_open_n(r, path, s, nparam, pbytes, err, n);
}

#endif
