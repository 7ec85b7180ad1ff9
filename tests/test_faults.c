/*
 * test_faults: inputs that are not plain files, or far too large, and
 * what qreport does with them through the real CLI ($QREPORT). Every case
 * runs in a child with a time limit (tests/qrchild.h): a hang is a failed
 * case, never a hung suite. Checks, per case:
 *   - a float model that fails after the candidates loaded: its error,
 *     exit 2 (its status is read after its loading thread is joined);
 *   - FIFOs as the model, its external data, --data (given, or inside an
 *     image folder), --config, --compare-to, a template and `qreport run
 *     --input`: refused with exit 2 and one error naming the path (an
 *     image folder's FIFO is skipped with a warning naming it);
 *   - /dev/zero and files over the read limit as --config or
 *     --compare-to: refused, nothing read without bound;
 *   - a 3 GB all-zero file as the model: refused from its first bytes;
 *   - graphs of 50,000 nodes: a report in bounded time, the graph view
 *     left out with the reason;
 *   - a 3 GB input under a 2 GB address space: exit 2, no abort;
 *   - a report's pages link only to files it holds;
 *   - SIGINT and SIGTERM at several points leave the old report whole and
 *     no temporary folder; what a SIGKILL leaves, the next run removes;
 *   - qreport run: bfloat16 outputs as float32, planted links replaced;
 *   - bad options and config values: one clear line, the right exit
 *     code; control characters from model names escaped on stderr;
 *   - an output folder that holds an input, or lies in one: refused.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef QR_SRCDIR
#define QR_SRCDIR "."
#endif

#define CASE_SECONDS 20

static const char *qreport; /* the binary under test */
static char *work;          /* scratch folder, removed at the end */
static char *hostile;       /* tests/data/hostile */
static char *samples;       /* samples/ */
static const char *srcdir;  /* the source tree */

#include "qrchild.h"
#include "pbwrite.h"

static char *
in_work(const char *name)
{
	return qr_path_join(work, name);
}

static char *
sample(const char *name)
{
	return qr_path_join(samples, name);
}

/* A refused case: exit 2, one error line naming each of names. */
static void
refused(const char *what, const struct result *r, const char *out,
	const char *const *names)
{
	int good = refusal_holds(r, 2, out, names);

	ok(good, "%s: refused (exit 2, one error naming it)", what);
	if (!good)
		diag_result(r);
}

