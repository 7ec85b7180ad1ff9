/*
 * report: where the error comes from, on the activations page and in the
 * verdict: per candidate the layers that make the most noise and those
 * that amplify it, the shares per op group and the "born at" or
 * "builds up" sentence (error_sources.c); its worst samples with their
 * thumbnails and per-layer traces (worst_samples.c); the activation
 * outliers at the weighted layers' inputs, ranked, with a heatmap each
 * (outliers.c).
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

#define SENTENCE_TOP 3           /* creators, amplifiers, groups named */
#define GROUP_MIN 0.01           /* groups below this share go unnamed */
#define THUMB_MIN 64             /* a thumbnail's shorter side, pixels */
#define THUMB_SHOW 96            /* a thumbnail's longer side on the page */
#define HEAT_LO -1.0f            /* heatmap colours: 0.1x the median */
#define HEAT_HI 2.0f             /*   to 100x */
#define HEAT_WIDTH 512           /* a heatmap's width on the page */
#define HEAT_ROW 14              /* one of its rows' height */

static const struct qr_act_tensor *
pair_tensor(const struct qr_analysis *a, long pi)
{
	return &a->act_tensors[a->act_pairs[pi].tensor];
}

/* "84%", or "0.3%" below 1%. */
static void
fmt_share(char *buf, size_t n, double v)
{
	if (!isfinite(v))
		snprintf(buf, n, "\xe2\x80\x94");
	else if (v < 0.01 && v > 0)
		snprintf(buf, n, "%.1f%%", 100 * v);
	else
		snprintf(buf, n, "%.0f%%", 100 * v);
}

/* Op groups by share, largest first; returns how many have pairs. */
static size_t
groups_by_share(const struct qr_error_sources *es, int *order)
{
	size_t n = 0, i, j;

	for (i = 0; i < QR_OPG_N; i++) {
		if (es->group_pairs[i] == 0)
			continue;
		for (j = n; j > 0 && !(es->group_share[order[j - 1]] >=
				       es->group_share[i]); j--)
			order[j] = order[j - 1];
		order[j] = (int)i;
		n++;
	}
	return n;
}

/* See report-int.h. */
void
qr_view_sources_text(const struct qr_analysis *a, size_t k, struct qr_buf *b)
{
	const struct qr_act_run *r = &a->act_runs[k];
	const struct qr_error_sources *es = &r->es;
	int order[QR_OPG_N];
	size_t i, n;
	char sh[32];

	if (!es->computed)
		return;
	if (es->n_suspect > 0) {
		qr_buf_printf(b, "; %zu suspect pairing%s left out (%s error "
			      "vanishes in the next compared layer: not the "
			      "same values); where the error comes from is "
			      "not said", es->n_suspect,
			      es->n_suspect == 1 ? "" : "s",
			      es->n_suspect == 1 ? "its" : "their");
	} else if (r->born >= 0) {
		fmt_share(sh, sizeof sh, r->born_share);
		qr_buf_printf(b, "; error is born at %s (it makes %s of the "
			      "noise; local SQNR %.1f dB)",
			      qr_or_empty(pair_tensor(a, r->born)->name), sh,
			      a->act_pairs[r->born].local_sqnr_db);
	} else if (es->n_creators == 0) {
		qr_buf_puts(b, "; no layer adds error of its own");
	} else {
		qr_buf_puts(b, "; the error builds up over many layers, none "
			    "makes half of it (largest:");
		for (i = 0; i < es->n_creators && i < SENTENCE_TOP; i++) {
			fmt_share(sh, sizeof sh,
				  a->act_pairs[es->creators[i]].noise_share);
			qr_buf_printf(b, "%s %s %s", i ? "," : "",
				      qr_or_empty(pair_tensor(
					      a, es->creators[i])->name), sh);
		}
		qr_buf_puts(b, "); by op group:");
		n = groups_by_share(es, order);
		for (i = 0; i < n && i < SENTENCE_TOP; i++) {
			if (!(es->group_share[order[i]] >= GROUP_MIN))
				break;
			fmt_share(sh, sizeof sh, es->group_share[order[i]]);
			qr_buf_printf(b, "%s %s %s", i ? "," : "",
				      qr_op_group_name(order[i]), sh);
		}
	}
	for (i = 0; i < es->n_amplifiers && i < SENTENCE_TOP; i++)
		qr_buf_printf(b, "%s %s (+%.1f dB)",
			      i ? "," : "; noise amplified most at",
			      qr_or_empty(pair_tensor(a, es->amplifiers[i])->name),
			      a->act_pairs[es->amplifiers[i]].noise_gain_db);
}

