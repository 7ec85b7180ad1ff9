/* test_report: the report folder from a hand-built analysis, escaping,
 * the template language and the atomic replace. */
#include "analysis/analysis.h"
#include "onnx/onnx.h"
#include "report/report.h"
#include "report/report-int.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"

#define HOSTILE "<script>alert(1)</script>"
#define QUOTED "\"quoted\" & 'single'"
#define DOTS "../../etc"

#define S(x) ((char *)(x))

/* ---- a small fake analysis: 3 layers, a candidate, a CLE set ---- */

static float w_min[3][4] = { { -1, -0.5f, -0.2f, -0.1f },
			     { -8, -0.1f, -0.1f, -0.1f },
			     { -1, -1, -1, -1 } };
static float w_max[3][4] = { { 1, 0.5f, 0.2f, 0.1f },
			     { 8, 0.1f, 0.1f, 0.1f },
			     { 1, 1, 1, 1 } };
static float w_mean[3][4] = { { 0, 0.01f, 0, 0 }, { 0.5f, 0, 0, 0 },
			      { 0, 0, 0, 0 } };
static float w_std[3][4] = { { 0.3f, 0.2f, 0.1f, 0.05f },
			     { 2, 0.05f, 0.05f, 0.05f },
			     { 0.5f, 0.5f, 0.5f, 0.5f } };
static float w_rel[3][4] = { { 10, 5, 2, 1 }, { 80, 1, 1, 1 },
			     { 1, 1, 1, 1 } };
static size_t outl0[] = { 0 };
static size_t outl1[] = { 0 };
static float cle_s[4] = { 0.5f, 1, 2, 4 };
static float cle_mn_b[4] = { -4, -1, -0.5f, -0.25f };
static float cle_mx_b[4] = { 4, 1, 0.5f, 0.25f };
static float cle_mn_a[4] = { -1, -1, -1, -1 };
static float cle_mx_a[4] = { 1, 1, 1, 1 };

static struct qr_op_count ops0[] = { { S("Conv"), 3 }, { S("Relu"), 2 },
				     { S(HOSTILE), 1 } };
static struct qr_io_desc in0[] = { { S("input"), S("float"),
				     S("[1,3,32,32]") } };
static struct qr_io_desc out0[] = { { S(QUOTED), S("float"), S("[1,10]") } };
static char *meta_k[] = { S("author") };
static char *meta_v[] = { S(HOSTILE) };

static struct qr_quant_layer qlayers[] = {
	{ S("conv1_quant"), S("QLinearConv"), S("conv1.weight_quantized"),
	  S("int8"), 8, 1, 0, 4, 0.001, 0.05, 0, 0, 1 },
	{ S(HOSTILE "_quant"), S("QLinearConv"), S("w2_quantized"), S("int8"),
	  8, 0, 0, 1, 0.06, 0.06, 0, 0, 1 },
};
static struct qr_coverage_entry cov[] = {
	{ S("conv1_quant"), S("QLinearConv"), 1 },
	{ S(HOSTILE "_quant"), S("QLinearConv"), 1 },
	{ S(DOTS), S("Gemm"), 0 },
};
static char *unmatched[] = { S(DOTS " (candidate 1): no quantized weight") };
static struct qr_cle_blocker blockers[] = {
	{ S("conv2"), S(DOTS), S("Clip(0,6) between them"),
	  S("replace ReLU6 with ReLU") },
};

static struct qr_model_summary models[2];
static struct qr_weight_stats weights[3];
static struct qr_quant_summary quants[1];
static struct qr_quant_weight qweights[2];
static struct qr_cle_set cle[1];
static struct qr_analysis fake;

