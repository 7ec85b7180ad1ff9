/*
 * hybrid: a candidate with some quantized layers kept float, or the float
 * model with some layers quantized as the candidate quantizes them, built
 * as an edited copy of the loaded graph for the executor to run.
 *
 * What "kept float" means depends on the candidate's format (the report
 * and doc/sensitivity.md say the same):
 *   QDQ          the layer reads the float model's weight (folded with
 *                its BatchNormalization when the candidate folded it) in
 *                place of its weight's DequantizeLinear, and the
 *                DequantizeLinear nodes after its output's QuantizeLinear
 *                (after the layer, or after the one activation that
 *                alone reads it) pass the float value on instead (they
 *                become Identity). Its bias stays the candidate's
 *                (dequantized int32, a rounding far below a step).
 *   QOperator    QLinearConv / QLinearMatMul becomes DequantizeLinear of
 *                its input -> Conv / MatMul with the float weight and the
 *                candidate's bias dequantized -> QuantizeLinear with the
 *                op's own output scale and zero point.
 *   weight-only  the layer reads the float weight in place of its
 *                weight's DequantizeLinear; a MatMulNBits becomes MatMul
 *                with the float weight (then Add of its bias).
 *   dynamic      ConvInteger / MatMulInteger computes in float with the
 *                float weight on its input as DynamicQuantizeLinear
 *                quantized it (x_q - x_zp, the scales applied after it
 *                as before).
 * "Only this layer quantized" is built on the float model, the same for
 * every format: the layer reads the candidate's weight, dequantized (a
 * Conv folded with its BatchNormalization as the candidate folded it,
 * the BN then passing its input on), and its input goes through a
 * QuantizeLinear/DequantizeLinear pair with the scale and zero point the
 * candidate reads it with, when the candidate quantizes it; a
 * MatMulNBits layer is the candidate's node itself (nbits_quant_only).
 *
 * A hybrid model shares the tensors, attributes and strings of the two
 * models it was made from (which must outlive it); its own node and
 * initializer arrays, and the float weights it computed, live in its
 * arena (hybrid_edit.c makes the edits). Nodes nobody reads any longer
 * are dropped. The plan (struct qr_hy_plan) holds what every edit needs
 * per paired layer, found once per candidate: the nodes, the float
 * weight folded when the candidate folded it, the candidate's input
 * scale, the DequantizeLinear nodes after its output.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis-int.h"
#include "graph/graph.h"
#include "onnx/onnx.h"

static int
is_op(const struct qr_node *n, const char *op)
{
	return strcmp(n->op_type, op) == 0 &&
	       (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0);
}

/* A QuantizeLinear or DequantizeLinear (op), ai.onnx's or ONNX Runtime's
 * com.microsoft one (16-bit types before opset 21). */
static int
is_qdq(const struct qr_node *n, const char *op)
{
	return strcmp(n->op_type, op) == 0 &&
	       (n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0 ||
		strcmp(n->domain, "com.microsoft") == 0);
}

/* Activations a QDQ layer's output may pass through before its
 * QuantizeLinear (ONNX Runtime quantizes after them). */
static int
is_act(const struct qr_node *n)
{
	static const char *const ops[] = { "Relu", "Clip", "LeakyRelu",
		"Sigmoid", "HardSigmoid", "HardSwish", "Tanh", NULL };
	size_t i;

	for (i = 0; ops[i]; i++)
		if (is_op(n, ops[i]))
			return 1;
	return 0;
}

/* Node index of name in g, or -1 (names of loaded nodes are unique only
 * by convention: the first wins). */
static long
node_by_name(const struct qr_graph *g, const char *name)
{
	size_t i, n = qr_graph_n_nodes(g);

	for (i = 0; i < n; i++)
		if (strcmp(qr_graph_node(g, i)->name, name) == 0)
			return (long)i;
	return -1;
}

/* 1 when a and b have the same shape. */
static int
same_dims(const struct qr_tensor_data *a, const struct qr_tensor_data *b)
{
	return a->ndim == b->ndim &&
	       memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof *a->dims) == 0;
}

/* The input of candidate node n that reads its quantized weight through a
 * DequantizeLinear (input 1, as in the float layers paired with it), or
 * -1. */
static int
qdq_weight_input(const struct qr_graph *g, const struct qr_node *n)
{
	long p = n->n_in >= 2 ? qr_graph_producer(g, n->in[1]) : -1;

	return p >= 0 && is_qdq(qr_graph_node(g, (size_t)p), "DequantizeLinear")
	       ? 1 : -1;
}

/* QDQ: the DequantizeLinear nodes that read the QuantizeLinear after the
 * layer's output (or after the one activation reading it) into l. */
