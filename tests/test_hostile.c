/*
 * test_hostile: broken and malicious input through the real CLI
 * ($QREPORT). Every case runs qreport in a child with a time limit
 * (SIGALRM) and, outside ASan builds, a bounded address space, and
 * checks:
 *   - refused input: exit 2 (bad input), exactly one stderr error line
 *     (warnings aside) naming the file, tensor or node, no
 *     report folder and no "<out>.tmp-*"/"<out>.old-*" left beside it;
 *   - accepted input: exit 0, a report whose HTML shows hostile strings
 *     escaped (and, with Chromium, runs none of them), whose report.json
 *     parses (no NaN/Infinity tokens) and keeps the strings, and whose
 *     summary.md holds no raw markup (a backslash-escaped '<' is inert);
 *   - output folders: a file, a folder that cannot be created, a user's
 *     folder, a symlink, "." are refused; an old report is replaced and a
 *     failed run leaves it intact; nothing outside the target is deleted.
 * Fixtures: tests/data/hostile (tests/data/make_hostile_fixtures.py); the
 * 100 kB strings and bad inputs for `qreport run` are made here.
 *
 * Known open bugs are listed in open_bugs[] and reported as TODO: they
 * stay visible without failing the suite, and a case that starts passing
 * shows up as an unexpected pass, so the entry gets removed.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
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


#ifndef QR_SRCDIR
#define QR_SRCDIR "."
#endif

#define CASE_SECONDS 20

static const char *qreport;  /* the binary under test */
static char *work;           /* scratch folder, removed at the end */
static char *hostile;        /* tests/data/hostile */
static char *samples;        /* samples/ */
static char *good;           /* a small model that makes a report */

#include "qrchild.h"
#include "pbwrite.h"

/* Cases that fail today: name -> reason (file:line of the bug). Empty
 * now: the chart abort on invalid UTF-8 labels (src/chart/chart.c) that
 * "bad_utf8 report" found was fixed in d0b072f. */
static const struct {
	const char *name;
	const char *why;
} open_bugs[] = {
	{NULL, NULL},
};

static const char *
open_bug(const char *name)
{
	size_t i;

	for (i = 0; open_bugs[i].name != NULL; i++)
		if (strcmp(open_bugs[i].name, name) == 0)
			return open_bugs[i].why;
	return NULL;
}

/* ok() for a whole case: one TAP line, TODO when the case is a known
 * open bug. */
static int
case_ok(int cond, const char *name)
{
	const char *why = open_bug(name);

	if (why == NULL)
		return ok(cond, "%s", name);
	tap_n++;
	printf("%sok %d - %s # TODO %s\n", cond ? "" : "not ", tap_n, name,
	       why);
	return cond;
}

/* ---- running qreport: tests/qrchild.h ---- */

/* refusal_holds as one TAP case (TODO when a known open bug). */
static int
refused(const char *name, const struct result *r, int code, const char *out,
	const char *const *names)
{
	int good = refusal_holds(r, code, out, names);

	if (!case_ok(good, name))
		diag_result(r);
	return good;
}

static char *
case_dir(const char *name)
{
	char *dir = qr_path_join(work, name);

	if (qr_mkdirs(dir, NULL) != QR_OK) {
		perror(dir);
		exit(99);
	}
	return dir;
}

static char *
fixture(const char *file)
{
	return qr_path_join(hostile, file);
}

/* ---- refused models ---- */

struct bad_model {
	const char *file;     /* in tests/data/hostile */
	const char *names[3]; /* what the message must name besides the file */
};

