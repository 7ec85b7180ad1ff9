/*
 * summary: what a model is (producer, opsets, I/O, op histogram,
 * parameters) and, for a quantized candidate, how it is quantized: its
 * format, each quantized compute layer's weight dtype/bits/granularity/
 * scales, and which compute ops run quantized (coverage).
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "kernels/kernels.h"
#include "onnx/onnx.h"

static int
is_default_domain(const char *d)
{
	return d == NULL || d[0] == '\0' || strcmp(d, "ai.onnx") == 0;
}

static int
op_is(const struct qr_node *n, const char *op)
{
	return strcmp(n->op_type, op) == 0;
}

/* ---- model summary ---- */

static void
io_desc(const struct qr_value_info *vi, struct qr_io_desc *io)
{
	struct qr_buf b = { 0 };
	int i;

	io->name = xstrdup(vi->name);
	io->dtype = xstrdup(vi->dtype ? qr_dtype_name(vi->dtype) : "?");
	if (vi->ndim < 0 || (vi->ndim > 0 && vi->dims == NULL)) {
		io->shape = xstrdup("?");
		return;
	}
	qr_buf_putc(&b, '[');
	for (i = 0; i < vi->ndim; i++) {
		const struct qr_dim *dm = &vi->dims[i];

		if (i)
			qr_buf_putc(&b, ',');
		if (dm->value >= 0)
			qr_buf_printf(&b, "%lld", (long long)dm->value);
		else if (dm->param && dm->param[0])
			qr_buf_puts(&b, dm->param);
		else
			qr_buf_putc(&b, '?');
	}
	qr_buf_putc(&b, ']');
	io->shape = qr_buf_take(&b);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
cmp_count(const void *a, const void *b)
{
	const struct qr_op_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->op, y->op);
}

/* Elements and bytes of a Constant node's value. */
static void
constant_size(const struct qr_node *n, size_t *elems, size_t *bytes)
{
	size_t i;

	*elems = *bytes = 0;
	for (i = 0; i < n->n_attr; i++) {
		const struct qr_attr *a = &n->attrs[i];

		switch (a->type) {
		case QR_ATTR_TENSOR:
			if (a->t) {
				*elems += a->t->n_elem;
				*bytes += qr_dtype_stored_bytes(a->t->dtype,
								a->t->n_elem);
			}
			break;
		case QR_ATTR_FLOAT:
			*elems += 1;
			*bytes += 4;
			break;
		case QR_ATTR_INT:
			*elems += 1;
			*bytes += 8;
			break;
		case QR_ATTR_FLOATS:
			*elems += a->n;
			*bytes += 4 * a->n;
			break;
		case QR_ATTR_INTS:
			*elems += a->n;
			*bytes += 8 * a->n;
			break;
		default:
			break;
		}
	}
}

/*
 * The summary of the model behind g: producer "name version", IR version,
 * opsets "ai.onnx:13, com.microsoft:1", graph inputs (initializers listed
 * as inputs left out) and outputs with dtype and shape ("[batch,3,224,224]",
 * "?" for an unknown dim or shape), op histogram sorted by count then name
 * (non-default domains written "domain:Op"), parameters = elements and
 * bytes of all initializers and Constant node values, file bytes = the
 * .onnx plus its external data, metadata_props. Strings are copies.
 */
void
qr_an_summary(const struct qr_graph *g, const char *role,
	      struct qr_model_summary *s)
{
	const struct qr_model *m = qr_graph_model(g);
	const struct qr_graph_data *gd = &m->graph;
	struct qr_buf b = { 0 };
	char **keys;
	size_t i, k;

	memset(s, 0, sizeof *s);
	s->role = xstrdup(role);
	s->path = xstrdup(m->path ? m->path : "");
	if (m->producer_version && m->producer_version[0])
		s->producer = xasprintf("%s %s", m->producer_name ?
					m->producer_name : "",
					m->producer_version);
	else
		s->producer = xstrdup(m->producer_name ? m->producer_name :
				      "");
	s->ir_version = m->ir_version;
	for (i = 0; i < m->n_opset; i++)
		qr_buf_printf(&b, "%s%s:%lld", i ? ", " : "",
			      is_default_domain(m->opsets[i].domain) ?
			      "ai.onnx" : m->opsets[i].domain,
			      (long long)m->opsets[i].version);
	s->opsets = b.len ? qr_buf_take(&b) : xstrdup("");
	qr_buf_free(&b);
	s->n_nodes = gd->n_node;

