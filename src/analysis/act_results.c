/*
 * act_results: a finished activation run's running sums turned into the
 * result: per activation (ranges, per-channel statistics), per pair
 * (cumulative and local error, histograms, flags), per graph output; then
 * where each candidate's error comes from (error_sources.c), its worst
 * samples (worst_samples.c) and the activation outliers (outliers.c).
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"

#define RMSE_SCALE_BAD 0.7       /* TFLite debugger: suspect above */
#define SATURATION_BAD 0.01      /* fraction of values outside the range */
#define CANCEL_RATIO 1e-5        /* float RMS / inputs' RMS: a cancellation */

static void
act_tensors_out(struct qr_ar_ctx *c)
{
	struct qr_analysis *a = c->a;
	size_t i, k, n = 0;

	a->act_tensors = xcalloc(c->n_ft + 1, sizeof *a->act_tensors);
	for (i = 0; i < c->n_ft; i++) {
		struct qr_ar_ftens *f = &c->ft[i];
		struct qr_act_tensor *t = &a->act_tensors[n];
		const struct qr_node *fn = f->node >= 0
			? qr_graph_node(c->fg, (size_t)f->node) : NULL;

		f->out = n++;
		t->name = xstrdup(f->name);
		t->layer = xstrdup(fn ? fn->name : "");
		t->op = xstrdup(fn ? fn->op_type : "input");
		t->depth = (int)f->pos;
		t->shape = f->shape ? xstrdup(f->shape) : xstrdup("?");
		t->channels = f->chan.ch;
		t->ch_min = xcalloc(f->chan.ch + 1, sizeof *t->ch_min);
		t->ch_max = xcalloc(f->chan.ch + 1, sizeof *t->ch_max);
		t->ch_mean = xcalloc(f->chan.ch + 1, sizeof *t->ch_mean);
		for (k = 0; k < f->chan.ch; k++) {
			t->ch_min[k] = f->chan.mn[k];
			t->ch_max[k] = f->chan.mx[k];
			t->ch_mean[k] = f->chan.cnt[k]
				? (float)(f->chan.sum[k] / f->chan.cnt[k]) : NAN;
		}
		t->min = f->chan.ch ? f->chan.min : NAN;
		t->max = f->chan.ch ? f->chan.max : NAN;
		t->n_values = f->n_values;
	}
	a->n_act_tensors = n;
}

