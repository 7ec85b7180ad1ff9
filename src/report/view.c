/*
 * report: the template context. Everything the pages show, as a cJSON
 * tree of display-ready values: numbers already formatted, CSS classes
 * that colour bad values, charts drawn and turned into HTML fragments.
 * Model strings stay raw here; the template engine escapes them.
 *
 * This file holds what the pages' views share (formatting, CSS classes,
 * chart files and links), the models, the verdict and the whole context
 * in page order; view_weights.c, view_acts.c, view_layers.c, view_ci.c
 * and view_hazards.c build the rest.
 *
 * Anchors (ids) are built from indices, never from model strings:
 *   m-<i>  model i          q-<k>  candidate k      w-<i>  weight layer i
 *   qw-<i> weight pairing i  cle-<i> CLE set i   hz-<i> hazard i
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void
qr_view_str(cJSON *o, const char *key, const char *s)
{
	if (s != NULL)
		cJSON_AddStringToObject(o, key, s);
	else
		cJSON_AddNullToObject(o, key);
}

void
qr_view_fmt(cJSON *o, const char *key, const char *fmt, ...)
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

void
qr_view_num(cJSON *o, const char *key, double v)
{
	char buf[64];

	qr_fmt_num(buf, sizeof buf, v);
	cJSON_AddStringToObject(o, key, buf);
}

void
qr_view_count(cJSON *o, const char *key, size_t v)
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

void
qr_view_bytes(cJSON *o, const char *key, size_t v)
{
	char buf[64];

	qr_fmt_bytes(buf, sizeof buf, v);
	cJSON_AddStringToObject(o, key, buf);
}

void
qr_fmt_finite(char *buf, size_t n, const char *fmt, double v)
{
	if (isfinite(v))
		snprintf(buf, n, fmt, v);
	else
		qr_fmt_num(buf, n, v);
}

void
qr_view_finite(cJSON *o, const char *key, const char *fmt, double v)
{
	char buf[64];

	qr_fmt_finite(buf, sizeof buf, fmt, v);
	cJSON_AddStringToObject(o, key, buf);
}

/* SQNR for display: one decimal, ∞ when exact. */
void
qr_fmt_sqnr(char *buf, size_t n, double v)
{
	qr_fmt_finite(buf, n, "%.1f", v);
}

void
qr_view_sqnr(cJSON *o, const char *key, double v)
{
	char buf[64];

	qr_fmt_sqnr(buf, sizeof buf, v);
	cJSON_AddStringToObject(o, key, buf);
}

/* The class of v where lower is worse: below bad, below warn, else
 * good. */
static const char *
class_below(double v, double bad, double warn)
{
	if (isnan(v))
		return "";
	if (v < bad)
		return "bad";
	if (v < warn)
		return "warn";
	return "good";
}

const char *
qr_sqnr_class(double v)
{
	return class_below(v, QR_SQNR_BAD_DB, QR_SQNR_WARN_DB);
}

const char *
qr_rel_class(double v)
{
	if (isnan(v))
		return "";
	if (v > QR_BAD_REL_RANGE)
		return "bad";
	if (v > QR_BAD_REL_RANGE / 2)
		return "warn";
	return "good";
}

const char *
qr_cos_class(double v, double thr)
{
	if (isnan(v))
		return "";
	if (v < thr)
		return "bad";
	if (1 - v > (1 - thr) * 0.5)
		return "warn";
	return "good";
}

const char *
qr_act_sqnr_class(double v, double thr)
{
	return class_below(v, thr, thr + 10);
}

int
qr_layer_flagged(const struct qr_weight_stats *w)
{
	return w->max_rel_range > QR_BAD_REL_RANGE ||
	       w->sqnr_per_tensor_db < QR_SQNR_BAD_DB;
}

/* NaN for values a chart cannot place (infinite SQNR). */
double
qr_plottable(double v)
{
	return isfinite(v) ? v : NAN;
}

