/*
 * sens_prefix: a hybrid run that does not recompute what does not change.
 *
 * A hybrid model (hybrid.c) differs from its base (the candidate, or the
 * float model) in a few nodes; every node before them computes what the
 * base computes on the same sample. The cut of a hybrid model keeps only
 * the nodes its edits reach: the changed nodes, every node reading
 * (transitively) what they write, and the nodes computing constants
 * those read (a weight's DequantizeLinear: folded at load as in the whole
 * model). What the cut reads from the rest is its frontier: it becomes
 * the cut's graph inputs, fed with the base's values on each sample,
 * kept by one run of the base per sample (a store). A graph output the
 * cut does not compute is the base's.
 *
 * A node is unchanged when the base has a node writing its first output
 * with the same op, inputs, outputs and attributes: hybrid models copy
 * the base's nodes and give every tensor they add a name of their own,
 * so equal names are equal values.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis-int.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"

static int
same_node(const struct qr_node *a, const struct qr_node *b)
{
	size_t i;

	if (strcmp(a->op_type, b->op_type) || strcmp(a->domain, b->domain) ||
	    a->n_in != b->n_in || a->n_out != b->n_out ||
	    a->n_attr != b->n_attr || a->attrs != b->attrs)
		return 0;
	for (i = 0; i < a->n_in; i++)
		if (strcmp(a->in[i], b->in[i]))
			return 0;
	for (i = 0; i < a->n_out; i++)
		if (strcmp(a->out[i], b->out[i]))
			return 0;
	return 1;
}

/* 1 when node i is a DequantizeLinear of a computed value whose other
 * inputs are constants. */
static int
dq_of_activation(const struct qr_graph *hg, size_t i)
{
	const struct qr_node *n = qr_graph_node(hg, i);
	size_t k, n_outer;

	if (strcmp(n->op_type, "DequantizeLinear") != 0 || n->n_in < 1 ||
	    n->in[0][0] == '\0' || qr_graph_const(hg, n->in[0]) != NULL)
		return 0;
	qr_graph_outer_uses(hg, i, &n_outer);
	if (n_outer != 0)
		return 0;
	for (k = 1; k < n->n_in; k++)
		if (n->in[k][0] && qr_graph_const(hg, n->in[k]) == NULL)
			return 0;
	return 1;
}

/* Mark node i's reads that no cut node writes and that are not
 * constants as frontier names (once each). */
static void
add_reads(const struct qr_graph *hg, const unsigned char *cut, size_t i,
	  struct qr_strmap *seen, struct qr_sp_cut *c)
{
	const struct qr_node *n = qr_graph_node(hg, i);
	const char *const *outer;
	size_t k, n_outer;

	outer = qr_graph_outer_uses(hg, i, &n_outer);
	for (k = 0; k < n->n_in + n_outer; k++) {
		const char *t = k < n->n_in ? n->in[k] : outer[k - n->n_in];
		long p;

		if (t[0] == '\0' || qr_graph_const(hg, t) != NULL ||
		    qr_strmap_get(seen, t) != QR_STRMAP_NONE)
			continue;
		p = qr_graph_producer(hg, t);
		if (p >= 0 && cut[p])
			continue;
		qr_strmap_put(seen, t, c->n_front);
		c->front = xreallocarray(c->front, c->n_front + 1,
					 sizeof *c->front);
		c->front[c->n_front++] = t;
	}
}

/*
 * The cut of hybrid model h against its base (bg, the base's graph
 * index): a new cut freed with qr_sp_cut_free, or NULL when every node
 * is reached (nothing to reuse) or h's graph does not index. The cut
 * borrows h, which must outlive it.
 */