/* See report-int.h. */
void
qr_view_born(const struct qr_analysis *a, const struct qr_view_ctx *cc,
	     size_t k, cJSON *x)
{
	const struct qr_act_run *r = &a->act_runs[k];
	const struct qr_error_sources *es = &r->es;
	char sh[32];
	cJSON *o;

	cJSON_DeleteItemFromObject(x, "born");
	cJSON_DeleteItemFromObject(x, "builds_up");
	cJSON_AddNullToObject(x, "born");
	cJSON_AddNullToObject(x, "builds_up");
	if (r->born >= 0) {
		const struct qr_act_tensor *t = pair_tensor(a, r->born);

		o = cJSON_CreateObject();
		cJSON_ReplaceItemInObject(x, "born", o);
		qr_view_str(o, "tensor", qr_or_empty(t->name));
		if (cc != NULL)
			qr_view_page(cc, o, t->layer);
		qr_view_fmt(o, "anchor", "activations.html#ap-%ld", r->born);
		fmt_share(sh, sizeof sh, r->born_share);
		qr_view_str(o, "share", sh);
	} else if (es->computed && es->accumulates && es->n_creators > 0) {
		o = cJSON_CreateObject();
		cJSON_ReplaceItemInObject(x, "builds_up", o);
		fmt_share(sh, sizeof sh, es->top_share);
		qr_view_str(o, "top", sh);
		qr_view_fmt(o, "anchor", "activations.html#src-%zu", k);
	}
}

/* A creator's or amplifier's row. */
static cJSON *
source_row(const struct qr_view_ctx *cc, const struct qr_analysis *a,
	   long pi, size_t rank)
{
	const struct qr_act_pair *p = &a->act_pairs[pi];
	const struct qr_act_tensor *t = pair_tensor(a, pi);
	cJSON *o = cJSON_CreateObject();
	char sh[32];

	cJSON_AddNumberToObject(o, "rank", (double)rank);
	qr_view_str(o, "tensor", t->name);
	qr_view_str(o, "op", t->op);
	qr_view_fmt(o, "anchor", "ap-%ld", pi);
	qr_view_page(cc, o, t->layer);
	fmt_share(sh, sizeof sh, p->noise_share);
	qr_view_str(o, "share", sh);
	qr_view_finite(o, "noise_db", "%.1f", p->noise_db);
	qr_view_sqnr(o, "local_sqnr", p->local_sqnr_db);
	qr_view_sqnr(o, "sqnr", p->sqnr_db);
	qr_view_finite(o, "gain", "%+.1f", p->noise_gain_db);
	qr_view_str(o, "gain_class", p->noise_gain_db >= 2 * QR_ES_AMPLIFY_DB
		    ? "bad" : p->noise_gain_db >= QR_ES_AMPLIFY_DB ? "warn" : "");
	return o;
}

/* o["sources"]: candidate k's error sources for the activations page. */
static void
sources_view(const struct qr_view_ctx *cc, const struct qr_analysis *a,
	     size_t k, cJSON *c)
{
	const struct qr_act_run *r = &a->act_runs[k];
	const struct qr_error_sources *es = &r->es;
	cJSON *o, *arr;
	struct qr_buf b = {0};
	int order[QR_OPG_N];
	size_t i, n;
	char *text, sh[32];

	if (!es->computed) {
		cJSON_AddNullToObject(c, "sources");
		return;
	}
	o = cJSON_AddObjectToObject(c, "sources");
	qr_view_fmt(o, "anchor", "src-%zu", k);
	qr_view_sources_text(a, k, &b);
	text = qr_buf_take(&b);
	/* the verdict's clause, as a sentence of its own */
	if (text != NULL && strncmp(text, "; ", 2) == 0) {
		text[2] = (char)(text[2] >= 'a' && text[2] <= 'z'
				 ? text[2] - 'a' + 'A' : text[2]);
		qr_view_fmt(o, "sentence", "%s.", text + 2);
	} else {
		qr_view_str(o, "sentence", "");
	}
	free(text);
	cJSON_AddBoolToObject(o, "builds_up", es->accumulates);
	fmt_share(sh, sizeof sh, QR_ES_DOMINANT);
	qr_view_str(o, "dominant", sh);
	qr_view_finite(o, "created_db", "%.1f", es->created_db);
	arr = cJSON_AddArrayToObject(o, "creators");
	for (i = 0; i < es->n_creators; i++)
		cJSON_AddItemToArray(arr, source_row(cc, a, es->creators[i],
						     i + 1));
	cJSON_AddBoolToObject(o, "has_creators", es->n_creators > 0);
	arr = cJSON_AddArrayToObject(o, "amplifiers");
	for (i = 0; i < es->n_amplifiers; i++)
		cJSON_AddItemToArray(arr, source_row(cc, a, es->amplifiers[i],
						     i + 1));
	cJSON_AddBoolToObject(o, "has_amplifiers", es->n_amplifiers > 0);
	qr_view_fmt(o, "amplify_db", "%g", QR_ES_AMPLIFY_DB);
	arr = cJSON_AddArrayToObject(o, "groups");
	n = groups_by_share(es, order);
	for (i = 0; i < n; i++) {
		cJSON *g = cJSON_CreateObject();
		double v = es->group_share[order[i]];

		qr_view_str(g, "group", qr_op_group_name(order[i]));
		fmt_share(sh, sizeof sh, v);
		qr_view_str(g, "share", sh);
		qr_view_count(g, "layers", es->group_pairs[order[i]]);
		qr_view_fmt(g, "bar", "%.0f", isfinite(v) ? 100 * v : 0.0);
		cJSON_AddItemToArray(arr, g);
	}
}

