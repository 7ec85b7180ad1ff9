/*
 * act_match: which tensor of a quantized candidate holds the value of each
 * float activation.
 *
 * A candidate computes one value under several names: in QDQ the conv
 * output X, X_QuantizeLinear_Output and X_DequantizeLinear_Output; in
 * QOperator Y_quantized and the float Y a DequantizeLinear makes of it;
 * in ONNX Runtime's dynamic quantization the float X and the uint8
 * X_quantized of its DynamicQuantizeLinear, and a ConvInteger's or
 * MatMulInteger's int32 accumulator, its Cast and the Mul by the scales
 * that gives the layer's float output. Such tensors, linked by those
 * nodes (is_link), form one class; a class is compared once, through its
 * most telling member: the DequantizeLinear output or the scaled
 * accumulator (what the next op reads), else the integer tensor, else
 * the float one (never DynamicQuantizeLinear's output, whose scale is
 * only known at run time).
 *
 * 1. By name, with ONNX Runtime's conventions (qdq_loss_debug): float X
 *    matches X_DequantizeLinear_Output, X_quantized, X (pre-Q, or a
 *    graph output that keeps its name) or X_QuantizeLinear_Input, when
 *    the two producers read the same matched inputs (name_consistent).
 * 2. By structure, for the float tensors left:
 *    - graph inputs and outputs by position;
 *    - the compute ops (Conv, ConvTranspose, Gemm, MatMul, Attention and
 *      QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, QGemm,
 *      QAttention, MatMulNBits) of both graphs, in topological order,
 *      aligned by a longest common subsequence on (op family, weight
 *      shape); a pair is taken past the per-channel scale ops one side
 *      keeps and the other folded (align_tails);
 *    - then forward through the other ops: a float node whose inputs are
 *      all matched matches a candidate node of the same op (QLinearAdd
 *      counts as Add, GatherBlockQuantized as Gather) that reads the same
 *      classes;
 *    - then the inputs of the aligned weighted ops, which hold the same
 *      values whatever computed them (match_inputs), residual sums
 *      written as Add on one side and inside a Skip*LayerNormalization on
 *      the other (match_sums), and forward again.
 * 3. Fused activations: quantizers drop a Relu/Clip after a layer (QDQ
 *    renames the layer's output after it; QOperator keeps the layer's
 *    name but clips through the output range). When a float tensor's only
 *    consumer is a Relu/Clip the candidate does not have, and the
 *    candidate's quantized range starts at 0 (zero point = qmin), the
 *    candidate holds the activation's output: the pair moves there.
 */
#include "analysis/act-match-int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

#define WALK_DOWN 64             /* float tensors visited looking for a
				  * paired one downstream */

/* 1 when the candidate's class r cannot hold negative values: its
 * quantized range starts at 0 (zero point = qmin). */
static int
class_nonnegative(struct side *q, size_t r)
{
	struct qr_as_qparams p;
	int yes = 0;
	size_t i;

	if (!qr_am_qparams(q->g, q->t.v[q->canon[r]], &p))
		return 0;
	yes = 1;
	for (i = 0; i < p.n; i++)
		yes &= p.zp[i] == p.qmin;
	qr_as_qparams_free(&p);
	return yes;
}

/* ---- building the result ---- */

struct ctx {
	struct side f, q;
	struct qr_am *out;
	size_t *aligned;               /* float, candidate node index pairs
					* of the weighted ops match_compute
					* aligned */
	size_t n_aligned;
	const struct qr_node **cprod;  /* per candidate class root: its
					* computing node (class_producers) */
};

static void
add_pair(struct ctx *c, size_t ft, size_t qr, enum qr_match how,
	 char *reason)
{
	struct qr_am_pair *p;

	c->out->pairs = xreallocarray(c->out->pairs, c->out->n + 1,
				      sizeof *c->out->pairs);
	p = &c->out->pairs[c->out->n++];
	memset(p, 0, sizeof *p);
	p->f = c->f.t.v[ft];
	p->q = c->q.t.v[c->q.canon[qr]];
	p->how = how;
	p->reason = reason;
	p->fpos = c->f.pos[ft];
	c->f.match[ft] = qr;
	c->q.match[qr] = ft;
}

/* The pair of float tensor ft, or NULL. */
static struct qr_am_pair *
pair_of(struct ctx *c, size_t ft)
{
	size_t i;

	for (i = 0; i < c->out->n; i++)
		if (c->out->pairs[i].f == c->f.t.v[ft])
			return &c->out->pairs[i];
	return NULL;
}

/* The only consumer of float tensor ft when it is op1/op2 (any op when
 * op1 is NULL), else NULL. */
static const struct qr_node *
sole_consumer(struct side *s, size_t t, const char *op1, const char *op2)
{
	const size_t *cs;
	const struct qr_node *n;
	size_t nc;

	if (qr_graph_is_output(s->g, s->t.v[t]))
		return NULL;
	cs = qr_graph_consumers(s->g, s->t.v[t], &nc);
	if (nc != 1)
		return NULL;
	n = qr_graph_node(s->g, cs[0]);
	if (n->domain[0] != '\0' || n->n_out < 1 || n->out[0][0] == '\0' ||
	    (op1 != NULL && !am_is_op(n, op1) && (op2 == NULL || !am_is_op(n, op2))))
		return NULL;
	return n;
}

