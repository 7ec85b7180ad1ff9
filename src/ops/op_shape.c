/*
 * op_shape: operators that move or describe data without arithmetic:
 * Identity, Dropout (inference), Constant, ConstantOfShape, Shape, Size,
 * Cast, CastLike, Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Concat,
 * Split, Slice, Gather, GatherElements, Pad, Expand, Where, Trilu, Range,
 * Tile, DepthToSpace, SpaceToDepth, OneHot, EyeLike, TopK, NonZero,
 * Compress, GatherND, Scatter, ScatterElements, ScatterND.
 *
 * Data movement is dtype-agnostic (elements are copied by size), so these
 * accept every dtype with a dense in-memory form (QR_DTM_ANY).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op-int.h"

/* ---- helpers ---- */

/* One element of es bytes from src to dst. */
static inline void
copy_elem(void *dst, const void *src, size_t es)
{
	switch (es) {
	case 1: *(uint8_t *)dst = *(const uint8_t *)src; break;
	case 2: memcpy(dst, src, 2); break;
	case 4: memcpy(dst, src, 4); break;
	case 8: memcpy(dst, src, 8); break;
	default: memcpy(dst, src, es); break;
	}
}

/*
 * Fill dense y (ndim, dims) from x read at x + off + sum(idx[i] *
 * stride[i]) elements; strides may be negative or zero. Shared by
 * Transpose, Slice and Expand.
 */
static void
strided_copy(void *y, const void *x, size_t es, int ndim, const int64_t *dims,
	     int64_t off, const int64_t *stride)
{
	int64_t idx[QR_TENSOR_MAX_DIMS] = {0};
	const char *src = x;
	char *dst = y;
	size_t n = 1, inner, k;
	int64_t pos = off, s_in;
	int i;

	for (i = 0; i < ndim; i++)
		n *= (size_t)dims[i];
	if (n == 0)
		return;
	if (ndim == 0) {
		copy_elem(dst, src + off * (int64_t)es, es);
		return;
	}
	inner = (size_t)dims[ndim - 1];
	s_in = stride[ndim - 1];
	for (;;) {
		if (s_in == 1) {
			memcpy(dst, src + pos * (int64_t)es, inner * es);
		} else {
			for (k = 0; k < inner; k++)
				copy_elem(dst + k * es, src + (pos + (int64_t)k *
					  s_in) * (int64_t)es, es);
		}
		dst += inner * es;
		for (i = ndim - 2; i >= 0; i--) {
			idx[i]++;
			pos += stride[i];
			if (idx[i] < dims[i])
				break;
			pos -= stride[i] * dims[i];
			idx[i] = 0;
		}
		if (i < 0)
			return;
	}
}

/* Dense strides (elements) of a shape. */
static void
dense_strides(int ndim, const int64_t *dims, int64_t *st)
{
	int64_t s = 1;
	int i;

	for (i = ndim - 1; i >= 0; i--) {
		st[i] = s;
		s *= dims[i];
	}
}

/* Check: arity, and input 0 any copyable dtype; output dtype = input 0. */
static enum qr_status
move_check(const struct qr_op_call *c, struct qr_diag *d, size_t min_in,
	   size_t max_in, size_t min_out, size_t max_out)
{
	enum qr_status st;
	size_t j;

	if ((st = qr_op_arity(c, d, min_in, max_in, min_out,
			      max_out)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_ANY)) != QR_OK)
		return st;
	for (j = 0; j < c->n_out; j++)
		c->out_dtype[j] = qr_op_dtype(c, 0);
	return QR_OK;
}

/* Input i, when given, must be an int32/int64 tensor. */
static enum qr_status
want_index(const struct qr_op_call *c, struct qr_diag *d, size_t i)
{
	return qr_op_want_dtype(c, d, i, QR_DTM_INDEX);
}

static enum qr_status
copy_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->nbytes > 0)
		memcpy(c->out[0]->data, c->in[0]->data, c->out[0]->nbytes);
	return QR_OK;
}

static enum qr_status
same_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, c->in[0]->ndim,
				   c->in[0]->dims, qr_op_out_name(c, 0), d);
}

/* ---- Identity, Dropout ---- */

static enum qr_status
identity_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return move_check(c, d, 1, 1, 1, 1);
}

const struct qr_op_desc qr_op_identity = {
	.domain = "", .name = "Identity", .since = 1,
	.check = identity_check, .infer = same_infer, .run = copy_run,
};

/* Dropout in inference: y = x, mask all true. training_mode must be a
 * constant false when given (opset 12+). */
static enum qr_status
dropout_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 1, 3, 1, 2);

	if (st != QR_OK)
		return st;
	if (c->n_out > 1)
		c->out_dtype[1] = QR_DT_BOOL;
	if (c->opset < 7 && qr_op_attr_int(c, "is_test", 0) == 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "training mode "
				    "(is_test=0) is not supported");
	if (qr_op_has_in(c, 2)) {
		if (c->in[2] == NULL)
			return qr_op_errorf(c, d, QR_EUNSUPPORTED,
					    "training_mode must be a constant");
		/* training with ratio 0 keeps every value: the identity, as
		 * torchvision's Swin exports F.dropout(attn, p=0.0) */
		if (c->in[2]->n_elem > 0 && qr_op_get(c->in[2], 0) != 0 &&
		    !(qr_op_has_in(c, 1) && c->in[1] != NULL &&
		      c->in[1]->n_elem == 1 && qr_op_get(c->in[1], 0) == 0))
			return qr_op_errorf(c, d, QR_EUNSUPPORTED, "training "
					    "mode is not supported (only with "
					    "a constant ratio of 0)");
	}
	return QR_OK;
}

static enum qr_status
dropout_infer(struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = same_infer(c, d);

	if (st == QR_OK && c->n_out > 1)
		st = qr_tensor_set_shape(c->out[1], QR_DT_BOOL, c->in[0]->ndim,
					 c->in[0]->dims, qr_op_out_name(c, 1),
					 d);
	return st;
}

static enum qr_status
dropout_run(struct qr_op_call *c, struct qr_diag *d)
{
	copy_run(c, d);
	if (c->n_out > 1 && c->out[1]->nbytes > 0)
		memset(c->out[1]->data, 1, c->out[1]->nbytes);
	return QR_OK;
}

const struct qr_op_desc qr_op_dropout = {
	.domain = "", .name = "Dropout", .since = 1,
	.check = dropout_check, .infer = dropout_infer, .run = dropout_run,
};

/* ---- Constant, ConstantOfShape ---- */

static enum qr_status
constant_check(const struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor_data *v = qr_node_const_value(c->node);
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 0, 0, 1, 1)) != QR_OK)
		return st;
	if (v == NULL)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "no dense value "
				    "(sparse_value is not supported)");
	if (v->dtype >= 64 || !(QR_DTM_ANY & QR_DTM(v->dtype)))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "value of dtype %s "
				    "is not supported", qr_dtype_name(v->dtype));
	c->out_dtype[0] = v->dtype;
	return QR_OK;
}

static enum qr_status
constant_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor_data *v = qr_node_const_value(c->node);

	return qr_tensor_set_shape(c->out[0], v->dtype, v->ndim, v->dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
constant_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor_data *v = qr_node_const_value(c->node);

	if (c->out[0]->nbytes > 0)
		memcpy(c->out[0]->data, v->data, c->out[0]->nbytes);
	return QR_OK;
}

const struct qr_op_desc qr_op_constant = {
	.domain = "", .name = "Constant", .since = 1,
	.check = constant_check, .infer = constant_infer, .run = constant_run,
};

static enum qr_status
cos_check(const struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_attr *a = qr_node_attr(c->node, "value");
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM(QR_DT_INT64))) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_FLOAT;
	if (a == NULL)
		return QR_OK;
	if (a->type != QR_ATTR_TENSOR || a->t == NULL || a->t->n_elem != 1)
		return qr_op_errorf(c, d, QR_EGRAPH, "value must be a "
				    "one-element tensor");
	if (a->t->dtype >= 64 || !(QR_DTM_ANY & QR_DTM(a->t->dtype)))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "value of dtype %s "
				    "is not supported",
				    qr_dtype_name(a->t->dtype));
	c->out_dtype[0] = a->t->dtype;
	return QR_OK;
}

static enum qr_status
cos_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_attr *a = qr_node_attr(c->node, "value");
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	size_t n;

	st = qr_op_read_ints(c, d, c->in[0], "shape", dims,
			     QR_TENSOR_MAX_DIMS, &n);
	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], a ? a->t->dtype : QR_DT_FLOAT,
				   (int)n, dims, qr_op_out_name(c, 0), d);
}

static enum qr_status
cos_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_attr *a = qr_node_attr(c->node, "value");
	struct qr_tensor *y = c->out[0];
	size_t es = qr_dtype_size(y->dtype), i;
	float zero = 0;
	const void *v = a ? a->t->data : &zero;

	for (i = 0; i < y->n_elem; i++)
		copy_elem((char *)y->data + i * es, v, es);
	return QR_OK;
}

const struct qr_op_desc qr_op_constant_of_shape = {
	.domain = "", .name = "ConstantOfShape", .since = 9,
	.check = cos_check, .infer = cos_infer, .run = cos_run,
};

/* ---- Shape, Size ---- */

static enum qr_status
shape_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = qr_op_arity(c, d, 1, 1, 1, 1);

	c->out_dtype[0] = QR_DT_INT64;
	return st;
}

/* Opset 15's start/end, clamped to [0, rank]. */
static void
shape_range(const struct qr_op_call *c, int rank, int *lo, int *hi)
{
	int64_t s = c->opset >= 15 ? qr_op_attr_int(c, "start", 0) : 0;
	int64_t e = c->opset >= 15 ? qr_op_attr_int(c, "end", rank) : rank;

	if (s < 0)
		s += rank;
	if (e < 0)
		e += rank;
	s = s < 0 ? 0 : s > rank ? rank : s;
	e = e < 0 ? 0 : e > rank ? rank : e;
	*lo = (int)s;
	*hi = (int)(e < s ? s : e);
}

