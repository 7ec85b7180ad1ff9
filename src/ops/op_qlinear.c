/*
 * op_qlinear: the com.microsoft QOperator-format ops on 8-bit tensors
 * (ONNX Runtime contrib ops): QLinearAdd, QLinearMul, QLinearSigmoid,
 * QLinearLeakyRelu, QLinearSoftmax, QLinearConcat,
 * QLinearGlobalAveragePool, QLinearAveragePool. QLinearConv and
 * QLinearMatMul are in op_qconv.c and op_qmatmul.c, with QGemm.
 *
 * Each one gives the bits ONNX Runtime's CPU provider gives (files under
 * onnxruntime/contrib_ops/cpu/quantization/):
 *   - QLinearSigmoid, QLinearLeakyRelu (qlinear_lookup_table.cc) and
 *     QLinearConcat (qlinear_concat.cc): a 256-entry table per input,
 *     table[x] = QuantizeLinear(f(x_scale * (x - x_zp)), y_scale, y_zp),
 *     with MLAS's logistic approximation (logistic.cpp) for Sigmoid;
 *     Concat copies inputs whose scale and zero point equal the output's.
 *   - QLinearAveragePool (qlinear_pool.cc): dequantize, sum each window
 *     in float (windows clipped to the image, divided by kernel size with
 *     count_include_pad), y = clamp(nearbyintf(v / y_scale + y_zp));
 *     a window covering the whole unpadded image takes the
 *     QLinearGlobalAveragePool path, as ORT does.
 *   - QLinearAdd, QLinearMul, QLinearGlobalAveragePool: kernels.h.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

/*
 * Arity and dtypes of the ops on one 8-bit tensor: x, x_scale,
 * x_zero_point, y_scale, y_zero_point (min_in of them at least; the
 * zero points of x's dtype).
 */
static enum qr_status
q8_unary_dtypes(const struct qr_op_call *c, struct qr_diag *d, size_t min_in)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, min_in, 5, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_Q8)) != QR_OK)
		return st;
	return qr_op_q8_dtypes(c, d, 0x1 | 0x4 | 0x10, 0x2 | 0x8);
}

/* Their check when there is nothing more to check: y has x's dtype. */
static enum qr_status
q8_unary_check(const struct qr_op_call *c, struct qr_diag *d, size_t min_in)
{
	enum qr_status st = q8_unary_dtypes(c, d, min_in);

	if (st == QR_OK)
		c->out_dtype[0] = qr_op_dtype(c, 0);
	return st;
}

/* ---- QLinearAdd, QLinearMul ---- */

static enum qr_status
qbin_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 7, 8, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_Q8)) != QR_OK ||
	    (st = qr_op_q8_dtypes(c, d, 0x1 | 0x4 | 0x8 | 0x20 | 0x80,
				  0x2 | 0x10 | 0x40)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
qbin_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *ab[2] = {c->in[0], c->in[3]};
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status s;
	int ndim;

	if ((s = qr_op_broadcast_shape(c, d, ab, 2, &ndim, dims)) != QR_OK)
		return s;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
qbin_run(struct qr_op_call *c, struct qr_diag *d, int mul)
{
	struct qr_tensor *ab[2] = {c->in[0], c->in[3]};
	enum qr_qtype t = c->in[0]->dtype == QR_DT_INT8 ? QR_QT_S8 : QR_QT_U8;
	const uint8_t *a = c->in[0]->data, *b = c->in[3]->data;
	uint8_t *y = c->out[0]->data;
	float sa, sb, sc;
	int32_t za, zb, zc;
	struct qr_bcast bc;
	enum qr_status s;

	if ((s = qr_op_q_scale(c, d, 1, &sa)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &za)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 4, &sb)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 5, c->in[0]->dtype, &zb)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 6, &sc)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 7, c->in[0]->dtype, &zc)) != QR_OK)
		return s;
	qr_bcast_init(&bc, c->out[0]->ndim, c->out[0]->dims, ab, 2);
	do {
		if (bc.inner == 0)
			break;
		if (mul)
			qr_qlinear_mul(a + bc.off[0], bc.step[0], sa, za,
				       b + bc.off[1], bc.step[1], sb, zb, sc,
				       zc, t, y + bc.out_off, bc.inner);
		else
			qr_qlinear_add(a + bc.off[0], bc.step[0], sa, za,
				       b + bc.off[1], bc.step[1], sb, zb, sc,
				       zc, t, y + bc.out_off, bc.inner);
	} while (qr_bcast_next(&bc));
	return QR_OK;
}

