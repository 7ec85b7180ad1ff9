/*
 * act_classes: one graph's activations as activation matching sees them
 * (act_match.c): a name table, each tensor's producer and position, and
 * for a candidate the classes of tensors that hold one value in several
 * forms, joined through the links between them (QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, an integer accumulator's Cast
 * and scale Mul, no-op links inside Q/DQ chains), each compared through
 * its most telling member; and the quantization parameters a candidate's
 * tensor carries (qr_am_qparams).
 */
#include "analysis/act-match-int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

/* ---- a name table ---- */

size_t
am_names_find(const struct names *t, const char *s)
{
	return qr_strmap_get(&t->idx, s);
}

static size_t
names_add(struct names *t, const char *s)
{
	size_t i = qr_strmap_put(&t->idx, s, t->n);

	if (i < t->n)
		return i;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->v = xreallocarray(t->v, t->cap, sizeof *t->v);
	}
	t->v[t->n] = s;
	return t->n++;
}

static void
names_free(struct names *t)
{
	free(t->v);
	qr_strmap_free(&t->idx);
}

/* ---- one graph's activations ---- */


int
am_is_op(const struct qr_node *n, const char *op)
{
	return strcmp(n->op_type, op) == 0;
}

int
am_is_qdq(const struct qr_node *n)
{
	return am_is_op(n, "QuantizeLinear") || am_is_op(n, "DequantizeLinear");
}

size_t
am_find(struct side *s, size_t i)
{
	while (s->parent[i] != i) {
		s->parent[i] = s->parent[s->parent[i]];
		i = s->parent[i];
	}
	return i;
}

void
am_side_init(struct side *s, const struct qr_graph *g)
{
	const struct qr_model *m = qr_graph_model(g);
	const size_t *order = qr_graph_topo_order(g);
	size_t nn = qr_graph_n_nodes(g), i, k;

	memset(s, 0, sizeof *s);
	s->g = g;
	s->m = m;
	s->inputs = xcalloc(m->graph.n_input + 1, sizeof *s->inputs);
	for (i = 0; i < m->graph.n_input; i++) {
		const char *nm = m->graph.inputs[i].name;

		if (qr_graph_const(g, nm) != NULL || am_names_find(&s->t, nm) != NONE)
			continue;
		s->inputs[s->n_inputs++] = names_add(&s->t, nm);
	}
	for (k = 0; k < nn; k++) {
		const struct qr_node *n = qr_graph_node(g, order[k]);

		for (i = 0; i < n->n_out; i++)
			if (n->out[i][0] != '\0' &&
			    qr_graph_const(g, n->out[i]) == NULL)
				names_add(&s->t, n->out[i]);
	}
	s->pos = xcalloc(s->t.n + 1, sizeof *s->pos);
	s->prod = xcalloc(s->t.n + 1, sizeof *s->prod);
	s->parent = xcalloc(s->t.n + 1, sizeof *s->parent);
	s->canon = xcalloc(s->t.n + 1, sizeof *s->canon);
	s->match = xcalloc(s->t.n + 1, sizeof *s->match);
	for (i = 0; i < s->t.n; i++) {
		s->pos[i] = -1;
		s->prod[i] = -1;
		s->parent[i] = i;
		s->canon[i] = NONE;
		s->match[i] = NONE;
	}
	for (k = 0; k < nn; k++) {
		const struct qr_node *n = qr_graph_node(g, order[k]);

		for (i = 0; i < n->n_out; i++) {
			size_t t = n->out[i][0] ? am_names_find(&s->t, n->out[i])
						: NONE;

			if (t != NONE) {
				s->pos[t] = (long)k;
				s->prod[t] = (long)order[k];
			}
		}
	}
}

void
am_side_free(struct side *s)
{
	names_free(&s->t);
	free(s->pos);
	free(s->prod);
	free(s->parent);
	free(s->canon);
	free(s->match);
	free(s->inputs);
}

const struct qr_node *
am_producer(const struct side *s, size_t t)
{
	return s->prod[t] >= 0 ? qr_graph_node(s->g, (size_t)s->prod[t])
			       : NULL;
}

/* The producer of name in s, or NULL. */
const struct qr_node *
am_producer_of(const struct side *s, const char *name)
{
	long p = name[0] ? qr_graph_producer(s->g, name) : -1;

	return p >= 0 ? qr_graph_node(s->g, (size_t)p) : NULL;
}

/* A Cast of an integer accumulator (ONNX Runtime's dynamic quantization:
 * MatMulInteger or ConvInteger, then Cast to float, then a Mul by the
 * input's and the weight's scales). */
