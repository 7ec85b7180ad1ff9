/*
 * op_reduce: reductions over a set of axes (ReduceMean, ReduceSum,
 * ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare,
 * ReduceLogSum, ReduceLogSumExp) and ArgMax/ArgMin along one axis.
 *
 * Axes are an attribute until ReduceSum-13 and the others' opset 18, an
 * optional input afterwards (where noop_with_empty_axes = 1 with no axes
 * makes the op an identity). No axes means all axes. Float ReduceSum and
 * ReduceMean sum in ONNX Runtime's order (reduce_float_ort); other sums
 * accumulate in double. Max/Min propagate NaN.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

enum red_kind {
	RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD,
	RED_L1,          /* sum |x| */
	RED_L2,          /* sqrt(sum x^2) */
	RED_SUM_SQUARE,  /* sum x^2 */
	RED_LOG_SUM,     /* log(sum x) */
	RED_LOG_SUM_EXP, /* log(sum exp(x)), as max + log(sum exp(x - max)) */
};

static const struct {
	const char *op;
	enum red_kind kind;
} red_ops[] = {
	{"ReduceSum", RED_SUM}, {"ReduceMean", RED_MEAN},
	{"ReduceMax", RED_MAX}, {"ReduceMin", RED_MIN},
	{"ReduceProd", RED_PROD}, {"ReduceL1", RED_L1},
	{"ReduceL2", RED_L2}, {"ReduceSumSquare", RED_SUM_SQUARE},
	{"ReduceLogSum", RED_LOG_SUM}, {"ReduceLogSumExp", RED_LOG_SUM_EXP},
};

static enum red_kind
red_kind(const struct qr_op_call *c)
{
	size_t i;

	for (i = 0; i < sizeof red_ops / sizeof red_ops[0]; i++)
		if (strcmp(c->node->op_type, red_ops[i].op) == 0)
			return red_ops[i].kind;
	QR_ASSERT(!"reduce descriptor for an unknown op");
	return RED_SUM;
}

/* 1 when this op at this opset takes axes as an input. */
static int
axes_as_input(const struct qr_op_call *c)
{
	return c->opset >= (red_kind(c) == RED_SUM ? 13 : 18);
}

static enum qr_status
reduce_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	st = qr_op_arity(c, d, 1, axes_as_input(c) ? 2 : 1, 1, 1);
	if (st == QR_OK)
		st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOATS | QR_DTM_INDEX |
				      QR_DTM(QR_DT_INT8) |
				      QR_DTM(QR_DT_UINT8));
	if (st == QR_OK)
		st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_INT64));
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return st;
}

/* Which axes of x to reduce (red[i] = 1); *noop when the op copies. */
static enum qr_status
reduce_axes(const struct qr_op_call *c, struct qr_diag *d,
	    const struct qr_tensor *x, int *red, int *noop)
{
	int64_t axes[QR_TENSOR_MAX_DIMS];
	size_t n;
	enum qr_status st;
	int given, i;

	*noop = 0;
	st = qr_op_axes_arg(c, d, axes_as_input(c), 1, axes, &n, &given);
	if (st != QR_OK)
		return st;
	if (axes_as_input(c) && n == 0 &&
	    qr_op_attr_int(c, "noop_with_empty_axes", 0))
		*noop = 1;
	for (i = 0; i < x->ndim; i++)
		red[i] = n == 0 && !*noop;
	return qr_op_axes_mark(c, d, axes, n, x->ndim, red);
}

static enum qr_status
reduce_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	int red[QR_TENSOR_MAX_DIMS], keep, noop, i, r = 0;
	enum qr_status st;

	if ((st = reduce_axes(c, d, x, red, &noop)) != QR_OK)
		return st;
	keep = (int)qr_op_attr_int(c, "keepdims", 1);
	for (i = 0; i < x->ndim; i++) {
		if (!red[i])
			dims[r++] = x->dims[i];
		else if (keep)
			dims[r++] = 1;
	}
	return qr_tensor_set_shape(c->out[0], x->dtype, r, dims,
				   qr_op_out_name(c, 0), d);
}

/* Accumulate every element of x into acc[output offset], the output
 * offsets following ost (x's axes, 0 on reduced ones). mx holds each
 * output's max for log-sum-exp. */
static void
reduce_walk(const struct qr_tensor *x, const int64_t *ost, enum red_kind kind,
	    double *acc, const double *mx)
{
	int64_t idx[QR_TENSOR_MAX_DIMS] = {0};
	size_t k, o = 0;

	for (k = 0; k < x->n_elem; k++) {
		double v = qr_op_get(x, k), *a = &acc[o];

		switch (kind) {
		case RED_SUM:
		case RED_MEAN:
		case RED_LOG_SUM: *a += v; break;
		case RED_PROD: *a *= v; break;
		case RED_MAX: if (v > *a || isnan(v)) *a = v; break;
		case RED_MIN: if (v < *a || isnan(v)) *a = v; break;
		case RED_L1: *a += fabs(v); break;
		case RED_L2:
		case RED_SUM_SQUARE: *a += v * v; break;
		case RED_LOG_SUM_EXP: *a += exp(v - mx[o]); break;
		}
		qr_op_next_offset(x->ndim, x->dims, ost, idx, &o);
	}
}