/* The per-layer cosine of one worst sample against the mean cosine. */
static enum qr_status
trace_chart(struct qr_view_ctx *cc, const struct qr_analysis *a, size_t k,
	    size_t rank, const struct qr_worst_sample *w, const char *name,
	    cJSON *o)
{
	size_t n = w->n_trace, i, j = 0;
	double *y = xcalloc(n + 1, sizeof *y), *m = xcalloc(n + 1, sizeof *m);
	const char **ticks = xcalloc(n + 1, sizeof *ticks);
	char **hrefs = xcalloc(n + 1, sizeof *hrefs);
	char **titles = xcalloc(n + 1, sizeof *titles);
	char *title, *alt, cname[64];
	struct qr_series s[2];
	struct qr_chart_spec spec = {0};
	enum qr_status st;

	for (i = 0; i < a->n_act_pairs && j < n; i++) {
		const struct qr_act_pair *p = &a->act_pairs[i];
		const struct qr_act_tensor *t = &a->act_tensors[p->tensor];

		if (p->quant != k)
			continue;
		y[j] = qr_plottable(w->trace[j]);
		m[j] = qr_plottable(p->cosine_mean);
		ticks[j] = qr_or_empty(t->name);
		hrefs[j] = qr_view_href(cc, t->layer, "activations.html#ap-%zu",
					i);
		titles[j] = xasprintf("%s: cosine %.6f on this sample, mean "
				      "%.6f", ticks[j], w->trace[j],
				      p->cosine_mean);
		j++;
	}
	s[0] = (struct qr_series){ "mean over samples", m, NULL, j,
				   QR_STYLE_DOTTED, 0 };
	s[1] = (struct qr_series){ "this sample", y, NULL, j, QR_STYLE_LINE,
				   3 };
	title = xasprintf("Sample %s: cosine along depth (candidate %zu)",
			  name, k + 1);
	alt = xasprintf("Cosine similarity per matched tensor on sample %s "
			"against the mean over samples", name);
	spec.title = title;
	spec.xlabel = "matched tensor (topological order)";
	spec.ylabel = "cosine similarity";
	spec.width = 960;
	spec.height = 260;
	spec.n_series = 2;
	spec.series = s;
	spec.xticks = ticks;
	snprintf(cname, sizeof cname, "trace-q%zu-%zu", k + 1, rank);
	st = j > 0 ? qr_view_chart(cc, o, "trace_chart", "model-", cname,
				   &spec, alt, hrefs, titles) : QR_OK;
	if (j == 0)
		cJSON_AddNullToObject(o, "trace_chart");
	free(alt);
	free(title);
	qr_strv_free(titles, n);
	qr_strv_free(hrefs, n);
	free(ticks);
	free(m);
	free(y);
	return st;
}

/* The thumbnail of worst sample w (rank from 1) into charts/, and its
 * <img> in o["thumb"] (null without one). */