static void
test_bad_models(void)
{
	static const struct bad_model cases[] = {
		/* Truncated and corrupt files. */
		{"truncated.onnx", {NULL}},
		{"wrong_magic.onnx", {NULL}},
		{"png_magic.onnx", {NULL}},
		{"empty.onnx", {NULL}},
		{"huge_length.onnx", {NULL}},
		{"huge_length2.onnx", {NULL}},
		/* Bad shapes. */
		{"dims_overflow.onnx", {"w_overflow", NULL}},
		{"dims_overflow2.onnx", {"w_overflow2", NULL}},
		{"neg_dims.onnx", {"w_neg", NULL}},
		{"claim_1e9.onnx", {"w_1e9", NULL}},
		{"claim_1e9_nodata.onnx", {"w_1e9_empty", NULL}},
		{"raw_len.onnx", {"w_rawlen", NULL}},
		/* Bad graphs. */
		{"cycle.onnx", {"loop_", NULL}},
		{"self_loop.onnx", {"ouroboros", NULL}},
		{"undefined_input.onnx", {"haunted", "ghost", NULL}},
		{"dup_output.onnx", {"second", "'t'", NULL}},
		/* External data. */
		{"ext_dotdot.onnx", {"w_dotdot", NULL}},
		{"ext_abs.onnx", {"w_abs", NULL}},
		{"ext_past_end.onnx", {"w_far", NULL}},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct bad_model *c = &cases[i];
		char *dir = case_dir(c->file), *model = fixture(c->file);
		char *out = qr_path_join(dir, "out");
		char *name = xasprintf("%s: refused", c->file);
		const char *names[4] = {c->file, c->names[0], c->names[1],
					NULL};
		struct result r;

		run_qr(&r, NULL, CASE_SECONDS, "--float", model, "-o", out,
		       NULL);
		refused(name, &r, 2, out, names);
		result_free(&r);
		/* The same file as a candidate, after a good float model. */
		free(name);
		name = xasprintf("%s: refused as --quant", c->file);
		run_qr(&r, NULL, CASE_SECONDS, "--float", good, "--quant",
		       model, "-o", out, NULL);
		refused(name, &r, 2, out, names);
		result_free(&r);
		free(name);
		free(out);
		free(model);
		free(dir);
	}
}

/* External data through a symlink that leaves the model's folder. */
static void
test_ext_symlink(void)
{
	char *dir = case_dir("ext_symlink"), *model = fixture("ext_symlink.onnx");
	char *copy = qr_path_join(dir, "ext_symlink.onnx");
	char *link = qr_path_join(dir, "link.bin");
	char *target = fixture("ext_small.bin"); /* outside dir */
	char *out = qr_path_join(dir, "out"), *buf = NULL;
	const char *names[] = {"ext_symlink.onnx", "w_link", NULL};
	struct result r;
	size_t len;

	if (qr_read_file(model, &buf, &len, NULL) != QR_OK ||
	    qr_write_file(copy, buf, len, NULL) != QR_OK ||
	    symlink(target, link) != 0) {
		ok(0, "ext_symlink: set up");
		goto out;
	}
	run_qr(&r, NULL, CASE_SECONDS, "--float", copy, "-o", out, NULL);
	refused("ext_symlink.onnx: symlink out of the folder refused", &r, 2,
		out, names);
	result_free(&r);
out:
	free(buf);
	free(target);
	free(link);
	free(copy);
	free(model);
	free(out);
	free(dir);
}

/*
 * Models that qreport may accept (valid ONNX it can describe) or refuse
 * (it cannot run them): either way no signal, and a refusal is one line
 * naming the node or tensor. Run with themselves as the candidate, so the
 * executor runs them too.
 */
static void
test_accept_or_refuse(void)
{
	static const struct {
		const char *file;
		const char *names[2];
	} cases[] = {
		{"wide_sum.onnx", {"wide_sum", NULL}},      /* 10,000 inputs */
		{"wide_relu.onnx", {"wide_relu", NULL}},    /* 10,000 inputs */
		{"dup_graph_output.onnx", {"'y'", NULL}},
		{"input_1e18.onnx", {"x", NULL}},           /* huge input */
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *dir = case_dir(cases[i].file);
		char *model = fixture(cases[i].file);
		char *out = qr_path_join(dir, "out");
		char *name;
		struct result r;

		run_qr(&r, NULL, CASE_SECONDS, "--float", model, "--quant",
		       model, "-o", out, NULL);
		if (exited_with(&r, 0)) {
			char *index = qr_path_join(out, "index.html");

			name = xasprintf("%s: accepted, report written",
					 cases[i].file);
			if (!case_ok(exists(index) && no_leftovers(out), name))
				diag_result(&r);
			free(index);
		} else {
			const char *names[] = {cases[i].names[0], NULL};

			name = xasprintf("%s: refused with one line",
					 cases[i].file);
			refused(name, &r, 2, out, names);
		}
		free(name);
		result_free(&r);
		free(out);
		free(model);
		free(dir);
	}
}

static int
write_bytes(const char *path, const void *p, size_t n)
{
	return qr_write_file(path, p, n, NULL) == QR_OK;
}

