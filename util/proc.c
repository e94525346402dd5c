/* See proc.h. */
#include "proc.h"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int proc_run(const char *const argv[], const char *out_path, char *err, size_t errlen)
{
	posix_spawn_file_actions_t fa;
	if (posix_spawn_file_actions_init(&fa) != 0) {
		snprintf(err, errlen, "cannot run %s: out of memory", argv[0]);
		return -1;
	}
	int rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (rc == 0)
		rc = posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (rc == 0)
		rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
	pid_t pid = 0;
	if (rc == 0)
		rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(rc));
		return -1;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			snprintf(err, errlen, "waiting for %s: %s", argv[0], strerror(errno));
			return -1;
		}
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
}

static int executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int proc_find(const char *name, const char *const fallback[], char *out, size_t n)
{
	const char *path = getenv("PATH");
	while (path && *path) {
		size_t k = strcspn(path, ":");
		if (k > 0 && (size_t)snprintf(out, n, "%.*s/%s", (int)k, path, name) < n && executable(out))
			return 0;
		path += k + (path[k] == ':');
	}
	for (int i = 0; fallback && fallback[i]; i++)
		if ((size_t)snprintf(out, n, "%s/%s", fallback[i], name) < n && executable(out))
			return 0;
	return -1;
}
