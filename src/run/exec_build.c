/*
 * exec_build: qr_exec_new and qr_exec_free. The name table and the
 * buffer pool; the steps in topological order (constant-only nodes just
 * before their readers), dtypes through each op's check, the graph
 * outputs and kept tensors, the release lists; then every prepare once,
 * folding as it goes (exec_fold.c). A model with nodes that cannot run is
 * refused in one message naming them all. See exec-int.h.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"
#include "run/exec-int.h"

/* ---- name table ---- */

/* Index of value name in e->vals, or NO_STEP. */
size_t
qr_ex_val_find(const struct qr_exec *e, const char *name)
{
	size_t v = qr_strmap_get(&e->by_name, name);

	return v == QR_STRMAP_NONE ? NO_STEP : v;
}

/* Find or add value name. */
static size_t
val_get(struct qr_exec *e, const char *name, enum value_kind kind)
{
	size_t v = qr_strmap_put(&e->by_name, name, e->n_vals);

	if (v < e->n_vals)
		return v;
	e->n_vals++;
	e->vals[v].name = name;
	e->vals[v].kind = kind;
	e->vals[v].producer = NO_STEP;
	e->vals[v].last_use = NO_STEP;
	return v;
}

/* ---- buffer pool ---- */

#define POOL_BULK_MIN ((size_t)64 << 10) /* bytes from which a new pool
					  * buffer is carved from e->bulk */

/* Free a buffer of the pool (or a value's store). */
static void
pool_buf_free(struct qr_exec *e, void *p)
{
	if (!qr_bulk_owns(&e->bulk, p))
		free(p);
}

static void
mem_peak(struct qr_exec *e)
{
	if (e->live_bytes + e->pool_bytes > e->peak_bytes)
		e->peak_bytes = e->live_bytes + e->pool_bytes;
}

/*
 * Give t (shape set by infer) a buffer: the smallest pooled one that
 * fits and is at most twice its size, or a new one. An empty
 * tensor takes one too (qr_tensor_alloc). Without the bound a small
 * tensor takes whatever big buffer is free, and the big tensor that
 * comes next needs a new one: in a decoder every block's 1 MB hidden
 * states sat in the MLP's 2.9 MB buffers and the MLP took new ones, so
 * the pool grew by a block's MLP per block (147 MB for 22 blocks, where
 * the most live at once is 19 MB).
 */
void
qr_ex_pool_alloc(struct qr_exec *e, struct qr_tensor *t)
{
	size_t i, best = NO_STEP, want = t->nbytes > 0 ? t->nbytes : 1;
	size_t most = want > SIZE_MAX / 2 ? SIZE_MAX : 2 * want;

	QR_ASSERT(t->data == NULL);
	t->owned = 1;
	t->cap = 0;
	for (i = 0; i < e->n_pool; i++)
		if (e->pool[i].cap >= want && e->pool[i].cap <= most &&
		    (best == NO_STEP || e->pool[i].cap < e->pool[best].cap))
			best = i;
	if (best != NO_STEP) {
		t->data = e->pool[best].p;
		t->cap = e->pool[best].cap;
		e->pool_bytes -= t->cap;
		e->pool[best] = e->pool[--e->n_pool];
	} else if (!e->child && want >= POOL_BULK_MIN) {
		/* pool buffers live as long as e: first written once */
		t->data = qr_bulk_alloc(&e->bulk, want);
		t->cap = want;
	} else {
		qr_tensor_alloc(t);
	}
	e->live_tensors++;
	e->live_bytes += t->cap;
	mem_peak(e);
}

/* Return t's buffer to the pool. */
void
qr_ex_pool_release(struct qr_exec *e, struct qr_tensor *t)
{
	e->live_tensors--;
	e->live_bytes -= t->cap;
	if (t->data != NULL) {
		if (e->n_pool == e->cap_pool) {
			e->cap_pool = e->cap_pool ? 2 * e->cap_pool : 16;
			e->pool = xreallocarray(e->pool, e->cap_pool,
						sizeof *e->pool);
		}
		e->pool[e->n_pool].p = t->data;
		e->pool[e->n_pool].cap = t->cap;
		e->n_pool++;
		e->pool_bytes += t->cap;
	}
	t->data = NULL;
	t->cap = 0;
}

/* ---- load ---- */

