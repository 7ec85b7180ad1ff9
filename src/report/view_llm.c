/*
 * view_llm: what the pages show of a decoder LLM: a candidate's
 * next-token metrics (KL, top-1, top-5, perplexity) and its decoder
 * blocks' outputs along depth (activations page, overview verdict,
 * summary.md), and the block scales and weight SQNR of every int4 layer
 * (weights page). Nothing here is set for other models but the empty
 * keys the templates test.
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"
#include "chart/chart.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* -10 log10(1 - cos): a cosine on the dB axis of SQNR. For an error
 * uncorrelated with the signal, 1 - cos is about 1 / (2 SQNR), so the two
 * lines run about 3 dB apart; where they part, the error is not noise
 * (a scale or an offset). */
static double
cos_db(double c)
{
	return c < 1 ? -10 * log10(1 - c) : NAN;
}

/* The block chart: each block's output, cumulative and local SQNR and
 * the cosine (as cos_db), along the blocks. */
static enum qr_status
blocks_chart(struct qr_view_ctx *cc, const struct qr_analysis *a, size_t k,
	     const struct qr_llm_result *r, cJSON *o)
{
	size_t n = r->n_blocks, i;
	double *sq = xcalloc(n + 1, sizeof *sq), *lsq = xcalloc(n + 1,
								sizeof *lsq);
	double *cd = xcalloc(n + 1, sizeof *cd);
	char **ticks = xcalloc(n + 1, sizeof *ticks);
	char **hrefs = xcalloc(n + 1, sizeof *hrefs);
	char **titles = xcalloc(n + 1, sizeof *titles);
	struct qr_series s[3];
	struct qr_hline hl = { a->data.sqnr_threshold, "threshold" };
	struct qr_chart_spec spec = {0};
	char name[48], c1[64], c2[64];
	enum qr_status st;

	for (i = 0; i < n; i++) {
		const struct qr_llm_block *b = &r->blocks[i];
		const struct qr_act_pair *p = &a->act_pairs[b->pair];
		const struct qr_act_tensor *t = &a->act_tensors[p->tensor];

		sq[i] = qr_plottable(b->sqnr_db);
		lsq[i] = qr_plottable(b->local_sqnr_db);
		cd[i] = cos_db(b->cosine);
		ticks[i] = xasprintf("%d", b->block);
		hrefs[i] = qr_view_href(cc, t->layer, "activations.html#ap-%zu",
					(size_t)b->pair);
		qr_fmt_sqnr(c1, sizeof c1, b->sqnr_db);
		qr_fmt_sqnr(c2, sizeof c2, b->local_sqnr_db);
		titles[i] = xasprintf("block %d (%s): SQNR %s dB cumulative, "
				      "%s dB local; cosine %.6f", b->block,
				      t->name, c1, c2, b->cosine);
	}
	s[0] = (struct qr_series){ "cumulative SQNR", sq, NULL, n,
				   QR_STYLE_LINE, 1 };
	s[1] = (struct qr_series){ "local SQNR (float inputs)", lsq, NULL, n,
				   QR_STYLE_DOTTED, 2 };
	s[2] = (struct qr_series){ "cosine, as -10 log10(1 - cosine)", cd,
				   NULL, n, QR_STYLE_LINE, 4 };
	spec.title = "Decoder blocks: output SQNR and cosine along depth";
	spec.xlabel = "decoder block (layers.N)";
	spec.ylabel = "dB";
	spec.width = 960;
	spec.height = 300;
	spec.n_series = 3;
	spec.series = s;
	spec.xticks = (const char *const *)ticks;
	spec.hlines = &hl;
	spec.n_hlines = 1;
	snprintf(name, sizeof name, "llm-blocks-q%zu", k + 1);
	st = qr_view_chart(cc, o, "blocks_chart", "model-", name, &spec,
			   "Each decoder block's output: cumulative and local SQNR and the cosine on the same dB axis",
			   hrefs, titles);
	qr_strv_free(titles, n);
	qr_strv_free(hrefs, n);
	qr_strv_free(ticks, n);
	free(cd);
	free(lsq);
	free(sq);
	return st;
}

