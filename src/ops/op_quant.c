/*
 * op_quant: QuantizeLinear and DequantizeLinear (opsets 10 to 21, and
 * com.microsoft's; per-tensor and per-axis; uint8, int8, uint16, int16,
 * and int32 for DequantizeLinear), DynamicQuantizeLinear, ConvInteger and
 * MatMulInteger, plus the quantization-parameter and integer matmul
 * helpers of op-conv-int.h.
 *
 * DequantizeLinear also takes int4/uint4 (opset 21; the loader unpacks
 * them to a byte each) and blocked scales (block_size: the scale and
 * zero point are shaped as x except along axis, where each covers
 * block_size elements), as ONNX Runtime's 4-bit weight-only quantizer
 * writes them.
 *
 * Arithmetic is the kernels' (kernels.h): MLAS rounding (half to even)
 * and saturation, int32 accumulation. Refused at check: QuantizeLinear
 * with blocks or 4-bit output, float8 types, float16 inputs.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

#define Q_DTYPES (QR_DTM(QR_DT_UINT8) | QR_DTM(QR_DT_INT8) | \
		  QR_DTM(QR_DT_UINT16) | QR_DTM(QR_DT_INT16))
#define Q8_DTYPES (QR_DTM(QR_DT_UINT8) | QR_DTM(QR_DT_INT8))
#define Q4_DTYPES (QR_DTM(QR_DT_UINT4) | QR_DTM(QR_DT_INT4))

/* ---- quantization parameters ---- */

/* enum qr_qtype of dtype, -1 when no kernel takes it. */
int
qr_op_qtype(int dtype)
{
	switch (dtype) {
	case QR_DT_UINT8: return QR_QT_U8;
	case QR_DT_INT8: return QR_QT_S8;
	case QR_DT_UINT16: return QR_QT_U16;
	case QR_DT_INT16: return QR_QT_S16;
	case QR_DT_INT32: return QR_QT_S32;
	default: return -1;
	}
}

/* Input i as one float scale; QR_EGRAPH naming the node otherwise. */
enum qr_status
qr_op_q_scale(const struct qr_op_call *c, struct qr_diag *d, size_t i,
	      float *out)
{
	const struct qr_tensor *t = qr_op_has_in(c, i) ? c->in[i] : NULL;
	char b[128];

	*out = 1.0f;
	if (t == NULL || t->dtype != QR_DT_FLOAT || t->n_elem != 1 ||
	    t->ndim > 1)
		return qr_op_errorf(c, d, QR_EGRAPH, "scale input %zu '%s' %s "
				    "must be one float", i, qr_op_in_name(c, i),
				    t ? qr_shape_str(t, b, sizeof b) : "");
	*out = ((const float *)t->data)[0];
	return QR_OK;
}

/* Input i as one integer zero point (0 when absent); QR_EGRAPH otherwise. */
enum qr_status
qr_op_q_zp(const struct qr_op_call *c, struct qr_diag *d, size_t i, int dtype,
	   int32_t *out)
{
	const struct qr_tensor *t;
	char b[128];

	*out = 0;
	if (!qr_op_has_in(c, i))
		return QR_OK;
	t = c->in[i];
	if (qr_op_qtype(t->dtype) < 0 || t->n_elem != 1 || t->ndim > 1 ||
	    (dtype != QR_DT_UNDEFINED && t->dtype != dtype))
		return qr_op_errorf(c, d, QR_EGRAPH, "zero point input %zu "
				    "'%s' %s %s must be one %s", i,
				    qr_op_in_name(c, i),
				    qr_dtype_name(t->dtype),
				    qr_shape_str(t, b, sizeof b),
				    dtype != QR_DT_UNDEFINED ?
					    qr_dtype_name(dtype) : "integer");
	*out = (int32_t)qr_op_get(t, 0);
	return QR_OK;
}

/* Scales and zero points spread to n heap entries (caller frees both);
 * QR_EGRAPH naming the node when a count is neither 1 nor n. */