static enum qr_status
shape_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t n;
	int lo, hi;

	shape_range(c, c->in[0]->ndim, &lo, &hi);
	n = hi - lo;
	return qr_tensor_set_shape(c->out[0], QR_DT_INT64, 1, &n,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
shape_run(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t *y = c->out[0]->data;
	int lo, hi, i;

	shape_range(c, c->in[0]->ndim, &lo, &hi);
	for (i = lo; i < hi; i++)
		y[i - lo] = c->in[0]->dims[i];
	return QR_OK;
}

const struct qr_op_desc qr_op_shape = {
	.domain = "", .name = "Shape", .since = 1,
	.check = shape_check, .infer = shape_infer, .run = shape_run,
};

static enum qr_status
size_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_tensor_set_shape(c->out[0], QR_DT_INT64, 0, NULL,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
size_run(struct qr_op_call *c, struct qr_diag *d)
{
	*(int64_t *)c->out[0]->data = (int64_t)c->in[0]->n_elem;
	return QR_OK;
}

const struct qr_op_desc qr_op_size = {
	.domain = "", .name = "Size", .since = 1,
	.check = shape_check, .infer = size_infer, .run = size_run,
};

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

/* Element i of an integer (or bool) tensor, as int64 bits. */
static int64_t
get_i64(const struct qr_tensor *t, size_t i)
{
	const void *p = t->data;

	switch (t->dtype) {
	case QR_DT_INT8: return ((const int8_t *)p)[i];
	case QR_DT_INT16: return ((const int16_t *)p)[i];
	case QR_DT_INT32: return ((const int32_t *)p)[i];
	case QR_DT_INT64: return ((const int64_t *)p)[i];
	case QR_DT_UINT8:
	case QR_DT_BOOL: return ((const uint8_t *)p)[i];
	case QR_DT_UINT16: return ((const uint16_t *)p)[i];
	case QR_DT_UINT32: return ((const uint32_t *)p)[i];
	case QR_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
	default: QR_ASSERT(!"not an integer dtype");
	}
	return 0;
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
		return copy_run(c, d);
	if (x->dtype == QR_DT_FLOAT && y->dtype == QR_DT_FLOAT16) {
		const float *s = x->data;
		uint16_t *o = y->data;

		for (i = 0; i < n; i++)
			o[i] = qr_f32_to_f16(s[i]);
		return QR_OK;
	}
	for (i = 0; i < n; i++) {
		if (xi && yi)
			set_i64(y, i, get_i64(x, i));
		else if (yi)
			set_i64(y, i, f2i(qr_op_get(x, i), y->dtype));
		else if (xi && x->dtype == QR_DT_UINT64)
			qr_op_set(y, i, (double)(uint64_t)get_i64(x, i));
		else if (xi)
			qr_op_set(y, i, (double)get_i64(x, i));
		else
			qr_op_set(y, i, qr_op_get(x, i));
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_cast = {
	.domain = "", .name = "Cast", .since = 6,
	.check = cast_check, .infer = cast_infer, .run = cast_run,
};

/* ---- Flatten, Reshape, Squeeze, Unsqueeze: copies with a new shape ---- */

static enum qr_status
flatten_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return move_check(c, d, 1, 1, 1, 1);
}

static enum qr_status
flatten_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[2];
	enum qr_status st;
	int axis;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 1), x->ndim, 1,
			&axis);
	if (st != QR_OK)
		return st;
	dims[0] = (int64_t)qr_op_dims_prod(x->dims, 0, axis);
	dims[1] = (int64_t)qr_op_dims_prod(x->dims, axis, x->ndim);
	return qr_tensor_set_shape(c->out[0], x->dtype, 2, dims,
				   qr_op_out_name(c, 0), d);
}

const struct qr_op_desc qr_op_flatten = {
	.domain = "", .name = "Flatten", .since = 1,
	.check = flatten_check, .infer = flatten_infer, .run = copy_run,
};

static enum qr_status
reshape_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 2, 2, 1, 1);

	if (st == QR_OK)
		st = want_index(c, d, 1);
	return st;
}

static enum qr_status
reshape_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	int allowzero = (int)qr_op_attr_int(c, "allowzero", 0);
	int infer_at = -1, i;
	size_t n, known = 1;
	enum qr_status st;
	char buf[128];

	st = qr_op_read_ints(c, d, c->in[1], "shape", dims,
			     QR_TENSOR_MAX_DIMS, &n);
	if (st != QR_OK)
		return st;
	for (i = 0; i < (int)n; i++) {
		if (dims[i] == 0 && !allowzero) {
			if (i >= x->ndim)
				return qr_op_errorf(c, d, QR_ESHAPE, "shape "
						    "dim %d is 0 but the input "
						    "has rank %d", i, x->ndim);
			dims[i] = x->dims[i];
		}
		if (dims[i] == -1) {
			if (infer_at >= 0)
				return qr_op_errorf(c, d, QR_ESHAPE, "shape "
						    "has more than one -1");
			infer_at = i;
			continue;
		}
		if (dims[i] < 0)
			return qr_op_errorf(c, d, QR_ESHAPE, "shape dim %d is "
					    "%lld", i, (long long)dims[i]);
		known *= (size_t)dims[i];
	}
	if (infer_at >= 0) {
		if (known == 0 || x->n_elem % known != 0)
			return qr_op_errorf(c, d, QR_ESHAPE, "cannot reshape "
					    "%s (%zu elements) with a -1 dim",
					    qr_shape_str(x, buf, sizeof buf),
					    x->n_elem);
		dims[infer_at] = (int64_t)(x->n_elem / known);
		known *= (size_t)dims[infer_at];
	}
	if (known != x->n_elem)
		return qr_op_errorf(c, d, QR_ESHAPE, "cannot reshape %s (%zu "
				    "elements) to %zu elements",
				    qr_shape_str(x, buf, sizeof buf), x->n_elem,
				    known);
	return qr_tensor_set_shape(c->out[0], x->dtype, (int)n, dims,
				   qr_op_out_name(c, 0), d);
}

const struct qr_op_desc qr_op_reshape = {
	.domain = "", .name = "Reshape", .since = 5,
	.check = reshape_check, .infer = reshape_infer, .run = copy_run,
};

/* Squeeze/Unsqueeze axes: attribute before opset 13, input from 13. */
static enum qr_status
axes_of(const struct qr_op_call *c, struct qr_diag *d, int64_t *axes,
	size_t *n, int *given)
{
	const int64_t *a;
	size_t i;

	*given = 0;
	*n = 0;
	if (c->opset >= 13) {
		if (!qr_op_has_in(c, 1))
			return QR_OK;
		*given = 1;
		return qr_op_read_ints(c, d, c->in[1], "axes", axes,
				       QR_TENSOR_MAX_DIMS, n);
	}
	a = qr_op_attr_ints(c, "axes", n);
	if (a == NULL)
		return QR_OK;
	if (*n > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_ESHAPE, "too many axes (%zu)",
				    *n);
	*given = 1;
	for (i = 0; i < *n; i++)
		axes[i] = a[i];
	return QR_OK;
}

static enum qr_status
squeeze_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 1, c->opset >= 13 ? 2 : 1, 1, 1);

	if (st == QR_OK)
		st = want_index(c, d, 1);
	return st;
}

static enum qr_status
squeeze_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t axes[QR_TENSOR_MAX_DIMS], dims[QR_TENSOR_MAX_DIMS];
	int drop[QR_TENSOR_MAX_DIMS] = {0}, given, i, r = 0, ax;
	enum qr_status st;
	size_t n, k;

	if ((st = axes_of(c, d, axes, &n, &given)) != QR_OK)
		return st;
	for (k = 0; k < n; k++) {
		if ((st = qr_op_axis(c, d, axes[k], x->ndim, 0, &ax)) != QR_OK)
			return st;
		if (x->dims[ax] != 1)
			return qr_op_errorf(c, d, QR_ESHAPE, "axis %d has size "
					    "%lld, not 1", ax,
					    (long long)x->dims[ax]);
		drop[ax] = 1;
	}
	for (i = 0; i < x->ndim; i++)
		if (!(given ? drop[i] : x->dims[i] == 1))
			dims[r++] = x->dims[i];
	return qr_tensor_set_shape(c->out[0], x->dtype, r, dims,
				   qr_op_out_name(c, 0), d);
}

const struct qr_op_desc qr_op_squeeze = {
	.domain = "", .name = "Squeeze", .since = 1,
	.check = squeeze_check, .infer = squeeze_infer, .run = copy_run,
};

static enum qr_status
unsqueeze_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t axes[QR_TENSOR_MAX_DIMS], dims[QR_TENSOR_MAX_DIMS];
	int ins[QR_TENSOR_MAX_DIMS] = {0}, given, i, r, ax, src = 0;
	enum qr_status st;
	size_t n, k;

	if ((st = axes_of(c, d, axes, &n, &given)) != QR_OK)
		return st;
	if (!given)
		return qr_op_errorf(c, d, QR_EGRAPH, "axes are required");
	r = x->ndim + (int)n;
	if (r > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_ESHAPE, "output rank %d is too "
				    "high", r);
	for (k = 0; k < n; k++) {
		if ((st = qr_op_axis(c, d, axes[k], r, 0, &ax)) != QR_OK)
			return st;
		if (ins[ax])
			return qr_op_errorf(c, d, QR_EGRAPH, "axis %d is "
					    "repeated", ax);
		ins[ax] = 1;
	}
	for (i = 0; i < r; i++)
		dims[i] = ins[i] ? 1 : x->dims[src++];
	return qr_tensor_set_shape(c->out[0], x->dtype, r, dims,
				   qr_op_out_name(c, 0), d);
}

const struct qr_op_desc qr_op_unsqueeze = {
	.domain = "", .name = "Unsqueeze", .since = 1,
	.check = squeeze_check, .infer = unsqueeze_infer, .run = copy_run,
};

/* ---- Transpose ---- */