/* See report-int.h. */
enum qr_status
qr_view_llm_cand(struct qr_view_ctx *cc, const struct qr_analysis *a,
		 size_t k, cJSON *cand)
{
	const struct qr_llm_result *r = a->act_runs[k].llm;
	cJSON *o, *arr, *x;
	size_t i;

	if (r == NULL) {
		cJSON_AddNullToObject(cand, "llm");
		return QR_OK;
	}
	o = cJSON_AddObjectToObject(cand, "llm");
	qr_view_str(o, "output", r->output);
	qr_view_count(o, "vocab", r->vocab);
	qr_view_count(o, "positions", r->positions);
	qr_view_finite(o, "kl", "%.4g", r->kl_mean);
	qr_view_finite(o, "kl_max", "%.4g", r->kl_max);
	qr_view_finite(o, "top1", "%.1f%%", 100 * r->top1_agree);
	qr_view_finite(o, "top5", "%.1f%%", 100 * r->top5_overlap);
	cJSON_AddNullToObject(o, "ppl");
	if (r->perplexity) {
		x = cJSON_CreateObject();
		cJSON_ReplaceItemInObject(o, "ppl", x);
		qr_view_count(x, "tokens", r->ppl_tokens);
		qr_view_finite(x, "float", "%.4g", r->ppl_float_all);
		qr_view_finite(x, "quant", "%.4g", r->ppl_quant_all);
		qr_view_finite(x, "change", "%+.2f%%", 100 * r->ppl_change);
		qr_view_str(x, "change_class", r->ppl_change > 0.05 ? "bad" :
			    r->ppl_change > 0.01 ? "warn" : "good");
	}
	arr = cJSON_AddArrayToObject(o, "per_sample");
	for (i = 0; i < r->samples; i++) {
		x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "i", (double)(i + 1));
		qr_view_str(x, "sample", i < a->data.samples
			    ? a->data.sample_names[i] : "");
		qr_view_finite(x, "kl", "%.4g", r->kl[i]);
		qr_view_finite(x, "top1", "%.1f%%", 100 * r->top1[i]);
		qr_view_finite(x, "top5", "%.1f%%", 100 * r->top5[i]);
		qr_view_finite(x, "ppl_float", "%.4g",
			       r->perplexity ? r->ppl_float[i] : NAN);
		qr_view_finite(x, "ppl_quant", "%.4g",
			       r->perplexity ? r->ppl_quant[i] : NAN);
		cJSON_AddItemToArray(arr, x);
	}
	arr = cJSON_AddArrayToObject(o, "blocks");
	for (i = 0; i < r->n_blocks; i++) {
		const struct qr_llm_block *b = &r->blocks[i];
		const struct qr_act_tensor *t =
			&a->act_tensors[a->act_pairs[b->pair].tensor];

		x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "block", b->block);
		qr_view_str(x, "tensor", t->name);
		qr_view_fmt(x, "anchor", "ap-%ld", b->pair);
		qr_view_sqnr(x, "sqnr", b->sqnr_db);
		qr_view_str(x, "sqnr_class", qr_act_sqnr_class(
				    b->sqnr_db, a->data.sqnr_threshold));
		qr_view_sqnr(x, "local_sqnr", b->local_sqnr_db);
		qr_view_finite(x, "cos", QR_COS_FMT, b->cosine);
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddBoolToObject(o, "has_blocks", r->n_blocks > 0);
	if (r->n_blocks == 0) {
		cJSON_AddNullToObject(o, "blocks_chart");
		return QR_OK;
	}
	return blocks_chart(cc, a, k, r, o);
}

/* See report-int.h. */
void
qr_view_llm_verdict(const struct qr_analysis *a, size_t k, struct qr_buf *b)
{
	const struct qr_llm_result *r = a->act_runs[k].llm;

	if (r == NULL)
		return;
	qr_buf_printf(b, " Next token over %zu positions: KL %.4g nats, "
		      "top-1 agreement %.1f%%, top-5 overlap %.1f%%",
		      r->positions, r->kl_mean, 100 * r->top1_agree,
		      100 * r->top5_overlap);
	if (r->perplexity)
		qr_buf_printf(b, "; perplexity %.4g (float %.4g, %+.2f%%)",
			      r->ppl_quant_all, r->ppl_float_all,
			      100 * r->ppl_change);
	qr_buf_puts(b, ".");
}

/* Whether candidate layer l is blocked int4 (MatMulNBits, blocked DQ). */
static int
is_int4_block(const struct qr_quant_layer *l)
{
	return l->bits == 4 && l->block_size > 0;
}

/* The pairing of candidate k's layer name, or NULL. */
static const struct qr_quant_weight *
pair_of(const struct qr_analysis *a, size_t k, const char *name)
{
	size_t i;

	for (i = 0; i < a->n_qweights; i++)
		if (a->qweights[i].quant == k && a->qweights[i].quant_layer &&
		    strcmp(a->qweights[i].quant_layer, name) == 0)
			return &a->qweights[i];
	return NULL;
}

/* Candidate k's int4 layers: a table and a chart of their block scale
 * ranges (log y) and weight SQNR. */
