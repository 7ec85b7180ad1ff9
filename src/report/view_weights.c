/*
 * report: the weight views. Float weight ranges per layer (weights.html),
 * the quantized candidates' weights (quant.html, model.html) and the CLE
 * sets (cle.html), with their charts and heatmaps.
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"
#include "chart/chart.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- weights ---- */

#define MAX_LISTED 24     /* outlier channels / scales listed in full */

/* o[key]: n indices (idx) or numbers (num; NULL: none) as "3, 7, 12",
 * the first MAX_LISTED, then "… (n in all)". */
static void
set_list(cJSON *o, const char *key, const size_t *idx, const float *num,
	 size_t n)
{
	struct qr_buf b = {0};
	size_t i;
	char buf[64], *s;

	for (i = 0; (idx != NULL || num != NULL) && i < n && i < MAX_LISTED;
	     i++) {
		if (idx != NULL)
			snprintf(buf, sizeof buf, "%zu", idx[i]);
		else
			qr_fmt_num(buf, sizeof buf, num[i]);
		qr_buf_printf(&b, "%s%s", i ? ", " : "", buf);
	}
	if (n > MAX_LISTED)
		qr_buf_printf(&b, ", \xe2\x80\xa6 (%zu in all)", n);
	s = qr_buf_take(&b);
	cJSON_AddStringToObject(o, key, s);
	free(s);
}

/* The max |w| per (output, input channel) matrix as a pixel-exact PNG
 * (stb_image_write via qr_heatmap_write, queued with the charts), rows =
 * output channels, with a colour bar. o["heat"] gets the HTML, or null. */
static void
weight_heat(struct qr_view_ctx *cc, cJSON *o, const struct qr_weight_stats *w)
{
	struct qr_buf file = {0}, b = {0};
	size_t side, i, n = w->heat_rows * w->heat_cols;
	float vmax = 0;
	char *f, *html, vbuf[32];
	int cell;

	/* A single input channel (depthwise, first layer) repeats the range
	 * chart: no heatmap then. */
	if (w->heat == NULL || n == 0 || w->heat_cols < 2) {
		cJSON_AddNullToObject(o, "heat");
		return;
	}
	for (i = 0; i < n; i++)
		if (isfinite(w->heat[i]) && w->heat[i] > vmax)
			vmax = w->heat[i];
	side = w->heat_rows > w->heat_cols ? w->heat_rows : w->heat_cols;
	cell = (int)(384 / side);
	cell = cell < 1 ? 1 : cell > 12 ? 12 : cell;
	qr_safe_name(&file, "h", cc->next++, w->layer);
	qr_buf_puts(&file, ".png");
	f = qr_buf_take(&file);
	/* One pixel per channel pair; the page scales it up with
	 * image-rendering: pixelated. */
	qr_report_heatmap_queue(cc->q, f, w->heat, w->heat_rows,
				w->heat_cols, 1, 0.0f, vmax > 0 ? vmax : 1.0f);
	qr_fmt_num(vbuf, sizeof vbuf, vmax);
	qr_buf_puts(&b, "<figure class=\"heat\"><img src=\"charts/");
	qr_html_escape(&b, f);
	qr_buf_printf(&b, "\" width=\"%zu\" height=\"%zu\" alt=\"",
		      w->heat_cols * (size_t)cell, w->heat_rows * (size_t)cell);
	qr_buf_puts(&b, "Heatmap of max |w| per output and input channel of ");
	qr_html_escape(&b, qr_or_empty(w->layer));
	qr_buf_printf(&b, "\"><figcaption>max |w| per output channel (row) "
		      "and input channel (column)%s; "
		      "<span class=\"colorbar\" style=\"background:"
		      "linear-gradient(to right,#%06x,#%06x,#%06x)\">"
		      "</span> 0 to %s</figcaption></figure>",
		      w->heat_rows * w->heat_cols < (size_t)w->channels ?
			      ", pooled" : "",
		      qr_heatmap_color(0), qr_heatmap_color(0.5),
		      qr_heatmap_color(1), vbuf);
	html = qr_buf_take(&b);
	cJSON_AddStringToObject(o, "heat", html);
	free(html);
	free(f);
}