static void
qdq_out_dq(const struct qr_graph *g, struct qr_hy_layer *l)
{
	const struct qr_node *n = qr_graph_node(g, l->qnode);
	const char *t = n->out[0];
	const size_t *cs;
	size_t nc, i, j, hop;

	for (hop = 0; hop < 2; hop++) {
		cs = qr_graph_consumers(g, t, &nc);
		for (i = 0; i < nc; i++) {
			const struct qr_node *c = qr_graph_node(g, cs[i]);
			const size_t *ds;
			size_t nd;

			if (!is_qdq(c, "QuantizeLinear"))
				continue;
			l->q_direct = hop == 0;
			ds = qr_graph_consumers(g, c->out[0], &nd);
			for (j = 0; j < nd; j++)
				if (is_qdq(qr_graph_node(g, ds[j]),
					   "DequantizeLinear")) {
					l->out_dq = xreallocarray(l->out_dq,
						l->n_out_dq + 1,
						sizeof *l->out_dq);
					l->out_dq[l->n_out_dq++] = ds[j];
				}
			return;
		}
		if (nc != 1 || !is_act(qr_graph_node(g, cs[0])))
			return;
		t = qr_graph_node(g, cs[0])->out[0];
	}
}

/* The candidate's weight of ql dequantized into a new float array in its
 * own layout: (q - zp) * scale per tensor, channel or block (ONNX
 * DequantizeLinear). */
static float *
dequantize(const struct qr_an_qlayer *ql)
{
	const struct qr_tensor_data *q = ql->folded ? ql->folded : ql->q;
	const struct qr_tensor_data *st = ql->fscale ? ql->fscale : ql->scale;
	const struct qr_tensor_data *zt = ql->fscale ? ql->fzp : ql->zp;
	size_t outer, C, inner, o, c, i, nb, at;
	float *w = qr_an_to_f32(q), *sc = qr_an_to_f32(st);
	float *zp = zt ? qr_an_to_f32(zt) : NULL;

	qr_an_split(q->dims, q->ndim, ql->axis, &outer, &C, &inner);
	nb = ql->block ? (C + ql->block - 1) / ql->block : C;
	for (o = 0; o < outer; o++)
		for (c = 0; c < C; c++)
			for (i = 0; i < inner; i++) {
				size_t e = (o * C + c) * inner + i;

				if (ql->block)
					at = (o * nb + c / ql->block) * inner
					     + i;
				else
					at = ql->per_channel ? c : 0;
				w[e] = (w[e] - (zp ? zp[at] : 0.0f)) * sc[at];
			}
	free(sc);
	free(zp);
	return w;
}

/* The float bias after a Conv+BN fold: (b - mean) f + beta, b the
 * Conv's bias (0 when none). New heap array of ch entries. */
static float *
fold_bias(const struct qr_graph *fg, const struct qr_node *conv,
	  const struct qr_node *bn, const float *f, size_t ch)
{
	const struct qr_tensor_data *b = conv->n_in > 2 && conv->in[2][0] ?
		qr_graph_const(fg, conv->in[2]) : NULL;
	const struct qr_tensor_data *beta = qr_graph_const(fg, bn->in[2]);
	const struct qr_tensor_data *mean = qr_graph_const(fg, bn->in[3]);
	float *r = xcalloc(ch + 1, sizeof *r);
	size_t c;

	for (c = 0; c < ch; c++) {
		double bc = b && b->n_elem == ch ? qr_tensor_get(b, c) : 0.0;

		r[c] = (float)((bc - qr_tensor_get(mean, c)) * f[c] +
			       qr_tensor_get(beta, c));
	}
	return r;
}

/* Where a QOperator op keeps its inputs, and the float op it stands for. */
struct qop_layout {
	const char *op, *domain; /* the QOperator op */
	const char *fop;         /* the float op (same attributes) */
	int bias;                /* int32 bias input at x_scale * w_scale,
				  * -1: none */
	int ys, yz;              /* output scale and zero point inputs */
	size_t min_in;           /* inputs it must have */
};

static const struct qop_layout qop_layouts[] = {
	{ "QLinearConv", "", "Conv", 8, 6, 7, 8 },
	{ "QLinearMatMul", "", "MatMul", -1, 6, 7, 8 },
	{ "QGemm", "com.microsoft", "Gemm", 6, 7, 8, 6 },
};

static const struct qop_layout *
qop_layout(const struct qr_node *n)
{
	size_t i;

	for (i = 0; i < sizeof qop_layouts / sizeof qop_layouts[0]; i++)
		if (strcmp(n->op_type, qop_layouts[i].op) == 0 &&
		    strcmp(n->domain, qop_layouts[i].domain) == 0 &&
		    n->n_in >= qop_layouts[i].min_in)
			return &qop_layouts[i];
	return NULL;
}

/* The float model's activation after layer l (after its BN when the
 * candidate folded it), when one node alone reads the layer's output;
 * else NULL. */