enum qr_status
qr_op_q_vec(const struct qr_op_call *c, struct qr_diag *d, size_t i_scale,
	    size_t i_zp, size_t n, float **scale, int32_t **zp)
{
	const struct qr_tensor *s = c->in[i_scale];
	const struct qr_tensor *z = qr_op_has_in(c, i_zp) ? c->in[i_zp] : NULL;
	size_t i;
	char b[128];

	*scale = NULL;
	*zp = NULL;
	if (s->dtype != QR_DT_FLOAT || s->ndim > 1 ||
	    (s->n_elem != 1 && s->n_elem != n))
		return qr_op_errorf(c, d, QR_EGRAPH, "scale '%s' %s %s must "
				    "be float with 1 or %zu values",
				    qr_op_in_name(c, i_scale),
				    qr_dtype_name(s->dtype),
				    qr_shape_str(s, b, sizeof b), n);
	if (z != NULL && ((qr_op_qtype(z->dtype) < 0 &&
			   !(Q4_DTYPES & QR_DTM(z->dtype))) || z->ndim > 1 ||
			  z->n_elem != s->n_elem))
		return qr_op_errorf(c, d, QR_EGRAPH, "zero point '%s' %s %s "
				    "must be an integer tensor shaped as its "
				    "scale", qr_op_in_name(c, i_zp),
				    qr_dtype_name(z->dtype),
				    qr_shape_str(z, b, sizeof b));
	*scale = xmalloc((n ? n : 1) * sizeof **scale);
	*zp = xmalloc((n ? n : 1) * sizeof **zp);
	for (i = 0; i < n; i++) {
		size_t at = s->n_elem == 1 ? 0 : i;

		(*scale)[i] = ((const float *)s->data)[at];
		(*zp)[i] = z ? (int32_t)qr_op_get(z, at) : 0;
	}
	return QR_OK;
}

/* ---- QuantizeLinear, DequantizeLinear ---- */

static enum qr_status
quant_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	int zdt = qr_op_dtype(c, 2);
	int odt = (int)qr_op_attr_int(c, "output_dtype", 0);

	if ((st = qr_op_arity(c, d, 2, 3, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 2, Q_DTYPES)) != QR_OK)
		return st;
	if (qr_op_attr_int(c, "block_size", 0) != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "blocked "
				    "quantization (block_size) is not "
				    "supported");
	if (odt != 0 && (odt >= 64 || !(Q_DTYPES & QR_DTM(odt))))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "output_dtype %s "
				    "is not supported", qr_dtype_name(odt));
	if (odt != 0 && zdt != QR_DT_UNDEFINED && odt != zdt)
		return qr_op_errorf(c, d, QR_EGRAPH, "output_dtype %s differs "
				    "from the zero point's %s",
				    qr_dtype_name(odt), qr_dtype_name(zdt));
	if (zdt != QR_DT_UNDEFINED)
		c->out_dtype[0] = zdt;
	else if (!qr_op_has_in(c, 2))
		c->out_dtype[0] = odt ? odt : QR_DT_UINT8;
	return QR_OK;
}

static enum qr_status
dequant_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 3, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, Q_DTYPES | Q4_DTYPES |
					     QR_DTM(QR_DT_INT32))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 2)) != QR_OK)
		return st;
	if (qr_op_attr_int(c, "block_size", 0) < 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "block_size %lld must "
				    "not be negative", (long long)
				    qr_op_attr_int(c, "block_size", 0));
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

/* The dtype QuantizeLinear writes. */
static int
quant_out_dtype(const struct qr_op_call *c)
{
	int odt = (int)qr_op_attr_int(c, "output_dtype", 0);

	if (qr_op_has_in(c, 2))
		return c->in[2]->dtype;
	return odt ? odt : QR_DT_UINT8;
}

static enum qr_status
quant_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];

	return qr_tensor_set_shape(c->out[0], quant_out_dtype(c), x->ndim,
				   x->dims, qr_op_out_name(c, 0), d);
}

static enum qr_status
dequant_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];

	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, x->ndim, x->dims,
				   qr_op_out_name(c, 0), d);
}

/*
 * Layout [outer][axis_len][inner] of x for its scale: per tensor when the
 * scale holds one value, else per axis (attribute axis, default 1).
 */
static enum qr_status
q_layout(const struct qr_op_call *c, struct qr_diag *d, size_t *outer,
	 size_t *axis_len, size_t *inner)
{
	const struct qr_tensor *x = c->in[0], *s = c->in[1];
	enum qr_status st;
	char b1[128], b2[128];
	int axis;

	if (s->n_elem == 1 && s->ndim <= 1) {
		*outer = 1;
		*axis_len = 1;
		*inner = x->n_elem;
		return QR_OK;
	}
	if ((st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 1), x->ndim, 0,
			     &axis)) != QR_OK)
		return st;
	if (s->ndim != 1 || s->dims[0] != x->dims[axis])
		return qr_op_errorf(c, d, QR_ESHAPE, "scale '%s' %s does not "
				    "match axis %d of input '%s' %s",
				    qr_op_in_name(c, 1),
				    qr_shape_str(s, b1, sizeof b1), axis,
				    qr_op_in_name(c, 0),
				    qr_shape_str(x, b2, sizeof b2));
	*outer = qr_op_dims_prod(x->dims, 0, axis);
	*axis_len = (size_t)x->dims[axis];
	*inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim);
	return QR_OK;
}