static void
pair_out(const struct qr_ar_ctx *c, struct qr_act_pair *o,
	 const struct qr_ar_pair *p, size_t k, int cancel)
{
	const struct qr_act_data *dt = &c->a->data;
	double lmse;

	o->quant = k;
	o->tensor = c->ft[p->ft].out;
	o->quant_tensor = xstrdup(p->am->q);
	o->quant_dtype = xstrdup(p->qdtype ? qr_dtype_name(p->qdtype) : "?");
	o->match = p->am->how;
	o->match_reason = xstrdup(p->am->reason);
	o->samples = p->cum.samples;
	o->cosine_mean = qr_cmp_cosine_mean(&p->cum);
	o->cosine_min = p->cum.samples ? p->cum.cos_min : NAN;
	o->cosine_max = p->cum.samples ? p->cum.cos_max : NAN;
	o->mse = qr_cmp_mse(&p->cum);
	o->max_abs = p->cum.samples ? p->cum.max_abs : NAN;
	o->norm_l2 = qr_cmp_norm_l2(&p->cum);
	o->sqnr_db = qr_cmp_sqnr_db(&p->cum);
	o->local_cosine_mean = qr_cmp_cosine_mean(&p->loc);
	o->local_cosine_min = p->loc.samples ? p->loc.cos_min : NAN;
	o->local_mse = lmse = qr_cmp_mse(&p->loc);
	o->local_sqnr_db = qr_cmp_sqnr_db(&p->loc);
	o->nan_float = p->cum.nan_x;
	o->inf_float = p->cum.inf_x;
	o->nan_quant = p->cum.nan_y;
	o->inf_quant = p->cum.inf_y;
	o->has_qparams = p->qp.n > 0;
	o->scale = o->zero_point = o->qmin = o->qmax = NAN;
	o->saturation = o->rmse_over_scale = NAN;
	if (p->qp.n > 0) {
		double lo = p->qp.qmin, hi = p->qp.qmax;

		if (p->qdtype && p->qdtype != QR_DT_FLOAT)
			qr_as_qrange(p->qdtype, &lo, &hi);
		o->scale = p->qp.scale[0];
		o->zero_point = p->qp.zp[0];
		o->qmin = lo;
		o->qmax = hi;
		o->saturation = p->sat_n ? (double)p->sat / p->sat_n : NAN;
		o->rmse_over_scale = o->scale > 0 ? sqrt(lmse) / o->scale : NAN;
	}
	o->hist_lo = p->hlo;
	o->hist_hi = p->hhi;
	memcpy(o->hist_float, p->hf, sizeof o->hist_float);
	memcpy(o->hist_quant, p->hq, sizeof o->hist_quant);
	o->under_float = p->uf;
	o->over_float = p->of;
	o->under_quant = p->uq;
	o->over_quant = p->oq;
	o->noise_db = o->noise_share = o->noise_gain_db = NAN;
	o->flags = 0;
	if (p->shape_bad)
		o->flags |= QR_ACT_FLAG_SHAPE;
	if (cancel)
		o->flags |= QR_ACT_FLAG_CANCEL;
	else if (o->cosine_mean < dt->cos_threshold)
		o->flags |= QR_ACT_FLAG_COSINE;
	if (!cancel && o->sqnr_db < dt->sqnr_threshold)
		o->flags |= QR_ACT_FLAG_SQNR;
	/* TFLite's bound assumes the output's rounding dominates, as with 8
	 * bits; a 16-bit output's step is 256 times finer, so the weights'
	 * error alone exceeds it and the flag would mark every layer */
	if (o->rmse_over_scale > RMSE_SCALE_BAD && p->qp.qmax - p->qp.qmin < 256)
		o->flags |= QR_ACT_FLAG_RMSE_SCALE;
	if (o->saturation > SATURATION_BAD)
		o->flags |= QR_ACT_FLAG_SATURATION;
	if (o->nan_float + o->inf_float + o->nan_quant + o->inf_quant)
		o->flags |= QR_ACT_FLAG_NONFINITE;
}

/* The RMS of each float tensor over every sample (NaN if no pair summed
 * it), from any candidate's pair on it: the float side of the sums is
 * the same. */
static double *
float_rms(const struct qr_ar_ctx *c)
{
	double *rms = xcalloc(c->n_ft + 1, sizeof *rms);
	size_t k, i;

	for (i = 0; i < c->n_ft; i++)
		rms[i] = NAN;
	for (k = 0; k < c->n_c; k++)
		for (i = 0; c->c[k].ran && i < c->c[k].am.n; i++) {
			const struct qr_ar_pair *p = &c->c[k].pairs[i];

			if (p->ft != QR_AR_NONE && isnan(rms[p->ft]) &&
			    p->cum.n > 0)
				rms[p->ft] = sqrt(p->cum.sxx /
						  (double)p->cum.n);
		}
	return rms;
}

/*
 * Whether float tensor ft is a cancellation: made by an op that adds
 * (Add, Sub, Sum, Mean, ReduceSum, ReduceMean) and whose RMS is below
 * CANCEL_RATIO of its largest compared input's. Fewer than about 7 of
 * float's 24 bits then survive, so what the float model holds is mostly
 * rounding noise (a LayerNorm's mean over rows the previous LayerNorm
 * centred: about 1e-8 against inputs about 1). The candidate's error
 * there is real but harmless, and its SQNR (-100 dB) would otherwise
 * top every list and verdict.
 */
static int
is_cancellation(const struct qr_ar_ctx *c, const double *rms, size_t ft)
{
	static const char *const adds[] = { "Add", "Sub", "Sum", "Mean",
					    "ReduceSum", "ReduceMean" };
	const struct qr_ar_ftens *f = &c->ft[ft];
	const struct qr_node *n;
	double in = 0;
	size_t i, fi;
	int add = 0;

	if (f->node < 0)
		return 0;
	n = qr_graph_node(c->fg, (size_t)f->node);
	for (i = 0; i < sizeof adds / sizeof adds[0]; i++)
		add |= n->domain[0] == '\0' && strcmp(n->op_type, adds[i]) == 0;
	if (!add || isnan(rms[ft]))
		return 0;
	for (i = 0; i < n->n_in; i++)
		if (n->in[i] != NULL &&
		    (fi = qr_ar_ft_find(c, n->in[i])) != QR_AR_NONE &&
		    rms[fi] > in)
			in = rms[fi];
	return in > 0 && rms[ft] < CANCEL_RATIO * in;
}