static void
build_fake(void)
{
	static const char *names[3] = { "conv1", HOSTILE, DOTS QUOTED };
	size_t i;

	models[0] = (struct qr_model_summary){
		.role = S("float"), .path = S("models/" HOSTILE ".onnx"),
		.producer = S("pytorch 2.1"), .ir_version = 8,
		.opsets = S("ai.onnx:17"), .format = QR_QFMT_FLOAT,
		.n_nodes = 6, .n_inputs = 1, .inputs = in0, .n_outputs = 1,
		.outputs = out0, .n_ops = 3, .ops = ops0, .n_params = 1234567,
		.param_bytes = 4938268, .file_bytes = 4940000, .n_meta = 1,
		.meta_keys = meta_k, .meta_values = meta_v,
	};
	models[1] = models[0];
	models[1].role = S("quant");
	models[1].path = S("q.onnx");
	models[1].format = QR_QFMT_QOPERATOR;
	models[1].n_meta = 0;
	for (i = 0; i < 3; i++) {
		weights[i] = (struct qr_weight_stats){
			.layer = S(names[i]), .op = S("Conv"),
			.weight = S(i == 1 ? QUOTED : "conv.weight"),
			.shape = S("[4,3,3,3]"), .axis = 0, .channels = 4,
			.n_elem = 108, .ch_min = w_min[i], .ch_max = w_max[i],
			.ch_mean = w_mean[i], .ch_std = w_std[i],
			.rel_range = w_rel[i], .tukey_fence = 7.5,
			.sqnr_per_tensor_db = 35.0 - 12 * i,
			.sqnr_per_channel_db = 40.0, .depth = (int)i,
		};
	}
	weights[0].max_rel_range = 10;
	weights[0].n_outliers = 1;
	weights[0].outliers = outl0;
	weights[1].max_rel_range = 80;
	weights[1].n_outliers = 1;
	weights[1].outliers = outl1;
	weights[2].max_rel_range = 1;
	weights[2].sqnr_per_tensor_db = INFINITY; /* exact: JSON null */

	quants[0] = (struct qr_quant_summary){
		.path = S("q.onnx"), .format = QR_QFMT_QOPERATOR,
		.n_layers = 2, .layers = qlayers, .n_coverage = 3,
		.coverage = cov, .n_quantized = 2, .float_bytes = 4938268,
		.quant_bytes = 1240000,
	};
	qweights[0] = (struct qr_quant_weight){
		.quant = 0, .layer = S("conv1"), .quant_layer = S("conv1_quant"),
		.weight = S("conv.weight"),
		.quant_weight = S("conv1.weight_quantized"),
		.match = QR_MATCH_NAME, .match_reason = S("name W -> W_quantized"),
		.granularity = S("per-channel"), .bits = 8, .sqnr_db = 41.5,
		.clipped = 0, .n_elem = 108, .float_bytes = 432,
		.quant_bytes = 124, .compression = 432.0 / 124,
	};
	qweights[1] = qweights[0];
	qweights[1].layer = S(HOSTILE);
	qweights[1].quant_layer = S(HOSTILE "_quant");
	qweights[1].match = QR_MATCH_STRUCTURE;
	qweights[1].match_reason = S("same op and position; " QUOTED);
	qweights[1].granularity = S("per-tensor");
	qweights[1].sqnr_db = 12.25;
	qweights[1].clipped = 3;

	cle[0].n_layers = 2;
	for (i = 0; i < 2; i++) {
		cle[0].layers[i] = (struct qr_cle_layer){
			.name = S(i ? HOSTILE : "conv1"), .op = S("Conv"),
			.depthwise = 0, .bn_folded = i == 0, .channels = 4,
			.min_before = cle_mn_b, .max_before = cle_mx_b,
			.min_after = cle_mn_a, .max_after = cle_mx_a,
		};
	}
	cle[0].joins[0] = S("Relu");
	cle[0].n_scales[0] = 4;
	cle[0].scales[0] = cle_s;
	cle[0].max_rel_range_before = 16;
	cle[0].max_rel_range_after = 1;
	cle[0].sqnr_per_tensor_before_db = 24;
	cle[0].sqnr_per_tensor_after_db = 38;

	fake = (struct qr_analysis){
		.n_models = 2, .models = models, .n_weights = 3,
		.weights = weights, .n_quant = 1, .quants = quants,
		.n_qweights = 2, .qweights = qweights, .n_unmatched = 1,
		.unmatched = unmatched, .n_cle = 1, .cle = cle,
		.n_cle_blockers = 1, .cle_blockers = blockers, .seconds = 0.25,
	};
}

/* ---- helpers ---- */

static char *
slurp(const char *dir, const char *name)
{
	char *path = qr_path_join(dir, name), *text = NULL;

	if (qr_read_file(path, &text, NULL, NULL) != QR_OK)
		text = NULL;
	free(path);
	return text;
}

static int
exists(const char *dir, const char *name)
{
	char *path = qr_path_join(dir, name);
	struct stat sb;
	int rc = stat(path, &sb) == 0;

	free(path);
	return rc;
}

