/*
 * onnx: decode a .onnx file (protobuf-c) and convert it into the plain
 * structs of onnx.h. See onnx.h for ownership.
 */
#include "onnx/onnx.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"

/* Subgraphs (If/Loop bodies) nested deeper than this are refused. */
#define MAX_GRAPH_DEPTH 64

/* Protobuf messages nested deeper than this are refused before decoding:
 * protobuf-c's unpacker recurses once per level and a hostile file can
 * nest deep enough to overflow the stack. A subgraph costs 3 levels. */
#define MAX_WIRE_DEPTH (3 * MAX_GRAPH_DEPTH + 32)

/* An external data file, mapped once however many tensors point into it. */
struct ext_file {
	char *real;          /* realpath of the file (heap) */
	struct qr_map map;   /* its bytes */
};

/* What a model owns besides its converted structs. */
struct qr_model_priv {
	struct qr_arena arena;     /* the model struct and everything converted */
	Onnx__ModelProto *pb;      /* unpacked message; raw_data points into it */
	uint8_t *raw;              /* the large raw_data unpack_lean left out of
				    * pb, copied in here (xpages), or NULL */
	size_t raw_bytes;          /* bytes of raw */
	char *base_dir;            /* folder external data resolves in, or NULL */
	char *base_real;           /* realpath of base_dir, computed on demand */
	struct ext_file *ext;      /* mapped external data files */
	size_t n_ext;              /* entries in ext */
};

/* State of one conversion. */
struct load_ctx {
	struct qr_arena *arena;    /* where converted data goes */
	const char *file;          /* name used in messages */
	struct qr_model_priv *priv; /* NULL: external data refused */
	size_t *external_bytes;    /* running total, or NULL */
	int copy;                  /* 1: copy message bytes (message is freed) */
	int depth;                 /* subgraph nesting */
	struct qr_diag *d;
};

static const char *
str_or_empty(const char *s)
{
	return s != NULL ? s : "";
}

static const char *
arena_printf(struct qr_arena *a, const char *fmt, ...) QR_PRINTF(2, 3);

static const char *
arena_printf(struct qr_arena *a, const char *fmt, ...)
{
	struct qr_buf b = {0};
	va_list ap;
	char *s, *r;

	va_start(ap, fmt);
	qr_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	s = qr_buf_take(&b);
	r = qr_arena_strdup(a, s);
	free(s);
	return r;
}

/* A message string: borrowed from the message, or copied when it dies. */
static const char *
ctx_str(struct load_ctx *c, const char *s)
{
	s = str_or_empty(s);
	return c->copy ? qr_arena_strdup(c->arena, s) : s;
}

static const void *
ctx_bytes(struct load_ctx *c, const void *p, size_t n)
{
	void *q;

	if (!c->copy || n == 0)
		return p;
	q = qr_arena_alloc(c->arena, n);
	memcpy(q, p, n);
	return q;
}

/* A NUL-terminated arena copy of protobuf bytes (data NULL when empty). */
static const char *
bytes_str(struct load_ctx *c, const ProtobufCBinaryData *b)
{
	return b->len > 0 ? qr_arena_strndup(c->arena, (const char *)b->data,
					     b->len) : "";
}

