/*
 * op_shape: operators that copy their input under a new shape, or
 * describe a shape: Identity, Dropout (inference), Shape, Size, Flatten,
 * Reshape, Squeeze, Unsqueeze, Expand.
 */
#include <string.h>

#include "ops/op-move-int.h"

/* ---- Identity, Dropout ---- */

/* One input copied to one output (Identity, Flatten). */
static enum qr_status
unary_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check(c, d, 1, 1, 1, 1);
}

const struct qr_op_desc qr_op_identity = {
	.domain = "", .name = "Identity", .since = 1,
	.check = unary_check, .infer = qr_op_same_infer,
	.run = qr_op_copy_run,
};

/* Dropout in inference: y = x, mask all true. training_mode must be a
 * constant false when given (opset 12+). */
static enum qr_status
dropout_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = qr_op_move_check(c, d, 1, 3, 1, 2);

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
	enum qr_status st = qr_op_same_infer(c, d);

	if (st == QR_OK && c->n_out > 1)
		st = qr_tensor_set_shape(c->out[1], QR_DT_BOOL, c->in[0]->ndim,
					 c->in[0]->dims, qr_op_out_name(c, 1),
					 d);
	return st;
}

static enum qr_status
dropout_run(struct qr_op_call *c, struct qr_diag *d)
{
	qr_op_copy_run(c, d);
	if (c->n_out > 1 && c->out[1]->nbytes > 0)
		memset(c->out[1]->data, 1, c->out[1]->nbytes);
	return QR_OK;
}

const struct qr_op_desc qr_op_dropout = {
	.domain = "", .name = "Dropout", .since = 1,
	.check = dropout_check, .infer = dropout_infer, .run = dropout_run,
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

/* ---- Flatten, Reshape, Squeeze, Unsqueeze: copies with a new shape ---- */

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
	.check = unary_check, .infer = flatten_infer, .run = qr_op_copy_run,
};

static enum qr_status
reshape_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check_in1(c, d, 2, 2, QR_DTM_INDEX);
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
	.check = reshape_check, .infer = reshape_infer, .run = qr_op_copy_run,
};

/* Squeeze/Unsqueeze axes: attribute before opset 13, input from 13. */
static enum qr_status
axes_of(const struct qr_op_call *c, struct qr_diag *d, int64_t *axes,
	size_t *n, int *given)
{
	return qr_op_axes_arg(c, d, c->opset >= 13, 1, axes, n, given);
}

static enum qr_status
squeeze_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check_in1(c, d, 1, c->opset >= 13 ? 2 : 1,
				    QR_DTM_INDEX);
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
	.check = squeeze_check, .infer = squeeze_infer, .run = qr_op_copy_run,
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
	.check = squeeze_check, .infer = unsqueeze_infer, .run = qr_op_copy_run,
};

/* ---- Expand ---- */

static enum qr_status
expand_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_move_check_in1(c, d, 2, 2, QR_DTM(QR_DT_INT64));
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
	qr_op_strided_copy(y->data, c->in[0]->data, qr_dtype_size(y->dtype),
			   y->ndim, y->dims, 0, st);
	return QR_OK;
}

const struct qr_op_desc qr_op_expand = {
	.domain = "", .name = "Expand", .since = 8,
	.check = expand_check, .infer = expand_infer, .run = expand_run,
};