static void
step_free(struct step *s)
{
	size_t j;

	if (s->prepared && !s->borrowed && s->desc->release != NULL)
		s->desc->release(s->call.state);
	for (j = 0; s->scratch != NULL && j < s->call.n_out; j++)
		free(s->scratch[j].data);
	free(s->call.in);
	free(s->call.out);
	free(s->in_val);
	free(s->out_val);
	free(s->prep_in);
	free(s->scratch);
	free(s->in_dtype);
	free(s->out_dtype);
	free(s->release);
	free(s->folded);
	if (s->view != NULL) {
		free(s->view->scale);
		free(s->view->zp);
		free(s->view);
	}
	free(s->in_q);
	free(s->nulls);
	for (j = 0; j < 2; j++) {
		qr_exec_free(s->branch[j]);
		free(s->branch_m[j]);
	}
	for (j = 0; s->sub_t != NULL && j < s->n_own; j++)
		free(s->sub_t[j].data);
	for (j = 0; s->carry != NULL && j + 2 < s->n_own; j++)
		free(s->carry[j].data);
	for (j = 0; j < s->n_scan; j++)
		free(s->scan[j].data);
	free(s->carry);
	free(s->sub_vi);
	free(s->outer_val);
	free(s->sub_t);
	free(s->sub_in);
	free(s->scan);
}

/* Free e, its activations and the ops' prepared state; NULL is a no-op.
 * The model is not freed. */
void
qr_exec_free(struct qr_exec *e)
{
	size_t i;

	if (e == NULL)
		return;
	for (i = 0; i < e->n_steps; i++)
		step_free(&e->steps[i]);
	for (i = 0; i < e->n_vals; i++) {
		qr_tensor_free(e->vals[i].konst);
		if (e->vals[i].kind == V_NODE)
			pool_buf_free(e, e->vals[i].store.data);
	}
	for (i = 0; i < e->n_pool; i++)
		pool_buf_free(e, e->pool[i].p);
	qr_bulk_free(&e->bulk);
	for (i = 0; i < e->n_outs; i++)
		qr_tensor_free(e->taken[i]);
	free(e->taken);
	free(e->pool);
	free(e->vals);
	qr_strmap_free(&e->by_name);
	free(e->steps);
	free(e->step_of_node);
	free(e->inputs);
	free(e->out_vals);
	free(e->outs);
	free(e->prof);
	qr_ex_prof_names_free(e);
	free(e->prof_sorted);
	free(e->ws);
	qr_graph_free(e->g);
	free(e);
}

/* The message of a check failure without its "node 'x' (Op): " prefix. */
static char *
strip_node_prefix(const struct qr_node *n, const char *msg)
{
	char *pre = xasprintf("node '%s' (%s): ", n->name, n->op_type);
	size_t len = strlen(pre);
	char *r = xstrdup(strncmp(msg, pre, len) == 0 ? msg + len : msg);

	free(pre);
	return r;
}

/* lazy_order's work. */
struct lazy {
	const struct qr_graph *g;
	const struct qr_graph_data *gd;
	unsigned char *konly;    /* per node: reads constants only */
	unsigned char *done;     /* per node: placed */
	size_t *out, k;          /* the order so far */
	size_t *stack;
};

/* Place node (unless placed) after the constant-only producers it
 * reads, depth first without recursion (a chain may be long). */
static void
lazy_place(struct lazy *z, size_t node)
{
	size_t sp = 1, j;

	if (z->done[node])
		return;
	z->stack[0] = node;
	while (sp > 0) {
		const struct qr_node *nd = &z->gd->nodes[z->stack[sp - 1]];
		int pushed = 0;

		for (j = 0; j < nd->n_in && !pushed; j++) {
			long p = nd->in[j][0] == '\0' ? -1 :
				 qr_graph_producer(z->g, nd->in[j]);

			if (p >= 0 && z->konly[p] && !z->done[p]) {
				z->done[p] = 2; /* on the stack */
				z->stack[sp++] = (size_t)p;
				pushed = 1;
			}
		}
		if (pushed)
			continue;
		sp--;
		z->done[z->stack[sp]] = 1;
		z->out[z->k++] = z->stack[sp];
	}
}