/* Entries of dir other than . and .. whose name starts with prefix. */
static int
count_entries(const char *dir, const char *prefix)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (dp == NULL)
		return -1;
	while ((de = readdir(dp)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(dp);
	return n;
}

static int
render(const char *text, const char *json, char **out, struct qr_diag *d)
{
	cJSON *ctx = cJSON_Parse(json);
	struct qr_buf b = {0};
	enum qr_status st;

	st = qr_tpl_render(NULL, "t.html", text, ctx, &b, d);
	*out = qr_buf_take(&b);
	cJSON_Delete(ctx);
	return st;
}

static int
render_is(const char *text, const char *json, const char *want)
{
	struct qr_diag d = {0};
	char *got;
	int st = render(text, json, &got, &d), rc;

	rc = ok(st == QR_OK && strcmp(got, want) == 0, "template %s", text);
	if (!rc)
		diag("got '%s' (%s), want '%s'", got, d.msg, want);
	free(got);
	qr_diag_clear(&d);
	return rc;
}

static void
render_fails(const char *text, const char *json, const char *needle)
{
	struct qr_diag d = {0};
	char *got;
	int st = render(text, json, &got, &d);

	ok(st == QR_EFORMAT && strstr(d.msg, needle) != NULL &&
	   strstr(d.msg, "t.html") != NULL,
	   "template %s fails naming '%s' (%s)", text, needle, d.msg);
	free(got);
	qr_diag_clear(&d);
}

static char *
escaped(void (*fn)(struct qr_buf *, const char *), const char *s)
{
	struct qr_buf b = {0};

	fn(&b, s);
	return qr_buf_take(&b);
}

/* ---- tests ---- */

static void
test_escape(void)
{
	struct qr_buf b = {0};
	char *s, *longs;
	size_t i;

	s = escaped(qr_html_escape, "<a href=\"x\">'&'</a>");
	ok(strcmp(s, "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;") == 0,
	   "html escape: %s", s);
	free(s);
	s = escaped(qr_html_escape, "a\x01" "b\xff" "c\xc3\xa9\xed\xa0\x80");
	ok(strcmp(s, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xc3\xa9"
		     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd") == 0,
	   "html escape: control, invalid and surrogate bytes become U+FFFD");
	free(s);
	longs = xmalloc(5001);
	memset(longs, 'x', 5000);
	longs[5000] = '\0';
	s = escaped(qr_html_escape, longs);
	ok(strlen(s) == 1000 + 3 && strcmp(s + 1000, "\xe2\x80\xa6") == 0,
	   "html escape: long strings cut at 1000 characters");
	free(s);
	longs[1000] = '\0';
	s = escaped(qr_html_escape, longs);
	ok(strcmp(s, longs) == 0, "html escape: 1000 characters are kept whole");
	free(s);
	memcpy(longs + 999, "\xc3\xa9<z", 5); /* é, then past the cut */
	s = escaped(qr_html_escape, longs);
	ok(strlen(s) == 999 + 2 + 3 && memcmp(s + 998, "x\xc3\xa9\xe2\x80\xa6",
						6) == 0,
	   "html escape: the cut counts characters, not bytes");
	free(s);
	free(longs);
	s = escaped(qr_md_escape, "a|b*c_d`e<f>[g]\nh");
	ok(strcmp(s, "a\\|b\\*c\\_d\\`e&lt;f&gt;\\[g\\] h") == 0,
	   "markdown escape: %s", s);
	free(s);

	qr_safe_name(&b, "w", 3, "../../etc/" HOSTILE);
	s = qr_buf_take(&b);
	ok(strcmp(s, "w3-.._.._etc__script_alert_1___script_") == 0,
	   "safe name: %s", s);
	for (i = 0; s[i] != '\0'; i++)
		if (strchr("/\\<>\"' ", s[i]) != NULL)
			break;
	ok(s[i] == '\0', "safe name has no path or HTML characters");
	free(s);
	qr_safe_name(&b, "w", 0, "");
	s = qr_buf_take(&b);
	ok(strcmp(s, "w0-layer") == 0, "safe name of an empty name: %s", s);
	free(s);
}

static void
test_template(void)
{
	const char *ctx = "{\"a\":\"<b>\",\"n\":3,\"x\":2.5,\"t\":true,"
			  "\"f\":false,\"z\":null,\"e\":[],"
			  "\"list\":[{\"v\":1},{\"v\":2,\"a\":\"in\"}],"
			  "\"o\":{\"k\":\"ok\"},\"s\":[\"p\",\"q\"]}";

	render_is("[{{a}}]", ctx, "[&lt;b&gt;]");
	render_is("[{{{a}}}][{{&a}}]", ctx, "[<b>][<b>]");
	render_is("{{n}} {{x}} {{t}} {{z}}.", ctx, "3 2.5 true .");
	render_is("{{#list}}{{v}}{{a}},{{/list}}", ctx, "1&lt;b&gt;,2in,");
	render_is("{{#e}}no{{/e}}{{^e}}empty{{/e}}", ctx, "empty");
	render_is("{{#f}}no{{/f}}{{^f}}yes{{/f}}{{#t}}T{{/t}}", ctx, "yesT");
	render_is("{{o.k}} {{#o}}{{k}}{{/o}}", ctx, "ok ok");
	render_is("{{#s}}<{{.}}>{{/s}}", ctx, "<p><q>");
	render_is("a{{! a comment }}b", ctx, "ab");
	render_is("{{#z}}x{{/z}}{{^z}}null{{/z}}", ctx, "null");
	render_fails("{{nope}}", ctx, "unknown variable 'nope'");
	render_fails("{{#list}}{{vv}}{{/list}}", ctx, "vv");
	render_fails("{{#list}}x", ctx, "never closed");
	render_fails("{{#list}}x{{/o}}", ctx, "closes section 'list'");
	render_fails("x{{/o}}", ctx, "closes no section");
	render_fails("{{a", ctx, "unterminated");
	render_fails("{{a b}}", ctx, "bad tag");
	render_fails("{{list}}", ctx, "is a list");
	render_fails("{{o.nope}}", ctx, "o.nope");
}

/* 1 when "<script" appears in md without a backslash before the '<'. */
static int
has_unescaped_tag(const char *md)
{
	const char *p;

	for (p = md; (p = strstr(p, "<script")) != NULL; p++)
		if (p == md || p[-1] != '\\')
			return 1;
	return 0;
}

static int
html_is_clean(const char *dir, const char *page)
{
	char *text = slurp(dir, page);
	const char *ours = "<script src=\"assets/qreport.js\" defer></script>";
	const char *s = text ? strstr(text, "<script") : NULL;
	/* the one script is qreport's own, from assets/ */
	int rc = text != NULL && s != NULL &&
		 strncmp(s, ours, strlen(ours)) == 0 &&
		 strstr(s + 1, "<script") == NULL &&
		 strstr(text, "&lt;script&gt;alert(1)") != NULL;

	free(text);
	return rc;
}

static void
test_json(const char *dir)
{
	char *text = slurp(dir, "report.json");
	cJSON *j = text ? cJSON_Parse(text) : NULL, *x, *w, *c, *q;
	static const char *wkeys[] = {
		"layer", "op", "weight", "channels", "ch_min", "ch_max",
		"ch_mean", "ch_std", "rel_range", "max_rel_range",
		"outlier_channels", "sqnr_per_tensor_db", "sqnr_per_channel_db",
	};
	static const char *ckeys[] = {
		"layers", "scales", "max_rel_range_before",
		"max_rel_range_after", "sqnr_per_tensor_before_db",
		"sqnr_per_tensor_after_db",
	};
	static const char *qkeys[] = { "quant", "layer", "granularity", "bits",
				       "sqnr_db", "clipped" };
	size_t i, k;
	int all;

	ok(j != NULL, "report.json parses");
	if (j == NULL) {
		free(text);
		return;
	}
	x = cJSON_GetObjectItem(j, "schema_version");
	ok(cJSON_IsNumber(x) && x->valueint == 3, "schema_version 3");
	x = cJSON_GetObjectItem(j, "models");
	ok(cJSON_GetArraySize(x) == 2, "two models");
	ok(strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(x, 0), "role")->valuestring, "float") == 0 &&
	   strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(x, 1), "role")->valuestring, "quant") == 0 &&
	   strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(x, 1), "format")->valuestring, "qoperator") == 0 &&
	   strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(x, 0), "path")->valuestring, "models/" HOSTILE ".onnx") == 0,
	   "models: role, format, path (unescaped in JSON)");
	x = cJSON_GetObjectItem(j, "dataset");
	ok(strcmp(cJSON_GetObjectItem(x, "source")->valuestring, "none") == 0 &&
	   cJSON_GetObjectItem(x, "samples")->valueint == 0,
	   "dataset: source none, 0 samples");

	x = cJSON_GetObjectItem(j, "weights");
	ok(cJSON_GetArraySize(x) == 3, "three weights");
	all = 1;
	cJSON_ArrayForEach(w, x)
		for (k = 0; k < sizeof wkeys / sizeof *wkeys; k++)
			all &= cJSON_HasObjectItem(w, wkeys[k]);
	ok(all, "every weights[] entry has every documented key");
	w = cJSON_GetArrayItem(x, 1);
	ok(strcmp(cJSON_GetObjectItem(w, "layer")->valuestring, HOSTILE) == 0,
	   "weights[1].layer kept verbatim");
	ok(cJSON_GetObjectItem(w, "max_rel_range")->valuedouble == 80 &&
	   cJSON_GetObjectItem(w, "channels")->valueint == 4 &&
	   cJSON_GetArraySize(cJSON_GetObjectItem(w, "ch_max")) == 4 &&
	   cJSON_GetArrayItem(cJSON_GetObjectItem(w, "ch_max"), 0)->valuedouble == 8 &&
	   cJSON_GetArrayItem(cJSON_GetObjectItem(w, "outlier_channels"), 0)->valueint == 0,
	   "weights[1] values");
	ok_near(cJSON_GetObjectItem(w, "sqnr_per_tensor_db")->valuedouble, 23,
		1e-9, "weights[1].sqnr_per_tensor_db");
	ok(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(x, 2),
					    "sqnr_per_tensor_db")),
	   "infinite SQNR is JSON null");

	x = cJSON_GetObjectItem(j, "cle");
	c = cJSON_GetArrayItem(x, 0);
	all = cJSON_GetArraySize(x) == 1;
	for (k = 0; c && k < sizeof ckeys / sizeof *ckeys; k++)
		all &= cJSON_HasObjectItem(c, ckeys[k]);
	ok(all, "cle[0] has every documented key");
	ok(c && cJSON_GetArraySize(cJSON_GetObjectItem(c, "layers")) == 2 &&
	   cJSON_GetArraySize(cJSON_GetObjectItem(c, "scales")) == 1 &&
	   cJSON_GetArraySize(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "scales"), 0)) == 4 &&
	   cJSON_GetObjectItem(c, "max_rel_range_before")->valuedouble == 16 &&
	   cJSON_GetObjectItem(c, "sqnr_per_tensor_after_db")->valuedouble == 38,
	   "cle[0] values");

	x = cJSON_GetObjectItem(j, "quant_weights");
	all = cJSON_GetArraySize(x) == 2;
	cJSON_ArrayForEach(q, x)
		for (k = 0; k < sizeof qkeys / sizeof *qkeys; k++)
			all &= cJSON_HasObjectItem(q, qkeys[k]);
	ok(all, "quant_weights[] entries have every documented key");
	q = cJSON_GetArrayItem(x, 1);
	ok(q && cJSON_GetObjectItem(q, "quant")->valueint == 0 &&
	   strcmp(cJSON_GetObjectItem(q, "granularity")->valuestring, "per-tensor") == 0 &&
	   cJSON_GetObjectItem(q, "bits")->valueint == 8 &&
	   cJSON_GetObjectItem(q, "sqnr_db")->valuedouble == 12.25 &&
	   cJSON_GetObjectItem(q, "clipped")->valueint == 3,
	   "quant_weights[1] values");
	ok(cJSON_IsArray(cJSON_GetObjectItem(j, "activations")) &&
	   cJSON_IsArray(cJSON_GetObjectItem(j, "outputs")),
	   "activations[] and outputs[] present (empty: no inference yet)");
	for (i = 0, all = 1; i < 2; i++)
		all &= cJSON_IsArray(cJSON_GetObjectItem(j, i ? "unmatched" : "cle_blockers"));
	ok(all, "extra keys: unmatched, cle_blockers");
	cJSON_Delete(j);
	free(text);
}

