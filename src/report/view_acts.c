/*
 * report: the activation views. Float vs quantized activations on the
 * data (activations.html): per candidate its matched tensors, outputs and
 * depth charts, the float tensors' channel charts, the activation part
 * of the verdict and the overview's worst layers.
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

#define WORST_N 15        /* layers in the worst-N chart */

/* Cosine for display: enough digits to tell 0.9999 from 0.99999. */
static void
set_cos(cJSON *o, const char *key, double v)
{
	qr_view_finite(o, key, QR_COS_FMT, v);
}

/* "cosine, SQNR" flag names for display. */
static void
set_flags(cJSON *o, int f)
{
	static const struct { int bit; const char *name; } names[] = {
		{ QR_ACT_FLAG_COSINE, "cosine" },
		{ QR_ACT_FLAG_SQNR, "SQNR" },
		{ QR_ACT_FLAG_RMSE_SCALE, "rmse/scale" },
		{ QR_ACT_FLAG_SATURATION, "saturation" },
		{ QR_ACT_FLAG_NONFINITE, "NaN/Inf" },
		{ QR_ACT_FLAG_SHAPE, "shape differs" },
		{ QR_ACT_FLAG_CANCEL, "cancellation" },
		{ QR_ACT_FLAG_SUSPECT, "suspect pairing" },
	};
	struct qr_buf b = {0};
	size_t i;
	char *t;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (f & names[i].bit)
			qr_buf_printf(&b, "%s%s", b.len ? ", " : "",
				      names[i].name);
	t = qr_buf_take(&b);
	cJSON_AddStringToObject(o, "flags", t);
	/* a cancellation or a suspect pairing is a note, not a problem */
	cJSON_AddBoolToObject(o, "flagged", (f & QR_ACT_NOT_FINDING) == 0 &&
			      f != 0);
	cJSON_AddBoolToObject(o, "has_flags", f != 0);
	cJSON_AddStringToObject(o, "flags_class",
				(f & QR_ACT_NOT_FINDING) == 0 && f ? "bad" : "");
	free(t);
}

/* Pairs of candidate k, in depth order (indices into a->act_pairs). */
static size_t *
cand_pairs(const struct qr_analysis *a, size_t k, size_t *n)
{
	size_t *v = xcalloc(a->n_act_pairs + 1, sizeof *v), i;

	*n = 0;
	for (i = 0; i < a->n_act_pairs; i++)
		if (a->act_pairs[i].quant == k)
			v[(*n)++] = i;
	return v;
}

static const char *
tensor_name(const struct qr_analysis *a, size_t pair)
{
	return qr_or_empty(a->act_tensors[a->act_pairs[pair].tensor].name);
}

/* Sort order[0..n) by the cumulative SQNR of pair pv[order[i]] (pv
 * NULL: of pair order[i]), lowest first, ties kept in order. */
static void
sort_by_sqnr(const struct qr_analysis *a, const size_t *pv, size_t *order,
	     size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		size_t x = order[i];
		double v = a->act_pairs[pv != NULL ? pv[x] : x].sqnr_db;

		for (j = i; j > 0; j--) {
			size_t p = pv != NULL ? pv[order[j - 1]] : order[j - 1];

			if (a->act_pairs[p].sqnr_db <= v)
				break;
			order[j] = order[j - 1];
		}
		order[j] = x;
	}
}

/* Cosine along depth (mean line, min-max band), local vs cumulative SQNR
 * (two lines, one chart) and the worst-N layers (horizontal bars). */