static enum qr_status
qadd_run(struct qr_op_call *c, struct qr_diag *d)
{
	return qbin_run(c, d, 0);
}

static enum qr_status
qmul_run(struct qr_op_call *c, struct qr_diag *d)
{
	return qbin_run(c, d, 1);
}

const struct qr_op_desc qr_op_qlinear_add = {
	.domain = "com.microsoft", .name = "QLinearAdd", .since = 1,
	.check = qbin_check, .infer = qbin_infer, .run = qadd_run,
};

const struct qr_op_desc qr_op_qlinear_mul = {
	.domain = "com.microsoft", .name = "QLinearMul", .since = 1,
	.check = qbin_check, .infer = qbin_infer, .run = qmul_run,
};

/* ---- lookup tables: QLinearSigmoid, QLinearLeakyRelu ---- */

/* MLAS's logistic (logistic.cpp; the same rational approximation as
 * Eigen), with the FMA3 kernel's fused multiply-adds. */
static float
mlas_logistic(float v)
{
	float x2, p, q, r;

	v = v < -18.0f ? -18.0f : v;
	v = v > 18.0f ? 18.0f : v;
	x2 = v * v;
	p = fmaf(x2, 4.37031012579801e-11f, 1.15627324459942e-07f);
	p = fmaf(p, x2, 6.08574864600143e-05f);
	p = fmaf(p, x2, 8.51377133304701e-03f);
	p = fmaf(p, x2, 2.48287947061529e-01f);
	p = p * v;
	q = fmaf(x2, 6.10247389755681e-13f, 5.76102136993427e-09f);
	q = fmaf(q, x2, 6.29106785017040e-06f);
	q = fmaf(q, x2, 1.70198817374094e-03f);
	q = fmaf(q, x2, 1.16817656904453e-01f);
	q = fmaf(q, x2, 9.93151921023180e-01f);
	r = p / q + 0.5f;
	r = r < 0.0f ? 0.0f : r;
	return r > 1.0f ? 1.0f : r;
}

enum lut_fn {
	LUT_IDENTITY, /* requantize only (QLinearConcat) */
	LUT_SIGMOID,
	LUT_LEAKY_RELU,
};

/* table[byte] = QuantizeLinear(f(x_scale * (x - x_zp)), y_scale, y_zp)
 * where x is the byte read as int8 (is_signed) or uint8. */
static void
lut_build(enum lut_fn fn, float alpha, int is_signed, float xs, int32_t xz,
	  float ys, int32_t yz, uint8_t table[256])
{
	float v[256];
	int i;

	for (i = 0; i < 256; i++) {
		int x = is_signed ? (int8_t)(uint8_t)i : i;
		float f = xs * (float)(x - xz);

		if (fn == LUT_SIGMOID)
			f = mlas_logistic(f);
		else if (fn == LUT_LEAKY_RELU)
			f = f >= 0.0f ? f : alpha * f;
		v[i] = f;
	}
	qr_quantize_f32(v, 1, 1, 256, &ys, &yz, is_signed ? QR_QT_S8 : QR_QT_U8,
			table);
}

static enum qr_status
qlut_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return q8_unary_check(c, d, 4);
}

static enum qr_status
qlut_run(struct qr_op_call *c, struct qr_diag *d, enum lut_fn fn)
{
	const uint8_t *x = c->in[0]->data;
	uint8_t *y = c->out[0]->data, table[256];
	float xs, ys;
	int32_t xz, yz;
	enum qr_status s;
	size_t i;

	if ((s = qr_op_q_scale(c, d, 1, &xs)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &xz)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 3, &ys)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 4, c->in[0]->dtype, &yz)) != QR_OK)
		return s;
	lut_build(fn, qr_op_attr_float(c, "alpha", 0.01f),
		  c->in[0]->dtype == QR_DT_INT8, xs, xz, ys, yz, table);
	for (i = 0; i < c->in[0]->n_elem; i++)
		y[i] = table[x[i]];
	return QR_OK;
}

static enum qr_status
qsigmoid_run(struct qr_op_call *c, struct qr_diag *d)
{
	return qlut_run(c, d, LUT_SIGMOID);
}

