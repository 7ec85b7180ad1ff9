/*
 * op_qlinear: the QOperator-format quantized ops. ai.onnx: QLinearConv,
 * QLinearMatMul. com.microsoft (ONNX Runtime contrib ops): QLinearAdd,
 * QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
 * QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool, QGemm.
 *
 * Each one gives the bits ONNX Runtime's CPU provider gives (files under
 * onnxruntime/contrib_ops/cpu/quantization/):
 *   - QLinearConv, QLinearMatMul, QGemm: int32 products, then MLAS's
 *     MlasRequantizeOutput with scale x_scale * w_scale / y_scale
 *     (QGemm: alpha * a_scale * b_scale [/ y_scale]; float output
 *     (float)acc * scale when y_zero_point is absent), kernels.h.
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

#define Q8_DTYPES (QR_DTM(QR_DT_UINT8) | QR_DTM(QR_DT_INT8))

/* Dtype checks shared by the ops below: inputs in `q` are 8-bit and of
 * the same dtype as input 0, inputs in `f` are float. Bit i of a mask is
 * input i. */
static enum qr_status
q_dtypes(const struct qr_op_call *c, struct qr_diag *d, unsigned q,
	 unsigned f)
{
	enum qr_status st;
	size_t i;

	for (i = 0; i < c->n_in && i < 32; i++) {
		if ((q >> i) & 1) {
			if ((st = qr_op_want_dtype(c, d, i, Q8_DTYPES)) !=
				    QR_OK ||
			    (st = qr_op_same_dtype(c, d, 0, i)) != QR_OK)
				return st;
		} else if ((f >> i) & 1) {
			if ((st = qr_op_want_dtype(c, d, i, QR_DTM_FLOAT)) !=
			    QR_OK)
				return st;
		}
	}
	return QR_OK;
}

/* ---- QLinearConv ---- */

struct qlconv_state {
	struct qr_op_win win;       /* window attributes */
	int w_const;                /* W and w_zero_point are constant,
				     * packed at prepare */
	struct qr_qconv_packed *pk; /* packed weights, or NULL */
	void *ws;                   /* kernel workspace */
	size_t ws_cap;              /* bytes in ws */
	float *scale;               /* requantization scales, c_out */
	size_t scale_cap;           /* entries in scale */
};

static enum qr_status
qlconv_check(const struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_win win;
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 8, 9, 1, 1)) != QR_OK ||
	    (st = q_dtypes(c, d, 0x5, 0x2 | 0x10 | 0x40)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 3, Q8_DTYPES)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 3, 5)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 7, Q8_DTYPES)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 8, QR_DTM(QR_DT_INT32))) != QR_OK ||
	    (st = qr_op_win_parse(c, d, &win)) != QR_OK)
		return st;
	if (win.nsp > 3)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%d-D windows are "
				    "not supported (1-D to 3-D only)",
				    win.nsp);
	if (c->in != NULL && c->in[3] != NULL && c->in[3]->ndim > 5)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%d-D convolution "
				    "is not supported (1-D to 3-D only)",
				    c->in[3]->ndim - 2);
	c->out_dtype[0] = qr_op_dtype(c, 7);
	return QR_OK;
}

static enum qr_status
qlconv_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct qlconv_state *st = xcalloc(1, sizeof *st);
	enum qr_status s;

	c->state = st;
	if ((s = qr_op_win_parse(c, d, &st->win)) != QR_OK)
		return s;
	st->pk = c->in[5] != NULL ?
			 qr_op_qconv_prepack(c, 3, 5, st->win.group) : NULL;
	st->w_const = st->pk != NULL;
	return QR_OK;
}

static void
qlconv_release(void *state)
{
	struct qlconv_state *st = state;

	if (st == NULL)
		return;
	qr_qconv_packed_free(st->pk);
	free(st->ws);
	free(st->scale);
	free(st);
}