/* `qreport run`: bad models and bad input files. */
static void
test_run_cmd(void)
{
	char *dir = case_dir("run"), *out = qr_path_join(dir, "out");
	char *npy = qr_path_join(dir, "huge.npy"), *pb = qr_path_join(dir, "t.pb");
	char *trunc = qr_path_join(dir, "trunc.npy"), *arg;
	static const char hdr[] = "{'descr': '<f4', 'fortran_order': False, "
				  "'shape': (1000000000,), }";
	struct qr_buf b = {0};
	const char *none[] = {NULL};
	struct result r;
	size_t i;
	static const struct {
		const char *file;
		const char *names[2];
	} models[] = {
		{"truncated.onnx", {"truncated.onnx", NULL}},
		{"cycle.onnx", {"loop_", NULL}},
		{"wide_relu.onnx", {"wide_relu", NULL}},
		{"if_unsupported.onnx", {"branchy", NULL}},
		{"if_bad_cond.onnx", {"two_conds", NULL}},
		{"loop_forever.onnx", {"forever", NULL}},
		{"ext_dotdot.onnx", {"w_dotdot", NULL}},
		{"claim_1e9.onnx", {"w_1e9", NULL}},
	};

	for (i = 0; i < sizeof models / sizeof models[0]; i++) {
		char *model = fixture(models[i].file);
		char *name = xasprintf("run %s: refused", models[i].file);

		run_qr(&r, NULL, CASE_SECONDS, "run", model, "-o", out, NULL);
		refused(name, &r, 2, out, models[i].names);
		result_free(&r);
		free(name);
		free(model);
	}
	/* A .npy claiming 1e9 floats with 100 bytes of data. */
	qr_buf_append(&b, "\x93NUMPY\x01\x00", 8);
	qr_buf_putc(&b, (char)((sizeof hdr - 1 + 1) & 0xff));
	qr_buf_putc(&b, (char)((sizeof hdr - 1 + 1) >> 8));
	qr_buf_puts(&b, hdr);
	qr_buf_putc(&b, '\n');
	for (i = 0; i < 100; i++)
		qr_buf_putc(&b, 0);
	write_bytes(npy, b.data, b.len);
	write_bytes(trunc, b.data, 20);
	qr_buf_free(&b);
	/* A TensorProto whose raw_data (field 9) claims 2^40 bytes. */
	write_bytes(pb, "\x08\x04\x10\x01\x4a\x80\x80\x80\x80\x80\x20\x00", 12);

	arg = xasprintf("x=%s", npy);
	run_qr(&r, NULL, CASE_SECONDS, "run", good, "--input", arg, "-o", out,
	       NULL);
	{
		const char *names[] = {"huge.npy", NULL};

		refused("run: .npy claiming 1e9 elements refused", &r, 2, out,
			names);
	}
	result_free(&r);
	free(arg);
	arg = xasprintf("x=%s", trunc);
	run_qr(&r, NULL, CASE_SECONDS, "run", good, "--input", arg, "-o", out,
	       NULL);
	{
		const char *names[] = {"trunc.npy", NULL};

		refused("run: truncated .npy refused", &r, 2, out, names);
	}
	result_free(&r);
	free(arg);
	arg = xasprintf("x=%s", pb);
	run_qr(&r, NULL, CASE_SECONDS, "run", good, "--input", arg, "-o", out,
	       NULL);
	{
		const char *names[] = {"t.pb", NULL};

		refused("run: .pb with a huge length prefix refused", &r, 2,
			out, names);
	}
	result_free(&r);
	free(arg);
	(void)none;
	free(trunc);
	free(pb);
	free(npy);
	free(out);
	free(dir);
}

/* ---- reports of hostile models ---- */

/* Raw markup that must never reach a page or summary.md unescaped. */
static const char *const forbidden[] = {
	"<script>alert", "<script>document", "<img src=x", "<b>amp</b>",
	NULL,
};

/* 1 when text holds a forbidden string raw. With md, a '<' escaped by a
 * backslash (CommonMark's "\<", shown as a literal '<') is not raw. */
static int
has_forbidden(const char *text, const char *where, int md)
{
	const char *p;
	size_t i;

	for (i = 0; forbidden[i] != NULL; i++)
		for (p = text; (p = strstr(p, forbidden[i])) != NULL; p++)
			if (!md || p == text || p[-1] != '\\') {
				diag("%s holds raw '%s'", where, forbidden[i]);
				return 1;
			}
	return 0;
}

/* 1 when s (n bytes) is valid UTF-8. */
static int
utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		size_t k, len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 :
			(c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;

		if (len == 0 || i + len > n)
			return 0;
		for (k = 1; k < len; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		if (len == 3 && c == 0xed && s[i + 1] >= 0xa0)
			return 0; /* surrogates */
		i += len;
	}
	return 1;
}

/* Read every .html page of dir into one buffer (pages separated by NUL
 * bytes replaced by newlines); *pages gets their count. */