static enum qr_status
qleaky_run(struct qr_op_call *c, struct qr_diag *d)
{
	return qlut_run(c, d, LUT_LEAKY_RELU);
}

const struct qr_op_desc qr_op_qlinear_sigmoid = {
	.domain = "com.microsoft", .name = "QLinearSigmoid", .since = 1,
	.check = qlut_check, .infer = qr_op_same_infer, .run = qsigmoid_run,
};

const struct qr_op_desc qr_op_qlinear_leaky_relu = {
	.domain = "com.microsoft", .name = "QLinearLeakyRelu", .since = 1,
	.check = qlut_check, .infer = qr_op_same_infer, .run = qleaky_run,
};

/* ---- QLinearSoftmax ---- */

/*
 * ONNX Runtime's QLinearSoftmax (qlinear_softmax.cc), which its QOperator
 * quantizer writes for Softmax. The `opset` attribute gives the Softmax
 * semantics it replaces: before 13 each row is dims[axis..] flattened,
 * from 13 one axis. axis defaults to -1 for both: the op's schema default,
 * which ORT reads before its kernel's own opset-dependent fallback (so an
 * opset-11 node without axis normalises the last dim, not dims[1..]; this
 * was checked against onnxruntime-node). x's zero point is unused: the
 * result is shift-invariant. With D values per row:
 *
 *   table[i] = (float)exp((i - 255 + shift) * x_scale) for i = 0..255,
 *   shift = max(0, log(FLT_MAX / D) - 5) / x_scale, stored at byte
 *   (uint8)(i - 128) for int8;
 *   per row, e_k = table[x_k + 255 - max] (int8: byte 127 - max + x_k),
 *   sum = e_0 + e_1 + ... in float, in order;
 *   y_k = nearbyintf(e_k * floorf(1 / y_scale) / sum) + y_zp, saturated
 *   at the type's maximum: an int8 probability of 1 with zero point -128
 *   gives 127 in onnxruntime-node 1.30 (the pinned one), though ORT
 *   sources of other releases cast 128..255 into int8 and wrap.
 */
/* The inputs of the lookup-table ops, plus the required `opset`. */
static enum qr_status
qsoftmax_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = qlut_check(c, d);

	if (st == QR_OK && !qr_op_has_attr(c, "opset"))
		return qr_op_errorf(c, d, QR_EGRAPH, "attribute 'opset' (the "
				    "replaced Softmax's) is required");
	return st;
}

/* Rows of x: [outer][len][inner] as for this node's Softmax opset. */
static enum qr_status
qsoftmax_view(const struct qr_op_call *c, struct qr_diag *d, size_t *outer,
	      size_t *len, size_t *inner)
{
	const struct qr_tensor *x = c->in[0];
	int old = qr_op_attr_int(c, "opset", 13) < 13, axis;
	enum qr_status st;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", -1), x->ndim, 0,
			&axis);
	if (st != QR_OK)
		return st;
	*outer = *len = *inner = 1;
	if (x->ndim == 0)
		return QR_OK;
	*outer = qr_op_dims_prod(x->dims, 0, axis);
	if (old) {
		*len = qr_op_dims_prod(x->dims, axis, x->ndim);
	} else {
		*len = (size_t)x->dims[axis];
		*inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim);
	}
	return QR_OK;
}

static enum qr_status
qsoftmax_infer(struct qr_op_call *c, struct qr_diag *d)
{
	size_t outer, len, inner;
	enum qr_status st = qsoftmax_view(c, d, &outer, &len, &inner);

	if (st != QR_OK)
		return st;
	return qr_op_same_infer(c, d);
}

