/*
 * exec-int: what the executor's files share with each other and nobody
 * else: struct qr_exec, its values and its steps.
 *
 *   exec_build.c    qr_exec_new/free: the name table, the buffer pool,
 *                   steps in topological order, dtypes through the ops'
 *                   checks, prepare, liveness (release lists), and the
 *                   one message naming every unsupported node
 *   exec_fold.c     constant folding at load (shared with opts.share,
 *                   trimmed with opts.trim_folds) and weights left as
 *                   views (opts.views)
 *   exec_control.c  If and Loop: their subgraph executors, built at load
 *                   and run
 *   exec_run.c      qr_exec_run: inputs checked against their
 *                   declarations, shapes inferred, steps run, the hook
 *                   called; the outputs, qr_exec_run_node
 *   exec_profile.c  per-op-type timings and memory accounting
 *
 * What they share is named qr_ex_* and declared at the end, by file.
 *
 * Load time (qr_exec_new): one `value` per tensor name (graph input,
 * constant or node output) and one `step` per node in topological order.
 * Dtypes propagate through the ops' check functions; prepare sees the
 * constants. Each value's last consumer is recorded; after that step the
 * value's buffer goes back to a pool that later outputs draw from (best
 * fit), so peak memory follows the widest cut of the graph rather than
 * its total. Steps whose inputs are all constant are run once at load
 * (qr_ex_step_fold) and hand their stored outputs to each run's hook.
 */
#ifndef QR_EXEC_INT_H
#define QR_EXEC_INT_H

#include <stddef.h>

#include "graph/tensor.h"
#include "ops/ops.h"
#include "run/run.h"
#include "util/util.h"

struct qr_node;
struct qr_value_info;

enum value_kind {
	V_INPUT, /* fed by the caller */
	V_CONST, /* initializer */
	V_NODE,  /* produced by a node */
};

#define NO_STEP ((size_t)-1)

struct value {
	const char *name;          /* borrowed from the model */
	enum value_kind kind;
	int dtype;                 /* dtype known at load, or UNDEFINED */
	const struct qr_value_info *decl; /* V_INPUT declaration */
	struct qr_tensor *konst;   /* constant (initializer, or a Constant
				    * output seen through Identity) wrapped;
				    * owned; NULL when not constant */
	struct qr_tensor store;    /* V_NODE: the activation (owned data) */
	struct qr_tensor *cur;     /* what readers see this run, or NULL */
	size_t producer;           /* V_NODE: producing step */
	size_t last_use;           /* step after which it is released */
	int keep;                  /* graph output or opts.keep */
	int folded;                /* V_NODE computed once at load: konst
				    * holds it, the pool never sees it */
	int view;                  /* V_NODE its producer leaves as a view
				    * (opts.views): store gets its shape at
				    * each run, never data */
};

struct step {
	size_t node;               /* index into the model's nodes */
	const struct qr_op_desc *desc;
	struct qr_op_call call;    /* in/out/state used for every run */
	size_t *in_val;            /* value per input, NO_STEP when absent */
	size_t *out_val;           /* value per output, NO_STEP when "" */
	struct qr_tensor **prep_in; /* constants only, for check/prepare */
	struct qr_tensor *scratch; /* outputs named "" (n_out entries) */
	int *in_dtype;             /* n_in, for check */
	int *out_dtype;            /* n_out, set by check */
	int recheck;               /* an input dtype was unknown at load */
	int prepared;              /* prepare ran (release is due) */
	int borrowed;              /* call.state is opts.reuse's step's:
				    * never released here */
	size_t *release;           /* values released after this step */
	size_t n_release;
	size_t prof;               /* index into exec->prof */
	struct qr_tensor **folded; /* n_out constant outputs when every
				    * input is constant (computed at load),
				    * else NULL */
	struct qr_qview *view;     /* output 0 left as this view, not run
				    * (opts.views), or NULL */
	const struct qr_qview **in_q; /* n_in: the views its inputs are
				    * given as (call.in_q), or NULL */
	struct qr_tensor **nulls;  /* view: n_out NULLs, for the hook */
	/* If and Loop (see exec_control.c): */
	int is_loop;               /* Loop, else If */
	struct qr_exec *branch[2]; /* If's then and else executors, Loop's
				    * body in [0]; NULL for other nodes */
	struct qr_model *branch_m[2]; /* their models: this one's, with the
				    * subgraph as graph (owned, borrowing) */
	struct qr_value_info *sub_vi; /* the subgraphs' inputs: n_own of
				    * their own, then the n_outer values
				    * they read from this graph */
	size_t n_own, n_outer;
	size_t *outer_val;         /* those values here */
	struct qr_tensor *sub_t;   /* the inputs' tensors this run (own:
				    * owned, carried between Loop
				    * iterations; outer: borrowing data) */
	struct qr_tensor **sub_in; /* pointers to sub_t */
	struct qr_tensor *carry;   /* Loop: the next iteration's carried
				    * values, before they move to sub_t */
	struct qr_tensor *scan;    /* Loop: the stacked scan outputs (data
				    * from xrealloc, cap its bytes) */
	size_t n_scan;
};