/* Every chart referenced by a page exists, is a PNG and has a safe
 * name. */
static void
test_charts(const char *dir)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n',
					      0x1a, '\n' };
	static const char *pages[] = { "index.html", "weights.html",
				       "model.html", "cle.html" };
	char *charts = qr_path_join(dir, "charts");
	int n = 0, bad = 0, missing = 0;
	struct dirent *de;
	size_t i;
	DIR *dp = opendir(charts);

	while (dp != NULL && (de = readdir(dp)) != NULL) {
		char *path, *data = NULL;
		size_t len = 0, k;

		if (de->d_name[0] == '.')
			continue;
		n++;
		for (k = 0; de->d_name[k] != '\0'; k++)
			if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-",
				   de->d_name[k]) == NULL)
				bad++;
		path = qr_path_join(charts, de->d_name);
		if (qr_read_file(path, &data, &len, NULL) != QR_OK || len < 8 ||
		    memcmp(data, sig, 8) != 0)
			bad++;
		free(data);
		free(path);
	}
	if (dp != NULL)
		closedir(dp);
	ok(n >= 3 + 2 + 1 + 2, "charts written (%d)", n);
	ok(bad == 0, "chart names are safe and files are PNGs");
	for (i = 0; i < sizeof pages / sizeof *pages; i++) {
		char *text = slurp(dir, pages[i]), *p = text;

		while (p && (p = strstr(p, "src=\"charts/")) != NULL) {
			char *end = strchr(p + 5, '"');
			char *rel = xstrndup(p + 5, (size_t)(end - p - 5));

			missing += !exists(dir, rel);
			free(rel);
			p = end;
		}
		free(text);
	}
	ok(missing == 0, "every <img> of the pages exists");
	free(charts);
}