static enum qr_status
qsoftmax_run(struct qr_op_call *c, struct qr_diag *d)
{
	const uint8_t *x = c->in[0]->data;
	uint8_t *y = c->out[0]->data;
	int is_signed = c->in[0]->dtype == QR_DT_INT8;
	int32_t qmax = is_signed ? 127 : 255;
	size_t outer, len, inner, o, j, k;
	float xs, ys, yscale, table[256];
	double shift;
	int32_t yz, xz;
	enum qr_status st;
	int i;

	if ((st = qsoftmax_view(c, d, &outer, &len, &inner)) != QR_OK ||
	    (st = qr_op_q_scale(c, d, 1, &xs)) != QR_OK ||
	    (st = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &xz)) != QR_OK ||
	    (st = qr_op_q_scale(c, d, 3, &ys)) != QR_OK ||
	    (st = qr_op_q_zp(c, d, 4, c->in[0]->dtype, &yz)) != QR_OK)
		return st;
	if (c->out[0]->n_elem == 0)
		return QR_OK;
	shift = log((double)(FLT_MAX / (float)len)) - 5.0;
	shift = (shift > 0.0 ? shift : 0.0) / (double)xs;
	for (i = 0; i < 256; i++)
		table[(uint8_t)(is_signed ? i - 128 : i)] =
			(float)exp(((double)i - 255.0 + shift) * (double)xs);
	yscale = floorf(1.0f / ys);
	for (o = 0; o < outer; o++) {
		for (j = 0; j < inner; j++) {
			size_t b = o * len * inner + j;
			int mx = is_signed ? (int8_t)x[b] : x[b];
			float sum = 0.0f;

			for (k = 1; k < len; k++) {
				int v = is_signed ? (int8_t)x[b + k * inner]
						  : x[b + k * inner];

				mx = v > mx ? v : mx;
			}
			/* the byte of x_k's table entry */
#define QSM_AT(k) (is_signed ? (uint8_t)(127 - mx + (int8_t)x[b + (k) * inner]) \
			     : (uint8_t)(x[b + (k) * inner] + 255 - mx))
			for (k = 0; k < len; k++)
				sum += table[QSM_AT(k)];
			for (k = 0; k < len; k++) {
				float v = nearbyintf(table[QSM_AT(k)] * yscale /
						     sum);
				int32_t q;

				/* a zero or NaN sum (x_scale 0 or NaN), or an
				 * infinite 1 / y_scale: saturate instead of
				 * converting out of int32's range (ORT leaves
				 * such rows unwritten or undefined) */
				q = (v >= 0.0f && v < 1024.0f ? (int32_t)v
							      : 1024) + yz;
				y[b + k * inner] = (uint8_t)(q > qmax ? qmax : q);
			}
#undef QSM_AT
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_qlinear_softmax = {
	.domain = "com.microsoft", .name = "QLinearSoftmax", .since = 1,
	.check = qsoftmax_check, .infer = qsoftmax_infer, .run = qsoftmax_run,
};

/* ---- QLinearConcat ---- */

static enum qr_status
qconcat_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	size_t i;

	if ((st = qr_op_arity(c, d, 5, 2 + 3 * 64, 1, 1)) != QR_OK)
		return st;
	if ((c->n_in - 2) % 3 != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "inputs must be Y_scale, "
				    "Y_zero_point, then (X, scale, zero point) "
				    "triples, not %zu inputs", c->n_in);
	if (!qr_op_has_attr(c, "axis"))
		return qr_op_errorf(c, d, QR_EGRAPH, "attribute axis is "
				    "required");
	if ((st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_Q8)) != QR_OK)
		return st;
	for (i = 2; i < c->n_in; i += 3)
		if (!qr_op_has_in(c, i) || !qr_op_has_in(c, i + 1) ||
		    !qr_op_has_in(c, i + 2))
			return qr_op_errorf(c, d, QR_EGRAPH, "input triple at "
					    "%zu is incomplete", i);
		else if ((st = qr_op_same_dtype(c, d, 1, i)) != QR_OK ||
			 (st = qr_op_same_dtype(c, d, 1, i + 2)) != QR_OK ||
			 (st = qr_op_want_dtype(c, d, i + 1, QR_DTM_FLOAT)) !=
				 QR_OK)
			return st;
	c->out_dtype[0] = qr_op_dtype(c, 1);
	return QR_OK;
}

/* Output shape and the concat axis. */
static enum qr_status
qconcat_shape(struct qr_op_call *c, struct qr_diag *d, int *axis,
	      int64_t *dims)
{
	const struct qr_tensor *x0 = c->in[2];
	enum qr_status s;
	char b1[128], b2[128];
	size_t i;
	int j;

	if ((s = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x0->ndim, 0,
			    axis)) != QR_OK)
		return s;
	memcpy(dims, x0->dims, (size_t)x0->ndim * sizeof *dims);
	dims[*axis] = 0;
	for (i = 2; i < c->n_in; i += 3) {
		const struct qr_tensor *x = c->in[i];

		if (x->dtype != c->in[1]->dtype || x->ndim != x0->ndim)
			goto bad;
		for (j = 0; j < x->ndim; j++)
			if (j != *axis && x->dims[j] != x0->dims[j])
				goto bad;
		dims[*axis] += x->dims[*axis];
		continue;
bad:
		return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s %s does "
				    "not concatenate with '%s' %s on axis %d",
				    qr_op_in_name(c, i),
				    qr_dtype_name(x->dtype),
				    qr_shape_str(x, b1, sizeof b1),
				    qr_op_in_name(c, 2),
				    qr_shape_str(x0, b2, sizeof b2), *axis);
	}
	return QR_OK;
}

