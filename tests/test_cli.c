/*
 * test_cli: run the real qreport binary on samples/ and check what it
 * writes: report.json's documented keys, its numbers against values computed
 * independently with numpy (tests/data/expected_digits.json, made by
 * tests/data/make_expected.py), the PNG charts, and the exit code and
 * one-line error of each kind of bad input.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"
#include "util/util.h"

static const char *qreport; /* path of the binary under test */
static const char *srcdir;  /* top source folder */
static char tmpdir[] = "/tmp/qr-cli-XXXXXX";
static char last_err[4096]; /* stderr of the last run */

/* Run qreport with args (NULL-terminated); return its exit code, or -1 when
 * it died of a signal. stderr goes to last_err. */
static int
run(const char *const *args)
{
	char *errpath = qr_path_join(tmpdir, "stderr");
	const char *argv[32];
	int status, fd, i;
	pid_t pid;
	FILE *f;
	size_t n;

	argv[0] = qreport;
	for (i = 0; args[i] != NULL && i < 30; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	pid = fork();
	if (pid == 0) {
		fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execv(qreport, (char *const *)argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	last_err[0] = '\0';
	f = fopen(errpath, "r");
	if (f != NULL) {
		n = fread(last_err, 1, sizeof last_err - 1, f);
		last_err[n] = '\0';
		fclose(f);
	}
	free(errpath);
	if (!WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static char *
src(const char *rel)
{
	return qr_path_join(srcdir, rel);
}

static char *
tmp(const char *rel)
{
	return qr_path_join(tmpdir, rel);
}

static int
exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* 1 when path is a PNG: signature, IHDR, a size of at least min_side
 * pixels a side. */
static int
png_ok(const char *path, int min_side, int *w, int *h)
{
	static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n',
					     0x1a, '\n'};
	unsigned char hdr[24];
	FILE *f = fopen(path, "rb");
	int good;

	if (f == NULL)
		return 0;
	good = fread(hdr, 1, sizeof hdr, f) == sizeof hdr &&
	       memcmp(hdr, sig, 8) == 0 && memcmp(hdr + 12, "IHDR", 4) == 0;
	fclose(f);
	*w = (hdr[16] << 24) | (hdr[17] << 16) | (hdr[18] << 8) | hdr[19];
	*h = (hdr[20] << 24) | (hdr[21] << 16) | (hdr[22] << 8) | hdr[23];
	return good && *w >= min_side && *h >= min_side && *w < 20000 &&
	       *h < 20000;
}

static cJSON *
load_json(const char *path)
{
	char *text;
	size_t len;
	cJSON *j;

	if (qr_read_file(path, &text, &len, NULL) != QR_OK)
		return NULL;
	j = cJSON_ParseWithLength(text, len);
	free(text);
	return j;
}

static int
has_keys(const cJSON *obj, const char *const *keys)
{
	int i, good = 1;

	for (i = 0; keys[i] != NULL; i++)
		if (!cJSON_HasObjectItem(obj, keys[i])) {
			diag("missing key '%s'", keys[i]);
			good = 0;
		}
	return good;
}

static double
num(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(it) ? it->valuedouble : NAN;
}

static const cJSON *
find_by(const cJSON *arr, const char *key, const char *value)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, key);

		if (cJSON_IsString(v) && strcmp(v->valuestring, value) == 0)
			return it;
	}
	return NULL;
}

/* obj's string key, or "" */
static const char *
str_of(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(it) ? it->valuestring : "";
}

/* Compare number arrays within a relative tolerance. */
static int
arrays_near(const cJSON *got, const cJSON *want, double rtol, double atol)
{
	int i, n = cJSON_GetArraySize(want);

	if (!cJSON_IsArray(got) || cJSON_GetArraySize(got) != n)
		return 0;
	for (i = 0; i < n; i++) {
		double g = cJSON_GetArrayItem(got, i)->valuedouble;
		double w = cJSON_GetArrayItem(want, i)->valuedouble;

		if (!(fabs(g - w) <= atol + rtol * fabs(w))) {
			diag("element %d: got %.9g want %.9g", i, g, w);
			return 0;
		}
	}
	return 1;
}

static void
check_report(const char *out)
{
	static const char *const top[] = {"schema_version", "models",
		"dataset", "weights", "quant_weights", "cle", NULL};
	static const char *const wkeys[] = {"layer", "op", "weight",
		"channels", "ch_min", "ch_max", "ch_mean", "ch_std",
		"rel_range", "max_rel_range", "outlier_channels",
		"sqnr_per_tensor_db", "sqnr_per_channel_db", NULL};
	static const char *const qkeys[] = {"quant", "layer", "granularity",
		"bits", "sqnr_db", "clipped", NULL};
	static const char *const ckeys[] = {"layers", "scales",
		"max_rel_range_before", "max_rel_range_after",
		"sqnr_per_tensor_before_db", "sqnr_per_tensor_after_db", NULL};
	char *jpath = qr_path_join(out, "report.json");
	char *epath = src("tests/data/expected_digits.json");
	char *charts = qr_path_join(out, "charts");
	cJSON *j = load_json(jpath), *e = load_json(epath);
	const cJSON *it, *want;
	int n_png = 0, bad_png = 0, w, h;
	struct dirent *de;
	DIR *dir;

	ok(j != NULL, "report.json parses");
	ok(e != NULL, "expected_digits.json parses");
	if (j == NULL || e == NULL)
		goto out;
	ok(has_keys(j, top), "report.json has the documented top-level keys");
	ok(cJSON_IsNumber(cJSON_GetObjectItem(j, "schema_version")),
	   "schema_version is a number");
	it = cJSON_GetObjectItem(j, "models");
	ok(cJSON_GetArraySize(it) == 2, "two models listed");
	ok(find_by(it, "role", "float") && find_by(it, "role", "quant"),
	   "models have roles float and quant");
	want = find_by(it, "role", "quant");
	ok(want != NULL && cJSON_IsString(cJSON_GetObjectItem(want, "format")) &&
	   strcmp(cJSON_GetObjectItem(want, "format")->valuestring, "qdq") == 0,
	   "quant model detected as qdq");

	/* weights[]: every expected layer, values within tolerance. */
	it = cJSON_GetObjectItem(j, "weights");
	ok(cJSON_GetArraySize(it) ==
	   cJSON_GetArraySize(cJSON_GetObjectItem(e, "weights")),
	   "weights[] has one entry per Conv/Gemm (%d)",
	   cJSON_GetArraySize(cJSON_GetObjectItem(e, "weights")));
	cJSON_ArrayForEach(want, cJSON_GetObjectItem(e, "weights")) {
		const char *wname = cJSON_GetObjectItem(want, "weight")->valuestring;
		const cJSON *got = find_by(it, "weight", wname);

		if (!ok(got != NULL, "weights[] has %s", wname))
			continue;
		ok(has_keys(got, wkeys), "%s has every weights[] key", wname);
		ok(num(got, "channels") == num(want, "channels"),
		   "%s channels", wname);
		ok(arrays_near(cJSON_GetObjectItem(got, "ch_min"),
			       cJSON_GetObjectItem(want, "ch_min"), 1e-6, 1e-7) &&
		   arrays_near(cJSON_GetObjectItem(got, "ch_max"),
			       cJSON_GetObjectItem(want, "ch_max"), 1e-6, 1e-7),
		   "%s ch_min/ch_max", wname);
		ok(arrays_near(cJSON_GetObjectItem(got, "ch_mean"),
			       cJSON_GetObjectItem(want, "ch_mean"), 1e-4, 1e-6) &&
		   arrays_near(cJSON_GetObjectItem(got, "ch_std"),
			       cJSON_GetObjectItem(want, "ch_std"), 1e-4, 1e-6),
		   "%s ch_mean/ch_std", wname);
		ok(arrays_near(cJSON_GetObjectItem(got, "rel_range"),
			       cJSON_GetObjectItem(want, "rel_range"), 1e-5, 1e-6),
		   "%s rel_range", wname);
		ok_near(num(got, "max_rel_range"), num(want, "max_rel_range"),
			1e-4 * num(want, "max_rel_range"),
			"max_rel_range");
		ok(arrays_near(cJSON_GetObjectItem(got, "outlier_channels"),
			       cJSON_GetObjectItem(want, "outlier_channels"), 0, 0),
		   "%s outlier channels", wname);
		ok_near(num(got, "sqnr_per_tensor_db"),
			num(want, "sqnr_per_tensor_db"), 0.01,
			"sqnr_per_tensor_db");
		ok_near(num(got, "sqnr_per_channel_db"),
			num(want, "sqnr_per_channel_db"), 0.01,
			"sqnr_per_channel_db");
	}

	/* quant_weights[]: SQNR of the dequantized weights, clipping. */
	it = cJSON_GetObjectItem(j, "quant_weights");
	ok(cJSON_GetArraySize(it) ==
	   cJSON_GetArraySize(cJSON_GetObjectItem(e, "quant_weights")),
	   "quant_weights[] pairs every quantized layer");
	cJSON_ArrayForEach(want, cJSON_GetObjectItem(e, "quant_weights")) {
		const char *layer = cJSON_GetObjectItem(want, "layer")->valuestring;
		const cJSON *got = find_by(it, "layer", layer);

		if (!ok(got != NULL, "quant_weights[] has %s", layer))
			continue;
		ok(has_keys(got, qkeys), "%s has every quant_weights[] key",
		   layer);
		ok_near(num(got, "sqnr_db"), num(want, "sqnr_db"), 0.01,
			"quant weight sqnr_db");
		ok(num(got, "clipped") == num(want, "clipped"),
		   "%s clipped count %g", layer, num(want, "clipped"));
		ok(strcmp(cJSON_GetObjectItem(got, "granularity")->valuestring,
			  cJSON_GetObjectItem(want, "granularity")->valuestring) == 0,
		   "%s granularity", layer);
	}

	/* cle[]: the expected sets with their scales. */
	it = cJSON_GetObjectItem(j, "cle");
	ok(cJSON_GetArraySize(it) ==
	   cJSON_GetArraySize(cJSON_GetObjectItem(e, "cle")),
	   "cle[] has the expected number of sets");
	cJSON_ArrayForEach(want, cJSON_GetObjectItem(e, "cle")) {
		const cJSON *got, *wl = cJSON_GetObjectItem(want, "layers");
		const char *first = cJSON_GetArrayItem(wl, 0)->valuestring;
		int k, found = 0;

		cJSON_ArrayForEach(got, it) {
			const cJSON *gl = cJSON_GetObjectItem(got, "layers");

			if (cJSON_GetArraySize(gl) == cJSON_GetArraySize(wl) &&
			    strcmp(cJSON_GetArrayItem(gl, 0)->valuestring,
				   first) == 0) {
				found = 1;
				break;
			}
		}
		if (!ok(found, "cle[] has the set starting at %s", first))
			continue;
		ok(has_keys(got, ckeys), "cle set %s has every key", first);
		for (k = 0; k < cJSON_GetArraySize(wl) - 1; k++)
			ok(arrays_near(cJSON_GetArrayItem(
					       cJSON_GetObjectItem(got, "scales"), k),
				       cJSON_GetArrayItem(
					       cJSON_GetObjectItem(want, "scales"), k),
				       1e-4, 1e-6),
			   "cle set %s scales at boundary %d", first, k);
		ok(num(got, "max_rel_range_after") <=
		   num(got, "max_rel_range_before") + 1e-6,
		   "cle set %s: equalization does not widen ranges", first);
	}

	/* Charts: valid PNGs, at least one per weighted layer. */
	dir = opendir(charts);
	ok(dir != NULL, "charts/ exists");
	while (dir != NULL && (de = readdir(dir)) != NULL) {
		char *p;

		if (strstr(de->d_name, ".png") == NULL)
			continue;
		p = qr_path_join(charts, de->d_name);
		n_png++;
		/* Charts are drawn at 2x; heatmaps (h*) hold one pixel per
		 * channel pair. */
		if (!png_ok(p, de->d_name[0] == 'h' ? 1 : 64, &w, &h)) {
			diag("bad PNG %s", p);
			bad_png++;
		}
		free(p);
	}
	if (dir != NULL)
		closedir(dir);
	ok(n_png >= cJSON_GetArraySize(cJSON_GetObjectItem(e, "weights")),
	   "charts/ holds %d PNGs", n_png);
	ok(bad_png == 0, "every chart is a valid PNG");
out:
	cJSON_Delete(j);
	cJSON_Delete(e);
	free(jpath);
	free(epath);
	free(charts);
}

/* report.json after --data samples/digits (30 labelled images) with
 * --quant digits_qdq.onnx: activations[] and outputs[] against the numpy
 * reference runner of tests/data/make_expected.py ("agreement"). */
static void
check_activations(const char *out)
{
	static const char *const akeys[] = {"quant", "tensor", "quant_tensor",
		"match", "cosine_mean", "cosine_min", "mse", "sqnr_db",
		"local_sqnr_db", "max_abs", "histogram", "ch_min", "ch_max",
		"ch_mean", "scale", "zero_point", "saturation",
		"rmse_over_scale", "flags", NULL};
	static const char *const okeys[] = {"quant", "name", "cosine_mean",
		"sqnr_db", "top1_agreement", "accuracy", "cosine",
		"sqnr_db_per_sample", NULL};
	char *jpath = qr_path_join(out, "report.json");
	char *epath = src("tests/data/expected_digits.json");
	char *apath = qr_path_join(out, "activations.html");
	cJSON *j = load_json(jpath), *e = load_json(epath);
	const cJSON *acts, *want, *o, *ds, *ea;
	int n_local = 0, n = 0;
	char *html = NULL;
	size_t len;

	if (!ok(j != NULL && e != NULL, "report.json and expected parse"))
		goto out;
	ea = cJSON_GetObjectItem(e, "activations");
	ds = cJSON_GetObjectItem(j, "dataset");
	ok(ds && strcmp(cJSON_GetObjectItem(ds, "source")->valuestring,
			"images") == 0 && num(ds, "samples") == 30,
	   "dataset: 30 images");
	ok(cJSON_GetArraySize(cJSON_GetObjectItem(ds, "classes")) == 10,
	   "dataset: 10 classes from the subfolders");
	acts = cJSON_GetObjectItem(j, "activations");
	ok(cJSON_GetArraySize(acts) ==
	   cJSON_GetArraySize(cJSON_GetObjectItem(ea, "pairs")),
	   "activations[]: %d matched tensors",
	   cJSON_GetArraySize(cJSON_GetObjectItem(ea, "pairs")));
	cJSON_ArrayForEach(want, cJSON_GetObjectItem(ea, "pairs")) {
		const char *t = cJSON_GetObjectItem(want, "tensor")->valuestring;
		const cJSON *got = find_by(acts, "tensor", t);
		double rt = 1e-4;

		if (!ok(got != NULL, "activations[] has %s", t))
			continue;
		n++;
		ok(has_keys(got, akeys), "%s has every activations[] key", t);
		ok(strcmp(cJSON_GetObjectItem(got, "quant_tensor")->valuestring,
			  cJSON_GetObjectItem(want, "quant_tensor")->valuestring) == 0 &&
		   strcmp(cJSON_GetObjectItem(got, "match")->valuestring,
			  "name") == 0, "%s matched by name to %s", t,
		   cJSON_GetObjectItem(want, "quant_tensor")->valuestring);
		ok_near(num(got, "cosine_mean"), num(want, "cosine_mean"),
			rt * num(want, "cosine_mean"), "cosine_mean agrees");
		ok_near(num(got, "cosine_min"), num(want, "cosine_min"),
			rt * num(want, "cosine_min"), "cosine_min agrees");
		ok_near(num(got, "sqnr_db"), num(want, "sqnr_db"),
			rt * fabs(num(want, "sqnr_db")), "sqnr_db agrees");
		ok_near(num(got, "local_sqnr_db"), num(want, "local_sqnr_db"),
			rt * fabs(num(want, "local_sqnr_db")),
			"local_sqnr_db agrees");
		n_local += num(got, "local_sqnr_db") >= num(got, "sqnr_db") - 1e-9;
	}
	ok(n > 0 && n_local >= n - 1, "local SQNR >= cumulative for %d of %d "
	   "layers", n_local, n);
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "outputs"), 0);
	want = cJSON_GetObjectItem(ea, "output");
	ok(o != NULL && has_keys(o, okeys), "outputs[0] has its keys");
	ok(o && cJSON_GetArraySize(cJSON_GetObjectItem(o, "cosine")) == 30,
	   "outputs[0]: a cosine per sample");
	ok_near(num(o, "top1_agreement"), num(want, "top1_agreement"), 1e-9,
		"top-1 agreement as the reference");
	ok_near(num(o, "accuracy"), num(want, "accuracy"), 1e-9,
		"candidate accuracy as the reference");
	ok_near(num(o, "float_accuracy"), num(want, "float_accuracy"), 1e-9,
		"float accuracy as the reference");
	ok(num(o, "float_accuracy") >= 0.9, "float accuracy on the 30 "
	   "digits is high (%g)", num(o, "float_accuracy"));
	ok(qr_read_file(apath, &html, &len, NULL) == QR_OK &&
	   strstr(html, "act-sqnr-q1") != NULL,
	   "activations.html written with the local vs cumulative chart");
	free(html);