static void
test_report(const char *root)
{
	static const char *files[] = {
		"index.html", "model.html", "weights.html", "quant.html",
		"cle.html", "help.html", "report.json", "summary.md",
		"assets/qreport.css", ".qreport",
	};
	struct qr_report_opts opts = { NULL, "qreport --float " HOSTILE, "9.9" };
	struct qr_diag d = {0};
	char *out = qr_path_join(root, "out"), *s;
	size_t i;
	int all = 1;

	ok(qr_report_write(&fake, &opts, out, &d) == QR_OK, "report written (%s)",
	   d.msg);
	for (i = 0; i < sizeof files / sizeof *files; i++)
		if (!exists(out, files[i])) {
			diag("missing %s", files[i]);
			all = 0;
		}
	ok(all, "every expected file exists");
	ok(count_entries(root, "out.") == 0, "no temporary folder left");
	all = 1;
	for (i = 0; i < 6; i++)
		all &= html_is_clean(out, files[i]);
	ok(all, "no raw <script> in any page, escaped form present");
	s = slurp(out, "index.html");
	ok(s && strstr(s, "class=\"verdict bad\"") && strstr(s, "<map ") &&
	   strstr(s, "href=\"layers/L1-_script_alert_1___script_.html\""),
	   "index: verdict, chart map, link to the layer's page");
	free(s);
	s = slurp(out, "weights.html");
	ok(s && strstr(s, "id=\"w-1\"") && strstr(s, "class=\"num bad\">80<"),
	   "weights: layer anchor and bad value coloured");
	free(s);
	s = slurp(out, "summary.md");
	ok(s && !has_unescaped_tag(s) &&
	   strstr(s, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL,
	   "summary.md escapes model strings");
	free(s);
	test_json(out);
	test_charts(out);
	s = slurp(out, "layers.html");
	ok(s && strstr(s, "<tr id=\"l-0\"") && strstr(s, "<tr id=\"l-2\"") &&
	   !strstr(s, "<tr id=\"l-3\""),
	   "layers.html: a row for each of the 3 layers (no graph)");
	free(s);
	ok(html_is_clean(out, "layers/L1-_script_alert_1___script_.html") &&
	   html_is_clean(out, "layers.html"),
	   "layer pages and layers.html escape model strings");
	s = slurp(out, "graph.html");
	ok(s && strstr(s, "No graph view") && !exists(out, "graph.svg"),
	   "without the model there is no graph, and graph.html says so");
	free(s);
	free(out);
	qr_diag_clear(&d);
}

/* ---- the graph view of a model with hostile names ---- */

static int
count_str(const char *s, const char *needle)
{
	int n = 0;

	for (; (s = strstr(s, needle)) != NULL; s += strlen(needle))
		n++;
	return n;
}

#define BACKSLASH "back\\Nslash\\G\\n"
#define CONTROL "ctl\x01\x1b[31m bad\xff\xfe utf8"

/* 1 when s is valid UTF-8 without control characters but \n, \t. */
static int
clean_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1
			: (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;

		if (n < 0 || (*p < 0x20 && *p != '\n' && *p != '\t') ||
		    *p == 0x7f)
			return 0;
		for (p++; n > 0; n--, p++)
			if ((*p & 0xc0) != 0x80)
				return 0;
	}
	return 1;
}