static enum qr_status
thumb_view(struct qr_view_ctx *cc, size_t k, size_t rank,
	   const struct qr_worst_sample *w, const char *name, cJSON *o)
{
	struct qr_buf b = {0};
	char file[96], *html;
	int side = w->thumb_w > w->thumb_h ? w->thumb_w : w->thumb_h;
	int small = w->thumb_w < w->thumb_h ? w->thumb_w : w->thumb_h;
	int rep, tw, th, x, y;
	uint8_t *big;
	double zoom;
	enum qr_status st;

	if (w->thumb == NULL || small <= 0) {
		cJSON_AddNullToObject(o, "thumb");
		return QR_OK;
	}
	/* a small image is written with each pixel repeated until its
	 * shorter side is THUMB_MIN (its longer one at most 8 times that),
	 * so browsers show it sharp, not smoothed */
	rep = (THUMB_MIN + small - 1) / small;
	rep = rep * side > 8 * THUMB_MIN ? 8 * THUMB_MIN / side : rep;
	rep = rep < 1 ? 1 : rep;
	tw = w->thumb_w * rep;
	th = w->thumb_h * rep;
	big = xmalloc((size_t)tw * (size_t)th * 3);
	for (y = 0; y < th; y++)
		for (x = 0; x < tw; x++)
			memcpy(big + ((size_t)y * tw + x) * 3,
			       w->thumb + ((size_t)(y / rep) * w->thumb_w +
					   (size_t)(x / rep)) * 3, 3);
	snprintf(file, sizeof file, QR_THUMB_FMT, k + 1, rank);
	st = qr_report_png_write(cc->q, file, big, tw, th, cc->d);
	free(big);
	if (st != QR_OK)
		return st;
	zoom = (double)THUMB_SHOW / (tw > th ? tw : th);
	zoom = zoom < 1 ? 1 : zoom;
	qr_buf_printf(&b, "<img class=\"thumb\" src=\"charts/%s\" width=\"%d\" "
		      "height=\"%d\" alt=\"", file, (int)(tw * zoom),
		      (int)(th * zoom));
	qr_html_escape(&b, name);
	qr_buf_puts(&b, "\">");
	html = qr_buf_take(&b);
	cJSON_AddStringToObject(o, "thumb", html);
	free(html);
	return QR_OK;
}

/* o["worst_samples"]: candidate k's worst samples. */
static enum qr_status
worst_view(struct qr_view_ctx *cc, const struct qr_analysis *a, size_t k,
	   cJSON *c)
{
	const struct qr_act_run *r = &a->act_runs[k];
	double tc = a->data.cos_threshold;
	cJSON *arr = cJSON_AddArrayToObject(c, "worst_samples");
	enum qr_status st = QR_OK;
	size_t i;

	for (i = 0; i < r->n_worst && st == QR_OK; i++) {
		const struct qr_worst_sample *w = &r->worst[i];
		const char *name = w->sample < a->data.samples
			? qr_or_empty(a->data.sample_names[w->sample]) : "";
		int label = w->sample < a->data.samples
			? a->data.labels[w->sample] : -1;
		cJSON *o = cJSON_CreateObject();

		cJSON_AddItemToArray(arr, o);
		cJSON_AddNumberToObject(o, "rank", (double)(i + 1));
		qr_view_fmt(o, "anchor", "ws-%zu-%zu", k, i + 1);
		qr_view_str(o, "sample", name);
		cJSON_AddNumberToObject(o, "index", (double)w->sample);
		if (label >= 0 && (size_t)label < a->data.n_classes)
			qr_view_str(o, "label", a->data.classes[label]);
		else if (label >= 0)
			qr_view_fmt(o, "label", "%d", label);
		else
			qr_view_str(o, "label", "");
		qr_view_finite(o, "cos", QR_COS_FMT, w->cosine);
		qr_view_str(o, "cos_class", qr_cos_class(w->cosine, tc));
		st = thumb_view(cc, k, i + 1, w, name, o);
		if (st == QR_OK)
			st = trace_chart(cc, a, k, i + 1, w, name, o);
	}
	cJSON_AddBoolToObject(c, "has_worst_samples", r->n_worst > 0);
	return st;
}

/* The heatmap of outlier x: its four rows queued, the <figure> in
 * o["heat"]. */
