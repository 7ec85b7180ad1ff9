/*
 * common: helpers shared by the op_*.c files (attributes, errors, dtypes,
 * axes, broadcasting). See op-int.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/op-int.h"

/* ---- errors ---- */

/* Record "node 'NAME' (OP): <fmt>" in d and return st. */
enum qr_status
qr_op_errorf(const struct qr_op_call *c, struct qr_diag *d, enum qr_status st,
	     const char *fmt, ...)
{
	char msg[QR_DIAG_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return qr_errorf(d, st, "node '%s' (%s): %s", c->node->name,
			 c->node->op_type, msg);
}

/* Input / output tensor names of the node, "" when absent. */
const char *
qr_op_in_name(const struct qr_op_call *c, size_t i)
{
	return i < c->node->n_in ? c->node->in[i] : "";
}

const char *
qr_op_out_name(const struct qr_op_call *c, size_t i)
{
	return i < c->node->n_out ? c->node->out[i] : "";
}

/* 1 when input i is present and not "". */
int
qr_op_has_in(const struct qr_op_call *c, size_t i)
{
	return i < c->n_in && c->node->in[i][0] != '\0';
}

/* Check input and output counts; QR_EGRAPH naming the node when off. */
enum qr_status
qr_op_arity(const struct qr_op_call *c, struct qr_diag *d, size_t min_in,
	    size_t max_in, size_t min_out, size_t max_out)
{
	size_t i;

	if (c->n_in < min_in || c->n_in > max_in)
		return qr_op_errorf(c, d, QR_EGRAPH, "has %zu inputs, "
				    "expected %zu to %zu", c->n_in, min_in,
				    max_in);
	if (c->n_out < min_out || c->n_out > max_out)
		return qr_op_errorf(c, d, QR_EGRAPH, "has %zu outputs, "
				    "expected %zu to %zu", c->n_out, min_out,
				    max_out);
	for (i = 0; i < min_in; i++)
		if (!qr_op_has_in(c, i))
			return qr_op_errorf(c, d, QR_EGRAPH, "required input "
					    "%zu is missing", i);
	return QR_OK;
}

/* ---- attributes ---- */

/* Attribute getters: see op-int.h; thin wrappers over onnx.h's. */
int64_t
qr_op_attr_int(const struct qr_op_call *c, const char *name, int64_t dflt)
{
	return qr_node_attr_int(c->node, name, dflt);
}

float
qr_op_attr_float(const struct qr_op_call *c, const char *name, float dflt)
{
	return qr_node_attr_float(c->node, name, dflt);
}

const char *
qr_op_attr_str(const struct qr_op_call *c, const char *name, const char *dflt)
{
	return qr_node_attr_str(c->node, name, dflt);
}

const int64_t *
qr_op_attr_ints(const struct qr_op_call *c, const char *name, size_t *n)
{
	const struct qr_attr *a = qr_node_attr(c->node, name);

	if (a == NULL || a->type != QR_ATTR_INTS) {
		*n = 0;
		return NULL;
	}
	*n = a->n;
	return a->ints;
}

const float *
qr_op_attr_floats(const struct qr_op_call *c, const char *name, size_t *n)
{
	const struct qr_attr *a = qr_node_attr(c->node, name);

	if (a == NULL || a->type != QR_ATTR_FLOATS) {
		*n = 0;
		return NULL;
	}
	*n = a->n;
	return a->floats;
}

int
qr_op_has_attr(const struct qr_op_call *c, const char *name)
{
	return qr_node_attr(c->node, name) != NULL;
}

/* ---- dtypes ---- */

/* Input i's dtype: the tensor's when one is there (constants at load,
 * every input at run time), else what load-time propagation knew. */
int
qr_op_dtype(const struct qr_op_call *c, size_t i)
{
	if (!qr_op_has_in(c, i))
		return QR_DT_UNDEFINED;
	if (c->in != NULL && c->in[i] != NULL)
		return c->in[i]->dtype;
	if (c->in_dtype != NULL)
		return c->in_dtype[i];
	return QR_DT_UNDEFINED;
}

/* Input i's dtype, when known, must be in mask (QR_EUNSUPPORTED). */
enum qr_status
qr_op_want_dtype(const struct qr_op_call *c, struct qr_diag *d, size_t i,
		 unsigned long long mask)
{
	int dt = qr_op_dtype(c, i);

	if (dt == QR_DT_UNDEFINED ||
	    (dt >= 0 && dt < 64 && (mask & QR_DTM(dt))))
		return QR_OK;
	return qr_op_errorf(c, d, QR_EUNSUPPORTED, "input %zu '%s' has dtype "
			    "%s, which is not supported", i,
			    qr_op_in_name(c, i), qr_dtype_name(dt));
}

/* Every given input is float (QR_EUNSUPPORTED otherwise); every output
 * is float. */
enum qr_status
qr_op_all_float(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	size_t i;

	for (i = 0; i < c->n_in; i++)
		if ((st = qr_op_want_dtype(c, d, i, QR_DTM_FLOAT)) != QR_OK)
			return st;
	for (i = 0; i < c->n_out; i++)
		c->out_dtype[i] = QR_DT_FLOAT;
	return QR_OK;
}

/* Inputs i and j, when both known, must share a dtype (QR_EGRAPH). */
enum qr_status
qr_op_same_dtype(const struct qr_op_call *c, struct qr_diag *d, size_t i,
		 size_t j)
{
	int a = qr_op_dtype(c, i), b = qr_op_dtype(c, j);

	if (a == QR_DT_UNDEFINED || b == QR_DT_UNDEFINED || a == b)
		return QR_OK;
	return qr_op_errorf(c, d, QR_EGRAPH, "input %zu '%s' is %s but input "
			    "%zu '%s' is %s", i, qr_op_in_name(c, i),
			    qr_dtype_name(a), j, qr_op_in_name(c, j),
			    qr_dtype_name(b));
}

/* Element i of t as double; t's dtype must have been accepted by check. */
double
qr_op_get(const struct qr_tensor *t, size_t i)
{
	const void *p = t->data;

	switch (t->dtype) {
	case QR_DT_FLOAT: return ((const float *)p)[i];
	case QR_DT_DOUBLE: return ((const double *)p)[i];
	case QR_DT_INT8:
	case QR_DT_INT4: return ((const int8_t *)p)[i]; /* unpacked at load */
	case QR_DT_INT16: return ((const int16_t *)p)[i];
	case QR_DT_INT32: return ((const int32_t *)p)[i];
	case QR_DT_INT64: return (double)((const int64_t *)p)[i];
	case QR_DT_UINT8:
	case QR_DT_UINT4:
	case QR_DT_BOOL: return ((const uint8_t *)p)[i];
	case QR_DT_UINT16: return ((const uint16_t *)p)[i];
	case QR_DT_UINT32: return ((const uint32_t *)p)[i];
	case QR_DT_UINT64: return (double)((const uint64_t *)p)[i];
	case QR_DT_FLOAT16:
		return qr_f16_to_f32(((const uint16_t *)p)[i]);
	case QR_DT_BFLOAT16:
		return qr_bf16_to_f32(((const uint16_t *)p)[i]);
	default:
		QR_ASSERT(!"qr_op_get: dtype refused by check");
	}
	return 0;
}

/* v clamped to [lo, hi], NaN as 0: converting the result to an integer
 * type whose range covers [lo, hi] is then defined (C leaves a value out
 * of range, NaN or Inf undefined). */
static double
sat(double v, double lo, double hi)
{
	if (isnan(v))
		return 0;
	return v < lo ? lo : v > hi ? hi : v;
}

/* Store v as element i of t, converting as C does (bool: v != 0) for values
 * in the type's range; integers saturate (NaN -> 0, -Inf/+Inf -> min/max). */
void
qr_op_set(struct qr_tensor *t, size_t i, double v)
{
	void *p = t->data;

	switch (t->dtype) {
	case QR_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case QR_DT_DOUBLE: ((double *)p)[i] = v; break;
	case QR_DT_INT8:
		((int8_t *)p)[i] = (int8_t)sat(v, INT8_MIN, INT8_MAX);
		break;
	case QR_DT_INT16:
		((int16_t *)p)[i] = (int16_t)sat(v, INT16_MIN, INT16_MAX);
		break;
	case QR_DT_INT32:
		((int32_t *)p)[i] = (int32_t)sat(v, INT32_MIN, INT32_MAX);
		break;
	case QR_DT_INT64:
		/* INT64_MAX is not a double: 2^63 and above saturate apart */
		((int64_t *)p)[i] = v >= 0x1p63 ? INT64_MAX :
			(int64_t)sat(v, -0x1p63, 0x1p63);
		break;
	case QR_DT_UINT8:
		((uint8_t *)p)[i] = (uint8_t)sat(v, 0, UINT8_MAX);
		break;
	case QR_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case QR_DT_UINT16:
		((uint16_t *)p)[i] = (uint16_t)sat(v, 0, UINT16_MAX);
		break;
	case QR_DT_UINT32:
		((uint32_t *)p)[i] = (uint32_t)sat(v, 0, UINT32_MAX);
		break;
	case QR_DT_UINT64:
		((uint64_t *)p)[i] = v >= 0x1p64 ? UINT64_MAX :
			(uint64_t)sat(v, 0, 0x1p64);
		break;
	case QR_DT_FLOAT16:
		((uint16_t *)p)[i] = qr_f32_to_f16((float)v);
		break;
	case QR_DT_BFLOAT16:
		((uint16_t *)p)[i] = qr_f32_to_bf16((float)v);
		break;
	default:
		QR_ASSERT(!"qr_op_set: dtype refused by check");
	}
}

/* ---- shapes and axes ---- */

/* See op-int.h: axis in [-rank, rank) (or rank with allow_end). */
enum qr_status
qr_op_axis(const struct qr_op_call *c, struct qr_diag *d, int64_t axis,
	   int rank, int allow_end, int *out)
{
	if (axis < -(int64_t)rank || axis > (int64_t)rank ||
	    (axis == rank && !allow_end))
		return qr_op_errorf(c, d, QR_EGRAPH, "axis %lld is out of "
				    "range for rank %d", (long long)axis, rank);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return QR_OK;
}

/* Copy a 1-D or scalar int32/int64 tensor into dst (max entries);
 * QR_EGRAPH naming `what` and the tensor otherwise. */
enum qr_status
qr_op_read_ints(const struct qr_op_call *c, struct qr_diag *d,
		const struct qr_tensor *t, const char *what, int64_t *dst,
		size_t max, size_t *n)
{
	size_t i;

	*n = 0;
	if (t->dtype != QR_DT_INT64 && t->dtype != QR_DT_INT32)
		return qr_op_errorf(c, d, QR_EGRAPH, "%s '%s' must be int64 "
				    "or int32, not %s", what,
				    t->name ? t->name : "",
				    qr_dtype_name(t->dtype));
	if (t->ndim > 1)
		return qr_op_errorf(c, d, QR_EGRAPH, "%s '%s' must be 1-D, "
				    "not rank %d", what, t->name ? t->name : "",
				    t->ndim);
	if (t->n_elem > max)
		return qr_op_errorf(c, d, QR_EGRAPH, "%s '%s' has %zu values, "
				    "at most %zu are allowed", what,
				    t->name ? t->name : "", t->n_elem, max);
	for (i = 0; i < t->n_elem; i++)
		dst[i] = t->dtype == QR_DT_INT64 ?
			((const int64_t *)t->data)[i] :
			((const int32_t *)t->data)[i];
	*n = t->n_elem;
	return QR_OK;
}

/* Product of dims[from..to), 1 when empty. */
size_t
qr_op_dims_prod(const int64_t *dims, int from, int to)
{
	size_t p = 1;
	int i;

	for (i = from; i < to; i++)
		p *= (size_t)dims[i];
	return p;
}

/* 1 when t has exactly shape (ndim, dims). */
int
qr_op_same_shape(const struct qr_tensor *t, int ndim, const int64_t *dims)
{
	int i;

	if (t->ndim != ndim)
		return 0;
	for (i = 0; i < ndim; i++)
		if (t->dims[i] != dims[i])
			return 0;
	return 1;
}

/* Output 0 shaped as input 0, of its dtype. */
enum qr_status
qr_op_same_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, c->in[0]->ndim,
				   c->in[0]->dims, qr_op_out_name(c, 0), d);
}

