/*
 * op_matmul_int_float: the com.microsoft ops ONNX Runtime fuses dynamic
 * quantization into, which a model saved after its graph optimisation
 * holds:
 *
 *   MatMulIntegerToFloat  A, B (int8/uint8), a_scale, b_scale,
 *                         [a_zero_point], [b_zero_point], [bias]:
 *                         Y = (A - a_zp)(B - b_zp) * (a_scale * b_scale)
 *                             (+ bias)
 *   DynamicQuantizeMatMul A (float), B, b_scale, [b_zero_point], [bias]:
 *                         A quantized to uint8 as DynamicQuantizeLinear
 *                         does, then the same
 *
 * a_scale, a_zero_point: one value; b_scale and b_zero_point: one value
 * or one per column of B. The integer product is exact (int32, as
 * MatMulInteger); each output is then (float)acc * multiplier + bias, the
 * multiplier a_scale * b_scale[column] rounded to float once, as ONNX
 * Runtime's output processor does.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

/* Input positions of one of the two ops. */
struct mif_inputs {
	size_t b_scale, a_zp, b_zp, bias; /* a_zp: (size_t)-1 when none */
};

static void
mif_inputs(const struct qr_op_call *c, struct mif_inputs *in)
{
	if (strcmp(c->node->op_type, "DynamicQuantizeMatMul") == 0) {
		in->b_scale = 2;
		in->a_zp = (size_t)-1;
		in->b_zp = 3;
		in->bias = 4;
	} else {
		in->b_scale = 3;
		in->a_zp = 4;
		in->b_zp = 5;
		in->bias = 6;
	}
}

static enum qr_status
mif_check(const struct qr_op_call *c, struct qr_diag *d)
{
	int dyn = strcmp(c->node->op_type, "DynamicQuantizeMatMul") == 0;
	struct mif_inputs in;
	enum qr_status st;

	mif_inputs(c, &in);
	if ((st = qr_op_arity(c, d, dyn ? 3 : 4, dyn ? 5 : 7, 1, 1)) !=
		    QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, dyn ? QR_DTM_FLOAT : QR_DTM_Q8)) !=
		    QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_Q8)) != QR_OK ||
	    (!dyn && (st = qr_op_want_dtype(c, d, 2, QR_DTM_FLOAT)) !=
		    QR_OK) ||
	    (st = qr_op_want_dtype(c, d, in.b_scale, QR_DTM_FLOAT)) !=
		    QR_OK ||
	    (!dyn && (st = qr_op_same_dtype(c, d, 0, in.a_zp)) != QR_OK) ||
	    (st = qr_op_same_dtype(c, d, 1, in.b_zp)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, in.bias, QR_DTM_FLOAT)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

static enum qr_status
mif_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = xcalloc(1, sizeof *st);
	struct mif_inputs in;

	(void)d;
	mif_inputs(c, &in);
	c->state = st;
	qr_op_mm_prepack(c, st, 1, in.b_zp, 0);
	return QR_OK;
}

static enum qr_status
mif_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_mm_infer(c, d, 1, QR_DT_FLOAT);
}

/* Input i as n per-column floats (1 value spread, or n); QR_EGRAPH
 * otherwise. NULL input: NULL, nothing allocated. */
static enum qr_status
per_column(const struct qr_op_call *c, struct qr_diag *d, size_t i,
	   size_t n, float **out)
{
	const struct qr_tensor *t = qr_op_has_in(c, i) ? c->in[i] : NULL;
	size_t j;
	char b[128];

	*out = NULL;
	if (t == NULL)
		return QR_OK;
	if (t->n_elem != 1 && (t->n_elem != n || t->ndim != 1))
		return qr_op_errorf(c, d, QR_EGRAPH, "input %zu '%s' %s must "
				    "hold 1 or %zu values (one per column)",
				    i, qr_op_in_name(c, i),
				    qr_shape_str(t, b, sizeof b), n);
	*out = xmalloc((n ? n : 1) * sizeof **out);
	for (j = 0; j < n; j++)
		(*out)[j] = ((const float *)t->data)[t->n_elem == 1 ? 0 : j];
	return QR_OK;
}

static enum qr_status
mif_run(struct qr_op_call *c, struct qr_diag *d)
{
	int dyn = strcmp(c->node->op_type, "DynamicQuantizeMatMul") == 0;
	struct qr_op_mm_cache *st = c->state;
	struct qr_tensor *a = c->in[0], qa;
	struct mif_inputs in;
	struct qr_op_mm mm;
	float a_scale, *mult = NULL, *bias = NULL, *y = c->out[0]->data;
	int32_t a_zp = 0, *acc = NULL;
	uint8_t *qbuf = NULL, zp8;
	size_t rows, i, j;
	enum qr_status s;

	mif_inputs(c, &in);
	if ((s = qr_op_mm_shape(c, d, c->in[0], c->in[1], &mm)) != QR_OK)
		return s;
	if (dyn) {
		qbuf = xmalloc(a->n_elem ? a->n_elem : 1);
		qr_dynamic_quantize_u8(a->data, a->n_elem, qbuf, &a_scale,
				       &zp8);
		a_zp = zp8;
		qa = *a;
		qa.dtype = QR_DT_UINT8;
		qa.nbytes = a->n_elem;
		qa.data = qbuf;
		qa.owned = 0;
		c->in[0] = &qa;
	} else if ((s = qr_op_q_scale(c, d, 2, &a_scale)) != QR_OK ||
		   (s = qr_op_q_zp(c, d, in.a_zp, a->dtype, &a_zp)) != QR_OK) {
		return s;
	}
	if ((s = per_column(c, d, in.b_scale, mm.n, &mult)) != QR_OK ||
	    (s = per_column(c, d, in.bias, mm.n, &bias)) != QR_OK)
		goto out;
	for (j = 0; j < mm.n; j++)
		mult[j] = a_scale * mult[j];
	acc = xmalloc((c->out[0]->n_elem ? c->out[0]->n_elem : 1) *
		      sizeof *acc);
	if ((s = qr_op_mm_int32(c, d, st, &mm, 0, a_zp, 1, in.b_zp, acc)) !=
	    QR_OK)
		goto out;
	rows = mm.n ? c->out[0]->n_elem / mm.n : 0;
	for (i = 0; i < rows; i++)
		for (j = 0; j < mm.n; j++) {
			float v = (float)acc[i * mm.n + j] * mult[j];

			y[i * mm.n + j] = bias ? v + bias[j] : v;
		}
out:
	c->in[0] = a;
	free(qbuf);
	free(mult);
	free(bias);
	free(acc);
	return s;
}

const struct qr_op_desc qr_op_matmul_integer_to_float = {
	.domain = "com.microsoft", .name = "MatMulIntegerToFloat", .since = 1,
	.check = mif_check, .prepare = mif_prepare, .infer = mif_infer,
	.run = mif_run, .release = qr_op_mm_cache_free,
};

const struct qr_op_desc qr_op_dynamic_quantize_matmul = {
	.domain = "com.microsoft", .name = "DynamicQuantizeMatMul", .since = 1,
	.check = mif_check, .prepare = mif_prepare, .infer = mif_infer,
	.run = mif_run, .release = qr_op_mm_cache_free,
};
