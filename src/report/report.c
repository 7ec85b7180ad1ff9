/*
 * report: qr_report_write, the folder it produces and how it gets there.
 *
 * The report is built in "<target>.tmp-<pid>-XXXXXX" beside the target and only
 * then moved into place, so a failed run never leaves half a report. An
 * existing target is replaced only when it is a folder that is empty or
 * holds the marker file MARKER that every qreport report carries.
 */
/* renameat2 and RENAME_EXCHANGE */
#define _GNU_SOURCE
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MARKER ".qreport"
#define SUMMARY_WORST 10 /* layers listed in summary.md */
#define SUMMARY_HAZARDS 20 /* hazards listed in summary.md */
#define SUMMARY_OUTLIERS 5 /* outlier layers listed in summary.md */

/* The pages, in nav-bar order. */
static const struct page {
	const char *file;  /* template and output name */
	const char *label; /* nav-bar text */
	const char *title; /* <title> and <h1> */
	int compare;       /* 1: only with --compare-to */
} pages[] = {
	{ "index.html", "Overview", "Overview", 0 },
	{ "layers.html", "Layers", "Every layer, every metric", 0 },
	{ "graph.html", "Graph", "The network, coloured by error", 0 },
	{ "model.html", "Models", "Models and quantization", 0 },
	{ "weights.html", "Weights", "Weight ranges", 0 },
	{ "quant.html", "Quant weights", "Float \xe2\x86\x94 quantized weights",
	  0 },
	{ "cle.html", "CLE", "Cross-layer equalization", 0 },
	{ "activations.html", "Activations",
	  "Activations: float \xe2\x86\x94 quantized on data", 0 },
	{ "change.html", "What to change",
	  "What to change: layers kept float, measured", 0 },
	{ "compare.html", "Compare", "Changes against a previous report", 1 },
	{ "help.html", "How to read", "How to read this report", 0 },
};
#define N_PAGES (sizeof pages / sizeof pages[0])
#define LAYER_TEMPLATE "layer.html" /* one page per layer, in layers/ */

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

/* view.nav with page `active` marked (an index into pages[], or
 * N_PAGES for none), view.page_title and view.base. */
static void
set_page_context(cJSON *view, size_t active, const char *title,
		 const char *base, int compare)
{
	cJSON *nav = cJSON_CreateArray();
	size_t j;

	for (j = 0; j < N_PAGES; j++) {
		cJSON *x;

		if (pages[j].compare && !compare)
			continue;
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "href", pages[j].file);
		cJSON_AddStringToObject(x, "label", pages[j].label);
		cJSON_AddBoolToObject(x, "active", active == j);
		cJSON_AddItemToArray(nav, x);
	}
	cJSON_DeleteItemFromObject(view, "nav");
	cJSON_AddItemToObject(view, "nav", nav);
	cJSON_DeleteItemFromObject(view, "page_title");
	cJSON_AddStringToObject(view, "page_title", title);
	cJSON_DeleteItemFromObject(view, "base");
	if (base != NULL)
		cJSON_AddStringToObject(view, "base", base);
	else
		cJSON_AddNullToObject(view, "base");
}

static enum qr_status
write_pages(const char *dir, const char *tdir, cJSON *view, int compare,
	    struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	size_t i;

	for (i = 0; i < N_PAGES && st == QR_OK; i++) {
		struct qr_buf out = {0};

		if (pages[i].compare && !compare)
			continue;
		set_page_context(view, i, pages[i].title, NULL, compare);
		st = qr_tpl_render_file(tdir, pages[i].file, view, &out, d);
		if (st == QR_OK)
			st = write_buf(dir, pages[i].file, &out, d);
		qr_buf_free(&out);
	}
	return st;
}

/* layers/<page>.html for every layer. The pages sit one folder down and
 * say <base href="../">, so the charts, assets and links they share with
 * the other pages resolve from the report's top. The template is parsed
 * once per page; a 300-layer model takes well under a second. */