static void
test_fifos(void)
{
	char *fifo = in_work("pipe.onnx"), *out = in_work("out_fifo");
	char *f = sample("digits_float.onnx"), *q = sample("digits_qdq.onnx");
	char *cfg_arg, *tdir, *ext_dir, *ext_model, *ext_bin, *src;
	char *imgs, *img_fifo, *png, *dst;
	const char *names[] = {fifo, NULL};
	struct result r = {0};
	char arg[4096];

	if (mkfifo(fifo, 0600) != 0) {
		ok(0, "mkfifo %s: %s", fifo, strerror(errno));
		return;
	}
	run_qr(&r, NULL, CASE_SECONDS, "--float", fifo, "--quant", q, "-o",
	       out, "--quiet", NULL);
	refused("FIFO as --float", &r, out, names);
	result_free(&r);
	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--quant", fifo, "-o",
	       out, "--quiet", NULL);
	refused("FIFO as --quant", &r, out, names);
	result_free(&r);
	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--quant", q, "--data",
	       fifo, "-o", out, "--quiet", NULL);
	refused("FIFO as --data", &r, out, names);
	result_free(&r);
	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--config", fifo, "-o",
	       out, "--quiet", NULL);
	refused("FIFO as --config", &r, out, names);
	result_free(&r);
	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--compare-to", fifo,
	       "-o", out, "--quiet", NULL);
	refused("FIFO as --compare-to", &r, out, names);
	result_free(&r);

	/* a templates folder whose index.html is a FIFO */
	tdir = in_work("templates_fifo");
	dst = qr_path_join(tdir, "index.html");
	snprintf(arg, sizeof arg, "cp -r '%s/templates' '%s' && "
		 "cp -r '%s/assets' '%s/assets' && rm '%s'", srcdir, tdir,
		 srcdir, tdir, dst);
	cfg_arg = NULL;
	if (system(arg) == 0 && mkfifo(dst, 0600) == 0) {
		const char *tnames[] = {dst, NULL};

		run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--templates",
		       tdir, "-o", out, "--quiet", NULL);
		refused("FIFO as a template", &r, out, tnames);
		result_free(&r);
	}
	free(dst);
	free(tdir);

	/* external data that is a FIFO beside the model */
	ext_dir = in_work("ext_fifo");
	(void)qr_mkdirs(ext_dir, NULL);
	ext_model = qr_path_join(ext_dir, "model.onnx");
	ext_bin = qr_path_join(ext_dir, "link.bin");
	src = qr_path_join(hostile, "ext_symlink.onnx");
	snprintf(arg, sizeof arg, "cp '%s' '%s'", src, ext_model);
	if (system(arg) == 0 && mkfifo(ext_bin, 0600) == 0) {
		const char *enames[] = {"model.onnx", "link.bin", NULL};

		run_qr(&r, NULL, CASE_SECONDS, "--float", ext_model, "-o", out,
		       "--quiet", NULL);
		refused("FIFO as external data", &r, out, enames);
		result_free(&r);
	} else {
		ok(0, "FIFO as external data: fixture");
	}

	/* an image folder with a FIFO among real images: no hang, the FIFO
	 * is named */
	imgs = in_work("imgs_fifo");
	img_fifo = qr_path_join(imgs, "0/zz_pipe.png");
	png = qr_path_join(samples, "digits/0");
	snprintf(arg, sizeof arg, "mkdir -p '%s' && cp -r '%s' '%s/'", imgs,
		 png, imgs);
	if (system(arg) == 0 && mkfifo(img_fifo, 0600) == 0) {
		run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--quant", q,
		       "--data", imgs, "--scale", "0.00392156862745098",
		       "-o", out, "--quiet", NULL);
		ok(exited_with(&r, 0), "FIFO inside an image folder: passed "
		   "over, the report written");
		if (!exited_with(&r, 0))
			diag_result(&r);
		result_free(&r);
		(void)qr_remove_tree(out);
	}

	/* qreport run --input from a FIFO */
	{
		char *rout = in_work("run_fifo"), *npy = in_work("pipe.npy");
		const char *rnames[] = {npy, NULL};

		if (mkfifo(npy, 0600) != 0)
			ok(0, "mkfifo %s", npy);
		snprintf(arg, sizeof arg, "input=%s", npy);
		run_qr(&r, NULL, CASE_SECONDS, "run", f, "--input", arg,
		       "-o", rout, NULL);
		ok(exited_with(&r, 2) && strstr(r.err, npy) != NULL,
		   "FIFO as qreport run --input: refused (exit 2, named)");
		if (!exited_with(&r, 2) || strstr(r.err, rnames[0]) == NULL)
			diag_result(&r);
		result_free(&r);
		free(rout);
		free(npy);
	}
	free(cfg_arg);
	free(imgs);
	free(img_fifo);
	free(png);
	free(ext_dir);
	free(ext_model);
	free(ext_bin);
	free(src);
	free(fifo);
	free(out);
	free(f);
	free(q);
}