static char *
all_pages(const char *dir, int *pages, int *valid_utf8)
{
	struct qr_buf b = {0};
	struct dirent *de;
	DIR *dp = opendir(dir);

	*pages = 0;
	*valid_utf8 = 1;
	while (dp != NULL && (de = readdir(dp)) != NULL) {
		size_t n = strlen(de->d_name);
		char *path, *text;

		if (n < 5 || strcmp(de->d_name + n - 5, ".html") != 0)
			continue;
		path = qr_path_join(dir, de->d_name);
		text = slurp(path);
		if (!utf8_valid((const unsigned char *)text, strlen(text))) {
			diag("%s is not valid UTF-8", de->d_name);
			*valid_utf8 = 0;
		}
		qr_buf_puts(&b, text);
		qr_buf_putc(&b, '\n');
		(*pages)++;
		free(text);
		free(path);
	}
	if (dp != NULL)
		closedir(dp);
	return qr_buf_take(&b);
}

/* A string value or object key in j equal to (exact) or containing s. */
static const cJSON *
json_find(const cJSON *j, const char *s, int exact)
{
	const cJSON *it;

	if (j == NULL)
		return NULL;
	if (j->string != NULL && (exact ? strcmp(j->string, s) == 0 :
				  strstr(j->string, s) != NULL))
		return j;
	if (cJSON_IsString(j) && (exact ? strcmp(j->valuestring, s) == 0 :
				  strstr(j->valuestring, s) != NULL))
		return j;
	for (it = j->child; it != NULL; it = it->next) {
		const cJSON *f = json_find(it, s, exact);

		if (f != NULL)
			return f;
	}
	return NULL;
}

/*
 * Check a report qreport said it wrote: exit 0 (or 4, partial), one
 * folder with index.html, nothing left beside it, report.json that parses
 * (JSON has no NaN or Infinity: a non-finite number written raw fails
 * here), no raw markup in any page or in summary.md. Returns the parsed
 * report.json (caller deletes) or NULL; *pages_out (may be NULL) gets all
 * pages' text.
 */
static cJSON *
check_report(const char *name, const struct result *r, const char *out,
	     char **pages_out)
{
	char *json_path = qr_path_join(out, "report.json");
	char *md_path = qr_path_join(out, "summary.md");
	char *index = qr_path_join(out, "index.html");
	char *text = NULL, *md = NULL, *pages = NULL;
	cJSON *j = NULL;
	int good, n_pages = 0, utf8 = 1;

	good = (exited_with(r, 0) || exited_with(r, 4)) && exists(index) &&
	       no_leftovers(out) && strstr(r->err, "qreport: error") == NULL;
	if (good) {
		text = slurp(json_path);
		j = cJSON_Parse(text);
		if (j == NULL) {
			diag("report.json does not parse near: %.80s",
			     cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "");
			good = 0;
		}
		pages = all_pages(out, &n_pages, &utf8);
		md = slurp(md_path);
		if (n_pages == 0 || has_forbidden(pages, "a page", 0) ||
		    has_forbidden(md, "summary.md", 1) || !utf8 ||
		    !utf8_valid((unsigned char *)md, strlen(md)))
			good = 0;
	}
	if (!case_ok(good, name))
		diag_result(r);
	if (!good) {
		cJSON_Delete(j);
		j = NULL;
	}
	if (pages_out != NULL)
		*pages_out = pages;
	else
		free(pages);
	free(md);
	free(text);
	free(index);
	free(md_path);
	free(json_path);
	return j;
}

/* Render every page of out that holds the payload in headless Chromium
 * and check that the element the payload would create is absent. */
