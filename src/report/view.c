/*
 * report: the template context. Everything the pages show, as a cJSON
 * tree of display-ready values: numbers already formatted, CSS classes
 * that colour bad values, charts drawn and turned into HTML fragments.
 * Model strings stay raw here; the template engine escapes them.
 *
 * Anchors (ids) are built from indices, never from model strings:
 *   m-<i>  model i          q-<k>  candidate k      w-<i>  weight layer i
 *   qw-<i> weight pairing i  cle-<i> CLE set i
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"
#include "chart/chart.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP_PROBLEMS 10   /* problem layers listed on the overview */
#define MAX_LISTED 24     /* outlier channels / scales listed in full */

void
qr_fmt_num(char *buf, size_t n, double v)
{
	if (isnan(v))
		snprintf(buf, n, "\xe2\x80\x94"); /* — */
	else if (isinf(v))
		snprintf(buf, n, v > 0 ? "\xe2\x88\x9e" : "-\xe2\x88\x9e");
	else
		snprintf(buf, n, "%.4g", v);
}

void
qr_fmt_bytes(char *buf, size_t n, size_t bytes)
{
	if (bytes < 1024)
		snprintf(buf, n, "%zu B", bytes);
	else if (bytes < 1024 * 1024)
		snprintf(buf, n, "%.1f KiB", bytes / 1024.0);
	else if (bytes < (size_t)1024 * 1024 * 1024)
		snprintf(buf, n, "%.1f MiB", bytes / (1024.0 * 1024));
	else
		snprintf(buf, n, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
}

static void
set_str(cJSON *o, const char *key, const char *s)
{
	if (s != NULL)
		cJSON_AddStringToObject(o, key, s);
	else
		cJSON_AddNullToObject(o, key);
}

static void
set_fmt(cJSON *o, const char *key, const char *fmt, ...) QR_PRINTF(3, 4);
static void
set_fmt(cJSON *o, const char *key, const char *fmt, ...)
{
	struct qr_buf b = {0};
	va_list ap;
	char *s;

	va_start(ap, fmt);
	qr_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	s = qr_buf_take(&b);
	cJSON_AddStringToObject(o, key, s);
	free(s);
}

static void
set_num(cJSON *o, const char *key, double v)
{
	char buf[64];

	qr_fmt_num(buf, sizeof buf, v);
	cJSON_AddStringToObject(o, key, buf);
}

static void
set_count(cJSON *o, const char *key, size_t v)
{
	char raw[32], out[48];
	size_t n, i, j = 0;

	n = (size_t)snprintf(raw, sizeof raw, "%zu", v);
	for (i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			out[j++] = ',';
		out[j++] = raw[i];
	}
	out[j] = '\0';
	cJSON_AddStringToObject(o, key, out);
}

static void
set_bytes(cJSON *o, const char *key, size_t v)
{
	char buf[64];

	qr_fmt_bytes(buf, sizeof buf, v);
	cJSON_AddStringToObject(o, key, buf);
}

/* SQNR for display: one decimal, ∞ when exact. */
static void
fmt_sqnr(char *buf, size_t n, double v)
{
	if (isfinite(v))
		snprintf(buf, n, "%.1f", v);
	else
		qr_fmt_num(buf, n, v);
}

static void
set_sqnr(cJSON *o, const char *key, double v)
{
	char buf[64];

	fmt_sqnr(buf, sizeof buf, v);
	cJSON_AddStringToObject(o, key, buf);
}

static const char *
sqnr_class(double v)
{
	if (isnan(v))
		return "";
	if (v < QR_SQNR_BAD_DB)
		return "bad";
	if (v < QR_SQNR_WARN_DB)
		return "warn";
	return "good";
}

static const char *
rel_class(double v)
{
	if (isnan(v))
		return "";
	if (v > QR_BAD_REL_RANGE)
		return "bad";
	if (v > QR_BAD_REL_RANGE / 2)
		return "warn";
	return "good";
}

static int
layer_flagged(const struct qr_weight_stats *w)
{
	return w->max_rel_range > QR_BAD_REL_RANGE ||
	       w->sqnr_per_tensor_db < QR_SQNR_BAD_DB;
}

/* NaN for values a chart cannot place (infinite SQNR). */
static double
plottable(double v)
{
	return isfinite(v) ? v : NAN;
}

/* "3, 7, 12" (first MAX_LISTED, then "… (n in all)"). */
static void
set_index_list(cJSON *o, const char *key, const size_t *v, size_t n)
{
	struct qr_buf b = {0};
	size_t i;
	char *s;

	for (i = 0; i < n && i < MAX_LISTED; i++)
		qr_buf_printf(&b, "%s%zu", i ? ", " : "", v[i]);
	if (n > MAX_LISTED)
		qr_buf_printf(&b, ", \xe2\x80\xa6 (%zu in all)", n);
	s = qr_buf_take(&b);
	cJSON_AddStringToObject(o, key, s);
	free(s);
}

/* Everything a chart call needs besides the spec. */
struct chart_ctx {
	struct qr_chart_queue *q; /* where charts are drawn */
	struct qr_diag *d;
	size_t next;         /* numbers chart files, keeping them unique */
	const struct qr_report_layers *L; /* layer pages */
	const struct qr_analysis *a;      /* what the view shows */
};

/* The page of layer name, or fallback (a printf format taking idx). */
static char *
layer_href(const struct chart_ctx *cc, const char *name,
	   const char *fallback, size_t idx)
{
	const char *page = qr_report_layer_page(cc->L, name);

	return page != NULL ? xstrdup(page) : xasprintf(fallback, idx);
}

/* o["page"]: the page of layer name, or null. */
static void
set_page(const struct chart_ctx *cc, cJSON *o, const char *name)
{
	const char *page = qr_report_layer_page(cc->L, name);

	if (page != NULL)
		cJSON_AddStringToObject(o, "page", page);
	else
		cJSON_AddNullToObject(o, "page");
}

/* Draw spec as charts/<prefix><n>-<name>.png and store its HTML in
 * o[key]. */
static enum qr_status
add_chart(struct chart_ctx *cc, cJSON *o, const char *key,
	  const char *prefix, const char *name,
	  const struct qr_chart_spec *spec, const char *alt,
	  char *const *hrefs, char *const *titles)
{
	struct qr_buf file = {0};
	enum qr_status st;
	char *f;

	qr_safe_name(&file, prefix, cc->next++, name);
	qr_buf_puts(&file, ".png");
	f = qr_buf_take(&file);
	st = qr_report_chart_queue(cc->q, o, key, f, spec, alt, hrefs, titles,
				   cc->d);
	free(f);
	return st;
}

static void
free_strv(char **v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		free(v[i]);
	free(v);
}

static const char *
or_empty(const char *s)
{
	return s != NULL ? s : "";
}

/* ---- models ---- */

static void
io_view(cJSON *o, const char *key, const struct qr_io_desc *io, size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(o, key);
	size_t i;

	for (i = 0; i < n; i++) {
		cJSON *x = cJSON_CreateObject();

		set_str(x, "name", io[i].name);
		set_str(x, "dtype", io[i].dtype);
		set_str(x, "shape", io[i].shape);
		cJSON_AddItemToArray(arr, x);
	}
}

static cJSON *
model_view(const struct qr_model_summary *m, size_t i)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	size_t k;

	set_fmt(o, "anchor", "m-%zu", i);
	if (i == 0)
		set_str(o, "label", "Float model");
	else
		set_fmt(o, "label", "Candidate %zu", i);
	set_str(o, "role", m->role);
	set_str(o, "path", m->path);
	set_str(o, "format", qr_qformat_name(m->format));
	set_str(o, "producer", m->producer);
	set_fmt(o, "ir_version", "%lld", (long long)m->ir_version);
	set_str(o, "opsets", m->opsets);
	set_count(o, "nodes", m->n_nodes);
	io_view(o, "inputs", m->inputs, m->n_inputs);
	io_view(o, "outputs", m->outputs, m->n_outputs);
	arr = cJSON_AddArrayToObject(o, "ops");
	for (k = 0; k < m->n_ops; k++) {
		cJSON *x = cJSON_CreateObject();
		double share = m->n_nodes ? 100.0 * m->ops[k].count / m->n_nodes
					  : 0;

		set_str(x, "op", m->ops[k].op);
		set_count(x, "count", m->ops[k].count);
		set_fmt(x, "share", "%.0f", share);
		cJSON_AddItemToArray(arr, x);
	}
	set_count(o, "params", m->n_params);
	set_bytes(o, "param_bytes", m->param_bytes);
	set_bytes(o, "file_bytes", m->file_bytes);
	arr = cJSON_AddArrayToObject(o, "meta");
	for (k = 0; k < m->n_meta; k++) {
		cJSON *x = cJSON_CreateObject();

		set_str(x, "key", m->meta_keys[k]);
		set_str(x, "value", m->meta_values[k]);
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddBoolToObject(o, "has_meta", m->n_meta > 0);
	return o;
}

/* ---- weights ---- */

/* The max |w| per (output, input channel) matrix as a pixel-exact PNG
 * (stb_image_write via qr_heatmap_write, queued with the charts), rows =
 * output channels, with a colour bar. o["heat"] gets the HTML, or null. */
static void
weight_heat(struct chart_ctx *cc, cJSON *o, const struct qr_weight_stats *w)
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
	qr_html_escape(&b, or_empty(w->layer));
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
weight_chart(struct chart_ctx *cc, cJSON *o, const struct qr_weight_stats *w,
	     size_t i)
{
	enum qr_status st;
	struct qr_series s[3];
	struct qr_mark *marks;
	struct qr_chart_spec spec = {0};
	double *mn, *mx, *mean;
	char **titles, *title, *alt;
	size_t c;

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
		mn[c] = w->ch_min[c];
		mx[c] = w->ch_max[c];
		mean[c] = w->ch_mean != NULL ? w->ch_mean[c] : NAN;
		titles[c] = xasprintf("%s, channel %zu: min %.4g, max %.4g, mean %.4g, relative range %.3g",
				      or_empty(w->layer), c, mn[c], mx[c],
				      mean[c],
				      w->rel_range ? w->rel_range[c] : NAN);
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
			  or_empty(w->layer));
	alt = xasprintf("Per-channel min, max and mean of %s; %zu outlier channels ringed",
			or_empty(w->layer), w->n_outliers);
	spec.title = title;
	spec.xlabel = "output channel";
	spec.ylabel = "weight value";
	spec.width = 760;
	spec.height = 260;
	spec.n_series = 3;
	spec.series = s;
	spec.n_marks = w->n_outliers;
	spec.marks = marks;
	st = add_chart(cc, o, "chart", "w", w->layer, &spec, alt, NULL,
		       titles);
	if (st == QR_OK)
		weight_heat(cc, o, w);
	free(alt);
	free(title);
	free(marks);
	free_strv(titles, w->channels);
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

	set_fmt(o, "anchor", "w-%zu", i);
	set_str(o, "layer", w->layer);
	set_str(o, "op", w->op);
	set_str(o, "weight", w->weight);
	set_str(o, "shape", w->shape);
	cJSON_AddNumberToObject(o, "axis", w->axis);
	set_count(o, "channels", w->channels);
	set_count(o, "elements", w->n_elem);
	set_num(o, "max_rel_range", w->max_rel_range);
	set_str(o, "rel_class", rel_class(w->max_rel_range));
	set_num(o, "tukey_fence", w->tukey_fence);
	set_count(o, "n_outliers", w->n_outliers);
	set_index_list(o, "outliers", w->outliers, w->n_outliers);
	set_count(o, "zero_range", w->n_zero_range);
	set_sqnr(o, "sqnr_pt", w->sqnr_per_tensor_db);
	set_str(o, "sqnr_pt_class", sqnr_class(w->sqnr_per_tensor_db));
	set_sqnr(o, "sqnr_pc", w->sqnr_per_channel_db);
	set_str(o, "sqnr_pc_class", sqnr_class(w->sqnr_per_channel_db));
	set_sqnr(o, "sqnr_gain",
		 w->sqnr_per_channel_db - w->sqnr_per_tensor_db);
	cJSON_AddBoolToObject(o, "flagged", layer_flagged(w));
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
static enum qr_status
model_weight_charts(struct chart_ctx *cc, const struct qr_analysis *a,
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

		rr[i] = plottable(w->max_rel_range);
		rrf[i] = (float)w->max_rel_range;
		pt[i] = plottable(w->sqnr_per_tensor_db);
		pc[i] = plottable(w->sqnr_per_channel_db);
		ticks[i] = or_empty(w->layer);
		hrefs[i] = layer_href(cc, w->layer, "weights.html#w-%zu", i);
		titles[i] = xasprintf("%s (%s): max relative range %.4g",
				      ticks[i], or_empty(w->op),
				      w->max_rel_range);
		fmt_sqnr(pt_s, sizeof pt_s, w->sqnr_per_tensor_db);
		fmt_sqnr(pc_s, sizeof pc_s, w->sqnr_per_channel_db);
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
	st = add_chart(cc, charts, "rel_range", "model-", "rel-range", &spec,
		       "Max relative weight range per layer; bars above the threshold line are layers to look at",
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
	st = add_chart(cc, charts, "sqnr", "model-", "sqnr", &spec,
		       "Predicted int8 weight SQNR per layer, per tensor and per channel",
		       hrefs, titles2);
out:
	free_strv(titles2, n);
	free_strv(titles, n);
	free_strv(hrefs, n);
	free(ticks);
	free(pc);
	free(pt);
	free(rrf);
	free(rr);
	return st;
}

static enum qr_status
weights_view(struct chart_ctx *cc, const struct qr_analysis *a, cJSON *root)
{
	enum qr_status st = QR_OK;
	const struct qr_weight_stats **order;
	cJSON *arr, *probs, *top;
	size_t i, n_flagged = 0;

	arr = cJSON_AddArrayToObject(root, "weights");
	for (i = 0; i < a->n_weights && st == QR_OK; i++) {
		cJSON *o = weight_view(&a->weights[i], i);

		set_page(cc, o, a->weights[i].layer);
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

		if (!layer_flagged(order[i]))
			continue;
		o = cJSON_Duplicate(cJSON_GetArrayItem(arr, (int)idx), 1);
		cJSON_DeleteItemFromObject(o, "chart");
		cJSON_AddNumberToObject(o, "rank", (double)++n_flagged);
		if (n_flagged <= TOP_PROBLEMS)
			cJSON_AddItemToArray(top, cJSON_Duplicate(o, 1));
		cJSON_AddItemToArray(probs, o);
	}
	cJSON_AddNumberToObject(root, "n_flagged", (double)n_flagged);
	cJSON_AddBoolToObject(root, "has_problems", n_flagged > 0);
	cJSON_AddBoolToObject(root, "more_problems", n_flagged > TOP_PROBLEMS);
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
		set_fmt(o, key, "%s \xe2\x80\xa6 %s", a, b);
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
			set_fmt(o, "float_anchor", "w-%zu", k);
			channels = a->weights[k].channels;
			break;
		}
	}

	set_fmt(o, "anchor", "qw-%zu", i);
	set_str(o, "layer", q->layer);
	set_str(o, "quant_layer", q->quant_layer);
	set_str(o, "weight", q->weight);
	set_str(o, "quant_weight", q->quant_weight);
	set_str(o, "match", qr_match_name(q->match));
	set_str(o, "match_reason", q->match_reason);
	if (q->block_size)
		set_fmt(o, "granularity", "%s (%zu)", q->granularity,
			q->block_size);
	else
		set_str(o, "granularity", q->granularity);
	cJSON_AddNumberToObject(o, "bits", q->bits);
	set_sqnr(o, "sqnr", q->sqnr_db);
	set_str(o, "sqnr_class", sqnr_class(q->sqnr_db));
	set_count(o, "clipped", q->clipped);
	/* Symmetric scales put each slice's largest weight at the limit, so
	 * about one value per channel is by design; warn beyond that. With
	 * 4-bit blocks a sixth of the codes sit at a limit by design (16
	 * levels over each block's own range): warn only when values fell
	 * outside the range (out_of_range). */
	set_str(o, "clipped_class",
		q->block_size ? (q->out_of_range * 100 > q->n_elem ? "warn" : "")
		: q->clipped > 2 * channels && q->clipped * 100 > q->n_elem
			? "warn" : "");
	set_count(o, "elements", q->n_elem);
	set_bytes(o, "float_bytes", q->float_bytes);
	set_bytes(o, "quant_bytes", q->quant_bytes);
	set_fmt(o, "compression", "%.2f\xc3\x97", q->compression); /* × */
	return o;
}

