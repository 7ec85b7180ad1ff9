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

const char *
qr_sens_group_name(int g)
{
	static const char *const names[] = { "elementwise", "sensitive",
		"first_last", "per_channel" };

	return g >= 0 && g < QR_SENS_GROUPS ? names[g] : "?";
}

/* ---- the target ---- */

static const char *const metric_names[] = { "cosine", "sqnr", "top1" };

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

const char *
qr_sens_target_str(const struct qr_sens_target *t, char *buf, size_t n)
{
	snprintf(buf, n, "output.%s>=%.10g", metric_names[t->metric], t->value);
	return buf;
}

/* ---- samples and the float reference ---- */

struct qr_sens_ctx {
	const struct qr_sens_opts *o;
	const struct qr_analysis *a;
	size_t n_s;               /* samples kept */
	struct qr_tensor ***ins;  /* per sample: its inputs (owned) */
	size_t *n_ins;
	struct qr_tensor ***fouts; /* per sample: the float outputs (owned) */
	size_t n_fouts;
	const char *const *fin;   /* the float model's input names */
	size_t n_fin;
	int threads;              /* per op, in each lane */
	int lanes;                /* variants run at once */
	/* per candidate being measured */
	struct qr_as_qparams *oqp; /* per output: the candidate's params */
	size_t runs;              /* model runs */
	/* float layer output sizes, from the float run (MACs) */
	struct qr_strmap layer_at; /* float node name -> index in cur plan */
	size_t *out_elem, *out_ch;
};

static int
macs_hook(const struct qr_node *node, struct qr_tensor *const *outs,
	  size_t n, void *user)
{
	struct qr_sens_ctx *c = user;
	size_t i = qr_strmap_get(&c->layer_at, node->name);
	const struct qr_tensor *t = n > 0 ? outs[0] : NULL;

	if (i == QR_STRMAP_NONE || t == NULL || t->ndim < 1 ||
	    c->out_elem[i] != 0)
		return 0;
	c->out_elem[i] = t->n_elem;
	c->out_ch[i] = (size_t)t->dims[strcmp(node->op_type, "Conv") == 0 ||
				       strcmp(node->op_type, "ConvTranspose")
				       == 0 ? (t->ndim > 1 ? 1 : 0)
					    : t->ndim - 1];
	return 0;
}

static void
exec_opts(const struct qr_sens_ctx *c, struct qr_exec_opts *eo)
{
	memset(eo, 0, sizeof *eo);
	eo->n_threads = c->threads;
	eo->any_order = 1;
	eo->trim_folds = 1;
	eo->views = 1;
}

/* Read up to o->samples samples the float model takes and keep its
 * outputs on them. */
static enum qr_status
read_samples(struct qr_sens_ctx *c, const struct qr_model *fm,
	     struct qr_exec **fe, struct qr_diag *d)
{
	size_t want = c->o->samples ? c->o->samples : QR_SENS_SAMPLES;
	struct qr_exec_opts eo;
	enum qr_status st;

	exec_opts(c, &eo);
	eo.n_threads = c->threads * c->lanes;
	if ((st = qr_exec_new(fm, &eo, fe, d)) != QR_OK)
		return st;
	c->fin = qr_exec_inputs(*fe, &c->n_fin);
	c->ins = xcalloc(want + 1, sizeof *c->ins);
	c->n_ins = xcalloc(want + 1, sizeof *c->n_ins);
	c->fouts = xcalloc(want + 1, sizeof *c->fouts);
	while (c->n_s < want) {
		struct qr_tensor *const *ins;
		struct qr_tensor *const *outs;
		size_t n_ins = 0, i, n_out;
		const char *name = NULL;
		int label;

		st = c->o->next(c->o->user, &ins, &n_ins, &label, &name, d);
		if (st != QR_OK || n_ins == 0)
			break;
		st = qr_exec_run(*fe, ins, n_ins, NULL, NULL, d);
		if (st == QR_ESHAPE) {
			/* the data run skipped it already, with a warning */
			d->status = QR_OK;
			d->msg[0] = '\0';
			st = QR_OK;
			continue;
		}
		if (st != QR_OK)
			break;
		c->ins[c->n_s] = xcalloc(n_ins + 1, sizeof **c->ins);
		for (i = 0; i < n_ins; i++)
			c->ins[c->n_s][i] = qr_tensor_copy(ins[i]);
		c->n_ins[c->n_s] = n_ins;
		outs = qr_exec_outputs(*fe, &n_out);
		c->n_fouts = n_out;
		c->fouts[c->n_s] = xcalloc(n_out + 1, sizeof **c->fouts);
		for (i = 0; i < n_out; i++)
			c->fouts[c->n_s][i] = qr_tensor_copy(outs[i]);
		c->n_s++;
	}
	return st;
}

