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

/* ---- report.json ---- */

static cJSON *
metric_json(const struct qr_sens_metric *m)
{
	cJSON *o;

	if (!m->ran)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "cosine", qr_json_num(m->cosine));
	cJSON_AddItemToObject(o, "sqnr_db", qr_json_num(m->sqnr_db));
	cJSON_AddItemToObject(o, "top1", qr_json_num(m->top1));
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
		cJSON *x = metric_json(&r->fb.curve[i]);

		if (i < r->fb.n_plan) {
			cJSON_AddItemToArray(f, qr_json_str(l->layer));
			cJSON_AddItemToArray(q, qr_json_str(l->quant_layer));
		}
		if (cJSON_IsObject(x)) {
			cJSON_AddNumberToObject(x, "kept_float", (double)i + 1);
			cJSON_AddItemToObject(x, "layer",
					      qr_json_str(l->layer));
		}
		cJSON_AddItemToArray(c, x);
	}
	cJSON_AddItemToObject(o, "reached", r->fb.n_plan > 0 ?
			      metric_json(&r->fb.curve[r->fb.n_plan - 1]) :
			      metric_json(&r->base));
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
		cJSON_AddItemToObject(o, "base", metric_json(&r->base));
		cJSON_AddItemToObject(o, "weights_only",
				      metric_json(&r->weights_only));
		cJSON_AddItemToObject(o, "activations_only",
				      metric_json(&r->acts_only));
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
					      metric_json(&l->kept_float));
			cJSON_AddItemToObject(x, "quant_only",
					      metric_json(&l->quant_only));
			cJSON_AddItemToObject(x, "why", l->why ?
					      qr_json_str(l->why) :
					      cJSON_CreateNull());
			cJSON_AddItemToArray(ls, x);
		}
		cJSON_AddNumberToObject(o, "measured", (double)r->n_measured);
		cJSON_AddItemToObject(o, "fallback", r->fb.computed ?
				      fallback_json(a, r) :
				      cJSON_CreateNull());
		cJSON_AddNumberToObject(o, "runs", (double)r->runs);
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
		cJSON_AddItemToObject(o, "nodes_to_exclude",
			cJSON_Duplicate(cJSON_GetObjectItem(f,
							    "quant_layers"), 1));
		cJSON_AddItemToObject(o, "float_nodes",
			cJSON_Duplicate(cJSON_GetObjectItem(f, "layers"), 1));
		cJSON_AddItemToObject(o, "base", metric_json(&r->base));
		cJSON_AddItemToObject(o, "reached", cJSON_Duplicate(
			cJSON_GetObjectItem(f, "reached"), 1));
		cJSON_Delete(f);
		cJSON_AddItemToArray(arr, o);
	}
	s = cJSON_Print(root);
	cJSON_Delete(root);
	return s;
}