static enum qr_status
qconcat_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status s;
	int axis;

	if ((s = qconcat_shape(c, d, &axis, dims)) != QR_OK)
		return s;
	return qr_tensor_set_shape(c->out[0], c->in[1]->dtype, c->in[2]->ndim,
				   dims, qr_op_out_name(c, 0), d);
}

static enum qr_status
qconcat_run(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	const struct qr_tensor *y = c->out[0];
	int is_signed = y->dtype == QR_DT_INT8, axis;
	size_t outer, y_block, y_off = 0, i, o, j;
	float ys;
	int32_t yz;
	enum qr_status s;

	if ((s = qconcat_shape(c, d, &axis, dims)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 0, &ys)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 1, y->dtype, &yz)) != QR_OK)
		return s;
	outer = qr_op_dims_prod(y->dims, 0, axis);
	y_block = qr_op_dims_prod(y->dims, axis, y->ndim);
	for (i = 2; i < c->n_in; i += 3) {
		const struct qr_tensor *x = c->in[i];
		size_t block = qr_op_dims_prod(x->dims, axis, x->ndim);
		const uint8_t *xp = x->data;
		uint8_t *yp = (uint8_t *)y->data + y_off, table[256];
		float xs;
		int32_t xz;
		int copy;

		if ((s = qr_op_q_scale(c, d, i + 1, &xs)) != QR_OK ||
		    (s = qr_op_q_zp(c, d, i + 2, y->dtype, &xz)) != QR_OK)
			return s;
		copy = xs == ys && xz == yz;
		if (!copy)
			lut_build(LUT_IDENTITY, 0.0f, is_signed, xs, xz, ys, yz,
				  table);
		for (o = 0; o < outer; o++) {
			const uint8_t *src = xp + o * block;
			uint8_t *dst = yp + o * y_block;

			if (copy) {
				memcpy(dst, src, block);
				continue;
			}
			for (j = 0; j < block; j++)
				dst[j] = table[src[j]];
		}
		y_off += block;
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_qlinear_concat = {
	.domain = "com.microsoft", .name = "QLinearConcat", .since = 1,
	.check = qconcat_check, .infer = qconcat_infer, .run = qconcat_run,
};

/* ---- QLinearGlobalAveragePool, QLinearAveragePool ---- */

/* NHWC ([n][hw][c]) to NCHW ([n][c][hw]) bytes, or back when `back`. */
static void
nhwc_swap(const uint8_t *src, size_t n, size_t hw, size_t ch, int back,
	  uint8_t *dst)
{
	size_t b, i, k;

	for (b = 0; b < n; b++) {
		const uint8_t *s = src + b * hw * ch;
		uint8_t *t = dst + b * hw * ch;

		for (i = 0; i < hw; i++)
			for (k = 0; k < ch; k++) {
				if (back)
					t[i * ch + k] = s[k * hw + i];
				else
					t[k * hw + i] = s[i * ch + k];
			}
	}
}

/* The NCHW view (dims only) of x, which is NHWC when channels_last. */
static enum qr_status
nchw_view(const struct qr_op_call *c, struct qr_diag *d, int channels_last,
	  struct qr_tensor *v)
{
	const struct qr_tensor *x = c->in[0];
	char b[128];
	int i;

	if (x->ndim < 3)
		return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s has rank "
				    "below 3", qr_op_in_name(c, 0),
				    qr_shape_str(x, b, sizeof b));
	*v = *x;
	if (channels_last) {
		v->dims[1] = x->dims[x->ndim - 1];
		for (i = 2; i < x->ndim; i++)
			v->dims[i] = x->dims[i - 1];
	}
	return QR_OK;
}

static enum qr_status
qgap_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return q8_unary_check(c, d, 5);
}

