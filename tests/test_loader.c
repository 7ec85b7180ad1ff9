/*
 * test_loader: load every model.onnx and test_data_set_N/input_N.pb of
 * ONNX's own test data (Debian's libonnx-testdata). Each model must load,
 * or be refused cleanly with a status and a message naming the file; each
 * loaded model must also index (qr_graph_new). A few known values are
 * checked exactly.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/graph.h"
#include "onnx/onnx.h"
#include "tap.h"
#include "util/util.h"

#ifndef QR_TESTDATA
#define QR_TESTDATA "/usr/share/libonnx-testdata/data"
#endif

static const char *suites[] = {
	"node", "pytorch-converted", "pytorch-operator", "simple", "real",
};

static size_t n_loaded, n_refused, n_pb, n_pb_refused, n_graph_fail;
static size_t n_by_status[QR_ETHRESHOLD + 1];

/* Sorted entries of dir (heap), so the TAP output is stable. */
static char **
list_dir(const char *dir, size_t *n)
{
	struct dirent **ents;
	char **names;
	int i, k;

	*n = 0;
	k = scandir(dir, &ents, NULL, alphasort);
	if (k < 0)
		return NULL;
	names = xcalloc((size_t)k + 1, sizeof *names);
	for (i = 0; i < k; i++) {
		if (ents[i]->d_name[0] != '.')
			names[(*n)++] = xstrdup(ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	return names;
}

static void
free_list(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* A refusal is clean when it has a loader status and names the file. */
static int
clean_refusal(enum qr_status st, const struct qr_diag *d, const char *path)
{
	return (st == QR_EFORMAT || st == QR_EUNSUPPORTED || st == QR_ESHAPE ||
		st == QR_EIO) && d->status == st &&
	       strstr(d->msg, path) != NULL && strchr(d->msg, '\n') == NULL;
}

/* The index-th graph input that is not an initializer, or NULL. */
static const struct qr_value_info *
runtime_input(const struct qr_model *m, size_t index)
{
	const struct qr_graph_data *g = &m->graph;
	size_t i, j, k = 0;

	for (i = 0; i < g->n_input; i++) {
		int is_init = 0;

		for (j = 0; j < g->n_init; j++)
			if (strcmp(g->inits[j].name, g->inputs[i].name) == 0)
				is_init = 1;
		if (is_init)
			continue;
		if (k++ == index)
			return &g->inputs[i];
	}
	return NULL;
}

/* Load the input_*.pb files of one test_data_set folder. */
static void
check_pbs(const char *dir, const struct qr_model *m, const char *label)
{
	size_t n, i;
	char **names = list_dir(dir, &n);

	for (i = 0; i < n; i++) {
		struct qr_diag d = {0};
		struct qr_arena a = {0};
		struct qr_tensor_data t;
		const struct qr_value_info *vi;
		struct qr_map map;
		enum qr_status st;
		char *path;
		int idx, good;

		if (sscanf(names[i], "input_%d.pb", &idx) != 1)
			continue;
		path = qr_path_join(dir, names[i]);
		st = qr_map_file(path, &map, &d);
		if (st == QR_OK)
			st = qr_onnx_load_tensor_pb(map.data, map.size, path, &a,
						    &t, &d);
		n_pb++;
		vi = m != NULL ? runtime_input(m, (size_t)idx) : NULL;
		if (st == QR_OK) {
			/* dtype and rank agree with the declared input, except
			 * in the BFLOAT16 cast cases, whose .pb files (ONNX
			 * 1.12) hold bfloat16 as uint16 and "like" inputs of
			 * another rank. */
			good = vi == NULL || vi->dtype == QR_DT_UNDEFINED ||
			       strstr(label, "BFLOAT16") != NULL ||
			       (vi->dtype == t.dtype &&
				(vi->ndim < 0 || vi->ndim == t.ndim));
			if (!ok(good, "%s/%s: dtype %s rank %d", label,
				names[i], qr_dtype_name(t.dtype), t.ndim))
				diag("declared dtype %s rank %d",
				     qr_dtype_name(vi->dtype), vi->ndim);
		} else {
			/* Sequence/optional inputs are not TensorProtos. */
			n_pb_refused++;
			good = clean_refusal(st, &d, path) &&
			       (vi == NULL || vi->dtype == QR_DT_UNDEFINED);
			if (!ok(good, "%s/%s refused cleanly", label, names[i]))
				diag("%s: %s", qr_status_name(st), d.msg);
		}
		qr_unmap(&map);
		qr_arena_free(&a);
		qr_diag_clear(&d);
		free(path);
	}
	free_list(names, n);
}

static void
check_case(const char *suite, const char *dir, const char *name)
{
	char *path = qr_path_join(dir, "model.onnx");
	char *label = xasprintf("%s/%s", suite, name);
	struct qr_model *m = NULL;
	struct qr_graph *g = NULL;
	struct qr_diag d = {0};
	enum qr_status st;
	char **sets;
	size_t n_sets, i;
	struct stat sb;

	if (stat(path, &sb) != 0)
		goto out;
	st = qr_onnx_load(path, &m, &d);
	n_by_status[st]++;
	if (st == QR_OK) {
		n_loaded++;
		ok(m != NULL && m->graph.n_node > 0, "%s loads (%zu nodes)",
		   label, m != NULL ? m->graph.n_node : 0);
		st = qr_graph_new(m, &g, &d);
		if (st != QR_OK)
			n_graph_fail++;
		if (!ok(st == QR_OK && g != NULL, "%s indexes", label))
			diag("%s: %s", qr_status_name(st), d.msg);
	} else {
		n_refused++;
		ok(clean_refusal(st, &d, path), "%s refused cleanly", label);
		diag("%s refused (%s): %s", label, qr_status_name(st), d.msg);
	}
	sets = list_dir(dir, &n_sets);
	for (i = 0; i < n_sets; i++) {
		if (strncmp(sets[i], "test_data_set_", 14) == 0) {
			char *sd = qr_path_join(dir, sets[i]);
			char *sl = xasprintf("%s/%s", label, sets[i]);

			check_pbs(sd, m, sl);
			free(sd);
			free(sl);
		}
	}
	free_list(sets, n_sets);
out:
	qr_graph_free(g);
	qr_onnx_free(m);
	qr_diag_clear(&d);
	free(path);
	free(label);
}

static struct qr_model *
load(const char *rel)
{
	char *path = qr_path_join(QR_TESTDATA, rel);
	struct qr_model *m = NULL;
	struct qr_diag d = {0};

	if (qr_onnx_load(path, &m, &d) != QR_OK)
		diag("%s: %s", rel, d.msg);
	free(path);
	return m;
}

static const struct qr_tensor_data *
find_init(const struct qr_model *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->graph.n_init; i++)
		if (strcmp(m->graph.inits[i].name, name) == 0)
			return &m->graph.inits[i];
	return NULL;
}

/* Values read with python3-onnx when the test was written. */
static void
check_known(void)
{
	const struct qr_tensor_data *t;
	const struct qr_value_info *vi;
	const struct qr_attr *a;
	struct qr_model *m;
	float f[4];

	m = load("node/test_conv_with_strides_padding/model.onnx");
	ok(m != NULL, "conv_with_strides_padding loads");
	if (m != NULL) {
		vi = &m->graph.inputs[1];
		ok(m->ir_version == 6 && qr_model_opset(m, "") == 11 &&
		   qr_model_opset(m, "ai.onnx") == 11 &&
		   qr_model_opset(m, "com.microsoft") == 0,
		   "conv: ir 6, opset 11");
		ok(strcmp(vi->name, "W") == 0 && vi->ndim == 4 &&
		   vi->dims[0].value == 1 && vi->dims[2].value == 3 &&
		   vi->dims[3].value == 3 && vi->dtype == QR_DT_FLOAT,
		   "conv: input W is float [1,1,3,3]");
		ok(strcmp(m->graph.nodes[0].name, "Conv_0") == 0 &&
		   strcmp(m->graph.nodes[0].op_type, "Conv") == 0,
		   "conv: unnamed node gets 'Conv_0'");
		a = qr_node_attr(&m->graph.nodes[0], "strides");
		ok(a != NULL && a->type == QR_ATTR_INTS && a->n == 2 &&
		   a->ints[0] == 2 && a->ints[1] == 2, "conv: strides [2,2]");
		ok(qr_node_attr(&m->graph.nodes[0], "nope") == NULL &&
		   qr_node_attr_int(&m->graph.nodes[0], "group", 1) == 1,
		   "conv: absent attributes give defaults");
		ok(strcmp(m->producer_name, "backend-test") == 0,
		   "conv: producer name");
	}
	qr_onnx_free(m);

	m = load("pytorch-converted/test_Conv2d/model.onnx");
	t = m != NULL ? find_init(m, "1") : NULL;
	ok(t != NULL && t->dtype == QR_DT_FLOAT && t->ndim == 4 &&
	   t->dims[0] == 4 && t->dims[1] == 3 && t->dims[2] == 3 &&
	   t->dims[3] == 2 && t->n_elem == 72 && t->nbytes == 288 &&
	   !t->external, "Conv2d: weight '1' is float [4,3,3,2]");
	if (t != NULL) {
		ok_near(qr_tensor_get(t, 0), -0.1429409235715866, 1e-7,
			"Conv2d: weight[0]");
		ok_near(qr_tensor_get(t, 2), -0.0018995553255081177, 1e-9,
			"Conv2d: weight[2]");
	}
	t = m != NULL ? find_init(m, "2") : NULL;
	ok(t != NULL && qr_tensor_to_f32(t, f, NULL) == QR_OK,
	   "Conv2d: bias converts to float");
	if (t != NULL)
		ok_near(f[3], 0.18244947493076324, 1e-7, "Conv2d: bias[3]");
	ok(m != NULL && m->ir_version == 3 && qr_model_opset(m, "") == 6,
	   "Conv2d: ir 3, opset 6");
	qr_onnx_free(m);

	m = load("node/test_constant/model.onnx");
	t = m != NULL ? qr_node_const_value(&m->graph.nodes[0]) : NULL;
	ok(t != NULL && t->ndim == 2 && t->dims[0] == 5 && t->dims[1] == 5 &&
	   strcmp(t->name, "values") == 0,
	   "test_constant: value is [5,5] named after the output");
	if (t != NULL)
		ok_near(qr_tensor_get(t, 1), 0.40015721321105957, 1e-7,
			"test_constant: value[1]");
	qr_onnx_free(m);

	m = load("node/test_if/model.onnx");
	a = m != NULL ? qr_node_attr(&m->graph.nodes[0], "then_branch") : NULL;
	ok(a != NULL && a->type == QR_ATTR_GRAPH && a->g != NULL &&
	   a->g->n_node >= 1 && a->g->n_output == 1,
	   "test_if: then_branch is loaded as a subgraph");
	qr_onnx_free(m);
}

int
main(void)
{
	struct stat sb;
	size_t i, j, n;

	plan_no_plan();
	if (stat(QR_TESTDATA, &sb) != 0 || !S_ISDIR(sb.st_mode))
		skip_all("libonnx-testdata not installed");
	RUN(check_known);
	for (i = 0; i < sizeof suites / sizeof *suites; i++) {
		char *sdir = qr_path_join(QR_TESTDATA, suites[i]);
		char **cases = list_dir(sdir, &n);

		for (j = 0; j < n; j++) {
			char *cdir = qr_path_join(sdir, cases[j]);

			check_case(suites[i], cdir, cases[j]);
			free(cdir);
		}
		free_list(cases, n);
		free(sdir);
	}
	diag("models: loaded %zu, refused %zu (format %zu, unsupported %zu, "
	     "shape %zu, io %zu); graph index failures %zu",
	     n_loaded, n_refused, n_by_status[QR_EFORMAT],
	     n_by_status[QR_EUNSUPPORTED], n_by_status[QR_ESHAPE],
	     n_by_status[QR_EIO], n_graph_fail);
	diag("input .pb: loaded %zu, refused %zu", n_pb - n_pb_refused,
	     n_pb_refused);
	/* Counts with Debian 12's libonnx-testdata 1.12; they only go up. */
	ok(n_loaded >= 1072, "libonnx-testdata models loaded: %zu (>= 1072)",
	   n_loaded);
	ok(n_pb - n_pb_refused >= 1913,
	   "input .pb files loaded: %zu (>= 1913)", n_pb - n_pb_refused);
	return done();
}
