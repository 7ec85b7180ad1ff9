/*
 * op_activation: pointwise activations (Relu, LeakyRelu, PRelu, Clip,
 * Sigmoid, HardSigmoid, HardSwish, Elu, Selu, Celu, Softplus, Softsign,
 * ThresholdedRelu, Shrink).
 *
 * Float and double throughout; Relu and Clip also take signed integers.
 * NaN passes through (comparisons with NaN are false, so max/min keep x).
 */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

static enum qr_status
act_check_mask(const struct qr_op_call *c, struct qr_diag *d, size_t max_in,
	       unsigned long long mask)
{
	enum qr_status st;
	size_t i;

	if ((st = qr_op_arity(c, d, 1, max_in, 1, 1)) != QR_OK)
		return st;
	for (i = 0; i < c->n_in; i++)
		if ((st = qr_op_want_dtype(c, d, i, mask)) != QR_OK ||
		    (st = qr_op_same_dtype(c, d, 0, i)) != QR_OK)
			return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
float_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return act_check_mask(c, d, 1, QR_DTM_FLOATS);
}

static enum qr_status
relu_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return act_check_mask(c, d, 1, QR_DTM_FLOATS | QR_DTM_SINTS);
}

/* y[i] = EXPR(x) for T = float or double; a, b are the op's parameters. */
#define ACT_LOOP(T, EXPR, c, a, b)                                          \
	do {                                                                \
		const T *x_ = (c)->in[0]->data;                             \
		T *y_ = (c)->out[0]->data;                                  \
		const T pa = (T)(a), pb = (T)(b);                           \
		size_t i_, n_ = (c)->out[0]->n_elem;                        \
		(void)pa;                                                   \
		(void)pb;                                                   \
		for (i_ = 0; i_ < n_; i_++) {                               \
			T x = x_[i_];                                       \
			y_[i_] = (T)(EXPR);                                 \
		}                                                           \
	} while (0)

/* FEXPR with float maths, DEXPR with double maths; the parameters pa and
 * pb they may use are the values of the expressions A and B (usually
 * attributes). */
#define DEF_ACT(fn, FEXPR, DEXPR, A, B)                                     \
	static enum qr_status fn(struct qr_op_call *c, struct qr_diag *d)   \
	{                                                                   \
		double a = (A), b = (B);                                    \
		(void)a;                                                    \
		(void)b;                                                    \
		if (c->out[0]->dtype == QR_DT_FLOAT)                        \
			ACT_LOOP(float, FEXPR, c, a, b);                    \
		else                                                        \
			ACT_LOOP(double, DEXPR, c, a, b);                   \
		return QR_OK;                                               \
	}

#define ATTR(name, dflt) qr_op_attr_float(c, name, dflt)

DEF_ACT(leaky_relu_run, x < 0 ? x * pa : x, x < 0 ? x * pa : x,
	ATTR("alpha", 0.01f), 0)
DEF_ACT(sigmoid_double_run, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)),
	0, 0)

/* Float Sigmoid with ONNX Runtime's bits (MLAS's logistic kernel). */
static enum qr_status
sigmoid_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return sigmoid_double_run(c, d);
	qr_sigmoid_ort_f32(c->in[0]->data, c->in[0]->n_elem,
			   c->out[0]->data);
	return QR_OK;
}
/* v clamped to [0, 1]; NaN stays NaN, as the float kernel. */
static double
unit_clamp(double v)
{
	v = 0.0 > v ? 0.0 : v;
	return 1.0 < v ? 1.0 : v;
}

static enum qr_status
hard_sigmoid_run(struct qr_op_call *c, struct qr_diag *d)
{
	float a = ATTR("alpha", 0.2f), b = ATTR("beta", 0.5f);

	if (c->out[0]->dtype == QR_DT_FLOAT)
		qr_hard_sigmoid_f32(c->in[0]->data, c->in[0]->n_elem, a, b,
				    c->out[0]->data);
	else
		ACT_LOOP(double, unit_clamp(pa * x + pb), c, a, b);
	return QR_OK;
}