static enum qr_status
compression_chart(struct chart_ctx *cc, const struct qr_analysis *a,
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
		v[j] = plottable(q->compression);
		ticks[j] = or_empty(q->layer);
		hrefs[j] = layer_href(cc, q->layer, "quant.html#qw-%zu", i);
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
	st = add_chart(cc, o, "compression_chart", "model-", name, &spec,
		       "Weight compression per layer", hrefs, titles);
	free_strv(titles, n);
	free_strv(hrefs, n);
	free(ticks);
	free(v);
	return st;
}

static enum qr_status
quant_view(struct chart_ctx *cc, const struct qr_analysis *a, size_t k,
	   cJSON **out)
{
	const struct qr_quant_summary *s = &a->quants[k];
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	double worst = INFINITY, ratio;
	const char *worst_layer = NULL;
	size_t i, n_pairs = 0;

	*out = o;
	set_fmt(o, "anchor", "q-%zu", k);
	set_fmt(o, "label", "Candidate %zu", k + 1);
	set_str(o, "path", s->path);
	set_str(o, "format", qr_qformat_name(s->format));
	arr = cJSON_AddArrayToObject(o, "layers");
	for (i = 0; i < s->n_layers; i++) {
		const struct qr_quant_layer *l = &s->layers[i];
		cJSON *x = cJSON_CreateObject();

		set_str(x, "layer", l->layer);
		set_str(x, "op", l->op);
		set_str(x, "weight", l->weight);
		set_str(x, "dtype", l->weight_dtype);
		cJSON_AddNumberToObject(x, "bits", l->bits);
		if (l->block_size)
			set_fmt(x, "granularity", "per-block (%zu along axis "
				"%d)", l->block_size, l->axis);
		else if (l->per_channel)
			set_fmt(x, "granularity", "per-channel (axis %d)",
				l->axis);
		else
			set_str(x, "granularity", "per-tensor");
		set_count(x, "n_scales", l->n_scales);
		set_range(x, "scales", l->scale_min, l->scale_max);
		set_range(x, "zero_points", l->zp_min, l->zp_max);
		set_str(x, "act", l->act_quantized ? "quantized" : "float");
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddBoolToObject(o, "has_layers", s->n_layers > 0);
	arr = cJSON_AddArrayToObject(o, "coverage");
	for (i = 0; i < s->n_coverage; i++) {
		cJSON *x = cJSON_CreateObject();

		set_str(x, "layer", s->coverage[i].layer);
		set_str(x, "op", s->coverage[i].op);
		cJSON_AddBoolToObject(x, "quantized", s->coverage[i].quantized);
		cJSON_AddItemToArray(arr, x);
	}
	set_count(o, "n_quantized", s->n_quantized);
	set_count(o, "n_coverage", s->n_coverage);
	set_count(o, "n_float", s->n_coverage - s->n_quantized);
	set_fmt(o, "coverage_pct", "%.0f",
		s->n_coverage ? 100.0 * s->n_quantized / s->n_coverage : 0.0);
	set_bytes(o, "float_bytes", s->float_bytes);
	set_bytes(o, "quant_bytes", s->quant_bytes);
	ratio = s->quant_bytes ? (double)s->float_bytes / s->quant_bytes : NAN;
	if (isfinite(ratio))
		set_fmt(o, "compression", "%.2f\xc3\x97", ratio);
	else
		set_num(o, "compression", ratio);

	arr = cJSON_AddArrayToObject(o, "pairs");
	for (i = 0; i < a->n_qweights; i++) {
		const struct qr_quant_weight *q = &a->qweights[i];

		if (q->quant != k)
			continue;
		x = pair_view(a, q, i);
		set_page(cc, x, q->layer);
		cJSON_AddItemToArray(arr, x);
		n_pairs++;
		if (q->sqnr_db < worst) {
			worst = q->sqnr_db;
			worst_layer = q->layer;
		}
	}
	set_count(o, "n_pairs", n_pairs);
	cJSON_AddBoolToObject(o, "has_pairs", n_pairs > 0);
	set_sqnr(o, "worst_sqnr", n_pairs ? worst : NAN);
	set_str(o, "worst_sqnr_class", sqnr_class(n_pairs ? worst : NAN));
	set_str(o, "worst_layer", worst_layer);
	return compression_chart(cc, a, k, o);
}

/* ---- CLE ---- */

static enum qr_status
cle_layer_chart(struct chart_ctx *cc, const struct qr_cle_layer *l,
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
			  or_empty(l->name));
	alt = xasprintf("Per-channel weight min and max of %s before and after cross-layer equalization",
			or_empty(l->name));
	spec.title = title;
	spec.xlabel = "output channel";
	spec.ylabel = "weight value";
	spec.width = 560;
	spec.height = 240;
	spec.n_series = 4;
	spec.series = s;
	st = add_chart(cc, o, "chart", "cle", l->name, &spec, alt, NULL, NULL);
	free(alt);
	free(title);
	for (k = 0; k < 4; k++)
		free(v[k]);
	(void)set;
	return st;
}

