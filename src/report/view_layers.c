/*
 * report: the layer views. The table of every layer with every metric
 * (layers.html) and each layer's own page, gathered from the other
 * views.
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A table cell: display text, CSS class and a sort key (v: a number as
 * text, "" when there is none, so the sort puts it last). */
static void
cell(cJSON *cells, const char *text, const char *cls, double v)
{
	cJSON *c = cJSON_CreateObject();
	char buf[64];

	qr_view_str(c, "text", text);
	qr_view_str(c, "cls", cls != NULL ? cls : "");
	if (isnan(v))
		buf[0] = '\0';
	else if (isinf(v))
		snprintf(buf, sizeof buf, v > 0 ? "Infinity" : "-Infinity");
	else
		snprintf(buf, sizeof buf, "%.9g", v);
	qr_view_str(c, "v", buf);
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

	qr_fmt_sqnr(buf, sizeof buf, v);
	cell(cells, buf, cls, v);
}

static void
cell_cos(cJSON *cells, double v, const char *cls)
{
	char buf[64];

	qr_fmt_finite(buf, sizeof buf, QR_COS_FMT, v);
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

	qr_view_str(c, "label", label);
	qr_view_str(c, "title", title);
	qr_view_str(c, "group", group);
	cJSON_AddItemToArray(cols, c);
}

static int
cmp_str(const void *pa, const void *pb)
{
	return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* root.ltable: one row per layer, every metric; layers.html. */
void
qr_view_layers_table(const struct qr_analysis *a,
		     const struct qr_report_layers *L, cJSON *root)
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

		qr_view_str(g, "label", "Float weights");
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
		qr_view_fmt(g, "label", "Candidate %zu (%s)", k + 1,
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
		qr_view_fmt(r, "anchor", "l-%zu", i);
		qr_view_str(r, "name", l->name);
		qr_view_str(r, "op", l->op);
		qr_view_str(r, "page", l->page);
		opv[i] = l->op;
		cells = cJSON_AddArrayToObject(r, "cells");
		if (l->weight >= 0) {
			const struct qr_weight_stats *w = &a->weights[l->weight];

			snprintf(buf, sizeof buf, "%zu", w->channels);
			cell(cells, buf, "", (double)w->channels);
			cell_num(cells, w->max_rel_range,
				 qr_rel_class(w->max_rel_range));
			snprintf(buf, sizeof buf, "%zu", w->n_outliers);
			cell(cells, buf, "", (double)w->n_outliers);
			cell_sqnr(cells, w->sqnr_per_tensor_db,
				  qr_sqnr_class(w->sqnr_per_tensor_db));
			cell_sqnr(cells, w->sqnr_per_channel_db,
				  qr_sqnr_class(w->sqnr_per_channel_db));
			flagged |= qr_layer_flagged(w);
		} else {
			for (k = 0; k < 5; k++)
				cell_none(cells);
		}
		for (k = 0; k < a->n_quant; k++) {
			if (l->qweight[k] >= 0) {
				double v = a->qweights[l->qweight[k]].sqnr_db;

				cell_sqnr(cells, v, qr_sqnr_class(v));
			} else {
				cell_none(cells);
			}
			if (l->act[k] >= 0) {
				const struct qr_act_pair *p =
					&a->act_pairs[l->act[k]];

				cell_cos(cells, p->cosine_mean,
					 qr_cos_class(p->cosine_mean, tc));
				cell_sqnr(cells, p->sqnr_db,
					  qr_act_sqnr_class(p->sqnr_db, ts));
				cell_sqnr(cells, p->local_sqnr_db,
					  qr_act_sqnr_class(p->local_sqnr_db,
							    ts));
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
		qr_view_str(o, "op", opv[i]);
		cJSON_AddNumberToObject(o, "n", (double)(j - i + 1));
		cJSON_AddItemToArray(ops, o);
		i = j;
	}
	qr_view_count(t, "n", L->n);
	qr_view_count(t, "n_flagged", n_flagged);
	cJSON_AddBoolToObject(t, "has_graph", L->has_graph);
	qr_view_count(t, "n_hidden", L->n_hidden);
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

	qr_view_str(o, "name", L->v[i].name);
	qr_view_str(o, "op", L->v[i].op);
	qr_view_str(o, "page", L->v[i].page);
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

	qr_view_str(o, "name", l->name);
	qr_view_str(o, "op", l->op);
	qr_view_str(o, "page", l->page);
	qr_view_fmt(o, "number", "%zu", i + 1);
	qr_view_fmt(o, "n_layers", "%zu", L->n);
	qr_view_fmt(o, "row_anchor", "l-%zu", i);
	if (l->depth >= 0)
		qr_view_fmt(o, "depth", "%d", l->depth);
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
		qr_view_fmt(x, "label", "Candidate %zu", k + 1);
		qr_view_str(x, "format", qr_qformat_name(s->format));
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
		qr_view_fmt(x, "label", "Candidate %zu", k + 1);
		qr_view_str(x, "format", qr_qformat_name(a->quants[k].format));
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
			qr_view_fmt(x, "position", "%zu of %zu", j + 1,
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