/* The permutation: the attribute, or reversed axes. */
static enum qr_status
transpose_perm(const struct qr_op_call *c, struct qr_diag *d, int rank,
	       int *perm)
{
	const int64_t *p;
	int seen[QR_TENSOR_MAX_DIMS] = {0}, i;
	size_t n;

	p = qr_op_attr_ints(c, "perm", &n);
	if (p == NULL) {
		for (i = 0; i < rank; i++)
			perm[i] = rank - 1 - i;
		return QR_OK;
	}
	if ((int)n != rank)
		return qr_op_errorf(c, d, QR_ESHAPE, "perm has %zu entries for "
				    "rank %d", n, rank);
	for (i = 0; i < rank; i++) {
		if (p[i] < 0 || p[i] >= rank || seen[p[i]])
			return qr_op_errorf(c, d, QR_EGRAPH, "perm is not a "
					    "permutation of 0..%d", rank - 1);
		seen[p[i]] = 1;
		perm[i] = (int)p[i];
	}
	return QR_OK;
}

static enum qr_status
transpose_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	int perm[QR_TENSOR_MAX_DIMS], i;
	enum qr_status st;

	if ((st = transpose_perm(c, d, x->ndim, perm)) != QR_OK)
		return st;
	for (i = 0; i < x->ndim; i++)
		dims[i] = x->dims[perm[i]];
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
transpose_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t st_in[QR_TENSOR_MAX_DIMS], st[QR_TENSOR_MAX_DIMS];
	int perm[QR_TENSOR_MAX_DIMS], i;

	transpose_perm(c, d, x->ndim, perm);
	dense_strides(x->ndim, x->dims, st_in);
	for (i = 0; i < x->ndim; i++)
		st[i] = st_in[perm[i]];
	strided_copy(c->out[0]->data, x->data, qr_dtype_size(x->dtype),
		     x->ndim, c->out[0]->dims, 0, st);
	return QR_OK;
}

const struct qr_op_desc qr_op_transpose = {
	.domain = "", .name = "Transpose", .since = 1,
	.check = flatten_check, .infer = transpose_infer,
	.run = transpose_run,
};

/* ---- Concat ---- */

static enum qr_status
concat_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 1, 4096, 1, 1);
	size_t i;

	for (i = 1; st == QR_OK && i < c->n_in; i++) {
		if (!qr_op_has_in(c, i))
			return qr_op_errorf(c, d, QR_EGRAPH, "input %zu is "
					    "empty", i);
		st = qr_op_same_dtype(c, d, 0, i);
	}
	if (st == QR_OK && c->opset >= 4 && !qr_op_has_attr(c, "axis"))
		return qr_op_errorf(c, d, QR_EGRAPH, "attribute axis is "
				    "required");
	return st;
}

static enum qr_status
concat_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	char a[128], b[128];
	int axis, i;
	size_t k;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 1), x->ndim, 0,
			&axis);
	if (st != QR_OK)
		return st;
	memcpy(dims, x->dims, sizeof dims);
	for (k = 1; k < c->n_in; k++) {
		const struct qr_tensor *t = c->in[k];
		int bad = t->ndim != x->ndim;

		for (i = 0; !bad && i < x->ndim; i++)
			if (i != axis && t->dims[i] != x->dims[i])
				bad = 1;
		if (bad)
			return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s "
					    "does not concatenate with input "
					    "'%s' %s on axis %d",
					    qr_op_in_name(c, k),
					    qr_shape_str(t, a, sizeof a),
					    qr_op_in_name(c, 0),
					    qr_shape_str(x, b, sizeof b), axis);
		dims[axis] += t->dims[axis];
	}
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
concat_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0];
	size_t es = qr_dtype_size(y->dtype), outer, off = 0, row, k, o;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", 1), y->ndim, 0, &axis);
	outer = qr_op_dims_prod(y->dims, 0, axis);
	row = qr_op_dims_prod(y->dims, axis, y->ndim) * es;
	for (k = 0; k < c->n_in; k++) {
		const struct qr_tensor *t = c->in[k];
		size_t chunk = qr_op_dims_prod(t->dims, axis, t->ndim) * es;

		for (o = 0; chunk > 0 && o < outer; o++)
			memcpy((char *)y->data + o * row + off,
			       (const char *)t->data + o * chunk, chunk);
		off += chunk;
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_concat = {
	.domain = "", .name = "Concat", .since = 4,
	.check = concat_check, .infer = concat_infer, .run = concat_run,
};

/* ---- Split ---- */

static enum qr_status
split_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 1, c->opset >= 13 ? 2 : 1, 1,
				       4096);

	if (st == QR_OK)
		st = want_index(c, d, 1);
	if (st == QR_OK && c->opset >= 18 && qr_op_has_attr(c, "num_outputs")
	    && qr_op_attr_int(c, "num_outputs", 0) != (int64_t)c->n_out)
		return qr_op_errorf(c, d, QR_EGRAPH, "num_outputs %lld but "
				    "%zu outputs", (long long)qr_op_attr_int(
				    c, "num_outputs", 0), c->n_out);
	return st;
}

/* Sizes of the parts along the axis of length len. */
static enum qr_status
split_sizes(const struct qr_op_call *c, struct qr_diag *d, int64_t len,
	    int64_t *sizes)
{
	int64_t tmp[4096];
	const int64_t *s = NULL;
	size_t n = 0, k;
	int64_t sum = 0;
	enum qr_status st;

	if (c->opset >= 13 && qr_op_has_in(c, 1)) {
		st = qr_op_read_ints(c, d, c->in[1], "split", tmp, 4096, &n);
		if (st != QR_OK)
			return st;
		s = tmp;
	} else if (c->opset < 13) {
		s = qr_op_attr_ints(c, "split", &n);
	}
	if (s != NULL) {
		if (n != c->n_out)
			return qr_op_errorf(c, d, QR_ESHAPE, "split has %zu "
					    "sizes for %zu outputs", n,
					    c->n_out);
		for (k = 0; k < n; k++) {
			if (s[k] < 0)
				return qr_op_errorf(c, d, QR_ESHAPE, "split "
						    "size %lld is negative",
						    (long long)s[k]);
			sizes[k] = s[k];
			sum += s[k];
		}
		if (sum != len)
			return qr_op_errorf(c, d, QR_ESHAPE, "split sizes add "
					    "up to %lld, the axis has %lld",
					    (long long)sum, (long long)len);
		return QR_OK;
	}
	/* Equal parts; from opset 18 the last may be smaller. */
	n = c->n_out;
	if (len % (int64_t)n != 0 && c->opset < 18)
		return qr_op_errorf(c, d, QR_ESHAPE, "axis of %lld does not "
				    "split into %zu equal parts",
				    (long long)len, n);
	{
		int64_t part = (len + (int64_t)n - 1) / (int64_t)n;

		for (k = 0; k < n; k++) {
			int64_t left = len - sum;

			sizes[k] = left < part ? left : part;
			sum += sizes[k];
		}
	}
	return QR_OK;
}

static enum qr_status
split_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t sizes[4096], dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int axis;
	size_t k;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0,
			&axis);
	if (st == QR_OK)
		st = split_sizes(c, d, x->dims[axis], sizes);
	for (k = 0; st == QR_OK && k < c->n_out; k++) {
		memcpy(dims, x->dims, sizeof dims);
		dims[axis] = sizes[k];
		st = qr_tensor_set_shape(c->out[k], x->dtype, x->ndim, dims,
					 qr_op_out_name(c, k), d);
	}
	return st;
}

static enum qr_status
split_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	size_t es = qr_dtype_size(x->dtype), outer, row, off = 0, k, o;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0, &axis);
	outer = qr_op_dims_prod(x->dims, 0, axis);
	row = qr_op_dims_prod(x->dims, axis, x->ndim) * es;
	for (k = 0; k < c->n_out; k++) {
		struct qr_tensor *y = c->out[k];
		size_t chunk = qr_op_dims_prod(y->dims, axis, y->ndim) * es;

		for (o = 0; chunk > 0 && o < outer; o++)
			memcpy((char *)y->data + o * chunk,
			       (const char *)x->data + o * row + off, chunk);
		off += chunk;
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_split = {
	.domain = "", .name = "Split", .since = 2,
	.check = split_check, .infer = split_infer, .run = split_run,
};

/* ---- Slice ---- */

/* A resolved slice: per axis start, step and count. */
struct slice {
	int64_t start[QR_TENSOR_MAX_DIMS];
	int64_t step[QR_TENSOR_MAX_DIMS];
	int64_t count[QR_TENSOR_MAX_DIMS];
};

static enum qr_status
slice_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	size_t i;

	st = move_check(c, d, c->opset >= 10 ? 3 : 1,
			c->opset >= 10 ? 5 : 1, 1, 1);
	for (i = 1; st == QR_OK && i < c->n_in; i++)
		st = want_index(c, d, i);
	return st;
}

/*
 * Resolve starts/ends/axes/steps against x's shape, as numpy does:
 * negative indices count from the end, then starts and ends are clamped
 * to [0, dim] for positive steps and [-1, dim - 1] for negative ones.
 */
