/* Running another program (ptxas) and collecting what it said. */
#ifndef RECUR_UTIL_PROC_H
#define RECUR_UTIL_PROC_H
#include <stddef.h>

/* Runs argv[0] (looked up on PATH when it has no '/') with argv, no
 * standard input, its standard output and error both into the file
 * out_path (created or truncated). Returns its exit status (0..255; a
 * signal's death is 128 + the signal), or -1 with why in err when it
 * could not be started. Safe to call from several threads at once. */
int proc_run(const char *const argv[], const char *out_path, char *err, size_t errlen);

/* The full path of an executable named name: on PATH, else in each of the
 * NULL-terminated fallback folders. 0 with the path in out, -1 when none. */
int proc_find(const char *name, const char *const fallback[], char *out, size_t n);

#endif