static enum qr_status
act_depth_charts(struct qr_view_ctx *cc, const struct qr_analysis *a, size_t k,
		 const size_t *pv, size_t n, cJSON *o)
{
	enum qr_status st = QR_OK;
	double *mean, *lo, *hi, *cum, *loc, *worst;
	const char **ticks, **wticks;
	char **hrefs, **titles, **titles2, **whrefs, **wtitles;
	struct qr_series s[3];
	struct qr_hline hl;
	struct qr_chart_spec spec = {0};
	size_t i, *order, nw, nr = 0;
	char name[48], c1[64], c2[64];
	double thr_c = a->data.cos_threshold, thr_s = a->data.sqnr_threshold;

	if (n == 0) {
		cJSON_AddNullToObject(o, "cos_chart");
		cJSON_AddNullToObject(o, "sqnr_chart");
		cJSON_AddNullToObject(o, "worst_chart");
		return QR_OK;
	}
	mean = xcalloc(n, sizeof *mean);
	lo = xcalloc(n, sizeof *lo);
	hi = xcalloc(n, sizeof *hi);
	cum = xcalloc(n, sizeof *cum);
	loc = xcalloc(n, sizeof *loc);
	worst = xcalloc(n, sizeof *worst);
	ticks = xcalloc(n, sizeof *ticks);
	wticks = xcalloc(n, sizeof *wticks);
	hrefs = xcalloc(n, sizeof *hrefs);
	titles = xcalloc(n, sizeof *titles);
	titles2 = xcalloc(n, sizeof *titles2);
	whrefs = xcalloc(n, sizeof *whrefs);
	wtitles = xcalloc(n, sizeof *wtitles);
	order = xcalloc(n, sizeof *order);
	for (i = 0; i < n; i++) {
		const struct qr_act_pair *p = &a->act_pairs[pv[i]];

		mean[i] = qr_plottable(p->cosine_mean);
		lo[i] = qr_plottable(p->cosine_min);
		hi[i] = qr_plottable(p->cosine_max);
		cum[i] = qr_plottable(p->sqnr_db);
		loc[i] = qr_plottable(p->local_sqnr_db);
		ticks[i] = tensor_name(a, pv[i]);
		hrefs[i] = qr_view_href(cc, a->act_tensors[p->tensor].layer,
					"activations.html#ap-%zu", pv[i]);
		titles[i] = xasprintf("%s: cosine mean %.6f, min %.6f, max %.6f",
				      ticks[i], p->cosine_mean, p->cosine_min,
				      p->cosine_max);
		qr_fmt_sqnr(c1, sizeof c1, p->sqnr_db);
		qr_fmt_sqnr(c2, sizeof c2, p->local_sqnr_db);
		titles2[i] = xasprintf("%s: SQNR %s dB cumulative, %s dB local",
				       ticks[i], c1, c2);
		if (!(p->flags & QR_ACT_NOT_FINDING)) /* not ranked */
			order[nr++] = i;
	}
	s[0] = (struct qr_series){ "min\xe2\x80\x93max over samples", lo, hi,
				   n, QR_STYLE_BAND, 0 };
	s[1] = (struct qr_series){ "mean cosine", mean, NULL, n,
				   QR_STYLE_LINE, 0 };
	hl = (struct qr_hline){ thr_c, "threshold" };
	spec.title = "Cosine similarity along depth (float vs quantized)";
	spec.xlabel = "matched tensor (topological order)";
	spec.ylabel = "cosine similarity";
	spec.width = 960;
	spec.height = 300;
	spec.n_series = 2;
	spec.series = s;
	spec.xticks = ticks;
	spec.hlines = &hl;
	spec.n_hlines = 1;
	snprintf(name, sizeof name, "act-cos-q%zu", k + 1);
	st = qr_view_chart(cc, o, "cos_chart", "model-", name, &spec,
			   "Mean cosine similarity per matched tensor with its min-max band over samples",
			   hrefs, titles);
	if (st != QR_OK)
		goto out;

	memset(&spec, 0, sizeof spec);
	s[0] = (struct qr_series){ "cumulative (every error so far)", cum,
				   NULL, n, QR_STYLE_LINE, 1 };
	s[1] = (struct qr_series){ "local (float inputs: this layer's own)",
				   loc, NULL, n, QR_STYLE_DOTTED, 2 };
	hl = (struct qr_hline){ thr_s, "threshold" };
	spec.title = "Local vs cumulative SQNR along depth";
	spec.xlabel = "matched tensor (topological order)";
	spec.ylabel = "SQNR (dB)";
	spec.width = 960;
	spec.height = 320;
	spec.n_series = 2;
	spec.series = s;
	spec.xticks = ticks;
	spec.hlines = &hl;
	spec.n_hlines = 1;
	snprintf(name, sizeof name, "act-sqnr-q%zu", k + 1);
	st = qr_view_chart(cc, o, "sqnr_chart", "model-", name, &spec,
			   "Cumulative and local SQNR per matched tensor: where the two lines part, error is inherited; where local is low, the layer itself loses precision",
			   hrefs, titles2);
	if (st != QR_OK)
		goto out;

	/* worst N by cumulative SQNR (exact layers last) */
	sort_by_sqnr(a, pv, order, nr);
	nw = nr < WORST_N ? nr : WORST_N;
	if (nw == 0) {
		cJSON_AddNullToObject(o, "worst_chart");
		goto out;
	}
	for (i = 0; i < nw; i++) {
		const struct qr_act_pair *p = &a->act_pairs[pv[order[i]]];

		worst[i] = qr_plottable(p->sqnr_db);
		wticks[i] = ticks[order[i]];
		whrefs[i] = qr_view_href(cc, a->act_tensors[p->tensor].layer,
					 "activations.html#ap-%zu",
					 pv[order[i]]);
		qr_fmt_sqnr(c1, sizeof c1, p->sqnr_db);
		wtitles[i] = xasprintf("%s: SQNR %s dB", wticks[i], c1);
	}
	memset(&spec, 0, sizeof spec);
	s[0] = (struct qr_series){ "cumulative SQNR", worst, NULL, nw,
				   QR_STYLE_BARS, 3 };
	spec.title = "Worst layers by cumulative SQNR";
	spec.xlabel = "tensor";
	spec.ylabel = "SQNR (dB)";
	spec.width = 760;
	spec.height = (int)(60 + 22 * nw);
	spec.n_series = 1;
	spec.series = s;
	spec.xticks = wticks;
	spec.hlines = &hl;
	spec.n_hlines = 1;
	spec.horizontal = 1;
	snprintf(name, sizeof name, "act-worst-q%zu", k + 1);
	st = qr_view_chart(cc, o, "worst_chart", "model-", name, &spec,
			   "The matched tensors with the lowest cumulative SQNR",
			   whrefs, wtitles);
out:
	qr_strv_free(wtitles, n);
	qr_strv_free(whrefs, n);
	qr_strv_free(titles2, n);
	qr_strv_free(titles, n);
	qr_strv_free(hrefs, n);
	free(order);
	free(wticks);
	free(ticks);
	free(worst);
	free(loc);
	free(cum);
	free(hi);
	free(lo);
	free(mean);
	return st;
}

