/*
 * save: the model in memory written back as a .onnx file (protobuf-c),
 * for models qreport edits (a candidate with layers kept float).
 *
 * Everything the loader keeps is written: opsets, producer, metadata,
 * the graph with its nodes, attributes (subgraphs included), initializers
 * as raw_data (4-bit types packed two to a byte again), inputs, outputs
 * and value_info. Initializers no node reads and no graph input or output
 * names are left out. The protobuf structs borrow the model's strings and
 * data and live in an arena freed once the file is written.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx-int.h"
#include "onnx/onnx.pb-c.h"

#define DIM_VALUE ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
#define DIM_PARAM ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
#define NEW(ar, T, init) ((T *)memcpy(qr_arena_alloc((ar), sizeof(T)), \
				       &(T)init, sizeof(T)))

static Onnx__GraphProto *graph_pb(struct qr_arena *ar,
				  const struct qr_graph_data *g, int top,
				  struct qr_diag *d, enum qr_status *st);

static char *
str(const char *s)
{
	return (char *)(s != NULL ? s : "");
}

static Onnx__TensorProto *
tensor_pb(struct qr_arena *ar, const struct qr_tensor_data *t,
	  struct qr_diag *d, enum qr_status *st)
{
	Onnx__TensorProto *p = NEW(ar, Onnx__TensorProto,
				   ONNX__TENSOR_PROTO__INIT);
	int bits = t->dtype == QR_DT_INT4 || t->dtype == QR_DT_UINT4;
	int i;

	p->name = str(t->name);
	p->has_data_type = 1;
	p->data_type = t->dtype;
	p->n_dims = (size_t)t->ndim;
	p->dims = qr_arena_array(ar, (size_t)t->ndim + 1, sizeof *p->dims);
	for (i = 0; i < t->ndim; i++)
		p->dims[i] = t->dims[i];
	if (t->dtype == QR_DT_STRING || (t->data == NULL && t->n_elem > 0)) {
		*st = qr_errorf(d, QR_EUNSUPPORTED, "tensor '%s': %s data "
				"cannot be written", str(t->name),
				qr_dtype_name(t->dtype));
		return p;
	}
	p->has_raw_data = 1;
	if (bits) {
		/* unpacked a code a byte in memory; two to a byte on file,
		 * the first in the low nibble */
		size_t n = (t->n_elem + 1) / 2, k;
		uint8_t *b = qr_arena_alloc(ar, n + 1);
		const uint8_t *v = t->data;

		for (k = 0; k < t->n_elem; k++)
			b[k / 2] |= (uint8_t)((v[k] & 0xf) << (k % 2 * 4));
		p->raw_data.data = b;
		p->raw_data.len = n;
	} else {
		p->raw_data.data = (uint8_t *)t->data;
		p->raw_data.len = t->nbytes;
	}
	return p;
}

static Onnx__ValueInfoProto *
vi_pb(struct qr_arena *ar, const struct qr_value_info *v)
{
	Onnx__ValueInfoProto *p = NEW(ar, Onnx__ValueInfoProto,
				      ONNX__VALUE_INFO_PROTO__INIT);
	Onnx__TypeProto *tp = NEW(ar, Onnx__TypeProto,
				  ONNX__TYPE_PROTO__INIT);
	Onnx__TypeProto__Tensor *tt = NEW(ar, Onnx__TypeProto__Tensor,
					  ONNX__TYPE_PROTO__TENSOR__INIT);
	int i;

	p->name = str(v->name);
	p->type = tp;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	if (v->dtype != QR_DT_UNDEFINED) {
		tt->has_elem_type = 1;
		tt->elem_type = v->dtype;
	}
	if (v->ndim < 0)
		return p;
	tt->shape = NEW(ar, Onnx__TensorShapeProto,
			ONNX__TENSOR_SHAPE_PROTO__INIT);
	tt->shape->n_dim = (size_t)v->ndim;
	tt->shape->dim = qr_arena_array(ar, (size_t)v->ndim + 1,
					sizeof *tt->shape->dim);
	for (i = 0; i < v->ndim; i++) {
		Onnx__TensorShapeProto__Dimension *dm =
			NEW(ar, Onnx__TensorShapeProto__Dimension,
			    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT);

		if (v->dims[i].value >= 0) {
			dm->value_case = DIM_VALUE;
			dm->dim_value = v->dims[i].value;
		} else if (v->dims[i].param != NULL) {
			dm->value_case = DIM_PARAM;
			dm->dim_param = str(v->dims[i].param);
		}
		tt->shape->dim[i] = dm;
	}
	return p;
}

