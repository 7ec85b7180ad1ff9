/*
 * test_hazards: dead weight channels and the hazards, on the hand-made
 * models of tests/data/hazards/ (tests/data/make_hazard_fixtures.py),
 * where the answer is known: a dead channel is counted apart and does
 * not raise the relative range; each hazard fires on the candidate made
 * to have it and on no other, and the clean QDQ candidate, which has the
 * same structures without the conditions, has none. The maths on literal
 * arrays, qr_analysis_new through the library, the rest through the
 * binary (report.json, summary.md and the pages' links).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "tap.h"
#include "analysis/analysis.h"
#include "onnx/onnx.h"
#include "util/util.h"

static const char *qreport; /* the binary under test */
static char *data;          /* tests/data/hazards/ */
static char tmpdir[] = "/tmp/qr-hazards-XXXXXX";

#define RUN_SECONDS 120     /* a report of the fixtures takes ~1 s */

/* ---- helpers ---- */

static char *
fixture(const char *name)
{
	return qr_path_join(data, name);
}

/* qr_analysis_new of names[0] (the float model) against names[1..n),
 * the models freed before returning (the result borrows nothing); NULL
 * on failure. */
static struct qr_analysis *
analyse(const char *const *names, size_t n)
{
	struct qr_model *m[4] = { NULL };
	struct qr_analysis *a = NULL;
	struct qr_diag d = { 0 };
	size_t i;
	int good = n >= 1 && n <= 4;

	for (i = 0; good && i < n; i++) {
		char *path = fixture(names[i]);

		good = qr_onnx_load(path, &m[i], &d) == QR_OK;
		free(path);
	}
	if (!good || qr_analysis_new(m[0], (const struct qr_model *const *)
				     m + 1, n - 1, NULL, &a, &d) != QR_OK)
		diag("%s", d.msg);
	for (i = 0; i < 4; i++)
		qr_onnx_free(m[i]);
	qr_diag_clear(&d);
	return a;
}

/* Run argv (argv[0] the binary, NULL-ended) with its output discarded
 * and a time limit of RUN_SECONDS; its exit code, -1 for a signal (a
 * hang ends in SIGALRM). */
static int
run(char *const *argv)
{
	int status, fd;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		dup2(fd, 2);
		alarm(RUN_SECONDS); /* kept across exec */
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* qreport --float F --quant Q... [extra] -o OUT --quiet, 8 random
 * samples; returns the exit code (run), *json the parsed report.json (or
 * NULL). */
static int
report(const char *out, const char *flt, const char *const *quants,
       size_t nq, const char *extra, cJSON **json)
{
	char *args[42], *paths[20], *jpath, *text = NULL;
	size_t n = 0, i, len;
	int rc;

	args[n++] = (char *)qreport;
	paths[0] = fixture(flt);
	args[n++] = "--float";
	args[n++] = paths[0];
	for (i = 0; i < nq; i++) {
		paths[i + 1] = fixture(quants[i]);
		args[n++] = "--quant";
		args[n++] = paths[i + 1];
	}
	args[n++] = "--samples";
	args[n++] = "8";
	if (extra != NULL)
		args[n++] = (char *)extra;
	args[n++] = "-o";
	args[n++] = (char *)out;
	args[n++] = "--quiet";
	args[n] = NULL;
	rc = run(args);
	for (i = 0; i <= nq; i++)
		free(paths[i]);
	jpath = qr_path_join(out, "report.json");
	*json = NULL;
	if (qr_read_file(jpath, &text, &len, NULL) == QR_OK)
		*json = cJSON_ParseWithLength(text, len);
	free(text);
	free(jpath);
	return rc;
}

static const char *
str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static double
num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The n-th hazard of candidate k with kind (NULL: any kind), or NULL. */
static const cJSON *
hazard(const cJSON *j, int k, const char *kind, int n)
{
	const cJSON *h;

	cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(j, "hazards"))
		if ((int)num(h, "quant") == k &&
		    (kind == NULL || strcmp(str(h, "kind"), kind) == 0) &&
		    n-- == 0)
			return h;
	return NULL;
}

static int
count(const cJSON *j, int k, const char *kind)
{
	int n = 0;

	while (hazard(j, k, kind, n) != NULL)
		n++;
	return n;
}

/* Item i of hazard h: its name and its float layer ("" for null). */
static const cJSON *
item(const cJSON *h, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(h, "items"),
				  i);
}