static void
test_graph(const char *root)
{
	static const char *in_input[] = { "input" };
	static const char *t[] = { "t0", "t1", "t2", "t3", "out" };
	static const char *ins[5][1] = { { "input" }, { "t0" }, { "t1" },
					 { "t2" }, { "t3" } };
	static const char *outs[5][1] = { { "t0" }, { "t1" }, { "t2" },
					  { "t3" }, { "out" } };
	static struct qr_node nodes[5];
	static struct qr_value_info gin = { "input", 1, -1, NULL };
	static struct qr_value_info gout = { "out", 1, -1, NULL };
	struct qr_model m;
	struct qr_report_opts opts = { NULL, "qreport", "9.9" };
	struct qr_diag d = {0};
	char *out = qr_path_join(root, "graph"), *svg, *page, *dt;
	const char *names[5] = { "conv1", HOSTILE, DOTS QUOTED, BACKSLASH,
				 CONTROL };
	size_t i;

	(void)in_input;
	(void)t;
	for (i = 0; i < 5; i++)
		nodes[i] = (struct qr_node){ names[i], i < 3 ? "Conv" :
					     i == 3 ? "Relu" : "Relu<b>&",
					     "", 1, ins[i], 1, outs[i], 0,
					     NULL };
	memset(&m, 0, sizeof m);
	m.path = "hostile.onnx";
	m.graph.name = HOSTILE;
	m.graph.n_node = 5;
	m.graph.nodes = nodes;
	m.graph.n_input = 1;
	m.graph.inputs = &gin;
	m.graph.n_output = 1;
	m.graph.outputs = &gout;
	opts.float_model = &m;
	ok(qr_report_write(&fake, &opts, out, &d) == QR_OK,
	   "report with a hostile graph (%s)", d.msg);
	svg = slurp(out, "graph.svg");
	ok(svg != NULL, "graph.svg written");
	ok(svg && !strstr(svg, "<script") &&
	   strstr(svg, "&lt;script&gt;alert(1)&lt;/script&gt;") &&
	   strstr(svg, "&quot;quoted&quot; &amp;") &&
	   strstr(svg, "Relu&lt;b&gt;&amp;"),
	   "graph.svg: names and ops XML-escaped");
	ok(svg && strstr(svg, "back\\Nslash\\G\\n") && !strstr(svg, "backn3") &&
	   strstr(svg, "back\xe2\x88\x96Nslash"),
	   "graph.svg: a backslash in a name stays a backslash (no \\N "
	   "expansion)");
	ok(svg && clean_utf8(svg), "graph.svg: valid UTF-8, no control "
	   "characters");
	ok(svg && count_str(svg, "<a xlink:href=\"layers/L") == 5,
	   "graph.svg: every node links to its layer page");
	free(svg);
	page = slurp(out, "graph.html");
	ok(page && html_is_clean(out, "graph.html") && clean_utf8(page),
	   "graph.html: the inlined SVG is escaped");
	free(page);
	ok(html_is_clean(out, "layers/L1-_script_alert_1___script_.html") &&
	   exists(out, "layers/L4-ctl___31m_bad___utf8.html"),
	   "layer pages of hostile nodes: safe names, escaped content");
	page = slurp(out, "layers.html");
	ok(page && count_str(page, "<tr id=\"l-") == 5,
	   "layers.html: every node of the graph is a row");
	free(page);
	dt = qr_dot_text("a\\N\x01\xff" "bc", 100, 0);
	ok(strcmp(dt, "a\\\\N \xef\xbf\xbd" "bc") == 0,
	   "qr_dot_text doubles backslashes, blanks controls, fixes UTF-8");
	free(dt);
	dt = qr_dot_text("abcdefgh", 4, 0);
	ok(strcmp(dt, "abcd\xe2\x80\xa6") == 0, "qr_dot_text cuts with an "
	   "ellipsis");
	free(dt);
	free(out);
	qr_diag_clear(&d);
}

