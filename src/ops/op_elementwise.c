/*
 * op_elementwise: arithmetic with numpy broadcasting (Add, Sub, Mul, Div,
 * Pow, Mod, and the variadic Max, Min, Sum, Mean), unary maths (Sqrt, Exp,
 * Log, Neg, Abs, Reciprocal, Floor, Ceil, Round, Sign, Erf, Tanh and the
 * trigonometric family), IsNaN/IsInf and CumSum.
 *
 * Integer arithmetic wraps (two's complement) rather than trapping;
 * integer division by zero gives 0 and truncates towards zero, as ONNX
 * Runtime does. NaN and Inf pass through float paths untouched.
 */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

/* ---- shared check / infer ---- */

/* Binary ops: same dtype for both inputs, within mask; output alike. */
static enum qr_status
binary_check_mask(const struct qr_op_call *c, struct qr_diag *d,
		  unsigned long long mask)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, mask)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, mask)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 1)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	if (c->out_dtype[0] == QR_DT_UNDEFINED)
		c->out_dtype[0] = qr_op_dtype(c, 1);
	return QR_OK;
}

static enum qr_status
arith_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return binary_check_mask(c, d, QR_DTM_NUMERIC);
}

static struct qr_tensor *legacy_view(const struct qr_op_call *c,
				     struct qr_tensor *view);
static enum qr_status broadcast_infer(struct qr_op_call *c,
				      struct qr_diag *d);

/* Binary ops: numpy broadcasting, or the legacy kind before opset 7. */
static enum qr_status
binary_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_call cc;
	struct qr_tensor view, *in[2];
	enum qr_status st;
	char a[128], b[128];

	if (c->opset >= 7)
		return broadcast_infer(c, d);
	cc = *c;
	in[0] = c->in[0];
	in[1] = legacy_view(c, &view);
	cc.in = in;
	st = broadcast_infer(&cc, d);
	if (st == QR_OK && !qr_op_same_shape(c->out[0], c->in[0]->ndim,
					     c->in[0]->dims))
		return qr_op_errorf(c, d, QR_ESHAPE, "B %s does not broadcast "
				    "to A %s (broadcast=%lld, opset %d)",
				    qr_shape_str(c->in[1], b, sizeof b),
				    qr_shape_str(c->in[0], a, sizeof a),
				    (long long)qr_op_attr_int(c, "broadcast",
							      0), c->opset);
	return st;
}

/*
 * Before opset 7, binary ops broadcast only with broadcast=1, and then B's
 * dims line up with A's from `axis` (default: the trailing dims). The
 * view is B with trailing 1s that turn this into numpy broadcasting.
 */
static struct qr_tensor *
legacy_view(const struct qr_op_call *c, struct qr_tensor *view)
{
	const struct qr_tensor *a = c->in[0], *b = c->in[1];
	int64_t axis = qr_op_attr_int(c, "axis", a->ndim - b->ndim);
	int i;

	*view = *b;
	if (!qr_op_attr_int(c, "broadcast", 0) || axis < 0 ||
	    axis + b->ndim > a->ndim)
		return view;
	for (i = (int)axis + b->ndim; i < a->ndim; i++)
		view->dims[view->ndim++] = 1;
	return view;
}

/* Output: the broadcast shape of all inputs, dtype of input 0. */
static enum qr_status
broadcast_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int ndim;

	st = qr_op_broadcast_shape(c, d, c->in, c->n_in, &ndim, dims);
	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

/*
 * y = EXPR(x, z) over the broadcast of a (x) and b (z), element type T.
 * Specialised inner loops for the common stride patterns let the
 * compiler vectorise them.
 */