static enum qr_status
weight_chart(struct qr_view_ctx *cc, cJSON *o, const struct qr_weight_stats *w,
	     size_t i)
{
	enum qr_status st;
	struct qr_series s[3];
	struct qr_mark *marks;
	struct qr_chart_spec spec = {0};
	double *mn, *mx, *mean;
	char **titles, *title, *alt;
	size_t c, nd = 0;

	if (w->channels == 0 || w->ch_min == NULL) {
		cJSON_AddNullToObject(o, "chart");
		return QR_OK;
	}
	mn = xcalloc(w->channels, sizeof *mn);
	mx = xcalloc(w->channels, sizeof *mx);
	mean = xcalloc(w->channels, sizeof *mean);
	titles = xcalloc(w->channels, sizeof *titles);
	marks = xcalloc(w->n_outliers + 1, sizeof *marks);
	for (c = 0; c < w->channels; c++) {
		int dead = nd < w->n_dead && w->dead[nd] == c;

		nd += (size_t)dead;
		mn[c] = w->ch_min[c];
		mx[c] = w->ch_max[c];
		mean[c] = w->ch_mean != NULL ? w->ch_mean[c] : NAN;
		if (dead)
			titles[c] = xasprintf("%s, channel %zu: min %.4g, max %.4g, mean %.4g, dead (left out of the relative range)",
					      qr_or_empty(w->layer), c, mn[c],
					      mx[c], mean[c]);
		else
			titles[c] = xasprintf("%s, channel %zu: min %.4g, max %.4g, mean %.4g, relative range %.3g",
					      qr_or_empty(w->layer), c, mn[c],
					      mx[c], mean[c],
					      w->rel_range ? w->rel_range[c]
							   : NAN);
	}
	for (c = 0; c < w->n_outliers; c++) {
		marks[c].series = 1;
		marks[c].index = w->outliers[c];
	}
	s[0] = (struct qr_series){ "min", mn, NULL, w->channels,
				   QR_STYLE_LINE, 0 };
	s[1] = (struct qr_series){ "max", mx, NULL, w->channels,
				   QR_STYLE_LINE, 1 };
	s[2] = (struct qr_series){ "mean", mean, NULL, w->channels,
				   QR_STYLE_DOTTED, 2 };
	title = xasprintf("%s: weight range per output channel",
			  qr_or_empty(w->layer));
	alt = xasprintf("Per-channel min, max and mean of %s; %zu outlier channels ringed",
			qr_or_empty(w->layer), w->n_outliers);
	spec.title = title;
	spec.xlabel = "output channel";
	spec.ylabel = "weight value";
	spec.width = 760;
	spec.height = 260;
	spec.n_series = 3;
	spec.series = s;
	spec.n_marks = w->n_outliers;
	spec.marks = marks;
	st = qr_view_chart(cc, o, "chart", "w", w->layer, &spec, alt, NULL,
			   titles);
	if (st == QR_OK)
		weight_heat(cc, o, w);
	free(alt);
	free(title);
	free(marks);
	qr_strv_free(titles, w->channels);
	free(mean);
	free(mx);
	free(mn);
	(void)i;
	return st;
}

