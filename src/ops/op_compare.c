/*
 * op_compare: comparisons with numpy broadcasting giving bool tensors
 * (Equal, Less, Greater, LessOrEqual, GreaterOrEqual), boolean logic (And,
 * Or, Xor, Not) and BitShift. Comparisons with NaN are false, as in IEEE
 * 754 (so Equal(NaN, NaN) is false).
 */
#include <string.h>

#include "ops/op-int.h"

static enum qr_status
compare_check(const struct qr_op_call *c, struct qr_diag *d)
{
	unsigned long long mask = QR_DTM_NUMERIC;
	enum qr_status st;

	if (strcmp(c->node->op_type, "Equal") == 0)
		mask |= QR_DTM(QR_DT_BOOL);
	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, mask)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, mask)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 1)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_BOOL;
	return QR_OK;
}

static enum qr_status
compare_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int ndim;

	st = qr_op_broadcast_shape(c, d, c->in, 2, &ndim, dims);
	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], QR_DT_BOOL, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

/* y (bool) = a OP b over the broadcast, a and b of type T. */
#define CMP_LOOP(T, OP, c)                                                  \
	do {                                                                \
		struct qr_bcast it;                                         \
		const T *a = (c)->in[0]->data, *b = (c)->in[1]->data;       \
		uint8_t *y = (c)->out[0]->data;                             \
		qr_bcast_init(&it, (c)->out[0]->ndim, (c)->out[0]->dims,    \
			      (c)->in, 2);                                  \
		do {                                                        \
			size_t i;                                           \
			for (i = 0; i < it.inner; i++)                      \
				y[it.out_off + i] =                         \
					a[it.off[0] + i * it.step[0]] OP    \
					b[it.off[1] + i * it.step[1]];      \
		} while (qr_bcast_next(&it));                               \
	} while (0)

#define DEF_CMP(fn, OP)                                                     \
	static enum qr_status fn(struct qr_op_call *c, struct qr_diag *d)   \
	{                                                                   \
		switch (c->in[0]->dtype) {                                  \
		case QR_DT_FLOAT: CMP_LOOP(float, OP, c); break;            \
		case QR_DT_DOUBLE: CMP_LOOP(double, OP, c); break;          \
		case QR_DT_INT8: CMP_LOOP(int8_t, OP, c); break;            \
		case QR_DT_INT16: CMP_LOOP(int16_t, OP, c); break;          \
		case QR_DT_INT32: CMP_LOOP(int32_t, OP, c); break;          \
		case QR_DT_INT64: CMP_LOOP(int64_t, OP, c); break;          \
		case QR_DT_BOOL:                                            \
		case QR_DT_UINT8: CMP_LOOP(uint8_t, OP, c); break;          \
		case QR_DT_UINT16: CMP_LOOP(uint16_t, OP, c); break;        \
		case QR_DT_UINT32: CMP_LOOP(uint32_t, OP, c); break;        \
		case QR_DT_UINT64: CMP_LOOP(uint64_t, OP, c); break;        \
		default: QR_ASSERT(!"dtype refused by check");              \
		}                                                           \
		return QR_OK;                                               \
	}

DEF_CMP(equal_run, ==)
DEF_CMP(less_run, <)
DEF_CMP(greater_run, >)
DEF_CMP(less_equal_run, <=)
DEF_CMP(greater_equal_run, >=)

const struct qr_op_desc qr_op_equal = {
	.domain = "", .name = "Equal", .since = 7,
	.check = compare_check, .infer = compare_infer, .run = equal_run,
};
const struct qr_op_desc qr_op_less = {
	.domain = "", .name = "Less", .since = 7,
	.check = compare_check, .infer = compare_infer, .run = less_run,
};
const struct qr_op_desc qr_op_greater = {
	.domain = "", .name = "Greater", .since = 7,
	.check = compare_check, .infer = compare_infer, .run = greater_run,
};
const struct qr_op_desc qr_op_less_equal = {
	.domain = "", .name = "LessOrEqual", .since = 12,
	.check = compare_check, .infer = compare_infer,
	.run = less_equal_run,
};
const struct qr_op_desc qr_op_greater_equal = {
	.domain = "", .name = "GreaterOrEqual", .since = 12,
	.check = compare_check, .infer = compare_infer,
	.run = greater_equal_run,
};