/* Step 3: move the pair of ft past a Relu/Clip the candidate fused. */
static void
fuse_activation(struct ctx *c, size_t ft)
{
	struct qr_am_pair *p = pair_of(c, ft);
	const struct qr_node *act;
	size_t at, qr;
	char *r;

	if (p == NULL)
		return;
	act = sole_consumer(&c->f, ft, "Relu", "Clip");
	if (act == NULL)
		return;
	at = am_names_find(&c->f.t, act->out[0]);
	qr = c->f.match[ft];
	if (at == NONE || c->f.match[at] != NONE ||
	    am_class_has_consumer(&c->q, qr, "Relu", "Clip") ||
	    !class_nonnegative(&c->q, qr))
		return;
	r = xasprintf("%s; %s '%s' fused into it (range starts at 0)",
		      p->reason, act->op_type, act->name);
	free(p->reason);
	p->reason = r;
	p->f = c->f.t.v[at];
	p->fpos = c->f.pos[at];
	c->f.match[ft] = NONE;
	c->f.match[at] = qr;
	c->q.match[qr] = at;
}

static size_t node_inputs(struct side *s, const struct qr_node *n, int quant,
			  size_t *v);

/* Per class root of the candidate: the node that computes the class's
 * value (its first member made by something other than QuantizeLinear/
 * DequantizeLinear), or NULL. Heap, one entry per tensor. */
static const struct qr_node **
class_producers(struct side *q)
{
	const struct qr_node **cp = xcalloc(q->t.n + 1, sizeof *cp);
	size_t t, in;

	for (t = 0; t < q->t.n; t++) {
		const struct qr_node *p = am_producer(q, t);
		size_t r = am_find(q, t);

		if (p != NULL && !am_is_link(q, p, &in) && cp[r] == NULL)
			cp[r] = p;
	}
	return cp;
}

/* Whether two nodes of one op type carry the same attributes (the
 * scalar and list kinds; tensors and graphs are not compared). */
static int
same_attrs(const struct qr_node *a, const struct qr_node *b)
{
	size_t i, j;

	if (a->n_attr != b->n_attr)
		return 0;
	for (i = 0; i < a->n_attr; i++) {
		const struct qr_attr *x = &a->attrs[i], *y = NULL;

		for (j = 0; j < b->n_attr && y == NULL; j++)
			if (strcmp(b->attrs[j].name, x->name) == 0)
				y = &b->attrs[j];
		if (y == NULL || y->type != x->type)
			return 0;
		switch (x->type) {
		case QR_ATTR_INT:
			if (x->i != y->i)
				return 0;
			break;
		case QR_ATTR_FLOAT:
			if (memcmp(&x->f, &y->f, sizeof x->f) != 0)
				return 0;
			break;
		case QR_ATTR_STRING:
			if (x->s_len != y->s_len ||
			    memcmp(x->s, y->s, x->s_len) != 0)
				return 0;
			break;
		case QR_ATTR_INTS:
			if (x->n != y->n || (x->n &&
			    memcmp(x->ints, y->ints, x->n * sizeof *x->ints)))
				return 0;
			break;
		case QR_ATTR_FLOATS:
			if (x->n != y->n || (x->n &&
			    memcmp(x->floats, y->floats,
				   x->n * sizeof *x->floats)))
				return 0;
			break;
		default:
			break;
		}
	}
	return 1;
}

/* Whether the inputs that are constants in both nodes hold the same
 * values (a Gather's indices, a Reshape's shape, a Slice's bounds). */
static int
same_consts(struct ctx *c, const struct qr_node *fp, const struct qr_node *qp)
{
	size_t i;

	for (i = 0; i < fp->n_in && i < qp->n_in; i++) {
		const struct qr_tensor_data *a, *b;

		if (!fp->in[i][0] || !qp->in[i][0] ||
		    (a = qr_graph_const(c->f.g, fp->in[i])) == NULL ||
		    (b = qr_graph_const(c->q.g, qp->in[i])) == NULL)
			continue;
		if (a->dtype != b->dtype || a->ndim != b->ndim ||
		    a->nbytes != b->nbytes ||
		    memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof *a->dims) ||
		    (a->data && b->data && a->nbytes &&
		     memcmp(a->data, b->data, a->nbytes)))
			return 0;
	}
	return 1;
}

/* ONNX Runtime's dynamic ConvInteger adds the conv's bias after scaling
 * the accumulator (Add(scaled, Reshape(bias))), under the conv's output
 * name: for an Add reading such a scaled accumulator, the node that
 * computed it (the ConvInteger); else n. */
static const struct qr_node *
past_bias_add(struct ctx *c, const struct qr_node *n)
{
	size_t i, t;
	const struct qr_node *p;

	if (!am_is_op(n, "Add"))
		return n;
	for (i = 0; i < n->n_in && i < 2; i++)
		if ((p = am_producer_of(&c->q, n->in[i])) != NULL &&
		    am_acc_mul_input(&c->q, p) >= 0 &&
		    (t = am_names_find(&c->q.t, n->in[i])) != NONE &&
		    c->cprod[am_find(&c->q, t)] != NULL)
			return c->cprod[am_find(&c->q, t)];
	return n;
}

/*
 * Whether naming float tensor ft's value class r is consistent with the
 * pairs made so far: every matched input of ft's producer must be read
 * by r's producer too, and one op type on both sides must carry the same
 * attributes and constants. Exporters number nodes per op type, so two
 * exports of one model can give the same name to different tensors
 * (torch's unfolded export has one Transpose more in each attention
 * block: every later Transpose_N is another computation). Unknown
 * inputs (graph inputs, unmatched tensors) do not count against a name.
 */