/*
 * The graph's topological order with each node that reads constants only
 * (a weight's DequantizeLinear, or Transpose -> QuantizeLinear ->
 * DequantizeLinear) moved to just before its first reader, or to the
 * end when nothing reads it. Quantizers write all the weights'
 * DequantizeLinear nodes first; a node not folded at load (opts.fold_max)
 * would otherwise hold its output from the start of every run to its
 * reader: vit_b_16, all its weights in float at once, 311 MB. Same
 * nodes, same inputs: the same bits. A heap array of n_nodes entries.
 */
static size_t *
lazy_order(const struct qr_graph *g)
{
	const size_t *topo = qr_graph_topo_order(g);
	size_t n = qr_graph_n_nodes(g), i, j;
	struct lazy z;

	z.g = g;
	z.gd = &qr_graph_model(g)->graph;
	z.konly = xcalloc(n + 1, 1);
	z.done = xcalloc(n + 1, 1);
	z.out = xcalloc(n + 1, sizeof *z.out);
	z.stack = xcalloc(n + 1, sizeof *z.stack);
	z.k = 0;
	for (i = 0; i < n; i++) {
		const struct qr_node *nd = &z.gd->nodes[topo[i]];
		int all = nd->n_in > 0;

		for (j = 0; j < nd->n_in && all; j++) {
			long p;

			if (nd->in[j][0] == '\0' ||
			    qr_graph_const(g, nd->in[j]) != NULL)
				continue;
			p = qr_graph_producer(g, nd->in[j]);
			all = p >= 0 && z.konly[p];
		}
		z.konly[topo[i]] = (unsigned char)all;
	}
	for (i = 0; i < n; i++)
		if (!z.konly[topo[i]])
			lazy_place(&z, topo[i]);
	for (i = 0; i < n; i++)
		lazy_place(&z, topo[i]);
	QR_ASSERT(z.k == n);
	free(z.konly);
	free(z.done);
	free(z.stack);
	return z.out;
}

/* A new zeroed entry at the end of *u (*n_u entries). */
static struct qr_unsupported *
unsupported_add(struct qr_unsupported **u, size_t *n_u)
{
	struct qr_unsupported *x;

	*u = xreallocarray(*u, *n_u + 1, sizeof **u);
	x = &(*u)[(*n_u)++];
	memset(x, 0, sizeof *x);
	return x;
}

/*
 * Index the graph, make values and steps, find descriptors and run each
 * check once with the dtypes known at load. Nodes that cannot run go to
 * *u (heap, *n_u entries); other failures are returned.
 */
static enum qr_status
exec_build(struct qr_exec *e, struct qr_unsupported **u, size_t *n_u,
	   struct qr_diag *d)
{
	const struct qr_graph_data *gd = &e->m->graph;
	size_t *order;
	enum qr_status st;
	size_t names, i, j, k;

	*u = NULL;
	*n_u = 0;
	st = qr_graph_new(e->m, &e->g, d);
	if (st != QR_OK)
		return st;
	names = gd->n_input + gd->n_init;
	for (i = 0; i < gd->n_node; i++)
		names += gd->nodes[i].n_out;
	qr_strmap_reserve(&e->by_name, names);
	e->vals = xcalloc(names + 1, sizeof *e->vals);

	for (i = 0; i < gd->n_init; i++) {
		struct value *v = &e->vals[val_get(e, gd->inits[i].name,
						    V_CONST)];

		v->dtype = gd->inits[i].dtype;
		v->konst = qr_tensor_wrap(&gd->inits[i]);
		v->cur = v->konst;
	}
	e->inputs = xcalloc(gd->n_input + 1, sizeof *e->inputs);
	for (i = 0; i < gd->n_input; i++) {
		size_t vi = val_get(e, gd->inputs[i].name, V_INPUT);
		struct value *v = &e->vals[vi];

		if (v->kind != V_INPUT)
			continue; /* an initializer listed as input */
		v->decl = &gd->inputs[i];
		v->dtype = gd->inputs[i].dtype;
		e->inputs[e->n_inputs++] = v->name;
		if (v->dtype == QR_DT_UNDEFINED) {
			struct qr_unsupported *x = unsupported_add(u, n_u);

			x->input = v->name;
			x->why = xstrdup("not a tensor (sequence, map and "
					 "optional inputs are not supported)");
		}
	}

