/*
 * test_executor: the executor (src/run/exec_*.c) on hand-built graphs and
 * on small models.
 *
 *   - the memory plan (live tensors counted from the hook), kept outputs,
 *     output_take, missing inputs, a hook that stops the run,
 *     qr_exec_run_node
 *   - unsupported nodes listed in one message, qr_exec_unsupported
 *   - values folded at load: borrowed by a sharing executor
 *     (opts.share), trimmed (opts.trim_folds); a weight's chain that is
 *     not folded runs just before its reader
 *   - weights left as views (opts.views): the folded bits, less memory
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"
#include "tap.h"
#include "util/util.h"

#define FIXTURES "tests/data/activations"

/* A new float tensor of dims holding a copy of v. */
static struct qr_tensor *
mkf(int ndim, const int64_t *dims, const float *v)
{
	struct qr_tensor t = { 0 };
	struct qr_diag d = { 0 };

	if (qr_tensor_set_shape(&t, QR_DT_FLOAT, ndim, dims, "mkf", &d) !=
	    QR_OK)
		qr_fatal("%s", d.msg);
	t.data = (void *)v;
	return qr_tensor_copy(&t);
}

/* Model file in folder dir of the source tree ("samples", FIXTURES),
 * or NULL (the reason in a diagnostic). */
static struct qr_model *
model(const char *dir, const char *file)
{
	char *path = xasprintf("%s/%s/%s", QR_SRCDIR, dir, file);
	struct qr_model *m = NULL;
	struct qr_diag d = { 0 };

	if (qr_onnx_load(path, &m, &d) != QR_OK)
		diag("%s", d.msg);
	free(path);
	qr_diag_clear(&d);
	return m;
}

/* The rows of samples/digits_test.npy, or NULL (a failed test point). */
static struct qr_tensor *
digits_data(void)
{
	struct qr_tensor *t = NULL;
	struct qr_diag d = { 0 };

	if (qr_npy_read(QR_SRCDIR "/samples/digits_test.npy", "input", &t,
			&d) != QR_OK)
		ok(0, "digits_test.npy read (%s)", d.msg);
	qr_diag_clear(&d);
	return t;
}

/* ---- on hand-built graphs ---- */

/* A node in a hand-built graph: up to 2 inputs and 1 output. */
struct hn {
	const char *op, *in[2], *out[1];
	size_t n_in;
};

/* A model from nodes; one float input "x" of shape [n] and the given
 * outputs. Everything lives in *m's static-lifetime pieces. */
struct hand {
	struct qr_model m;
	struct qr_node nodes[8];
	struct qr_value_info in[1], out[2];
	struct qr_dim dim[1];
	struct qr_opset opset[1];
};

static void
hand_build(struct hand *h, const struct hn *ns, size_t n,
	   const char *const *outs, size_t n_outs)
{
	size_t i;

	memset(h, 0, sizeof *h);
	for (i = 0; i < n; i++) {
		struct qr_node *q = &h->nodes[i];

		q->name = ns[i].out[0];
		q->op_type = ns[i].op;
		q->domain = "";
		q->n_in = ns[i].n_in;
		q->in = (const char **)ns[i].in;
		q->n_out = 1;
		q->out = (const char **)ns[i].out;
	}
	h->dim[0].value = -1;
	h->dim[0].param = "n";
	h->in[0].name = "x";
	h->in[0].dtype = QR_DT_FLOAT;
	h->in[0].ndim = 1;
	h->in[0].dims = h->dim;
	for (i = 0; i < n_outs; i++) {
		h->out[i].name = outs[i];
		h->out[i].dtype = QR_DT_FLOAT;
		h->out[i].ndim = -1;
	}
	h->opset[0].domain = "";
	h->opset[0].version = 13;
	h->m.path = "hand.onnx";
	h->m.n_opset = 1;
	h->m.opsets = h->opset;
	h->m.graph.name = "g";
	h->m.graph.n_node = n;
	h->m.graph.nodes = h->nodes;
	h->m.graph.n_input = 1;
	h->m.graph.inputs = h->in;
	h->m.graph.n_output = n_outs;
	h->m.graph.outputs = h->out;
}

/* Hook state: the most activations alive at any hook call. */
struct live {
	struct qr_exec *e;
	size_t max_live, calls, stop_at;
};

static int
live_hook(const struct qr_node *node, struct qr_tensor *const *outs,
	  size_t n, void *user)
{
	struct live *l = user;
	struct qr_exec_mem mem;

	qr_exec_mem(l->e, &mem);
	if (mem.live_tensors > l->max_live)
		l->max_live = mem.live_tensors;
	l->calls++;
	if (l->stop_at && l->calls == l->stop_at)
		return QR_ETHRESHOLD;
	return 0;
}