static void
set_float_list(cJSON *o, const char *key, const float *v, size_t n)
{
	struct qr_buf b = {0};
	size_t i;
	char num[64], *s;

	for (i = 0; v != NULL && i < n && i < MAX_LISTED; i++) {
		qr_fmt_num(num, sizeof num, v[i]);
		qr_buf_printf(&b, "%s%s", i ? ", " : "", num);
	}
	if (n > MAX_LISTED)
		qr_buf_printf(&b, ", \xe2\x80\xa6 (%zu in all)", n);
	s = qr_buf_take(&b);
	cJSON_AddStringToObject(o, key, s);
	free(s);
}

static enum qr_status
cle_view(struct chart_ctx *cc, const struct qr_cle_set *c, size_t i,
	 cJSON **out)
{
	enum qr_status st = QR_OK;
	cJSON *o = cJSON_CreateObject(), *arr;
	struct qr_buf title = {0};
	size_t k, nl = c->n_layers < 3 ? c->n_layers : 3;
	char *t;

	*out = o;
	set_fmt(o, "anchor", "cle-%zu", i);
	set_fmt(o, "number", "%zu", i + 1);
	for (k = 0; k < nl; k++) {
		if (k > 0)
			qr_buf_printf(&title, " \xe2\x86\x92 %s \xe2\x86\x92 ",
				      or_empty(c->joins[k - 1]));
		qr_buf_puts(&title, or_empty(c->layers[k].name));
	}
	t = qr_buf_take(&title);
	set_str(o, "title", t);
	free(t);
	set_str(o, "kind", nl == 3 ? "triplet" : "pair");
	arr = cJSON_AddArrayToObject(o, "layers");
	for (k = 0; k < nl && st == QR_OK; k++) {
		const struct qr_cle_layer *l = &c->layers[k];
		cJSON *x = cJSON_CreateObject();

		cJSON_AddItemToArray(arr, x);
		set_str(x, "name", l->name);
		set_str(x, "op", l->op);
		set_str(x, "depthwise", l->depthwise ? "yes" : "no");
		set_str(x, "bn_folded", l->bn_folded ? "yes" : "no");
		set_count(x, "channels", l->channels);
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
		set_str(x, "from", c->layers[k].name);
		set_str(x, "to", c->layers[k + 1].name);
		set_str(x, "join", c->joins[k]);
		set_count(x, "n", c->n_scales[k]);
		if (c->n_scales[k] > 0)
			set_range(x, "range", lo, hi);
		else
			set_num(x, "range", NAN);
		set_float_list(x, "values", c->scales[k], c->n_scales[k]);
		cJSON_AddItemToArray(arr, x);
	}
	set_num(o, "rr_before", c->max_rel_range_before);
	set_str(o, "rr_before_class", rel_class(c->max_rel_range_before));
	set_num(o, "rr_after", c->max_rel_range_after);
	set_str(o, "rr_after_class", rel_class(c->max_rel_range_after));
	set_sqnr(o, "sqnr_before", c->sqnr_per_tensor_before_db);
	set_str(o, "sqnr_before_class",
		sqnr_class(c->sqnr_per_tensor_before_db));
	set_sqnr(o, "sqnr_after", c->sqnr_per_tensor_after_db);
	set_str(o, "sqnr_after_class", sqnr_class(c->sqnr_per_tensor_after_db));
	set_sqnr(o, "sqnr_gain", c->sqnr_per_tensor_after_db -
					 c->sqnr_per_tensor_before_db);
	return st;
}

/* ---- activations ---- */

#define WORST_N 15        /* layers in the worst-N chart */

static const char *
cos_class(double v, double thr)
{
	if (isnan(v))
		return "";
	if (v < thr)
		return "bad";
	if (1 - v > (1 - thr) * 0.5)
		return "warn";
	return "good";
}

static const char *
act_sqnr_class(double v, double thr)
{
	if (isnan(v))
		return "";
	if (v < thr)
		return "bad";
	if (v < thr + 10)
		return "warn";
	return "good";
}

/* Cosine for display: enough digits to tell 0.9999 from 0.99999. */
static void
set_cos(cJSON *o, const char *key, double v)
{
	char buf[64];

	if (isfinite(v))
		snprintf(buf, sizeof buf, "%.5f", v);
	else
		qr_fmt_num(buf, sizeof buf, v);
	cJSON_AddStringToObject(o, key, buf);
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
	/* a cancellation alone is a note, not a problem */
	cJSON_AddBoolToObject(o, "flagged", (f & ~QR_ACT_FLAG_CANCEL) != 0);
	cJSON_AddBoolToObject(o, "has_flags", f != 0);
	cJSON_AddStringToObject(o, "flags_class",
				(f & ~QR_ACT_FLAG_CANCEL) ? "bad" : "");
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
	return or_empty(a->act_tensors[a->act_pairs[pair].tensor].name);
}

/* Cosine along depth (mean line, min-max band), local vs cumulative SQNR
 * (two lines, one chart) and the worst-N layers (horizontal bars). */