static void
browser_check(const char *name, const char *out)
{
	const char *chromium = getenv("CHROMIUM");
	char *profile = qr_path_join(work, "chromium-profile");
	char *control = qr_path_join(work, "control.html");
	char *profile_arg = xasprintf("--user-data-dir=%s", profile);
	struct dirent *de;
	DIR *dp;
	int good = 1, pages = 0;

	if (chromium == NULL)
		chromium = "/usr/bin/chromium";
	if (access(chromium, X_OK) != 0) {
		tap_n++;
		printf("ok %d - %s # SKIP no Chromium (%s)\n", tap_n, name,
		       chromium);
		goto out;
	}
	/* The check must be able to fail: the raw payload does run. */
	{
		static const char page[] = "<html><body><script>document.body."
			"appendChild(document.createElement('qr'+'pwned'))"
			"</script></body></html>";

		write_bytes(control, page, sizeof page - 1);
	}
	{
		char *url = xasprintf("file://%s", control);
		char *argv[] = {(char *)chromium, "--headless", "--no-sandbox",
				"--disable-gpu", profile_arg, "--dump-dom", url,
				NULL};
		struct result r;

		run_in(&r, NULL, 60, 0, argv);
		if (!ok(strstr(r.out, "<qrpwned") != NULL,
			"browser: the control page's script runs"))
			diag_result(&r);
		result_free(&r);
		free(url);
	}
	dp = opendir(out);
	while (dp != NULL && (de = readdir(dp)) != NULL) {
		size_t n = strlen(de->d_name);
		char *path, *text, *url;
		struct result r;

		if (n < 5 || strcmp(de->d_name + n - 5, ".html") != 0)
			continue;
		path = qr_path_join(out, de->d_name);
		text = slurp(path);
		if (strstr(text, "pwned") != NULL) {
			char *argv[] = {(char *)chromium, "--headless",
					"--no-sandbox", "--disable-gpu",
					profile_arg, "--dump-dom", NULL, NULL};

			url = xasprintf("file://%s", path);
			argv[6] = url;
			run_in(&r, NULL, 60, 0, argv);
			pages++;
			if (!exited_with(&r, 0) || strstr(r.out, "<html") == NULL ||
			    strstr(r.out, "<qrpwned") != NULL) {
				diag("%s: injected script ran or page did not "
				     "render", de->d_name);
				diag_result(&r);
				good = 0;
			}
			result_free(&r);
			free(url);
		}
		free(text);
		free(path);
	}
	if (dp != NULL)
		closedir(dp);
	case_ok(good && pages > 0, name);
out:
	free(profile_arg);
	free(control);
	free(profile);
}

static void
test_strings(void)
{
	char *dir = case_dir("strings"), *model = fixture("strings.onnx");
	char *out = qr_path_join(dir, "out"), *pages = NULL;
	const cJSON *meta, *v;
	struct result r;
	cJSON *j;

	run_qr(&r, NULL, CASE_SECONDS, "--float", model, "--quant", model,
	       "-o", out, NULL);
	j = check_report("strings: report written, no raw markup", &r, out,
			 &pages);
	result_free(&r);
	ok(pages != NULL &&
	   strstr(pages, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL,
	   "strings: pages show <script> names escaped");
	meta = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "models"),
				   0), "metadata");
	v = cJSON_GetObjectItemCaseSensitive(meta,
					     "key<script>alert(1)</script>");
	ok(cJSON_IsString(v) &&
	   strcmp(v->valuestring, "value<script>alert(1)</script>") == 0,
	   "strings: report.json keeps metadata verbatim");
	v = cJSON_GetObjectItemCaseSensitive(meta, "newline");
	ok(cJSON_IsString(v) &&
	   strcmp(v->valuestring, "line1\nline2\r\n<script>alert(3)</script>")
	   == 0, "strings: report.json keeps newlines");
	ok(json_find(j, "conv<script>alert(1)</script>", 1) != NULL &&
	   json_find(j, "input<script>alert(1)</script>", 1) != NULL &&
	   json_find(j, "q\"uo'te&<b>amp</b>", 0) != NULL,
	   "strings: report.json keeps node and tensor names");
	browser_check("strings: no injected script runs in Chromium", out);
	cJSON_Delete(j);
	free(pages);
	free(out);
	free(model);
	free(dir);

	/* Invalid UTF-8 in names: replaced, never copied raw. */
	dir = case_dir("bad_utf8");
	model = fixture("bad_utf8.onnx");
	out = qr_path_join(dir, "out");
	run_qr(&r, NULL, CASE_SECONDS, "--float", model, "--quant", model,
	       "-o", out, NULL);
	j = check_report("bad_utf8 report", &r, out, NULL);
	result_free(&r);
	case_ok(json_find(j, "\xef\xbf\xbd", 0) != NULL,
		"bad_utf8: report.json has U+FFFD for invalid UTF-8");
	cJSON_Delete(j);
	free(out);
	free(model);
	free(dir);
}

/* ---- 100 kB strings, made here by appending protobuf fields ---- */

/*
 * good.onnx with a 100 kB producer_name and metadata value, and a dead
 * Relu node with a 100 kB name in its graph: each made of `big` (hostile
 * text repeated). Returns the model's bytes in *out.
 */