#define BIN_LOOP(T, EXPR, a_t, b_t, y_t)                                    \
	do {                                                                \
		typedef T elem_t;                                           \
		struct qr_bcast it_;                                        \
		(void)sizeof(elem_t);                                        \
		struct qr_tensor *io_[2] = {(a_t), (b_t)};                  \
		const T *a_ = (a_t)->data, *b_ = (b_t)->data;               \
		T *y_ = (y_t)->data;                                        \
		if ((y_t)->n_elem == 0) /* data may be NULL: no NULL + 0 */ \
			break;                                              \
		qr_bcast_init(&it_, (y_t)->ndim, (y_t)->dims, io_, 2);      \
		do {                                                        \
			const T *pa = a_ + it_.off[0], *pb = b_ + it_.off[1]; \
			T *py = y_ + it_.out_off;                           \
			size_t i_, n_ = it_.inner;                          \
			if (it_.step[0] && it_.step[1]) {                   \
				for (i_ = 0; i_ < n_; i_++) {               \
					T x = pa[i_], z = pb[i_];           \
					py[i_] = (T)(EXPR);                 \
				}                                           \
			} else if (it_.step[0]) {                           \
				const T z = n_ ? pb[0] : 0;                 \
				for (i_ = 0; i_ < n_; i_++) {               \
					T x = pa[i_];                       \
					py[i_] = (T)(EXPR);                 \
				}                                           \
			} else if (it_.step[1]) {                           \
				const T x = n_ ? pa[0] : 0;                 \
				for (i_ = 0; i_ < n_; i_++) {               \
					T z = pb[i_];                       \
					py[i_] = (T)(EXPR);                 \
				}                                           \
			} else {                                            \
				const T x = n_ ? pa[0] : 0;                 \
				const T z = n_ ? pb[0] : 0;                 \
				for (i_ = 0; i_ < n_; i_++)                 \
					py[i_] = (T)(EXPR);                 \
			}                                                   \
		} while (qr_bcast_next(&it_));                              \
	} while (0)

/* Integer ops in unsigned arithmetic, so overflow wraps instead of being
 * undefined. The loops below name their element type elem_t. */
#define WRAP(T, op, x, z)                                                   \
	((T)((uint64_t)(int64_t)(x) op (uint64_t)(int64_t)(z)))

/* Truncating integer division; 0 for a zero divisor, wraps on MIN / -1. */
#define IDIV(T, x, z)                                                       \
	((z) == 0 ? (T)0 : ((z) == (T)-1 && (T)-1 < (T)1) ?                 \
	 WRAP(T, -, 0, x) : (T)((x) / (z)))

/*
 * Run a binary op on y = f(a, b): FEXPR for float and double, IEXPR for
 * the integer types (each sees x, z and elem_t).
 */
#define BIN_DISPATCH(dt, FEXPR, IEXPR, a_t, b_t, y_t)                       \
	switch (dt) {                                                       \
	case QR_DT_FLOAT: BIN_LOOP(float, FEXPR, a_t, b_t, y_t); break;     \
	case QR_DT_DOUBLE: BIN_LOOP(double, FEXPR, a_t, b_t, y_t); break;   \
	case QR_DT_INT8: BIN_LOOP(int8_t, IEXPR, a_t, b_t, y_t); break;     \
	case QR_DT_INT16: BIN_LOOP(int16_t, IEXPR, a_t, b_t, y_t); break;   \
	case QR_DT_INT32: BIN_LOOP(int32_t, IEXPR, a_t, b_t, y_t); break;   \
	case QR_DT_INT64: BIN_LOOP(int64_t, IEXPR, a_t, b_t, y_t); break;   \
	case QR_DT_UINT8: BIN_LOOP(uint8_t, IEXPR, a_t, b_t, y_t); break;   \
	case QR_DT_UINT16: BIN_LOOP(uint16_t, IEXPR, a_t, b_t, y_t); break; \
	case QR_DT_UINT32: BIN_LOOP(uint32_t, IEXPR, a_t, b_t, y_t); break; \
	case QR_DT_UINT64: BIN_LOOP(uint64_t, IEXPR, a_t, b_t, y_t); break; \
	default: QR_ASSERT(!"dtype refused by check");                      \
	}

/* y = a op b on floats, a broadcast run at a time through the kernel. */
static void
binary_f32(enum qr_binop op, struct qr_tensor *a, struct qr_tensor *b,
	   struct qr_tensor *y)
{
	struct qr_tensor *io[2] = {a, b};
	const float *pa = a->data, *pb = b->data;
	float *py = y->data;
	struct qr_bcast it;

	if (y->n_elem == 0)
		return;
	qr_bcast_init(&it, y->ndim, y->dims, io, 2);
	do
		qr_binary_row_f32(op, it.inner, pa + it.off[0], it.step[0],
				  pb + it.off[1], it.step[1], py + it.out_off);
	while (qr_bcast_next(&it));
}

