/*
 * onnx: the protobuf wire format, read directly. Before protobuf-c sees a
 * file: whether its top-level fields can be a model at all, and whether
 * its messages nest too deep for the unpacker's recursion. Then the
 * unpack itself, without a second copy of the weights. See onnx-int.h.
 */
#include "onnx/onnx-int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"

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
const char *
qr_onnx_wire_model_why(const uint8_t *buf, size_t len)
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
 * QR_ONNX_MAX_WIRE_DEPTH. Walks the wire format without recursion,
 * following only fields desc declares as messages. Malformed input also
 * gives 1: the unpacker itself refuses it.
 */
int
qr_onnx_wire_depth_ok(const uint8_t *buf, size_t len,
		      const ProtobufCMessageDescriptor *desc)
{
	struct {
		const uint8_t *end;                   /* end of this message */
		const ProtobufCMessageDescriptor *desc; /* its type */
	} stack[QR_ONNX_MAX_WIRE_DEPTH];
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
			if (top + 1 >= QR_ONNX_MAX_WIRE_DEPTH)
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
Onnx__ModelProto *
qr_onnx_unpack_lean(const uint8_t *buf, size_t len, const struct qr_map *map,
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
