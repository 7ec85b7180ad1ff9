/*
 * op-int: what every op_*.c shares. Attribute getters, error helpers,
 * dtype sets and dispatch, axis normalisation and axes lists, reading
 * small integer tensors (shapes, axes), index walks and reduction
 * strides, and the broadcasting iterator.
 *
 * Writing an operator:
 *   1. write check/infer/run (and prepare/release if it packs data) in
 *      the op_*.c of its family, ending in
 *        const struct qr_op_desc qr_op_foo = {
 *            .domain = "", .name = "Foo", .since = 13,
 *            .check = foo_check, .infer = foo_infer, .run = foo_run,
 *        };
 *   2. add `QR_OP("", "Foo", 13, qr_op_foo)` to ops.def.
 * test_ops checks that the ops.def row and the descriptor agree.
 *
 * Error messages come from qr_op_errorf, which prefixes
 * "node 'NAME' (OP): " so every message names the node.
 */
#ifndef QR_OP_INT_H
#define QR_OP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "ops/ops.h"
#include "util/util.h"

/* Every descriptor listed in ops.def, declared once. */
#define QR_OP(dom, name, since, desc) extern const struct qr_op_desc desc;
#include "ops/ops.def"
#undef QR_OP

/* ---- errors ---- */

/* qr_errorf with "node 'NAME' (OP): " in front. */
enum qr_status qr_op_errorf(const struct qr_op_call *c, struct qr_diag *d,
			    enum qr_status st, const char *fmt, ...)
	QR_PRINTF(4, 5);
/* Name of the tensor at input / output i of the node ("" when absent). */
const char *qr_op_in_name(const struct qr_op_call *c, size_t i);
const char *qr_op_out_name(const struct qr_op_call *c, size_t i);

/* Arity: QR_EGRAPH unless c->n_in is within [min_in, max_in] and
 * c->n_out within [min_out, max_out], and none of the first min_in inputs
 * is "". */
enum qr_status qr_op_arity(const struct qr_op_call *c, struct qr_diag *d,
			   size_t min_in, size_t max_in, size_t min_out,
			   size_t max_out);
/* 1 when input i is given (present in the node and not ""). */
int qr_op_has_in(const struct qr_op_call *c, size_t i);

/* ---- attributes ---- */

int64_t qr_op_attr_int(const struct qr_op_call *c, const char *name,
		       int64_t dflt);
float qr_op_attr_float(const struct qr_op_call *c, const char *name,
		       float dflt);
const char *qr_op_attr_str(const struct qr_op_call *c, const char *name,
			   const char *dflt);
/* INTS attribute: its values and *n, or NULL (and *n = 0) when absent. */
const int64_t *qr_op_attr_ints(const struct qr_op_call *c, const char *name,
			       size_t *n);
/* FLOATS attribute, as qr_op_attr_ints. */
const float *qr_op_attr_floats(const struct qr_op_call *c, const char *name,
			       size_t *n);
/* 1 when the node has attribute name. */
int qr_op_has_attr(const struct qr_op_call *c, const char *name);

/* ---- dtypes ---- */

#define QR_DTM(dt) (1ull << (dt))
#define QR_DTM_FLOAT QR_DTM(QR_DT_FLOAT)
#define QR_DTM_FLOATS (QR_DTM(QR_DT_FLOAT) | QR_DTM(QR_DT_DOUBLE))
#define QR_DTM_SINTS (QR_DTM(QR_DT_INT8) | QR_DTM(QR_DT_INT16) | \
		      QR_DTM(QR_DT_INT32) | QR_DTM(QR_DT_INT64))
#define QR_DTM_UINTS (QR_DTM(QR_DT_UINT8) | QR_DTM(QR_DT_UINT16) | \
		      QR_DTM(QR_DT_UINT32) | QR_DTM(QR_DT_UINT64))
#define QR_DTM_INTS (QR_DTM_SINTS | QR_DTM_UINTS)
#define QR_DTM_NUMERIC (QR_DTM_FLOATS | QR_DTM_INTS)
/* Every dtype with a plain byte copy (for shape ops that move data). */
#define QR_DTM_ANY (QR_DTM_NUMERIC | QR_DTM(QR_DT_BOOL) | \
		    QR_DTM(QR_DT_FLOAT16) | QR_DTM(QR_DT_BFLOAT16))
#define QR_DTM_INDEX (QR_DTM(QR_DT_INT32) | QR_DTM(QR_DT_INT64))
/* The 8-bit quantized dtypes. */
#define QR_DTM_Q8 (QR_DTM(QR_DT_UINT8) | QR_DTM(QR_DT_INT8))