static void
test_memory_plan(void)
{
	/* x -> r1 -> r2 -> ... -> r6 (a chain of Relu/Neg) */
	static const struct hn chain[] = {
		{"Relu", {"x"}, {"r1"}, 1}, {"Neg", {"r1"}, {"r2"}, 1},
		{"Neg", {"r2"}, {"r3"}, 1}, {"Relu", {"r3"}, {"r4"}, 1},
		{"Neg", {"r4"}, {"r5"}, 1}, {"Neg", {"r5"}, {"r6"}, 1},
	};
	/* diamond: a feeds two branches that meet again */
	static const struct hn diamond[] = {
		{"Neg", {"x"}, {"a"}, 1}, {"Relu", {"a"}, {"b"}, 1},
		{"Neg", {"a"}, {"c"}, 1}, {"Add", {"b", "c"}, {"y"}, 2},
	};
	static const char *const chain_out[] = {"r6"};
	static const char *const diamond_out[] = {"y", "a"};
	static const int64_t d4[] = {4}, d64[] = {64};
	static const float v4[] = {1, -2, 3, -4};
	float v64[64] = {0};
	struct hand h;
	struct qr_exec *e = NULL;
	struct qr_exec_mem mem;
	struct qr_diag d = {0};
	struct live l = {0};
	struct qr_tensor *x = mkf(1, d4, v4), *const *outs;
	size_t n, peak1;
	enum qr_status st;
	int round;

	x->name = "x";
	hand_build(&h, chain, 6, chain_out, 1);
	st = qr_exec_new(&h.m, NULL, &e, &d);
	ok(st == QR_OK, "exec_new on a chain");
	l.e = e;
	st = qr_exec_run(e, &x, 1, live_hook, &l, &d);
	outs = qr_exec_outputs(e, &n);
	ok(st == QR_OK && n == 1 && outs[0] != NULL &&
	   ((float *)outs[0]->data)[0] == 1 &&
	   ((float *)outs[0]->data)[1] == 0 &&
	   ((float *)outs[0]->data)[2] == 3, "chain output is right");
	ok(l.calls == 6, "hook called once per node");
	ok(l.max_live == 2, "chain: at most 2 activations live (got %zu)",
	   l.max_live);
	qr_exec_mem(e, &mem);
	ok(mem.live_tensors == 1, "after the run only the output lives "
	   "(got %zu)", mem.live_tensors);
	peak1 = mem.peak_bytes;
	ok(peak1 <= 3 * 64, "chain peak is a few buffers, not 6 (%zu "
	   "bytes)", peak1);
	/* a second run reuses the pool: peak does not grow */
	for (round = 0; round < 3; round++)
		qr_exec_run(e, &x, 1, NULL, NULL, &d);
	qr_exec_mem(e, &mem);
	ok(mem.peak_bytes == peak1, "repeated runs reuse buffers");
	/* batch N: a bigger input binds the symbolic dim */
	{
		struct qr_tensor *x64 = mkf(1, d64, v64);

		x64->name = "x";
		st = qr_exec_run(e, &x64, 1, NULL, NULL, &d);
		outs = qr_exec_outputs(e, &n);
		ok(st == QR_OK && outs[0]->n_elem == 64, "dynamic dim bound "
		   "from the input");
		qr_tensor_free(x64);
	}
	/* the hook can stop the run with a status */
	l.calls = 0;
	l.stop_at = 3;
	st = qr_exec_run(e, &x, 1, live_hook, &l, &d);
	ok(st == QR_ETHRESHOLD && l.calls == 3 &&
	   strstr(d.msg, "'r3'") != NULL, "hook status stops the run");
	qr_exec_mem(e, &mem);
	ok(mem.live_tensors == 0, "a stopped run frees its activations");
	/* missing input */
	st = qr_exec_run(e, NULL, 0, NULL, NULL, &d);
	ok(st == QR_EUSAGE && strstr(d.msg, "'x'") != NULL,
	   "missing input named");
	qr_exec_free(e);

	hand_build(&h, diamond, 4, diamond_out, 2);
	st = qr_exec_new(&h.m, NULL, &e, &d);
	ok(st == QR_OK, "exec_new on a diamond");
	l.e = e;
	l.max_live = 0;
	l.calls = 0;
	l.stop_at = 0;
	st = qr_exec_run(e, &x, 1, live_hook, &l, &d);
	outs = qr_exec_outputs(e, &n);
	ok(st == QR_OK && n == 2 && ((float *)outs[0]->data)[0] == 1 &&
	   ((float *)outs[0]->data)[1] == 0 &&
	   ((float *)outs[1]->data)[0] == -1,
	   "diamond outputs (y and the kept intermediate a)");
	/* at Add's hook: a (a graph output, kept), b, c and y */
	ok(l.max_live == 4, "diamond: a, b, c and y live at once (got %zu)",
	   l.max_live);
	qr_exec_mem(e, &mem);
	ok(mem.live_tensors == 2, "graph outputs kept, the rest freed");
	{
		struct qr_tensor *t = qr_exec_output_take(e, 0);

		ok(t != NULL && t->owned && ((float *)t->data)[0] == 1 &&
		   qr_exec_outputs(e, &n)[0] == NULL, "output_take moves y");
		qr_tensor_free(t);
	}
	/* activations of 64 KiB and more are carved from the executor's
	 * bulk: a taken one is the caller's copy, and the executor runs on
	 * (y = relu(-x) + x = max(x, 0)) */
	{
		static const int64_t dbig[] = {1 << 15};
		float *vb = xmalloc(sizeof(float) << 15);
		struct qr_tensor *xb, *t;
		size_t i, good = 1;

		for (i = 0; i < 1u << 15; i++)
			vb[i] = (float)i - 100.0f;
		xb = mkf(1, dbig, vb);
		xb->name = "x";
		for (round = 0; round < 3; round++) {
			st = qr_exec_run(e, &xb, 1, NULL, NULL, &d);
			t = st == QR_OK ? qr_exec_output_take(e, 0) : NULL;
			good &= t != NULL && t->owned && t->n_elem == 1u << 15;
			for (i = 0; t != NULL && i < t->n_elem; i++)
				good &= ((float *)t->data)[i] ==
					(vb[i] > 0 ? vb[i] : 0);
			qr_tensor_free(t);
		}
		ok(good, "128 KiB outputs taken from three runs in a row are "
		   "right and the caller's to free");
		qr_tensor_free(xb);
		free(vb);
	}
	/* run node 3 (Add) alone with given inputs */
	{
		static const float b[] = {1, 1, 1, 1}, c[] = {2, 3, 4, 5};
		struct qr_tensor *in[2], *out[1];

		in[0] = mkf(1, d4, b);
		in[1] = mkf(1, d4, c);
		st = qr_exec_run_node(e, 3, in, out, &d);
		ok(st == QR_OK && ((float *)out[0]->data)[3] == 6,
		   "run_node runs one node on given inputs");
		qr_tensor_free(out[0]);
		in[1]->dtype = QR_DT_INT32;
		st = qr_exec_run_node(e, 3, in, out, &d);
		ok(st == QR_ESHAPE, "run_node refuses a wrong dtype");
		qr_tensor_free(in[0]);
		qr_tensor_free(in[1]);
	}
	qr_exec_free(e);
	qr_tensor_free(x);
}