struct qr_sp_cut *
qr_sp_cut_new(const struct qr_model *h, const struct qr_graph *bg)
{
	struct qr_graph *hg = NULL;
	struct qr_sp_cut *c = NULL;
	struct qr_strmap seen;
	unsigned char *cut = NULL, *cc = NULL;
	const size_t *order;
	size_t n, i, j, k, n_cut = 0;
	const struct qr_graph_data *g = &h->graph;

	memset(&seen, 0, sizeof seen);
	if (qr_graph_new(h, &hg, NULL) != QR_OK)
		goto out;
	n = qr_graph_n_nodes(hg);
	order = qr_graph_topo_order(hg);
	cut = xcalloc(n + 1, 1);
	cc = xcalloc(n + 1, 1);
	/* in topological order: changed, or reading what a cut node
	 * writes; computable from constants alone */
	for (j = 0; j < n; j++) {
		const struct qr_node *nd = qr_graph_node(hg, order[j]);
		long bp = qr_graph_producer(bg, nd->out[0]);
		int all_const = 1;

		cut[order[j]] = bp < 0 ||
			!same_node(nd, qr_graph_node(bg, (size_t)bp));
		for (k = 0; k < nd->n_in; k++) {
			long p = nd->in[k][0] ? qr_graph_producer(hg,
								  nd->in[k])
					      : -1;

			if (p >= 0 && cut[p])
				cut[order[j]] = 1;
			if (nd->in[k][0] && qr_graph_const(hg, nd->in[k]) ==
			    NULL && !(p >= 0 && cc[p]))
				all_const = 0;
		}
		{
			size_t n_outer;

			qr_graph_outer_uses(hg, order[j], &n_outer);
			cc[order[j]] = all_const && n_outer == 0;
		}
	}
	/* the constant producers cut nodes read, latest first; and a
	 * DequantizeLinear of an activation with constant parameters: in
	 * the cut, the store keeps its integer input, a quarter of the
	 * bytes, and the cut computes the same floats from it */
	for (j = n; j-- > 0;) {
		const struct qr_node *nd = qr_graph_node(hg, order[j]);

		if (!cut[order[j]])
			continue;
		for (k = 0; k < nd->n_in; k++) {
			long p = nd->in[k][0] ? qr_graph_producer(hg,
								  nd->in[k])
					      : -1;

			if (p >= 0 && (cc[p] || dq_of_activation(hg,
								 (size_t)p)))
				cut[p] = 1;
		}
	}
	for (i = 0; i < n; i++)
		n_cut += cut[i];
	if (n_cut == n)
		goto out;
	c = xcalloc(1, sizeof *c);
	c->m = *h;
	c->nodes = xcalloc(n_cut + 1, sizeof *c->nodes);
	c->m.graph.n_node = 0;
	for (j = 0; j < n; j++)
		if (cut[order[j]]) {
			c->nodes[c->m.graph.n_node++] =
				*qr_graph_node(hg, order[j]);
			add_reads(hg, cut, order[j], &seen, c);
		}
	c->m.graph.nodes = c->nodes;
	c->ins = xcalloc(c->n_front + 1, sizeof *c->ins);
	for (i = 0; i < c->n_front; i++) {
		c->ins[i].name = c->front[i];
		c->ins[i].dtype = QR_DT_UNDEFINED;
		c->ins[i].ndim = -1;
	}
	c->m.graph.inputs = c->ins;
	c->m.graph.n_input = c->n_front;
	c->m.graph.value_info = NULL;
	c->m.graph.n_value_info = 0;
	c->out_of = xcalloc(g->n_output + 1, sizeof *c->out_of);
	c->outs = xcalloc(g->n_output + 1, sizeof *c->outs);
	c->m.graph.outputs = c->outs;
	c->m.graph.n_output = 0;
	for (i = 0; i < g->n_output; i++) {
		long p = qr_graph_producer(hg, g->outputs[i].name);

		c->out_of[i] = -1;
		if (p >= 0 && cut[p]) {
			c->out_of[i] = (long)c->m.graph.n_output;
			c->outs[c->m.graph.n_output++] = g->outputs[i];
		}
	}
out:
	qr_strmap_free(&seen);
	free(cut);
	free(cc);
	qr_graph_free(hg);
	return c;
}

/* See analysis-int.h. */
void
qr_sp_cut_free(struct qr_sp_cut *c)
{
	if (c == NULL)
		return;
	free(c->nodes);
	free(c->ins);
	free(c->front);
	free(c->out_of);
	free(c->outs);
	free(c);
}

/* ---- the store: a base's frontier values on every sample ---- */

/* See analysis-int.h. */
void
qr_sp_store_want(struct qr_sp_store *st, const struct qr_sp_cut *c)
{
	size_t i, k, *at;

	if (c == NULL)
		return;
	for (k = 0; k < st->n_cuts; k++)
		if (st->cuts[k] == c)
			return;
	at = xcalloc(c->n_front + 1, sizeof *at);
	for (i = 0; i < c->n_front; i++) {
		k = qr_strmap_get(&st->idx, c->front[i]);
		if (k == QR_STRMAP_NONE) {
			k = st->n;
			qr_strmap_put(&st->idx, c->front[i], k);
			st->names = xreallocarray(st->names, st->n + 1,
						  sizeof *st->names);
			st->names[st->n++] = c->front[i];
		}
		at[i] = k;
	}
	st->cuts = xreallocarray(st->cuts, st->n_cuts + 1, sizeof *st->cuts);
	st->cut_names = xreallocarray(st->cut_names, st->n_cuts + 1,
				      sizeof *st->cut_names);
	st->cuts[st->n_cuts] = c;
	st->cut_names[st->n_cuts++] = at;
}