/* Histogram of float vs quantized values over the shared bins. */
static enum qr_status
act_hist_chart(struct qr_view_ctx *cc, const struct qr_analysis *a,
	       size_t pi, cJSON *o)
{
	const struct qr_act_pair *p = &a->act_pairs[pi];
	double f[QR_ACT_HIST_BINS], q[QR_ACT_HIST_BINS];
	char *ticks[QR_ACT_HIST_BINS], *title, *alt;
	struct qr_series s[2];
	struct qr_chart_spec spec = {0};
	double w = (p->hist_hi - p->hist_lo) / QR_ACT_HIST_BINS;
	enum qr_status st;
	size_t i;

	if (p->samples == 0 || !(w > 0)) {
		cJSON_AddNullToObject(o, "hist_chart");
		return QR_OK;
	}
	for (i = 0; i < QR_ACT_HIST_BINS; i++) {
		f[i] = (double)p->hist_float[i];
		q[i] = (double)p->hist_quant[i];
		ticks[i] = xasprintf("%.3g", p->hist_lo + (i + 0.5) * w);
	}
	s[0] = (struct qr_series){ "float", f, NULL, QR_ACT_HIST_BINS,
				   QR_STYLE_BARS, 0 };
	s[1] = (struct qr_series){ "quantized", q, NULL, QR_ACT_HIST_BINS,
				   QR_STYLE_LINE, 1 };
	title = xasprintf("%s: values, float vs candidate %zu",
			  tensor_name(a, pi), p->quant + 1);
	alt = xasprintf("Histogram of float and quantized values of %s over shared bins",
			tensor_name(a, pi));
	spec.title = title;
	spec.xlabel = "value (bin centre)";
	spec.ylabel = "count (log)";
	spec.log_y = 1;
	spec.width = 560;
	spec.height = 240;
	spec.n_series = 2;
	spec.series = s;
	spec.xticks = (const char *const *)ticks;
	st = qr_view_chart(cc, o, "hist_chart", "ah", tensor_name(a, pi), &spec,
			   alt, NULL, NULL);
	free(alt);
	free(title);
	for (i = 0; i < QR_ACT_HIST_BINS; i++)
		free(ticks[i]);
	return st;
}

/* Points a per-channel chart draws at most: past this, channels share a
 * point (a detector's [1, 159882, 4] anchors have 159882 "channels",
 * which took cairo minutes to draw one by one). */
#define CHAN_CHART_MAX 1024

/* Min of the finite values of v[a, b), or NaN (max when is_max). */
static double
finite_extreme(const float *v, size_t a, size_t b, int is_max)
{
	double r = NAN;
	size_t i;

	for (i = a; i < b; i++)
		if (isfinite(v[i]) && (isnan(r) || (is_max ? v[i] > r :
							 v[i] < r)))
			r = v[i];
	return r;
}