static void
samples_free(struct qr_sens_ctx *c)
{
	size_t s, i;

	for (s = 0; s < c->n_s; s++) {
		for (i = 0; i < c->n_ins[s]; i++)
			qr_tensor_free(c->ins[s][i]);
		for (i = 0; i < c->n_fouts; i++)
			qr_tensor_free(c->fouts[s][i]);
		free(c->ins[s]);
		free(c->fouts[s]);
	}
	free(c->ins);
	free(c->n_ins);
	free(c->fouts);
}

/* ---- one variant ---- */

/* Output metrics of one run over the samples. */
struct macc {
	struct qr_cmp_acc cmp;
	size_t rows, agree;
	int classifier;
};

static size_t
argmax(const float *v, size_t n)
{
	size_t i, b = 0;

	for (i = 1; i < n; i++)
		if (v[i] > v[b])
			b = i;
	return b;
}

/*
 * Run model m on every sample and compare its graph outputs with the
 * float model's at the same positions: *out gets the lowest mean cosine,
 * SQNR and top-1 agreement over the outputs. Inputs are renamed to m's by
 * position. oqp (may be NULL) dequantizes integer outputs.
 */
static enum qr_status
measure(struct qr_sens_ctx *c, const struct qr_model *m,
	const struct qr_as_qparams *oqp, struct qr_sens_metric *out,
	struct qr_diag *d)
{
	struct qr_exec *e = NULL;
	struct qr_exec_opts eo;
	struct macc *acc = xcalloc(c->n_fouts + 1, sizeof *acc);
	struct qr_tensor *alias = NULL, **ptr = NULL;
	float *buf = NULL;
	size_t cap = 0, s, i, j, nqi;
	enum qr_status st;