static cJSON *
weight_view(const struct qr_weight_stats *w, size_t i)
{
	cJSON *o = cJSON_CreateObject();

	qr_view_fmt(o, "anchor", "w-%zu", i);
	qr_view_str(o, "layer", w->layer);
	qr_view_str(o, "op", w->op);
	qr_view_str(o, "weight", w->weight);
	qr_view_str(o, "shape", w->shape);
	cJSON_AddNumberToObject(o, "axis", w->axis);
	qr_view_count(o, "channels", w->channels);
	qr_view_count(o, "elements", w->n_elem);
	qr_view_num(o, "max_rel_range", w->max_rel_range);
	qr_view_str(o, "rel_class", qr_rel_class(w->max_rel_range));
	qr_view_num(o, "tukey_fence", w->tukey_fence);
	qr_view_count(o, "n_outliers", w->n_outliers);
	set_list(o, "outliers", w->outliers, NULL, w->n_outliers);
	qr_view_count(o, "zero_range", w->n_zero_range);
	qr_view_count(o, "n_dead", w->n_dead);
	cJSON_AddBoolToObject(o, "dead", w->n_dead > 0);
	set_list(o, "dead_list", w->dead, NULL, w->n_dead);
	qr_view_sqnr(o, "sqnr_pt", w->sqnr_per_tensor_db);
	qr_view_str(o, "sqnr_pt_class", qr_sqnr_class(w->sqnr_per_tensor_db));
	qr_view_sqnr(o, "sqnr_pc", w->sqnr_per_channel_db);
	qr_view_str(o, "sqnr_pc_class", qr_sqnr_class(w->sqnr_per_channel_db));
	qr_view_sqnr(o, "sqnr_gain",
		     w->sqnr_per_channel_db - w->sqnr_per_tensor_db);
	cJSON_AddBoolToObject(o, "flagged", qr_layer_flagged(w));
	return o;
}

static int
cmp_rel_desc(const void *pa, const void *pb)
{
	const struct qr_weight_stats *a = *(const struct qr_weight_stats *const *)pa;
	const struct qr_weight_stats *b = *(const struct qr_weight_stats *const *)pb;

	if (a->max_rel_range != b->max_rel_range)
		return a->max_rel_range < b->max_rel_range ? 1 : -1;
	return (a->sqnr_per_tensor_db > b->sqnr_per_tensor_db) -
	       (a->sqnr_per_tensor_db < b->sqnr_per_tensor_db);
}

/* The model-level charts: max relative range per layer (log y, with the
 * bad threshold and the Tukey fence of the layers) and predicted SQNR per
 * tensor vs per channel. */