	e->n_steps = gd->n_node;
	e->steps = xcalloc(e->n_steps + 1, sizeof *e->steps);
	e->step_of_node = xcalloc(e->n_steps + 1, sizeof *e->step_of_node);
	order = lazy_order(e->g);
	for (i = 0; i < e->n_steps; i++) {
		struct step *s = &e->steps[i];
		const struct qr_node *n = &gd->nodes[order[i]];

		s->node = order[i];
		e->step_of_node[s->node] = i;
		s->call.node = n;
		s->call.opset = (int)qr_model_opset(e->m, n->domain);
		s->call.n_in = n->n_in;
		s->call.n_out = n->n_out;
		s->call.n_threads = e->opts.n_threads > 0 ?
			e->opts.n_threads : 1;
		s->call.any_order = e->opts.any_order;
		s->call.in = xcalloc(n->n_in + 1, sizeof *s->call.in);
		s->call.out = xcalloc(n->n_out + 1, sizeof *s->call.out);
		s->in_val = xcalloc(n->n_in + 1, sizeof *s->in_val);
		s->out_val = xcalloc(n->n_out + 1, sizeof *s->out_val);
		s->prep_in = xcalloc(n->n_in + 1, sizeof *s->prep_in);
		s->scratch = xcalloc(n->n_out + 1, sizeof *s->scratch);
		s->in_dtype = xcalloc(n->n_in + 1, sizeof *s->in_dtype);
		s->out_dtype = xcalloc(n->n_out + 1, sizeof *s->out_dtype);
		s->call.in_dtype = s->in_dtype;
		s->call.out_dtype = s->out_dtype;
		s->call.ws = &e->ws;
		s->call.ws_cap = &e->ws_cap;
		for (j = 0; j < n->n_out; j++) {
			struct value *v;

			s->out_val[j] = NO_STEP;
			if (n->out[j][0] == '\0') {
				s->call.out[j] = &s->scratch[j];
				continue;
			}
			s->out_val[j] = val_get(e, n->out[j], V_NODE);
			v = &e->vals[s->out_val[j]];
			v->producer = i;
			v->last_use = i; /* until a consumer says otherwise */
			s->call.out[j] = &v->store;
		}
	}
	free(order);
	/* Constant nodes' outputs (and Identity of constants) are known. */
	for (i = 0; i < e->n_vals; i++) {
		struct value *v = &e->vals[i];
		const struct qr_tensor_data *c;

		if (v->kind != V_NODE)
			continue;
		c = qr_graph_const(e->g, v->name);
		if (c != NULL && c->dtype != QR_DT_STRING)
			v->konst = qr_tensor_wrap(c);
	}

	for (i = 0; i < e->n_steps; i++) {
		struct step *s = &e->steps[i];
		const struct qr_node *n = s->call.node;
		struct qr_diag cd = {0};

		for (j = 0; j < n->n_in; j++) {
			struct value *v;

			s->in_val[j] = NO_STEP;
			s->in_dtype[j] = QR_DT_UNDEFINED;
			if (n->in[j][0] == '\0')
				continue;
			s->in_val[j] = qr_ex_val_find(e, n->in[j]);
			QR_ASSERT(s->in_val[j] != NO_STEP);
			v = &e->vals[s->in_val[j]];
			s->in_dtype[j] = v->dtype;
			s->prep_in[j] = v->konst;
			if (v->dtype == QR_DT_UNDEFINED)
				s->recheck = 1;
			if (v->kind == V_NODE)
				v->last_use = i;
		}
		for (j = 0; j < n->n_out; j++)
			s->out_dtype[j] = QR_DT_UNDEFINED;
		s->desc = s->call.opset > 0 ?
			qr_op_find(n->domain, n->op_type, s->call.opset) :
			NULL;
		if (s->desc == NULL && s->call.opset > 0 &&
		    qr_ex_control_kind(n) != 0) {
			if (qr_ex_control_build(e, s, i, &cd) == QR_OK)
				s->desc = s->is_loop ? &qr_ex_loop_desc :
						       &qr_ex_if_desc;
			else
				cd.status = QR_EUNSUPPORTED;
		}
		if (s->desc != NULL && s->desc->check != NULL) {
			struct qr_op_call c = s->call;

			c.in = s->prep_in;
			st = s->desc->check(&c, &cd);
			if (st == QR_EUNSUPPORTED) {
				s->desc = NULL;
			} else if (st != QR_OK) {
				qr_errorf(d, st, "%s", cd.msg);
				qr_diag_clear(&cd);
				return st;
			}
		}
		if (s->desc == NULL) {
			struct qr_unsupported *x = unsupported_add(u, n_u);

			x->node = n;
			x->opset = s->call.opset;
			x->why = cd.status != QR_OK ?
				strip_node_prefix(n, cd.msg) : NULL;
		}
		qr_diag_clear(&cd);
		for (j = 0; j < n->n_out; j++)
			if (s->out_val[j] != NO_STEP)
				e->vals[s->out_val[j]].dtype = s->out_dtype[j];
	}