	s->inputs = xcalloc(gd->n_input + 1, sizeof *s->inputs);
	for (i = 0; i < gd->n_input; i++) {
		const char *nm = gd->inputs[i].name;

		if (qr_graph_const(g, nm) && qr_graph_producer(g, nm) < 0)
			continue;
		io_desc(&gd->inputs[i], &s->inputs[s->n_inputs++]);
	}
	s->outputs = xcalloc(gd->n_output + 1, sizeof *s->outputs);
	for (i = 0; i < gd->n_output; i++)
		io_desc(&gd->outputs[i], &s->outputs[s->n_outputs++]);

	keys = xcalloc(gd->n_node + 1, sizeof *keys);
	for (i = 0; i < gd->n_node; i++) {
		const struct qr_node *n = &gd->nodes[i];

		keys[i] = is_default_domain(n->domain) ?
			xstrdup(n->op_type) :
			xasprintf("%s:%s", n->domain, n->op_type);
	}
	qsort(keys, gd->n_node, sizeof *keys, cmp_str);
	s->ops = xcalloc(gd->n_node + 1, sizeof *s->ops);
	for (i = 0; i < gd->n_node; i = k) {
		for (k = i + 1; k < gd->n_node; k++)
			if (strcmp(keys[k], keys[i]) != 0)
				break;
		s->ops[s->n_ops].op = keys[i];
		s->ops[s->n_ops++].count = k - i;
		while (++i < k)
			free(keys[i]);
	}
	free(keys);
	qsort(s->ops, s->n_ops, sizeof *s->ops, cmp_count);

	for (i = 0; i < gd->n_init; i++) {
		s->n_params += gd->inits[i].n_elem;
		s->param_bytes += qr_dtype_stored_bytes(gd->inits[i].dtype,
							gd->inits[i].n_elem);
	}
	for (i = 0; i < gd->n_node; i++) {
		size_t e, by;

		if (!op_is(&gd->nodes[i], "Constant"))
			continue;
		constant_size(&gd->nodes[i], &e, &by);
		s->n_params += e;
		s->param_bytes += by;
	}
	s->file_bytes = m->file_bytes + m->external_bytes;
	s->n_meta = m->n_meta;
	s->meta_keys = xcalloc(m->n_meta + 1, sizeof *s->meta_keys);
	s->meta_values = xcalloc(m->n_meta + 1, sizeof *s->meta_values);
	for (i = 0; i < m->n_meta; i++) {
		s->meta_keys[i] = xstrdup(m->meta[i].key ? m->meta[i].key : "");
		s->meta_values[i] = xstrdup(m->meta[i].value ?
					    m->meta[i].value : "");
	}
}

void
qr_an_summary_free(struct qr_model_summary *s)
{
	size_t i;

	free(s->role);
	free(s->path);
	free(s->producer);
	free(s->opsets);
	for (i = 0; i < s->n_inputs; i++) {
		free(s->inputs[i].name);
		free(s->inputs[i].dtype);
		free(s->inputs[i].shape);
	}
	free(s->inputs);
	for (i = 0; i < s->n_outputs; i++) {
		free(s->outputs[i].name);
		free(s->outputs[i].dtype);
		free(s->outputs[i].shape);
	}
	free(s->outputs);
	for (i = 0; i < s->n_ops; i++)
		free(s->ops[i].op);
	free(s->ops);
	for (i = 0; i < s->n_meta; i++) {
		free(s->meta_keys[i]);
		free(s->meta_values[i]);
	}
	free(s->meta_keys);
	free(s->meta_values);
}

/* ---- quantization format ---- */

/* Ops that compute on integer data themselves (QOperator or dynamic). */
static int
is_int_compute(const struct qr_node *n)
{
	const char *op = n->op_type;

	return strncmp(op, "QLinear", 7) == 0 || strcmp(op, "QGemm") == 0 ||
	       strcmp(op, "QAttention") == 0 ||
	       strcmp(op, "ConvInteger") == 0 ||
	       strcmp(op, "MatMulInteger") == 0 ||
	       strcmp(op, "DynamicQuantizeMatMul") == 0 ||
	       strcmp(op, "MatMulIntegerToFloat") == 0 ||
	       strcmp(op, "DynamicQuantizeLSTM") == 0;
}

/* Float ops that a quantizer can put on integer data (they have QLinear*
 * or QDQ counterparts in ONNX Runtime). */