/* Files with no end, or too large to read whole. */
static void
test_unbounded(void)
{
	char *f = sample("digits_float.onnx"), *out = in_work("out_big");
	char *big = in_work("big.json"), *zero = in_work("zero3g.onnx");
	const char *dz[] = {"/dev/zero", NULL};
	const char *bn[] = {big, NULL};
	const char *zn[] = {zero, "not an ONNX model", NULL};
	struct result r = {0};
	FILE *fp;

	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--config", "/dev/zero",
	       "-o", out, "--quiet", NULL);
	refused("/dev/zero as --config", &r, out, dz);
	result_free(&r);
	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--compare-to",
	       "/dev/zero", "-o", out, "--quiet", NULL);
	refused("/dev/zero as --compare-to", &r, out, dz);
	result_free(&r);

	/* sparse: no disk used */
	fp = fopen(big, "w");
	if (fp != NULL && fputs("{\"samples\": 1}", fp) >= 0 &&
	    fclose(fp) == 0 && truncate(big, (off_t)300 << 20) == 0) {
		run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--config", big,
		       "-o", out, "--quiet", NULL);
		refused("a 300 MB --config", &r, out, bn);
		result_free(&r);
	} else {
		ok(0, "a 300 MB --config: fixture");
	}
	fp = fopen(zero, "w");
	if (fp != NULL && fclose(fp) == 0 &&
	    truncate(zero, (off_t)3 << 30) == 0) {
		run_qr(&r, NULL, CASE_SECONDS, "--float", zero, "-o", out,
		       "--quiet", NULL);
		refused("a 3 GB all-zero file as --float", &r, out, zn);
		ok(strstr(r.err, "field number 0") != NULL,
		   "... refused from its first bytes");
		result_free(&r);
	} else {
		ok(0, "a 3 GB all-zero --float: fixture");
	}
	unlink(zero);
	unlink(big);
	free(f);
	free(out);
	free(big);
	free(zero);
}

/*
 * A model of n Relu nodes on x [1,4]: a chain (each reads the one before)
 * when wide is 0, else a fan (each reads x) whose outputs a Sum adds up.
 * Written to path; 0 when it could not be.
 */
static int
write_big_graph(const char *path, size_t n, int wide)
{
	struct qr_buf g = {0}, node = {0}, model = {0}, sum = {0};
	const int64_t dims[2] = {1, 4};
	char in[32], out[32];
	size_t i;
	int good;

	for (i = 0; i < n; i++) {
		snprintf(in, sizeof in, i == 0 || wide ? "x" : "t%zu", i - 1);
		snprintf(out, sizeof out, "t%zu", i);
		node.len = 0;
		pb_str(&node, 1, in);
		pb_str(&node, 2, out);
		pb_str(&node, 4, "Relu");
		pb_bytes(&g, 1, node.data, node.len);
		if (wide)
			pb_str(&sum, 1, out);
	}
	snprintf(out, sizeof out, "t%zu", n - 1);
	if (wide) {
		pb_str(&sum, 2, "y");
		pb_str(&sum, 4, "Sum");
		pb_bytes(&g, 1, sum.data, sum.len);
	}
	pb_str(&g, 2, wide ? "fan" : "chain");
	pb_value_info(&g, 11, "x", dims, 2);
	pb_value_info(&g, 12, wide ? "y" : out, dims, 2);
	pb_model(&model, &g);
	good = qr_write_file(path, model.data, model.len, NULL) == QR_OK;
	qr_buf_free(&g);
	qr_buf_free(&node);
	qr_buf_free(&sum);
	qr_buf_free(&model);
	return good;
}

/* Graphs far larger than a layout can take: the report in bounded time,
 * the graph view left out with the reason. */
static void
test_big_graphs(void)
{
	static const struct { size_t n; int wide; } cases[] = {
#ifdef __SANITIZE_ADDRESS__
		/* instrumented, a layer page each costs ten times more:
		 * still far above what the graph view lays out */
		{6000, 0}, {4000, 1},
#else
		{50000, 0}, {25000, 1},
#endif
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *m = in_work("big_graph.onnx"), *out = in_work("out_graph");
		char *idx = qr_path_join(out, "index.html");
		char *gpage = qr_path_join(out, "graph.html"), *html;
		struct result r = {0};
		int good;

		if (!write_big_graph(m, cases[i].n, cases[i].wide)) {
			ok(0, "big graph: fixture");
			continue;
		}
		run_qr(&r, NULL, 120, "--float", m, "-o", out, "--quiet",
		       NULL);
		html = slurp(gpage);
		good = exited_with(&r, 0) && exists(idx) &&
		       strstr(html, "layers table lists them all") != NULL;
		free(html);
		free(gpage);
		ok(good, "a %zu-node %s: report written, the graph view left "
		   "out with the reason", cases[i].n,
		   cases[i].wide ? "fan" : "chain");
		if (!good)
			diag_result(&r);
		result_free(&r);
		(void)qr_remove_tree(out);
		unlink(m);
		free(idx);
		free(m);
		free(out);
	}
}