/* ---- --fail-if ---- */

static void
test_gate(void)
{
	static const char *bad[] = {
		"", "layer", "layer.sqnr_db", "layer.sqnr_db 20",
		"layer.sqnr_db == 20", "layer.snr < 2", "model.cosine<1",
		"layer.sqnr_db < x", "layer.sqnr_db < 1e999", "layer.sqnr_db<2 3",
	};
	struct qr_gate g = {0};
	struct qr_diag d = {0};
	cJSON *j, *r;
	char *line;
	size_t i;
	int all = 1;

	for (i = 0; i < sizeof bad / sizeof *bad; i++)
		if (qr_gate_add(&g, bad[i], &d) != QR_EUSAGE ||
		    strchr(d.msg, '\n') != NULL) {
			diag("accepted: '%s'", bad[i]);
			all = 0;
		}
	ok(all && g.n == 0, "malformed --fail-if expressions are QR_EUSAGE");
	ok(qr_gate_add(&g, " weight.max_rel_range>50 ", &d) == QR_OK &&
	   qr_gate_add(&g, "layer.sqnr_db <= 20", &d) == QR_OK &&
	   qr_gate_add(&g, "layer.cosine<0.5", &d) == QR_OK &&
	   qr_gate_add(&g, "output.top1 < 0.99", &d) == QR_OK && g.n == 4,
	   "well-formed expressions parse (%s)", d.msg);
	j = cJSON_Parse("{\"weights\":[{\"layer\":\"a\",\"max_rel_range\":80},"
			"{\"layer\":\"b\",\"max_rel_range\":1},"
			"{\"layer\":\"c\",\"max_rel_range\":120}],"
			"\"activations\":[{\"tensor\":\"t\",\"quant\":0,"
			"\"sqnr_db\":null},{\"tensor\":\"u\",\"quant\":1,"
			"\"sqnr_db\":20}],\"outputs\":[]}");
	r = qr_report_gate_eval(&g, j);
	ok(g.checks[0].n_fail == 2 && g.checks[0].n_items == 3 &&
	   g.checks[0].worst && strncmp(g.checks[0].worst, "c ", 2) == 0,
	   "weight.max_rel_range>50: 2 of 3 fail, worst c (%s)",
	   g.checks[0].worst ? g.checks[0].worst : "none");
	ok(g.checks[1].n_fail == 1 && strstr(g.checks[1].worst,
					     "u (candidate 2)"),
	   "layer.sqnr_db<=20: an exact (null) SQNR passes, 20 fails");
	ok(g.checks[2].n_fail == 0 && g.checks[2].n_items == 2,
	   "a missing metric never matches");
	ok(g.checks[3].n_items == 0 && g.checks[3].n_fail == 0,
	   "no outputs: nothing to check, passed");
	ok(g.n_failed == 2 && cJSON_IsFalse(cJSON_GetObjectItem(r, "passed")),
	   "two checks failed");
	line = qr_gate_line(&g, 0);
	ok(strstr(line, "2 of 3 weight layers match") != NULL,
	   "gate line: %s", line);
	free(line);
	cJSON_Delete(r);
	cJSON_Delete(j);
	qr_gate_clear(&g);
	qr_diag_clear(&d);
}

