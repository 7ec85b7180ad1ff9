/*
 * test_llm_ops: the com.microsoft ops of int4 LLM decoders
 * (GroupQueryAttention, RotaryEmbedding, GatherBlockQuantized,
 * MultiHeadAttention) against outputs recorded from onnxruntime-node.
 *
 * The fixtures (tests/data/make_llm_op_fixtures.py) are single-node
 * models in ONNX's node-test layout under tests/data/llm-ops/, listed in
 * cases.txt with their bound: "exact" (every output bit for bit: same
 * bits, NaN where ONNX Runtime has NaN) or a relative L2 error
 * ||got - want|| / ||want|| per output. Every case must load and run:
 * the ops are supported, so a refusal fails. Each TAP line gives the
 * largest absolute difference and the relative L2 error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"
#include "tap.h"

/* How one output compares: largest |got - want|, relative L2 error,
 * count of differing bit patterns. */
struct diff {
	double max_abs, rel_l2;
	size_t n_bits;
};

/* got against want (same dtype and shape checked by the caller); floats
 * by value, other dtypes by bytes. */
static void
compare(const struct qr_tensor *got, const struct qr_tensor *want,
	struct diff *df)
{
	size_t es = qr_dtype_size(want->dtype), i;
	double num = 0.0, den = 0.0;

	memset(df, 0, sizeof *df);
	for (i = 0; i < want->n_elem; i++) {
		const char *g = (const char *)got->data + i * es;
		const char *w = (const char *)want->data + i * es;

		if (memcmp(g, w, es) != 0)
			df->n_bits++;
		if (want->dtype == QR_DT_FLOAT) {
			float a, b;

			memcpy(&a, g, sizeof a);
			memcpy(&b, w, sizeof b);
			if (isnan(a) || isnan(b)) {
				if (!(isnan(a) && isnan(b)))
					df->max_abs = INFINITY;
				continue;
			}
			if (fabs((double)a - b) > df->max_abs)
				df->max_abs = fabs((double)a - b);
			num += ((double)a - b) * ((double)a - b);
			den += (double)b * b;
		}
	}
	df->rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Input or output k of the data set in dir (NULL when absent). */
static struct qr_tensor *
read_pb(const char *dir, const char *what, size_t k, struct qr_diag *d)
{
	char name[64], *p;
	struct qr_tensor *t = NULL;
	FILE *f;

	snprintf(name, sizeof name, "test_data_set_0/%s_%zu.pb", what, k);
	p = qr_path_join(dir, name);
	f = fopen(p, "rb");
	if (f != NULL) {
		fclose(f);
		if (qr_pb_read(p, NULL, &t, d) != QR_OK)
			t = NULL;
	}
	free(p);
	return t;
}

/* Run one case; 1 when every output is within tol (tol < 0: exact). */
static int
run_case(const char *dir, const char *name, double tol)
{
	char *mp = qr_path_join(dir, "model.onnx");
	struct qr_model *m = NULL;
	struct qr_exec *e = NULL;
	struct qr_diag d = {0};
	struct qr_tensor *ins[16] = {0}, *want;
	struct qr_tensor *const *outs;
	const char *const *names;
	size_t n_in = 0, n_names, n_out, k;
	int good = 1;

	if (qr_onnx_load(mp, &m, &d) != QR_OK ||
	    qr_exec_new(m, NULL, &e, &d) != QR_OK) {
		ok(0, "%s: %s", name, d.msg);
		good = 0;
		goto out;
	}
	names = qr_exec_inputs(e, &n_names);
	while (n_in < 16 && (ins[n_in] = read_pb(dir, "input", n_in, &d)) !=
				    NULL) {
		ins[n_in]->name = n_in < n_names ? names[n_in] : "";
		n_in++;
	}
	if (n_in != n_names ||
	    qr_exec_run(e, ins, n_in, NULL, NULL, &d) != QR_OK) {
		ok(0, "%s: %zu inputs for %zu: %s", name, n_in, n_names, d.msg);
		good = 0;
		goto out;
	}
	outs = qr_exec_outputs(e, &n_out);
	for (k = 0; k < n_out; k++) {
		struct diff df;
		char s1[128], s2[128];
		int same;

		want = read_pb(dir, "output", k, &d);
		if (want == NULL) {
			ok(0, "%s: no expected output %zu", name, k);
			good = 0;
			continue;
		}
		same = outs[k] != NULL && outs[k]->dtype == want->dtype &&
		       outs[k]->ndim == want->ndim &&
		       memcmp(outs[k]->dims, want->dims,
			      (size_t)want->ndim * sizeof *want->dims) == 0;
		if (!same) {
			ok(0, "%s output %zu: %s, want %s", name, k,
			   outs[k] ? qr_shape_str(outs[k], s1, sizeof s1) : "-",
			   qr_shape_str(want, s2, sizeof s2));
			good = 0;
			qr_tensor_free(want);
			continue;
		}
		compare(outs[k], want, &df);
		same = tol < 0 ? df.n_bits == 0 : df.rel_l2 <= tol &&
						   !isinf(df.max_abs);
		good &= ok(same, "%s output %zu '%s' %s: %zu of %zu values "
			   "differ, max abs %.3g, relative L2 %.3g (%s)", name,
			   k, m->graph.outputs[k].name,
			   qr_shape_str(want, s1, sizeof s1), df.n_bits,
			   want->n_elem, df.max_abs, df.rel_l2,
			   tol < 0 ? "exact" : "bound");
		qr_tensor_free(want);
	}
out:
	for (k = 0; k < n_in; k++)
		qr_tensor_free(ins[k]);
	qr_exec_free(e);
	qr_onnx_free(m);
	qr_diag_clear(&d);
	free(mp);
	return good;
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	const char *filter = getenv("QR_LLM_FILTER");
	char *root, *list, line[256];
	FILE *f;
	int n = 0;

	plan_no_plan();
	if (top == NULL)
		skip_all("top_srcdir must be set (run by make check)");
	root = qr_path_join(top, "tests/data/llm-ops");
	list = qr_path_join(root, "cases.txt");
	f = fopen(list, "r");
	if (f == NULL) {
		ok(0, "cannot read %s", list);
		free(list);
		free(root);
		return done();
	}
	while (fgets(line, sizeof line, f) != NULL) {
		char name[128], tol[32], *dir;

		if (sscanf(line, "%127s %31s", name, tol) != 2)
			continue;
		if (filter != NULL && strstr(name, filter) == NULL)
			continue;
		dir = qr_path_join(root, name);
		run_case(dir, name, strcmp(tol, "exact") == 0 ? -1.0 :
							     atof(tol));
		free(dir);
		n++;
	}
	fclose(f);
	ok(filter != NULL || n >= 50, "%d cases run", n);
	free(list);
	free(root);
	return done();
}