/* 60 unsupported nodes: counted per op type, listed while they fit, and
 * never cut mid-entry (the message used to stop at 1 KB mid-word). */
static void
test_unsupported_many(void)
{
	enum { N = 60 };
	static const char *const outs[] = {"y"};
	static char names[N][64];
	static const char *ins[N][1], *nouts[N][1];
	struct qr_node nodes[N];
	struct hand h;
	struct qr_exec *e = NULL;
	struct qr_diag d = {0};
	const char *tail;
	size_t i;

	hand_build(&h, NULL, 0, outs, 1);
	memset(nodes, 0, sizeof nodes);
	for (i = 0; i < N; i++) {
		if (i + 1 == N)
			snprintf(names[i], sizeof names[i], "y");
		else
			snprintf(names[i], sizeof names[i],
				 "a_long_node_name_to_fill_it_%02zu", i);
		ins[i][0] = i ? names[i - 1] : "x";
		nouts[i][0] = names[i];
		nodes[i].name = names[i];
		nodes[i].op_type = i % 10 == 9 ? "BarOp" : "FooOp";
		nodes[i].domain = i % 20 == 19 ? "com.example" : "";
		nodes[i].n_in = 1;
		nodes[i].in = ins[i];
		nodes[i].n_out = 1;
		nodes[i].out = nouts[i];
	}
	h.m.graph.n_node = N;
	h.m.graph.nodes = nodes;
	qr_exec_new(&h.m, NULL, &e, &d);
	tail = strstr(d.msg, ", and ");
	ok(e == NULL && strstr(d.msg, "'hand.onnx': 60 unsupported nodes "
			       "(54 FooOp, 3 BarOp, 3 com.example.BarOp): "
			       "'a_long_node_name_to_fill_it_00' (FooOp, "
			       "opset 13), ") != NULL &&
	   tail != NULL && strlen(d.msg) < QR_DIAG_MSG_MAX - 1 &&
	   strspn(tail + 6, "0123456789") > 0 &&
	   strcmp(tail + 6 + strspn(tail + 6, "0123456789"), " more") == 0 &&
	   tail[-1] == ')',
	   "many unsupported nodes: counts per op type, whole entries, "
	   "\"and N more\"");
	diag("%s", d.msg);
}

