/*
 * sens_runs: the hybrid runs of the sensitivity analysis. The samples
 * (read once, inputs kept), the float model's and the candidate's runs
 * on them, which keep the values the variants' cuts read
 * (sens_prefix.c), and the variants themselves: each built, cut, run on
 * every sample and its graph outputs compared with the float model's.
 * Two variants run side by side (one thread per op each) when there are
 * two cores.
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

static void
exec_opts(const struct qr_sens_ctx *c, struct qr_exec_opts *eo, int lanes)
{
	memset(eo, 0, sizeof *eo);
	eo->n_threads = c->threads * lanes;
	eo->any_order = 1;
	eo->trim_folds = 1;
	eo->views = 1;
}

/* See analysis-int.h. */
enum qr_status
qr_sens_samples_read(struct qr_sens_ctx *c, const struct qr_model *fm,
		     struct qr_diag *d)
{
	size_t want = c->o->samples ? c->o->samples : QR_SENS_SAMPLES, i;
	const struct qr_graph_data *g = &fm->graph;
	enum qr_status st = QR_OK;

	/* the float model's fed inputs, in graph order (initializers
	 * listed as inputs left out) */
	c->fin = xcalloc(g->n_input + 1, sizeof *c->fin);
	for (i = 0; i < g->n_input; i++) {
		size_t k;
		int init = 0;

		for (k = 0; k < g->n_init && !init; k++)
			init = strcmp(g->inits[k].name, g->inputs[i].name) == 0;
		if (!init)
			c->fin[c->n_fin++] = g->inputs[i].name;
	}
	c->ins = xcalloc(want + 1, sizeof *c->ins);
	c->n_ins = xcalloc(want + 1, sizeof *c->n_ins);
	while (c->n_s < want) {
		struct qr_tensor *const *ins;
		size_t n_ins = 0;
		const char *name = NULL;
		int label;

		st = c->o->next(c->o->user, &ins, &n_ins, &label, &name, d);
		if (st != QR_OK || n_ins == 0)
			break;
		c->ins[c->n_s] = xcalloc(n_ins + 1, sizeof **c->ins);
		for (i = 0; i < n_ins; i++)
			c->ins[c->n_s][i] = qr_tensor_copy(ins[i]);
		c->n_ins[c->n_s++] = n_ins;
	}
	return st;
}

static void
sample_free(struct qr_sens_ctx *c, size_t s)
{
	size_t i;

	for (i = 0; i < c->n_ins[s]; i++)
		qr_tensor_free(c->ins[s][i]);
	free(c->ins[s]);
	c->ins[s] = NULL;
}

/* See analysis-int.h. */
void
qr_sens_samples_free(struct qr_sens_ctx *c)
{
	size_t s;

	for (s = 0; s < c->n_s; s++)
		sample_free(c, s);
	free(c->ins);
	free(c->n_ins);
	free(c->fin);
}

/* Drop the samples a base's store could not take (QR_ESHAPE: the data
 * run skipped them too, with a warning). The candidate's store may be
 * empty (qr_sens_float_base). */
static void
drop_bad(struct qr_sens_ctx *c)
{
	struct qr_sp_store *f = &c->fst, *q = &c->cst;
	int cand = q->outs != NULL;
	size_t s, j = 0;

	for (s = 0; s < c->n_s; s++) {
		if (f->outs[s] == NULL || (cand && q->outs[s] == NULL)) {
			sample_free(c, s);
			qr_sp_store_drop(f, s);
			if (cand)
				qr_sp_store_drop(q, s);
			continue;
		}
		c->ins[j] = c->ins[s];
		c->n_ins[j] = c->n_ins[s];
		f->v[j] = f->v[s];
		f->outs[j] = f->outs[s];
		if (cand) {
			q->v[j] = q->v[s];
			q->outs[j] = q->outs[s];
		}
		j++;
	}
	c->n_s = f->n_s = j;
	if (cand)
		q->n_s = j;
}

/* ---- comparing outputs ---- */

/* One graph output's sums over the samples. */
struct macc {
	struct qr_cmp_acc cmp;
	size_t rows, agree;
	double kl;                /* summed over the rows */
	int classifier;
};