static double
hnum(const cJSON *h, const char *key)
{
	return num(cJSON_GetObjectItemCaseSensitive(h, "numbers"), key);
}

/* 1 when every href="layers/..." in the overview's Hazards section
 * names a file of the report, and there is at least one. */
static int
hazard_links_resolve(const char *out, int *n_links)
{
	char *path = qr_path_join(out, "index.html"), *html = NULL;
	const char *p, *end;
	size_t len;
	int good = 1;

	*n_links = 0;
	if (qr_read_file(path, &html, &len, NULL) != QR_OK) {
		free(path);
		return 0;
	}
	p = strstr(html, "<h2 id=\"hazards\">");
	end = p ? strstr(p, "<h2>Headline charts</h2>") : NULL;
	while (p != NULL && end != NULL &&
	       (p = strstr(p, "href=\"")) != NULL && p < end) {
		const char *q = strchr(p + 6, '"');
		char *rel = xasprintf("%.*s", (int)(q - p - 6), p + 6), *f;
		char *hash = strchr(rel, '#');
		struct stat sb;

		if (hash != NULL)
			*hash = '\0';
		f = qr_path_join(out, rel);
		if (stat(f, &sb) != 0) {
			diag("hazard link %s does not resolve", rel);
			good = 0;
		}
		*n_links += strncmp(rel, "layers/", 7) == 0;
		free(f);
		free(rel);
		p = q;
	}
	free(html);
	free(path);
	return good && p != NULL && end != NULL;
}

static int
file_has(const char *out, const char *name, const char *needle)
{
	char *path = qr_path_join(out, name), *text = NULL;
	size_t len;
	int yes;

	yes = qr_read_file(path, &text, &len, NULL) == QR_OK &&
	      strstr(text, needle) != NULL;
	free(text);
	free(path);
	return yes;
}

/* ---- dead channels ---- */

static void
test_dead_maths(void)
{
	/* ranges 2, 2e-30, 4, 0: median 1, threshold 1e-3 */
	const float mn[4] = { -1, -1e-30f, -2, 0 }, mx[4] = { 1, 1e-30f, 2, 0 };
	unsigned char dead[5];
	float rel[4];
	size_t n = qr_dead_channels(mn, mx, 4, dead);
	double m = qr_rel_range(mn, mx, 4, rel);

	ok(n == 2 && !dead[0] && dead[1] && !dead[2] && dead[3],
	   "dead channels: range 2e-30 and 0 (of 2, 2e-30, 4, 0)");
	ok(m == 2 && rel[0] == 1 && rel[1] == 0 && rel[2] == 2 && rel[3] == 0,
	   "relative range over live channels only: 1, 0, 2, 0 (max %g)", m);
	{
		/* 1e-3 of the median is the line: 0.0011 lives, 0.0009 not */
		const float a[5] = { 0, 0, 0, 0, 0 };
		const float b[5] = { 1, 1, 1, 0.0011f, 0.0009f };

		n = qr_dead_channels(a, b, 5, dead);
		ok(n == 1 && !dead[3] && dead[4],
		   "threshold at 1e-3 of the median range");
	}
}

static void
test_dead_analysis(void)
{
	static const char *const names[] = { "dead.onnx" };
	struct qr_analysis *a = analyse(names, 1);
	const struct qr_weight_stats *w;

	if (!ok(a != NULL && a->n_weights == 1, "dead.onnx analysed")) {
		qr_analysis_free(a);
		return;
	}
	w = &a->weights[0];
	ok(w->n_dead == 2 && w->dead[0] == 1 && w->dead[1] == 3,
	   "dead.onnx: channels 1 and 3 dead");
	ok(w->max_rel_range == 2,
	   "dead.onnx: max relative range 2, not 2e30 (got %g)",
	   w->max_rel_range);
	ok(w->n_outliers == 0 && w->tukey_fence == 2.5,
	   "dead.onnx: fence over live channels 1, 2 is 2.5, no outlier");
	ok(w->n_zero_range == 1, "dead.onnx: one zero-range channel");
	qr_analysis_free(a);
}

