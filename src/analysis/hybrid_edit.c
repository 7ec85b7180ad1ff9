/*
 * hybrid_edit: the graph edits hybrid models are made of (hybrid.c says
 * which): a copy of a loaded model's node and initializer arrays that
 * nodes and initializers are added to, nodes rewritten in place (an input
 * renamed, a node turned into Identity), and at the end the nodes nobody
 * reads any longer dropped. See struct qr_hy_build in analysis-int.h.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis-int.h"
#include "onnx/onnx.h"

/* See analysis-int.h. */
void
qr_hy_start(struct qr_hy_build *b, const struct qr_model *m)
{
	const struct qr_graph_data *g = &m->graph;

	memset(b, 0, sizeof *b);
	b->h = xcalloc(1, sizeof *b->h);
	b->h->m = *m;
	b->h->m.priv = NULL;
	b->cap_nodes = g->n_node * 2 + 8;
	b->nodes = xcalloc(b->cap_nodes, sizeof *b->nodes);
	memcpy(b->nodes, g->nodes, g->n_node * sizeof *b->nodes);
	b->n_nodes = g->n_node;
	b->cap_inits = g->n_init + 16;
	b->inits = xcalloc(b->cap_inits, sizeof *b->inits);
	memcpy(b->inits, g->inits, g->n_init * sizeof *b->inits);
	b->n_inits = g->n_init;
}

/* See analysis-int.h. */
struct qr_node *
qr_hy_add_node(struct qr_hy_build *b, const char *op, const char *name,
	       size_t n_in, size_t n_out)
{
	struct qr_node *n;

	if (b->n_nodes == b->cap_nodes) {
		b->cap_nodes *= 2;
		b->nodes = xreallocarray(b->nodes, b->cap_nodes,
					 sizeof *b->nodes);
	}
	n = &b->nodes[b->n_nodes++];
	memset(n, 0, sizeof *n);
	n->op_type = op;
	n->domain = "";
	n->name = qr_arena_strdup(&b->h->ar, name);
	n->n_in = n_in;
	n->in = qr_arena_array(&b->h->ar, n_in + 1, sizeof *n->in);
	n->n_out = n_out;
	n->out = qr_arena_array(&b->h->ar, n_out + 1, sizeof *n->out);
	return n;
}

/* A new initializer slot at the end of b's, zeroed. */
static struct qr_tensor_data *
new_init(struct qr_hy_build *b)
{
	struct qr_tensor_data *t;

	if (b->n_inits == b->cap_inits) {
		b->cap_inits *= 2;
		b->inits = xreallocarray(b->inits, b->cap_inits,
					 sizeof *b->inits);
	}
	t = &b->inits[b->n_inits++];
	memset(t, 0, sizeof *t);
	return t;
}

/* See analysis-int.h. */
const char *
qr_hy_add_const(struct qr_hy_build *b, const char *name,
		const struct qr_tensor_data *src)
{
	struct qr_tensor_data *t = new_init(b);

	*t = *src;
	t->name = qr_arena_strdup(&b->h->ar, name);
	return t->name;
}

/* See analysis-int.h. */
const char *
qr_hy_add_init(struct qr_hy_build *b, const char *name,
	       const struct qr_tensor_data *shape, int ndim,
	       const int64_t *dims, const float *v)
{
	struct qr_tensor_data *t = new_init(b);
	int i;

	t->name = qr_arena_strdup(&b->h->ar, name);
	t->dtype = QR_DT_FLOAT;
	if (shape) {
		ndim = shape->ndim;
		dims = shape->dims;
	}
	t->ndim = ndim;
	t->n_elem = 1;
	for (i = 0; i < ndim; i++) {
		t->dims[i] = dims[i];
		t->n_elem *= (size_t)dims[i];
	}
	t->data = v;
	t->nbytes = t->n_elem * sizeof(float);
	return t->name;
}

/* See analysis-int.h. */
struct qr_node *
qr_hy_own_node(struct qr_hy_build *b, size_t i)
{
	struct qr_node *n = &b->nodes[i];
	const char **in = qr_arena_array(&b->h->ar, n->n_in + 1, sizeof *in);

	memcpy(in, n->in, n->n_in * sizeof *in);
	n->in = in;
	return n;
}

/* See analysis-int.h. */
void
qr_hy_to_identity(struct qr_hy_build *b, size_t i, const char *src)
{
	struct qr_node *n = &b->nodes[i];
	const char **in = qr_arena_array(&b->h->ar, 2, sizeof *in);

	in[0] = src;
	n->in = in;
	n->n_in = 1;
	n->op_type = "Identity";
	n->domain = "";
	n->n_attr = 0;
	n->attrs = NULL;
}

/* See analysis-int.h. */
void
qr_hy_need_opset(struct qr_hy_build *b, const char *domain, int64_t version)
{
	struct qr_model *m = &b->h->m;
	struct qr_opset *o;

	if (qr_model_opset(m, domain) > 0)
		return;
	o = qr_arena_array(&b->h->ar, m->n_opset + 1, sizeof *o);
	memcpy(o, m->opsets, m->n_opset * sizeof *o);
	o[m->n_opset].domain = qr_arena_strdup(&b->h->ar, domain);
	o[m->n_opset].version = version > 0 ? version : 1;
	m->opsets = o;
	m->n_opset++;
}

/* See analysis-int.h. */
struct qr_hy_model *
qr_hy_finish(struct qr_hy_build *b)
{
	struct qr_graph_data *g = &b->h->m.graph;
	struct qr_strmap used;
	size_t i, k, w;
	int changed = 1;

	while (changed) {
		g->nodes = b->nodes;
		g->n_node = b->n_nodes;
		memset(&used, 0, sizeof used);
		qr_onnx_reads(g, &used);
		for (i = w = 0; i < b->n_nodes; i++) {
			const struct qr_node *n = &b->nodes[i];
			int live = 0;

			for (k = 0; k < n->n_out && !live; k++)
				live = n->out[k][0] != '\0' &&
				       qr_strmap_get(&used, n->out[k]) !=
				       QR_STRMAP_NONE;
			if (live)
				b->nodes[w++] = *n;
		}
		changed = w != b->n_nodes;
		b->n_nodes = w;
		qr_strmap_free(&used);
	}
	g->nodes = b->nodes;
	g->n_node = b->n_nodes;
	g->inits = b->inits;
	g->n_init = b->n_inits;
	b->h->nodes = b->nodes;
	b->h->inits = b->inits;
	return b->h;
}

/* See analysis-int.h. */
char *
qr_hy_name(const char *layer, const char *what)
{
	return xasprintf("qr.hybrid/%s/%s", layer, what);
}

/* See analysis-int.h. */
void
qr_hy_model_free(struct qr_hy_model *h)
{
	if (h == NULL)
		return;
	free(h->nodes);
	free(h->inits);
	qr_arena_free(&h->ar);
	free(h);
}