/* Sums of every output of one model. */
struct outcmp {
	struct macc *acc;         /* c->n_fouts */
	float *buf;               /* one output as floats */
	size_t cap;               /* floats in buf */
	double *lp, *lq;          /* one row's log-probabilities, each */
	size_t lcap;              /* doubles in lp and lq */
};

/* 1 when rows x and y (n entries) have their largest entry at the same
 * place (the first of ties). */
static int
same_top1(const float *x, const float *y, size_t n)
{
	size_t k, bx = 0, by = 0;

	for (k = 1; k < n; k++) {
		bx = x[k] > x[bx] ? k : bx;
		by = y[k] > y[by] ? k : by;
	}
	return bx == by;
}

/* Whether float output x of the float model holds rows of scores: a
 * classifier's [N, C], or a decoder's logits [B, S, V] (the output named
 * "logits", or any rank-3 one of a model fed input_ids, as
 * llm_metrics.c finds them). */
static int
scores(const struct qr_sens_ctx *c, const struct qr_tensor *x)
{
	size_t i;

	if (x->ndim == 2)
		return x->dims[1] > 1;
	if (x->ndim != 3 || x->dims[2] < 2)
		return 0;
	if (x->name != NULL && strcmp(x->name, "logits") == 0)
		return 1;
	for (i = 0; i < c->n_fin; i++)
		if (strcmp(c->fin[i], "input_ids") == 0)
			return 1;
	return 0;
}

/* Log-probabilities of a row of n scores: log-softmax, or the logs of a
 * row that is already a distribution (as outputs.c reads them). */
static void
row_logp(const float *x, size_t n, double *out)
{
	if (qr_an_is_distribution(x, n))
		qr_an_log_probs(x, n, out);
	else
		qr_an_log_softmax(x, n, out);
}

/* Add output i of sample s, y (integer ones dequantized with qp, may be
 * NULL), against the float model's. */
static void
cmp_add(struct outcmp *oc, const struct qr_sens_ctx *c, size_t s, size_t i,
	const struct qr_tensor *y, const struct qr_as_qparams *qp)
{
	const struct qr_tensor *x = c->fouts[s][i];
	struct macc *m = &oc->acc[i];
	size_t j, cols;

	if (y == NULL || x->dtype != QR_DT_FLOAT || x->n_elem != y->n_elem)
		return;
	if (oc->cap < y->n_elem) {
		free(oc->buf);
		oc->cap = y->n_elem;
		oc->buf = xcalloc(oc->cap + 1, sizeof *oc->buf);
	}
	if (!qr_as_to_float(y, qp, oc->buf))
		return;
	qr_cmp_add(&m->cmp, x->data, oc->buf, x->n_elem);
	if (scores(c, x)) {
		const float *xv = x->data;

		cols = (size_t)x->dims[x->ndim - 1];
		if (oc->lcap < cols) {
			free(oc->lp);
			free(oc->lq);
			oc->lcap = cols;
			oc->lp = xcalloc(cols, sizeof *oc->lp);
			oc->lq = xcalloc(cols, sizeof *oc->lq);
		}
		m->classifier = 1;
		for (j = 0; j < x->n_elem / cols; j++) {
			m->rows++;
			m->agree += (size_t)same_top1(xv + j * cols,
						      oc->buf + j * cols, cols);
			row_logp(xv + j * cols, cols, oc->lp);
			row_logp(oc->buf + j * cols, cols, oc->lq);
			m->kl += qr_an_kl(oc->lp, oc->lq, cols);
		}
	}
}

/* The lowest mean cosine, SQNR and top-1 agreement over the outputs
 * into *out; QR_ESHAPE when none could be compared. */
static enum qr_status
cmp_result(const struct outcmp *oc, const struct qr_sens_ctx *c,
	   struct qr_sens_metric *out, struct qr_diag *d)
{
	size_t i;

