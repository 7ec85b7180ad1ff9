/*
 * onnx: decode a .onnx file into the model in memory.
 *
 * The protobuf is decoded with protobuf-c (code generated at build time from
 * Debian's onnx.proto) and then converted into the plain structs below, which
 * the rest of qreport uses; no other module sees protobuf-c types.
 *
 * save.c writes a model back (qreport's edited models).
 *
 * Ownership: qr_onnx_load returns a model the caller frees with
 * qr_onnx_free. Every string, array and tensor it points to lives in the
 * model's arena or in its mapped files and is freed with it. Initializer data
 * is never copied more than once: raw_data points into the protobuf-c
 * message or, when large, into one block of the model's (xpages, each
 * tensor 64-byte aligned; one copy out of the mapped file), external data
 * points straight into the mmap'd data file, and typed fields are
 * converted once into the arena.
 */
#ifndef QR_ONNX_H
#define QR_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* ONNX TensorProto.DataType codes (values are the file format's). */
enum qr_dtype {
	QR_DT_UNDEFINED = 0,
	QR_DT_FLOAT = 1,
	QR_DT_UINT8 = 2,
	QR_DT_INT8 = 3,
	QR_DT_UINT16 = 4,
	QR_DT_INT16 = 5,
	QR_DT_INT32 = 6,
	QR_DT_INT64 = 7,
	QR_DT_STRING = 8,
	QR_DT_BOOL = 9,
	QR_DT_FLOAT16 = 10,
	QR_DT_DOUBLE = 11,
	QR_DT_UINT32 = 12,
	QR_DT_UINT64 = 13,
	QR_DT_COMPLEX64 = 14,
	QR_DT_COMPLEX128 = 15,
	QR_DT_BFLOAT16 = 16,
	QR_DT_FLOAT8E4M3FN = 17,
	QR_DT_FLOAT8E4M3FNUZ = 18,
	QR_DT_FLOAT8E5M2 = 19,
	QR_DT_FLOAT8E5M2FNUZ = 20,
	QR_DT_UINT4 = 21,
	QR_DT_INT4 = 22,
	QR_DT_COUNT
};

/* "float", "int8", ...; "undefined" for unknown codes. */
const char *qr_dtype_name(int dtype);
/* Bytes per element in memory; 0 for string/undefined, 1 for 4-bit types
 * (which the loader unpacks to one element per byte). */
size_t qr_dtype_size(int dtype);
/* 1 when dtype is a known ONNX code. */
int qr_dtype_valid(int dtype);
/* Bits of an integer dtype (8 for int8, 4 for int4), 0 otherwise. */
int qr_dtype_bits(int dtype);
/* Bytes n_elem elements of dtype take as stored: 4-bit types two to a
 * byte (qr_dtype_size counts them unpacked, a byte each). */
size_t qr_dtype_stored_bytes(int dtype, size_t n_elem);

#define QR_MAX_DIMS 16

/* A constant tensor: an initializer, a Constant node's value, or a tensor
 * attribute. Data is little-endian, dense, row-major, one element per
 * qr_dtype_size bytes (4-bit types unpacked, bool as bytes, float16 and
 * bfloat16 as uint16 bits). Strings are not loaded (data NULL). */
struct qr_tensor_data {
	const char *name;      /* tensor name (arena) */
	int dtype;             /* enum qr_dtype */
	int ndim;              /* number of dims, 0 for a scalar */
	int64_t dims[QR_MAX_DIMS]; /* shape */
	size_t n_elem;         /* product of dims */
	const void *data;      /* n_elem elements; borrowed from the model */
	size_t nbytes;         /* n_elem * qr_dtype_size(dtype) */
	int external;          /* 1 when stored in an external data file */
};

/* Convert n_elem elements of any numeric dtype to float (dst has n_elem
 * slots). Returns QR_EUNSUPPORTED for strings. */
enum qr_status qr_tensor_to_f32(const struct qr_tensor_data *t, float *dst,
				struct qr_diag *d);
/* Element i of a numeric tensor as double (slow; for scalars/params). */
double qr_tensor_get(const struct qr_tensor_data *t, size_t i);

enum qr_attr_type {
	QR_ATTR_UNDEFINED = 0,
	QR_ATTR_FLOAT = 1,
	QR_ATTR_INT = 2,
	QR_ATTR_STRING = 3,
	QR_ATTR_TENSOR = 4,
	QR_ATTR_GRAPH = 5,
	QR_ATTR_FLOATS = 6,
	QR_ATTR_INTS = 7,
	QR_ATTR_STRINGS = 8,
	QR_ATTR_TENSORS = 9,
	QR_ATTR_GRAPHS = 10,
	QR_ATTR_SPARSE_TENSOR = 11,
	QR_ATTR_SPARSE_TENSORS = 12,
	QR_ATTR_TYPE_PROTO = 13,
	QR_ATTR_TYPE_PROTOS = 14,
};

struct qr_graph_data;

/* A node attribute. Only the fields of its type are meaningful. */
struct qr_attr {
	const char *name;        /* attribute name */
	enum qr_attr_type type;  /* which fields below hold the value */
	float f;                 /* FLOAT */
	int64_t i;               /* INT */
	const char *s;           /* STRING (NUL-terminated copy) */
	size_t s_len;            /* STRING length in bytes */
	const float *floats;     /* FLOATS */
	const int64_t *ints;     /* INTS */
	const char **strings;    /* STRINGS */
	size_t n;                /* count of FLOATS/INTS/STRINGS/TENSORS/GRAPHS */
	const struct qr_tensor_data *t;    /* TENSOR */
	const struct qr_tensor_data *tensors; /* TENSORS */
	const struct qr_graph_data *g;     /* GRAPH (If/Loop/Scan bodies) */
	const struct qr_graph_data *graphs; /* GRAPHS */
};

