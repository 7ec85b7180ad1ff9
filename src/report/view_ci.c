/*
 * report: the CI views. The --fail-if checks (index.html) and the
 * --compare-to changes (compare.html), read back from report.json's
 * "gate" and "compare" objects.
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
qr_view_gate(const struct qr_view_ctx *cc, const cJSON *json, cJSON *root)
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
		const cJSON *f;
		int passed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			c, "passed"));
		int shown = 0;

		failed += !passed;
		cJSON_AddItemToArray(arr, x);
		qr_view_str(x, "expr", qr_report_item_str(c, "expr", NULL));
		cJSON_AddBoolToObject(x, "passed", passed);
		qr_view_str(x, "class", passed ? "good" : "bad");
		qr_view_fmt(x, "items", "%.0f", qr_report_item_num(c, "items"));
		qr_view_fmt(x, "failures", "%.0f",
			    qr_report_item_num(c, "failures"));
		qr_view_str(x, "worst", qr_report_item_str(c, "worst", NULL));
		items = cJSON_AddArrayToObject(x, "failed");
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
					   c, "failed_items")) {
			const char *name = qr_report_item_str(f, "name", "");
			long q = qr_report_item_quant(f);
			cJSON *y;
			long li;

			if (shown++ == QR_TOP_PROBLEMS)
				break;
			y = cJSON_CreateObject();
			qr_view_str(y, "name", name);
			if (q >= 0)
				qr_view_fmt(y, "candidate", "candidate %ld",
					    q + 1);
			else
				qr_view_str(y, "candidate", "");
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
				qr_view_str(y, "page", cc->L->v[li].page);
			else
				cJSON_AddNullToObject(y, "page");
			qr_view_finite(y, "actual", QR_CHECK_FMT,
				       qr_report_item_num(f, "actual"));
			cJSON_AddItemToArray(items, y);
		}
	}
	cJSON_AddBoolToObject(o, "passed", failed == 0);
	qr_view_str(o, "class", failed ? "bad" : "good");
	qr_view_fmt(o, "n_failed", "%d", failed);
	qr_view_fmt(o, "n_checks", "%d", cJSON_GetArraySize(arr));
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
cmp_rows(const struct qr_view_ctx *cc, const cJSON *arr, const char *name_key,
	 const char *const *fields, const int *is_cos, size_t nf)
{
	static const char *const order[] = { "regressed", "gone", "improved",
					     "new", "same" };
	cJSON *out = cJSON_CreateArray();
	size_t pass, i;

	for (pass = 0; pass < 5; pass++) {
		const cJSON *c;

		cJSON_ArrayForEach(c, arr) {
			const char *st = qr_report_item_str(c, "status", "");
			const char *nm = qr_report_item_str(c, name_key, NULL);
			const char *ly = qr_report_item_str(c, "layer", NULL);
			long q = qr_report_item_quant(c);
			cJSON *x;

			if (strcmp(st, order[pass]) != 0)
				continue;
			x = cJSON_CreateObject();
			qr_view_str(x, "name", qr_or_empty(nm));
			qr_view_page(cc, x, ly != NULL ? ly : nm);
			if (q >= 0)
				qr_view_fmt(x, "candidate", "%ld", q + 1);
			else
				qr_view_str(x, "candidate", "");
			qr_view_str(x, "status", st);
			qr_view_str(x, "class", status_class(st));
			for (i = 0; i < nf; i++)
				cmp_field(x, c, fields[i], is_cos[i]);
			cJSON_AddItemToArray(out, x);
		}
	}
	return out;
}

void
qr_view_compare(const struct qr_view_ctx *cc, const cJSON *json, cJSON *root)
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
	qr_view_str(o, "path", qr_report_item_str(old, "path", NULL));
	qr_view_str(o, "command_line",
		    qr_report_item_str(old, "command_line", NULL));
	for (i = 0; i < 5; i++)
		qr_view_fmt(o, counts[i], "%.0f",
			    qr_report_item_num(c, counts[i]));
	qr_view_str(o, "class",
		    qr_report_item_num(c, "regressed") > 0 ? "bad" : "good");
	cJSON_AddBoolToObject(o, "any_regressed",
			      qr_report_item_num(c, "regressed") > 0);
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

		qr_view_fmt(o, "tol_sqnr", "%g",
			    qr_report_item_num(t, "sqnr_db"));
		qr_view_fmt(o, "tol_cos", "%g",
			    qr_report_item_num(t, "cosine"));
		qr_view_fmt(o, "tol_rel", "%.0f",
			    100 * qr_report_item_num(t, "rel_range_fraction"));
	}
}
