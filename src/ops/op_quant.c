/*
 * op_quant: QuantizeLinear and DequantizeLinear (opsets 10 to 21, and
 * com.microsoft's; per-tensor and per-axis; uint8, int8, uint16, int16,
 * and int32 for DequantizeLinear) and DynamicQuantizeLinear, plus the
 * quantization-parameter helpers of op-conv-int.h.
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

/* Dtype checks of the QOperator ops: inputs in `q` are 8-bit and of
 * the same dtype as input 0, inputs in `f` are float. Bit i of a mask is
 * input i. */
enum qr_status
qr_op_q8_dtypes(const struct qr_op_call *c, struct qr_diag *d, unsigned q,
		unsigned f)
{
	enum qr_status st;
	size_t i;

	for (i = 0; i < c->n_in && i < 32; i++) {
		if ((q >> i) & 1) {
			if ((st = qr_op_want_dtype(c, d, i, QR_DTM_Q8)) !=
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