/* Read a varint at *p (below end); -1 when truncated or too long. */
static int
wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	int shift;

	*v = 0;
	for (shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/*
 * Why buf cannot be a ModelProto, from its top-level fields alone, or NULL
 * when it may be one: each field needs a number (0 is not one) and a wire
 * type protobuf has, its bytes must lie inside buf, and the graph (field
 * 7) must be among them. Only the field keys are read, so a large file
 * that is not a model (zeros, text, an archive) is refused from its first
 * bytes instead of after a walk through all of it.
 */
static const char *
wire_model_why(const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf, *end = buf + len;
	uint64_t key, v;
	int graph = 0;

	while (p < end) {
		if (wire_varint(&p, end, &key) != 0)
			return "truncated field key";
		if (key >> 3 == 0)
			return "field number 0";
		switch (key & 7) {
		case 0:
			if (wire_varint(&p, end, &v) != 0)
				return "truncated varint";
			break;
		case 1:
		case 5:
			v = (key & 7) == 1 ? 8 : 4;
			if (v > (uint64_t)(end - p))
				return "truncated fixed-size field";
			p += v;
			break;
		case 2:
			if (wire_varint(&p, end, &v) != 0 ||
			    v > (uint64_t)(end - p))
				return "a field runs past the end of the file";
			p += v;
			graph |= key >> 3 == 7;
			break;
		default:
			return "not protobuf wire format";
		}
	}
	return graph ? NULL : "no graph";
}

/*
 * 1 when no message in buf (of type desc) nests deeper than
 * MAX_WIRE_DEPTH. Walks the wire format without recursion, following only
 * fields desc declares as messages. Malformed input also gives 1: the
 * unpacker itself refuses it.
 */
static int
wire_depth_ok(const uint8_t *buf, size_t len,
	      const ProtobufCMessageDescriptor *desc)
{
	struct {
		const uint8_t *end;                   /* end of this message */
		const ProtobufCMessageDescriptor *desc; /* its type */
	} stack[MAX_WIRE_DEPTH];
	const uint8_t *p = buf;
	int top = 0;
	uint64_t key, v;

	if (len == 0)
		return 1;
	stack[0].end = buf + len;
	stack[0].desc = desc;
	for (;;) {
		const ProtobufCFieldDescriptor *f;

		while (p == stack[top].end)
			if (--top < 0)
				return 1;
		if (wire_varint(&p, stack[top].end, &key) != 0)
			return 1;
		switch (key & 7) {
		case 0:
			if (wire_varint(&p, stack[top].end, &v) != 0)
				return 1;
			break;
		case 1:
		case 5:
			v = (key & 7) == 1 ? 8 : 4;
			if (v > (uint64_t)(stack[top].end - p))
				return 1;
			p += v;
			break;
		case 2:
			if (wire_varint(&p, stack[top].end, &v) != 0 ||
			    v > (uint64_t)(stack[top].end - p))
				return 1;
			f = key >> 3 <= UINT_MAX ?
			    protobuf_c_message_descriptor_get_field(
				    stack[top].desc, (unsigned)(key >> 3)) : NULL;
			if (f == NULL || f->type != PROTOBUF_C_TYPE_MESSAGE) {
				p += v;
				break;
			}
			if (top + 1 >= MAX_WIRE_DEPTH)
				return 0;
			top++;
			stack[top].end = p + v;
			stack[top].desc = f->descriptor;
			break;
		default: /* groups: protobuf-c refuses them */
			return 1;
		}
	}
}

/* ---- unpacking without a second copy of the weights ---- */

#define STRIP_MIN 4096 /* raw_data this long is copied in on its own */

/* An initializer's raw_data left out of the message unpacked. */
struct raw_ref {
	size_t init;             /* index among the graph's initializers */
	size_t off, len;         /* its bytes in the original message */
};

/* strip_msg's work. */
struct strip {
	const uint8_t *base;     /* the original message */
	uint8_t *out;            /* the copy written, NULL when sizing */
	size_t n_init;           /* initializers written so far */
	struct raw_ref *ref;
	size_t n_ref;
};

static size_t
put_varint(uint8_t *dst, uint64_t v)
{
	size_t n = 0;

	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		if (dst != NULL)
			dst[n] = b | (v ? 0x80 : 0);
		n++;
	} while (v);
	return n;
}

/*
 * Copy the message [p, end) at level 0 (ModelProto), 1 (its graph) or 2
 * (an initializer) to s->out + at (or only size it when s->out is NULL),
 * leaving out every initializer's raw_data of STRIP_MIN bytes or more
 * (written empty and listed in s->ref). Returns the bytes of the copy, or
 * SIZE_MAX for a message the walk does not follow (groups, truncation).
 */
