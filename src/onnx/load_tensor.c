/*
 * onnx: TensorProto to qr_tensor_data: shape checks, raw_data (borrowed
 * or copied), the typed repeated fields, 4-bit values unpacked, and
 * external data mapped from files that must lie in the model's folder.
 * Also qr_onnx_load_tensor_pb for .pb tensor files. See onnx-int.h.
 */
#include "onnx/onnx-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"

/* Unpack n 4-bit values, two per byte with the low nibble first. */
static void
unpack4(uint8_t *dst, const uint8_t *src, size_t n, int is_signed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t v = (src[i / 2] >> (4 * (i & 1))) & 0xf;

		dst[i] = is_signed ? (uint8_t)(int8_t)((v ^ 8) - 8) : v;
	}
}

/* Parse a decimal size from an external_data value; -1 when malformed. */
static int
parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > SIZE_MAX)
		return -1;
	*out = (size_t)v;
	return 0;
}

/* 1 when location may be opened below the model's folder by name alone:
 * relative, non-empty, no ".." component. Symlinks are checked later. */
static int
location_ok(const char *loc)
{
	const char *p = loc;

	if (*loc == '\0' || *loc == '/')
		return 0;
	while (*p != '\0') {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += n;
		if (*p == '/')
			p++;
	}
	return 1;
}

/*
 * Find (mapping it on first use) the external data file loc. Refuses
 * anything that resolves outside the model's folder.
 */
static enum qr_status
ext_map(struct qr_onnx_ctx *c, const char *what, const char *loc,
	const struct qr_map **out)
{
	struct qr_model_priv *p = c->priv;
	enum qr_status st = QR_OK;
	struct qr_diag sub = {0};
	char *path = NULL, *real = NULL;
	struct qr_map map;
	size_t i, n;

	*out = NULL;
	if (!location_ok(loc)) {
		st = qr_errorf(c->d, QR_EFORMAT,
			       "file '%s': %s: external data location '%s' "
			       "is outside the model's folder",
			       c->file, what, loc);
		goto out;
	}
	if (p->base_real == NULL) {
		p->base_real = realpath(p->base_dir, NULL);
		if (p->base_real == NULL) {
			st = qr_errorf(c->d, QR_EIO,
				       "file '%s': %s: cannot resolve folder "
				       "'%s': %s", c->file, what, p->base_dir,
				       strerror(errno));
			goto out;
		}
	}
	path = qr_path_join(p->base_dir, loc);
	real = realpath(path, NULL);
	if (real == NULL) {
		st = qr_errorf(c->d, QR_EIO,
			       "file '%s': %s: external data file '%s': %s",
			       c->file, what, path, strerror(errno));
		goto out;
	}
	n = strlen(p->base_real);
	if (strncmp(real, p->base_real, n) != 0 ||
	    (real[n] != '/' && !(n == 1 && p->base_real[0] == '/'))) {
		st = qr_errorf(c->d, QR_EFORMAT,
			       "file '%s': %s: external data location '%s' "
			       "resolves outside the model's folder",
			       c->file, what, loc);
		goto out;
	}
	for (i = 0; i < p->n_ext; i++) {
		if (strcmp(p->ext[i].real, real) == 0) {
			*out = &p->ext[i].map;
			goto out;
		}
	}
	st = qr_map_file(real, &map, &sub);
	if (st != QR_OK) {
		st = qr_errorf(c->d, st, "file '%s': %s: external data: %s",
			       c->file, what, sub.msg);
		goto out;
	}
	p->ext = xreallocarray(p->ext, p->n_ext + 1, sizeof *p->ext);
	p->ext[p->n_ext].real = real;
	p->ext[p->n_ext].map = map;
	real = NULL;
	*out = &p->ext[p->n_ext++].map;
out:
	free(path);
	free(real);
	return st;
}

/*
 * Point t at its bytes in an external data file (zero copy when aligned).
 * packed is the byte count the shape requires on disk.
 */