/* The kernel type of DequantizeLinear's x: int4 and uint4 are held a
 * byte each (the loader unpacks them), so they dequantize as 8-bit. */
static enum qr_qtype
dq_qtype(int dtype)
{
	if (dtype == QR_DT_INT4)
		return QR_QT_S8;
	if (dtype == QR_DT_UINT4)
		return QR_QT_U8;
	return (enum qr_qtype)qr_op_qtype(dtype);
}

/*
 * Blocked DequantizeLinear (opset 21, block_size bs): the scale and zero
 * point are shaped as x but for axis, where each of ceil(dims[axis] / bs)
 * entries covers bs elements. Along a last axis a block is one run with
 * one scale; otherwise each row of x along the inner dims takes a row of
 * scales.
 */
static enum qr_status
dq_blocked(struct qr_op_call *c, struct qr_diag *d, size_t bs)
{
	const struct qr_tensor *x = c->in[0], *s = c->in[1];
	const struct qr_tensor *z = qr_op_has_in(c, 2) ? c->in[2] : NULL;
	enum qr_qtype qt = dq_qtype(x->dtype);
	size_t esz = qr_dtype_size(x->dtype), outer, len, inner, nb, o, a, i;
	const char *xd = x->data;
	const float *sc = s->data;
	float *y = c->out[0]->data;
	int32_t *zp;
	enum qr_status st;
	char b1[128], b2[128];
	int axis, k, fits;

	if ((st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 1), x->ndim, 0,
			     &axis)) != QR_OK)
		return st;
	len = (size_t)x->dims[axis];
	nb = (len + bs - 1) / bs;
	fits = s->ndim == x->ndim;
	for (k = 0; fits && k < x->ndim; k++)
		fits = s->dims[k] == (k == axis ? (int64_t)nb : x->dims[k]);
	if (!fits)
		return qr_op_errorf(c, d, QR_ESHAPE, "scale '%s' %s does not "
				    "block input '%s' %s by %zu along axis %d",
				    qr_op_in_name(c, 1),
				    qr_shape_str(s, b1, sizeof b1),
				    qr_op_in_name(c, 0),
				    qr_shape_str(x, b2, sizeof b2), bs, axis);
	if (z != NULL && (z->ndim != s->ndim ||
			  memcmp(z->dims, s->dims, (size_t)s->ndim *
				 sizeof *s->dims) != 0))
		return qr_op_errorf(c, d, QR_ESHAPE, "zero point '%s' %s is "
				    "not shaped as its scale %s",
				    qr_op_in_name(c, 2),
				    qr_shape_str(z, b1, sizeof b1),
				    qr_shape_str(s, b2, sizeof b2));
	outer = qr_op_dims_prod(x->dims, 0, axis);
	inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim);
	zp = xcalloc(s->n_elem ? s->n_elem : 1, sizeof *zp);
	for (i = 0; z != NULL && i < z->n_elem; i++)
		zp[i] = (int32_t)qr_op_get(z, i);
	for (o = 0; o < outer; o++)
		for (a = 0; a < len; a++) {
			size_t row = (o * len + a) * inner;
			size_t at = (o * nb + a / bs) * inner;

			if (inner == 1) { /* a starts a block */
				size_t n = len - a < bs ? len - a : bs;

				qr_dequantize_f32(xd + row * esz, qt, 1, 1, n,
						  sc + at, zp + at, y + row);
				a += n - 1;
				continue;
			}
			qr_dequantize_f32(xd + row * esz, qt, 1, inner, 1,
					  sc + at, zp + at, y + row);
		}
	free(zp);
	return QR_OK;
}

#define QDQ_PAR_MIN 16384 /* elements worth splitting over threads */

/* A per-tensor QuantizeLinear / DequantizeLinear cut into chunks. */
struct qdq_job {
	const struct qr_op_call *c;
	int quantize;
	size_t n;              /* elements */
	const float *scale;    /* one value */
	const int32_t *zp;     /* one value */
	size_t n_tasks;
};