static enum qr_status
slice_resolve(const struct qr_op_call *c, struct qr_diag *d,
	      const struct qr_tensor *x, struct slice *s)
{
	int64_t starts[QR_TENSOR_MAX_DIMS], ends[QR_TENSOR_MAX_DIMS];
	int64_t axes[QR_TENSOR_MAX_DIMS], steps[QR_TENSOR_MAX_DIMS];
	size_t n, ne, na, ns, k;
	int seen[QR_TENSOR_MAX_DIMS] = {0}, i, ax;
	enum qr_status st = QR_OK;

	if (c->opset >= 10) {
		if ((st = qr_op_read_ints(c, d, c->in[1], "starts", starts,
					  QR_TENSOR_MAX_DIMS, &n)) ||
		    (st = qr_op_read_ints(c, d, c->in[2], "ends", ends,
					  QR_TENSOR_MAX_DIMS, &ne)))
			return st;
		na = ns = n;
		if (qr_op_has_in(c, 3) &&
		    (st = qr_op_read_ints(c, d, c->in[3], "axes", axes,
					  QR_TENSOR_MAX_DIMS, &na)))
			return st;
		else if (!qr_op_has_in(c, 3))
			for (k = 0; k < n; k++)
				axes[k] = (int64_t)k;
		if (qr_op_has_in(c, 4) &&
		    (st = qr_op_read_ints(c, d, c->in[4], "steps", steps,
					  QR_TENSOR_MAX_DIMS, &ns)))
			return st;
		else if (!qr_op_has_in(c, 4))
			for (k = 0; k < n; k++)
				steps[k] = 1;
	} else {
		const int64_t *a;

		a = qr_op_attr_ints(c, "starts", &n);
		if (n > QR_TENSOR_MAX_DIMS)
			return qr_op_errorf(c, d, QR_ESHAPE, "too many starts");
		if (n > 0)	/* a may be NULL when n == 0 */
			memcpy(starts, a, n * sizeof *a);
		a = qr_op_attr_ints(c, "ends", &ne);
		if (ne == n && n > 0)
			memcpy(ends, a, n * sizeof *a);
		a = qr_op_attr_ints(c, "axes", &na);
		if (a == NULL) {
			na = n;
			for (k = 0; k < n; k++)
				axes[k] = (int64_t)k;
		} else if (na == n && n > 0) {
			memcpy(axes, a, n * sizeof *a);
		}
		ns = n;
		for (k = 0; k < n; k++)
			steps[k] = 1;
	}
	if (ne != n || na != n || ns != n)
		return qr_op_errorf(c, d, QR_ESHAPE, "starts, ends, axes and "
				    "steps differ in length (%zu, %zu, %zu, "
				    "%zu)", n, ne, na, ns);
	for (i = 0; i < x->ndim; i++) {
		s->start[i] = 0;
		s->step[i] = 1;
		s->count[i] = x->dims[i];
	}
	for (k = 0; k < n; k++) {
		int64_t dim, lo, hi, b, e;

		if ((st = qr_op_axis(c, d, axes[k], x->ndim, 0, &ax)))
			return st;
		if (seen[ax])
			return qr_op_errorf(c, d, QR_EGRAPH, "axis %d is "
					    "repeated", ax);
		seen[ax] = 1;
		if (steps[k] == 0)
			return qr_op_errorf(c, d, QR_EGRAPH, "step is 0 on "
					    "axis %d", ax);
		dim = x->dims[ax];
		b = starts[k];
		e = ends[k];
		if (b < 0)
			b += dim;
		if (e < 0)
			e += dim;
		if (steps[k] > 0) {
			lo = 0;
			hi = dim;
		} else {
			lo = -1;
			hi = dim - 1;
		}
		b = b < lo ? lo : b > hi ? hi : b;
		e = e < lo ? lo : e > hi ? hi : e;
		s->start[ax] = b;
		s->step[ax] = steps[k];
		if (steps[k] > 0)
			s->count[ax] = e > b ? (e - b + steps[k] - 1) /
				steps[k] : 0;
		else
			s->count[ax] = b > e ? (b - e - steps[k] - 1) /
				-steps[k] : 0;
	}
	return QR_OK;
}

static enum qr_status
slice_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct slice s;
	enum qr_status st = slice_resolve(c, d, c->in[0], &s);

	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype,
				   c->in[0]->ndim, s.count,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
slice_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dst[QR_TENSOR_MAX_DIMS], st[QR_TENSOR_MAX_DIMS], off = 0;
	struct slice s;
	int i;

	slice_resolve(c, d, x, &s);
	dense_strides(x->ndim, x->dims, dst);
	for (i = 0; i < x->ndim; i++) {
		off += s.start[i] * dst[i];
		st[i] = s.step[i] * dst[i];
	}
	strided_copy(c->out[0]->data, x->data, qr_dtype_size(x->dtype),
		     x->ndim, s.count, off, st);
	return QR_OK;
}

const struct qr_op_desc qr_op_slice = {
	.domain = "", .name = "Slice", .since = 1,
	.check = slice_check, .infer = slice_infer, .run = slice_run,
};

/* ---- Gather ---- */

static enum qr_status
gather_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 2, 2, 1, 1);

	if (st == QR_OK)
		st = want_index(c, d, 1);
	return st;
}

static enum qr_status
gather_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int axis, i, r = 0;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0,
			&axis);
	if (st != QR_OK)
		return st;
	if (x->ndim - 1 + ix->ndim > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_ESHAPE, "output rank is too high");
	for (i = 0; i < axis; i++)
		dims[r++] = x->dims[i];
	for (i = 0; i < ix->ndim; i++)
		dims[r++] = ix->dims[i];
	for (i = axis + 1; i < x->ndim; i++)
		dims[r++] = x->dims[i];
	return qr_tensor_set_shape(c->out[0], x->dtype, r, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
gather_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	size_t es = qr_dtype_size(x->dtype), outer, inner, o, k;
	char *y = c->out[0]->data;
	int64_t len;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0, &axis);
	outer = qr_op_dims_prod(x->dims, 0, axis);
	inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim) * es;
	len = x->dims[axis];
	if (c->out[0]->n_elem == 0)	/* y may be NULL: nothing to copy */
		inner = 0;
	for (k = 0; k < ix->n_elem; k++) {
		int64_t v = get_i64(ix, k);

		if (v < -len || v >= len)
			return qr_op_errorf(c, d, QR_ESHAPE, "index %lld is out "
					    "of range for axis %d of size %lld",
					    (long long)v, axis, (long long)len);
	}
	for (o = 0; o < outer; o++) {
		for (k = 0; k < ix->n_elem; k++) {
			int64_t v = get_i64(ix, k);

			if (v < 0)
				v += len;
			if (inner == 0)
				continue;
			memcpy(y, (const char *)x->data +
			       (o * (size_t)len + (size_t)v) * inner, inner);
			y += inner;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_gather = {
	.domain = "", .name = "Gather", .since = 1,
	.check = gather_check, .infer = gather_infer, .run = gather_run,
};

/* ---- Pad ---- */

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

static enum qr_status
pad_check(const struct qr_op_call *c, struct qr_diag *d)
{
	const char *mode = qr_op_attr_str(c, "mode", "constant");
	enum qr_status st;

	st = move_check(c, d, c->opset >= 11 ? 2 : 1,
			c->opset >= 18 ? 4 : c->opset >= 11 ? 3 : 1, 1, 1);
	if (st == QR_OK)
		st = want_index(c, d, 1);
	if (st == QR_OK && c->opset >= 18)
		st = want_index(c, d, 3);
	if (st == QR_OK && qr_op_has_in(c, 2))
		st = qr_op_same_dtype(c, d, 0, 2);
	if (st != QR_OK)
		return st;
	if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 &&
	    strcmp(mode, "edge") != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "mode '%s' is not "
				    "supported", mode);
	return QR_OK;
}

/* Pads as [begin_0.., end_0..] over all of x's axes. */
static enum qr_status
pad_resolve(const struct qr_op_call *c, struct qr_diag *d,
	    const struct qr_tensor *x, int64_t *pads)
{
	int64_t p[2 * QR_TENSOR_MAX_DIMS], axes[QR_TENSOR_MAX_DIMS];
	size_t n, na, k;
	enum qr_status st;
	int r = x->ndim, ax;

	if (c->opset >= 11) {
		st = qr_op_read_ints(c, d, c->in[1], "pads", p,
				     2 * QR_TENSOR_MAX_DIMS, &n);
		if (st != QR_OK)
			return st;
	} else {
		const int64_t *a = qr_op_attr_ints(c, "pads", &n);

		if (n > 2 * QR_TENSOR_MAX_DIMS)
			return qr_op_errorf(c, d, QR_ESHAPE, "too many pads");
		if (n > 0)
			memcpy(p, a, n * sizeof *a);
	}
	na = (size_t)r;
	for (k = 0; k < na; k++)
		axes[k] = (int64_t)k;
	if (c->opset >= 18 && qr_op_has_in(c, 3)) {
		st = qr_op_read_ints(c, d, c->in[3], "axes", axes,
				     QR_TENSOR_MAX_DIMS, &na);
		if (st != QR_OK)
			return st;
	}
	if (n != 2 * na)
		return qr_op_errorf(c, d, QR_ESHAPE, "%zu pads for %zu axes",
				    n, na);
	memset(pads, 0, 2 * (size_t)r * sizeof *pads);
	for (k = 0; k < na; k++) {
		if ((st = qr_op_axis(c, d, axes[k], r, 0, &ax)) != QR_OK)
			return st;
		pads[ax] = p[k];
		pads[r + ax] = p[na + k];
	}
	return QR_OK;
}

static enum qr_status
pad_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t pads[2 * QR_TENSOR_MAX_DIMS], dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st = pad_resolve(c, d, x, pads);
	int i;

	if (st != QR_OK)
		return st;
	for (i = 0; i < x->ndim; i++) {
		dims[i] = x->dims[i] + pads[i] + pads[x->ndim + i];
		if (dims[i] < 0)
			return qr_op_errorf(c, d, QR_ESHAPE, "pads make axis %d "
					    "negative", i);
	}
	if (strcmp(qr_op_attr_str(c, "mode", "constant"), "constant") != 0)
		for (i = 0; i < x->ndim; i++)
			if (x->dims[i] == 0 && dims[i] > 0)
				return qr_op_errorf(c, d, QR_ESHAPE, "cannot "
						    "pad an empty axis %d in "
						    "mode %s", i,
						    qr_op_attr_str(c, "mode",
								   ""));
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

/* Source index for out-of-range i on an axis of length n, or -1 for the
 * constant. */
static int64_t
pad_index(int64_t i, int64_t n, enum pad_mode mode)
{
	if (i >= 0 && i < n)
		return i;
	if (mode == PAD_CONSTANT)
		return -1;
	if (mode == PAD_EDGE || n == 1)
		return i < 0 ? 0 : n - 1;
	/* reflect, period 2n - 2 */
	{
		int64_t p = 2 * n - 2;

		i %= p;
		if (i < 0)
			i += p;
		return i < n ? i : p - i;
	}
}

static enum qr_status
pad_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	const char *ms = qr_op_attr_str(c, "mode", "constant");
	enum pad_mode mode = strcmp(ms, "reflect") == 0 ? PAD_REFLECT :
		strcmp(ms, "edge") == 0 ? PAD_EDGE : PAD_CONSTANT;
	int64_t pads[2 * QR_TENSOR_MAX_DIMS], xs[QR_TENSOR_MAX_DIMS];
	int64_t idx[QR_TENSOR_MAX_DIMS] = {0};
	size_t es = qr_dtype_size(x->dtype), k;
	uint8_t value[16] = {0};
	char *dst = y->data;
	int64_t last, mid_lo, mid_hi;
	int r = x->ndim, i;

	pad_resolve(c, d, x, pads);
	dense_strides(r, x->dims, xs);
	if (c->opset >= 11 && qr_op_has_in(c, 2) && c->in[2]->n_elem > 0)
		memcpy(value, c->in[2]->data, es);
	else if (c->opset < 11 && x->dtype == QR_DT_FLOAT) {
		float v = qr_op_attr_float(c, "value", 0);

		memcpy(value, &v, sizeof v);
	} else if (c->opset < 11) {
		struct qr_tensor tmp = *y;

		tmp.data = value;
		qr_op_set(&tmp, 0, qr_op_attr_float(c, "value", 0));
	}
	if (r == 0) {
		copy_elem(dst, x->data, es);
		return QR_OK;
	}
	/* row by row along the last axis: the part inside x in one copy,
	 * the padding on either side value by value */
	last = y->dims[r - 1];
	mid_lo = pads[r - 1] < 0 ? 0 : pads[r - 1];
	mid_hi = pads[r - 1] + x->dims[r - 1];
	mid_hi = mid_hi > last ? last : mid_hi;
	for (k = 0; last > 0 && k < y->n_elem; k += (size_t)last) {
		char *row = dst + k * es;
		int64_t off = 0, j;

		for (i = 0; i + 1 < r; i++) {
			int64_t s = pad_index(idx[i] - pads[i], x->dims[i],
					      mode);

			if (s < 0) {
				off = -1;
				break;
			}
			off += s * xs[i];
		}
		for (j = 0; j < last; j++) {
			int64_t s;

			if (off >= 0 && j == mid_lo && mid_lo < mid_hi) {
				memcpy(row + j * (int64_t)es, (const char *)
				       x->data + (off + j - pads[r - 1]) *
				       (int64_t)es, (size_t)(mid_hi - mid_lo) *
				       es);
				j = mid_hi - 1;
				continue;
			}
			s = off < 0 ? -1 : pad_index(j - pads[r - 1],
						     x->dims[r - 1], mode);
			copy_elem(row + j * (int64_t)es, s < 0 ?
				  (const void *)value : (const char *)x->data +
				  (off + s) * (int64_t)es, es);
		}
		for (i = r - 2; i >= 0; i--) {
			if (++idx[i] < y->dims[i])
				break;
			idx[i] = 0;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_pad = {
	.domain = "", .name = "Pad", .since = 2,
	.check = pad_check, .infer = pad_infer, .run = pad_run,
};

/* ---- Expand ---- */

static enum qr_status
expand_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 2, 2, 1, 1);

	if (st == QR_OK)
		st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_INT64));
	return st;
}