static int
is_float_compute(const struct qr_node *n)
{
	static const char *const ops[] = {
		"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul",
		"AveragePool", "GlobalAveragePool", "Concat", "Sigmoid",
		"LeakyRelu", "Softmax", "ReduceMean", "Where", "Attention",
		"LSTM", NULL
	};
	size_t i;

	for (i = 0; ops[i]; i++)
		if (strcmp(n->op_type, ops[i]) == 0)
			return 1;
	return 0;
}

/* 1 when name is a constant, or a QuantizeLinear of one (seen through
 * no-op links, qdq_links.c). */
static int
const_or_fakeq(const struct qr_graph *g, const char *name)
{
	const struct qr_node *p;

	name = qr_an_link_source(g, name);
	if (qr_graph_const(g, name))
		return 1;
	p = qr_graph_producer_node(g, name);
	return p && op_is(p, "QuantizeLinear") && p->n_in > 0 &&
	       qr_graph_const(g, qr_an_link_source(g, p->in[0])) != NULL;
}

/*
 * Format of a model, first rule that holds:
 *   dynamic      DynamicQuantizeLinear feeding MatMulInteger/ConvInteger
 *                (or com.microsoft DynamicQuantizeMatMul)
 *   qoperator    QLinear* (any domain), QGemm, QAttention, or integer ops
 *                fed without DynamicQuantizeLinear
 *   qdq          a QuantizeLinear on an activation (non-constant input)
 *                feeding a DequantizeLinear, directly or through no-op
 *                links (torch.onnx's Cast, Identity)
 *   weight-only  DequantizeLinear on constants only, or com.microsoft
 *                MatMulNBits
 *   float        none of these
 */
enum qr_qformat
qr_an_detect_format(const struct qr_graph *g)
{
	size_t i, n = qr_graph_n_nodes(g);
	int dql = 0, intops = 0, qop = 0, qdq = 0, wdq = 0, dqm = 0;

	for (i = 0; i < n; i++) {
		const struct qr_node *nd = qr_graph_node(g, i);
		const char *op = nd->op_type;

		if (strcmp(op, "DynamicQuantizeLinear") == 0)
			dql = 1;
		else if (strcmp(op, "DynamicQuantizeMatMul") == 0 ||
			 strcmp(op, "DynamicQuantizeLSTM") == 0)
			dqm = 1;
		else if (strcmp(op, "ConvInteger") == 0 ||
			 strcmp(op, "MatMulInteger") == 0 ||
			 strcmp(op, "MatMulIntegerToFloat") == 0)
			intops = 1;
		else if (is_int_compute(nd))
			qop = 1;
		else if (strcmp(op, "MatMulNBits") == 0)
			wdq = 1;
		else if (strcmp(op, "DequantizeLinear") == 0 && nd->n_in > 0) {
			const struct qr_node *p =
				qr_graph_producer_node(g, qr_an_link_source(g, nd->in[0]));

			if (const_or_fakeq(g, nd->in[0]))
				wdq = 1;
			else if (p && op_is(p, "QuantizeLinear"))
				qdq = 1;
		}
	}
	if ((dql && intops) || dqm)
		return QR_QFMT_DYNAMIC;
	if (qop || intops)
		return QR_QFMT_QOPERATOR;
	if (qdq)
		return QR_QFMT_QDQ;
	if (wdq)
		return QR_QFMT_WEIGHT_ONLY;
	return QR_QFMT_FLOAT;
}

/* ---- quantized layers ---- */

static const struct qr_tensor_data *
in_const(const struct qr_graph *g, const struct qr_node *n, size_t i)
{
	if (i >= n->n_in || n->in[i][0] == '\0')
		return NULL;
	return qr_graph_const(g, n->in[i]);
}

/* 1 when activation tensor name arrives quantized: from a
 * DequantizeLinear of a non-constant, a QuantizeLinear or a
 * DynamicQuantizeLinear, or any integer tensor. */
static int
act_quantized(const struct qr_graph *g, const char *name)
{
	const struct qr_node *p = qr_graph_producer_node(g, qr_an_link_source(g, name));

	if (p == NULL)
		return 0;
	if (op_is(p, "DequantizeLinear"))
		return p->n_in > 0 && !const_or_fakeq(g, p->in[0]);
	return op_is(p, "QuantizeLinear") ||
	       op_is(p, "DynamicQuantizeLinear") || is_int_compute(p);
}

/*
 * The weight scale of a ConvInteger/MatMulInteger (which has no scale
 * input): ONNX Runtime names it W_scale for a weight W_quantized; failing
 * that, it is the constant factor of the Mul that rescales the integer
 * output (output -> Cast -> Mul(x, x_scale * w_scale)), found by walking at
 * most three single-consumer nodes.
 */