	memset(out, 0, sizeof *out);
	out->cosine = out->sqnr_db = INFINITY;
	out->top1 = out->kl = NAN;
	for (i = 0; i < c->n_fouts; i++) {
		const struct macc *m = &oc->acc[i];
		double cs, sq;

		if (m->cmp.samples == 0)
			continue;
		out->ran = 1;
		cs = qr_cmp_cosine_mean(&m->cmp);
		sq = qr_cmp_sqnr_db(&m->cmp);
		out->cosine = cs < out->cosine ? cs : out->cosine;
		out->sqnr_db = sq < out->sqnr_db ? sq : out->sqnr_db;
		if (m->classifier && m->rows > 0) {
			double t = (double)m->agree / (double)m->rows;
			double kl = m->kl / (double)m->rows;

			if (isnan(out->top1) || t < out->top1)
				out->top1 = t;
			if (isnan(out->kl) || kl > out->kl)
				out->kl = kl;
		}
	}
	if (!out->ran)
		return qr_errorf(d, QR_ESHAPE, "no graph output could be "
				 "compared with the float model's");
	return QR_OK;
}

/* ---- the bases' runs ---- */

static int
size_hook(const struct qr_node *node, struct qr_tensor *const *outs,
	  size_t n, void *user)
{
	struct qr_sens_ctx *c = user;
	const struct qr_tensor *t = n > 0 ? outs[0] : NULL;
	int conv = strcmp(node->op_type, "Conv") == 0 ||
		   strcmp(node->op_type, "ConvTranspose") == 0;

	if (t == NULL || t->ndim < 1 ||
	    qr_strmap_get(&c->osz, node->name) != QR_STRMAP_NONE)
		return 0;
	c->osz_elem = xreallocarray(c->osz_elem, c->n_osz + 1,
				    sizeof *c->osz_elem);
	c->osz_ch = xreallocarray(c->osz_ch, c->n_osz + 1, sizeof *c->osz_ch);
	c->osz_elem[c->n_osz] = t->n_elem;
	c->osz_ch[c->n_osz] = (size_t)t->dims[conv ? (t->ndim > 1 ? 1 : 0)
						   : t->ndim - 1];
	qr_strmap_put(&c->osz, node->name, c->n_osz++);
	return 0;
}

/* See analysis-int.h. */
size_t
qr_sens_macs(const struct qr_sens_ctx *c, const char *name, size_t params)
{
	size_t i = qr_strmap_get(&c->osz, name);

	if (i == QR_STRMAP_NONE || c->osz_ch[i] == 0)
		return 0;
	return c->osz_elem[i] * (params / c->osz_ch[i]);
}

/* One base's store, filled on a thread of its own. */
struct fill_job {
	struct qr_sens_ctx *c;
	struct qr_sp_store *st;
	const struct qr_model *m;
	int lanes;               /* its threads: c->threads times lanes */
	struct qr_diag d;        /* its own: diags are not shared */
	enum qr_status rc;
};

static void *
fill_run(void *arg)
{
	struct fill_job *j = arg;
	struct qr_exec_opts eo;

	exec_opts(j->c, &eo, j->lanes);
	j->st->skip_bad = 1;
	j->rc = qr_sp_store_fill(j->st, j->m, &eo, j->c->ins, j->c->n_ins,
				 j->c->n_s, j->c->fin, j->c->n_fin,
				 QR_SENS_STORE_MAX, &j->d);
	return NULL;
}

/* The stores are filled: their runs counted, the samples a base could
 * not take dropped, c->fouts the float outputs. QR_ESHAPE when no
 * sample ran through what (the models). */
static enum qr_status
filled(struct qr_sens_ctx *c, const char *what, struct qr_diag *d)
{
	c->runs += c->n_s;
	drop_bad(c);
	c->fouts = c->fst.outs;
	c->n_fouts = c->fst.n_outs;
	if (c->n_s == 0)
		return qr_errorf(d, QR_ESHAPE, "no sample ran through %s",
				 what);
	return QR_OK;
}

/* The candidate's outputs against the float model's into *base. */
static enum qr_status
base_metric(struct qr_sens_ctx *c, struct qr_sens_metric *base,
	    struct qr_diag *d)
{
	struct outcmp oc = { 0 };
	enum qr_status st;
	size_t s, i;