/* The page of layer name, or fallback (a printf format taking idx). */
char *
qr_view_href(const struct qr_view_ctx *cc, const char *name,
	     const char *fallback, size_t idx)
{
	const char *page = qr_report_layer_page(cc->L, name);

	return page != NULL ? xstrdup(page) : xasprintf(fallback, idx);
}

/* o["page"]: the page of layer name, or null. */
void
qr_view_page(const struct qr_view_ctx *cc, cJSON *o, const char *name)
{
	const char *page = qr_report_layer_page(cc->L, name);

	if (page != NULL)
		cJSON_AddStringToObject(o, "page", page);
	else
		cJSON_AddNullToObject(o, "page");
}

/* Draw spec as charts/<prefix><n>-<name>.png and store its HTML in
 * o[key]. */
enum qr_status
qr_view_chart(struct qr_view_ctx *cc, cJSON *o, const char *key,
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

void
qr_strv_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		free(v[i]);
	free(v);
}

const char *
qr_or_empty(const char *s)
{
	return s != NULL ? s : "";
}

/* ---- models ---- */

static cJSON *
model_view(const struct qr_model_summary *m, size_t i)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	size_t k;

	qr_view_fmt(o, "anchor", "m-%zu", i);
	if (i == 0)
		qr_view_str(o, "label", "Float model");
	else
		qr_view_fmt(o, "label", "Candidate %zu", i);
	qr_view_str(o, "role", m->role);
	qr_view_str(o, "path", m->path);
	qr_view_str(o, "format", qr_qformat_name(m->format));
	qr_view_str(o, "producer", m->producer);
	qr_view_fmt(o, "ir_version", "%lld", (long long)m->ir_version);
	qr_view_str(o, "opsets", m->opsets);
	qr_view_count(o, "nodes", m->n_nodes);
	cJSON_AddItemToObject(o, "inputs", qr_json_io(m->inputs, m->n_inputs));
	cJSON_AddItemToObject(o, "outputs",
			      qr_json_io(m->outputs, m->n_outputs));
	arr = cJSON_AddArrayToObject(o, "ops");
	for (k = 0; k < m->n_ops; k++) {
		cJSON *x = cJSON_CreateObject();
		double share = m->n_nodes ? 100.0 * m->ops[k].count / m->n_nodes
					  : 0;

		qr_view_str(x, "op", m->ops[k].op);
		qr_view_count(x, "count", m->ops[k].count);
		qr_view_fmt(x, "share", "%.0f", share);
		cJSON_AddItemToArray(arr, x);
	}
	qr_view_count(o, "params", m->n_params);
	qr_view_bytes(o, "param_bytes", m->param_bytes);
	qr_view_bytes(o, "file_bytes", m->file_bytes);
	arr = cJSON_AddArrayToObject(o, "meta");
	for (k = 0; k < m->n_meta; k++) {
		cJSON *x = cJSON_CreateObject();

		qr_view_str(x, "key", m->meta_keys[k]);
		qr_view_str(x, "value", m->meta_values[k]);
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddBoolToObject(o, "has_meta", m->n_meta > 0);
	return o;
}

/* ---- verdict ---- */

/* verdict.lines: one headline per candidate, e.g. "Candidate 1 (qdq):
 * output cosine 0.9991; 3 layers below threshold; error is born at
 * conv3_2", with the pieces apart so the page can colour and link them. */