	memset(out, 0, sizeof *out);
	exec_opts(c, &eo);
	if ((st = qr_exec_new(m, &eo, &e, d)) != QR_OK)
		goto out;
	for (s = 0; s < c->n_s && st == QR_OK; s++) {
		const char *const *qnames = qr_exec_inputs(e, &nqi);
		struct qr_tensor *const *outs;
		size_t n_out;

		free(alias);
		free(ptr);
		alias = xcalloc(c->n_ins[s] + 1, sizeof *alias);
		ptr = xcalloc(c->n_ins[s] + 1, sizeof *ptr);
		for (i = 0; i < c->n_ins[s]; i++) {
			alias[i] = *c->ins[s][i];
			alias[i].owned = 0;
			for (j = 0; j < c->n_fin && j < nqi; j++)
				if (c->ins[s][i]->name &&
				    strcmp(c->ins[s][i]->name, c->fin[j]) == 0)
					alias[i].name = qnames[j];
			ptr[i] = &alias[i];
		}
		if ((st = qr_exec_run(e, ptr, c->n_ins[s], NULL, NULL, d)) !=
		    QR_OK)
			break;
		outs = qr_exec_outputs(e, &n_out);
		for (i = 0; i < c->n_fouts && i < n_out; i++) {
			const struct qr_tensor *x = c->fouts[s][i];
			const struct qr_tensor *y = outs[i];
			size_t cols;

			if (x->dtype != QR_DT_FLOAT || x->n_elem != y->n_elem)
				continue;
			if (cap < y->n_elem) {
				free(buf);
				cap = y->n_elem;
				buf = xcalloc(cap + 1, sizeof *buf);
			}
			if (!qr_as_to_float(y, oqp ? &oqp[i] : NULL, buf))
				continue;
			qr_cmp_add(&acc[i].cmp, x->data, buf, x->n_elem);
			if (x->ndim == 2 && x->dims[1] > 1) {
				const float *xv = x->data;

				cols = (size_t)x->dims[1];
				acc[i].classifier = 1;
				for (j = 0; j < (size_t)x->dims[0]; j++) {
					acc[i].rows++;
					acc[i].agree += argmax(xv + j * cols,
							       cols) ==
						argmax(buf + j * cols, cols);
				}
			}
		}
	}
	if (st != QR_OK)
		goto out;
	out->cosine = out->sqnr_db = INFINITY;
	out->top1 = NAN;
	for (i = 0; i < c->n_fouts; i++) {
		double cs, sq;

		if (acc[i].cmp.samples == 0)
			continue;
		out->ran = 1;
		cs = qr_cmp_cosine_mean(&acc[i].cmp);
		sq = qr_cmp_sqnr_db(&acc[i].cmp);
		out->cosine = cs < out->cosine ? cs : out->cosine;
		out->sqnr_db = sq < out->sqnr_db ? sq : out->sqnr_db;
		if (acc[i].classifier && acc[i].rows > 0) {
			double t = (double)acc[i].agree / (double)acc[i].rows;

			if (isnan(out->top1) || t < out->top1)
				out->top1 = t;
		}
	}
	if (!out->ran)
		st = qr_errorf(d, QR_ESHAPE, "no graph output could be "
			       "compared with the float model's");
out:
	free(buf);
	free(alias);
	free(ptr);
	free(acc);
	qr_exec_free(e);
	return st;
}

/* ---- variants run side by side ---- */

enum { V_BASE, V_WEIGHTS, V_ACTS, V_KEEP, V_QUANT, V_SET, V_GROUP };

/* A model to build and measure. */
struct variant {
	int kind;                 /* V_* */
	size_t layer;             /* V_KEEP, V_QUANT: the plan's layer;
				   * V_GROUP: the group */
	const unsigned char *set; /* V_SET: layers kept float (borrowed) */
	struct qr_sens_metric *out; /* where the result goes */
	char *why;                /* heap: why it did not run */
};

struct pool {
	struct qr_sens_ctx *c;
	struct qr_hy_plan *p;
	const struct qr_model *qm;
	struct variant *v;
	size_t n, next;
	pthread_mutex_t mu;
};

static struct qr_hy_model *
group_model(const struct qr_hy_plan *p, int g)
{
	size_t n;
	char *why;
	struct qr_hy_model *h = qr_hy_group(p, g, &n, &why);

	free(why);
	return h;
}

/* Build variant v's model (under the pool's lock: building touches the
 * plan). NULL for the candidate as it is. */
static struct qr_hy_model *
build(struct qr_hy_plan *p, const struct variant *v, size_t n)
{
	unsigned char *one = NULL;
	struct qr_hy_model *h = NULL;

	if (v->kind == V_KEEP || v->kind == V_QUANT) {
		one = xcalloc(n + 1, 1);
		one[v->layer] = 1;
	}
	switch (v->kind) {
	case V_WEIGHTS:
		h = qr_hy_quant_only(p, NULL, 0);
		break;
	case V_ACTS:
		h = qr_hy_keep_float(p, NULL, 1);
		break;
	case V_KEEP:
		h = qr_hy_keep_float(p, one, 0);
		break;
	case V_QUANT:
		h = qr_hy_quant_only(p, one, 1);
		break;
	case V_SET:
		h = qr_hy_keep_float(p, v->set, 0);
		break;
	case V_GROUP:
		/* applicability was checked when the variant was made */
		h = group_model(p, (int)v->layer);
		break;
	}
	free(one);
	return h;
}