static enum qr_status
hard_swish_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype == QR_DT_FLOAT)
		qr_hard_swish_f32(c->in[0]->data, c->in[0]->n_elem,
				  c->out[0]->data);
	else
		ACT_LOOP(double, x * unit_clamp(x / 6.0 + 0.5), c, 0, 0);
	return QR_OK;
}
DEF_ACT(elu_double_run, x < 0 ? pa * (expf(x) - 1.0f) : x,
	x < 0 ? pa * (exp(x) - 1.0) : x, ATTR("alpha", 1.0f), 0)
DEF_ACT(selu_double_run, x <= 0 ? pb * (pa * expf(x) - pa) : pb * x,
	x <= 0 ? pb * (pa * exp(x) - pa) : pb * x,
	ATTR("alpha", 1.67326319217681884765625f),
	ATTR("gamma", 1.05070102214813232421875f))
DEF_ACT(softplus_double_run, x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)),
	x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)), 0, 0)
/* Softsign as ONNX Runtime's Eigen functor computes it: the reciprocal of
 * 1 + |x|, times x (two roundings, not x / (1 + |x|)). */
DEF_ACT(softsign_run, 1.0f / (1.0f + fabsf(x)) * x, 1.0 / (1.0 + fabs(x)) * x,
	0, 0)
DEF_ACT(thresholded_relu_run, x > pa ? x : 0, x > pa ? x : 0,
	ATTR("alpha", 1.0f), 0)
DEF_ACT(shrink_run, x < -pa ? x + pb : x > pa ? x - pb : 0,
	x < -pa ? x + pb : x > pa ? x - pb : 0, ATTR("lambd", 0.5f),
	ATTR("bias", 0.0f))
DEF_ACT(celu_double_run, fmaxf(0.0f, x) + fminf(0.0f, pa * (expf(x / pa) - 1.0f)),
	fmax(0.0, x) + fmin(0.0, pa * (exp(x / pa) - 1.0)),
	ATTR("alpha", 1.0f), 0)

/* Float Elu, Selu, Celu and Softplus with ONNX Runtime's bits: its Eigen
 * expressions, Eigen's exp and log (kernels' eigen.c), not libm's. */
static enum qr_status
elu_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return elu_double_run(c, d);
	qr_elu_ort_f32(c->in[0]->data, c->in[0]->n_elem, ATTR("alpha", 1.0f),
		       c->out[0]->data);
	return QR_OK;
}

static enum qr_status
selu_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return selu_double_run(c, d);
	qr_selu_ort_f32(c->in[0]->data, c->in[0]->n_elem,
			ATTR("alpha", 1.67326319217681884765625f),
			ATTR("gamma", 1.05070102214813232421875f),
			c->out[0]->data);
	return QR_OK;
}

static enum qr_status
celu_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return celu_double_run(c, d);
	qr_celu_ort_f32(c->in[0]->data, c->in[0]->n_elem, ATTR("alpha", 1.0f),
			c->out[0]->data);
	return QR_OK;
}

static enum qr_status
softplus_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return softplus_double_run(c, d);
	qr_softplus_ort_f32(c->in[0]->data, c->in[0]->n_elem, c->out[0]->data);
	return QR_OK;
}

#define ACT_DESC(sym, op, ver, chk, fn)                                     \
	const struct qr_op_desc sym = {                                     \
		.domain = "", .name = op, .since = ver, .check = chk,       \
		.infer = qr_op_same_infer, .run = fn,                      \
	};

ACT_DESC(qr_op_leaky_relu, "LeakyRelu", 6, float_check, leaky_relu_run)
ACT_DESC(qr_op_sigmoid, "Sigmoid", 6, float_check, sigmoid_run)
ACT_DESC(qr_op_hard_sigmoid, "HardSigmoid", 6, float_check, hard_sigmoid_run)
ACT_DESC(qr_op_hard_swish, "HardSwish", 14, float_check, hard_swish_run)
ACT_DESC(qr_op_elu, "Elu", 6, float_check, elu_run)
ACT_DESC(qr_op_selu, "Selu", 6, float_check, selu_run)
ACT_DESC(qr_op_softplus, "Softplus", 1, float_check, softplus_run)
ACT_DESC(qr_op_softsign, "Softsign", 1, float_check, softsign_run)
ACT_DESC(qr_op_thresholded_relu, "ThresholdedRelu", 10, float_check,
	 thresholded_relu_run)
ACT_DESC(qr_op_shrink, "Shrink", 9, float_check, shrink_run)
ACT_DESC(qr_op_celu, "Celu", 12, float_check, celu_run)