static enum qr_status
expand_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor shape = {0};
	struct qr_tensor *both[2];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	size_t n;
	int ndim;

	st = qr_op_read_ints(c, d, c->in[1], "shape", shape.dims,
			     QR_TENSOR_MAX_DIMS, &n);
	if (st != QR_OK)
		return st;
	shape.ndim = (int)n;
	both[0] = c->in[0];
	both[1] = &shape;
	st = qr_op_broadcast_shape(c, d, both, 2, &ndim, dims);
	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

/* Strides (elements) reading x broadcast to (ndim, dims). */
static void
broadcast_strides(const struct qr_tensor *x, int ndim, int64_t *st)
{
	int64_t s = 1;
	int i;

	for (i = ndim - 1; i >= 0; i--) {
		int j = i - (ndim - x->ndim);

		if (j < 0 || x->dims[j] == 1) {
			st[i] = 0;
		} else {
			st[i] = s;
			s *= x->dims[j];
		}
	}
}

static enum qr_status
expand_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0];
	int64_t st[QR_TENSOR_MAX_DIMS];

	broadcast_strides(c->in[0], y->ndim, st);
	strided_copy(y->data, c->in[0]->data, qr_dtype_size(y->dtype),
		     y->ndim, y->dims, 0, st);
	return QR_OK;
}

const struct qr_op_desc qr_op_expand = {
	.domain = "", .name = "Expand", .since = 8,
	.check = expand_check, .infer = expand_infer, .run = expand_run,
};

/* ---- Where ---- */

static enum qr_status
where_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 3, 3, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM(QR_DT_BOOL))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_ANY)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 1, 2)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 1);
	return QR_OK;
}

static enum qr_status
where_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int ndim;

	st = qr_op_broadcast_shape(c, d, c->in, 3, &ndim, dims);
	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[1]->dtype, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
where_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0];
	size_t es = qr_dtype_size(y->dtype), i;
	const uint8_t *cond = c->in[0]->data;
	const char *a = c->in[1]->data, *b = c->in[2]->data;
	char *dst = y->data;
	struct qr_bcast it;

	qr_bcast_init(&it, y->ndim, y->dims, c->in, 3);
	do {
		for (i = 0; i < it.inner; i++) {
			size_t o = it.out_off + i;

			if (cond[it.off[0] + i * it.step[0]])
				copy_elem(dst + o * es, a + (it.off[1] + i *
					  it.step[1]) * es, es);
			else
				copy_elem(dst + o * es, b + (it.off[2] + i *
					  it.step[2]) * es, es);
		}
	} while (qr_bcast_next(&it));
	return QR_OK;
}

const struct qr_op_desc qr_op_where = {
	.domain = "", .name = "Where", .since = 9,
	.check = where_check, .infer = where_infer, .run = where_run,
};

/* ---- GatherElements ---- */

static enum qr_status
gather_elements_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	enum qr_status st;
	int axis;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0,
			&axis);
	if (st != QR_OK)
		return st;
	if (ix->ndim != x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "indices have rank %d, "
				    "data rank %d", ix->ndim, x->ndim);
	return qr_tensor_set_shape(c->out[0], x->dtype, ix->ndim, ix->dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
gather_elements_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	int64_t xs[QR_TENSOR_MAX_DIMS], idx[QR_TENSOR_MAX_DIMS] = {0};
	size_t es = qr_dtype_size(x->dtype), k;
	char *y = c->out[0]->data;
	int axis, i;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0, &axis);
	dense_strides(x->ndim, x->dims, xs);
	for (k = 0; k < ix->n_elem; k++) {
		int64_t v = get_i64(ix, k), off = 0;

		if (v < -x->dims[axis] || v >= x->dims[axis])
			return qr_op_errorf(c, d, QR_ESHAPE, "index %lld is out "
					    "of range for axis %d of size %lld",
					    (long long)v, axis,
					    (long long)x->dims[axis]);
		if (v < 0)
			v += x->dims[axis];
		for (i = 0; i < x->ndim; i++) {
			int64_t p = i == axis ? v : idx[i];

			if (i != axis && p >= x->dims[i])
				return qr_op_errorf(c, d, QR_ESHAPE, "indices "
						    "exceed data on axis %d", i);
			off += p * xs[i];
		}
		copy_elem(y + k * es, (const char *)x->data + off * (int64_t)es,
			  es);
		for (i = ix->ndim - 1; i >= 0; i--) {
			if (++idx[i] < ix->dims[i])
				break;
			idx[i] = 0;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_gather_elements = {
	.domain = "", .name = "GatherElements", .since = 11,
	.check = gather_check, .infer = gather_elements_infer,
	.run = gather_elements_run,
};

/* ---- Trilu ---- */

static enum qr_status
trilu_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 1, 2, 1, 1);

	if (st == QR_OK)
		st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_INT64));
	return st;
}

static enum qr_status
trilu_infer(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->in[0]->ndim < 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "input must have rank >= "
				    "2, not %d", c->in[0]->ndim);
	if (qr_op_has_in(c, 1) && c->in[1]->n_elem != 1)
		return qr_op_errorf(c, d, QR_ESHAPE, "k must hold one value");
	return same_infer(c, d);
}

/* Keep element (i, j) of each matrix when j - i >= k (upper) or
 * j - i <= k (lower); zero the rest. */
static enum qr_status
trilu_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	int upper = (int)qr_op_attr_int(c, "upper", 1);
	int64_t k = qr_op_has_in(c, 1) ? get_i64(c->in[1], 0) : 0;
	int64_t rows = x->dims[x->ndim - 2], cols = x->dims[x->ndim - 1];
	size_t es = qr_dtype_size(x->dtype), n = rows * cols, b, nb;
	int64_t i, j;

	nb = n ? x->n_elem / n : 0;
	copy_run(c, d);
	for (b = 0; b < nb; b++)
		for (i = 0; i < rows; i++)
			for (j = 0; j < cols; j++)
				if (upper ? j - i < k : j - i > k)
					memset((char *)y->data + (b * n +
					       (size_t)(i * cols + j)) * es, 0,
					       es);
	return QR_OK;
}

