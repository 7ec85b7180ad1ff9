/*
 * view_outputs: what the pages say of a graph output beyond cosine and
 * SQNR (src/analysis/outputs.c): a classifier's KL, top-1 and top-5 and
 * its class flips (a list, and the whole matrix for a few classes), a
 * segmenter's pixel agreement and per-class IoU, and a per-sample SQNR
 * chart for every output that is no classifier (activations page), with
 * the clause the verdict and summary.md give them.
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"
#include "chart/chart.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FLIPS_SHOWN 20   /* flip rows the page lists */
#define FLIPS_VERDICT 3  /* flips the verdict names */

/* "samples" when every sample is one row, else "rows". */
static const char *
rows_word(const struct qr_out_classes *c)
{
	return c->rows == c->samples ? "samples" : "rows";
}

/* Class i, with its name when the data names as many classes (new). */
static char *
class_label(const struct qr_analysis *a, size_t classes, size_t i)
{
	char *n = xasprintf("%zu", i);

	if (a->data.n_classes == classes && a->data.classes[i] != NULL &&
	    strcmp(a->data.classes[i], "") != 0 &&
	    strcmp(a->data.classes[i], n) != 0) {
		free(n);
		n = xasprintf("%zu %s", i, a->data.classes[i]);
	}
	return n;
}

/* See report-int.h. */
void
qr_view_flip_text(const struct qr_out_classes *c, struct qr_buf *b)
{
	size_t i;

	if (c->flipped == 0) {
		qr_buf_printf(b, "none of %zu %s flipped", c->rows,
			      rows_word(c));
		return;
	}
	qr_buf_printf(b, "%zu of %zu %s flipped: ", c->flipped, c->rows,
		      rows_word(c));
	for (i = 0; i < c->n_flips && i < FLIPS_VERDICT; i++) {
		qr_buf_printf(b, "%s%zu \xe2\x86\x92 %zu", i ? ", " : "",
			      c->flips[i].from, c->flips[i].to);
		if (c->flips[i].count > 1)
			qr_buf_printf(b, " x%zu", c->flips[i].count);
	}
	if (c->n_flips > FLIPS_VERDICT)
		qr_buf_printf(b, ", %zu more pairs", c->n_flips - FLIPS_VERDICT);
}

/* See report-int.h. */
void
qr_view_output_clause(const struct qr_act_output *p, struct qr_buf *b)
{
	const struct qr_out_classes *c = p->cls;
	const struct qr_out_seg *g = p->seg;
	char sq[32];

	if (c != NULL && c->rows > 0) {
		qr_buf_printf(b, ", top-1 agreement %.1f%% (", 100 * c->top1);
		qr_view_flip_text(c, b);
		qr_buf_printf(b, "), KL %.3g nats, top-%zu overlap %.1f%%",
			      c->kl_mean, c->k, 100 * c->top5);
	} else if (g != NULL && g->pixels > 0) {
		qr_buf_printf(b, ", pixel agreement %.2f%%, mIoU %.3f",
			      100.0 * g->agree / g->pixels, g->miou);
	} else if (p->samples > 0) {
		size_t i, w = 0;

		for (i = 1; i < p->samples; i++)
			if (p->sqnr_db[i] < p->sqnr_db[w])
				w = i;
		qr_fmt_sqnr(sq, sizeof sq, p->sqnr_total_db);
		qr_buf_printf(b, ", SQNR %s dB", sq);
		qr_fmt_sqnr(sq, sizeof sq, p->sqnr_db[w]);
		qr_buf_printf(b, " (worst sample %s dB)", sq);
	}
}

