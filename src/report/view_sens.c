/*
 * view_sens: what to change in each candidate, from the hybrid runs
 * (analysis/sensitivity.c): report.json's "sensitivity", fallback.json,
 * the change.html page with its charts, the overview's "What to change"
 * section and summary.md's lines.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "chart/chart.h"
#include "report/report-int.h"

static const char *
mode_name(enum qr_sens_mode m)
{
	return m == QR_SENS_FULL ? "full" : m == QR_SENS_QUICK ? "quick"
							       : "none";
}

/* What each group what-if changes, for the page. */
static const char *const group_what[QR_SENS_GROUPS] = {
	"elementwise outputs (Add, Mul, Div, Clip, ...) in float",
	"Softmax, LayerNormalization and Sigmoid outputs in float",
	"the first and the last layer kept float",
	"per-channel weights instead of per-tensor ones (requantized from "
	"the float weights with the candidate's bits)",
};

/* ---- report.json ---- */

/* See report-int.h. */
cJSON *
qr_json_sens_metric(const struct qr_sens_metric *m)
{
	cJSON *o;

	if (!m->ran)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "cosine", qr_json_num(m->cosine));
	cJSON_AddItemToObject(o, "sqnr_db", qr_json_num(m->sqnr_db));
	cJSON_AddItemToObject(o, "top1", qr_json_num(m->top1));
	cJSON_AddItemToObject(o, "kl", qr_json_num(m->kl));
	return o;
}

static cJSON *
fallback_json(const struct qr_analysis *a, const struct qr_sens_result *r)
{
	cJSON *o = cJSON_CreateObject(), *f, *q, *c;
	char buf[96];
	size_t i;

	cJSON_AddItemToObject(o, "target", qr_json_str(
		qr_sens_target_str(&a->target, buf, sizeof buf)));
	cJSON_AddBoolToObject(o, "met", r->fb.met);
	f = cJSON_AddArrayToObject(o, "layers");
	q = cJSON_AddArrayToObject(o, "quant_layers");
	c = cJSON_AddArrayToObject(o, "curve");
	for (i = 0; i < r->fb.n_steps; i++) {
		const struct qr_sens_layer *l = &r->layers[r->fb.order[i]];
		cJSON *x;

		if (i < r->fb.n_plan) {
			cJSON_AddItemToArray(f, qr_json_str(l->layer));
			cJSON_AddItemToArray(q, qr_json_str(l->quant_layer));
		}
		if (!r->fb.curve[i].ran)
			continue; /* a step not run (fallback.c) */
		x = qr_json_sens_metric(&r->fb.curve[i]);
		if (cJSON_IsObject(x)) {
			cJSON_AddNumberToObject(x, "kept_float", (double)i + 1);
			cJSON_AddItemToObject(x, "layer",
					      qr_json_str(l->layer));
		}
		cJSON_AddItemToArray(c, x);
	}
	cJSON_AddItemToObject(o, "reached", r->fb.n_plan > 0 ?
			      qr_json_sens_metric(&r->fb.curve[r->fb.n_plan - 1]) :
			      qr_json_sens_metric(&r->base));
	cJSON_AddNumberToObject(o, "float_bytes", (double)r->fb.float_bytes);
	cJSON_AddNumberToObject(o, "macs", (double)r->fb.macs);
	return o;
}

/* report.json's "sensitivity": one entry per candidate (an empty array
 * when the hybrid runs were not asked for). New. */
