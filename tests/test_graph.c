/*
 * test_graph: the graph index on the fixtures of tests/data/loader/:
 * topological order of an out-of-order graph with an If, producers and
 * consumers, constants through Identity, and the graph errors (cycle,
 * undefined input, tensor produced twice).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph.h"
#include "onnx/onnx.h"
#include "tap.h"
#include "util/util.h"

#define DATA QR_SRCDIR "/tests/data/loader/"

static struct qr_model *
load(const char *file)
{
	char *path = xasprintf("%s%s", DATA, file);
	struct qr_model *m = NULL;
	struct qr_diag d = {0};

	if (qr_onnx_load(path, &m, &d) != QR_OK)
		diag("%s", d.msg);
	qr_diag_clear(&d);
	free(path);
	return m;
}

static long
node_index(const struct qr_graph *g, const char *name)
{
	size_t i;

	for (i = 0; i < qr_graph_n_nodes(g); i++)
		if (strcmp(qr_graph_node(g, i)->name, name) == 0)
			return (long)i;
	return -1;
}

/* Every node runs after the producers of its inputs. */
static int
order_valid(const struct qr_graph *g)
{
	const size_t *order = qr_graph_topo_order(g);
	size_t n = qr_graph_n_nodes(g), i, j;
	size_t *pos = xcalloc(n + 1, sizeof *pos);
	int good = 1;

	for (i = 0; i < n; i++)
		pos[order[i]] = i + 1;
	for (i = 0; i < n; i++)
		if (pos[i] == 0)
			good = 0;
	for (i = 0; i < n && good; i++) {
		const struct qr_node *node = qr_graph_node(g, i);

		for (j = 0; j < node->n_in; j++) {
			long p = node->in[j][0] != '\0' ?
				 qr_graph_producer(g, node->in[j]) : -1;

			if (p >= 0 && pos[p] >= pos[i])
				good = 0;
		}
	}
	free(pos);
	return good;
}

/* The consumers of name are exactly the nodes named in want. */
static int
consumers_are(const struct qr_graph *g, const char *name, const char **want,
	      size_t n_want)
{
	size_t n, i;
	const size_t *c = qr_graph_consumers(g, name, &n);

	if (n != n_want)
		return 0;
	for (i = 0; i < n; i++)
		if ((long)c[i] != node_index(g, want[i]))
			return 0;
	return 1;
}

static void
check_order(void)
{
	static const char *want[] = {
		"n_relu", "n_sig", "n_add", "n_gt", "n_all", "n_if",
	};
	static const char *r_cons[] = {"n_add", "n_if", "n_sig"};
	static const char *s_cons[] = {"n_add", "n_if"};
	static const char *x_cons[] = {"n_relu", "n_gt"};
	struct qr_model *m = load("order.onnx");
	struct qr_graph *g = NULL;
	struct qr_diag d = {0};
	const size_t *order;
	size_t i, n;
	int same = 1;

	if (!ok(m != NULL && qr_graph_new(m, &g, &d) == QR_OK,
		"order.onnx indexes"))
		diag("%s", d.msg);
	if (g == NULL)
		goto out;
	ok(qr_graph_model(g) == m && qr_graph_n_nodes(g) == 6,
	   "index has the model's 6 nodes");
	ok(order_valid(g), "topological order is valid");
	order = qr_graph_topo_order(g);
	for (i = 0; i < 6; i++)
		if ((long)order[i] != node_index(g, want[i]))
			same = 0;
	ok(same, "order prefers file order among ready nodes, If waits for "
	   "the outer tensors its branches read");
	ok(qr_graph_producer(g, "s") == node_index(g, "n_sig") &&
	   qr_graph_producer(g, "c") == node_index(g, "n_all"),
	   "producers of node outputs");
	ok(qr_graph_producer(g, "x") == -1 && qr_graph_producer(g, "zero") == -1
	   && qr_graph_producer(g, "nope") == -1,
	   "graph input, initializer and unknown have no producer");
	ok(consumers_are(g, "r", r_cons, 3), "consumers of r include the If");
	ok(consumers_are(g, "s", s_cons, 2), "consumers of s");
	ok(consumers_are(g, "x", x_cons, 2), "consumers of x");
	ok(qr_graph_consumers(g, "z", &n) != NULL && n == 0 &&
	   qr_graph_consumers(g, "nope", &n) != NULL && n == 0,
	   "no consumers");
	ok(qr_graph_is_output(g, "z") && qr_graph_is_output(g, "y") &&
	   !qr_graph_is_output(g, "r") && !qr_graph_is_output(g, "nope"),
	   "graph outputs");
	ok(qr_graph_const(g, "zero") == &m->graph.inits[0] &&
	   qr_graph_const(g, "r") == NULL && qr_graph_const(g, "x") == NULL,
	   "initializer is constant, activations are not");
out:
	qr_graph_free(g);
	qr_onnx_free(m);
	qr_diag_clear(&d);
}

