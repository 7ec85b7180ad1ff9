/*
 * move: helpers of the data-movement ops (op_shape.c, op_cast.c,
 * op_constant.c, op_layout.c, op_index.c). See op-move-int.h.
 */
#include <string.h>

#include "ops/op-move-int.h"

/*
 * Fill dense y (ndim, dims) from x read at x + off + sum(idx[i] *
 * stride[i]) elements; strides may be negative or zero. Shared by
 * Transpose, Slice and Expand.
 */
void
qr_op_strided_copy(void *y, const void *x, size_t es, int ndim,
		   const int64_t *dims, int64_t off, const int64_t *stride)
{
	int64_t idx[QR_TENSOR_MAX_DIMS] = {0};
	const char *src = x;
	char *dst = y;
	size_t n = 1, inner, k;
	int64_t pos = off, s_in;
	int i;

	for (i = 0; i < ndim; i++)
		n *= (size_t)dims[i];
	if (n == 0)
		return;
	if (ndim == 0) {
		qr_op_copy_elem(dst, src + off * (int64_t)es, es);
		return;
	}
	inner = (size_t)dims[ndim - 1];
	s_in = stride[ndim - 1];
	for (;;) {
		if (s_in == 1) {
			memcpy(dst, src + pos * (int64_t)es, inner * es);
		} else {
			for (k = 0; k < inner; k++)
				qr_op_copy_elem(dst + k * es, src + (pos +
						(int64_t)k * s_in) *
						(int64_t)es, es);
		}
		dst += inner * es;
		for (i = ndim - 2; i >= 0; i--) {
			idx[i]++;
			pos += stride[i];
			if (idx[i] < dims[i])
				break;
			pos -= stride[i] * dims[i];
			idx[i] = 0;
		}
		if (i < 0)
			return;
	}
}

/* Dense strides (elements) of a shape. */
void
qr_op_dense_strides(int ndim, const int64_t *dims, int64_t *st)
{
	int64_t s = 1;
	int i;

	for (i = ndim - 1; i >= 0; i--) {
		st[i] = s;
		s *= dims[i];
	}
}

/* Check: arity, and input 0 any copyable dtype; output dtype = input 0. */
enum qr_status
qr_op_move_check(const struct qr_op_call *c, struct qr_diag *d,
		 size_t min_in, size_t max_in, size_t min_out, size_t max_out)
{
	enum qr_status st;
	size_t j;

	if ((st = qr_op_arity(c, d, min_in, max_in, min_out,
			      max_out)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_ANY)) != QR_OK)
		return st;
	for (j = 0; j < c->n_out; j++)
		c->out_dtype[j] = qr_op_dtype(c, 0);
	return QR_OK;
}

/* qr_op_move_check(c, d, min_in, max_in, 1, 1), then input 1's dtype. */
enum qr_status
qr_op_move_check_in1(const struct qr_op_call *c, struct qr_diag *d,
		     size_t min_in, size_t max_in, unsigned long long mask1)
{
	enum qr_status st = qr_op_move_check(c, d, min_in, max_in, 1, 1);

	if (st == QR_OK)
		st = qr_op_want_dtype(c, d, 1, mask1);
	return st;
}

/* Input i, when given, must be an int32/int64 tensor. */
enum qr_status
qr_op_want_index(const struct qr_op_call *c, struct qr_diag *d, size_t i)
{
	return qr_op_want_dtype(c, d, i, QR_DTM_INDEX);
}

/* Output 0 = input 0, byte for byte. */
enum qr_status
qr_op_copy_run(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->out[0]->nbytes > 0)
		memcpy(c->out[0]->data, c->in[0]->data, c->out[0]->nbytes);
	return QR_OK;
}

/* Element i of an integer (or bool) tensor, as int64 bits. */
int64_t
qr_op_get_i64(const struct qr_tensor *t, size_t i)
{
	const void *p = t->data;

	switch (t->dtype) {
	case QR_DT_INT8: return ((const int8_t *)p)[i];
	case QR_DT_INT16: return ((const int16_t *)p)[i];
	case QR_DT_INT32: return ((const int32_t *)p)[i];
	case QR_DT_INT64: return ((const int64_t *)p)[i];
	case QR_DT_UINT8:
	case QR_DT_BOOL: return ((const uint8_t *)p)[i];
	case QR_DT_UINT16: return ((const uint16_t *)p)[i];
	case QR_DT_UINT32: return ((const uint32_t *)p)[i];
	case QR_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
	default: QR_ASSERT(!"not an integer dtype");
	}
	return 0;
}
