/*
 * sensitivity: what to change in a candidate, measured. Hybrid models
 * (hybrid.c) run on the first few samples and their graph outputs are
 * compared with the float model's: the candidate as it is, with only its
 * weights and with only its activations quantized, and, for each
 * quantized layer, with only that layer kept float and with only that
 * layer quantized. fallback.c then picks the layers to keep float.
 *
 * Each variant is a model of its own: it is built, run on every sample
 * and freed; two variants run side by side (one thread per op each) when
 * there are two cores. The float model's outputs are kept for the
 * samples (outputs only, so memory does not grow with the model's
 * activations).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis-int.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"

/* See analysis.h. */
const char *
qr_sens_group_name(int g)
{
	static const char *const names[] = { "elementwise", "sensitive",
		"first_last", "per_channel" };

	return g >= 0 && g < QR_SENS_GROUPS ? names[g] : "?";
}

/* ---- the target ---- */

static const char *const metric_names[] = { "cosine", "sqnr", "top1" };

/* See analysis.h. */
enum qr_status
qr_sens_target_parse(const char *s, struct qr_sens_target *t,
		     struct qr_diag *d)
{
	const char *p = s;
	char *end;
	size_t i, n;

	if (strncmp(p, "output.", 7) == 0)
		p += 7;
	for (i = 0; i < 3; i++) {
		n = strlen(metric_names[i]);
		if (strncmp(p, metric_names[i], n) == 0 &&
		    (p[n] == '>' || p[n] == ' '))
			break;
	}
	if (i == 3)
		goto bad;
	p += n;
	while (*p == ' ')
		p++;
	if (*p++ != '>')
		goto bad;
	if (*p == '=')
		p++;
	t->metric = (int)i;
	t->value = strtod(p, &end);
	if (end == p || *end != '\0' || !isfinite(t->value))
		goto bad;
	return QR_OK;
bad:
	return qr_errorf(d, QR_EUSAGE, "--target '%s': expected "
			 "output.cosine>=X, output.sqnr>=DB or output.top1>=F",
			 s);
}

/* See analysis.h. */
const char *
qr_sens_target_str(const struct qr_sens_target *t, char *buf, size_t n)
{
	snprintf(buf, n, "output.%s>=%.10g", metric_names[t->metric], t->value);
	return buf;
}

/* ---- ranking ---- */

static int
pass_through(const struct qr_node *n)
{
	static const char *const ops[] = { "BatchNormalization", "Relu",
		"Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish",
		"Tanh", "Identity", NULL };
	size_t i;

	for (i = 0; ops[i]; i++)
		if (strcmp(n->op_type, ops[i]) == 0)
			return 1;
	return 0;
}

/*
 * Each layer's share of the noise the candidate's layers make locally
 * (act_pairs' noise_share of the tensors it produces, a BN or activation
 * after it included), into r->layers[i].local_share; NaN without data.
 */
static void
local_shares(const struct qr_analysis *a, size_t k, const struct qr_hy_plan *p,
	     struct qr_sens_result *r)
{
	struct qr_strmap fidx, lidx;
	size_t i, nf = qr_graph_n_nodes(p->fg);

	memset(&fidx, 0, sizeof fidx);
	memset(&lidx, 0, sizeof lidx);
	for (i = 0; i < nf; i++)
		qr_strmap_put(&fidx, qr_graph_node(p->fg, i)->name, i);
	for (i = 0; i < r->n_layers; i++) {
		qr_strmap_put(&lidx, r->layers[i].layer, i);
		r->layers[i].local_share = a->n_act_pairs ? 0.0 : NAN;
	}
	for (i = 0; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *ap = &a->act_pairs[i];
		const char *lay = a->act_tensors[ap->tensor].layer;
		size_t ni, li, hop;

		if (ap->quant != k || isnan(ap->noise_share))
			continue;
		ni = qr_strmap_get(&fidx, lay);
		for (hop = 0; ni != QR_STRMAP_NONE && hop < 4; hop++) {
			const struct qr_node *n = qr_graph_node(p->fg, ni);
			long pr;

			li = qr_strmap_get(&lidx, n->name);
			if (li != QR_STRMAP_NONE) {
				r->layers[li].local_share += ap->noise_share;
				break;
			}
			if (!pass_through(n) || n->n_in < 1 ||
			    (pr = qr_graph_producer(p->fg, n->in[0])) < 0)
				break;
			ni = (size_t)pr;
		}
	}
	qr_strmap_free(&fidx);
	qr_strmap_free(&lidx);
}

