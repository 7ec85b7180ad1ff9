/*
 * report: qr_report_write, the folder it produces and how it gets there.
 *
 * The report is built in "<target>.tmp-XXXXXX" beside the target and only
 * then moved into place, so a failed run never leaves half a report. An
 * existing target is replaced only when it is a folder that is empty or
 * holds the marker file MARKER that every qreport report carries.
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MARKER ".qreport"
#define SUMMARY_WORST 10 /* layers listed in summary.md */

/* The pages, in nav-bar order. */
static const struct page {
	const char *file;  /* template and output name */
	const char *label; /* nav-bar text */
	const char *title; /* <title> and <h1> */
} pages[] = {
	{ "index.html", "Overview", "Overview" },
	{ "model.html", "Models", "Models and quantization" },
	{ "weights.html", "Weights", "Weight ranges" },
	{ "quant.html", "Quant weights", "Float \xe2\x86\x94 quantized weights" },
	{ "cle.html", "CLE", "Cross-layer equalization" },
	{ "activations.html", "Activations",
	  "Activations: float \xe2\x86\x94 quantized on data" },
	{ "help.html", "How to read", "How to read this report" },
};
#define N_PAGES (sizeof pages / sizeof pages[0])

static enum qr_status
write_buf(const char *dir, const char *name, const struct qr_buf *b,
	  struct qr_diag *d)
{
	enum qr_status st;
	char *path = qr_path_join(dir, name);

	st = qr_write_file(path, b->data != NULL ? b->data : "", b->len, d);
	free(path);
	return st;
}

static enum qr_status
write_pages(const char *dir, const char *tdir, cJSON *view,
	    struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	size_t i, j;

	for (i = 0; i < N_PAGES && st == QR_OK; i++) {
		struct qr_buf out = {0};
		cJSON *nav = cJSON_CreateArray();

		for (j = 0; j < N_PAGES; j++) {
			cJSON *x = cJSON_CreateObject();

			cJSON_AddStringToObject(x, "href", pages[j].file);
			cJSON_AddStringToObject(x, "label", pages[j].label);
			cJSON_AddBoolToObject(x, "active", i == j);
			cJSON_AddItemToArray(nav, x);
		}
		cJSON_DeleteItemFromObject(view, "nav");
		cJSON_AddItemToObject(view, "nav", nav);
		cJSON_DeleteItemFromObject(view, "page_title");
		cJSON_AddStringToObject(view, "page_title", pages[i].title);
		st = qr_tpl_render_file(tdir, pages[i].file, view, &out, d);
		if (st == QR_OK)
			st = write_buf(dir, pages[i].file, &out, d);
		qr_buf_free(&out);
	}
	return st;
}

static enum qr_status
write_assets(const char *dir, const char *tdir, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	const struct qr_embedded *e;

	for (e = qr_embedded_files; e->name != NULL && st == QR_OK; e++) {
		char *text = NULL, *path;
		size_t len = 0;

		if (strncmp(e->name, "assets/", 7) != 0)
			continue;
		st = qr_report_source_read(tdir, e->name, &text, &len, d);
		if (st == QR_OK) {
			path = qr_path_join(dir, e->name);
			st = qr_write_file(path, text, len, d);
			free(path);
		}
		free(text);
	}
	return st;
}

static enum qr_status
write_json(const char *dir, cJSON *json, struct qr_diag *d)
{
	enum qr_status st;
	struct qr_buf b = {0};
	char *text = cJSON_PrintUnformatted(json);

	if (text == NULL)
		qr_fatal("out of memory printing report.json");
	qr_buf_puts(&b, text);
	qr_buf_putc(&b, '\n');
	st = write_buf(dir, "report.json", &b, d);
	qr_buf_free(&b);
	free(text);
	return st;
}

/* Markdown-escaped member key of o ("" when absent or not a string). */
static void
md_field(struct qr_buf *b, const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsString(v))
		qr_md_escape(b, v->valuestring);
}

