/*
 * graph: index over a model's main graph: producers, consumers, constants
 * and a topological order. See graph.h.
 */
#include "graph/graph.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"

enum {
	ENT_INPUT = 1,  /* declared graph input */
	ENT_INIT = 2,   /* initializer */
	ENT_OUTPUT = 4, /* declared graph output */
};

/* One tensor name. */
struct entry {
	const char *name;      /* key, borrowed from the model */
	long producer;         /* producing node, -1 when none */
	size_t cons_off;       /* first consumer in qr_graph.cons */
	size_t n_cons;         /* consumers (each node once) */
	size_t seen;           /* 1 + last node that counted this as input */
	const struct qr_tensor_data *konst; /* constant behind it, or NULL */
	unsigned flags;        /* ENT_* */
};

/* Names a node reads: its inputs, then names its subgraphs take from
 * the outer graph. */
struct node_uses {
	size_t n;              /* entries in names */
	size_t n_own;          /* of them, the node's own inputs (first) */
	const char **names;    /* borrowed from the model ("" skipped) */
};

struct qr_graph {
	const struct qr_model *m;       /* borrowed */
	const struct qr_graph_data *gd; /* m's main graph */
	struct entry *ents;             /* one per tensor name */
	size_t n_ents;                  /* entries in use */
	struct qr_strmap idx;           /* name -> index in ents */
	size_t *cons;                   /* consumer lists, back to back */
	size_t *order;                  /* topological order */
	struct node_uses *uses;         /* per node */
};

/* A string set used while collecting subgraph names. */
static int
strset_add(struct qr_strmap *s, const char *k)
{
	size_t n = s->n;

	qr_strmap_put(s, k, 0);
	return s->n > n;
}

static int
strset_has(const struct qr_strmap *s, const char *k)
{
	return qr_strmap_get(s, k) != QR_STRMAP_NONE;
}

/* Collect what the subgraphs of one node define and read, recursively. */
static void
sub_collect(const struct qr_graph_data *g, struct qr_strmap *def,
	    struct qr_strmap *used, const char ***order, size_t *n_order)
{
	size_t i, j, k;

	for (i = 0; i < g->n_input; i++)
		strset_add(def, g->inputs[i].name);
	for (i = 0; i < g->n_init; i++)
		strset_add(def, g->inits[i].name);
	for (i = 0; i < g->n_node; i++) {
		const struct qr_node *n = &g->nodes[i];

		for (j = 0; j < n->n_out; j++)
			strset_add(def, n->out[j]);
	}
	for (i = 0; i < g->n_node; i++) {
		const struct qr_node *n = &g->nodes[i];

		for (j = 0; j < n->n_in; j++) {
			if (n->in[j][0] != '\0' && strset_add(used, n->in[j])) {
				*order = xreallocarray(*order, *n_order + 1,
						       sizeof **order);
				(*order)[(*n_order)++] = n->in[j];
			}
		}
		for (j = 0; j < n->n_attr; j++) {
			const struct qr_attr *a = &n->attrs[j];

			if (a->type == QR_ATTR_GRAPH && a->g != NULL)
				sub_collect(a->g, def, used, order, n_order);
			for (k = 0; a->type == QR_ATTR_GRAPHS && k < a->n; k++)
				sub_collect(&a->graphs[k], def, used, order,
					    n_order);
		}
	}
	for (i = 0; i < g->n_output; i++) {
		if (strset_add(used, g->outputs[i].name)) {
			*order = xreallocarray(*order, *n_order + 1,
					       sizeof **order);
			(*order)[(*n_order)++] = g->outputs[i].name;
		}
	}
}

/* Fill u with n's inputs and the outer names its subgraphs read. A name
 * defined anywhere inside the node's subgraphs counts as local. */