static const struct qr_node *
float_act(const struct qr_graph *fg, const struct qr_hy_layer *l)
{
	const char *t = l->bn ? l->bn->out[0]
			      : qr_graph_node(fg, l->fnode)->out[0];
	const size_t *cs;
	size_t nc;

	cs = qr_graph_consumers(fg, t, &nc);
	if (nc == 1 && is_act(qr_graph_node(fg, cs[0])))
		return qr_graph_node(fg, cs[0]);
	return NULL;
}

/* Fill layer l of candidate k from its pairing qw; l->why says what
 * keeps it out. */
static void
layer_setup(struct qr_hy_plan *p, const struct qr_quant_weight *qw,
	    const struct qr_an_qlayer *ql, size_t n_ql, struct qr_hy_layer *l)
{
	const struct qr_graph *fg = p->fg, *qg = p->qg;
	const struct qr_node *fn, *qn;
	const struct qr_an_qlayer *q = NULL;
	struct qr_as_qparams qp;
	const size_t *cs;
	long fi = node_by_name(fg, qw->layer);
	long qi = node_by_name(qg, qw->quant_layer);
	size_t i, nc;

	l->layer = qw->layer;
	l->quant_layer = qw->quant_layer;
	l->w_in = -1;
	if (fi < 0 || qi < 0) {
		l->why = xstrdup("node not found");
		return;
	}
	l->fnode = (size_t)fi;
	l->qnode = (size_t)qi;
	fn = qr_graph_node(fg, l->fnode);
	qn = qr_graph_node(qg, l->qnode);
	l->op = qn->op_type;
	for (i = 0; i < n_ql; i++)
		if (ql[i].node == l->qnode)
			q = &ql[i];
	l->fw = fn->n_in > 1 ? qr_graph_const(fg, fn->in[1]) : NULL;
	if (q == NULL || l->fw == NULL) {
		l->why = xstrdup("its quantized weight was not found");
		return;
	}
	l->depth = q->depth;
	if (!same_dims(l->fw, q->folded ? q->folded : q->q)) {
		l->why = xasprintf("float weight and quantized weight differ "
				   "in shape (transposed or packed)");
		return;
	}
	if (!qr_an_is_float(l->fw->dtype) || l->fw->data == NULL) {
		l->why = xstrdup("the float weight is not a float tensor");
		return;
	}
	/* the fold weight_match.c makes: the float Conv's BN, when the
	 * candidate has none after its layer */
	cs = qr_graph_consumers(qg, qn->out[0], &nc);
	if (q->family == QR_AN_FAM_CONV &&
	    !(nc == 1 && is_op(qr_graph_node(qg, cs[0]),
			       "BatchNormalization"))) {
		size_t ch = (size_t)l->fw->dims[0];
		float *f = qr_an_bn_factors(fg, l->fnode, ch, &l->bn);

		if (f != NULL) {
			l->fw_fold = qr_an_to_f32(l->fw);
			qr_an_scale_axis(l->fw_fold, l->fw->dims, l->fw->ndim,
					 0, f);
			l->fb_fold = fold_bias(fg, fn, l->bn, f, ch);
			free(f);
		}
	}
	l->q = q;
	if (qr_am_qparams(qg, qn->in[0], &qp)) {
		if (qp.n == 1) {
			/* the constants behind the candidate's input scale */
			long pi = qr_graph_producer(qg, qn->in[0]);
			const struct qr_node *dq = pi >= 0 ?
				qr_graph_node(qg, (size_t)pi) : NULL;

			if (p->format == QR_QFMT_QOPERATOR && qn->n_in >= 3) {
				l->in_scale = qn->in[1];
				l->in_zp = qn->in[2];
			} else if (dq && is_qdq(dq, "DequantizeLinear")) {
				l->in_scale = dq->in[1];
				l->in_zp = dq->n_in > 2 ? dq->in[2] : "";
				l->in_domain = dq->domain;
			}
		}
		qr_as_qparams_free(&qp);
	}
	switch (p->format) {
	case QR_QFMT_QDQ:
	case QR_QFMT_WEIGHT_ONLY:
		if (strcmp(qn->op_type, "MatMulNBits") == 0 &&
		    strcmp(qn->domain, "com.microsoft") == 0) {
			l->w_in = 1; /* packed: the whole node is replaced */
			break;
		}
		l->w_in = qdq_weight_input(qg, qn);
		if (l->w_in < 0 || (strcmp(qn->op_type, "Conv") &&
				    strcmp(qn->op_type, "ConvTranspose") &&
				    strcmp(qn->op_type, "Gemm") &&
				    strcmp(qn->op_type, "MatMul"))) {
			l->why = xasprintf("%s: no weight read through a "
					   "DequantizeLinear", qn->op_type);
			return;
		}
			if (p->format == QR_QFMT_QDQ) {
			qdq_out_dq(qg, l);
			/* the QuantizeLinear right after the layer is its
			 * activation too (a ReLU fused as the clamp at the
			 * zero point): kept float, the float model's
			 * activation takes its place */
			if (l->q_direct)
				l->fact = float_act(fg, l);
		}
		break;
	case QR_QFMT_QOPERATOR:
		if (qop_layout(qn) == NULL ||
		    qr_graph_const(qg, qn->in[3]) == NULL) {
			l->why = xasprintf("%s cannot be kept float (only "
					   "QLinearConv, QLinearMatMul and "
					   "QGemm with a constant weight)",
					   qn->op_type);
			return;
		}
		l->w_in = 3;
		break;
	case QR_QFMT_DYNAMIC:
		if ((!is_op(qn, "ConvInteger") &&
		     !is_op(qn, "MatMulInteger")) ||
		    qn->n_in < 2 || qr_graph_const(qg, qn->in[1]) == NULL ||
		    q->scale == NULL || q->block) {
			l->why = xasprintf("%s cannot be kept float (only "
					   "ConvInteger and MatMulInteger with "
					   "a constant weight and its scale)",
					   qn->op_type);
			return;
		}
		for (i = 0; i < q->scale->n_elem; i++)
			if (!(qr_tensor_get(q->scale, i) != 0)) {
				l->why = xstrdup("a weight scale is 0");
				return;
			}
		l->w_in = 1;
		break;
	default:
		l->why = xasprintf("%s candidates cannot be kept float "
				   "layer by layer",
				   qr_qformat_name(p->format));
		return;
	}
}