/* Per-channel min/max/mean of a float activation (MCT's view); past
 * CHAN_CHART_MAX channels, each point is a run of channels (their min,
 * max and mean of means), ticked with its first channel. */
static enum qr_status
act_channel_chart(struct qr_view_ctx *cc, const struct qr_act_tensor *t,
		  cJSON *o)
{
	enum qr_status st;
	struct qr_series s[3];
	struct qr_chart_spec spec = {0};
	double *mn, *mx, *mean;
	char *title, *alt, **ticks = NULL;
	size_t c, i, n = t->channels, m;

	if (n == 0) {
		cJSON_AddNullToObject(o, "chan_chart");
		return QR_OK;
	}
	m = n > CHAN_CHART_MAX ? CHAN_CHART_MAX : n;
	mn = xcalloc(m, sizeof *mn);
	mx = xcalloc(m, sizeof *mx);
	mean = xcalloc(m, sizeof *mean);
	if (m < n)
		ticks = xcalloc(m, sizeof *ticks);
	for (i = 0; i < m; i++) {
		size_t a = i * n / m, b = (i + 1) * n / m, k = 0;
		double sum = 0;

		mn[i] = finite_extreme(t->ch_min, a, b, 0);
		mx[i] = finite_extreme(t->ch_max, a, b, 1);
		for (c = a; c < b; c++)
			if (isfinite(t->ch_mean[c])) {
				sum += t->ch_mean[c];
				k++;
			}
		mean[i] = k ? sum / (double)k : NAN;
		if (ticks != NULL)
			ticks[i] = xasprintf("%zu", a);
	}
	s[0] = (struct qr_series){ "min", mn, NULL, m, QR_STYLE_LINE, 0 };
	s[1] = (struct qr_series){ "max", mx, NULL, m, QR_STYLE_LINE, 1 };
	s[2] = (struct qr_series){ "mean", mean, NULL, m, QR_STYLE_DOTTED, 2 };
	if (m < n) {
		title = xasprintf("%s: float activation per channel (%zu "
				  "channels, %zu a point)",
				  qr_or_empty(t->name), n, (n + m - 1) / m);
		alt = xasprintf("Per-channel min, max and mean of the float activation %s over all samples, %zu channels drawn as %zu runs of about %zu",
				qr_or_empty(t->name), n, m, (n + m - 1) / m);
	} else {
		title = xasprintf("%s: float activation per channel",
				  qr_or_empty(t->name));
		alt = xasprintf("Per-channel min, max and mean of the float activation %s over all samples",
				qr_or_empty(t->name));
	}
	spec.title = title;
	spec.xlabel = "channel";
	spec.ylabel = "activation value";
	spec.width = 560;
	spec.height = 240;
	spec.n_series = 3;
	spec.series = s;
	spec.xticks = (const char *const *)ticks;
	st = qr_view_chart(cc, o, "chan_chart", "ac", t->name, &spec, alt, NULL,
			   NULL);
	for (i = 0; ticks != NULL && i < m; i++)
		free(ticks[i]);
	free(ticks);
	free(alt);
	free(title);
	free(mean);
	free(mx);
	free(mn);
	return st;
}

