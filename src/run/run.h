/*
 * run: the executor, and the input files it is fed with.
 *
 * qr_exec_new turns a loaded model into something that runs: it builds the
 * graph index, finds each node's descriptor (refusing, in one message, every
 * node it cannot run), propagates dtypes, runs each op's check and prepare
 * once and plans memory: an activation is recycled as soon as its last
 * consumer has run, unless it is a graph output or a kept tensor.
 * qr_exec_run then infers shapes from the actual inputs (dynamic dims are
 * bound there), runs the nodes in topological order and calls the hook
 * after each one.
 *
 * Files: the executor is exec_build.c (load and memory plan), exec_fold.c
 * (constant folding, views), exec_control.c (If and Loop), exec_run.c
 * (the run) and exec_profile.c (timings, memory accounting), which share
 * exec-int.h; the input files are npy.c.
 *
 * Ownership: an exec borrows its model, which must outlive it. Tensors
 * given to the hook are borrowed for the call only; outputs returned by
 * qr_exec_outputs / qr_exec_tensor_get are borrowed until the next run or
 * qr_exec_free; qr_exec_output_take moves one out to the caller. Input
 * tensors are borrowed for the run.
 */
#ifndef QR_RUN_H
#define QR_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

struct qr_model;
struct qr_node;
struct qr_tensor;
struct qr_tensor_data;
struct qr_exec;

/*
 * Called after each node with its n_outputs outputs, in node order
 * (borrowed for the call; an output named "" is a scratch tensor). Return
 * 0 to go on, or an enum qr_status to stop the run, which qr_exec_run then
 * returns (QR_EPARTIAL when the value is not a status).
 */
typedef int (*qr_hook_fn)(const struct qr_node *node,
			  struct qr_tensor *const *outputs, size_t n_outputs,
			  void *user);

/* Default of qr_exec_opts.fold_max. Folding a DequantizeLinear stores a
 * float copy of its weight, four times the int8 bytes: for vit_b_16 that
 * alone is 346 MB, while dequantizing at each run costs little (its
 * 4-sample report took 12.6 s with every weight folded, 12.5 to 12.8 s
 * with 64 MiB). With opts.views most weights are not folded at all; the
 * budget then holds what views cannot replace (a weight's Transpose ->
 * QuantizeLinear chain, a Conv's Winograd weights). */
#define QR_EXEC_FOLD_MAX ((size_t)64 << 20)

struct qr_exec_opts {
	int profile;             /* 1: time each op type (qr_exec_profile) */
	int n_threads;           /* threads an op may use; 0 means 1 */
	int any_order;           /* 1: float convs may sum in any order
				  * (Winograd for 3x3 convs), for runs whose
				  * values are compared rather than
				  * reproduced; 0: ONNX Runtime's order, bit
				  * for bit */
	const struct qr_exec *share; /* an executor of the same model whose
				  * values folded at load this one borrows
				  * instead of computing and holding its
				  * own (it must outlive this one), or
				  * NULL */
	const struct qr_exec *reuse; /* an executor, of any model, whose
				  * prepared steps this one takes instead of
				  * preparing its own (a conv's packed and
				  * Winograd weights) where its step would
				  * prepare the same: the same op
				  * descriptor, attributes (the same array:
				  * a copy of the node), opset, threads and
				  * dtypes, its constant inputs the same
				  * bytes; or NULL. It must outlive this
				  * one; an op may change its state as it
				  * runs, so neither may run while the other
				  * does, nor two executors reusing it */
	int trim_folds;          /* 1: after load, free the values folded
				  * at load that only other folded nodes
				  * read (a weight's Transpose and
				  * QuantizeLinear before its
				  * DequantizeLinear): the hook then gets
				  * NULL in their place. An executor
				  * sharing this one's values trims alike */
	size_t fold_max;         /* bytes the values folded at load may
				  * hold at once; a node that would pass it
				  * runs at each run instead (0:
				  * QR_EXEC_FOLD_MAX) */
	int views;               /* 1: a node whose one reader can take
				  * its output as a view (ops.h, "Views": a
				  * weight's DequantizeLinear read by a
				  * Conv, MatMul or Gemm), and that is not
				  * folded (past fold_max, or past what the
				  * reader finds worth folding: its
				  * desc->view_fold), is not run: the
				  * reader dequantizes as it goes,
				  * with the same bits, and no float copy of
				  * the weight is made. The hook gets NULL
				  * in its place */
	const char *const *keep; /* tensors kept alive after a run, readable
				  * with qr_exec_tensor_get (may be NULL) */
	size_t n_keep;           /* entries in keep */
};