/* Forget which cuts asked for what. */
static void
cuts_free(struct qr_sp_store *st)
{
	size_t k;

	for (k = 0; k < st->n_cuts; k++)
		free(st->cut_names[k]);
	free(st->cut_names);
	free(st->cuts);
	free(st->kept);
	st->cut_names = NULL;
	st->cuts = NULL;
	st->kept = NULL;
	st->n_cuts = 0;
}

/*
 * The values of one sample, vals (st->n entries, NULL where not found),
 * pass max bytes for n_s samples: keep those of the cuts that fit, in
 * the order they were asked for (first fit; a cut's whole front or
 * nothing), free the rest of vals. st->kept and st->bytes are set;
 * st->full when not even one cut fits.
 */
static void
choose(struct qr_sp_store *st, struct qr_tensor **vals, size_t n_s,
       size_t max)
{
	size_t k, i, total = 0, budget = max / (n_s ? n_s : 1);

	memset(st->kept, 0, st->n);
	for (k = 0; k < st->n_cuts; k++) {
		const struct qr_sp_cut *c = st->cuts[k];
		size_t add = 0;

		for (i = 0; i < c->n_front; i++) {
			size_t at = st->cut_names[k][i];

			if (!st->kept[at] && vals[at] != NULL)
				add += vals[at]->nbytes;
		}
		if (total + add > budget)
			continue;
		total += add;
		for (i = 0; i < c->n_front; i++)
			st->kept[st->cut_names[k][i]] = 2; /* this pass */
	}
	for (i = 0; i < st->n; i++) {
		st->kept[i] = st->kept[i] == 2;
		if (!st->kept[i]) {
			qr_tensor_free(vals[i]);
			vals[i] = NULL;
		}
	}
	st->bytes = total;
	st->full = total == 0;
}

/*
 * Run base model m on samples ins[s] (n_ins[s] tensors named after the
 * graph inputs in fnames, given to m's by position), keeping every name
 * st wants and m's outputs, for each sample; st->hook (may be NULL) sees
 * the first run. st->e gets an executor of m built with eo that the
 * variants' executors may reuse (opts.reuse): never run, it holds no
 * activations. When the values of every sample would pass max bytes,
 * the first sample's values decide which cuts are served (choose());
 * all are given up (st->full set, freed; the outputs kept) when later
 * samples pass max bytes even so. With st->skip_bad, a sample the model
 * cannot take (QR_ESHAPE) is left out: its outs entry stays NULL.
 * Errors: the runs'.
 */
enum qr_status
qr_sp_store_fill(struct qr_sp_store *st, const struct qr_model *m,
		 const struct qr_exec_opts *eo, struct qr_tensor ***ins,
		 const size_t *n_ins, size_t n_s,
		 const char *const *fnames, size_t n_fin, size_t max,
		 struct qr_diag *d)
{
	struct qr_exec_opts o = *eo;
	struct qr_exec *e = NULL;
	struct qr_tensor *alias = NULL, **ptr = NULL;
	enum qr_status rc;
	size_t s, i, j, nqi, n_out;
	int chosen = 0;         /* a sample's values were seen */

