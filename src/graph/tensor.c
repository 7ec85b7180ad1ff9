/* tensor: dense tensors the executor computes with. See tensor.h. */
#include "graph/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"

#define TENSOR_ALIGN 64

static size_t max_bytes = QR_TENSOR_MAX_BYTES_DEFAULT;

size_t
qr_tensor_max_bytes(void)
{
	return max_bytes;
}

/* See tensor.h; lowered by the fuzzers to stay under their memory limit. */
void
qr_tensor_set_max_bytes(size_t n)
{
	max_bytes = n;
}

/*
 * Set t's dtype and shape (rank ndim, dims) and derive n_elem and nbytes.
 * Data is left alone. Returns QR_ESHAPE naming `what` for a negative dim,
 * a rank above QR_TENSOR_MAX_DIMS, an element count or byte size that
 * overflows or a byte size above qr_tensor_max_bytes; QR_EUNSUPPORTED for
 * a dtype without a fixed element size.
 */
enum qr_status
qr_tensor_set_shape(struct qr_tensor *t, int dtype, int ndim,
		    const int64_t *dims, const char *what, struct qr_diag *d)
{
	size_t n = 1, bytes, esize = qr_dtype_size(dtype);
	int i;

	if (ndim < 0 || ndim > QR_TENSOR_MAX_DIMS)
		return qr_errorf(d, QR_ESHAPE, "%s: rank %d is not supported "
				 "(at most %d)", what, ndim, QR_TENSOR_MAX_DIMS);
	if (esize == 0)
		return qr_errorf(d, QR_EUNSUPPORTED, "%s: dtype %s has no "
				 "dense in-memory form", what,
				 qr_dtype_name(dtype));
	for (i = 0; i < ndim; i++) {
		if (dims[i] < 0)
			return qr_errorf(d, QR_ESHAPE, "%s: dim %d is negative "
					 "(%lld)", what, i, (long long)dims[i]);
		if (qr_mul_overflow(n, (size_t)dims[i], &n))
			return qr_errorf(d, QR_ESHAPE, "%s: element count "
					 "overflows", what);
	}
	if (qr_mul_overflow(n, esize, &bytes))
		return qr_errorf(d, QR_ESHAPE, "%s: byte size overflows", what);
	if (bytes > max_bytes)
		return qr_errorf(d, QR_ESHAPE, "%s: %zu elements (%zu MiB) "
				 "exceed the %zu MiB tensor limit", what, n,
				 bytes >> 20, max_bytes >> 20);
	if (bytes >= QR_MEM_CHECK_MIN && !(t->owned && t->cap >= bytes)) {
		size_t held = qr_mem_in_use(), budget = qr_mem_budget();

		if (held > budget || bytes > budget - held)
			return qr_errorf(d, QR_ENOMEM, "%s: %zu MiB more, on top "
					 "of the %zu MiB held, is more than the "
					 "%zu MiB this run may use (--max-memory;"
					 " by default what the machine has "
					 "available)", what, bytes >> 20,
					 held >> 20, budget >> 20);
	}
	t->dtype = dtype;
	t->ndim = ndim;
	for (i = 0; i < ndim; i++)
		t->dims[i] = dims[i];
	for (; i < QR_TENSOR_MAX_DIMS; i++)
		t->dims[i] = 0;
	t->n_elem = n;
	t->nbytes = bytes;
	return QR_OK;
}

/* What a wrapped tensor with no elements points at (never written: a
 * tensor with no elements has no byte to write). */
static const uint64_t empty_data[TENSOR_ALIGN / 8];

static void *
aligned_new(size_t n)
{
	void *p = NULL;

	n = (n + TENSOR_ALIGN - 1) & ~(size_t)(TENSOR_ALIGN - 1);
	if (posix_memalign(&p, TENSOR_ALIGN, n) != 0 || p == NULL)
		qr_fatal("out of memory allocating %zu bytes", n);
	return p;
}

/*
 * Give an owned tensor room for t->nbytes, keeping its buffer when it is
 * large enough (contents are then left as they were). A tensor with no
 * elements still gets a buffer (of one byte), so that kernels may offset
 * its pointer by zero: NULL + 0 is undefined in C, and empty tensors
 * reached kernels by seven different paths before this. t must be owned
 * (or have no data yet).
 */
void
qr_tensor_alloc(struct qr_tensor *t)
{
	size_t want = t->nbytes > 0 ? t->nbytes : 1;

	QR_ASSERT(t->owned || t->data == NULL);
	t->owned = 1;
	if (t->data != NULL && t->cap >= want)
		return;
	free(t->data);
	t->data = aligned_new(want);
	t->cap = want;
}

/*
 * A new owned, zero-filled tensor of dtype and shape (ndim, dims). *out is
 * set to NULL first; errors as qr_tensor_set_shape. The caller frees it
 * with qr_tensor_free.
 */
enum qr_status
qr_tensor_new(int dtype, int ndim, const int64_t *dims,
	      struct qr_tensor **out, struct qr_diag *d)
{
	struct qr_tensor *t = xcalloc(1, sizeof *t);
	enum qr_status st;

	*out = NULL;
	st = qr_tensor_set_shape(t, dtype, ndim, dims, "new tensor", d);
	if (st != QR_OK) {
		free(t);
		return st;
	}
	t->owned = 1;
	qr_tensor_alloc(t);
	if (t->nbytes > 0)
		memset(t->data, 0, t->nbytes);
	*out = t;
	return QR_OK;
}

/*
 * A new tensor borrowing c's data (never freed by it; c must outlive it).
 * The caller frees the tensor with qr_tensor_free. String tensors keep
 * their shape with nbytes 0 and data NULL; a tensor with no elements
 * points at a static empty buffer (see qr_tensor_alloc).
 */
struct qr_tensor *
qr_tensor_wrap(const struct qr_tensor_data *c)
{
	struct qr_tensor *t = xcalloc(1, sizeof *t);
	int i;

	t->name = c->name;
	t->dtype = c->dtype;
	t->ndim = c->ndim;
	for (i = 0; i < c->ndim && i < QR_TENSOR_MAX_DIMS; i++)
		t->dims[i] = c->dims[i];
	t->n_elem = c->n_elem;
	t->nbytes = c->nbytes;
	t->data = c->n_elem > 0 ? (void *)c->data : (void *)empty_data;
	return t;
}

/* A new owned copy of t: shape and bytes (the name is borrowed as t's). */
struct qr_tensor *
qr_tensor_copy(const struct qr_tensor *t)
{
	struct qr_tensor *c = xcalloc(1, sizeof *c);

	*c = *t;
	c->data = NULL;
	c->cap = 0;
	c->owned = 1;
	qr_tensor_alloc(c);
	if (t->nbytes > 0)
		memcpy(c->data, t->data, t->nbytes);
	return c;
}

/* Free t and, when it owns them, its data. NULL is a no-op. */
void
qr_tensor_free(struct qr_tensor *t)
{
	if (t == NULL)
		return;
	if (t->owned)
		free(t->data);
	free(t);
}

/* Format t's shape as "[1,3,224,224]" ("[]" for a scalar) into buf. */
const char *
qr_shape_str(const struct qr_tensor *t, char *buf, size_t n)
{
	size_t len = 0;
	int i;

	if (n == 0)
		return buf;
	buf[0] = '\0';
	len += (size_t)snprintf(buf, n, "[");
	for (i = 0; i < t->ndim && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%lld",
					i ? "," : "", (long long)t->dims[i]);
	if (len < n)
		snprintf(buf + len, n - len, "]");
	return buf;
}