static cJSON *
act_row(const struct qr_analysis *a, size_t pi, size_t rank)
{
	const struct qr_act_pair *p = &a->act_pairs[pi];
	const struct qr_act_tensor *t = &a->act_tensors[p->tensor];
	double tc = a->data.cos_threshold, ts = a->data.sqnr_threshold;
	cJSON *o = cJSON_CreateObject();

	qr_view_fmt(o, "anchor", "ap-%zu", pi);
	qr_view_fmt(o, "tensor_anchor", "at-%zu", p->tensor);
	cJSON_AddNumberToObject(o, "rank", (double)rank);
	qr_view_str(o, "tensor", t->name);
	qr_view_str(o, "layer", t->layer);
	qr_view_str(o, "op", t->op);
	qr_view_str(o, "shape", t->shape);
	qr_view_str(o, "quant_tensor", p->quant_tensor);
	qr_view_str(o, "quant_dtype", p->quant_dtype);
	qr_view_str(o, "match", qr_match_name(p->match));
	qr_view_str(o, "match_reason", p->match_reason);
	set_cos(o, "cos_mean", p->cosine_mean);
	qr_view_str(o, "cos_class", qr_cos_class(p->cosine_mean, tc));
	set_cos(o, "cos_min", p->cosine_min);
	qr_view_str(o, "cos_min_class", qr_cos_class(p->cosine_min, tc));
	set_cos(o, "local_cos", p->local_cosine_mean);
	qr_view_sqnr(o, "sqnr", p->sqnr_db);
	qr_view_str(o, "sqnr_class", qr_act_sqnr_class(p->sqnr_db, ts));
	qr_view_sqnr(o, "local_sqnr", p->local_sqnr_db);
	qr_view_str(o, "local_sqnr_class",
		    qr_act_sqnr_class(p->local_sqnr_db, ts));
	qr_view_num(o, "mse", p->mse);
	qr_view_num(o, "max_abs", p->max_abs);
	qr_view_num(o, "norm_l2", p->norm_l2);
	qr_view_num(o, "scale", p->has_qparams ? p->scale : NAN);
	qr_view_num(o, "zero_point", p->has_qparams ? p->zero_point : NAN);
	if (isfinite(p->saturation))
		qr_view_fmt(o, "saturation", "%.2f%%", 100 * p->saturation);
	else
		qr_view_num(o, "saturation", NAN);
	qr_view_str(o, "saturation_class",
		    p->flags & QR_ACT_FLAG_SATURATION ? "warn" : "");
	if (isfinite(p->rmse_over_scale))
		qr_view_fmt(o, "rmse_scale", "%.3f", p->rmse_over_scale);
	else
		qr_view_num(o, "rmse_scale", NAN);
	qr_view_str(o, "rmse_scale_class",
		    p->flags & QR_ACT_FLAG_RMSE_SCALE ? "bad" : "");
	qr_view_fmt(o, "nonfinite", "%llu",
		    (unsigned long long)(p->nan_float + p->inf_float +
					 p->nan_quant + p->inf_quant));
	qr_view_fmt(o, "hist_range", "%.4g \xe2\x80\xa6 %.4g; outside: float %llu/%llu, quantized %llu/%llu (under/over)",
		    p->hist_lo, p->hist_hi,
		    (unsigned long long)p->under_float,
		    (unsigned long long)p->over_float,
		    (unsigned long long)p->under_quant,
		    (unsigned long long)p->over_quant);
	set_flags(o, p->flags);
	return o;
}

static cJSON *
act_output_view(const struct qr_analysis *a, const struct qr_act_output *p)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	double tc = a->data.cos_threshold, ts = a->data.sqnr_threshold;
	size_t i;

	qr_view_str(o, "name", p->name);
	qr_view_str(o, "quant_name", p->quant_name);
	set_cos(o, "cos_mean", p->cosine_mean);
	qr_view_str(o, "cos_class", qr_cos_class(p->cosine_mean, tc));
	set_cos(o, "cos_min", p->cosine_min);
	qr_view_sqnr(o, "sqnr", p->sqnr_total_db);
	qr_view_str(o, "sqnr_class", qr_act_sqnr_class(p->sqnr_total_db, ts));
	cJSON_AddBoolToObject(o, "classifier", p->classifier);
	if (p->classifier && p->rows)
		qr_view_fmt(o, "top1", "%.1f%% (%zu/%zu)",
			    100.0 * p->agree / p->rows, p->agree, p->rows);
	else
		qr_view_str(o, "top1", "\xe2\x80\x94");
	cJSON_AddBoolToObject(o, "has_labels", p->labeled > 0);
	if (p->labeled) {
		qr_view_fmt(o, "accuracy", "%.1f%% (%zu/%zu)",
			    100.0 * p->quant_correct / p->labeled,
			    p->quant_correct, p->labeled);
		qr_view_fmt(o, "float_accuracy", "%.1f%% (%zu/%zu)",
			    100.0 * p->float_correct / p->labeled,
			    p->float_correct, p->labeled);
	} else {
		qr_view_str(o, "accuracy", "\xe2\x80\x94");
		qr_view_str(o, "float_accuracy", "\xe2\x80\x94");
	}
	arr = cJSON_AddArrayToObject(o, "per_sample");
	for (i = 0; i < p->samples; i++) {
		cJSON *x = cJSON_CreateObject();
		int label = i < a->data.samples ? a->data.labels[i] : -1;

		cJSON_AddNumberToObject(x, "i", (double)i);
		qr_view_str(x, "sample", i < a->data.samples
			    ? a->data.sample_names[i] : "");
		if (label >= 0 && (size_t)label < a->data.n_classes)
			qr_view_str(x, "label", a->data.classes[label]);
		else if (label >= 0)
			qr_view_fmt(x, "label", "%d", label);
		else
			qr_view_str(x, "label", "");
		set_cos(x, "cos", p->cosine[i]);
		qr_view_str(x, "cos_class", qr_cos_class(p->cosine[i], tc));
		qr_view_sqnr(x, "sqnr", p->sqnr_db[i]);
		qr_view_str(x, "sqnr_class",
			    qr_act_sqnr_class(p->sqnr_db[i], ts));
		qr_view_output_sample(p, i, x);
		cJSON_AddItemToArray(arr, x);
	}
	qr_view_output_metrics(a, p, o);
	return o;
}

