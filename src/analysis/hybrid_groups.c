/*
 * hybrid_groups: what-ifs for groups of layers a user would change at
 * once, each a hybrid model of the candidate (doc/sensitivity.md):
 *   elementwise  QDQ: the outputs of every elementwise op (Add, Sub,
 *                Mul, Div, Pow, Sqrt, Clip, Max, Min, Erf, Neg,
 *                Reciprocal) skip their QuantizeLinear/DequantizeLinear
 *                pair (the DequantizeLinear nodes pass the float value
 *                on, through a Relu when the pair clamped at 0: its zero
 *                point the lowest code, a ReLU folded into it)
 *   sensitive    the same for Softmax, LayerNormalization (and ONNX
 *                Runtime's Skip/Simplified forms) and Sigmoid
 *   first_last   the first and the last paired layer (in the
 *                candidate's topological order) kept float as hybrid.c
 *                keeps a layer float
 *   per_channel  QDQ and weight-only: every weight quantized per tensor
 *                read instead as the float weight quantized per output
 *                channel, symmetric, with the candidate's bit width
 *                (scale max|w_c| / (2^(bits-1) - 1), round half to even),
 *                dequantized; QOperator: each such layer becomes
 *                DequantizeLinear -> the float op on that weight ->
 *                QuantizeLinear at its output scale, as a layer kept
 *                float does
 * Each returns NULL with *why set when it does not apply to the
 * candidate.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis-int.h"
#include "graph/graph.h"
#include "onnx/onnx.h"

static const char *const eltwise_ops[] = { "Add", "Sub", "Mul", "Div",
	"Pow", "Sqrt", "Clip", "Max", "Min", "Erf", "Neg", "Reciprocal",
	NULL };
static const char *const sensitive_ops[] = { "Softmax",
	"LayerNormalization", "SkipLayerNormalization",
	"SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization",
	"Sigmoid", NULL };

static int
in_list(const char *op, const char *const *ops)
{
	size_t i;

	for (i = 0; ops[i]; i++)
		if (strcmp(op, ops[i]) == 0)
			return 1;
	return 0;
}

/* 1 when QuantizeLinear q's zero point is its type's lowest code (or
 * absent: uint8 0), so that q also clamps at 0, as a ReLU would. */
static int
clamps_at_zero(const struct qr_graph *g, const struct qr_node *q)
{
	const struct qr_tensor_data *zp = q->n_in > 2 && q->in[2][0] ?
		qr_graph_const(g, q->in[2]) : NULL;
	double lo, hi;
	size_t i;

	if (q->n_in > 2 && q->in[2][0] && zp == NULL)
		return 0;
	if (zp == NULL)
		return 1;
	qr_as_qrange(zp->dtype, &lo, &hi);
	for (i = 0; i < zp->n_elem; i++)
		if (qr_tensor_get(zp, i) != lo)
			return 0;
	return zp->n_elem > 0;
}

/* QDQ: every DequantizeLinear after a QuantizeLinear that reads an
 * output of an op in ops passes that output on instead; through a Relu
 * when the QuantizeLinear clamps at 0 (ONNX Runtime folds a ReLU after
 * the op into that clamp). *n gets the ops changed. */
static struct qr_hy_model *
float_outputs(const struct qr_hy_plan *p, const char *const *ops, size_t *n)
{
	const struct qr_graph *g = p->qg;
	struct qr_hy_build b;
	size_t i, j, k, nc, nd;

	*n = 0;
	qr_hy_start(&b, qr_graph_model(g));
	for (i = 0; i < qr_graph_n_nodes(g); i++) {
		const struct qr_node *op = qr_graph_node(g, i);
		const size_t *cs;
		int changed = 0;

		if (!in_list(op->op_type, ops) || op->n_out < 1)
			continue;
		cs = qr_graph_consumers(g, op->out[0], &nc);
		for (j = 0; j < nc; j++) {
			const struct qr_node *q = qr_graph_node(g, cs[j]);
			const size_t *ds;

			if (strcmp(q->op_type, "QuantizeLinear") != 0)
				continue;
			ds = qr_graph_consumers(g, q->out[0], &nd);
			for (k = 0; k < nd; k++)
				if (strcmp(qr_graph_node(g, ds[k])->op_type,
					   "DequantizeLinear") == 0) {
					qr_hy_to_identity(&b, ds[k], op->out[0]);
					if (clamps_at_zero(g, q))
						b.nodes[ds[k]].op_type = "Relu";
					changed = 1;
				}
		}
		*n += (size_t)changed;
	}
	return qr_hy_finish(&b);
}

/* The output-channel axis of candidate node n's weight (w_in 1). */
static int
out_axis(const struct qr_node *n, int ndim)
{
	if (strcmp(n->op_type, "Conv") == 0 ||
	    strcmp(n->op_type, "QLinearConv") == 0)
		return 0;
	if (strcmp(n->op_type, "ConvTranspose") == 0)
		return 1;
	if (strcmp(n->op_type, "Gemm") == 0 ||
	    strcmp(n->op_type, "QGemm") == 0)
		return qr_node_attr_int(n, "transB", 0) ? 0 : 1;
	return ndim - 1;
}

/* w (float, fw's shape) quantized per output channel along axis with
 * bits, symmetric, and dequantized, into a new array of the arena. */