static size_t
strip_msg(struct strip *s, int level, const uint8_t *p, const uint8_t *end,
	  size_t at)
{
	size_t n = 0, sub;
	int pend = 0;            /* level 2: the last raw_data was left out */
	size_t pend_off = 0, pend_len = 0;

	while (p < end) {
		const uint8_t *f = p;
		uint64_t key, v;
		int into;

		if (wire_varint(&p, end, &key) != 0)
			return SIZE_MAX;
		switch (key & 7) {
		case 0:
			if (wire_varint(&p, end, &v) != 0)
				return SIZE_MAX;
			break;
		case 1:
		case 5:
			if ((size_t)(end - p) < ((key & 7) == 1 ? 8u : 4u))
				return SIZE_MAX;
			p += (key & 7) == 1 ? 8 : 4;
			break;
		case 2:
			if (wire_varint(&p, end, &v) != 0 ||
			    v > (uint64_t)(end - p))
				return SIZE_MAX;
			into = (level == 0 && key >> 3 == 7) ||
			       (level == 1 && key >> 3 == 5);
			if (into) {
				const uint8_t *q = p;
				uint8_t *out = s->out;
				size_t hd;

				s->out = NULL; /* sizing it first */
				sub = strip_msg(s, level + 1, q, q + v, 0);
				s->out = out;
				if (sub == SIZE_MAX)
					return SIZE_MAX;
				hd = put_varint(NULL, key) + put_varint(NULL, sub);
				if (s->out != NULL) {
					uint8_t *o = s->out + at + n;

					o += put_varint(o, key);
					put_varint(o, sub);
					if (strip_msg(s, level + 1, q, q + v,
						      at + n + hd) != sub)
						return SIZE_MAX;
					if (level == 1)
						s->n_init++;
				}
				n += hd + sub;
				p += v;
				continue;
			}
			if (level == 2 && key >> 3 == 9) {
				pend = 0;
				if (v >= STRIP_MIN) {
					pend = 1;
					pend_off = (size_t)(p - s->base);
					pend_len = (size_t)v;
					p += v;
					if (s->out != NULL) {
						uint8_t *o = s->out + at + n;

						o += put_varint(o, key);
						put_varint(o, 0);
					}
					n += put_varint(NULL, key) + 1;
					continue;
				}
			}
			p += v;
			break;
		default: /* groups */
			return SIZE_MAX;
		}
		if (s->out != NULL)
			memcpy(s->out + at + n, f, (size_t)(p - f));
		n += (size_t)(p - f);
	}
	if (pend && s->out != NULL) {
		s->ref = xreallocarray(s->ref, s->n_ref + 1, sizeof *s->ref);
		s->ref[s->n_ref].init = s->n_init;
		s->ref[s->n_ref].off = pend_off;
		s->ref[s->n_ref].len = pend_len;
		s->n_ref++;
	}
	return n;
}

/*
 * Unpack buf as a ModelProto without holding the weights twice.
 * protobuf-c copies every bytes field it unpacks, so a mapped 346 MB
 * model took 692 MB while it was read. Here the initializers' large
 * raw_data is left out of a copy of the message, which is unpacked, and
 * copied in afterwards one tensor at a time; with a mapped file (map not
 * NULL) each tensor's pages are given back once copied. A message the
 * walk does not follow is unpacked as it is, for protobuf-c to judge.
 */
static Onnx__ModelProto *
unpack_lean(const uint8_t *buf, size_t len, const struct qr_map *map,
	    struct qr_model_priv *p)
{
	struct strip s = {0};
	Onnx__ModelProto *pb = NULL;
	size_t n, i, at;

	s.base = buf;
	n = strip_msg(&s, 0, buf, buf + len, 0);
	if (n == SIZE_MAX || n == len)
		return onnx__model_proto__unpack(NULL, len, buf);
	s.out = xmalloc(n);
	if (strip_msg(&s, 0, buf, buf + len, 0) == n)
		pb = onnx__model_proto__unpack(NULL, n, s.out);
	free(s.out);
	for (i = 0; pb != NULL && i < s.n_ref; i++) {
		const struct raw_ref *r = &s.ref[i];
		const Onnx__TensorProto *tp;

		if (pb->graph == NULL || r->init >= pb->graph->n_initializer)
			break;
		tp = pb->graph->initializer[r->init];
		if (!tp->has_raw_data || tp->raw_data.len != 0)
			break;
	}
	if (pb == NULL || i < s.n_ref) {
		/* not what the walk expected: the plain way */
		if (pb != NULL)
			onnx__model_proto__free_unpacked(pb, NULL);
		free(s.ref);
		return onnx__model_proto__unpack(NULL, len, buf);
	}
	/* one block for them all, in huge pages (xpages), 64-byte aligned */
	for (i = 0, at = 0; i < s.n_ref; i++)
		at += (s.ref[i].len + 63) & ~(size_t)63;
	p->raw_bytes = at;
	p->raw = s.n_ref ? xpages(at) : NULL;
	for (i = 0, at = 0; i < s.n_ref; i++) {
		const struct raw_ref *r = &s.ref[i];
		Onnx__TensorProto *tp = pb->graph->initializer[r->init];

		free(tp->raw_data.data);
		tp->raw_data.data = p->raw + at;
		at += (r->len + 63) & ~(size_t)63;
		if (map != NULL)
			qr_map_populate(map, r->off, r->len);
		memcpy(tp->raw_data.data, buf + r->off, r->len);
		tp->raw_data.len = r->len;
		if (map != NULL)
			qr_map_drop(map, r->off, r->len);
	}
	free(s.ref);
	return pb;
}

