/*
 * fuzz_onnx: the ONNX loader (qr_onnx_load_buffer, with external data
 * resolved in a scratch folder) and the graph index built on what it
 * loads. A loaded model is walked in full so that every pointer the loader
 * hands out is read through (ASan checks the bytes), converted where
 * qreport converts (qr_tensor_to_f32, Constant values), and the
 * topological order is checked to be one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "graph/graph.h"
#include "onnx/onnx.h"
#include "util/util.h"

extern const char *qr_fuzz_ext_dir;

#define FUZZ_CHECK(cond)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "fuzz_onnx: %s broken at %s:%d\n",  \
				#cond, __FILE__, __LINE__);                 \
			abort();                                            \
		}                                                           \
	} while (0)

static volatile unsigned fuzz_sink; /* keeps reads from being optimised out */

static void
touch_str(const char *s)
{
	FUZZ_CHECK(s != NULL);
	fuzz_sink += (unsigned)strlen(s);
}

static void
touch_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	unsigned acc = 0;
	size_t i;

	for (i = 0; i < n; i++)
		acc += b[i];
	fuzz_sink += acc;
}

static void walk_graph(const struct qr_graph_data *g, int depth);

static void
walk_tensor(const struct qr_tensor_data *t)
{
	size_t n = 1, esize = qr_dtype_size(t->dtype);
	struct qr_diag d = {0};
	float *f;
	int i;

	touch_str(t->name);
	FUZZ_CHECK(t->ndim >= 0 && t->ndim <= QR_MAX_DIMS);
	for (i = 0; i < t->ndim; i++) {
		FUZZ_CHECK(t->dims[i] >= 0);
		FUZZ_CHECK(!qr_mul_overflow(n, (size_t)t->dims[i], &n));
	}
	FUZZ_CHECK(n == t->n_elem);
	if (t->dtype == QR_DT_STRING || esize == 0)
		return;
	FUZZ_CHECK(t->nbytes == t->n_elem * esize);
	FUZZ_CHECK(t->n_elem == 0 || t->data != NULL);
	if (t->n_elem > QR_FUZZ_MAX_ELEM)
		return;
	touch_bytes(t->data, t->nbytes);
	f = xcalloc(t->n_elem ? t->n_elem : 1, sizeof *f);
	qr_fuzz_check_diag(qr_tensor_to_f32(t, f, &d), &d);
	if (t->n_elem > 0)
		fuzz_sink += (unsigned)(qr_tensor_get(t, t->n_elem - 1) != 0.0);
	free(f);
	qr_diag_clear(&d);
}

static void
walk_attr(const struct qr_attr *a, int depth)
{
	size_t i;

	touch_str(a->name);
	switch (a->type) {
	case QR_ATTR_STRING:
		FUZZ_CHECK(a->s != NULL && strlen(a->s) <= a->s_len);
		touch_bytes(a->s, a->s_len);
		break;
	case QR_ATTR_FLOATS:
		touch_bytes(a->floats, a->n * sizeof *a->floats);
		break;
	case QR_ATTR_INTS:
		touch_bytes(a->ints, a->n * sizeof *a->ints);
		break;
	case QR_ATTR_STRINGS:
		for (i = 0; i < a->n; i++)
			touch_str(a->strings[i]);
		break;
	case QR_ATTR_TENSOR:
		if (a->t != NULL)
			walk_tensor(a->t);
		break;
	case QR_ATTR_TENSORS:
		for (i = 0; i < a->n; i++)
			walk_tensor(&a->tensors[i]);
		break;
	case QR_ATTR_GRAPH:
		if (a->g != NULL)
			walk_graph(a->g, depth + 1);
		break;
	case QR_ATTR_GRAPHS:
		for (i = 0; i < a->n; i++)
			walk_graph(&a->graphs[i], depth + 1);
		break;
	default:
		break;
	}
}

static void
walk_vi(const struct qr_value_info *v, size_t n)
{
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		touch_str(v[i].name);
		FUZZ_CHECK(v[i].ndim >= -1);
		for (k = 0; k < v[i].ndim; k++) {
			FUZZ_CHECK(v[i].dims[k].value >= -1);
			if (v[i].dims[k].param != NULL)
				touch_str(v[i].dims[k].param);
		}
	}
}