/* The weight SQNR of layer li's pairing (quick's ranking without data). */
static double
weight_sqnr(const struct qr_analysis *a, size_t k, const char *layer)
{
	size_t i;

	for (i = 0; i < a->n_qweights; i++)
		if (a->qweights[i].quant == k &&
		    strcmp(a->qweights[i].layer, layer) == 0)
			return a->qweights[i].sqnr_db;
	return INFINITY;
}

static const struct qr_analysis *sort_a;
static size_t sort_k;
static const struct qr_sens_layer *sort_l;

/* Quick's order: the larger local share first (no data: the lower weight
 * SQNR), then depth. */
static int
cmp_share(const void *x, const void *y)
{
	const struct qr_sens_layer *a = &sort_l[*(const size_t *)x];
	const struct qr_sens_layer *b = &sort_l[*(const size_t *)y];
	double sa = a->local_share, sb = b->local_share;

	if (isnan(sa) || isnan(sb)) {
		sa = -weight_sqnr(sort_a, sort_k, a->layer);
		sb = -weight_sqnr(sort_a, sort_k, b->layer);
	}
	if (sa != sb)
		return sa > sb ? -1 : 1;
	return (a->depth > b->depth) - (a->depth < b->depth);
}

/* The ranking shown: measured layers by the output with it kept float
 * (best first), then by what quantizing it alone costs; then the rest. */
static int
cmp_rank(const void *x, const void *y)
{
	const struct qr_sens_layer *a = x, *b = y;
	double ca = a->kept_float.ran ? a->kept_float.cosine : -INFINITY;
	double cb = b->kept_float.ran ? b->kept_float.cosine : -INFINITY;

	if (a->kept_float.ran != b->kept_float.ran)
		return a->kept_float.ran ? -1 : 1;
	if (ca != cb)
		return ca > cb ? -1 : 1;
	ca = a->quant_only.ran ? a->quant_only.cosine : INFINITY;
	cb = b->quant_only.ran ? b->quant_only.cosine : INFINITY;
	if (ca != cb)
		return ca < cb ? -1 : 1;
	return (a->depth > b->depth) - (a->depth < b->depth);
}

/* Sort r's layers by cmp_rank; the fallback's order follows them. */
static void
rerank(struct qr_sens_result *r)
{
	struct qr_sens_layer *sorted;
	size_t *to = xcalloc(r->n_layers + 1, sizeof *to), i, j;

	sorted = xcalloc(r->n_layers + 1, sizeof *sorted);
	memcpy(sorted, r->layers, r->n_layers * sizeof *sorted);
	qsort(sorted, r->n_layers, sizeof *sorted, cmp_rank);
	/* layer names are unique among a candidate's pairings */
	for (i = 0; i < r->n_layers; i++)
		for (j = 0; j < r->n_layers; j++)
			if (sorted[j].layer == r->layers[i].layer)
				to[i] = j;
	for (i = 0; i < r->fb.n_steps; i++)
		r->fb.order[i] = to[r->fb.order[i]];
	free(r->layers);
	r->layers = sorted;
	free(to);
}

/* ---- one candidate ---- */