static void
cand_out(struct qr_ar_ctx *c, size_t k, const double *rms)
{
	struct qr_analysis *a = c->a;
	struct qr_ar_cand *q = &c->c[k];
	struct qr_act_run *r = &a->act_runs[k];
	size_t i, first;
	double worst = INFINITY;
	long *at, *pv;
	const struct qr_ar_pair **ap;

	r->ran = q->ran;
	r->why = q->why ? xstrdup(q->why) : NULL;
	r->born = r->worst_local = -1;
	r->born_drop_db = NAN;
	r->seconds = q->seconds;
	for (i = 0; i < q->am.n_un; i++) {
		struct qr_act_unmatched *u;
		long pi = qr_graph_producer(c->fg, q->am.un[i].f);

		a->act_unmatched = xreallocarray(a->act_unmatched,
						 a->n_act_unmatched + 1,
						 sizeof *a->act_unmatched);
		u = &a->act_unmatched[a->n_act_unmatched++];
		u->quant = k;
		u->tensor = xstrdup(q->am.un[i].f);
		u->layer = xstrdup(pi >= 0 ? qr_graph_node(c->fg, (size_t)pi)->name
					   : "");
		u->reason = xstrdup(q->am.un[i].reason);
	}
	if (!q->ran)
		return;
	a->act_pairs = xreallocarray(a->act_pairs, a->n_act_pairs + q->am.n + 1,
				     sizeof *a->act_pairs);
	at = xcalloc(c->n_ft + 1, sizeof *at);
	ap = xcalloc(c->n_ft + 1, sizeof *ap);
	pv = xcalloc(q->am.n + 1, sizeof *pv);
	for (i = 0; i < c->n_ft; i++)
		at[i] = -1;
	first = a->n_act_pairs;
	for (i = 0; i < q->am.n; i++) {
		struct qr_act_pair *o = &a->act_pairs[a->n_act_pairs];

		pv[i] = -1;
		if (q->pairs[i].ft == QR_AR_NONE || !c->ft[q->pairs[i].ft].seen)
			continue;
		pv[i] = (long)(a->n_act_pairs - first);
		memset(o, 0, sizeof *o);
		pair_out(c, o, &q->pairs[i], k,
			 is_cancellation(c, rms, q->pairs[i].ft));
		a->n_act_pairs++;
		r->n_pairs++;
		r->n_name += o->match == QR_MATCH_NAME;
		r->n_structure += o->match == QR_MATCH_STRUCTURE;
		if (!(o->flags & QR_ACT_FLAG_CANCEL)) {
			at[q->pairs[i].ft] = (long)(a->n_act_pairs - 1);
			ap[q->pairs[i].ft] = &q->pairs[i];
		}
	}
	/* flags QR_ACT_FLAG_SUSPECT: counted and ranked after it */
	qr_es_analyse(c, k, at, ap);
	for (i = first; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *o = &a->act_pairs[i];

		if (o->flags & QR_ACT_NOT_FINDING)
			continue;
		r->n_flagged += (o->flags & (QR_ACT_FLAG_COSINE |
					     QR_ACT_FLAG_SQNR)) != 0;
		if (!isnan(o->local_sqnr_db) && o->local_sqnr_db < worst) {
			worst = o->local_sqnr_db;
			r->worst_local = (long)i;
		}
	}
	qr_ws_results(c, k, pv, a->n_act_pairs - first);
	free(pv);
	free(ap);
	free(at);
	a->act_outputs = xreallocarray(a->act_outputs,
				       a->n_act_outputs + q->n_outs + 1,
				       sizeof *a->act_outputs);
	for (i = 0; i < q->n_outs; i++) {
		struct qr_ar_outacc *oa = &q->outs[i];
		struct qr_act_output *o = &a->act_outputs[a->n_act_outputs++];
		size_t s;

		memset(o, 0, sizeof *o);
		o->quant = k;
		o->name = xstrdup(c->fm->graph.outputs[i].name);
		o->quant_name = xstrdup(q->m->graph.outputs[i].name);
		o->samples = oa->samples;
		o->cosine = xcalloc(oa->samples + 1, sizeof *o->cosine);
		o->sqnr_db = xcalloc(oa->samples + 1, sizeof *o->sqnr_db);
		for (s = 0; s < oa->samples; s++) {
			o->cosine[s] = oa->cos[s];
			o->sqnr_db[s] = oa->sqnr[s];
		}
		o->cosine_mean = qr_cmp_cosine_mean(&oa->total);
		o->cosine_min = oa->total.samples ? oa->total.cos_min : NAN;
		o->sqnr_total_db = qr_cmp_sqnr_db(&oa->total);
		o->classifier = oa->classifier;
		o->rows = oa->rows;
		o->agree = oa->agree;
		o->labeled = oa->labeled;
		o->float_correct = oa->fcorrect;
		o->quant_correct = oa->qcorrect;
		qr_om_results(oa, o);
	}
	qr_llm_results(c, k);
}

