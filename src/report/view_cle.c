/*
 * view_cle: CLE, measured (analysis/cle_measured.c): report.json's
 * "cle_measured" and the CLE page's table, each set's predicted gain
 * (its layers' mean per-tensor weight SQNR, after less before) beside
 * the output SQNR gain its equalization gave when run.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/analysis.h"
#include "report/report-int.h"

static double
predicted(const struct qr_cle_set *s)
{
	return s->sqnr_per_tensor_after_db - s->sqnr_per_tensor_before_db;
}

/* {metric, gain_db, why} of one equalized run (new). */
static cJSON *
run_json(const struct qr_cle_run *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddItemToObject(o, "metric", qr_json_sens_metric(&r->m));
	cJSON_AddItemToObject(o, "gain_db", qr_json_num(r->gain_db));
	cJSON_AddItemToObject(o, "why", r->why ? qr_json_str(r->why)
					       : cJSON_CreateNull());
	return o;
}

/* The ReLU6 swap's object (new), or null when nothing was swapped. */
static cJSON *
swap_json(const struct qr_cle_swap *r)
{
	cJSON *o;

	if (!r->tried)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "why", r->why ? qr_json_str(r->why)
					       : cJSON_CreateNull());
	cJSON_AddNumberToObject(o, "clips", (double)r->n_clips);
	cJSON_AddNumberToObject(o, "sets", (double)r->n_sets);
	cJSON_AddNumberToObject(o, "layers_quantized", (double)r->n_layers);
	cJSON_AddItemToObject(o, "swap_only",
			      qr_json_sens_metric(&r->swap_only));
	cJSON_AddItemToObject(o, "base", qr_json_sens_metric(&r->base));
	cJSON_AddItemToObject(o, "all", run_json(&r->all));
	return o;
}

/* See report-int.h. */
cJSON *
qr_json_cle_measured(const struct qr_analysis *a)
{
	const struct qr_cle_measured *m = a->cle_meas;
	cJSON *o, *arr;
	size_t i;

	if (m == NULL)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "ran", m->ran);
	cJSON_AddItemToObject(o, "why", m->why ? qr_json_str(m->why)
					       : cJSON_CreateNull());
	cJSON_AddStringToObject(o, "mode", m->mode == QR_SENS_FULL ? "full"
								   : "quick");
	cJSON_AddNumberToObject(o, "samples", (double)m->samples);
	cJSON_AddNumberToObject(o, "bits", m->bits);
	cJSON_AddNumberToObject(o, "layers_quantized", (double)m->n_layers);
	cJSON_AddNumberToObject(o, "equalizable_sets",
				(double)m->n_equalizable);
	cJSON_AddItemToObject(o, "base", qr_json_sens_metric(&m->base));
	cJSON_AddItemToObject(o, "all", run_json(&m->all));
	cJSON_AddItemToObject(o, "float_check",
			      qr_json_sens_metric(&m->float_check));
	arr = cJSON_AddArrayToObject(o, "sets");
	for (i = 0; i < m->n_sets && i < a->n_cle; i++) {
		cJSON *x = run_json(&m->sets[i]);

		cJSON_AddNumberToObject(x, "set", (double)i);
		cJSON_AddItemToObject(x, "predicted_gain_db",
				      qr_json_num(predicted(&a->cle[i])));
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddItemToObject(o, "relu6", swap_json(&m->relu6));
	cJSON_AddNumberToObject(o, "runs", (double)m->runs);
	cJSON_AddNumberToObject(o, "cut_runs", (double)m->cut_runs);
	cJSON_AddItemToObject(o, "seconds", qr_json_num(m->seconds));
	return o;
}

/* o[key] = "+1.23" dB, or "—". */
static void
gain_view(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		qr_view_fmt(o, key, "%+.2f", v);
	else
		qr_view_str(o, key, "\xe2\x80\x94");
}

/* A row of the table: the set's name, its gains and run. */
static cJSON *
row(const char *label, const char *anchor, const char *layers,
    double pred, const struct qr_cle_run *r, double thr)
{
	cJSON *x = cJSON_CreateObject();

	cJSON_AddBoolToObject(x, "ran", r->m.ran && isfinite(r->gain_db));
	qr_view_str(x, "label", label);
	qr_view_str(x, "anchor", anchor);
	qr_view_str(x, "layers", layers);
	gain_view(x, "predicted", pred);
	gain_view(x, "measured", r->gain_db);
	qr_view_str(x, "measured_class", !isfinite(r->gain_db) ? "" :
		    r->gain_db > 0.1 ? "good" : r->gain_db < -0.1 ? "bad" : "");
	qr_view_sens_metric(x, "m", &r->m, thr);
	qr_view_str(x, "why", r->why);
	return x;
}

