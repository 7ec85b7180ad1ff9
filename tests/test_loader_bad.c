/*
 * test_loader_bad: the loader on the fixtures of tests/data/loader/ (made
 * by tests/data/make_loader_fixtures.py): hostile files get the right
 * status and a one-line message naming the file and tensor or node;
 * external data and typed fields give the right values.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx.h"
#include "tap.h"
#include "util/util.h"

#define DATA QR_SRCDIR "/tests/data/loader/"

/* A file the loader must refuse, and what its message must name. */
static const struct {
	const char *file;
	enum qr_status st;
	const char *names; /* must appear in the message */
} bad[] = {
	{"truncated.onnx", QR_EFORMAT, "not an ONNX model"},
	{"not_onnx.onnx", QR_EFORMAT, "not an ONNX model"},
	{"empty.onnx", QR_EFORMAT, "empty"},
	{"no_graph.onnx", QR_EFORMAT, "not an ONNX model"},
	{"no_ir.onnx", QR_EFORMAT, "not an ONNX model"},
	{"no_such_file.onnx", QR_EIO, "no_such_file.onnx"},
	{"deep_graph.onnx", QR_EFORMAT, "nested more than 64 deep"},
	{"deep_wire.onnx", QR_EFORMAT, "not an ONNX model"},
	{"bad_dtype.onnx", QR_EUNSUPPORTED, "'w_bad'"},
	{"raw_len.onnx", QR_EFORMAT, "'w_len'"},
	{"neg_dim.onnx", QR_ESHAPE, "'w_neg'"},
	{"overflow.onnx", QR_ESHAPE, "'w_big'"},
	{"const_bad.onnx", QR_EFORMAT, "node 'kbad'"},
	{"ext_dotdot.onnx", QR_EFORMAT, "'w_up'"},
	{"ext_dotdot2.onnx", QR_EFORMAT, "'w_up2'"},
	{"ext_abs.onnx", QR_EFORMAT, "'w_abs'"},
	{"ext_past_end.onnx", QR_EFORMAT, "'w_far'"},
	{"ext_too_long.onnx", QR_EFORMAT, "'w_long'"},
	{"ext_len.onnx", QR_EFORMAT, "'w_short'"},
	{"ext_missing.onnx", QR_EIO, "'w_gone'"},
	{"ext_symlink.onnx", QR_EIO, "'w_link'"}, /* no link.bin here */
};

/* Load path expecting st; the message must name path and what. */
static void
expect_refusal(const char *path, enum qr_status want, const char *what)
{
	struct qr_model *m = (struct qr_model *)&m; /* must be reset */
	struct qr_diag d = {0};
	enum qr_status st;

	st = qr_onnx_load(path, &m, &d);
	diag("%s", d.msg);
	if (!ok(st == want && m == NULL && d.status == want &&
		strstr(d.msg, qr_path_basename(path)) != NULL &&
		strstr(d.msg, what) != NULL && strchr(d.msg, '\n') == NULL,
		"%s: %s naming %s", qr_path_basename(path),
		qr_status_name(want), what))
		diag("got %s: %s", qr_status_name(st), d.msg);
	qr_diag_clear(&d);
}

static struct qr_model *
load_ok(const char *file)
{
	char *path = xasprintf("%s%s", DATA, file);
	struct qr_model *m = NULL;
	struct qr_diag d = {0};

	if (!ok(qr_onnx_load(path, &m, &d) == QR_OK && m != NULL, "%s loads",
		file))
		diag("%s", d.msg);
	qr_diag_clear(&d);
	free(path);
	return m;
}

static const struct qr_tensor_data *
init(const struct qr_model *m, const char *name)
{
	size_t i;

	for (i = 0; m != NULL && i < m->graph.n_init; i++)
		if (strcmp(m->graph.inits[i].name, name) == 0)
			return &m->graph.inits[i];
	diag("no initializer '%s'", name);
	return NULL;
}

/* t has dtype, n elements, and values want (compared as float). */
static int
values_are(const struct qr_tensor_data *t, int dtype, size_t n,
	   const double *want)
{
	float f[8];
	size_t i;

	if (t == NULL || t->dtype != dtype || t->n_elem != n || n > 8 ||
	    t->nbytes != n * qr_dtype_size(dtype) ||
	    qr_tensor_to_f32(t, f, NULL) != QR_OK)
		return 0;
	for (i = 0; i < n; i++) {
		if (f[i] != (float)want[i] || qr_tensor_get(t, i) != want[i]) {
			diag("%s[%zu] = %g, want %g", t->name, i, f[i], want[i]);
			return 0;
		}
	}
	return 1;
}

