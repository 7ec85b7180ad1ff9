/*
 * executor: runs a model's nodes in topological order with a memory plan
 * that recycles each activation after its last consumer. See run.h.
 *
 * Load time (qr_exec_new): one `value` per tensor name (graph input,
 * constant or node output) and one `step` per node in topological order.
 * Dtypes propagate through the ops' check functions; prepare sees the
 * constants. Each value's last consumer is recorded; after that step the
 * value's buffer goes back to a pool that later outputs draw from (best
 * fit), so peak memory follows the widest cut of the graph rather than
 * its total. Steps whose inputs are all constant are run once at load
 * (step_fold) and hand their stored outputs to each run's hook.
 *
 * If and Loop: the executor runs them itself (an op knows nothing of
 * graphs). Each subgraph (If's two branches, Loop's body) is a child
 * executor over the subgraph as a graph whose inputs are its own
 * declared ones (a Loop body's iteration number, condition and carried
 * values) and then the names it reads from this graph
 * (qr_graph_outer_uses); those values live until the node has run. At
 * run, If's condition picks a child, which runs on the current tensors;
 * Loop runs its body until the trip count or the condition says stop,
 * carrying values from one iteration to the next and stacking the scan
 * outputs. Outputs are copied into the node's. Nodes inside reach no
 * hook.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "ops/ops.h"
#include "run/run.h"

enum value_kind {
	V_INPUT, /* fed by the caller */
	V_CONST, /* initializer */
	V_NODE,  /* produced by a node */
};

#define NO_STEP ((size_t)-1)

struct value {
	const char *name;          /* borrowed from the model */
	enum value_kind kind;
	int dtype;                 /* dtype known at load, or UNDEFINED */
	const struct qr_value_info *decl; /* V_INPUT declaration */
	struct qr_tensor *konst;   /* constant (initializer, or a Constant
				    * output seen through Identity) wrapped;
				    * owned; NULL when not constant */
	struct qr_tensor store;    /* V_NODE: the activation (owned data) */
	struct qr_tensor *cur;     /* what readers see this run, or NULL */
	size_t producer;           /* V_NODE: producing step */
	size_t last_use;           /* step after which it is released */
	int keep;                  /* graph output or opts.keep */
	int folded;                /* V_NODE computed once at load: konst
				    * holds it, the pool never sees it */
	int view;                  /* V_NODE its producer leaves as a view
				    * (opts.views): store gets its shape at
				    * each run, never data */
};

struct step {
	size_t node;               /* index into the model's nodes */
	const struct qr_op_desc *desc;
	struct qr_op_call call;    /* in/out/state used for every run */
	size_t *in_val;            /* value per input, NO_STEP when absent */
	size_t *out_val;           /* value per output, NO_STEP when "" */
	struct qr_tensor **prep_in; /* constants only, for check/prepare */
	struct qr_tensor *scratch; /* outputs named "" (n_out entries) */
	int *in_dtype;             /* n_in, for check */
	int *out_dtype;            /* n_out, set by check */
	int recheck;               /* an input dtype was unknown at load */
	int prepared;              /* prepare ran (release is due) */
	size_t *release;           /* values released after this step */
	size_t n_release;
	size_t prof;               /* index into exec->prof */
	struct qr_tensor **folded; /* n_out constant outputs when every
				    * input is constant (computed at load),
				    * else NULL */
	struct qr_qview *view;     /* output 0 left as this view, not run
				    * (opts.views), or NULL */
	const struct qr_qview **in_q; /* n_in: the views its inputs are
				    * given as (call.in_q), or NULL */
	struct qr_tensor **nulls;  /* view: n_out NULLs, for the hook */
	/* If and Loop (see the top of this file): */
	int is_loop;               /* Loop, else If */
	struct qr_exec *branch[2]; /* If's then and else executors, Loop's
				    * body in [0]; NULL for other nodes */
	struct qr_model *branch_m[2]; /* their models: this one's, with the
				    * subgraph as graph (owned, borrowing) */
	struct qr_value_info *sub_vi; /* the subgraphs' inputs: n_own of
				    * their own, then the n_outer values
				    * they read from this graph */
	size_t n_own, n_outer;
	size_t *outer_val;         /* those values here */
	struct qr_tensor *sub_t;   /* the inputs' tensors this run (own:
				    * owned, carried between Loop
				    * iterations; outer: borrowing data) */
	struct qr_tensor **sub_in; /* pointers to sub_t */
	struct qr_tensor *carry;   /* Loop: the next iteration's carried
				    * values, before they move to sub_t */
	struct qr_tensor *scan;    /* Loop: the stacked scan outputs (data
				    * from xrealloc, cap its bytes) */
	size_t n_scan;
};

/* A freed buffer waiting for reuse. */
struct pool_buf {
	void *p;                   /* 64-byte aligned, from qr_tensor_alloc */
	size_t cap;                /* bytes */
};

struct qr_exec {
	const struct qr_model *m;  /* borrowed */
	struct qr_graph *g;        /* owned index */
	struct qr_exec_opts opts;  /* copy (keep borrowed) */
	struct value *vals;
	size_t n_vals;
	struct qr_strmap by_name;  /* value name -> index in vals */
	struct step *steps;        /* topological order */
	size_t n_steps;
	size_t *step_of_node;      /* node index -> step */
	const char **inputs;       /* fed input names */
	size_t n_inputs;
	size_t *out_vals;          /* graph outputs -> value */
	struct qr_tensor **outs;   /* graph outputs of the last run */
	size_t n_outs;
	struct qr_tensor **taken;  /* copies handed out by output_take */
	struct pool_buf *pool;
	size_t n_pool, cap_pool;
	struct qr_bulk bulk;       /* the pool's large buffers (none in a
				    * child, which frees its pool) */
	int child;                 /* an If branch or a Loop body */
	size_t live_tensors, live_bytes, pool_bytes, peak_bytes;
	struct qr_exec_prof *prof; /* per op type, in first-seen order */
	size_t n_prof;
	struct qr_exec_prof *prof_sorted; /* with the subgraphs' ops */
	size_t n_sorted;
	char **prof_names;         /* the subgraph entries' names */
	size_t n_names;
	void *ws;                  /* kernel workspace every step shares
				    * (struct qr_op_call.ws): one node runs
				    * at a time */
	size_t ws_cap;             /* bytes in ws */
	size_t fold_bytes;         /* bytes of the values it folded and
				    * holds (borrowed ones not counted) */
	size_t *reader;            /* load with opts.views: per value, the
				    * step reading it, NO_STEP for none,
				    * n_steps for more than one */
	size_t *reader_in;         /* and the input it reads it at */
};

static void prof_names_free(struct qr_exec *e);

/* ---- name table ---- */

static size_t
val_find(const struct qr_exec *e, const char *name)
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

/* Give t (shape set by infer) a buffer: the smallest pooled one that
 * fits, or a new one. An empty tensor takes one too (qr_tensor_alloc). */
