/*
 * op_softmax: Softmax and LogSoftmax.
 *
 * The axis changed meaning at opset 13. Before, the input is coerced to 2-D
 * [prod(dims[0..axis)), prod(dims[axis..))] (axis defaults to 1) and each
 * row is normalised. From 13, only dims[axis] is normalised (axis defaults
 * to -1). Both are one loop over [outer][len][inner]: before 13,
 * len = prod(dims[axis..)) and inner = 1.
 *
 * y = exp(x - max) / sum(exp(x - max)); log: y = x - max - log(sum), with
 * the sum in double.
 */
#include <math.h>
#include <string.h>

#include "ops/op-int.h"

static enum qr_status
softmax_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOATS)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

/* The [outer][len][inner] view of x for this node's axis and opset. */
static enum qr_status
softmax_view(const struct qr_op_call *c, struct qr_diag *d,
	     const struct qr_tensor *x, size_t *outer, size_t *len,
	     size_t *inner)
{
	int old = c->opset < 13, axis;
	enum qr_status st;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", old ? 1 : -1),
			x->ndim, 0, &axis);
	if (st != QR_OK)
		return st;
	if (x->ndim == 0) {
		*outer = *len = *inner = 1;
		return QR_OK;
	}
	*outer = qr_op_dims_prod(x->dims, 0, axis);
	if (old) {
		*len = qr_op_dims_prod(x->dims, axis, x->ndim);
		*inner = 1;
	} else {
		*len = (size_t)x->dims[axis];
		*inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim);
	}
	return QR_OK;
}

static enum qr_status
softmax_infer(struct qr_op_call *c, struct qr_diag *d)
{
	size_t outer, len, inner;
	enum qr_status st = softmax_view(c, d, c->in[0], &outer, &len, &inner);

	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, c->in[0]->ndim,
				   c->in[0]->dims, qr_op_out_name(c, 0), d);
}

#define SOFTMAX_LOOP(T, EXP, LOG, c, is_log, outer, len, inner)             \
	do {                                                                \
		const T *x = (c)->in[0]->data;                              \
		T *y = (c)->out[0]->data;                                   \
		size_t o, j, k;                                             \
		for (o = 0; o < (outer); o++) {                             \
			for (j = 0; j < (inner); j++) {                     \
				size_t b = o * (len) * (inner) + j;         \
				T mx = x[b];                                \
				double sum = 0;                             \
				for (k = 1; k < (len); k++)                 \
					if (x[b + k * (inner)] > mx)        \
						mx = x[b + k * (inner)];    \
				for (k = 0; k < (len); k++) {               \
					T e = EXP(x[b + k * (inner)] - mx); \
					sum += e;                           \
					if (!(is_log))                      \
						y[b + k * (inner)] = e;     \
				}                                           \
				for (k = 0; k < (len); k++) {               \
					size_t p = b + k * (inner);         \
					if (is_log)                         \
						y[p] = x[p] - mx -          \
						       (T)LOG(sum);         \
					else                                \
						y[p] = (T)(y[p] / sum);     \
				}                                           \
			}                                                   \
		}                                                           \
	} while (0)

static enum qr_status
softmax_any_run(struct qr_op_call *c, struct qr_diag *d, int is_log)
{
	size_t outer, len, inner;

	softmax_view(c, d, c->in[0], &outer, &len, &inner);
	if (c->out[0]->n_elem == 0)
		return QR_OK;
	if (c->in[0]->dtype == QR_DT_FLOAT)
		SOFTMAX_LOOP(float, expf, log, c, is_log, outer, len, inner);
	else
		SOFTMAX_LOOP(double, exp, log, c, is_log, outer, len, inner);
	return QR_OK;
}

static enum qr_status
softmax_run(struct qr_op_call *c, struct qr_diag *d)
{
	return softmax_any_run(c, d, 0);
}

static enum qr_status
log_softmax_run(struct qr_op_call *c, struct qr_diag *d)
{
	return softmax_any_run(c, d, 1);
}

const struct qr_op_desc qr_op_softmax = {
	.domain = "", .name = "Softmax", .since = 1,
	.check = softmax_check, .infer = softmax_infer, .run = softmax_run,
};
const struct qr_op_desc qr_op_log_softmax = {
	.domain = "", .name = "LogSoftmax", .since = 1,
	.check = softmax_check, .infer = softmax_infer,
	.run = log_softmax_run,
};