out:
	cJSON_Delete(j);
	cJSON_Delete(e);
	free(jpath);
	free(epath);
	free(apath);
}

/* Bad input: exit code, one line naming `needle`, and no report left. */
static void
check_bad(const char *what, const char *const *args, int want_rc,
	  const char *needle, const char *out)
{
	int rc = run(args);

	ok(rc == want_rc, "%s: exit %d (got %d)", what, want_rc, rc);
	ok(count_lines(last_err) == 1 && strstr(last_err, "error") != NULL,
	   "%s: one error line", what);
	if (needle != NULL)
		ok(strstr(last_err, needle) != NULL, "%s: message names '%s'",
		   what, needle);
	if (want_rc != 1 || needle != NULL)
		diag("%s", last_err);
	if (out != NULL)
		ok(!exists(out), "%s: no report written", what);
}

/* 1 when the file at path contains needle. */
static int
file_has(const char *path, const char *needle)
{
	char *text = NULL;
	size_t len;
	int r = 0;

	if (qr_read_file(path, &text, &len, NULL) == QR_OK)
		r = strstr(text, needle) != NULL;
	free(text);
	return r;
}

/* Occurrences of needle in the file at path. */
static int
file_count(const char *path, const char *needle)
{
	char *text = NULL;
	const char *p;
	size_t len;
	int n = 0;

	if (qr_read_file(path, &text, &len, NULL) != QR_OK)
		return -1;
	for (p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	free(text);
	return n;
}

/* Layer pages, layers.html rows and graph.svg nodes: one per layer. */
static void
check_layers_and_graph(const char *out)
{
	char *dir = qr_path_join(out, "layers"), *lpath, *gpath, *ipath;
	struct dirent *de;
	DIR *dp = opendir(dir);
	int pages = 0, rows, links, bad_page = 0;
	static const char *const nodes[] = { "/conv1/Conv", "/bn1/BatchNormalization",
					     "/relu4/Clip", "/pool/GlobalAveragePool",
					     "/Flatten", "/fc/Gemm" };
	size_t i;

	ok(dp != NULL, "layers/ exists");
	while (dp != NULL && (de = readdir(dp)) != NULL) {
		char *p;

		if (strstr(de->d_name, ".html") == NULL)
			continue;
		pages++;
		p = qr_path_join(dir, de->d_name);
		if (!file_has(p, "<base href=\"../\">") ||
		    !file_has(p, "layers.html"))
			bad_page++;
		free(p);
	}
	if (dp != NULL)
		closedir(dp);
	lpath = qr_path_join(out, "layers.html");
	gpath = qr_path_join(out, "graph.svg");
	ipath = qr_path_join(out, "graph.html");
	rows = file_count(lpath, "<tr id=\"l-");
	ok(pages >= 15 && rows == pages,
	   "layers.html has a row per layer page (%d rows, %d pages)", rows,
	   pages);
	ok(bad_page == 0, "every layer page links back and sets <base>");
	for (i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
		ok(file_has(lpath, nodes[i]), "layers.html lists %s", nodes[i]);
	ok(file_has(lpath, "data-v=") && file_has(lpath, "class=\"data sortable"),
	   "layers.html: sortable table with sort keys");
	links = file_count(gpath, "<a xlink:href=\"layers/");
	ok(exists(gpath) && links == pages,
	   "graph.svg links every node to its layer page (%d links, %d "
	   "layers)", links, pages);
	ok(file_has(gpath, "<?xml") && file_has(gpath, "</svg>"),
	   "graph.svg is a complete SVG file");
	ok(file_count(ipath, "<a xlink:href=\"layers/") == pages,
	   "graph.html inlines the graph of the one candidate");
	free(ipath);
	free(gpath);
	free(lpath);
	free(dir);
}

/* qreport run --profile: time per op type, the ops inside a Loop body
 * listed under it ("Loop/Mul") and kept out of the total. */
static void
check_run_profile(void)
{
	static const int64_t dims[2] = {3, 4};
	char *model = src("tests/data/ort-ops/loop_trip.onnx");
	char *npy = tmp("loop_x.npy"), *out = tmp("run-prof"), *spec;
	struct qr_tensor *x = NULL;
	struct qr_diag d = {0};
	const char *tot;
	size_t i;
	int rc;

	qr_tensor_new(QR_DT_FLOAT, 2, dims, &x, &d);
	for (i = 0; i < 12; i++)
		((float *)x->data)[i] = (float)i / 4.0f - 1.0f;
	qr_npy_write(npy, x, &d);
	spec = xasprintf("x=%s", npy);
	rc = run((const char *[]){"run", model, "--input", spec, "-o", out,
				  "--profile", NULL});
	tot = strstr(last_err, "\ntotal");
	ok(rc == 0 && strstr(last_err, "\nLoop ") != NULL &&
	   strstr(last_err, "\nLoop/Mul ") != NULL &&
	   strstr(last_err, "\nAbs ") != NULL && tot != NULL,
	   "run --profile lists the Loop body's ops as Loop/<op> (rc %d: "
	   "%.300s)", rc, last_err);
	free(spec);
	free(out);
	free(npy);
	free(model);
	qr_tensor_free(x);
}

/* --fail-if, --config with fail_if, --compare-to, --help, --version. */
/* --ort-cpu: the QOperator sample reproduced as ONNX Runtime runs it on
 * a VNNI CPU (exact int8 sums) and on one without VNNI (u8 x s8 products
 * in saturating 16-bit pairs, which onnxruntime-node on such a CPU gives
 * bit for bit: tests/ort_*.sh). report.json says which; the saturation
 * shows as lost SQNR in the convs after the first (whose inputs are
 * small) and nowhere is the AVX2 run better. */
static void
check_ort_cpu(void)
{
	/* neither is any machine's native pair: a VNNI CPU reports
	 * avx512vnni or avx2vnni, one without avx2 or avx512 */
	static const char *const cpus[2] = {"avx512vnni", "avx512"};
	static const char cfg_ok[] = "{\"ort_cpu\": \"avx512\"}";
	static const char cfg_bad[] = "{\"ort_cpu\": \"avx3\"}";
	char *digits = src("samples/digits"), *fm = src("samples/digits_float.onnx");
	char *qop = src("samples/digits_qop.onnx");
	char *out[2] = {tmp("ortcpu-vnni"), tmp("ortcpu-avx2")};
	char *cfg = tmp("ortcpu.json");
	cJSON *j[2];
	const cJSON *a0, *a1;
	int i, rc, n = 0, lower = 0, higher = 0;

	/* the first from the flag, the second from a config file */
	qr_write_file(cfg, cfg_ok, strlen(cfg_ok), NULL);
	for (i = 0; i < 2; i++) {
		char *rj = qr_path_join(out[i], "report.json");

		rc = run((const char *[]){"--float", fm, "--quant", qop, "-o",
					  out[i], "--data", digits, "--samples",
					  "10", "--scale", "0.00392156862745098",
					  "--mean", "0.5", "--std", "0.5",
					  "--quiet", i ? "--config" : "--ort-cpu",
					  i ? cfg : cpus[i], NULL});
		ok(rc == 0, "%s %s: report written (%d: %s)",
		   i ? "config ort_cpu" : "--ort-cpu", cpus[i], rc, last_err);
		j[i] = load_json(rj);
		ok(strcmp(str_of(cJSON_GetObjectItem(j[i], "generator"),
				 "ort_cpu"), cpus[i]) == 0,
		   "%s %s: report.json's generator.ort_cpu says so",
		   i ? "config ort_cpu" : "--ort-cpu", cpus[i]);
		free(rj);
	}
	a0 = cJSON_GetObjectItem(j[0], "activations");
	a1 = cJSON_GetObjectItem(j[1], "activations");
	for (i = 0; i < cJSON_GetArraySize(a0); i++) {
		double s0 = num(cJSON_GetArrayItem(a0, i), "sqnr_db");
		double s1 = num(cJSON_GetArrayItem(a1, i), "sqnr_db");

		n++;
		lower += s1 < s0 - 10.0;
		higher += s1 > s0 + 1e-9;
	}
	ok(n > 0 && lower >= n / 2 && higher == 0, "ort_cpu avx512 (no VNNI): "
	   "the saturating pairs cost %d of %d layers over 10 dB, none gains "
	   "(%d)", lower, n, higher);
	rc = run((const char *[]){"run", qop, "-o", out[0], "--ort-cpu",
				  "avx3", NULL});
	ok(rc == 1 && strstr(last_err, "--ort-cpu 'avx3': expected native, "
			     "avx512vnni, avx512, avx2vnni or avx2") != NULL,
	   "--ort-cpu avx3: usage error naming the choices (%d: %s)", rc,
	   last_err);
	qr_write_file(cfg, cfg_bad, strlen(cfg_bad), NULL);
	rc = run((const char *[]){"--config", cfg, "--float", fm, "-o", out[0],
				  NULL});
	ok(rc == 1 && strstr(last_err, "\"ort_cpu\" 'avx3': expected") !=
			      NULL,
	   "config ort_cpu avx3: usage error (%d: %s)", rc, last_err);
	for (i = 0; i < 2; i++) {
		cJSON_Delete(j[i]);
		free(out[i]);
	}
	free(digits);
	free(fm);
	free(qop);
	free(cfg);
}

static void
check_ci(const char *fmodel, const char *qmodel)
{
	char *digits = src("samples/digits");
	char *pertensor = src("samples/digits_qdq_pertensor.onnx");
	char *qop = src("samples/digits_qop.onnx");
	char *gout = tmp("gate"), *gsum = tmp("gate/summary.md");
	char *gidx = tmp("gate/index.html"), *gjson = tmp("gate/report.json");
	char *old = tmp("old"), *oldjson = tmp("old/report.json");
	char *cout = tmp("cmp"), *cjson = tmp("cmp/report.json");
	char *chtml = tmp("cmp/compare.html"), *csum = tmp("cmp/summary.md");
	char *cfg = tmp("ci.json"), *cfgout = tmp("cfg");
	char *bad = tmp("bad-gate");
	const char *data[] = { "--data", digits, "--samples", "10", "--scale",
			       "0.00392156862745098", "--mean", "0.5", "--std",
			       "0.5", "--quiet" };
	cJSON *j;
	int rc;

	/* a failing and a passing check: exit 3, report written, listed */
	rc = run((const char *[]){"--float", fmodel, "--quant", qmodel, "-o",
				  gout, data[0], data[1], data[2], data[3],
				  data[4], data[5], data[6], data[7], data[8],
				  data[9], data[10],
				  "--fail-if", "layer.sqnr_db<60",
				  "--fail-if", "weight.max_rel_range > 1000",
				  NULL});
	ok(rc == 3, "--fail-if crossed: exit 3 (got %d: %s)", rc, last_err);
	ok(exists(gidx) && exists(gsum), "--fail-if crossed: the report is "
	   "still written");
	ok(strstr(last_err, "qreport: check failed: layer.sqnr_db < 60") !=
		   NULL && strstr(last_err, "weight.max_rel_range") == NULL,
	   "stderr names the failed check only (quiet)");
	ok(count_lines(last_err) == 2, "stderr: one line per failed check and "
	   "one summary line (%d lines)", count_lines(last_err));
	ok(file_has(gidx, "layer.sqnr_db &lt; 60") &&
	   file_has(gidx, "1 of 2 failed"), "index.html lists the checks");
	ok(file_has(gsum, "| layer.sqnr\\_db &lt; 60 | **FAILED** |") &&
	   file_has(gsum, "| weight.max\\_rel\\_range &gt; 1000 | passed |"),
	   "summary.md lists each check and its result");
	j = load_json(gjson);
	{
		const cJSON *g = j ? cJSON_GetObjectItem(j, "gate") : NULL;
		const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(
			g, "checks"), 0);

		ok(g && cJSON_IsFalse(cJSON_GetObjectItem(g, "passed")) &&
		   num(c0, "failures") > 0 &&
		   num(c0, "failures") == num(c0, "items"),
		   "report.json gate: the check failed on every layer");
	}
	cJSON_Delete(j);

	/* 3000 "channels" (a detector's anchors): the per-channel chart
	 * draws runs of them, or cairo takes minutes on 160000 */
	{
		char *wf = src("tests/data/activations/wide.onnx");
		char *wout = tmp("wide");
		char *whtml = tmp("wide/activations.html");

		rc = run((const char *[]){"--float", wf, "--quant", wf, "-o",
					  wout, "--samples", "2", "--quiet",
					  NULL});
		ok(rc == 0 && file_count(whtml, "3000 channels drawn as 1024 "
					 "runs of about 3") == 3,
		   "[1,3000,4] activations (x, boxes, y): each per-channel chart "
		   "draws 1024 "
		   "runs of channels (exit %d)", rc);
		free(whtml);
		free(wout);
		free(wf);
	}

	/* a cancellation (a LayerNorm's mean of centred rows, -100 dB) is
	 * rounding noise: layer checks skip it */
	{
		char *lf = src("tests/data/activations/lnln_float.onnx");
		char *lq = src("tests/data/activations/lnln_qdq.onnx");
		char *lout = tmp("gate-ln"), *ljson = tmp("gate-ln/report.json");
		char *lsvg = tmp("gate-ln/graph.svg");
		char *lhtml = tmp("gate-ln/activations.html");
		char *lout2 = tmp("gate-ln2");
		char *ljson2 = tmp("gate-ln2/report.json");
		cJSON *j2;
		char *lmd = tmp("gate-ln/summary.md");
		const cJSON *c0;

		rc = run((const char *[]){"--float", lf, "--quant", lq, "-o",
					  lout, "--samples", "4", "--quiet",
					  "--fail-if", "layer.sqnr_db<-50",
					  NULL});
		j = load_json(ljson);
		c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
			j, "gate"), "checks"), 0);
		ok(rc == 0 && num(c0, "failures") == 0 &&
		   num(c0, "skipped") == 1 && num(c0, "items") > 20,
		   "--fail-if layer.sqnr_db<-50 skips the one cancellation "
		   "(exit %d, %g items, %g skipped)", rc, num(c0, "items"),
		   num(c0, "skipped"));
		ok(file_has(lsvg, "(cancellation: the float value is rounding "
			    "noise)"), "graph.svg: the cancellation's node "
		   "says so in its tooltip");
		ok(file_has(lhtml, "<span class=\"pill \">cancellation</span>"),
		   "activations.html: the cancellation is noted, not flagged");
		/* --compare-to: its SQNR moves by 19 dB between 4 and 8
		 * samples, and that is no regression */
		rc = run((const char *[]){"--float", lf, "--quant", lq, "-o",
					  lout2, "--samples", "8", "--quiet",
					  "--compare-to", ljson, NULL});
		j2 = load_json(ljson2);
		c0 = find_by(cJSON_GetObjectItem(cJSON_GetObjectItem(j2,
				"compare"), "activations"), "tensor",
			     "/n2/ReduceMean_output_0");
		ok(rc == 0 && c0 && fabs(num(c0, "sqnr_db_delta")) > 1 &&
		   strcmp(str_of(c0, "status"), "same") == 0,
		   "--compare-to: the cancellation's SQNR moved %.1f dB and "
		   "is \"%s\", not a regression", num(c0, "sqnr_db_delta"),
		   str_of(c0, "status"));
		cJSON_Delete(j2);
		ok(file_has(lmd, "| /n3/ReduceMean\\_output\\_0 |") &&
		   !file_has(lmd, "| /n2/ReduceMean\\_output\\_0 |"),
		   "summary.md: the worst layers leave the cancellation out");
		cJSON_Delete(j);
		free(lsvg);
		free(lhtml);
		free(lmd);
		free(lout2);
		free(ljson2);
		free(ljson);
		free(lout);
		free(lq);
		free(lf);
	}

	/* 4-bit weight-only (MatMulNBits, asymmetric as ORT writes it):
	 * shown per block; its codes at 0 or 15 (1019 of fc1's 6912, by
	 * design with 16 levels over each block's range) are not a clipping
	 * warning, as no weight fell outside its block's range */
	{
		char *wf = src("tests/data/activations/wo_float.onnx");
		char *wq = src("tests/data/activations/wo_nbits.onnx");
		char *wout = tmp("wo"), *wmodel = tmp("wo/model.html");
		char *wquant = tmp("wo/quant.html");

		rc = run((const char *[]){"--float", wf, "--quant", wq, "-o",
					  wout, "--samples", "2", "--quiet",
					  NULL});
		ok(rc == 0 && file_has(wmodel, "per-block (32 along axis 0)") &&
		   file_has(wquant, "per-block (32)"),
		   "weight-only: exit %d, granularity per block of 32", rc);
		ok(file_has(wquant, "class=\"num \">1,019 <span"),
		   "weight-only: 1,019 codes at a limit, not a clipping warning");
		free(wquant);
		free(wmodel);
		free(wout);
		free(wq);
		free(wf);
	}

	/* malformed expressions: exit 1, one line, no report */
	check_bad("--fail-if without an operator",
		  (const char *[]){"--float", fmodel, "-o", bad, "--fail-if",
				   "layer.sqnr_db", NULL}, 1, "layer.sqnr_db",
		  bad);
	check_bad("--fail-if with an unknown metric",
		  (const char *[]){"--float", fmodel, "-o", bad, "--fail-if",
				   "layer.snr<3", NULL}, 1, "unknown metric 'snr'",
		  bad);
	check_bad("--fail-if with an unknown subject",
		  (const char *[]){"--float", fmodel, "-o", bad, "--fail-if",
				   "model.cosine<3", NULL}, 1, "SUBJECT", bad);
	check_bad("--fail-if with a bad number",
		  (const char *[]){"--float", fmodel, "-o", bad, "--fail-if",
				   "output.cosine < 0.9x", NULL}, 1, "number",
		  bad);

	/* the config file: fail_if read from it; a flag wins over it */
	{
		char *text = xasprintf(
			"{\"float\": \"%s\", \"quant\": [\"%s\"], \"output\": \"%s\","
			" \"samples\": 4, \"quiet\": true,"
			" \"fail_if\": [\"output.cosine < 1.01\", \"quant_weight.sqnr_db<10\"]}",
			fmodel, qmodel, cfgout);

		qr_write_file(cfg, text, strlen(text), NULL);
		free(text);
	}
	rc = run((const char *[]){"--config", cfg, NULL});
	ok(rc == 3 && strstr(last_err, "output.cosine < 1.01") != NULL,
	   "config fail_if: exit 3 naming the check (got %d: %s)", rc,
	   last_err);
	rc = run((const char *[]){"--config", cfg, "--fail-if",
				  "output.cosine<0", NULL});
	ok(rc == 0, "a --fail-if flag replaces the config's checks (got %d: "
	   "%s)", rc, last_err);
	{
		const char *t = "{\"float\": \"x.onnx\", \"output\": \"o\", "
				"\"fail_if\": \"layer.sqnr_db\"}";

		qr_write_file(cfg, t, strlen(t), NULL);
	}
	check_bad("config with a malformed fail_if",
		  (const char *[]){"--config", cfg, NULL}, 1, "ci.json", NULL);

	/* --compare-to: a previous report of another candidate */
	rc = run((const char *[]){"--float", fmodel, "--quant", pertensor,
				  "-o", old, data[0], data[1], data[2], data[3],
				  data[4], data[5], data[6], data[7], data[8],
				  data[9], data[10], NULL});
	ok(rc == 0, "previous report: exit 0 (%s)", last_err);
	rc = run((const char *[]){"--float", fmodel, "--quant", qmodel,
				  "--quant", qop, "-o", cout, "--compare-to",
				  oldjson, data[0], data[1], data[2], data[3],
				  data[4], data[5], data[6], data[7], data[8],
				  data[9], data[10], NULL});
	ok(rc == 0, "--compare-to: exit 0 (got %d: %s)", rc, last_err);
	j = load_json(cjson);
	{
		const cJSON *c = j ? cJSON_GetObjectItem(j, "compare") : NULL;
		const cJSON *x;
		int deltas = 0, news = 0;

		cJSON_ArrayForEach(x, cJSON_GetObjectItem(c, "activations")) {
			const cJSON *dl = cJSON_GetObjectItem(x, "sqnr_db_delta");

			deltas += cJSON_IsNumber(dl) && fabs(dl->valuedouble) > 0.5;
			news += strcmp(cJSON_GetObjectItem(x, "status")
					       ->valuestring, "new") == 0;
		}
		ok(deltas > 0, "compare: per-channel vs per-tensor weights "
		   "change the SQNR of %d tensors", deltas);
		ok(news > 0 && num(c, "new") >= news,
		   "compare: the second candidate's tensors are new");
		ok(num(c, "improved") > 0, "compare: per-channel improves on "
		   "per-tensor");
	}
	cJSON_Delete(j);
	ok(file_has(chtml, "improved") && file_has(chtml, "/relu1/Relu_output_0"),
	   "compare.html lists the changed layers");
	ok(file_has(csum, "## Changes against") && file_has(csum, "improved |"),
	   "summary.md has the changes");
	check_bad("--compare-to a missing report",
		  (const char *[]){"--float", fmodel, "-o", bad, "--compare-to",
				   "/nonexistent/report.json", NULL}, 2,
		  "/nonexistent/report.json", bad);
	check_bad("--compare-to a file that is not a report",
		  (const char *[]){"--float", fmodel, "-o", bad, "--compare-to",
				   cfg, NULL}, 2, "ci.json", bad);

	/* --help ends with the exit codes; --version */
	{
		char *hpath = tmp("help.txt");
		char *cmd = xasprintf("'%s' --help > '%s'", qreport, hpath);
		char *text = NULL;
		size_t len = 0;

		rc = system(cmd);
		ok(rc == 0 && qr_read_file(hpath, &text, &len, NULL) == QR_OK &&
		   strstr(text, "--fail-if EXPR") && strstr(text, "--compare-to") &&
		   strstr(text, "Exit codes:") &&
		   strstr(strstr(text, "Exit codes:"), "4  partial report") &&
		   strstr(text, "Exit codes:") > strstr(text, "--version"),
		   "--help documents --fail-if and --compare-to and ends with "
		   "the exit codes");
		free(text);
		free(cmd);
		cmd = xasprintf("'%s' --version > '%s'", qreport, hpath);
		rc = system(cmd);
		ok(rc == 0 && qr_read_file(hpath, &text, &len, NULL) == QR_OK &&
		   strncmp(text, "qreport ", 8) == 0, "--version");
		free(text);
		free(cmd);
		free(hpath);
	}
	free(bad);
	free(cfgout);
	free(cfg);
	free(csum);
	free(chtml);
	free(cjson);
	free(cout);
	free(oldjson);
	free(old);
	free(gjson);
	free(gidx);
	free(gsum);
	free(gout);
	free(qop);
	free(pertensor);
	free(digits);
}

