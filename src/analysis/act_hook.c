/*
 * act_hook: what the runs' per-node hooks do (act_sched.c runs them).
 * The float run's hook takes each compared float tensor into its sample
 * slot. A candidate run's hook compares each matched tensor with it (the
 * cumulative run: cum, histograms, saturation; the local run: loc) and,
 * in the local run, then overwrites the tensor with the float value in
 * its own domain. Also here: the hook maps (which node output is which
 * tensor), each candidate's pairs, and the comparison of graph outputs.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"

/* See analysis-int.h. */
float *
qr_ar_grow(float **buf, size_t *cap, size_t n)
{
	if (n > *cap) {
		free(*buf);
		*cap = n + n / 4 + 16;
		*buf = xmalloc(*cap * sizeof **buf);
	}
	return *buf;
}

/* Build a CSR map from (node, entry) lists. */
static void
map_build(struct qr_ar_hook_map *m, size_t n_nodes, const size_t *node,
	  const struct qr_ar_hook_ent *ent, size_t n)
{
	size_t i, *fill;

	m->start = xcalloc(n_nodes + 2, sizeof *m->start);
	m->ent = xcalloc(n + 1, sizeof *m->ent);
	m->n_ent = n;
	for (i = 0; i < n; i++)
		m->start[node[i] + 1]++;
	for (i = 0; i < n_nodes; i++)
		m->start[i + 1] += m->start[i];
	fill = xcalloc(n_nodes + 1, sizeof *fill);
	for (i = 0; i < n; i++)
		m->ent[m->start[node[i]] + fill[node[i]]++] = ent[i];
	free(fill);
}

/* Free what m owns. */
void
qr_ar_map_free(struct qr_ar_hook_map *m)
{
	free(m->start);
	free(m->ent);
}

/* See analysis-int.h. */
size_t
qr_ar_ft_find(const struct qr_ar_ctx *c, const char *name)
{
	size_t i = qr_strmap_get(&c->ft_idx, name);

	return i == QR_STRMAP_NONE ? QR_AR_NONE : i;
}

/* The output slot of name in node n. */
static size_t
out_slot(const struct qr_node *n, const char *name)
{
	size_t i;

	for (i = 0; i < n->n_out; i++)
		if (strcmp(n->out[i], name) == 0)
			return i;
	return QR_AR_NONE;
}

/* The float run's hook: take each compared float tensor node makes into
 * the run's slot. */
int
qr_ar_float_hook(const struct qr_node *node, struct qr_tensor *const *outs,
		 size_t n_outs, void *user)
{
	struct qr_ar_hctx *h = user;
	struct qr_ar_ctx *c = h->c;
	size_t ni = (size_t)(node - c->fm->graph.nodes), k;

	for (k = c->fmap.start[ni]; k < c->fmap.start[ni + 1]; k++) {
		const struct qr_ar_hook_ent *e = &c->fmap.ent[k];

		if (e->slot < n_outs && outs[e->slot] != NULL &&
		    qr_ar_ft_take(c, &c->ft[e->pair], h->s, outs[e->slot]))
			qr_ar_ft_ready(c, h->s, e->pair);
	}
	return 0;
}

/* Whether a float tensor of dims fd[fn] and t hold their elements in
 * the same layout: the same dims once the 1s are left out ([1,64] and
 * [64] do; [4,49,96] and [4,7,7,96] do not, though their counts agree:
 * compared element by element they would pair unrelated values). */
static int
same_layout(const int64_t *fd, int fn, const struct qr_tensor *t)
{
	int i = 0, j = 0;

	for (;;) {
		while (i < fn && fd[i] == 1)
			i++;
		while (j < t->ndim && t->dims[j] == 1)
			j++;
		if (i == fn || j == t->ndim)
			return i == fn && j == t->ndim;
		if (fd[i++] != t->dims[j++])
			return 0;
	}
}

/* Compare quant tensor t with its float counterpart: the cumulative run
 * feeds cum, the histograms and saturation; the local run loc only. */