static int
is_acc_cast(const struct side *s, const struct qr_node *n)
{
	const struct qr_node *p;

	return am_is_op(n, "Cast") && n->n_in >= 1 &&
	       (p = am_producer_of(s, n->in[0])) != NULL &&
	       (am_is_op(p, "MatMulInteger") || am_is_op(p, "ConvInteger"));
}

/* The input of Mul n that is such a Cast's output (the accumulator
 * being scaled back to float), or -1. */
int
am_acc_mul_input(const struct side *s, const struct qr_node *n)
{
	const struct qr_node *p;
	size_t i;

	if (!am_is_op(n, "Mul"))
		return -1;
	for (i = 0; i < n->n_in && i < 2; i++)
		if ((p = am_producer_of(s, n->in[i])) != NULL && is_acc_cast(s, p))
			return (int)i;
	return -1;
}

/*
 * A node that carries one value in another form, linking two members of
 * a class: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (its
 * first output), the Cast and Mul that turn a MatMulInteger or
 * ConvInteger accumulator into the layer's float output, and the no-op
 * Cast or Identity some exporters put between Q and DQ (qdq_links.c).
 * *in is the input so linked.
 */
int
am_is_link(const struct side *s, const struct qr_node *n, size_t *in)
{
	int k;

	*in = 0;
	if (am_is_qdq(n) || am_is_op(n, "DynamicQuantizeLinear") ||
	    is_acc_cast(s, n) || qr_an_is_noop_link(s->g, n))
		return 1;
	if ((k = am_acc_mul_input(s, n)) < 0)
		return 0;
	*in = (size_t)k;
	return 1;
}

/* How telling a member of a class is: DequantizeLinear output, or an
 * accumulator scaled back to float, 3; integer tensor (QuantizeLinear or
 * QLinear* output) 2; anything else 1; DynamicQuantizeLinear's output 0
 * (its scale is only known at run time: the float tensor it quantizes
 * is compared instead). */
static int
member_rank(const struct side *s, size_t t)
{
	const struct qr_node *p = am_producer(s, t);

	if (p == NULL)
		return 1;
	if (am_is_op(p, "DequantizeLinear") || am_acc_mul_input(s, p) >= 0)
		return 3;
	if (am_is_op(p, "DynamicQuantizeLinear"))
		return 0;
	if (am_is_op(p, "QuantizeLinear") || strncmp(p->op_type, "QLinear", 7) == 0 ||
	    am_is_op(p, "QGemm"))
		return 2;
	return 1;
}

/* Classes of the candidate: tensors joined through links (is_link);
 * each class compared through its best member (earliest among equals). */
void
am_side_classes(struct side *s)
{
	size_t nn = qr_graph_n_nodes(s->g), k, i;

	for (k = 0; k < nn; k++) {
		const struct qr_node *n = qr_graph_node(s->g, k);
		size_t a, b, in;

		if (!am_is_link(s, n, &in) || n->n_in <= in || n->n_out < 1)
			continue;
		a = am_names_find(&s->t, n->in[in]);
		b = n->out[0][0] ? am_names_find(&s->t, n->out[0]) : NONE;
		if (a != NONE && b != NONE)
			s->parent[am_find(s, a)] = am_find(s, b);
	}
	for (i = 0; i < s->t.n; i++) {
		size_t r = am_find(s, i), c = s->canon[r];

		if (c == NONE || member_rank(s, i) > member_rank(s, c) ||
		    (member_rank(s, i) == member_rank(s, c) &&
		     s->pos[i] < s->pos[c]))
			s->canon[r] = i;
	}
}

/* Consumers of every member of class r that are not Q/DQ, into out
 * (heap, *n). */
size_t *
am_class_consumers(struct side *s, size_t r, size_t *n)
{
	size_t *out = NULL, cap = 0, i, j, k, nc, in;

	*n = 0;
	for (i = 0; i < s->t.n; i++) {
		const size_t *cs;

		if (am_find(s, i) != r)
			continue;
		cs = qr_graph_consumers(s->g, s->t.v[i], &nc);
		for (j = 0; j < nc; j++) {
			const struct qr_node *c = qr_graph_node(s->g, cs[j]);
			int dup = 0;

			if (am_is_link(s, c, &in))
				continue;
			for (k = 0; k < *n; k++)
				dup |= out[k] == cs[j];
			if (dup)
				continue;
			if (*n == cap) {
				cap = cap ? cap * 2 : 4;
				out = xreallocarray(out, cap, sizeof *out);
			}
			out[(*n)++] = cs[j];
		}
	}
	return out;
}

int
am_class_has_consumer(struct side *s, size_t r, const char *op1, const char *op2)
{
	size_t n, i, *cs = am_class_consumers(s, r, &n);
	int found = 0;

	for (i = 0; i < n; i++) {
		const struct qr_node *c = qr_graph_node(s->g, cs[i]);

		found |= am_is_op(c, op1) || (op2 != NULL && am_is_op(c, op2));
	}
	free(cs);
	return found;
}