static char *
semantics(enum qr_qformat f)
{
	switch (f) {
	case QR_QFMT_QDQ:
		return xstrdup("QDQ: a layer kept float reads the float "
			"model's weight (BatchNormalization folded in when "
			"the candidate folded it) instead of its "
			"DequantizeLinear, and its output skips its "
			"QuantizeLinear/DequantizeLinear pair; its bias stays "
			"the candidate's. Activations alone: every weight "
			"float, every activation pair kept.");
	case QR_QFMT_QOPERATOR:
		return xstrdup("QOperator: a layer kept float becomes "
			"DequantizeLinear -> float Conv/MatMul with the float "
			"model's weight and the candidate's bias dequantized "
			"-> QuantizeLinear with the op's own output scale and "
			"zero point. Activations alone: every such layer so "
			"changed.");
	case QR_QFMT_WEIGHT_ONLY:
		return xstrdup("weight-only: a layer kept float reads the "
			"float model's weight instead of its "
			"DequantizeLinear (a MatMulNBits becomes MatMul). "
			"Quantized alone, a MatMulNBits layer is the "
			"candidate's node at its own accuracy_level; with "
			"the weights alone quantized, at level 0.");
	case QR_QFMT_DYNAMIC:
		return xstrdup("dynamic: a layer kept float computes in float "
			"with the float model's weight on its input as "
			"DynamicQuantizeLinear quantized it (ConvInteger / "
			"MatMulInteger become Conv / MatMul, the scales "
			"applied after as before). Activations alone: every "
			"such layer so changed.");
	default:
		return xasprintf("%s: layers cannot be kept float in this "
				 "format; only layers quantized alone are "
				 "measured", qr_qformat_name(f));
	}
}

/* The one-line verdict from the two one-sided runs. */
static char *
verdict(const struct qr_sens_result *r)
{
	const struct qr_sens_metric *w = &r->weights_only, *x = &r->acts_only;

	if (!w->ran || !x->ran)
		return xstrdup("weights and activations could not both be "
			       "measured alone");
	if (w->cosine < x->cosine)
		return xasprintf("work on the weights: with only them "
				 "quantized the output cosine is %.6f (SQNR "
				 "%.1f dB), with only the activations "
				 "%.6f (%.1f dB)", w->cosine, w->sqnr_db,
				 x->cosine, x->sqnr_db);
	return xasprintf("work on the activations: with only them quantized "
			 "the output cosine is %.6f (SQNR %.1f dB), with only "
			 "the weights %.6f (%.1f dB)", x->cosine, x->sqnr_db,
			 w->cosine, w->sqnr_db);
}

/* The variants of candidate k: weights and activations alone, each of
 * the first n_meas layers of ord kept float and quantized alone, the
 * groups in full mode. New array, *n entries. */
static struct qr_sens_variant *
variants(const struct qr_sens_ctx *c, struct qr_sens_result *r,
	 const size_t *ord, size_t n_meas, size_t *n)
{
	const struct qr_hy_plan *p = c->p;
	struct qr_sens_variant *v = xcalloc(2 + 2 * n_meas + QR_SENS_GROUPS +
					    1, sizeof *v);
	size_t nv = 0, i;

	v[nv].kind = QR_SV_WEIGHTS;
	v[nv++].out = &r->weights_only;
	if (p->format != QR_QFMT_FLOAT) {
		/* weight-only too: measured, not assumed the float model
		 * (what keeps a format's activations is its own) */
		v[nv].kind = QR_SV_ACTS;
		v[nv++].out = &r->acts_only;
	}
	for (i = 0; i < n_meas; i++) {
		size_t li = ord[i];

		if (p->l[li].why == NULL) {
			v[nv].kind = QR_SV_KEEP;
			v[nv].layer = li;
			v[nv++].out = &r->layers[li].kept_float;
		}
		if (p->l[li].q != NULL && c->o->mode == QR_SENS_FULL) {
			v[nv].kind = QR_SV_QUANT;
			v[nv].layer = li;
			v[nv++].out = &r->layers[li].quant_only;
		}
	}
	if (c->o->mode == QR_SENS_FULL) {
		/* the group what-ifs: full mode only */
		r->has_groups = 1;
		for (i = 0; i < QR_SENS_GROUPS; i++) {
			struct qr_sens_group *g = &r->groups[i];
			struct qr_hy_model *h = qr_hy_group(p, (int)i,
							    &g->changed,
							    &g->why);

			if (h != NULL) {
				v[nv].kind = QR_SV_GROUP;
				v[nv].layer = i;
				v[nv++].out = &g->m;
			}
			qr_hy_model_free(h);
		}
	}
	*n = nv;
	return v;
}

/* r's layers from c->p, with what the activation run says of them. */
static void
layers_setup(struct qr_sens_ctx *c, const struct qr_analysis *a, size_t k,
	     struct qr_sens_result *r)
{
	const struct qr_hy_plan *p = c->p;
	size_t i;