/*
 * Float ReduceSum/ReduceMean in ONNX Runtime's order, so a QOperator or
 * QDQ model quantizes what follows as ORT does (reduction_ops.cc,
 * CommonReduce1Loop with ReduceAggregatorSum/Mean). ORT merges
 * neighbouring axes that are both reduced or both kept (size-1 axes
 * included) and has fast paths for four shapes, taken on a
 * single-threaded run when:
 *   KR   [rows][len], always: each row summed by Eigen (qr_sum_ort_f32);
 *   RK   [len][n], when len > 16 and len or n > 256: row 0 copied, the
 *        next rows added one after another;
 *   KRK  [outer][len][n], when outer >= 2: per outer index, a GEMM of a
 *        row of ones by the [len][n] block (math::MatMul, MLAS's M = 1
 *        kernel);
 *   RKR  [a][n][b], when n >= 2: for each of the n outputs, the Eigen sums
 *        of its a runs of b added to 0 in turn.
 * Every other case (all axes: one Eigen sum; the rest: one float
 * accumulator from 0 per output, adding x in its row-major order) is
 * ORT's generic loop. A mean is the sum divided by the count in float.
 * 0 for a scalar or an empty x: the double path then runs.
 */
static int
reduce_float_ort(const struct qr_tensor *x, const int *red, enum red_kind kind,
		 struct qr_tensor *y)
{
	const float *xp = x->data;
	float *yp = y->data, *ones, *ws;
	size_t fs[QR_TENSOR_MAX_DIMS], len, r, j, o = 0;
	int64_t ost[QR_TENSOR_MAX_DIMS], idx[QR_TENSOR_MAX_DIMS] = {0};
	int fr[QR_TENSOR_MAX_DIMS], nf = 0, i;
	struct qr_sgemm_plan pl;

	if (x->ndim == 0 || x->n_elem == 0)
		return 0;
	for (i = 0; i < x->ndim; i++) {
		if (nf > 0 && fr[nf - 1] == red[i]) {
			fs[nf - 1] *= (size_t)x->dims[i];
			continue;
		}
		fr[nf] = red[i];
		fs[nf++] = (size_t)x->dims[i];
	}
	len = x->n_elem / y->n_elem;
	if (nf == 1 && fr[0]) { /* every axis */
		yp[0] = qr_sum_ort_f32(xp, len);
	} else if (nf == 2 && !fr[0]) { /* KR */
		for (r = 0; r < fs[0]; r++)
			yp[r] = qr_sum_ort_f32(xp + r * len, len);
	} else if (nf == 2 && fs[0] > 16 && (fs[0] > 256 || fs[1] > 256)) {
		/* RK */
		memcpy(yp, xp, fs[1] * sizeof *yp);
		for (r = 1; r < len; r++)
			for (j = 0; j < fs[1]; j++)
				yp[j] += xp[r * fs[1] + j];
	} else if (nf == 3 && !fr[0] && fs[0] >= 2) { /* KRK */
		ones = xmalloc(len * sizeof *ones);
		ws = xmalloc(qr_sgemm_workspace());
		for (j = 0; j < len; j++)
			ones[j] = 1.0f;
		qr_sgemm_plan(1, fs[2], len, 0, fs[2], fs[2], &pl);
		for (r = 0; r < fs[0]; r++)
			qr_sgemm(&pl, 1, fs[2], len, ones, len,
				 xp + r * len * fs[2], fs[2], 0,
				 yp + r * fs[2], fs[2], 0, ws);
		free(ones);
		free(ws);
	} else if (nf == 3 && fr[0] && fs[1] >= 2) { /* RKR */
		for (j = 0; j < fs[1]; j++) {
			yp[j] = 0.0f;
			for (r = 0; r < fs[0]; r++)
				yp[j] += qr_sum_ort_f32(xp + (r * fs[1] + j) *
							fs[2], fs[2]);
		}
	} else {
		qr_op_reduce_strides(x, red, ost, NULL);
		for (j = 0; j < y->n_elem; j++)
			yp[j] = 0.0f;
		for (j = 0; j < x->n_elem; j++) {
			yp[o] += xp[j];
			qr_op_next_offset(x->ndim, x->dims, ost, idx, &o);
		}
	}
	if (kind == RED_MEAN)
		for (j = 0; j < y->n_elem; j++)
			yp[j] /= (float)len;
	return 1;
}