#define DEF_BINARY(fn, FEXPR, IEXPR)                                        \
	static enum qr_status fn(struct qr_op_call *c, struct qr_diag *d)   \
	{                                                                   \
		struct qr_tensor *bt_ = c->in[1], view_;                    \
		if (c->opset < 7)                                           \
			bt_ = legacy_view(c, &view_);                       \
		BIN_DISPATCH(c->out[0]->dtype, FEXPR, IEXPR, c->in[0], bt_, \
			     c->out[0]);                                    \
		return QR_OK;                                               \
	}

/* DEF_BINARY with float runs through the kernel's op (+ - * /). */
#define DEF_ARITH(fn, OP, FEXPR, IEXPR)                                     \
	static enum qr_status fn(struct qr_op_call *c, struct qr_diag *d)   \
	{                                                                   \
		struct qr_tensor *bt_ = c->in[1], view_;                    \
		if (c->opset < 7)                                           \
			bt_ = legacy_view(c, &view_);                       \
		if (c->out[0]->dtype == QR_DT_FLOAT)                        \
			binary_f32(OP, c->in[0], bt_, c->out[0]);           \
		else                                                        \
			BIN_DISPATCH(c->out[0]->dtype, FEXPR, IEXPR,        \
				     c->in[0], bt_, c->out[0]);             \
		return QR_OK;                                               \
	}

DEF_ARITH(add_run, QR_BIN_ADD, x + z, WRAP(elem_t, +, x, z))
DEF_ARITH(sub_run, QR_BIN_SUB, x - z, WRAP(elem_t, -, x, z))
DEF_ARITH(mul_run, QR_BIN_MUL, x * z, WRAP(elem_t, *, x, z))
DEF_ARITH(div_run, QR_BIN_DIV, x / z, IDIV(elem_t, x, z))

const struct qr_op_desc qr_op_add = {
	.domain = "", .name = "Add", .since = 6,
	.check = arith_check, .infer = binary_infer, .run = add_run,
};
const struct qr_op_desc qr_op_sub = {
	.domain = "", .name = "Sub", .since = 6,
	.check = arith_check, .infer = binary_infer, .run = sub_run,
};
const struct qr_op_desc qr_op_mul = {
	.domain = "", .name = "Mul", .since = 6,
	.check = arith_check, .infer = binary_infer, .run = mul_run,
};
const struct qr_op_desc qr_op_div = {
	.domain = "", .name = "Div", .since = 6,
	.check = arith_check, .infer = binary_infer, .run = div_run,
};

/* ---- Pow: base float/double/int32/int64, exponent any numeric ---- */

static enum qr_status
pow_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOATS |
				   QR_DTM_INDEX)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_NUMERIC)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
pow_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_tensor *y = c->out[0], view, *in[2];
	struct qr_bcast it;

	in[0] = c->in[0];
	in[1] = c->opset < 7 ? legacy_view(c, &view) : c->in[1];
	if (y->dtype == QR_DT_FLOAT && in[1]->dtype == QR_DT_FLOAT) {
		const float *xd = in[0]->data;
		float *yd = y->data, e = in[1]->n_elem == 1 ?
			*(const float *)in[1]->data : 0.0f;
		size_t i;

		/* ONNX Runtime squares and cubes by products for a single
		 * exponent of 2 or 3, correctly rounded where powf may be an
		 * ulp off (a decomposed LayerNorm's Pow(x - mean, 2)); y then
		 * has x's shape */
		if (in[1]->n_elem == 1 && (e == 2.0f || e == 3.0f)) {
			for (i = 0; i < y->n_elem; i++)
				yd[i] = e == 2.0f ? xd[i] * xd[i] :
					xd[i] * xd[i] * xd[i];
			return QR_OK;
		}
		BIN_LOOP(float, powf(x, z), in[0], in[1], y);
		return QR_OK;
	}
	/* Mixed types: in double, stored in the base's type. */
	qr_bcast_init(&it, y->ndim, y->dims, in, 2);
	do {
		size_t i;

		for (i = 0; i < it.inner; i++) {
			double x = qr_op_get(in[0], it.off[0] + i * it.step[0]);
			double z = qr_op_get(in[1], it.off[1] + i * it.step[1]);

			qr_op_set(y, it.out_off + i, pow(x, z));
		}
	} while (qr_bcast_next(&it));
	return QR_OK;
}

const struct qr_op_desc qr_op_pow = {
	.domain = "", .name = "Pow", .since = 1,
	.check = pow_check, .infer = binary_infer, .run = pow_run,
};