static void
node_uses_build(const struct qr_node *n, struct node_uses *u)
{
	struct qr_strmap def = {0}, used = {0};
	const char **sub = NULL;
	size_t n_sub = 0, i, j;

	for (i = 0; i < n->n_attr; i++) {
		const struct qr_attr *a = &n->attrs[i];

		if (a->type == QR_ATTR_GRAPH && a->g != NULL)
			sub_collect(a->g, &def, &used, &sub, &n_sub);
		for (j = 0; a->type == QR_ATTR_GRAPHS && j < a->n; j++)
			sub_collect(&a->graphs[j], &def, &used, &sub, &n_sub);
	}
	u->names = xreallocarray(NULL, n->n_in + n_sub + 1, sizeof *u->names);
	u->n = 0;
	for (i = 0; i < n->n_in; i++)
		if (n->in[i][0] != '\0')
			u->names[u->n++] = n->in[i];
	u->n_own = u->n;
	for (i = 0; i < n_sub; i++)
		if (!strset_has(&def, sub[i]))
			u->names[u->n++] = sub[i];
	free(sub);
	qr_strmap_free(&def);
	qr_strmap_free(&used);
}

static struct entry *
tab_find(const struct qr_graph *g, const char *name)
{
	size_t i = qr_strmap_get(&g->idx, name);

	return i == QR_STRMAP_NONE ? NULL : &g->ents[i];
}

/* Find or insert name. ents is sized for every name up front. */
static struct entry *
tab_get(struct qr_graph *g, const char *name)
{
	size_t i = qr_strmap_put(&g->idx, name, g->n_ents);

	if (i == g->n_ents) {
		g->n_ents++;
		g->ents[i].name = name;
		g->ents[i].producer = -1;
	}
	return &g->ents[i];
}

