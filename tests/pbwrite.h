/*
 * pbwrite: protobuf wire format written and read by hand, for tests that
 * make ONNX models no fixture file should hold (100 kB strings, graphs of
 * 50,000 nodes). Header-only, as tap.h.
 */
#ifndef QR_PBWRITE_H
#define QR_PBWRITE_H

#include <stdint.h>
#include <string.h>

#include "util/util.h"

static inline void
pb_varint(struct qr_buf *b, uint64_t v)
{
	do {
		qr_buf_putc(b, (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
		v >>= 7;
	} while (v != 0);
}

/* Length-delimited field (wire type 2). */
static inline void
pb_bytes(struct qr_buf *b, unsigned field, const void *p, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	qr_buf_append(b, p, n);
}

/* Varint at *p (below end); 0 when truncated. */
static inline int
pb_read_varint(const unsigned char **p, const unsigned char *end,
	       uint64_t *v)
{
	int shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		unsigned char c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 1;
		shift += 7;
	}
	return 0;
}

/* Varint field (wire type 0). */
static inline void
pb_uint(struct qr_buf *b, unsigned field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

static inline void
pb_str(struct qr_buf *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* A ValueInfoProto: tensor `name` of ONNX element type elem (1 float, 16
 * bfloat16, ...) and shape [dims[0..ndim)]. */
static inline void
pb_value_info_t(struct qr_buf *b, unsigned field, const char *name, int elem,
		const int64_t *dims, int ndim)
{
	struct qr_buf vi = {0}, type = {0}, tt = {0}, shape = {0}, dim = {0};
	int i;

	for (i = 0; i < ndim; i++) {
		dim.len = 0;
		pb_uint(&dim, 1, (uint64_t)dims[i]);       /* dim_value */
		pb_bytes(&shape, 1, dim.data, dim.len);    /* dim */
	}
	pb_uint(&tt, 1, (uint64_t)elem);                   /* elem_type */
	pb_bytes(&tt, 2, shape.data, shape.len);           /* shape */
	pb_bytes(&type, 1, tt.data, tt.len);               /* tensor_type */
	pb_str(&vi, 1, name);
	pb_bytes(&vi, 2, type.data, type.len);
	pb_bytes(b, field, vi.data, vi.len);
	qr_buf_free(&vi);
	qr_buf_free(&type);
	qr_buf_free(&tt);
	qr_buf_free(&shape);
	qr_buf_free(&dim);
}

/* A float tensor's ValueInfoProto. */
static inline void
pb_value_info(struct qr_buf *b, unsigned field, const char *name,
	      const int64_t *dims, int ndim)
{
	pb_value_info_t(b, field, name, 1, dims, ndim);
}

/* A ModelProto (IR 8, opset 13) around the serialized GraphProto g. */
static inline void
pb_model(struct qr_buf *out, const struct qr_buf *g)
{
	struct qr_buf ops = {0};

	pb_uint(out, 1, 8);                        /* ir_version */
	pb_uint(&ops, 2, 13);                      /* opset version */
	pb_bytes(out, 8, ops.data, ops.len);       /* opset_import */
	pb_bytes(out, 7, g->data, g->len);         /* graph */
	qr_buf_free(&ops);
}

#endif