static void
qdq_task(void *ctx, size_t t, int slot)
{
	const struct qdq_job *j = ctx;
	const struct qr_op_call *c = j->c;
	size_t lo, hi;

	qr_parallel_range(j->n, t, j->n_tasks, 64, &lo, &hi);
	if (lo == hi)
		return;
	if (j->quantize) {
		enum qr_qtype qt = (enum qr_qtype)qr_op_qtype(c->out[0]->dtype);

		qr_quantize_f32((const float *)c->in[0]->data + lo, 1, 1,
				hi - lo, j->scale, j->zp, qt,
				(char *)c->out[0]->data +
					lo * qr_dtype_size(c->out[0]->dtype));
	} else {
		enum qr_qtype qt = dq_qtype(c->in[0]->dtype);

		qr_dequantize_f32((const char *)c->in[0]->data +
					  lo * qr_dtype_size(c->in[0]->dtype),
				  qt, 1, 1, hi - lo, j->scale, j->zp,
				  (float *)c->out[0]->data + lo);
	}
}

static enum qr_status
qdq_run(struct qr_op_call *c, struct qr_diag *d, int quantize)
{
	size_t outer = 0, axis_len = 0, inner = 0;
	float *scale = NULL;
	int32_t *zp = NULL;
	enum qr_status st;
	int64_t bs = quantize ? 0 : qr_op_attr_int(c, "block_size", 0);

	if (bs > 0)
		return dq_blocked(c, d, (size_t)bs);
	if ((st = q_layout(c, d, &outer, &axis_len, &inner)) != QR_OK ||
	    (st = qr_op_q_vec(c, d, 1, 2, axis_len, &scale, &zp)) != QR_OK)
		goto out;
	if (axis_len == 1 && c->n_threads > 1 &&
	    outer * inner >= QDQ_PAR_MIN) {
		struct qdq_job j = {c, quantize, outer * inner, scale, zp,
				    4 * (size_t)c->n_threads};

		qr_parallel_for(c->n_threads, j.n_tasks, qdq_task, &j);
	} else if (quantize) {
		qr_quantize_f32(c->in[0]->data, outer, axis_len, inner, scale,
				zp, (enum qr_qtype)qr_op_qtype(c->out[0]->dtype),
				c->out[0]->data);
	} else {
		qr_dequantize_f32(c->in[0]->data, dq_qtype(c->in[0]->dtype),
				  outer, axis_len, inner, scale, zp,
				  c->out[0]->data);
	}
out:
	free(scale);
	free(zp);
	return st;
}

static enum qr_status
quant_run(struct qr_op_call *c, struct qr_diag *d)
{
	return qdq_run(c, d, 1);
}

static enum qr_status
dequant_run(struct qr_op_call *c, struct qr_diag *d)
{
	return qdq_run(c, d, 0);
}

/*
 * DequantizeLinear's output as a view (ops.h): the same layout, scales
 * and zero points qdq_run would use. Blocked scales are not offered.
 */
static enum qr_status
dequant_view(const struct qr_op_call *c, struct qr_qview *v)
{
	struct qr_diag quiet = {0};
	enum qr_status st;

	memset(v, 0, sizeof *v);
	if (qr_op_attr_int(c, "block_size", 0) != 0)
		return QR_EUNSUPPORTED;
	st = q_layout(c, &quiet, &v->outer, &v->axis_len, &v->inner);
	if (st == QR_OK)
		st = qr_op_q_vec(c, &quiet, 1, 2, v->axis_len, &v->scale,
				 &v->zp);
	qr_diag_clear(&quiet);
	if (st != QR_OK) {
		free(v->scale);
		free(v->zp);
		memset(v, 0, sizeof *v);
		return st;
	}
	v->q = c->in[0]->data;
	v->qtype = (int)dq_qtype(c->in[0]->dtype);
	return QR_OK;
}

const struct qr_op_desc qr_op_quantize_linear = {
	.domain = "", .name = "QuantizeLinear", .since = 10,
	.check = quant_check, .infer = quant_infer, .run = quant_run,
};

const struct qr_op_desc qr_op_dequantize_linear = {
	.domain = "", .name = "DequantizeLinear", .since = 10,
	.check = dequant_check, .infer = dequant_infer, .run = dequant_run,
	.view = dequant_view,
};

/* ONNX Runtime's contrib Q/DQ, which its quantizer writes for 16-bit
 * activations before opset 21 (and with UseQDQContribOps): the opset-13
 * semantics with int16/uint16 allowed. */