static void
check_external(void)
{
	static const double w[] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
	static const double q[] = {-1, 2, -3, 4};
	static const double odd[] = {-7.25, 8.0};
	struct qr_model *m = load_ok("ext_ok.onnx");
	const struct qr_tensor_data *t;

	if (m == NULL)
		return;
	t = init(m, "e_w");
	ok(values_are(t, QR_DT_FLOAT, 6, w) && t->external && t->ndim == 2 &&
	   t->dims[1] == 3, "external float [2,3] at offset 0");
	ok(values_are(init(m, "e_q"), QR_DT_INT8, 4, q),
	   "external int8 at offset 24");
	t = init(m, "e_odd");
	ok(values_are(t, QR_DT_FLOAT, 2, odd) &&
	   (uintptr_t)t->data % 4 == 0,
	   "external float at odd offset 29, no length: aligned copy");
	ok(m->external_bytes == 36, "external_bytes is 36 (%zu)",
	   m->external_bytes);
	ok((const char *)init(m, "e_q")->data ==
	   (const char *)init(m, "e_w")->data + 24,
	   "one mapping of ext_ok.bin, tensors point into it");
	qr_onnx_free(m);
}

/* Copy file into dir. */
static void
copy_file(const char *file, const char *dir)
{
	char *src = xasprintf("%s%s", DATA, file);
	char *dst = qr_path_join(dir, file);
	char *buf;
	size_t len;

	QR_ASSERT(qr_read_file(src, &buf, &len, NULL) == QR_OK);
	QR_ASSERT(qr_write_file(dst, buf, len, NULL) == QR_OK);
	free(buf);
	free(src);
	free(dst);
}

/* A symlink that leaves the model's folder is refused; one that stays in
 * it is followed. */
static void
check_symlink(void)
{
	char tmpl[] = "/tmp/qr-loader-XXXXXX";
	char *top = mkdtemp(tmpl);
	char *dir, *outside, *inside, *link, *model;
	static const float two[2] = {1.25f, -2.0f};
	static const double want[] = {1.25, -2.0};
	struct qr_model *m = NULL;
	struct qr_diag d = {0};
	enum qr_status st;

	QR_ASSERT(top != NULL);
	dir = qr_path_join(top, "model");
	/* shares the folder's name as a prefix: /tmp/x/model-outside.bin */
	outside = qr_path_join(top, "model-outside.bin");
	inside = qr_path_join(dir, "inside.bin");
	link = qr_path_join(dir, "link.bin");
	model = qr_path_join(dir, "ext_symlink.onnx");
	QR_ASSERT(qr_mkdirs(dir, NULL) == QR_OK);
	copy_file("ext_symlink.onnx", dir);
	QR_ASSERT(qr_write_file(outside, two, sizeof two, NULL) == QR_OK);
	QR_ASSERT(qr_write_file(inside, two, sizeof two, NULL) == QR_OK);

	QR_ASSERT(symlink("../model-outside.bin", link) == 0);
	expect_refusal(model, QR_EFORMAT, "'w_link'");

	QR_ASSERT(unlink(link) == 0 && symlink("inside.bin", link) == 0);
	st = qr_onnx_load(model, &m, &d);
	if (!ok(st == QR_OK && values_are(init(m, "w_link"), QR_DT_FLOAT, 2,
					  want),
		"symlink inside the model's folder is followed"))
		diag("%s", d.msg);
	qr_onnx_free(m);
	qr_diag_clear(&d);
	qr_remove_tree(top);
	free(dir);
	free(outside);
	free(inside);
	free(link);
	free(model);
}