/* A node qreport cannot run, or a graph input that is not a tensor. */
struct qr_unsupported {
	const struct qr_node *node; /* borrowed from the model; NULL for a
				     * graph input */
	const char *input;          /* node NULL: the graph input's name */
	int opset;                  /* imported opset of the node's domain */
	char *why;                  /* heap: NULL when the op has no
				     * descriptor, else the reason check gave
				     * (no node prefix) */
};

/* Time spent per op type, from a run with opts.profile set. */
struct qr_exec_prof {
	const char *op_type;     /* e.g. "Conv"; inside a subgraph, the
				  * enclosing ops first: "If/NonMaxSuppression"
				  * (owned by the executor) */
	size_t calls;            /* nodes run, over all runs */
	double seconds;          /* wall time in infer + run, all runs */
	int nested;              /* 1: inside an If or Loop, whose own
				  * entry already counts this time */
};

/*
 * Prepare m for running. *out is set to NULL first. Errors:
 *   QR_EGRAPH        malformed graph (cycle, undefined tensor), naming it
 *   QR_EUNSUPPORTED  one message naming every node that cannot run:
 *                    "model 'x.onnx': 2 unsupported nodes: 'n1' (Foo,
 *                    opset 13), 'n2' (Cast, opset 13): to=string ..."
 *   others           an op refusing a malformed attribute, naming the node
 * o may be NULL for defaults.
 */
enum qr_status qr_exec_new(const struct qr_model *m,
			   const struct qr_exec_opts *o,
			   struct qr_exec **out, struct qr_diag *d);
void qr_exec_free(struct qr_exec *e);

/*
 * The nodes of m that cannot run, in topological order: *out gets a heap
 * array of *n entries (NULL, 0 when all can), freed with
 * qr_unsupported_free. Returns QR_OK even when some are unsupported; other
 * statuses for a malformed graph or attribute.
 */
enum qr_status qr_exec_unsupported(const struct qr_model *m,
				   struct qr_unsupported **out, size_t *n,
				   struct qr_diag *d);
void qr_unsupported_free(struct qr_unsupported *u, size_t n);

/* Names of the graph inputs that must be fed (initializers excluded), in
 * graph order. Borrowed. */
const char *const *qr_exec_inputs(const struct qr_exec *e, size_t *n);

/*
 * Run the graph once. inputs holds n_inputs tensors matched to graph inputs
 * by their name field (borrowed for the run). Each must match the declared
 * dtype and rank, and fixed dims; symbolic dims (e.g. "batch") are bound
 * from the first input using them and must agree across inputs. hook (may
 * be NULL) is called after each node with user. Errors:
 *   QR_EUSAGE  a graph input is missing or given twice, or a tensor names
 *              no graph input
 *   QR_ESHAPE  an input's dtype, rank or dims differ from the declaration;
 *              shapes that disagree inside the graph (naming the node)
 *   others     from ops, or the hook's status
 * Outputs are read with qr_exec_outputs afterwards.
 */
enum qr_status qr_exec_run(struct qr_exec *e,
			   struct qr_tensor *const *inputs, size_t n_inputs,
			   qr_hook_fn hook, void *user, struct qr_diag *d);