static const struct qr_tensor_data *
dyn_scale(const struct qr_graph *g, const struct qr_node *n,
	  const struct qr_tensor_data *w)
{
	const char *suf = "_quantized";
	size_t lw = strlen(w->name), ls = strlen(suf), hop, k, nc;
	const struct qr_tensor_data *t = NULL;
	const char *cur;

	if (lw > ls && strcmp(w->name + lw - ls, suf) == 0) {
		char *nm = xasprintf("%.*s_scale", (int)(lw - ls), w->name);

		t = qr_graph_const(g, nm);
		free(nm);
		if (t)
			return t;
	}
	cur = n->out[0];
	for (hop = 0; hop < 3; hop++) {
		const size_t *cs = qr_graph_consumers(g, cur, &nc);
		const struct qr_node *c;

		if (nc != 1)
			return NULL;
		c = qr_graph_node(g, cs[0]);
		if (op_is(c, "Mul")) {
			for (k = 0; k < c->n_in && k < 2; k++) {
				const struct qr_node *p;

				if (strcmp(c->in[k], cur) == 0)
					continue;
				if ((t = qr_graph_const(g, c->in[k])) &&
				    qr_an_is_float(t->dtype))
					return t;
				p = qr_graph_producer_node(g, c->in[k]);
				if (p && op_is(p, "Mul") && p->n_in == 2) {
					if ((t = qr_graph_const(g, p->in[0])))
						return t;
					if ((t = qr_graph_const(g, p->in[1])))
						return t;
				}
			}
			return NULL;
		}
		if (c->n_out < 1)
			return NULL;
		cur = c->out[0];
	}
	return NULL;
}

/*
 * The integer weight of a fake-quantized layer: name is the output of a
 * QuantizeLinear of a float constant (TensorRT's and NVIDIA's
 * pytorch-quantization exports keep weights float, with a
 * QuantizeLinear -> DequantizeLinear pair in the graph). Quantized here
 * as the op does (qr_quantize_f32, ONNX Runtime's rounding), into a
 * heap tensor named after the QuantizeLinear's output; NULL when name is
 * not that or its scale, zero point or axis do not fit.
 */
static struct qr_tensor_data *
fold_fake_quant(const struct qr_graph *g, const char *name)
{
	const struct qr_node *p = qr_graph_producer_node(g, qr_an_link_source(g, name));
	const struct qr_tensor_data *w, *sc, *zp;
	struct qr_tensor_data *q;
	size_t i, outer = 1, len = 1, inner = 1, esz;
	int64_t ax;
	float *x, *s;
	int32_t *z;
	int qt, dt;

	if (p == NULL || !op_is(p, "QuantizeLinear") || p->n_in < 2 ||
	    (w = qr_graph_const(g, qr_an_link_source(g, p->in[0]))) == NULL ||
	    !qr_an_is_float(w->dtype) || w->n_elem == 0 ||
	    (sc = qr_graph_const(g, p->in[1])) == NULL || sc->n_elem == 0)
		return NULL;
	zp = p->n_in > 2 && p->in[2][0] ? qr_graph_const(g, p->in[2]) : NULL;
	if (p->n_in > 2 && p->in[2][0] && zp == NULL)
		return NULL;
	dt = zp ? zp->dtype : QR_DT_UINT8;
	qt = dt == QR_DT_UINT8 ? QR_QT_U8 : dt == QR_DT_INT8 ? QR_QT_S8 :
	     dt == QR_DT_UINT16 ? QR_QT_U16 : dt == QR_DT_INT16 ? QR_QT_S16 :
	     -1;
	if (qt < 0 || (zp && zp->n_elem != sc->n_elem))
		return NULL;
	if (sc->n_elem > 1) {
		ax = qr_node_attr_int(p, "axis", 1);
		if (ax < 0)
			ax += w->ndim;
		if (ax < 0 || ax >= w->ndim || w->dims[ax] != (int64_t)sc->n_elem)
			return NULL;
		for (i = 0; i < (size_t)w->ndim; i++) {
			if ((int64_t)i < ax)
				outer *= (size_t)w->dims[i];
			else if ((int64_t)i > ax)
				inner *= (size_t)w->dims[i];
		}
		len = sc->n_elem;
	} else {
		inner = w->n_elem;
	}
	x = xmalloc(w->n_elem * sizeof *x);
	s = xmalloc(sc->n_elem * sizeof *s);
	z = xcalloc(sc->n_elem, sizeof *z);
	if (qr_tensor_to_f32(w, x, NULL) != QR_OK ||
	    qr_tensor_to_f32(sc, s, NULL) != QR_OK) {
		free(x);
		free(s);
		free(z);
		return NULL;
	}
	for (i = 0; zp && i < zp->n_elem; i++)
		z[i] = (int32_t)qr_tensor_get(zp, i);
	q = xcalloc(1, sizeof *q);
	*q = *w;
	q->name = p->out[0];
	q->dtype = dt;
	esz = qr_dtype_size(dt);
	q->nbytes = w->n_elem * esz;
	q->external = 0;
	q->data = xmalloc(q->nbytes);
	qr_quantize_f32(x, outer, len, inner, s, z, (enum qr_qtype)qt,
			(void *)q->data);
	free(x);
	free(s);
	free(z);
	return q;
}

