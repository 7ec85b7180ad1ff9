/*
 * exec_control: If and Loop. The executor runs them itself (an op knows
 * nothing of graphs). Each subgraph (If's two branches, Loop's body) is a
 * child executor over the subgraph as a graph whose inputs are its own
 * declared ones (a Loop body's iteration number, condition and carried
 * values) and then the names it reads from this graph
 * (qr_graph_outer_uses); those values live until the node has run. At
 * run, If's condition picks a child, which runs on the current tensors;
 * Loop runs its body until the trip count or the condition says stop,
 * carrying values from one iteration to the next and stacking the scan
 * outputs. Outputs are copied into the node's. Nodes inside reach no
 * hook. See exec-int.h.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"
#include "run/exec-int.h"

/* If and Loop have no op: the executor runs them (step.branch). */
const struct qr_op_desc qr_ex_if_desc = {
	.domain = "", .name = "If", .since = 1,
};
const struct qr_op_desc qr_ex_loop_desc = {
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
int
qr_ex_control_kind(const struct qr_node *n)
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

		s->outer_val[k] = qr_ex_val_find(e, names[k]);
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
enum qr_status
qr_ex_control_build(struct qr_exec *e, struct step *s, size_t i,
		    struct qr_diag *d)
{
	const struct qr_node *n = s->call.node;
	const struct qr_attr *body;
	const struct qr_graph_data *bg;
	enum qr_status st;
	size_t k, n_carried;

	if (qr_ex_control_kind(n) == 1) {
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

/* After child c's outputs are copied: release its activations, and its
 * pooled buffers when they pass QR_SUB_POOL_MAX. */
static void
sub_done(struct qr_exec *c)
{
	size_t i;

	qr_ex_reset(c);
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
	qr_ex_out_alloc(e, s, j);
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

/* The one value of step s's input k, which must be one element of dtype
 * (what names the input in the error, QR_ESHAPE). */
static enum qr_status
scalar_in(const struct step *s, size_t k, int dtype, const char *what,
	  int64_t *v, struct qr_diag *d)
{
	const struct qr_tensor *t = s->call.in[k];
	const struct qr_node *n = s->call.node;
	char sh[64];
	int ok;

	*v = scalar_of(t, &ok);
	if (!ok || t->dtype != dtype)
		return qr_errorf(d, QR_ESHAPE, "node '%s' (%s): %s '%s' %s is "
				 "not one %s", n->name, n->op_type, what,
				 n->in[k],
				 t ? qr_shape_str(t, sh, sizeof sh) : "",
				 qr_dtype_name(dtype));
	return QR_OK;
}

/* Run If step s: the branch its condition picks, on the current
 * tensors; its outputs are copied into the step's. */
enum qr_status
qr_ex_if_exec(struct qr_exec *e, struct step *s, struct qr_diag *d)
{
	struct qr_tensor *const *outs;
	struct qr_exec *b;
	enum qr_status st;
	size_t j, n_outs;
	int64_t v;

	if ((st = scalar_in(s, 0, QR_DT_BOOL, "condition", &v, d)) != QR_OK ||
	    (st = bind_outer(e, s, d)) != QR_OK)
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
enum qr_status
qr_ex_loop_exec(struct qr_exec *e, struct step *s, struct qr_diag *d)
{
	const struct qr_node *n = s->call.node;
	const struct qr_tensor *tm = s->call.in[0], *tc = s->call.in[1];
	size_t n_car = n->n_in - 2, it, k, n_outs;
	struct qr_tensor *const *outs;
	struct qr_tensor *iter = &s->sub_t[0], *cond = &s->sub_t[1];
	int64_t trip = 0, keep = 1;
	enum qr_status st;
	int ok;

	if ((tm != NULL && (st = scalar_in(s, 0, QR_DT_INT64, "trip count",
					   &trip, d)) != QR_OK) ||
	    (tc != NULL && (st = scalar_in(s, 1, QR_DT_BOOL, "condition",
					   &keep, d)) != QR_OK) ||
	    (st = bind_outer(e, s, d)) != QR_OK)
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