static void
verdict_lines(const struct qr_analysis *a, const struct qr_view_ctx *cc,
	      cJSON *v)
{
	cJSON *lines = cJSON_AddArrayToObject(v, "lines");
	size_t k;

	for (k = 0; k < a->n_quant; k++) {
		const struct qr_act_run *r = a->act_runs ? &a->act_runs[k]
							 : NULL;
		const struct qr_act_output *mo = qr_view_main_output(a, k);
		cJSON *x = cJSON_CreateObject();
		const char *cls = "good";

		cJSON_AddItemToArray(lines, x);
		qr_view_fmt(x, "label", "Candidate %zu", k + 1);
		qr_view_str(x, "format", qr_qformat_name(a->quants[k].format));
		qr_view_fmt(x, "anchor", "a-%zu", k);
		cJSON_AddBoolToObject(x, "compared",
				      r != NULL && r->ran && a->data.ran);
		cJSON_AddNullToObject(x, "output");
		cJSON_AddNullToObject(x, "born");
		if (r == NULL || !r->ran || !a->data.ran) {
			qr_view_str(x, "why", r && r->why ? r->why
				    : a->data.why ? a->data.why
					      : "no data was run");
			qr_view_str(x, "class", "warn");
			continue;
		}
		cJSON_AddNullToObject(x, "why");
		if (mo != NULL) {
			cJSON *o = cJSON_CreateObject();

			cJSON_ReplaceItemInObject(x, "output", o);
			qr_view_fmt(o, "cos", "%.5f", mo->cosine_mean);
			qr_view_str(o, "cos_class",
				    qr_cos_class(mo->cosine_mean,
						 a->data.cos_threshold));
			if (mo->cosine_mean < a->data.cos_threshold)
				cls = "bad";
			if (mo->classifier && mo->rows)
				qr_view_fmt(o, "top1", "%.1f%%",
					    100.0 * mo->agree / mo->rows);
			else
				cJSON_AddNullToObject(o, "top1");
		}
		qr_view_count(x, "n_flagged", r->n_flagged);
		qr_view_count(x, "n_suspect", r->es.n_suspect);
		cJSON_AddBoolToObject(x, "has_suspect", r->es.n_suspect > 0);
		cJSON_AddBoolToObject(x, "one_flagged", r->n_flagged == 1);
		qr_view_str(x, "flagged_class", r->n_flagged ? "bad" : "good");
		if (r->n_flagged > 0 && strcmp(cls, "good") == 0)
			cls = "warn";
		qr_view_born(a, cc, k, x);
		qr_view_str(x, "class", cls);
	}
	cJSON_AddBoolToObject(v, "has_lines", a->n_quant > 0);
}

static void
verdict_view(const struct qr_analysis *a, const struct qr_view_ctx *cc,
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
		if (qr_layer_flagged(&a->weights[i]))
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
			      qr_or_empty(worst->layer), worst->max_rel_range);
		qr_buf_puts(&b, a->n_cle > 0 ? " or apply cross-layer equalization."
					     : ".");
	}
	if (wq != NULL) {
		char num[64];

		if (wq->sqnr_db < QR_SQNR_BAD_DB)
			cls = "bad";
		qr_fmt_sqnr(num, sizeof num, wq->sqnr_db);
		qr_buf_printf(&b, " Worst quantized weight: %s in candidate %zu at %s dB SQNR.",
			      qr_or_empty(wq->layer), wq->quant + 1, num);
	}
	for (i = 0; a->act_runs != NULL && i < a->n_quant; i++)
		qr_view_act_verdict(a, i, &b, &cls);
	if (a->data.ran && a->data.source &&
	    strcmp(a->data.source, "random") == 0)
		qr_buf_puts(&b, " The data was random (no --data given): "
			    "activation numbers show how the models differ on "
			    "noise, not on real inputs.");
	qr_view_str(v, "class", cls);
	text = qr_buf_take(&b);
	qr_view_str(v, "text", text);
	free(text);
	verdict_lines(a, cc, v);
}

/* ---- the whole context ---- */