void
qr_an_qlayers_free(struct qr_an_qlayer *ql, size_t n_ql)
{
	size_t i;

	for (i = 0; ql != NULL && i < n_ql; i++) {
		struct qr_tensor_data *own[3] = {ql[i].folded, ql[i].fscale,
						 ql[i].fzp};
		size_t k;

		for (k = 0; k < 3; k++)
			if (own[k] != NULL) {
				free((void *)own[k]->data);
				free(own[k]);
			}
	}
	free(ql);
}

void
qr_an_qlayer_codes(struct qr_an_qlayer *ql)
{
	const struct qr_node *n = ql->lazy;
	const struct qr_tensor_data *b;
	size_t k, nn, bs, kb, blob, i, j;
	unsigned bits;
	uint8_t *q;

	if (n == NULL || ql->folded->data != NULL)
		return;
	b = in_const(ql->lazy_g, n, 1);
	k = (size_t)ql->folded->dims[0];
	nn = (size_t)ql->folded->dims[1];
	bits = (unsigned)qr_node_attr_int(n, "bits", 4);
	bs = ql->block;
	kb = (k + bs - 1) / bs;
	blob = bs * bits / 8;
	q = xmalloc(ql->folded->nbytes ? ql->folded->nbytes : 1);
	for (j = 0; j < nn; j++) {
		const uint8_t *col = (const uint8_t *)b->data + j * kb * blob;

		for (i = 0; i < k; i++)
			q[i * nn + j] = (uint8_t)qr_packed_code(
				col + i / bs * blob, i % bs, bits);
	}
	ql->folded->data = q;
}

void
qr_an_qlayer_drop_codes(struct qr_an_qlayer *ql)
{
	if (ql->lazy == NULL)
		return;
	free((void *)ql->folded->data);
	ql->folded->data = NULL;
}

/* A zeroed heap tensor named name, dtype, [d0][d1]. */
static struct qr_tensor_data *
own_2d(const char *name, int dtype, size_t d0, size_t d1)
{
	struct qr_tensor_data *t = xcalloc(1, sizeof *t);

	t->name = name;
	t->dtype = dtype;
	t->ndim = 2;
	t->dims[0] = (int64_t)d0;
	t->dims[1] = (int64_t)d1;
	t->n_elem = d0 * d1;
	t->nbytes = t->n_elem * qr_dtype_size(dtype);
	t->data = xcalloc(t->nbytes ? t->nbytes : 1, 1);
	return t;
}

/*
 * The weight of a com.microsoft MatMulNBits n as the blocked
 * DequantizeLinear of ONNX Runtime's QDQ flavour holds it, so pairing and
 * measuring see one layout: codes [K][N] (uint4 for 4 bits, else uint8
 * with ql->bits), scales and zero points [k_blocks][N], blocks of
 * block_size along axis 0. Zero points are float when the node's are,
 * and 2^(bits-1) when it has none. 0 when B, the scales or zero points are
 * not constants of the sizes the attributes give, or a g_idx input
 * reorders rows (GPTQ act order: no block layout holds that).
 */
static int
fold_nbits(const struct qr_graph *g, const struct qr_node *n,
	   struct qr_an_qlayer *ql)
{
	size_t k = (size_t)qr_node_attr_int(n, "K", 0);
	size_t nn = (size_t)qr_node_attr_int(n, "N", 0);
	int64_t bits = qr_node_attr_int(n, "bits", 4);
	size_t bs = (size_t)qr_node_attr_int(n, "block_size", 0);
	const struct qr_tensor_data *b = in_const(g, n, 1);
	const struct qr_tensor_data *sc = in_const(g, n, 2);
	const struct qr_tensor_data *zp = in_const(g, n, 3);
	size_t kb, blob, zrow, i, j;
	float *s, *z;