/* o.relu6: the swap's sentence and rows for the CLE page. */
static void
swap_view(cJSON *o, const struct qr_cle_swap *r, double thr)
{
	cJSON *x = cJSON_AddObjectToObject(o, "relu6"), *rows;
	struct qr_cle_run only = { r->swap_only, NAN, NULL };
	struct qr_cle_run base = { r->base, NAN, NULL };

	cJSON_AddBoolToObject(x, "tried", r->tried);
	cJSON_AddBoolToObject(x, "ran", r->tried && r->why == NULL);
	qr_view_str(x, "why", r->why);
	qr_view_count(x, "clips", r->n_clips);
	qr_view_str(x, "clips_s", r->n_clips == 1 ? "" : "s");
	qr_view_count(x, "sets", r->n_sets);
	qr_view_count(x, "layers", r->n_layers);
	qr_view_sens_metric(x, "only", &r->swap_only, thr);
	rows = cJSON_AddArrayToObject(x, "rows");
	cJSON_AddItemToArray(rows, row("ReLU6 made ReLU, nothing quantized",
				       "", "", NAN, &only, thr));
	cJSON_AddItemToArray(rows, row("+ the sets' layers quantized", "",
				       "", NAN, &base, thr));
	cJSON_AddItemToArray(rows, row("+ every set equalized first", "", "",
				       NAN, &r->all, thr));
}

/* See report-int.h. */
void
qr_view_cle_measured(const struct qr_analysis *a, cJSON *root)
{
	const struct qr_cle_measured *m = a->cle_meas;
	cJSON *sets = cJSON_GetObjectItemCaseSensitive(root, "cle");
	double thr = a->data.cos_threshold > 0 ? a->data.cos_threshold : 0.99;
	cJSON *o = cJSON_AddObjectToObject(root, "cle_meas"), *rows;
	char label[32], anchor[32];
	size_t i;

	cJSON_AddBoolToObject(o, "has", m != NULL);
	cJSON_AddBoolToObject(o, "ran", m != NULL && m->ran);
	if (m == NULL) {
		static const struct qr_cle_swap none;
		cJSON *s;

		cJSON_ArrayForEach(s, sets)
			cJSON_AddNullToObject(s, "measured");
		swap_view(o, &none, thr);
		return;
	}
	qr_view_str(o, "why", m->why);
	qr_view_count(o, "samples", m->samples);
	qr_view_count(o, "bits", (size_t)m->bits);
	qr_view_count(o, "layers", m->n_layers);
	qr_view_count(o, "runs", m->runs);
	qr_view_fmt(o, "seconds", "%.2f", m->seconds);
	qr_view_str(o, "mode", m->mode == QR_SENS_FULL ? "full" : "quick");
	cJSON_AddBoolToObject(o, "full", m->mode == QR_SENS_FULL);
	qr_view_sens_metric(o, "base", &m->base, thr);
	qr_view_sens_metric(o, "check", &m->float_check, thr);
	cJSON_AddBoolToObject(o, "check_ran", m->float_check.ran);
	rows = cJSON_AddArrayToObject(o, "rows");
	for (i = 0; i < m->n_sets && i < a->n_cle; i++) {
		cJSON *s = cJSON_GetArrayItem(sets, (int)i);
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "title");
		cJSON *x;

		snprintf(label, sizeof label, "Set %zu", i + 1);
		snprintf(anchor, sizeof anchor, "cle-%zu", i);
		x = row(label, anchor, cJSON_IsString(t) ? t->valuestring : "",
			predicted(&a->cle[i]), &m->sets[i], thr);
		cJSON_AddItemToArray(rows, x);
		if (cJSON_IsObject(s))
			cJSON_AddItemToObject(s, "measured",
					      m->sets[i].m.ran ?
					      cJSON_Duplicate(x, 1) :
					      cJSON_CreateNull());
	}
	cJSON_AddItemToObject(o, "all", row("All sets together", "", "",
					    NAN, &m->all, thr));
	swap_view(o, &m->relu6, thr);
}

/* See report-int.h. */
void
qr_report_cle_md(struct qr_buf *b, const struct qr_analysis *a)
{
	const struct qr_cle_measured *m = a->cle_meas;

	if (m == NULL)
		return;
	if (m->ran && isfinite(m->all.gain_db))
		qr_buf_printf(b, "; every set equalized: %+.2f dB output "
			      "SQNR, measured (%.1f -> %.1f dB with the sets' "
			      "%zu layers quantized per tensor to %d bits, "
			      "weights only)", m->all.gain_db,
			      m->base.sqnr_db, m->all.m.sqnr_db, m->n_layers,
			      m->bits);
	if (m->relu6.tried && m->relu6.why == NULL &&
	    isfinite(m->relu6.all.gain_db)) {
		char only[32];

		if (isfinite(m->relu6.swap_only.sqnr_db))
			snprintf(only, sizeof only, "output SQNR %.1f dB",
				 m->relu6.swap_only.sqnr_db);
		else
			snprintf(only, sizeof only, "the same output");
		qr_buf_printf(b, "; with the %zu blocking ReLU6 made ReLU "
			      "(alone: %s), its %zu set%s equalized: %+.2f dB, "
			      "measured (%.1f -> %.1f dB)", m->relu6.n_clips,
			      only, m->relu6.n_sets,
			      m->relu6.n_sets == 1 ? "" : "s",
			      m->relu6.all.gain_db, m->relu6.base.sqnr_db,
			      m->relu6.all.m.sqnr_db);
	}
}