static void
test_unsupported(void)
{
	static const struct hn bad[] = {
		{"Relu", {"x"}, {"a"}, 1}, {"FooOp", {"a"}, {"b"}, 1},
		{"Softmax", {"b"}, {"c"}, 1}, {"BarOp", {"c"}, {"y"}, 1},
	};
	static const char *const outs[] = {"y"};
	struct hand h;
	struct qr_exec *e = NULL;
	struct qr_diag d = {0};
	struct qr_unsupported *u;
	size_t n;
	enum qr_status st;

	hand_build(&h, bad, 4, outs, 1);
	st = qr_exec_new(&h.m, NULL, &e, &d);
	ok(st == QR_EUNSUPPORTED && e == NULL &&
	   strstr(d.msg, "2 unsupported nodes") &&
	   strstr(d.msg, "'b' (FooOp, opset 13)") &&
	   strstr(d.msg, "'y' (BarOp, opset 13)"),
	   "every unsupported node in one message");
	diag("%s", d.msg);
	st = qr_exec_unsupported(&h.m, &u, &n, &d);
	ok(st == QR_OK && n == 2 && strcmp(u[0].node->op_type, "FooOp") == 0,
	   "qr_exec_unsupported lists them");
	qr_unsupported_free(u, n);
	test_unsupported_many();
}

/* ---- values folded at load ---- */

/* Hook: each DequantizeLinear output's data pointer and ownership, by
 * node index. */
struct dq_seen {
	const struct qr_model *m;
	const void *data[64];
	int owned[64];
};

static int
dq_hook(const struct qr_node *node, struct qr_tensor *const *outs, size_t n,
	void *user)
{
	struct dq_seen *s = user;
	size_t i = (size_t)(node - s->m->graph.nodes);

	if (i < 64 && n > 0 && outs[0] != NULL &&
	    strcmp(node->op_type, "DequantizeLinear") == 0) {
		s->data[i] = outs[0]->data;
		s->owned[i] = outs[0]->owned;
	}
	return 0;
}

/* An executor made with opts.share borrows the values the other folded at
 * load (dequantized weights) rather than holding copies; its runs are the
 * same bits. */
static void
test_fold_share(struct qr_tensor *data)
{
	struct qr_model *m = model("samples", "digits_qdq.onnx");
	struct qr_model *m2 = model("samples", "digits_qdq.onnx");
	struct qr_exec *a = NULL, *b = NULL, *c = NULL;
	struct qr_exec_opts o = { 0 };
	struct qr_diag d = { 0 };
	struct qr_tensor one = *data, *in = &one, *const *oa, *const *ob;
	struct dq_seen sa = { 0 }, sb = { 0 }, sc = { 0 };
	size_t i, n_dq = 0, shared = 0, own = 0, na, nb;

	one.dims[0] = 1;
	one.n_elem /= (size_t)data->dims[0];
	one.nbytes /= (size_t)data->dims[0];
	one.owned = 0;
	one.name = "input";
	if (!ok(m != NULL && m2 != NULL &&
		qr_exec_new(m, NULL, &a, &d) == QR_OK, "digits_qdq loads"))
		goto out;
	o.share = a;
	o.any_order = 1;
	ok(qr_exec_new(m, &o, &b, &d) == QR_OK &&
	   qr_exec_new(m2, &o, &c, &d) == QR_OK,
	   "executors sharing a's folded values (one of another model)");
	sa.m = sb.m = m;
	sc.m = m2;
	ok(b && c && qr_exec_run(a, &in, 1, dq_hook, &sa, &d) == QR_OK &&
	   qr_exec_run(b, &in, 1, dq_hook, &sb, &d) == QR_OK &&
	   qr_exec_run(c, &in, 1, dq_hook, &sc, &d) == QR_OK,
	   "all three run (%s)", d.msg);
	for (i = 0; i < m->graph.n_node && i < 64; i++) {
		size_t k, init = 0;

		/* a weight: DequantizeLinear of an initializer */
		for (k = 0; sa.data[i] && k < m->graph.n_init; k++)
			init |= strcmp(m->graph.inits[k].name,
				       m->graph.nodes[i].in[0]) == 0;
		if (!init)
			continue;
		n_dq++;
		shared += sb.data[i] == sa.data[i] && !sb.owned[i];
		own += sc.data[i] != NULL && sc.data[i] != sa.data[i] &&
		       sc.owned[i];
	}
	ok(n_dq >= 5 && shared == n_dq && own == n_dq,
	   "folded weights: %zu of %zu borrowed from the same model's "
	   "executor, %zu computed for another model's", shared, n_dq, own);
	oa = qr_exec_outputs(a, &na);
	ob = b ? qr_exec_outputs(b, &nb) : NULL;
	ok(ob && na == nb && na == 1 && oa[0]->nbytes == ob[0]->nbytes &&
	   memcmp(oa[0]->data, ob[0]->data, oa[0]->nbytes) == 0,
	   "the borrowing executor's output has the same bits");
out:
	qr_exec_free(c);
	qr_exec_free(b);
	qr_exec_free(a);
	qr_onnx_free(m);
	qr_onnx_free(m2);
	qr_diag_clear(&d);
}