/* A model whose input alone is 3 GB, under a 2 GB address space: a clear
 * error and exit 2, never an abort, and no folder left behind. */
static void
test_oom(void)
{
	struct qr_buf g = {0}, node = {0}, model = {0};
	const int64_t dims[4] = {1, 3, 16000, 16000};
	char *m = in_work("big_input.onnx"), *out = in_work("out_oom");
	const char *names[] = {"memory", NULL};
	const char *mnames[] = {"1024 MiB", "--max-memory", NULL};
	struct result r = {0};

	pb_str(&node, 1, "x");
	pb_str(&node, 2, "y");
	pb_str(&node, 4, "Relu");
	pb_bytes(&g, 1, node.data, node.len);
	pb_str(&g, 2, "big_input");
	pb_value_info(&g, 11, "x", dims, 4);
	pb_value_info(&g, 12, "y", dims, 4);
	pb_model(&model, &g);
	if (qr_write_file(m, model.data, model.len, NULL) != QR_OK) {
		ok(0, "out of memory: fixture");
	} else {
		child_mem_limit = (size_t)2 << 30;
		run_qr(&r, NULL, 60, "--float", m, "--quant", m, "--samples",
		       "1", "-o", out, "--quiet", NULL);
		child_mem_limit = (size_t)8 << 30;
#ifdef __SANITIZE_ADDRESS__
		ok(1, "out of memory # SKIP ASan builds run unlimited");
#else
		refused("a 3 GB input under a 2 GB address space", &r, out,
			names);
#endif
		result_free(&r);
		run_qr(&r, NULL, 60, "--float", m, "--quant", m, "--samples",
		       "1", "--max-memory", "1G", "-o", out, "--quiet", NULL);
		refused("a 3 GB input with --max-memory 1G", &r, out, mnames);
		result_free(&r);
	}
	unlink(m);
	qr_buf_free(&g);
	qr_buf_free(&node);
	qr_buf_free(&model);
	free(m);
	free(out);
}

/* Every relative link of every page of a report points at a file the
 * report holds: pages that exist only with --compare-to are not linked
 * from a report made without it. */
static int
links_resolve(const char *out, const char *page, int layer_page)
{
	char *path = qr_path_join(out, page), *html = slurp(path);
	const char *p = html;
	int good = 1;

	while ((p = strstr(p, "href=\"")) != NULL) {
		const char *s = p + 6, *e = strchr(s, '"');
		char target[1024], *file;
		size_t n;

		if (e == NULL)
			break;
		p = e;
		n = strcspn(s, "#\"");
		if (n == 0 || (size_t)(e - s) >= sizeof target ||
		    strncmp(s, "http", 4) == 0 || strncmp(s, "data:", 5) == 0 ||
		    strncmp(s, "mailto:", 7) == 0)
			continue;
		/* layer pages have <base href="../">: links from the top */
		if (layer_page && strncmp(s, "../", 3) == 0 && n == 3)
			continue;
		memcpy(target, s, n);
		target[n] = '\0';
		file = qr_path_join(out, target);
		if (!exists(file)) {
			diag("%s links to %s, which the report does not hold",
			     page, target);
			good = 0;
		}
		free(file);
	}
	free(html);
	free(path);
	return good;
}

