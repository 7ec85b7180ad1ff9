/*
 * op_constant: operators that make values from attributes, shapes and
 * scalar inputs rather than from tensor data: Constant, ConstantOfShape,
 * Range, EyeLike.
 */
#include <math.h>
#include <string.h>

#include "ops/op-move-int.h"

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
		qr_op_copy_elem((char *)y->data + i * es, v, es);
	return QR_OK;
}

const struct qr_op_desc qr_op_constant_of_shape = {
	.domain = "", .name = "ConstantOfShape", .since = 9,
	.check = cos_check, .infer = cos_infer, .run = cos_run,
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