	if ((bits != 2 && bits != 4 && bits != 8) || k == 0 || nn == 0 ||
	    bs < 16 || b == NULL || sc == NULL ||
	    b->dtype != QR_DT_UINT8 || !qr_an_is_float(sc->dtype) ||
	    (n->n_in > 3 && n->in[3][0] && zp == NULL) ||
	    (n->n_in > 4 && n->in[4][0]))
		return 0;
	if (k > ((size_t)1 << 31) || nn > ((size_t)1 << 31) ||
	    bs > 65536)
		return 0;
	kb = (k + bs - 1) / bs;
	blob = bs * (size_t)bits / 8;
	zrow = (kb * (size_t)bits + 7) / 8;
	if (b->n_elem / blob / kb != nn || b->n_elem != nn * kb * blob ||
	    sc->n_elem != nn * kb ||
	    (zp && !(zp->dtype == QR_DT_UINT8 && zp->n_elem == nn * zrow) &&
	     !(qr_an_is_float(zp->dtype) && zp->n_elem == nn * kb)))
		return 0;
	/* the codes' shape now, their values when a reader asks */
	ql->folded = own_2d(b->name, bits == 4 ? QR_DT_UINT4 : QR_DT_UINT8,
			    0, 0);
	ql->folded->dims[0] = (int64_t)k;
	ql->folded->dims[1] = (int64_t)nn;
	ql->folded->n_elem = k * nn;
	ql->folded->nbytes = k * nn * qr_dtype_size(ql->folded->dtype);
	free((void *)ql->folded->data);
	ql->folded->data = NULL;
	ql->lazy = n;
	ql->lazy_g = g;
	ql->fscale = own_2d(sc->name, QR_DT_FLOAT, kb, nn);
	ql->fzp = own_2d(zp ? zp->name : sc->name, zp && zp->dtype !=
			 QR_DT_UINT8 ? QR_DT_FLOAT : QR_DT_UINT8, kb, nn);
	s = (float *)ql->fscale->data;
	for (j = 0; j < nn; j++) {
		for (i = 0; i < kb; i++) {
			size_t at = i * nn + j;
			unsigned zc = 1u << (bits - 1);

			s[at] = (float)qr_tensor_get(sc, j * kb + i);
			if (zp && zp->dtype == QR_DT_UINT8)
				zc = qr_packed_code((const uint8_t *)zp->data +
						    j * zrow, i,
						    (unsigned)bits);
			if (ql->fzp->dtype == QR_DT_FLOAT) {
				z = (float *)ql->fzp->data;
				z[at] = (float)qr_tensor_get(zp, j * kb + i);
			} else {
				((uint8_t *)ql->fzp->data)[at] = (uint8_t)zc;
			}
		}
	}
	ql->q = ql->folded;
	ql->scale = ql->fscale;
	ql->zp = ql->fzp;
	ql->zp_implied = zp == NULL;
	ql->axis = 0;
	ql->block = bs;
	ql->bits = bits == 4 ? 0 : (int)bits;
	ql->family = QR_AN_FAM_MATMUL;
	return 1;
}

