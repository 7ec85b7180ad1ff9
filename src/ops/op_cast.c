/*
 * op_cast: Cast and CastLike, between every numeric dtype, bool, float16
 * and bfloat16.
 */
#include <math.h>
#include <string.h>

#include "ops/op-move-int.h"

/* ---- Cast ---- */

#define CAST_TYPES (QR_DTM_NUMERIC | QR_DTM(QR_DT_BOOL) | \
		    QR_DTM(QR_DT_FLOAT16) | QR_DTM(QR_DT_BFLOAT16))

static int
is_int_dtype(int dt)
{
	return dt == QR_DT_BOOL || (dt < 64 && (QR_DTM_INTS & QR_DTM(dt)));
}

static enum qr_status
cast_check(const struct qr_op_call *c, struct qr_diag *d)
{
	int64_t to = qr_op_attr_int(c, "to", QR_DT_UNDEFINED);
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, CAST_TYPES)) != QR_OK)
		return st;
	if (!qr_op_has_attr(c, "to") || to <= 0 || to >= 64 ||
	    !(CAST_TYPES & QR_DTM(to)))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "cast to %s is not "
				    "supported", qr_dtype_name((int)to));
	c->out_dtype[0] = (int)to;
	return QR_OK;
}

static enum qr_status
cast_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_tensor_set_shape(c->out[0],
				   (int)qr_op_attr_int(c, "to", 0),
				   c->in[0]->ndim, c->in[0]->dims,
				   qr_op_out_name(c, 0), d);
}

/* Store integer v, wrapping to the destination width. */
static void
set_i64(struct qr_tensor *t, size_t i, int64_t v)
{
	void *p = t->data;

	switch (t->dtype) {
	case QR_DT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
	case QR_DT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
	case QR_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
	case QR_DT_INT64: ((int64_t *)p)[i] = v; break;
	case QR_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case QR_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case QR_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case QR_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case QR_DT_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
	default: QR_ASSERT(!"not an integer dtype");
	}
}

/* Float to integer: NaN gives 0, out-of-range values saturate (C leaves
 * both undefined). */
static int64_t
f2i(double v, int dt)
{
	double lo, hi;

	if (isnan(v))
		return 0;
	switch (dt) {
	case QR_DT_BOOL: return v != 0;
	case QR_DT_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
	case QR_DT_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
	case QR_DT_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
	case QR_DT_UINT8: lo = 0; hi = UINT8_MAX; break;
	case QR_DT_UINT16: lo = 0; hi = UINT16_MAX; break;
	case QR_DT_UINT32: lo = 0; hi = UINT32_MAX; break;
	case QR_DT_UINT64:
		if (v <= 0)
			return 0;
		if (v >= 18446744073709551615.0)
			return (int64_t)UINT64_MAX;
		return (int64_t)(uint64_t)v;
	default:
		if (v <= -9223372036854775808.0)
			return INT64_MIN;
		if (v >= 9223372036854775807.0)
			return INT64_MAX;
		return (int64_t)v;
	}
	return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

static enum qr_status
cast_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	int xi = is_int_dtype(x->dtype), yi = is_int_dtype(y->dtype);
	size_t i, n = y->n_elem;

	if (x->dtype == y->dtype)
		return qr_op_copy_run(c, d);
	if (x->dtype == QR_DT_FLOAT && y->dtype == QR_DT_FLOAT16) {
		const float *s = x->data;
		uint16_t *o = y->data;

		for (i = 0; i < n; i++)
			o[i] = qr_f32_to_f16(s[i]);
		return QR_OK;
	}
	for (i = 0; i < n; i++) {
		if (xi && yi)
			set_i64(y, i, qr_op_get_i64(x, i));
		else if (yi)
			set_i64(y, i, f2i(qr_op_get(x, i), y->dtype));
		else if (xi && x->dtype == QR_DT_UINT64)
			qr_op_set(y, i, (double)(uint64_t)qr_op_get_i64(x, i));
		else if (xi)
			qr_op_set(y, i, (double)qr_op_get_i64(x, i));
		else
			qr_op_set(y, i, qr_op_get(x, i));
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_cast = {
	.domain = "", .name = "Cast", .since = 6,
	.check = cast_check, .infer = cast_infer, .run = cast_run,
};

/* ---- CastLike: Cast to the dtype of a second input ---- */

static enum qr_status
castlike_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, CAST_TYPES)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, CAST_TYPES)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 1);
	return QR_OK;
}

static enum qr_status
castlike_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_tensor_set_shape(c->out[0], c->in[1]->dtype, c->in[0]->ndim,
				   c->in[0]->dims, qr_op_out_name(c, 0), d);
}

const struct qr_op_desc qr_op_castlike = {
	.domain = "", .name = "CastLike", .since = 15,
	.check = castlike_check, .infer = castlike_infer, .run = cast_run,
};