static int
name_consistent(struct ctx *c, size_t ft, size_t r)
{
	const struct qr_node *fp = am_producer(&c->f, ft), *qp;
	size_t *qin, nq, i, j;
	int ok = 1;

	if (fp == NULL || (qp = c->cprod[r]) == NULL)
		return 1;
	if (!am_is_op(fp, "Add")) /* a float Add is compared with the Add */
		qp = past_bias_add(c, qp);
	/* one op on both sides (not a QLinear form or a fused activation):
	 * its attributes and constant inputs must agree too (swin's
	 * attention reads one tensor through Transposes of different perms
	 * and Gathers of different indices) */
	if (strcmp(fp->op_type, qp->op_type) == 0 &&
	    strcmp(fp->domain, qp->domain) == 0 &&
	    (!same_attrs(fp, qp) || !same_consts(c, fp, qp)))
		return 0;
	qin = xcalloc(qp->n_in + 1, sizeof *qin);
	nq = node_inputs(&c->q, qp, 1, qin);
	for (i = 0; i < fp->n_in && ok && nq != NONE; i++) {
		size_t t = fp->in[i][0] ? am_names_find(&c->f.t, fp->in[i]) : NONE;

		if (t == NONE || c->f.match[t] == NONE)
			continue;
		for (j = 0; j < nq && qin[j] != c->f.match[t]; j++)
			;
		ok = j < nq;
	}
	free(qin);
	return ok;
}

/* A compute op: family (QR_AN_FAM_*) and its weight (NULL when the
 * weight is not a constant). */
struct comp {
	size_t node;
	int family;
	const struct qr_tensor_data *w;
	int nd;                  /* the weight's logical shape: its dims, or */
	int64_t d[8];            /* MatMulNBits' [K, N] (w is packed) */
};

/* The constant behind a weight input: itself, or seen through a
 * DequantizeLinear or a fake-quantizing QuantizeLinear -> DequantizeLinear
 * (qdq_links.c). */
static const struct qr_tensor_data *
weight_const(const struct qr_graph *g, const char *name)
{
	return qr_an_weight_behind(g, name);
}

static int
comp_of(const struct qr_graph *g, const struct qr_node *n, int quant,
	struct comp *c)
{
	static const struct { const char *op; int fam; size_t w; int q; } tab[] = {
		{ "Conv", QR_AN_FAM_CONV, 1, 0 },
		{ "ConvTranspose", QR_AN_FAM_CONVT, 1, 0 },
		{ "Gemm", QR_AN_FAM_MATMUL, 1, 0 },
		{ "MatMul", QR_AN_FAM_MATMUL, 1, 0 },
		{ "QLinearConv", QR_AN_FAM_CONV, 3, 1 },
		{ "QLinearMatMul", QR_AN_FAM_MATMUL, 3, 1 },
		{ "ConvInteger", QR_AN_FAM_CONV, 1, 1 },
		{ "MatMulInteger", QR_AN_FAM_MATMUL, 1, 1 },
		{ "QGemm", QR_AN_FAM_MATMUL, 3, 1 },
		{ "Attention", QR_AN_FAM_MATMUL, 1, 0 },
		{ "QAttention", QR_AN_FAM_MATMUL, 1, 1 },
		{ "MatMulNBits", QR_AN_FAM_MATMUL, 1, 1 },
	};
	size_t i;
	int k;

	for (i = 0; i < sizeof tab / sizeof tab[0]; i++) {
		if (!am_is_op(n, tab[i].op) || (tab[i].q && !quant) ||
		    n->n_out < 1 || n->out[0][0] == '\0')
			continue;
		c->family = tab[i].fam;
		c->w = tab[i].w < n->n_in ? weight_const(g, n->in[tab[i].w])
					  : NULL;
		c->nd = 0;
		if (am_is_op(n, "MatMulNBits") && c->w != NULL) {
			c->nd = 2;
			c->d[0] = qr_node_attr_int(n, "K", 0);
			c->d[1] = qr_node_attr_int(n, "N", 0);
		} else if (c->w != NULL) {
			c->nd = c->w->ndim < 8 ? c->w->ndim : 8;
			for (k = 0; k < c->nd; k++)
				c->d[k] = c->w->dims[k];
		}
		return 1;
	}
	return 0;
}

static struct comp *
comps(const struct qr_graph *g, int quant, size_t *n)
{
	const size_t *order = qr_graph_topo_order(g);
	size_t nn = qr_graph_n_nodes(g), k;
	struct comp *v = xcalloc(nn + 1, sizeof *v);

	*n = 0;
	for (k = 0; k < nn; k++)
		if (comp_of(g, qr_graph_node(g, order[k]), quant, &v[*n]))
			v[(*n)++].node = order[k];
	return v;
}

static int
comp_eq(const struct comp *a, const struct comp *b)
{
	int i;

	if (a->family != b->family)
		return 0;
	if (a->w == NULL || b->w == NULL)
		return a->w == b->w;
	if (a->nd != b->nd)
		return 0;
	for (i = 0; i < a->nd; i++)
		if (a->d[i] != b->d[i])
			return 0;
	return 1;
}

static const char *norm_op(const struct qr_node *n);

/*
 * A per-channel affine op reading tensor name in g: BatchNormalization,
 * or Mul, Div, Add or Sub by a constant (the activation first for Div and
 * Sub). Exporters fold these into a Conv's weights and bias, or keep
 * them after it: QAT exports write Conv -> Div -> BatchNormalization, a
 * float export may keep BatchNormalization, an unfused MatMul its bias
 * Add.
 */