static void
outlier_heat(struct qr_view_ctx *cc, const struct qr_act_outlier *x,
	     cJSON *o)
{
	struct qr_buf file = {0}, b = {0};
	char *f, *html;
	size_t w;

	if (x->heat == NULL || x->heat_cols == 0) {
		cJSON_AddNullToObject(o, "heat");
		return;
	}
	qr_safe_name(&file, "ho", cc->next++, x->layer);
	qr_buf_puts(&file, ".png");
	f = qr_buf_take(&file);
	qr_report_heatmap_queue(cc->q, f, x->heat, 4, x->heat_cols, 1,
				HEAT_LO, HEAT_HI);
	w = x->heat_cols * (HEAT_WIDTH / x->heat_cols);
	w = w < 64 ? 64 : w;
	qr_buf_puts(&b, "<figure class=\"heat\"><img src=\"charts/");
	qr_html_escape(&b, f);
	qr_buf_printf(&b, "\" width=\"%zu\" height=\"%d\" alt=\"", w,
		      4 * HEAT_ROW);
	qr_buf_puts(&b, "Heatmap of the input channels of ");
	qr_html_escape(&b, qr_or_empty(x->layer));
	qr_buf_printf(&b, "\"><figcaption>input channels%s, left to right; "
		      "rows: activation max |x|, weight max |w|, then both "
		      "after migration at \xce\xb1 0.5; each over its row's "
		      "median, <span class=\"colorbar\" style=\"background:"
		      "linear-gradient(to right,#%06x,#%06x,#%06x)\"></span> "
		      "0.1\xc3\x97 to 100\xc3\x97 (log)</figcaption></figure>",
		      x->heat_cols < x->channels ? " (max-pooled)" : "",
		      qr_heatmap_color(0), qr_heatmap_color(0.5),
		      qr_heatmap_color(1));
	html = qr_buf_take(&b);
	cJSON_AddStringToObject(o, "heat", html);
	free(html);
	free(f);
}

/* act["outliers"]: the weighted layers' inputs, largest predicted gain
 * first, with a heatmap each. */
static void
outliers_view(struct qr_view_ctx *cc, const struct qr_analysis *a, cJSON *act)
{
	cJSON *arr = cJSON_AddArrayToObject(act, "outliers");
	size_t *order = xcalloc(a->n_outliers + 1, sizeof *order), i, j;

	for (i = 0; i < a->n_outliers; i++) {
		const struct qr_act_outlier *x = &a->outliers[i];
		double g = x->best_sqnr_db - x->sqnr_none_db;

		for (j = i; j > 0; j--) {
			const struct qr_act_outlier *y =
				&a->outliers[order[j - 1]];

			if (y->best_sqnr_db - y->sqnr_none_db >= g ||
			    isnan(g))
				break;
			order[j] = order[j - 1];
		}
		order[j] = i;
	}
	for (i = 0; i < a->n_outliers; i++) {
		const struct qr_act_outlier *x = &a->outliers[order[i]];
		double gain = x->best_sqnr_db - x->sqnr_none_db;
		cJSON *o = cJSON_CreateObject();

		cJSON_AddItemToArray(arr, o);
		cJSON_AddNumberToObject(o, "rank", (double)(i + 1));
		qr_view_fmt(o, "anchor", "ol-%zu", order[i]);
		qr_view_str(o, "layer", x->layer);
		qr_view_str(o, "op", x->op);
		qr_view_page(cc, o, x->layer);
		qr_view_str(o, "tensor", a->act_tensors[x->tensor].name);
		qr_view_count(o, "channels", x->channels);
		qr_view_finite(o, "ratio", "%.1f", x->max_over_median);
		qr_view_str(o, "ratio_class", x->max_over_median >= 20 ? "bad"
			    : x->max_over_median >= 6 ? "warn" : "");
		qr_view_count(o, "top_channel", x->top_channel);
		qr_view_finite(o, "kurtosis", "%.1f", x->kurtosis);
		qr_view_sqnr(o, "sqnr", x->sqnr_none_db);
		qr_view_str(o, "sqnr_class", qr_sqnr_class(x->sqnr_none_db));
		qr_view_sqnr(o, "sqnr_a05", x->sqnr_db[(QR_OL_ALPHAS - 1) / 2]);
		qr_view_finite(o, "best_alpha", "%.1f", x->best_alpha);
		qr_view_sqnr(o, "best_sqnr", x->best_sqnr_db);
		qr_view_finite(o, "gain", "%+.1f", gain);
		qr_view_str(o, "gain_class", gain >= 6 ? "bad"
			    : gain >= 1 ? "warn" : "");
		outlier_heat(cc, x, o);
	}
	cJSON_AddBoolToObject(act, "has_outliers", a->n_outliers > 0);
	free(order);
}

/* See report-int.h. */
enum qr_status
qr_view_diag(struct qr_view_ctx *cc, const struct qr_analysis *a, cJSON *act)
{
	cJSON *c = cJSON_GetObjectItemCaseSensitive(act, "cands");
	enum qr_status st = QR_OK;
	size_t k;

	for (k = 0; a->act_runs != NULL && k < a->n_quant && st == QR_OK;
	     k++) {
		cJSON *o = cJSON_GetArrayItem(c, (int)k);

		if (o == NULL)
			break;
		sources_view(cc, a, k, o);
		st = worst_view(cc, a, k, o);
	}
	if (st == QR_OK)
		outliers_view(cc, a, act);
	return st;
}