static void
check_const(void)
{
	static const char *y_cons[] = {"clip"};
	struct qr_model *m = load("const.onnx");
	const struct qr_tensor_data *t;
	struct qr_graph *g = NULL;
	struct qr_diag d = {0};
	size_t n;

	if (!ok(m != NULL && qr_graph_new(m, &g, &d) == QR_OK,
		"const.onnx indexes"))
		diag("%s", d.msg);
	if (g == NULL)
		goto out;
	ok(order_valid(g), "topological order is valid");
	t = qr_graph_const(g, "cw_id2");
	ok(t != NULL && t == qr_graph_const(g, "cw") &&
	   t == qr_graph_const(g, "cw_id") && strcmp(t->name, "cw") == 0 &&
	   t->n_elem == 6 && qr_tensor_get(t, 4) == 4.0,
	   "Constant weight found through two Identity nodes");
	t = qr_graph_const(g, "cb");
	ok(t != NULL && t->dtype == QR_DT_FLOAT && t->n_elem == 2 &&
	   qr_tensor_get(t, 0) == 0.5, "Constant value_floats is a constant");
	if (t != NULL)
		ok_near(qr_tensor_get(t, 1), -0.5, 0, "value_floats[1]");
	t = qr_graph_const(g, "ci");
	ok(t != NULL && t->dtype == QR_DT_INT64 && qr_tensor_get(t, 0) == 42,
	   "Constant value_int is a constant");
	ok(qr_graph_const(g, "clip_max") != NULL &&
	   qr_graph_const(g, "y") == NULL && qr_graph_const(g, "x") == NULL,
	   "initializer constant, Gemm output not");
	ok(consumers_are(g, "y", y_cons, 1) &&
	   qr_graph_consumers(g, "", &n) != NULL && n == 0 &&
	   qr_graph_producer(g, "") == -1,
	   "absent optional input \"\" is nobody's tensor");
	ok(qr_graph_producer(g, "cw") == 0 &&
	   qr_graph_producer(g, "cw_id2") == node_index(g, "Identity_4"),
	   "Constant and Identity produce their outputs");
out:
	qr_graph_free(g);
	qr_onnx_free(m);
	qr_diag_clear(&d);
}

/* qr_graph_new refuses file with QR_EGRAPH naming the model and names. */
static void
check_error(const char *file, const char *name1, const char *name2)
{
	struct qr_model *m = load(file);
	struct qr_graph *g = (struct qr_graph *)&g; /* must be reset */
	struct qr_diag d = {0};
	enum qr_status st = QR_OK;

	if (m != NULL)
		st = qr_graph_new(m, &g, &d);
	if (!ok(m != NULL && st == QR_EGRAPH && g == NULL &&
		d.status == QR_EGRAPH && strstr(d.msg, file) != NULL &&
		strstr(d.msg, name1) != NULL && strstr(d.msg, name2) != NULL,
		"%s: graph error naming %s and %s", file, name1, name2))
		diag("got %s: %s", qr_status_name(st), d.msg);
	else
		diag("%s", d.msg);
	qr_onnx_free(m);
	qr_diag_clear(&d);
}

/* qr_diag_take_warnings: another diag's warnings moved in at a place. */
static void
check_take_warnings(void)
{
	struct qr_diag d = {0}, w = {0};

	qr_warnf(&d, "load");
	qr_warnf(&d, "data 1");
	qr_warnf(&d, "data 2");
	qr_warnf(&w, "weights 1");
	qr_warnf(&w, "weights 2");
	w.status = QR_EGRAPH;
	qr_diag_take_warnings(&d, 1, &w);
	ok(d.n_warnings == 5 && strcmp(d.warnings[0].msg, "load") == 0 &&
	   strcmp(d.warnings[1].msg, "weights 1") == 0 &&
	   strcmp(d.warnings[2].msg, "weights 2") == 0 &&
	   strcmp(d.warnings[3].msg, "data 1") == 0 &&
	   strcmp(d.warnings[4].msg, "data 2") == 0 && w.n_warnings == 0 &&
	   w.warnings == NULL && w.status == QR_EGRAPH,
	   "take_warnings inserts in order at the given place");
	qr_warnf(&w, "late");
	qr_diag_take_warnings(&d, 99, &w);
	ok(d.n_warnings == 6 && strcmp(d.warnings[5].msg, "late") == 0,
	   "take_warnings past the end appends");
	qr_diag_take_warnings(&d, 0, &w);
	ok(d.n_warnings == 6, "nothing to take: nothing changes");
	qr_diag_clear(&d);
	qr_diag_clear(&w);
}

int
main(void)
{
	plan_no_plan();
	RUN(check_take_warnings);
	if (access(DATA "order.onnx", R_OK) != 0)
		skip_all("fixtures not found in " DATA);
	RUN(check_order);
	RUN(check_const);
	/* The cycle is loop_add -> t1 -> loop_relu -> t2 -> loop_add. */
	check_error("cycle.onnx", "'loop_", "cycle");
	check_error("undef.onnx", "'haunted'", "'ghost'");
	check_error("dup.onnx", "'second'", "'t'");
	return done();
}