	/* Graph outputs and kept tensors live to the end of the run. */
	e->n_outs = gd->n_output;
	e->out_vals = xcalloc(gd->n_output + 1, sizeof *e->out_vals);
	e->outs = xcalloc(gd->n_output + 1, sizeof *e->outs);
	e->taken = xcalloc(gd->n_output + 1, sizeof *e->taken);
	for (i = 0; i < gd->n_output; i++) {
		e->out_vals[i] = qr_ex_val_find(e, gd->outputs[i].name);
		QR_ASSERT(e->out_vals[i] != NO_STEP);
		e->vals[e->out_vals[i]].keep = 1;
	}
	for (i = 0; i < e->opts.n_keep; i++) {
		size_t v = qr_ex_val_find(e, e->opts.keep[i]);

		if (v == NO_STEP)
			return qr_errorf(d, QR_EUSAGE, "model '%s': no tensor "
					 "named '%s' to keep", e->m->path,
					 e->opts.keep[i]);
		e->vals[v].keep = 1;
	}
	/* Release lists: each value after its last use. */
	for (i = 0; i < e->n_vals; i++) {
		struct value *v = &e->vals[i];
		struct step *s;

		if (v->kind != V_NODE || v->keep)
			continue;
		s = &e->steps[v->last_use];
		s->release = xreallocarray(s->release, s->n_release + 1,
					   sizeof *s->release);
		s->release[s->n_release++] = i;
	}
	/* Profile slots, one per op type. */
	e->prof = xcalloc(e->n_steps + 1, sizeof *e->prof);
	for (i = 0; i < e->n_steps; i++) {
		const char *op = e->steps[i].call.node->op_type;

		for (k = 0; k < e->n_prof; k++)
			if (strcmp(e->prof[k].op_type, op) == 0)
				break;
		if (k == e->n_prof)
			e->prof[e->n_prof++].op_type = op;
		e->steps[i].prof = k;
	}
	return QR_OK;
}

/* Free a list from qr_exec_unsupported; NULL is a no-op. */
void
qr_unsupported_free(struct qr_unsupported *u, size_t n)
{
	size_t i;

	for (i = 0; u != NULL && i < n; i++)
		free(u[i].why);
	free(u);
}