/* ---- variadic: Max, Min, Sum, Mean ---- */

static enum qr_status
variadic_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	size_t i;

	if ((st = qr_op_arity(c, d, 1, 1024, 1, 1)) != QR_OK)
		return st;
	for (i = 0; i < c->n_in; i++) {
		if ((st = qr_op_want_dtype(c, d, i, QR_DTM_NUMERIC)) != QR_OK ||
		    (st = qr_op_same_dtype(c, d, 0, i)) != QR_OK)
			return st;
		if (!qr_op_has_in(c, i))
			return qr_op_errorf(c, d, QR_EGRAPH, "input %zu is "
					    "empty", i);
	}
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

/* y = in[0] broadcast to y's shape. */
static void
broadcast_copy(struct qr_tensor *x, struct qr_tensor *y)
{
	size_t es = qr_dtype_size(y->dtype), i;
	struct qr_bcast it;
	const char *src = x->data;
	char *dst = y->data;

	qr_bcast_init(&it, y->ndim, y->dims, &x, 1);
	do {
		if (it.step[0]) {
			memcpy(dst + it.out_off * es, src + it.off[0] * es,
			       it.inner * es);
			continue;
		}
		for (i = 0; i < it.inner; i++)
			memcpy(dst + (it.out_off + i) * es,
			       src + it.off[0] * es, es);
	} while (qr_bcast_next(&it));
}

/* Max/min that propagate NaN, as numpy.maximum does. */
#define FMAX(x, z) ((x) > (z) || (x) != (x) ? (x) : (z))
#define FMIN(x, z) ((x) < (z) || (x) != (x) ? (x) : (z))

#define DEF_VARIADIC(fn, FEXPR, IEXPR, MEAN)                                \
	static enum qr_status fn(struct qr_op_call *c, struct qr_diag *d)   \
	{                                                                   \
		struct qr_tensor *y = c->out[0];                            \
		size_t k;                                                   \
		if (y->n_elem == 0) /* data is NULL */                      \
			return QR_OK;                                       \
		broadcast_copy(c->in[0], y);                                \
		for (k = 1; k < c->n_in; k++)                               \
			BIN_DISPATCH(y->dtype, FEXPR, IEXPR, y, c->in[k], y); \
		if (MEAN)                                                   \
			for (k = 0; k < y->n_elem; k++)                     \
				qr_op_set(y, k, qr_op_get(y, k) /           \
					  (double)c->n_in);                 \
		return QR_OK;                                               \
	}

DEF_VARIADIC(max_run, FMAX(x, z), (x > z ? x : z), 0)
DEF_VARIADIC(min_run, FMIN(x, z), (x < z ? x : z), 0)
DEF_VARIADIC(sum_run, x + z, WRAP(elem_t, +, x, z), 0)
DEF_VARIADIC(mean_run, x + z, WRAP(elem_t, +, x, z), 1)

const struct qr_op_desc qr_op_max = {
	.domain = "", .name = "Max", .since = 6,
	.check = variadic_check, .infer = broadcast_infer, .run = max_run,
};
const struct qr_op_desc qr_op_min = {
	.domain = "", .name = "Min", .since = 6,
	.check = variadic_check, .infer = broadcast_infer, .run = min_run,
};
const struct qr_op_desc qr_op_sum = {
	.domain = "", .name = "Sum", .since = 6,
	.check = variadic_check, .infer = broadcast_infer, .run = sum_run,
};
const struct qr_op_desc qr_op_mean = {
	.domain = "", .name = "Mean", .since = 6,
	.check = variadic_check, .infer = broadcast_infer, .run = mean_run,
};

/* ---- unary ---- */

static enum qr_status
unary_check_mask(const struct qr_op_call *c, struct qr_diag *d,
		 unsigned long long mask)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, mask)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
unary_float_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return unary_check_mask(c, d, QR_DTM_FLOATS);
}

static enum qr_status
unary_signed_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return unary_check_mask(c, d, QR_DTM_FLOATS | QR_DTM_SINTS);
}