static enum qr_status
qlconv_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct qlconv_state *st = c->state;
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_conv_params p;
	enum qr_status s;
	int ndim;

	if ((s = qr_op_conv_shape(c, d, &st->win, c->in[0], c->in[3], 0, &p,
				  &ndim, dims)) != QR_OK)
		return s;
	return qr_tensor_set_shape(c->out[0], c->in[7]->dtype, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
qlconv_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qlconv_state *st = c->state;
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_conv_params p;
	struct qr_qconv_quant q;
	float xs, ys, *ws = NULL, *scale = NULL;
	int32_t *wzp = NULL, xz, yz;
	enum qr_status s;
	size_t i;
	char b[128];
	int ndim;

	if ((s = qr_op_conv_shape(c, d, &st->win, c->in[0], c->in[3], 0, &p,
				  &ndim, dims)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 1, &xs)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &xz)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 6, &ys)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 7, c->in[7]->dtype, &yz)) != QR_OK ||
	    (s = qr_op_q_vec(c, d, 4, 5, p.c_out, &ws, &wzp)) != QR_OK)
		goto out;
	if (qr_op_has_in(c, 8) && (c->in[8]->ndim != 1 ||
				   c->in[8]->n_elem != p.c_out)) {
		s = qr_op_errorf(c, d, QR_ESHAPE, "bias '%s' %s must hold %zu "
				 "values", qr_op_in_name(c, 8),
				 qr_shape_str(c->in[8], b, sizeof b), p.c_out);
		goto out;
	}
	if (c->out[0]->n_elem == 0)
		goto out;
	if (!st->w_const) {
		qr_qconv_packed_free(st->pk);
		st->pk = qr_op_qconv_pack(c->in[3], st->win.group, wzp,
					  p.c_out);
		QR_ASSERT(st->pk != NULL);
	}
	scale = qr_op_scratch((void **)&st->scale, &st->scale_cap,
			      (p.c_out ? p.c_out : 1) * sizeof *scale);
	for (i = 0; i < p.c_out; i++)
		scale[i] = qr_requant_scale(xs, ws[i], ys);
	q.x_signed = c->in[0]->dtype == QR_DT_INT8;
	q.x_zp = xz;
	q.bias = qr_op_has_in(c, 8) ? c->in[8]->data : NULL;
	q.scale = scale;
	q.n_scale = p.c_out;
	q.y_signed = c->out[0]->dtype == QR_DT_INT8;
	q.y_zp = yz;
	qr_qconv_run(st->pk, &p, c->in[0]->data, &q, c->out[0]->data,
		     qr_op_ws(c, &st->ws, &st->ws_cap,
				   qr_qconv_workspace(st->pk, &p,
						      c->n_threads)),
		     c->n_threads);
out:
	free(ws);
	free(wzp);
	return s;
}

const struct qr_op_desc qr_op_qlinear_conv = {
	.domain = "", .name = "QLinearConv", .since = 10,
	.check = qlconv_check, .prepare = qlconv_prepare,
	.infer = qlconv_infer, .run = qlconv_run, .release = qlconv_release,
};

/* ---- QLinearMatMul ---- */

static enum qr_status
qlmm_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 8, 8, 1, 1)) != QR_OK ||
	    (st = q_dtypes(c, d, 0x5, 0x2 | 0x10 | 0x40)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 3, Q8_DTYPES)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 3, 5)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 7, Q8_DTYPES)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 7);
	return QR_OK;
}

static enum qr_status
qmm_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = xcalloc(1, sizeof *st);

	c->state = st;
	if (c->in[5] != NULL)
		qr_op_mm_prepack(c, st, 3, 5, 0);
	return QR_OK;
}

static enum qr_status
qlmm_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm mm;
	enum qr_status s;

	if ((s = qr_op_mm_shape(c, d, c->in[0], c->in[3], &mm)) != QR_OK)
		return s;
	return qr_tensor_set_shape(c->out[0], c->in[7]->dtype, mm.ndim,
				   mm.dims, qr_op_out_name(c, 0), d);
}

/* Requantize rows of n accumulators with one scale or one per column. */
static void
requant_rows(const int32_t *acc, size_t rows, size_t n, const float *scale,
	     size_t n_scale, int32_t zp, int y_signed, uint8_t *y)
{
	size_t r;

	for (r = 0; r < rows; r++) {
		if (n_scale == 1)
			qr_requantize_row(acc + r * n, n, 0, scale[0], zp,
					  y_signed, y + r * n);
		else
			qr_requantize_cols(acc + r * n, n, NULL, 0, scale, n,
					   zp, y_signed, y + r * n);
	}
}

static enum qr_status
qlmm_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm mm;
	float as, ys, *bs = NULL, *scale = NULL;
	int32_t az, yz, *bz = NULL, *acc = NULL;
	size_t i, n_scale;
	enum qr_status s;

	if ((s = qr_op_mm_shape(c, d, c->in[0], c->in[3], &mm)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 1, &as)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &az)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 6, &ys)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 7, c->in[7]->dtype, &yz)) != QR_OK ||
	    (s = qr_op_q_vec(c, d, 4, 5, mm.n, &bs, &bz)) != QR_OK)
		goto out;
	n_scale = c->in[4]->n_elem == 1 ? 1 : mm.n;
	scale = xmalloc((mm.n ? mm.n : 1) * sizeof *scale);
	for (i = 0; i < mm.n; i++)
		scale[i] = qr_requant_scale(as, bs[i], ys);
	acc = xmalloc((c->out[0]->n_elem ? c->out[0]->n_elem : 1) *
		      sizeof *acc);
	if ((s = qr_op_mm_int32(c, d, c->state, &mm, 0, az, 3, 5, acc)) !=
	    QR_OK)
		goto out;
	requant_rows(acc, mm.batch * mm.m, mm.n, scale, n_scale, yz,
		     c->out[0]->dtype == QR_DT_INT8, c->out[0]->data);