cJSON *
qr_json_sens(const struct qr_analysis *a)
{
	cJSON *arr = cJSON_CreateArray();
	size_t k, i;

	for (k = 0; a->sens != NULL && k < a->n_quant; k++) {
		const struct qr_sens_result *r = &a->sens[k];
		cJSON *o = cJSON_CreateObject(), *ls;

		cJSON_AddNumberToObject(o, "quant", (double)k);
		cJSON_AddBoolToObject(o, "ran", r->ran);
		cJSON_AddItemToObject(o, "why", r->why ? qr_json_str(r->why)
					      : cJSON_CreateNull());
		cJSON_AddStringToObject(o, "mode", mode_name(r->mode));
		cJSON_AddNumberToObject(o, "samples", (double)r->samples);
		cJSON_AddItemToObject(o, "semantics",
				      qr_json_str(r->semantics));
		cJSON_AddItemToObject(o, "base", qr_json_sens_metric(&r->base));
		cJSON_AddItemToObject(o, "weights_only",
				      qr_json_sens_metric(&r->weights_only));
		cJSON_AddItemToObject(o, "activations_only",
				      qr_json_sens_metric(&r->acts_only));
		cJSON_AddItemToObject(o, "verdict", r->verdict ?
				      qr_json_str(r->verdict) :
				      cJSON_CreateNull());
		ls = cJSON_AddArrayToObject(o, "layers");
		for (i = 0; i < r->n_layers; i++) {
			const struct qr_sens_layer *l = &r->layers[i];
			cJSON *x = cJSON_CreateObject();

			cJSON_AddItemToObject(x, "layer",
					      qr_json_str(l->layer));
			cJSON_AddItemToObject(x, "quant_layer",
					      qr_json_str(l->quant_layer));
			cJSON_AddItemToObject(x, "op", qr_json_str(l->op));
			cJSON_AddNumberToObject(x, "depth", l->depth);
			cJSON_AddItemToObject(x, "local_share",
					      qr_json_num(l->local_share));
			cJSON_AddNumberToObject(x, "params",
						(double)l->params);
			cJSON_AddNumberToObject(x, "macs", (double)l->macs);
			cJSON_AddItemToObject(x, "kept_float",
					      qr_json_sens_metric(&l->kept_float));
			cJSON_AddItemToObject(x, "quant_only",
					      qr_json_sens_metric(&l->quant_only));
			cJSON_AddItemToObject(x, "why", l->why ?
					      qr_json_str(l->why) :
					      cJSON_CreateNull());
			cJSON_AddItemToArray(ls, x);
		}
		cJSON_AddNumberToObject(o, "measured", (double)r->n_measured);
		cJSON_AddItemToObject(o, "fallback", r->fb.computed ?
				      fallback_json(a, r) :
				      cJSON_CreateNull());
		ls = cJSON_AddArrayToObject(o, "groups");
		for (i = 0; r->has_groups && i < QR_SENS_GROUPS; i++) {
			const struct qr_sens_group *g = &r->groups[i];
			cJSON *x = cJSON_CreateObject();

			cJSON_AddStringToObject(x, "name",
						qr_sens_group_name((int)i));
			cJSON_AddNumberToObject(x, "changed",
						(double)g->changed);
			cJSON_AddItemToObject(x, "metric", qr_json_sens_metric(&g->m));
			cJSON_AddItemToObject(x, "why", g->why ?
					      qr_json_str(g->why) :
					      cJSON_CreateNull());
			cJSON_AddItemToArray(ls, x);
		}
		cJSON_AddNumberToObject(o, "runs", (double)r->runs);
		cJSON_AddNumberToObject(o, "cut_runs", (double)r->cut_runs);
		cJSON_AddItemToObject(o, "seconds", qr_json_num(r->seconds));
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* fallback.json: per candidate the plan's float and candidate node
 * names in the order chosen (the latter ready for ONNX Runtime's
 * nodes_to_exclude) and the metrics it reached when run. NULL when no
 * plan was searched. New string. */
char *
qr_report_fallback_json(const struct qr_analysis *a)
{
	cJSON *root, *arr;
	char buf[96], *s;
	size_t k;
	int any = 0;

	for (k = 0; a->sens != NULL && k < a->n_quant; k++)
		any |= a->sens[k].fb.computed;
	if (!any)
		return NULL;
	root = cJSON_CreateObject();
	cJSON_AddItemToObject(root, "target", qr_json_str(
		qr_sens_target_str(&a->target, buf, sizeof buf)));
	arr = cJSON_AddArrayToObject(root, "candidates");
	for (k = 0; k < a->n_quant; k++) {
		const struct qr_sens_result *r = &a->sens[k];
		cJSON *o = cJSON_CreateObject(), *f;

		cJSON_AddItemToObject(o, "path",
				      qr_json_str(a->quants[k].path));
		cJSON_AddItemToObject(o, "format", qr_json_str(
			qr_qformat_name(a->quants[k].format)));
		cJSON_AddBoolToObject(o, "planned", r->fb.computed);
		cJSON_AddBoolToObject(o, "met", r->fb.met);
		cJSON_AddNumberToObject(o, "samples", (double)r->samples);
		f = fallback_json(a, r);
		cJSON_AddItemToObject(o, "nodes_to_exclude", cJSON_Duplicate(
			cJSON_GetObjectItem(f, "quant_layers"), 1));
		cJSON_AddItemToObject(o, "float_nodes",
			cJSON_Duplicate(cJSON_GetObjectItem(f, "layers"), 1));
		cJSON_AddItemToObject(o, "base", qr_json_sens_metric(&r->base));
		cJSON_AddItemToObject(o, "reached", cJSON_Duplicate(
			cJSON_GetObjectItem(f, "reached"), 1));
		cJSON_Delete(f);
		cJSON_AddItemToArray(arr, o);
	}
	s = cJSON_Print(root);
	cJSON_Delete(root);
	return s;
}

/* ---- the page and the overview ---- */

/* See report-int.h. */
void
qr_view_sens_metric(cJSON *o, const char *pre, const struct qr_sens_metric *m,
	    double thr)
{
	char k[48];

	snprintf(k, sizeof k, "%s_cos", pre);
	if (m->ran)
		qr_view_fmt(o, k, "%.6f", m->cosine);
	else
		qr_view_str(o, k, "\xe2\x80\x94");
	snprintf(k, sizeof k, "%s_cos_class", pre);
	qr_view_str(o, k, m->ran ? qr_cos_class(m->cosine, thr) : "");
	snprintf(k, sizeof k, "%s_sqnr", pre);
	qr_view_sqnr(o, k, m->ran ? m->sqnr_db : NAN);
	snprintf(k, sizeof k, "%s_top1", pre);
	if (m->ran && !isnan(m->top1))
		qr_view_fmt(o, k, "%.1f%%", 100.0 * m->top1);
	else
		qr_view_str(o, k, "\xe2\x80\x94");
	snprintf(k, sizeof k, "%s_kl", pre);
	if (m->ran && !isnan(m->kl))
		qr_view_fmt(o, k, "%.4g", m->kl);
	else
		qr_view_str(o, k, "\xe2\x80\x94");
}

/* Output SQNR with each measured layer kept float and quantized alone,
 * the layers in depth order, beside the candidate's own. */
static enum qr_status
depth_chart(struct qr_view_ctx *cc, const struct qr_sens_result *r, size_t k,
	    cJSON *o)
{
	size_t n = 0, i, j, *ix = xcalloc(r->n_layers + 1, sizeof *ix);
	double *kf = xcalloc(r->n_layers + 1, sizeof *kf);
	double *qo = xcalloc(r->n_layers + 1, sizeof *qo);
	char **ticks = xcalloc(r->n_layers + 1, sizeof *ticks);
	char **hrefs = xcalloc(r->n_layers + 1, sizeof *hrefs);
	char **titles = xcalloc(r->n_layers + 1, sizeof *titles);
	struct qr_series s[2];
	struct qr_chart_spec spec = {0};
	struct qr_hline hl = { qr_plottable(r->base.sqnr_db),
			       "candidate as it is" };
	enum qr_status st = QR_OK;
	char name[64];

	for (i = 0; i < r->n_layers; i++)
		if (r->layers[i].kept_float.ran ||
		    r->layers[i].quant_only.ran)
			ix[n++] = i;
	/* by depth (insertion: a few dozen at most in quick) */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && r->layers[ix[j]].depth <
					     r->layers[ix[j - 1]].depth; j--) {
			size_t t = ix[j];

			ix[j] = ix[j - 1];
			ix[j - 1] = t;
		}
	if (n == 0) {
		cJSON_AddNullToObject(o, "depth_chart");
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct qr_sens_layer *l = &r->layers[ix[i]];
		char a1[32], a2[32];

		kf[i] = l->kept_float.ran ? qr_plottable(l->kept_float.sqnr_db)
					  : NAN;
		qo[i] = l->quant_only.ran ? qr_plottable(l->quant_only.sqnr_db)
					  : NAN;
		ticks[i] = xstrdup(l->layer);
		hrefs[i] = qr_view_href(cc, l->layer, "change.html#s-%zu", k);
		qr_fmt_sqnr(a1, sizeof a1, kf[i]);
		qr_fmt_sqnr(a2, sizeof a2, qo[i]);
		titles[i] = r->mode == QR_SENS_FULL ?
			xasprintf("%s: output SQNR %s dB kept float alone, %s "
				  "dB quantized alone", l->layer, a1, a2) :
			xasprintf("%s: output SQNR %s dB kept float alone",
				  l->layer, a1);
	}
	s[0] = (struct qr_series){ "output SQNR, only this layer kept float",
				   kf, NULL, n, QR_STYLE_LINE, 1 };
	s[1] = (struct qr_series){ "output SQNR, only this layer quantized",
				   qo, NULL, n, QR_STYLE_DOTTED, 2 };
	spec.title = "Per-layer sensitivity along depth";
	spec.xlabel = "measured layer (depth order)";
	spec.ylabel = "output SQNR (dB)";
	spec.width = 960;
	spec.height = 300;
	/* quick mode quantizes no layer alone */
	spec.n_series = r->mode == QR_SENS_FULL ? 2 : 1;
	spec.series = s;
	spec.xticks = (const char *const *)ticks;
	spec.hlines = &hl;
	spec.n_hlines = isnan(hl.y) ? 0 : 1;
	snprintf(name, sizeof name, "sens-depth-q%zu", k + 1);
	st = qr_view_chart(cc, o, "depth_chart", "model-", name, &spec,
			   r->mode == QR_SENS_FULL ? "output SQNR per layer "
			   "kept float and quantized alone" : "output SQNR "
			   "per layer kept float alone", hrefs, titles);
out:
	qr_strv_free(ticks, n);
	qr_strv_free(hrefs, n);
	qr_strv_free(titles, n);
	free(ix);
	free(kf);
	free(qo);
	return st;
}

static double
target_metric(const struct qr_sens_metric *m, int which)
{
	if (!m->ran)
		return NAN;
	return which == QR_SENS_SQNR ? qr_plottable(m->sqnr_db) :
	       which == QR_SENS_TOP1 ? m->top1 : m->cosine;
}

/* The curve: the target's metric with 0, 1, ... layers kept float (the
 * steps run). */
static enum qr_status
curve_chart(struct qr_view_ctx *cc, const struct qr_analysis *a,
	    const struct qr_sens_result *r, size_t k, cJSON *o)
{
	size_t n = 1, i, *at = xcalloc(r->fb.n_steps + 2, sizeof *at);
	double *y;
	char **ticks, **titles;
	struct qr_series s;
	struct qr_chart_spec spec = {0};
	struct qr_hline hl = { a->target.value, "target" };
	static const char *const ylabels[] = { "output cosine",
		"output SQNR (dB)", "top-1 agreement" };
	enum qr_status st;
	char name[64];

	for (i = 0; i < r->fb.n_steps; i++)
		if (r->fb.curve[i].ran)
			at[n++] = i + 1;
	y = xcalloc(n + 1, sizeof *y);
	ticks = xcalloc(n + 1, sizeof *ticks);
	titles = xcalloc(n + 1, sizeof *titles);
	for (i = 0; i < n; i++) {
		const struct qr_sens_metric *m = i == 0 ? &r->base
						: &r->fb.curve[at[i] - 1];

		y[i] = target_metric(m, a->target.metric);
		ticks[i] = xasprintf("%zu", at[i]);
		titles[i] = i == 0 ?
			xasprintf("the candidate as it is: %.6g", y[i]) :
			xasprintf("%zu kept float, the last %s: %.6g", at[i],
				  r->layers[r->fb.order[at[i] - 1]].layer,
				  y[i]);
	}
	free(at);
	s = (struct qr_series){ ylabels[a->target.metric], y, NULL, n,
				QR_STYLE_LINE, 0 };
	spec.title = "Fallback plan: layers kept float -> output";
	spec.xlabel = "layers kept float (in the order chosen)";
	spec.ylabel = ylabels[a->target.metric];
	spec.width = 640;
	spec.height = 280;
	spec.n_series = 1;
	spec.series = &s;
	spec.xticks = (const char *const *)ticks;
	spec.hlines = &hl;
	spec.n_hlines = 1;
	snprintf(name, sizeof name, "sens-curve-q%zu", k + 1);
	st = qr_view_chart(cc, o, "curve_chart", "model-", name, &spec,
			   "output metric against layers kept float", NULL,
			   titles);
	qr_strv_free(ticks, n);
	qr_strv_free(titles, n);
	free(y);
	return st;
}

static cJSON *
layer_row(struct qr_view_ctx *cc, const struct qr_sens_result *r, size_t i,
	  double thr)
{
	const struct qr_sens_layer *l = &r->layers[i];
	cJSON *x = cJSON_CreateObject();

	qr_view_fmt(x, "rank", "%zu", i + 1);
	qr_view_str(x, "layer", l->layer);
	qr_view_str(x, "quant_layer", l->quant_layer);
	qr_view_page(cc, x, l->layer);
	qr_view_str(x, "op", l->op);
	if (isnan(l->local_share))
		qr_view_str(x, "share", "\xe2\x80\x94");
	else
		qr_view_fmt(x, "share", "%.1f%%", 100.0 * l->local_share);
	qr_view_sens_metric(x, "kf", &l->kept_float, thr);
	qr_view_sens_metric(x, "qo", &l->quant_only, thr);
	qr_view_str(x, "why", l->why);
	return x;
}

/* See report-int.h. */
enum qr_status
qr_view_sens(struct qr_view_ctx *cc, const struct qr_analysis *a,
	     cJSON *root)
{
	cJSON *o = cJSON_AddObjectToObject(root, "change");
	cJSON *cands = cJSON_AddArrayToObject(o, "cands");
	enum qr_status st = QR_OK;
	double thr = a->data.cos_threshold > 0 ? a->data.cos_threshold : 0.99;
	char buf[96];
	size_t k, i;

	cJSON_AddBoolToObject(o, "has", a->sens != NULL);
	qr_view_str(o, "target", qr_sens_target_str(&a->target, buf,
						    sizeof buf));
	for (k = 0; a->sens != NULL && k < a->n_quant && st == QR_OK; k++) {
		const struct qr_sens_result *r = &a->sens[k];
		cJSON *x = cJSON_CreateObject(), *ls, *top, *fb, *rows;

		cJSON_AddItemToArray(cands, x);
		qr_view_fmt(x, "label", "Candidate %zu", k + 1);
		qr_view_fmt(x, "anchor", "s-%zu", k);
		qr_view_str(x, "format", qr_qformat_name(a->quants[k].format));
		cJSON_AddBoolToObject(x, "ran", r->ran);
		qr_view_str(x, "why", r->why);
		qr_view_str(x, "semantics", r->semantics);
		qr_view_str(x, "mode", mode_name(r->mode));
		cJSON_AddBoolToObject(x, "full", r->mode == QR_SENS_FULL);
		qr_view_count(x, "samples", r->samples);
		qr_view_count(x, "runs", r->runs);
		qr_view_fmt(x, "seconds", "%.2f", r->seconds);
		qr_view_str(x, "verdict", r->verdict);
		qr_view_sens_metric(x, "base", &r->base, thr);
		/* KL columns when the outputs have distributions */
		cJSON_AddBoolToObject(x, "has_kl", r->base.ran &&
						  !isnan(r->base.kl));
		qr_view_sens_metric(x, "w", &r->weights_only, thr);
		qr_view_sens_metric(x, "a", &r->acts_only, thr);
		qr_view_count(x, "n_layers", r->n_layers);
		qr_view_count(x, "n_measured", r->n_measured);
		ls = cJSON_AddArrayToObject(x, "layers");
		top = cJSON_AddArrayToObject(x, "top");
		for (i = 0; i < r->n_layers; i++) {
			cJSON_AddItemToArray(ls, layer_row(cc, r, i, thr));
			if (i < 5 && r->layers[i].kept_float.ran)
				cJSON_AddItemToArray(top,
						     layer_row(cc, r, i, thr));
		}
		cJSON_AddBoolToObject(x, "has_top",
				      cJSON_GetArraySize(top) > 0);
		cJSON_AddBoolToObject(x, "has_groups", r->has_groups);
		ls = cJSON_AddArrayToObject(x, "groups");
		for (i = 0; r->has_groups && i < QR_SENS_GROUPS; i++) {
			const struct qr_sens_group *g = &r->groups[i];
			cJSON *y = cJSON_CreateObject();

			qr_view_str(y, "what", group_what[i]);
			qr_view_count(y, "changed", g->changed);
			qr_view_sens_metric(y, "m", &g->m, thr);
			qr_view_str(y, "why", g->why);
			cJSON_AddItemToArray(ls, y);
		}
		if (!r->ran) {
			cJSON_AddNullToObject(x, "depth_chart");
			cJSON_AddNullToObject(x, "fallback");
			continue;
		}
		if ((st = depth_chart(cc, r, k, x)) != QR_OK)
			break;
		fb = cJSON_AddObjectToObject(x, "fallback");
		cJSON_AddBoolToObject(fb, "met", r->fb.met);
		qr_view_count(fb, "n", r->fb.n_plan);
		qr_view_str(fb, "layers_word", r->fb.n_plan == 1 ? "layer"
								 : "layers");
		qr_view_str(fb, "s", r->fb.n_plan == 1 ? "s" : "");
		cJSON_AddBoolToObject(fb, "none", r->fb.n_plan == 0);
		qr_view_bytes(fb, "float_bytes", r->fb.float_bytes);
		qr_view_count(fb, "macs", r->fb.macs);
		qr_view_sens_metric(fb, "reached", r->fb.n_plan ?
			    &r->fb.curve[r->fb.n_plan - 1] : &r->base, thr);
		rows = cJSON_AddArrayToObject(fb, "rows");
		for (i = 0; i < r->fb.n_steps; i++) {
			const struct qr_sens_layer *l =
				&r->layers[r->fb.order[i]];
			cJSON *y = cJSON_CreateObject();

			qr_view_fmt(y, "step", "%zu", i + 1);
			qr_view_str(y, "layer", l->layer);
			qr_view_str(y, "quant_layer", l->quant_layer);
			qr_view_page(cc, y, l->layer);
			qr_view_sens_metric(y, "m", &r->fb.curve[i], thr);
			cJSON_AddItemToArray(rows, y);
		}
		if ((st = curve_chart(cc, a, r, k, fb)) != QR_OK)
			break;
	}
	return st;
}

/* summary.md's lines. */
void
qr_report_sens_md(struct qr_buf *b, const cJSON *view)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(view, "change");
	const cJSON *x, *fb, *row;

	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "has")))
		return;
	qr_buf_puts(b, "\n## What to change\n\n");
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(o, "cands")) {
		qr_buf_printf(b, "- %s: ", cJSON_GetObjectItem(x, "label")
			      ->valuestring);
		if (!cJSON_IsTrue(cJSON_GetObjectItem(x, "ran"))) {
			qr_buf_puts(b, "not measured: ");
			qr_md_escape(b, cJSON_GetStringValue(
				cJSON_GetObjectItem(x, "why")));
			qr_buf_puts(b, "\n");
			continue;
		}
		qr_md_escape(b, cJSON_GetStringValue(
			cJSON_GetObjectItem(x, "verdict")));
		fb = cJSON_GetObjectItem(x, "fallback");
		qr_buf_printf(b, "\n  - fallback plan for %s: ",
			      cJSON_GetStringValue(cJSON_GetObjectItem(o,
								"target")));
		if (cJSON_IsTrue(cJSON_GetObjectItem(fb, "none")) &&
		    cJSON_IsTrue(cJSON_GetObjectItem(fb, "met"))) {
			qr_buf_puts(b, "met as it is\n");
			continue;
		}
		qr_buf_printf(b, "keep %s %s float (",
			      cJSON_GetStringValue(cJSON_GetObjectItem(fb,
								       "n")),
			      cJSON_GetStringValue(cJSON_GetObjectItem(fb,
							"layers_word")));
		cJSON_ArrayForEach(row, cJSON_GetObjectItem(fb, "rows")) {
			if (row != cJSON_GetObjectItem(fb, "rows")->child)
				qr_buf_puts(b, ", ");
			qr_md_escape(b, cJSON_GetStringValue(
				cJSON_GetObjectItem(row, "layer")));
		}
		qr_buf_printf(b, "): output cosine %s, SQNR %s dB%s "
			      "(measured; fallback.json)\n",
			      cJSON_GetStringValue(cJSON_GetObjectItem(fb,
							"reached_cos")),
			      cJSON_GetStringValue(cJSON_GetObjectItem(fb,
							"reached_sqnr")),
			      cJSON_IsTrue(cJSON_GetObjectItem(fb, "met")) ?
			      "" : ", short of the target");
	}
}
