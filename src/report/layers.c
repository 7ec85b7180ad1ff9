/*
 * report: the layer index. One entry per layer of the float model, with
 * where each of its numbers lives in the analysis, the page it gets
 * (layers/L<i>-<name>.html) and, when the model is at hand, its place in
 * the graph (inputs, consumers) for the graph view and the layer pages.
 *
 * With the float model: every node in topological order except Constant
 * nodes and shape arithmetic (Shape, and nodes that read only constants
 * or such nodes). Without it (tests, templates): the weight layers and
 * the producers of compared activations, by depth.
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"
#include "graph/graph.h"
#include "onnx/onnx.h"

#include <stdlib.h>
#include <string.h>

struct name_ix {
	const char *name; /* borrowed */
	size_t i;         /* layer index */
};

static int
cmp_name_ix(const void *pa, const void *pb)
{
	const struct name_ix *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	if (c != 0)
		return c;
	return (a->i > b->i) - (a->i < b->i);
}

long
qr_report_layer_find(const struct qr_report_layers *L, const char *name)
{
	size_t lo = 0, hi = L->n;

	if (name == NULL || name[0] == '\0')
		return -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(L->by_name[mid].name, name);

		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < L->n && strcmp(L->by_name[lo].name, name) == 0)
		return (long)L->by_name[lo].i;
	return -1;
}

static struct qr_report_layer *
push(struct qr_report_layers *L, const char *name, const char *op,
     int depth)
{
	struct qr_report_layer *l;

	L->v = xreallocarray(L->v, L->n + 1, sizeof *L->v);
	l = &L->v[L->n++];
	memset(l, 0, sizeof *l);
	l->name = name != NULL ? name : "";
	l->op = op != NULL ? op : "";
	l->depth = depth;
	l->node = -1;
	l->weight = -1;
	l->tensor = -1;
	return l;
}

static int
cmp_depth(const void *pa, const void *pb)
{
	const struct qr_report_layer *a = pa, *b = pb;

	return (a->depth > b->depth) - (a->depth < b->depth);
}

/* 1 when node n only computes shapes or constants: Constant, Shape, or
 * every input constant or produced by such a node. */
static int
shape_only(const struct qr_graph *g, const struct qr_node *n,
	   const char *hidden)
{
	size_t i;
	int any = 0;

	if (strcmp(n->op_type, "Constant") == 0 ||
	    strcmp(n->op_type, "Shape") == 0 ||
	    strcmp(n->op_type, "Size") == 0)
		return 1;
	for (i = 0; i < n->n_in; i++) {
		long p;

		if (n->in[i] == NULL || n->in[i][0] == '\0')
			continue;
		any = 1;
		if (qr_graph_const(g, n->in[i]) != NULL)
			continue;
		p = qr_graph_producer(g, n->in[i]);
		if (p < 0 || !hidden[p])
			return 0;
	}
	return any;
}

/* Layers from the graph: every visible node in topological order, with
 * its neighbours. */
static void
from_graph(struct qr_report_layers *L, const struct qr_graph *g)
{
	const struct qr_model *m = qr_graph_model(g);
	size_t nn = qr_graph_n_nodes(g), k, i, j;
	const size_t *order = qr_graph_topo_order(g);
	char *hidden = xcalloc(nn + 1, 1);
	long *layer_of = xcalloc(nn + 1, sizeof *layer_of);

	for (k = 0; k < nn; k++) {
		size_t ni = order[k];
		const struct qr_node *n = qr_graph_node(g, ni);

		hidden[ni] = (char)shape_only(g, n, hidden);
		layer_of[ni] = -1;
		if (!hidden[ni]) {
			struct qr_report_layer *l = push(L, n->name,
							 n->op_type, (int)k);

			l->node = (long)ni;
			layer_of[ni] = (long)(L->n - 1);
		}
	}
	for (i = 0; i < L->n; i++) {
		struct qr_report_layer *l = &L->v[i];
		const struct qr_node *n = qr_graph_node(g, (size_t)l->node);

		for (j = 0; j < n->n_in; j++) {
			long p;

			if (n->in[j] == NULL || n->in[j][0] == '\0' ||
			    qr_graph_const(g, n->in[j]) != NULL)
				continue;
			p = qr_graph_producer(g, n->in[j]);
			if (p < 0) {
				l->reads_input = 1;
				continue;
			}
			if (layer_of[p] < 0)
				continue;
			l->in = xreallocarray(l->in, l->n_in + 1,
					      sizeof *l->in);
			l->in[l->n_in++] = (size_t)layer_of[p];
		}
		for (j = 0; j < n->n_out; j++)
			if (n->out[j] && qr_graph_is_output(g, n->out[j]))
				l->writes_output = 1;
	}
	/* consumers, from the inputs */
	for (i = 0; i < L->n; i++) {
		for (j = 0; j < L->v[i].n_in; j++) {
			struct qr_report_layer *p = &L->v[L->v[i].in[j]];
			size_t t;

			for (t = 0; t < p->n_out && p->out[t] != i; t++)
				;
			if (t < p->n_out)
				continue;
			p->out = xreallocarray(p->out, p->n_out + 1,
					       sizeof *p->out);
			p->out[p->n_out++] = i;
		}
	}
	L->has_graph = 1;
	L->n_hidden = 0;
	for (k = 0; k < nn; k++)
		L->n_hidden += hidden[k] != 0;
	(void)m;
	free(layer_of);
	free(hidden);
}