static void *
pool_work(void *arg)
{
	struct pool *pl = arg;

	for (;;) {
		struct variant *v;
		struct qr_hy_model *h;
		struct qr_diag d = {0};
		const struct qr_model *m;
		int on_float;

		pthread_mutex_lock(&pl->mu);
		if (pl->next == pl->n) {
			pthread_mutex_unlock(&pl->mu);
			break;
		}
		v = &pl->v[pl->next++];
		h = v->kind == V_BASE ? NULL : build(pl->p, v, pl->p->n);
		pthread_mutex_unlock(&pl->mu);
		m = h ? &h->m : pl->qm;
		on_float = v->kind == V_WEIGHTS || v->kind == V_QUANT;
		if (measure(pl->c, m, on_float ? NULL : pl->c->oqp, v->out,
			    &d) != QR_OK) {
			v->why = xstrdup(d.msg[0] ? d.msg : "the run failed");
			v->out->ran = 0;
		}
		qr_diag_clear(&d);
		qr_hy_model_free(h);
	}
	return NULL;
}

/* Measure the n variants v, c->lanes at a time. */
static void
run_variants(struct qr_sens_ctx *c, struct qr_hy_plan *p,
	     const struct qr_model *qm, struct variant *v, size_t n)
{
	struct pool pl = { c, p, qm, v, n, 0, PTHREAD_MUTEX_INITIALIZER };
	pthread_t th;
	int helper = 0;

	if (c->lanes > 1 && n > 1)
		helper = pthread_create(&th, NULL, pool_work, &pl) == 0;
	pool_work(&pl);
	if (helper)
		pthread_join(th, NULL);
	pthread_mutex_destroy(&pl.mu);
	c->runs += n * c->n_s;
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
			"DequantizeLinear.");
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

/* Layers, rankings and every run of candidate k. */
static void
sens_candidate(struct qr_sens_ctx *c, struct qr_analysis *a, size_t k,
	       const struct qr_model *fm, const struct qr_model *qm,
	       struct qr_exec *fe)
{
	struct qr_sens_result *r = &a->sens[k];
	struct qr_graph *fg = NULL, *qg = NULL;
	struct qr_hy_plan *p = NULL;
	struct qr_diag d = {0};
	struct variant *v = NULL;
	size_t *ord = NULL, nv = 0, i, n_meas, nfo = 0;
	double t0 = qr_now();
	size_t runs0 = c->runs;