/* ---- And, Or, Xor: bool x bool -> bool ---- */

static enum qr_status
logic_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM(QR_DT_BOOL))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM(QR_DT_BOOL))) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_BOOL;
	return QR_OK;
}

#define DEF_LOGIC(fn, OP)                                                   \
	static enum qr_status fn(struct qr_op_call *c, struct qr_diag *d)   \
	{                                                                   \
		CMP_LOOP(uint8_t, OP, c);                                   \
		return QR_OK;                                               \
	}

/* Bools are 0 or 1, so & | ^ on bytes are the logical ops. */
DEF_LOGIC(and_run, &)
DEF_LOGIC(or_run, |)
DEF_LOGIC(xor_run, ^)

const struct qr_op_desc qr_op_and = {
	.domain = "", .name = "And", .since = 7,
	.check = logic_check, .infer = compare_infer, .run = and_run,
};
const struct qr_op_desc qr_op_or = {
	.domain = "", .name = "Or", .since = 7,
	.check = logic_check, .infer = compare_infer, .run = or_run,
};
const struct qr_op_desc qr_op_xor = {
	.domain = "", .name = "Xor", .since = 7,
	.check = logic_check, .infer = compare_infer, .run = xor_run,
};

/* ---- BitShift: unsigned integers, broadcast ---- */

static enum qr_status
bitshift_check(const struct qr_op_call *c, struct qr_diag *d)
{
	const char *dir = qr_op_attr_str(c, "direction", "");
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_UINTS)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 1)) != QR_OK)
		return st;
	if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "direction must be LEFT or "
				    "RIGHT, not '%s'", dir);
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
bitshift_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int ndim;

	st = qr_op_broadcast_shape(c, d, c->in, 2, &ndim, dims);
	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

/* Shifts of the type's width or more give 0 (C leaves them undefined). */
#define SHIFT_LOOP(T, c, left)                                              \
	do {                                                                \
		struct qr_bcast it;                                         \
		const T *a = (c)->in[0]->data, *b = (c)->in[1]->data;       \
		T *y = (c)->out[0]->data;                                   \
		qr_bcast_init(&it, (c)->out[0]->ndim, (c)->out[0]->dims,    \
			      (c)->in, 2);                                  \
		do {                                                        \
			size_t i;                                           \
			for (i = 0; i < it.inner; i++) {                    \
				T v = a[it.off[0] + i * it.step[0]];        \
				T n = b[it.off[1] + i * it.step[1]];        \
				y[it.out_off + i] = n >= 8 * sizeof(T) ? 0 : \
					(T)((left) ? v << n : v >> n);      \
			}                                                   \
		} while (qr_bcast_next(&it));                               \
	} while (0)

static enum qr_status
bitshift_run(struct qr_op_call *c, struct qr_diag *d)
{
	int left = strcmp(qr_op_attr_str(c, "direction", ""), "LEFT") == 0;

	switch (c->out[0]->dtype) {
	case QR_DT_UINT8: SHIFT_LOOP(uint8_t, c, left); break;
	case QR_DT_UINT16: SHIFT_LOOP(uint16_t, c, left); break;
	case QR_DT_UINT32: SHIFT_LOOP(uint32_t, c, left); break;
	case QR_DT_UINT64: SHIFT_LOOP(uint64_t, c, left); break;
	default: QR_ASSERT(!"dtype refused by check");
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_bitshift = {
	.domain = "", .name = "BitShift", .since = 11,
	.check = bitshift_check, .infer = bitshift_infer,
	.run = bitshift_run,
};

static enum qr_status
not_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM(QR_DT_BOOL))) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_BOOL;
	return QR_OK;
}

static enum qr_status
not_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_tensor_set_shape(c->out[0], QR_DT_BOOL, c->in[0]->ndim,
				   c->in[0]->dims, qr_op_out_name(c, 0), d);
}

static enum qr_status
not_run(struct qr_op_call *c, struct qr_diag *d)
{
	const uint8_t *x = c->in[0]->data;
	uint8_t *y = c->out[0]->data;
	size_t i;

	for (i = 0; i < c->out[0]->n_elem; i++)
		y[i] = !x[i];
	return QR_OK;
}

const struct qr_op_desc qr_op_not = {
	.domain = "", .name = "Not", .since = 1,
	.check = not_check, .infer = not_infer, .run = not_run,
};