static Onnx__AttributeProto *
attr_pb(struct qr_arena *ar, const struct qr_node *n, const struct qr_attr *a,
	struct qr_diag *d, enum qr_status *st)
{
	Onnx__AttributeProto *p = NEW(ar, Onnx__AttributeProto,
				      ONNX__ATTRIBUTE_PROTO__INIT);
	size_t k;

	p->name = str(a->name);
	p->has_type = 1;
	p->type = (Onnx__AttributeProto__AttributeType)a->type;
	switch (a->type) {
	case QR_ATTR_FLOAT:
		p->has_f = 1;
		p->f = a->f;
		break;
	case QR_ATTR_INT:
		p->has_i = 1;
		p->i = a->i;
		break;
	case QR_ATTR_STRING:
		p->has_s = 1;
		p->s.data = (uint8_t *)str(a->s);
		p->s.len = a->s_len;
		break;
	case QR_ATTR_TENSOR:
		p->t = tensor_pb(ar, a->t, d, st);
		break;
	case QR_ATTR_GRAPH:
		p->g = graph_pb(ar, a->g, 0, d, st);
		break;
	case QR_ATTR_FLOATS:
		p->n_floats = a->n;
		p->floats = (float *)a->floats;
		break;
	case QR_ATTR_INTS:
		p->n_ints = a->n;
		p->ints = (int64_t *)a->ints;
		break;
	case QR_ATTR_STRINGS:
		p->n_strings = a->n;
		p->strings = qr_arena_array(ar, a->n + 1, sizeof *p->strings);
		for (k = 0; k < a->n; k++) {
			p->strings[k].data = (uint8_t *)str(a->strings[k]);
			p->strings[k].len = strlen(str(a->strings[k]));
		}
		break;
	case QR_ATTR_TENSORS:
		p->n_tensors = a->n;
		p->tensors = qr_arena_array(ar, a->n + 1, sizeof *p->tensors);
		for (k = 0; k < a->n; k++)
			p->tensors[k] = tensor_pb(ar, &a->tensors[k], d, st);
		break;
	case QR_ATTR_GRAPHS:
		p->n_graphs = a->n;
		p->graphs = qr_arena_array(ar, a->n + 1, sizeof *p->graphs);
		for (k = 0; k < a->n; k++)
			p->graphs[k] = graph_pb(ar, &a->graphs[k], 0, d, st);
		break;
	default:
		*st = qr_errorf(d, QR_EUNSUPPORTED, "node '%s': attribute "
				"'%s' of type %d cannot be written",
				str(n->name), str(a->name), (int)a->type);
		break;
	}
	return p;
}

/* See onnx.h. */
void
qr_onnx_reads(const struct qr_graph_data *g, struct qr_strmap *m)
{
	size_t i, j, k;

	for (i = 0; i < g->n_input; i++)
		qr_strmap_put(m, g->inputs[i].name, 1);
	for (i = 0; i < g->n_output; i++)
		qr_strmap_put(m, g->outputs[i].name, 1);
	for (i = 0; i < g->n_node; i++) {
		const struct qr_node *n = &g->nodes[i];

		for (j = 0; j < n->n_in; j++)
			qr_strmap_put(m, n->in[j], 1);
		for (j = 0; j < n->n_attr; j++) {
			const struct qr_attr *a = &n->attrs[j];

			if (a->type == QR_ATTR_GRAPH)
				qr_onnx_reads(a->g, m);
			for (k = 0; a->type == QR_ATTR_GRAPHS && k < a->n; k++)
				qr_onnx_reads(&a->graphs[k], m);
		}
	}
}

static Onnx__GraphProto *
graph_pb(struct qr_arena *ar, const struct qr_graph_data *g, int top,
	 struct qr_diag *d, enum qr_status *st)
{
	Onnx__GraphProto *p = NEW(ar, Onnx__GraphProto,
				  ONNX__GRAPH_PROTO__INIT);
	struct qr_strmap names, use;
	size_t i, j;