void
qr_ar_compare(struct qr_ar_hctx *h, struct qr_ar_pair *p, struct qr_tensor *t)
{
	struct qr_ar_ftens *f = &h->c->ft[p->ft];
	const float *x = f->buf[h->s];
	size_t n = f->n[h->s];
	float *y;

	if (!f->have[h->s])
		return;
	if (t->n_elem != n || !same_layout(f->dims[h->s], f->ndim[h->s], t)) {
		if (!h->local)
			p->shape_bad = 1;
		return;
	}
	if (h->local) {
		if (t->dtype == QR_DT_FLOAT) {
			qr_cmp_add(&p->loc, x, t->data, n);
			return;
		}
		y = qr_ar_grow(&h->scratch, &h->scratch_cap, n);
		if (qr_as_to_float(t, p->qp.n ? &p->qp : NULL, y))
			qr_cmp_add(&p->loc, x, y, n);
		return;
	}
	p->qdtype = t->dtype;
	if (t->dtype == QR_DT_FLOAT) {
		y = t->data;
	} else {
		y = qr_ar_grow(&h->scratch, &h->scratch_cap, n);
		if (!qr_as_to_float(t, p->qp.n ? &p->qp : NULL, y))
			return;
	}
	qr_cmp_add(&p->cum, x, y, n);
	if (!p->hist_set) {
		qr_as_hist_range(x, y, n, &p->hlo, &p->hhi);
		p->hist_set = 1;
	}
	qr_as_hist_add(p->hlo, p->hhi, p->hf, QR_ACT_HIST_BINS, &p->uf,
		       &p->of, x, n);
	qr_as_hist_add(p->hlo, p->hhi, p->hq, QR_ACT_HIST_BINS, &p->uq,
		       &p->oq, y, n);
	if (p->qp.n) {
		p->sat += qr_as_saturated(&p->qp, x, n, f->dims[h->s],
					  f->ndim[h->s]);
		p->sat_n += n;
	}
}

/* One hook entry: compare, and in the local run put the float value in
 * the candidate's tensor. */
static void
hook_one(struct qr_ar_hctx *h, const struct qr_ar_hook_ent *e,
	 struct qr_tensor *const *outs, size_t n_outs)
{
	struct qr_ar_pair *p = &h->q->pairs[e->pair];
	struct qr_ar_ftens *f = &h->c->ft[p->ft];
	struct qr_tensor *t;

	if (e->slot >= n_outs || (t = outs[e->slot]) == NULL)
		return;
	if (e->also < 0)
		qr_ar_compare(h, p, t);
	if (!h->local || !f->have[h->s] || t->n_elem != f->n[h->s] ||
	    !same_layout(f->dims[h->s], f->ndim[h->s], t))
		return;
	if (e->also < 0)
		qr_as_from_float(t, p->qp.n ? &p->qp : NULL, f->buf[h->s]);
	else
		qr_as_from_float(t, p->also_qp[e->also].n
				 ? &p->also_qp[e->also] : NULL,
				 f->buf[h->s]);
}

/* A candidate run's hook: each hook entry of node, once its float tensor
 * is there (in step). Returns QR_EPARTIAL, which ends the run, when the
 * sample is given up. */
int
qr_ar_cand_hook(const struct qr_node *node, struct qr_tensor *const *outs,
		size_t n_outs, void *user)
{
	struct qr_ar_hctx *h = user;
	struct qr_ar_cand *q = h->q;
	size_t ni = (size_t)(node - q->m->graph.nodes), k;

	for (k = q->map.start[ni]; k < q->map.start[ni + 1]; k++) {
		const struct qr_ar_hook_ent *e = &q->map.ent[k];
		size_t fi = q->pairs[e->pair].ft;

		if (qr_ar_step_wait(h, fi))
			return QR_EPARTIAL;
		hook_one(h, e, outs, n_outs);
		qr_ar_step_read(h, fi);
	}
	return 0;
}

/* ---- setup ---- */

