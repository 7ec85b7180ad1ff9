/*
 * test_conformance: ONNX's own operator tests (Debian's libonnx-testdata)
 * run through the executor, one TAP line per case.
 *
 * For each case folder (model.onnx + test_data_set_N/{input,output}_K.pb):
 * a case with a node qreport cannot run is a skip that names the op (and
 * counts in the skip histogram); otherwise every data set runs and each
 * output must match: integers and bools exactly, floats within
 * |got - want| <= ATOL + RTOL * |want| (NaN matches NaN, infinities must
 * agree), with ONNX's backend-test tolerances RTOL = 1e-3, ATOL = 1e-7
 * (bfloat16: RTOL = 2^-7, see RTOL_BF16). Any supported case that fails
 * fails the test.
 *
 * ONNX 1.12's generator saved bfloat16 test tensors as uint16; where the
 * model declares bfloat16 (inputs) or produces it (outputs), those bits
 * are read as bfloat16. A data set whose input contradicts the model's
 * declared shape makes the case a skip (qreport refuses such input).
 *
 * Environment: QR_TESTDATA overrides the data folder; QR_CONFORMANCE_FILTER
 * runs only cases whose name contains it; QR_CONFORMANCE_VERBOSE=1 prints
 * the first mismatching element of each failure in full.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"
#include "tap.h"

#define RTOL 1e-3
#define ATOL 1e-7
/* bfloat16 keeps 8 significant bits, so 1e-3 is below its resolution;
 * and ONNX 1.12's reference truncates float to bfloat16 where qreport
 * rounds to nearest even. One bfloat16 ulp: */
#define RTOL_BF16 (1.0 / 128)

static const char *const suites[] = {
	"node", "pytorch-converted", "pytorch-operator", "simple",
};

/* Skip reasons: op type -> cases skipped because of it. */
struct hist {
	char **op;
	size_t *count;
	size_t n;
};

static void
hist_add(struct hist *h, const char *op)
{
	size_t i;

	for (i = 0; i < h->n; i++) {
		if (strcmp(h->op[i], op) == 0) {
			h->count[i]++;
			return;
		}
	}
	h->op = xreallocarray(h->op, h->n + 1, sizeof *h->op);
	h->count = xreallocarray(h->count, h->n + 1, sizeof *h->count);
	h->op[h->n] = xstrdup(op);
	h->count[h->n++] = 1;
}

