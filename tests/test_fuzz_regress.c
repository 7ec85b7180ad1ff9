/*
 * test_fuzz_regress: replay every input the fuzzers ever crashed or hung
 * on (tests/fuzz/regress/<harness>/) through the harness's own entry
 * point (tests/fuzz/fuzz_<harness>.c built with QR_FUZZ_NO_MAIN), each in
 * a child process with a time limit, so that fixes stay fixed.
 *
 * A case passes when the child ends with exit status 0: the input was
 * loaded or refused with a status and a one-line message. A signal (a
 * sanitizer report, a failed assertion, SIGALRM after the time limit) or
 * any other exit fails it. Crashes not fixed yet are listed in
 * tests/fuzz/regress/OPEN ("<harness>/<file> <reason>"); they are reported
 * as TODO, which keeps them visible without failing the suite. The
 * sanitizers decide what crashes: tests/sanitize.sh runs this under ASan
 * and UBSan, where undefined behaviour is fatal too.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"
#include "tap.h"
#include "util/util.h"

#ifndef QR_SRCDIR
#define QR_SRCDIR "."
#endif

#define CASE_SECONDS 20

static const struct {
	const char *name;
	int (*fn)(const uint8_t *, size_t);
} harnesses[] = {
	{"onnx", qr_fuzz_onnx},
	{"npy", qr_fuzz_npy},
	{"pb", qr_fuzz_pb},
	{"exec", qr_fuzz_exec},
	{"image", qr_fuzz_image},
};

static char *open_list; /* contents of regress/OPEN, or NULL */

/* The reason "<h>/<file>" is listed in OPEN, or NULL. */
static char *
open_reason(const char *h, const char *file)
{
	char key[512], *p, *eol;
	size_t n;

	if (open_list == NULL)
		return NULL;
	n = (size_t)snprintf(key, sizeof key, "%s/%s", h, file);
	for (p = open_list; *p != '\0'; p = eol + (*eol != '\0')) {
		eol = p + strcspn(p, "\n");
		if (p[0] != '#' && (size_t)(eol - p) > n &&
		    strncmp(p, key, n) == 0 && (p[n] == ' ' || p[n] == '\t'))
			return xstrndup(p + n + 1, (size_t)(eol - p - n - 1));
	}
	return NULL;
}

/* Run fn on buf in a child; 0 for a clean exit, else the wait status. */
static int
replay(int (*fn)(const uint8_t *, size_t), const char *buf, size_t len)
{
	pid_t pid;
	int ws;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(99);
	}
	if (pid == 0) {
#ifndef __SANITIZE_ADDRESS__
		/* A model asking for terabytes must be refused, not swapped
		 * in: cap the address space (ASan needs its own). */
		struct rlimit rl = {(rlim_t)8 << 30, (rlim_t)8 << 30};

		setrlimit(RLIMIT_AS, &rl);
#endif
		alarm(CASE_SECONDS);
		qr_fuzz_init();
		fn((const uint8_t *)buf, len);
		exit(0);
	}
	if (waitpid(pid, &ws, 0) != pid) {
		perror("waitpid");
		exit(99);
	}
	return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : (ws ? ws : -1);
}

static int
by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static size_t
replay_dir(const char *h, int (*fn)(const uint8_t *, size_t))
{
	char *dir = xasprintf("%s/tests/fuzz/regress/%s", QR_SRCDIR, h);
	struct dirent **ents = NULL;
	int n, i;
	size_t cases = 0;

	n = scandir(dir, &ents, NULL, by_name);
	for (i = 0; i < n; i++) {
		char *path, *buf = NULL, *why;
		size_t len;
		struct qr_diag d = {0};
		int ws;

		if (ents[i]->d_name[0] == '.') {
			free(ents[i]);
			continue;
		}
		path = qr_path_join(dir, ents[i]->d_name);
		if (qr_read_file(path, &buf, &len, &d) != QR_OK) {
			ok(0, "%s/%s: %s", h, ents[i]->d_name, d.msg);
			goto next;
		}
		cases++;
		ws = replay(fn, buf, len);
		why = open_reason(h, ents[i]->d_name);
		if (ws == 0) {
			ok(1, "%s/%s", h, ents[i]->d_name);
		} else if (why != NULL) {
			tap_n++;
			printf("not ok %d - %s/%s # TODO open: %s\n", tap_n, h,
			       ents[i]->d_name, why);
		} else {
			ok(0, "%s/%s", h, ents[i]->d_name);
			if (WIFSIGNALED(ws))
				diag("ended by signal %d (%s)%s", WTERMSIG(ws),
				     strsignal(WTERMSIG(ws)),
				     WTERMSIG(ws) == SIGALRM ?
				     ": over the time limit" : "");
			else
				diag("exit status %d", WEXITSTATUS(ws));
		}
		free(why);
next:
		qr_diag_clear(&d);
		free(buf);
		free(path);
		free(ents[i]);
	}
	free(ents);
	free(dir);
	return cases;
}

int
main(void)
{
	char *open_path = xasprintf("%s/tests/fuzz/regress/OPEN", QR_SRCDIR);
	size_t i, total = 0, len;

	plan_no_plan();
	if (qr_read_file(open_path, &open_list, &len, NULL) != QR_OK)
		open_list = NULL;
	for (i = 0; i < sizeof harnesses / sizeof harnesses[0]; i++)
		total += replay_dir(harnesses[i].name, harnesses[i].fn);
	/* An empty replay would pass whatever the code does. */
	ok(total > 0, "replayed %zu fuzz regression inputs", total);
	free(open_list);
	free(open_path);
	return done();
}