const struct qr_op_desc qr_op_trilu = {
	.domain = "", .name = "Trilu", .since = 14,
	.check = trilu_check, .infer = trilu_infer, .run = trilu_run,
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

/* ---- Range ---- */

static enum qr_status
range_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	size_t i;

	if ((st = qr_op_arity(c, d, 3, 3, 1, 1)) != QR_OK)
		return st;
	for (i = 0; i < 3; i++)
		if ((st = qr_op_want_dtype(c, d, i, QR_DTM_FLOATS |
					   QR_DTM_INDEX |
					   QR_DTM(QR_DT_INT16))) != QR_OK ||
		    (st = qr_op_same_dtype(c, d, 0, i)) != QR_OK)
			return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
range_infer(struct qr_op_call *c, struct qr_diag *d)
{
	double start, limit, delta, n;
	int64_t len;
	size_t i;

	for (i = 0; i < 3; i++)
		if (c->in[i]->n_elem != 1)
			return qr_op_errorf(c, d, QR_ESHAPE, "input %zu '%s' "
					    "must be a scalar", i,
					    qr_op_in_name(c, i));
	start = qr_op_get(c->in[0], 0);
	limit = qr_op_get(c->in[1], 0);
	delta = qr_op_get(c->in[2], 0);
	if (delta == 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "delta is 0");
	n = ceil((limit - start) / delta);
	if (!(n < 1e12))
		return qr_op_errorf(c, d, QR_ESHAPE, "range of %g elements is "
				    "too long", n);
	len = n > 0 ? (int64_t)n : 0;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, 1, &len,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
range_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0];
	size_t i;

	if (y->dtype == QR_DT_FLOAT) {
		/* accumulate in float, as the reference does */
		float v = (float)qr_op_get(c->in[0], 0);
		float step = (float)qr_op_get(c->in[2], 0);

		for (i = 0; i < y->n_elem; i++, v += step)
			((float *)y->data)[i] = v;
		return QR_OK;
	}
	for (i = 0; i < y->n_elem; i++)
		qr_op_set(y, i, qr_op_get(c->in[0], 0) +
			  (double)i * qr_op_get(c->in[2], 0));
	return QR_OK;
}

const struct qr_op_desc qr_op_range = {
	.domain = "", .name = "Range", .since = 11,
	.check = range_check, .infer = range_infer, .run = range_run,
};

/* ---- Tile ---- */

static enum qr_status
tile_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 2, 2, 1, 1);

	if (st == QR_OK)
		st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_INT64));
	return st;
}

static enum qr_status
tile_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t rep[QR_TENSOR_MAX_DIMS], dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	size_t n, m;
	int i;

	st = qr_op_read_ints(c, d, c->in[1], "repeats", rep,
			     QR_TENSOR_MAX_DIMS, &n);
	if (st != QR_OK)
		return st;
	if ((int)n != x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "%zu repeats for rank %d",
				    n, x->ndim);
	for (i = 0; i < x->ndim; i++) {
		if (rep[i] < 0)
			return qr_op_errorf(c, d, QR_ESHAPE, "repeat %lld is "
					    "negative", (long long)rep[i]);
		if (qr_mul_overflow((size_t)x->dims[i], (size_t)rep[i], &m) ||
		    m > INT64_MAX)
			return qr_op_errorf(c, d, QR_ESHAPE, "dim %lld times "
					    "repeat %lld overflows",
					    (long long)x->dims[i],
					    (long long)rep[i]);
		dims[i] = (int64_t)m;
	}
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
tile_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	int64_t ys[QR_TENSOR_MAX_DIMS], idx[QR_TENSOR_MAX_DIMS];
	size_t es = qr_dtype_size(x->dtype), row, nrows, k;
	char *yd = y->data;
	const char *xd = x->data;
	int i, j, n = x->ndim;

	(void)d;
	if (y->n_elem == 0)
		return QR_OK;
	if (n == 0) {
		memcpy(yd, xd, es);
		return QR_OK;
	}
	/*
	 * Block copies, innermost axis first: each row of x goes to its
	 * place in y (its index along every other axis as in x) repeated
	 * along the last axis; then, from the second-to-last axis out, the
	 * filled block along axis i (contiguous, as every inner axis is
	 * whole by then) is copied repeats[i] - 1 times after itself.
	 */
	dense_strides(n, y->dims, ys);
	row = (size_t)x->dims[n - 1] * es;
	nrows = x->n_elem / (size_t)x->dims[n - 1];
	memset(idx, 0, sizeof idx);
	for (k = 0; k < nrows; k++) {
		char *dst = yd;
		size_t r;

		for (j = 0; j < n - 1; j++)
			dst += (size_t)(idx[j] * ys[j]) * es;
		for (r = 0; r < (size_t)(y->dims[n - 1] / x->dims[n - 1]); r++)
			memcpy(dst + r * row, xd + k * row, row);
		for (j = n - 2; j >= 0 && ++idx[j] == x->dims[j]; j--)
			idx[j] = 0;
	}
	for (i = n - 2; i >= 0; i--) {
		size_t block = (size_t)(x->dims[i] * ys[i]) * es;
		size_t reps = (size_t)(y->dims[i] / x->dims[i]), outer = 1, r;

		for (j = 0; j < i; j++)
			outer *= (size_t)x->dims[j];
		memset(idx, 0, sizeof idx);
		for (k = 0; k < outer; k++) {
			char *base = yd;

			for (j = 0; j < i; j++)
				base += (size_t)(idx[j] * ys[j]) * es;
			for (r = 1; r < reps; r++)
				memcpy(base + r * block, base, block);
			for (j = i - 1; j >= 0 && ++idx[j] == x->dims[j]; j--)
				idx[j] = 0;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_tile = {
	.domain = "", .name = "Tile", .since = 6,
	.check = tile_check, .infer = tile_infer, .run = tile_run,
};

/* ---- DepthToSpace, SpaceToDepth ---- */

static enum qr_status
d2s_check(const struct qr_op_call *c, struct qr_diag *d)
{
	const char *mode = qr_op_attr_str(c, "mode", "DCR");
	enum qr_status st = move_check(c, d, 1, 1, 1, 1);

	if (st != QR_OK)
		return st;
	if (qr_op_attr_int(c, "blocksize", 0) < 1)
		return qr_op_errorf(c, d, QR_EGRAPH, "blocksize must be >= 1");
	if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "mode '%s' is not "
				    "supported", mode);
	return QR_OK;
}

static enum qr_status
d2s_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t b = qr_op_attr_int(c, "blocksize", 1), dims[4];
	int to_space = strcmp(c->node->op_type, "DepthToSpace") == 0;
	char buf[128];

	if (x->ndim != 4 || (to_space ? x->dims[1] % (b * b) != 0 :
			     x->dims[2] % b != 0 || x->dims[3] % b != 0))
		return qr_op_errorf(c, d, QR_ESHAPE, "input %s does not fit "
				    "blocksize %lld",
				    qr_shape_str(x, buf, sizeof buf),
				    (long long)b);
	dims[0] = x->dims[0];
	if (to_space) {
		dims[1] = x->dims[1] / (b * b);
		dims[2] = x->dims[2] * b;
		dims[3] = x->dims[3] * b;
	} else {
		dims[1] = x->dims[1] * b * b;
		dims[2] = x->dims[2] / b;
		dims[3] = x->dims[3] / b;
	}
	return qr_tensor_set_shape(c->out[0], x->dtype, 4, dims,
				   qr_op_out_name(c, 0), d);
}

/*
 * Both are one strided copy over a 6-D view of the output.
 * DepthToSpace, output [N][C'][H][b1][W][b2] from input channel
 * (b1*b + b2)*C' + c' (DCR) or c'*b*b + b1*b + b2 (CRD).
 * SpaceToDepth, output [N][b1][b2][C][H'][W'] from x[n][c][h'*b+b1][w'*b+b2].
 */
static enum qr_status
d2s_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t b = qr_op_attr_int(c, "blocksize", 1);
	int64_t n = x->dims[0], ch = x->dims[1], h = x->dims[2];
	int64_t w = x->dims[3], dims[6], st[6];

	if (strcmp(c->node->op_type, "DepthToSpace") == 0) {
		int64_t co = ch / (b * b);
		int crd = strcmp(qr_op_attr_str(c, "mode", "DCR"), "CRD") == 0;
		int64_t v[6] = {n, co, h, b, w, b};
		int64_t s[6] = {ch * h * w, crd ? b * b * h * w : h * w, w,
				crd ? b * h * w : b * co * h * w, 1,
				crd ? h * w : co * h * w};

		memcpy(dims, v, sizeof v);
		memcpy(st, s, sizeof s);
	} else {
		int64_t v[6] = {n, b, b, ch, h / b, w / b};
		int64_t s[6] = {ch * h * w, w, 1, h * w, b * w, b};

		memcpy(dims, v, sizeof v);
		memcpy(st, s, sizeof s);
	}
	strided_copy(c->out[0]->data, x->data, qr_dtype_size(x->dtype), 6,
		     dims, 0, st);
	return QR_OK;
}

const struct qr_op_desc qr_op_depth_to_space = {
	.domain = "", .name = "DepthToSpace", .since = 1,
	.check = d2s_check, .infer = d2s_infer, .run = d2s_run,
};
const struct qr_op_desc qr_op_space_to_depth = {
	.domain = "", .name = "SpaceToDepth", .since = 1,
	.check = d2s_check, .infer = d2s_infer, .run = d2s_run,
};

/* ---- OneHot ---- */

static enum qr_status
onehot_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 3, 3, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_NUMERIC)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_NUMERIC)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 2, QR_DTM_ANY)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 2);
	return QR_OK;
}

static enum qr_status
onehot_geom(struct qr_op_call *c, struct qr_diag *d, int *axis,
	    int64_t *depth)
{
	const struct qr_tensor *ix = c->in[0];

	if (c->in[1]->n_elem != 1 || c->in[2]->n_elem != 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "depth must hold one "
				    "value and values two");
	*depth = (int64_t)qr_op_get(c->in[1], 0);
	if (*depth < 1)
		return qr_op_errorf(c, d, QR_ESHAPE, "depth %lld is below 1",
				    (long long)*depth);
	if (ix->ndim + 1 > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_ESHAPE, "rank too high");
	return qr_op_axis(c, d, qr_op_attr_int(c, "axis", -1), ix->ndim + 1,
			  0, axis);
}

static enum qr_status
onehot_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *ix = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS], depth;
	enum qr_status st;
	int axis, i, r = 0;

	if ((st = onehot_geom(c, d, &axis, &depth)) != QR_OK)
		return st;
	for (i = 0; i <= ix->ndim; i++)
		dims[i] = i == axis ? depth : ix->dims[r++];
	return qr_tensor_set_shape(c->out[0], c->in[2]->dtype, ix->ndim + 1,
				   dims, qr_op_out_name(c, 0), d);
}