static enum qr_status
tensor_external(struct qr_onnx_ctx *c, const Onnx__TensorProto *tp,
		const char *what, size_t packed, struct qr_tensor_data *t)
{
	const char *loc = NULL, *off_s = NULL, *len_s = NULL;
	const struct qr_map *map;
	size_t off = 0, len, i, esize;
	const uint8_t *src;
	enum qr_status st;

	if (c->priv == NULL || c->priv->base_dir == NULL)
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': %s: external data is not allowed "
				 "here", c->file, what);
	for (i = 0; i < tp->n_external_data; i++) {
		const Onnx__StringStringEntryProto *e = tp->external_data[i];
		const char *k = qr_onnx_or_empty(e->key);

		if (strcmp(k, "location") == 0)
			loc = qr_onnx_or_empty(e->value);
		else if (strcmp(k, "offset") == 0)
			off_s = qr_onnx_or_empty(e->value);
		else if (strcmp(k, "length") == 0)
			len_s = qr_onnx_or_empty(e->value);
	}
	if (loc == NULL)
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': %s: external data has no location",
				 c->file, what);
	if ((off_s != NULL && parse_size(off_s, &off) != 0) ||
	    (len_s != NULL && parse_size(len_s, &len) != 0))
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': %s: bad external data offset or "
				 "length", c->file, what);
	st = ext_map(c, what, loc, &map);
	if (st != QR_OK)
		return st;
	if (off > map->size)
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': %s: external data offset %zu is "
				 "past the end of '%s' (%zu bytes)",
				 c->file, what, off, loc, map->size);
	if (len_s == NULL)
		len = map->size - off;
	if (len > map->size - off)
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': %s: external data offset %zu + "
				 "length %zu is past the end of '%s' (%zu bytes)",
				 c->file, what, off, len, loc, map->size);
	if (len != packed)
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': %s: external data has %zu bytes, "
				 "shape needs %zu", c->file, what, len, packed);
	src = map->data != NULL ? map->data + off : NULL;
	esize = qr_dtype_size(t->dtype);
	if (qr_dtype_bits(t->dtype) == 4) {
		uint8_t *u = qr_arena_alloc(c->arena, t->nbytes);

		unpack4(u, src, t->n_elem, t->dtype == QR_DT_INT4);
		t->data = u;
	} else if (src != NULL && (uintptr_t)src % esize != 0) {
		/* Typed reads need natural alignment; copy the odd one. */
		void *u = qr_arena_alloc(c->arena, len);

		memcpy(u, src, len);
		t->data = u;
	} else {
		t->data = src;
	}
	t->external = 1;
	if (c->external_bytes != NULL)
		*c->external_bytes += len;
	return QR_OK;
}

/* Narrow n int32 values into 1- or 2-byte elements. */
static void *
narrow_i32(struct qr_arena *a, const int32_t *src, size_t n, size_t esize)
{
	uint8_t *u8;
	uint16_t *u16;
	size_t i;

	if (esize == 1) {
		u8 = qr_arena_alloc(a, n);
		for (i = 0; i < n; i++)
			u8[i] = (uint8_t)src[i];
		return u8;
	}
	u16 = qr_arena_array(a, n, 2);
	for (i = 0; i < n; i++)
		u16[i] = (uint16_t)src[i];
	return u16;
}