static void
walk_graph(const struct qr_graph_data *g, int depth)
{
	size_t i, j;

	FUZZ_CHECK(depth < 1000);
	touch_str(g->name);
	for (i = 0; i < g->n_init; i++)
		walk_tensor(&g->inits[i]);
	walk_vi(g->inputs, g->n_input);
	walk_vi(g->outputs, g->n_output);
	walk_vi(g->value_info, g->n_value_info);
	for (i = 0; i < g->n_node; i++) {
		const struct qr_node *n = &g->nodes[i];
		const struct qr_tensor_data *k;

		touch_str(n->name);
		touch_str(n->op_type);
		touch_str(n->domain);
		for (j = 0; j < n->n_in; j++)
			touch_str(n->in[j]);
		for (j = 0; j < n->n_out; j++)
			touch_str(n->out[j]);
		for (j = 0; j < n->n_attr; j++)
			walk_attr(&n->attrs[j], depth);
		k = qr_node_const_value(n);
		if (k != NULL)
			walk_tensor(k);
		fuzz_sink += (unsigned)qr_node_attr_int(n, "axis", 0);
		fuzz_sink += qr_node_attr_float(n, "alpha", 1.0f) != 1.0f;
		touch_str(qr_node_attr_str(n, "mode", ""));
	}
}

/* Check that the index's order is a topological one and ask it every
 * question analyses ask. */
static void
walk_index(const struct qr_model *m, const struct qr_graph *g)
{
	size_t n = qr_graph_n_nodes(g), i, j, k, n_cons;
	const size_t *order = qr_graph_topo_order(g), *cons;
	size_t *pos;

	FUZZ_CHECK(n == m->graph.n_node);
	pos = xmalloc((n ? n : 1) * sizeof *pos);
	for (i = 0; i < n; i++)
		pos[i] = (size_t)-1;
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(order[i] < n && pos[order[i]] == (size_t)-1);
		pos[order[i]] = i;
	}
	for (i = 0; i < n; i++) {
		const struct qr_node *node = qr_graph_node(g, i);

		for (j = 0; j < node->n_in; j++) {
			long p;

			if (node->in[j][0] == '\0')
				continue;
			p = qr_graph_producer(g, node->in[j]);
			FUZZ_CHECK(p >= -1 && p < (long)n);
			if (p >= 0)
				FUZZ_CHECK(pos[p] < pos[i]);
			cons = qr_graph_consumers(g, node->in[j], &n_cons);
			for (k = 0; k < n_cons; k++)
				FUZZ_CHECK(cons[k] < n);
			if (qr_graph_const(g, node->in[j]) != NULL)
				walk_tensor(qr_graph_const(g, node->in[j]));
		}
		for (j = 0; j < node->n_out; j++)
			fuzz_sink += (unsigned)qr_graph_is_output(g,
								  node->out[j]);
	}
	free(pos);
}

int
qr_fuzz_onnx(const uint8_t *data, size_t size)
{
	struct qr_diag d = {0};
	struct qr_model *m = (struct qr_model *)1;
	struct qr_graph *g = (struct qr_graph *)1;
	enum qr_status st;
	size_t i;

	st = qr_onnx_load_buffer(data, size, "fuzz.onnx", qr_fuzz_ext_dir, &m,
				 &d);
	qr_fuzz_check_diag(st, &d);
	FUZZ_CHECK((st == QR_OK) == (m != NULL));
	if (st != QR_OK)
		goto out;
	touch_str(m->path);
	touch_str(m->producer_name);
	touch_str(m->producer_version);
	touch_str(m->domain);
	touch_str(m->doc_string);
	for (i = 0; i < m->n_opset; i++)
		touch_str(m->opsets[i].domain);
	for (i = 0; i < m->n_meta; i++) {
		touch_str(m->meta[i].key);
		touch_str(m->meta[i].value);
	}
	fuzz_sink += (unsigned)qr_model_opset(m, "");
	walk_graph(&m->graph, 0);
	st = qr_graph_new(m, &g, &d);
	qr_fuzz_check_diag(st, &d);
	FUZZ_CHECK((st == QR_OK) == (g != NULL));
	if (st == QR_OK)
		walk_index(m, g);
	qr_graph_free(g);
out:
	qr_onnx_free(m);
	qr_diag_clear(&d);
	return (int)st;
}

#ifndef QR_FUZZ_NO_MAIN
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	qr_fuzz_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	qr_fuzz_onnx(data, size);
	return 0;
}
#endif