	oc.acc = xcalloc(c->n_fouts + 1, sizeof *oc.acc);
	for (s = 0; s < c->n_s; s++)
		for (i = 0; i < c->n_fouts && i < c->cst.n_outs; i++)
			cmp_add(&oc, c, s, i, c->cst.outs[s][i], &c->oqp[i]);
	st = cmp_result(&oc, c, base, d);
	free(oc.acc);
	free(oc.buf);
	free(oc.lp);
	free(oc.lq);
	return st;
}

/* Whether the float model's store as it is serves the variants built on
 * it: it kept its outputs, and they read nothing else of it nor want its
 * executor (qr_sens_float_phase). */
static int
float_kept(const struct qr_sens_ctx *c, const struct qr_sens_variant *v,
	   size_t n)
{
	size_t i;

	if (c->fst.outs == NULL || c->fst.parent)
		return 0;
	for (i = 0; i < n; i++)
		if (v[i].on_float && v[i].cut != NULL)
			return 0;
	return 1;
}

/* Free the models of the variants built on the float model. */
static void
float_models_free(struct qr_sens_variant *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].on_float) {
			qr_sp_cut_free(v[i].cut);
			qr_hy_model_free(v[i].h);
			v[i].cut = NULL;
			v[i].h = NULL;
		}
}

/* See analysis-int.h. */
enum qr_status
qr_sens_float_phase(struct qr_sens_ctx *c, struct qr_sens_variant *v,
		    size_t n, struct qr_sens_metric *base, struct qr_diag *d)
{
	struct fill_job jf = { c, &c->fst, c->fm, 1, { 0 }, QR_OK };
	struct fill_job jq = { c, &c->cst, c->qm, 1, { 0 }, QR_OK };
	enum qr_status st;
	pthread_t th;
	size_t n_s = c->n_s;
	int helper, kept = float_kept(c, v, n);

	if (!kept) {
		/* both stores, side by side, then the variants */
		int parent = c->fst.parent;

		qr_sp_store_free(&c->fst);
		c->fst.parent = parent;
		c->fst.hook = size_hook;
		c->fst.user = c;
		qr_sens_variants_want(c, v, n);
		helper = c->lanes > 1 &&
			 pthread_create(&th, NULL, fill_run, &jf) == 0;
		if (!helper)
			fill_run(&jf);
		fill_run(&jq);
	} else {
		/* the candidate's store beside the variants: they need
		 * only the float outputs, kept from an earlier fill */
		c->fouts = c->fst.outs;
		c->n_fouts = c->fst.n_outs;
		helper = c->lanes > 1 &&
			 pthread_create(&th, NULL, fill_run, &jq) == 0;
		if (!helper)
			fill_run(&jq);
		c->busy_lane = helper;
		c->keep_models = 1;
		qr_sens_variants_run(c, v, n, 1);
		c->busy_lane = c->keep_models = 0;
	}
	if (helper)
		pthread_join(th, NULL);
	st = jf.rc != QR_OK ? qr_errorf(d, jf.rc, "%s", jf.d.msg) :
	     jq.rc != QR_OK ? qr_errorf(d, jq.rc, "%s", jq.d.msg) : QR_OK;
	qr_diag_clear(&jf.d);
	qr_diag_clear(&jq.d);
	if (st == QR_OK)
		st = filled(c, kept ? "the candidate" : "both the float model "
			    "and the candidate", d);
	if (st == QR_OK)
		st = base_metric(c, base, d);
	if (st == QR_OK && (!kept || c->n_s != n_s))
		/* first, or again on the samples the candidate took */
		qr_sens_variants_run(c, v, n, 1);
	float_models_free(v, n);
	return st;
}

/* See analysis-int.h. */
enum qr_status
qr_sens_float_base(struct qr_sens_ctx *c, struct qr_diag *d)
{
	struct fill_job jf = { c, &c->fst, c->fm, c->lanes, { 0 }, QR_OK };
	enum qr_status st;

	/* alone: every thread (no executor is kept for variants to
	 * share, which would want one lane's) */
	c->fst.parent = 0;
	c->fst.hook = size_hook;
	c->fst.user = c;
	fill_run(&jf);
	st = jf.rc != QR_OK ? qr_errorf(d, jf.rc, "%s", jf.d.msg) : QR_OK;
	qr_diag_clear(&jf.d);
	return st != QR_OK ? st : filled(c, "the float model", d);
}