/* Fill t->data from the typed repeated fields of tp. */
static enum qr_status
tensor_typed(struct qr_onnx_ctx *c, const Onnx__TensorProto *tp,
	     const char *what, struct qr_tensor_data *t)
{
	size_t n = t->n_elem, have = 0, want = n;
	const char *field = "";
	size_t i;

	switch (t->dtype) {
	case QR_DT_FLOAT:
	case QR_DT_COMPLEX64:
		field = "float_data";
		have = tp->n_float_data;
		want = t->dtype == QR_DT_FLOAT ? n : 2 * n;
		if (have == want)
			t->data = qr_onnx_ctx_bytes(c, tp->float_data,
						    t->nbytes);
		break;
	case QR_DT_DOUBLE:
	case QR_DT_COMPLEX128:
		field = "double_data";
		have = tp->n_double_data;
		want = t->dtype == QR_DT_DOUBLE ? n : 2 * n;
		if (have == want)
			t->data = qr_onnx_ctx_bytes(c, tp->double_data,
						    t->nbytes);
		break;
	case QR_DT_INT64:
		field = "int64_data";
		have = tp->n_int64_data;
		if (have == want)
			t->data = qr_onnx_ctx_bytes(c, tp->int64_data,
						    t->nbytes);
		break;
	case QR_DT_UINT64:
		field = "uint64_data";
		have = tp->n_uint64_data;
		if (have == want)
			t->data = qr_onnx_ctx_bytes(c, tp->uint64_data,
						    t->nbytes);
		break;
	case QR_DT_UINT32: {
		uint32_t *u;

		field = "uint64_data";
		have = tp->n_uint64_data;
		if (have != want)
			break;
		u = qr_arena_array(c->arena, n, 4);
		for (i = 0; i < n; i++)
			u[i] = (uint32_t)tp->uint64_data[i];
		t->data = u;
		break;
	}
	case QR_DT_INT32:
		field = "int32_data";
		have = tp->n_int32_data;
		if (have == want)
			t->data = qr_onnx_ctx_bytes(c, tp->int32_data,
						    t->nbytes);
		break;
	case QR_DT_UINT4:
	case QR_DT_INT4: {
		uint8_t *u, *packed;

		field = "int32_data";
		have = tp->n_int32_data;
		if (have == n) {
			/* one value per entry */
			u = qr_arena_alloc(c->arena, n);
			for (i = 0; i < n; i++)
				u[i] = (uint8_t)tp->int32_data[i];
			t->data = u;
			break;
		}
		/* otherwise one packed byte per entry, as numpy_helper does */
		want = n / 2 + n % 2;
		if (have != want)
			break;
		packed = narrow_i32(c->arena, tp->int32_data, have, 1);
		u = qr_arena_alloc(c->arena, n);
		unpack4(u, packed, n, t->dtype == QR_DT_INT4);
		t->data = u;
		break;
	}
	default: /* 1- and 2-byte types stored widened in int32_data */
		field = "int32_data";
		have = tp->n_int32_data;
		if (have == want)
			t->data = narrow_i32(c->arena, tp->int32_data, n,
					     qr_dtype_size(t->dtype));
		break;
	}
	if (have == 0 && n > 0)
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': %s: %s tensor has no data "
				 "(shape needs %zu elements)",
				 c->file, what, qr_dtype_name(t->dtype), n);
	if (have != want)
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': %s: %s has %zu values, shape "
				 "needs %zu", c->file, what, field, have, want);
	return QR_OK;
}

/*
 * Convert a TensorProto into t. what names the tensor in messages, e.g.
 * "initializer 'w'". fallback names a tensor whose proto has no name.
 */
enum qr_status
qr_onnx_tensor_convert(struct qr_onnx_ctx *c, const Onnx__TensorProto *tp,
		       const char *what, const char *fallback,
		       struct qr_tensor_data *t)
{
	size_t n = 1, packed, i;
	int dtype;