const struct qr_op_desc qr_op_ms_quantize_linear = {
	.domain = "com.microsoft", .name = "QuantizeLinear", .since = 1,
	.check = quant_check, .infer = quant_infer, .run = quant_run,
};

const struct qr_op_desc qr_op_ms_dequantize_linear = {
	.domain = "com.microsoft", .name = "DequantizeLinear", .since = 1,
	.check = dequant_check, .infer = dequant_infer, .run = dequant_run,
	.view = dequant_view,
};

/* ---- DynamicQuantizeLinear ---- */

static enum qr_status
dyn_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 3, 3)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOAT)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_UINT8;
	c->out_dtype[1] = QR_DT_FLOAT;
	c->out_dtype[2] = QR_DT_UINT8;
	return QR_OK;
}

static enum qr_status
dyn_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	enum qr_status st;

	if ((st = qr_tensor_set_shape(c->out[0], QR_DT_UINT8, x->ndim, x->dims,
				      qr_op_out_name(c, 0), d)) != QR_OK ||
	    (st = qr_tensor_set_shape(c->out[1], QR_DT_FLOAT, 0, NULL,
				      qr_op_out_name(c, 1), d)) != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[2], QR_DT_UINT8, 0, NULL,
				   qr_op_out_name(c, 2), d);
}

static enum qr_status
dyn_run(struct qr_op_call *c, struct qr_diag *d)
{
	qr_dynamic_quantize_u8(c->in[0]->data, c->in[0]->n_elem,
			       c->out[0]->data, c->out[1]->data,
			       c->out[2]->data);
	return QR_OK;
}

const struct qr_op_desc qr_op_dynamic_quantize_linear = {
	.domain = "", .name = "DynamicQuantizeLinear", .since = 11,
	.check = dyn_check, .infer = dyn_infer, .run = dyn_run,
};

/* ---- ConvInteger ---- */

/* Per-node state of ConvInteger. */
struct qconv_state {
	struct qr_op_win win;       /* window attributes */
	int w_const;                /* W and its zero points are constant,
				     * packed at prepare */
	struct qr_qconv_packed *pk; /* packed weights, or NULL */
	void *ws;                   /* kernel workspace */
	size_t ws_cap;              /* bytes in ws */
};

/* Packed conv weights of w for group with wzp (1 or c_out values); NULL
 * when w is not a 1-D to 3-D conv weight of that group. */
struct qr_qconv_packed *
qr_op_qconv_pack(const struct qr_tensor *w, int64_t group, const int32_t *wzp,
		 size_t n_wzp)
{
	size_t kd, kh, kw, c_out;

	if (w->ndim < 3 || w->ndim > 5 || group < 1 ||
	    (w->dtype != QR_DT_INT8 && w->dtype != QR_DT_UINT8))
		return NULL;
	kd = w->ndim == 5 ? (size_t)w->dims[2] : 0;
	kh = w->ndim >= 4 ? (size_t)w->dims[w->ndim - 2] : 1;
	kw = (size_t)w->dims[w->ndim - 1];
	c_out = (size_t)w->dims[0];
	if (c_out % (size_t)group != 0 || (n_wzp != 1 && n_wzp != c_out))
		return NULL;
	return qr_qconv_pack_new(c_out, (size_t)w->dims[1] * (size_t)group,
				 kd, kh, kw, (size_t)group, w->data,
				 w->dtype == QR_DT_INT8, wzp, n_wzp);
}

/* Prepare-time pack: W at iw and its zero points at iw_zp (may be
 * absent) must be constant. */
struct qr_qconv_packed *
qr_op_qconv_prepack(const struct qr_op_call *c, size_t iw, size_t iw_zp,
		    int64_t group)
{
	const struct qr_tensor *w = c->in[iw], *z = NULL;
	struct qr_qconv_packed *pk;
	int32_t *zp;
	size_t i, nz = 1;

	if (w == NULL)
		return NULL;
	if (qr_op_has_in(c, iw_zp)) {
		z = c->in[iw_zp];
		if (z == NULL || z->dtype != w->dtype || z->ndim > 1)
			return NULL;
		nz = z->n_elem;
	}
	zp = xmalloc((nz ? nz : 1) * sizeof *zp);
	for (i = 0; i < nz; i++)
		zp[i] = z ? (int32_t)qr_op_get(z, i) : 0;
	pk = nz ? qr_op_qconv_pack(w, group, zp, nz) : NULL;
	free(zp);
	return pk;
}

