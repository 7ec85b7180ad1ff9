/*
 * report: the hazards view. Every hazard of every candidate for the
 * overview's "Hazards" section (index.html), the ones that concern a
 * layer for its page, each row with links to the layers it names and to
 * its explanation on the help page (help.html#hz-<kind>).
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP_HAZARDS 20 /* rows the overview shows before "more" */

/* The title and CSS class of each kind (enum qr_hazard_kind order). */
static const struct {
	const char *title;
	const char *cls;
} kinds[QR_HZ_N] = {
	[QR_HZ_BAD_SCALE] = { "Bad scale", "bad" },
	[QR_HZ_BAD_ZERO_POINT] = { "Bad zero point", "bad" },
	[QR_HZ_SATURATION] = { "Saturation", "bad" },
	[QR_HZ_SCALE_MISMATCH] = { "Scale off the data", "warn" },
	[QR_HZ_INPUT_SCALES] = { "Input scales far apart", "bad" },
	[QR_HZ_SHARED_SCALE] = { "One scale, ranges far apart", "bad" },
	[QR_HZ_SENSITIVE_8BIT] = { "8-bit sensitive output", "warn" },
	[QR_HZ_REQUANT_CHAIN] = { "Requantized chain", "warn" },
	[QR_HZ_HALF_RANGE] = { "Half the codes unused", "warn" },
	[QR_HZ_PER_TENSOR] = { "Per-tensor weight", "warn" },
	[QR_HZ_FIRST_LAST] = { "First/last layer quantized", "warn" },
};

/* One hazard as a table row: its kind (title, class, help anchor), its
 * candidate, what it concerns (each with its layer's page, or null), the
 * sentences. */
static cJSON *
hazard_row(const struct qr_analysis *a, const struct qr_report_layers *L,
	   size_t i)
{
	const struct qr_hazard *h = &a->hazards[i];
	cJSON *o = cJSON_CreateObject(), *arr;
	int k = h->kind >= 0 && h->kind < QR_HZ_N ? h->kind : 0;
	size_t j;

	qr_view_fmt(o, "anchor", "hz-%zu", i);
	qr_view_str(o, "kind", qr_hazard_kind_name(h->kind));
	qr_view_str(o, "title", kinds[k].title);
	qr_view_str(o, "class", kinds[k].cls);
	qr_view_fmt(o, "help", "help.html#hz-%s", qr_hazard_kind_name(h->kind));
	qr_view_fmt(o, "candidate", "Candidate %zu", h->quant + 1);
	qr_view_fmt(o, "cand_anchor", "model.html#q-%zu", h->quant);
	if (h->quant < a->n_quant)
		qr_view_str(o, "format",
			    qr_qformat_name(a->quants[h->quant].format));
	else
		qr_view_str(o, "format", NULL);
	arr = cJSON_AddArrayToObject(o, "items");
	for (j = 0; j < h->n_refs; j++) {
		const struct qr_hazard_ref *r = &h->refs[j];
		const char *page = qr_report_layer_page(L, r->layer);
		cJSON *x = cJSON_CreateObject();

		if (page == NULL)
			page = qr_report_layer_page(L, r->name);
		qr_view_str(x, "name", r->name);
		qr_view_str(x, "page", page);
		cJSON_AddItemToArray(arr, x);
	}
	qr_view_str(o, "what", h->what);
	qr_view_str(o, "fix", h->fix);
	return o;
}

/*
 * root.hazards for the overview: has (bool), n (count, formatted), top
 * (the first TOP_HAZARDS rows), more (the rest), has_more, n_more.
 */
void
qr_view_hazards(const struct qr_view_ctx *cc, const struct qr_analysis *a,
		cJSON *root)
{
	cJSON *o = cJSON_AddObjectToObject(root, "hazards");
	cJSON *top = cJSON_AddArrayToObject(o, "top");
	cJSON *more = cJSON_AddArrayToObject(o, "more");
	size_t i;

	for (i = 0; i < a->n_hazards; i++)
		cJSON_AddItemToArray(i < TOP_HAZARDS ? top : more,
				     hazard_row(a, cc->L, i));
	cJSON_AddBoolToObject(o, "has", a->n_hazards > 0);
	qr_view_count(o, "n", a->n_hazards);
	cJSON_AddBoolToObject(o, "one", a->n_hazards == 1);
	cJSON_AddBoolToObject(o, "has_more", a->n_hazards > TOP_HAZARDS);
	qr_view_count(o, "n_more", a->n_hazards > TOP_HAZARDS ?
		      a->n_hazards - TOP_HAZARDS : 0);
}

/* {has, rows}: the rows of the hazards whose items name float layer
 * `layer` (NULL: none), each once. */
cJSON *
qr_view_layer_hazards(const struct qr_analysis *a,
		      const struct qr_report_layers *L, const char *layer)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "rows");
	size_t i, j, n = 0;

	for (i = 0; layer != NULL && i < a->n_hazards; i++)
		for (j = 0; j < a->hazards[i].n_refs; j++) {
			const char *l = a->hazards[i].refs[j].layer;

			if (l != NULL && strcmp(l, layer) == 0) {
				cJSON_AddItemToArray(arr,
						     hazard_row(a, L, i));
				n++;
				break;
			}
		}
	cJSON_AddBoolToObject(o, "has", n > 0);
	return o;
}
