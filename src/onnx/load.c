/*
 * onnx: qr_onnx_load and qr_onnx_load_buffer: a file checked from its
 * wire format before it is decoded (load_wire.c), its top-level fields
 * and main graph converted (load_graph.c), and the model freed with
 * everything it owns. Also the helpers every conversion uses. See onnx.h
 * for ownership and onnx-int.h for the other files.
 */
#include "onnx/onnx-int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.pb-c.h"

/* ---- helpers every conversion uses ---- */

/* printf into a new string in a. */
const char *
qr_onnx_arena_printf(struct qr_arena *a, const char *fmt, ...)
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
const char *
qr_onnx_ctx_str(struct qr_onnx_ctx *c, const char *s)
{
	s = qr_onnx_or_empty(s);
	return c->copy ? qr_arena_strdup(c->arena, s) : s;
}

/* n message bytes at p: borrowed, or copied when the message dies. */
const void *
qr_onnx_ctx_bytes(struct qr_onnx_ctx *c, const void *p, size_t n)
{
	void *q;

	if (!c->copy || n == 0)
		return p;
	q = qr_arena_alloc(c->arena, n);
	memcpy(q, p, n);
	return q;
}

/* "ai.onnx" and "" both name the default domain; we store "". */
const char *
qr_onnx_norm_domain(const char *dom)
{
	if (dom == NULL || strcmp(dom, "ai.onnx") == 0)
		return "";
	return dom;
}

/* ---- the model ---- */

/* qr_onnx_load_buffer; map: buf is that mapped file (qr_onnx_unpack_lean). */
static enum qr_status
load_buffer(const void *buf, size_t len, const struct qr_map *map,
	    const char *name, const char *base_dir, struct qr_model **out,
	    struct qr_diag *d)
{
	struct qr_model_priv *p = xcalloc(1, sizeof *p);
	struct qr_onnx_ctx c = {0};
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
	if ((why = qr_onnx_wire_model_why(buf, len)) != NULL) {
		st = qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX model "
			       "(%s)", name, why);
		goto out;
	}
	if (!qr_onnx_wire_depth_ok(buf, len, &onnx__model_proto__descriptor)) {
		st = qr_errorf(d, QR_EFORMAT, "file '%s': not an ONNX model "
			       "(messages nested more than %d deep)", name,
			       QR_ONNX_MAX_WIRE_DEPTH);
		goto out;
	}
	pb = qr_onnx_unpack_lean(buf, len, map, p);
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
	m->producer_name = qr_onnx_or_empty(pb->producer_name);
	m->producer_version = qr_onnx_or_empty(pb->producer_version);
	m->domain = qr_onnx_or_empty(pb->domain);
	m->model_version = pb->model_version;
	m->doc_string = qr_onnx_or_empty(pb->doc_string);
	opsets = qr_arena_array(&p->arena, pb->n_opset_import, sizeof *opsets);
	for (i = 0; i < pb->n_opset_import; i++) {
		opsets[i].domain =
			qr_onnx_norm_domain(pb->opset_import[i]->domain);
		opsets[i].version = pb->opset_import[i]->version;
	}
	m->opsets = opsets;
	m->n_opset = pb->n_opset_import;
	meta = qr_arena_array(&p->arena, pb->n_metadata_props, sizeof *meta);
	for (i = 0; i < pb->n_metadata_props; i++) {
		meta[i].key = qr_onnx_or_empty(pb->metadata_props[i]->key);
		meta[i].value = qr_onnx_or_empty(pb->metadata_props[i]->value);
	}
	m->meta = meta;
	m->n_meta = pb->n_metadata_props;
	st = qr_onnx_graph_convert(&c, pb->graph, &m->graph);
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

/* Opset version imported for domain ("" and "ai.onnx" are the default
 * domain), 0 when the model does not import it. */
int64_t
qr_model_opset(const struct qr_model *m, const char *domain)
{
	size_t i;

	domain = qr_onnx_norm_domain(domain);
	for (i = 0; i < m->n_opset; i++)
		if (strcmp(m->opsets[i].domain, domain) == 0)
			return m->opsets[i].version;
	return 0;
}