enum qr_status
qr_view_weight_charts(struct qr_view_ctx *cc, const struct qr_analysis *a,
		      cJSON *charts)
{
	enum qr_status st = QR_OK;
	size_t n = a->n_weights, i;
	double *rr, *pt, *pc, q1, q3, fence = NAN;
	float *rrf;
	const char **ticks;
	char **hrefs, **titles, **titles2;
	struct qr_series s[2];
	struct qr_hline hl[2];
	struct qr_chart_spec spec = {0};
	char pt_s[64], pc_s[64];

	if (n == 0) {
		cJSON_AddNullToObject(charts, "rel_range");
		cJSON_AddNullToObject(charts, "sqnr");
		return QR_OK;
	}
	rr = xcalloc(n, sizeof *rr);
	rrf = xcalloc(n, sizeof *rrf);
	pt = xcalloc(n, sizeof *pt);
	pc = xcalloc(n, sizeof *pc);
	ticks = xcalloc(n, sizeof *ticks);
	hrefs = xcalloc(n, sizeof *hrefs);
	titles = xcalloc(n, sizeof *titles);
	titles2 = xcalloc(n, sizeof *titles2);
	for (i = 0; i < n; i++) {
		const struct qr_weight_stats *w = &a->weights[i];

		rr[i] = qr_plottable(w->max_rel_range);
		rrf[i] = (float)w->max_rel_range;
		pt[i] = qr_plottable(w->sqnr_per_tensor_db);
		pc[i] = qr_plottable(w->sqnr_per_channel_db);
		ticks[i] = qr_or_empty(w->layer);
		hrefs[i] = qr_view_href(cc, w->layer, "weights.html#w-%zu", i);
		titles[i] = xasprintf("%s (%s): max relative range %.4g",
				      ticks[i], qr_or_empty(w->op),
				      w->max_rel_range);
		qr_fmt_sqnr(pt_s, sizeof pt_s, w->sqnr_per_tensor_db);
		qr_fmt_sqnr(pc_s, sizeof pc_s, w->sqnr_per_channel_db);
		titles2[i] = xasprintf("%s: predicted SQNR %s dB per tensor, %s dB per channel",
				       ticks[i], pt_s, pc_s);
	}
	if (n >= 4)
		fence = qr_tukey_fence(rrf, n, 1.5, &q1, &q3);
	hl[0] = (struct qr_hline){ QR_BAD_REL_RANGE, "bad" };
	hl[1] = (struct qr_hline){ fence, "Tukey fence" };
	s[0] = (struct qr_series){ "max relative range", rr, NULL, n,
				   QR_STYLE_BARS, 0 };
	spec.title = "Max relative weight range per layer";
	spec.xlabel = "layer (topological order)";
	spec.ylabel = "max relative range (log)";
	spec.width = 960;
	spec.height = 320;
	spec.log_y = 1;
	spec.n_series = 1;
	spec.series = s;
	spec.xticks = ticks;
	spec.hlines = hl;
	spec.n_hlines = isfinite(fence) && fence > 0 ? 2 : 1;
	st = qr_view_chart(cc, charts, "rel_range", "model-", "rel-range",
			   &spec, "Max relative weight range per layer; bars above the threshold line are layers to look at",
			   hrefs, titles);
	if (st != QR_OK)
		goto out;
	cJSON_AddItemToObject(charts, "rel_range_fence", qr_json_num(fence));

	s[0] = (struct qr_series){ "per tensor", pt, NULL, n, QR_STYLE_LINE, 1 };
	s[1] = (struct qr_series){ "per channel", pc, NULL, n, QR_STYLE_LINE,
				   0 };
	hl[0] = (struct qr_hline){ QR_SQNR_BAD_DB, "bad" };
	memset(&spec, 0, sizeof spec);
	spec.title = "Predicted int8 weight SQNR: per tensor vs per channel";
	spec.xlabel = "layer (topological order)";
	spec.ylabel = "SQNR (dB)";
	spec.width = 960;
	spec.height = 300;
	spec.n_series = 2;
	spec.series = s;
	spec.xticks = ticks;
	spec.hlines = hl;
	spec.n_hlines = 1;
	st = qr_view_chart(cc, charts, "sqnr", "model-", "sqnr", &spec,
			   "Predicted int8 weight SQNR per layer, per tensor and per channel",
			   hrefs, titles2);
out:
	qr_strv_free(titles2, n);
	qr_strv_free(titles, n);
	qr_strv_free(hrefs, n);
	free(ticks);
	free(pc);
	free(pt);
	free(rrf);
	free(rr);
	return st;
}