/* ---- Relu and Clip: floats and signed integers ---- */

/* y = min(max(x, lo), hi) over n elements of T; NaN stays NaN. */
#define CLAMP_LOOP(T, c, lo, hi)                                            \
	do {                                                                \
		const T *x_ = (c)->in[0]->data;                             \
		T *y_ = (c)->out[0]->data;                                  \
		size_t i_, n_ = (c)->out[0]->n_elem;                        \
		for (i_ = 0; i_ < n_; i_++) {                               \
			T v = x_[i_];                                       \
			v = v < (T)(lo) ? (T)(lo) : v;                      \
			y_[i_] = v > (T)(hi) ? (T)(hi) : v;                 \
		}                                                           \
	} while (0)

/* Clamp to [lo, hi] (as doubles, converted to the element type). */
static void
clamp_run(struct qr_op_call *c, double lo, double hi)
{
	switch (c->out[0]->dtype) {
	case QR_DT_FLOAT:
		qr_clamp_f32(c->in[0]->data, c->out[0]->n_elem, (float)lo,
			     (float)hi, c->out[0]->data);
		break;
	case QR_DT_DOUBLE: CLAMP_LOOP(double, c, lo, hi); break;
	case QR_DT_INT8: CLAMP_LOOP(int8_t, c, lo, hi); break;
	case QR_DT_INT16: CLAMP_LOOP(int16_t, c, lo, hi); break;
	case QR_DT_INT32: CLAMP_LOOP(int32_t, c, lo, hi); break;
	case QR_DT_INT64: CLAMP_LOOP(int64_t, c, lo, hi); break;
	case QR_DT_UINT8: CLAMP_LOOP(uint8_t, c, lo, hi); break;
	case QR_DT_UINT16: CLAMP_LOOP(uint16_t, c, lo, hi); break;
	case QR_DT_UINT32: CLAMP_LOOP(uint32_t, c, lo, hi); break;
	case QR_DT_UINT64: CLAMP_LOOP(uint64_t, c, lo, hi); break;
	default: QR_ASSERT(!"dtype refused by check");
	}
}

/* The largest value of dtype dt (as double, for clamps). */
static double
dtype_max(int dt)
{
	switch (dt) {
	case QR_DT_INT8: return INT8_MAX;
	case QR_DT_INT16: return INT16_MAX;
	case QR_DT_INT32: return INT32_MAX;
	case QR_DT_INT64: return (double)INT64_MAX;
	case QR_DT_UINT8: return UINT8_MAX;
	case QR_DT_UINT16: return UINT16_MAX;
	case QR_DT_UINT32: return UINT32_MAX;
	case QR_DT_UINT64: return (double)UINT64_MAX;
	default: return INFINITY;
	}
}

static double
dtype_min(int dt)
{
	switch (dt) {
	case QR_DT_INT8: return INT8_MIN;
	case QR_DT_INT16: return INT16_MIN;
	case QR_DT_INT32: return INT32_MIN;
	case QR_DT_INT64: return (double)INT64_MIN;
	case QR_DT_UINT8:
	case QR_DT_UINT16:
	case QR_DT_UINT32:
	case QR_DT_UINT64: return 0;
	default: return -INFINITY;
	}
}

static enum qr_status
relu_run(struct qr_op_call *c, struct qr_diag *d)
{
	clamp_run(c, 0, dtype_max(c->out[0]->dtype));
	return QR_OK;
}

const struct qr_op_desc qr_op_relu = {
	.domain = "", .name = "Relu", .since = 6,
	.check = relu_check, .infer = qr_op_same_infer, .run = relu_run,
};

/* Clip before opset 11: min and max are attributes. */
static enum qr_status
clip6_run(struct qr_op_call *c, struct qr_diag *d)
{
	clamp_run(c, qr_op_attr_float(c, "min", -INFINITY),
		  qr_op_attr_float(c, "max", INFINITY));
	return QR_OK;
}

const struct qr_op_desc qr_op_clip_6 = {
	.domain = "", .name = "Clip", .since = 6,
	.check = float_check, .infer = qr_op_same_infer, .run = clip6_run,
};

/* From opset 11: optional min and max inputs (scalars); integers from
 * opset 12. */