char *
qr_report_summary_md(const struct qr_analysis *a, const cJSON *view)
{
	struct qr_buf b = {0};
	const cJSON *x, *v;
	size_t shown = 0;

	qr_buf_puts(&b, "# qreport summary\n\n**Verdict:** ");
	md_field(&b, cJSON_GetObjectItemCaseSensitive(view, "verdict"), "text");
	qr_buf_puts(&b, "\n\n## Models\n\n"
		    "| model | path | format | nodes | parameters | size |\n"
		    "|---|---|---|--:|--:|--:|\n");
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(view, "models")) {
		qr_buf_puts(&b, "| ");
		md_field(&b, x, "label");
		qr_buf_puts(&b, " | ");
		md_field(&b, x, "path");
		qr_buf_puts(&b, " | ");
		md_field(&b, x, "format");
		qr_buf_puts(&b, " | ");
		md_field(&b, x, "nodes");
		qr_buf_puts(&b, " | ");
		md_field(&b, x, "params");
		qr_buf_puts(&b, " | ");
		md_field(&b, x, "file_bytes");
		qr_buf_puts(&b, " |\n");
	}
	v = cJSON_GetObjectItemCaseSensitive(view, "n_flagged");
	qr_buf_printf(&b, "\n## Key numbers\n\n"
		      "- Weight layers analysed: %zu; flagged: %.0f "
		      "(max relative range > %g or predicted per-tensor SQNR < %g dB)\n",
		      a->n_weights, cJSON_IsNumber(v) ? v->valuedouble : 0.0,
		      QR_BAD_REL_RANGE, QR_SQNR_BAD_DB);
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(view, "quants")) {
		qr_buf_puts(&b, "- ");
		md_field(&b, x, "label");
		qr_buf_puts(&b, " (");
		md_field(&b, x, "format");
		qr_buf_puts(&b, "): ");
		md_field(&b, x, "coverage_pct");
		qr_buf_puts(&b, "% of compute nodes quantized, weights ");
		md_field(&b, x, "compression");
		qr_buf_puts(&b, " smaller, worst weight SQNR ");
		md_field(&b, x, "worst_sqnr");
		qr_buf_puts(&b, " dB (");
		md_field(&b, x, "worst_layer");
		qr_buf_puts(&b, ")\n");
	}
	qr_buf_printf(&b, "- CLE sets found: %zu; blocked pairs: %zu\n",
		      a->n_cle, a->n_cle_blockers);
	v = cJSON_GetObjectItemCaseSensitive(view, "act");
	if (a->data.ran) {
		qr_buf_printf(&b, "- Activations: %zu samples of %s data%s\n",
			      a->data.samples, a->data.source,
			      strcmp(a->data.source, "random") == 0
			      ? " (random, not representative)" : "");
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(v,
								      "cands")) {
			const cJSON *mo = cJSON_GetObjectItemCaseSensitive(
				x, "main_output");
			const cJSON *born = cJSON_GetObjectItemCaseSensitive(
				x, "born");

			qr_buf_puts(&b, "  - ");
			md_field(&b, x, "label");
			if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
				    x, "compared"))) {
				qr_buf_puts(&b, ": not compared: ");
				md_field(&b, x, "why");
				qr_buf_puts(&b, "\n");
				continue;
			}
			if (cJSON_IsObject(mo)) {
				qr_buf_puts(&b, ": output cosine ");
				md_field(&b, mo, "cos_mean");
				qr_buf_puts(&b, ", top-1 agreement ");
				md_field(&b, mo, "top1");
			}
			qr_buf_puts(&b, "; layers below threshold: ");
			md_field(&b, x, "n_flagged");
			if (cJSON_IsObject(born)) {
				qr_buf_puts(&b, "; error is born at ");
				md_field(&b, born, "tensor");
			}
			qr_buf_puts(&b, "\n");
		}
	} else if (a->data.why != NULL) {
		qr_buf_puts(&b, "- Activations not compared: ");
		qr_md_escape(&b, a->data.why);
		qr_buf_puts(&b, "\n");
	}

	qr_buf_puts(&b, "\n## Worst layers\n\n");
	x = cJSON_GetObjectItemCaseSensitive(view, "problems");
	if (cJSON_GetArraySize(x) == 0) {
		qr_buf_puts(&b, "No layer is flagged.\n");
		return qr_buf_take(&b);
	}
	qr_buf_puts(&b, "| # | layer | op | max relative range | outlier channels "
		    "| SQNR per tensor (dB) | SQNR per channel (dB) |\n"
		    "|--:|---|---|--:|--:|--:|--:|\n");
	cJSON_ArrayForEach(v, x) {
		if (shown++ == SUMMARY_WORST)
			break;
		qr_buf_printf(&b, "| %zu | ", shown);
		md_field(&b, v, "layer");
		qr_buf_puts(&b, " | ");
		md_field(&b, v, "op");
		qr_buf_puts(&b, " | ");
		md_field(&b, v, "max_rel_range");
		qr_buf_puts(&b, " | ");
		md_field(&b, v, "n_outliers");
		qr_buf_puts(&b, " | ");
		md_field(&b, v, "sqnr_pt");
		qr_buf_puts(&b, " | ");
		md_field(&b, v, "sqnr_pc");
		qr_buf_puts(&b, " |\n");
	}
	return qr_buf_take(&b);
}

/* 1 when dir (a folder) is empty or holds our marker file, 0 when not,
 * -1 when it cannot be read. */