enum qr_status
qr_view_weights(struct qr_view_ctx *cc, const struct qr_analysis *a,
		cJSON *root)
{
	enum qr_status st = QR_OK;
	const struct qr_weight_stats **order;
	cJSON *arr, *probs, *top;
	size_t i, n_flagged = 0;

	arr = cJSON_AddArrayToObject(root, "weights");
	for (i = 0; i < a->n_weights && st == QR_OK; i++) {
		cJSON *o = weight_view(&a->weights[i], i);

		qr_view_page(cc, o, a->weights[i].layer);
		cJSON_AddItemToArray(arr, o);
		st = weight_chart(cc, o, &a->weights[i], i);
	}
	if (st != QR_OK)
		return st;
	order = xcalloc(a->n_weights + 1, sizeof *order);
	for (i = 0; i < a->n_weights; i++)
		order[i] = &a->weights[i];
	qsort(order, a->n_weights, sizeof *order, cmp_rel_desc);
	probs = cJSON_AddArrayToObject(root, "problems");
	top = cJSON_AddArrayToObject(root, "problems_top");
	for (i = 0; i < a->n_weights; i++) {
		size_t idx = (size_t)(order[i] - a->weights);
		cJSON *o;

		if (!qr_layer_flagged(order[i]))
			continue;
		o = cJSON_Duplicate(cJSON_GetArrayItem(arr, (int)idx), 1);
		cJSON_DeleteItemFromObject(o, "chart");
		cJSON_AddNumberToObject(o, "rank", (double)++n_flagged);
		if (n_flagged <= QR_TOP_PROBLEMS)
			cJSON_AddItemToArray(top, cJSON_Duplicate(o, 1));
		cJSON_AddItemToArray(probs, o);
	}
	cJSON_AddNumberToObject(root, "n_flagged", (double)n_flagged);
	cJSON_AddBoolToObject(root, "has_problems", n_flagged > 0);
	cJSON_AddBoolToObject(root, "more_problems",
			      n_flagged > QR_TOP_PROBLEMS);
	free(order);
	return QR_OK;
}

/* ---- quantized candidates ---- */

static void
set_range(cJSON *o, const char *key, double lo, double hi)
{
	char a[64], b[64];

	qr_fmt_num(a, sizeof a, lo);
	qr_fmt_num(b, sizeof b, hi);
	if (lo == hi)
		cJSON_AddStringToObject(o, key, a);
	else
		qr_view_fmt(o, key, "%s \xe2\x80\xa6 %s", a, b);
}

static cJSON *
pair_view(const struct qr_analysis *a, const struct qr_quant_weight *q,
	  size_t i)
{
	cJSON *o = cJSON_CreateObject();
	size_t k;

	size_t channels = 1; /* of the float weight, when it is known */

	cJSON_AddNullToObject(o, "float_anchor");
	for (k = 0; q->layer != NULL && k < a->n_weights; k++) {
		if (a->weights[k].layer != NULL &&
		    strcmp(a->weights[k].layer, q->layer) == 0) {
			cJSON_DeleteItemFromObject(o, "float_anchor");
			qr_view_fmt(o, "float_anchor", "w-%zu", k);
			channels = a->weights[k].channels;
			break;
		}
	}

	qr_view_fmt(o, "anchor", "qw-%zu", i);
	qr_view_str(o, "layer", q->layer);
	qr_view_str(o, "quant_layer", q->quant_layer);
	qr_view_str(o, "weight", q->weight);
	qr_view_str(o, "quant_weight", q->quant_weight);
	qr_view_str(o, "match", qr_match_name(q->match));
	qr_view_str(o, "match_reason", q->match_reason);
	if (q->block_size)
		qr_view_fmt(o, "granularity", "%s (%zu)", q->granularity,
			    q->block_size);
	else
		qr_view_str(o, "granularity", q->granularity);
	cJSON_AddNumberToObject(o, "bits", q->bits);
	qr_view_sqnr(o, "sqnr", q->sqnr_db);
	qr_view_str(o, "sqnr_class", qr_sqnr_class(q->sqnr_db));
	qr_view_count(o, "clipped", q->clipped);
	/* Symmetric scales put each slice's largest weight at the limit, so
	 * about one value per channel is by design; warn beyond that. With
	 * 4-bit blocks a sixth of the codes sit at a limit by design (16
	 * levels over each block's own range): warn only when values fell
	 * outside the range (out_of_range). */
	qr_view_str(o, "clipped_class",
		    q->block_size ? (q->out_of_range * 100 > q->n_elem ? "warn" : "")
		    : q->clipped > 2 * channels && q->clipped * 100 > q->n_elem
			? "warn" : "");
	qr_view_count(o, "elements", q->n_elem);
	qr_view_bytes(o, "float_bytes", q->float_bytes);
	qr_view_bytes(o, "quant_bytes", q->quant_bytes);
	qr_view_fmt(o, "compression", "%.2f\xc3\x97", q->compression); /* × */
	return o;
}