static int
is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
is_file(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Element i of t as double (float16 and bool included). */
static double
elem(const struct qr_tensor *t, size_t i)
{
	const void *p = t->data;

	switch (t->dtype) {
	case QR_DT_FLOAT: return ((const float *)p)[i];
	case QR_DT_DOUBLE: return ((const double *)p)[i];
	case QR_DT_INT8: return ((const int8_t *)p)[i];
	case QR_DT_INT16: return ((const int16_t *)p)[i];
	case QR_DT_INT32: return ((const int32_t *)p)[i];
	case QR_DT_UINT8:
	case QR_DT_BOOL: return ((const uint8_t *)p)[i];
	case QR_DT_UINT16: return ((const uint16_t *)p)[i];
	case QR_DT_UINT32: return ((const uint32_t *)p)[i];
	default: {
		/* as a qr_tensor_data, for the 16-bit floats and 64-bit ints */
		struct qr_tensor_data td = {0};

		td.dtype = t->dtype;
		td.n_elem = t->n_elem;
		td.data = t->data;
		return qr_tensor_get(&td, i);
	}
	}
}

static int
is_float(int dt)
{
	return dt == QR_DT_FLOAT || dt == QR_DT_DOUBLE ||
	       dt == QR_DT_FLOAT16 || dt == QR_DT_BFLOAT16;
}

/* Compare got with want; on mismatch write why into msg. */
static int
same(const struct qr_tensor *got, const struct qr_tensor *want, char *msg,
     size_t n)
{
	char a[128], b[128];
	size_t i;

	if (got == NULL) {
		snprintf(msg, n, "output missing");
		return 0;
	}
	if (got->dtype != want->dtype) {
		snprintf(msg, n, "dtype %s, want %s", qr_dtype_name(got->dtype),
			 qr_dtype_name(want->dtype));
		return 0;
	}
	if (got->ndim != want->ndim ||
	    memcmp(got->dims, want->dims, (size_t)got->ndim *
		   sizeof *got->dims) != 0) {
		snprintf(msg, n, "shape %s, want %s",
			 qr_shape_str(got, a, sizeof a),
			 qr_shape_str(want, b, sizeof b));
		return 0;
	}
	for (i = 0; i < want->n_elem; i++) {
		int ok;

		if (got->dtype == QR_DT_INT64 || got->dtype == QR_DT_UINT64) {
			ok = memcmp((const char *)got->data + 8 * i,
				    (const char *)want->data + 8 * i, 8) == 0;
		} else {
			double g = elem(got, i), w = elem(want, i);

			if (!is_float(got->dtype))
				ok = g == w;
			else if (isnan(w) || isnan(g))
				ok = isnan(w) && isnan(g);
			else if (isinf(w) || isinf(g))
				ok = g == w;
			else
				ok = fabs(g - w) <= ATOL + (got->dtype ==
					QR_DT_BFLOAT16 ? RTOL_BF16 : RTOL) *
					fabs(w);
		}
		if (!ok) {
			snprintf(msg, n, "element %zu: got %.9g, want %.9g", i,
				 elem(got, i), elem(want, i));
			return 0;
		}
	}
	return 1;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entries of dir starting with prefix (heap strings). */
static char **
list_dir(const char *dir, const char *prefix, size_t *n)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	char **v = NULL;

	*n = 0;
	if (dp == NULL)
		return NULL;
	while ((de = readdir(dp)) != NULL) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = xstrdup(de->d_name);
	}
	closedir(dp);
	if (*n > 1)
		qsort(v, *n, sizeof *v, cmp_str);
	return v;
}

static void
free_list(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Read prefix_0.pb, prefix_1.pb, ... of a data set (numeric order). */
static struct qr_tensor **
read_pbs(const char *set, const char *prefix, size_t *n, struct qr_diag *d)
{
	struct qr_tensor **v = NULL;
	size_t k;

	*n = 0;
	for (k = 0;; k++) {
		char name[64];
		char *p;
		struct qr_tensor *t;

		snprintf(name, sizeof name, "%s_%zu.pb", prefix, k);
		p = qr_path_join(set, name);
		if (!is_file(p)) {
			free(p);
			break;
		}
		if (qr_pb_read(p, NULL, &t, d) != QR_OK) {
			free(p);
			break;
		}
		free(p);
		v = xreallocarray(v, *n + 1, sizeof *v);
		v[(*n)++] = t;
	}
	return v;
}

static void
free_tensors(struct qr_tensor **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		qr_tensor_free(v[i]);
	free(v);
}

enum verdict { V_PASS, V_FAIL, V_SKIP };

/* 1 when t's rank or a fixed dim contradicts input name's declaration
 * (a few ONNX 1.12 cases ship such data; qreport refuses it, as ONNX
 * Runtime does). */
static int
contradicts(const struct qr_model *m, const char *name,
	    const struct qr_tensor *t)
{
	size_t i;
	int k;

	for (i = 0; i < m->graph.n_input; i++) {
		const struct qr_value_info *vi = &m->graph.inputs[i];

		if (strcmp(vi->name, name) != 0 || vi->ndim < 0)
			continue;
		if (vi->ndim != t->ndim)
			return 1;
		for (k = 0; k < vi->ndim; k++)
			if (vi->dims[k].value >= 0 &&
			    vi->dims[k].value != t->dims[k])
				return 1;
	}
	return 0;
}

/* The dtype a graph input is declared with. */
static int
declared_dtype(const struct qr_model *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->graph.n_input; i++)
		if (strcmp(m->graph.inputs[i].name, name) == 0)
			return m->graph.inputs[i].dtype;
	return QR_DT_UNDEFINED;
}