static enum qr_status
act_depth_charts(struct chart_ctx *cc, const struct qr_analysis *a, size_t k,
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

		mean[i] = plottable(p->cosine_mean);
		lo[i] = plottable(p->cosine_min);
		hi[i] = plottable(p->cosine_max);
		cum[i] = plottable(p->sqnr_db);
		loc[i] = plottable(p->local_sqnr_db);
		ticks[i] = tensor_name(a, pv[i]);
		hrefs[i] = layer_href(cc, a->act_tensors[p->tensor].layer,
				      "activations.html#ap-%zu", pv[i]);
		titles[i] = xasprintf("%s: cosine mean %.6f, min %.6f, max %.6f",
				      ticks[i], p->cosine_mean, p->cosine_min,
				      p->cosine_max);
		fmt_sqnr(c1, sizeof c1, p->sqnr_db);
		fmt_sqnr(c2, sizeof c2, p->local_sqnr_db);
		titles2[i] = xasprintf("%s: SQNR %s dB cumulative, %s dB local",
				       ticks[i], c1, c2);
		if (!(p->flags & QR_ACT_FLAG_CANCEL)) /* noise: not ranked */
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
	st = add_chart(cc, o, "cos_chart", "model-", name, &spec,
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
	st = add_chart(cc, o, "sqnr_chart", "model-", name, &spec,
		       "Cumulative and local SQNR per matched tensor: where the two lines part, error is inherited; where local is low, the layer itself loses precision",
		       hrefs, titles2);
	if (st != QR_OK)
		goto out;

	/* worst N by cumulative SQNR (exact layers last) */
	for (i = 1; i < nr; i++) {
		size_t j, x = order[i];
		double v = a->act_pairs[pv[x]].sqnr_db;

		for (j = i; j > 0 && !(a->act_pairs[pv[order[j - 1]]].sqnr_db <= v);
		     j--)
			order[j] = order[j - 1];
		order[j] = x;
	}
	nw = nr < WORST_N ? nr : WORST_N;
	if (nw == 0) {
		cJSON_AddNullToObject(o, "worst_chart");
		goto out;
	}
	for (i = 0; i < nw; i++) {
		const struct qr_act_pair *p = &a->act_pairs[pv[order[i]]];

		worst[i] = plottable(p->sqnr_db);
		wticks[i] = ticks[order[i]];
		whrefs[i] = layer_href(cc, a->act_tensors[p->tensor].layer,
				       "activations.html#ap-%zu", pv[order[i]]);
		fmt_sqnr(c1, sizeof c1, p->sqnr_db);
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
	st = add_chart(cc, o, "worst_chart", "model-", name, &spec,
		       "The matched tensors with the lowest cumulative SQNR",
		       whrefs, wtitles);
out:
	free_strv(wtitles, n);
	free_strv(whrefs, n);
	free_strv(titles2, n);
	free_strv(titles, n);
	free_strv(hrefs, n);
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
act_hist_chart(struct chart_ctx *cc, const struct qr_analysis *a,
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
	st = add_chart(cc, o, "hist_chart", "ah", tensor_name(a, pi), &spec,
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
act_channel_chart(struct chart_ctx *cc, const struct qr_act_tensor *t,
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
				  "channels, %zu a point)", or_empty(t->name),
				  n, (n + m - 1) / m);
		alt = xasprintf("Per-channel min, max and mean of the float activation %s over all samples, %zu channels drawn as %zu runs of about %zu",
				or_empty(t->name), n, m, (n + m - 1) / m);
	} else {
		title = xasprintf("%s: float activation per channel",
				  or_empty(t->name));
		alt = xasprintf("Per-channel min, max and mean of the float activation %s over all samples",
				or_empty(t->name));
	}
	spec.title = title;
	spec.xlabel = "channel";
	spec.ylabel = "activation value";
	spec.width = 560;
	spec.height = 240;
	spec.n_series = 3;
	spec.series = s;
	spec.xticks = (const char *const *)ticks;
	st = add_chart(cc, o, "chan_chart", "ac", t->name, &spec, alt, NULL,
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

	set_fmt(o, "anchor", "ap-%zu", pi);
	set_fmt(o, "tensor_anchor", "at-%zu", p->tensor);
	cJSON_AddNumberToObject(o, "rank", (double)rank);
	set_str(o, "tensor", t->name);
	set_str(o, "layer", t->layer);
	set_str(o, "op", t->op);
	set_str(o, "shape", t->shape);
	set_str(o, "quant_tensor", p->quant_tensor);
	set_str(o, "quant_dtype", p->quant_dtype);
	set_str(o, "match", qr_match_name(p->match));
	set_str(o, "match_reason", p->match_reason);
	set_cos(o, "cos_mean", p->cosine_mean);
	set_str(o, "cos_class", cos_class(p->cosine_mean, tc));
	set_cos(o, "cos_min", p->cosine_min);
	set_str(o, "cos_min_class", cos_class(p->cosine_min, tc));
	set_cos(o, "local_cos", p->local_cosine_mean);
	set_sqnr(o, "sqnr", p->sqnr_db);
	set_str(o, "sqnr_class", act_sqnr_class(p->sqnr_db, ts));
	set_sqnr(o, "local_sqnr", p->local_sqnr_db);
	set_str(o, "local_sqnr_class", act_sqnr_class(p->local_sqnr_db, ts));
	set_num(o, "mse", p->mse);
	set_num(o, "max_abs", p->max_abs);
	set_num(o, "norm_l2", p->norm_l2);
	set_num(o, "scale", p->has_qparams ? p->scale : NAN);
	set_num(o, "zero_point", p->has_qparams ? p->zero_point : NAN);
	if (isfinite(p->saturation))
		set_fmt(o, "saturation", "%.2f%%", 100 * p->saturation);
	else
		set_num(o, "saturation", NAN);
	set_str(o, "saturation_class",
		p->flags & QR_ACT_FLAG_SATURATION ? "warn" : "");
	if (isfinite(p->rmse_over_scale))
		set_fmt(o, "rmse_scale", "%.3f", p->rmse_over_scale);
	else
		set_num(o, "rmse_scale", NAN);
	set_str(o, "rmse_scale_class",
		p->flags & QR_ACT_FLAG_RMSE_SCALE ? "bad" : "");
	set_fmt(o, "nonfinite", "%llu",
		(unsigned long long)(p->nan_float + p->inf_float +
				     p->nan_quant + p->inf_quant));
	set_fmt(o, "hist_range", "%.4g \xe2\x80\xa6 %.4g; outside: float %llu/%llu, quantized %llu/%llu (under/over)",
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

	set_str(o, "name", p->name);
	set_str(o, "quant_name", p->quant_name);
	set_cos(o, "cos_mean", p->cosine_mean);
	set_str(o, "cos_class", cos_class(p->cosine_mean, tc));
	set_cos(o, "cos_min", p->cosine_min);
	set_sqnr(o, "sqnr", p->sqnr_total_db);
	set_str(o, "sqnr_class", act_sqnr_class(p->sqnr_total_db, ts));
	cJSON_AddBoolToObject(o, "classifier", p->classifier);
	if (p->classifier && p->rows)
		set_fmt(o, "top1", "%.1f%% (%zu/%zu)",
			100.0 * p->agree / p->rows, p->agree, p->rows);
	else
		set_str(o, "top1", "\xe2\x80\x94");
	cJSON_AddBoolToObject(o, "has_labels", p->labeled > 0);
	if (p->labeled) {
		set_fmt(o, "accuracy", "%.1f%% (%zu/%zu)",
			100.0 * p->quant_correct / p->labeled,
			p->quant_correct, p->labeled);
		set_fmt(o, "float_accuracy", "%.1f%% (%zu/%zu)",
			100.0 * p->float_correct / p->labeled,
			p->float_correct, p->labeled);
	} else {
		set_str(o, "accuracy", "\xe2\x80\x94");
		set_str(o, "float_accuracy", "\xe2\x80\x94");
	}
	arr = cJSON_AddArrayToObject(o, "per_sample");
	for (i = 0; i < p->samples; i++) {
		cJSON *x = cJSON_CreateObject();
		int label = i < a->data.samples ? a->data.labels[i] : -1;

		cJSON_AddNumberToObject(x, "i", (double)i);
		set_str(x, "sample", i < a->data.samples
			? a->data.sample_names[i] : "");
		if (label >= 0 && (size_t)label < a->data.n_classes)
			set_str(x, "label", a->data.classes[label]);
		else if (label >= 0)
			set_fmt(x, "label", "%d", label);
		else
			set_str(x, "label", "");
		set_cos(x, "cos", p->cosine[i]);
		set_str(x, "cos_class", cos_class(p->cosine[i], tc));
		set_sqnr(x, "sqnr", p->sqnr_db[i]);
		set_str(x, "sqnr_class", act_sqnr_class(p->sqnr_db[i], ts));
		cJSON_AddItemToArray(arr, x);
	}
	return o;
}

/* The first classifier output of candidate k, else its first output. */
static const struct qr_act_output *
main_output(const struct qr_analysis *a, size_t k)
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
act_cand_view(struct chart_ctx *cc, const struct qr_analysis *a, size_t k,
	      cJSON **out)
{
	const struct qr_act_run *r = &a->act_runs[k];
	const struct qr_act_output *mo = main_output(a, k);
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	size_t n, i, *pv = cand_pairs(a, k, &n);
	enum qr_status st = QR_OK;

	*out = o;
	set_fmt(o, "anchor", "a-%zu", k);
	set_fmt(o, "label", "Candidate %zu", k + 1);
	set_str(o, "path", r->path);
	cJSON_AddBoolToObject(o, "compared", r->ran && a->data.ran);
	set_str(o, "why", r->why);
	set_count(o, "n_pairs", r->n_pairs);
	set_count(o, "n_name", r->n_name);
	set_count(o, "n_structure", r->n_structure);
	set_count(o, "n_flagged", r->n_flagged);
	set_str(o, "flagged_class", r->n_flagged ? "bad" : "good");
	cJSON_AddNullToObject(o, "born");
	cJSON_AddNullToObject(o, "worst_local");
	cJSON_AddNullToObject(o, "main_output");
	if (r->born >= 0) {
		cJSON_DeleteItemFromObject(o, "born");
		x = cJSON_AddObjectToObject(o, "born");
		set_str(x, "tensor", tensor_name(a, (size_t)r->born));
		set_fmt(x, "anchor", "ap-%ld", r->born);
		set_fmt(x, "drop", "%.1f", r->born_drop_db);
	}
	if (r->worst_local >= 0) {
		cJSON_DeleteItemFromObject(o, "worst_local");
		x = cJSON_AddObjectToObject(o, "worst_local");
		set_str(x, "tensor", tensor_name(a, (size_t)r->worst_local));
		set_fmt(x, "anchor", "ap-%ld", r->worst_local);
		set_sqnr(x, "sqnr", a->act_pairs[r->worst_local].local_sqnr_db);
	}
	if (mo != NULL) {
		cJSON_DeleteItemFromObject(o, "main_output");
		x = act_output_view(a, mo);
		cJSON_AddItemToObject(o, "main_output", x);
	}
	arr = cJSON_AddArrayToObject(o, "rows");
	for (i = 0; i < n && st == QR_OK; i++) {
		cJSON *row = act_row(a, pv[i], i + 1);

		set_page(cc, row, a->act_tensors[a->act_pairs[pv[i]].tensor].layer);
		cJSON_AddItemToArray(arr, row);
		st = act_hist_chart(cc, a, pv[i], row);
	}
	if (st == QR_OK)
		st = act_depth_charts(cc, a, k, pv, n, o);
	arr = cJSON_AddArrayToObject(o, "outputs");
	for (i = 0; i < a->n_act_outputs; i++)
		if (a->act_outputs[i].quant == k)
			cJSON_AddItemToArray(arr, act_output_view(
						     a, &a->act_outputs[i]));
	arr = cJSON_AddArrayToObject(o, "unmatched");
	for (i = 0; i < a->n_act_unmatched; i++) {
		const struct qr_act_unmatched *u = &a->act_unmatched[i];

		if (u->quant != k)
			continue;
		x = cJSON_CreateObject();
		set_str(x, "tensor", u->tensor);
		set_str(x, "layer", u->layer);
		set_str(x, "reason", u->reason);
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddBoolToObject(o, "has_unmatched", cJSON_GetArraySize(arr) > 0);
	free(pv);
	return st;
}

/* root.act: the data, one block per candidate, the float tensors. */
static enum qr_status
act_view(struct chart_ctx *cc, const struct qr_analysis *a, cJSON *root)
{
	const struct qr_act_data *dt = &a->data;
	cJSON *o = cJSON_AddObjectToObject(root, "act"), *arr;
	enum qr_status st = QR_OK;
	size_t i;

	cJSON_AddBoolToObject(o, "has_data", dt->source != NULL);
	cJSON_AddBoolToObject(o, "ran", dt->ran);
	set_str(o, "why", dt->why);
	set_str(o, "source", dt->source ? dt->source : "none");
	cJSON_AddBoolToObject(o, "random", dt->source != NULL &&
			      strcmp(dt->source, "random") == 0);
	set_count(o, "samples", dt->samples);
	set_str(o, "preprocessing", dt->preprocessing);
	set_fmt(o, "cos_threshold", "%g", dt->cos_threshold);
	set_fmt(o, "sqnr_threshold", "%g", dt->sqnr_threshold);
	set_fmt(o, "seconds", "%.2f", dt->seconds);
	set_count(o, "n_classes", dt->n_classes);
	arr = cJSON_AddArrayToObject(o, "warnings");
	for (i = 0; i < dt->n_warnings; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(
					     or_empty(dt->warnings[i])));
	cJSON_AddBoolToObject(o, "has_warnings", dt->n_warnings > 0);
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
		set_fmt(x, "anchor", "at-%zu", i);
		set_str(x, "name", t->name);
		set_str(x, "layer", t->layer);
		set_str(x, "op", t->op);
		set_str(x, "shape", t->shape);
		set_count(x, "channels", t->channels);
		set_num(x, "min", t->min);
		set_num(x, "max", t->max);
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
	return st;
}

/* The activation sentence of the verdict for candidate k, e.g. "output
 * cosine 0.9991; 3 layers below threshold; error is born at `conv3_2`". */
static void
act_verdict(const struct qr_analysis *a, size_t k, struct qr_buf *b,
	    const char **cls)
{
	const struct qr_act_run *r = &a->act_runs[k];
	const struct qr_act_output *mo = main_output(a, k);

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
		if (mo->classifier && mo->rows)
			qr_buf_printf(b, ", top-1 agreement %.1f%%",
				      100.0 * mo->agree / mo->rows);
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
	if (r->born >= 0)
		qr_buf_printf(b, "; error is born at %s (cumulative SQNR drops %.1f dB)",
			      tensor_name(a, (size_t)r->born), r->born_drop_db);
	if (r->worst_local >= 0 && r->worst_local != r->born)
		qr_buf_printf(b, "; worst local error at %s",
			      tensor_name(a, (size_t)r->worst_local));
	qr_buf_puts(b, ".");
}

/* ---- verdict ---- */

/* verdict.lines: one headline per candidate, e.g. "Candidate 1 (qdq):
 * output cosine 0.9991; 3 layers below threshold; error is born at
 * conv3_2", with the pieces apart so the page can colour and link them. */
static void
verdict_lines(const struct qr_analysis *a, const struct chart_ctx *cc,
	      cJSON *v)
{
	cJSON *lines = cJSON_AddArrayToObject(v, "lines");
	size_t k;

	for (k = 0; k < a->n_quant; k++) {
		const struct qr_act_run *r = a->act_runs ? &a->act_runs[k]
							 : NULL;
		const struct qr_act_output *mo = main_output(a, k);
		cJSON *x = cJSON_CreateObject();
		const char *cls = "good";

		cJSON_AddItemToArray(lines, x);
		set_fmt(x, "label", "Candidate %zu", k + 1);
		set_str(x, "format", qr_qformat_name(a->quants[k].format));
		set_fmt(x, "anchor", "a-%zu", k);
		cJSON_AddBoolToObject(x, "compared",
				      r != NULL && r->ran && a->data.ran);
		cJSON_AddNullToObject(x, "output");
		cJSON_AddNullToObject(x, "born");
		if (r == NULL || !r->ran || !a->data.ran) {
			set_str(x, "why", r && r->why ? r->why
				: a->data.why ? a->data.why
					      : "no data was run");
			set_str(x, "class", "warn");
			continue;
		}
		cJSON_AddNullToObject(x, "why");
		if (mo != NULL) {
			cJSON *o = cJSON_CreateObject();

			cJSON_ReplaceItemInObject(x, "output", o);
			set_fmt(o, "cos", "%.5f", mo->cosine_mean);
			set_str(o, "cos_class", cos_class(mo->cosine_mean,
						    a->data.cos_threshold));
			if (mo->cosine_mean < a->data.cos_threshold)
				cls = "bad";
			if (mo->classifier && mo->rows)
				set_fmt(o, "top1", "%.1f%%",
					100.0 * mo->agree / mo->rows);
			else
				cJSON_AddNullToObject(o, "top1");
		}
		set_count(x, "n_flagged", r->n_flagged);
		cJSON_AddBoolToObject(x, "one_flagged", r->n_flagged == 1);
		set_str(x, "flagged_class", r->n_flagged ? "bad" : "good");
		if (r->n_flagged > 0 && strcmp(cls, "good") == 0)
			cls = "warn";
		if (r->born >= 0) {
			cJSON *o = cJSON_CreateObject();
			const struct qr_act_tensor *t =
				&a->act_tensors[a->act_pairs[r->born].tensor];

			cJSON_ReplaceItemInObject(x, "born", o);
			set_str(o, "tensor", or_empty(t->name));
			set_page(cc, o, t->layer);
			set_fmt(o, "anchor", "activations.html#ap-%ld",
				r->born);
			set_fmt(o, "drop", "%.1f", r->born_drop_db);
		}
		set_str(x, "class", cls);
	}
	cJSON_AddBoolToObject(v, "has_lines", a->n_quant > 0);
}

static void
verdict_view(const struct qr_analysis *a, const struct chart_ctx *cc,
	     cJSON *root)
{
	cJSON *v = cJSON_AddObjectToObject(root, "verdict");
	const struct qr_weight_stats *worst = NULL;
	const struct qr_quant_weight *wq = NULL;
	size_t i, flagged = 0;
	const char *cls;
	struct qr_buf b = {0};
	char *text;

	for (i = 0; i < a->n_weights; i++) {
		if (layer_flagged(&a->weights[i]))
			flagged++;
		if (worst == NULL ||
		    a->weights[i].max_rel_range > worst->max_rel_range)
			worst = &a->weights[i];
	}
	for (i = 0; i < a->n_qweights; i++)
		if (wq == NULL || a->qweights[i].sqnr_db < wq->sqnr_db)
			wq = &a->qweights[i];

	if (a->n_weights == 0) {
		cls = "warn";
		qr_buf_puts(&b, "No Conv, Gemm or MatMul weights were found to analyse.");
	} else if (flagged == 0) {
		cls = "good";
		qr_buf_printf(&b, "Weights look quantization-friendly: none of the %zu layers has a relative range above %g or a predicted per-tensor SQNR below %g dB.",
			      a->n_weights, QR_BAD_REL_RANGE, QR_SQNR_BAD_DB);
	} else {
		cls = flagged * 4 >= a->n_weights ? "bad" : "warn";
		qr_buf_printf(&b, "%zu of %zu layers %s weight ranges that per-tensor quantization handles badly (worst: %s, max relative range %.3g). Prefer per-channel quantization",
			      flagged, a->n_weights,
			      flagged == 1 ? "has" : "have",
			      or_empty(worst->layer), worst->max_rel_range);
		qr_buf_puts(&b, a->n_cle > 0 ? " or apply cross-layer equalization."
					     : ".");
	}
	if (wq != NULL) {
		char num[64];

		if (wq->sqnr_db < QR_SQNR_BAD_DB)
			cls = "bad";
		fmt_sqnr(num, sizeof num, wq->sqnr_db);
		qr_buf_printf(&b, " Worst quantized weight: %s in candidate %zu at %s dB SQNR.",
			      or_empty(wq->layer), wq->quant + 1, num);
	}
	for (i = 0; a->act_runs != NULL && i < a->n_quant; i++)
		act_verdict(a, i, &b, &cls);
	if (a->data.ran && a->data.source &&
	    strcmp(a->data.source, "random") == 0)
		qr_buf_puts(&b, " The data was random (no --data given): "
			    "activation numbers show how the models differ on "
			    "noise, not on real inputs.");
	set_str(v, "class", cls);
	text = qr_buf_take(&b);
	set_str(v, "text", text);
	free(text);
	verdict_lines(a, cc, v);
}

/* ---- layers: the table of every layer, and one page each ---- */

/* A table cell: display text, CSS class and a sort key (v: a number as
 * text, "" when there is none, so the sort puts it last). */
static void
cell(cJSON *cells, const char *text, const char *cls, double v)
{
	cJSON *c = cJSON_CreateObject();
	char buf[64];

	set_str(c, "text", text);
	set_str(c, "cls", cls != NULL ? cls : "");
	if (isnan(v))
		buf[0] = '\0';
	else if (isinf(v))
		snprintf(buf, sizeof buf, v > 0 ? "Infinity" : "-Infinity");
	else
		snprintf(buf, sizeof buf, "%.9g", v);
	set_str(c, "v", buf);
	cJSON_AddItemToArray(cells, c);
}

static void
cell_num(cJSON *cells, double v, const char *cls)
{
	char buf[64];

	qr_fmt_num(buf, sizeof buf, v);
	cell(cells, buf, cls, v);
}

static void
cell_sqnr(cJSON *cells, double v, const char *cls)
{
	char buf[64];

	fmt_sqnr(buf, sizeof buf, v);
	cell(cells, buf, cls, v);
}

static void
cell_cos(cJSON *cells, double v, const char *cls)
{
	char buf[64];

	if (isfinite(v))
		snprintf(buf, sizeof buf, "%.5f", v);
	else
		qr_fmt_num(buf, sizeof buf, v);
	cell(cells, buf, cls, v);
}

static void
cell_none(cJSON *cells)
{
	cell(cells, "", "none", NAN);
}

static void
column(cJSON *cols, const char *label, const char *title, const char *group)
{
	cJSON *c = cJSON_CreateObject();

	set_str(c, "label", label);
	set_str(c, "title", title);
	set_str(c, "group", group);
	cJSON_AddItemToArray(cols, c);
}

static int
cmp_str(const void *pa, const void *pb)
{
	return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* root.ltable: one row per layer, every metric; layers.html. */
static void
layers_table(const struct qr_analysis *a, const struct qr_report_layers *L,
	     cJSON *root)
{
	cJSON *t = cJSON_AddObjectToObject(root, "ltable");
	cJSON *cols = cJSON_AddArrayToObject(t, "columns");
	cJSON *groups = cJSON_AddArrayToObject(t, "groups");
	cJSON *rows = cJSON_AddArrayToObject(t, "rows");
	cJSON *ops = cJSON_AddArrayToObject(t, "ops");
	double tc = a->data.cos_threshold, ts = a->data.sqnr_threshold;
	const char **opv = xcalloc(L->n + 1, sizeof *opv);
	size_t i, k, n_flagged = 0;
	char buf[96];

	column(cols, "Channels", "output channels of the weight", "w");
	column(cols, "Max rel. range",
	       "max relative weight range (range of a channel / smallest channel range)",
	       "w");
	column(cols, "Outliers", "channels above the layer's Tukey fence",
	       "w");
	column(cols, "SQNR/tensor",
	       "predicted int8 weight SQNR with one scale per tensor (dB)",
	       "w");
	column(cols, "SQNR/channel",
	       "predicted int8 weight SQNR with one scale per channel (dB)",
	       "w");
	{
		cJSON *g = cJSON_CreateObject();

		set_str(g, "label", "Float weights");
		cJSON_AddNumberToObject(g, "span", 5);
		cJSON_AddItemToArray(groups, g);
	}
	for (k = 0; k < a->n_quant; k++) {
		cJSON *g = cJSON_CreateObject();
		char grp[32];

		snprintf(grp, sizeof grp, "c%zu", k + 1);
		column(cols, "Weight SQNR",
		       "SQNR of the candidate's dequantized weight against the float weight (dB)",
		       grp);
		column(cols, "Cosine",
		       "mean cosine similarity of the layer's output, float vs candidate",
		       grp);
		column(cols, "SQNR", "cumulative SQNR of the layer's output (dB)",
		       grp);
		column(cols, "Local SQNR",
		       "SQNR with float inputs: the layer's own error (dB)", grp);
		set_fmt(g, "label", "Candidate %zu (%s)", k + 1,
			qr_qformat_name(a->quants[k].format));
		cJSON_AddNumberToObject(g, "span", 4);
		cJSON_AddItemToArray(groups, g);
	}
	for (i = 0; i < L->n; i++) {
		const struct qr_report_layer *l = &L->v[i];
		cJSON *r = cJSON_CreateObject(), *cells;
		int flagged = 0;

		cJSON_AddItemToArray(rows, r);
		cJSON_AddNumberToObject(r, "n", (double)(i + 1));
		set_fmt(r, "anchor", "l-%zu", i);
		set_str(r, "name", l->name);
		set_str(r, "op", l->op);
		set_str(r, "page", l->page);
		opv[i] = l->op;
		cells = cJSON_AddArrayToObject(r, "cells");
		if (l->weight >= 0) {
			const struct qr_weight_stats *w = &a->weights[l->weight];

			snprintf(buf, sizeof buf, "%zu", w->channels);
			cell(cells, buf, "", (double)w->channels);
			cell_num(cells, w->max_rel_range,
				 rel_class(w->max_rel_range));
			snprintf(buf, sizeof buf, "%zu", w->n_outliers);
			cell(cells, buf, "", (double)w->n_outliers);
			cell_sqnr(cells, w->sqnr_per_tensor_db,
				  sqnr_class(w->sqnr_per_tensor_db));
			cell_sqnr(cells, w->sqnr_per_channel_db,
				  sqnr_class(w->sqnr_per_channel_db));
			flagged |= layer_flagged(w);
		} else {
			for (k = 0; k < 5; k++)
				cell_none(cells);
		}
		for (k = 0; k < a->n_quant; k++) {
			if (l->qweight[k] >= 0) {
				double v = a->qweights[l->qweight[k]].sqnr_db;

				cell_sqnr(cells, v, sqnr_class(v));
			} else {
				cell_none(cells);
			}
			if (l->act[k] >= 0) {
				const struct qr_act_pair *p =
					&a->act_pairs[l->act[k]];

				cell_cos(cells, p->cosine_mean,
					 cos_class(p->cosine_mean, tc));
				cell_sqnr(cells, p->sqnr_db,
					  act_sqnr_class(p->sqnr_db, ts));
				cell_sqnr(cells, p->local_sqnr_db,
					  act_sqnr_class(p->local_sqnr_db, ts));
				flagged |= p->flags != 0;
			} else {
				cell_none(cells);
				cell_none(cells);
				cell_none(cells);
			}
		}
		cJSON_AddBoolToObject(r, "flagged", flagged);
		n_flagged += flagged != 0;
	}
	qsort(opv, L->n, sizeof *opv, cmp_str);
	for (i = 0; i < L->n; i++) {
		size_t j = i;
		cJSON *o;

		while (j + 1 < L->n && strcmp(opv[j + 1], opv[i]) == 0)
			j++;
		o = cJSON_CreateObject();
		set_str(o, "op", opv[i]);
		cJSON_AddNumberToObject(o, "n", (double)(j - i + 1));
		cJSON_AddItemToArray(ops, o);
		i = j;
	}
	set_count(t, "n", L->n);
	set_count(t, "n_flagged", n_flagged);
	cJSON_AddBoolToObject(t, "has_graph", L->has_graph);
	set_count(t, "n_hidden", L->n_hidden);
	cJSON_AddBoolToObject(t, "has_hidden", L->n_hidden > 0);
	free(opv);
}

/* The item of arr whose key equals want, or NULL. */
static const cJSON *
find_item(const cJSON *arr, const char *key, const char *want)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, arr) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, key);

		if (cJSON_IsString(v) && strcmp(v->valuestring, want) == 0)
			return x;
	}
	return NULL;
}

static cJSON *
layer_link(const struct qr_report_layers *L, size_t i)
{
	cJSON *o = cJSON_CreateObject();

	set_str(o, "name", L->v[i].name);
	set_str(o, "op", L->v[i].op);
	set_str(o, "page", L->v[i].page);
	return o;
}

static cJSON *
get_path(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);

	return b != NULL ? cJSON_GetObjectItemCaseSensitive(x, b)
			 : (cJSON *)x;
}

cJSON *
qr_report_layer_view(const struct qr_analysis *a,
		     const struct qr_report_layers *L, const cJSON *view,
		     size_t i)
{
	const struct qr_report_layer *l = &L->v[i];
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	const cJSON *found;
	char key[48];
	size_t k, j;
	int any = 0;

	set_str(o, "name", l->name);
	set_str(o, "op", l->op);
	set_str(o, "page", l->page);
	set_fmt(o, "number", "%zu", i + 1);
	set_fmt(o, "n_layers", "%zu", L->n);
	set_fmt(o, "row_anchor", "l-%zu", i);
	if (l->depth >= 0)
		set_fmt(o, "depth", "%d", l->depth);
	else
		cJSON_AddNullToObject(o, "depth");
	cJSON_AddItemToObject(o, "prev", i > 0 ? layer_link(L, i - 1)
					       : cJSON_CreateNull());
	cJSON_AddItemToObject(o, "next", i + 1 < L->n ? layer_link(L, i + 1)
						      : cJSON_CreateNull());
	arr = cJSON_AddArrayToObject(o, "inputs");
	for (j = 0; j < l->n_in; j++)
		cJSON_AddItemToArray(arr, layer_link(L, l->in[j]));
	arr = cJSON_AddArrayToObject(o, "outputs");
	for (j = 0; j < l->n_out; j++)
		cJSON_AddItemToArray(arr, layer_link(L, l->out[j]));
	cJSON_AddBoolToObject(o, "has_graph", L->has_graph);
	cJSON_AddBoolToObject(o, "reads_input", l->reads_input);
	cJSON_AddBoolToObject(o, "writes_output", l->writes_output);

	/* float weights: the Weights page's object, charts included */
	found = l->weight >= 0 ? cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(view, "weights"),
		(int)l->weight) : NULL;
	cJSON_AddItemToObject(o, "weight", found ? cJSON_Duplicate(found, 1)
						 : cJSON_CreateNull());
	any |= found != NULL;

	/* per candidate: quantization of the weight, then activations */
	arr = cJSON_AddArrayToObject(o, "quants");
	for (k = 0; k < a->n_quant; k++) {
		const cJSON *q = cJSON_GetArrayItem(
			cJSON_GetObjectItemCaseSensitive(view, "quants"),
			(int)k);
		const struct qr_quant_weight *qw;
		const struct qr_quant_summary *s = &a->quants[k];
		const cJSON *ql = NULL;

		if (l->qweight[k] < 0)
			continue;
		qw = &a->qweights[l->qweight[k]];
		snprintf(key, sizeof key, "qw-%ld", l->qweight[k]);
		found = find_item(cJSON_GetObjectItemCaseSensitive(q, "pairs"),
				  "anchor", key);
		if (found == NULL)
			continue;
		x = cJSON_Duplicate(found, 1);
		set_fmt(x, "label", "Candidate %zu", k + 1);
		set_str(x, "format", qr_qformat_name(s->format));
		if (qw->quant_layer != NULL)
			ql = find_item(cJSON_GetObjectItemCaseSensitive(
					       q, "layers"),
				       "layer", qw->quant_layer);
		cJSON_AddItemToObject(x, "qlayer", ql ? cJSON_Duplicate(ql, 1)
						      : cJSON_CreateNull());
		cJSON_AddItemToArray(arr, x);
		any = 1;
	}
	cJSON_AddBoolToObject(o, "has_quants", cJSON_GetArraySize(arr) > 0);
	arr = cJSON_AddArrayToObject(o, "acts");
	for (k = 0; k < a->n_quant; k++) {
		const cJSON *cand = cJSON_GetArrayItem(
			get_path(view, "act", "cands"), (int)k);

		if (l->act[k] < 0)
			continue;
		snprintf(key, sizeof key, "ap-%ld", l->act[k]);
		found = find_item(cJSON_GetObjectItemCaseSensitive(cand,
								   "rows"),
				  "anchor", key);
		if (found == NULL)
			continue;
		x = cJSON_Duplicate(found, 1);
		set_fmt(x, "label", "Candidate %zu", k + 1);
		set_str(x, "format", qr_qformat_name(a->quants[k].format));
		cJSON_AddItemToArray(arr, x);
		any = 1;
	}
	cJSON_AddBoolToObject(o, "has_acts", cJSON_GetArraySize(arr) > 0);
	found = l->tensor >= 0 ? cJSON_GetArrayItem(
		get_path(view, "act", "tensors"), (int)l->tensor) : NULL;
	cJSON_AddItemToObject(o, "tensor", found ? cJSON_Duplicate(found, 1)
						 : cJSON_CreateNull());

	/* CLE sets this layer is part of, with its before/after chart */
	arr = cJSON_AddArrayToObject(o, "cle");
	for (k = 0; k < a->n_cle; k++) {
		const struct qr_cle_set *c = &a->cle[k];
		const cJSON *cv = cJSON_GetArrayItem(
			cJSON_GetObjectItemCaseSensitive(view, "cle"), (int)k);

		for (j = 0; j < c->n_layers && j < 3; j++) {
			const cJSON *lv;

			if (c->layers[j].name == NULL ||
			    strcmp(c->layers[j].name, l->name) != 0)
				continue;
			x = cJSON_Duplicate(cv, 1);
			cJSON_DeleteItemFromObject(x, "layers");
			lv = cJSON_GetArrayItem(
				cJSON_GetObjectItemCaseSensitive(cv, "layers"),
				(int)j);
			cJSON_AddItemToObject(x, "this", lv
				? cJSON_Duplicate(lv, 1) : cJSON_CreateNull());
			set_fmt(x, "position", "%zu of %zu", j + 1,
				c->n_layers);
			cJSON_AddItemToArray(arr, x);
			any = 1;
			break;
		}
	}
	cJSON_AddBoolToObject(o, "has_cle", cJSON_GetArraySize(arr) > 0);
	cJSON_AddBoolToObject(o, "has_nothing", !any && l->tensor < 0);
	return o;
}

/* root.worst_acts: the matched tensors with the lowest cumulative SQNR
 * over every candidate, for the overview. */
static void
worst_acts_view(const struct qr_analysis *a, const struct chart_ctx *cc,
		cJSON *root)
{
	cJSON *arr = cJSON_AddArrayToObject(root, "worst_acts");
	size_t *order = xcalloc(a->n_act_pairs + 1, sizeof *order);
	size_t i, n = 0;
	double ts = a->data.sqnr_threshold, tc = a->data.cos_threshold;

	for (i = 0; i < a->n_act_pairs; i++)
		if (!(a->act_pairs[i].flags & QR_ACT_FLAG_CANCEL)) /* noise */
			order[n++] = i;
	for (i = 1; i < n; i++) {
		size_t j, x = order[i];
		double v = a->act_pairs[x].sqnr_db;

		for (j = i; j > 0 && !(a->act_pairs[order[j - 1]].sqnr_db <= v);
		     j--)
			order[j] = order[j - 1];
		order[j] = x;
	}
	for (i = 0; i < n && i < TOP_PROBLEMS; i++) {
		const struct qr_act_pair *p = &a->act_pairs[order[i]];
		const struct qr_act_tensor *t = &a->act_tensors[p->tensor];
		cJSON *x = cJSON_CreateObject();

		cJSON_AddNumberToObject(x, "rank", (double)(i + 1));
		set_fmt(x, "candidate", "%zu", p->quant + 1);
		set_str(x, "tensor", t->name);
		set_str(x, "layer", t->layer);
		set_str(x, "op", t->op);
		set_page(cc, x, t->layer);
		set_fmt(x, "anchor", "activations.html#ap-%zu", order[i]);
		set_sqnr(x, "sqnr", p->sqnr_db);
		set_str(x, "sqnr_class", act_sqnr_class(p->sqnr_db, ts));
		set_sqnr(x, "local_sqnr", p->local_sqnr_db);
		set_str(x, "local_sqnr_class",
			act_sqnr_class(p->local_sqnr_db, ts));
		set_cos(x, "cos", p->cosine_mean);
		set_str(x, "cos_class", cos_class(p->cosine_mean, tc));
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddBoolToObject(root, "has_worst_acts", n > 0);
	free(order);
}

/* ---- gate and compare, from report.json ---- */

/* "%.6g": enough to tell 0.99989 from 0.9999. */
static void
set_num6(cJSON *o, const char *key, double v)
{
	char buf[64];

	if (isfinite(v))
		snprintf(buf, sizeof buf, "%.6g", v);
	else
		qr_fmt_num(buf, sizeof buf, v);
	cJSON_AddStringToObject(o, key, buf);
}

static void
gate_view(const struct chart_ctx *cc, const cJSON *json, cJSON *root)
{
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(json, "gate"), *c;
	cJSON *o, *arr;
	int failed = 0;

	if (g == NULL) {
		cJSON_AddNullToObject(root, "gate");
		return;
	}
	o = cJSON_AddObjectToObject(root, "gate");
	arr = cJSON_AddArrayToObject(o, "checks");
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g, "checks")) {
		cJSON *x = cJSON_CreateObject(), *items;
		const cJSON *f, *w = cJSON_GetObjectItemCaseSensitive(c,
								      "worst");
		int passed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			c, "passed"));
		int shown = 0;

		failed += !passed;
		cJSON_AddItemToArray(arr, x);
		set_str(x, "expr", cJSON_GetObjectItemCaseSensitive(
				   c, "expr")->valuestring);
		cJSON_AddBoolToObject(x, "passed", passed);
		set_str(x, "class", passed ? "good" : "bad");
		set_fmt(x, "items", "%.0f", cJSON_GetObjectItemCaseSensitive(
				c, "items")->valuedouble);
		set_fmt(x, "failures", "%.0f",
			cJSON_GetObjectItemCaseSensitive(c, "failures")
				->valuedouble);
		set_str(x, "worst", cJSON_IsString(w) ? w->valuestring : NULL);
		items = cJSON_AddArrayToObject(x, "failed");
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
					   c, "failed_items")) {
			const cJSON *nm = cJSON_GetObjectItemCaseSensitive(
				f, "name");
			const cJSON *q = cJSON_GetObjectItemCaseSensitive(
				f, "quant");
			const char *name = cJSON_IsString(nm) ? nm->valuestring
							     : "";
			cJSON *y;
			long li;

			if (shown++ == TOP_PROBLEMS)
				break;
			y = cJSON_CreateObject();
			set_str(y, "name", name);
			if (cJSON_IsNumber(q))
				set_fmt(y, "candidate", "candidate %d",
					q->valueint + 1);
			else
				set_str(y, "candidate", "");
			/* outputs and tensors are named by tensor: find the
			 * layer through the analysis' tensors */
			li = qr_report_layer_find(cc->L, name);
			if (li < 0 && cc->a != NULL) {
				size_t t;

				for (t = 0; t < cc->a->n_act_tensors; t++)
					if (cc->a->act_tensors[t].name &&
					    strcmp(cc->a->act_tensors[t].name,
						   name) == 0) {
						li = qr_report_layer_find(
							cc->L, cc->a->act_tensors[t].layer);
						break;
					}
			}
			if (li >= 0)
				set_str(y, "page", cc->L->v[li].page);
			else
				cJSON_AddNullToObject(y, "page");
			set_num6(y, "actual", cJSON_IsNumber(
					cJSON_GetObjectItemCaseSensitive(
						f, "actual"))
				? cJSON_GetObjectItemCaseSensitive(f, "actual")
					  ->valuedouble : NAN);
			cJSON_AddItemToArray(items, y);
		}
	}
	cJSON_AddBoolToObject(o, "passed", failed == 0);
	set_str(o, "class", failed ? "bad" : "good");
	set_fmt(o, "n_failed", "%d", failed);
	set_fmt(o, "n_checks", "%d", cJSON_GetArraySize(arr));
}