/* "ai.onnx" and "" both name the default domain; we store "". */
static const char *
norm_domain(const char *dom)
{
	if (dom == NULL || strcmp(dom, "ai.onnx") == 0)
		return "";
	return dom;
}

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
ext_map(struct load_ctx *c, const char *what, const char *loc,
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
tensor_external(struct load_ctx *c, const Onnx__TensorProto *tp,
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
		const char *k = str_or_empty(e->key);

		if (strcmp(k, "location") == 0)
			loc = str_or_empty(e->value);
		else if (strcmp(k, "offset") == 0)
			off_s = str_or_empty(e->value);
		else if (strcmp(k, "length") == 0)
			len_s = str_or_empty(e->value);
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
tensor_typed(struct load_ctx *c, const Onnx__TensorProto *tp,
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
			t->data = ctx_bytes(c, tp->float_data, t->nbytes);
		break;
	case QR_DT_DOUBLE:
	case QR_DT_COMPLEX128:
		field = "double_data";
		have = tp->n_double_data;
		want = t->dtype == QR_DT_DOUBLE ? n : 2 * n;
		if (have == want)
			t->data = ctx_bytes(c, tp->double_data, t->nbytes);
		break;
	case QR_DT_INT64:
		field = "int64_data";
		have = tp->n_int64_data;
		if (have == want)
			t->data = ctx_bytes(c, tp->int64_data, t->nbytes);
		break;
	case QR_DT_UINT64:
		field = "uint64_data";
		have = tp->n_uint64_data;
		if (have == want)
			t->data = ctx_bytes(c, tp->uint64_data, t->nbytes);
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
			t->data = ctx_bytes(c, tp->int32_data, t->nbytes);
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
static enum qr_status
tensor_convert(struct load_ctx *c, const Onnx__TensorProto *tp,
	       const char *what, const char *fallback,
	       struct qr_tensor_data *t)
{
	size_t n = 1, packed, i;
	int dtype;

	memset(t, 0, sizeof *t);
	t->name = ctx_str(c, tp->name != NULL && tp->name[0] != '\0' ?
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
			t->data = ctx_bytes(c, raw, packed);
		}
		return QR_OK;
	}
	return tensor_typed(c, tp, what, t);
}

static void
value_info_convert(struct load_ctx *c, const Onnx__ValueInfoProto *vp,
		   struct qr_value_info *v)
{
	const Onnx__TypeProto *tp = vp->type;
	const Onnx__TypeProto__Tensor *tt = NULL;
	struct qr_dim *dims;
	size_t i;

	v->name = ctx_str(c, vp->name);
	v->dtype = QR_DT_UNDEFINED;
	v->ndim = -1;
	if (tp != NULL && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		tt = tp->tensor_type;
	if (tt == NULL)
		return;
	if (tt->has_elem_type)
		v->dtype = tt->elem_type;
	if (tt->shape == NULL)
		return;
	dims = qr_arena_array(c->arena, tt->shape->n_dim, sizeof *dims);
	for (i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *dp = tt->shape->dim[i];

		dims[i].value = -1;
		if (dp->value_case ==
		    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
		    dp->dim_value >= 0)
			dims[i].value = dp->dim_value;
		else if (dp->value_case ==
			 ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
			dims[i].param = ctx_str(c, dp->dim_param);
	}
	v->ndim = (int)tt->shape->n_dim;
	v->dims = dims;
}

static const struct qr_value_info *
value_infos_convert(struct load_ctx *c, Onnx__ValueInfoProto **vp, size_t n)
{
	struct qr_value_info *v = qr_arena_array(c->arena, n, sizeof *v);
	size_t i;

	for (i = 0; i < n; i++)
		value_info_convert(c, vp[i], &v[i]);
	return v;
}

static enum qr_status graph_convert(struct load_ctx *c,
				    const Onnx__GraphProto *gp,
				    struct qr_graph_data *g);

/* Old files (IR < 2) have no attribute type; infer it from the fields. */
static enum qr_attr_type
attr_type(const Onnx__AttributeProto *ap)
{
	if (ap->has_type && ap->type != 0)
		return (enum qr_attr_type)ap->type;
	if (ap->has_f)
		return QR_ATTR_FLOAT;
	if (ap->has_i)
		return QR_ATTR_INT;
	if (ap->has_s)
		return QR_ATTR_STRING;
	if (ap->t != NULL)
		return QR_ATTR_TENSOR;
	if (ap->g != NULL)
		return QR_ATTR_GRAPH;
	if (ap->n_floats > 0)
		return QR_ATTR_FLOATS;
	if (ap->n_ints > 0)
		return QR_ATTR_INTS;
	if (ap->n_strings > 0)
		return QR_ATTR_STRINGS;
	if (ap->n_tensors > 0)
		return QR_ATTR_TENSORS;
	if (ap->n_graphs > 0)
		return QR_ATTR_GRAPHS;
	return QR_ATTR_UNDEFINED;
}

/* A Constant node's value_float(s)/value_int(s)/value_string(s) attribute
 * as a tensor named name, so every form reads like `value`. */
static const struct qr_tensor_data *
const_attr_tensor(struct load_ctx *c, const struct qr_attr *a,
		  const char *name)
{
	struct qr_tensor_data *t = qr_arena_alloc(c->arena, sizeof *t);

	t->name = name;
	t->n_elem = 1;
	switch (a->type) {
	case QR_ATTR_FLOAT:
		t->dtype = QR_DT_FLOAT;
		t->data = &a->f;
		break;
	case QR_ATTR_INT:
		t->dtype = QR_DT_INT64;
		t->data = &a->i;
		break;
	case QR_ATTR_FLOATS:
		t->dtype = QR_DT_FLOAT;
		t->data = a->floats;
		t->ndim = 1;
		break;
	case QR_ATTR_INTS:
		t->dtype = QR_DT_INT64;
		t->data = a->ints;
		t->ndim = 1;
		break;
	case QR_ATTR_STRING:
		t->dtype = QR_DT_STRING;
		return t;
	case QR_ATTR_STRINGS:
		t->dtype = QR_DT_STRING;
		t->ndim = 1;
		t->dims[0] = (int64_t)a->n;
		t->n_elem = a->n;
		return t;
	default:
		return NULL;
	}
	if (t->ndim == 1) {
		t->dims[0] = (int64_t)a->n;
		t->n_elem = a->n;
	}
	t->nbytes = t->n_elem * qr_dtype_size(t->dtype);
	return t;
}

static enum qr_status
attr_convert(struct load_ctx *c, const Onnx__AttributeProto *ap,
	     const struct qr_node *node, struct qr_attr *a)
{
	const char *out0 = node->n_out > 0 ? node->out[0] : "";
	int is_const = strcmp(node->op_type, "Constant") == 0 &&
		       node->domain[0] == '\0';
	enum qr_status st = QR_OK;
	const char *what;
	size_t i;

	a->name = ctx_str(c, ap->name);
	a->type = attr_type(ap);
	what = arena_printf(c->arena, "node '%s' attribute '%s'", node->name,
			    a->name);
	switch (a->type) {
	case QR_ATTR_FLOAT:
		a->f = ap->f;
		break;
	case QR_ATTR_INT:
		a->i = ap->i;
		break;
	case QR_ATTR_STRING:
		a->s = bytes_str(c, &ap->s);
		a->s_len = ap->s.len;
		break;
	case QR_ATTR_FLOATS:
		a->floats = ctx_bytes(c, ap->floats,
				      ap->n_floats * sizeof(float));
		a->n = ap->n_floats;
		break;
	case QR_ATTR_INTS:
		a->ints = ctx_bytes(c, ap->ints, ap->n_ints * sizeof(int64_t));
		a->n = ap->n_ints;
		break;
	case QR_ATTR_STRINGS: {
		const char **s = qr_arena_array(c->arena, ap->n_strings,
						 sizeof *s);

		for (i = 0; i < ap->n_strings; i++)
			s[i] = bytes_str(c, &ap->strings[i]);
		a->strings = s;
		a->n = ap->n_strings;
		break;
	}
	case QR_ATTR_TENSOR: {
		struct qr_tensor_data *t;

		if (ap->t == NULL) {
			st = qr_errorf(c->d, QR_EFORMAT,
				       "file '%s': %s: TENSOR attribute has "
				       "no tensor", c->file, what);
			goto out;
		}
		t = qr_arena_alloc(c->arena, sizeof *t);
		st = tensor_convert(c, ap->t, what, out0, t);
		/* A Constant's value is known by the tensor it produces. */
		if (is_const && out0[0] != '\0')
			t->name = out0;
		a->t = t;
		break;
	}
	case QR_ATTR_TENSORS: {
		struct qr_tensor_data *t = qr_arena_array(c->arena,
							  ap->n_tensors,
							  sizeof *t);

		for (i = 0; i < ap->n_tensors && st == QR_OK; i++)
			st = tensor_convert(c, ap->tensors[i], what, "", &t[i]);
		a->tensors = t;
		a->n = ap->n_tensors;
		break;
	}
	case QR_ATTR_GRAPH: {
		struct qr_graph_data *g;

		if (ap->g == NULL) {
			st = qr_errorf(c->d, QR_EFORMAT,
				       "file '%s': %s: GRAPH attribute has no "
				       "graph", c->file, what);
			goto out;
		}
		g = qr_arena_alloc(c->arena, sizeof *g);
		st = graph_convert(c, ap->g, g);
		a->g = g;
		break;
	}
	case QR_ATTR_GRAPHS: {
		struct qr_graph_data *g = qr_arena_array(c->arena, ap->n_graphs,
							 sizeof *g);

		for (i = 0; i < ap->n_graphs && st == QR_OK; i++)
			st = graph_convert(c, ap->graphs[i], &g[i]);
		a->graphs = g;
		a->n = ap->n_graphs;
		break;
	}
	default: /* sparse tensors and type protos are kept as names only */
		break;
	}
	if (st == QR_OK && is_const && a->t == NULL &&
	    strncmp(a->name, "value_", 6) == 0)
		a->t = const_attr_tensor(c, a, out0);
out:
	return st;
}

static enum qr_status
node_convert(struct load_ctx *c, const Onnx__NodeProto *np, size_t index,
	     struct qr_node *n)
{
	enum qr_status st = QR_OK;
	struct qr_attr *attrs;
	size_t i;

	if (np->op_type == NULL || np->op_type[0] == '\0')
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': node %zu ('%s') has no op_type",
				 c->file, index, str_or_empty(np->name));
	n->op_type = ctx_str(c, np->op_type);
	if (np->name != NULL && np->name[0] != '\0')
		n->name = ctx_str(c, np->name);
	else
		n->name = arena_printf(c->arena, "%s_%zu", np->op_type, index);
	n->domain = ctx_str(c, norm_domain(np->domain));
	n->n_in = np->n_input;
	n->in = (const char **)np->input;
	n->n_out = np->n_output;
	n->out = (const char **)np->output;
	if (c->copy) {
		const char **in = qr_arena_array(c->arena, np->n_input, sizeof *in);
		const char **out = qr_arena_array(c->arena, np->n_output,
						  sizeof *out);

		for (i = 0; i < np->n_input; i++)
			in[i] = ctx_str(c, np->input[i]);
		for (i = 0; i < np->n_output; i++)
			out[i] = ctx_str(c, np->output[i]);
		n->in = in;
		n->out = out;
	}
	attrs = qr_arena_array(c->arena, np->n_attribute, sizeof *attrs);
	n->attrs = attrs;
	n->n_attr = np->n_attribute;
	for (i = 0; i < np->n_attribute && st == QR_OK; i++)
		st = attr_convert(c, np->attribute[i], n, &attrs[i]);
	return st;
}

static enum qr_status
graph_convert(struct load_ctx *c, const Onnx__GraphProto *gp,
	      struct qr_graph_data *g)
{
	enum qr_status st = QR_OK;
	struct qr_tensor_data *inits;
	struct qr_node *nodes;
	size_t i;

	if (++c->depth > MAX_GRAPH_DEPTH) {
		st = qr_errorf(c->d, QR_EFORMAT,
			       "file '%s': graph '%s': subgraphs nested more "
			       "than %d deep", c->file, str_or_empty(gp->name),
			       MAX_GRAPH_DEPTH);
		goto out;
	}
	g->name = ctx_str(c, gp->name);
	if (gp->n_sparse_initializer > 0) {
		const Onnx__SparseTensorProto *sp = gp->sparse_initializer[0];

		st = qr_errorf(c->d, QR_EUNSUPPORTED,
			       "file '%s': sparse initializer '%s' is not "
			       "supported", c->file,
			       sp->values != NULL ?
			       str_or_empty(sp->values->name) : "");
		goto out;
	}
	inits = qr_arena_array(c->arena, gp->n_initializer, sizeof *inits);
	g->inits = inits;
	g->n_init = gp->n_initializer;
	for (i = 0; i < gp->n_initializer && st == QR_OK; i++) {
		const char *what = arena_printf(
			c->arena, "initializer '%s'",
			str_or_empty(gp->initializer[i]->name));

		st = tensor_convert(c, gp->initializer[i], what, "", &inits[i]);
	}
	if (st != QR_OK)
		goto out;
	g->inputs = value_infos_convert(c, gp->input, gp->n_input);
	g->n_input = gp->n_input;
	g->outputs = value_infos_convert(c, gp->output, gp->n_output);
	g->n_output = gp->n_output;
	g->value_info = value_infos_convert(c, gp->value_info, gp->n_value_info);
	g->n_value_info = gp->n_value_info;
	nodes = qr_arena_array(c->arena, gp->n_node, sizeof *nodes);
	g->nodes = nodes;
	g->n_node = gp->n_node;
	for (i = 0; i < gp->n_node && st == QR_OK; i++)
		st = node_convert(c, gp->node[i], i, &nodes[i]);
out:
	c->depth--;
	return st;
}

/* qr_onnx_load_buffer; map: buf is that mapped file (unpack_lean). */
static enum qr_status
load_buffer(const void *buf, size_t len, const struct qr_map *map,
	    const char *name, const char *base_dir, struct qr_model **out,
	    struct qr_diag *d)
{
	struct qr_model_priv *p = xcalloc(1, sizeof *p);
	struct load_ctx c = {0};
	struct qr_opset *opsets;
	struct qr_meta *meta;
	enum qr_status st = QR_OK;
	Onnx__ModelProto *pb;
	struct qr_model *m;
	const char *why;
	size_t i;

	*out = NULL;
	m = qr_arena_alloc(&p->arena, sizeof *m);
	m->priv = p;
	m->path = qr_arena_strdup(&p->arena, name);
	m->file_bytes = len;
	if (base_dir != NULL)
		p->base_dir = xstrdup(base_dir);
	if (len == 0) {
		st = qr_errorf(d, QR_EFORMAT,
			       "file '%s': empty file, not an ONNX model", name);
		goto out;
	}
	if ((why = wire_model_why(buf, len)) != NULL) {
		st = qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX model "
			       "(%s)", name, why);
		goto out;
	}
	if (!wire_depth_ok(buf, len, &onnx__model_proto__descriptor)) {
		st = qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX model "
			       "(messages nested more than %d deep)", name,
			       MAX_WIRE_DEPTH);
		goto out;
	}
	pb = unpack_lean(buf, len, map, p);
	p->pb = pb;
	if (pb == NULL) {
		st = qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX model "
			       "(protobuf decode failed)", name);
		goto out;
	}
	if (pb->graph == NULL || !pb->has_ir_version || pb->ir_version <= 0) {
		st = qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX model "
			       "(no graph or ir_version)", name);
		goto out;
	}
	c.arena = &p->arena;
	c.file = m->path;
	c.priv = p;
	c.external_bytes = &m->external_bytes;
	c.d = d;
	m->ir_version = pb->ir_version;
	m->producer_name = str_or_empty(pb->producer_name);
	m->producer_version = str_or_empty(pb->producer_version);
	m->domain = str_or_empty(pb->domain);
	m->model_version = pb->model_version;
	m->doc_string = str_or_empty(pb->doc_string);
	opsets = qr_arena_array(&p->arena, pb->n_opset_import, sizeof *opsets);
	for (i = 0; i < pb->n_opset_import; i++) {
		opsets[i].domain = norm_domain(pb->opset_import[i]->domain);
		opsets[i].version = pb->opset_import[i]->version;
	}
	m->opsets = opsets;
	m->n_opset = pb->n_opset_import;
	meta = qr_arena_array(&p->arena, pb->n_metadata_props, sizeof *meta);
	for (i = 0; i < pb->n_metadata_props; i++) {
		meta[i].key = str_or_empty(pb->metadata_props[i]->key);
		meta[i].value = str_or_empty(pb->metadata_props[i]->value);
	}
	m->meta = meta;
	m->n_meta = pb->n_metadata_props;
	st = graph_convert(&c, pb->graph, &m->graph);