static enum qr_status
convint_check(const struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_win win;
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 4, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, Q8_DTYPES)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, Q8_DTYPES)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 2)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 1, 3)) != QR_OK ||
	    (st = qr_op_win_parse(c, d, &win)) != QR_OK)
		return st;
	if (win.nsp > 3)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%d-D windows are "
				    "not supported (1-D to 3-D only)",
				    win.nsp);
	if (c->in != NULL && c->in[1] != NULL && c->in[1]->ndim > 5)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%d-D convolution "
				    "is not supported (1-D to 3-D only)",
				    c->in[1]->ndim - 2);
	c->out_dtype[0] = QR_DT_INT32;
	return QR_OK;
}

static enum qr_status
convint_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct qconv_state *st = xcalloc(1, sizeof *st);
	enum qr_status s;

	c->state = st;
	if ((s = qr_op_win_parse(c, d, &st->win)) != QR_OK)
		return s;
	st->pk = qr_op_qconv_prepack(c, 1, 3, st->win.group);
	st->w_const = st->pk != NULL;
	return QR_OK;
}

static void
convint_release(void *state)
{
	struct qconv_state *st = state;

	if (st == NULL)
		return;
	qr_qconv_packed_free(st->pk);
	free(st->ws);
	free(st);
}

static enum qr_status
convint_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct qconv_state *st = c->state;
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_conv_params p;
	enum qr_status s;
	int ndim;

	if ((s = qr_op_conv_shape(c, d, &st->win, c->in[0], c->in[1], 0, &p,
				  &ndim, dims)) != QR_OK)
		return s;
	return qr_tensor_set_shape(c->out[0], QR_DT_INT32, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
convint_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qconv_state *st = c->state;
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_conv_params p;
	int32_t *wzp = NULL, xzp;
	enum qr_status s;
	int ndim;

	if ((s = qr_op_conv_shape(c, d, &st->win, c->in[0], c->in[1], 0, &p,
				  &ndim, dims)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &xzp)) != QR_OK)
		return s;
	if (c->out[0]->n_elem == 0)
		return QR_OK;
	if (!st->w_const) {
		const struct qr_tensor *z = qr_op_has_in(c, 3) ? c->in[3] :
								 NULL;
		size_t i, nz = z ? z->n_elem : 1;

		if (z != NULL && (z->dtype != c->in[1]->dtype ||
				  z->ndim > 1 || (nz != 1 && nz != p.c_out)))
			return qr_op_errorf(c, d, QR_EGRAPH, "w_zero_point "
					    "must hold 1 or %zu values of the "
					    "weights' dtype", p.c_out);
		wzp = xmalloc(nz * sizeof *wzp);
		for (i = 0; i < nz; i++)
			wzp[i] = z ? (int32_t)qr_op_get(z, i) : 0;
		qr_qconv_packed_free(st->pk);
		st->pk = qr_op_qconv_pack(c->in[1], st->win.group, wzp, nz);
		QR_ASSERT(st->pk != NULL);
	}
	qr_qconv_run_s32(st->pk, &p, c->in[0]->data,
			 c->in[0]->dtype == QR_DT_INT8, xzp, c->out[0]->data,
			 qr_op_ws(c, &st->ws, &st->ws_cap,
				       qr_qconv_workspace(st->pk, &p,
							  c->n_threads)),
			 c->n_threads);
	free(wzp);
	return QR_OK;
}

const struct qr_op_desc qr_op_conv_integer = {
	.domain = "", .name = "ConvInteger", .since = 10,
	.check = convint_check, .prepare = convint_prepare,
	.infer = convint_infer, .run = convint_run,
	.release = convint_release,
};

/* ---- integer matmul shapes ---- */

/* numpy matmul shapes of a times b; QR_ESHAPE naming the node. */
enum qr_status
qr_op_mm_shape(const struct qr_op_call *c, struct qr_diag *d,
	       const struct qr_tensor *a, const struct qr_tensor *b,
	       struct qr_op_mm *mm)
{
	int ar = a->ndim, br = b->ndim, i;
	int64_t ka, kb;
	size_t sa = 1, sb = 1;
	char b1[128], b2[128];