/* The line of text that starts at p, for a diagnostic. */
static char *
line_at(const char *p)
{
	return xstrndup(p, strcspn(p, "\n"));
}

/*
 * doc/qreport.1's OPTIONS section is what `qreport --roff-options` prints from
 * the option table, byte for byte (`make man-options` rewrites it), so
 * the man page cannot drift from the options; and --roff-options stays out
 * of --help.
 */
static void
check_man(void)
{
	static const char head[] = "\n.SH OPTIONS\n";
	char *page_path = src("doc/qreport.1"), *out = tmp("options.roff");
	char *help = tmp("help-for-man.txt");
	char *cmd = xasprintf("'%s' --roff-options > '%s' && "
			      "'%s' --help > '%s'", qreport, out, qreport,
			      help);
	char *page = NULL, *printed = NULL, *htext = NULL;
	const char *from = NULL, *to = NULL, *a, *b;
	size_t len, plen = 0, hlen;
	int rc, same, line = 1;

	rc = system(cmd);
	ok(rc == 0 && qr_read_file(out, &printed, &plen, NULL) == QR_OK &&
	   strncmp(printed, ".TP\n", 4) == 0,
	   "--roff-options prints the option list as roff (rc %d)", rc);
	ok(qr_read_file(help, &htext, &hlen, NULL) == QR_OK &&
	   strstr(htext, "--roff-options") == NULL && strstr(htext, "--help") &&
	   strstr(htext, "input_size") && strstr(htext, "ort_cpu"),
	   "--help lists the --config keys and hides --roff-options");
	if (qr_read_file(page_path, &page, &len, NULL) == QR_OK &&
	    (from = strstr(page, head)) != NULL) {
		from += strlen(head);
		to = strstr(from, "\n.SH ");
	}
	same = printed != NULL && to != NULL &&
	       (size_t)(to + 1 - from) == plen &&
	       memcmp(from, printed, plen) == 0;
	if (!same && printed != NULL && to != NULL) {
		const char *la = from, *lb = printed;
		char *x, *y;

		for (a = from, b = printed; a <= to && *a == *b; a++, b++)
			if (*a == '\n') {
				line++;
				la = a + 1;
				lb = b + 1;
			}
		x = line_at(la);
		y = line_at(lb);
		diag("OPTIONS line %d: doc/qreport.1 has '%s', qreport "
		     "--roff-options '%s'", line, x, y);
		free(x);
		free(y);
	}
	ok(same, "doc/qreport.1's OPTIONS are what the option table prints "
	   "(run `make man-options` after changing an option)");
	free(page);
	free(printed);
	free(htext);
	free(cmd);
	free(help);
	free(out);
	free(page_path);
}