/*
 * The hybrid plan of candidate k of a (its pairings a->qweights; the
 * quantized layers as summary.c finds them): one entry per paired layer.
 * The graph indices fg and qg are borrowed. *out is a new plan freed with
 * qr_hy_plan_free.
 */
void
qr_hy_plan_new(const struct qr_analysis *a, size_t k,
	       const struct qr_graph *fg, const struct qr_graph *qg,
	       struct qr_hy_plan **out)
{
	struct qr_hy_plan *p = xcalloc(1, sizeof *p);
	struct qr_quant_summary qs;
	struct qr_an_qlayer *ql = NULL;
	size_t n_ql = 0, i;

	memset(&qs, 0, sizeof qs);
	p->fg = fg;
	p->qg = qg;
	p->format = qr_an_detect_format(qg);
	qr_an_quant_summary(qg, "", &qs, &ql, &n_ql);
	p->l = xcalloc(a->n_qweights + 1, sizeof *p->l);
	for (i = 0; i < a->n_qweights; i++)
		if (a->qweights[i].quant == k)
			layer_setup(p, &a->qweights[i], ql, n_ql,
				    &p->l[p->n++]);
	p->ql = ql;
	p->n_ql = n_ql;
	qr_an_quant_summary_free(&qs);
	*out = p;
}

/* See analysis-int.h. */
void
qr_hy_plan_drop_qw(struct qr_hy_plan *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		free(p->l[i].qw);
		p->l[i].qw = NULL;
	}
}

/* See analysis-int.h. */
void
qr_hy_plan_free(struct qr_hy_plan *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->n; i++) {
		free(p->l[i].why);
		free(p->l[i].fw_fold);
		free(p->l[i].fb_fold);
		free(p->l[i].qw);
		free(p->l[i].out_dq);
	}
	free(p->l);
	qr_an_qlayers_free(p->ql, p->n_ql);
	free(p);
}

/* ---- per format ---- */

/* Turn node i into a copy of the float model's activation fact reading
 * src (its constant inputs, Clip's bounds, copied in). */
static void
to_float_act(struct qr_hy_build *b, const struct qr_hy_plan *p, size_t i,
	     const char *src, const struct qr_node *fact)
{
	struct qr_node *n = &b->nodes[i];
	const char **in = qr_arena_array(&b->h->ar, fact->n_in + 1,
					 sizeof *in);
	size_t k;

	in[0] = src;
	for (k = 1; k < fact->n_in; k++) {
		const struct qr_tensor_data *c = fact->in[k][0] ?
			qr_graph_const(p->fg, fact->in[k]) : NULL;
		char *nm;

		in[k] = "";
		if (c != NULL) {
			nm = xasprintf("qr.hybrid/%s/%s", fact->name,
				       fact->in[k]);
			in[k] = qr_hy_add_const(b, nm, c);
			free(nm);
		}
		n = &b->nodes[i];
	}
	n->in = in;
	n->n_in = fact->n_in;
	n->op_type = fact->op_type;
	n->domain = fact->domain;
	n->n_attr = fact->n_attr;
	n->attrs = fact->attrs;
}

/* The float weight of l as the candidate's layer reads it (folded), an
 * initializer of the model being built. */