static enum qr_status
qgap_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int cl = qr_op_attr_int(c, "channels_last", 0) != 0;
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_tensor v;
	enum qr_status s;
	int i;

	if ((s = nchw_view(c, d, cl, &v)) != QR_OK)
		return s;
	memcpy(dims, x->dims, (size_t)x->ndim * sizeof *dims);
	for (i = cl ? 1 : 2; i < (cl ? x->ndim - 1 : x->ndim); i++)
		dims[i] = 1;
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

/* QLinearGlobalAveragePool of NCHW bytes x (n*c planes of hw). */
static void
qgap_nchw(const void *x, int is_signed, size_t nc, size_t hw, float xs,
	  int32_t xz, float ys, int32_t yz, void *y)
{
	qr_qlinear_global_avgpool(x, is_signed, nc, hw, xs, xz, ys, yz, y);
}

static enum qr_status
qgap_run(struct qr_op_call *c, struct qr_diag *d)
{
	int cl = qr_op_attr_int(c, "channels_last", 0) != 0;
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor v;
	size_t n, ch, hw;
	float xs, ys;
	int32_t xz, yz;
	enum qr_status s;
	uint8_t *tmp = NULL;

	if ((s = nchw_view(c, d, cl, &v)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 1, &xs)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, x->dtype, &xz)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 3, &ys)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 4, x->dtype, &yz)) != QR_OK)
		return s;
	n = (size_t)v.dims[0];
	ch = (size_t)v.dims[1];
	hw = qr_op_dims_prod(v.dims, 2, v.ndim);
	if (n * ch == 0)
		return QR_OK;
	if (cl && ch > 1) {
		tmp = xmalloc(x->n_elem + 1);
		nhwc_swap(x->data, n, hw, ch, 0, tmp);
	}
	/* [n][1..][c] and [n][c][1..] are the same bytes */
	qgap_nchw(tmp ? tmp : x->data, x->dtype == QR_DT_INT8, n * ch, hw, xs,
		  xz, ys, yz, c->out[0]->data);
	free(tmp);
	return QR_OK;
}

const struct qr_op_desc qr_op_qlinear_global_average_pool = {
	.domain = "com.microsoft", .name = "QLinearGlobalAveragePool",
	.since = 1,
	.check = qgap_check, .infer = qgap_infer, .run = qgap_run,
};

static enum qr_status
qap_check(const struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_win win;
	enum qr_status st;

	if ((st = q8_unary_dtypes(c, d, 4)) != QR_OK ||
	    (st = qr_op_win_parse(c, d, &win)) != QR_OK ||
	    (st = qr_op_pool_win_check(c, d, &win, 2)) != QR_OK)
		return st;
	if (win.dil[0] != 1 || win.dil[1] != 1)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "dilations are not "
				    "supported");
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

/* Pool geometry of the NCHW view, and the output dims in x's layout. */
static enum qr_status
qap_shape(struct qr_op_call *c, struct qr_diag *d, struct qr_tensor *v,
	  struct qr_pool_params *p, int64_t *dims)
{
	int cl = qr_op_attr_int(c, "channels_last", 0) != 0;
	struct qr_op_call vc = *c;
	struct qr_tensor *vin[1];
	struct qr_op_win win;
	enum qr_status s;
	int ndim, i;

	if ((s = nchw_view(c, d, cl, v)) != QR_OK ||
	    (s = qr_op_win_parse(c, d, &win)) != QR_OK)
		return s;
	vin[0] = v;
	vc.in = vin;
	if ((s = qr_op_pool_shape(&vc, d, &win, v, p, &ndim, dims)) != QR_OK)
		return s;
	if (cl) {
		int64_t ch = dims[1];

		for (i = 1; i < ndim - 1; i++)
			dims[i] = dims[i + 1];
		dims[ndim - 1] = ch;
	}
	return QR_OK;
}

static enum qr_status
qap_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_pool_params p;
	struct qr_tensor v;
	enum qr_status s;

	if ((s = qap_shape(c, d, &v, &p, dims)) != QR_OK)
		return s;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, c->in[0]->ndim,
				   dims, qr_op_out_name(c, 0), d);
}

/* ORT's quantize_value: clamp(nearbyintf(v / ys + yz)) in int32. */
static int32_t
qap_quant(float v, float ys, int32_t yz, int is_signed)
{
	int32_t lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
	float r = nearbyintf(v / ys + (float)yz);
	int32_t q = r >= 2147483648.0f || r != r ? INT32_MIN :
		    r < -2147483648.0f ? INT32_MIN : (int32_t)r;

	return q < lo ? lo : q > hi ? hi : q;
}