static int
is_affine(const struct qr_graph *g, const struct qr_node *n, const char *name)
{
	int bin = am_is_op(n, "Mul") || am_is_op(n, "Add") || am_is_op(n, "Div") ||
		  am_is_op(n, "Sub");

	if (n->domain[0] != '\0' || n->n_out < 1 || n->out[0][0] == '\0')
		return 0;
	if (am_is_op(n, "BatchNormalization"))
		return n->n_in >= 5 && strcmp(n->in[0], name) == 0;
	if (!bin || n->n_in != 2)
		return 0;
	if (strcmp(n->in[0], name) == 0)
		return weight_const(g, n->in[1]) != NULL;
	return (am_is_op(n, "Mul") || am_is_op(n, "Add")) &&
	       strcmp(n->in[1], name) == 0 && weight_const(g, n->in[0]) != NULL;
}

/* The affine op alone reading float tensor ft, or NULL. */
static const struct qr_node *
float_affine(struct ctx *c, size_t ft)
{
	const struct qr_node *n = sole_consumer(&c->f, ft, NULL, NULL);

	return n != NULL && is_affine(c->f.g, n, c->f.t.v[ft]) ? n : NULL;
}

/* The node alone reading candidate class r (past its Q/DQ links), or
 * NULL; *affine tells whether it is an affine op. */
static const struct qr_node *
quant_sole(struct ctx *c, size_t r, int *affine)
{
	size_t n, i, *cs = am_class_consumers(&c->q, r, &n);
	const struct qr_node *a = NULL;

	*affine = 0;
	for (i = 0; i < c->q.t.n; i++)
		if (am_find(&c->q, i) == r && qr_graph_is_output(c->q.g, c->q.t.v[i]))
			n = 0;
	if (n == 1) {
		a = qr_graph_node(c->q.g, cs[0]);
		for (i = 0; i < c->q.t.n && !*affine; i++)
			*affine = am_find(&c->q, i) == r &&
				  is_affine(c->q.g, a, c->q.t.v[i]);
	}
	free(cs);
	return a;
}

/*
 * Move a compute op's pair (float tensor *ft, candidate class *r) past
 * the affine ops one side keeps and the other folded into the op, so
 * both sides are compared where they compute the same function: after
 * the float model's BatchNormalization when the candidate folded it,
 * after the candidate's Div and BatchNormalization when the float model
 * folded them (a QAT export against its folded float model). Ops both
 * sides keep stay (compared before them, and they pair on their own).
 * Appends what was passed to note (n bytes); 1 when something moved,
 * -1 when an op to pass leads to a tensor already paired (the value to
 * compare is compared there: this pair is not made), else 0.
 */
static int
align_tails(struct ctx *c, size_t *ft, size_t *r, char *note, size_t n)
{
	int moved = 0, hop;
	size_t len = strlen(note);

	for (hop = 0; hop < 4; hop++) {
		const struct qr_node *fa = float_affine(c, *ft), *qa;
		int qaff;
		size_t t;

		qa = quant_sole(c, *r, &qaff);
		/* both sides apply it (QLinearAdd counts as Add) */
		if (fa != NULL && qa != NULL &&
		    strcmp(fa->op_type, norm_op(qa)) == 0)
			break;
		if (!qaff)
			qa = NULL;
		if (fa != NULL) {
			t = am_names_find(&c->f.t, fa->out[0]);
			if (t == NONE || c->f.match[t] != NONE)
				return -1;
			*ft = t;
			len += (size_t)snprintf(note + len, len < n ? n - len : 0,
				"%s float %s '%s'", moved ? "," : "; after the",
				fa->op_type, fa->name);
		} else if (qa != NULL) {
			t = am_names_find(&c->q.t, qa->out[0]);
			if (t == NONE || c->q.match[am_find(&c->q, t)] != NONE)
				return -1;
			*r = am_find(&c->q, t);
			len += (size_t)snprintf(note + len, len < n ? n - len : 0,
				"%s candidate's %s '%s'", moved ? "," : "; after the",
				qa->op_type, qa->name);
		} else {
			break;
		}
		moved = 1;
	}
	if (moved && len < n)
		snprintf(note + len, n - len, ", which the other side folded "
			 "into the layer");
	return moved;
}

/* Whether float node fp and candidate node qp are both compute ops with
 * a constant weight (what a scale or BatchNormalization can be folded
 * into; a product of two activations folds nothing). */
static int
weighted(struct ctx *c, const struct qr_node *fp, const struct qr_node *qp)
{
	struct comp a, b;

	return fp != NULL && qp != NULL && comp_of(c->f.g, fp, 0, &a) &&
	       comp_of(c->q.g, qp, 1, &b) && a.w != NULL && b.w != NULL;
}

static void
match_names(struct ctx *c)
{
	static const char *const suffix[] = {
		"_DequantizeLinear_Output", "_quantized", "",
		"_QuantizeLinear_Input",
	};
	size_t ft, k;
	char *nm;

	for (ft = 0; ft < c->f.t.n; ft++) {
		for (k = 0; k < sizeof suffix / sizeof suffix[0] &&
			    c->f.match[ft] == NONE; k++) {
			const struct qr_node *fp = am_producer(&c->f, ft);
			size_t qt, r, at = ft;
			char note[256] = "";

			nm = xasprintf("%s%s", c->f.t.v[ft], suffix[k]);
			qt = am_names_find(&c->q.t, nm);
			if (qt != NONE && c->q.match[r = am_find(&c->q, qt)] == NONE &&
			    name_consistent(c, ft, r)) {
				if (!weighted(c, fp, c->cprod[r]) ||
				    align_tails(c, &at, &r, note,
						sizeof note) >= 0)
					add_pair(c, at, r, QR_MATCH_NAME,
						 xasprintf("name %s -> %s%s",
							   c->f.t.v[ft], nm,
							   note));
				free(nm);
				break;
			}
			free(nm);
		}
	}
	for (ft = 0; ft < c->f.t.n; ft++)
		if (c->f.match[ft] != NONE)
			fuse_activation(c, ft);
}