static int
make_100k(const char *big, struct qr_buf *out)
{
	char *model = fixture("good.onnx"), *buf = NULL;
	const unsigned char *p, *end;
	struct qr_buf node = {0}, meta = {0}, graph = {0};
	size_t len;
	int good = 0;

	if (qr_read_file(model, &buf, &len, NULL) != QR_OK)
		goto out;
	pb_bytes(&node, 1, "x", 1);            /* input */
	pb_bytes(&node, 2, "big_out", 7);      /* output */
	pb_bytes(&node, 3, big, strlen(big));  /* name */
	pb_bytes(&node, 4, "Relu", 4);         /* op_type */
	p = (const unsigned char *)buf;
	end = p + len;
	while (p < end) {
		const unsigned char *start = p;
		uint64_t tag, n;

		if (!pb_read_varint(&p, end, &tag))
			goto out;
		switch (tag & 7) {
		case 0:
			if (!pb_read_varint(&p, end, &n))
				goto out;
			break;
		case 2:
			if (!pb_read_varint(&p, end, &n) ||
			    n > (uint64_t)(end - p))
				goto out;
			if (tag >> 3 == 7) { /* graph: add the node */
				qr_buf_append(&graph, p, n);
				pb_bytes(&graph, 1, node.data, node.len);
				pb_bytes(out, 7, graph.data, graph.len);
				p += n;
				continue;
			}
			p += n;
			break;
		default:
			goto out;
		}
		qr_buf_append(out, start, (size_t)(p - start));
	}
	pb_bytes(out, 2, big, strlen(big)); /* producer_name: last wins */
	pb_bytes(&meta, 1, "big", 3);
	pb_bytes(&meta, 2, big, strlen(big));
	pb_bytes(out, 14, meta.data, meta.len); /* metadata_props */
	good = graph.len > 0;
out:
	qr_buf_free(&graph);
	qr_buf_free(&meta);
	qr_buf_free(&node);
	free(buf);
	free(model);
	return good;
}

static void
test_100k(void)
{
	char *dir = case_dir("big"), *model = qr_path_join(dir, "big.onnx");
	char *out = qr_path_join(dir, "out");
	struct qr_buf big = {0}, bytes = {0};
	const cJSON *v;
	struct result r;
	cJSON *j;

	while (big.len < 100 * 1024)
		qr_buf_puts(&big, "<script>alert(4)</script>\"'&\n");
	if (!ok(make_100k(big.data, &bytes) &&
		write_bytes(model, bytes.data, bytes.len),
		"100 kB strings: model made"))
		goto out;
	run_qr(&r, NULL, CASE_SECONDS, "--float", model, "--quant", model,
	       "-o", out, NULL);
	j = check_report("100 kB strings: report written, no raw markup", &r,
			 out, NULL);
	result_free(&r);
	v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "models"),
				   0), "metadata"), "big");
	ok(cJSON_IsString(v) && strcmp(v->valuestring, big.data) == 0,
	   "100 kB strings: report.json keeps the 100 kB value");
	cJSON_Delete(j);
out:
	qr_buf_free(&bytes);
	qr_buf_free(&big);
	free(out);
	free(model);
	free(dir);
}

/* ---- bad values ---- */

static void
test_values(void)
{
	static const char *const files[] = {
		"nan_weights.onnx", "zero_range.onnx", "all_zero.onnx",
		"const_output.onnx",
	};
	size_t i;

	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		char *dir = case_dir(files[i]), *model = fixture(files[i]);
		char *out = qr_path_join(dir, "out");
		char *name = xasprintf("%s: report written, JSON parses",
				       files[i]);
		struct result r;

		run_qr(&r, NULL, CASE_SECONDS, "--float", model, "--quant",
		       model, "-o", out, NULL);
		cJSON_Delete(check_report(name, &r, out, NULL));
		result_free(&r);
		free(name);
		free(out);
		free(model);
		free(dir);
	}
}

/* ---- output folders ---- */

static int
file_is(const char *path, const char *want)
{
	char *got = slurp(path);
	int same = strcmp(got, want) == 0;

	free(got);
	return same;
}

static void
refused_out(const char *name, const char *outarg, const char *cwd,
	    const char *must_name)
{
	const char *names[] = {must_name, NULL};
	struct result r;

	run_qr(&r, cwd, CASE_SECONDS, "--float", good, "-o", outarg, NULL);
	refused(name, &r, 2, NULL, names);
	result_free(&r);
}