static void
pool_alloc(struct qr_exec *e, struct qr_tensor *t)
{
	size_t i, best = NO_STEP, want = t->nbytes > 0 ? t->nbytes : 1;

	QR_ASSERT(t->data == NULL);
	t->owned = 1;
	t->cap = 0;
	for (i = 0; i < e->n_pool; i++)
		if (e->pool[i].cap >= want &&
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
static void
pool_release(struct qr_exec *e, struct qr_tensor *t)
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

	if (s->prepared && s->desc->release != NULL)
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
	prof_names_free(e);
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

/*
 * Index the graph, make values and steps, find descriptors and run each
 * check once with the dtypes known at load. Nodes that cannot run go to
 * *u (heap, *n_u entries); other failures are returned.
 */
/* If and Loop have no op: the executor runs them (step.branch). */
static const struct qr_op_desc if_desc = {
	.domain = "", .name = "If", .since = 1,
};
static const struct qr_op_desc loop_desc = {
	.domain = "", .name = "Loop", .since = 1,
};

/* QR_LOOP_MAX: iterations a Loop may run, so that a model whose loop
 * never ends is refused instead of hanging the tool (torchvision's mask
 * head loops once per detection: 100 by default). */
#define QR_LOOP_MAX 100000
/* Bytes a subgraph's executor may keep pooled between its runs: a Loop
 * body whose carried values grow would otherwise pool a buffer of each
 * size it went through. */
#define QR_SUB_POOL_MAX ((size_t)64 << 20)

/* 1 for If, 2 for Loop (ai.onnx), 0 for other nodes. */
static int
control_kind(const struct qr_node *n)
{
	if (n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0)
		return 0;
	return strcmp(n->op_type, "If") == 0 ? 1 :
	       strcmp(n->op_type, "Loop") == 0 ? 2 : 0;
}

/* The inputs of step i's subgraphs: own (n_own declarations, a Loop
 * body's, shapes left open) then what they read from this graph, which
 * lives until step i. */
static void
sub_inputs(struct qr_exec *e, struct step *s, size_t i,
	   const struct qr_value_info *own, size_t n_own)
{
	const char *const *names;
	size_t k, n;

	names = qr_graph_outer_uses(e->g, s->node, &s->n_outer);
	s->n_own = n_own;
	n = n_own + s->n_outer;
	s->sub_vi = xcalloc(n + 1, sizeof *s->sub_vi);
	s->outer_val = xcalloc(s->n_outer + 1, sizeof *s->outer_val);
	s->sub_t = xcalloc(n + 1, sizeof *s->sub_t);
	s->sub_in = xcalloc(n + 1, sizeof *s->sub_in);
	for (k = 0; k < n; k++)
		s->sub_in[k] = &s->sub_t[k];
	for (k = 0; k < n_own; k++) {
		s->sub_vi[k].name = own[k].name;
		s->sub_vi[k].dtype = own[k].dtype;
		s->sub_vi[k].ndim = -1;
		s->sub_t[k].owned = 1;
	}
	for (k = 0; k < s->n_outer; k++) {
		struct value *v;

		s->outer_val[k] = val_find(e, names[k]);
		QR_ASSERT(s->outer_val[k] != NO_STEP); /* graph checked */
		v = &e->vals[s->outer_val[k]];
		if (v->kind == V_NODE)
			v->last_use = i;
		s->sub_vi[n_own + k].name = names[k];
		s->sub_vi[n_own + k].dtype = v->dtype;
		s->sub_vi[n_own + k].ndim = -1;
	}
}

/* The child executor s->branch[b] of subgraph attribute what of step s
 * (see sub_inputs); errors say "what: ..." without the model's name. */
static enum qr_status
sub_new(struct qr_exec *e, struct step *s, size_t b, const char *what,
	struct qr_diag *d)
{
	const struct qr_attr *a = qr_node_attr(s->call.node, what);
	struct qr_exec_opts o;
	struct qr_model *m;
	enum qr_status st;
	char *pre, *msg;
	size_t len;

	if (a == NULL || a->type != QR_ATTR_GRAPH || a->g == NULL)
		return qr_errorf(d, QR_EGRAPH, "no %s graph", what);
	memset(&o, 0, sizeof o);
	o.n_threads = e->opts.n_threads;
	o.any_order = e->opts.any_order;
	o.profile = e->opts.profile;
	m = s->branch_m[b] = xmalloc(sizeof *m);
	*m = *e->m;
	m->graph = *a->g;
	m->graph.inputs = s->sub_vi;
	m->graph.n_input = s->n_own + s->n_outer;
	st = qr_exec_new(m, &o, &s->branch[b], d);
	if (st == QR_OK) {
		s->branch[b]->child = 1;
		return st;
	}
	/* "else_branch: 1 unsupported node: ..." */
	pre = xasprintf("model '%s': ", e->m->path);
	len = strlen(pre);
	msg = xasprintf("%s: %s", what, d->msg + (strncmp(d->msg, pre, len) ==
						   0 ? len : 0));
	qr_errorf(d, st, "%s", msg);
	free(msg);
	free(pre);
	return st;
}

/* Dtype of output k of child c (UNDEFINED when load could not tell). */
static int
sub_out_dtype(const struct qr_exec *c, size_t k)
{
	return c->vals[c->out_vals[k]].dtype;
}

/*
 * Build step i's subgraph executors (see the top of this file). Errors
 * (a subgraph missing, input or output counts that do not fit the node,
 * a subgraph qreport cannot run) make the node unsupported, saying why.
 */
static enum qr_status
control_build(struct qr_exec *e, struct step *s, size_t i,
	      struct qr_diag *d)
{
	const struct qr_node *n = s->call.node;
	const struct qr_attr *body;
	const struct qr_graph_data *bg;
	enum qr_status st;
	size_t k, n_carried;

	if (control_kind(n) == 1) {
		sub_inputs(e, s, i, NULL, 0);
		if (n->n_in != 1)
			return qr_errorf(d, QR_EGRAPH, "takes one input (the "
					 "condition), not %zu", n->n_in);
		if ((st = sub_new(e, s, 0, "then_branch", d)) != QR_OK ||
		    (st = sub_new(e, s, 1, "else_branch", d)) != QR_OK)
			return st;
		for (k = 0; k < 2; k++)
			if (s->branch[k]->n_outs != n->n_out)
				return qr_errorf(d, QR_EGRAPH, "%s has %zu "
						 "outputs, the node %zu",
						 k ? "else_branch" :
						 "then_branch",
						 s->branch[k]->n_outs,
						 n->n_out);
		for (k = 0; k < n->n_out; k++)
			s->out_dtype[k] = sub_out_dtype(s->branch[0], k);
		return QR_OK;
	}
	/* Loop: inputs M, cond, v_initial...; body (iteration_num, cond,
	 * carried...) -> (cond, carried..., scan...) */
	s->is_loop = 1;
	body = qr_node_attr(n, "body");
	if (body == NULL || body->type != QR_ATTR_GRAPH || body->g == NULL)
		return qr_errorf(d, QR_EGRAPH, "no body graph");
	bg = body->g;
	if (n->n_in < 2 || bg->n_input != n->n_in ||
	    bg->n_output < bg->n_input - 1 || n->n_out != bg->n_output - 1)
		return qr_errorf(d, QR_EGRAPH, "body has %zu inputs and %zu "
				 "outputs for the node's %zu and %zu",
				 bg->n_input, bg->n_output, n->n_in,
				 n->n_out);
	sub_inputs(e, s, i, bg->inputs, bg->n_input);
	/* a body input declared without a type takes the Loop's */
	s->sub_vi[0].dtype = QR_DT_INT64;
	s->sub_vi[1].dtype = QR_DT_BOOL;
	for (k = 2; k < n->n_in; k++)
		if (s->sub_vi[k].dtype == QR_DT_UNDEFINED)
			s->sub_vi[k].dtype = s->in_dtype[k];
	n_carried = n->n_in - 2;
	s->n_scan = n->n_out - n_carried;
	s->scan = xcalloc(s->n_scan + 1, sizeof *s->scan);
	s->carry = xcalloc(n_carried + 1, sizeof *s->carry);
	if ((st = sub_new(e, s, 0, "body", d)) != QR_OK)
		return st;
	for (k = 0; k < n->n_out; k++)
		s->out_dtype[k] = sub_out_dtype(s->branch[0], k + 1);
	return QR_OK;
}

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
			struct qr_unsupported *x;

			*u = xreallocarray(*u, *n_u + 1, sizeof **u);
			x = &(*u)[(*n_u)++];
			memset(x, 0, sizeof *x);
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
			s->in_val[j] = val_find(e, n->in[j]);
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
		    control_kind(n) != 0) {
			if (control_build(e, s, i, &cd) == QR_OK)
				s->desc = s->is_loop ? &loop_desc : &if_desc;
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
			struct qr_unsupported *x;

			*u = xreallocarray(*u, *n_u + 1, sizeof **u);
			x = &(*u)[(*n_u)++];
			x->node = n;
			x->input = NULL;
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
		e->out_vals[i] = val_find(e, gd->outputs[i].name);
		QR_ASSERT(e->out_vals[i] != NO_STEP);
		e->vals[e->out_vals[i]].keep = 1;
	}
	for (i = 0; i < e->opts.n_keep; i++) {
		size_t v = val_find(e, e->opts.keep[i]);

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

/* opts.views, before load: who reads each value (e->reader). */
static void
readers_index(struct qr_exec *e)
{
	size_t i, j;

	e->reader = xmalloc((e->n_vals + 1) * sizeof *e->reader);
	e->reader_in = xcalloc(e->n_vals + 1, sizeof *e->reader_in);
	for (i = 0; i < e->n_vals; i++)
		e->reader[i] = NO_STEP;
	for (i = 0; i < e->n_steps; i++) {
		for (j = 0; j < e->steps[i].call.n_in; j++) {
			size_t v = e->steps[i].in_val[j];

			if (v == NO_STEP)
				continue;
			e->reader[v] = e->reader[v] == NO_STEP ? i : e->n_steps;
			e->reader_in[v] = j;
		}
		/* an If's branches read whole tensors: never a view */
		for (j = 0; j < e->steps[i].n_outer; j++)
			e->reader[e->steps[i].outer_val[j]] = e->n_steps;
	}
}

/* With opts.views at load: the step that would read s's output as a view
 * (ops.h, "Views"): s's op can describe its one output so, the output is
 * no graph output or kept tensor, and its one reader takes that input as
 * a view. NULL otherwise. */
static struct step *
view_taker(const struct qr_exec *e, const struct step *s)
{
	size_t v = s->call.n_out == 1 ? s->out_val[0] : NO_STEP;
	struct step *t;

	if (e->reader == NULL || s->desc->view == NULL || v == NO_STEP ||
	    e->vals[v].keep || e->reader[v] == NO_STEP ||
	    e->reader[v] == e->n_steps)
		return NULL;
	t = &e->steps[e->reader[v]];
	if (!(t->desc->view_in & (1u << e->reader_in[v])))
		return NULL;
	return t;
}

/* Take step s's folded outputs from opts.share when that executor (of
 * the same model) folded the same node: views of its tensors, which it
 * keeps; an output it trimmed (fold_trim) is trimmed here too (NULL).
 * 1 when done. */
static int
fold_borrow(struct qr_exec *e, struct step *s)
{
	const struct qr_exec *o = e->opts.share;
	const struct step *os;
	struct qr_tensor **out;
	size_t j;

	if (o == NULL || o->m != e->m || s->node >= o->n_steps)
		return 0;
	os = &o->steps[o->step_of_node[s->node]];
	if (os->folded == NULL)
		return 0;
	out = xcalloc(s->call.n_out + 1, sizeof *out);
	for (j = 0; j < s->call.n_out; j++) {
		struct value *v = &e->vals[s->out_val[j]];

		v->folded = 1;
		if (os->folded[j] == NULL)
			continue;
		out[j] = xmalloc(sizeof *out[j]);
		*out[j] = *os->folded[j];
		out[j]->owned = 0;
		v->konst = out[j];
	}
	s->folded = out;
	return 1;
}

/*
 * Constant folding: a step whose inputs are all constants (initializers,
 * Constant outputs, or outputs of steps folded before it) is run once
 * here, with the op's own infer and run, so its outputs are the same bits
 * a run would give (in ONNX Runtime's order even when opts.any_order is
 * set, so that executors of one model fold alike and can share the
 * results: fold_borrow). Its outputs become constants that later
 * prepares see (so weights behind a DequantizeLinear are packed once) and
 * that each run hands to the hook without recomputing them. A step that
 * fails, has an unnamed output or would take the executor's folded bytes
 * past opts.fold_max is left to run normally; so is one the share did
 * not fold. With opts.views, one whose reader would take it as a view
 * is folded only when the reader says a constant is worth it
 * (desc->view_fold: a Conv that Winograd can take; a MatMul gains
 * nothing), and is left to views_plan otherwise.
 */
static void
step_fold(struct qr_exec *e, struct step *s)
{
	struct qr_tensor **out;
	struct qr_op_call c = s->call;
	struct qr_diag quiet = {0};
	size_t j, n_in = 0, bytes = 0;
	size_t fold_max = e->opts.fold_max ? e->opts.fold_max
					   : QR_EXEC_FOLD_MAX;
	const struct step *taker;
	int ok = 1;

	if (s->recheck || s->call.n_out == 0 || s->branch[0] != NULL)
		return;
	for (j = 0; j < s->call.n_out; j++)
		if (s->out_val[j] == NO_STEP || e->vals[s->out_val[j]].keep ||
		    e->vals[s->out_val[j]].konst != NULL)
			return;
	/* before the inputs: one the share trimmed is NULL here */
	if (fold_borrow(e, s))
		return;
	if (e->opts.share != NULL && e->opts.share->m == e->m)
		return; /* what the share did not fold (its budget) */
	taker = view_taker(e, s);
	for (j = 0; j < s->call.n_in; j++) {
		if (s->in_val[j] == NO_STEP)
			continue;
		if (s->prep_in[j] == NULL)
			return;
		n_in++;
	}
	if (n_in == 0)
		return; /* nothing to gain (and generators stay live) */
	out = xcalloc(s->call.n_out + 1, sizeof *out);
	for (j = 0; j < s->call.n_out; j++) {
		out[j] = xcalloc(1, sizeof *out[j]);
		out[j]->owned = 1;
	}
	c.in = s->prep_in;
	c.out = out;
	c.any_order = 0;
	if (s->desc->infer(&c, &quiet) != QR_OK) {
		ok = 0;
		goto done;
	}
	for (j = 0; j < s->call.n_out; j++) {
		if (out[j]->nbytes > fold_max - bytes ||
		    bytes + out[j]->nbytes > fold_max - e->fold_bytes ||
		    (taker != NULL && (taker->desc->view_fold == NULL ||
				       !taker->desc->view_fold(
					       &taker->call,
					       e->reader_in[s->out_val[0]],
					       out[j])))) {
			ok = 0;
			goto done;
		}
		bytes += out[j]->nbytes;
	}
	for (j = 0; j < s->call.n_out; j++) {
		out[j]->name = e->vals[s->out_val[j]].name;
		qr_tensor_alloc(out[j]);
	}
	if (s->desc->run(&c, &quiet) != QR_OK)
		ok = 0;
done:
	qr_diag_clear(&quiet);
	if (!ok) {
		for (j = 0; j < s->call.n_out; j++)
			qr_tensor_free(out[j]);
		free(out);
		return;
	}
	for (j = 0; j < s->call.n_out; j++) {
		struct value *v = &e->vals[s->out_val[j]];

		v->konst = out[j];
		v->folded = 1;
	}
	s->folded = out;
	e->fold_bytes += bytes;
}

/*
 * opts.trim_folds, after step i is prepared (and folded or not): free
 * each folded value whose last reader is step i when no step that runs
 * at run time reads it and it is no graph output or kept tensor. A
 * weight behind Transpose -> QuantizeLinear -> DequantizeLinear keeps
 * only the last (vit_b_16 exported without constant folding, then
 * quantized: 390 MB less), and never holds all three at once. live: per value, read by a step not folded.
 */
static void
fold_trim(struct qr_exec *e, size_t i, unsigned char *live)
{
	const struct step *s = &e->steps[i];
	size_t j, k, n = s->call.n_in + s->call.n_out;

	for (j = 0; s->folded == NULL && j < s->call.n_in; j++)
		if (s->in_val[j] != NO_STEP)
			live[s->in_val[j]] = 1;
	for (j = 0; j < n; j++) {
		size_t v = j < s->call.n_in ? s->in_val[j]
					     : s->out_val[j - s->call.n_in];
		struct value *val;
		struct step *p;

		if (v == NO_STEP)
			continue;
		val = &e->vals[v];
		if (val->kind != V_NODE || !val->folded || val->keep ||
		    live[v] || val->last_use != i || val->konst == NULL)
			continue;
		p = &e->steps[val->producer];
		for (k = 0; k < p->call.n_out; k++)
			if (p->out_val[k] == v)
				p->folded[k] = NULL;
		if (val->konst->owned)
			e->fold_bytes -= val->konst->nbytes;
		qr_tensor_free(val->konst);
		val->konst = NULL;
	}
}

/*
 * opts.views, after load: leave as a view each step that was not folded
 * (step_fold folds only small ones when they can be views) and has a
 * view taker, when every input is constant: a weight's DequantizeLinear,
 * of an initializer or of a folded Transpose -> QuantizeLinear chain.
 */
static void
views_plan(struct qr_exec *e)
{
	size_t i, j;

	for (i = 0; i < e->n_steps; i++) {
		struct step *s = &e->steps[i], *t = view_taker(e, s);
		struct qr_op_call c = s->call;
		struct qr_qview *view;
		size_t v;
		int konst = 1;

		if (t == NULL || s->folded != NULL || t->folded != NULL)
			continue;
		for (j = 0; j < s->call.n_in; j++)
			if (s->in_val[j] != NO_STEP && s->prep_in[j] == NULL)
				konst = 0;
		if (!konst)
			continue;
		c.in = s->prep_in;
		view = xcalloc(1, sizeof *view);
		if (s->desc->view(&c, view) != QR_OK) {
			free(view);
			continue;
		}
		v = s->out_val[0];
		s->view = view;
		s->nulls = xcalloc(2, sizeof *s->nulls);
		e->vals[v].view = 1;
		t->in_q = xcalloc(t->call.n_in + 1, sizeof *t->in_q);
		t->in_q[e->reader_in[v]] = view;
		t->call.in_q = t->in_q;
	}
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

/*
 * See run.h. Build, refuse unsupported nodes in one message, then run
 * every prepare once in topological order, folding steps whose inputs
 * are all constant.
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
		readers_index(e);
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
		if (s->desc->prepare != NULL) {
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
		step_fold(e, s);
		if (e->opts.trim_folds)
			fold_trim(e, i, live);
	}
	if (e->opts.views)
		views_plan(e);
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

/* ---- run ---- */

/* One bound symbolic dim. */
struct sym {
	const char *param;   /* dim_param, borrowed */
	int64_t value;
	const char *input;   /* the input that bound it */
};

/* Check t against input v's declaration, binding symbolic dims. */
static enum qr_status
check_input(struct qr_exec *e, const struct value *v,
	    const struct qr_tensor *t, struct sym *syms, size_t *n_syms,
	    struct qr_diag *d)
{
	const struct qr_value_info *vi = v->decl;
	char buf[128];
	int i;
	size_t k;

	if (vi->dtype != QR_DT_UNDEFINED && t->dtype != vi->dtype)
		return qr_errorf(d, QR_ESHAPE, "model '%s': input '%s' is %s, "
				 "expected %s", e->m->path, v->name,
				 qr_dtype_name(t->dtype),
				 qr_dtype_name(vi->dtype));
	if (vi->ndim < 0)
		return QR_OK;
	if (t->ndim != vi->ndim)
		return qr_errorf(d, QR_ESHAPE, "model '%s': input '%s' %s has "
				 "rank %d, expected %d", e->m->path, v->name,
				 qr_shape_str(t, buf, sizeof buf), t->ndim,
				 vi->ndim);
	for (i = 0; i < vi->ndim; i++) {
		const struct qr_dim *dm = &vi->dims[i];

		if (dm->value >= 0 && t->dims[i] != dm->value)
			return qr_errorf(d, QR_ESHAPE, "model '%s': input '%s' "
					 "%s: dim %d is %lld, expected %lld",
					 e->m->path, v->name,
					 qr_shape_str(t, buf, sizeof buf), i,
					 (long long)t->dims[i],
					 (long long)dm->value);
		if (dm->value >= 0 || dm->param == NULL)
			continue;
		for (k = 0; k < *n_syms; k++)
			if (strcmp(syms[k].param, dm->param) == 0)
				break;
		if (k == *n_syms) {
			syms[k].param = dm->param;
			syms[k].value = t->dims[i];
			syms[k].input = v->name;
			(*n_syms)++;
		} else if (syms[k].value != t->dims[i]) {
			return qr_errorf(d, QR_ESHAPE, "model '%s': input '%s' "
					 "has %s = %lld but input '%s' has "
					 "%lld", e->m->path, v->name,
					 dm->param, (long long)t->dims[i],
					 syms[k].input,
					 (long long)syms[k].value);
		}
	}
	return QR_OK;
}

/* Release every activation of the previous run. */
static void
exec_reset(struct qr_exec *e)
{
	size_t i;

	for (i = 0; i < e->n_vals; i++) {
		struct value *v = &e->vals[i];

		if (v->kind == V_INPUT)
			v->cur = NULL;
		if (v->kind != V_NODE)
			continue;
		if (v->cur != NULL && v->cur == &v->store && !v->view)
			pool_release(e, &v->store);
		v->cur = NULL;
	}
	for (i = 0; i < e->n_outs; i++)
		e->outs[i] = NULL;
}

/* Re-run check with the actual input dtypes (some were unknown at load). */
static enum qr_status
step_recheck(struct step *s, struct qr_diag *d)
{
	size_t j;

	for (j = 0; j < s->call.n_in; j++)
		s->in_dtype[j] = s->call.in[j] != NULL ?
			s->call.in[j]->dtype : QR_DT_UNDEFINED;
	if (s->desc->check == NULL)
		return QR_OK;
	return s->desc->check(&s->call, d);
}

/* After child c's outputs are copied: release its activations, and its
 * pooled buffers when they pass QR_SUB_POOL_MAX. */
static void
sub_done(struct qr_exec *c)
{
	size_t i;

	exec_reset(c);
	if (c->pool_bytes <= QR_SUB_POOL_MAX)
		return;
	for (i = 0; i < c->n_pool; i++)
		free(c->pool[i].p);
	c->n_pool = 0;
	c->pool_bytes = 0;
}

/* Bind the values step s's subgraphs read from this graph (the inputs
 * after the own ones), under the subgraphs' names. */
static enum qr_status
bind_outer(struct qr_exec *e, struct step *s, struct qr_diag *d)
{
	size_t j;

	for (j = 0; j < s->n_outer; j++) {
		const struct qr_tensor *t = e->vals[s->outer_val[j]].cur;
		struct qr_tensor *b = &s->sub_t[s->n_own + j];

		if (t == NULL)
			return qr_errorf(d, QR_EGRAPH, "node '%s' (%s): '%s' "
					 "is not available to its subgraphs",
					 s->call.node->name,
					 s->call.node->op_type,
					 s->sub_vi[s->n_own + j].name);
		*b = *t;
		b->name = s->sub_vi[s->n_own + j].name;
		b->owned = 0;
	}
	return QR_OK;
}

/* Copy src into step s's output j (from e's pool). */
static enum qr_status
out_copy(struct qr_exec *e, struct step *s, size_t j,
	 const struct qr_tensor *src, struct qr_diag *d)
{
	struct qr_tensor *t = s->call.out[j];
	enum qr_status st;

	st = qr_tensor_set_shape(t, src->dtype, src->ndim, src->dims,
				 s->call.node->out[j], d);
	if (st != QR_OK)
		return st;
	if (s->out_val[j] == NO_STEP) {
		qr_tensor_alloc(t);
	} else {
		t->name = e->vals[s->out_val[j]].name;
		pool_alloc(e, t);
		e->vals[s->out_val[j]].cur = t;
	}
	if (src->nbytes > 0)
		memcpy(t->data, src->data, src->nbytes);
	return QR_OK;
}

/* Owned t becomes a copy of src, named name. */
static enum qr_status
own_copy(struct qr_tensor *t, const struct qr_tensor *src, const char *name,
	 struct qr_diag *d)
{
	enum qr_status st;

	st = qr_tensor_set_shape(t, src->dtype, src->ndim, src->dims, name, d);
	if (st != QR_OK)
		return st;
	t->name = name;
	qr_tensor_alloc(t);
	if (src->nbytes > 0)
		memcpy(t->data, src->data, src->nbytes);
	return QR_OK;
}

/* The one value of a scalar-like tensor (one element) of an integer or
 * bool dtype; -1 (and *ok 0) otherwise. */
static int64_t
scalar_of(const struct qr_tensor *t, int *ok)
{
	*ok = t != NULL && t->n_elem == 1 && t->data != NULL;
	if (!*ok)
		return -1;
	switch (t->dtype) {
	case QR_DT_BOOL: case QR_DT_UINT8:
		return ((const uint8_t *)t->data)[0];
	case QR_DT_INT64:
		return ((const int64_t *)t->data)[0];
	case QR_DT_INT32:
		return ((const int32_t *)t->data)[0];
	default:
		*ok = 0;
		return -1;
	}
}

/* Run If step s: the branch its condition picks, on the current
 * tensors; its outputs are copied into the step's. */
static enum qr_status
if_exec(struct qr_exec *e, struct step *s, struct qr_diag *d)
{
	const struct qr_tensor *c = s->call.in[0];
	const struct qr_node *n = s->call.node;
	struct qr_tensor *const *outs;
	struct qr_exec *b;
	enum qr_status st;
	size_t j, n_outs;
	int64_t v;
	char sh[64];
	int ok;

	v = scalar_of(c, &ok);
	if (!ok || c->dtype != QR_DT_BOOL)
		return qr_errorf(d, QR_ESHAPE, "node '%s' (If): condition "
				 "'%s' %s is not one bool", n->name, n->in[0],
				 c ? qr_shape_str(c, sh, sizeof sh) : "");
	if ((st = bind_outer(e, s, d)) != QR_OK)
		return st;
	b = s->branch[v ? 0 : 1];
	st = qr_exec_run(b, s->sub_in, s->n_outer, NULL, NULL, d);
	if (st != QR_OK)
		return st;
	outs = qr_exec_outputs(b, &n_outs);
	for (j = 0; j < s->call.n_out && st == QR_OK; j++)
		st = out_copy(e, s, j, outs[j], d);
	sub_done(b);
	return st;
}

/* Append src, iteration it's scan output k of Loop step s, to s->scan[k]
 * ([it][src's shape]; every iteration's must match the first's). */
static enum qr_status
scan_append(struct step *s, size_t k, size_t it, const struct qr_tensor *src,
	    struct qr_diag *d)
{
	struct qr_tensor *a = &s->scan[k];
	const struct qr_node *n = s->call.node;
	const char *name = n->out[n->n_out - s->n_scan + k];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	size_t used = a->nbytes;
	enum qr_status st;
	char b1[64], b2[64];
	int i;

	if (src->ndim + 1 > QR_TENSOR_MAX_DIMS)
		return qr_errorf(d, QR_ESHAPE, "node '%s' (Loop): scan output "
				 "'%s' has rank %d", n->name, name, src->ndim);
	if (it > 0 && (src->dtype != a->dtype || src->ndim + 1 != a->ndim ||
		       memcmp(src->dims, a->dims + 1,
			      (size_t)src->ndim * sizeof *src->dims) != 0))
		return qr_errorf(d, QR_ESHAPE, "node '%s' (Loop): scan output "
				 "'%s' is %s at iteration %zu, %s before",
				 n->name, name,
				 qr_shape_str(src, b1, sizeof b1), it,
				 qr_shape_str(a, b2, sizeof b2));
	dims[0] = (int64_t)it + 1;
	for (i = 0; i < src->ndim; i++)
		dims[i + 1] = src->dims[i];
	if (it == 0)
		used = 0;
	st = qr_tensor_set_shape(a, src->dtype, src->ndim + 1, dims, name, d);
	if (st != QR_OK)
		return st;
	if (a->nbytes > a->cap) {
		a->cap = a->nbytes > 2 * a->cap ? a->nbytes : 2 * a->cap;
		a->data = xrealloc(a->data, a->cap);
	}
	if (src->nbytes > 0)
		memcpy((char *)a->data + used, src->data, src->nbytes);
	return QR_OK;
}

/*
 * Run Loop step s: while the trip count M (input 0, when given) and the
 * condition (input 1 and then the body's first output, when given) allow,
 * run the body on (iteration number, condition, carried values, what it
 * reads from this graph); the carried values move to the next iteration,
 * the scan outputs stack along a new first axis. More than QR_LOOP_MAX
 * iterations are refused.
 */
static enum qr_status
loop_exec(struct qr_exec *e, struct step *s, struct qr_diag *d)
{
	const struct qr_node *n = s->call.node;
	const struct qr_tensor *tm = s->call.in[0], *tc = s->call.in[1];
	size_t n_car = n->n_in - 2, it, k, n_outs;
	struct qr_tensor *const *outs;
	struct qr_tensor *iter = &s->sub_t[0], *cond = &s->sub_t[1];
	int64_t trip = 0, keep = 1;
	enum qr_status st;
	char sh[64];
	int ok;

	if (tm != NULL && ((trip = scalar_of(tm, &ok)), !ok ||
			   tm->dtype != QR_DT_INT64))
		return qr_errorf(d, QR_ESHAPE, "node '%s' (Loop): trip count "
				 "'%s' %s is not one int64", n->name, n->in[0],
				 qr_shape_str(tm, sh, sizeof sh));
	if (tc != NULL && ((keep = scalar_of(tc, &ok)), !ok ||
			   tc->dtype != QR_DT_BOOL))
		return qr_errorf(d, QR_ESHAPE, "node '%s' (Loop): condition "
				 "'%s' %s is not one bool", n->name, n->in[1],
				 qr_shape_str(tc, sh, sizeof sh));
	if ((st = bind_outer(e, s, d)) != QR_OK)
		return st;
	if ((st = qr_tensor_set_shape(iter, QR_DT_INT64, 0, NULL, "iteration",
				      d)) != QR_OK ||
	    (st = qr_tensor_set_shape(cond, QR_DT_BOOL, 0, NULL, "condition",
				      d)) != QR_OK)
		return st;
	iter->name = s->sub_vi[0].name;
	cond->name = s->sub_vi[1].name;
	qr_tensor_alloc(iter);
	qr_tensor_alloc(cond);
	for (k = 0; k < n_car; k++) {
		if (s->call.in[2 + k] == NULL)
			return qr_errorf(d, QR_EGRAPH, "node '%s' (Loop): "
					 "carried value %zu is absent",
					 n->name, k);
		st = own_copy(&s->sub_t[2 + k], s->call.in[2 + k],
			      s->sub_vi[2 + k].name, d);
		if (st != QR_OK)
			return st;
	}
	for (k = 0; k < s->n_scan; k++) {
		s->scan[k].nbytes = 0;
		s->scan[k].ndim = 1;
		s->scan[k].dims[0] = 0;
		s->scan[k].n_elem = 0;
		s->scan[k].dtype = sub_out_dtype(s->branch[0], 1 + n_car + k);
	}
	for (it = 0; (tm == NULL || (int64_t)it < trip) && keep; it++) {
		if (it >= QR_LOOP_MAX)
			return qr_errorf(d, QR_EUNSUPPORTED, "node '%s' "
					 "(Loop): more than %d iterations",
					 n->name, QR_LOOP_MAX);
		((int64_t *)iter->data)[0] = (int64_t)it;
		((uint8_t *)cond->data)[0] = 1;
		st = qr_exec_run(s->branch[0], s->sub_in,
				 s->n_own + s->n_outer, NULL, NULL, d);
		if (st != QR_OK)
			return st;
		outs = qr_exec_outputs(s->branch[0], &n_outs);
		if (tc != NULL) {
			keep = scalar_of(outs[0], &ok);
			if (!ok || outs[0]->dtype != QR_DT_BOOL)
				return qr_errorf(d, QR_ESHAPE, "node '%s' "
						 "(Loop): the body's condition "
						 "is not one bool", n->name);
		}
		/* all outputs read before any carried value moves: an
		 * output may be one of this iteration's inputs */
		for (k = 0; k < n_car; k++)
			if ((st = own_copy(&s->carry[k], outs[1 + k],
					   s->sub_vi[2 + k].name, d)) != QR_OK)
				return st;
		for (k = 0; k < s->n_scan; k++)
			if ((st = scan_append(s, k, it, outs[1 + n_car + k],
					      d)) != QR_OK)
				return st;
		for (k = 0; k < n_car; k++) {
			struct qr_tensor t = s->sub_t[2 + k];

			s->sub_t[2 + k] = s->carry[k];
			s->carry[k] = t;
		}
		sub_done(s->branch[0]);
	}
	for (k = 0; k < n_car && st == QR_OK; k++)
		st = out_copy(e, s, k, &s->sub_t[2 + k], d);
	for (k = 0; k < s->n_scan && st == QR_OK; k++)
		st = out_copy(e, s, n_car + k, &s->scan[k], d);
	return st;
}

/* Infer, allocate and run one step whose call.in is filled. */
static enum qr_status
step_exec(struct qr_exec *e, struct step *s, struct qr_diag *d)
{
	enum qr_status st;
	size_t j;

	if (s->branch[0] != NULL)
		return s->is_loop ? loop_exec(e, s, d) : if_exec(e, s, d);
	if (s->recheck) {
		st = step_recheck(s, d);
		if (st != QR_OK)
			return st;
	}
	st = s->desc->infer(&s->call, d);
	if (st != QR_OK)
		return st;
	for (j = 0; j < s->call.n_out; j++) {
		struct qr_tensor *t = s->call.out[j];

		if (s->out_val[j] == NO_STEP) {
			qr_tensor_alloc(t);
			continue;
		}
		QR_ASSERT(t->dtype != QR_DT_UNDEFINED);
		QR_ASSERT(s->recheck || s->out_dtype[j] == QR_DT_UNDEFINED ||
			  s->out_dtype[j] == t->dtype);
		t->name = e->vals[s->out_val[j]].name;
		pool_alloc(e, t);
		e->vals[s->out_val[j]].cur = t;
	}
	return s->desc->run(&s->call, d);
}

/*
 * See run.h. Binds the inputs, then per step: fill the inputs, re-check
 * dtypes if load could not, infer, allocate from the pool, run, time,
 * call the hook, release what this step used last. On failure every
 * activation of the run is released.
 */
enum qr_status
qr_exec_run(struct qr_exec *e, struct qr_tensor *const *inputs,
	    size_t n_inputs, qr_hook_fn hook, void *user, struct qr_diag *d)
{
	struct sym *syms = NULL;
	size_t n_syms = 0, i, j;
	enum qr_status st = QR_OK;

	exec_reset(e);
	syms = xcalloc(64 + n_inputs * QR_TENSOR_MAX_DIMS, sizeof *syms);
	for (i = 0; i < n_inputs; i++) {
		const struct qr_tensor *t = inputs[i];
		size_t v = t->name != NULL ? val_find(e, t->name) : NO_STEP;

		if (v == NO_STEP || e->vals[v].kind != V_INPUT) {
			st = qr_errorf(d, QR_EUSAGE, "model '%s': no graph "
				       "input named '%s'", e->m->path,
				       t->name ? t->name : "(null)");
			goto out;
		}
		if (e->vals[v].cur != NULL) {
			st = qr_errorf(d, QR_EUSAGE, "model '%s': graph input "
				       "'%s' is given twice", e->m->path,
				       t->name);
			goto out;
		}
		st = check_input(e, &e->vals[v], t, syms, &n_syms, d);
		if (st != QR_OK)
			goto out;
		e->vals[v].cur = (struct qr_tensor *)t;
	}
	for (i = 0; i < e->n_inputs; i++) {
		if (e->vals[val_find(e, e->inputs[i])].cur == NULL) {
			st = qr_errorf(d, QR_EUSAGE, "model '%s': graph input "
				       "'%s' was not given", e->m->path,
				       e->inputs[i]);
			goto out;
		}
	}
	for (i = 0; i < e->n_steps; i++) {
		struct step *s = &e->steps[i];
		double t0 = e->opts.profile ? qr_now() : 0;

		struct qr_tensor **outs = s->call.out;

		if (s->folded != NULL) {
			for (j = 0; j < s->call.n_out; j++)
				e->vals[s->out_val[j]].cur = s->folded[j];
			outs = s->folded;
		} else if (s->view != NULL) {
			/* its reader reads the view: only the shape */
			for (j = 0; j < s->call.n_in; j++)
				s->call.in[j] = s->in_val[j] == NO_STEP ?
					NULL : e->vals[s->in_val[j]].cur;
			st = s->desc->infer(&s->call, d);
			if (st != QR_OK)
				goto out;
			s->call.out[0]->name = e->vals[s->out_val[0]].name;
			e->vals[s->out_val[0]].cur = s->call.out[0];
			outs = s->nulls;
		} else {
			for (j = 0; j < s->call.n_in; j++)
				s->call.in[j] = s->in_val[j] == NO_STEP ?
					NULL : e->vals[s->in_val[j]].cur;
			st = step_exec(e, s, d);
			if (st != QR_OK)
				goto out;
		}
		if (e->opts.profile) {
			e->prof[s->prof].seconds += qr_now() - t0;
			e->prof[s->prof].calls++;
		}
		if (hook != NULL) {
			int rc = hook(s->call.node, outs, s->call.n_out,
				      user);

			if (rc != 0) {
				st = rc > 0 && rc <= QR_ETHRESHOLD ?
					(enum qr_status)rc : QR_EPARTIAL;
				qr_errorf(d, st, "model '%s': run stopped "
					  "after node '%s'", e->m->path,
					  s->call.node->name);
				goto out;
			}
		}
		for (j = 0; j < s->n_release; j++) {
			struct value *v = &e->vals[s->release[j]];

			if (!v->folded && !v->view)
				pool_release(e, &v->store);
			v->cur = NULL;
		}
	}
	for (i = 0; i < e->n_outs; i++)
		e->outs[i] = e->vals[e->out_vals[i]].cur;
out:
	/* Inputs are borrowed for this run only. */
	for (i = 0; i < e->n_inputs; i++)
		e->vals[val_find(e, e->inputs[i])].cur = NULL;
	if (st != QR_OK)
		exec_reset(e);
	free(syms);
	return st;
}

/* The last run's graph outputs (borrowed until the next run). */
struct qr_tensor *const *
qr_exec_outputs(const struct qr_exec *e, size_t *n)
{
	*n = e->n_outs;
	return e->outs;
}

/* Move output i to the caller: an activation's buffer is handed over
 * (unless it is carved from e->bulk), an input or constant output is
 * copied. NULL when already taken. */
struct qr_tensor *
qr_exec_output_take(struct qr_exec *e, size_t i)
{
	struct value *v;
	struct qr_tensor *t;

	if (i >= e->n_outs || e->outs[i] == NULL)
		return NULL;
	v = &e->vals[e->out_vals[i]];
	if (e->outs[i] != &v->store) {
		t = qr_tensor_copy(e->outs[i]);
	} else if (qr_bulk_owns(&e->bulk, v->store.data)) {
		/* a bulk buffer is e's: the caller gets a copy */
		t = qr_tensor_copy(&v->store);
		pool_release(e, &v->store);
		v->cur = NULL;
	} else {
		t = xcalloc(1, sizeof *t);
		*t = v->store;
		e->live_tensors--;
		e->live_bytes -= v->store.cap;
		v->store.data = NULL;
		v->store.cap = 0;
		v->cur = NULL;
	}
	e->outs[i] = NULL;
	return t;
}

/* A kept tensor (graph output or opts.keep) or a constant, by name;
 * borrowed. */
struct qr_tensor *
qr_exec_tensor_get(const struct qr_exec *e, const char *name)
{
	size_t v = val_find(e, name);

	if (v == NO_STEP || (e->vals[v].kind == V_NODE && !e->vals[v].keep))
		return NULL;
	return e->vals[v].cur;
}

/*
 * See run.h. Uses the node's prepared state; outputs are fresh owned
 * tensors, never pool buffers, so they outlive later runs.
 */
enum qr_status
qr_exec_run_node(struct qr_exec *e, size_t node, struct qr_tensor *const *inputs,
		 struct qr_tensor **outputs, struct qr_diag *d)
{
	struct step *s;
	struct qr_op_call c;
	struct qr_tensor **in = NULL, **out = NULL;
	int *in_dt = NULL;
	enum qr_status st = QR_OK;
	size_t j;

	QR_ASSERT(node < e->n_steps);
	s = &e->steps[e->step_of_node[node]];
	c = s->call;
	if (s->branch[0] != NULL)
		return qr_errorf(d, QR_EUNSUPPORTED, "node '%s' (%s): control "
				 "flow runs only in a whole run", c.node->name,
				 c.node->op_type);
	for (j = 0; j < c.n_out; j++)
		outputs[j] = NULL;
	in = xcalloc(c.n_in + 1, sizeof *in);
	out = xcalloc(c.n_out + 1, sizeof *out);
	in_dt = xcalloc(c.n_in + 1, sizeof *in_dt);
	for (j = 0; j < c.n_in; j++) {
		const struct value *v;

		if (s->in_val[j] == NO_STEP)
			continue;
		v = &e->vals[s->in_val[j]];
		in[j] = inputs != NULL && inputs[j] != NULL ? inputs[j] :
			v->konst;
		if (in[j] == NULL) {
			st = qr_errorf(d, QR_EUSAGE, "node '%s' (%s): input %zu "
				       "'%s' was not given", c.node->name,
				       c.node->op_type, j, v->name);
			goto out;
		}
		if (v->dtype != QR_DT_UNDEFINED && in[j]->dtype != v->dtype) {
			st = qr_errorf(d, QR_ESHAPE, "node '%s' (%s): input "
				       "%zu '%s' is %s, expected %s",
				       c.node->name, c.node->op_type, j,
				       v->name, qr_dtype_name(in[j]->dtype),
				       qr_dtype_name(v->dtype));
			goto out;
		}
		in_dt[j] = in[j]->dtype;
	}
	for (j = 0; j < c.n_out; j++) {
		out[j] = xcalloc(1, sizeof *out[j]);
		out[j]->name = c.node->out[j];
		out[j]->owned = 1;
	}
	c.in = in;
	c.out = out;
	c.in_dtype = in_dt;
	c.out_dtype = s->out_dtype;
	if (s->recheck && s->desc->check != NULL) {
		st = s->desc->check(&c, d);
		if (st != QR_OK)
			goto out;
	}
	st = s->desc->infer(&c, d);
	if (st != QR_OK)
		goto out;
	for (j = 0; j < c.n_out; j++)
		qr_tensor_alloc(out[j]);
	st = s->desc->run(&c, d);
	if (st != QR_OK)
		goto out;
	for (j = 0; j < c.n_out; j++) {
		if (c.node->out[j][0] != '\0') {
			outputs[j] = out[j];
			out[j] = NULL;
		}
	}
out:
	for (j = 0; j < c.n_out; j++)
		qr_tensor_free(out[j]);
	free(in);
	free(out);
	free(in_dt);
	return st;
}

static int
prof_cmp(const void *a, const void *b)
{
	const struct qr_exec_prof *x = a, *y = b;

	return (x->seconds < y->seconds) - (x->seconds > y->seconds);
}

/* Per-op-type timings, most time first (borrowed until the next call). */
/* Add calls and seconds under name to e->prof_sorted, merging a name
 * seen before; name is owned by e->prof_names when nested. */
static void
prof_add(struct qr_exec *e, const char *name, size_t calls, double seconds,
	 int nested, size_t *cap)
{
	size_t i;

	for (i = 0; i < e->n_sorted; i++)
		if (strcmp(e->prof_sorted[i].op_type, name) == 0) {
			e->prof_sorted[i].calls += calls;
			e->prof_sorted[i].seconds += seconds;
			return;
		}
	if (e->n_sorted == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		e->prof_sorted = xreallocarray(e->prof_sorted, *cap,
					       sizeof *e->prof_sorted);
	}
	e->prof_sorted[e->n_sorted].op_type = name;
	e->prof_sorted[e->n_sorted].calls = calls;
	e->prof_sorted[e->n_sorted].seconds = seconds;
	e->prof_sorted[e->n_sorted++].nested = nested;
}

/* The entries of child c (and its children), named "prefix/op", into
 * top's list. */
static void
prof_nested(struct qr_exec *top, const struct qr_exec *c, const char *prefix,
	    size_t *cap)
{
	size_t i, b;

	for (i = 0; i < c->n_prof; i++) {
		char *name;

		if (c->prof[i].calls == 0)
			continue;
		name = xasprintf("%s/%s", prefix, c->prof[i].op_type);
		top->prof_names = xreallocarray(top->prof_names,
						top->n_names + 1,
						sizeof *top->prof_names);
		top->prof_names[top->n_names++] = name;
		prof_add(top, name, c->prof[i].calls, c->prof[i].seconds, 1,
			 cap);
	}
	for (i = 0; i < c->n_steps; i++)
		for (b = 0; b < 2; b++)
			if (c->steps[i].branch[b] != NULL) {
				char *p = xasprintf("%s/%s", prefix,
						    c->steps[i].call.node->
						    op_type);

				prof_nested(top, c->steps[i].branch[b], p,
					    cap);
				free(p);
			}
}

static void
prof_names_free(struct qr_exec *e)
{
	size_t i;

	for (i = 0; i < e->n_names; i++)
		free(e->prof_names[i]);
	free(e->prof_names);
	e->prof_names = NULL;
	e->n_names = 0;
}

/* See run.h: this executor's op types, then those of its If and Loop
 * bodies (nested), most time first. */
const struct qr_exec_prof *
qr_exec_profile(struct qr_exec *e, size_t *n)
{
	size_t i, b, cap = 0;

	*n = 0;
	if (!e->opts.profile)
		return NULL;
	free(e->prof_sorted);
	e->prof_sorted = NULL;
	e->n_sorted = 0;
	prof_names_free(e);
	for (i = 0; i < e->n_prof; i++)
		prof_add(e, e->prof[i].op_type, e->prof[i].calls,
			 e->prof[i].seconds, 0, &cap);
	for (i = 0; i < e->n_steps; i++)
		for (b = 0; b < 2; b++)
			if (e->steps[i].branch[b] != NULL)
				prof_nested(e, e->steps[i].branch[b],
					    e->steps[i].call.node->op_type,
					    &cap);
	if (e->n_sorted > 0)
		qsort(e->prof_sorted, e->n_sorted, sizeof *e->prof_sorted,
		      prof_cmp);
	*n = e->n_sorted;
	return e->prof_sorted;
}

/* Zero the per-op-type timings (e.g. after warm-up runs). */
void
qr_exec_profile_reset(struct qr_exec *e)
{
	size_t i, b;

	for (i = 0; i < e->n_prof; i++) {
		e->prof[i].calls = 0;
		e->prof[i].seconds = 0;
	}
	for (i = 0; i < e->n_steps; i++)
		for (b = 0; b < 2; b++)
			if (e->steps[i].branch[b] != NULL)
				qr_exec_profile_reset(e->steps[i].branch[b]);
}

/* Current and peak activation memory (see struct qr_exec_mem). */
void
qr_exec_mem(const struct qr_exec *e, struct qr_exec_mem *out)
{
	out->live_tensors = e->live_tensors;
	out->live_bytes = e->live_bytes;
	out->pool_bytes = e->pool_bytes;
	out->peak_bytes = e->peak_bytes;
}