	r->n_layers = p->n;
	r->layers = xcalloc(p->n + 1, sizeof *r->layers);
	for (i = 0; i < p->n; i++) {
		struct qr_sens_layer *l = &r->layers[i];

		l->layer = xstrdup(p->l[i].layer);
		l->quant_layer = xstrdup(p->l[i].quant_layer);
		l->op = xstrdup(p->l[i].op ? p->l[i].op : "");
		l->depth = p->l[i].depth;
		l->params = p->l[i].fw ? p->l[i].fw->n_elem : 0;
		l->why = p->l[i].why ? xstrdup(p->l[i].why) : NULL;
	}
	local_shares(a, k, p, r);
}

/* Layers, rankings and every run of candidate k. */
static void
sens_candidate(struct qr_sens_ctx *c, struct qr_analysis *a, size_t k,
	       const struct qr_model *fm, const struct qr_model *qm)
{
	struct qr_sens_result *r = &a->sens[k];
	struct qr_graph *fg = NULL, *qg = NULL;
	struct qr_diag d = {0};
	struct qr_sens_variant *v = NULL;
	size_t *ord = NULL, nv = 0, i, n_meas, nfo = 0, n_on;
	double t0 = qr_now();
	size_t runs0 = c->runs, cut0 = c->cut_runs;

	r->mode = c->o->mode;
	r->samples = c->n_s;
	c->fm = fm;
	c->qm = qm;
	if (qr_graph_new(fm, &fg, &d) != QR_OK ||
	    qr_graph_new(qm, &qg, &d) != QR_OK) {
		r->why = xstrdup(d.msg);
		goto out;
	}
	qr_hy_plan_new(a, k, fg, qg, &c->p);
	r->semantics = semantics(c->p->format);
	if (c->p->n == 0) {
		r->why = xstrdup("no quantized layer is paired with a float "
				 "one");
		goto out;
	}
	/* the candidate's output parameters, for integer outputs */
	nfo = qm->graph.n_output;
	c->oqp = xcalloc(nfo + 1, sizeof *c->oqp);
	for (i = 0; i < nfo; i++)
		qr_am_qparams(qg, qm->graph.outputs[i].name, &c->oqp[i]);
	layers_setup(c, a, k, r);

	/* which layers are measured */
	ord = xcalloc(c->p->n + 1, sizeof *ord);
	for (i = 0; i < c->p->n; i++)
		ord[i] = i;
	sort_a = a;
	sort_k = k;
	sort_l = r->layers;
	qsort(ord, c->p->n, sizeof *ord, cmp_share);
	n_meas = c->o->mode == QR_SENS_FULL ? c->p->n :
		 c->p->n < QR_SENS_QUICK_LAYERS ? c->p->n :
		 QR_SENS_QUICK_LAYERS;
	v = variants(c, r, ord, n_meas, &nv);
	qr_sens_variants_build(c, v, nv);
	qr_sens_variants_want(c, v, nv);
	/* the float model's executor stays for the variants built on it
	 * (which run first) to reuse, when they run side by side; the
	 * candidate's, lighter (its weights are views of its codes),
	 * stays for its own, which a second lane's joins once the float
	 * model's is gone */
	for (i = 0, n_on = 0; i < nv; i++)
		n_on += v[i].h != NULL && v[i].on_float;
	c->fst.parent = n_on >= 2 && c->lanes >= 2;
	c->cst.parent = 1;
	/* the variants built on the float model, then those built on the
	 * candidate: only one base's executors and values are held at a
	 * time */
	if (qr_sens_float_phase(c, v, nv, &r->base, &d) != QR_OK) {
		r->why = xstrdup(d.msg);
		goto out;
	}
	for (i = 0; i < c->p->n; i++)
		r->layers[i].macs = qr_sens_macs(c, r->layers[i].layer,
						 r->layers[i].params);
	/* its outputs stay for the next candidate */
	qr_sp_store_release(&c->fst);
	qr_hy_plan_drop_qw(c->p);
	qr_sens_base_outputs_trim(c, v, nv);
	qr_mem_trim();
	qr_sens_parents(c, v, nv, 0);
	qr_sens_variants_run(c, v, nv, 0);
	for (i = 0; i < nv; i++) {
		if (v[i].why && (v[i].kind == QR_SV_KEEP ||
				 v[i].kind == QR_SV_QUANT) &&
		    r->layers[v[i].layer].why == NULL)
			r->layers[v[i].layer].why = xstrdup(v[i].why);
		if (v[i].why && v[i].kind == QR_SV_GROUP)
			r->groups[v[i].layer].why = xstrdup(v[i].why);
	}
	r->verdict = verdict(r);
	r->n_measured = 0;
	for (i = 0; i < c->p->n; i++)
		r->n_measured += r->layers[i].kept_float.ran ||
				 r->layers[i].quant_only.ran;
	/* fallback before the layers are re-ranked: it refers to the plan's
	 * order */
	qr_fb_search(c, r, &c->o->target);
	rerank(r);
	r->ran = 1;
out:
	r->runs = c->runs - runs0;
	r->cut_runs = c->cut_runs - cut0;
	r->seconds = qr_now() - t0;
	qr_sens_variants_free(v, nv);
	free(ord);
	for (i = 0; c->oqp && i < nfo; i++)
		qr_as_qparams_free(&c->oqp[i]);
	free(c->oqp);
	c->oqp = NULL;
	qr_sp_store_release(&c->fst);
	qr_sp_store_free(&c->cst);
	qr_mem_trim();
	c->fouts = NULL;
	c->n_fouts = 0;
	qr_hy_plan_free(c->p);
	c->p = NULL;
	qr_graph_free(qg);
	qr_graph_free(fg);
	qr_diag_clear(&d);
}