static enum qr_status
compression_chart(struct qr_view_ctx *cc, const struct qr_analysis *a,
		  size_t k, cJSON *o)
{
	enum qr_status st = QR_OK;
	size_t n = 0, i, j = 0;
	double *v;
	const char **ticks;
	char **hrefs, **titles;
	struct qr_series s;
	struct qr_chart_spec spec = {0};
	char name[48];

	for (i = 0; i < a->n_qweights; i++)
		n += a->qweights[i].quant == k;
	if (n == 0) {
		cJSON_AddNullToObject(o, "compression_chart");
		return QR_OK;
	}
	v = xcalloc(n, sizeof *v);
	ticks = xcalloc(n, sizeof *ticks);
	hrefs = xcalloc(n, sizeof *hrefs);
	titles = xcalloc(n, sizeof *titles);
	for (i = 0; i < a->n_qweights; i++) {
		const struct qr_quant_weight *q = &a->qweights[i];

		if (q->quant != k)
			continue;
		v[j] = qr_plottable(q->compression);
		ticks[j] = qr_or_empty(q->layer);
		hrefs[j] = qr_view_href(cc, q->layer, "quant.html#qw-%zu", i);
		titles[j] = xasprintf("%s: %.2fx smaller (%zu to %zu bytes)",
				      ticks[j], q->compression,
				      q->float_bytes, q->quant_bytes);
		j++;
	}
	s = (struct qr_series){ "compression", v, NULL, n, QR_STYLE_BARS, 3 };
	spec.title = "Weight compression per layer (float bytes / quantized bytes)";
	spec.xlabel = "layer";
	spec.ylabel = "compression (\xc3\x97)";
	spec.width = 960;
	spec.height = 280;
	spec.n_series = 1;
	spec.series = &s;
	spec.xticks = ticks;
	snprintf(name, sizeof name, "compression-q%zu", k + 1);
	st = qr_view_chart(cc, o, "compression_chart", "model-", name, &spec,
			   "Weight compression per layer", hrefs, titles);
	qr_strv_free(titles, n);
	qr_strv_free(hrefs, n);
	free(ticks);
	free(v);
	return st;
}

