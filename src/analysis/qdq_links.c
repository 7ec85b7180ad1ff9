/*
 * qdq_links: the nodes exporters put inside a QuantizeLinear ->
 * DequantizeLinear chain that carry the value unchanged.
 *
 * ONNX Runtime's quantizer writes Q -> DQ directly. Other toolchains do
 * not: torch.onnx exports PyTorch's quantized models as QuantizeLinear ->
 * Cast(to=uint8) -> DequantizeLinear, QAT exports share zero points
 * through Identity nodes, and graph surgery leaves Identity nodes
 * anywhere. A reader that looks for "the QuantizeLinear feeding this
 * DequantizeLinear" or "the constant behind this weight" looks through
 * them here, so every rule that recognises a Q/DQ pair holds for all of
 * these layouts.
 *
 * A node is a no-op link when it returns the codes a QuantizeLinear
 * wrote (seen through other links) unchanged:
 *   - Identity;
 *   - Cast to an integer type that holds every value of the codes' type:
 *     uint8 -> uint8, int16 or int32 keeps them; uint8 -> int8 would
 *     wrap them and is not a link.
 * An Identity elsewhere (on a float activation) is an op like any other:
 * the float graph may have it too. Constants seen through Identity are
 * the graph's business (qr_graph_const).
 */
#include "analysis/analysis-int.h"

#include <string.h>

#include "graph/graph.h"
#include "onnx/onnx.h"

#define MAX_HOPS 8

/* The integer type a QuantizeLinear writes: its output_dtype (opset 21),
 * else its zero point's type, else uint8. */
static int
quantize_out_type(const struct qr_graph *g, const struct qr_node *q)
{
	const struct qr_tensor_data *zp;
	int64_t t = qr_node_attr_int(q, "output_dtype", 0);

	if (t > 0)
		return (int)t;
	if (q->n_in > 2 && q->in[2][0] != '\0' &&
	    (zp = qr_graph_const(g, q->in[2])) != NULL)
		return zp->dtype;
	return QR_DT_UINT8;
}

static int
is_unsigned(int dt)
{
	return dt == QR_DT_UINT8 || dt == QR_DT_UINT16 || dt == QR_DT_UINT32 ||
	       dt == QR_DT_UINT64 || dt == QR_DT_UINT4;
}

static int
is_integer(int dt)
{
	return is_unsigned(dt) || dt == QR_DT_INT8 || dt == QR_DT_INT16 ||
	       dt == QR_DT_INT32 || dt == QR_DT_INT64 || dt == QR_DT_INT4;
}

/* 1 when every value of integer type from fits integer type to. */
static int
holds(int to, int from)
{
	int bt = qr_dtype_bits(to), bf = qr_dtype_bits(from);

	if (!is_integer(to) || !is_integer(from) || bt <= 0 || bf <= 0)
		return 0;
	if (is_unsigned(to))
		return is_unsigned(from) && bt >= bf;
	return is_unsigned(from) ? bt > bf : bt >= bf;
}

/* The integer type of name when it is a QuantizeLinear's output, seen
 * through links; 0 when unknown. */
static int
quantized_type(const struct qr_graph *g, const char *name)
{
	const struct qr_node *p;
	int hop;

	for (hop = 0; hop < MAX_HOPS; hop++) {
		if ((p = qr_graph_producer_node(g, name)) == NULL)
			return 0;
		if (strcmp(p->op_type, "QuantizeLinear") == 0)
			return quantize_out_type(g, p);
		if (strcmp(p->op_type, "Identity") != 0 || p->n_in < 1)
			return 0;
		name = p->in[0];
	}
	return 0;
}

int
qr_an_is_noop_link(const struct qr_graph *g, const struct qr_node *n)
{
	int from;

	if (n->domain[0] != '\0' || n->n_in < 1 || n->n_out < 1 ||
	    n->in[0][0] == '\0' || n->out[0][0] == '\0' ||
	    (from = quantized_type(g, n->in[0])) == 0)
		return 0;
	if (strcmp(n->op_type, "Identity") == 0)
		return 1;
	return strcmp(n->op_type, "Cast") == 0 &&
	       holds((int)qr_node_attr_int(n, "to", 0), from);
}

const char *
qr_an_link_source(const struct qr_graph *g, const char *name)
{
	const struct qr_node *p;
	int hop;

	for (hop = 0; hop < MAX_HOPS; hop++) {
		if (qr_graph_const(g, name) != NULL ||
		    (p = qr_graph_producer_node(g, name)) == NULL ||
		    !qr_an_is_noop_link(g, p))
			break;
		name = p->in[0];
	}
	return name;
}

const struct qr_tensor_data *
qr_an_weight_behind(const struct qr_graph *g, const char *name)
{
	const struct qr_tensor_data *w;
	const struct qr_node *p;

	name = qr_an_link_source(g, name);
	if ((w = qr_graph_const(g, name)) != NULL)
		return w;
	if ((p = qr_graph_producer_node(g, name)) == NULL ||
	    strcmp(p->op_type, "DequantizeLinear") != 0 || p->n_in < 1)
		return NULL;
	name = qr_an_link_source(g, p->in[0]);
	if ((w = qr_graph_const(g, name)) != NULL)
		return w;
	if ((p = qr_graph_producer_node(g, name)) == NULL ||
	    strcmp(p->op_type, "QuantizeLinear") != 0 || p->n_in < 1)
		return NULL;
	return qr_graph_const(g, qr_an_link_source(g, p->in[0]));
}