	r->mode = c->o->mode;
	r->samples = c->n_s;
	if (qr_graph_new(fm, &fg, &d) != QR_OK ||
	    qr_graph_new(qm, &qg, &d) != QR_OK) {
		r->why = xstrdup(d.msg);
		goto out;
	}
	qr_hy_plan_new(a, k, fg, qg, &p);
	r->semantics = semantics(p->format);
	if (p->n == 0) {
		r->why = xstrdup("no quantized layer is paired with a float "
				 "one");
		goto out;
	}
	/* the candidate's output parameters, for integer outputs */
	nfo = qr_graph_model(qg)->graph.n_output;
	c->oqp = xcalloc(nfo + 1, sizeof *c->oqp);
	for (i = 0; i < nfo; i++)
		qr_am_qparams(qg, qr_graph_model(qg)->graph.outputs[i].name,
			      &c->oqp[i]);
	r->n_layers = p->n;
	r->layers = xcalloc(p->n + 1, sizeof *r->layers);
	memset(&c->layer_at, 0, sizeof c->layer_at);
	c->out_elem = xcalloc(p->n + 1, sizeof *c->out_elem);
	c->out_ch = xcalloc(p->n + 1, sizeof *c->out_ch);
	for (i = 0; i < p->n; i++) {
		struct qr_sens_layer *l = &r->layers[i];

		l->layer = xstrdup(p->l[i].layer);
		l->quant_layer = xstrdup(p->l[i].quant_layer);
		l->op = xstrdup(p->l[i].op ? p->l[i].op : "");
		l->depth = p->l[i].depth;
		l->params = p->l[i].fw ? p->l[i].fw->n_elem : 0;
		l->why = p->l[i].why ? xstrdup(p->l[i].why) : NULL;
		qr_strmap_put(&c->layer_at, l->layer, i);
	}
	/* the layers' output sizes (their MACs), from one float run */
	if (c->n_s > 0)
		qr_exec_run(fe, c->ins[0], c->n_ins[0], macs_hook, c, &d);
	for (i = 0; i < p->n; i++)
		if (c->out_ch[i] > 0)
			r->layers[i].macs = c->out_elem[i] *
				(r->layers[i].params / c->out_ch[i]);
	d.status = QR_OK;
	d.msg[0] = '\0';
	local_shares(a, k, p, r);

	/* which layers are measured */
	ord = xcalloc(p->n + 1, sizeof *ord);
	for (i = 0; i < p->n; i++)
		ord[i] = i;
	sort_a = a;
	sort_k = k;
	sort_l = r->layers;
	qsort(ord, p->n, sizeof *ord, cmp_share);
	n_meas = c->o->mode == QR_SENS_FULL ? p->n :
		 p->n < QR_SENS_QUICK_LAYERS ? p->n : QR_SENS_QUICK_LAYERS;

	v = xcalloc(3 + 2 * n_meas + QR_SENS_GROUPS + 1, sizeof *v);
	v[nv++] = (struct variant){ V_BASE, 0, NULL, &r->base, NULL };
	v[nv++] = (struct variant){ V_WEIGHTS, 0, NULL, &r->weights_only,
				    NULL };
	if (p->format == QR_QFMT_QDQ || p->format == QR_QFMT_QOPERATOR ||
	    p->format == QR_QFMT_DYNAMIC)
		v[nv++] = (struct variant){ V_ACTS, 0, NULL, &r->acts_only,
					    NULL };
	for (i = 0; i < n_meas; i++) {
		size_t li = ord[i];

		if (p->l[li].why == NULL)
			v[nv++] = (struct variant){ V_KEEP, li, NULL,
				&r->layers[li].kept_float, NULL };
		if (p->l[li].q != NULL)
			v[nv++] = (struct variant){ V_QUANT, li, NULL,
				&r->layers[li].quant_only, NULL };
	}
	if (c->o->mode == QR_SENS_FULL) {
		/* the group what-ifs: full mode only */
		r->has_groups = 1;
		for (i = 0; i < QR_SENS_GROUPS; i++) {
			struct qr_sens_group *g = &r->groups[i];
			struct qr_hy_model *h = qr_hy_group(p, (int)i,
							    &g->changed,
							    &g->why);

			if (h != NULL)
				v[nv++] = (struct variant){ V_GROUP, i, NULL,
							    &g->m, NULL };
			qr_hy_model_free(h);
		}
	}
	run_variants(c, p, qm, v, nv);
	if (!r->base.ran) {
		r->why = xstrdup(v[0].why ? v[0].why : "the candidate did "
				 "not run");
		goto out;
	}
	if (p->format == QR_QFMT_WEIGHT_ONLY) {
		/* nothing but weights is quantized: activations alone are
		 * the float model */
		r->acts_only.ran = 1;
		r->acts_only.cosine = 1.0;
		r->acts_only.sqnr_db = INFINITY;
		r->acts_only.top1 = isnan(r->base.top1) ? NAN : 1.0;
	}
	for (i = 0; i < nv; i++) {
		if (v[i].why && (v[i].kind == V_KEEP || v[i].kind == V_QUANT) &&
		    r->layers[v[i].layer].why == NULL)
			r->layers[v[i].layer].why = xstrdup(v[i].why);
		if (v[i].why && v[i].kind == V_GROUP)
			r->groups[v[i].layer].why = xstrdup(v[i].why);
	}
	r->verdict = verdict(r);
	r->n_measured = 0;
	for (i = 0; i < p->n; i++)
		r->n_measured += r->layers[i].kept_float.ran ||
				 r->layers[i].quant_only.ran;
	/* fallback before the layers are re-ranked: it refers to the plan's
	 * order */
	qr_fb_search(c, p, qm, r, &c->o->target);
	rerank(r);
	r->ran = 1;
out:
	r->runs = c->runs - runs0;
	r->seconds = qr_now() - t0;
	for (i = 0; i < nv; i++)
		free(v[i].why);
	free(v);
	free(ord);
	if (c->oqp) {
		for (i = 0; i < nfo; i++)
			qr_as_qparams_free(&c->oqp[i]);
		free(c->oqp);
		c->oqp = NULL;
	}
	free(c->out_elem);
	free(c->out_ch);
	c->out_elem = c->out_ch = NULL;
	qr_strmap_free(&c->layer_at);
	qr_hy_plan_free(p);
	qr_graph_free(qg);
	qr_graph_free(fg);
	qr_diag_clear(&d);
}

