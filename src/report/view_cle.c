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
		cJSON *s;

		cJSON_ArrayForEach(s, sets)
			cJSON_AddNullToObject(s, "measured");
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
}

/* See report-int.h. */
void
qr_report_cle_md(struct qr_buf *b, const struct qr_analysis *a)
{
	const struct qr_cle_measured *m = a->cle_meas;

	if (m == NULL || !m->ran || !isfinite(m->all.gain_db))
		return;
	qr_buf_printf(b, "; every set equalized: %+.2f dB output SQNR, "
		      "measured (%.1f -> %.1f dB with the sets' %zu layers "
		      "quantized per tensor to %d bits, weights only)",
		      m->all.gain_db, m->base.sqnr_db, m->all.m.sqnr_db,
		      m->n_layers, m->bits);
}