/* Run one case; *why says what failed or which op was missing. */
static enum verdict
run_case(const char *dir, char *why, size_t n_why, struct hist *h)
{
	char *model_path = qr_path_join(dir, "model.onnx");
	struct qr_model *m = NULL;
	struct qr_exec *e = NULL;
	struct qr_unsupported *u = NULL;
	struct qr_diag d = {0};
	enum verdict v = V_PASS;
	char **sets = NULL;
	size_t n_u = 0, n_sets = 0, s;

	if (qr_onnx_load(model_path, &m, &d) != QR_OK) {
		snprintf(why, n_why, "load: %s", d.msg);
		v = d.status == QR_EUNSUPPORTED ? V_SKIP : V_FAIL;
		if (v == V_SKIP)
			hist_add(h, "(loader)");
		goto out;
	}
	if (qr_exec_unsupported(m, &u, &n_u, &d) != QR_OK) {
		snprintf(why, n_why, "%s", d.msg);
		v = V_FAIL;
		goto out;
	}
	if (n_u > 0 && u[0].node == NULL) {
		snprintf(why, n_why, "graph input '%s' %s", u[0].input,
			 u[0].why);
		hist_add(h, "(non-tensor graph input)");
		v = V_SKIP;
		goto out;
	}
	if (n_u > 0) {
		const struct qr_node *n = u[0].node;
		char op[128];

		snprintf(op, sizeof op, "%s%s%s", n->domain,
			 n->domain[0] ? "." : "", n->op_type);
		snprintf(why, n_why, "unsupported op %s (opset %d)%s%s", op,
			 u[0].opset, u[0].why ? ": " : "",
			 u[0].why ? u[0].why : "");
		hist_add(h, op);
		v = V_SKIP;
		goto out;
	}
	if (qr_exec_new(m, NULL, &e, &d) != QR_OK) {
		snprintf(why, n_why, "%s", d.msg);
		v = V_FAIL;
		goto out;
	}
	sets = list_dir(dir, "test_data_set_", &n_sets);
	for (s = 0; s < n_sets && v == V_PASS; s++) {
		char *set = qr_path_join(dir, sets[s]);
		struct qr_tensor **ins, **wants;
		struct qr_tensor *const *outs;
		const char *const *names;
		size_t n_in, n_want, n_names, n_out, k;

		ins = read_pbs(set, "input", &n_in, &d);
		wants = read_pbs(set, "output", &n_want, &d);
		names = qr_exec_inputs(e, &n_names);
		if (d.status != QR_OK) {
			snprintf(why, n_why, "%s: %s", sets[s], d.msg);
			v = V_FAIL;
		} else if (n_in != n_names) {
			snprintf(why, n_why, "%s: %zu input files for %zu "
				 "graph inputs", sets[s], n_in, n_names);
			v = V_FAIL;
		}
		for (k = 0; v == V_PASS && k < n_in; k++) {
			ins[k]->name = names[k];
			if (ins[k]->dtype == QR_DT_UINT16 &&
			    declared_dtype(m, names[k]) == QR_DT_BFLOAT16)
				ins[k]->dtype = QR_DT_BFLOAT16;
			if (contradicts(m, names[k], ins[k])) {
				snprintf(why, n_why, "%s: input '%s' "
					 "contradicts the model's declared "
					 "shape", sets[s], names[k]);
				hist_add(h, "(test data contradicts model)");
				v = V_SKIP;
			}
		}
		if (v == V_PASS &&
		    qr_exec_run(e, ins, n_in, NULL, NULL, &d) != QR_OK) {
			snprintf(why, n_why, "%s: %s", sets[s], d.msg);
			v = V_FAIL;
		}
		if (v == V_PASS) {
			outs = qr_exec_outputs(e, &n_out);
			if (n_out != n_want) {
				snprintf(why, n_why, "%s: %zu outputs, %zu "
					 "expected", sets[s], n_out, n_want);
				v = V_FAIL;
			}
			for (k = 0; v == V_PASS && k < n_want; k++) {
				char msg[256];

				if (wants[k]->dtype == QR_DT_UINT16 &&
				    outs[k] != NULL &&
				    outs[k]->dtype == QR_DT_BFLOAT16)
					wants[k]->dtype = QR_DT_BFLOAT16;

				if (!same(outs[k], wants[k], msg,
					  sizeof msg)) {
					snprintf(why, n_why, "%s: output %zu "
						 "'%s': %s", sets[s], k,
						 m->graph.outputs[k].name,
						 msg);
					v = V_FAIL;
				}
			}
		}
		free_tensors(ins, n_in);
		free_tensors(wants, n_want);
		free(set);
	}
out:
	free_list(sets, n_sets);
	qr_unsupported_free(u, n_u);
	qr_exec_free(e);
	qr_onnx_free(m);
	qr_diag_clear(&d);
	free(model_path);
	return v;
}