/* ---- shared with fallback.c ---- */

void
qr_sens_measure_sets(struct qr_sens_ctx *c, struct qr_hy_plan *p,
		     const struct qr_model *qm,
		     const unsigned char *const *sets,
		     struct qr_sens_metric *out, size_t n)
{
	struct variant *v = xcalloc(n + 1, sizeof *v);
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = (struct variant){ V_SET, 0, sets[i], &out[i], NULL };
	run_variants(c, p, qm, v, n);
	for (i = 0; i < n; i++)
		free(v[i].why);
	free(v);
}

int
qr_sens_lanes(const struct qr_sens_ctx *c)
{
	return c->lanes;
}

/* ---- the whole ---- */

enum qr_status
qr_analysis_sensitivity(struct qr_analysis *a, const struct qr_model *fmodel,
			const struct qr_model *const *quant, size_t n_quant,
			const struct qr_sens_opts *o, struct qr_diag *d)
{
	struct qr_sens_ctx c;
	struct qr_exec *fe = NULL;
	enum qr_status st = QR_OK;
	size_t k;

	a->target = o->target;
	if (o->mode == QR_SENS_NONE || n_quant == 0)
		return QR_OK;
	memset(&c, 0, sizeof c);
	c.o = o;
	c.a = a;
	c.lanes = o->n_threads >= 2 ? 2 : 1;
	c.threads = o->n_threads / c.lanes > 0 ? o->n_threads / c.lanes : 1;
	a->sens = xcalloc(n_quant + 1, sizeof *a->sens);
	st = read_samples(&c, fmodel, &fe, d);
	if (st == QR_EUNSUPPORTED || st == QR_EGRAPH) {
		/* the data run said so already */
		for (k = 0; k < n_quant; k++)
			a->sens[k].why = xstrdup(d->msg);
		d->status = QR_OK;
		d->msg[0] = '\0';
		st = QR_OK;
		goto out;
	}
	if (st != QR_OK)
		goto out;
	for (k = 0; k < n_quant; k++) {
		if (c.n_s == 0) {
			a->sens[k].why = xstrdup("no sample ran through the "
						 "float model");
			continue;
		}
		if (a->act_runs && !a->act_runs[k].ran) {
			a->sens[k].why = xstrdup("the candidate did not run");
			continue;
		}
		sens_candidate(&c, a, k, fmodel, quant[k], fe);
	}
out:
	samples_free(&c);
	qr_exec_free(fe);
	return st;
}

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
