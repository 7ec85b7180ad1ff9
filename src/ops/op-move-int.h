/*
 * op-move-int: what the data-movement op files (op_shape.c, op_cast.c,
 * op_constant.c, op_layout.c, op_index.c) share: element and strided
 * copies, dense strides, integer elements read exactly, and the check
 * and run of ops that copy their input as it is.
 *
 * Data movement is dtype-agnostic (elements are copied by size), so these
 * ops accept every dtype with a dense in-memory form (QR_DTM_ANY).
 */
#ifndef QR_OP_MOVE_INT_H
#define QR_OP_MOVE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ops/op-int.h"

/* One element of es bytes from src to dst. */
static inline void
qr_op_copy_elem(void *dst, const void *src, size_t es)
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
 * Transpose, Slice, Expand, DepthToSpace and SpaceToDepth.
 */
void qr_op_strided_copy(void *y, const void *x, size_t es, int ndim,
			const int64_t *dims, int64_t off,
			const int64_t *stride);
/* Dense strides (elements) of a shape into st. */
void qr_op_dense_strides(int ndim, const int64_t *dims, int64_t *st);

/* Element i of an integer (or bool) tensor, as int64 bits. */
int64_t qr_op_get_i64(const struct qr_tensor *t, size_t i);

/* Check: arity, and input 0 any copyable dtype (QR_DTM_ANY); every
 * output's dtype is input 0's. */
enum qr_status qr_op_move_check(const struct qr_op_call *c,
				struct qr_diag *d, size_t min_in,
				size_t max_in, size_t min_out,
				size_t max_out);
/* qr_op_move_check with one output, and input 1, when given, of a dtype
 * in mask1 (its shape, axes, indices, repeats or condition). */
enum qr_status qr_op_move_check_in1(const struct qr_op_call *c,
				    struct qr_diag *d, size_t min_in,
				    size_t max_in, unsigned long long mask1);
/* Input i, when given, must be an int32/int64 tensor. */
enum qr_status qr_op_want_index(const struct qr_op_call *c,
				struct qr_diag *d, size_t i);
/* Run: output 0 is a byte copy of input 0. */
enum qr_status qr_op_copy_run(struct qr_op_call *c, struct qr_diag *d);

#endif