static void
test_dead_report(void)
{
	char *out = qr_path_join(tmpdir, "dead");
	cJSON *j, *w, *l;
	int rc = report(out, "dead.onnx", NULL, 0, NULL, &j);

	w = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "weights"),
			       0);
	l = cJSON_GetObjectItemCaseSensitive(w, "dead_channel_list");
	ok(rc == 0 && num(w, "dead_channels") == 2 &&
	   cJSON_GetArraySize(l) == 2 &&
	   cJSON_GetArrayItem(l, 0)->valueint == 1 &&
	   cJSON_GetArrayItem(l, 1)->valueint == 3 &&
	   num(w, "max_rel_range") == 2,
	   "report.json: dead_channels 2, dead_channel_list [1, 3], "
	   "max_rel_range 2");
	ok(file_has(out, "weights.html", "<tr><th>Dead channels</th><td "
		    "class=\"warn\">2: 1, 3"),
	   "weights.html lists the dead channels");
	ok(file_has(out, "layers/L0-conv.html", "<tr><th>Dead channels</th>"),
	   "the layer page shows the dead channels");
	ok(!file_has(out, "index.html", "e+30") &&
	   !file_has(out, "summary.md", "e+30"),
	   "no headline quotes a dead channel's ratio");
	cJSON_Delete(j);
	free(out);
}

/* ---- hazards through the library ---- */

static void
test_graph_hazards_api(void)
{
	static const char *const names[] = { "float.onnx", "bad_scale.onnx",
					     "clean_qdq.onnx" };
	struct qr_analysis *a = analyse(names, 3);
	size_t i, n_bad = 0, other = 0;

	if (!ok(a != NULL, "float + bad_scale + clean analysed"))
		return;
	for (i = 0; i < a->n_hazards; i++) {
		if (a->hazards[i].kind == QR_HZ_BAD_SCALE &&
		    a->hazards[i].quant == 0)
			n_bad++;
		else
			other++;
	}
	ok(n_bad == 1 && other == 0,
	   "without data: one bad_scale (candidate 1), nothing else");
	/* the models are gone: the plan holds what it needs */
	qr_analysis_hazards(a);
	ok(a->n_hazards == 1 &&
	   strcmp(qr_hazard_kind_name(a->hazards[0].kind), "bad_scale") == 0 &&
	   a->hazards[0].n_refs == 2 &&
	   strcmp(a->hazards[0].refs[1].name, "WA_scale") == 0 &&
	   a->hazards[0].refs[0].layer != NULL &&
	   strcmp(a->hazards[0].refs[0].layer, "ca") == 0,
	   "recomputed after the models are gone: bad_scale of WA_scale, "
	   "layer ca");
	qr_analysis_free(a);
}

static void
test_effective_bits(void)
{
	struct qr_act_pair p;
	struct qr_act_tensor t;

	memset(&p, 0, sizeof p);
	memset(&t, 0, sizeof t);
	p.has_qparams = 1;
	p.scale = 0.1;
	p.zero_point = 0;
	p.qmin = 0;
	p.qmax = 255;
	t.n_values = 10;
	t.min = 0;
	t.max = 6.3; /* 63 steps: 64 codes */
	ok_near(qr_act_effective_bits(&p, &t), 6, 1e-9,
		"effective bits: 64 of 256 codes is 6 bits");
	t.max = 100; /* cut to 25.5: all 256 codes */
	ok_near(qr_act_effective_bits(&p, &t), 8, 1e-9,
		"effective bits: at most the type's 8");
	p.has_qparams = 0;
	ok(isnan(qr_act_effective_bits(&p, &t)),
	   "effective bits: NaN without a scale");
}

/* ---- hazards through the binary ---- */

/* Candidates of float.onnx, each made to have one hazard (the clean one
 * none), in --quant order. */
static const struct {
	const char *file;
	const char *kind;  /* the only kind it may have; NULL: none */
	int n;             /* how many */
} cands[] = {
	{ "clean_qdq.onnx", NULL, 0 },
	{ "first_last.onnx", "first_last_quantized", 1 },
	{ "per_tensor.onnx", "per_tensor_weight", 2 },
	{ "sensitive.onnx", "sensitive_8bit", 1 },
	{ "chain.onnx", "requant_chain", 1 },
	{ "half_range.onnx", "half_range", 1 },
	{ "saturation.onnx", "saturation", 1 },
	{ "wide_scale.onnx", "scale_mismatch", 1 },
	{ "bad_scale.onnx", "bad_scale", 1 },
};
#define N_CANDS (sizeof cands / sizeof cands[0])