/* ORT's QLinearPool2DTask on NCHW bytes: windows clipped to the image. */
static void
qap_windows(const struct qr_pool_params *p, const float *xf, int is_signed,
	    float ys, int32_t yz, uint8_t *y)
{
	size_t oh_n = qr_pool_out_h(p), ow_n = qr_pool_out_w(p), pl;
	int64_t kh = (int64_t)p->kh, kw = (int64_t)p->kw;
	int64_t H = (int64_t)p->h, W = (int64_t)p->w;

	for (pl = 0; pl < p->n * p->c; pl++) {
		const float *xp = xf + pl * p->h * p->w;
		uint8_t *yp = y + pl * oh_n * ow_n;
		size_t oh, ow;

		for (oh = 0; oh < oh_n; oh++) {
			int64_t hs = (int64_t)(oh * p->stride_h) -
				     (int64_t)p->pad_t;
			int64_t he = hs + kh < H ? hs + kh : H;

			hs = hs > 0 ? hs : 0;
			for (ow = 0; ow < ow_n; ow++) {
				int64_t ws = (int64_t)(ow * p->stride_w) -
					     (int64_t)p->pad_l;
				int64_t we = ws + kw < W ? ws + kw : W;
				int64_t h, w, cnt;
				float sum = 0.0f;
				int32_t q;

				ws = ws > 0 ? ws : 0;
				for (h = hs; h < he; h++)
					for (w = ws; w < we; w++)
						sum += xp[h * W + w];
				cnt = p->count_include_pad ? kh * kw :
					(he - hs) * (we - ws);
				if (cnt > 0)
					sum /= (float)cnt;
				q = qap_quant(sum, ys, yz, is_signed);
				yp[oh * ow_n + ow] = is_signed ?
					(uint8_t)(int8_t)q : (uint8_t)q;
			}
		}
	}
}

static enum qr_status
qap_run(struct qr_op_call *c, struct qr_diag *d)
{
	int cl = qr_op_attr_int(c, "channels_last", 0) != 0;
	const struct qr_tensor *x = c->in[0];
	int is_signed = x->dtype == QR_DT_INT8;
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_pool_params p;
	struct qr_tensor v;
	size_t hw, ohw, n_out = c->out[0]->n_elem, i;
	uint8_t *xn = NULL, *yn = NULL;
	float xs, ys, *xf = NULL;
	int32_t xz, yz;
	enum qr_status s;

	if ((s = qap_shape(c, d, &v, &p, dims)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 1, &xs)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, x->dtype, &xz)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 3, &ys)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 4, x->dtype, &yz)) != QR_OK)
		return s;
	if (n_out == 0)
		return QR_OK;
	hw = p.h * p.w;
	ohw = qr_pool_out_h(&p) * qr_pool_out_w(&p);
	if (cl && p.c > 1) {
		xn = xmalloc(x->n_elem + 1);
		yn = xmalloc(n_out + 1);
		nhwc_swap(x->data, p.n, hw, p.c, 0, xn);
	}
	if (p.kh == p.h && p.kw == p.w && !p.pad_t && !p.pad_b && !p.pad_l &&
	    !p.pad_r) {
		qgap_nchw(xn ? xn : x->data, is_signed, p.n * p.c, hw, xs, xz,
			  ys, yz, yn ? yn : c->out[0]->data);
	} else {
		const uint8_t *src = xn ? xn : x->data;

		xf = xmalloc((x->n_elem + 1) * sizeof *xf);
		for (i = 0; i < x->n_elem; i++) {
			int q = is_signed ? (int8_t)src[i] : src[i];

			xf[i] = xs * (float)(q - xz);
		}
		qap_windows(&p, xf, is_signed, ys, yz,
			    yn ? yn : c->out[0]->data);
	}
	if (yn != NULL)
		nhwc_swap(yn, p.n, ohw, p.c, 1, c->out[0]->data);
	free(xn);
	free(yn);
	free(xf);
	return QR_OK;
}

const struct qr_op_desc qr_op_qlinear_average_pool = {
	.domain = "com.microsoft", .name = "QLinearAveragePool", .since = 1,
	.check = qap_check, .infer = qap_infer, .run = qap_run,
};