static enum qr_status
reduce_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	enum red_kind kind = red_kind(c);
	int red[QR_TENSOR_MAX_DIMS], noop;
	int64_t ost[QR_TENSOR_MAX_DIMS];
	size_t k, count;
	double *acc, *mx = NULL, init;

	reduce_axes(c, d, x, red, &noop);
	if (noop) {
		if (y->nbytes > 0)
			memcpy(y->data, x->data, y->nbytes);
		return QR_OK;
	}
	if (x->dtype == QR_DT_FLOAT && (kind == RED_SUM || kind == RED_MEAN) &&
	    reduce_float_ort(x, red, kind, y))
		return QR_OK;
	count = qr_op_reduce_strides(x, red, ost, NULL);
	init = kind == RED_MAX ? -INFINITY : kind == RED_MIN ? INFINITY :
		kind == RED_PROD ? 1 : 0;
	acc = xreallocarray(NULL, y->n_elem + 1, sizeof *acc);
	for (k = 0; k < y->n_elem; k++)
		acc[k] = init;
	/* log-sum-exp: a first pass finds each output's max. */
	if (kind == RED_LOG_SUM_EXP) {
		mx = xreallocarray(NULL, y->n_elem + 1, sizeof *mx);
		for (k = 0; k < y->n_elem; k++)
			mx[k] = -INFINITY;
		reduce_walk(x, ost, RED_MAX, mx, NULL);
		for (k = 0; k < y->n_elem; k++)
			if (isinf(mx[k]))
				mx[k] = 0;
	}
	reduce_walk(x, ost, kind, acc, mx);
	for (k = 0; k < y->n_elem; k++) {
		double v = acc[k];

		switch (kind) {
		case RED_MEAN: v /= (double)count; break;
		case RED_L2: v = sqrt(v); break;
		case RED_LOG_SUM: v = log(v); break;
		case RED_LOG_SUM_EXP: v = mx[k] + log(v); break;
		default: break;
		}
		qr_op_set(y, k, v);
	}
	free(acc);
	free(mx);
	return QR_OK;
}

#define REDUCE_DESC(sym, op)                                                \
	const struct qr_op_desc sym = {                                     \
		.domain = "", .name = op, .since = 1,                       \
		.check = reduce_check, .infer = reduce_infer,               \
		.run = reduce_run,                                          \
	};

REDUCE_DESC(qr_op_reduce_mean, "ReduceMean")
REDUCE_DESC(qr_op_reduce_sum, "ReduceSum")
REDUCE_DESC(qr_op_reduce_max, "ReduceMax")
REDUCE_DESC(qr_op_reduce_min, "ReduceMin")
REDUCE_DESC(qr_op_reduce_prod, "ReduceProd")
REDUCE_DESC(qr_op_reduce_l1, "ReduceL1")
REDUCE_DESC(qr_op_reduce_l2, "ReduceL2")
REDUCE_DESC(qr_op_reduce_sum_square, "ReduceSumSquare")
REDUCE_DESC(qr_op_reduce_log_sum, "ReduceLogSum")
REDUCE_DESC(qr_op_reduce_log_sum_exp, "ReduceLogSumExp")

/* ---- ArgMax, ArgMin ---- */

static enum qr_status
arg_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_NUMERIC)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_INT64;
	return QR_OK;
}

static enum qr_status
arg_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int axis, i, r = 0;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0,
			&axis);
	if (st != QR_OK)
		return st;
	if (x->dims[axis] == 0)
		return qr_op_errorf(c, d, QR_ESHAPE, "axis %d is empty", axis);
	for (i = 0; i < x->ndim; i++) {
		if (i != axis)
			dims[r++] = x->dims[i];
		else if (qr_op_attr_int(c, "keepdims", 1))
			dims[r++] = 1;
	}
	return qr_tensor_set_shape(c->out[0], QR_DT_INT64, r, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
arg_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t *y = c->out[0]->data;
	int is_max = strcmp(c->node->op_type, "ArgMax") == 0;
	int last = (int)qr_op_attr_int(c, "select_last_index", 0);
	size_t outer, len, inner, o, j, k;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", 0), x->ndim, 0, &axis);
	outer = qr_op_dims_prod(x->dims, 0, axis);
	len = (size_t)x->dims[axis];
	inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim);
	for (o = 0; o < outer; o++) {
		for (j = 0; j < inner; j++) {
			size_t base = o * len * inner + j, best = 0;
			double bv = qr_op_get(x, base);

			for (k = 1; k < len; k++) {
				double v = qr_op_get(x, base + k * inner);
				int better = is_max ? v > bv : v < bv;

				if (better || (last && v == bv)) {
					bv = v;
					best = k;
				}
			}
			y[o * inner + j] = (int64_t)best;
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_argmax = {
	.domain = "", .name = "ArgMax", .since = 1,
	.check = arg_check, .infer = arg_infer, .run = arg_run,
};
const struct qr_op_desc qr_op_argmin = {
	.domain = "", .name = "ArgMin", .since = 1,
	.check = arg_check, .infer = arg_infer, .run = arg_run,
};