static void
test_each_hazard(void)
{
	char *out = qr_path_join(tmpdir, "main");
	const char *q[N_CANDS];
	const cJSON *h;
	cJSON *j;
	size_t k;
	int rc, links, resolved;

	for (k = 0; k < N_CANDS; k++)
		q[k] = cands[k].file;
	rc = report(out, "float.onnx", q, N_CANDS, NULL, &j);
	if (!ok(rc == 0 && j != NULL, "float.onnx and %d candidates: exit 0",
		(int)N_CANDS))
		goto out;
	ok(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "hazards")),
	   "report.json has hazards[]");
	ok(count(j, 0, NULL) == 0, "clean_qdq.onnx: no hazard (%d)",
	   count(j, 0, NULL));
	for (k = 1; k < N_CANDS; k++)
		ok(count(j, (int)k, cands[k].kind) == cands[k].n &&
		   count(j, (int)k, NULL) == cands[k].n,
		   "%s: %d %s and nothing else (%d, %d in all)", cands[k].file,
		   cands[k].n, cands[k].kind, count(j, (int)k, cands[k].kind),
		   count(j, (int)k, NULL));

	h = hazard(j, 1, "first_last_quantized", 0);
	ok(h && strcmp(str(item(h, 0), "name"), "c1") == 0 &&
	   strcmp(str(item(h, 1), "name"), "cl") == 0,
	   "first_last: names c1 and cl");
	h = hazard(j, 2, "per_tensor_weight", 0);
	ok(h && hnum(h, "gain_db") > 6 &&
	   strcmp(str(item(h, 0), "layer"), "ca") == 0,
	   "per_tensor: ca, gain %.1f dB > 6", h ? hnum(h, "gain_db") : NAN);
	h = hazard(j, 3, "sensitive_8bit", 0);
	ok(h && strcmp(str(item(h, 0), "name"), "sm") == 0 &&
	   hnum(h, "bits") == 8, "sensitive: Softmax sm in 8 bits");
	h = hazard(j, 4, "requant_chain", 0);
	ok(h && hnum(h, "ops") == 3 &&
	   strcmp(str(item(h, 0), "name"), "hs_add") == 0 &&
	   strcmp(str(item(h, 1), "name"), "hs_clip") == 0 &&
	   strcmp(str(item(h, 2), "name"), "hs_mul") == 0,
	   "chain: hs_add, hs_clip, hs_mul");
	h = hazard(j, 5, "half_range", 0);
	ok(h && fabs(hnum(h, "wasted_fraction") - 128.0 / 255) < 1e-9 &&
	   strcmp(str(item(h, 0), "layer"), "r1") == 0 &&
	   hnum(h, "effective_bits") < 7.5,
	   "half_range: r1 keeps 128/255 of its codes for negatives");
	h = hazard(j, 6, "saturation", 0);
	ok(h && hnum(h, "saturation") > 0.01 &&
	   strcmp(str(item(h, 0), "layer"), "r1") == 0,
	   "saturation: r1, %.1f%% clipped",
	   h ? 100 * hnum(h, "saturation") : NAN);
	h = hazard(j, 7, "scale_mismatch", 0);
	ok(h && hnum(h, "ratio") > 4 && hnum(h, "effective_bits") < 6,
	   "wide_scale: r1's scale %.1fx the data's, %.1f bits used",
	   h ? hnum(h, "ratio") : NAN, h ? hnum(h, "effective_bits") : NAN);
	h = hazard(j, 8, "bad_scale", 0);
	ok(h && hnum(h, "zero") == 1 && hnum(h, "denormal") == 1 &&
	   strcmp(str(item(h, 1), "name"), "WA_scale") == 0,
	   "bad_scale: WA_scale has a zero and a denormal");
	cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(j, "hazards"))
		if (str(h, "message")[0] == '\0' || str(h, "fix")[0] == '\0')
			break;
	ok(h == NULL, "every hazard has a message and a fix");

	resolved = hazard_links_resolve(out, &links);
	ok(resolved && links > 0,
	   "index.html: the Hazards section's %d layer links resolve",
	   links);
	ok(file_has(out, "summary.md", "## Hazards") &&
	   file_has(out, "summary.md", "**Candidate 2** First/last layer "
		    "quantized"),
	   "summary.md lists the hazards");
	ok(file_has(out, "layers/L1-r1.html", "help.html#hz-half_range"),
	   "r1's page lists its hazards");
	ok(file_has(out, "help.html", "id=\"hz-requant_chain\""),
	   "help.html explains each kind");