static float *
per_channel(struct qr_arena *ar, const struct qr_tensor_data *fw,
	    const float *w, int axis, int bits)
{
	float *r = qr_arena_array(ar, fw->n_elem + 1, sizeof *r);
	float *mx = xcalloc((size_t)fw->dims[axis] + 1, sizeof *mx);
	double qmax = ldexp(1.0, bits - 1) - 1;
	size_t outer, C, inner, o, c, i;

	qr_an_channel_absmax(w, fw->dims, fw->ndim, axis, mx);
	qr_an_split(fw->dims, fw->ndim, axis, &outer, &C, &inner);
	for (o = 0; o < outer; o++)
		for (c = 0; c < C; c++) {
			float s = (float)(mx[c] / qmax);

			for (i = 0; i < inner; i++) {
				size_t e = (o * C + c) * inner + i;
				float v = s > 0 ? nearbyintf(w[e] / s) : 0;

				v = v > qmax ? (float)qmax : v < -qmax ?
					(float)-qmax : v;
				r[e] = v * s;
			}
		}
	free(mx);
	return r;
}

/* Layer l's float weight (folded as it pairs) quantized per output
 * channel with the bits of its per-tensor weight, in ar; NULL when its
 * weight is not per tensor. */
static const float *
layer_per_channel(struct qr_arena *ar, const struct qr_hy_plan *p,
		  const struct qr_hy_layer *l, void *user)
{
	const struct qr_node *qn = qr_graph_node(p->qg, l->qnode);
	const float *w;
	float *pc;
	int owned = 0, bits;

	(void)user;
	if (l->why || l->q == NULL || l->q->per_channel || l->q->block ||
	    strcmp(qn->op_type, "MatMulNBits") == 0)
		return NULL;
	bits = l->q->bits ? l->q->bits : qr_dtype_bits(l->q->q->dtype);
	if (bits < 2)
		return NULL;
	w = l->fw_fold ? l->fw_fold : qr_an_f32_view(l->fw, &owned);
	pc = per_channel(ar, l->fw, w, out_axis(qn, l->fw->ndim), bits);
	if (owned)
		free((float *)w);
	return pc;
}

/* Every per-tensor weight of the candidate read per channel instead.
 * *n gets the layers changed. */
static struct qr_hy_model *
per_channel_weights(const struct qr_hy_plan *p, size_t *n)
{
	struct qr_hy_build b;
	size_t i;

	if (p->format == QR_QFMT_QOPERATOR)
		return qr_hy_qop_reweight(p, layer_per_channel, NULL, n);
	*n = 0;
	qr_hy_start(&b, qr_graph_model(p->qg));
	for (i = 0; i < p->n; i++) {
		const struct qr_hy_layer *l = &p->l[i];
		const float *pc;
		char *nm;

		if (l->w_in != 1 ||
		    (pc = layer_per_channel(&b.h->ar, p, l, NULL)) == NULL)
			continue;
		nm = qr_hy_name(l->layer, "Wpc");
		qr_hy_own_node(&b, l->qnode)->in[1] =
			qr_hy_add_init(&b, nm, l->fw, 0, NULL, pc);
		free(nm);
		(*n)++;
	}
	return qr_hy_finish(&b);
}

/* See analysis-int.h. */
struct qr_hy_model *
qr_hy_group(const struct qr_hy_plan *p, int group, size_t *n_changed,
	    char **why)
{
	struct qr_hy_model *h = NULL;
	unsigned char *keep;
	size_t i, first = 0, last = 0, n = 0;
	int any = 0;

	*why = NULL;
	*n_changed = 0;
	switch (group) {
	case QR_SENS_GROUP_ELTWISE:
	case QR_SENS_GROUP_SENSITIVE:
		if (p->format != QR_QFMT_QDQ) {
			*why = xstrdup(p->format == QR_QFMT_QOPERATOR ?
				"QDQ candidates only: in QOperator form an "
				"op's quantized output is the next op's "
				"integer input" : "QDQ candidates only");
			return NULL;
		}
		h = float_outputs(p, group == QR_SENS_GROUP_ELTWISE ?
				  eltwise_ops : sensitive_ops, &n);
		break;
	case QR_SENS_GROUP_FIRST_LAST:
		keep = xcalloc(p->n + 1, 1);
		for (i = 0; i < p->n; i++) {
			if (p->l[i].why)
				continue;
			if (!any || p->l[i].depth < p->l[first].depth)
				first = i;
			if (!any || p->l[i].depth > p->l[last].depth)
				last = i;
			any = 1;
		}
		if (any) {
			keep[first] = keep[last] = 1;
			n = first == last ? 1 : 2;
			h = qr_hy_keep_float(p, keep, 0);
		}
		free(keep);
		break;
	case QR_SENS_GROUP_PER_CHANNEL:
		if (p->format != QR_QFMT_QDQ &&
		    p->format != QR_QFMT_WEIGHT_ONLY &&
		    p->format != QR_QFMT_QOPERATOR) {
			*why = xstrdup("QDQ, QOperator and weight-only "
				       "candidates only");
			return NULL;
		}
		h = per_channel_weights(p, &n);
		break;
	}
	if (n == 0) {
		qr_hy_model_free(h);
		h = NULL;
		*why = xstrdup(group == QR_SENS_GROUP_PER_CHANNEL ?
			       "no weight is quantized per tensor" :
			       group == QR_SENS_GROUP_FIRST_LAST ?
			       "no layer can be kept float" :
			       "no such op output is quantized");
	}
	*n_changed = n;
	return h;
}