/* Axes: attribute before the opset that makes them an input, input
 * after. */
enum qr_status
qr_op_axes_arg(const struct qr_op_call *c, struct qr_diag *d, int from_input,
	       size_t i, int64_t *axes, size_t *n, int *given)
{
	const int64_t *a;
	size_t k;

	*given = 0;
	*n = 0;
	if (from_input) {
		if (!qr_op_has_in(c, i))
			return QR_OK;
		*given = 1;
		return qr_op_read_ints(c, d, c->in[i], "axes", axes,
				       QR_TENSOR_MAX_DIMS, n);
	}
	a = qr_op_attr_ints(c, "axes", n);
	if (a == NULL)
		return QR_OK;
	if (*n > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_ESHAPE, "too many axes (%zu)",
				    *n);
	*given = 1;
	for (k = 0; k < *n; k++)
		axes[k] = a[k];
	return QR_OK;
}

/* mark[ax] = 1 for every axis given. */
enum qr_status
qr_op_axes_mark(const struct qr_op_call *c, struct qr_diag *d,
		const int64_t *axes, size_t n, int rank, int *mark)
{
	enum qr_status st;
	size_t k;
	int ax = 0;

	for (k = 0; k < n; k++) {
		if ((st = qr_op_axis(c, d, axes[k], rank, 0, &ax)) != QR_OK)
			return st;
		mark[ax] = 1;
	}
	return QR_OK;
}