/* What a hook saw: outputs of Transpose and QuantizeLinear nodes, given
 * or NULL; and the nodes in the order run (up to 256). */
struct trim_seen {
	size_t given, null;
	const struct qr_node *order[256];
	size_t n;
};

static int
trim_hook(const struct qr_node *node, struct qr_tensor *const *outs,
	  size_t n_outs, void *user)
{
	struct trim_seen *s = user;

	if (s->n < 256)
		s->order[s->n++] = node;
	if (n_outs > 0 && (strcmp(node->op_type, "Transpose") == 0 ||
			   strcmp(node->op_type, "QuantizeLinear") == 0)) {
		if (outs[0] != NULL)
			s->given++;
		else
			s->null++;
	}
	return 0;
}

/* Whether node b reads an output of node a. */
static int
reads(const struct qr_node *b, const struct qr_node *a)
{
	size_t i, j;

	for (i = 0; i < b->n_in; i++)
		for (j = 0; j < a->n_out; j++)
			if (b->in[i][0] && strcmp(b->in[i], a->out[j]) == 0)
				return 1;
	return 0;
}

/* Of the nodes run (seen), the DequantizeLinear ones that read
 * constants only (through Transpose and QuantizeLinear): how many, and
 * how many ran right before a node that reads them (or before the
 * DequantizeLinear of the bias that node also reads). */
static void
dq_just_in_time(const struct qr_model *m, const struct trim_seen *seen,
		size_t *n_dq, size_t *jit)
{
	const struct qr_graph_data *g = &m->graph;
	size_t i, j, k;

	*n_dq = *jit = 0;
	for (i = 0; i + 1 < seen->n; i++) {
		const struct qr_node *nd = seen->order[i];
		int konly = 1;

		if (strcmp(nd->op_type, "DequantizeLinear") != 0)
			continue;
		/* walk input 0 up through Q and Transpose to an initializer */
		for (k = 0; konly && nd != NULL && k < 4; k++) {
			const char *x = nd->in[0];
			const struct qr_node *p = NULL;

			for (j = 0; j < g->n_init; j++)
				if (strcmp(g->inits[j].name, x) == 0)
					break;
			if (j < g->n_init)
				break;
			for (j = 0; j < g->n_node && p == NULL; j++)
				if (g->nodes[j].n_out &&
				    strcmp(g->nodes[j].out[0], x) == 0)
					p = &g->nodes[j];
			konly = p != NULL &&
				(strcmp(p->op_type, "QuantizeLinear") == 0 ||
				 strcmp(p->op_type, "Transpose") == 0);
			nd = p;
		}
		if (!konly || k == 4)
			continue;
		(*n_dq)++;
		*jit += reads(seen->order[i + 1], seen->order[i]) ||
			(i + 2 < seen->n &&
			 strcmp(seen->order[i + 1]->op_type,
				"DequantizeLinear") == 0 &&
			 reads(seen->order[i + 2], seen->order[i]));
	}
}

/*
 * opts.trim_folds on mha_nofold_qdq.onnx, where each weight goes
 * Transpose -> QuantizeLinear -> DequantizeLinear at load: the first two
 * are freed (the hook gets NULL), the DequantizeLinear kept; an executor
 * sharing the trimmed one trims alike. With opts.fold_max too small to
 * fold anything, those chains run at each run, each just before the
 * node that reads it (not all at the start, where the quantizer wrote
 * them). Every output has the same bits.
 */