static void
try_pair(struct ctx *c, size_t ft, size_t qt, const char *why)
{
	size_t r;

	if (ft == NONE || qt == NONE || c->f.match[ft] != NONE)
		return;
	r = am_find(&c->q, qt);
	if (c->q.match[r] != NONE)
		return;
	add_pair(c, ft, r, QR_MATCH_STRUCTURE, xstrdup(why));
	fuse_activation(c, ft);
}

/* Align the compute ops (LCS on family + weight shape) and pair their
 * outputs, past the affine ops one side folded (align_tails): the float
 * one after a BatchNormalization the candidate folded, or after a bias
 * Add the candidate's op does itself (a MatMul and Add that ONNX
 * Runtime's optimiser, run by quant_pre_process, fused into a Gemm: its
 * output holds the bias, the MatMul's does not); the candidate's after
 * the Div and BatchNormalization a QAT export keeps. */
static void
match_compute(struct ctx *c)
{
	size_t nf, nq, i, j, k = 0;
	struct comp *fc = comps(c->f.g, 0, &nf), *qc = comps(c->q.g, 1, &nq);
	uint32_t *L = xcalloc((nf + 1) * (nq + 1), sizeof *L);
	char shape[96], why[256];

#define LCS(a, b) L[(a) * (nq + 1) + (b)]
	for (i = nf; i-- > 0;)
		for (j = nq; j-- > 0;)
			LCS(i, j) = comp_eq(&fc[i], &qc[j])
				? LCS(i + 1, j + 1) + 1
				: LCS(i + 1, j) > LCS(i, j + 1) ? LCS(i + 1, j)
								 : LCS(i, j + 1);
	i = j = 0;
	while (i < nf && j < nq) {
		if (comp_eq(&fc[i], &qc[j]) && LCS(i, j) == LCS(i + 1, j + 1) + 1) {
			const struct qr_node *fn = qr_graph_node(c->f.g, fc[i].node);
			const struct qr_node *qn = qr_graph_node(c->q.g, qc[j].node);
			size_t ft = am_names_find(&c->f.t, fn->out[0]);
			size_t qt = am_names_find(&c->q.t, qn->out[0]), r;
			char note[256] = "";
			int moved;

			if (ft != NONE && qt != NONE && fc[i].w && qc[j].w &&
			    c->f.match[ft] == NONE &&
			    c->q.match[r = am_find(&c->q, qt)] == NONE) {
				moved = align_tails(c, &ft, &r, note,
						    sizeof note);
				if (moved < 0)
					ft = NONE;
				else if (moved)
					qt = c->q.canon[r];
			}
			if (fc[i].w != NULL)
				qr_an_dims_buf(fc[i].w->dims, fc[i].w->ndim,
					       shape, sizeof shape);
			else
				snprintf(shape, sizeof shape, "none");
			snprintf(why, sizeof why,
				 "%s op #%zu of both graphs (weight %s): %s ~ %s%s",
				 qr_an_family_name(fc[i].family), ++k, shape,
				 fn->name, qn->name, note);
			try_pair(c, ft, qt, why);
			if (fc[i].w != NULL && qc[j].w != NULL) {
				c->aligned = xreallocarray(c->aligned,
							   2 * c->n_aligned + 2,
							   sizeof *c->aligned);
				c->aligned[2 * c->n_aligned] = fc[i].node;
				c->aligned[2 * c->n_aligned + 1] = qc[j].node;
				c->n_aligned++;
			}
			i++;
			j++;
		} else if (LCS(i + 1, j) >= LCS(i, j + 1)) {
			i++;
		} else {
			j++;
		}
	}
#undef LCS
	free(L);
	free(qc);
	free(fc);
}

/* The op a candidate node computes, as the float graph would name it
 * (an int4 embedding's GatherBlockQuantized is a Gather). */
static const char *
norm_op(const struct qr_node *n)
{
	if (strncmp(n->op_type, "QLinear", 7) == 0)
		return n->op_type + 7;
	if (am_is_op(n, "GatherBlockQuantized"))
		return "Gather";
	if (am_is_op(n, "MatMulNBits"))
		return "MatMul";
	return n->op_type;
}

/* Classes (quant) or tensors (float) read by node n, sorted, into v;
 * returns the count, or NONE when a float input is unmatched. */
static size_t
node_inputs(struct side *s, const struct qr_node *n, int quant, size_t *v)
{
	size_t i, k = 0, a, b;

	for (i = 0; i < n->n_in; i++) {
		size_t t;

		/* constants, and weights behind a DequantizeLinear (an int4
		 * embedding's DequantizeLinear -> Gather) */
		if (n->in[i][0] == '\0' || weight_const(s->g, n->in[i]))
			continue;
		t = am_names_find(&s->t, n->in[i]);
		if (t == NONE)
			return NONE;
		if (quant) {
			v[k++] = am_find(s, t);
		} else {
			if (s->match[t] == NONE)
				return NONE;
			v[k++] = s->match[t];
		}
	}
	for (a = 1; a < k; a++)
		for (b = a; b > 0 && v[b - 1] > v[b]; b--) {
			size_t x = v[b];

			v[b] = v[b - 1];
			v[b - 1] = x;
		}
	return k;
}