int
main(void)
{
	const char *root = getenv("QR_TESTDATA");
	const char *filter = getenv("QR_CONFORMANCE_FILTER");
	size_t pass = 0, fail = 0, skip = 0, i, j, k;
	struct hist h = {0};
	int found = 0;
	double t0 = qr_now();

	plan_no_plan();
	if (root == NULL)
		root = "/usr/share/libonnx-testdata/data";
	for (i = 0; i < sizeof suites / sizeof suites[0]; i++) {
		char *p = qr_path_join(root, suites[i]);

		found |= is_dir(p);
		free(p);
	}
	if (!found)
		skip_all("ONNX test data not found (apt-get install "
			 "libonnx-testdata, or set QR_TESTDATA)");
	for (i = 0; i < sizeof suites / sizeof suites[0]; i++) {
		char *sdir = qr_path_join(root, suites[i]);
		size_t n_cases;
		char **cases = list_dir(sdir, "", &n_cases);

		for (j = 0; j < n_cases; j++) {
			char *dir, *mp, why[2048] = "";
			char name[512];
			enum verdict v;

			if (cases[j][0] == '.')
				continue;
			snprintf(name, sizeof name, "%s/%s", suites[i],
				 cases[j]);
			if (filter != NULL && strstr(name, filter) == NULL)
				continue;
			dir = qr_path_join(sdir, cases[j]);
			mp = qr_path_join(dir, "model.onnx");
			if (!is_file(mp)) {
				free(mp);
				free(dir);
				continue;
			}
			free(mp);
			v = run_case(dir, why, sizeof why, &h);
			free(dir);
			switch (v) {
			case V_PASS:
				ok(1, "%s", name);
				pass++;
				break;
			case V_SKIP:
				/* '#' would end the directive early */
				for (k = 0; why[k]; k++)
					if (why[k] == '#')
						why[k] = '_';
				ok(1, "%s # SKIP %s", name, why);
				skip++;
				break;
			case V_FAIL:
				ok(0, "%s", name);
				diag("  %s", why);
				fail++;
				break;
			}
		}
		free_list(cases, n_cases);
		free(sdir);
	}
	diag("conformance: %zu passed, %zu failed, %zu skipped (%zu cases, "
	     "%.1f s; rtol %g, atol %g)", pass, fail, skip,
	     pass + fail + skip, qr_now() - t0, RTOL, ATOL);
	/* Skip histogram, most frequent first. */
	for (;;) {
		size_t best = (size_t)-1;

		for (k = 0; k < h.n; k++)
			if (h.count[k] > 0 &&
			    (best == (size_t)-1 || h.count[k] > h.count[best]))
				best = k;
		if (best == (size_t)-1)
			break;
		diag("  skipped %4zu  %s", h.count[best], h.op[best]);
		h.count[best] = 0;
	}
	for (k = 0; k < h.n; k++)
		free(h.op[k]);
	free(h.op);
	free(h.count);
	return done();
}