enum qr_status
qr_view_quant(struct qr_view_ctx *cc, const struct qr_analysis *a, size_t k,
	      cJSON **out)
{
	const struct qr_quant_summary *s = &a->quants[k];
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	double worst = INFINITY, ratio;
	const char *worst_layer = NULL;
	size_t i, n_pairs = 0;

	*out = o;
	qr_view_fmt(o, "anchor", "q-%zu", k);
	qr_view_fmt(o, "label", "Candidate %zu", k + 1);
	qr_view_str(o, "path", s->path);
	qr_view_str(o, "format", qr_qformat_name(s->format));
	arr = cJSON_AddArrayToObject(o, "layers");
	for (i = 0; i < s->n_layers; i++) {
		const struct qr_quant_layer *l = &s->layers[i];
		cJSON *x = cJSON_CreateObject();

		qr_view_str(x, "layer", l->layer);
		qr_view_str(x, "op", l->op);
		qr_view_str(x, "weight", l->weight);
		qr_view_str(x, "dtype", l->weight_dtype);
		cJSON_AddNumberToObject(x, "bits", l->bits);
		if (l->block_size)
			qr_view_fmt(x, "granularity", "per-block (%zu along "
				    "axis %d)", l->block_size, l->axis);
		else if (l->per_channel)
			qr_view_fmt(x, "granularity", "per-channel (axis %d)",
				    l->axis);
		else
			qr_view_str(x, "granularity", "per-tensor");
		qr_view_count(x, "n_scales", l->n_scales);
		set_range(x, "scales", l->scale_min, l->scale_max);
		set_range(x, "zero_points", l->zp_min, l->zp_max);
		qr_view_str(x, "act", l->act_quantized ? "quantized" : "float");
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddBoolToObject(o, "has_layers", s->n_layers > 0);
	cJSON_AddItemToObject(o, "coverage", qr_json_coverage(s));
	qr_view_count(o, "n_quantized", s->n_quantized);
	qr_view_count(o, "n_coverage", s->n_coverage);
	qr_view_count(o, "n_float", s->n_coverage - s->n_quantized);
	qr_view_fmt(o, "coverage_pct", "%.0f", s->n_coverage ?
		    100.0 * s->n_quantized / s->n_coverage : 0.0);
	qr_view_bytes(o, "float_bytes", s->float_bytes);
	qr_view_bytes(o, "quant_bytes", s->quant_bytes);
	ratio = s->quant_bytes ? (double)s->float_bytes / s->quant_bytes : NAN;
	qr_view_finite(o, "compression", "%.2f\xc3\x97", ratio);

	arr = cJSON_AddArrayToObject(o, "pairs");
	for (i = 0; i < a->n_qweights; i++) {
		const struct qr_quant_weight *q = &a->qweights[i];

		if (q->quant != k)
			continue;
		x = pair_view(a, q, i);
		qr_view_page(cc, x, q->layer);
		cJSON_AddItemToArray(arr, x);
		n_pairs++;
		if (q->sqnr_db < worst) {
			worst = q->sqnr_db;
			worst_layer = q->layer;
		}
	}
	qr_view_count(o, "n_pairs", n_pairs);
	cJSON_AddBoolToObject(o, "has_pairs", n_pairs > 0);
	qr_view_sqnr(o, "worst_sqnr", n_pairs ? worst : NAN);
	qr_view_str(o, "worst_sqnr_class",
		    qr_sqnr_class(n_pairs ? worst : NAN));
	qr_view_str(o, "worst_layer", worst_layer);
	return compression_chart(cc, a, k, o);
}

/* ---- CLE ---- */

static enum qr_status
cle_layer_chart(struct qr_view_ctx *cc, const struct qr_cle_layer *l,
		size_t set, cJSON *o)
{
	enum qr_status st;
	struct qr_series s[4];
	struct qr_chart_spec spec = {0};
	double *v[4];
	size_t c, k, n = l->channels;
	char *title, *alt;

	if (n == 0 || l->min_before == NULL || l->max_before == NULL ||
	    l->min_after == NULL || l->max_after == NULL) {
		cJSON_AddNullToObject(o, "chart");
		return QR_OK;
	}
	for (k = 0; k < 4; k++)
		v[k] = xcalloc(n, sizeof *v[k]);
	for (c = 0; c < n; c++) {
		v[0][c] = l->min_before[c];
		v[1][c] = l->max_before[c];
		v[2][c] = l->min_after[c];
		v[3][c] = l->max_after[c];
	}
	s[0] = (struct qr_series){ "min before", v[0], NULL, n,
				   QR_STYLE_DOTTED, 0 };
	s[1] = (struct qr_series){ "max before", v[1], NULL, n,
				   QR_STYLE_DOTTED, 1 };
	s[2] = (struct qr_series){ "min after", v[2], NULL, n, QR_STYLE_LINE,
				   0 };
	s[3] = (struct qr_series){ "max after", v[3], NULL, n, QR_STYLE_LINE,
				   1 };
	title = xasprintf("%s: before (dotted) / after (solid) equalization",
			  qr_or_empty(l->name));
	alt = xasprintf("Per-channel weight min and max of %s before and after cross-layer equalization",
			qr_or_empty(l->name));
	spec.title = title;
	spec.xlabel = "output channel";
	spec.ylabel = "weight value";
	spec.width = 560;
	spec.height = 240;
	spec.n_series = 4;
	spec.series = s;
	st = qr_view_chart(cc, o, "chart", "cle", l->name, &spec, alt, NULL,
			   NULL);
	free(alt);
	free(title);
	for (k = 0; k < 4; k++)
		free(v[k]);
	(void)set;
	return st;
}

enum qr_status
qr_view_cle(struct qr_view_ctx *cc, const struct qr_cle_set *c, size_t i,
	    cJSON **out)
{
	enum qr_status st = QR_OK;
	cJSON *o = cJSON_CreateObject(), *arr;
	struct qr_buf title = {0};
	size_t k, nl = c->n_layers < 3 ? c->n_layers : 3;
	char *t;

	*out = o;
	qr_view_fmt(o, "anchor", "cle-%zu", i);
	qr_view_fmt(o, "number", "%zu", i + 1);
	for (k = 0; k < nl; k++) {
		if (k > 0)
			qr_buf_printf(&title, " \xe2\x86\x92 %s \xe2\x86\x92 ",
				      qr_or_empty(c->joins[k - 1]));
		qr_buf_puts(&title, qr_or_empty(c->layers[k].name));
	}
	t = qr_buf_take(&title);
	qr_view_str(o, "title", t);
	free(t);
	qr_view_str(o, "kind", nl == 3 ? "triplet" : "pair");
	arr = cJSON_AddArrayToObject(o, "layers");
	for (k = 0; k < nl && st == QR_OK; k++) {
		const struct qr_cle_layer *l = &c->layers[k];
		cJSON *x = cJSON_CreateObject();

		cJSON_AddItemToArray(arr, x);
		qr_view_str(x, "name", l->name);
		qr_view_str(x, "op", l->op);
		qr_view_str(x, "depthwise", l->depthwise ? "yes" : "no");
		qr_view_str(x, "bn_folded", l->bn_folded ? "yes" : "no");
		qr_view_count(x, "channels", l->channels);
		st = cle_layer_chart(cc, l, i, x);
	}
	arr = cJSON_AddArrayToObject(o, "boundaries");
	for (k = 0; k + 1 < nl; k++) {
		cJSON *x = cJSON_CreateObject();
		float lo = INFINITY, hi = -INFINITY;
		size_t j;

		for (j = 0; c->scales[k] != NULL && j < c->n_scales[k]; j++) {
			if (c->scales[k][j] < lo)
				lo = c->scales[k][j];
			if (c->scales[k][j] > hi)
				hi = c->scales[k][j];
		}
		qr_view_str(x, "from", c->layers[k].name);
		qr_view_str(x, "to", c->layers[k + 1].name);
		qr_view_str(x, "join", c->joins[k]);
		qr_view_count(x, "n", c->n_scales[k]);
		if (c->n_scales[k] > 0)
			set_range(x, "range", lo, hi);
		else
			qr_view_num(x, "range", NAN);
		set_list(x, "values", NULL, c->scales[k], c->n_scales[k]);
		cJSON_AddItemToArray(arr, x);
	}
	qr_view_num(o, "rr_before", c->max_rel_range_before);
	qr_view_str(o, "rr_before_class",
		    qr_rel_class(c->max_rel_range_before));
	qr_view_num(o, "rr_after", c->max_rel_range_after);
	qr_view_str(o, "rr_after_class", qr_rel_class(c->max_rel_range_after));
	qr_view_sqnr(o, "sqnr_before", c->sqnr_per_tensor_before_db);
	qr_view_str(o, "sqnr_before_class",
		    qr_sqnr_class(c->sqnr_per_tensor_before_db));
	qr_view_sqnr(o, "sqnr_after", c->sqnr_per_tensor_after_db);
	qr_view_str(o, "sqnr_after_class",
		    qr_sqnr_class(c->sqnr_per_tensor_after_db));
	qr_view_sqnr(o, "sqnr_gain", c->sqnr_per_tensor_after_db -
					 c->sqnr_per_tensor_before_db);
	return st;
}