/* Formatted old/new/delta of one compared metric. */
static void
cmp_field(cJSON *x, const cJSON *c, const char *key, int is_cos)
{
	char k[64], out[64];
	const char *suffix[] = { "_old", "_new", "_delta" };
	size_t i;

	for (i = 0; i < 3; i++) {
		const cJSON *v;
		double d;

		snprintf(k, sizeof k, "%s%s", key, suffix[i]);
		v = cJSON_GetObjectItemCaseSensitive(c, k);
		d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
		if (cJSON_IsNull(v) && i < 2 && strstr(key, "sqnr") != NULL)
			d = INFINITY; /* exact; an absent key: no such item */
		if (isnan(d))
			snprintf(out, sizeof out, "\xe2\x80\x94");
		else if (i == 2 && isfinite(d))
			snprintf(out, sizeof out, is_cos ? "%+.5f" : "%+.2f", d);
		else if (is_cos && isfinite(d))
			snprintf(out, sizeof out, "%.5f", d);
		else if (isfinite(d))
			snprintf(out, sizeof out, "%.2f", d);
		else
			qr_fmt_num(out, sizeof out, d);
		cJSON_AddStringToObject(x, k, out);
	}
}

static const char *
status_class(const char *s)
{
	if (strcmp(s, "regressed") == 0 || strcmp(s, "gone") == 0)
		return "bad";
	if (strcmp(s, "improved") == 0)
		return "good";
	return "";
}