static const char *
float_weight(struct qr_hy_build *b, const struct qr_hy_layer *l)
{
	const float *w = l->fw_fold;
	const char *name;
	char *nm;
	int owned = 0;

	if (w == NULL) {
		w = qr_an_f32_view(l->fw, &owned);
		if (owned) {
			float *c = qr_arena_array(&b->h->ar, l->fw->n_elem + 1,
						  sizeof *c);

			memcpy(c, w, l->fw->n_elem * sizeof *c);
			free((float *)w);
			w = c;
		}
	}
	nm = qr_hy_name(l->layer, "W");
	name = qr_hy_add_init(b, nm, l->fw, 0, NULL, w);
	free(nm);
	return name;
}

/* 1 when input k of n is there. */
static int
has_in(const struct qr_node *n, int k)
{
	return k >= 0 && (size_t)k < n->n_in && n->in[k][0] != '\0';
}

/* QOperator: layer l becomes DequantizeLinear -> float op with the float
 * weight (or w, fw's shape, in b's arena) -> QuantizeLinear at the op's
 * output scale and zero point (none when the op gives a float output, as
 * QGemm without y_scale), in the node's place. */
static void
qop_keep_float(struct qr_hy_build *b, const struct qr_hy_plan *p,
	       const struct qr_hy_layer *l, const float *w)
{
	const struct qr_node *qn = &b->nodes[l->qnode];
	const struct qop_layout *lay = qop_layout(qn);
	const char *wname, *bname = NULL;
	const char *x = qn->in[0], *xs = qn->in[1], *xz = qn->in[2];
	const char *ys = has_in(qn, lay->ys) ? qn->in[lay->ys] : NULL;
	const char *yz = has_in(qn, lay->yz) ? qn->in[lay->yz] : "";
	const char *out = qn->out[0];
	const char *name = qn->name;
	size_t n_attr = qn->n_attr;
	const struct qr_attr *attrs = qn->attrs;
	char *nm;
	struct qr_node *dq, *op, *q;

	if (w != NULL) {
		nm = qr_hy_name(l->layer, "Wre");
		wname = qr_hy_add_init(b, nm, l->fw, 0, NULL, w);
		free(nm);
	} else {
		wname = float_weight(b, l);
	}
	if (has_in(qn, lay->bias)) {
		/* the candidate's int32 bias at scale x_scale * w_scale */
		const struct qr_tensor_data *bq = qr_graph_const(p->qg,
							qn->in[lay->bias]);
		const struct qr_tensor_data *xst = qr_graph_const(p->qg, xs);
		const struct qr_tensor_data *ws = qr_graph_const(p->qg,
								 qn->in[4]);

		if (bq && xst && ws) {
			float *bv = qr_arena_array(&b->h->ar, bq->n_elem + 1,
						   sizeof *bv);
			size_t c;

			for (c = 0; c < bq->n_elem; c++)
				bv[c] = (float)(qr_tensor_get(bq, c) *
						qr_tensor_get(xst, 0) *
						qr_tensor_get(ws, ws->n_elem > 1
							      ? c : 0));
			nm = qr_hy_name(l->layer, "B");
			bname = qr_hy_add_init(b, nm, bq, 0, NULL, bv);
			free(nm);
		}
	}
	b->drop[l->qnode] = 1;
	nm = qr_hy_name(l->layer, "dequantize");
	dq = qr_hy_add_node(b, "DequantizeLinear", nm, 3, 1);
	free(nm);
	dq->in[0] = x;
	dq->in[1] = xs;
	dq->in[2] = xz;
	nm = qr_hy_name(l->layer, "x");
	dq->out[0] = qr_arena_strdup(&b->h->ar, nm);
	free(nm);
	op = qr_hy_add_node(b, lay->fop, name, bname ? 3 : 2, 1);
	op->in[0] = b->nodes[b->n_nodes - 2].out[0];
	op->in[1] = wname;
	if (bname)
		op->in[2] = bname;
	/* QLinearConv's attributes are Conv's, QGemm's Gemm's */
	op->n_attr = n_attr;
	op->attrs = attrs;
	if (ys == NULL) {
		op->out[0] = out;
		return;
	}
	nm = qr_hy_name(l->layer, "y");
	op->out[0] = qr_arena_strdup(&b->h->ar, nm);
	free(nm);
	nm = qr_hy_name(l->layer, "quantize");
	q = qr_hy_add_node(b, "QuantizeLinear", nm, yz[0] ? 3 : 2, 1);
	free(nm);
	q->in[0] = b->nodes[b->n_nodes - 2].out[0];
	q->in[1] = ys;
	if (yz[0])
		q->in[2] = yz;
	q->out[0] = out;
}