static void
test_links(void)
{
	char *f = sample("digits_float.onnx"), *q = sample("digits_qdq.onnx");
	char *out = in_work("out_links"), *layers = qr_path_join(out, "layers");
	struct result r = {0};
	struct dirent *de;
	int good, pages = 0;
	DIR *dp;

	run_qr(&r, NULL, 60, "--float", f, "--quant", q, "--samples", "2",
	       "-o", out, "--quiet", NULL);
	good = exited_with(&r, 0);
	if (!good)
		diag_result(&r);
	result_free(&r);
	dp = opendir(out);
	while (good && dp != NULL && (de = readdir(dp)) != NULL) {
		size_t n = strlen(de->d_name);

		if (n > 5 && strcmp(de->d_name + n - 5, ".html") == 0) {
			good &= links_resolve(out, de->d_name, 0);
			pages++;
		}
	}
	if (dp != NULL)
		closedir(dp);
	dp = opendir(layers);
	while (good && dp != NULL && (de = readdir(dp)) != NULL) {
		char rel[512];
		size_t n = strlen(de->d_name);

		if (n > 5 && strcmp(de->d_name + n - 5, ".html") == 0) {
			snprintf(rel, sizeof rel, "layers/%s", de->d_name);
			good &= links_resolve(out, rel, 1);
			pages++;
		}
	}
	if (dp != NULL)
		closedir(dp);
	ok(good && pages > 5, "a report without --compare-to links only to "
	   "pages it holds (%d pages)", pages);
	(void)qr_remove_tree(out);
	free(layers);
	free(out);
	free(f);
	free(q);
}

/*
 * The float model fails late (its last initializer's external data is
 * missing, after 256 MB of inline weights) while a small candidate loads
 * at once on the main thread: the float model's error must be the one
 * reported, read after its loading thread ended (it once was read before,
 * and the data run then used a model that never loaded).
 */
static void
test_late_failure(void)
{
	struct qr_buf g = {0}, node = {0}, model = {0}, t = {0}, e = {0};
	const int64_t dims[1] = {2};
	size_t big = (size_t)256 << 20;
	char *m = in_work("late.onnx"), *out = in_work("out_late");
	char *q = sample("digits_qdq.onnx"), *raw = xcalloc(big, 1);
	const char *names[] = {"late.onnx", "missing.bin", NULL};
	struct result r = {0};

	pb_str(&node, 1, "x");
	pb_str(&node, 1, "w");
	pb_str(&node, 2, "y");
	pb_str(&node, 4, "Add");
	pb_bytes(&g, 1, node.data, node.len);
	pb_str(&g, 2, "late");
	pb_uint(&t, 1, big / 4);                    /* dims */
	pb_uint(&t, 2, 1);                          /* float */
	pb_str(&t, 8, "big");
	pb_bytes(&t, 9, raw, big);                  /* raw_data */
	pb_bytes(&g, 5, t.data, t.len);             /* initializer */
	t.len = 0;
	pb_uint(&t, 1, 2);
	pb_uint(&t, 2, 1);
	pb_str(&t, 8, "w");
	pb_str(&e, 1, "location");
	pb_str(&e, 2, "missing.bin");
	pb_bytes(&t, 13, e.data, e.len);            /* external_data */
	pb_uint(&t, 14, 1);                         /* EXTERNAL */
	pb_bytes(&g, 5, t.data, t.len);
	pb_value_info(&g, 11, "x", dims, 1);
	pb_value_info(&g, 12, "y", dims, 1);
	pb_model(&model, &g);
	free(raw);
	qr_buf_free(&g);
	if (qr_write_file(m, model.data, model.len, NULL) != QR_OK) {
		ok(0, "late failure: fixture");
	} else {
		qr_buf_free(&model);
		run_qr(&r, NULL, 60, "--float", m, "--quant", q, "-o", out,
		       "--quiet", NULL);
		refused("a float model failing after the candidates loaded",
			&r, out, names);
		result_free(&r);
	}
	unlink(m);
	qr_buf_free(&node);
	qr_buf_free(&model);
	qr_buf_free(&t);
	qr_buf_free(&e);
	free(m);
	free(out);
	free(q);
}

/* Start qreport on argv (qreport's arguments, NULL-ended) with output
 * dropped, send sig after ms milliseconds (0: none), and wait: the wait
 * status. */
static int
run_and_signal(char *const argv[], int sig, int ms)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		alarm(60);
		execv(qreport, argv);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	if (ms > 0) {
		struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

		nanosleep(&ts, NULL);
		kill(pid, sig);
	}
	waitpid(pid, &status, 0);
	return status;
}

/* The report folder holds a whole report: index.html and a report.json
 * that parses as an object. */
static int
whole_report(const char *out)
{
	char *json = qr_path_join(out, "report.json");
	char *idx = qr_path_join(out, "index.html"), *text = slurp(json);
	int good = exists(idx) && text[0] == '{' &&
		   strstr(text, "\"schema_version\"") != NULL;

	free(text);
	free(json);
	free(idx);
	return good;
}