out:
	if (st != QR_OK)
		qr_onnx_free(m);
	else
		*out = m;
	return st;
}

/*
 * Decode len bytes as a ModelProto and convert it. name is used in
 * messages; base_dir (may be NULL) resolves external data. The model file's
 * bytes are not needed afterwards: what the model keeps is copied.
 */
enum qr_status
qr_onnx_load_buffer(const void *buf, size_t len, const char *name,
		    const char *base_dir, struct qr_model **out,
		    struct qr_diag *d)
{
	return load_buffer(buf, len, NULL, name, base_dir, out, d);
}

/*
 * Load the model at path. External data resolves in path's folder. The
 * caller frees the model with qr_onnx_free. Statuses: see onnx.h.
 */
enum qr_status
qr_onnx_load(const char *path, struct qr_model **out, struct qr_diag *d)
{
	struct qr_map map;
	enum qr_status st;
	char *dir;

	*out = NULL;
	st = qr_map_file(path, &map, d);
	if (st != QR_OK)
		return st;
	dir = qr_path_dirname(path);
	st = load_buffer(map.data, map.size, &map, path, dir, out, d);
	free(dir);
	qr_unmap(&map);
	return st;
}

/* Free m, its arena, its message and its mapped files. NULL is a no-op. */
void
qr_onnx_free(struct qr_model *m)
{
	struct qr_model_priv *p;
	size_t i;

	if (m == NULL)
		return;
	p = m->priv;
	if (p->pb != NULL && p->raw != NULL && p->pb->graph != NULL) {
		/* not protobuf-c's to free */
		Onnx__GraphProto *g = p->pb->graph;

		for (i = 0; i < g->n_initializer; i++) {
			Onnx__TensorProto *tp = g->initializer[i];
			uintptr_t at = (uintptr_t)tp->raw_data.data;

			if (at >= (uintptr_t)p->raw &&
			    at < (uintptr_t)p->raw + p->raw_bytes) {
				tp->raw_data.data = NULL;
				tp->raw_data.len = 0;
			}
		}
	}
	if (p->pb != NULL)
		onnx__model_proto__free_unpacked(p->pb, NULL);
	xpages_free(p->raw, p->raw_bytes);
	for (i = 0; i < p->n_ext; i++) {
		qr_unmap(&p->ext[i].map);
		free(p->ext[i].real);
	}
	free(p->ext);
	free(p->base_dir);
	free(p->base_real);
	qr_arena_free(&p->arena); /* frees m */
	free(p);
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
	struct load_ctx c = {0};
	Onnx__TensorProto *tp;
	enum qr_status st;
	const char *what;

	memset(t, 0, sizeof *t);
	if (len == 0)
		return qr_errorf(d, QR_EFORMAT,
				 "file '%s': empty file, not a tensor", name);
	if (!wire_depth_ok(buf, len, &onnx__tensor_proto__descriptor))
		return qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX tensor "
				 "(messages nested more than %d deep)", name,
				 MAX_WIRE_DEPTH);
	tp = onnx__tensor_proto__unpack(NULL, len, buf);
	if (tp == NULL)
		return qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX tensor "
				 "(protobuf decode failed)", name);
	c.arena = a;
	c.file = name;
	c.copy = 1;
	c.d = d;
	what = arena_printf(a, "tensor '%s'", str_or_empty(tp->name));
	st = tensor_convert(&c, tp, what, "", t);
	onnx__tensor_proto__free_unpacked(tp, NULL);
	return st;
}