#define UN_LOOP(T, EXPR, c)                                                 \
	do {                                                                \
		typedef T elem_t;                                           \
		const T *x_ = (c)->in[0]->data;                             \
		(void)sizeof(elem_t);                                       \
		T *y_ = (c)->out[0]->data;                                  \
		size_t i_, n_ = (c)->out[0]->n_elem;                        \
		for (i_ = 0; i_ < n_; i_++) {                               \
			T x = x_[i_];                                       \
			(void)x;                                            \
			y_[i_] = (T)(EXPR);                                 \
		}                                                           \
	} while (0)

/* FEXPR on float, DEXPR on double, IEXPR on signed integers. */
#define DEF_UNARY(fn, FEXPR, DEXPR, IEXPR)                                  \
	static enum qr_status fn(struct qr_op_call *c, struct qr_diag *d)   \
	{                                                                   \
		switch (c->out[0]->dtype) {                                 \
		case QR_DT_FLOAT: UN_LOOP(float, FEXPR, c); break;          \
		case QR_DT_DOUBLE: UN_LOOP(double, DEXPR, c); break;        \
		case QR_DT_INT8: UN_LOOP(int8_t, IEXPR, c); break;          \
		case QR_DT_INT16: UN_LOOP(int16_t, IEXPR, c); break;        \
		case QR_DT_INT32: UN_LOOP(int32_t, IEXPR, c); break;        \
		case QR_DT_INT64: UN_LOOP(int64_t, IEXPR, c); break;        \
		default: QR_ASSERT(!"dtype refused by check");              \
		}                                                           \
		return QR_OK;                                               \
	}

DEF_UNARY(sqrt_run, sqrtf(x), sqrt(x), 0)
DEF_UNARY(exp_double_run, expf(x), exp(x), 0)

/* Float Exp with ONNX Runtime's bits (MLAS's kernel), not libm's. */
static enum qr_status
exp_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return exp_double_run(c, d);
	qr_exp_ort_f32(c->in[0]->data, c->in[0]->n_elem, c->out[0]->data);
	return QR_OK;
}
DEF_UNARY(log_double_run, logf(x), log(x), 0)

/* Float Log, Sin and Cos with ONNX Runtime's bits: Eigen's polynomials
 * (kernels' eigen.c), not libm's. */
static enum qr_status
log_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return log_double_run(c, d);
	qr_log_ort_f32(c->in[0]->data, c->in[0]->n_elem, c->out[0]->data);
	return QR_OK;
}
DEF_UNARY(neg_run, -x, -x, WRAP(elem_t, -, 0, x))
DEF_UNARY(abs_run, fabsf(x), fabs(x), (x < 0 ? WRAP(elem_t, -, 0, x) : x))
DEF_UNARY(reciprocal_run, 1.0f / x, 1.0 / x, 0)
DEF_UNARY(floor_run, floorf(x), floor(x), 0)
DEF_UNARY(ceil_run, ceilf(x), ceil(x), 0)
DEF_UNARY(erf_double_run, erff(x), erf(x), 0)

/* Float Erf with ONNX Runtime's bits (MLAS's kernel), not libm's. */
static enum qr_status
erf_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return erf_double_run(c, d);
	qr_erf_ort_f32(c->in[0]->data, c->in[0]->n_elem, c->out[0]->data);
	return QR_OK;
}
DEF_UNARY(tanh_double_run, tanhf(x), tanh(x), 0)

/* Float Tanh with ONNX Runtime's bits (MLAS's kernel), not libm's: a
 * Tanh in a QDQ model feeds a QuantizeLinear, where an ulp can move a
 * whole step. */
static enum qr_status
tanh_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return tanh_double_run(c, d);
	qr_tanh_ort_f32(c->in[0]->data, c->in[0]->n_elem, c->out[0]->data);
	return QR_OK;
}
DEF_UNARY(sin_double_run, sinf(x), sin(x), 0)
DEF_UNARY(cos_double_run, cosf(x), cos(x), 0)

static enum qr_status
sin_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return sin_double_run(c, d);
	qr_sin_ort_f32(c->in[0]->data, c->in[0]->n_elem, c->out[0]->data);
	return QR_OK;
}

static enum qr_status
cos_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->dtype != QR_DT_FLOAT)
		return cos_double_run(c, d);
	qr_cos_ort_f32(c->in[0]->data, c->in[0]->n_elem, c->out[0]->data);
	return QR_OK;
}

#define UNARY_DESC(sym, op, ver, chk, fn)                                   \
	const struct qr_op_desc sym = {                                     \
		.domain = "", .name = op, .since = ver, .check = chk,       \
		.infer = qr_op_same_infer, .run = fn,                      \
	};