static void
check_typed(void)
{
	static const double f32[] = {1.0, -2.0, 3.5, 4.25};
	static const double i8[] = {-128, -1, 0, 127};
	static const double f16[] = {1.0, -2.5, 65504.0};
	static const double u8[] = {0, 255};
	static const double b[] = {1, 0, 1};
	static const double i64[] = {-5, 1099511627776.0};
	static const double f64[] = {0.125};
	static const double u32[] = {7, 4000000000.0};
	static const double i4[] = {-1, 7, -8};
	static const double u4[] = {10, 5, 15};
	static const double bf16[] = {1.5, -8};
	struct qr_model *m = load_ok("typed.onnx");
	const struct qr_tensor_data *t;
	struct qr_diag d = {0};
	float f[2];

	if (m == NULL)
		return;
	ok(values_are(init(m, "t_f32"), QR_DT_FLOAT, 4, f32), "float_data");
	ok(values_are(init(m, "t_i8"), QR_DT_INT8, 4, i8), "int8 in int32_data");
	ok(values_are(init(m, "t_f16"), QR_DT_FLOAT16, 3, f16),
	   "float16 in int32_data");
	ok(values_are(init(m, "t_u8"), QR_DT_UINT8, 2, u8), "uint8 in int32_data");
	ok(values_are(init(m, "t_bool"), QR_DT_BOOL, 3, b), "bool in int32_data");
	ok(values_are(init(m, "t_i64"), QR_DT_INT64, 2, i64), "int64_data");
	ok(values_are(init(m, "t_f64"), QR_DT_DOUBLE, 1, f64), "double_data");
	ok(values_are(init(m, "t_u32"), QR_DT_UINT32, 2, u32),
	   "uint32 in uint64_data");
	ok(values_are(init(m, "t_i4"), QR_DT_INT4, 3, i4),
	   "int4 raw_data unpacked, sign-extended");
	ok(values_are(init(m, "t_u4"), QR_DT_UINT4, 3, u4),
	   "uint4 packed in int32_data unpacked");
	ok(values_are(init(m, "t_bf16"), QR_DT_BFLOAT16, 2, bf16),
	   "bfloat16 raw_data");
	t = init(m, "t_str");
	ok(t != NULL && t->dtype == QR_DT_STRING && t->data == NULL &&
	   t->n_elem == 2, "string tensor loads without data");
	ok(t != NULL && qr_tensor_to_f32(t, f, &d) == QR_EUNSUPPORTED &&
	   strstr(d.msg, "t_str") != NULL, "string to float is refused");
	qr_diag_clear(&d);
	qr_onnx_free(m);
}

static void
check_const(void)
{
	struct qr_model *m = load_ok("const.onnx");
	const struct qr_tensor_data *t;
	const struct qr_node *n;
	const struct qr_value_info *x;

	if (m == NULL)
		return;
	n = m->graph.nodes;
	t = qr_node_const_value(&n[0]);
	ok(t != NULL && t->dtype == QR_DT_FLOAT && t->ndim == 2 &&
	   t->dims[0] == 2 && t->dims[1] == 3 && qr_tensor_get(t, 5) == 5.0 &&
	   strcmp(t->name, "cw") == 0, "Constant value: float [2,3] 'cw'");
	t = qr_node_const_value(&n[1]);
	ok(t != NULL && t->dtype == QR_DT_FLOAT && t->ndim == 1 &&
	   t->dims[0] == 2 && qr_tensor_get(t, 1) == -0.5 &&
	   strcmp(t->name, "cb") == 0, "Constant value_floats: float [2]");
	t = qr_node_const_value(&n[2]);
	ok(t != NULL && t->dtype == QR_DT_INT64 && t->ndim == 0 &&
	   t->n_elem == 1 && qr_tensor_get(t, 0) == 42,
	   "Constant value_int: int64 scalar 42");
	ok(qr_node_const_value(&n[3]) == NULL, "Identity is not a Constant");
	ok(strcmp(n[1].name, "Constant_1") == 0 &&
	   strcmp(n[4].name, "Identity_4") == 0 &&
	   strcmp(n[0].name, "const_w") == 0, "unnamed nodes get <op>_<i>");
	ok(qr_node_attr_float(&n[5], "alpha", 1.0f) == 0.5f &&
	   qr_node_attr_int(&n[5], "transB", 0) == 1 &&
	   qr_node_attr_float(&n[5], "beta", 1.0f) == 1.0f &&
	   strcmp(qr_node_attr_str(&n[5], "nope", "dflt"), "dflt") == 0,
	   "Gemm attributes and defaults");
	ok(n[6].n_in == 3 && strcmp(n[6].in[1], "") == 0,
	   "absent optional input is \"\"");
	ok(qr_model_opset(m, "") == 13 && qr_model_opset(m, "ai.onnx") == 13 &&
	   qr_model_opset(m, "com.microsoft") == 1 &&
	   qr_model_opset(m, "com.example") == 0,
	   "opset imports, \"ai.onnx\" is the default domain");
	ok(m->n_meta == 2 && strcmp(m->meta[0].key, "author") == 0 &&
	   strcmp(m->meta[0].value, "qreport") == 0, "metadata_props");
	x = &m->graph.inputs[0];
	ok(x->ndim == 2 && x->dims[0].value == -1 && x->dims[0].param != NULL &&
	   strcmp(x->dims[0].param, "batch") == 0 && x->dims[1].value == 3 &&
	   x->dims[1].param == NULL && x->dtype == QR_DT_FLOAT,
	   "input x is float [batch,3]");
	ok(m->graph.n_value_info == 1 &&
	   strcmp(m->graph.value_info[0].name, "y") == 0, "value_info");
	ok(m->graph.n_output == 2 && m->graph.outputs[1].ndim == 0,
	   "scalar output has rank 0");
	ok(m->ir_version == 8 && strcmp(m->producer_name, "qreport-fixtures")
	   == 0, "ir_version and producer");
	qr_onnx_free(m);
}