/* ---- one variant ---- */

/* The samples v runs on. */
static size_t
samples(const struct qr_sens_ctx *c, const struct qr_sens_variant *v)
{
	return v->n_s > 0 && v->n_s < c->n_s ? v->n_s : c->n_s;
}

/*
 * Run variant v on every sample: its cut fed with its base's values, or
 * the whole model fed with the inputs (renamed to its own by position),
 * and compare its graph outputs with the float model's into v->out.
 */
static enum qr_status
measure(struct qr_sens_ctx *c, struct qr_sens_variant *v,
	const struct qr_exec *parent, int wide, struct qr_diag *d)
{
	const struct qr_sp_store *bst = v->on_float ? &c->fst : &c->cst;
	const struct qr_model *m = v->cut ? &v->cut->m : &v->h->m;
	const struct qr_as_qparams *qp = v->on_float ? NULL : c->oqp;
	struct qr_exec *e = NULL;
	struct qr_exec_opts eo;
	struct outcmp oc = { 0 };
	struct qr_tensor *alias = NULL, **ptr = NULL;
	size_t s, i, j, n_in, nqi, n_out, n_full;
	enum qr_status st;

	exec_opts(c, &eo, wide ? c->lanes : 1);
	eo.reuse = parent;
	oc.acc = xcalloc(c->n_fouts + 1, sizeof *oc.acc);
	if ((st = qr_exec_new(m, &eo, &e, d)) != QR_OK)
		goto out;
	n_full = v->h->m.graph.n_output;
	for (s = 0; s < samples(c, v) && st == QR_OK; s++) {
		const char *const *qn = qr_exec_inputs(e, &nqi);
		struct qr_tensor *const *outs;

		n_in = v->cut ? v->cut->n_front : c->n_ins[s];
		free(alias);
		free(ptr);
		alias = xcalloc(n_in + 1, sizeof *alias);
		ptr = xcalloc(n_in + 1, sizeof *ptr);
		for (i = 0; i < n_in; i++) {
			if (v->cut) {
				alias[i] = *qr_sp_store_get(bst, s,
							v->cut->front[i]);
			} else {
				alias[i] = *c->ins[s][i];
				for (j = 0; j < c->n_fin && j < nqi; j++)
					if (c->ins[s][i]->name &&
					    strcmp(c->ins[s][i]->name,
						   c->fin[j]) == 0)
						alias[i].name = qn[j];
			}
			alias[i].owned = 0;
			ptr[i] = &alias[i];
		}
		if ((st = qr_exec_run(e, ptr, n_in, NULL, NULL, d)) != QR_OK)
			break;
		outs = qr_exec_outputs(e, &n_out);
		for (i = 0; i < c->n_fouts && i < n_full; i++) {
			const struct qr_tensor *y;

			if (v->cut == NULL)
				y = i < n_out ? outs[i] : NULL;
			else if (v->cut->out_of[i] >= 0)
				y = outs[v->cut->out_of[i]];
			else
				y = i < bst->n_outs ? bst->outs[s][i] : NULL;
			cmp_add(&oc, c, s, i, y, qp ? &qp[i] : NULL);
		}
	}
	if (st == QR_OK)
		st = cmp_result(&oc, c, v->out, d);
out:
	free(alias);
	free(ptr);
	free(oc.acc);
	free(oc.buf);
	free(oc.lp);
	free(oc.lq);
	qr_exec_free(e);
	return st;
}

/* ---- variants ---- */