/* Forward through the other ops, in float topological order. */
static void
match_forward(struct ctx *c)
{
	const size_t *order = qr_graph_topo_order(c->f.g);
	size_t nn = qr_graph_n_nodes(c->f.g), k, j, o;
	struct comp dummy;

	for (k = 0; k < nn; k++) {
		const struct qr_node *fn = qr_graph_node(c->f.g, order[k]);
		size_t *fin, *qin, nfi, nc, *cs;

		if (fn->n_out < 1 || comp_of(c->f.g, fn, 0, &dummy))
			continue;
		fin = xcalloc(fn->n_in + 1, sizeof *fin);
		nfi = node_inputs(&c->f, fn, 0, fin);
		if (nfi == NONE || nfi == 0) {
			free(fin);
			continue;
		}
		cs = am_class_consumers(&c->q, fin[0], &nc);
		for (j = 0; j < nc; j++) {
			const struct qr_node *qn = qr_graph_node(c->q.g, cs[j]);
			size_t nqi;

			if (strcmp(norm_op(qn), fn->op_type) != 0 ||
			    (strcmp(qn->op_type, fn->op_type) == 0 &&
			     (!same_attrs(fn, qn) || !same_consts(c, fn, qn))))
				continue;
			qin = xcalloc(qn->n_in + 1, sizeof *qin);
			nqi = node_inputs(&c->q, qn, 1, qin);
			if (nqi == nfi && memcmp(qin, fin, nfi * sizeof *qin) == 0) {
				for (o = 0; o < fn->n_out && o < qn->n_out; o++) {
					char why[256];

					if (!fn->out[o][0] || !qn->out[o][0])
						continue;
					snprintf(why, sizeof why,
						 "%s after matched inputs: %s ~ %s",
						 fn->op_type, fn->name, qn->name);
					try_pair(c, am_names_find(&c->f.t, fn->out[o]),
						 am_names_find(&c->q.t, qn->out[o]),
						 why);
				}
				free(qin);
				break;
			}
			free(qin);
		}
		free(cs);
		free(fin);
	}
}

/*
 * Which output of n is the plain sum of its inputs 0 and 1, or -1: an
 * Add's, or the output 3 of ONNX Runtime's SkipLayerNormalization and
 * SkipSimplifiedLayerNormalization without a bias (input + skip, the
 * residual stream a decoder carries on).
 */
static int
sum_output(const struct qr_node *n)
{
	if (n->n_in < 2 || !n->in[0][0] || !n->in[1][0])
		return -1;
	if (am_is_op(n, "Add") && n->n_in == 2 && n->n_out >= 1 && n->out[0][0])
		return 0;
	if ((am_is_op(n, "SkipSimplifiedLayerNormalization") &&
	     (n->n_in < 4 || !n->in[3][0])) ||
	    (am_is_op(n, "SkipLayerNormalization") &&
	     (n->n_in < 5 || !n->in[4][0])))
		return n->n_out > 3 && n->out[3][0] ? 3 : -1;
	return -1;
}

/*
 * A residual sum written as an Add on one side and inside a
 * Skip*LayerNormalization on the other: pairs the two when they add the
 * same two values. Returns the pairs made.
 */
static size_t
match_sums(struct ctx *c)
{
	const size_t *order = qr_graph_topo_order(c->f.g);
	size_t nn = qr_graph_n_nodes(c->f.g), k, j, made = 0;

	for (k = 0; k < nn; k++) {
		const struct qr_node *fn = qr_graph_node(c->f.g, order[k]);
		int fo = sum_output(fn);
		size_t a, b, ft, nc, *cs;

		if (fo < 0 ||
		    (ft = am_names_find(&c->f.t, fn->out[fo])) == NONE ||
		    c->f.match[ft] != NONE ||
		    (a = am_names_find(&c->f.t, fn->in[0])) == NONE ||
		    (b = am_names_find(&c->f.t, fn->in[1])) == NONE ||
		    c->f.match[a] == NONE || c->f.match[b] == NONE)
			continue;
		cs = am_class_consumers(&c->q, c->f.match[a], &nc);
		for (j = 0; j < nc; j++) {
			const struct qr_node *qn = qr_graph_node(c->q.g, cs[j]);
			int qo = sum_output(qn);
			size_t x, y;
			char why[256];

			if (qo < 0 || strcmp(qn->op_type, fn->op_type) == 0 ||
			    (x = am_names_find(&c->q.t, qn->in[0])) == NONE ||
			    (y = am_names_find(&c->q.t, qn->in[1])) == NONE)
				continue;
			x = am_find(&c->q, x);
			y = am_find(&c->q, y);
			if (!((x == c->f.match[a] && y == c->f.match[b]) ||
			      (x == c->f.match[b] && y == c->f.match[a])))
				continue;
			snprintf(why, sizeof why, "the sum of the same two values: "
				 "%s output %d ~ %s output %d", fn->name, fo,
				 qn->name, qo);
			try_pair(c, ft, am_names_find(&c->q.t, qn->out[qo]), why);
			made += c->f.match[ft] != NONE;
			break;
		}
		free(cs);
	}
	return made;
}

/*
 * The activation inputs of the weighted ops match_compute aligned hold
 * the same value on both sides, whatever computed them: an attention
 * written as one GroupQueryAttention in one model and as MatMul,
 * Softmax, MatMul, Transpose and Reshape in the other meets the same
 * o_proj MatMul. Pairs input 0 of each aligned pair when neither side's
 * is paired yet; match_forward then carries on from there.
 */