static void
test_fold_trim(void)
{
	struct qr_model *m = model(FIXTURES, "mha_nofold_qdq.onnx");
	struct qr_exec *a = NULL, *b = NULL, *c = NULL, *x = NULL, *y = NULL;
	struct qr_exec_opts o = { 0 };
	struct qr_diag d = { 0 };
	struct qr_tensor *in = NULL, *const *oa, *const *ob, *const *oc;
	struct qr_tensor *const *ox, *const *oy;
	static struct trim_seen sa, sb, sc, sx, sy;
	int64_t dims[3] = { 1, 5, 16 };
	size_t i, na, nb, nc, nx, ny, n_dq, jit;

	if (!ok(m != NULL && qr_exec_new(m, NULL, &a, &d) == QR_OK,
		"mha_nofold_qdq loads (%s)", d.msg))
		goto out;
	o.trim_folds = 1;
	ok(qr_exec_new(m, &o, &b, &d) == QR_OK, "trimmed executor");
	o.share = b;
	o.any_order = 1;
	ok(qr_exec_new(m, &o, &c, &d) == QR_OK,
	   "trimmed executor sharing the trimmed one's values");
	o.share = NULL;
	o.any_order = 0;
	o.fold_max = 1;
	ok(qr_exec_new(m, &o, &x, &d) == QR_OK, "executor folding nothing");
	o.share = x;
	ok(qr_exec_new(m, &o, &y, &d) == QR_OK,
	   "executor sharing the one folding nothing");
	if (!ok(qr_tensor_new(QR_DT_FLOAT, 3, dims, &in, &d) == QR_OK,
		"input"))
		goto out;
	in->name = "input";
	for (i = 0; i < in->n_elem; i++)
		((float *)in->data)[i] = (float)((i * 7919) % 61) / 30.0f - 1;
	if (!ok(b && c && qr_exec_run(a, &in, 1, trim_hook, &sa, &d) == QR_OK &&
		qr_exec_run(b, &in, 1, trim_hook, &sb, &d) == QR_OK &&
		qr_exec_run(c, &in, 1, trim_hook, &sc, &d) == QR_OK,
		"all three run (%s)", d.msg))
		goto out;
	ok(x && y && qr_exec_run(x, &in, 1, trim_hook, &sx, &d) == QR_OK &&
	   qr_exec_run(y, &in, 1, trim_hook, &sy, &d) == QR_OK,
	   "both run (%s)", d.msg);
	ok(sx.null == 0 && sx.given == sa.given && sy.null == 0,
	   "folding nothing: every weight's chain runs (%zu outputs given)",
	   sx.given);
	dq_just_in_time(m, &sx, &n_dq, &jit);
	ok(n_dq >= 3 && jit == n_dq, "each weight's DequantizeLinear runs "
	   "right before the node that reads it: %zu of %zu", jit, n_dq);
	ox = x ? qr_exec_outputs(x, &nx) : NULL;
	oy = y ? qr_exec_outputs(y, &ny) : NULL;
	oa = qr_exec_outputs(a, &na);
	ok(ox && oy && nx == 1 && ny == 1 && na == 1 &&
	   ox[0]->nbytes == oa[0]->nbytes && oy[0]->nbytes == oa[0]->nbytes &&
	   memcmp(ox[0]->data, oa[0]->data, oa[0]->nbytes) == 0 &&
	   memcmp(oy[0]->data, oa[0]->data, oa[0]->nbytes) == 0,
	   "folded or not: the output has the same bits");
	ok(sa.null == 0 && sb.null == 4 && sc.null == 4 &&
	   sb.given + sb.null == sa.given && sc.given == sb.given,
	   "the weights' Transpose and QuantizeLinear outputs are freed: "
	   "%zu of %zu such outputs (%zu when shared), none untrimmed",
	   sb.null, sa.given, sc.null);
	oa = qr_exec_outputs(a, &na);
	ob = qr_exec_outputs(b, &nb);
	oc = qr_exec_outputs(c, &nc);
	ok(na == 1 && nb == 1 && nc == 1 && oa[0]->nbytes == ob[0]->nbytes &&
	   memcmp(oa[0]->data, ob[0]->data, oa[0]->nbytes) == 0 &&
	   oa[0]->nbytes == oc[0]->nbytes &&
	   memcmp(oa[0]->data, oc[0]->data, oa[0]->nbytes) == 0,
	   "trimmed or not, shared or not: the output has the same bits");
out:
	qr_tensor_free(in);
	qr_exec_free(y);
	qr_exec_free(x);
	qr_exec_free(c);
	qr_exec_free(b);
	qr_exec_free(a);
	qr_onnx_free(m);
	qr_diag_clear(&d);
}

/* ---- weights as views ---- */

/* Which weights' DequantizeLinear outputs the hook got as NULL (left as
 * views), as a string of their names' first two letters. */
struct view_seen {
	char null[64];
	size_t given;
};

static int
view_hook(const struct qr_node *node, struct qr_tensor *const *outs,
	  size_t n_outs, void *user)
{
	struct view_seen *s = user;
	size_t n = strlen(s->null);

	if (n_outs != 1 || strcmp(node->op_type, "DequantizeLinear") != 0)
		return 0;
	if (outs[0] != NULL)
		s->given++;
	else if (n + 3 < sizeof s->null)
		snprintf(s->null + n, sizeof s->null - n, "%s%.2s",
			 n ? " " : "", node->name);
	return 0;
}

/* Whether executors a and b's last runs gave the same bits everywhere. */
static int
same_outputs(const struct qr_exec *a, const struct qr_exec *b)
{
	struct qr_tensor *const *oa, *const *ob;
	size_t na, nb, i;

	oa = qr_exec_outputs(a, &na);
	ob = qr_exec_outputs(b, &nb);
	if (na != nb || na == 0)
		return 0;
	for (i = 0; i < na; i++)
		if (oa[i] == NULL || ob[i] == NULL ||
		    oa[i]->nbytes != ob[i]->nbytes ||
		    memcmp(oa[i]->data, ob[i]->data, oa[i]->nbytes) != 0)
			return 0;
	return 1;
}