/* Buffers and .pb tensors. */
static void
check_buffers(void)
{
	struct qr_arena a = {0};
	struct qr_model *m = NULL;
	struct qr_tensor_data t;
	struct qr_diag d = {0};
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	/* TensorProto: dims [2] (field 1), data_type float (2), raw_data (9)
	 * of 8 bytes: 1.0f, -3.0f; name "pb" (8). */
	static const uint8_t pb[] = {
		0x08, 0x02, 0x10, 0x01, 0x42, 0x02, 'p', 'b', 0x4a, 0x08,
		0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x40, 0xc0,
	};
	static const double want[] = {1.0, -3.0};
	char *buf;
	size_t len;

	ok(qr_onnx_load_tensor_pb(pb, sizeof pb, "x.pb", &a, &t, &d) ==
	   QR_OK && values_are(&t, QR_DT_FLOAT, 2, want) &&
	   strcmp(t.name, "pb") == 0, "TensorProto buffer decodes");
	ok(qr_onnx_load_tensor_pb(junk, sizeof junk, "junk.pb", &a, &t, &d) ==
	   QR_EFORMAT && strstr(d.msg, "junk.pb") != NULL,
	   "garbage .pb is refused naming it");
	ok(qr_onnx_load_tensor_pb(pb, 0, "zero.pb", &a, &t, &d) == QR_EFORMAT,
	   "empty .pb is refused");
	ok(qr_onnx_load_buffer(junk, sizeof junk, "junk.onnx", NULL, &m, &d) ==
	   QR_EFORMAT && m == NULL, "garbage buffer is refused");
	QR_ASSERT(qr_read_file(DATA "ext_ok.onnx", &buf, &len, NULL) == QR_OK);
	ok(qr_onnx_load_buffer(buf, len, "mem.onnx", NULL, &m, &d) ==
	   QR_EFORMAT && strstr(d.msg, "mem.onnx") != NULL &&
	   strstr(d.msg, "'e_w'") != NULL,
	   "external data refused without a base folder");
	free(buf);
	qr_arena_free(&a);
	qr_diag_clear(&d);
}

/* float8 and float16 decoding on literal bytes. */
static void
check_float_formats(void)
{
	static const struct {
		int dtype;
		uint8_t bits;
		double want; /* NAN: must be NaN */
	} f8[] = {
		{QR_DT_FLOAT8E4M3FN, 0x38, 1.0},
		{QR_DT_FLOAT8E4M3FN, 0x7e, 448.0},
		{QR_DT_FLOAT8E4M3FN, 0x01, 0.001953125}, /* 2^-9 */
		{QR_DT_FLOAT8E4M3FN, 0xc0, -2.0},
		{QR_DT_FLOAT8E4M3FN, 0x7f, NAN},
		{QR_DT_FLOAT8E4M3FNUZ, 0x40, 1.0},
		{QR_DT_FLOAT8E4M3FNUZ, 0x7f, 240.0},
		{QR_DT_FLOAT8E4M3FNUZ, 0x80, NAN},
		{QR_DT_FLOAT8E5M2, 0x3c, 1.0},
		{QR_DT_FLOAT8E5M2, 0x7b, 57344.0},
		{QR_DT_FLOAT8E5M2, 0x7c, INFINITY},
		{QR_DT_FLOAT8E5M2FNUZ, 0x40, 1.0},
		{QR_DT_FLOAT8E5M2FNUZ, 0x7f, 57344.0},
		{QR_DT_FLOAT8E5M2FNUZ, 0x80, NAN},
	};
	static const uint16_t h[] = {0x0001, 0x7c00, 0xfbff, 0x3555};
	struct qr_tensor_data t = {0};
	float f[4];
	size_t i;
	int good = 1;

	t.name = "f8";
	t.n_elem = 1;
	for (i = 0; i < sizeof f8 / sizeof *f8; i++) {
		t.dtype = f8[i].dtype;
		t.data = &f8[i].bits;
		QR_ASSERT(qr_tensor_to_f32(&t, f, NULL) == QR_OK);
		if (isnan(f8[i].want) ? !isnan(f[0]) : f[0] != f8[i].want) {
			diag("%s 0x%02x: got %g want %g",
			     qr_dtype_name(t.dtype), f8[i].bits, f[0],
			     f8[i].want);
			good = 0;
		}
	}
	ok(good, "float8 formats decode");
	t.dtype = QR_DT_FLOAT16;
	t.n_elem = 4;
	t.data = h;
	ok(qr_tensor_to_f32(&t, f, NULL) == QR_OK && f[0] == ldexpf(1, -24) &&
	   isinf(f[1]) && f[2] == -65504.0f,
	   "float16 subnormal, inf, max");
	ok_near(f[3], 0.333251953125, 0, "float16 0x3555");
	ok(strcmp(qr_dtype_name(QR_DT_INT4), "int4") == 0 &&
	   qr_dtype_size(QR_DT_INT4) == 1 && qr_dtype_bits(QR_DT_INT4) == 4 &&
	   qr_dtype_bits(QR_DT_INT8) == 8 && qr_dtype_bits(QR_DT_FLOAT) == 0 &&
	   qr_dtype_size(QR_DT_STRING) == 0 && !qr_dtype_valid(99) &&
	   !qr_dtype_valid(0) && strcmp(qr_dtype_name(99), "undefined") == 0,
	   "dtype helpers");
}