/* Output strides over x's axes, 0 on reduced axes. */
size_t
qr_op_reduce_strides(const struct qr_tensor *x, const int *red, int64_t *ost,
		     size_t *n_out)
{
	size_t count = 1;
	int64_t s = 1;
	int i;

	for (i = x->ndim - 1; i >= 0; i--) {
		if (red[i]) {
			ost[i] = 0;
			count *= (size_t)x->dims[i];
		} else {
			ost[i] = s;
			s *= x->dims[i];
		}
	}
	if (n_out != NULL)
		*n_out = (size_t)s;
	return count;
}

/* ---- broadcasting ---- */

/* numpy broadcast of n shapes (NULL entries skipped) into (*ndim, dims);
 * QR_ESHAPE naming the node and the two shapes that clash. */
enum qr_status
qr_op_broadcast_shape(const struct qr_op_call *c, struct qr_diag *d,
		      struct qr_tensor *const *in, size_t n, int *ndim,
		      int64_t *dims)
{
	char a[128], b[128];
	int r = 0, i;
	size_t k;

	for (k = 0; k < n; k++)
		if (in[k] != NULL && in[k]->ndim > r)
			r = in[k]->ndim;
	for (i = 0; i < r; i++)
		dims[i] = 1;
	for (k = 0; k < n; k++) {
		const struct qr_tensor *t = in[k];

		if (t == NULL)
			continue;
		for (i = 0; i < t->ndim; i++) {
			int64_t *o = &dims[r - t->ndim + i];
			int64_t v = t->dims[i];

			if (v == *o || v == 1)
				continue;
			if (*o == 1) {
				*o = v;
				continue;
			}
			return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s "
					    "does not broadcast with input "
					    "'%s' %s", qr_op_in_name(c, 0),
					    qr_shape_str(in[0], a, sizeof a),
					    qr_op_in_name(c, k),
					    qr_shape_str(t, b, sizeof b));
		}
	}
	*ndim = r;
	return QR_OK;
}