	memset(t, 0, sizeof *t);
	t->name = qr_onnx_ctx_str(c, tp->name != NULL &&
					     tp->name[0] != '\0' ?
					     tp->name : fallback);
	dtype = tp->has_data_type ? tp->data_type : QR_DT_UNDEFINED;
	t->dtype = dtype;
	if (!qr_dtype_valid(dtype))
		return qr_errorf(c->d, QR_EUNSUPPORTED,
				 "file '%s': %s: unknown data type %d",
				 c->file, what, dtype);
	if (tp->n_dims > QR_MAX_DIMS)
		return qr_errorf(c->d, QR_EUNSUPPORTED,
				 "file '%s': %s: rank %zu exceeds %d",
				 c->file, what, tp->n_dims, QR_MAX_DIMS);
	t->ndim = (int)tp->n_dims;
	for (i = 0; i < tp->n_dims; i++) {
		int64_t dim = tp->dims[i];

		if (dim < 0)
			return qr_errorf(c->d, QR_ESHAPE,
					 "file '%s': %s: negative dim %" PRId64,
					 c->file, what, dim);
		if ((uint64_t)dim > SIZE_MAX || qr_mul_overflow(n, (size_t)dim, &n))
			return qr_errorf(c->d, QR_ESHAPE,
					 "file '%s': %s: element count "
					 "overflows", c->file, what);
		t->dims[i] = dim;
	}
	t->n_elem = n;
	if (qr_mul_overflow(n, qr_dtype_size(dtype), &t->nbytes))
		return qr_errorf(c->d, QR_ESHAPE,
				 "file '%s': %s: byte size overflows",
				 c->file, what);
	packed = qr_dtype_bits(dtype) == 4 ? n / 2 + n % 2 : t->nbytes;
	if (tp->segment != NULL)
		return qr_errorf(c->d, QR_EUNSUPPORTED,
				 "file '%s': %s: segmented tensors are not "
				 "supported", c->file, what);
	if (dtype == QR_DT_STRING) {
		t->nbytes = 0; /* strings are not loaded */
		return QR_OK;
	}
	if (tp->has_data_location &&
	    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return tensor_external(c, tp, what, packed, t);
	if (tp->has_raw_data) {
		const uint8_t *raw = tp->raw_data.data;

		if (tp->raw_data.len != packed)
			return qr_errorf(c->d, QR_EFORMAT,
					 "file '%s': %s: raw_data has %zu "
					 "bytes, %s shape needs %zu",
					 c->file, what, tp->raw_data.len,
					 qr_dtype_name(dtype), packed);
		if (qr_dtype_bits(dtype) == 4) {
			uint8_t *u = qr_arena_alloc(c->arena, n);

			unpack4(u, raw, n, dtype == QR_DT_INT4);
			t->data = u;
		} else {
			t->data = qr_onnx_ctx_bytes(c, raw, packed);
		}
		return QR_OK;
	}
	return tensor_typed(c, tp, what, t);
}

/*
 * Decode a serialized TensorProto (an ONNX test_data_set .pb) into t; all
 * of it is copied into the caller's arena a. External data is refused.
 */
enum qr_status
qr_onnx_load_tensor_pb(const void *buf, size_t len, const char *name,
		       struct qr_arena *a, struct qr_tensor_data *t,
		       struct qr_diag *d)
{
	struct qr_onnx_ctx c = {0};
	Onnx__TensorProto *tp;
	enum qr_status st;
	const char *what;

	memset(t, 0, sizeof *t);
	if (len == 0)
		return qr_errorf(d, QR_EFORMAT,
				 "file '%s': empty file, not a tensor", name);
	if (!qr_onnx_wire_depth_ok(buf, len, &onnx__tensor_proto__descriptor))
		return qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX tensor "
				 "(messages nested more than %d deep)", name,
				 QR_ONNX_MAX_WIRE_DEPTH);
	tp = onnx__tensor_proto__unpack(NULL, len, buf);
	if (tp == NULL)
		return qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX tensor "
				 "(protobuf decode failed)", name);
	c.arena = a;
	c.file = name;
	c.copy = 1;
	c.d = d;
	what = qr_onnx_arena_printf(a, "tensor '%s'",
				    qr_onnx_or_empty(tp->name));
	st = qr_onnx_tensor_convert(&c, tp, what, "", t);
	onnx__tensor_proto__free_unpacked(tp, NULL);
	return st;
}