/* v's model (touches the plan: one thread at a time). */
static struct qr_hy_model *
build(struct qr_hy_plan *p, const struct qr_sens_variant *v)
{
	unsigned char *one = NULL;
	struct qr_hy_model *h = NULL;
	size_t n;
	char *why = NULL;

	if (v->kind == QR_SV_KEEP || v->kind == QR_SV_QUANT) {
		one = xcalloc(p->n + 1, 1);
		one[v->layer] = 1;
	}
	switch (v->kind) {
	case QR_SV_WEIGHTS:
		h = qr_hy_quant_only(p, NULL, 0);
		break;
	case QR_SV_ACTS:
		h = qr_hy_keep_float(p, NULL, 1);
		break;
	case QR_SV_KEEP:
		h = qr_hy_keep_float(p, one, 0);
		break;
	case QR_SV_QUANT:
		h = qr_hy_quant_only(p, one, 1);
		break;
	case QR_SV_SET:
		h = qr_hy_keep_float(p, v->set, 0);
		break;
	case QR_SV_GROUP:
		h = qr_hy_group(p, (int)v->layer, &n, &why);
		free(why);
		break;
	}
	free(one);
	return h;
}

/* See analysis-int.h. */
void
qr_sens_variants_build(struct qr_sens_ctx *c, struct qr_sens_variant *v,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		v[i].on_float = v[i].kind == QR_SV_WEIGHTS ||
				v[i].kind == QR_SV_QUANT;
		v[i].h = build(c->p, &v[i]);
		if (v[i].h != NULL)
			v[i].cut = qr_sp_cut_new(&v[i].h->m, v[i].on_float ?
						 c->p->fg : c->p->qg);
	}
}

/* See analysis-int.h. */
void
qr_sens_variants_want(struct qr_sens_ctx *c, const struct qr_sens_variant *v,
		      size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		qr_sp_store_want(v[i].on_float ? &c->fst : &c->cst, v[i].cut);
}

/*
 * The variants, taken by the lanes. A variant's executor takes the
 * prepared steps (packed and Winograd weights) of every node it shares
 * with its base from the base store's executor (opts.reuse), which one
 * variant at a time may use. A lane takes, in order, the first variant
 * left that runs a cut while a whole model runs on the other lane (two
 * whole models at once hold two sets of new weights), and of those the
 * first whose base's executor is free, else the first, built without
 * it.
 */
struct pool {
	struct qr_sens_ctx *c;
	struct qr_sens_variant *v;
	size_t n;
	size_t *order;            /* the variants, the costliest first */
	unsigned char *taken;     /* per variant: a lane took it */
	const struct qr_exec *par[2][2]; /* the float model's (0) and the
				   * candidate's (1) executors, NULL where
				   * there is none */
	int busy[2][2];           /* that executor is in use */
	int whole;                /* whole models running */
	int wide;                 /* one lane, with every thread */
	pthread_mutex_t mu;
};

/* The next variant for a lane (pl->mu held), or NULL; *b gets the
 * executor it may use (base * 2 + slot), -1 for none. */
static struct qr_sens_variant *
pool_pick(struct pool *pl, int *b)
{
	struct qr_sens_variant *first = NULL;
	size_t i;
	int pass, k;

	*b = -1;
	for (pass = pl->whole > 0 ? 0 : 1; pass < 2 && first == NULL; pass++)
		for (i = 0; i < pl->n; i++) {
			struct qr_sens_variant *v = &pl->v[pl->order[i]];
			int bi = v->on_float ? 0 : 1;

			if (pl->taken[pl->order[i]] || v->skip ||
			    (pass == 0 && v->cut == NULL))
				continue;
			if (first == NULL)
				first = v;
			for (k = 0; k < 2; k++)
				if (pl->par[bi][k] && !pl->busy[bi][k]) {
					*b = bi * 2 + k;
					return v;
				}
		}
	return first;
}

/* What running v costs, roughly: the nodes it runs, QuantizeLinear and
 * DequantizeLinear left out (a QDQ model has two or three a layer, and
 * they cost little). */
static size_t
cost(const struct qr_sens_variant *v)
{
	const struct qr_graph_data *g = v->h == NULL ? NULL : v->cut ?
		&v->cut->m.graph : &v->h->m.graph;
	size_t i, n = 0;

	for (i = 0; g != NULL && i < g->n_node; i++)
		n += strcmp(g->nodes[i].op_type, "QuantizeLinear") != 0 &&
		     strcmp(g->nodes[i].op_type, "DequantizeLinear") != 0;
	return n;
}