/* A freed buffer waiting for reuse. */
struct pool_buf {
	void *p;                   /* 64-byte aligned, from qr_tensor_alloc */
	size_t cap;                /* bytes */
};

struct qr_exec {
	const struct qr_model *m;  /* borrowed */
	struct qr_graph *g;        /* owned index */
	struct qr_exec_opts opts;  /* copy (keep borrowed) */
	struct value *vals;
	size_t n_vals;
	struct qr_strmap by_name;  /* value name -> index in vals */
	struct step *steps;        /* topological order */
	size_t n_steps;
	size_t *step_of_node;      /* node index -> step */
	const char **inputs;       /* fed input names */
	size_t n_inputs;
	size_t *out_vals;          /* graph outputs -> value */
	struct qr_tensor **outs;   /* graph outputs of the last run */
	size_t n_outs;
	struct qr_tensor **taken;  /* copies handed out by output_take */
	struct pool_buf *pool;
	size_t n_pool, cap_pool;
	struct qr_bulk bulk;       /* the pool's large buffers (none in a
				    * child, which frees its pool) */
	int child;                 /* an If branch or a Loop body */
	size_t live_tensors, live_bytes, pool_bytes, peak_bytes;
	struct qr_exec_prof *prof; /* per op type, in first-seen order */
	size_t n_prof;
	struct qr_exec_prof *prof_sorted; /* with the subgraphs' ops */
	size_t n_sorted;
	char **prof_names;         /* the subgraph entries' names */
	size_t n_names;
	void *ws;                  /* kernel workspace every step shares
				    * (struct qr_op_call.ws): one node runs
				    * at a time */
	size_t ws_cap;             /* bytes in ws */
	size_t fold_bytes;         /* bytes of the values it folded and
				    * holds (borrowed ones not counted) */
	size_t *reader;            /* load with opts.views: per value, the
				    * step reading it, NO_STEP for none,
				    * n_steps for more than one */
	size_t *reader_in;         /* and the input it reads it at */
};

/* ---- exec_build.c ---- */

/* Index of value name in e->vals, or NO_STEP. */
size_t qr_ex_val_find(const struct qr_exec *e, const char *name);
/* Give t (shape set by infer) a buffer from e's pool, or a new one. */
void qr_ex_pool_alloc(struct qr_exec *e, struct qr_tensor *t);
/* Return t's buffer to e's pool. */
void qr_ex_pool_release(struct qr_exec *e, struct qr_tensor *t);

/* ---- exec_fold.c: load steps, in the order qr_exec_new calls them ---- */

/* opts.views: who reads each value (e->reader), before the steps. */
void qr_ex_readers_index(struct qr_exec *e);
/* After step s is prepared: run it once now when its inputs are all
 * constant. */
void qr_ex_step_fold(struct qr_exec *e, struct step *s);
/* opts.trim_folds, after step i: free the folded values only folded
 * steps read. live: per value, read by a step not folded. */
void qr_ex_fold_trim(struct qr_exec *e, size_t i, unsigned char *live);
/* opts.views, after every step: leave constant weights as views. */
void qr_ex_views_plan(struct qr_exec *e);

/* ---- exec_control.c ---- */

/* The descriptors If and Loop steps get (they have no op). */
extern const struct qr_op_desc qr_ex_if_desc, qr_ex_loop_desc;
/* 1 for If, 2 for Loop (ai.onnx), 0 for other nodes. */
int qr_ex_control_kind(const struct qr_node *n);
/* Build step i's subgraph executors; an error makes the node
 * unsupported, saying why. */
enum qr_status qr_ex_control_build(struct qr_exec *e, struct step *s,
				   size_t i, struct qr_diag *d);
/* Run If (Loop) step s, whose call.in is filled. */
enum qr_status qr_ex_if_exec(struct qr_exec *e, struct step *s,
			     struct qr_diag *d);
enum qr_status qr_ex_loop_exec(struct qr_exec *e, struct step *s,
			       struct qr_diag *d);

/* ---- exec_run.c ---- */

/* Release every activation of the previous run. */
void qr_ex_reset(struct qr_exec *e);
/* Give step s's output j (its shape set) its buffer. */
void qr_ex_out_alloc(struct qr_exec *e, struct step *s, size_t j);

/* ---- exec_profile.c ---- */

/* Free the names of the subgraph entries of e->prof_sorted. */
void qr_ex_prof_names_free(struct qr_exec *e);

#endif