/* n floats of t are first + step * i. */
static int
ramp_is(const struct qr_tensor_data *t, size_t n, float first, float step)
{
	const float *f = t != NULL ? t->data : NULL;
	size_t i;

	if (t == NULL || t->dtype != QR_DT_FLOAT || t->n_elem != n ||
	    t->nbytes != n * sizeof(float))
		return 0;
	for (i = 0; i < n; i++)
		if (f[i] != first + step * (float)i) {
			diag("%s[%zu] = %g", t->name, i, f[i]);
			return 0;
		}
	return 1;
}

/*
 * Large raw_data is copied in apart from the rest of the message (so a
 * model is not held twice while it loads); protobuf's rules must still
 * hold: a field given twice counts the last time, a message field given
 * twice is merged. From a file (mapped) and from a buffer alike.
 */
static void
check_lean(void)
{
	static const char *const files[] = {
		"raw_twice_small.onnx", "raw_twice_big.onnx", "two_graphs.onnx",
	};
	struct qr_diag d = {0};
	size_t k, way;

	for (k = 0; k < 3; k++) {
		for (way = 0; way < 2; way++) {
			char *path = xasprintf("%s%s", DATA, files[k]);
			struct qr_model *m = NULL;
			char *buf = NULL;
			size_t len = 0;
			int good;

			if (way == 0)
				qr_onnx_load(path, &m, &d);
			else if (qr_read_file(path, &buf, &len, &d) == QR_OK)
				qr_onnx_load_buffer(buf, len, files[k], NULL,
						    &m, &d);
			if (k == 0)
				good = m && m->graph.n_init == 1 &&
				       ramp_is(init(m, "w"), 4, 1, 1);
			else if (k == 1)
				good = m && m->graph.n_init == 1 &&
				       ramp_is(init(m, "w"), 2048, 0, 1);
			else
				good = m && m->graph.n_init == 2 &&
				       m->graph.n_node == 1 &&
				       ramp_is(init(m, "w"), 2048, 0, 1) &&
				       ramp_is(init(m, "v"), 2048, 0, 2);
			ok(good, "%s from a %s: %s", files[k],
			   way ? "buffer" : "file",
			   k == 0 ? "raw_data twice, the last (small) counts" :
			   k == 1 ? "raw_data twice, the last (large) counts" :
			   "two graph fields merged: both initializers");
			qr_onnx_free(m);
			free(buf);
			free(path);
		}
	}
	qr_diag_clear(&d);
}

int
main(void)
{
	size_t i;

	plan_no_plan();
	if (access(DATA "typed.onnx", R_OK) != 0)
		skip_all("fixtures not found in " DATA);
	for (i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *path = xasprintf("%s%s", DATA, bad[i].file);

		expect_refusal(path, bad[i].st, bad[i].names);
		free(path);
	}
	RUN(check_external);
	RUN(check_symlink);
	RUN(check_typed);
	RUN(check_const);
	RUN(check_buffers);
	RUN(check_float_formats);
	RUN(check_lean);
	return done();
}