/* Input "x" of dims, filled with a fixed pattern (heap), or NULL. */
static struct qr_tensor *
x_input(int ndim, const int64_t *dims)
{
	struct qr_tensor *in = NULL;
	struct qr_diag d = { 0 };
	size_t i;

	if (qr_tensor_new(QR_DT_FLOAT, ndim, dims, &in, &d) != QR_OK) {
		qr_diag_clear(&d);
		return NULL;
	}
	in->name = "x";
	for (i = 0; i < in->n_elem; i++)
		((float *)in->data)[i] = (float)((i * 7919) % 61) / 20.0f - 1.5f;
	return in;
}

/*
 * Run fixture file through an executor with default options and one with
 * o, on x_input(ndim, dims): what each hook saw in *sa and *sv, and
 * whether the outputs have the same bits. 0 when either fails to load
 * or run (reported).
 */
static int
views_pair(const char *file, const struct qr_exec_opts *o, int ndim,
	   const int64_t *dims, struct view_seen *sa, struct view_seen *sv,
	   int *same)
{
	struct qr_model *m = model(FIXTURES, file);
	struct qr_exec *a = NULL, *v = NULL;
	struct qr_diag d = { 0 };
	struct qr_tensor *in = NULL;
	int good;

	good = ok(m != NULL && qr_exec_new(m, NULL, &a, &d) == QR_OK &&
		  qr_exec_new(m, o, &v, &d) == QR_OK &&
		  (in = x_input(ndim, dims)) != NULL &&
		  qr_exec_run(a, &in, 1, view_hook, sa, &d) == QR_OK &&
		  qr_exec_run(v, &in, 1, view_hook, sv, &d) == QR_OK,
		  "%s loads and runs, with and without views (%s)", file,
		  d.msg);
	*same = good && same_outputs(a, v);
	qr_tensor_free(in);
	qr_exec_free(v);
	qr_exec_free(a);
	qr_onnx_free(m);
	qr_diag_clear(&d);
	return good;
}

/* Folding nothing, views_big_qdq.onnx's 800x768 weight is dequantized
 * into an activation (2.4 MB) while its Conv runs; as a view it is read
 * where it lies: the executor with views holds less by at least that. */
static void
test_views_big_mem(const int64_t *dims)
{
	struct qr_model *m = model(FIXTURES, "views_big_qdq.onnx");
	struct qr_exec_opts o = { 0 };
	struct qr_exec *n = NULL, *v = NULL;
	struct qr_exec_mem mn, mv;
	struct qr_diag d = { 0 };
	struct qr_tensor *in = x_input(4, dims);
	size_t wbytes = (size_t)800 * 768 * sizeof(float);

	o.fold_max = 1;
	if (ok(m != NULL && in != NULL &&
	       qr_exec_new(m, &o, &n, &d) == QR_OK &&
	       (o.views = 1, qr_exec_new(m, &o, &v, &d) == QR_OK) &&
	       qr_exec_run(n, &in, 1, NULL, NULL, &d) == QR_OK &&
	       qr_exec_run(v, &in, 1, NULL, NULL, &d) == QR_OK,
	       "views_big_qdq folding nothing runs with and without views "
	       "(%s)", d.msg)) {
		qr_exec_mem(n, &mn);
		qr_exec_mem(v, &mv);
		ok(mv.peak_bytes + wbytes <= mn.peak_bytes,
		   "peak activation memory with views %zu, without %zu: "
		   "less by at least the big weight's %zu bytes",
		   mv.peak_bytes, mn.peak_bytes, wbytes);
	}
	qr_tensor_free(in);
	qr_exec_free(v);
	qr_exec_free(n);
	qr_onnx_free(m);
	qr_diag_clear(&d);
}

/* The default fold budget with views: a Conv weight is folded only when
 * Winograd could take it (views_big_qdq.onnx's 3x3 k3), else it is a
 * view however small (the 1x1 p1) or large (big); the same bits as
 * without views. */
static void
test_views_big(void)
{
	struct qr_exec_opts o = { 0 };
	struct view_seen sa = { "", 0 }, sv = { "", 0 };
	int64_t dims[4] = { 1, 768, 2, 2 };
	int same;

	o.views = 1;
	if (!views_pair("views_big_qdq.onnx", &o, 4, dims, &sa, &sv, &same))
		return;
	ok(strcmp(sv.null, "wb wp") == 0 && sv.given == 2 &&
	   sa.null[0] == '\0',
	   "default budget: the 3x3 weight folded, the 1x1 ones views "
	   "(views: '%s' for 'wb wp', given %zu for 2)", sv.null, sv.given);
	ok(same, "the same bits as without views");
	test_views_big_mem(dims);
}

/* MatMul and Gemm weights as views (views_mm_qdq.onnx, nothing folded):
 * per column, per tensor, transposed, along K (dequantized whole), one
 * row, alpha != 1: every weight is a view, and every output has the
 * folded bits. */