/* See analysis-int.h. Only sums, histograms and per-channel ranges are
 * left of the samples; per pair the float tensor's RMS (float_rms) tells
 * cancellations apart. */
void
qr_ar_results(struct qr_ar_ctx *c)
{
	double *rms;
	size_t k;

	act_tensors_out(c);
	rms = float_rms(c);
	for (k = 0; k < c->n_c; k++)
		cand_out(c, k, rms);
	free(rms);
	qr_ol_results(c);
}

/* Free the activation part of a (called by qr_analysis_free). */
void
qr_an_act_free(struct qr_analysis *a)
{
	size_t i;

	free(a->data.why);
	free(a->data.source);
	free(a->data.preprocessing);
	for (i = 0; i < a->data.samples; i++)
		free(a->data.sample_names[i]);
	free(a->data.sample_names);
	for (i = 0; i < a->data.n_skipped; i++) {
		free(a->data.skipped[i].sample);
		free(a->data.skipped[i].why);
	}
	free(a->data.skipped);
	free(a->data.labels);
	for (i = 0; i < a->data.n_classes; i++)
		free(a->data.classes[i]);
	free(a->data.classes);
	for (i = 0; i < a->data.n_warnings; i++)
		free(a->data.warnings[i]);
	free(a->data.warnings);
	for (i = 0; i < a->n_act_tensors; i++) {
		struct qr_act_tensor *t = &a->act_tensors[i];

		free(t->name);
		free(t->layer);
		free(t->op);
		free(t->shape);
		free(t->ch_min);
		free(t->ch_max);
		free(t->ch_mean);
	}
	free(a->act_tensors);
	for (i = 0; i < a->n_act_pairs; i++) {
		free(a->act_pairs[i].quant_tensor);
		free(a->act_pairs[i].quant_dtype);
		free(a->act_pairs[i].match_reason);
	}
	free(a->act_pairs);
	for (i = 0; i < a->n_act_outputs; i++) {
		free(a->act_outputs[i].name);
		free(a->act_outputs[i].quant_name);
		free(a->act_outputs[i].cosine);
		free(a->act_outputs[i].sqnr_db);
		qr_om_result_free(&a->act_outputs[i]);
	}
	free(a->act_outputs);
	for (i = 0; i < a->n_act_unmatched; i++) {
		free(a->act_unmatched[i].tensor);
		free(a->act_unmatched[i].layer);
		free(a->act_unmatched[i].reason);
	}
	free(a->act_unmatched);
	for (i = 0; a->act_runs != NULL && i < a->n_quant; i++) {
		struct qr_act_run *r = &a->act_runs[i];
		size_t j;

		free(r->path);
		free(r->why);
		for (j = 0; j < r->n_worst; j++) {
			free(r->worst[j].trace);
			free(r->worst[j].thumb);
		}
		qr_llm_result_free(r->llm);
	}
	free(a->act_runs);
	qr_ol_free(a);
}