static void
test_outdirs(void)
{
	char *dir = case_dir("outdirs");
	char *file = qr_path_join(dir, "target.txt");
	char *under_file = qr_path_join(file, "report");
	char *user = qr_path_join(dir, "user");
	char *notes = qr_path_join(user, "notes.txt");
	char *link = qr_path_join(dir, "link");
	char *dot = qr_path_join(dir, "dot");
	char *precious = qr_path_join(dot, "precious.txt");
	char *dotsub = qr_path_join(dot, "sub");
	char *rep = qr_path_join(dir, "rep"), *out = qr_path_join(rep, "out");
	char *sibling = qr_path_join(rep, "sibling.txt");
	char *outside = qr_path_join(dir, "outside");
	char *keep = qr_path_join(outside, "keep.txt");
	char *stale = qr_path_join(out, "stale.txt");
	char *mine = qr_path_join(out, "mine.txt");
	char *old_link = qr_path_join(out, "link_out");
	char *json_path = qr_path_join(out, "report.json");
	char *index = qr_path_join(out, "index.html");
	char *json_before = NULL, *json_after = NULL, *trunc;
	struct result r;

	qr_mkdirs(user, NULL);
	qr_mkdirs(dotsub, NULL);
	qr_mkdirs(rep, NULL);
	qr_mkdirs(outside, NULL);
	write_bytes(file, "keep me\n", 8);
	write_bytes(notes, "user notes\n", 11);
	write_bytes(precious, "precious\n", 9);
	write_bytes(sibling, "sibling\n", 8);
	write_bytes(keep, "outside\n", 8);
	if (symlink(user, link) != 0)
		perror("symlink");

	refused_out("-o a file: refused", file, NULL, "target.txt");
	ok(file_is(file, "keep me\n"), "-o a file: the file is untouched");
	refused_out("-o under a file: refused", under_file, NULL,
		    "target.txt");
	ok(file_is(file, "keep me\n") && no_leftovers(under_file),
	   "-o under a file: the file is untouched");
	refused_out("-o a folder that cannot be created: refused",
		    "/proc/qreport-hostile/out", NULL, "/proc/qreport-hostile");
	if (geteuid() == 0) {
		tap_n++;
		printf("ok %d - -o a read-only folder # SKIP running as root, "
		       "which ignores permissions (covered by /proc above)\n",
		       tap_n);
	} else {
		char *ro = qr_path_join(dir, "ro"), *ro_out;

		qr_mkdirs(ro, NULL);
		chmod(ro, 0555);
		ro_out = qr_path_join(ro, "out");
		refused_out("-o a read-only folder: refused", ro_out, NULL,
			    "ro");
		chmod(ro, 0755);
		free(ro_out);
		free(ro);
	}
	refused_out("-o a user's folder: refused", user, NULL, "user");
	ok(file_is(notes, "user notes\n"),
	   "-o a user's folder: its files are untouched");
	refused_out("-o a symlink to a folder: refused", link, NULL, "link");
	ok(file_is(notes, "user notes\n") && exists(link),
	   "-o a symlink: the link and its target are untouched");
	refused_out("-o .: refused", ".", dot, ".");
	refused_out("-o ..: refused", "..", dotsub, "..");
	ok(file_is(precious, "precious\n") && exists(dotsub),
	   "-o . and ..: nothing deleted");

	/* A report, then the same report again: replaced. */
	run_qr(&r, NULL, CASE_SECONDS, "--float", good, "-o", out, NULL);
	ok(exited_with(&r, 0) && exists(index), "first report written");
	result_free(&r);
	write_bytes(stale, "stale\n", 6);
	if (symlink(outside, old_link) != 0)
		perror("symlink");
	run_qr(&r, NULL, CASE_SECONDS, "--float", good, "-o", out, NULL);
	if (!ok(exited_with(&r, 0) && exists(index) && !exists(stale) &&
		no_leftovers(out), "an existing report is replaced"))
		diag_result(&r);
	result_free(&r);
	ok(file_is(keep, "outside\n") && file_is(sibling, "sibling\n"),
	   "replacing follows no symlink out and leaves siblings alone");

	/* A failed run leaves the report as it was. */
	json_before = slurp(json_path);
	write_bytes(mine, "mine\n", 5);
	trunc = fixture("truncated.onnx");
	run_qr(&r, NULL, CASE_SECONDS, "--float", trunc, "-o", out, NULL);
	json_after = slurp(json_path);
	if (!ok(exited_with(&r, 2) && error_lines(r.err) == 1 &&
		exists(mine) && strlen(json_before) > 0 &&
		strcmp(json_before, json_after) == 0 && no_leftovers(out),
		"a failed run leaves the existing report intact"))
		diag_result(&r);
	result_free(&r);
	free(trunc);

	free(json_after);
	free(json_before);
	free(index);
	free(json_path);
	free(old_link);
	free(mine);
	free(stale);
	free(keep);
	free(outside);
	free(sibling);
	free(out);
	free(rep);
	free(dotsub);
	free(precious);
	free(dot);
	free(link);
	free(notes);
	free(user);
	free(under_file);
	free(file);
	free(dir);
}

/* ---- bad datasets (--data) ---- */

static int
copy_file(const char *from, const char *to)
{
	char *buf = NULL;
	size_t len;
	int good = qr_read_file(from, &buf, &len, NULL) == QR_OK &&
		   qr_write_file(to, buf, len, NULL) == QR_OK;

	free(buf);
	return good;
}