static int
is_replaceable(const char *dir)
{
	struct dirent *de;
	struct stat sb;
	int empty = 1, rc;
	char *marker = qr_path_join(dir, MARKER);
	DIR *dp;

	rc = lstat(marker, &sb) == 0 && S_ISREG(sb.st_mode);
	free(marker);
	if (rc)
		return 1;
	if ((dp = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(dp)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			empty = 0;
	closedir(dp);
	return empty;
}

/* QR_OK when target is absent, or a folder we may replace. */
static enum qr_status
check_target(const char *target, struct qr_diag *d)
{
	struct stat sb;
	int r;

	if (lstat(target, &sb) != 0) {
		if (errno == ENOENT)
			return QR_OK;
		return qr_errorf(d, QR_EIO, "output '%s': %s", target,
				 strerror(errno));
	}
	if (!S_ISDIR(sb.st_mode) || (r = is_replaceable(target)) == 0)
		return qr_errorf(d, QR_EIO,
				 "output '%s' exists and is not a qreport report; refusing to replace it",
				 target);
	if (r < 0)
		return qr_errorf(d, QR_EIO, "output '%s': cannot read it: %s",
				 target, strerror(errno));
	return QR_OK;
}

/* Move the finished tmp folder to target, replacing an old report. */
static enum qr_status
swap_into_place(const char *tmp, const char *target, struct qr_diag *d)
{
	enum qr_status st;
	char *old = NULL;

	if ((st = check_target(target, d)) != QR_OK)
		return st;
	if (rename(tmp, target) == 0)
		return QR_OK;
	if (errno != EEXIST && errno != ENOTEMPTY)
		return qr_errorf(d, QR_EIO, "cannot move '%s' to '%s': %s",
				 tmp, target, strerror(errno));
	old = xasprintf("%s.old-XXXXXX", target);
	if (mkdtemp(old) == NULL) {
		st = qr_errorf(d, QR_EIO, "cannot create '%s': %s", old,
			       strerror(errno));
		goto out;
	}
	if (rename(target, old) != 0) {
		st = qr_errorf(d, QR_EIO, "cannot move '%s' aside: %s", target,
			       strerror(errno));
		rmdir(old);
		goto out;
	}
	if (rename(tmp, target) != 0) {
		st = qr_errorf(d, QR_EIO, "cannot move '%s' to '%s': %s", tmp,
			       target, strerror(errno));
		if (rename(old, target) != 0)
			qr_warnf(d, "the previous report is now in '%s'", old);
		goto out;
	}
	if (qr_remove_tree(old) != 0)
		qr_warnf(d, "could not remove the previous report '%s'", old);
out:
	free(old);
	return st;
}

/* Build the whole report inside dir (an empty folder). */
static enum qr_status
build(const struct qr_analysis *a, const struct qr_report_opts *opts,
      const char *dir, struct qr_diag *d)
{
	enum qr_status st;
	const char *tdir = opts != NULL ? opts->templates_dir : NULL;
	char *charts = qr_path_join(dir, "charts");
	char *assets = qr_path_join(dir, "assets");
	cJSON *json = NULL, *view = NULL;
	struct qr_buf b = {0};

	if ((st = qr_mkdirs(charts, d)) != QR_OK ||
	    (st = qr_mkdirs(assets, d)) != QR_OK)
		goto out;
	if ((st = write_assets(dir, tdir, d)) != QR_OK)
		goto out;
	json = qr_report_json_new(a, opts, d);
	if ((st = write_json(dir, json, d)) != QR_OK)
		goto out;
	if ((st = qr_report_view_new(a, opts, charts, &view, d)) != QR_OK)
		goto out;
	if ((st = write_pages(dir, tdir, view, d)) != QR_OK)
		goto out;
	b.data = qr_report_summary_md(a, view);
	b.len = strlen(b.data);
	if ((st = write_buf(dir, "summary.md", &b, d)) != QR_OK)
		goto out;
	qr_buf_free(&b);
	qr_buf_printf(&b, "qreport report %s\n",
		      opts && opts->version ? opts->version : "");
	st = write_buf(dir, MARKER, &b, d);
out:
	qr_buf_free(&b);
	cJSON_Delete(view);
	cJSON_Delete(json);
	free(assets);
	free(charts);
	return st;
}

enum qr_status
qr_report_write(const struct qr_analysis *a,
		const struct qr_report_opts *opts, const char *outdir,
		struct qr_diag *d)
{
	enum qr_status st;
	char *target = xstrdup(outdir), *parent = NULL, *tmp = NULL;
	const char *base;
	size_t n = strlen(target);

	while (n > 1 && target[n - 1] == '/')
		target[--n] = '\0';
	base = qr_path_basename(target);
	if (n == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
	    strcmp(target, "/") == 0) {
		st = qr_errorf(d, QR_EIO,
			       "output '%s' must name a report folder", outdir);
		goto out;
	}
	if ((st = check_target(target, d)) != QR_OK)
		goto out;
	parent = qr_path_dirname(target);
	if ((st = qr_mkdirs(parent, d)) != QR_OK)
		goto out;
	tmp = xasprintf("%s.tmp-XXXXXX", target);
	if (mkdtemp(tmp) == NULL) {
		st = qr_errorf(d, QR_EIO, "cannot create a folder beside '%s': %s",
			       target, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	{
		mode_t mask = umask(0);

		umask(mask);
		chmod(tmp, 0777 & ~mask); /* mkdtemp made it 0700 */
	}
	st = build(a, opts, tmp, d);
	if (st == QR_OK)
		st = swap_into_place(tmp, target, d);
	if (st != QR_OK)
		qr_remove_tree(tmp);
out:
	free(tmp);
	free(parent);
	free(target);
	return st;
}