static void
test_replace(const char *root)
{
	struct qr_diag d = {0};
	char *out = qr_path_join(root, "out"), *stale, *file, *text, *dir;
	char *empty = qr_path_join(root, "empty");

	/* An existing report is replaced, whatever it held. */
	stale = qr_path_join(out, "stale.txt");
	qr_write_file(stale, "x", 1, NULL);
	ok(qr_report_write(&fake, NULL, out, &d) == QR_OK &&
	   !exists(out, "stale.txt") && exists(out, "index.html"),
	   "an existing report is replaced");
	ok(count_entries(root, "out.") == 0, "no .tmp or .old folder left");
	free(stale);

	/* A file is never replaced. */
	file = qr_path_join(root, "afile");
	qr_write_file(file, "keep me", 7, NULL);
	ok(qr_report_write(&fake, NULL, file, &d) == QR_EIO &&
	   strstr(d.msg, "not a qreport report") != NULL,
	   "output that is a file: QR_EIO (%s)", d.msg);
	text = slurp(root, "afile");
	ok(text && strcmp(text, "keep me") == 0, "the file is untouched");
	ok(count_entries(root, "afile.") == 0, "no temporary folder left");
	free(text);

	/* Nor a folder that is not a report. */
	dir = qr_path_join(root, "mine");
	qr_mkdirs(dir, NULL);
	free(file);
	file = qr_path_join(dir, "precious.txt");
	qr_write_file(file, "data", 4, NULL);
	ok(qr_report_write(&fake, NULL, dir, &d) == QR_EIO,
	   "non-empty folder that is not a report: QR_EIO");
	text = slurp(dir, "precious.txt");
	ok(text && strcmp(text, "data") == 0 && count_entries(dir, "") == 1,
	   "the folder is untouched");
	free(text);

	/* An empty folder is fine; a trailing slash too. */
	qr_mkdirs(empty, NULL);
	free(file);
	file = xasprintf("%s/", empty);
	ok(qr_report_write(&fake, NULL, file, &d) == QR_OK &&
	   exists(empty, "index.html"), "an empty folder is filled");
	ok(count_entries(root, "empty.") == 0, "no temporary folder left");
	free(file);
	free(dir);
	free(empty);
	free(out);
	qr_diag_clear(&d);
}

static void
test_templates_dir(const char *root)
{
	struct qr_diag d = {0};
	struct qr_report_opts opts = { NULL, NULL, "9.9" };
	char *tdir = qr_path_join(root, "tpl"), *out = qr_path_join(root, "out");
	char *idx = qr_path_join(tdir, "index.html"), *text = NULL, *bad;
	char *css = qr_path_join(tdir, "assets/qreport.css");

	ok(qr_report_export_templates(tdir, &d) == QR_OK &&
	   exists(tdir, "_head.html") && exists(tdir, "assets/qreport.css"),
	   "templates exported");
	opts.templates_dir = tdir;
	qr_write_file(css, "/* custom */", 12, NULL);
	ok(qr_report_write(&fake, &opts, out, &d) == QR_OK,
	   "report from a templates folder (%s)", d.msg);
	text = slurp(out, "assets/qreport.css");
	ok(text && strcmp(text, "/* custom */") == 0,
	   "assets come from the templates folder");
	free(text);

	qr_read_file(idx, &text, NULL, NULL);
	bad = xasprintf("%s{{verdcit.text}}", text);
	qr_write_file(idx, bad, strlen(bad), NULL);
	ok(qr_report_write(&fake, &opts, out, &d) == QR_EFORMAT &&
	   strstr(d.msg, "index.html") && strstr(d.msg, "verdcit.text"),
	   "unknown variable: QR_EFORMAT naming template and variable (%s)",
	   d.msg);
	ok(exists(out, "index.html") && count_entries(root, "out.") == 0,
	   "the previous report survives a failed run, no temp folder left");
	free(bad);
	bad = xasprintf("{{#weights}}%s", text);
	qr_write_file(idx, bad, strlen(bad), NULL);
	ok(qr_report_write(&fake, &opts, out, &d) == QR_EFORMAT &&
	   strstr(d.msg, "never closed") != NULL,
	   "unbalanced section: QR_EFORMAT (%s)", d.msg);
	unlink(idx);
	ok(qr_report_write(&fake, &opts, out, &d) == QR_EIO,
	   "missing template: QR_EIO (%s)", d.msg);
	free(bad);
	free(text);
	free(css);
	free(idx);
	free(out);
	free(tdir);
	qr_diag_clear(&d);
}

int
main(void)
{
	char root[] = "/tmp/test_report.XXXXXX";

	plan_no_plan();
	if (mkdtemp(root) == NULL)
		skip_all("cannot create a temporary folder");
	build_fake();
	RUN(test_escape);
	RUN(test_template);
	test_report(root);
	test_graph(root);
	RUN(test_gate);
	test_replace(root);
	test_templates_dir(root);
	if (getenv("QR_KEEP") == NULL)
		qr_remove_tree(root);
	else
		diag("kept %s", root);
	return done();
}