	memset(&names, 0, sizeof names);
	memset(&use, 0, sizeof use);
	if (top)
		qr_onnx_reads(g, &use);
	p->name = str(g->name);
	p->node = qr_arena_array(ar, g->n_node + 1, sizeof *p->node);
	for (i = 0; i < g->n_node; i++) {
		const struct qr_node *n = &g->nodes[i];
		Onnx__NodeProto *np = NEW(ar, Onnx__NodeProto,
					  ONNX__NODE_PROTO__INIT);

		np->name = str(n->name);
		np->op_type = str(n->op_type);
		np->domain = str(n->domain);
		np->n_input = n->n_in;
		np->input = (char **)n->in;
		np->n_output = n->n_out;
		np->output = (char **)n->out;
		np->n_attribute = n->n_attr;
		np->attribute = qr_arena_array(ar, n->n_attr + 1,
					       sizeof *np->attribute);
		for (j = 0; j < n->n_attr; j++)
			np->attribute[j] = attr_pb(ar, n, &n->attrs[j], d, st);
		p->node[p->n_node++] = np;
	}
	p->initializer = qr_arena_array(ar, g->n_init + 1,
					sizeof *p->initializer);
	for (i = 0; i < g->n_init; i++) {
		const struct qr_tensor_data *t = &g->inits[i];

		/* the first of a name wins, as when loading */
		if ((top && qr_strmap_get(&use, t->name) == QR_STRMAP_NONE) ||
		    qr_strmap_get(&names, t->name) != QR_STRMAP_NONE)
			continue;
		qr_strmap_put(&names, t->name, i);
		p->initializer[p->n_initializer++] = tensor_pb(ar, t, d, st);
	}
	qr_strmap_free(&names);
	qr_strmap_free(&use);
	p->n_input = g->n_input;
	p->input = qr_arena_array(ar, g->n_input + 1, sizeof *p->input);
	for (i = 0; i < g->n_input; i++)
		p->input[i] = vi_pb(ar, &g->inputs[i]);
	p->n_output = g->n_output;
	p->output = qr_arena_array(ar, g->n_output + 1, sizeof *p->output);
	for (i = 0; i < g->n_output; i++)
		p->output[i] = vi_pb(ar, &g->outputs[i]);
	p->n_value_info = g->n_value_info;
	p->value_info = qr_arena_array(ar, g->n_value_info + 1,
				       sizeof *p->value_info);
	for (i = 0; i < g->n_value_info; i++)
		p->value_info[i] = vi_pb(ar, &g->value_info[i]);
	return p;
}

/*
 * Write m to path as an ONNX model. Errors: QR_EUNSUPPORTED naming the
 * tensor or attribute that cannot be written (string tensors, sparse
 * attributes), QR_EIO when the file cannot be written.
 */
enum qr_status
qr_onnx_save(const struct qr_model *m, const char *path, struct qr_diag *d)
{
	struct qr_arena ar = { 0 };
	Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
	enum qr_status st = QR_OK;
	uint8_t *buf = NULL;
	size_t i, len;

	mp.has_ir_version = 1;
	mp.ir_version = m->ir_version;
	mp.producer_name = str(m->producer_name);
	mp.producer_version = str(m->producer_version);
	mp.domain = str(m->domain);
	mp.has_model_version = 1;
	mp.model_version = m->model_version;
	mp.doc_string = str(m->doc_string);
	mp.n_opset_import = m->n_opset;
	mp.opset_import = qr_arena_array(&ar, m->n_opset + 1,
					 sizeof *mp.opset_import);
	for (i = 0; i < m->n_opset; i++) {
		Onnx__OperatorSetIdProto *o = NEW(&ar, Onnx__OperatorSetIdProto,
			ONNX__OPERATOR_SET_ID_PROTO__INIT);

		o->domain = str(m->opsets[i].domain);
		o->has_version = 1;
		o->version = m->opsets[i].version;
		mp.opset_import[i] = o;
	}
	mp.n_metadata_props = m->n_meta;
	mp.metadata_props = qr_arena_array(&ar, m->n_meta + 1,
					   sizeof *mp.metadata_props);
	for (i = 0; i < m->n_meta; i++) {
		Onnx__StringStringEntryProto *e = NEW(&ar,
			Onnx__StringStringEntryProto,
			ONNX__STRING_STRING_ENTRY_PROTO__INIT);

		e->key = str(m->meta[i].key);
		e->value = str(m->meta[i].value);
		mp.metadata_props[i] = e;
	}
	mp.graph = graph_pb(&ar, &m->graph, 1, d, &st);
	if (st != QR_OK)
		goto out;
	len = onnx__model_proto__get_packed_size(&mp);
	buf = xmalloc(len + 1);
	onnx__model_proto__pack(&mp, buf);
	st = qr_write_file(path, buf, len, d);
out:
	free(buf);
	qr_arena_free(&ar);
	return st;
}