/* The first classifier output of candidate k, else its first output. */
const struct qr_act_output *
qr_view_main_output(const struct qr_analysis *a, size_t k)
{
	const struct qr_act_output *first = NULL;
	size_t i;

	for (i = 0; i < a->n_act_outputs; i++) {
		if (a->act_outputs[i].quant != k)
			continue;
		if (a->act_outputs[i].classifier)
			return &a->act_outputs[i];
		if (first == NULL)
			first = &a->act_outputs[i];
	}
	return first;
}

static enum qr_status
act_cand_view(struct qr_view_ctx *cc, const struct qr_analysis *a, size_t k,
	      cJSON **out)
{
	const struct qr_act_run *r = &a->act_runs[k];
	const struct qr_act_output *mo = qr_view_main_output(a, k);
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	size_t n, i, *pv = cand_pairs(a, k, &n);
	enum qr_status st = QR_OK;

	*out = o;
	qr_view_fmt(o, "anchor", "a-%zu", k);
	qr_view_fmt(o, "label", "Candidate %zu", k + 1);
	qr_view_str(o, "path", r->path);
	cJSON_AddBoolToObject(o, "compared", r->ran && a->data.ran);
	qr_view_str(o, "why", r->why);
	qr_view_count(o, "n_pairs", r->n_pairs);
	qr_view_count(o, "n_name", r->n_name);
	qr_view_count(o, "n_structure", r->n_structure);
	qr_view_count(o, "n_flagged", r->n_flagged);
	qr_view_str(o, "flagged_class", r->n_flagged ? "bad" : "good");
	cJSON_AddNullToObject(o, "born");
	cJSON_AddNullToObject(o, "worst_local");
	cJSON_AddNullToObject(o, "main_output");
	if (r->born >= 0) {
		char sh[32];

		cJSON_DeleteItemFromObject(o, "born");
		x = cJSON_AddObjectToObject(o, "born");
		qr_view_str(x, "tensor", tensor_name(a, (size_t)r->born));
		qr_view_fmt(x, "anchor", "ap-%ld", r->born);
		snprintf(sh, sizeof sh, "%.0f%%", 100 * r->born_share);
		qr_view_str(x, "share", sh);
		qr_view_sqnr(x, "local_sqnr",
			     a->act_pairs[r->born].local_sqnr_db);
	}
	cJSON_AddBoolToObject(o, "builds_up", r->es.accumulates);
	if (r->worst_local >= 0) {
		cJSON_DeleteItemFromObject(o, "worst_local");
		x = cJSON_AddObjectToObject(o, "worst_local");
		qr_view_str(x, "tensor",
			    tensor_name(a, (size_t)r->worst_local));
		qr_view_fmt(x, "anchor", "ap-%ld", r->worst_local);
		qr_view_sqnr(x, "sqnr",
			     a->act_pairs[r->worst_local].local_sqnr_db);
	}
	if (mo != NULL) {
		cJSON_DeleteItemFromObject(o, "main_output");
		x = act_output_view(a, mo);
		cJSON_AddItemToObject(o, "main_output", x);
	}
	arr = cJSON_AddArrayToObject(o, "rows");
	for (i = 0; i < n && st == QR_OK; i++) {
		cJSON *row = act_row(a, pv[i], i + 1);

		qr_view_page(cc, row,
			     a->act_tensors[a->act_pairs[pv[i]].tensor].layer);
		cJSON_AddItemToArray(arr, row);
		st = act_hist_chart(cc, a, pv[i], row);
	}
	if (st == QR_OK)
		st = act_depth_charts(cc, a, k, pv, n, o);
	if (st == QR_OK)
		st = qr_view_llm_cand(cc, a, k, o);
	arr = cJSON_AddArrayToObject(o, "outputs");
	for (i = 0; i < a->n_act_outputs; i++)
		if (a->act_outputs[i].quant == k)
			cJSON_AddItemToArray(arr, act_output_view(
						     a, &a->act_outputs[i]));
	arr = qr_json_act_unmatched(a, k);
	cJSON_AddItemToObject(o, "unmatched", arr);
	cJSON_AddBoolToObject(o, "has_unmatched", cJSON_GetArraySize(arr) > 0);
	free(pv);
	return st;
}