out:
	free(bs);
	free(bz);
	free(scale);
	free(acc);
	return s;
}

const struct qr_op_desc qr_op_qlinear_matmul = {
	.domain = "", .name = "QLinearMatMul", .since = 10,
	.check = qlmm_check, .prepare = qmm_prepare, .infer = qlmm_infer,
	.run = qlmm_run, .release = qr_op_mm_cache_free,
};

/* ---- QLinearAdd, QLinearMul ---- */

static enum qr_status
qbin_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 7, 8, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, Q8_DTYPES)) != QR_OK ||
	    (st = q_dtypes(c, d, 0x1 | 0x4 | 0x8 | 0x20 | 0x80,
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
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 4, 5, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, Q8_DTYPES)) != QR_OK ||
	    (st = q_dtypes(c, d, 0x1 | 0x4 | 0x10, 0x2 | 0x8)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
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
	    (st = qr_op_want_dtype(c, d, 1, Q8_DTYPES)) != QR_OK)
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
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 5, 5, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, Q8_DTYPES)) != QR_OK ||
	    (st = q_dtypes(c, d, 0x1 | 0x4 | 0x10, 0x2 | 0x8)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
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

	if ((st = qr_op_arity(c, d, 4, 5, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, Q8_DTYPES)) != QR_OK ||
	    (st = q_dtypes(c, d, 0x1 | 0x4 | 0x10, 0x2 | 0x8)) != QR_OK ||
	    (st = qr_op_win_parse(c, d, &win)) != QR_OK)
		return st;
	if (win.nsp > 2)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%d-D windows are "
				    "not supported (1-D and 2-D only)",
				    win.nsp);
	if (!win.has_kernel)
		return qr_op_errorf(c, d, QR_EGRAPH, "kernel_shape is "
				    "required");
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

/* ---- QGemm ---- */

static enum qr_status
qgemm_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 6, 9, 1, 1)) != QR_OK ||
	    (st = q_dtypes(c, d, 0x1 | 0x4, 0x2 | 0x10 | 0x80)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 3, Q8_DTYPES)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 3, 5)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 6, QR_DTM(QR_DT_INT32))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 8, Q8_DTYPES)) != QR_OK)
		return st;
	if (qr_op_has_in(c, 8) != qr_op_has_in(c, 7))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "y_scale and "
				    "y_zero_point must be given together");
	c->out_dtype[0] = qr_op_has_in(c, 8) ? qr_op_dtype(c, 8) :
					       QR_DT_FLOAT;
	return QR_OK;
}

/* M, K, N of op(A) [M][K] * op(B) [K][N]. */
static enum qr_status
qgemm_dims(const struct qr_op_call *c, struct qr_diag *d, size_t *m,
	   size_t *k, size_t *n)
{
	const struct qr_tensor *a = c->in[0], *b = c->in[3];
	int ta = qr_op_attr_int(c, "transA", 0) != 0;
	int tb = qr_op_attr_int(c, "transB", 0) != 0;
	char b1[128], b2[128];

	if (a->ndim != 2 || b->ndim != 2 ||
	    a->dims[ta ? 0 : 1] != b->dims[tb ? 1 : 0])
		return qr_op_errorf(c, d, QR_ESHAPE, "A %s and B %s do not "
				    "multiply", qr_shape_str(a, b1, sizeof b1),
				    qr_shape_str(b, b2, sizeof b2));
	*m = (size_t)a->dims[ta ? 1 : 0];
	*k = (size_t)a->dims[ta ? 0 : 1];
	*n = (size_t)b->dims[tb ? 0 : 1];
	return QR_OK;
}

static enum qr_status
qgemm_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[2];
	size_t m, k, n;
	enum qr_status s;

	if ((s = qgemm_dims(c, d, &m, &k, &n)) != QR_OK)
		return s;
	dims[0] = (int64_t)m;
	dims[1] = (int64_t)n;
	return qr_tensor_set_shape(c->out[0], qr_op_has_in(c, 8) ?
				   c->in[8]->dtype : QR_DT_FLOAT, 2, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
qgemm_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = xcalloc(1, sizeof *st);

	c->state = st;
	if (c->in[5] != NULL)
		qr_op_mm_prepack(c, st, 3, 5,
				 qr_op_attr_int(c, "transB", 0) != 0);
	return QR_OK;
}

/* Add C (int32, broadcast to [m][n] as ORT's GemmBroadcastBias: (), (1),
 * (n), (1, n), (m, 1) or (m, n)) to acc, wrapping. */