/*
 * Check the dtype of input i (when known: c->in_dtype[i] is not
 * QR_DT_UNDEFINED) is in mask. QR_EUNSUPPORTED naming the node, input and
 * dtype otherwise. Absent inputs pass.
 */
enum qr_status qr_op_want_dtype(const struct qr_op_call *c,
				struct qr_diag *d, size_t i,
				unsigned long long mask);
/* Every given input float (QR_EUNSUPPORTED naming it otherwise), every
 * output float: the check of the float-only ops. */
enum qr_status qr_op_all_float(const struct qr_op_call *c, struct qr_diag *d);
/* Inputs i and j must have the same dtype when both are known
 * (QR_EGRAPH otherwise). */
enum qr_status qr_op_same_dtype(const struct qr_op_call *c,
				struct qr_diag *d, size_t i, size_t j);
/* The dtype of input i known now, QR_DT_UNDEFINED when not. */
int qr_op_dtype(const struct qr_op_call *c, size_t i);

/*
 * Dispatch on a dtype: QR_OP_DISPATCH_NUMERIC(dt, M, args...) expands to a
 * switch calling M(T, args...) with T the C type of dt; `default` runs
 * QR_ASSERT(0), since check has refused other dtypes already.
 */
#define QR_OP_DISPATCH_FLOATS(dt, M, ...)                                   \
	switch (dt) {                                                       \
	case QR_DT_FLOAT: M(float, __VA_ARGS__); break;                     \
	case QR_DT_DOUBLE: M(double, __VA_ARGS__); break;                   \
	default: QR_ASSERT(!"dtype refused by check"); break;               \
	}
#define QR_OP_DISPATCH_NUMERIC(dt, M, ...)                                  \
	switch (dt) {                                                       \
	case QR_DT_FLOAT: M(float, __VA_ARGS__); break;                     \
	case QR_DT_DOUBLE: M(double, __VA_ARGS__); break;                   \
	case QR_DT_INT8: M(int8_t, __VA_ARGS__); break;                     \
	case QR_DT_INT16: M(int16_t, __VA_ARGS__); break;                   \
	case QR_DT_INT32: M(int32_t, __VA_ARGS__); break;                   \
	case QR_DT_INT64: M(int64_t, __VA_ARGS__); break;                   \
	case QR_DT_UINT8: M(uint8_t, __VA_ARGS__); break;                   \
	case QR_DT_UINT16: M(uint16_t, __VA_ARGS__); break;                 \
	case QR_DT_UINT32: M(uint32_t, __VA_ARGS__); break;                 \
	case QR_DT_UINT64: M(uint64_t, __VA_ARGS__); break;                 \
	default: QR_ASSERT(!"dtype refused by check"); break;               \
	}

/* Element i of any numeric, bool or 16-bit float tensor as double. */
double qr_op_get(const struct qr_tensor *t, size_t i);
/* Store v as element i, converted as C does when in range; integer
 * types saturate (NaN -> 0, out of range or +-Inf -> min/max). */
void qr_op_set(struct qr_tensor *t, size_t i, double v);

/* float16 and bfloat16 bits <-> float: qr_f16_to_f32 and its kin in
 * util/util.h. */

/* ---- shapes and axes ---- */

/*
 * Normalise axis, in [-rank, rank) (negative counts from the end), into
 * [0, rank). With allow_end, axis == rank is accepted too (Flatten's
 * "after the last axis"). QR_EGRAPH naming the node when out of range.
 */
enum qr_status qr_op_axis(const struct qr_op_call *c, struct qr_diag *d,
			  int64_t axis, int rank, int allow_end, int *out);
/*
 * Read an integer tensor (int32/int64, 1-D or scalar) into dst, which
 * holds max entries; *n gets the count. QR_EGRAPH when it holds more than
 * max values or is not an integer tensor; `what` names it in messages.
 */
enum qr_status qr_op_read_ints(const struct qr_op_call *c, struct qr_diag *d,
			       const struct qr_tensor *t, const char *what,
			       int64_t *dst, size_t max, size_t *n);
/* Product of dims[from..to). */
size_t qr_op_dims_prod(const int64_t *dims, int from, int to);
/* 1 when t's shape equals (ndim, dims). */
int qr_op_same_shape(const struct qr_tensor *t, int ndim,
		     const int64_t *dims);
/* Infer of the ops whose output 0 has input 0's dtype and shape. */
enum qr_status qr_op_same_infer(struct qr_op_call *c, struct qr_diag *d);