static const size_t *sort_cost;

/* The costlier first, then in the given order. */
static int
cmp_cost(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	if (sort_cost[a] != sort_cost[b])
		return sort_cost[a] > sort_cost[b] ? -1 : 1;
	return (a > b) - (a < b);
}

static void *
pool_work(void *arg)
{
	struct pool *pl = arg;
	struct qr_sens_ctx *c = pl->c;

	for (;;) {
		struct qr_sens_variant *v;
		const struct qr_exec *parent = NULL;
		struct qr_diag d = {0};
		int b;

		pthread_mutex_lock(&pl->mu);
		v = pool_pick(pl, &b);
		if (v == NULL) {
			pthread_mutex_unlock(&pl->mu);
			break;
		}
		pl->taken[v - pl->v] = 1;
		pl->whole += v->cut == NULL;
		if (b >= 0) {
			pl->busy[b / 2][b % 2] = 1;
			parent = pl->par[b / 2][b % 2];
		}
		pthread_mutex_unlock(&pl->mu);
		if (v->h == NULL) {
			v->why = xstrdup("the model could not be built");
		} else if (measure(c, v, parent, pl->wide, &d) != QR_OK) {
			v->why = xstrdup(d.msg[0] ? d.msg : "the run failed");
			v->out->ran = 0;
		}
		qr_diag_clear(&d);
		pthread_mutex_lock(&pl->mu);
		if (b >= 0)
			pl->busy[b / 2][b % 2] = 0;
		pl->whole -= v->cut == NULL;
		pthread_mutex_unlock(&pl->mu);
		/* done with: its model goes now, not with the rest */
		if (!c->keep_models) {
			qr_sp_cut_free(v->cut);
			qr_hy_model_free(v->h);
			v->cut = NULL;
			v->h = NULL;
		}
	}
	return NULL;
}

/* See analysis-int.h. */
void
qr_sens_variants_run(struct qr_sens_ctx *c, struct qr_sens_variant *v,
		     size_t n, int on)
{
	struct pool pl = { c, v, n, NULL, NULL, { { NULL, NULL },
			   { NULL, NULL } }, { { 0, 0 }, { 0, 0 } }, 0, 0,
			   PTHREAD_MUTEX_INITIALIZER };
	size_t *costs, n_run = 0;
	pthread_t th;
	size_t i, k;
	int helper = 0;

	/* only the executors of the base that runs (the other's store may
	 * be filling beside) */
	if (on != 0) {
		pl.par[0][0] = c->fst.e;
		pl.par[0][1] = c->fst.e2;
	}
	if (on != 1) {
		pl.par[1][0] = c->cst.e;
		pl.par[1][1] = c->cst.e2;
	}
	/* a cut runs only when its base's store holds what it reads; its
	 * inputs then take their dtypes */
	for (i = 0; i < n; i++) {
		const struct qr_sp_store *bst = v[i].on_float ? &c->fst
							      : &c->cst;

		v[i].skip = on >= 0 && v[i].on_float != on;
		if (v[i].skip)
			continue;
		n_run++;
		if (v[i].cut && !qr_sp_store_covers(bst, v[i].cut)) {
			qr_sp_cut_free(v[i].cut);
			v[i].cut = NULL;
		}
		for (k = 0; v[i].cut && k < v[i].cut->n_front; k++)
			v[i].cut->ins[k].dtype = qr_sp_store_get(bst, 0,
				v[i].cut->front[k])->dtype;
		c->cut_runs += v[i].cut ? samples(c, &v[i]) : 0;
		c->runs += samples(c, &v[i]);
	}
	/* the longest first, so that the lanes end together */
	pl.taken = xcalloc(n + 1, 1);
	pl.order = xcalloc(n + 1, sizeof *pl.order);
	costs = xcalloc(n + 1, sizeof *costs);
	for (i = 0; i < n; i++) {
		pl.order[i] = i;
		costs[i] = cost(&v[i]);
	}
	sort_cost = costs;
	qsort(pl.order, n, sizeof *pl.order, cmp_cost);
	free(costs);
	/* fewer variants than lanes, or each holding its own copy of most
	 * weights: one at a time, every thread on each op (executors
	 * prepared for one thread are then not reused) */
	pl.wide = c->lanes > 1 && !c->busy_lane &&
		  (n_run < (size_t)c->lanes || c->one_lane);
	if (c->lanes > 1 && !pl.wide && !c->busy_lane)
		helper = pthread_create(&th, NULL, pool_work, &pl) == 0;
	pool_work(&pl);
	if (helper)
		pthread_join(th, NULL);
	pthread_mutex_destroy(&pl.mu);
	free(pl.taken);
	free(pl.order);
	for (i = 0; i < n; i++)
		v[i].skip = 0;
	qr_mem_trim();
}