static enum qr_status
write_layer_pages(const struct qr_analysis *a,
		  const struct qr_report_layers *L, const char *dir,
		  const char *tdir, cJSON *view, int compare,
		  struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	char *text = NULL;
	size_t i, len;

	if ((st = qr_report_source_read(tdir, "templates/" LAYER_TEMPLATE,
					&text, &len, d)) != QR_OK)
		return st;
	for (i = 0; i < L->n && st == QR_OK; i++) {
		struct qr_buf out = {0};
		char *title = xasprintf("Layer %s", L->v[i].name);

		cJSON_ReplaceItemInObject(view, "layer",
					  qr_report_layer_view(a, L, view, i));
		cJSON_ReplaceItemInObject(view, "layer_hazards",
					  qr_view_layer_hazards(a, L,
								L->v[i].name));
		set_page_context(view, 1, title, "../", compare);
		st = qr_tpl_render(tdir, LAYER_TEMPLATE, text, view, &out, d);
		if (st == QR_OK)
			st = write_buf(dir, L->v[i].page, &out, d);
		qr_buf_free(&out);
		free(title);
	}
	cJSON_ReplaceItemInObject(view, "layer", cJSON_CreateNull());
	cJSON_ReplaceItemInObject(view, "layer_hazards",
				  qr_view_layer_hazards(a, L, NULL));
	free(text);
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
	/* the text is the buffer (a decoder's is 60 MB: no copy) */
	b.data = text;
	b.len = strlen(text);
	b.cap = b.len + 1;
	qr_buf_putc(&b, '\n');
	st = write_buf(dir, "report.json", &b, d);
	qr_buf_free(&b);
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

/* Append tpl to b with each {key} in it replaced by md_field(o, key). */
static void
md_fill(struct qr_buf *b, const cJSON *o, const char *tpl)
{
	const char *p = tpl, *open, *close;
	char key[64];

	while ((open = strchr(p, '{')) != NULL &&
	       (close = strchr(open, '}')) != NULL) {
		qr_buf_append(b, p, (size_t)(open - p));
		snprintf(key, sizeof key, "%.*s", (int)(close - open - 1),
			 open + 1);
		md_field(b, o, key);
		p = close + 1;
	}
	qr_buf_puts(b, p);
}

/* "- **Candidate 1 (qdq):** output cosine 0.9991; 3 layers below
 * threshold; error is born at conv3_2" per candidate. */
static void
summary_headlines(struct qr_buf *b, const cJSON *view)
{
	const cJSON *x, *v = cJSON_GetObjectItemCaseSensitive(view, "verdict");
	int any = 0;

	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(v, "lines")) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(x, "output");
		const cJSON *born = cJSON_GetObjectItemCaseSensitive(x, "born");

		any = 1;
		md_fill(b, x, "- **{label} ({format}):** ");
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x,
								   "compared"))) {
			md_fill(b, x, "activations not compared: {why}\n");
			continue;
		}
		if (cJSON_IsObject(o))
			md_fill(b, o, "output cosine {cos}; ");
		md_field(b, x, "n_flagged");
		qr_buf_puts(b, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
					 x, "one_flagged"))
			    ? " layer below threshold" : " layers below threshold");
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			    x, "has_suspect")))
			md_fill(b, x, "; {n_suspect} suspect pairing(s) left "
				"out");
		if (cJSON_IsObject(born))
			md_fill(b, born, "; error is born at {tensor} ({share} "
				"of the noise)");
		if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
			    x, "builds_up")))
			md_fill(b, cJSON_GetObjectItemCaseSensitive(
					x, "builds_up"),
				"; error builds up over many layers (largest "
				"layer {top})");
		qr_buf_puts(b, "\n");
	}
	if (any)
		qr_buf_puts(b, "\n");
}

/* "## Where the error comes from": each compared candidate's sources
 * sentence, then the layers whose inputs migration would help most. */