/* ---- the whole ---- */

/* See analysis.h. */
enum qr_status
qr_analysis_sensitivity(struct qr_analysis *a, const struct qr_model *fmodel,
			const struct qr_model *const *quant, size_t n_quant,
			const struct qr_sens_opts *o, struct qr_diag *d)
{
	struct qr_sens_ctx c;
	enum qr_status st = QR_OK;
	size_t k;

	a->target = o->target;
	if (o->mode == QR_SENS_NONE || n_quant == 0)
		return QR_OK;
	memset(&c, 0, sizeof c);
	c.o = o;
	c.lanes = o->n_threads >= 2 ? 2 : 1;
	c.threads = o->n_threads / c.lanes > 0 ? o->n_threads / c.lanes : 1;
	a->sens = xcalloc(n_quant + 1, sizeof *a->sens);
	if ((st = qr_sens_samples_read(&c, fmodel, d)) != QR_OK)
		goto out;
	if (c.n_s > 0 && a->data.why == NULL)
		qr_clm_measure(&c, a, fmodel);
	for (k = 0; k < n_quant; k++) {
		if (c.n_s == 0) {
			a->sens[k].why = xstrdup("no sample to run");
			continue;
		}
		if (a->data.why != NULL) {
			/* the float model did not run on the data */
			a->sens[k].why = xstrdup(a->data.why);
			continue;
		}
		if (a->act_runs && !a->act_runs[k].ran) {
			a->sens[k].why = xstrdup("the candidate did not run");
			continue;
		}
		sens_candidate(&c, a, k, fmodel, quant[k]);
	}
out:
	qr_sp_store_free(&c.fst);
	qr_strmap_free(&c.osz);
	free(c.osz_elem);
	free(c.osz_ch);
	qr_sens_samples_free(&c);
	return st;
}

/* See analysis-int.h. */
void
qr_sens_free(struct qr_analysis *a)
{
	size_t k, i;

	if (a->sens == NULL)
		return;
	for (k = 0; k < a->n_quant; k++) {
		struct qr_sens_result *r = &a->sens[k];

		free(r->why);
		free(r->semantics);
		free(r->verdict);
		for (i = 0; i < r->n_layers; i++) {
			free(r->layers[i].layer);
			free(r->layers[i].quant_layer);
			free(r->layers[i].op);
			free(r->layers[i].why);
		}
		free(r->layers);
		free(r->fb.order);
		free(r->fb.curve);
		for (i = 0; i < QR_SENS_GROUPS; i++)
			free(r->groups[i].why);
	}
	free(a->sens);
	a->sens = NULL;
}
