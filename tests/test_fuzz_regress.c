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
 *
 * libFuzzer runs many inputs in one process, so a decoder that reads
 * memory it never wrote can crash on an input only after others ran.
 * Each image input is therefore also decoded on heaps left holding 0x00,
 * 0xff and 0x7f, and must give the same result every time.
 */
#include <dirent.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"
#include "run/dataset.h"
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

/*
 * Leave the heap as earlier work in the same process may: the blocks of 4
 * to 64 KiB that malloc hands out next hold `byte` (a white image's pixels
 * leave 0xff). glibc: M_PERTURB fills every block malloc hands out above
 * the tcache sizes. ASan ignores mallopt, fills only a block's first 4 KiB
 * (0xbe), and hands a freed block out again only once 256 MiB of later
 * frees have pushed it out of its quarantine: so blocks of those sizes are
 * filled and freed, then 320 MiB of large blocks after them.
 */
static void
dirty_heap(int byte)
{
	void *p[4];
	size_t sz, i;

	for (sz = 4096; sz <= 65536; sz += 1024) {
		for (i = 0; i < 4; i++) {
			p[i] = xmalloc(sz);
			memset(p[i], byte, sz);
		}
		for (i = 0; i < 4; i++)
			free(p[i]);
	}
	for (i = 0; i < 5; i++) {
		volatile char *big = xmalloc((size_t)64 << 20);

		big[0] = 0;
		free((void *)big);
	}
	mallopt(M_PERTURB, 0x100 | (byte ^ 0xff));
}

/*
 * Decode buf with qr_image_decode in a child whose heap dirty_heap(byte)
 * left dirty; the result (status, size, FNV-1a hash of the pixels, message)
 * goes into out. Returns 0 when the child ended cleanly, else its wait
 * status.
 */
static int
decode_dirty(const char *buf, size_t len, int byte, char *out, size_t n)
{
	size_t have = 0;
	ssize_t got;
	pid_t pid;
	int fd[2], ws;

	out[0] = '\0';
	if (pipe(fd) != 0) {
		perror("pipe");
		exit(99);
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(99);
	}
	if (pid == 0) {
		struct qr_diag d = {0};
		struct qr_image im;
		enum qr_status st;
		uint64_t h = 14695981039346656037u;
		size_t i, n_px;

		close(fd[0]);
		alarm(CASE_SECONDS);
		dirty_heap(byte);
		st = qr_image_decode(buf, len, "img", &im, &d);
		n_px = (size_t)im.w * (size_t)im.h * (size_t)im.channels;
		for (i = 0; i < n_px; i++)
			h = (h ^ im.px[i]) * 1099511628211u;
		dprintf(fd[1], "%s %dx%dx%d %016llx '%s'", qr_status_name(st),
			im.w, im.h, im.channels, (unsigned long long)h, d.msg);
		qr_image_free(&im);
		qr_diag_clear(&d);
		/* No exit-time leak check: after dirty_heap, LeakSanitizer
		 * reports the parent's live `dir` of replay_dir as leaked.
		 * replay() checks the same decode for leaks. */
		_exit(0);
	}
	close(fd[1]);
	while (have + 1 < n &&
	       (got = read(fd[0], out + have, n - 1 - have)) > 0)
		have += (size_t)got;
	out[have] = '\0';
	close(fd[0]);
	if (waitpid(pid, &ws, 0) != pid) {
		perror("waitpid");
		exit(99);
	}
	return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : (ws ? ws : -1);
}

/* The image input buf decodes the same on heaps left holding 0x00, 0xff
 * and 0x7f, with no crash. */
static void
check_heap_independent(const char *file, const char *buf, size_t len)
{
	static const int bytes[] = {0x00, 0xff, 0x7f};
	char res[3][512];
	int ws[3], same = 1;
	size_t i, n = sizeof bytes / sizeof bytes[0];

	for (i = 0; i < n; i++) {
		ws[i] = decode_dirty(buf, len, bytes[i], res[i], sizeof res[i]);
		same &= ws[i] == 0 && strcmp(res[i], res[0]) == 0;
	}
	ok(same, "image/%s: same result whatever the heap held before (%s)",
	   file, res[0]);
	for (i = 0; !same && i < n; i++) {
		if (ws[i] != 0 && WIFSIGNALED(ws[i]))
			diag("heap of 0x%02x: ended by signal %d (%s)", bytes[i],
			     WTERMSIG(ws[i]), strsignal(WTERMSIG(ws[i])));
		else if (ws[i] != 0)
			diag("heap of 0x%02x: exit status %d", bytes[i],
			     WEXITSTATUS(ws[i]));
		else
			diag("heap of 0x%02x: %s", bytes[i], res[i]);
	}
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
		if (fn == qr_fuzz_image)
			check_heap_independent(ents[i]->d_name, buf, len);
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