UNARY_DESC(qr_op_sqrt, "Sqrt", 6, unary_float_check, sqrt_run)
UNARY_DESC(qr_op_exp, "Exp", 6, unary_float_check, exp_run)
UNARY_DESC(qr_op_log, "Log", 6, unary_float_check, log_run)
UNARY_DESC(qr_op_neg, "Neg", 6, unary_signed_check, neg_run)
UNARY_DESC(qr_op_abs, "Abs", 6, unary_signed_check, abs_run)
UNARY_DESC(qr_op_reciprocal, "Reciprocal", 6, unary_float_check,
	   reciprocal_run)
UNARY_DESC(qr_op_floor, "Floor", 6, unary_float_check, floor_run)
UNARY_DESC(qr_op_ceil, "Ceil", 6, unary_float_check, ceil_run)
UNARY_DESC(qr_op_erf, "Erf", 9, unary_float_check, erf_run)
UNARY_DESC(qr_op_tanh, "Tanh", 6, unary_float_check, tanh_run)
UNARY_DESC(qr_op_sin, "Sin", 7, unary_float_check, sin_run)
UNARY_DESC(qr_op_cos, "Cos", 7, unary_float_check, cos_run)

DEF_UNARY(acos_run, acosf(x), acos(x), 0)
DEF_UNARY(acosh_run, acoshf(x), acosh(x), 0)
DEF_UNARY(asin_run, asinf(x), asin(x), 0)
DEF_UNARY(asinh_run, asinhf(x), asinh(x), 0)
DEF_UNARY(atan_run, atanf(x), atan(x), 0)
DEF_UNARY(atanh_run, atanhf(x), atanh(x), 0)
DEF_UNARY(cosh_run, coshf(x), cosh(x), 0)
DEF_UNARY(sinh_run, sinhf(x), sinh(x), 0)
DEF_UNARY(tan_run, tanf(x), tan(x), 0)
/* Round: half to even (rint in the default rounding mode). */
DEF_UNARY(round_run, rintf(x), rint(x), 0)
/* Sign: NaN stays NaN (as ONNX Runtime's), -0 gives +0. */
DEF_UNARY(sign_run, x != x ? x : (float)((x > 0) - (x < 0)),
	  x != x ? x : (double)((x > 0) - (x < 0)), (x > 0) - (x < 0))

UNARY_DESC(qr_op_acos, "Acos", 7, unary_float_check, acos_run)
UNARY_DESC(qr_op_acosh, "Acosh", 9, unary_float_check, acosh_run)
UNARY_DESC(qr_op_asin, "Asin", 7, unary_float_check, asin_run)
UNARY_DESC(qr_op_asinh, "Asinh", 9, unary_float_check, asinh_run)
UNARY_DESC(qr_op_atan, "Atan", 7, unary_float_check, atan_run)
UNARY_DESC(qr_op_atanh, "Atanh", 9, unary_float_check, atanh_run)
UNARY_DESC(qr_op_cosh, "Cosh", 9, unary_float_check, cosh_run)
UNARY_DESC(qr_op_sinh, "Sinh", 9, unary_float_check, sinh_run)
UNARY_DESC(qr_op_tan, "Tan", 7, unary_float_check, tan_run)
UNARY_DESC(qr_op_round, "Round", 11, unary_float_check, round_run)
UNARY_DESC(qr_op_sign, "Sign", 9, unary_signed_check, sign_run)

/* ---- IsNaN, IsInf: float -> bool ---- */

static enum qr_status
isx_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = unary_check_mask(c, d, QR_DTM_FLOATS);

	c->out_dtype[0] = QR_DT_BOOL;
	return st;
}

static enum qr_status
isx_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_tensor_set_shape(c->out[0], QR_DT_BOOL, c->in[0]->ndim,
				   c->in[0]->dims, qr_op_out_name(c, 0), d);
}