/* One compare table: rows regressed first. */
static cJSON *
cmp_rows(const struct chart_ctx *cc, const cJSON *arr, const char *name_key,
	 const char *const *fields, const int *is_cos, size_t nf)
{
	static const char *const order[] = { "regressed", "gone", "improved",
					     "new", "same" };
	cJSON *out = cJSON_CreateArray();
	size_t pass, i;

	for (pass = 0; pass < 5; pass++) {
		const cJSON *c;

		cJSON_ArrayForEach(c, arr) {
			const char *st = cJSON_GetObjectItemCaseSensitive(
				c, "status")->valuestring;
			const cJSON *nm = cJSON_GetObjectItemCaseSensitive(
				c, name_key);
			const cJSON *ly = cJSON_GetObjectItemCaseSensitive(
				c, "layer");
			const cJSON *q = cJSON_GetObjectItemCaseSensitive(
				c, "quant");
			cJSON *x;

			if (strcmp(st, order[pass]) != 0)
				continue;
			x = cJSON_CreateObject();
			set_str(x, "name", cJSON_IsString(nm) ? nm->valuestring
							       : "");
			set_page(cc, x, cJSON_IsString(ly) ? ly->valuestring
				 : cJSON_IsString(nm) ? nm->valuestring : NULL);
			if (cJSON_IsNumber(q))
				set_fmt(x, "candidate", "%d", q->valueint + 1);
			else
				set_str(x, "candidate", "");
			set_str(x, "status", st);
			set_str(x, "class", status_class(st));
			for (i = 0; i < nf; i++)
				cmp_field(x, c, fields[i], is_cos[i]);
			cJSON_AddItemToArray(out, x);
		}
	}
	return out;
}