	memset(mm, 0, sizeof *mm);
	if (ar < 1 || br < 1)
		goto bad;
	mm->m = ar >= 2 ? (size_t)a->dims[ar - 2] : 1;
	ka = a->dims[ar - 1];
	kb = br >= 2 ? b->dims[br - 2] : b->dims[0];
	mm->n = br >= 2 ? (size_t)b->dims[br - 1] : 1;
	if (ka != kb)
		goto bad;
	mm->k = (size_t)ka;
	mm->nb = (ar > br ? ar : br) - 2;
	if (mm->nb < 0)
		mm->nb = 0;
	mm->batch = 1;
	for (i = mm->nb - 1; i >= 0; i--) {
		int ia = i - (mm->nb - (ar - 2)), ib = i - (mm->nb - (br - 2));
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		int64_t db = ib >= 0 ? b->dims[ib] : 1;

		if (da != db && da != 1 && db != 1)
			goto bad;
		mm->bdims[i] = da == 1 ? db : da;
		mm->a_st[i] = da == 1 ? 0 : sa;
		mm->b_st[i] = db == 1 ? 0 : sb;
		sa *= (size_t)da;
		sb *= (size_t)db;
		mm->batch *= (size_t)mm->bdims[i];
	}
	mm->a_mats = sa;
	mm->b_mats = sb;
	mm->ndim = 0;
	for (i = 0; i < mm->nb; i++)
		mm->dims[mm->ndim++] = mm->bdims[i];
	if (ar >= 2)
		mm->dims[mm->ndim++] = (int64_t)mm->m;
	if (br >= 2)
		mm->dims[mm->ndim++] = (int64_t)mm->n;
	return QR_OK;
bad:
	return qr_op_errorf(c, d, QR_ESHAPE, "inputs %s and %s cannot be "
			    "multiplied", qr_shape_str(a, b1, sizeof b1),
			    qr_shape_str(b, b2, sizeof b2));
}

/* Matrix indices into A and B of output product bi. */
void
qr_op_mm_index(const struct qr_op_mm *mm, size_t bi, size_t *ai, size_t *bj)
{
	int i;

	*ai = *bj = 0;
	for (i = mm->nb - 1; i >= 0; i--) {
		size_t idx = bi % (size_t)mm->bdims[i];

		bi /= (size_t)mm->bdims[i];
		*ai += idx * mm->a_st[i];
		*bj += idx * mm->b_st[i];
	}
}

/* ---- MatMulInteger ---- */

static enum qr_status
mmint_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 4, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, Q8_DTYPES)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, Q8_DTYPES)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 2)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 1, 3)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_INT32;
	return QR_OK;
}

static enum qr_status
mmint_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = xcalloc(1, sizeof *st);

	c->state = st;
	qr_op_mm_prepack(c, st, 1, 3, 0);
	return QR_OK;
}

/* Release function of the integer matmul nodes; NULL does nothing. */
void
qr_op_mm_cache_free(void *state)
{
	struct qr_op_mm_cache *st = state;

	if (st == NULL)
		return;
	qr_qgemm_packed_free(st->pk);
	free(st->ws);
	free(st);
}

static enum qr_status
mmint_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm mm;
	enum qr_status s;

	if ((s = qr_op_mm_shape(c, d, c->in[0], c->in[1], &mm)) != QR_OK)
		return s;
	return qr_tensor_set_shape(c->out[0], QR_DT_INT32, mm.ndim, mm.dims,
				   qr_op_out_name(c, 0), d);
}

/*
 * B's zero points: 1 or n values (per column), of B's dtype. A zero
 * point per row of a batched B is refused (QR_EUNSUPPORTED).
 */
static enum qr_status
mm_bzp(const struct qr_op_call *c, struct qr_diag *d, size_t ib, size_t i,
       size_t n, int32_t **zp, size_t *nz)
{
	const struct qr_tensor *z = qr_op_has_in(c, i) ? c->in[i] : NULL;
	size_t j;

	*nz = z ? z->n_elem : 1;
	*zp = NULL;
	if (z != NULL && (z->dtype != c->in[ib]->dtype ||
			  (*nz != 1 && (*nz != n || z->ndim != 1))))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "zero point '%s' "
				    "of B must be one value or one per column "
				    "(%zu) of B's dtype", qr_op_in_name(c, i),
				    n);
	*zp = xmalloc(*nz * sizeof **zp);
	for (j = 0; j < *nz; j++)
		(*zp)[j] = z ? (int32_t)qr_op_get(z, j) : 0;
	return QR_OK;
}