static enum qr_status
onehot_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *ix = c->in[0], *vals = c->in[2];
	struct qr_tensor *y = c->out[0];
	size_t es = qr_dtype_size(y->dtype), outer, inner, o, j, k;
	const char *off_v = vals->data, *on_v = off_v + es;
	int64_t depth;
	int axis;

	onehot_geom(c, d, &axis, &depth);
	outer = qr_op_dims_prod(ix->dims, 0, axis);
	inner = qr_op_dims_prod(ix->dims, axis, ix->ndim);
	for (o = 0; o < outer; o++)
		for (k = 0; k < (size_t)depth; k++)
			for (j = 0; j < inner; j++) {
				int64_t v = (int64_t)qr_op_get(ix,
							       o * inner + j);

				if (v < 0)
					v += depth;
				copy_elem((char *)y->data + ((o * (size_t)depth
					  + k) * inner + j) * es,
					  v == (int64_t)k ? on_v : off_v, es);
			}
	return QR_OK;
}

const struct qr_op_desc qr_op_onehot = {
	.domain = "", .name = "OneHot", .since = 9,
	.check = onehot_check, .infer = onehot_infer, .run = onehot_run,
};

/* ---- EyeLike ---- */

static enum qr_status
eyelike_check(const struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dt = qr_op_attr_int(c, "dtype", 0);
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK)
		return st;
	if (dt != 0 && (dt >= 64 || !(QR_DTM_ANY & QR_DTM(dt))))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "dtype %s is not "
				    "supported", qr_dtype_name((int)dt));
	if (dt == 0 && (st = qr_op_want_dtype(c, d, 0, QR_DTM_ANY)) != QR_OK)
		return st;
	c->out_dtype[0] = dt ? (int)dt : qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
eyelike_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int dt = (int)qr_op_attr_int(c, "dtype", c->in[0]->dtype);

	if (c->in[0]->ndim != 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "input must be 2-D");
	return qr_tensor_set_shape(c->out[0], dt, 2, c->in[0]->dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
eyelike_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0];
	int64_t k = qr_op_attr_int(c, "k", 0), i;

	if (y->nbytes > 0)
		memset(y->data, 0, y->nbytes);
	for (i = 0; i < y->dims[0]; i++)
		if (i + k >= 0 && i + k < y->dims[1])
			qr_op_set(y, (size_t)(i * y->dims[1] + i + k), 1);
	return QR_OK;
}

const struct qr_op_desc qr_op_eyelike = {
	.domain = "", .name = "EyeLike", .since = 9,
	.check = eyelike_check, .infer = eyelike_infer, .run = eyelike_run,
};

/* ---- TopK ---- */

static enum qr_status
topk_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, c->opset >= 10 ? 2 : 1,
			      c->opset >= 10 ? 2 : 1, 2, 2)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_NUMERIC)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_INT64))) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	c->out_dtype[1] = QR_DT_INT64;
	return QR_OK;
}

static enum qr_status
topk_geom(struct qr_op_call *c, struct qr_diag *d, int *axis, int64_t *k)
{
	const struct qr_tensor *x = c->in[0];
	enum qr_status st;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", -1), x->ndim, 0,
			axis);
	if (st != QR_OK)
		return st;
	if (c->opset >= 10) {
		if (c->in[1]->n_elem != 1)
			return qr_op_errorf(c, d, QR_ESHAPE, "K must hold one "
					    "value");
		*k = get_i64(c->in[1], 0);
	} else {
		*k = qr_op_attr_int(c, "k", -1);
	}
	if (*k < 0 || *k > x->dims[*axis])
		return qr_op_errorf(c, d, QR_ESHAPE, "K %lld is outside 0..%lld",
				    (long long)*k, (long long)x->dims[*axis]);
	return QR_OK;
}

static enum qr_status
topk_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS], k;
	enum qr_status st;
	int axis;

	if ((st = topk_geom(c, d, &axis, &k)) != QR_OK)
		return st;
	memcpy(dims, c->in[0]->dims, sizeof dims);
	dims[axis] = k;
	st = qr_tensor_set_shape(c->out[0], c->in[0]->dtype, c->in[0]->ndim,
				 dims, qr_op_out_name(c, 0), d);
	if (st == QR_OK)
		st = qr_tensor_set_shape(c->out[1], QR_DT_INT64,
					 c->in[0]->ndim, dims,
					 qr_op_out_name(c, 1), d);
	return st;
}

struct topk_item {
	double key;  /* the value, negated when the largest come first */
	int64_t idx; /* position along the axis; ties keep lower first */
};

/* Whether x ranks before y: the smaller key, then the lower index; a NaN
 * ranks before every number (ONNX Runtime puts a NaN first, largest or
 * not, though the order of the rest of its row then breaks). */
static int
topk_before(const struct topk_item *x, const struct topk_item *y)
{
	int xn = isnan(x->key), yn = isnan(y->key);

	if (xn || yn)
		return xn && yn ? x->idx < y->idx : xn;
	if (x->key != y->key)
		return x->key < y->key;
	return x->idx < y->idx;
}

static int
topk_cmp(const void *a, const void *b)
{
	return topk_before(a, b) ? -1 : topk_before(b, a) ? 1 : 0;
}

/* Restore the heap h of n items (the last-ranked at the root) below i. */
static void
topk_sift(struct topk_item *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, w = i;
		struct topk_item t;

		if (l < n && topk_before(&h[w], &h[l]))
			w = l;
		if (r < n && topk_before(&h[w], &h[r]))
			w = r;
		if (w == i)
			return;
		t = h[i], h[i] = h[w], h[w] = t;
		i = w;
	}
}

/* The k first-ranked of items[0..len) into items[0..k), in rank order:
 * a heap of the best k seen, its worst at the root, so each other item
 * costs one comparison (retinanet's TopK takes 1000 of 100,000s). */
static void
topk_select(struct topk_item *items, size_t len, size_t k)
{
	size_t q, i;

	if (k == 0)
		return;
	if (k * 4 >= len) {
		qsort(items, len, sizeof *items, topk_cmp);
		return;
	}
	for (i = k / 2 + 1; i-- > 0;)
		topk_sift(items, k, i);
	for (q = k; q < len; q++)
		if (topk_before(&items[q], &items[0])) {
			items[0] = items[q];
			topk_sift(items, k, 0);
		}
	qsort(items, k, sizeof *items, topk_cmp);
}

static enum qr_status
topk_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int largest = (int)qr_op_attr_int(c, "largest", 1);
	size_t outer, len, inner, o, j, q;
	struct topk_item *items;
	int64_t k;
	int axis;

	topk_geom(c, d, &axis, &k);
	outer = qr_op_dims_prod(x->dims, 0, axis);
	len = (size_t)x->dims[axis];
	inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim);
	items = xreallocarray(NULL, len + 1, sizeof *items);
	for (o = 0; o < outer; o++) {
		for (j = 0; j < inner; j++) {
			for (q = 0; q < len; q++) {
				double v = qr_op_get(x, (o * len + q) * inner +
						     j);

				items[q].key = largest ? -v : v;
				items[q].idx = (int64_t)q;
			}
			topk_select(items, len, (size_t)k);
			for (q = 0; q < (size_t)k; q++) {
				size_t p = (o * (size_t)k + q) * inner + j;

				qr_op_set(c->out[0], p, qr_op_get(x, (o * len +
					  (size_t)items[q].idx) * inner + j));
				((int64_t *)c->out[1]->data)[p] = items[q].idx;
			}
		}
	}
	free(items);
	return QR_OK;
}

const struct qr_op_desc qr_op_topk = {
	.domain = "", .name = "TopK", .since = 1,
	.check = topk_check, .infer = topk_infer, .run = topk_run,
};

/* ---- NonZero ---- */

static enum qr_status
nonzero_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 1, 1, 1, 1);

	c->out_dtype[0] = QR_DT_INT64;
	return st;
}

static size_t
count_nonzero(const struct qr_tensor *x)
{
	size_t i, n = 0;

	for (i = 0; i < x->n_elem; i++)
		n += qr_op_get(x, i) != 0;
	return n;
}

static enum qr_status
nonzero_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[2];

	dims[0] = c->in[0]->ndim;
	dims[1] = (int64_t)count_nonzero(c->in[0]);
	return qr_tensor_set_shape(c->out[0], QR_DT_INT64, 2, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
nonzero_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t *y = c->out[0]->data, idx[QR_TENSOR_MAX_DIMS] = {0};
	size_t nnz = (size_t)c->out[0]->dims[1], col = 0, k;
	int i;

	for (k = 0; k < x->n_elem; k++) {
		if (qr_op_get(x, k) != 0) {
			for (i = 0; i < x->ndim; i++)
				y[(size_t)i * nnz + col] = idx[i];
			col++;
		}
		for (i = x->ndim - 1; i >= 0; i--) {
			if (++idx[i] < x->dims[i])
				break;
			idx[i] = 0;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_nonzero = {
	.domain = "", .name = "NonZero", .since = 9,
	.check = nonzero_check, .infer = nonzero_infer, .run = nonzero_run,
};

/* ---- Compress ---- */

static enum qr_status
compress_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 2, 2, 1, 1);

	if (st == QR_OK)
		st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_BOOL));
	return st;
}

/* Selected count; *axis is -1 when the input is flattened. */
static enum qr_status
compress_geom(struct qr_op_call *c, struct qr_diag *d, int *axis,
	      size_t *sel)
{
	const struct qr_tensor *x = c->in[0], *cond = c->in[1];
	const uint8_t *cd = cond->data;
	size_t len, i;
	enum qr_status st;

	*axis = -1;
	len = x->n_elem;
	if (qr_op_has_attr(c, "axis")) {
		st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim,
				0, axis);
		if (st != QR_OK)
			return st;
		len = (size_t)x->dims[*axis];
	}
	if (cond->ndim != 1 || cond->n_elem > len)
		return qr_op_errorf(c, d, QR_ESHAPE, "condition must be 1-D and "
				    "at most %zu long", len);
	*sel = 0;
	for (i = 0; i < cond->n_elem; i++)
		*sel += cd[i] != 0;
	return QR_OK;
}