/* o.classes: the numbers, the flips and the matrix. */
static void
classes_view(const struct qr_analysis *a, const struct qr_out_classes *c,
	     cJSON *o)
{
	cJSON *arr, *x, *cells;
	struct qr_buf b = {0};
	size_t i, j;

	qr_view_count(o, "classes", c->classes);
	qr_view_str(o, "input", c->probabilities
		    ? "probabilities: each row divided by its sum"
		    : "logits: softmax taken");
	qr_view_finite(o, "kl", "%.4g", c->kl_mean);
	qr_view_finite(o, "kl_max", "%.4g", c->kl_max);
	qr_view_str(o, "kl_class", c->kl_mean > 0.1 ? "bad" :
		    c->kl_mean > 0.01 ? "warn" : "good");
	qr_view_finite(o, "top1", "%.2f%%", 100 * c->top1);
	qr_view_count(o, "k", c->k);
	qr_view_finite(o, "top5", "%.2f%%", 100 * c->top5);
	qr_view_flip_text(c, &b);
	qr_view_str(o, "flip_line", b.data ? b.data : "");
	qr_buf_free(&b);
	qr_view_str(o, "flip_class", c->flipped ? "bad" : "good");
	qr_view_count(o, "distinct", c->n_flips);
	arr = cJSON_AddArrayToObject(o, "flips");
	for (i = 0; i < c->n_flips && i < FLIPS_SHOWN; i++) {
		char *f = class_label(a, c->classes, c->flips[i].from);
		char *t = class_label(a, c->classes, c->flips[i].to);

		x = cJSON_CreateObject();
		qr_view_str(x, "from", f);
		qr_view_str(x, "to", t);
		qr_view_count(x, "count", c->flips[i].count);
		qr_view_fmt(x, "share", "%.0f%%",
			    100.0 * c->flips[i].count / c->flipped);
		cJSON_AddItemToArray(arr, x);
		free(t);
		free(f);
	}
	cJSON_AddBoolToObject(o, "has_flips", c->n_flips > 0);
	cJSON_AddBoolToObject(o, "more_flips", c->n_flips > FLIPS_SHOWN);
	qr_view_count(o, "shown", c->n_flips < FLIPS_SHOWN ? c->n_flips
			  : FLIPS_SHOWN);
	cJSON_AddBoolToObject(o, "has_matrix", c->matrix != NULL);
	arr = cJSON_AddArrayToObject(o, "matrix_head");
	for (j = 0; c->matrix != NULL && j < c->classes; j++) {
		char *l = class_label(a, c->classes, j);

		cJSON_AddItemToArray(arr, qr_json_str(l));
		free(l);
	}
	arr = cJSON_AddArrayToObject(o, "matrix");
	for (i = 0; c->matrix != NULL && i < c->classes; i++) {
		char *l = class_label(a, c->classes, i);

		x = cJSON_CreateObject();
		qr_view_str(x, "label", l);
		free(l);
		cells = cJSON_AddArrayToObject(x, "cells");
		for (j = 0; j < c->classes; j++) {
			uint64_t n = c->matrix[i * c->classes + j];
			cJSON *e = cJSON_CreateObject();

			if (n > 0)
				qr_view_count(e, "n", (size_t)n);
			else
				qr_view_str(e, "n", "");
			qr_view_str(e, "cls", i == j ? "diag" : n ? "bad" : "");
			cJSON_AddItemToArray(cells, e);
		}
		cJSON_AddItemToArray(arr, x);
	}
}

/* o.seg: pixel agreement, mIoU, IoU per class. */
static void
seg_view(const struct qr_analysis *a, const struct qr_out_seg *g, cJSON *o)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "iou");
	size_t i;

	qr_view_count(o, "classes", g->classes);
	qr_view_count(o, "pixels", (size_t)g->pixels);
	qr_view_finite(o, "agree", "%.2f%%", g->pixels
		       ? 100.0 * g->agree / g->pixels : NAN);
	qr_view_finite(o, "miou", "%.4f", g->miou);
	for (i = 0; i < g->classes; i++) {
		cJSON *x = cJSON_CreateObject();
		char *l = class_label(a, g->classes, i);

		qr_view_str(x, "label", l);
		free(l);
		qr_view_finite(x, "iou", "%.4f", g->uni[i] ? (double)
			       g->inter[i] / g->uni[i] : NAN);
		qr_view_count(x, "inter", (size_t)g->inter[i]);
		qr_view_count(x, "union", (size_t)g->uni[i]);
		cJSON_AddItemToArray(arr, x);
	}
}

/* See report-int.h. */
void
qr_view_output_metrics(const struct qr_analysis *a,
		       const struct qr_act_output *p, cJSON *o)
{
	struct qr_buf b = {0};
	cJSON *x;

	qr_view_str(o, "kind", qr_out_kind_name(p->kind));
	cJSON_AddNullToObject(o, "classes");
	cJSON_AddNullToObject(o, "seg");
	cJSON_AddNullToObject(o, "sqnr_chart");
	if (p->cls != NULL && p->cls->rows > 0) {
		x = cJSON_CreateObject();
		cJSON_ReplaceItemInObject(o, "classes", x);
		classes_view(a, p->cls, x);
	} else if (p->seg != NULL && p->seg->pixels > 0) {
		x = cJSON_CreateObject();
		cJSON_ReplaceItemInObject(o, "seg", x);
		seg_view(a, p->seg, x);
	}
	qr_view_output_clause(p, &b);
	/* the clause without its leading ", " */
	qr_view_str(o, "clause", b.len > 2 ? b.data + 2 : "");
	qr_buf_free(&b);
}