/* root.act: the data, one block per candidate, the float tensors. */
enum qr_status
qr_view_acts(struct qr_view_ctx *cc, const struct qr_analysis *a, cJSON *root)
{
	const struct qr_act_data *dt = &a->data;
	cJSON *o = cJSON_AddObjectToObject(root, "act"), *arr;
	enum qr_status st = QR_OK;
	size_t i;

	cJSON_AddBoolToObject(o, "has_data", dt->source != NULL);
	cJSON_AddBoolToObject(o, "ran", dt->ran);
	qr_view_str(o, "why", dt->why);
	qr_view_str(o, "source", dt->source ? dt->source : "none");
	cJSON_AddBoolToObject(o, "random", dt->source != NULL &&
			      strcmp(dt->source, "random") == 0);
	qr_view_count(o, "samples", dt->samples);
	qr_view_str(o, "preprocessing", dt->preprocessing);
	qr_view_fmt(o, "cos_threshold", "%g", dt->cos_threshold);
	qr_view_fmt(o, "sqnr_threshold", "%g", dt->sqnr_threshold);
	qr_view_fmt(o, "seconds", "%.2f", dt->seconds);
	qr_view_count(o, "n_classes", dt->n_classes);
	arr = cJSON_AddArrayToObject(o, "warnings");
	for (i = 0; i < dt->n_warnings; i++)
		cJSON_AddItemToArray(arr, qr_json_str(dt->warnings[i]));
	cJSON_AddBoolToObject(o, "has_warnings", dt->n_warnings > 0);
	arr = cJSON_AddArrayToObject(o, "skipped");
	for (i = 0; i < dt->n_skipped; i++) {
		char *line = xasprintf("%s: %s", dt->skipped[i].sample,
				       dt->skipped[i].why);

		cJSON_AddItemToArray(arr, qr_json_str(line));
		free(line);
	}
	cJSON_AddBoolToObject(o, "has_skipped", dt->n_skipped > 0);
	if (dt->n_skipped == 1)
		qr_view_str(o, "skipped_line", "1 sample skipped: the float "
			    "model cannot take it, and it is left out of "
			    "every number");
	else
		qr_view_fmt(o, "skipped_line", "%zu samples skipped: the float "
			    "model cannot take them, and they are left out "
			    "of every number", dt->n_skipped);
	arr = cJSON_AddArrayToObject(o, "cands");
	for (i = 0; a->act_runs != NULL && i < a->n_quant && st == QR_OK; i++) {
		cJSON *c;

		st = act_cand_view(cc, a, i, &c);
		cJSON_AddItemToArray(arr, c);
	}
	arr = cJSON_AddArrayToObject(o, "tensors");
	for (i = 0; i < a->n_act_tensors && st == QR_OK; i++) {
		const struct qr_act_tensor *t = &a->act_tensors[i];
		cJSON *x = cJSON_CreateObject(), *pl;
		size_t j;

		cJSON_AddItemToArray(arr, x);
		qr_view_fmt(x, "anchor", "at-%zu", i);
		qr_view_str(x, "name", t->name);
		qr_view_str(x, "layer", t->layer);
		qr_view_str(x, "op", t->op);
		qr_view_str(x, "shape", t->shape);
		qr_view_count(x, "channels", t->channels);
		qr_view_num(x, "min", t->min);
		qr_view_num(x, "max", t->max);
		pl = cJSON_AddArrayToObject(x, "pairs");
		for (j = 0; j < a->n_act_pairs; j++) {
			if (a->act_pairs[j].tensor != i)
				continue;
			cJSON_AddItemToArray(pl, cJSON_CreateNumber(
				(double)a->act_pairs[j].quant));
		}
		st = act_channel_chart(cc, t, x);
	}
	cJSON_AddBoolToObject(o, "has_tensors", a->n_act_tensors > 0);
	if (st == QR_OK)
		st = qr_view_int4(cc, a, root);
	/* last, so every chart before keeps its file name */
	if (st == QR_OK)
		st = qr_view_diag(cc, a, o);
	if (st == QR_OK)
		st = qr_view_output_charts(cc, a, o);
	return st;
}