static void
test_views_mm(void)
{
	struct qr_exec_opts o = { 0 };
	struct view_seen sa = { "", 0 }, sv = { "", 0 };
	int64_t dims[3] = { 1, 3, 16 };
	int same;

	o.views = 1;
	o.fold_max = 1;
	if (!views_pair("views_mm_qdq.onnx", &o, 3, dims, &sa, &sv, &same))
		return;
	ok(strcmp(sv.null, "w1 w2 w3 w4 w5 w6 w7") == 0 && sv.given == 1,
	   "every MatMul and Gemm weight a view: '%s', %zu given (xd)",
	   sv.null, sv.given);
	ok(same, "m1 g1 m3 g3 g4: the folded bits");
}

/*
 * opts.views on views_qdq.onnx (tests/data/make_view_fixtures.py) with
 * nothing folded: the weights' DequantizeLinear nodes a Conv alone reads
 * are not run (per channel, per tensor, depthwise, scales along the input
 * channels, 1-D); the one two Convs read, the one that is a graph output
 * and the blocked one are. Every output has the bits of the executor
 * that folds every weight, run after run and beside a sharing executor
 * that may sum in any order; and no weight takes activation memory.
 */
static void
test_views(void)
{
	struct qr_model *m = model(FIXTURES, "views_qdq.onnx");
	struct qr_exec *a = NULL, *n = NULL, *v = NULL, *w = NULL;
	struct qr_exec_opts o = { 0 };
	struct qr_diag d = { 0 };
	struct qr_tensor *in = NULL;
	struct qr_exec_mem mn, mv;
	struct view_seen sa = { "", 0 }, sn = { "", 0 }, sv = { "", 0 };
	struct view_seen sw = { "", 0 };
	int64_t dims[4] = { 1, 4, 6, 6 };
	int same = 1, k;

	if (!ok(m != NULL && qr_exec_new(m, NULL, &a, &d) == QR_OK,
		"views_qdq loads (%s)", d.msg))
		goto out;
	o.fold_max = 1;
	ok(qr_exec_new(m, &o, &n, &d) == QR_OK, "executor folding nothing");
	o.views = 1;
	ok(qr_exec_new(m, &o, &v, &d) == QR_OK,
	   "executor folding nothing, with views");
	o.share = v;
	o.any_order = 1;
	ok(qr_exec_new(m, &o, &w, &d) == QR_OK,
	   "executor sharing it, any order, with views");
	if (!ok(n && v && w && (in = x_input(4, dims)) != NULL, "input"))
		goto out;
	if (!ok(qr_exec_run(a, &in, 1, view_hook, &sa, &d) == QR_OK &&
		qr_exec_run(n, &in, 1, view_hook, &sn, &d) == QR_OK,
		"folded and unfolded run (%s)", d.msg))
		goto out;
	ok(same_outputs(a, n), "folding nothing: the same bits");
	qr_exec_mem(n, &mn);
	for (k = 0; k < 2; k++) {
		memset(&sv, 0, sizeof sv);
		memset(&sw, 0, sizeof sw);
		if (!ok(qr_exec_run(v, &in, 1, view_hook, &sv, &d) == QR_OK &&
			qr_exec_run(w, &in, 1, view_hook, &sw, &d) == QR_OK,
			"run %d with views (%s)", k + 1, d.msg))
			goto out;
		same &= same_outputs(a, v) && same_outputs(a, w);
	}
	ok(same, "with views, two runs each, one executor in any order: "
	   "every output (c1 c2 d e f g h wf_dq) has the folded bits");
	ok(strcmp(sv.null, "wa wb wd we wg") == 0 && sv.given == 4 &&
	   strcmp(sw.null, sv.null) == 0,
	   "left as views: '%s' (want 'wa wb wd we wg'); run: %zu of the "
	   "DequantizeLinear nodes (want 4: xd, wc read twice, wf kept, wh "
	   "blocked)", sv.null, sv.given);
	ok(sa.null[0] == '\0' && sn.null[0] == '\0' && sn.given == 9,
	   "without views every DequantizeLinear output is given (%zu)",
	   sn.given);
	/* what views leave out is never allocated, so they never hold
	 * more; how much less depends on what the pool reuses (here a
	 * view's buffer would have been one a freed activation left) */
	qr_exec_mem(v, &mv);
	ok(mv.peak_bytes <= mn.peak_bytes,
	   "peak activation memory with views %zu <= %zu bytes without",
	   mv.peak_bytes, mn.peak_bytes);
	test_views_big();
	test_views_mm();
out:
	qr_tensor_free(in);
	qr_exec_free(w);
	qr_exec_free(v);
	qr_exec_free(n);
	qr_exec_free(a);
	qr_onnx_free(m);
	qr_diag_clear(&d);
}

int
main(void)
{
	struct qr_tensor *data;

	plan_no_plan();
	RUN(test_memory_plan);
	RUN(test_unsupported);
	data = digits_data();
	if (data != NULL)
		test_fold_share(data);
	qr_tensor_free(data);
	RUN(test_fold_trim);
	RUN(test_views);
	return done();
}