/* ---- quantization parameters ---- */

/* Inputs holding the output scale and zero point of a quantized op, or
 * 0 when op is not one. */
static int
out_param_inputs(const struct qr_node *n, size_t *is, size_t *iz)
{
	static const struct { const char *op; size_t s, z; } tab[] = {
		{ "QuantizeLinear", 1, 2 },
		{ "QLinearConv", 6, 7 },
		{ "QLinearMatMul", 6, 7 },
		{ "QLinearAdd", 6, 7 },
		{ "QLinearMul", 6, 7 },
		{ "QGemm", 7, 8 },
		{ "QLinearConcat", 0, 1 },
		{ "QLinearGlobalAveragePool", 3, 4 },
		{ "QLinearAveragePool", 3, 4 },
		{ "QLinearSigmoid", 3, 4 },
		{ "QLinearLeakyRelu", 3, 4 },
		{ "QLinearSoftmax", 3, 4 },
	};
	size_t i;

	for (i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (am_is_op(n, tab[i].op)) {
			*is = tab[i].s;
			*iz = tab[i].z;
			return 1;
		}
	return 0;
}

/* Ops whose integer output keeps its input's scale and zero point. */
static int
is_passthrough(const struct qr_node *n)
{
	static const char *const ops[] = {
		"MaxPool", "Flatten", "Reshape", "Transpose", "Squeeze",
		"Unsqueeze", "Identity", "Slice", "Split", "Gather", "Pad",
		"Resize", "DepthToSpace", "SpaceToDepth", "Tile", "Expand",
		NULL,
	};
	size_t i;

	for (i = 0; ops[i] != NULL; i++)
		if (am_is_op(n, ops[i]))
			return 1;
	return 0;
}

/* Fill p from node n's scale input is and zero point input iz. */
static int
params_from(const struct qr_graph *g, const struct qr_node *n, size_t is,
	    size_t iz, struct qr_as_qparams *p)
{
	const struct qr_tensor_data *sc, *zp = NULL;
	size_t i;

	if (is >= n->n_in || n->in[is][0] == '\0' ||
	    (sc = qr_graph_const(g, n->in[is])) == NULL || sc->n_elem == 0 ||
	    sc->data == NULL)
		return 0;
	if (iz < n->n_in && n->in[iz][0] != '\0') {
		zp = qr_graph_const(g, n->in[iz]);
		if (zp == NULL || zp->data == NULL ||
		    (zp->n_elem != sc->n_elem && zp->n_elem != 1))
			return 0;
	}
	p->n = sc->n_elem;
	p->scale = xmalloc(p->n * sizeof *p->scale);
	p->zp = xcalloc(p->n, sizeof *p->zp);
	for (i = 0; i < p->n; i++) {
		p->scale[i] = (float)qr_tensor_get(sc, i);
		if (zp != NULL)
			p->zp[i] = (int32_t)qr_tensor_get(zp,
						zp->n_elem == 1 ? 0 : i);
	}
	p->dtype = zp != NULL ? zp->dtype : QR_DT_UINT8;
	p->axis = am_is_qdq(n) ? (int)qr_node_attr_int(n, "axis", 1) : 1;
	qr_as_qrange(p->dtype, &p->qmin, &p->qmax);
	return 1;
}

int
qr_am_qparams(const struct qr_graph *g, const char *name,
	      struct qr_as_qparams *p)
{
	const char *cur = name;
	const size_t *cs;
	size_t is, iz, nc, i;
	int hop;

	memset(p, 0, sizeof *p);
	for (hop = 0; hop < 16 && cur != NULL; hop++) {
		long pi = qr_graph_producer(g, cur);
		const struct qr_node *n;

		if (pi < 0)
			break;
		n = qr_graph_node(g, (size_t)pi);
		if (am_is_op(n, "DequantizeLinear"))
			return params_from(g, n, 1, 2, p);
		if (out_param_inputs(n, &is, &iz))
			return params_from(g, n, is, iz, p);
		if (!is_passthrough(n) || n->n_in < 1 ||
		    qr_graph_const(g, n->in[0]) != NULL)
			break;
		cur = n->in[0];
	}
	/* A tensor read by a DequantizeLinear (an integer graph input) or
	 * fed to a QuantizeLinear (a float pre-Q tensor). */
	cs = qr_graph_consumers(g, name, &nc);
	for (i = 0; i < nc; i++) {
		const struct qr_node *n = qr_graph_node(g, cs[i]);

		if (am_is_qdq(n) && n->n_in >= 2 && strcmp(n->in[0], name) == 0)
			return params_from(g, n, 1, 2, p);
	}
	return 0;
}