/* The activation sentence of the verdict for candidate k, e.g. "output
 * cosine 0.9991; 3 layers below threshold; error is born at `conv3_2`
 * (it makes 84% of the noise ...)". */
void
qr_view_act_verdict(const struct qr_analysis *a, size_t k, struct qr_buf *b,
		    const char **cls)
{
	const struct qr_act_run *r = &a->act_runs[k];
	const struct qr_act_output *mo = qr_view_main_output(a, k);

	if (!a->data.ran || !r->ran) {
		qr_buf_printf(b, " Candidate %zu: activations not compared (%s).",
			      k + 1, r->why ? r->why : a->data.why ? a->data.why
					  : "the data did not run");
		*cls = "warn";
		return;
	}
	qr_buf_printf(b, " Candidate %zu on %zu sample%s (%s):", k + 1,
		      a->data.samples, a->data.samples == 1 ? "" : "s",
		      a->data.source);
	if (mo != NULL) {
		qr_buf_printf(b, " output cosine %.4f", mo->cosine_mean);
		qr_view_output_clause(mo, b);
		if (mo->cls != NULL && mo->cls->flipped > 0 &&
		    strcmp(*cls, "good") == 0)
			*cls = "warn";
		if (mo->labeled)
			qr_buf_printf(b, ", accuracy %.1f%% (float %.1f%%)",
				      100.0 * mo->quant_correct / mo->labeled,
				      100.0 * mo->float_correct / mo->labeled);
		qr_buf_puts(b, ";");
		if (mo->cosine_mean < a->data.cos_threshold)
			*cls = "bad";
	}
	qr_buf_printf(b, " %zu layer%s below threshold", r->n_flagged,
		      r->n_flagged == 1 ? "" : "s");
	if (r->n_flagged > 0 && strcmp(*cls, "good") == 0)
		*cls = "warn";
	qr_view_sources_text(a, k, b);
	if (r->worst_local >= 0 && r->worst_local != r->born &&
	    (r->es.n_creators == 0 || r->worst_local != r->es.creators[0]))
		qr_buf_printf(b, "; worst local error at %s",
			      tensor_name(a, (size_t)r->worst_local));
	qr_buf_puts(b, ".");
	qr_view_llm_verdict(a, k, b);
}

/* root.worst_acts: the matched tensors with the lowest cumulative SQNR
 * over every candidate, for the overview. */
void
qr_view_worst_acts(const struct qr_analysis *a, const struct qr_view_ctx *cc,
		   cJSON *root)
{
	cJSON *arr = cJSON_AddArrayToObject(root, "worst_acts");
	size_t *order = xcalloc(a->n_act_pairs + 1, sizeof *order);
	size_t i, n = 0;
	double ts = a->data.sqnr_threshold, tc = a->data.cos_threshold;

	for (i = 0; i < a->n_act_pairs; i++)
		if (!(a->act_pairs[i].flags & QR_ACT_NOT_FINDING))
			order[n++] = i;
	sort_by_sqnr(a, NULL, order, n);
	for (i = 0; i < n && i < QR_TOP_PROBLEMS; i++) {
		const struct qr_act_pair *p = &a->act_pairs[order[i]];
		const struct qr_act_tensor *t = &a->act_tensors[p->tensor];
		cJSON *x = cJSON_CreateObject();

		cJSON_AddNumberToObject(x, "rank", (double)(i + 1));
		qr_view_fmt(x, "candidate", "%zu", p->quant + 1);
		qr_view_str(x, "tensor", t->name);
		qr_view_str(x, "layer", t->layer);
		qr_view_str(x, "op", t->op);
		qr_view_page(cc, x, t->layer);
		qr_view_fmt(x, "anchor", "activations.html#ap-%zu", order[i]);
		qr_view_sqnr(x, "sqnr", p->sqnr_db);
		qr_view_str(x, "sqnr_class", qr_act_sqnr_class(p->sqnr_db, ts));
		qr_view_sqnr(x, "local_sqnr", p->local_sqnr_db);
		qr_view_str(x, "local_sqnr_class",
			    qr_act_sqnr_class(p->local_sqnr_db, ts));
		set_cos(x, "cos", p->cosine_mean);
		qr_view_str(x, "cos_class", qr_cos_class(p->cosine_mean, tc));
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddBoolToObject(root, "has_worst_acts", n > 0);
	free(order);
}