static void
summary_sources(struct qr_buf *b, const cJSON *view)
{
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(view, "act"), *x;
	int first = 1, shown = 0;

	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(act, "cands")) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(x, "sources");

		if (!cJSON_IsObject(s))
			continue;
		if (first)
			qr_buf_puts(b, "\n## Where the error comes from\n\n");
		first = 0;
		md_fill(b, x, "- {label}: ");
		md_fill(b, s, "{sentence}\n");
	}
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(act,
							      "outliers")) {
		if (shown == 0)
			qr_buf_puts(b, "\n## Activation outliers (SmoothQuant)"
				    "\n\n| # | layer | max / median | SQNR "
				    "as is (dB) | best alpha | best SQNR (dB) "
				    "| gain (dB) |\n"
				    "|--:|---|--:|--:|--:|--:|--:|\n");
		if (shown++ == SUMMARY_OUTLIERS)
			break;
		qr_buf_printf(b, "| %d | ", shown);
		md_fill(b, x, "{layer} | {ratio} | {sqnr} | {best_alpha} | "
			"{best_sqnr} | {gain} |\n");
	}
}

static void
summary_gate(struct qr_buf *b, const cJSON *view)
{
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(view, "gate"), *c;

	if (!cJSON_IsObject(g))
		return;
	qr_buf_puts(b, "## CI checks (--fail-if)\n\n");
	qr_buf_puts(b, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g,
								     "passed"))
		    ? "Every check passed.\n\n"
		    : "**Some checks failed** (exit code 3).\n\n");
	qr_buf_puts(b, "| check | result | matching items | worst |\n"
		    "|---|---|--:|---|\n");
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g, "checks")) {
		int passed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			c, "passed"));

		md_fill(b, c, "| {expr}");
		qr_buf_puts(b, passed ? " | passed | " : " | **FAILED** | ");
		md_fill(b, c, "{failures} of {items} | {worst} |\n");
	}
	qr_buf_puts(b, "\n");
}

static void
summary_compare(struct qr_buf *b, const cJSON *view)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(view, "compare"), *x;
	size_t shown = 0;

	if (!cJSON_IsObject(c))
		return;
	md_fill(b, c, "## Changes against {path}\n\n"
		"{regressed} regressed, {improved} improved, {same} unchanged, "
		"{new} new, {gone} gone (SQNR tolerance {tol_sqnr} dB, cosine "
		"{tol_cos}).\n\n");
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(c, "acts")) {
		const char *st = cJSON_GetObjectItemCaseSensitive(
			x, "status")->valuestring;

		if (strcmp(st, "regressed") != 0 && strcmp(st, "improved") != 0)
			continue;
		if (shown == 0)
			qr_buf_puts(b, "| candidate | tensor | SQNR old | SQNR new "
				    "| change (dB) | local change (dB) | status |\n"
				    "|--:|---|--:|--:|--:|--:|---|\n");
		if (shown++ == SUMMARY_WORST)
			break;
		md_fill(b, x, "| {candidate} | {name} | {sqnr_db_old} | "
			"{sqnr_db_new} | {sqnr_db_delta} | "
			"{local_sqnr_db_delta} | {status} |\n");
	}
	if (shown > 0)
		qr_buf_puts(b, "\n");
}

/* "## Hazards": one line per hazard, "- **Candidate 1** Saturation:
 * what. Fix: fix", the first SUMMARY_HAZARDS of them. */
static void
summary_hazards(struct qr_buf *b, const cJSON *view)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(view, "hazards");
	const char *part[2] = { "top", "more" };
	const cJSON *x;
	size_t shown = 0, all = 0;
	int k;

	qr_buf_puts(b, "\n## Hazards\n\n");
	for (k = 0; k < 2; k++)
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(
					   h, part[k])) {
			if (all++ >= SUMMARY_HAZARDS)
				continue;
			md_fill(b, x, "- **{candidate}** {title}: {what} "
				"Fix: {fix}\n");
			shown++;
		}
	if (all == 0)
		qr_buf_puts(b, "No hazard found.\n");
	else if (all > shown)
		qr_buf_printf(b, "- \xe2\x80\xa6 and %zu more in index.html\n",
			      all - shown);
}

static void
summary_worst_acts(struct qr_buf *b, const cJSON *view)
{
	const cJSON *x;
	int first = 1;

	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(view,
							      "worst_acts")) {
		if (first)
			qr_buf_puts(b, "\n## Worst layers on the data\n\n"
				    "| # | candidate | tensor | op | SQNR (dB) "
				    "| local SQNR (dB) | cosine |\n"
				    "|--:|--:|---|---|--:|--:|--:|\n");
		first = 0;
		qr_buf_printf(b, "| %d | ",
			      cJSON_GetObjectItemCaseSensitive(x, "rank")
				      ->valueint);
		md_fill(b, x, "{candidate} | {tensor} | {op} | {sqnr} | "
			"{local_sqnr} | {cos} |\n");
	}
}