/* A node of the graph. Optional inputs that are absent are "" (ONNX's
 * convention), never NULL. */
struct qr_node {
	const char *name;      /* node name; "<op>_<index>" when the file has none */
	const char *op_type;   /* e.g. "Conv", "QLinearConv" */
	const char *domain;    /* "" for ai.onnx, e.g. "com.microsoft" */
	size_t n_in;           /* inputs */
	const char **in;       /* input tensor names */
	size_t n_out;          /* outputs */
	const char **out;      /* output tensor names */
	size_t n_attr;         /* attributes */
	const struct qr_attr *attrs;
};

/* One dim of a declared shape: a value, a symbolic name, or unknown. */
struct qr_dim {
	int64_t value;         /* >= 0 when known, -1 otherwise */
	const char *param;     /* dim_param such as "batch", or NULL */
};

/* A graph input, output or value_info entry. */
struct qr_value_info {
	const char *name;      /* tensor name */
	int dtype;             /* element type, QR_DT_UNDEFINED when absent */
	int ndim;              /* rank, -1 when the shape is unknown */
	const struct qr_dim *dims; /* ndim entries */
};

/* A graph: the main graph, or a subgraph held by an attribute. */
struct qr_graph_data {
	const char *name;      /* graph name */
	size_t n_node;
	const struct qr_node *nodes;      /* in file order */
	size_t n_init;
	const struct qr_tensor_data *inits; /* initializers */
	size_t n_input;
	const struct qr_value_info *inputs; /* declared inputs (may list inits) */
	size_t n_output;
	const struct qr_value_info *outputs;
	size_t n_value_info;
	const struct qr_value_info *value_info;
};

struct qr_opset {
	const char *domain;    /* "" for ai.onnx */
	int64_t version;       /* opset version */
};

struct qr_meta {
	const char *key;
	const char *value;
};

struct qr_model_priv;

/* A loaded model. */
struct qr_model {
	const char *path;          /* the path it was loaded from */
	int64_t ir_version;        /* ModelProto.ir_version */
	const char *producer_name; /* "pytorch", "onnx.quantize", "" */
	const char *producer_version;
	const char *domain;
	int64_t model_version;
	const char *doc_string;
	size_t n_opset;
	const struct qr_opset *opsets;
	size_t n_meta;
	const struct qr_meta *meta; /* metadata_props */
	struct qr_graph_data graph; /* the main graph */
	size_t file_bytes;         /* size of the .onnx file */
	size_t external_bytes;     /* bytes read from external data files */
	struct qr_model_priv *priv; /* arena, protobuf message, mapped files */
};

/*
 * Load path. On success *out is a new model. Errors (all naming the file,
 * and the node or tensor where there is one):
 *   QR_EIO          missing or unreadable file, external data not found
 *   QR_EFORMAT      not ONNX, truncated, data length disagrees with shape,
 *                   external data location outside the model's folder
 *   QR_EUNSUPPORTED unknown dtype
 *   QR_ESHAPE       negative dims, element count overflow
 */
enum qr_status qr_onnx_load(const char *path, struct qr_model **out,
			    struct qr_diag *d);
/* Decode an in-memory buffer; base_dir resolves external data (may be NULL
 * to refuse it). name is used in messages. */
enum qr_status qr_onnx_load_buffer(const void *buf, size_t len,
				   const char *name, const char *base_dir,
				   struct qr_model **out, struct qr_diag *d);
void qr_onnx_free(struct qr_model *m);
/* Write m to path as a .onnx file (save.c): initializers as raw_data,
 * those nothing reads left out. Errors: QR_EUNSUPPORTED naming a tensor
 * or attribute it cannot write (strings, sparse tensors), QR_EIO naming
 * the file. */
enum qr_status qr_onnx_save(const struct qr_model *m, const char *path,
			    struct qr_diag *d);
/* Every name g's nodes read (in their subgraphs too) and g's inputs and
 * outputs, put into m (value 1). */
void qr_onnx_reads(const struct qr_graph_data *g, struct qr_strmap *m);

/* Opset version imported for domain ("" or "ai.onnx" for the default
 * domain), or 0 when not imported. */
int64_t qr_model_opset(const struct qr_model *m, const char *domain);
/* Attribute lookup on a node; NULL when absent. */
const struct qr_attr *qr_node_attr(const struct qr_node *n, const char *name);
int64_t qr_node_attr_int(const struct qr_node *n, const char *name,
			 int64_t dflt);
float qr_node_attr_float(const struct qr_node *n, const char *name,
			 float dflt);
const char *qr_node_attr_str(const struct qr_node *n, const char *name,
			     const char *dflt);
/* The value of a Constant node (ai.onnx) as a tensor, whichever attribute
 * holds it: value, or value_float(s)/value_int(s) (converted at load time;
 * value_string(s) give a string tensor without data). NULL for other nodes
 * and for sparse_value. Borrowed from the model. */
const struct qr_tensor_data *qr_node_const_value(const struct qr_node *n);

/* Decode a serialized TensorProto (.pb test data) into t, allocating from
 * the arena a. Errors as for qr_onnx_load, naming `name`. */
enum qr_status qr_onnx_load_tensor_pb(const void *buf, size_t len,
				      const char *name, struct qr_arena *a,
				      struct qr_tensor_data *t,
				      struct qr_diag *d);

#endif