/* See report-int.h. */
void
qr_view_output_sample(const struct qr_act_output *p, size_t i, cJSON *x)
{
	const struct qr_out_classes *c = p->cls;
	const struct qr_out_seg *g = p->seg;

	qr_view_finite(x, "s_kl", "%.4g", c && i < c->samples ? c->kl[i] : NAN);
	qr_view_finite(x, "s_top1", "%.0f%%",
		       c && i < c->samples ? 100 * c->top1_s[i] : NAN);
	qr_view_finite(x, "s_top5", "%.0f%%",
		       c && i < c->samples ? 100 * c->top5_s[i] : NAN);
	qr_view_str(x, "s_top1_class", c && i < c->samples &&
		    c->top1_s[i] < 1 ? "bad" : "");
	qr_view_finite(x, "s_pix", "%.2f%%",
		       g && i < g->samples ? 100 * g->agree_s[i] : NAN);
}

/* The per-sample SQNR (and cosine, as -10 log10(1 - cos)) of output p
 * (number j of its candidate) into o.sqnr_chart. */
static enum qr_status
sqnr_chart(struct qr_view_ctx *cc, const struct qr_analysis *a,
	   const struct qr_act_output *p, size_t j, cJSON *o)
{
	size_t n = p->samples, i;
	double *sq = xcalloc(n + 1, sizeof *sq), *cd = xcalloc(n + 1,
								sizeof *cd);
	char **titles = xcalloc(n + 1, sizeof *titles);
	struct qr_series s[2];
	struct qr_hline hl = { a->data.sqnr_threshold, "threshold" };
	struct qr_chart_spec spec = {0};
	char name[48], v[32], *title;
	enum qr_status st;

	for (i = 0; i < n; i++) {
		sq[i] = qr_plottable(p->sqnr_db[i]);
		cd[i] = p->cosine[i] < 1 ? -10 * log10(1 - p->cosine[i]) : NAN;
		qr_fmt_sqnr(v, sizeof v, p->sqnr_db[i]);
		titles[i] = xasprintf("%s: SQNR %s dB, cosine %.6f",
				      i < a->data.samples
				      ? a->data.sample_names[i] : "?", v,
				      p->cosine[i]);
	}
	s[0] = (struct qr_series){ "SQNR", sq, NULL, n, QR_STYLE_LINE, 1 };
	s[1] = (struct qr_series){ "cosine, as -10 log10(1 - cosine)", cd,
				   NULL, n, QR_STYLE_DOTTED, 4 };
	title = xasprintf("Output %s: SQNR per sample (candidate %zu)",
			  p->name, p->quant + 1);
	spec.title = title;
	spec.xlabel = "sample (data order)";
	spec.ylabel = "dB";
	spec.width = 960;
	spec.height = 260;
	spec.n_series = 2;
	spec.series = s;
	spec.hlines = &hl;
	spec.n_hlines = 1;
	snprintf(name, sizeof name, "out-q%zu-%zu", p->quant + 1, j + 1);
	cJSON_DeleteItemFromObject(o, "sqnr_chart");
	st = qr_view_chart(cc, o, "sqnr_chart", "model-", name, &spec,
			   "The output's SQNR and cosine on each sample",
			   NULL, titles);
	free(title);
	qr_strv_free(titles, n);
	free(cd);
	free(sq);
	return st;
}

/* See report-int.h. */
enum qr_status
qr_view_output_charts(struct qr_view_ctx *cc, const struct qr_analysis *a,
		      cJSON *act)
{
	const cJSON *cands = cJSON_GetObjectItemCaseSensitive(act, "cands");
	enum qr_status st = QR_OK;
	size_t k, i, j;

	for (k = 0; k < a->n_quant && st == QR_OK; k++) {
		cJSON *outs = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(cands, (int)k), "outputs");

		for (i = 0, j = 0; i < a->n_act_outputs && st == QR_OK; i++) {
			const struct qr_act_output *p = &a->act_outputs[i];
			cJSON *o;

			if (p->quant != k)
				continue;
			o = cJSON_GetArrayItem(outs, (int)j);
			if (o != NULL && p->kind != QR_OUT_CLASSIFIER &&
			    p->samples > 0)
				st = sqnr_chart(cc, a, p, j, o);
			j++;
		}
	}
	return st;
}
