/*
 * qrchild: running the real qreport binary in a child for the CLI-level
 * tests (test_hostile, test_faults), header-only as tap.h: a time limit
 * (SIGALRM) and, outside ASan builds, a bounded address space; stdout and
 * stderr captured; the refusal contract checked.
 *
 * The including file defines `qreport` (the binary) and `work` (a scratch
 * folder for the captured output) before including it.
 */
#ifndef QR_QRCHILD_H
#define QR_QRCHILD_H

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "util/util.h"

struct result {
	int status;      /* wait status */
	char *out, *err; /* captured stdout, stderr (heap, NUL-terminated) */
};

static void
result_free(struct result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof *r);
}

static char *
slurp(const char *path)
{
	char *buf = NULL;
	size_t len;

	if (qr_read_file(path, &buf, &len, NULL) != QR_OK)
		return xstrdup("");
	return buf;
}

/* Address space a child gets when run with limit_mem (ASan builds are
 * not limited): unbounded memory ends in a failed allocation. */
static size_t child_mem_limit = (size_t)8 << 30;

/* Run argv (NULL-terminated; argv[0] the program) in cwd (NULL: ours)
 * with a time limit of seconds and, when limit_mem, child_mem_limit
 * bytes of address space. */
static void
run_in(struct result *r, const char *cwd, int seconds, int limit_mem,
       char *const argv[])
{
	char *out = qr_path_join(work, "stdout.txt");
	char *err = qr_path_join(work, "stderr.txt");
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(99);
	}
	if (pid == 0) {
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(126);
#ifndef __SANITIZE_ADDRESS__
		if (limit_mem) {
			struct rlimit rl = {(rlim_t)child_mem_limit,
					    (rlim_t)child_mem_limit};

			setrlimit(RLIMIT_AS, &rl);
		}
#endif
		if (cwd != NULL && chdir(cwd) != 0)
			_exit(126);
		alarm((unsigned)seconds); /* kept across exec */
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &r->status, 0) != pid) {
		perror("waitpid");
		exit(99);
	}
	r->out = slurp(out);
	r->err = slurp(err);
	free(out);
	free(err);
}

#define MAX_ARGS 32

/* Run qreport with the NULL-terminated arguments after it. */
static void
run_qr(struct result *r, const char *cwd, int seconds, ...)
{
	char *argv[MAX_ARGS];
	va_list ap;
	int n = 0;

	argv[n++] = (char *)qreport;
	va_start(ap, seconds);
	while (n < MAX_ARGS - 1 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	run_in(r, cwd, seconds, 1, argv);
}

static int
exists(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0;
}

/* 1 when no "<base>.tmp-*" or "<base>.old-*" is left beside path. */
static int
no_leftovers(const char *path)
{
	char *dir = qr_path_dirname(path);
	const char *base = qr_path_basename(path);
	size_t n = strlen(base);
	struct dirent *de;
	DIR *dp = opendir(dir);
	int clean = 1;

	while (dp != NULL && (de = readdir(dp)) != NULL)
		if (strncmp(de->d_name, base, n) == 0 &&
		    (strncmp(de->d_name + n, ".tmp-", 5) == 0 ||
		     strncmp(de->d_name + n, ".old-", 5) == 0)) {
			diag("left behind: %s/%s", dir, de->d_name);
			clean = 0;
		}
	if (dp != NULL)
		closedir(dp);
	free(dir);
	return clean;
}

/* Describe how r ended, for diagnostics. */
static void
diag_result(const struct result *r)
{
	if (WIFSIGNALED(r->status))
		diag("killed by signal %d (%s)%s", WTERMSIG(r->status),
		     strsignal(WTERMSIG(r->status)),
		     WTERMSIG(r->status) == SIGALRM ? ": over the time limit" :
		     "");
	else
		diag("exit %d", WEXITSTATUS(r->status));
	diag("stderr: %.600s", r->err);
}

static int
exited_with(const struct result *r, int code)
{
	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == code;
}

/* Lines of err that are errors ("qreport: error: ", "qreport run:
 * error: "), or -1 when a line is neither an error nor a warning. */
static int
error_lines(const char *err)
{
	int n = 0;

	while (*err != '\0') {
		const char *eol = strchr(err, '\n');

		if (eol == NULL)
			return -1; /* a line without its newline */
		if (strncmp(err, "qreport: error: ", 16) == 0 ||
		    strncmp(err, "qreport run: error: ", 20) == 0)
			n++;
		else if (strncmp(err, "qreport: warning: ", 18) != 0 &&
			 strncmp(err, "qreport run: warning: ", 22) != 0)
			return -1;
		err = eol + 1;
	}
	return n;
}

/*
 * The refusal contract: exit code `code`, exactly one stderr line
 * "qreport: error: ..." (others may only be warnings), whose text
 * contains every string of names (NULL-ended), and no folder at out (may
 * be NULL) nor anything left beside it. The names may be in the error or
 * in a warning before it. Prints why not as TAP diagnostics.
 */
static int
refusal_holds(const struct result *r, int code, const char *out,
	      const char *const *names)
{
	int good = exited_with(r, code) && error_lines(r->err) == 1;
	size_t i;

	for (i = 0; good && names != NULL && names[i] != NULL; i++)
		if (strstr(r->err, names[i]) == NULL) {
			diag("message does not name '%s'", names[i]);
			good = 0;
		}
	if (out != NULL && exists(out)) {
		diag("'%s' was created", out);
		good = 0;
	}
	if (out != NULL && !no_leftovers(out))
		good = 0;
	return good;
}

#endif