int
main(void)
{
	char *fmodel, *qmodel, *out, *index, *bad, *text, *outfile;
	char *trunc, *readme;
	size_t len;
	int rc;

	plan_no_plan();
	qreport = getenv("QREPORT");
	srcdir = getenv("top_srcdir");
	if (qreport == NULL || srcdir == NULL)
		skip_all("QREPORT and top_srcdir must be set (run by make check)");
	if (mkdtemp(tmpdir) == NULL)
		skip_all("cannot create a temporary folder");
	fmodel = src("samples/digits_float.onnx");
	qmodel = src("samples/digits_qdq.onnx");
	readme = src("README.md");
	out = tmp("report");
	index = tmp("report/index.html");

	RUN(check_man);
	rc = run((const char *[]){"--float", fmodel, "--quant", qmodel, "-o",
				  out, "--quiet", NULL});
	ok(rc == 0, "sample report: exit 0 (got %d: %s)", rc, last_err);
	ok(exists(index), "index.html written");
	check_report(out);
	RUN(check_run_profile);

	/* Real data: labelled images through float and QDQ. */
	{
		char *digits = src("samples/digits");
		char *aout = tmp("act");

		rc = run((const char *[]){"--float", fmodel, "--quant", qmodel,
					  "-o", aout, "--quiet", "--data",
					  digits, "--samples", "30", "--scale",
					  "0.00392156862745098", "--mean", "0.5",
					  "--std", "0.5", NULL});
		ok(rc == 0, "report with --data samples/digits: exit 0 (got "
		   "%d: %s)", rc, last_err);
		check_activations(aout);
		check_layers_and_graph(aout);
		/* --exact: the local runs in ORT's order too; the cumulative
		 * numbers are the same bits either way */
		{
			char *eout = tmp("act-exact"), *p1, *p2;
			cJSON *a = NULL, *b = NULL;
			const cJSON *x, *y;
			int same = 1, near = 1, n = 0;

			rc = run((const char *[]){"--float", fmodel, "--quant",
						  qmodel, "-o", eout, "--quiet",
						  "--data", digits, "--samples",
						  "30", "--scale",
						  "0.00392156862745098",
						  "--mean", "0.5", "--std",
						  "0.5", "--exact", NULL});
			p1 = qr_path_join(aout, "report.json");
			p2 = qr_path_join(eout, "report.json");
			a = load_json(p1);
			b = load_json(p2);
			x = a ? cJSON_GetObjectItem(a, "activations") : NULL;
			y = b ? cJSON_GetObjectItem(b, "activations") : NULL;
			for (n = 0; x && y && n < cJSON_GetArraySize(x); n++) {
				const cJSON *u = cJSON_GetArrayItem(x, n);
				const cJSON *v = cJSON_GetArrayItem(y, n);

				same &= v && num(u, "sqnr_db") == num(v, "sqnr_db");
				near &= v && fabs(num(u, "local_sqnr_db") -
						  num(v, "local_sqnr_db")) <=
						     1e-4 * fabs(num(v, "local_sqnr_db"));
			}
			ok(rc == 0 && n > 0 && same && near, "--exact: exit 0 "
			   "(got %d), cumulative SQNR equal, local within 1e-4 "
			   "over %d layers", rc, n);
			cJSON_Delete(a);
			cJSON_Delete(b);
			free(p1);
			free(p2);
			free(eout);
		}
		free(aout);
		free(digits);
	}
	{
		char *jpath = qr_path_join(out, "report.json");
		cJSON *j = load_json(jpath);
		const cJSON *ds = j ? cJSON_GetObjectItem(j, "dataset") : NULL;
		char *idx = NULL;
		size_t ilen;

		ok(ds && strcmp(cJSON_GetObjectItem(ds, "source")->valuestring,
				"random") == 0 && num(ds, "samples") == 20,
		   "no --data: 20 random samples");
		ok(qr_read_file(index, &idx, &ilen, NULL) == QR_OK &&
		   strstr(idx, "random") != NULL &&
		   strstr(idx, "not representative") != NULL,
		   "index.html says plainly that the data was random");
		free(idx);
		cJSON_Delete(j);
		free(jpath);
	}

	/* Running again replaces the report in place. */
	rc = run((const char *[]){"--float", fmodel, "-o", out, "--quiet",
				  NULL});
	ok(rc == 0 && exists(index), "an existing report is replaced");

	/* --weights-only: the weight sections, no data run. */
	rc = run((const char *[]){"--float", fmodel, "--quant", qmodel,
				  "--weights-only", "-o", out, "--quiet", NULL});
	{
		char *jp = qr_path_join(out, "report.json");
		cJSON *j = load_json(jp);

		ok(rc == 0 && j != NULL &&
		   cJSON_GetArraySize(cJSON_GetObjectItem(j, "quant_weights")) > 0 &&
		   cJSON_GetArraySize(cJSON_GetObjectItem(j, "activations")) == 0,
		   "--weights-only: quant_weights filled, no activations (rc %d)",
		   rc);
		cJSON_Delete(j);
		free(jp);
	}

	/* Usage errors: exit 1. */
	check_bad("no arguments", (const char *[]){NULL}, 1, "--float", NULL);
	check_bad("unknown option", (const char *[]){"--nope", NULL}, 1,
		  "--nope", NULL);
	check_bad("missing -o", (const char *[]){"--float", fmodel, NULL}, 1,
		  "-o", NULL);

	/* Bad input: exit 2 naming the file. */
	bad = tmp("bad");
	check_bad("missing file",
		  (const char *[]){"--float", "/nonexistent/m.onnx", "-o", bad,
				   NULL}, 2, "/nonexistent/m.onnx", bad);
	check_bad("not ONNX",
		  (const char *[]){"--float", readme, "-o", bad, NULL}, 2,
		  "README.md", bad);
	trunc = tmp("truncated.onnx");
	if (qr_read_file(fmodel, &text, &len, NULL) == QR_OK) {
		qr_write_file(trunc, text, len / 2, NULL);
		free(text);
	}
	check_bad("truncated protobuf",
		  (const char *[]){"--float", trunc, "-o", bad, NULL}, 2,
		  "truncated.onnx", bad);
	ok(strstr(last_err, "cannot open") == NULL,
	   "truncated protobuf: the file was read, then refused");
	check_bad("bad quant model",
		  (const char *[]){"--float", fmodel, "--quant", trunc, "-o",
				   bad, NULL}, 2, "truncated.onnx", bad);
	{
		char *dt = src("tests/data/loader/bad_dtype.onnx");
		char *shape = src("tests/data/analysis/bad_shape.onnx");

		check_bad("unknown dtype",
			  (const char *[]){"--float", dt, "-o", bad, NULL}, 2,
			  "bad_dtype.onnx", bad);
		ok(strstr(last_err, "data type 99") != NULL,
		   "unknown dtype: message names the dtype");
		check_bad("weight shape mismatch",
			  (const char *[]){"--float", shape, "-o", bad, NULL}, 2,
			  "bad_shape.onnx", bad);
		ok(strstr(last_err, "node 'convbad'") != NULL &&
		   strstr(last_err, "shape [4,5,3,3]") != NULL,
		   "weight shape mismatch: message names node and shape");
		free(dt);
		free(shape);
	}
	{
		char *uns = src("tests/data/activations/unsupported.onnx");
		char *pout = tmp("partial"), *pjson = tmp("partial/report.json");
		cJSON *j;

		check_bad("missing --data",
			  (const char *[]){"--float", fmodel, "--quant", qmodel,
					   "--data", "/nonexistent", "-o", bad,
					   NULL}, 2, "/nonexistent", bad);
		rc = run((const char *[]){"--float", uns, "--quant", uns, "-o",
					  pout, NULL});
		ok(rc == 4, "a model the engine cannot run: exit 4 (got %d)",
		   rc);
		ok(strstr(last_err, "partial report") != NULL &&
		   strstr(last_err, "Frobnicate") != NULL,
		   "partial: stderr names the op (%s)", last_err);
		j = load_json(pjson);
		ok(j != NULL && cJSON_GetArraySize(cJSON_GetObjectItem(j,
							"weights")) == 1,
		   "partial: the weight report is still written");
		ok(j != NULL && cJSON_IsString(cJSON_GetObjectItem(
			   cJSON_GetObjectItem(j, "dataset"), "error")),
		   "partial: dataset.error says why no activation was compared");
		cJSON_Delete(j);
		free(uns);
		free(pout);
		free(pjson);
	}
	check_ci(fmodel, qmodel);
	RUN(check_ort_cpu);
	outfile = tmp("a-file");
	qr_write_file(outfile, "keep me", 7, NULL);
	check_bad("output is a file",
		  (const char *[]){"--float", fmodel, "-o", outfile, NULL}, 2,
		  "a-file", NULL);
	if (qr_read_file(outfile, &text, &len, NULL) == QR_OK) {
		ok(len == 7 && memcmp(text, "keep me", 7) == 0,
		   "output file left untouched");
		free(text);
	}

	qr_remove_tree(tmpdir);
	free(fmodel);
	free(qmodel);
	free(readme);
	free(out);
	free(index);
	free(bad);
	free(trunc);
	free(outfile);
	return done();
}