enum qr_status
qr_report_view_new(const struct qr_analysis *a,
		   const struct qr_report_opts *opts,
		   const struct qr_report_layers *L, const cJSON *json,
		   struct qr_chart_queue *q, cJSON **out, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	struct qr_view_ctx cc = { q, d, 0, L, a };
	cJSON *root = cJSON_CreateObject(), *arr, *o;
	size_t i;

	*out = NULL;
	qr_view_str(root, "version",
		    opts && opts->version ? opts->version : "");
	qr_view_str(root, "ort_cpu", opts ? opts->ort_cpu : NULL);
	qr_view_str(root, "command_line", opts ? opts->command_line : NULL);
	qr_view_fmt(root, "analysis_seconds", "%.2f", a->seconds);
	/* the footer's time: the weights' analysis and the data run */
	qr_view_fmt(root, "total_seconds", "%.2f", a->seconds +
		    (a->data.source != NULL ? a->data.seconds : 0.0));
	if (a->data.source != NULL)
		qr_view_fmt(root, "data_seconds", "%.2f", a->data.seconds);
	else
		qr_view_str(root, "data_seconds", NULL);
	o = cJSON_AddObjectToObject(root, "thresholds");
	cJSON_AddNumberToObject(o, "rel_range", QR_BAD_REL_RANGE);
	cJSON_AddNumberToObject(o, "rel_range_warn", QR_BAD_REL_RANGE / 2);
	cJSON_AddNumberToObject(o, "sqnr_bad", QR_SQNR_BAD_DB);
	cJSON_AddNumberToObject(o, "sqnr_warn", QR_SQNR_WARN_DB);
	cJSON_AddNumberToObject(o, "html_max", QR_HTML_MAX_CHARS);
	cJSON_AddNumberToObject(o, "dead_fraction", QR_DEAD_FRACTION);

	verdict_view(a, &cc, root);
	arr = cJSON_AddArrayToObject(root, "models");
	for (i = 0; i < a->n_models; i++)
		cJSON_AddItemToArray(arr, model_view(&a->models[i], i));
	cJSON_AddItemToObject(root, "float_model",
			      a->n_models > 0 ? cJSON_Duplicate(
				      cJSON_GetArrayItem(arr, 0), 1)
					      : cJSON_CreateNull());

	qr_view_count(root, "n_weights", a->n_weights);
	if ((st = qr_view_weights(&cc, a, root)) != QR_OK)
		goto out;
	o = cJSON_AddObjectToObject(root, "charts");
	if ((st = qr_view_weight_charts(&cc, a, o)) != QR_OK)
		goto out;

	arr = cJSON_AddArrayToObject(root, "quants");
	for (i = 0; i < a->n_quant && st == QR_OK; i++) {
		cJSON *q;

		st = qr_view_quant(&cc, a, i, &q);
		cJSON_AddItemToArray(arr, q);
	}
	if (st != QR_OK)
		goto out;
	arr = cJSON_AddArrayToObject(root, "unmatched");
	for (i = 0; i < a->n_unmatched; i++)
		cJSON_AddItemToArray(arr, qr_json_str(a->unmatched[i]));

	cJSON_AddBoolToObject(root, "has_unmatched", a->n_unmatched > 0);
	arr = cJSON_AddArrayToObject(root, "cle");
	for (i = 0; i < a->n_cle && st == QR_OK; i++) {
		cJSON *c;

		st = qr_view_cle(&cc, &a->cle[i], i, &c);
		cJSON_AddItemToArray(arr, c);
	}
	if (st != QR_OK)
		goto out;
	cJSON_AddItemToObject(root, "cle_blockers", qr_json_cle_blockers(a));
	cJSON_AddBoolToObject(root, "has_blockers", a->n_cle_blockers > 0);
	qr_view_cle_measured(a, root);
	if ((st = qr_view_acts(&cc, a, root)) != QR_OK)
		goto out;
	arr = cJSON_AddArrayToObject(root, "warnings");
	for (i = 0; d != NULL && i < d->n_warnings; i++)
		cJSON_AddItemToArray(arr, qr_json_str(d->warnings[i].msg));
	cJSON_AddBoolToObject(root, "has_warnings",
			      d != NULL && d->n_warnings > 0);
	qr_view_layers_table(a, L, root);
	qr_view_worst_acts(a, &cc, root);
	qr_view_gate(&cc, json, root);
	qr_view_compare(&cc, json, root);
	qr_view_hazards(&cc, a, root);
	if ((st = qr_view_sens(&cc, a, root)) != QR_OK)
		goto out;
	cJSON_AddItemToObject(root, "layer_hazards",
			      qr_view_layer_hazards(a, L, NULL));
	cJSON_AddNullToObject(root, "layer");
	cJSON_AddNullToObject(root, "graph");
	*out = root;
	root = NULL;
out:
	cJSON_Delete(root);
	return st;
}