static enum qr_status
compress_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	size_t sel;
	int axis;

	if ((st = compress_geom(c, d, &axis, &sel)) != QR_OK)
		return st;
	if (axis < 0) {
		dims[0] = (int64_t)sel;
		return qr_tensor_set_shape(c->out[0], x->dtype, 1, dims,
					   qr_op_out_name(c, 0), d);
	}
	memcpy(dims, x->dims, sizeof dims);
	dims[axis] = (int64_t)sel;
	return qr_tensor_set_shape(c->out[0], x->dtype, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
compress_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	const uint8_t *cd = c->in[1]->data;
	size_t es = qr_dtype_size(x->dtype), sel, outer, len, inner, o, k;
	char *y = c->out[0]->data;
	int axis;

	compress_geom(c, d, &axis, &sel);
	if (axis < 0) {
		outer = 1;
		len = x->n_elem;
		inner = es;
	} else {
		outer = qr_op_dims_prod(x->dims, 0, axis);
		len = (size_t)x->dims[axis];
		inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim) * es;
	}
	for (o = 0; o < outer; o++)
		for (k = 0; k < c->in[1]->n_elem; k++)
			if (cd[k] && inner > 0) {
				memcpy(y, (const char *)x->data +
				       (o * len + k) * inner, inner);
				y += inner;
			}
	return QR_OK;
}

const struct qr_op_desc qr_op_compress = {
	.domain = "", .name = "Compress", .since = 9,
	.check = compress_check, .infer = compress_infer,
	.run = compress_run,
};

/* ---- GatherND ---- */

static enum qr_status
gathernd_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = move_check(c, d, 2, 2, 1, 1);

	if (st == QR_OK)
		st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_INT64));
	return st;
}

static enum qr_status
gathernd_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	int64_t b = qr_op_attr_int(c, "batch_dims", 0), last, dims[32];
	int i, r = 0;

	if (ix->ndim < 1 || b < 0 || b >= ix->ndim || b >= x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "bad indices rank %d or "
				    "batch_dims %lld", ix->ndim, (long long)b);
	last = ix->dims[ix->ndim - 1];
	if (last < 1 || last > x->ndim - b)
		return qr_op_errorf(c, d, QR_ESHAPE, "index tuples of %lld "
				    "for data of rank %d", (long long)last,
				    x->ndim);
	for (i = 0; i < b; i++)
		if (x->dims[i] != ix->dims[i])
			return qr_op_errorf(c, d, QR_ESHAPE, "batch dims of data "
					    "and indices differ");
	for (i = 0; i < ix->ndim - 1; i++)
		dims[r++] = ix->dims[i];
	for (i = (int)(b + last); i < x->ndim; i++)
		dims[r++] = x->dims[i];
	if (r > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_ESHAPE, "output rank too high");
	return qr_tensor_set_shape(c->out[0], x->dtype, r, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
gathernd_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1];
	int64_t b = qr_op_attr_int(c, "batch_dims", 0);
	int64_t last = ix->dims[ix->ndim - 1], xs[QR_TENSOR_MAX_DIMS];
	const int64_t *iv = ix->data;
	size_t es = qr_dtype_size(x->dtype), n_tuples, per_batch, slice, t;
	size_t batch_stride;
	char *y = c->out[0]->data;
	int i;

	dense_strides(x->ndim, x->dims, xs);
	n_tuples = last ? ix->n_elem / (size_t)last : 0;
	per_batch = n_tuples / (qr_op_dims_prod(ix->dims, 0, (int)b) ?
				qr_op_dims_prod(ix->dims, 0, (int)b) : 1);
	slice = qr_op_dims_prod(x->dims, (int)(b + last), x->ndim) * es;
	batch_stride = b > 0 ? (size_t)xs[b - 1] : 0;
	for (t = 0; t < n_tuples; t++) {
		int64_t off = (int64_t)((t / (per_batch ? per_batch : 1)) *
					batch_stride);

		for (i = 0; i < last; i++) {
			int64_t v = iv[t * (size_t)last + (size_t)i];
			int64_t dim = x->dims[b + i];

			if (v < -dim || v >= dim)
				return qr_op_errorf(c, d, QR_ESHAPE, "index "
						    "%lld out of range for "
						    "dim %lld", (long long)v,
						    (long long)dim);
			off += (v < 0 ? v + dim : v) * xs[b + i];
		}
		if (slice > 0) { /* else y may be NULL: no output at all */
			memcpy(y, (const char *)x->data + off * (int64_t)es,
			       slice);
			y += slice;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_gathernd = {
	.domain = "", .name = "GatherND", .since = 11,
	.check = gathernd_check, .infer = gathernd_infer,
	.run = gathernd_run,
};

/* ---- ScatterElements, Scatter (opset 9-10), ScatterND ---- */

enum scatter_red { SC_NONE, SC_ADD, SC_MUL, SC_MAX, SC_MIN };

static enum qr_status
scatter_red(const struct qr_op_call *c, struct qr_diag *d,
	    enum scatter_red *r)
{
	const char *s = qr_op_attr_str(c, "reduction", "none");

	*r = strcmp(s, "none") == 0 ? SC_NONE : strcmp(s, "add") == 0 ?
		SC_ADD : strcmp(s, "mul") == 0 ? SC_MUL : strcmp(s, "max") ==
		0 ? SC_MAX : strcmp(s, "min") == 0 ? SC_MIN : (enum scatter_red)-1;
	if ((int)*r < 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "reduction '%s' is "
				    "not supported", s);
	return QR_OK;
}

static enum qr_status
scatter_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum scatter_red r;
	enum qr_status st = move_check(c, d, 3, 3, 1, 1);

	if (st == QR_OK)
		st = want_index(c, d, 1);
	if (st == QR_OK)
		st = qr_op_same_dtype(c, d, 0, 2);
	if (st == QR_OK)
		st = scatter_red(c, d, &r);
	if (st == QR_OK && r != SC_NONE && qr_op_dtype(c, 0) != QR_DT_UNDEFINED
	    && !(QR_DTM_NUMERIC & QR_DTM(qr_op_dtype(c, 0))))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "reduction on %s",
				    qr_dtype_name(qr_op_dtype(c, 0)));
	return st;
}

/* y[dst] = update (combined with y[dst] by the reduction). */
static void
scatter_put(struct qr_tensor *y, size_t dst, const struct qr_tensor *u,
	    size_t src, enum scatter_red r)
{
	size_t es = qr_dtype_size(y->dtype);
	double a, b;

	if (r == SC_NONE) {
		copy_elem((char *)y->data + dst * es,
			  (const char *)u->data + src * es, es);
		return;
	}
	a = qr_op_get(y, dst);
	b = qr_op_get(u, src);
	qr_op_set(y, dst, r == SC_ADD ? a + b : r == SC_MUL ? a * b :
		  r == SC_MAX ? fmax(a, b) : fmin(a, b));
}

static enum qr_status
scatter_elements_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1], *u = c->in[2];
	int64_t xs[QR_TENSOR_MAX_DIMS], idx[QR_TENSOR_MAX_DIMS] = {0};
	enum scatter_red r;
	enum qr_status st;
	size_t k;
	int axis, i;

	if ((st = scatter_red(c, d, &r)) != QR_OK ||
	    (st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0,
			     &axis)) != QR_OK)
		return st;
	if (!qr_op_same_shape(u, ix->ndim, ix->dims) || ix->ndim != x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "indices and updates must "
				    "share a shape of data's rank");
	copy_run(c, d);
	dense_strides(x->ndim, x->dims, xs);
	for (k = 0; k < ix->n_elem; k++) {
		int64_t v = get_i64(ix, k), off = 0;

		if (v < -x->dims[axis] || v >= x->dims[axis])
			return qr_op_errorf(c, d, QR_ESHAPE, "index %lld out of "
					    "range", (long long)v);
		for (i = 0; i < x->ndim; i++) {
			int64_t p = i == axis ? (v < 0 ? v + x->dims[i] : v) :
				idx[i];

			if (p >= x->dims[i])
				return qr_op_errorf(c, d, QR_ESHAPE, "indices "
						    "exceed data on axis %d", i);
			off += p * xs[i];
		}
		scatter_put(c->out[0], (size_t)off, u, k, r);
		for (i = ix->ndim - 1; i >= 0; i--) {
			if (++idx[i] < ix->dims[i])
				break;
			idx[i] = 0;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_scatter_elements = {
	.domain = "", .name = "ScatterElements", .since = 11,
	.check = scatter_check, .infer = same_infer,
	.run = scatter_elements_run,
};
const struct qr_op_desc qr_op_scatter = {
	.domain = "", .name = "Scatter", .since = 9,
	.check = scatter_check, .infer = same_infer,
	.run = scatter_elements_run,
};

static enum qr_status
scatternd_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *ix = c->in[1], *u = c->in[2];
	int64_t xs[QR_TENSOR_MAX_DIMS], last;
	enum scatter_red r;
	size_t n_tuples, slice, t, j;
	int i;

	scatter_red(c, d, &r);
	if (ix->ndim < 1 || ix->dims[ix->ndim - 1] > x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "bad indices shape");
	last = ix->dims[ix->ndim - 1];
	n_tuples = last ? ix->n_elem / (size_t)last : 0;
	slice = qr_op_dims_prod(x->dims, (int)last, x->ndim);
	if (u->n_elem != n_tuples * slice)
		return qr_op_errorf(c, d, QR_ESHAPE, "updates hold %zu values, "
				    "indices need %zu", u->n_elem,
				    n_tuples * slice);
	copy_run(c, d);
	dense_strides(x->ndim, x->dims, xs);
	for (t = 0; t < n_tuples; t++) {
		int64_t off = 0;

		for (i = 0; i < last; i++) {
			int64_t v = get_i64(ix, t * (size_t)last + (size_t)i);

			if (v < -x->dims[i] || v >= x->dims[i])
				return qr_op_errorf(c, d, QR_ESHAPE, "index "
						    "%lld out of range",
						    (long long)v);
			off += (v < 0 ? v + x->dims[i] : v) * xs[i];
		}
		for (j = 0; j < slice; j++)
			scatter_put(c->out[0], (size_t)off + j, u,
				    t * slice + j, r);
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_scatternd = {
	.domain = "", .name = "ScatterND", .since = 11,
	.check = scatter_check, .infer = same_infer, .run = scatternd_run,
};