static size_t
match_inputs(struct ctx *c)
{
	size_t k, made = 0;
	char why[256];

	for (k = 0; k < c->n_aligned; k++) {
		const struct qr_node *fn = qr_graph_node(c->f.g, c->aligned[2 * k]);
		const struct qr_node *qn = qr_graph_node(c->q.g,
							 c->aligned[2 * k + 1]);
		size_t ft, qt;

		if (fn->n_in < 1 || qn->n_in < 1 || !fn->in[0][0] ||
		    !qn->in[0][0] || qr_graph_const(c->f.g, fn->in[0]) ||
		    qr_graph_const(c->q.g, qn->in[0]))
			continue;
		ft = am_names_find(&c->f.t, fn->in[0]);
		qt = am_names_find(&c->q.t, qn->in[0]);
		if (ft == NONE || qt == NONE || c->f.match[ft] != NONE ||
		    c->q.match[am_find(&c->q, qt)] != NONE)
			continue;
		snprintf(why, sizeof why, "input of weighted layers paired by "
			 "structure: %s ~ %s", fn->name, qn->name);
		try_pair(c, ft, qt, why);
		made++;
	}
	return made;
}

static void
match_io(struct ctx *c)
{
	const struct qr_graph_data *fg = &c->f.m->graph, *qg = &c->q.m->graph;
	size_t i;
	char why[64];

	for (i = 0; i < c->f.n_inputs && i < c->q.n_inputs; i++) {
		snprintf(why, sizeof why, "graph input #%zu", i);
		try_pair(c, c->f.inputs[i], c->q.inputs[i], why);
	}
	for (i = 0; i < fg->n_output && i < qg->n_output; i++) {
		snprintf(why, sizeof why, "graph output #%zu", i);
		try_pair(c, am_names_find(&c->f.t, fg->outputs[i].name),
			 am_names_find(&c->q.t, qg->outputs[i].name), why);
	}
}

/*
 * Which float tensors are activations: those computed from a graph input
 * through ops other than Shape and Size. The rest are shape arithmetic
 * (Shape -> Gather -> Mul -> Reshape's target, as exporters write for
 * attention) or constants folded from weights; they carry no
 * quantization error and are neither compared nor listed as unmatched.
 * Returns a heap flag per tensor of s.
 */
static unsigned char *
activation_flags(const struct side *s)
{
	const size_t *order = qr_graph_topo_order(s->g);
	size_t nn = qr_graph_n_nodes(s->g), k, i;
	unsigned char *act = xcalloc(s->t.n + 1, 1);

	for (i = 0; i < s->n_inputs; i++)
		act[s->inputs[i]] = 1;
	for (k = 0; k < nn; k++) {
		const struct qr_node *n = qr_graph_node(s->g, order[k]);
		int any = 0;

		if (am_is_op(n, "Shape") || am_is_op(n, "Size"))
			continue;
		for (i = 0; i < n->n_in && !any; i++) {
			size_t t = n->in[i][0] ? am_names_find(&s->t, n->in[i])
					       : NONE;

			any = t != NONE && act[t];
		}
		for (i = 0; i < n->n_out && any; i++) {
			size_t t = n->out[i][0] ? am_names_find(&s->t, n->out[i])
						: NONE;

			if (t != NONE)
				act[t] = 1;
		}
	}
	return act;
}

/*
 * The reason for a float tensor with no counterpart that one candidate
 * node computes together with later ones: its nearest paired tensor
 * downstream is made by a candidate op the float graph writes as several
 * (GroupQueryAttention for MatMul, Softmax and the rest; a
 * SimplifiedLayerNormalization for Pow, ReduceMean, Sqrt ...).
 */
static char *
inside_reason(struct ctx *c, size_t ft)
{
	size_t *queue = xcalloc(WALK_DOWN + 1, sizeof *queue);
	size_t head = 0, tail = 0, nc, i, o;
	const struct qr_node *qp = NULL, *fp = NULL;
	char *r;

	queue[tail++] = ft;
	while (head < tail && qp == NULL) {
		size_t t = queue[head++];
		const size_t *cs = qr_graph_consumers(c->f.g, c->f.t.v[t], &nc);

		for (i = 0; i < nc && qp == NULL; i++) {
			const struct qr_node *n = qr_graph_node(c->f.g, cs[i]);

			for (o = 0; o < n->n_out && qp == NULL; o++) {
				size_t u = n->out[o][0] ? am_names_find(&c->f.t,
								     n->out[o])
							: NONE;

				if (u == NONE)
					continue;
				if (c->f.match[u] != NONE) {
					qp = c->cprod[c->f.match[u]];
					fp = n;
				} else if (tail < WALK_DOWN) {
					queue[tail++] = u;
				}
			}
		}
	}
	free(queue);
	if (qp != NULL && strcmp(norm_op(qp), fp->op_type) != 0)
		r = xasprintf("computed inside the candidate's %s '%s', one node "
			      "where the float model has several",
			      qp->op_type, qp->name);
	else
		r = xstrdup("no counterpart by name or structure");
	return r;
}

static char *
unmatched_reason(struct ctx *c, size_t ft)
{
	const struct qr_node *n, *bn = NULL, *act = NULL;
	size_t at = ft;
	int hop;

	/* BatchNormalization folded and a Relu/Clip fused into the layer
	 * before the tensor compared */
	for (hop = 0; hop < 2 && c->f.match[at] == NONE; hop++) {
		if (bn == NULL && act == NULL &&
		    (n = sole_consumer(&c->f, at, "BatchNormalization",
				       NULL)) != NULL)
			bn = n;
		else if (act == NULL &&
			 (n = sole_consumer(&c->f, at, "Relu", "Clip")) != NULL)
			act = n;
		else
			break;
		if ((at = am_names_find(&c->f.t, n->out[0])) == NONE)
			break;
	}
	if (at == NONE || at == ft || c->f.match[at] == NONE)
		return inside_reason(c, ft);
	if (bn != NULL && act != NULL)
		return xasprintf("BatchNormalization '%s' and %s '%s' follow; "
				 "the candidate folded and fused them into "
				 "this layer; compared after them", bn->name,
				 act->op_type, act->name);
	if (bn != NULL)
		return xasprintf("BatchNormalization '%s' follows; the candidate "
				 "folded it into this layer; compared after it",
				 bn->name);
	return xasprintf("%s '%s' follows and was fused into the "
			 "candidate's layer; compared after it",
			 act->op_type, act->name);
}