/*
 * Set b up to walk (ndim, dims) with n inputs broadcast to it: strides per
 * input (0 on broadcast axes), size-1 axes dropped, then neighbouring axes
 * merged while every input's strides allow it, so the inner run is as long
 * as possible.
 */
void
qr_bcast_init(struct qr_bcast *b, int ndim, const int64_t *dims,
	      struct qr_tensor *const *in, size_t n)
{
	size_t st[QR_BCAST_MAX_IN][QR_TENSOR_MAX_DIMS];
	size_t k;
	int i, r;

	QR_ASSERT(n <= QR_BCAST_MAX_IN);
	memset(b, 0, sizeof *b);
	b->n_in = n;
	/* Per-input strides over the output axes (0 where broadcast). */
	for (k = 0; k < n; k++) {
		const struct qr_tensor *t = in[k];
		size_t s = 1;

		for (i = ndim - 1; i >= 0; i--) {
			int j = i - (ndim - t->ndim);

			if (j < 0 || t->dims[j] == 1) {
				st[k][i] = 0;
			} else {
				st[k][i] = s;
				s *= (size_t)t->dims[j];
			}
		}
	}
	/* Merge axis i into the axis after it while every input agrees. */
	r = 0;
	for (i = 0; i < ndim; i++) {
		if (dims[i] == 1 && ndim > 1)
			continue; /* size-1 axes change nothing */
		if (r > 0) {
			int ok = 1;

			for (k = 0; k < n; k++)
				if (b->stride[k][r - 1] !=
				    st[k][i] * (size_t)dims[i])
					ok = 0;
			if (ok) {
				b->dims[r - 1] *= dims[i];
				for (k = 0; k < n; k++)
					b->stride[k][r - 1] = st[k][i];
				continue;
			}
		}
		b->dims[r] = dims[i];
		for (k = 0; k < n; k++)
			b->stride[k][r] = st[k][i];
		r++;
	}
	if (r == 0) {
		b->dims[0] = 1;
		for (k = 0; k < n; k++)
			b->stride[k][0] = 0;
		r = 1;
	}
	b->rank = r;
	b->inner = (size_t)b->dims[r - 1];
	for (k = 0; k < n; k++)
		b->step[k] = b->stride[k][r - 1];
	for (i = 0; i < ndim; i++)
		if (dims[i] == 0)
			b->inner = 0;
}

/* Advance to the next inner run (odometer over the outer axes, offsets
 * updated incrementally); 0 when the walk is over. */
int
qr_bcast_next(struct qr_bcast *b)
{
	int i = b->rank - 2;
	size_t k;

	if (b->inner == 0)
		return 0;
	b->out_off += b->inner;
	for (; i >= 0; i--) {
		b->idx[i]++;
		for (k = 0; k < b->n_in; k++)
			b->off[k] += b->stride[k][i];
		if (b->idx[i] < (size_t)b->dims[i])
			return 1;
		for (k = 0; k < b->n_in; k++)
			b->off[k] -= b->stride[k][i] * (size_t)b->dims[i];
		b->idx[i] = 0;
	}
	return 0;
}