/*
 * Interrupted runs: SIGINT and SIGTERM at several points of a run that
 * replaces an existing report leave that report whole (or the new one,
 * when the run had finished) and no folder of their own beside it. A
 * SIGKILL cannot clean up: the next run removes what it left.
 */
static void
test_interrupt(void)
{
	static const int delays[] = {20, 150, 500, 850};
	char *f = sample("digits_float.onnx"), *q = sample("digits_qdq.onnx");
	char *q2 = sample("digits_qop.onnx"), *out = in_work("out_int");
	/* about a second: the signals land in loading, the data run and
	 * the report's writing */
	char *argv[] = {(char *)qreport, "--float", f, "--quant", q, "--quant",
			q2, "--samples", "1500", "-o", out, "--quiet", NULL};
	int st, sig, k, all = 1;

	st = run_and_signal(argv, 0, 0);
	if (!ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && whole_report(out),
		"interrupts: the first report"))
		goto out;
	for (sig = 0; sig < 2; sig++)
		for (k = 0; k < (int)(sizeof delays / sizeof delays[0]); k++) {
			int s = sig ? SIGTERM : SIGINT;

			st = run_and_signal(argv, s, delays[k]);
			if (!(WIFSIGNALED(st) && WTERMSIG(st) == s) &&
			    !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
				diag("signal %d after %d ms: wait status %#x",
				     s, delays[k], st);
				all = 0;
			}
			if (!whole_report(out) || !no_leftovers(out)) {
				diag("signal %d after %d ms: report or "
				     "leftovers", s, delays[k]);
				all = 0;
			}
		}
	ok(all, "SIGINT and SIGTERM at 4 points each: the report stays "
	   "whole, no temporary folder left");
	st = run_and_signal(argv, SIGKILL, 600);
	ok((WIFSIGNALED(st) || WIFEXITED(st)) && whole_report(out),
	   "SIGKILL: the old report stays whole");
	st = run_and_signal(argv, 0, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && whole_report(out) &&
	   no_leftovers(out), "the next run removes what the killed run "
	   "left");
out:
	(void)qr_remove_tree(out);
	free(f);
	free(q);
	free(q2);
	free(out);
}

/* x.npy: float32 [2] = {1.5, -2.25}, written by hand. */
static int
write_x_npy(const char *path)
{
	static const char head[] = "{'descr': '<f4', 'fortran_order': False, "
				   "'shape': (2,), }";
	struct qr_buf b = {0};
	const float v[2] = {1.5f, -2.25f};
	size_t hlen = sizeof head - 1;
	int good;

	while ((10 + hlen + 1) % 64 != 0)
		hlen++;
	qr_buf_append(&b, "\x93NUMPY\x01\x00", 8);
	qr_buf_putc(&b, (char)((hlen + 1) & 0xff));
	qr_buf_putc(&b, (char)((hlen + 1) >> 8));
	qr_buf_puts(&b, head);
	while (b.len < 10 + hlen)
		qr_buf_putc(&b, ' ');
	qr_buf_putc(&b, '\n');
	qr_buf_append(&b, v, sizeof v);
	good = qr_write_file(path, b.data, b.len, NULL) == QR_OK;
	qr_buf_free(&b);
	return good;
}

/*
 * qreport run: a bfloat16 output is written as float32 with a warning; a
 * symlink planted where an output goes is replaced, its target untouched.
 */