	/* the variants' parent first, never run (so holding no
	 * activations): the run's executor borrows its folded weights and
	 * prepared steps */
	if (st->parent && (rc = qr_exec_new(m, eo, &st->e, d)) != QR_OK)
		return rc;
	o.keep = st->names;
	o.n_keep = st->n;
	o.share = st->e;
	o.reuse = st->e;
	if ((rc = qr_exec_new(m, &o, &e, d)) != QR_OK)
		return rc;
	st->n_s = n_s;
	st->kept = xcalloc(st->n + 1, 1);
	memset(st->kept, 1, st->n);
	st->v = xcalloc(n_s + 1, sizeof *st->v);
	st->outs = xcalloc(n_s + 1, sizeof *st->outs);
	for (s = 0; s < n_s && rc == QR_OK; s++) {
		const char *const *qn = qr_exec_inputs(e, &nqi);
		struct qr_tensor *const *outs;

		free(alias);
		free(ptr);
		alias = xcalloc(n_ins[s] + 1, sizeof *alias);
		ptr = xcalloc(n_ins[s] + 1, sizeof *ptr);
		for (i = 0; i < n_ins[s]; i++) {
			alias[i] = *ins[s][i];
			alias[i].owned = 0;
			for (j = 0; j < n_fin && j < nqi; j++)
				if (ins[s][i]->name &&
				    strcmp(ins[s][i]->name, fnames[j]) == 0)
					alias[i].name = qn[j];
			ptr[i] = &alias[i];
		}
		rc = qr_exec_run(e, ptr, n_ins[s], s == 0 ? st->hook : NULL,
				 st->user, d);
		if (rc == QR_ESHAPE && st->skip_bad) {
			/* left NULL: the caller drops the sample */
			d->status = QR_OK;
			d->msg[0] = '\0';
			rc = QR_OK;
			continue;
		}
		if (rc != QR_OK)
			break;
		st->v[s] = xcalloc(st->n + 1, sizeof **st->v);
		for (i = 0; !st->full && i < st->n; i++) {
			const struct qr_tensor *t;

			if (!st->kept[i])
				continue; /* its cuts did not fit */
			t = qr_exec_tensor_get(e, st->names[i]);
			for (j = 0; t == NULL && j < n_ins[s]; j++)
				if (strcmp(alias[j].name, st->names[i]) == 0)
					t = &alias[j];
			if (t == NULL)
				continue; /* its cuts run whole */
			st->v[s][i] = qr_tensor_copy(t);
			st->v[s][i]->name = st->names[i];
			st->bytes += t->nbytes;
		}
		outs = qr_exec_outputs(e, &n_out);
		st->n_outs = n_out;
		st->outs[s] = xcalloc(n_out + 1, sizeof **st->outs);
		for (i = 0; i < n_out; i++)
			st->outs[s][i] = qr_tensor_copy(outs[i]);
		if (!st->full && st->bytes * n_s > max * (s + 1)) {
			if (!chosen)
				choose(st, st->v[s], n_s, max);
			else
				st->full = 1;
		}
		chosen = 1;
	}
	free(alias);
	free(ptr);
	qr_exec_free(e);
	if (st->full) {
		/* the outputs stay: the candidate's own numbers need them */
		for (s = 0; s < n_s && st->v; s++) {
			for (i = 0; st->v[s] && i < st->n; i++)
				qr_tensor_free(st->v[s][i]);
			free(st->v[s]);
			st->v[s] = NULL;
		}
	}
	return rc;
}

/* See analysis-int.h. */
void
qr_sp_store_release(struct qr_sp_store *st)
{
	size_t s, i;

	for (s = 0; s < st->n_s && st->v; s++) {
		for (i = 0; st->v[s] && i < st->n; i++)
			qr_tensor_free(st->v[s][i]);
		free(st->v[s]);
		st->v[s] = NULL;
	}
	st->full = 1;
	/* what it was asked for goes too: the names are its variants' */
	cuts_free(st);
	free(st->names);
	st->names = NULL;
	st->n = 0;
	qr_strmap_free(&st->idx);
	qr_exec_free(st->e);
	qr_exec_free(st->e2);
	st->e = st->e2 = NULL;
}

/* Free what st holds of sample s. */
void
qr_sp_store_drop(struct qr_sp_store *st, size_t s)
{
	size_t i;

	for (i = 0; st->v[s] && i < st->n; i++)
		qr_tensor_free(st->v[s][i]);
	for (i = 0; st->outs[s] && i < st->n_outs; i++)
		qr_tensor_free(st->outs[s][i]);
	free(st->v[s]);
	free(st->outs[s]);
	st->v[s] = NULL;
	st->outs[s] = NULL;
}

/* The value of name on sample s, or NULL. */
const struct qr_tensor *
qr_sp_store_get(const struct qr_sp_store *st, size_t s, const char *name)
{
	size_t k = qr_strmap_get(&st->idx, name);

	if (k == QR_STRMAP_NONE || st->full || s >= st->n_s || !st->v[s])
		return NULL;
	return st->v[s][k];
}

/* 1 when the store holds every value cut c reads on every sample. */
int
qr_sp_store_covers(const struct qr_sp_store *st, const struct qr_sp_cut *c)
{
	size_t s, i;

	for (s = 0; s < st->n_s; s++)
		for (i = 0; i < c->n_front; i++)
			if (qr_sp_store_get(st, s, c->front[i]) == NULL)
				return 0;
	return st->n_s > 0;
}

/* See analysis-int.h. */
void
qr_sp_store_free(struct qr_sp_store *st)
{
	size_t s, i;

	for (s = 0; s < st->n_s; s++) {
		for (i = 0; st->v && st->v[s] && i < st->n; i++)
			qr_tensor_free(st->v[s][i]);
		for (i = 0; st->outs && st->outs[s] && i < st->n_outs; i++)
			qr_tensor_free(st->outs[s][i]);
		if (st->v)
			free(st->v[s]);
		if (st->outs)
			free(st->outs[s]);
	}
	free(st->v);
	free(st->outs);
	cuts_free(st);
	free(st->names);
	qr_strmap_free(&st->idx);
	qr_exec_free(st->e);
	qr_exec_free(st->e2);
	memset(st, 0, sizeof *st);
}