out:
	cJSON_Delete(j);
	free(out);
}

static void
test_joins(void)
{
	static const char *const skew[] = { "skew_apart.onnx",
					    "skew_shared.onnx" };
	static const char *const qop[] = { "qop.onnx" };
	char *out = qr_path_join(tmpdir, "skew");
	const cJSON *h;
	cJSON *j;
	int rc;

	rc = report(out, "skew_float.onnx", skew, 2, NULL, &j);
	ok(rc == 0 && count(j, 0, "input_scales") == 2 &&
	   count(j, 0, "shared_scale") == 0 && count(j, 0, NULL) == 2,
	   "skew_apart: Concat and Add input scales far apart, nothing else");
	h = hazard(j, 0, "input_scales", 0);
	ok(h && strcmp(str(item(h, 0), "name"), "cat") == 0 &&
	   hnum(h, "ratio") > 16, "skew_apart: cat's scales %.0fx apart",
	   h ? hnum(h, "ratio") : NAN);
	ok(count(j, 1, "shared_scale") == 2 &&
	   count(j, 1, "input_scales") == 0,
	   "skew_shared: Concat and Add share one scale over ranges far "
	   "apart");
	h = hazard(j, 1, "shared_scale", 1);
	ok(h && strcmp(str(item(h, 0), "name"), "add") == 0 &&
	   hnum(h, "ratio") > 16 && hnum(h, "narrow_codes") < 16,
	   "skew_shared: add's ranges %.0fx apart",
	   h ? hnum(h, "ratio") : NAN);
	cJSON_Delete(j);
	free(out);

	out = qr_path_join(tmpdir, "qop");
	rc = report(out, "qop_float.onnx", qop, 1, NULL, &j);
	h = hazard(j, 0, "input_scales", 0);
	ok(rc == 0 && count(j, 0, "input_scales") == 2 && h &&
	   strcmp(str(item(h, 0), "name"), "add_quant") == 0 &&
	   fabs(hnum(h, "ratio") - 32) < 1e-3,
	   "QOperator: QLinearAdd and QLinearConcat input scales 32x apart");
	cJSON_Delete(j);
	free(out);
}

static void
test_zero_point_and_no_data(void)
{
	static const char *const zp[] = { "bad_zp.onnx" };
	static const char *const wo[] = { "bad_scale.onnx", "saturation.onnx" };
	char *out = qr_path_join(tmpdir, "zp");
	const cJSON *h;
	cJSON *j;
	int rc;

	/* the engine refuses the model (partial report, exit 4); the weight
	 * analysis still reports its zero point */
	rc = report(out, "float.onnx", zp, 1, NULL, &j);
	h = hazard(j, 0, "bad_zero_point", 0);
	ok(rc == 4 && h && hnum(h, "value") == 200 && hnum(h, "qmin") == -128 &&
	   strcmp(str(item(h, 1), "name"), "WA_zero_point") == 0,
	   "bad_zp: uint8 200 for int8 values reported (exit %d)", rc);
	cJSON_Delete(j);
	free(out);

	out = qr_path_join(tmpdir, "weights-only");
	rc = report(out, "float.onnx", wo, 2, "--weights-only", &j);
	ok(rc == 0 && count(j, 0, "bad_scale") == 1 && count(j, 0, NULL) == 1 &&
	   count(j, 1, NULL) == 0,
	   "--weights-only: the graph's bad_scale, no data hazard");
	cJSON_Delete(j);
	free(out);
}

int
main(void)
{
	const char *src = getenv("top_srcdir");

	plan_no_plan();
	qreport = getenv("QREPORT");
	if (src == NULL || qreport == NULL)
		skip_all("run through make check (QREPORT, top_srcdir)");
	data = qr_path_join(src, "tests/data/hazards");
	if (mkdtemp(tmpdir) == NULL)
		skip_all("no temporary folder");
	test_dead_maths();
	test_dead_analysis();
	test_dead_report();
	test_graph_hazards_api();
	test_effective_bits();
	test_each_hazard();
	test_joins();
	test_zero_point_and_no_data();
	qr_remove_tree(tmpdir);
	free(data);
	return done();
}