/*
 * Dynamic: ConvInteger / MatMulInteger (x_q, w_q, x_zp, w_zp) becomes
 * DequantizeLinear(x_q, 1, x_zp) -> Conv / MatMul with the float weight
 * divided by the weight's scale, under the op's output name: what reads
 * it (a Cast, then a Mul by x_scale * w_scale) then gets x_scale (x_q -
 * x_zp) * W, the layer on its dynamically quantized input with the float
 * weight.
 */
static void
dyn_keep_float(struct qr_hy_build *b, const struct qr_hy_layer *l)
{
	const struct qr_node *qn = &b->nodes[l->qnode];
	const struct qr_an_qlayer *q = l->q;
	const struct qr_tensor_data *fw = l->fw;
	size_t outer, C, inner, o, c, i;
	float *w = qr_arena_array(&b->h->ar, fw->n_elem + 1, sizeof *w);
	float *sc = qr_an_to_f32(q->scale);
	float *one = qr_arena_alloc(&b->h->ar, sizeof *one);
	const float *src;
	const char *x = qn->in[0], *xz = has_in(qn, 2) ? qn->in[2] : NULL;
	const char *out = qn->out[0], *name = qn->name;
	int conv = is_op(qn, "ConvInteger"), owned;
	size_t n_attr = qn->n_attr;
	const struct qr_attr *attrs = qn->attrs;
	struct qr_node *dq, *op;
	char *nm;

	src = l->fw_fold ? l->fw_fold : qr_an_f32_view(fw, &owned);
	qr_an_split(fw->dims, fw->ndim, q->axis, &outer, &C, &inner);
	for (o = 0; o < outer; o++)
		for (c = 0; c < C; c++)
			for (i = 0; i < inner; i++) {
				size_t e = (o * C + c) * inner + i;

				w[e] = src[e] / sc[q->per_channel ? c : 0];
			}
	if (!l->fw_fold && owned)
		free((float *)src);
	free(sc);
	*one = 1.0f;
	b->drop[l->qnode] = 1;
	nm = qr_hy_name(l->layer, "dequantize");
	dq = qr_hy_add_node(b, "DequantizeLinear", nm, xz ? 3 : 2, 1);
	free(nm);
	dq->in[0] = x;
	nm = qr_hy_name(l->layer, "one");
	dq->in[1] = qr_hy_add_init(b, nm, NULL, 0, NULL, one);
	free(nm);
	if (xz)
		dq->in[2] = xz;
	nm = qr_hy_name(l->layer, "x");
	dq->out[0] = qr_arena_strdup(&b->h->ar, nm);
	free(nm);
	op = qr_hy_add_node(b, conv ? "Conv" : "MatMul", name, 2, 1);
	op->in[0] = b->nodes[b->n_nodes - 2].out[0];
	nm = qr_hy_name(l->layer, "W_over_scale");
	op->in[1] = qr_hy_add_init(b, nm, fw, 0, NULL, w);
	free(nm);
	op->out[0] = out;
	op->n_attr = n_attr; /* ConvInteger's are Conv's */
	op->attrs = attrs;
}

/* Weight-only: com.microsoft MatMulNBits (A, packed B, scales, ...,
 * bias) becomes MatMul(A, W) with the float weight ([K, N], as the float
 * model holds it), then Add of its bias when it has one, in its place. */
static void
nbits_keep_float(struct qr_hy_build *b, const struct qr_hy_layer *l)
{
	const struct qr_node *qn = &b->nodes[l->qnode];
	const char *a = qn->in[0], *bias = has_in(qn, 5) ? qn->in[5] : NULL;
	const char *out = qn->out[0], *name = qn->name, *w;
	struct qr_node *mm, *add;
	char *nm;

	w = float_weight(b, l);
	b->drop[l->qnode] = 1;
	mm = qr_hy_add_node(b, "MatMul", name, 2, 1);
	mm->in[0] = a;
	mm->in[1] = w;
	if (bias == NULL) {
		mm->out[0] = out;
		return;
	}
	nm = qr_hy_name(l->layer, "y");
	mm->out[0] = qr_arena_strdup(&b->h->ar, nm);
	free(nm);
	nm = qr_hy_name(l->layer, "bias");
	add = qr_hy_add_node(b, "Add", nm, 2, 1);
	free(nm);
	add->in[0] = b->nodes[b->n_nodes - 2].out[0];
	add->in[1] = bias;
	add->out[0] = out;
}

/* b's model without those of its first n0 nodes marked in b->drop:
 * replaced QOperator nodes, whose outputs new QuantizeLinear nodes write
 * now. */
static struct qr_hy_model *
finish_dropping(struct qr_hy_build *b, size_t n0)
{
	size_t i, j;

	for (i = j = 0; i < b->n_nodes; i++)
		if (i >= n0 || !b->drop[i])
			b->nodes[j++] = b->nodes[i];
	b->n_nodes = j;
	free(b->drop);
	b->drop = NULL;
	return qr_hy_finish(b);
}

