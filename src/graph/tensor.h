/*
 * tensor: a dense, row-major tensor the executor computes with.
 *
 * dtype codes are ONNX's (enum qr_dtype in onnx/onnx.h). float16/bfloat16
 * are stored as uint16 bits; bool as one byte per element.
 *
 * Ownership: qr_tensor_new allocates data (64-byte aligned) that the
 * tensor owns; qr_tensor_wrap borrows data (e.g. an initializer in the
 * model) and never frees it. qr_tensor_free(NULL) does nothing.
 */
#ifndef QR_TENSOR_H
#define QR_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

struct qr_tensor_data;

#define QR_TENSOR_MAX_DIMS 16

struct qr_tensor {
	const char *name;       /* tensor name (borrowed from the model) */
	int dtype;              /* enum qr_dtype */
	int ndim;               /* rank, 0 for a scalar */
	int64_t dims[QR_TENSOR_MAX_DIMS]; /* shape */
	size_t n_elem;          /* product of dims */
	size_t nbytes;          /* n_elem * element size */
	void *data;             /* elements; not NULL once allocated, even
				 * with n_elem == 0 (a 1-byte buffer), so
				 * pointer + 0 is defined; NULL before, and
				 * for strings (no storage) */
	size_t cap;             /* bytes allocated when owned (for reuse) */
	int owned;              /* 1 when data is freed with the tensor */
};

/* Set dtype and shape, checking the element count and byte size for
 * overflow and the byte size against qr_tensor_max_bytes (QR_ESHAPE
 * naming `what`). Does not touch data. */
enum qr_status qr_tensor_set_shape(struct qr_tensor *t, int dtype, int ndim,
				   const int64_t *dims, const char *what,
				   struct qr_diag *d);
/* The largest tensor qr_tensor_set_shape accepts, in bytes: a shape a
 * model asks for beyond it is refused with QR_ESHAPE instead of exhausting
 * memory. Process-wide; default QR_TENSOR_MAX_BYTES_DEFAULT. */
#define QR_TENSOR_MAX_BYTES_DEFAULT ((size_t)4 << 30) /* 4 GiB */
size_t qr_tensor_max_bytes(void);
void qr_tensor_set_max_bytes(size_t max_bytes);
/* Make sure an owned tensor has room for its nbytes (reusing its buffer
 * when large enough). */
void qr_tensor_alloc(struct qr_tensor *t);
/* A new owned tensor with the given shape, zero-filled. */
enum qr_status qr_tensor_new(int dtype, int ndim, const int64_t *dims,
			     struct qr_tensor **out, struct qr_diag *d);
/* A tensor that borrows an initializer's data. */
struct qr_tensor *qr_tensor_wrap(const struct qr_tensor_data *c);
/* A new owned copy of t: shape and bytes (the name borrowed as t's). */
struct qr_tensor *qr_tensor_copy(const struct qr_tensor *t);
void qr_tensor_free(struct qr_tensor *t);
/* "[1,3,224,224]" into a caller buffer of size n. */
const char *qr_shape_str(const struct qr_tensor *t, char *buf, size_t n);

#endif