static void
test_run_outputs(void)
{
	struct qr_buf g = {0}, node = {0}, attr = {0}, model = {0};
	const int64_t dims[1] = {2};
	char *m = in_work("bf16.onnx"), *x = in_work("x.npy");
	char *dir = in_work("run_out"), *y = qr_path_join(dir, "y.npy");
	char *victim = in_work("victim.txt"), *text, arg[1024];
	struct result r = {0};
	struct stat sb;

	pb_str(&attr, 1, "to");
	pb_uint(&attr, 3, 16);                  /* i: BFLOAT16 */
	pb_uint(&attr, 20, 2);                  /* type: INT */
	pb_str(&node, 1, "x");
	pb_str(&node, 2, "y");
	pb_str(&node, 4, "Cast");
	pb_bytes(&node, 5, attr.data, attr.len);
	pb_bytes(&g, 1, node.data, node.len);
	pb_str(&g, 2, "bf16");
	pb_value_info(&g, 11, "x", dims, 1);
	node.len = 0;
	pb_value_info_t(&g, 12, "y", 16, dims, 1); /* bfloat16 */
	pb_model(&model, &g);
	if (qr_write_file(m, model.data, model.len, NULL) != QR_OK ||
	    !write_x_npy(x) || qr_mkdirs(dir, NULL) != QR_OK ||
	    qr_write_file(victim, "victim\n", 7, NULL) != QR_OK ||
	    symlink(victim, y) != 0) {
		ok(0, "qreport run outputs: fixture");
		goto out;
	}
	snprintf(arg, sizeof arg, "x=%s", x);
	run_qr(&r, NULL, CASE_SECONDS, "run", m, "--input", arg, "-o", dir,
	       NULL);
	text = slurp(y);
	/* the header follows the magic and a 0 byte: from byte 10 */
	ok(exited_with(&r, 0) && strstr(r.err, "bfloat16") != NULL &&
	   strlen(text) == 7 && strstr(text + 10, "'descr': '<f4'") != NULL,
	   "qreport run: a bfloat16 output is written as float32, said so");
	if (!exited_with(&r, 0) || strstr(r.err, "bfloat16") == NULL)
		diag_result(&r);
	free(text);
	text = slurp(victim);
	ok(strcmp(text, "victim\n") == 0 && lstat(y, &sb) == 0 &&
	   S_ISREG(sb.st_mode), "qreport run -o: a symlink planted at an "
	   "output is replaced, its target untouched");
	free(text);
	result_free(&r);
out:
	qr_buf_free(&g);
	qr_buf_free(&node);
	qr_buf_free(&attr);
	qr_buf_free(&model);
	free(m);
	free(x);
	free(dir);
	free(y);
	free(victim);
}

/* Messages of bad options and config files: one clear line, the right
 * exit code, no prefix said twice; control characters from a model's
 * names never reach the terminal raw. */
static void
test_messages(void)
{
	char *f = sample("digits_float.onnx"), *out = in_work("out_msg");
	char *c1 = in_work("c1.json"), *c2 = in_work("c2.json");
	char *m = in_work("esc.onnx"), *p;
	struct qr_buf g = {0}, node = {0}, model = {0};
	const int64_t dims[1] = {2};
	const char *dot[] = {"'.'", NULL};
	struct result r = {0};

	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--config", ".", "-o",
	       out, "--quiet", NULL);
	refused("--config .: refused, naming it", &r, out, dot);
	result_free(&r);

	qr_write_file(c1, "{\"fail_if\": [3]}", 16, NULL);
	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--config", c1, "-o",
	       out, "--quiet", NULL);
	p = strstr(r.err, "config '");
	ok(exited_with(&r, 1) && p != NULL && strstr(p + 1, "config '") ==
	   NULL && strstr(r.err, "\"fail_if\" must hold strings") != NULL,
	   "a bad fail_if in a config: its prefix once, the message whole");
	if (!exited_with(&r, 1))
		diag_result(&r);
	result_free(&r);

	qr_write_file(c2, "{\"samples\": 20.5}", 17, NULL);
	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "--config", c2, "-o",
	       out, "--quiet", NULL);
	ok(exited_with(&r, 1) && strstr(r.err, "whole number") != NULL,
	   "samples: 20.5 in a config is refused, not truncated");
	result_free(&r);

	run_qr(&r, NULL, CASE_SECONDS, "--float", f, "-o", "", NULL);
	ok(exited_with(&r, 1) && error_lines(r.err) == 1,
	   "-o '': a usage error (exit 1)");
	result_free(&r);

	/* a node named with ESC and BEL, of an op qreport does not run */
	pb_str(&node, 1, "x");
	pb_str(&node, 2, "y");
	pb_str(&node, 3, "evil\033[31m\007");
	pb_str(&node, 4, "NoSuchOp");
	pb_bytes(&g, 1, node.data, node.len);
	pb_str(&g, 2, "esc");
	pb_value_info(&g, 11, "x", dims, 1);
	pb_value_info(&g, 12, "y", dims, 1);
	pb_model(&model, &g);
	if (qr_write_file(m, model.data, model.len, NULL) == QR_OK) {
		run_qr(&r, NULL, CASE_SECONDS, "--float", m, "--quant", m,
		       "-o", out, NULL);
		ok(strchr(r.err, '\033') == NULL && strchr(r.err, '\007') ==
		   NULL && strstr(r.err, "evil\\x1b[31m\\x07") != NULL,
		   "ESC and BEL from a node's name reach stderr escaped");
		if (strstr(r.err, "evil") == NULL)
			diag_result(&r);
		result_free(&r);
	} else {
		ok(0, "control characters: fixture");
	}
	(void)qr_remove_tree(out);
	qr_buf_free(&g);
	qr_buf_free(&node);
	qr_buf_free(&model);
	free(f);
	free(out);
	free(c1);
	free(c2);
	free(m);
}