/* The float tensors of every candidate's pairs, in topological order. */
void
qr_ar_collect_ftens(struct qr_ar_ctx *c)
{
	size_t k, i, j;

	for (k = 0; k < c->n_c; k++) {
		for (i = 0; i < c->c[k].am.n; i++) {
			const char *nm = c->c[k].am.pairs[i].f;
			struct qr_ar_ftens *f;

			if (qr_strmap_put(&c->ft_idx, nm, c->n_ft) != c->n_ft)
				continue;
			c->ft = xreallocarray(c->ft, c->n_ft + 1, sizeof *c->ft);
			f = &c->ft[c->n_ft++];
			memset(f, 0, sizeof *f);
			f->name = nm;
			f->node = qr_graph_producer(c->fg, nm);
			f->pos = c->c[k].am.pairs[i].fpos;
		}
	}
	/* insertion sort by position, names breaking ties */
	for (i = 1; i < c->n_ft; i++)
		for (j = i; j > 0 && (c->ft[j - 1].pos > c->ft[j].pos ||
				      (c->ft[j - 1].pos == c->ft[j].pos &&
				       strcmp(c->ft[j - 1].name,
					      c->ft[j].name) > 0)); j--) {
			struct qr_ar_ftens x = c->ft[j];

			c->ft[j] = c->ft[j - 1];
			c->ft[j - 1] = x;
		}
	qr_strmap_free(&c->ft_idx); /* indexed again in the new order */
	for (i = 0; i < c->n_ft; i++)
		qr_strmap_put(&c->ft_idx, c->ft[i].name, i);
	{
		size_t *node = xcalloc(c->n_ft + 1, sizeof *node), n = 0;
		struct qr_ar_hook_ent *ent = xcalloc(c->n_ft + 1, sizeof *ent);

		for (i = 0; i < c->n_ft; i++) {
			const struct qr_node *fn;

			if (c->ft[i].node < 0)
				continue;
			fn = qr_graph_node(c->fg, (size_t)c->ft[i].node);
			node[n] = (size_t)c->ft[i].node;
			ent[n].slot = out_slot(fn, c->ft[i].name);
			ent[n].pair = i;
			ent[n].also = -1;
			n++;
		}
		map_build(&c->fmap, qr_graph_n_nodes(c->fg), node, ent, n);
		free(node);
		free(ent);
	}
}

/* Pairs, hook map and output accumulators of candidate q. */
void
qr_ar_cand_setup(struct qr_ar_ctx *c, struct qr_ar_cand *q)
{
	size_t i, k, n = 0, cap = 16, no;
	size_t *node = xcalloc(cap, sizeof *node);
	struct qr_ar_hook_ent *ent = xcalloc(cap, sizeof *ent);

	q->pairs = xcalloc(q->am.n + 1, sizeof *q->pairs);
	q->pre = xcalloc(q->am.n + 1, sizeof *q->pre);
	for (i = 0; i < q->am.n; i++) {
		const struct qr_am_pair *ap = &q->am.pairs[i];
		struct qr_ar_pair *p = &q->pairs[i];
		long pi;

		p->ft = qr_ar_ft_find(c, ap->f);
		p->am = ap;
		qr_am_qparams(q->g, ap->q, &p->qp);
		p->also_qp = xcalloc(ap->n_also + 1, sizeof *p->also_qp);
		for (k = 0; k <= ap->n_also; k++) {
			const char *nm = k == 0 ? ap->q : ap->also[k - 1];
			const struct qr_node *qn;

			if (k > 0)
				qr_am_qparams(q->g, nm, &p->also_qp[k - 1]);
			pi = qr_graph_producer(q->g, nm);
			if (pi < 0) {
				if (k == 0)
					q->pre[q->n_pre++] = i;
				continue;
			}
			qn = qr_graph_node(q->g, (size_t)pi);
			if (n == cap) {
				cap *= 2;
				node = xreallocarray(node, cap, sizeof *node);
				ent = xreallocarray(ent, cap, sizeof *ent);
			}
			node[n] = (size_t)pi;
			ent[n].slot = out_slot(qn, nm);
			ent[n].pair = i;
			ent[n].also = (long)k - 1;
			n++;
		}
	}
	map_build(&q->map, qr_graph_n_nodes(q->g), node, ent, n);
	q->uses = xcalloc(c->n_ft + 1, sizeof *q->uses);
	for (i = 0; i < n; i++)
		q->uses[q->pairs[ent[i].pair].ft]++;
	for (i = 0; i < q->n_pre; i++)
		q->uses[q->pairs[q->pre[i]].ft]++;
	free(node);
	free(ent);
	no = c->fm->graph.n_output < q->m->graph.n_output
		     ? c->fm->graph.n_output : q->m->graph.n_output;
	q->outs = xcalloc(no + 1, sizeof *q->outs);
	q->n_outs = no;
	for (i = 0; i < no; i++)
		qr_am_qparams(q->g, q->m->graph.outputs[i].name,
			      &q->outs[i].qp);
}