/*
 * The axes of Squeeze, Unsqueeze and the reductions into axes (room for
 * QR_TENSOR_MAX_DIMS), *n of them: input i when from_input (none when it
 * is absent), else the INTS attribute "axes". *given is 1 when either is
 * there. QR_ESHAPE naming the node when the attribute holds more than
 * QR_TENSOR_MAX_DIMS; the input's errors are qr_op_read_ints'.
 */
enum qr_status qr_op_axes_arg(const struct qr_op_call *c, struct qr_diag *d,
			      int from_input, size_t i, int64_t *axes,
			      size_t *n, int *given);
/*
 * mark[ax] = 1 for each of the n axes normalised against rank by
 * qr_op_axis (its QR_EGRAPH when one is out of range); other entries are
 * left as they are.
 */
enum qr_status qr_op_axes_mark(const struct qr_op_call *c, struct qr_diag *d,
			       const int64_t *axes, size_t n, int rank,
			       int *mark);

/*
 * A reduction of x over the axes where red[i] is 1: ost[i] is 0 on a
 * reduced axis, else the dense stride (elements) of the output on that
 * axis. Returns how many elements of x each output gathers; *n_out gets
 * the outputs (n_out may be NULL).
 */
size_t qr_op_reduce_strides(const struct qr_tensor *x, const int *red,
			    int64_t *ost, size_t *n_out);

/* Step idx, a position in dims (ndim axes, the last fastest), to the
 * next element; 0 past the last one, idx then back at zeros. */
static inline int
qr_op_next_index(int ndim, const int64_t *dims, int64_t *idx)
{
	int i;

	for (i = ndim - 1; i >= 0; i--) {
		if (++idx[i] < dims[i])
			return 1;
		idx[i] = 0;
	}
	return 0;
}

/* qr_op_next_index, moving *off by st[i] elements per step along axis i
 * (the strides of qr_op_reduce_strides, say): back at its start after
 * the last element. */
static inline void
qr_op_next_offset(int ndim, const int64_t *dims, const int64_t *st,
		  int64_t *idx, size_t *off)
{
	int i;

	for (i = ndim - 1; i >= 0; i--) {
		*off += (size_t)st[i];
		if (++idx[i] < dims[i])
			return;
		*off -= (size_t)(st[i] * dims[i]);
		idx[i] = 0;
	}
}

/* ---- broadcasting ---- */

#define QR_BCAST_MAX_IN 4

/*
 * The numpy broadcast shape of n tensors into (*ndim, dims). QR_ESHAPE
 * naming the node and both shapes when they do not broadcast.
 */
enum qr_status qr_op_broadcast_shape(const struct qr_op_call *c,
				     struct qr_diag *d,
				     struct qr_tensor *const *in, size_t n,
				     int *ndim, int64_t *dims);

/*
 * Walks an output shape and the matching element offsets of up to
 * QR_BCAST_MAX_IN inputs broadcast to it. Adjacent axes are merged where
 * every input allows, so the inner run (`inner` elements, input k stepping
 * by step[k], which is 0 or 1 for broadcast inputs) is as long as it can
 * be. Use:
 *
 *   struct qr_bcast b;
 *   qr_bcast_init(&b, out->ndim, out->dims, in, n);
 *   do {
 *       for (i = 0; i < b.inner; i++)
 *           y[b.out_off + i] = x0[b.off[0] + i * b.step[0]] + ...;
 *   } while (qr_bcast_next(&b));
 *
 * An output with no elements gives inner == 0 and a single empty pass.
 */
struct qr_bcast {
	size_t n_in;                      /* inputs */
	int rank;                         /* merged rank, >= 1 */
	int64_t dims[QR_TENSOR_MAX_DIMS]; /* merged output dims */
	size_t stride[QR_BCAST_MAX_IN][QR_TENSOR_MAX_DIMS]; /* elements */
	size_t idx[QR_TENSOR_MAX_DIMS];   /* current outer index */
	size_t inner;                     /* elements per inner run */
	size_t step[QR_BCAST_MAX_IN];     /* input stride along the run */
	size_t off[QR_BCAST_MAX_IN];      /* input offsets of this run */
	size_t out_off;                   /* output offset of this run */
};
/* Inputs must broadcast to (ndim, dims) (see qr_op_broadcast_shape). */
void qr_bcast_init(struct qr_bcast *b, int ndim, const int64_t *dims,
		   struct qr_tensor *const *in, size_t n);
/* Move to the next inner run; 0 when done. */
int qr_bcast_next(struct qr_bcast *b);

#endif
