/*
 * ops: operators as data.
 *
 * Every operator is a struct qr_op_desc listed once in ops.def (domain,
 * name, lowest opset, descriptor); each op_*.c file exports the descriptors
 * of one operator family. The executor finds a node's descriptor with
 * qr_op_find at load time and calls, per node:
 *
 *   check    once, at load: attributes, arity and input dtypes valid for
 *            this opset; an unsupported attribute value or dtype is
 *            QR_EUNSUPPORTED naming the node, never a silent no-op. It
 *            sees constant inputs in c->in (as prepare does) and every
 *            input's dtype in c->in_dtype (QR_DT_UNDEFINED when not known
 *            at load), and sets c->out_dtype[j] for each output whose
 *            dtype it can tell, so types propagate through the graph.
 *            When some input dtype was unknown at load, the executor
 *            calls check again before each run with the actual dtypes,
 *            so infer and run may trust the dtypes check accepted.
 *   prepare  once, at load: pick the dtype variant, pack constant weights
 *            (c->in[i] is non-NULL only for constant inputs here), keep
 *            the result in c->state. Constant inputs' data stay valid
 *            until release, so a state may borrow them instead of
 *            copying.
 *   infer    every run: from the actual inputs (data of small shape inputs
 *            such as Reshape's shape is readable) set each output's dtype
 *            and shape with qr_tensor_set_shape. No allocation.
 *   run      every run: outputs have been allocated by the executor;
 *            compute them.
 *   release  frees c->state (may be NULL).
 *
 * Views: a DequantizeLinear of constants (the weights of a QDQ model)
 * may describe its output as a struct qr_qview (desc->view) instead of
 * computing it, and an op that can read such weights as they are
 * (desc->view_in) is then handed the view in c->in_q; desc->view_fold
 * says when a folded float copy would still serve it better. The
 * executor decides (qr_exec_opts.views); the ops only say what they can
 * do.
 *
 * Ops know nothing of the executor's memory plan; kernels know nothing of
 * ops.
 */
#ifndef QR_OPS_H
#define QR_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

struct qr_node;
struct qr_tensor;

/*
 * A float tensor left quantized: y = (float)(q - zp) * scale over q
 * viewed as [outer][axis_len][inner], scale and zp taking axis_len
 * values each, as DequantizeLinear computes it, without the float copy.
 */
struct qr_qview {
	const void *q;        /* codes, borrowed from the constant */
	int qtype;            /* the kernels' enum qr_qtype */
	size_t outer, axis_len, inner;
	float *scale;         /* axis_len values, owned */
	int32_t *zp;          /* axis_len values, owned; NULL: zero */
};

/* What an operator sees of one node at each stage. */
struct qr_op_call {
	const struct qr_node *node; /* the node (attributes, names) */
	int opset;                  /* imported opset of the node's domain */
	size_t n_in;                /* inputs, as in the node */
	struct qr_tensor **in;      /* NULL for an absent optional input */
	size_t n_out;
	struct qr_tensor **out;     /* outputs (set by infer, filled by run) */
	void *state;                /* owned by the op; made by prepare */
	int n_threads;              /* threads the op may use */
	const int *in_dtype;        /* n_in input dtypes (check), or
				     * QR_DT_UNDEFINED: unknown or absent */
	int *out_dtype;             /* n_out output dtypes, set by check */
	void **ws;                  /* kernel workspace shared by every node
				     * of one executor (it runs one node at a
				     * time), grown with qr_op_ws; NULL: the
				     * op keeps its own */
	size_t *ws_cap;             /* bytes allocated in *ws */
	int any_order;              /* 1: float kernels may sum in any order
				     * (Winograd convs): values then differ
				     * from ONNX Runtime's by rounding */
	const struct qr_qview *const *in_q; /* run only: per input, the
				     * view it is given as (in[i] then has
				     * its shape but no data), or NULL; NULL
				     * when no input is (see "Views") */
	const unsigned char *in_init; /* prepare only (else NULL): per input,
				     * nonzero for an initializer or Constant
				     * output (ONNX Runtime pre-packs those),
				     * 0 for a value folded at load */
};

typedef enum qr_status (*qr_op_check_fn)(const struct qr_op_call *c,
					 struct qr_diag *d);
typedef enum qr_status (*qr_op_stage_fn)(struct qr_op_call *c,
					 struct qr_diag *d);
typedef void (*qr_op_release_fn)(void *state);
/* Fill v for the output of c, whose inputs are all constant (in c->in),
 * or decline with any other status than QR_OK (nothing is reported). */
typedef enum qr_status (*qr_op_view_fn)(const struct qr_op_call *c,
					struct qr_qview *v);
/* At load, before c is prepared: whether input i, were it a constant
 * shaped as t (t has no data), lets the op do more than a view would
 * (nonzero), so that it is worth a float copy. */
typedef int (*qr_op_fold_fn)(const struct qr_op_call *c, size_t i,
			     const struct qr_tensor *t);

struct qr_op_desc {
	const char *domain;         /* "" (ai.onnx) or "com.microsoft" */
	const char *name;           /* op_type */
	int since;                  /* lowest supported opset */
	qr_op_check_fn check;       /* may be NULL: nothing to check */
	qr_op_stage_fn prepare;     /* may be NULL: nothing to prepare */
	qr_op_stage_fn infer;       /* output dtypes and shapes */
	qr_op_stage_fn run;         /* computation */
	qr_op_release_fn release;   /* frees state; may be NULL */
	qr_op_view_fn view;         /* may be NULL: output 0 as a view */
	unsigned view_in;           /* bit i: input i may be a view */
	qr_op_fold_fn view_fold;    /* may be NULL (never): whether an
				     * input it could take as a view is
				     * still worth having folded */
};

/* The descriptor for (domain, op_type) at opset: the ops.def row with
 * the highest `since` not above opset. NULL when qreport does not support
 * it ("ai.onnx" and "" are the same domain). */
const struct qr_op_desc *qr_op_find(const char *domain, const char *op_type,
				    int opset);
/* All descriptors, for listings; *n gets the count. */
const struct qr_op_desc *const *qr_op_all(size_t *n);

/* Process-wide set-up before ops run, done once whoever calls first:
 * detect the CPU's features (so threads running ops at once never race
 * on the lazy detection) and set OpenBLAS to one thread (the kernels'
 * pool owns the cores, even when every op runs on one thread because
 * several executors run side by side). The executor calls it. */
void qr_ops_init(void);

#endif