/* Quantized-layer description of node n, or 0 when it is not one. */
static int
find_qlayer(const struct qr_graph *g, size_t i, struct qr_an_qlayer *ql,
	    int *act)
{
	const struct qr_node *n = qr_graph_node(g, i);
	const char *op = n->op_type;
	size_t wi = 0, si = 0, zi = 0;

	memset(ql, 0, sizeof *ql);
	ql->node = i;
	*act = 1;
	if (strcmp(op, "QLinearConv") == 0 ||
	    strcmp(op, "QLinearConvTranspose") == 0 ||
	    strcmp(op, "QLinearMatMul") == 0 || strcmp(op, "QGemm") == 0) {
		wi = 3, si = 4, zi = 5;
		ql->family = strcmp(op, "QLinearConv") == 0 ? QR_AN_FAM_CONV :
			strcmp(op, "QLinearConvTranspose") == 0 ?
			QR_AN_FAM_CONVT : QR_AN_FAM_MATMUL;
	} else if (strcmp(op, "ConvInteger") == 0 ||
		   strcmp(op, "MatMulInteger") == 0) {
		wi = 1, si = 0, zi = 3;
		ql->family = op[0] == 'C' ? QR_AN_FAM_CONV : QR_AN_FAM_MATMUL;
		*act = n->n_in > 0 && act_quantized(g, n->in[0]);
	} else if (strcmp(op, "DynamicQuantizeMatMul") == 0) {
		wi = 1, si = 2, zi = 3;
		ql->family = QR_AN_FAM_MATMUL;
	} else if (strcmp(op, "MatMulIntegerToFloat") == 0) {
		wi = 1, si = 3, zi = 5;
		ql->family = QR_AN_FAM_MATMUL;
	} else if (strcmp(op, "QAttention") == 0) {
		wi = 1, si = 4, zi = 7;
		ql->family = QR_AN_FAM_MATMUL;
	} else if (strcmp(op, "MatMulNBits") == 0) {
		if (!fold_nbits(g, n, ql))
			return 0;
		*act = n->n_in > 0 && act_quantized(g, n->in[0]);
		goto found;
	} else if (is_default_domain(n->domain) && n->n_in > 1 &&
		   (strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0 ||
		    strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0)) {
		const struct qr_node *dq =
			qr_graph_producer_node(g, qr_an_link_source(g, n->in[1]));
		const struct qr_tensor_data *q;
		int64_t ax;

		if (dq == NULL || !op_is(dq, "DequantizeLinear") ||
		    dq->n_in < 2)
			return 0;
		q = qr_graph_const(g, qr_an_link_source(g, dq->in[0]));
		if (q == NULL)
			q = ql->folded = fold_fake_quant(g, dq->in[0]);
		if (q == NULL || qr_dtype_bits(q->dtype) == 0)
			return 0;
		ql->q = q;
		ql->scale = in_const(g, dq, 1);
		ql->zp = in_const(g, dq, 2);
		ax = qr_node_attr_int(dq, "axis", 1);
		if (ax < 0)
			ax += q->ndim;
		ql->axis = (int)ax;
		if (qr_node_attr_int(dq, "block_size", 0) > 0)
			ql->block = (size_t)qr_node_attr_int(dq, "block_size",
							     0);
		ql->family = op[0] == 'C' ? (op[4] == '\0' ? QR_AN_FAM_CONV :
					     QR_AN_FAM_CONVT) :
			QR_AN_FAM_MATMUL;
		*act = act_quantized(g, n->in[0]);
		goto found;
	} else {
		return 0;
	}
	if (!is_int_compute(n) || wi >= n->n_in)
		return 0;
	ql->q = in_const(g, n, wi);
	if (ql->q == NULL || qr_dtype_bits(ql->q->dtype) == 0)
		return 0;
	ql->scale = si ? in_const(g, n, si) : dyn_scale(g, n, ql->q);
	ql->zp = in_const(g, n, zi);
	switch (ql->family) {
	case QR_AN_FAM_CONV:
		ql->axis = 0;
		break;
	case QR_AN_FAM_CONVT:
		ql->axis = 1;
		break;
	default:
		ql->axis = strcmp(op, "QGemm") == 0 ?
			(qr_node_attr_int(n, "transB", 0) ? 0 : 1) :
			ql->q->ndim - 1;
		break;
	}
found:
	ql->per_channel = (ql->scale && ql->scale->n_elem > 1) ||
			  (ql->zp && ql->zp->n_elem > 1);
	if (ql->axis < 0 || ql->axis >= ql->q->ndim)
		ql->axis = 0;
	return 1;
}

static void
minmax(const struct qr_tensor_data *t, double *lo, double *hi)
{
	size_t i;

	if (t == NULL || t->data == NULL || t->n_elem == 0) {
		*lo = *hi = NAN;
		return;
	}
	*lo = INFINITY;
	*hi = -INFINITY;
	for (i = 0; i < t->n_elem; i++) {
		double v = qr_tensor_get(t, i);

		*lo = v < *lo ? v : *lo;
		*hi = v > *hi ? v : *hi;
	}
}

/* Output of a dynamic-quantization helper: a Mul fed by
 * DynamicQuantizeLinear's scale or by a Cast of an integer op. */
static int
is_dyn_helper(const struct qr_graph *g, const struct qr_node *n)
{
	size_t k;

	if (!op_is(n, "Mul"))
		return 0;
	for (k = 0; k < n->n_in; k++) {
		const struct qr_node *p = qr_graph_producer_node(g, n->in[k]);

		if (p == NULL)
			continue;
		if (op_is(p, "DynamicQuantizeLinear"))
			return 1;
		if (op_is(p, "Cast") && p->n_in > 0) {
			const struct qr_node *pp = qr_graph_producer_node(g, p->in[0]);

			if (pp && is_int_compute(pp))
				return 1;
		}
	}
	return 0;
}