/* See run.h. Builds a throwaway exec and keeps only the list. */
enum qr_status
qr_exec_unsupported(const struct qr_model *m, struct qr_unsupported **out,
		    size_t *n, struct qr_diag *d)
{
	struct qr_exec *e = xcalloc(1, sizeof *e);
	enum qr_status st;

	e->m = m;
	st = exec_build(e, out, n, d);
	if (st != QR_OK) {
		qr_unsupported_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	qr_exec_free(e);
	return st;
}

/* "'n1' (Foo, opset 13)" or "graph input 'x'", then ": why" if any. */
static void
unsupported_put(struct qr_buf *b, const struct qr_unsupported *u)
{
	const struct qr_node *n = u->node;

	if (n == NULL)
		qr_buf_printf(b, "graph input '%s'", u->input);
	else
		qr_buf_printf(b, "'%s' (%s%s%s, opset %d)", n->name, n->domain,
			      n->domain[0] ? "." : "", n->op_type, u->opset);
	if (u->why != NULL)
		qr_buf_printf(b, ": %s", u->why);
}

/* Op type of u for the summary ("com.microsoft.Foo", "graph input"). */
static char *
unsupported_kind(const struct qr_unsupported *u)
{
	const struct qr_node *n = u->node;

	if (n == NULL)
		return xstrdup("graph input");
	return xasprintf("%s%s%s", n->domain, n->domain[0] ? "." : "",
			 n->op_type);
}

/*
 * The body of the unsupported-nodes error, sized to fit a qr_diag beside
 * the model's path: "2 unsupported nodes: 'n1' (Foo, opset 13), 'n2' ...".
 * Past 5 nodes it starts with counts per op type, most first ("193
 * unsupported nodes (76 SequenceAt, 38 Loop, ...): ..."), and a list that
 * would pass room bytes ends ", and N more" on a whole entry. A first entry too
 * long alone (a subgraph's own list) is cut with "...".
 */
static char *
unsupported_msg(const struct qr_unsupported *u, size_t n_u, size_t room)
{
	enum { KINDS_SHOWN = 8 };
	struct qr_buf b = {0}, one = {0};
	size_t i, j, n_kind = 0, shown, *count = xcalloc(n_u, sizeof *count);
	char **kind = xcalloc(n_u, sizeof *kind);

	qr_buf_printf(&b, "%zu unsupported node%s", n_u, n_u == 1 ? "" : "s");
	if (n_u > 5) {
		for (i = 0; i < n_u; i++) {
			char *k = unsupported_kind(&u[i]);

			for (j = 0; j < n_kind && strcmp(kind[j], k) != 0; j++)
				;
			if (j == n_kind)
				kind[n_kind++] = k;
			else
				free(k);
			count[j]++;
		}
		/* stable: most frequent first, ties in order of appearance */
		for (i = 1; i < n_kind; i++)
			for (j = i; j > 0 && count[j] > count[j - 1]; j--) {
				size_t c = count[j];
				char *k = kind[j];

				count[j] = count[j - 1], kind[j] = kind[j - 1];
				count[j - 1] = c, kind[j - 1] = k;
			}
		for (i = 0; i < n_kind && i < KINDS_SHOWN; i++)
			qr_buf_printf(&b, "%s%zu %s", i ? ", " : " (",
				      count[i], kind[i]);
		if (n_kind > KINDS_SHOWN)
			qr_buf_printf(&b, ", %zu other op types",
				      n_kind - KINDS_SHOWN);
		qr_buf_putc(&b, ')');
	}
	qr_buf_puts(&b, ": ");
	for (shown = 0; shown < n_u; shown++) {
		/* 32 bytes kept for ", and N more" */
		size_t left = b.len + 32 < room ? room - b.len - 32 : 0;

		one.len = 0;
		if (shown > 0)
			qr_buf_puts(&one, ", ");
		unsupported_put(&one, &u[shown]);
		if (one.len > left) {
			if (shown > 0)
				break;
			/* cut on a character boundary */
			for (j = left > 3 ? left - 3 : 0;
			     j > 0 && ((unsigned char)one.data[j] & 0xC0) ==
				     0x80; j--)
				;
			one.len = j;
			qr_buf_puts(&one, "...");
		}
		qr_buf_append(&b, one.data, one.len);
	}
	if (shown < n_u)
		qr_buf_printf(&b, ", and %zu more", n_u - shown);
	for (i = 0; i < n_kind; i++)
		free(kind[i]);
	free(kind);
	free(count);
	qr_buf_free(&one);
	return qr_buf_take(&b);
}

/* 1 when constants a and b hold the same bytes. */
static int
same_const(const struct qr_tensor *a, const struct qr_tensor *b)
{
	return a->dtype == b->dtype && a->ndim == b->ndim &&
	       a->nbytes == b->nbytes &&
	       memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof *a->dims) ==
	       0 && (a->data == b->data || a->nbytes == 0 ||
		     (a->data != NULL && b->data != NULL &&
		      memcmp(a->data, b->data, a->nbytes) == 0));
}

/*
 * opts.reuse: take the state of the step of that executor writing step
 * s's first output when its prepare saw what s's would: the same
 * descriptor and attributes, opset, threads and order, dtypes, and the
 * same constants (init: which of them are initializers) at the same
 * inputs. Steps folded there, borrowing themselves, or with subgraphs
 * are left alone. 1 when taken.
 */