/* See analysis-int.h. */
void
qr_sens_base_outputs_trim(struct qr_sens_ctx *c,
			  const struct qr_sens_variant *v, size_t n)
{
	unsigned char *need = xcalloc(c->cst.n_outs + 1, 1);
	size_t i, k, s;

	/* a set's cut holds every node its layers' cuts hold: what none
	 * of them reads from the candidate's run, none of the fallback's
	 * sets reads either */
	for (i = 0; i < n; i++) {
		if (v[i].on_float || v[i].cut == NULL ||
		    !qr_sp_store_covers(&c->cst, v[i].cut))
			continue; /* runs whole */
		for (k = 0; k < c->cst.n_outs; k++)
			need[k] |= v[i].cut->out_of[k] < 0;
	}
	for (s = 0; s < c->n_s; s++)
		for (k = 0; c->cst.outs[s] && k < c->cst.n_outs; k++)
			if (!need[k]) {
				qr_tensor_free(c->cst.outs[s][k]);
				c->cst.outs[s][k] = NULL;
			}
	free(need);
}

/* See analysis-int.h. */
void
qr_sens_parents(struct qr_sens_ctx *c, const struct qr_sens_variant *v,
		size_t n, int on)
{
	struct qr_sp_store *st = on ? &c->fst : &c->cst;
	struct qr_exec_opts eo;
	struct qr_diag d = {0};
	size_t i, want = 0;

	for (i = 0; i < n; i++)
		want += v[i].h != NULL && v[i].on_float == on;
	/* a lone variant runs wide: a parent for one thread is no use */
	want = want < 2 || c->one_lane ? 0 : want < (size_t)c->lanes ? want
					   : (size_t)c->lanes;
	exec_opts(c, &eo, 1);
	/* none is not an error: the variants prepare their own */
	if (want > 0 && st->e == NULL &&
	    qr_exec_new(on ? c->fm : c->qm, &eo, &st->e, &d) != QR_OK)
		st->e = NULL;
	qr_diag_clear(&d);
	if (want > 1 && st->e2 == NULL &&
	    qr_exec_new(on ? c->fm : c->qm, &eo, &st->e2, &d) != QR_OK)
		st->e2 = NULL;
	qr_diag_clear(&d);
}

/* See analysis-int.h. */
void
qr_sens_variants_free(struct qr_sens_variant *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		qr_sp_cut_free(v[i].cut);
		qr_hy_model_free(v[i].h);
		free(v[i].why);
	}
	free(v);
}

/* See analysis-int.h. */
void
qr_sens_measure_sets(struct qr_sens_ctx *c, const unsigned char *const *sets,
		     struct qr_sens_metric *out, size_t n)
{
	struct qr_sens_variant *v = xcalloc(n + 1, sizeof *v);
	size_t i;

	for (i = 0; i < n; i++) {
		v[i].kind = QR_SV_SET;
		v[i].set = sets[i];
		v[i].out = &out[i];
	}
	qr_sens_variants_build(c, v, n);
	qr_sens_variants_run(c, v, n, -1);
	qr_sens_variants_free(v, n);
}

/* See analysis-int.h. */
int
qr_sens_lanes(const struct qr_sens_ctx *c)
{
	return c->lanes;
}