/* Prepare-time pack of a constant single-matrix B (see op-conv-int.h). */
void
qr_op_mm_prepack(const struct qr_op_call *c, struct qr_op_mm_cache *st,
		 size_t ib, size_t ib_zp, int trans_b)
{
	const struct qr_tensor *b = c->in[ib];
	struct qr_diag quiet = {0};
	int32_t *zp = NULL;
	size_t k, n, nz;

	st->b_const = b != NULL &&
		      (!qr_op_has_in(c, ib_zp) || c->in[ib_zp] != NULL);
	if (!st->b_const || b->ndim != 2 ||
	    (b->dtype != QR_DT_INT8 && b->dtype != QR_DT_UINT8))
		return;
	k = (size_t)b->dims[trans_b ? 1 : 0];
	n = (size_t)b->dims[trans_b ? 0 : 1];
	if (k == 0 || n == 0 ||
	    mm_bzp(c, &quiet, ib, ib_zp, n, &zp, &nz) != QR_OK) {
		qr_diag_clear(&quiet);
		free(zp);
		return;
	}
	st->pk = qr_qgemm_pack_new(b->data, b->dtype == QR_DT_INT8, trans_b,
				   k, n, zp, nz);
	st->k = k;
	st->n = n;
	free(zp);
}

/* Exact int32 products of inputs ia and ib into acc (see op-conv-int.h);
 * B is packed into st once when it is a constant single matrix. */
enum qr_status
qr_op_mm_int32(struct qr_op_call *c, struct qr_diag *d,
	       struct qr_op_mm_cache *st, const struct qr_op_mm *mm,
	       size_t ia, int32_t a_zp, size_t ib, size_t ib_zp, int32_t *acc)
{
	const struct qr_tensor *a = c->in[ia], *b = c->in[ib];
	int a_signed = a->dtype == QR_DT_INT8, b_signed = b->dtype == QR_DT_INT8;
	size_t bi, ai, bj, nz = 1, last = (size_t)-1;
	struct qr_qgemm_packed *pk = NULL;
	int32_t *zp = NULL;
	enum qr_status s;
	int cached;

	if (mm->k == 0 || mm->m == 0 || mm->n == 0) {
		memset(acc, 0, mm->batch * mm->m * mm->n * sizeof *acc);
		return QR_OK;
	}
	cached = mm->b_mats == 1 && st->b_const && st->pk != NULL &&
		 st->k == mm->k && st->n == mm->n;
	if (cached)
		pk = st->pk;
	else if ((s = mm_bzp(c, d, ib, ib_zp, mm->n, &zp, &nz)) != QR_OK)
		return s;
	for (bi = 0; bi < mm->batch; bi++) {
		qr_op_mm_index(mm, bi, &ai, &bj);
		if (!cached && bj != last) {
			qr_qgemm_packed_free(pk);
			pk = qr_qgemm_pack_new((const uint8_t *)b->data +
						       bj * mm->k * mm->n,
					       b_signed, 0, mm->k, mm->n, zp,
					       nz);
			last = bj;
		}
		qr_qgemm_run(pk, (const uint8_t *)a->data + ai * mm->m * mm->k,
			     a_signed, a_zp, mm->m, acc + bi * mm->m * mm->n,
			     mm->n,
			     qr_op_ws(c, &st->ws, &st->ws_cap,
					   qr_qgemm_workspace(pk, mm->m,
							      c->n_threads)),
			     c->n_threads);
	}
	if (!cached) {
		if (mm->b_mats == 1 && st->b_const) {
			qr_qgemm_packed_free(st->pk);
			st->pk = pk;
			st->k = mm->k;
			st->n = mm->n;
		} else {
			qr_qgemm_packed_free(pk);
		}
	}
	free(zp);
	return QR_OK;
}

static enum qr_status
mmint_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = c->state;
	struct qr_op_mm mm;
	enum qr_status s;
	int32_t a_zp;

	if ((s = qr_op_mm_shape(c, d, c->in[0], c->in[1], &mm)) != QR_OK)
		return s;
	if (qr_op_has_in(c, 2) && c->in[2]->n_elem != 1)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "a_zero_point '%s' "
				    "must be one value (per-row zero points "
				    "are not supported)", qr_op_in_name(c, 2));
	if ((s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &a_zp)) != QR_OK)
		return s;
	return qr_op_mm_int32(c, d, st, &mm, 0, a_zp, 1, 3, c->out[0]->data);
}

const struct qr_op_desc qr_op_matmul_integer = {
	.domain = "", .name = "MatMulInteger", .since = 10,
	.check = mmint_check, .prepare = mmint_prepare, .infer = mmint_infer,
	.run = mmint_run, .release = qr_op_mm_cache_free,
};