/* Min-heap of node indices, so a file already in order keeps its order. */
static void
heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;

	while (i > 0 && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static size_t
heap_pop(size_t *h, size_t *n)
{
	size_t top = h[0], v = h[--(*n)], i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
	return top;
}

/* Kahn's algorithm; on a cycle, name a node that lies on it. */
static enum qr_status
topo_sort(struct qr_graph *g, size_t *indeg, struct qr_diag *d)
{
	const struct qr_graph_data *gd = g->gd;
	size_t n = gd->n_node, n_heap = 0, n_done = 0, i, j, k;
	size_t *heap = xreallocarray(NULL, n + 1, sizeof *heap);
	unsigned char *done = xcalloc(n + 1, 1);
	enum qr_status st = QR_OK;

	for (i = 0; i < n; i++)
		if (indeg[i] == 0)
			heap_push(heap, &n_heap, i);
	while (n_heap > 0) {
		size_t p = heap_pop(heap, &n_heap);
		const struct qr_node *node = &gd->nodes[p];

		g->order[n_done++] = p;
		done[p] = 1;
		for (j = 0; j < node->n_out; j++) {
			const struct entry *e;

			if (node->out[j][0] == '\0')
				continue;
			e = tab_find(g, node->out[j]);
			for (k = 0; k < e->n_cons; k++) {
				size_t c = g->cons[e->cons_off + k];

				if (--indeg[c] == 0)
					heap_push(heap, &n_heap, c);
			}
		}
	}
	if (n_done < n) {
		const char *via = "";
		size_t cur = 0, step;

		for (i = 0; i < n; i++)
			if (!done[i])
				break;
		cur = i;
		/* Every node left waits on another node left; walking back n
		 * steps must end inside a cycle. */
		for (step = 0; step < n; step++) {
			const struct node_uses *u = &g->uses[cur];

			for (j = 0; j < u->n; j++) {
				const struct entry *e = tab_find(g, u->names[j]);

				if (e->producer >= 0 && !done[e->producer]) {
					cur = (size_t)e->producer;
					via = e->name;
					break;
				}
			}
		}
		st = qr_errorf(d, QR_EGRAPH,
			       "model '%s': node '%s' (%s) is on a cycle "
			       "through its output '%s'", g->m->path,
			       gd->nodes[cur].name, gd->nodes[cur].op_type, via);
	}
	free(heap);
	free(done);
	return st;
}

/*
 * Build the index of m's main graph. On success *out is a new index the
 * caller frees with qr_graph_free; m must outlive it. Returns QR_EGRAPH
 * (naming the model, node and tensor) for a cycle, a tensor produced
 * twice, or a node input nothing defines.
 */
enum qr_status
qr_graph_new(const struct qr_model *m, struct qr_graph **out,
	     struct qr_diag *d)
{
	const struct qr_graph_data *gd = &m->graph;
	struct qr_graph *g = xcalloc(1, sizeof *g);
	enum qr_status st = QR_OK;
	size_t *indeg = NULL, *fill = NULL;
	size_t names, i, j, total;

	*out = NULL;
	g->m = m;
	g->gd = gd;
	g->uses = xcalloc(gd->n_node + 1, sizeof *g->uses);
	g->order = xcalloc(gd->n_node + 1, sizeof *g->order);
	names = gd->n_input + gd->n_init + gd->n_output;
	for (i = 0; i < gd->n_node; i++) {
		node_uses_build(&gd->nodes[i], &g->uses[i]);
		names += gd->nodes[i].n_out + g->uses[i].n;
	}
	qr_strmap_reserve(&g->idx, names);
	g->ents = xcalloc(names + 1, sizeof *g->ents);

	for (i = 0; i < gd->n_input; i++)
		tab_get(g, gd->inputs[i].name)->flags |= ENT_INPUT;
	for (i = 0; i < gd->n_init; i++) {
		struct entry *e = tab_get(g, gd->inits[i].name);

		if (e->flags & ENT_INIT) {
			st = qr_errorf(d, QR_EGRAPH, "model '%s': initializer "
				       "'%s' is defined twice", m->path,
				       e->name);
			goto out;
		}
		e->flags |= ENT_INIT;
		e->konst = &gd->inits[i];
	}
	for (i = 0; i < gd->n_output; i++)
		tab_get(g, gd->outputs[i].name)->flags |= ENT_OUTPUT;

	for (i = 0; i < gd->n_node; i++) {
		const struct qr_node *n = &gd->nodes[i];

		for (j = 0; j < n->n_out; j++) {
			struct entry *e;

			if (n->out[j][0] == '\0')
				continue;
			e = tab_get(g, n->out[j]);
			if (e->producer >= 0) {
				st = qr_errorf(d, QR_EGRAPH, "model '%s': node "
					       "'%s': output '%s' is already "
					       "produced by node '%s'", m->path,
					       n->name, e->name,
					       gd->nodes[e->producer].name);
				goto out;
			}
			if (e->flags & (ENT_INPUT | ENT_INIT)) {
				st = qr_errorf(d, QR_EGRAPH, "model '%s': node "
					       "'%s': output '%s' is already a "
					       "graph %s", m->path, n->name,
					       e->name, e->flags & ENT_INIT ?
					       "initializer" : "input");
				goto out;
			}
			e->producer = (long)i;
		}
	}

	/* Count consumers (each node once per tensor) and in-degrees. */
	indeg = xcalloc(gd->n_node + 1, sizeof *indeg);
	for (i = 0; i < gd->n_node; i++) {
		const struct node_uses *u = &g->uses[i];

		for (j = 0; j < u->n; j++) {
			struct entry *e = tab_find(g, u->names[j]);

			if (e == NULL || (e->producer < 0 &&
					  !(e->flags & (ENT_INPUT | ENT_INIT)))) {
				st = qr_errorf(d, QR_EGRAPH, "model '%s': node "
					       "'%s' (%s): input '%s' is not a "
					       "graph input, an initializer or "
					       "a node output", m->path,
					       gd->nodes[i].name,
					       gd->nodes[i].op_type,
					       u->names[j]);
				goto out;
			}
			if (e->seen == i + 1)
				continue;
			e->seen = i + 1;
			e->n_cons++;
			if (e->producer >= 0)
				indeg[i]++;
		}
	}
	for (i = 0; i < gd->n_output; i++) {
		const struct entry *e = tab_find(g, gd->outputs[i].name);

		if (e->producer < 0 && !(e->flags & (ENT_INPUT | ENT_INIT))) {
			st = qr_errorf(d, QR_EGRAPH, "model '%s': graph output "
				       "'%s' is not produced by any node",
				       m->path, e->name);
			goto out;
		}
	}
	total = 0;
	for (i = 0; i < g->n_ents; i++) {
		g->ents[i].cons_off = total;
		total += g->ents[i].n_cons;
		g->ents[i].seen = 0;
	}
	g->cons = xcalloc(total + 1, sizeof *g->cons);
	fill = xcalloc(g->n_ents + 1, sizeof *fill);
	for (i = 0; i < gd->n_node; i++) {
		const struct node_uses *u = &g->uses[i];

		for (j = 0; j < u->n; j++) {
			struct entry *e = tab_find(g, u->names[j]);
			size_t slot = (size_t)(e - g->ents);

			if (e->seen == i + 1)
				continue;
			e->seen = i + 1;
			g->cons[e->cons_off + fill[slot]++] = i;
		}
	}

	st = topo_sort(g, indeg, d);
	if (st != QR_OK)
		goto out;

	/* Constants: Constant outputs, then through Identity, in order. */
	for (i = 0; i < gd->n_node; i++) {
		const struct qr_node *n = &gd->nodes[g->order[i]];
		const struct qr_tensor_data *t = NULL;

		if (n->n_out == 0 || n->out[0][0] == '\0' ||
		    n->domain[0] != '\0')
			continue;
		if (strcmp(n->op_type, "Constant") == 0)
			t = qr_node_const_value(n);
		else if (strcmp(n->op_type, "Identity") == 0 && n->n_in == 1 &&
			 n->in[0][0] != '\0')
			t = tab_find(g, n->in[0])->konst;
		if (t != NULL)
			tab_find(g, n->out[0])->konst = t;
	}
out:
	free(indeg);
	free(fill);
	if (st != QR_OK)
		qr_graph_free(g);
	else
		*out = g;
	return st;
}

/* Free g (not the model). NULL is a no-op. */
void
qr_graph_free(struct qr_graph *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->gd->n_node; i++)
		free(g->uses[i].names);
	free(g->uses);
	free(g->ents);
	qr_strmap_free(&g->idx);
	free(g->cons);
	free(g->order);
	free(g);
}