static enum qr_status
int4_cand(struct qr_view_ctx *cc, const struct qr_analysis *a, size_t k,
	  cJSON *o)
{
	const struct qr_quant_summary *qs = &a->quants[k];
	size_t i, n = 0, unpaired = 0;
	double *lo = xcalloc(qs->n_layers + 1, sizeof *lo);
	double *hi = xcalloc(qs->n_layers + 1, sizeof *hi);
	double *sq = xcalloc(qs->n_layers + 1, sizeof *sq);
	char **ticks = xcalloc(qs->n_layers + 1, sizeof *ticks);
	char **hrefs = xcalloc(qs->n_layers + 1, sizeof *hrefs);
	char **titles = xcalloc(qs->n_layers + 1, sizeof *titles);
	cJSON *arr = cJSON_AddArrayToObject(o, "layers"), *x;
	struct qr_series s[2];
	struct qr_chart_spec spec = {0};
	enum qr_status st = QR_OK;
	char name[48], num[64];

	for (i = 0; i < qs->n_layers; i++) {
		const struct qr_quant_layer *l = &qs->layers[i];
		const struct qr_quant_weight *w;

		if (!is_int4_block(l))
			continue;
		w = pair_of(a, k, l->layer);
		unpaired += w == NULL;
		x = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, x);
		qr_view_str(x, "layer", l->layer);
		qr_view_page(cc, x, w != NULL ? w->layer : l->layer);
		qr_view_str(x, "op", l->op);
		qr_view_count(x, "block_size", l->block_size);
		qr_view_count(x, "blocks", l->n_scales);
		qr_view_num(x, "scale_min", l->scale_min);
		qr_view_num(x, "scale_max", l->scale_max);
		qr_view_finite(x, "spread", "%.3gx", l->scale_min > 0
			       ? l->scale_max / l->scale_min : NAN);
		if (w != NULL) {
			qr_view_sqnr(x, "sqnr", w->sqnr_db);
			qr_view_str(x, "sqnr_class", qr_sqnr_class(w->sqnr_db));
		} else {
			qr_view_str(x, "sqnr", "not paired");
			qr_view_str(x, "sqnr_class", "warn");
		}
		lo[n] = l->scale_min;
		hi[n] = l->scale_max;
		sq[n] = w != NULL ? qr_plottable(w->sqnr_db) : NAN;
		ticks[n] = xstrdup(l->layer);
		hrefs[n] = qr_view_href(cc, w != NULL ? w->layer : l->layer,
					"weights.html#int4-%zu", k);
		qr_fmt_sqnr(num, sizeof num, w != NULL ? w->sqnr_db : NAN);
		titles[n] = xasprintf("%s: %zu blocks of %zu, scales %.4g .. "
				      "%.4g; weight SQNR %s dB", l->layer,
				      l->n_scales, l->block_size,
				      l->scale_min, l->scale_max,
				      w != NULL ? num : "(not paired)");
		n++;
	}
	qr_view_count(o, "n_layers", n);
	qr_view_count(o, "n_unpaired", unpaired);
	cJSON_AddBoolToObject(o, "has_unpaired", unpaired > 0);
	if (n == 0) {
		cJSON_AddNullToObject(o, "scale_chart");
		cJSON_AddNullToObject(o, "sqnr_chart");
		goto out;
	}
	s[0] = (struct qr_series){ "block scales, min\xe2\x80\x93max", lo, hi,
				   n, QR_STYLE_BAND, 0 };
	s[1] = (struct qr_series){ "largest block scale", hi, NULL, n,
				   QR_STYLE_MARKERS, 0 };
	spec.title = "int4 block scales per layer (range over its blocks)";
	spec.xlabel = "int4 layer (candidate order)";
	spec.ylabel = "scale";
	spec.width = 960;
	spec.height = 280;
	spec.log_y = 1;
	spec.n_series = 2;
	spec.series = s;
	spec.xticks = (const char *const *)ticks;
	snprintf(name, sizeof name, "int4-scales-q%zu", k + 1);
	st = qr_view_chart(cc, o, "scale_chart", "model-", name, &spec,
			   "Range of each int4 layer's block scales",
			   hrefs, titles);
	if (st != QR_OK)
		goto out;
	memset(&spec, 0, sizeof spec);
	s[0] = (struct qr_series){ "dequantized weight SQNR", sq, NULL, n,
				   QR_STYLE_LINE, 1 };
	spec.title = "SQNR of each int4 layer's weights (float vs dequantized)";
	spec.xlabel = "int4 layer (candidate order)";
	spec.ylabel = "SQNR (dB)";
	spec.width = 960;
	spec.height = 260;
	spec.n_series = 1;
	spec.series = s;
	spec.xticks = (const char *const *)ticks;
	snprintf(name, sizeof name, "int4-sqnr-q%zu", k + 1);
	st = qr_view_chart(cc, o, "sqnr_chart", "model-", name, &spec,
			   "SQNR of each int4 layer's dequantized weights against the float weights",
			   hrefs, titles);
out:
	qr_strv_free(titles, n);
	qr_strv_free(hrefs, n);
	qr_strv_free(ticks, n);
	free(sq);
	free(hi);
	free(lo);
	return st;
}

/* See report-int.h. */
enum qr_status
qr_view_int4(struct qr_view_ctx *cc, const struct qr_analysis *a,
	     cJSON *root)
{
	cJSON *arr = cJSON_AddArrayToObject(root, "int4"), *o;
	enum qr_status st = QR_OK;
	size_t k, i;
	int any;

	for (k = 0; k < a->n_quant && st == QR_OK; k++) {
		for (i = 0, any = 0; i < a->quants[k].n_layers && !any; i++)
			any = is_int4_block(&a->quants[k].layers[i]);
		if (!any)
			continue;
		o = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, o);
		qr_view_fmt(o, "label", "Candidate %zu", k + 1);
		qr_view_fmt(o, "anchor", "int4-%zu", k);
		st = int4_cand(cc, a, k, o);
	}
	cJSON_AddBoolToObject(root, "has_int4", cJSON_GetArraySize(arr) > 0);
	return st;
}