/* Layers from the analysis alone: weight layers and the producers of
 * compared activations, merged by name, ordered by depth. */
static void
from_analysis(struct qr_report_layers *L, const struct qr_analysis *a)
{
	size_t i, j;

	for (i = 0; i < a->n_weights; i++)
		push(L, a->weights[i].layer, a->weights[i].op,
		     a->weights[i].depth);
	for (i = 0; i < a->n_act_tensors; i++) {
		const struct qr_act_tensor *t = &a->act_tensors[i];

		if (t->layer == NULL || t->layer[0] == '\0')
			continue;
		for (j = 0; j < L->n && strcmp(L->v[j].name, t->layer); j++)
			;
		if (j == L->n)
			push(L, t->layer, t->op, t->depth);
	}
	qsort(L->v, L->n, sizeof *L->v, cmp_depth);
}

enum qr_status
qr_report_layers_new(const struct qr_analysis *a,
		     const struct qr_model *fmodel,
		     struct qr_report_layers **out, struct qr_diag *d)
{
	struct qr_report_layers *L = xcalloc(1, sizeof *L);
	struct qr_graph *g = NULL;
	size_t i, k;

	*out = NULL;
	L->n_quant = a->n_quant;
	if (fmodel != NULL && qr_graph_new(fmodel, &g, NULL) == QR_OK) {
		from_graph(L, g);
		L->graph = g;
	} else {
		if (fmodel != NULL)
			qr_warnf(d, "the graph view is left out: the float "
				 "model's graph could not be indexed");
		from_analysis(L, a);
	}
	L->by_name = xcalloc(L->n + 1, sizeof *L->by_name);
	for (i = 0; i < L->n; i++) {
		struct qr_buf b = {0};

		L->by_name[i].name = L->v[i].name;
		L->by_name[i].i = i;
		qr_buf_puts(&b, "layers/");
		qr_safe_name(&b, "L", i, L->v[i].name);
		qr_buf_puts(&b, ".html");
		L->v[i].page = qr_buf_take(&b);
		L->v[i].qweight = xcalloc(a->n_quant + 1,
					  sizeof *L->v[i].qweight);
		L->v[i].act = xcalloc(a->n_quant + 1, sizeof *L->v[i].act);
		for (k = 0; k < a->n_quant; k++)
			L->v[i].qweight[k] = L->v[i].act[k] = -1;
	}
	qsort(L->by_name, L->n, sizeof *L->by_name, cmp_name_ix);
	/* the first of duplicate names wins: drop later ones from lookups
	 * by keeping them sorted after it (cmp_name_ix orders by index) */
	for (i = 0; i < a->n_weights; i++) {
		long l = qr_report_layer_find(L, a->weights[i].layer);

		if (l >= 0 && L->v[l].weight < 0)
			L->v[l].weight = (long)i;
	}
	for (i = 0; i < a->n_qweights; i++) {
		const struct qr_quant_weight *q = &a->qweights[i];
		long l = qr_report_layer_find(L, q->layer);

		if (l >= 0 && q->quant < a->n_quant &&
		    L->v[l].qweight[q->quant] < 0)
			L->v[l].qweight[q->quant] = (long)i;
	}
	for (i = 0; i < a->n_act_tensors; i++) {
		long l = qr_report_layer_find(L, a->act_tensors[i].layer);

		if (l >= 0 && L->v[l].tensor < 0)
			L->v[l].tensor = (long)i;
	}
	for (i = 0; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *p = &a->act_pairs[i];
		long l;

		if (p->tensor >= a->n_act_tensors || p->quant >= a->n_quant)
			continue;
		l = qr_report_layer_find(L, a->act_tensors[p->tensor].layer);
		if (l >= 0 && L->v[l].act[p->quant] < 0 &&
		    (long)p->tensor == L->v[l].tensor)
			L->v[l].act[p->quant] = (long)i;
	}
	*out = L;
	return QR_OK;
}

void
qr_report_layers_free(struct qr_report_layers *L)
{
	size_t i;

	if (L == NULL)
		return;
	for (i = 0; i < L->n; i++) {
		free(L->v[i].page);
		free(L->v[i].qweight);
		free(L->v[i].act);
		free(L->v[i].in);
		free(L->v[i].out);
	}
	qr_graph_free(L->graph);
	free(L->by_name);
	free(L->v);
	free(L);
}

const char *
qr_report_layer_page(const struct qr_report_layers *L, const char *name)
{
	long l = L != NULL ? qr_report_layer_find(L, name) : -1;

	return l >= 0 ? L->v[l].page : NULL;
}