/*
 * Quant summary of candidate g: its format; each quantized compute layer
 * (QLinearConv/QLinearMatMul/QGemm/QAttention/..., ConvInteger/
 * MatMulInteger, or a QDQ/weight-only Conv/ConvTranspose/Gemm/MatMul whose
 * weight is a DequantizeLinear of a constant integer tensor) with weight
 * dtype, bits, scale/zero-point ranges and granularity (per channel when
 * the scale or zero point has more than one element; the axis is 0 for
 * QLinearConv/ConvInteger weights, 1 for ConvTranspose, the column axis for
 * MatMul-like ops, and DequantizeLinear's attribute, default 1, for QDQ);
 * and coverage: every compute op, quantized when it is an integer op or
 * when one of its inputs comes from a DequantizeLinear. Scale and zero
 * point ranges are NaN when unknown (ConvInteger without a findable
 * scale). *ql gets the layers in topological order (heap).
 */
void
qr_an_quant_summary(const struct qr_graph *g, const char *path,
		    struct qr_quant_summary *qs, struct qr_an_qlayer **qlo,
		    size_t *n_qlo)
{
	const size_t *topo = qr_graph_topo_order(g);
	size_t nn = qr_graph_n_nodes(g), k, j;
	struct qr_an_qlayer *v = NULL, ql;
	size_t nv = 0;
	int act;

	memset(qs, 0, sizeof *qs);
	qs->path = xstrdup(path ? path : "");
	qs->format = qr_an_detect_format(g);
	qs->layers = xcalloc(nn + 1, sizeof *qs->layers);
	qs->coverage = xcalloc(nn + 1, sizeof *qs->coverage);
	for (k = 0; k < nn; k++) {
		const struct qr_node *n = qr_graph_node(g, topo[k]);
		struct qr_coverage_entry *ce;

		if (find_qlayer(g, topo[k], &ql, &act)) {
			struct qr_quant_layer *l = &qs->layers[qs->n_layers++];

			ql.depth = (int)k;
			l->layer = xstrdup(n->name);
			l->op = xstrdup(n->op_type);
			l->weight = xstrdup(ql.q->name);
			l->weight_dtype = xstrdup(qr_dtype_name(ql.q->dtype));
			l->bits = ql.bits ? ql.bits : qr_dtype_bits(ql.q->dtype);
			l->per_channel = ql.per_channel;
			l->axis = ql.axis;
			l->block_size = ql.block;
			l->n_scales = ql.scale ? ql.scale->n_elem : 0;
			minmax(ql.scale, &l->scale_min, &l->scale_max);
			if (ql.zp)
				minmax(ql.zp, &l->zp_min, &l->zp_max);
			else
				l->zp_min = l->zp_max = 0;
			l->act_quantized = act;
			v = xreallocarray(v, nv + 1, sizeof *v);
			v[nv++] = ql;
		}
		if (is_int_compute(n) || op_is(n, "MatMulNBits")) {
			act = 1;
		} else if (is_float_compute(n) && !is_dyn_helper(g, n)) {
			act = 0;
			for (j = 0; j < n->n_in && !act; j++) {
				const struct qr_node *p = qr_graph_producer_node(g, n->in[j]);

				act = p && op_is(p, "DequantizeLinear");
			}
		} else {
			continue;
		}
		ce = &qs->coverage[qs->n_coverage++];
		ce->layer = xstrdup(n->name);
		ce->op = is_default_domain(n->domain) ?
			xstrdup(n->op_type) :
			xasprintf("%s:%s", n->domain, n->op_type);
		ce->quantized = act;
		qs->n_quantized += act != 0;
	}
	*qlo = v;
	*n_qlo = nv;
}

void
qr_an_quant_summary_free(struct qr_quant_summary *qs)
{
	size_t i;

	free(qs->path);
	for (i = 0; i < qs->n_layers; i++) {
		free(qs->layers[i].layer);
		free(qs->layers[i].op);
		free(qs->layers[i].weight);
		free(qs->layers[i].weight_dtype);
	}
	free(qs->layers);
	for (i = 0; i < qs->n_coverage; i++) {
		free(qs->coverage[i].layer);
		free(qs->coverage[i].op);
	}
	free(qs->coverage);
}