/* Whether o[key] is a non-empty string. */
static int
summary_has(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) && v->valuestring[0] != '\0';
}

/* A decoder candidate's next-token line (llm: view_llm.c's object, or
 * null for other models). */
static void
summary_llm(struct qr_buf *b, const cJSON *llm)
{
	const cJSON *ppl = cJSON_GetObjectItemCaseSensitive(llm, "ppl");

	if (!cJSON_IsObject(llm))
		return;
	md_fill(b, llm, "    - next token ({positions} positions): KL "
		"{kl} nats, top-1 agreement {top1}, top-5 overlap {top5}");
	if (cJSON_IsObject(ppl))
		md_fill(b, ppl, "; perplexity {float} → {quant} ({change}, "
			"{tokens} tokens)");
	else
		qr_buf_puts(b, "; no perplexity (random token ids)");
	qr_buf_puts(b, "\n");
}

char *
qr_report_summary_md(const struct qr_analysis *a, const cJSON *view)
{
	struct qr_buf b = {0};
	const cJSON *x, *v;
	size_t shown = 0;

	qr_buf_puts(&b, "# qreport summary\n\n");
	summary_headlines(&b, view);
	md_fill(&b, cJSON_GetObjectItemCaseSensitive(view, "verdict"),
		"**Verdict:** {text}\n\n");
	summary_gate(&b, view);
	summary_compare(&b, view);
	qr_buf_puts(&b, "## Models\n\n"
		    "| model | path | format | nodes | parameters | size |\n"
		    "|---|---|---|--:|--:|--:|\n");
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(view, "models")) {
		md_fill(&b, x, "| {label} | {path} | {format} | {nodes} | "
			"{params} | {file_bytes} |\n");
	}
	v = cJSON_GetObjectItemCaseSensitive(view, "n_flagged");
	qr_buf_printf(&b, "\n## Key numbers\n\n"
		      "- Weight layers analysed: %zu; flagged: %.0f "
		      "(max relative range > %g or predicted per-tensor SQNR < %g dB)\n",
		      a->n_weights, cJSON_IsNumber(v) ? v->valuedouble : 0.0,
		      QR_BAD_REL_RANGE, QR_SQNR_BAD_DB);
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(view, "quants")) {
		md_fill(&b, x, "- {label} ({format}): {coverage_pct}% of "
			"compute nodes quantized, weights {compression} "
			"smaller, worst weight SQNR {worst_sqnr} dB "
			"({worst_layer})\n");
	}
	qr_buf_printf(&b, "- CLE sets found: %zu; blocked pairs: %zu",
		      a->n_cle, a->n_cle_blockers);
	qr_report_cle_md(&b, a);
	qr_buf_puts(&b, "\n");
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

			md_fill(&b, x, "  - {label}");
			if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
				    x, "compared"))) {
				md_fill(&b, x, ": not compared: {why}\n");
				continue;
			}
			if (cJSON_IsObject(mo) && summary_has(mo, "clause"))
				md_fill(&b, mo, ": output cosine {cos_mean}, "
					"{clause}");
			else if (cJSON_IsObject(mo))
				md_fill(&b, mo, ": output cosine {cos_mean}, "
					"top-1 agreement {top1}");
			md_fill(&b, x, "; layers below threshold: {n_flagged}");
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
				    x, "has_suspect")))
				md_fill(&b, x, "; suspect pairings left out of "
					"the verdicts: {n_suspect} (their error "
					"vanishes in the next layer: not the "
					"same values)");
			if (cJSON_IsObject(born))
				md_fill(&b, born, "; error is born at {tensor} "
					"({share} of the noise)");
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
				    x, "builds_up")))
				qr_buf_puts(&b, "; error builds up over many "
					    "layers");
			qr_buf_puts(&b, "\n");
			summary_llm(&b, cJSON_GetObjectItemCaseSensitive(
					    x, "llm"));
		}
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			    v, "has_skipped")))
			md_fill(&b, v, "- {skipped_line}:\n");
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(
					      v, "skipped")) {
			qr_buf_puts(&b, "  - ");
			qr_md_escape(&b, x->valuestring);
			qr_buf_puts(&b, "\n");
		}
	} else if (a->data.why != NULL) {
		qr_buf_puts(&b, "- Activations not compared: ");
		qr_md_escape(&b, a->data.why);
		qr_buf_puts(&b, "\n");
	}

	summary_hazards(&b, view);
	summary_worst_acts(&b, view);
	summary_sources(&b, view);
	qr_report_sens_md(&b, view);
	qr_buf_puts(&b, "\n## Worst weight layers\n\n");
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
		md_fill(&b, v, "{layer} | {op} | {max_rel_range} | "
			"{n_outliers} | {sqnr_pt} | {sqnr_pc} |\n");
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
	/* Swap the two folders in one step (Linux renameat2), so target
	 * always names a whole report; then tmp holds the old one. */
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, target, RENAME_EXCHANGE) == 0) {
		if (qr_remove_tree(tmp) != 0)
			qr_warnf(d, "could not remove the previous report '%s'",
				 tmp);
		return QR_OK;
	}
	/* Filesystems without the exchange: move aside, then into place. */
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
	char *layers = qr_path_join(dir, "layers");
	cJSON *json = NULL, *view = NULL;
	struct qr_report_layers *L = NULL;
	struct qr_chart_queue q = { charts, NULL, 0, NULL };
	struct qr_buf b = {0};
	int compare = opts != NULL && opts->compare != NULL;

	if ((st = qr_mkdirs(charts, d)) != QR_OK ||
	    (st = qr_mkdirs(assets, d)) != QR_OK ||
	    (st = qr_mkdirs(layers, d)) != QR_OK)
		goto out;
	if ((st = write_assets(dir, tdir, d)) != QR_OK)
		goto out;
	if ((st = qr_report_layers_new(a, opts ? opts->float_model : NULL,
				       &L, d)) != QR_OK)
		goto out;
	json = qr_report_json_new(a, opts, d);
	if (opts != NULL && opts->gate != NULL)
		cJSON_AddItemToObject(json, "gate",
				      qr_report_gate_eval(opts->gate, json));
	if (compare)
		cJSON_AddItemToObject(json, "compare",
				      qr_report_compare_new(opts->compare,
							    json));
	/* the charts are drawn on the other cores from here on, while the
	 * pages are written */
	if ((st = qr_report_view_new(a, opts, L, json, &q, &view, d)) !=
	    QR_OK)
		goto out;
	if ((st = write_json(dir, json, d)) != QR_OK)
		goto out;
	if ((b.data = qr_report_fallback_json(a)) != NULL) {
		b.len = strlen(b.data);
		if ((st = write_buf(dir, "fallback.json", &b, d)) != QR_OK)
			goto out;
		qr_buf_free(&b);
	}
	if ((st = qr_report_graph(a, L, dir, view, d)) != QR_OK)
		goto out;
	if ((st = write_pages(dir, tdir, view, compare, d)) != QR_OK)
		goto out;
	if ((st = write_layer_pages(a, L, dir, tdir, view, compare, d)) !=
	    QR_OK)
		goto out;
	b.data = qr_report_summary_md(a, view);
	b.len = strlen(b.data);
	if ((st = write_buf(dir, "summary.md", &b, d)) != QR_OK)
		goto out;
	if ((st = qr_report_chart_flush(&q, d)) != QR_OK)
		goto out;
	qr_buf_free(&b);
	qr_buf_printf(&b, "qreport report %s\n",
		      opts && opts->version ? opts->version : "");
	st = write_buf(dir, MARKER, &b, d);
out:
	qr_report_chart_queue_free(&q);
	qr_buf_free(&b);
	cJSON_Delete(view);
	cJSON_Delete(json);
	qr_report_layers_free(L);
	free(layers);
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
	if ((st = qr_tmpdir_make(target, &tmp, d)) != QR_OK)
		goto out;
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
	qr_cleanup_del(tmp);
out:
	free(tmp);
	free(parent);
	free(target);
	return st;
}