static enum qr_status
clip11_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return act_check_mask(c, d, 3, c->opset >= 12 ?
			      QR_DTM_NUMERIC : QR_DTM_FLOATS);
}

static enum qr_status
clip11_infer(struct qr_op_call *c, struct qr_diag *d)
{
	size_t i;

	for (i = 1; i < c->n_in; i++)
		if (c->in[i] != NULL && c->in[i]->n_elem != 1)
			return qr_op_errorf(c, d, QR_ESHAPE, "input %zu '%s' "
					    "must hold one value, not %zu", i,
					    qr_op_in_name(c, i),
					    c->in[i]->n_elem);
	return qr_op_same_infer(c, d);
}

static enum qr_status
clip11_run(struct qr_op_call *c, struct qr_diag *d)
{
	int dt = c->out[0]->dtype;
	double lo = dtype_min(dt), hi = dtype_max(dt);

	if (c->n_in > 1 && c->in[1] != NULL)
		lo = qr_op_get(c->in[1], 0);
	if (c->n_in > 2 && c->in[2] != NULL)
		hi = qr_op_get(c->in[2], 0);
	clamp_run(c, lo, hi);
	return QR_OK;
}

const struct qr_op_desc qr_op_clip_11 = {
	.domain = "", .name = "Clip", .since = 11,
	.check = clip11_check, .infer = clip11_infer, .run = clip11_run,
};

/* ---- PRelu: slope broadcast to x (unidirectional) ---- */

static enum qr_status
prelu_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOATS)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 1)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

/*
 * The slope as broadcast: numpy rules from opset 7; before, a 1-D slope
 * of x's channel count applies per channel (axis 1), as PyTorch exported
 * it. in[] gets x and the (possibly reshaped) slope.
 */
static void
prelu_inputs(const struct qr_op_call *c, struct qr_tensor *view,
	     struct qr_tensor **in)
{
	const struct qr_tensor *x = c->in[0], *s = c->in[1];
	int i;

	in[0] = c->in[0];
	in[1] = c->in[1];
	if (c->opset >= 7 || s->ndim != 1 || x->ndim < 3 ||
	    s->dims[0] != x->dims[1] || s->dims[0] == 1)
		return;
	*view = *s;
	for (i = 2; i < x->ndim; i++)
		view->dims[view->ndim++] = 1;
	in[1] = view;
}

static enum qr_status
prelu_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_tensor view, *in[2];
	enum qr_status st;
	char a[128], b[128];
	int ndim;

	prelu_inputs(c, &view, in);
	st = qr_op_broadcast_shape(c, d, in, 2, &ndim, dims);
	if (st != QR_OK)
		return st;
	if (!qr_op_same_shape(c->in[0], ndim, dims))
		return qr_op_errorf(c, d, QR_ESHAPE, "slope %s does not "
				    "broadcast to x %s",
				    qr_shape_str(c->in[1], a, sizeof a),
				    qr_shape_str(c->in[0], b, sizeof b));
	return qr_op_same_infer(c, d);
}

#define PRELU_LOOP(T, c, in)                                                \
	do {                                                                \
		struct qr_bcast it;                                         \
		const T *x = (in)[0]->data, *s = (in)[1]->data;             \
		T *y = (c)->out[0]->data;                                   \
		qr_bcast_init(&it, (c)->out[0]->ndim, (c)->out[0]->dims,    \
			      (in), 2);                                     \
		do {                                                        \
			size_t i;                                           \
			for (i = 0; i < it.inner; i++) {                    \
				T v = x[it.off[0] + i * it.step[0]];        \
				T k = s[it.off[1] + i * it.step[1]];        \
				y[it.out_off + i] = v < 0 ? v * k : v;      \
			}                                                   \
		} while (qr_bcast_next(&it));                               \
	} while (0)

static enum qr_status
prelu_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor view, *in[2];

	prelu_inputs(c, &view, in);
	if (c->out[0]->dtype == QR_DT_FLOAT)
		PRELU_LOOP(float, c, in);
	else
		PRELU_LOOP(double, c, in);
	return QR_OK;
}

const struct qr_op_desc qr_op_prelu = {
	.domain = "", .name = "PRelu", .since = 6,
	.check = prelu_check, .infer = prelu_infer, .run = prelu_run,
};