/* The model g indexes (borrowed). */
const struct qr_model *
qr_graph_model(const struct qr_graph *g)
{
	return g->m;
}

/* Nodes in the main graph. */
size_t
qr_graph_n_nodes(const struct qr_graph *g)
{
	return g->gd->n_node;
}

/* Node i in file order (borrowed from the model). */
const struct qr_node *
qr_graph_node(const struct qr_graph *g, size_t i)
{
	QR_ASSERT(i < g->gd->n_node);
	return &g->gd->nodes[i];
}

/* n_nodes node indices, producers before consumers (borrowed). */
const size_t *
qr_graph_topo_order(const struct qr_graph *g)
{
	return g->order;
}

/* Node producing name, -1 for inputs, initializers and unknowns. */
long
qr_graph_producer(const struct qr_graph *g, const char *name)
{
	const struct entry *e = tab_find(g, name);

	return e != NULL ? e->producer : -1;
}

const struct qr_node *
qr_graph_producer_node(const struct qr_graph *g, const char *name)
{
	long p = name != NULL && name[0] != '\0' ? qr_graph_producer(g, name)
						: -1;

	return p >= 0 ? qr_graph_node(g, (size_t)p) : NULL;
}

/* Nodes reading name, directly or from inside their subgraphs; each node
 * once, in file order. Borrowed from g. */
const size_t *
qr_graph_consumers(const struct qr_graph *g, const char *name, size_t *n)
{
	const struct entry *e = tab_find(g, name);

	*n = e != NULL ? e->n_cons : 0;
	return e != NULL ? g->cons + e->cons_off : g->cons;
}

/* Constant behind name (borrowed from the model), NULL when none. */
const struct qr_tensor_data *
qr_graph_const(const struct qr_graph *g, const char *name)
{
	const struct entry *e = tab_find(g, name);

	return e != NULL ? e->konst : NULL;
}

/* 1 when name is a declared graph output. */
int
qr_graph_is_output(const struct qr_graph *g, const char *name)
{
	const struct entry *e = tab_find(g, name);

	return e != NULL && (e->flags & ENT_OUTPUT) != 0;
}

/* Names node i's subgraphs read from the outer graph (see graph.h). */
const char *const *
qr_graph_outer_uses(const struct qr_graph *g, size_t i, size_t *n)
{
	const struct node_uses *u = &g->uses[i];

	*n = u->n - u->n_own;
	return u->names + u->n_own;
}