/* Opset version imported for domain ("" and "ai.onnx" are the default
 * domain), 0 when the model does not import it. */
int64_t
qr_model_opset(const struct qr_model *m, const char *domain)
{
	size_t i;

	domain = norm_domain(domain);
	for (i = 0; i < m->n_opset; i++)
		if (strcmp(m->opsets[i].domain, domain) == 0)
			return m->opsets[i].version;
	return 0;
}

/* Attribute name of n (borrowed), NULL when absent. */
const struct qr_attr *
qr_node_attr(const struct qr_node *n, const char *name)
{
	size_t i;

	for (i = 0; i < n->n_attr; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}

/* INT attribute name of n, dflt when absent or of another type. */
int64_t
qr_node_attr_int(const struct qr_node *n, const char *name, int64_t dflt)
{
	const struct qr_attr *a = qr_node_attr(n, name);

	return a != NULL && a->type == QR_ATTR_INT ? a->i : dflt;
}

/* FLOAT attribute name of n, dflt when absent or of another type. */
float
qr_node_attr_float(const struct qr_node *n, const char *name, float dflt)
{
	const struct qr_attr *a = qr_node_attr(n, name);

	return a != NULL && a->type == QR_ATTR_FLOAT ? a->f : dflt;
}

/* STRING attribute name of n (borrowed), dflt when absent. */
const char *
qr_node_attr_str(const struct qr_node *n, const char *name, const char *dflt)
{
	const struct qr_attr *a = qr_node_attr(n, name);

	return a != NULL && a->type == QR_ATTR_STRING ? a->s : dflt;
}

/* The value of a Constant node as a tensor (borrowed), whichever attribute
 * holds it; NULL for other nodes and for sparse_value. */
const struct qr_tensor_data *
qr_node_const_value(const struct qr_node *n)
{
	size_t i;

	if (strcmp(n->op_type, "Constant") != 0 || n->domain[0] != '\0')
		return NULL;
	for (i = 0; i < n->n_attr; i++)
		if (n->attrs[i].t != NULL &&
		    strncmp(n->attrs[i].name, "value", 5) == 0)
			return n->attrs[i].t;
	return NULL;
}