/* An output folder that holds an input, or lies inside one, is refused
 * and the input is left as it was: replacing an earlier report that keeps
 * the run's own model would delete it. */
static void
test_out_holds_input(void)
{
	char *f = sample("digits_float.onnx"), *q = sample("digits_qdq.onnx");
	char *rep = in_work("rep_inputs"), *kept = qr_path_join(rep, "f.onnx");
	char *inner = qr_path_join(rep, "sub"), *before, *after, arg[2048];
	const char *names[] = {"f.onnx", NULL};
	struct result r = {0};

	run_qr(&r, NULL, 60, "--float", f, "-o", rep, "--quiet", NULL);
	result_free(&r);
	snprintf(arg, sizeof arg, "cp '%s' '%s'", f, kept);
	if (system(arg) != 0) {
		ok(0, "output holds input: fixture");
		goto out;
	}
	before = slurp(kept);
	run_qr(&r, NULL, 60, "--float", kept, "--quant", q, "-o", rep,
	       "--quiet", NULL);
	after = slurp(kept);
	ok(exited_with(&r, 2) && error_lines(r.err) == 1 &&
	   strstr(r.err, "f.onnx") != NULL && exists(kept) &&
	   strlen(before) > 0 && memcmp(before, after, 8) == 0,
	   "-o an earlier report holding the run's model: refused, the "
	   "model kept");
	if (!exited_with(&r, 2))
		diag_result(&r);
	result_free(&r);
	free(before);
	free(after);
	run_qr(&r, NULL, 60, "--float", f, "--data", rep, "-o", inner,
	       "--quiet", NULL);
	refused("-o inside the --data folder", &r, inner, names + 1);
	result_free(&r);
out:
	(void)qr_remove_tree(rep);
	free(f);
	free(q);
	free(rep);
	free(kept);
	free(inner);
}

int
main(void)
{
	char tmpl[] = "/tmp/qr-faults-XXXXXX";

	plan_no_plan();
	qreport = getenv("QREPORT");
	if (qreport == NULL || access(qreport, X_OK) != 0)
		skip_all("QREPORT is not set to the qreport binary");
	srcdir = getenv("top_srcdir");
	if (srcdir == NULL)
		srcdir = QR_SRCDIR;
	if (mkdtemp(tmpl) == NULL) {
		perror("mkdtemp");
		return 99;
	}
	work = xstrdup(tmpl);
	hostile = qr_path_join(srcdir, "tests/data/hostile");
	samples = qr_path_join(srcdir, "samples");
	RUN(test_late_failure);
	RUN(test_fifos);
	RUN(test_unbounded);
	RUN(test_big_graphs);
	RUN(test_oom);
	RUN(test_links);
	RUN(test_interrupt);
	RUN(test_run_outputs);
	RUN(test_messages);
	RUN(test_out_holds_input);
	(void)qr_remove_tree(work);
	free(work);
	free(hostile);
	free(samples);
	return done();
}