static enum qr_status
isx_run(struct qr_op_call *c, struct qr_diag *d)
{
	int nan = strcmp(c->node->op_type, "IsNaN") == 0;
	int neg = (int)qr_op_attr_int(c, "detect_negative", 1);
	int pos = (int)qr_op_attr_int(c, "detect_positive", 1);
	uint8_t *y = c->out[0]->data;
	size_t i;

	for (i = 0; i < c->out[0]->n_elem; i++) {
		double v = qr_op_get(c->in[0], i);

		y[i] = nan ? isnan(v) != 0 :
			isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_isnan = {
	.domain = "", .name = "IsNaN", .since = 9,
	.check = isx_check, .infer = isx_infer, .run = isx_run,
};
const struct qr_op_desc qr_op_isinf = {
	.domain = "", .name = "IsInf", .since = 10,
	.check = isx_check, .infer = isx_infer, .run = isx_run,
};

/* ---- Mod ---- */

static enum qr_status
mod_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st = binary_check_mask(c, d, QR_DTM_NUMERIC);
	int dt = qr_op_dtype(c, 0);

	if (st == QR_OK && qr_op_attr_int(c, "fmod", 0) == 0 &&
	    (dt == QR_DT_FLOAT || dt == QR_DT_DOUBLE))
		return qr_op_errorf(c, d, QR_EGRAPH, "fmod must be 1 for "
				    "floating point inputs");
	return st;
}

/* Integer modulo with the divisor's sign (Python's %); 0 for x % 0. */
static inline int64_t
imod_floor(int64_t x, int64_t z)
{
	int64_t r;

	if (z == 0 || z == -1)
		return 0;
	r = x % z;
	return r != 0 && ((r < 0) != (z < 0)) ? r + z : r;
}

/* C's % (the dividend's sign), without the traps. */
static inline int64_t
imod_trunc(int64_t x, int64_t z)
{
	return z == 0 || z == -1 ? 0 : x % z;
}

static inline uint64_t
umod(uint64_t x, uint64_t z)
{
	return z == 0 ? 0 : x % z;
}

#define IMOD(T, f, x, z)                                                    \
	((T)-1 < (T)1 ? (T)f((int64_t)(x), (int64_t)(z)) :                  \
	 (T)umod((uint64_t)(x), (uint64_t)(z)))

DEF_BINARY(mod_floor_run, fmod(x, z), IMOD(elem_t, imod_floor, x, z))
DEF_BINARY(mod_trunc_run, fmod(x, z), IMOD(elem_t, imod_trunc, x, z))

static enum qr_status
mod_run(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_attr_int(c, "fmod", 0) ? mod_trunc_run(c, d) :
		mod_floor_run(c, d);
}

const struct qr_op_desc qr_op_mod = {
	.domain = "", .name = "Mod", .since = 10,
	.check = mod_check, .infer = broadcast_infer, .run = mod_run,
};

/* ---- CumSum ---- */

static enum qr_status
cumsum_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOATS | QR_DTM_INDEX |
				   QR_DTM(QR_DT_UINT32) |
				   QR_DTM(QR_DT_UINT64))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_INDEX)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
cumsum_axis(struct qr_op_call *c, struct qr_diag *d, int *axis)
{
	if (c->in[1]->n_elem != 1)
		return qr_op_errorf(c, d, QR_ESHAPE, "axis must hold one value");
	return qr_op_axis(c, d, (int64_t)qr_op_get(c->in[1], 0),
			  c->in[0]->ndim, 0, axis);
}

static enum qr_status
cumsum_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int axis;
	enum qr_status st = cumsum_axis(c, d, &axis);

	return st != QR_OK ? st : qr_op_same_infer(c, d);
}

static enum qr_status
cumsum_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	int excl = (int)qr_op_attr_int(c, "exclusive", 0);
	int rev = (int)qr_op_attr_int(c, "reverse", 0);
	size_t outer, len, inner, o, j, k;
	int axis;

	cumsum_axis(c, d, &axis);
	outer = qr_op_dims_prod(x->dims, 0, axis);
	len = (size_t)x->dims[axis];
	inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim);
	for (o = 0; o < outer; o++) {
		for (j = 0; j < inner; j++) {
			double acc = 0;

			for (k = 0; k < len; k++) {
				size_t kk = rev ? len - 1 - k : k;
				size_t p = (o * len + kk) * inner + j;
				double v = qr_op_get(x, p);

				if (excl) {
					qr_op_set(y, p, acc);
					acc += v;
				} else {
					acc += v;
					qr_op_set(y, p, acc);
				}
			}
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_cumsum = {
	.domain = "", .name = "CumSum", .since = 11,
	.check = cumsum_check, .infer = cumsum_infer, .run = cumsum_run,
};