static void
compare_view(const struct chart_ctx *cc, const cJSON *json, cJSON *root)
{
	static const char *const out_f[] = { "cosine", "sqnr_db", "top1" };
	static const int out_c[] = { 1, 0, 1 };
	static const char *const act_f[] = { "sqnr_db", "local_sqnr_db",
					     "cosine" };
	static const int act_c[] = { 0, 0, 1 };
	static const char *const qw_f[] = { "sqnr_db" };
	static const int qw_c[] = { 0 };
	static const char *const w_f[] = { "max_rel_range",
					   "sqnr_per_tensor_db" };
	static const int w_c[] = { 0, 0 };
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(json, "compare");
	const cJSON *old;
	cJSON *o;
	static const char *const counts[] = { "regressed", "improved", "same",
					      "new", "gone" };
	size_t i;

	if (c == NULL) {
		cJSON_AddNullToObject(root, "compare");
		return;
	}
	o = cJSON_AddObjectToObject(root, "compare");
	old = cJSON_GetObjectItemCaseSensitive(c, "old");
	set_str(o, "path", cJSON_GetObjectItemCaseSensitive(old, "path")
			   ->valuestring);
	{
		const cJSON *cl = cJSON_GetObjectItemCaseSensitive(
			old, "command_line");

		set_str(o, "command_line", cJSON_IsString(cl) ? cl->valuestring
							      : NULL);
	}
	for (i = 0; i < 5; i++)
		set_fmt(o, counts[i], "%.0f",
			cJSON_GetObjectItemCaseSensitive(c, counts[i])
				->valuedouble);
	set_str(o, "class", cJSON_GetObjectItemCaseSensitive(c, "regressed")
				    ->valuedouble > 0 ? "bad" : "good");
	cJSON_AddBoolToObject(o, "any_regressed",
			      cJSON_GetObjectItemCaseSensitive(c, "regressed")
				      ->valuedouble > 0);
	cJSON_AddItemToObject(o, "outputs", cmp_rows(cc,
		cJSON_GetObjectItemCaseSensitive(c, "outputs"), "name", out_f,
		out_c, 3));
	cJSON_AddItemToObject(o, "acts", cmp_rows(cc,
		cJSON_GetObjectItemCaseSensitive(c, "activations"), "tensor",
		act_f, act_c, 3));
	cJSON_AddItemToObject(o, "qweights", cmp_rows(cc,
		cJSON_GetObjectItemCaseSensitive(c, "quant_weights"), "layer",
		qw_f, qw_c, 1));
	cJSON_AddItemToObject(o, "weights", cmp_rows(cc,
		cJSON_GetObjectItemCaseSensitive(c, "weights"), "layer", w_f,
		w_c, 2));
	{
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(
			c, "tolerances");

		set_fmt(o, "tol_sqnr", "%g", cJSON_GetObjectItemCaseSensitive(
				t, "sqnr_db")->valuedouble);
		set_fmt(o, "tol_cos", "%g", cJSON_GetObjectItemCaseSensitive(
				t, "cosine")->valuedouble);
		set_fmt(o, "tol_rel", "%.0f", 100 * cJSON_GetObjectItemCaseSensitive(
				t, "rel_range_fraction")->valuedouble);
	}
}

