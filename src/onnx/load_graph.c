/*
 * onnx: GraphProto to qr_graph_data: initializers, value infos, nodes and
 * their attributes, subgraphs (If/Loop/Scan bodies) to a bounded depth,
 * and Constant values in every form read as a tensor. Also the node
 * attribute lookups of onnx.h. See onnx-int.h.
 */
#include "onnx/onnx-int.h"

#include <string.h>

#include "onnx/onnx.pb-c.h"

/* A NUL-terminated arena copy of protobuf bytes (data NULL when empty). */
static const char *
bytes_str(struct qr_onnx_ctx *c, const ProtobufCBinaryData *b)
{
	return b->len > 0 ? qr_arena_strndup(c->arena, (const char *)b->data,
					     b->len) : "";
}

static void
value_info_convert(struct qr_onnx_ctx *c, const Onnx__ValueInfoProto *vp,
		   struct qr_value_info *v)
{
	const Onnx__TypeProto *tp = vp->type;
	const Onnx__TypeProto__Tensor *tt = NULL;
	struct qr_dim *dims;
	size_t i;

	v->name = qr_onnx_ctx_str(c, vp->name);
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
			dims[i].param = qr_onnx_ctx_str(c, dp->dim_param);
	}
	v->ndim = (int)tt->shape->n_dim;
	v->dims = dims;
}

static const struct qr_value_info *
value_infos_convert(struct qr_onnx_ctx *c, Onnx__ValueInfoProto **vp, size_t n)
{
	struct qr_value_info *v = qr_arena_array(c->arena, n, sizeof *v);
	size_t i;

	for (i = 0; i < n; i++)
		value_info_convert(c, vp[i], &v[i]);
	return v;
}

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
const_attr_tensor(struct qr_onnx_ctx *c, const struct qr_attr *a,
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
attr_convert(struct qr_onnx_ctx *c, const Onnx__AttributeProto *ap,
	     const struct qr_node *node, struct qr_attr *a)
{
	const char *out0 = node->n_out > 0 ? node->out[0] : "";
	int is_const = strcmp(node->op_type, "Constant") == 0 &&
		       node->domain[0] == '\0';
	enum qr_status st = QR_OK;
	const char *what;
	size_t i;

	a->name = qr_onnx_ctx_str(c, ap->name);
	a->type = attr_type(ap);
	what = qr_onnx_arena_printf(c->arena, "node '%s' attribute '%s'",
				    node->name, a->name);
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
		a->floats = qr_onnx_ctx_bytes(c, ap->floats,
					      ap->n_floats * sizeof(float));
		a->n = ap->n_floats;
		break;
	case QR_ATTR_INTS:
		a->ints = qr_onnx_ctx_bytes(c, ap->ints,
					    ap->n_ints * sizeof(int64_t));
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
		st = qr_onnx_tensor_convert(c, ap->t, what, out0, t);
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
			st = qr_onnx_tensor_convert(c, ap->tensors[i], what,
						    "", &t[i]);
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
		st = qr_onnx_graph_convert(c, ap->g, g);
		a->g = g;
		break;
	}
	case QR_ATTR_GRAPHS: {
		struct qr_graph_data *g = qr_arena_array(c->arena, ap->n_graphs,
							 sizeof *g);

		for (i = 0; i < ap->n_graphs && st == QR_OK; i++)
			st = qr_onnx_graph_convert(c, ap->graphs[i], &g[i]);
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
node_convert(struct qr_onnx_ctx *c, const Onnx__NodeProto *np, size_t index,
	     struct qr_node *n)
{
	enum qr_status st = QR_OK;
	struct qr_attr *attrs;
	size_t i;

	if (np->op_type == NULL || np->op_type[0] == '\0')
		return qr_errorf(c->d, QR_EFORMAT,
				 "file '%s': node %zu ('%s') has no op_type",
				 c->file, index, qr_onnx_or_empty(np->name));
	n->op_type = qr_onnx_ctx_str(c, np->op_type);
	if (np->name != NULL && np->name[0] != '\0')
		n->name = qr_onnx_ctx_str(c, np->name);
	else
		n->name = qr_onnx_arena_printf(c->arena, "%s_%zu", np->op_type,
					       index);
	n->domain = qr_onnx_ctx_str(c, qr_onnx_norm_domain(np->domain));
	n->n_in = np->n_input;
	n->in = (const char **)np->input;
	n->n_out = np->n_output;
	n->out = (const char **)np->output;
	if (c->copy) {
		const char **in = qr_arena_array(c->arena, np->n_input, sizeof *in);
		const char **out = qr_arena_array(c->arena, np->n_output,
						  sizeof *out);

		for (i = 0; i < np->n_input; i++)
			in[i] = qr_onnx_ctx_str(c, np->input[i]);
		for (i = 0; i < np->n_output; i++)
			out[i] = qr_onnx_ctx_str(c, np->output[i]);
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

enum qr_status
qr_onnx_graph_convert(struct qr_onnx_ctx *c, const Onnx__GraphProto *gp,
		      struct qr_graph_data *g)
{
	enum qr_status st = QR_OK;
	struct qr_tensor_data *inits;
	struct qr_node *nodes;
	size_t i;

	if (++c->depth > QR_ONNX_MAX_GRAPH_DEPTH) {
		st = qr_errorf(c->d, QR_EFORMAT,
			       "file '%s': graph '%s': subgraphs nested more "
			       "than %d deep", c->file,
			       qr_onnx_or_empty(gp->name),
			       QR_ONNX_MAX_GRAPH_DEPTH);
		goto out;
	}
	g->name = qr_onnx_ctx_str(c, gp->name);
	if (gp->n_sparse_initializer > 0) {
		const Onnx__SparseTensorProto *sp = gp->sparse_initializer[0];

		st = qr_errorf(c->d, QR_EUNSUPPORTED,
			       "file '%s': sparse initializer '%s' is not "
			       "supported", c->file,
			       sp->values != NULL ?
			       qr_onnx_or_empty(sp->values->name) : "");
		goto out;
	}
	inits = qr_arena_array(c->arena, gp->n_initializer, sizeof *inits);
	g->inits = inits;
	g->n_init = gp->n_initializer;
	for (i = 0; i < gp->n_initializer && st == QR_OK; i++) {
		const char *what = qr_onnx_arena_printf(
			c->arena, "initializer '%s'",
			qr_onnx_or_empty(gp->initializer[i]->name));

		st = qr_onnx_tensor_convert(c, gp->initializer[i], what, "",
					    &inits[i]);
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