/*
 * The candidate with the layers of p marked in keep (NULL: every layer
 * that can be) kept float. weights_only: only their weights (the QDQ
 * output's QuantizeLinear/DequantizeLinear stay): the candidate with its
 * activations alone quantized when every layer is marked. *out is a new
 * model freed with qr_hy_model_free; the plan and both models must
 * outlive it. Layers with a why are left as they are.
 */
struct qr_hy_model *
qr_hy_keep_float(const struct qr_hy_plan *p, const unsigned char *keep,
		 int weights_only)
{
	struct qr_hy_build b;
	size_t i, j, n0;

	qr_hy_start(&b, qr_graph_model(p->qg));
	n0 = b.n_nodes;
	b.drop = xcalloc(n0 + 1, 1);
	for (i = 0; i < p->n; i++) {
		const struct qr_hy_layer *l = &p->l[i];

		if (l->why || (keep && !keep[i]))
			continue;
		if (p->format == QR_QFMT_QOPERATOR) {
			/* weights_only too: its activations stay quantized
			 * all the same */
			qop_keep_float(&b, p, l, NULL);
			continue;
		}
		if (p->format == QR_QFMT_DYNAMIC) {
			dyn_keep_float(&b, l);
			continue;
		}
		if (strcmp(b.nodes[l->qnode].op_type, "MatMulNBits") == 0) {
			nbits_keep_float(&b, l);
			continue;
		}
		qr_hy_own_node(&b, l->qnode)->in[l->w_in] = float_weight(&b, l);
		if (weights_only)
			continue;
		for (j = 0; j < l->n_out_dq; j++) {
			size_t di = l->out_dq[j];
			long qi = qr_graph_producer(p->qg, b.nodes[di].in[0]);

			if (l->fact)
				to_float_act(&b, p, di, b.nodes[qi].in[0],
					     l->fact);
			else
				qr_hy_to_identity(&b, di, b.nodes[qi].in[0]);
		}
	}
	return finish_dropping(&b, n0);
}

/* See analysis-int.h. */
struct qr_hy_model *
qr_hy_qop_reweight(const struct qr_hy_plan *p, qr_hy_weight_fn fn,
		   void *user, size_t *n_changed)
{
	struct qr_hy_build b;
	size_t i, n0;

	*n_changed = 0;
	qr_hy_start(&b, qr_graph_model(p->qg));
	n0 = b.n_nodes;
	b.drop = xcalloc(n0 + 1, 1);
	for (i = 0; i < p->n; i++) {
		const struct qr_hy_layer *l = &p->l[i];
		const float *w;

		if (l->why || p->format != QR_QFMT_QOPERATOR ||
		    (w = fn(&b.h->ar, p, l, user)) == NULL)
			continue;
		qop_keep_float(&b, p, l, w);
		(*n_changed)++;
	}
	return finish_dropping(&b, n0);
}

/*
 * Only layer l quantized when the candidate's is a com.microsoft
 * MatMulNBits and the float model's a MatMul: the MatMul becomes the
 * candidate's node, reading the packed weight, scales and zero points
 * where the candidate keeps them (a dequantized copy of every layer
 * would be a decoder's float model again). acts 0: at accuracy_level 0,
 * A in float, the weight alone quantized; else at the candidate's level
 * (4 quantizes A to int8 per block, as the candidate does). The bias
 * stays the float model's. 0 when l is not such a layer.
 */
static int
nbits_quant_only(struct qr_hy_build *b, const struct qr_hy_plan *p,
		 const struct qr_hy_layer *l, int acts)
{
	const struct qr_node *qn = qr_graph_node(p->qg, l->qnode);
	const struct qr_node *fn = &b->nodes[l->fnode];
	const char **in;
	struct qr_attr *attrs;
	struct qr_node *n;
	size_t k;

	if (strcmp(qn->op_type, "MatMulNBits") != 0 ||
	    strcmp(qn->domain, "com.microsoft") != 0 || !is_op(fn, "MatMul") ||
	    qn->n_in < 3 || has_in(qn, 4))
		return 0;
	in = qr_arena_array(&b->h->ar, qn->n_in + 1, sizeof *in);
	in[0] = fn->in[0];
	for (k = 1; k < qn->n_in; k++) {
		const struct qr_tensor_data *t;
		char *nm;

		in[k] = "";
		if (k == 5 || !has_in(qn, (int)k))
			continue;
		if ((t = qr_graph_const(p->qg, qn->in[k])) == NULL)
			return 0;
		nm = qr_hy_name(l->layer, k == 1 ? "Bq" : k == 2 ? "scales"
						   : "zero_points");
		in[k] = qr_hy_add_const(b, nm, t);
		free(nm);
	}
	attrs = qr_arena_array(&b->h->ar, qn->n_attr + 1, sizeof *attrs);
	memcpy(attrs, qn->attrs, qn->n_attr * sizeof *attrs);
	for (k = 0; k < qn->n_attr && !acts; k++)
		if (strcmp(attrs[k].name, "accuracy_level") == 0)
			attrs[k].i = 0;
	n = &b->nodes[l->fnode];
	n->op_type = "MatMulNBits";
	n->domain = "com.microsoft";
	n->in = in;
	n->n_in = qn->n_in < 5 ? qn->n_in : 4;
	n->attrs = attrs;
	n->n_attr = qn->n_attr;
	qr_hy_need_opset(b, "com.microsoft", 1);
	return 1;
}