static enum qr_status
qgemm_add_c(const struct qr_op_call *c, struct qr_diag *d, size_t m,
	    size_t n, int32_t *acc)
{
	const struct qr_tensor *t = c->in[6];
	const int32_t *cv = t->data;
	size_t rs, cs, i, j;
	char b[128];

	if (t->n_elem == 1) {
		rs = cs = 0;
	} else if ((t->ndim == 1 && (size_t)t->dims[0] == n) ||
		   (t->ndim == 2 && t->dims[0] == 1 && (size_t)t->dims[1] == n)) {
		rs = 0;
		cs = 1;
	} else if (t->ndim == 2 && (size_t)t->dims[0] == m && t->dims[1] == 1) {
		rs = 1;
		cs = 0;
	} else if (t->ndim == 2 && (size_t)t->dims[0] == m &&
		   (size_t)t->dims[1] == n) {
		rs = n;
		cs = 1;
	} else {
		return qr_op_errorf(c, d, QR_ESHAPE, "C '%s' %s does not "
				    "broadcast to [%zu,%zu]",
				    qr_op_in_name(c, 6),
				    qr_shape_str(t, b, sizeof b), m, n);
	}
	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++)
			acc[i * n + j] = (int32_t)((uint32_t)acc[i * n + j] +
						   (uint32_t)cv[i * rs + j * cs]);
	return QR_OK;
}

static enum qr_status
qgemm_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = c->state;
	const struct qr_tensor *a = c->in[0], *b = c->in[3];
	int ta = qr_op_attr_int(c, "transA", 0) != 0;
	int tb = qr_op_attr_int(c, "transB", 0) != 0;
	float alpha = qr_op_attr_float(c, "alpha", 1.0f);
	int quant_out = qr_op_has_in(c, 8);
	size_t m, k, n, i, j, n_scale;
	float as, ys = 1.0f, *bs = NULL, *scale = NULL;
	int32_t az, yz = 0, *bz = NULL, *acc = NULL;
	uint8_t *at = NULL;
	const uint8_t *ap = a->data;
	enum qr_status s;

	if ((s = qgemm_dims(c, d, &m, &k, &n)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 1, &as)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, a->dtype, &az)) != QR_OK ||
	    (s = qr_op_q_vec(c, d, 4, 5, n, &bs, &bz)) != QR_OK)
		goto out;
	if (quant_out && ((s = qr_op_q_scale(c, d, 7, &ys)) != QR_OK ||
			  (s = qr_op_q_zp(c, d, 8, c->in[8]->dtype, &yz)) !=
				  QR_OK))
		goto out;
	if (m * n == 0)
		goto out;
	n_scale = c->in[4]->n_elem == 1 ? 1 : n;
	scale = xmalloc(n * sizeof *scale);
	for (j = 0; j < n; j++) {
		scale[j] = alpha * as * bs[j];
		if (quant_out)
			scale[j] /= ys;
	}
	acc = xcalloc(m * n, sizeof *acc);
	if (k > 0) {
		if (ta) {
			at = xmalloc(m * k);
			for (i = 0; i < m; i++)
				for (j = 0; j < k; j++)
					at[i * k + j] = ap[j * m + i];
			ap = at;
		}
		if (st->pk == NULL || !st->b_const || st->k != k ||
		    st->n != n) {
			qr_qgemm_packed_free(st->pk);
			st->pk = qr_qgemm_pack_new(b->data,
						   b->dtype == QR_DT_INT8, tb,
						   k, n, bz, n_scale);
			st->k = k;
			st->n = n;
		}
		qr_qgemm_run(st->pk, ap, a->dtype == QR_DT_INT8, az, m, acc, n,
			     qr_op_ws(c, &st->ws, &st->ws_cap,
					   qr_qgemm_workspace(st->pk, m,
							      c->n_threads)),
			     c->n_threads);
	}
	if (qr_op_has_in(c, 6) && (s = qgemm_add_c(c, d, m, n, acc)) != QR_OK)
		goto out;
	if (quant_out) {
		requant_rows(acc, m, n, scale, n_scale, yz,
			     c->out[0]->dtype == QR_DT_INT8, c->out[0]->data);
	} else {
		float *y = c->out[0]->data;

		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++)
				y[i * n + j] = scale[n_scale == 1 ? 0 : j] *
					       (float)acc[i * n + j];
	}
out:
	free(bs);
	free(bz);
	free(scale);
	free(acc);
	free(at);
	return s;
}

const struct qr_op_desc qr_op_qgemm = {
	.domain = "com.microsoft", .name = "QGemm", .since = 1,
	.check = qgemm_check, .prepare = qgemm_prepare, .infer = qgemm_infer,
	.run = qgemm_run, .release = qr_op_mm_cache_free,
};