/* ---- the whole context ---- */

enum qr_status
qr_report_view_new(const struct qr_analysis *a,
		   const struct qr_report_opts *opts,
		   const struct qr_report_layers *L, const cJSON *json,
		   struct qr_chart_queue *q, cJSON **out, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	struct chart_ctx cc = { q, d, 0, L, a };
	cJSON *root = cJSON_CreateObject(), *arr, *o;
	size_t i;

	*out = NULL;
	set_str(root, "version", opts && opts->version ? opts->version : "");
	set_str(root, "ort_cpu", opts ? opts->ort_cpu : NULL);
	set_str(root, "command_line", opts ? opts->command_line : NULL);
	set_fmt(root, "analysis_seconds", "%.2f", a->seconds);
	/* the footer's time: the weights' analysis and the data run */
	set_fmt(root, "total_seconds", "%.2f", a->seconds +
		(a->data.source != NULL ? a->data.seconds : 0.0));
	if (a->data.source != NULL)
		set_fmt(root, "data_seconds", "%.2f", a->data.seconds);
	else
		set_str(root, "data_seconds", NULL);
	o = cJSON_AddObjectToObject(root, "thresholds");
	cJSON_AddNumberToObject(o, "rel_range", QR_BAD_REL_RANGE);
	cJSON_AddNumberToObject(o, "rel_range_warn", QR_BAD_REL_RANGE / 2);
	cJSON_AddNumberToObject(o, "sqnr_bad", QR_SQNR_BAD_DB);
	cJSON_AddNumberToObject(o, "sqnr_warn", QR_SQNR_WARN_DB);
	cJSON_AddNumberToObject(o, "html_max", QR_HTML_MAX_CHARS);

	verdict_view(a, &cc, root);
	arr = cJSON_AddArrayToObject(root, "models");
	for (i = 0; i < a->n_models; i++)
		cJSON_AddItemToArray(arr, model_view(&a->models[i], i));
	cJSON_AddItemToObject(root, "float_model",
			      a->n_models > 0 ? cJSON_Duplicate(
				      cJSON_GetArrayItem(arr, 0), 1)
					      : cJSON_CreateNull());

	set_count(root, "n_weights", a->n_weights);
	if ((st = weights_view(&cc, a, root)) != QR_OK)
		goto out;
	o = cJSON_AddObjectToObject(root, "charts");
	if ((st = model_weight_charts(&cc, a, o)) != QR_OK)
		goto out;

	arr = cJSON_AddArrayToObject(root, "quants");
	for (i = 0; i < a->n_quant && st == QR_OK; i++) {
		cJSON *q;

		st = quant_view(&cc, a, i, &q);
		cJSON_AddItemToArray(arr, q);
	}
	if (st != QR_OK)
		goto out;
	arr = cJSON_AddArrayToObject(root, "unmatched");
	for (i = 0; i < a->n_unmatched; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(or_empty(
						  a->unmatched[i])));

	cJSON_AddBoolToObject(root, "has_unmatched", a->n_unmatched > 0);
	arr = cJSON_AddArrayToObject(root, "cle");
	for (i = 0; i < a->n_cle && st == QR_OK; i++) {
		cJSON *c;

		st = cle_view(&cc, &a->cle[i], i, &c);
		cJSON_AddItemToArray(arr, c);
	}
	if (st != QR_OK)
		goto out;
	arr = cJSON_AddArrayToObject(root, "cle_blockers");
	for (i = 0; i < a->n_cle_blockers; i++) {
		const struct qr_cle_blocker *b = &a->cle_blockers[i];

		o = cJSON_CreateObject();
		set_str(o, "from", b->from);
		set_str(o, "to", b->to);
		set_str(o, "reason", b->reason);
		set_str(o, "fix", b->fix);
		cJSON_AddItemToArray(arr, o);
	}
	cJSON_AddBoolToObject(root, "has_blockers", a->n_cle_blockers > 0);
	if ((st = act_view(&cc, a, root)) != QR_OK)
		goto out;
	arr = cJSON_AddArrayToObject(root, "warnings");
	for (i = 0; d != NULL && i < d->n_warnings; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(or_empty(
						  d->warnings[i].msg)));
	cJSON_AddBoolToObject(root, "has_warnings",
			      d != NULL && d->n_warnings > 0);
	layers_table(a, L, root);
	worst_acts_view(a, &cc, root);
	gate_view(&cc, json, root);
	compare_view(&cc, json, root);
	cJSON_AddNullToObject(root, "layer");
	cJSON_AddNullToObject(root, "graph");
	*out = root;
	root = NULL;
out:
	cJSON_Delete(root);
	return st;
}