/* The graph outputs of the last successful run, in graph order; *n gets
 * their count. Borrowed until the next run or qr_exec_free. */
struct qr_tensor *const *qr_exec_outputs(const struct qr_exec *e, size_t *n);
/* Output i of the last run, moved to the caller (who frees it with
 * qr_tensor_free); later calls for i give a copy-free NULL. */
struct qr_tensor *qr_exec_output_take(struct qr_exec *e, size_t i);
/* A graph output or kept tensor (opts.keep) of the last run, or a
 * constant, by name; NULL otherwise. Borrowed until the next run. */
struct qr_tensor *qr_exec_tensor_get(const struct qr_exec *e,
				     const char *name);

/*
 * Run node i (index into the model's nodes) alone. inputs holds the
 * node's n_in inputs in node order; an entry may be NULL for an absent
 * optional input or for a constant input (initializer or Constant), which
 * then comes from the model. On success outputs[0..n_out) are new tensors
 * the caller frees with qr_tensor_free (NULL for outputs named "").
 * Errors as qr_exec_run, naming the node.
 */
enum qr_status qr_exec_run_node(struct qr_exec *e, size_t i,
				struct qr_tensor *const *inputs,
				struct qr_tensor **outputs,
				struct qr_diag *d);

/* Per-op-type timings, sorted by time spent, most first; *n gets the
 * count. Borrowed until the next run. Empty unless opts.profile. */
const struct qr_exec_prof *qr_exec_profile(struct qr_exec *e, size_t *n);
/* Zero the timings qr_exec_profile reports (say, after warm-up runs). */
void qr_exec_profile_reset(struct qr_exec *e);

/* Memory accounting, for tests and --profile. */
struct qr_exec_mem {
	size_t live_tensors;     /* activations holding data right now */
	size_t live_bytes;       /* their bytes */
	size_t pool_bytes;       /* freed buffers kept for reuse */
	size_t peak_bytes;       /* max live + pool bytes, over all runs */
};
void qr_exec_mem(const struct qr_exec *e, struct qr_exec_mem *out);

/* ---- input files (npy.c) ---- */

/*
 * Read a .npy file (format 1.0/2.0/3.0, C order, little-endian or
 * single-byte dtypes: float32, float64, int8, uint8, int16, int32, int64,
 * bool) into a new owned tensor named name (borrowed; may be NULL).
 * QR_EIO when unreadable, QR_EFORMAT naming the file when the header is
 * malformed or the data is short, QR_EUNSUPPORTED for Fortran order,
 * big-endian or other dtypes.
 */
enum qr_status qr_npy_read(const char *path, const char *name,
			   struct qr_tensor **out, struct qr_diag *d);
/* qr_npy_read's checks and shape without reading the data: a new tensor
 * of the file's dtype and shape whose data is NULL (its nbytes are the
 * file's data), for the caller to free. */
enum qr_status qr_npy_read_head(const char *path, struct qr_tensor **out,
				struct qr_diag *d);
/* Parse an in-memory .npy image; what names it in messages. */
enum qr_status qr_npy_parse(const void *buf, size_t len, const char *what,
			    const char *name, struct qr_tensor **out,
			    struct qr_diag *d);
/* Write t as a .npy (format 1.0, or 2.0 when the header needs it).
 * QR_EUNSUPPORTED for dtypes numpy cannot hold (bfloat16), QR_EIO when the
 * file cannot be written. */
enum qr_status qr_npy_write(const char *path, const struct qr_tensor *t,
			    struct qr_diag *d);
/* Read a serialized TensorProto (.pb) into a new owned tensor named name
 * (borrowed; may be NULL). Errors as qr_onnx_load_tensor_pb, naming the
 * file. */
enum qr_status qr_pb_read(const char *path, const char *name,
			  struct qr_tensor **out, struct qr_diag *d);

#endif