static int
reuse_state(struct qr_exec *e, struct step *s, const unsigned char *init)
{
	const struct qr_exec *o = e->opts.reuse;
	const struct qr_node *n = s->call.node, *on;
	const struct step *os;
	size_t v, j;

	if (o == NULL || s->branch[0] != NULL || s->call.n_out == 0 ||
	    s->out_val[0] == NO_STEP)
		return 0;
	v = qr_ex_val_find(o, e->vals[s->out_val[0]].name);
	if (v == NO_STEP || o->vals[v].kind != V_NODE)
		return 0;
	os = &o->steps[o->vals[v].producer];
	on = os->call.node;
	if (os->desc != s->desc || !os->prepared || os->borrowed ||
	    os->folded != NULL || os->branch[0] != NULL ||
	    strcmp(on->op_type, n->op_type) != 0 ||
	    strcmp(on->domain, n->domain) != 0 ||
	    os->call.opset != s->call.opset ||
	    os->call.n_threads != s->call.n_threads ||
	    os->call.any_order != s->call.any_order ||
	    on->n_in != n->n_in || on->n_out != n->n_out ||
	    on->n_attr != n->n_attr || (n->n_attr > 0 &&
					on->attrs != n->attrs))
		return 0;
	for (j = 0; j < n->n_out; j++)
		if (os->out_dtype[j] != s->out_dtype[j])
			return 0;
	for (j = 0; j < n->n_in; j++) {
		const struct value *ov = os->in_val[j] == NO_STEP ? NULL :
					 &o->vals[os->in_val[j]];
		const struct qr_tensor *b = ov ? ov->konst : NULL;

		if ((ov == NULL) != (s->in_val[j] == NO_STEP) ||
		    os->in_dtype[j] != s->in_dtype[j] ||
		    (b == NULL) != (s->prep_in[j] == NULL) ||
		    (b != NULL && !ov->folded) != (init[j] != 0) ||
		    (b != NULL && !same_const(b, s->prep_in[j])))
			return 0;
	}
	s->call.state = os->call.state;
	s->prepared = 1;
	s->borrowed = 1;
	return 1;
}

/*
 * See run.h. Build, refuse unsupported nodes in one message, then run
 * every prepare once in topological order (or take opts.reuse's), folding
 * steps whose inputs are all constant.
 */
enum qr_status
qr_exec_new(const struct qr_model *m, const struct qr_exec_opts *o,
	    struct qr_exec **out, struct qr_diag *d)
{
	struct qr_exec *e = xcalloc(1, sizeof *e);
	struct qr_unsupported *u = NULL;
	unsigned char *live = NULL;
	enum qr_status st;
	size_t n_u = 0, i;

	*out = NULL;
	qr_ops_init();
	e->m = m;
	if (o != NULL)
		e->opts = *o;
	st = exec_build(e, &u, &n_u, d);
	if (st != QR_OK)
		goto out;
	live = xcalloc(e->n_vals + 1, 1);
	if (e->opts.views)
		qr_ex_readers_index(e);
	if (n_u > 0) {
		size_t room = strlen(m->path) + 64 < QR_DIAG_MSG_MAX ?
			      QR_DIAG_MSG_MAX - strlen(m->path) - 64 : 256;
		char *msg = unsupported_msg(u, n_u, room);

		st = qr_errorf(d, QR_EUNSUPPORTED, "model '%s': %s", m->path,
			       msg);
		free(msg);
		goto out;
	}
	for (i = 0; i < e->n_steps; i++) {
		struct step *s = &e->steps[i];
		struct qr_op_call c = s->call;
		unsigned char *init;
		size_t j;

		/* constants folded by earlier steps are constants here too */
		init = xcalloc(s->call.n_in + 1, 1);
		for (j = 0; j < s->call.n_in; j++)
			if (s->in_val[j] != NO_STEP) {
				struct value *v = &e->vals[s->in_val[j]];

				s->prep_in[j] = v->konst;
				init[j] = v->konst != NULL && !v->folded;
			}
		if (s->desc->prepare != NULL && !reuse_state(e, s, init)) {
			c.in = s->prep_in;
			c.in_init = init;
			c.state = NULL;
			st = s->desc->prepare(&c, d);
			s->call.state = c.state;
			s->prepared = 1;
		}
		free(init);
		if (st != QR_OK)
			goto out;
		qr_ex_step_fold(e, s);
		if (e->opts.trim_folds)
			qr_ex_fold_trim(e, i, live);
	}
	if (e->opts.views)
		qr_ex_views_plan(e);
out:
	free(live);
	free(e->reader);
	free(e->reader_in);
	e->reader = e->reader_in = NULL;
	qr_unsupported_free(u, n_u);
	if (st != QR_OK)
		qr_exec_free(e);
	else
		*out = e;
	return st;
}

/* The names callers must feed, in graph order (borrowed from the model). */
const char *const *
qr_exec_inputs(const struct qr_exec *e, size_t *n)
{
	*n = e->n_inputs;
	return e->inputs;
}