/* See analysis-int.h. */
void
qr_ar_cand_free(struct qr_ar_cand *q)
{
	size_t i, k;

	for (i = 0; q->pairs != NULL && i < q->am.n; i++) {
		qr_as_qparams_free(&q->pairs[i].qp);
		for (k = 0; k < q->am.pairs[i].n_also; k++)
			qr_as_qparams_free(&q->pairs[i].also_qp[k]);
		free(q->pairs[i].also_qp);
	}
	free(q->pairs);
	free(q->undo);
	qr_ws_free(q);
	free(q->pre);
	free(q->uses);
	for (i = 0; i < q->n_outs; i++) {
		free(q->outs[i].cos);
		free(q->outs[i].sqnr);
		qr_as_qparams_free(&q->outs[i].qp);
		qr_llm_acc_free(q->outs[i].llm);
		qr_om_acc_free(q->outs[i].om);
	}
	free(q->outs);
	qr_ar_map_free(&q->map);
	qr_am_free(&q->am);
	if (q->el != q->e)
		qr_exec_free(q->el);
	qr_exec_free(q->e);
	qr_graph_free(q->g);
	free(q->why);
}

/* Compare the candidate's graph outputs with the float model's (kept in
 * slot sl). Cumulative tasks only, in sample order. */
void
qr_ar_compare_outputs(struct qr_ar_cand *q, const struct qr_ar_slot *sl)
{
	size_t nq, i;
	struct qr_tensor *const *qo = qr_exec_outputs(q->e, &nq);
	float *x = NULL, *y = NULL;
	double worst = NAN;

	for (i = 0; i < q->n_outs && i < sl->n_fouts && i < nq; i++) {
		struct qr_ar_outacc *o = &q->outs[i];
		struct qr_cmp_acc one = {0};
		const struct qr_tensor *a = sl->fouts[i], *b = qo[i];

		if (a == NULL || b == NULL || a->n_elem != b->n_elem)
			continue;
		x = xreallocarray(x, a->n_elem + 1, sizeof *x);
		y = xreallocarray(y, a->n_elem + 1, sizeof *y);
		if (!qr_as_to_float(a, NULL, x) ||
		    !qr_as_to_float(b, o->qp.n ? &o->qp : NULL, y))
			continue;
		qr_cmp_add(&one, x, y, a->n_elem);
		qr_cmp_add(&o->total, x, y, a->n_elem);
		if (o->samples == o->cap) {
			o->cap = o->cap ? o->cap * 2 : 32;
			o->cos = xreallocarray(o->cos, o->cap, sizeof *o->cos);
			o->sqnr = xreallocarray(o->sqnr, o->cap,
						sizeof *o->sqnr);
		}
		o->cos[o->samples] = qr_cmp_cosine_mean(&one);
		o->sqnr[o->samples] = qr_cmp_sqnr_db(&one);
		if (isnan(worst) || o->cos[o->samples] < worst)
			worst = o->cos[o->samples];
		o->samples++;
		qr_llm_add(&o->llm, sl, i, x, y);
		qr_om_add(o, sl, i, x, y);
	}
	free(x);
	free(y);
	qr_ws_note(q, sl, worst);
}