static int
cmp_pair(const void *a, const void *b)
{
	const struct qr_am_pair *x = a, *y = b;

	return (x->fpos > y->fpos) - (x->fpos < y->fpos);
}

/* Chain members computed after the compared one (the local run writes
 * them too). */
static void
fill_also(struct ctx *c, struct qr_am_pair *p)
{
	size_t qt = am_names_find(&c->q.t, p->q), r = am_find(&c->q, qt), i;

	for (i = 0; i < c->q.t.n; i++) {
		if (i == qt || am_find(&c->q, i) != r || c->q.prod[i] < 0 ||
		    c->q.pos[i] < c->q.pos[qt] ||
		    /* quantized with the scale it computes from the
		     * overwritten value: the run recomputes it */
		    am_is_op(am_producer(&c->q, i), "DynamicQuantizeLinear"))
			continue;
		p->also = xreallocarray(p->also, p->n_also + 1,
					sizeof *p->also);
		p->also[p->n_also++] = c->q.t.v[i];
	}
}

void
qr_am_match(const struct qr_graph *fg, const struct qr_graph *qg,
	    struct qr_am *out)
{
	struct ctx c;
	unsigned char *act;
	size_t ft, i, k;

	memset(out, 0, sizeof *out);
	memset(&c, 0, sizeof c);
	c.out = out;
	am_side_init(&c.f, fg);
	am_side_init(&c.q, qg);
	am_side_classes(&c.q);
	c.cprod = class_producers(&c.q);
	match_names(&c);
	match_io(&c);
	match_compute(&c);
	match_forward(&c);
	for (k = 0; k < 8 && match_inputs(&c) + match_sums(&c) > 0; k++)
		match_forward(&c);
	/* shape tensors helped match_forward; now they go */
	act = activation_flags(&c.f);
	for (i = k = 0; i < out->n; i++) {
		if (act[am_names_find(&c.f.t, out->pairs[i].f)])
			out->pairs[k++] = out->pairs[i];
		else
			free(out->pairs[i].reason);
	}
	out->n = k;
	qsort(out->pairs, out->n, sizeof *out->pairs, cmp_pair);
	for (i = 0; i < out->n; i++)
		fill_also(&c, &out->pairs[i]);
	for (ft = 0; ft < c.f.t.n; ft++) {
		struct qr_am_unmatched *u;

		if (c.f.match[ft] != NONE || !act[ft])
			continue;
		out->un = xreallocarray(out->un, out->n_un + 1,
					sizeof *out->un);
		u = &out->un[out->n_un++];
		u->f = c.f.t.v[ft];
		u->fpos = c.f.pos[ft];
		u->reason = unmatched_reason(&c, ft);
	}
	free(act);
	free(c.aligned);
	free(c.cprod);
	am_side_free(&c.f);
	am_side_free(&c.q);
}

void
qr_am_free(struct qr_am *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		free(m->pairs[i].reason);
		free(m->pairs[i].also);
	}
	free(m->pairs);
	for (i = 0; i < m->n_un; i++)
		free(m->un[i].reason);
	free(m->un);
	memset(m, 0, sizeof *m);
}

/*
 * See analysis.h. Builds both graph indexes, matches, and copies the
 * result so it borrows nothing. QR_EGRAPH from qr_graph_new.
 */
enum qr_status
qr_act_match_new(const struct qr_model *fmodel, const struct qr_model *qmodel,
		 struct qr_act_match **out, struct qr_diag *d)
{
	struct qr_graph *fg = NULL, *qg = NULL;
	struct qr_act_match *m;
	struct qr_am am;
	enum qr_status st;
	size_t i;

	*out = NULL;
	if ((st = qr_graph_new(fmodel, &fg, d)) != QR_OK ||
	    (st = qr_graph_new(qmodel, &qg, d)) != QR_OK)
		goto out;
	qr_am_match(fg, qg, &am);
	m = xcalloc(1, sizeof *m);
	m->pairs = xcalloc(am.n + 1, sizeof *m->pairs);
	for (i = 0; i < am.n; i++) {
		m->pairs[i].ftensor = xstrdup(am.pairs[i].f);
		m->pairs[i].qtensor = xstrdup(am.pairs[i].q);
		m->pairs[i].match = am.pairs[i].how;
		m->pairs[i].reason = xstrdup(am.pairs[i].reason);
	}
	m->n = am.n;
	m->unmatched = xcalloc(am.n_un + 1, sizeof *m->unmatched);
	for (i = 0; i < am.n_un; i++)
		m->unmatched[i] = xasprintf("%s: %s", am.un[i].f,
					    am.un[i].reason);
	m->n_unmatched = am.n_un;
	qr_am_free(&am);
	*out = m;
out:
	qr_graph_free(qg);
	qr_graph_free(fg);
	return st;
}

void
qr_act_match_free(struct qr_act_match *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->n; i++) {
		free(m->pairs[i].ftensor);
		free(m->pairs[i].qtensor);
		free(m->pairs[i].reason);
	}
	free(m->pairs);
	for (i = 0; i < m->n_unmatched; i++)
		free(m->unmatched[i]);
	free(m->unmatched);
	free(m);
}