/*
 * The float model with the layers of p marked in quant (NULL: all)
 * quantized as the candidate quantizes them: their weights dequantized
 * from the candidate's and, with acts, their inputs through a
 * QuantizeLinear/DequantizeLinear pair at the candidate's input scale and
 * zero point. acts 0 with every layer marked: the float model with the
 * candidate's weights alone. Ownership as qr_hy_keep_float.
 */
struct qr_hy_model *
qr_hy_quant_only(struct qr_hy_plan *p, const unsigned char *quant, int acts)
{
	struct qr_hy_build b;
	size_t i;

	qr_hy_start(&b, qr_graph_model(p->fg));
	for (i = 0; i < p->n; i++) {
		const struct qr_hy_layer *l = &p->l[i];
		const struct qr_node *fn;
		struct qr_node *n;
		char *nm;

		if ((quant && !quant[i]) || l->q == NULL ||
		    nbits_quant_only(&b, p, l, acts))
			continue;
		if (l->qw == NULL) {
			struct qr_an_qlayer *q = (struct qr_an_qlayer *)l->q;

			qr_an_qlayer_codes(q);
			p->l[i].qw = dequantize(q);
			qr_an_qlayer_drop_codes(q);
		}
		fn = &b.nodes[l->fnode];
		n = qr_hy_own_node(&b, l->fnode);
		nm = qr_hy_name(l->layer, "Wq");
		n->in[1] = qr_hy_add_init(&b, nm, l->fw, 0, NULL, l->qw);
		free(nm);
		if (l->fw_fold) {
			/* the candidate's weight is the folded one: the Conv
			 * takes the folded bias and its BN passes on */
			const char **in = qr_arena_array(&b.h->ar, 3,
							 sizeof *in);
			int64_t ch = l->fw->dims[0];
			long bi = node_by_name(p->fg, l->bn->name);

			in[0] = n->in[0];
			in[1] = n->in[1];
			nm = qr_hy_name(l->layer, "Bfold");
			in[2] = qr_hy_add_init(&b, nm, NULL, 1, &ch,
					       l->fb_fold);
			free(nm);
			n = &b.nodes[l->fnode];
			n->in = in;
			n->n_in = 3;
			if (bi >= 0)
				qr_hy_to_identity(&b, (size_t)bi, n->out[0]);
		}
		if (acts && l->in_scale) {
			const struct qr_tensor_data *s = qr_graph_const(p->qg,
								l->in_scale);
			const struct qr_tensor_data *z = l->in_zp[0] ?
				qr_graph_const(p->qg, l->in_zp) : NULL;
			struct qr_node *q, *dq;
			const char *sname, *zname;
			char *qn, *dn, *sn, *zn;

			if (s == NULL)
				continue;
			qn = qr_hy_name(l->layer, "xq");
			dn = qr_hy_name(l->layer, "xdq");
			sn = qr_hy_name(l->layer, "xscale");
			zn = qr_hy_name(l->layer, "xzp");
			/* the candidate's constants, under names of ours */
			sname = qr_hy_add_const(&b, sn, s);
			zname = z ? qr_hy_add_const(&b, zn, z) : NULL;
			q = qr_hy_add_node(&b, "QuantizeLinear", qn,
					   z ? 3 : 2, 1);
			dq = qr_hy_add_node(&b, "DequantizeLinear", dn,
					    z ? 3 : 2, 1);
			fn = &b.nodes[l->fnode];
			q->domain = dq->domain = l->in_domain ? l->in_domain
							       : "";
			if (q->domain[0])
				qr_hy_need_opset(&b, q->domain,
					qr_model_opset(qr_graph_model(p->qg),
						       q->domain));
			q->in[0] = fn->in[0];
			q->in[1] = sname;
			if (z)
				q->in[2] = zname;
			q->out[0] = qr_arena_strdup(&b.h->ar, qn);
			dq->in[0] = q->out[0];
			dq->in[1] = q->in[1];
			if (z)
				dq->in[2] = q->in[2];
			dq->out[0] = qr_arena_strdup(&b.h->ar, dn);
			((struct qr_node *)fn)->in[0] = dq->out[0];
			free(qn);
			free(dn);
			free(sn);
			free(zn);
		}
	}
	return qr_hy_finish(&b);
}