static void
test_dataset(void)
{
	static const char *const names[] = {
		"empty folder: refused", "mixed folder: report with warnings",
		"mixed folder: warnings name the bad files",
		"only a 0x0 image: refused",
	};
	char *dir = case_dir("data"), *empty = qr_path_join(dir, "empty");
	char *mixed = qr_path_join(dir, "mixed"), *zero = qr_path_join(dir, "zero");
	char *out = qr_path_join(dir, "out");
	char *fmodel = qr_path_join(samples, "digits_float.onnx");
	char *qmodel = qr_path_join(samples, "digits_qdq.onnx");
	struct result r;
	size_t i;

	run_qr(&r, NULL, CASE_SECONDS, "--help", NULL);
	if (strstr(r.out, "--data") == NULL) {
		for (i = 0; i < sizeof names / sizeof names[0]; i++) {
			tap_n++;
			printf("ok %d - --data %s # SKIP qreport has no --data "
			       "option yet\n", tap_n, names[i]);
		}
		result_free(&r);
		goto out;
	}
	result_free(&r);
	qr_mkdirs(empty, NULL);
	qr_mkdirs(mixed, NULL);
	qr_mkdirs(zero, NULL);
	for (i = 0; i < 3; i++) {
		char *from = xasprintf("%s/digits/%zu/0.png", samples, i);
		char *to = xasprintf("%s/%zu.png", mixed, i);

		copy_file(from, to);
		free(to);
		free(from);
	}
	{
		static const char *const bad[] = {"notes.txt", "garbage.png",
						  "zero_size.png"};

		for (i = 0; i < 3; i++) {
			char *from = fixture(bad[i]);
			char *to = qr_path_join(mixed, bad[i]);

			copy_file(from, to);
			free(to);
			free(from);
		}
	}
	{
		char *from = fixture("zero_size.png");
		char *to = qr_path_join(zero, "zero_size.png");

		copy_file(from, to);
		free(to);
		free(from);
	}
	{
		const char *must[] = {"empty", NULL};

		run_qr(&r, NULL, CASE_SECONDS, "--float", fmodel, "--quant",
		       qmodel, "--data", empty, "-o", out, NULL);
		refused("--data empty folder: refused", &r, 2, out, must);
		result_free(&r);
	}
	run_qr(&r, NULL, 60, "--float", fmodel, "--quant", qmodel, "--data",
	       mixed, "-o", out, NULL);
	cJSON_Delete(check_report("--data mixed folder: report with warnings",
				  &r, out, NULL));
	ok(strstr(r.err, "garbage.png") != NULL &&
	   strstr(r.err, "zero_size.png") != NULL,
	   "--data mixed folder: warnings name the bad files");
	result_free(&r);
	qr_remove_tree(out);
	{
		const char *must[] = {"zero_size.png", NULL};

		run_qr(&r, NULL, CASE_SECONDS, "--float", fmodel, "--quant",
		       qmodel, "--data", zero, "-o", out, NULL);
		refused("--data only a 0x0 image: refused", &r, 2, out, must);
		result_free(&r);
	}
out:
	free(qmodel);
	free(fmodel);
	free(out);
	free(zero);
	free(mixed);
	free(empty);
	free(dir);
}

int
main(void)
{
	char tmpl[] = "/tmp/qr-hostile-XXXXXX";
	const char *tmp = getenv("TMPDIR");

	plan_no_plan();
	qreport = getenv("QREPORT");
	if (qreport == NULL)
		qreport = "./qreport";
	if (access(qreport, X_OK) != 0)
		skip_all("no qreport binary (set QREPORT)");
	if (tmp != NULL && *tmp != '\0')
		work = xasprintf("%s/qr-hostile-XXXXXX", tmp);
	else
		work = xstrdup(tmpl);
	if (mkdtemp(work) == NULL) {
		perror(work);
		return 99;
	}
	hostile = xasprintf("%s/tests/data/hostile", QR_SRCDIR);
	samples = xasprintf("%s/samples", QR_SRCDIR);
	good = fixture("good.onnx");

	RUN(test_bad_models);
	RUN(test_ext_symlink);
	RUN(test_accept_or_refuse);
	RUN(test_run_cmd);
	RUN(test_strings);
	RUN(test_100k);
	RUN(test_values);
	RUN(test_outdirs);
	RUN(test_dataset);

	if (getenv("QR_KEEP_WORK") == NULL)
		qr_remove_tree(work);
	else
		diag("kept %s", work);
	free(good);
	free(samples);
	free(hostile);
	free(work);
	return done();
}
