/*
 * test_qops: the quantized operators on literal arrays, through their
 * descriptors (check, prepare, infer, run, release), with expected
 * outputs worked out by hand from ONNX Runtime's formulas (see
 * src/ops/op_qlinear.c, op_qconv.c and op_qmatmul.c). The com.microsoft
 * ops have no ONNX conformance data, so these are their only exact
 * tests. Each case runs twice: with every input constant at
 * prepare (packed once) and with none.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "kernels/kernels.h"
#include "onnx/onnx.h"
#include "ops/op-int.h"
#include "ops/ops.h"
#include "tap.h"

#define MAX_IO 16

/* One input of a case: dtype, shape and literal data (NULL: absent). */
struct tin {
	int dtype;
	int ndim;
	int64_t dims[4];
	const void *data;
};

static struct qr_attr
a_int(const char *name, int64_t v)
{
	struct qr_attr a;

	memset(&a, 0, sizeof a);
	a.name = name;
	a.type = QR_ATTR_INT;
	a.i = v;
	return a;
}

static struct qr_attr
a_float(const char *name, float v)
{
	struct qr_attr a;

	memset(&a, 0, sizeof a);
	a.name = name;
	a.type = QR_ATTR_FLOAT;
	a.f = v;
	return a;
}

static struct qr_attr
a_ints(const char *name, const int64_t *v, size_t n)
{
	struct qr_attr a;

	memset(&a, 0, sizeof a);
	a.name = name;
	a.type = QR_ATTR_INTS;
	a.ints = v;
	a.n = n;
	return a;
}

/*
 * Run desc on the inputs; output 0 is compared with want (n_want
 * elements of the output's dtype, shape want_dims). consts: every input
 * is visible at check and prepare. Returns the first failing status, or
 * QR_OK; *match tells whether the output matched.
 */
static enum qr_status
run_case(const struct qr_op_desc *desc, const struct tin *ins, size_t n_in,
	 const struct qr_attr *attrs, size_t n_attr, int consts,
	 int want_ndim, const int64_t *want_dims, const void *want,
	 size_t n_want, int *match, struct qr_diag *d)
{
	const char *in_names[MAX_IO], *out_names[1] = {"y"};
	static const char *names[MAX_IO] = {"i0", "i1", "i2", "i3", "i4", "i5",
		"i6", "i7", "i8", "i9", "i10", "i11", "i12", "i13", "i14",
		"i15"};
	struct qr_tensor *in[MAX_IO] = {0}, *prep[MAX_IO] = {0}, *out[1];
	int in_dt[MAX_IO], out_dt[1] = {QR_DT_UNDEFINED};
	struct qr_node node;
	struct qr_op_call c;
	enum qr_status st;
	size_t i;

	*match = 0;
	memset(&node, 0, sizeof node);
	node.name = "t";
	node.op_type = desc->name;
	node.domain = desc->domain;
	node.n_in = n_in;
	node.in = in_names;
	node.n_out = 1;
	node.out = out_names;
	node.n_attr = n_attr;
	node.attrs = attrs;
	for (i = 0; i < n_in; i++) {
		in_names[i] = ins[i].data ? names[i] : "";
		in_dt[i] = ins[i].data ? ins[i].dtype : QR_DT_UNDEFINED;
		if (ins[i].data == NULL)
			continue;
		st = qr_tensor_new(ins[i].dtype, ins[i].ndim, ins[i].dims,
				   &in[i], d);
		QR_ASSERT(st == QR_OK);
		in[i]->name = names[i];
		memcpy(in[i]->data, ins[i].data, in[i]->nbytes);
		if (consts)
			prep[i] = in[i];
	}
	out[0] = xcalloc(1, sizeof *out[0]);
	out[0]->owned = 1;
	memset(&c, 0, sizeof c);
	c.node = &node;
	c.opset = 21;
	c.n_in = n_in;
	c.in = prep;
	c.n_out = 1;
	c.out = out;
	c.n_threads = 1;
	c.in_dtype = in_dt;
	c.out_dtype = out_dt;
	st = desc->check ? desc->check(&c, d) : QR_OK;
	if (st == QR_OK && desc->prepare)
		st = desc->prepare(&c, d);
	c.in = in;
	if (st == QR_OK)
		st = desc->infer(&c, d);
	if (st == QR_OK) {
		qr_tensor_alloc(out[0]);
		st = desc->run(&c, d);
	}
	if (st == QR_OK && out[0]->ndim == want_ndim &&
	    memcmp(out[0]->dims, want_dims, (size_t)want_ndim *
		   sizeof *want_dims) == 0 && out[0]->n_elem == n_want &&
	    (out_dt[0] == QR_DT_UNDEFINED || out_dt[0] == out[0]->dtype)) {
		*match = memcmp(out[0]->data, want, out[0]->nbytes) == 0;
		if (!*match)
			for (i = 0; i < n_want; i++)
				if (qr_op_get(out[0], i) !=
				    (out[0]->dtype == QR_DT_UINT8 ?
					     ((const uint8_t *)want)[i] :
				     out[0]->dtype == QR_DT_INT8 ?
					     ((const int8_t *)want)[i] :
					     ((const float *)want)[i])) {
					diag("element %zu: got %g", i,
					     qr_op_get(out[0], i));
					break;
				}
	}
	if (desc->release)
		desc->release(c.state);
	for (i = 0; i < n_in; i++)
		qr_tensor_free(in[i]);
	qr_tensor_free(out[0]);
	return st;
}

/* run_case with and without constant inputs, one TAP line each. */
static void
expect(const char *what, const struct qr_op_desc *desc, const struct tin *ins,
       size_t n_in, const struct qr_attr *attrs, size_t n_attr, int ndim,
       const int64_t *dims, const void *want, size_t n_want)
{
	int consts;

	for (consts = 1; consts >= 0; consts--) {
		struct qr_diag d;
		enum qr_status st;
		int match;

		memset(&d, 0, sizeof d);
		st = run_case(desc, ins, n_in, attrs, n_attr, consts, ndim,
			      dims, want, n_want, &match, &d);
		ok(st == QR_OK && match, "%s (%s inputs)", what,
		   consts ? "constant" : "run-time");
		if (st != QR_OK)
			diag("status %s: %s", qr_status_name(st), d.msg);
		qr_diag_clear(&d);
	}
}

/* A case check must refuse with status want, naming the node. */
static void
expect_refused(const char *what, const struct qr_op_desc *desc,
	       const struct tin *ins, size_t n_in, const struct qr_attr *attrs,
	       size_t n_attr, enum qr_status want)
{
	struct qr_diag d;
	enum qr_status st;
	int match;
	int64_t dims[1] = {1};
	uint8_t y = 0;

	memset(&d, 0, sizeof d);
	st = run_case(desc, ins, n_in, attrs, n_attr, 1, 1, dims, &y, 1,
		      &match, &d);
	ok(st == want && strstr(d.msg, "node 't'") != NULL, "%s refused (%s)",
	   what, d.msg);
	qr_diag_clear(&d);
}

#define U8 QR_DT_UINT8
#define S8 QR_DT_INT8
#define F32 QR_DT_FLOAT
#define S32 QR_DT_INT32
#define SCALAR(dt, p) {dt, 0, {0}, p}
#define NONE {QR_DT_UNDEFINED, 0, {0}, NULL}
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- QLinearAdd, QLinearMul ---- */

static void
test_qlinear_add(void)
{
	static const uint8_t a[] = {10, 20, 250, 0}, b[] = {30, 5, 200, 0};
	static const uint8_t b1[] = {200}, za = 10, zb = 0, zc = 5;
	static const float sa = 0.5f, sb = 0.25f, sb1 = 1.0f, sc = 1.0f;
	/* (0.5 (a - 10) + 0.25 b) / 1 + 5: 12.5 rounds to even 12 */
	static const uint8_t want[] = {12, 11, 175, 0};
	/* B broadcast: 0.5 (a - 10) + 200 + 5, 325 saturates */
	static const uint8_t want1[] = {205, 210, 255, 200};
	static const int64_t dims[] = {2, 2};
	struct tin in[] = {
		{U8, 2, {2, 2}, a}, SCALAR(F32, &sa), SCALAR(U8, &za),
		{U8, 2, {2, 2}, b}, SCALAR(F32, &sb), SCALAR(U8, &zb),
		SCALAR(F32, &sc), SCALAR(U8, &zc),
	};

	expect("QLinearAdd uint8", &qr_op_qlinear_add, in, N_OF(in), NULL, 0,
	       2, dims, want, 4);
	in[3] = (struct tin){U8, 1, {1}, b1};
	in[4] = (struct tin)SCALAR(F32, &sb1);
	expect("QLinearAdd uint8 broadcast, saturating", &qr_op_qlinear_add, in,
	       N_OF(in), NULL, 0, 2, dims, want1, 4);
}

/* The scales of torchvision mnasnet1_0's layers.12.2 QLinearAdd and the 6
 * of all 65536 (a, b) pairs where onnxruntime-node 1.30 and a constant
 * za * ra + zb * rb rounded in two steps disagree by one: ORT fuses it
 * (k = zc - fmaf(ra, za, rb * zb)). 18 values: 16 on the AVX-512 path,
 * 2 on the scalar one. */
static void
test_qlinear_add_fma(void)
{
	static const uint8_t a[] = {37, 99, 135, 197, 215, 251, 37, 99, 135,
				    197, 215, 251, 37, 99, 135, 197, 215, 251};
	static const uint8_t b[] = {206, 69, 145, 8, 46, 122, 206, 69, 145,
				    8, 46, 122, 206, 69, 145, 8, 46, 122};
	static const uint8_t want[] = {142, 62, 144, 64, 105, 187, 142, 62,
				       144, 64, 105, 187, 142, 62, 144, 64,
				       105, 187};
	static const uint8_t za = 126, zb = 126, zc = 123;
	static const float sa = 0.035089924931526184f;
	static const float sb = 0.05422121286392212f;
	static const float sc = 0.06565913558006287f;
	static const int64_t dims[] = {18};
	struct tin in[] = {
		{U8, 1, {18}, a}, SCALAR(F32, &sa), SCALAR(U8, &za),
		{U8, 1, {18}, b}, SCALAR(F32, &sb), SCALAR(U8, &zb),
		SCALAR(F32, &sc), SCALAR(U8, &zc),
	};

	expect("QLinearAdd: the zero-point constant fused as ORT's is",
	       &qr_op_qlinear_add, in, N_OF(in), NULL, 0, 1, dims, want, 18);
}

static void
test_qlinear_mul(void)
{
	static const int8_t a[] = {-10, 20, 100, -128}, b[] = {5, -3, 100, 2};
	static const int8_t za = 0, zb = 1, zc = -2;
	static const float sa = 0.1f, sb = 0.2f, sc = 0.05f;
	/* (a - 0)(b - 1) * 0.4 - 2: -40 -> -18, -80 -> -34, 9900 -> 127,
	 * -128 * 0.4 = -51.2 -> -53 */
	static const int8_t want[] = {-18, -34, 127, -53};
	static const int64_t dims[] = {4};
	struct tin in[] = {
		{S8, 1, {4}, a}, SCALAR(F32, &sa), SCALAR(S8, &za),
		{S8, 1, {4}, b}, SCALAR(F32, &sb), SCALAR(S8, &zb),
		SCALAR(F32, &sc), SCALAR(S8, &zc),
	};

	expect("QLinearMul int8", &qr_op_qlinear_mul, in, N_OF(in), NULL, 0,
	       1, dims, want, 4);
}

/* ---- lookup-table activations ---- */

static void
test_qlinear_sigmoid(void)
{
	static const uint8_t x[] = {0, 128, 255, 100}, xz = 128, yz = 0;
	static const float xs = 0.1f, ys = 1.0f / 256.0f;
	/* sigmoid(-12.8) * 256 = 0.0007, sigmoid(0) = 0.5 -> 128,
	 * sigmoid(12.7) * 256 = 255.99 -> 255 (saturated),
	 * sigmoid(-2.8) * 256 = 14.675 -> 15 */
	static const uint8_t want[] = {0, 128, 255, 15};
	static const int64_t dims[] = {2, 2};
	struct tin in[] = {
		{U8, 2, {2, 2}, x}, SCALAR(F32, &xs), SCALAR(U8, &xz),
		SCALAR(F32, &ys), SCALAR(U8, &yz),
	};

	expect("QLinearSigmoid uint8", &qr_op_qlinear_sigmoid, in, N_OF(in),
	       NULL, 0, 2, dims, want, 4);
}

/* QLinearSoftmax: rows whose probabilities are far from rounding ties,
 * so the table arithmetic of op_qlinear.c gives the real softmax times
 * 256. tests/ort_crosscheck.sh checks the bits against ORT. */
static void
test_qlinear_softmax(void)
{
	static const float xs = 0.1f, ys = 1.0f / 256.0f;
	static const uint8_t xz = 128, yz = 0;
	/* x - 128 = {0, 10, 20}, real {0, 1, 2}: softmax 0.0900, 0.2447,
	 * 0.6652 -> 23.05, 62.64, 170.3; a flat row -> 85.33 each */
	static const uint8_t x1[] = {128, 138, 148, 7, 7, 7};
	static const uint8_t w1[] = {23, 63, 170, 85, 85, 85};
	static const int64_t d1[] = {2, 3};
	/* opset 13, axis 1 of [1,2,2]: pairs (x0, x2) and (x1, x3), real
	 * differences of 1: 0.2689, 0.7311 -> 68.8, 187.2 */
	static const uint8_t x2[] = {128, 138, 138, 128};
	static const uint8_t w2[] = {69, 187, 187, 69};
	/* opset 11, axis 1 of [1,2,2]: one row of four equal values -> 64 */
	static const uint8_t x3[] = {9, 9, 9, 9};
	static const uint8_t w3[] = {64, 64, 64, 64};
	static const int64_t d23[] = {1, 2, 2};
	/* int8, zero point -128: real -12.8 and 12.7 give 0 and 1; 256 - 128
	 * is saturated to 127 as onnxruntime-node 1.30 does */
	static const int8_t x4[] = {-128, 127}, s_xz = 0, s_yz = -128;
	static const int8_t w4[] = {-128, 127};
	static const int64_t d4[] = {1, 2};
	struct qr_attr a13[] = {a_int("opset", 13)};
	struct qr_attr a13ax1[] = {a_int("opset", 13), a_int("axis", 1)};
	struct qr_attr a11ax1[] = {a_int("opset", 11), a_int("axis", 1)};
	struct tin in1[] = {
		{U8, 2, {2, 3}, x1}, SCALAR(F32, &xs), SCALAR(U8, &xz),
		SCALAR(F32, &ys), SCALAR(U8, &yz),
	};
	struct tin in2[] = {
		{U8, 3, {1, 2, 2}, x2}, SCALAR(F32, &xs), SCALAR(U8, &xz),
		SCALAR(F32, &ys), SCALAR(U8, &yz),
	};
	struct tin in3[] = {
		{U8, 3, {1, 2, 2}, x3}, SCALAR(F32, &xs), SCALAR(U8, &xz),
		SCALAR(F32, &ys), SCALAR(U8, &yz),
	};
	struct tin in4[] = {
		{S8, 2, {1, 2}, x4}, SCALAR(F32, &xs), SCALAR(S8, &s_xz),
		SCALAR(F32, &ys), SCALAR(S8, &s_yz),
	};

	expect("QLinearSoftmax uint8, last axis", &qr_op_qlinear_softmax, in1,
	       N_OF(in1), a13, N_OF(a13), 2, d1, w1, 6);
	expect("QLinearSoftmax uint8, opset 13, a middle axis",
	       &qr_op_qlinear_softmax, in2, N_OF(in2), a13ax1, N_OF(a13ax1), 3,
	       d23, w2, 4);
	expect("QLinearSoftmax uint8, opset 11: dims[axis..] as one row",
	       &qr_op_qlinear_softmax, in3, N_OF(in3), a11ax1, N_OF(a11ax1), 3,
	       d23, w3, 4);
	expect("QLinearSoftmax int8, probability 1 saturates at 127",
	       &qr_op_qlinear_softmax, in4, N_OF(in4), a13, N_OF(a13), 2, d4,
	       w4, 2);
	expect_refused("QLinearSoftmax without its opset attribute",
		       &qr_op_qlinear_softmax, in1, N_OF(in1), NULL, 0,
		       QR_EGRAPH);
}

static void
test_qlinear_leaky_relu(void)
{
	static const int8_t x[] = {-100, -1, 0, 50, 127}, xz = 0, yz = 10;
	static const float xs = 0.5f, ys = 0.25f;
	/* real -50, -0.5, 0, 25, 63.5; leaky (0.1) -5, -0.05, 0, 25, 63.5;
	 * / 0.25 -20, -0.2, 0, 100, 254 -> clamp to 117; + 10 */
	static const int8_t want[] = {-10, 10, 10, 110, 127};
	static const int64_t dims[] = {5};
	struct qr_attr at[] = {a_float("alpha", 0.1f)};
	struct tin in[] = {
		{S8, 1, {5}, x}, SCALAR(F32, &xs), SCALAR(S8, &xz),
		SCALAR(F32, &ys), SCALAR(S8, &yz),
	};

	expect("QLinearLeakyRelu int8", &qr_op_qlinear_leaky_relu, in,
	       N_OF(in), at, N_OF(at), 1, dims, want, 5);
}

/* ---- QLinearConcat ---- */

static void
test_qlinear_concat(void)
{
	static const uint8_t x1[] = {10, 20, 30, 40}, x2[] = {0, 4, 255, 8};
	static const uint8_t yz = 10, z1 = 10, z2 = 4;
	static const float ys = 0.5f, s1 = 0.5f, s2 = 0.25f;
	/* x1 has the output's parameters: copied. x2: 0.25 (x - 4) / 0.5 +
	 * 10: -2 + 10 = 8, 0 + 10, 125.5 -> 126 (even) + 10, 2 + 10 */
	static const uint8_t want[] = {10, 20, 8, 10, 30, 40, 136, 12};
	static const int64_t dims[] = {2, 4};
	struct qr_attr at[] = {a_int("axis", -1)};
	struct tin in[] = {
		SCALAR(F32, &ys), SCALAR(U8, &yz),
		{U8, 2, {2, 2}, x1}, SCALAR(F32, &s1), SCALAR(U8, &z1),
		{U8, 2, {2, 2}, x2}, SCALAR(F32, &s2), SCALAR(U8, &z2),
	};

	expect("QLinearConcat uint8, axis -1", &qr_op_qlinear_concat, in,
	       N_OF(in), at, N_OF(at), 2, dims, want, 8);
}

/* ---- pools ---- */

static void
test_qlinear_global_average_pool(void)
{
	static const uint8_t x[] = {10, 20, 30, 41, 0, 0, 0, 1};
	static const uint8_t xl[] = {10, 0, 20, 0, 30, 0, 41, 1};
	static const uint8_t xz = 10, yz = 3;
	static const float xs = 0.5f, ys = 0.25f;
	/* channel 0: (101 - 4 * 10) * 0.5 / (0.25 * 4) = 30.5 -> 30, + 3;
	 * channel 1: (1 - 40) * 0.5 = -19.5, clamped to -3, + 3 */
	static const uint8_t want[] = {33, 0};
	static const int64_t dims[] = {1, 2, 1, 1}, dims_l[] = {1, 1, 1, 2};
	struct qr_attr at[] = {a_int("channels_last", 1)};
	struct tin in[] = {
		{U8, 4, {1, 2, 2, 2}, x}, SCALAR(F32, &xs), SCALAR(U8, &xz),
		SCALAR(F32, &ys), SCALAR(U8, &yz),
	};

	expect("QLinearGlobalAveragePool uint8 NCHW",
	       &qr_op_qlinear_global_average_pool, in, N_OF(in), NULL, 0, 4,
	       dims, want, 2);
	in[0].data = xl;
	expect("QLinearGlobalAveragePool uint8 channels_last",
	       &qr_op_qlinear_global_average_pool, in, N_OF(in), at, N_OF(at),
	       4, dims_l, want, 2);
}

static void
test_qlinear_average_pool(void)
{
	static const uint8_t x[] = {0, 10, 20, 30, 40, 50, 60, 70, 81};
	static const uint8_t xz = 0, yz = 1;
	static const float xs = 1.0f, ys = 4.0f;
	static const int64_t k2[] = {2, 2}, s2[] = {2, 2}, p1[] = {1, 1, 1, 1};
	static const int64_t dil[] = {2, 2};
	/* 2x2 windows, stride 1: averages 20, 30, 50, 60.25; / 4 + 1:
	 * 6, 8.5 -> 8 (even), 13.5 -> 14, 16.06 -> 16 */
	static const uint8_t want[] = {6, 8, 14, 16};
	/* stride 2, pads 1: windows clipped to the image, averages 0, 15,
	 * 45, 60.25 -> 1, 4.75 -> 5, 12.25 -> 12, 16 */
	static const uint8_t want_pad[] = {1, 5, 12, 16};
	/* count_include_pad divides by 4: 0, 7.5, 22.5, 60.25 -> 1, 3, 7,
	 * 16 */
	static const uint8_t want_inc[] = {1, 3, 7, 16};
	static const int64_t dims[] = {1, 1, 2, 2};
	struct qr_attr at[] = {a_ints("kernel_shape", k2, 2),
			       a_ints("strides", s2, 2), a_ints("pads", p1, 4),
			       a_int("count_include_pad", 1)};
	struct qr_attr bad[] = {a_ints("kernel_shape", k2, 2),
				a_ints("dilations", dil, 2)};
	struct tin in[] = {
		{U8, 4, {1, 1, 3, 3}, x}, SCALAR(F32, &xs), SCALAR(U8, &xz),
		SCALAR(F32, &ys), SCALAR(U8, &yz),
	};

	expect("QLinearAveragePool uint8 2x2", &qr_op_qlinear_average_pool,
	       in, N_OF(in), at, 1, 4, dims, want, 4);
	expect("QLinearAveragePool uint8 padded", &qr_op_qlinear_average_pool,
	       in, N_OF(in), at, 3, 4, dims, want_pad, 4);
	expect("QLinearAveragePool uint8 count_include_pad",
	       &qr_op_qlinear_average_pool, in, N_OF(in), at, 4, 4, dims,
	       want_inc, 4);
	expect_refused("QLinearAveragePool with dilations",
		       &qr_op_qlinear_average_pool, in, N_OF(in), bad, 2,
		       QR_EUNSUPPORTED);
}

/* ---- QGemm ---- */

static void
test_qgemm(void)
{
	static const uint8_t a[] = {1, 2, 3, 4, 5, 6}, az = 1, yz = 128;
	static const int8_t b[] = {1, -1, 2, 0, -3, 4};
	static const int8_t bt[] = {1, 2, -3, -1, 0, 4};
	static const int8_t bz[] = {0, 0};
	static const int32_t cv[] = {11, -8};
	static const float as = 0.5f, bs[] = {0.25f, 0.5f}, ys = 0.5f;
	/* (A - 1) B = [[-4, 8], [-4, 17]]; + C = [[7, 0], [7, 9]];
	 * scales 2 * 0.5 * [0.25, 0.5] / 0.5 = [0.5, 1]: 3.5 -> 4, + 128 */
	static const uint8_t want[] = {132, 128, 132, 137};
	/* float output: acc * 2 * 0.5 * [0.25, 0.5] */
	static const float want_f[] = {1.75f, 0.0f, 1.75f, 4.5f};
	static const int64_t dims[] = {2, 2};
	struct qr_attr at[] = {a_float("alpha", 2.0f), a_int("transB", 1)};
	struct tin in[] = {
		{U8, 2, {2, 3}, a}, SCALAR(F32, &as), SCALAR(U8, &az),
		{S8, 2, {3, 2}, b}, {F32, 1, {2}, bs}, {S8, 1, {2}, bz},
		{S32, 1, {2}, cv}, SCALAR(F32, &ys), SCALAR(U8, &yz),
	};
	struct tin in_t[N_OF(in)];

	expect("QGemm u8 x s8, per-column scales, C, alpha", &qr_op_qgemm,
	       in, N_OF(in), at, 1, 2, dims, want, 4);
	memcpy(in_t, in, sizeof in);
	in_t[3] = (struct tin){S8, 2, {2, 3}, bt};
	expect("QGemm transB", &qr_op_qgemm, in_t, N_OF(in_t), at, 2, 2, dims,
	       want, 4);
	expect("QGemm float output", &qr_op_qgemm, in, 7, at, 1, 2, dims,
	       want_f, 4);
}

/* ---- DequantizeLinear: 4-bit and blocked (opset 21) ---- */

static void
test_dequantize_blocked(void)
{
	/* uint4 [4, 2], blocks of 2 rows along axis 0: rows 0-1 take scale
	 * and zero point row 0, rows 2-3 row 1; y = (x - zp) * scale */
	static const uint8_t x[] = {1, 15, 3, 0, 8, 7, 2, 9};
	static const uint8_t zp[] = {1, 0, 8, 4};
	static const float sc[] = {0.5f, 1.0f, 0.25f, 2.0f};
	static const float want[] = {0, 15, 1, 0, 0, 6, -1.5f, 10};
	/* int4 [2, 5], blocks of 2 along the last axis (3 per row, the
	 * last one short), no zero point */
	static const int8_t x1[] = {-8, 7, 1, -1, 3, 0, 2, -3, 5, 6};
	static const float sc1[] = {0.5f, 2.0f, 1.0f, 1.0f, 0.25f, 4.0f};
	static const float want1[] = {-4, 3.5f, 2, -2, 3, 0, 2, -0.75f,
				      1.25f, 24};
	/* int4 per axis 1, no blocks */
	static const int8_t x2[] = {-8, 7, 1, -1};
	static const float sc2[] = {0.5f, 2.0f};
	static const int8_t zp2[] = {-1, 1};
	static const float want2[] = {-3.5f, 12, 1, -4};
	static const int64_t d0[] = {4, 2}, d1[] = {2, 5}, d2[] = {2, 2};
	struct qr_attr at[] = {a_int("axis", 0), a_int("block_size", 2)};
	struct qr_attr at1[] = {a_int("axis", -1), a_int("block_size", 2)};
	struct tin in[] = {
		{QR_DT_UINT4, 2, {4, 2}, x}, {F32, 2, {2, 2}, sc},
		{QR_DT_UINT4, 2, {2, 2}, zp},
	};
	struct tin in1[] = {
		{QR_DT_INT4, 2, {2, 5}, x1}, {F32, 2, {2, 3}, sc1},
	};
	struct tin in2[] = {
		{QR_DT_INT4, 2, {2, 2}, x2}, {F32, 1, {2}, sc2},
		{QR_DT_INT4, 1, {2}, zp2},
	};
	struct tin bad[] = {
		{QR_DT_INT4, 2, {2, 5}, x1}, {F32, 2, {3, 2}, sc1},
	};

	expect("DequantizeLinear uint4, blocks of 2 along axis 0",
	       &qr_op_dequantize_linear, in, N_OF(in), at, 2, 2, d0, want, 8);
	expect("DequantizeLinear int4, blocks of 2 along the last axis",
	       &qr_op_dequantize_linear, in1, N_OF(in1), at1, 2, 2, d1,
	       want1, 10);
	expect("DequantizeLinear int4 per axis", &qr_op_dequantize_linear,
	       in2, N_OF(in2), NULL, 0, 2, d2, want2, 4);
	expect_refused("DequantizeLinear blocked scale of the wrong shape",
		       &qr_op_dequantize_linear, bad, N_OF(bad), at1, 2,
		       QR_ESHAPE);
}

/* ---- MatMulNBits ---- */

/*
 * Codes, scales, zero points and A drawn at random and packed as the
 * op's comment says (low bits first, each column's blocks in turn, the
 * short last block padded with 0); Y = A * W computed with numpy from W
 * = (code - zp) * scale. Scales are powers of two and A small integers,
 * so every product and sum is exact in float.
 */
static void
test_matmul_nbits(void)
{
	/* 4 bits, K 20 (blocks of 16: the second holds 4), N 3, M 2,
	 * packed zero points (one byte a column: two blocks) */
	static const uint8_t b[] = {
		138, 57, 136, 80, 61, 186, 153, 90, 103, 64, 0, 0, 0, 0, 0, 0,
		28, 163, 133, 30, 173, 184, 126, 184, 177, 15, 0, 0, 0, 0, 0, 0,
		144, 66, 95, 136, 87, 237, 17, 81, 117, 186, 0, 0, 0, 0, 0, 0};
	static const float sc[] = {2, 0.25f, 2, 0.5f, 0.5f, 1};
	static const uint8_t zp[] = {208, 65, 193};
	static const float a[] = {
		-1, -1, 1, 1, -1, -3, 1, -3, 0, -1, 3, -3, 1, 0, -2, 2, -2,
		-3, -3, 2, -3, -3, -2, -2, 1, -3, 0, 1, -1, -3, -3, 1, 1, 1,
		1, 0, 0, -3, -3, -1};
	static const float want[] = {-106.5f, -50, 12, -186.75f, -217, -8.5f};
	/* no zero points (8), bias [4, 3] */
	static const uint8_t bg[] = {
		39, 49, 45, 20, 242, 114, 67, 30, 198, 123, 0, 0, 0, 0, 0, 0,
		132, 232, 60, 148, 42, 92, 116, 159, 26, 9, 0, 0, 0, 0, 0, 0};
	static const float scg[] = {0.25f, 1, 0.25f, 1};
	static const float ag[] = {
		-2, 1, -2, 0, 2, 1, 3, -2, 2, 2, -3, -3, 1, 1, -1, -3, 2, 3,
		1, 1, 1, 3, -1, 0, 0, 2, 1, -2, -3, -2, -1, 0, -2, -3, -2, 0,
		1, 2, 2, -3};
	static const float bias[] = {4, 3};
	static const float wantg[] = {25.25f, -28.25f, 20.5f, 11.75f};
	/* accuracy_level 4 on the first case's weights: A quantized to
	 * int8 per block of 16 (s = max|a| / 127; q = a / s rounded half to
	 * even: 2.5 -> 2, -3.5 -> -4, 0.5 -> 0 in row 0 block 0 (s 1);
	 * -1.25 / 0.5 -> -2, 0.75 / 0.5 -> 2 in block 1 (s 0.5); row 1's
	 * block 0 all zeros, its block 1 s = 4 / 127). The float path gives
	 * 260.75, -330.625, -413.125, 1.25, 16, 1. */
	static const float a4[] = {
		127, 2.5f, -3.5f, 0.5f, 10, -20, 7.25f, 1, 0, 0, -1, 3, -127,
		4, 5, 6, 63.5f, -1.25f, 2, 0.75f,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, -2, 3, -4};
	static const float want4[] = {239.75f, -347.75f, -418.5f,
				      1.291338562965393f, 15.889763832092285f,
				      1.039370059967041f};
	static const int32_t gi[20] = {0};
	/* 8 bits, K 16, N 2, M 1 */
	static const uint8_t b8[] = {
		97, 226, 149, 162, 250, 238, 29, 170, 7, 222, 158, 76, 203,
		246, 167, 57, 177, 245, 231, 108, 172, 21, 94, 41, 199, 220,
		34, 143, 22, 45, 36, 168};
	static const float sc8[] = {1, 0.25f};
	static const uint8_t zp8[] = {9, 147};
	static const float a8[] = {-3, 2, 3, 1, -1, 0, -3, 1, -1, 0, -1, -1,
				   -3, -1, 2, -3};
	static const float want8[] = {-258, 151};
	/* 2 bits, K 32, N 2, M 1, float zero points */
	static const uint8_t b2[] = {186, 151, 120, 40, 58, 249, 13, 16, 70,
				     26, 92, 88, 117, 30, 61, 95};
	static const float sc2[] = {2, 1, 1, 0.5f};
	static const float zp2[] = {2.5f, 0.5f, 3.5f, 2.5f};
	static const float a2[] = {
		-2, 2, 0, 3, 3, -3, 3, 0, 2, 3, -3, 1, -1, -2, 3, -1, 0, -1,
		2, 2, -1, 1, -2, 3, 1, -1, -2, 0, -2, -1, -1, 0};
	static const float want2[] = {-4, -22.5f};
	static const int64_t dy[] = {2, 3}, dyg[] = {2, 2}, dy1[] = {1, 2};
	struct qr_attr at[] = {a_int("K", 20), a_int("N", 3), a_int("bits", 4),
			       a_int("block_size", 16)};
	struct qr_attr atg[] = {a_int("K", 20), a_int("N", 2),
				a_int("block_size", 16)};
	struct qr_attr at8[] = {a_int("K", 16), a_int("N", 2), a_int("bits", 8),
				a_int("block_size", 16)};
	struct qr_attr at2[] = {a_int("K", 32), a_int("N", 2), a_int("bits", 2),
				a_int("block_size", 16)};
	struct qr_attr at3[] = {a_int("K", 20), a_int("N", 3), a_int("bits", 3),
				a_int("block_size", 16)};
	struct qr_attr at12[] = {a_int("K", 20), a_int("N", 3),
				 a_int("block_size", 12)};
	struct qr_attr atk[] = {a_int("K", 19), a_int("N", 3), a_int("bits", 4),
				a_int("block_size", 16)};
	struct qr_attr at4[] = {a_int("K", 20), a_int("N", 3), a_int("bits", 4),
				a_int("block_size", 16),
				a_int("accuracy_level", 4)};
	struct tin in[] = {
		{F32, 2, {2, 20}, a}, {U8, 3, {3, 2, 8}, b}, {F32, 1, {6}, sc},
		{U8, 1, {3}, zp},
	};
	struct tin ing[] = {
		{F32, 2, {2, 20}, ag}, {U8, 3, {2, 2, 8}, bg},
		{F32, 1, {4}, scg}, NONE, NONE, {F32, 1, {2}, bias},
	};
	struct tin in4[] = {
		{F32, 2, {2, 20}, a4}, {U8, 3, {3, 2, 8}, b}, {F32, 1, {6}, sc},
		{U8, 1, {3}, zp},
	};
	struct tin in8[] = {
		{F32, 2, {1, 16}, a8}, {U8, 3, {2, 1, 16}, b8},
		{F32, 1, {2}, sc8}, {U8, 1, {2}, zp8},
	};
	struct tin in2[] = {
		{F32, 2, {1, 32}, a2}, {U8, 3, {2, 2, 4}, b2},
		{F32, 1, {4}, sc2}, {F32, 1, {4}, zp2},
	};
	struct tin ingb[N_OF(ing)];

	expect("MatMulNBits 4 bits, packed zero points, short last block",
	       &qr_op_matmul_nbits, in, N_OF(in), at, N_OF(at), 2, dy, want,
	       6);
	expect("MatMulNBits default zero point 8, bias",
	       &qr_op_matmul_nbits, ing, N_OF(ing), atg, N_OF(atg), 2, dyg,
	       wantg, 4);
	expect("MatMulNBits 8 bits", &qr_op_matmul_nbits, in8, N_OF(in8),
	       at8, N_OF(at8), 2, dy1, want8, 2);
	expect("MatMulNBits 2 bits, float zero points", &qr_op_matmul_nbits,
	       in2, N_OF(in2), at2, N_OF(at2), 2, dy1, want2, 2);
	expect_refused("MatMulNBits bits 3", &qr_op_matmul_nbits, in,
		       N_OF(in), at3, N_OF(at3), QR_EUNSUPPORTED);
	expect_refused("MatMulNBits block_size 12", &qr_op_matmul_nbits, in,
		       N_OF(in), at12, N_OF(at12), QR_EGRAPH);
	expect_refused("MatMulNBits K 19 against B's 2 blocks of 16",
		       &qr_op_matmul_nbits, in, N_OF(in), atk, N_OF(atk),
		       QR_ESHAPE);
	expect("MatMulNBits accuracy_level 4: A quantized to int8 per block",
	       &qr_op_matmul_nbits, in4, N_OF(in4), at4, N_OF(at4), 2, dy,
	       want4, 6);
	memcpy(ingb, ing, sizeof ing);
	ingb[4] = (struct tin){S32, 1, {20}, gi};
	expect_refused("MatMulNBits with g_idx", &qr_op_matmul_nbits, ingb,
		       N_OF(ingb), atg, N_OF(atg), QR_EUNSUPPORTED);
}

/*
 * The int8-activation kernel behind MatMulNBits at accuracy_level 4
 * (kernels/nbits.c) on random shapes: its AVX-512 path (3 threads) and
 * AVX2 path (2 threads), where the CPU has them, give the portable path's
 * bits (1 thread), and all
 * are the block-wise integer sums of A rounded to int8, scaled, within
 * a relative L2 error of 1e-6 of a double reference. Shapes: blocks of 32 with a group of four
 * and a tail, a short last block, 128 and 256, 2 and 8 bits.
 */
static uint32_t nb_seed = 12345;

static uint32_t
nb_rand(void)
{
	nb_seed = nb_seed * 1103515245u + 12345u;
	return nb_seed >> 8;
}

static double
nb_ref(const struct qr_nbits_params *p, const float *a, size_t m, size_t n)
{
	size_t kb = (p->k + p->block - 1) / p->block;
	size_t zrow = (kb * p->bits + 7) / 8, b, i;
	double y = p->bias ? p->bias[n] : 0;

	for (b = 0; b < kb; b++) {
		size_t k0 = b * p->block;
		size_t len = p->k - k0 < p->block ? p->k - k0 : p->block;
		float amax = 0, s, inv;
		int zp = p->zp ? (int)qr_packed_code(p->zp + n * zrow, b,
						     (unsigned)p->bits) :
				 1 << (p->bits - 1);
		double acc = 0;

		for (i = 0; i < len; i++)
			amax = fmaxf(amax, fabsf(a[m * p->k + k0 + i]));
		s = amax / 127.0f;
		inv = amax != 0 ? 127.0f / amax : 0;
		for (i = 0; i < len; i++) {
			int c = (int)qr_packed_code(p->b + (n * kb + b) *
						    (p->block * p->bits / 8),
						    i, (unsigned)p->bits);

			acc += rintf(a[m * p->k + k0 + i] * inv) * (c - zp);
		}
		y += acc * s * p->scales[n * kb + b];
	}
	return y;
}

static void
test_nbits_kernel(void)
{
	static const size_t shapes[][6] = {
		/* m, k, n, bits, block, zero points and bias */
		{5, 192, 7, 4, 32, 1}, {7, 160, 6, 4, 32, 0},
		{2, 100, 3, 4, 32, 1}, {4, 256, 9, 4, 128, 0},
		{3, 512, 5, 4, 256, 1}, {3, 96, 5, 8, 32, 1},
		{3, 96, 5, 2, 16, 0}, {1, 128, 4, 4, 64, 1},
	};
	size_t t;

	for (t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
		const size_t *sh = shapes[t];
		struct qr_nbits_params p = {
			.m = sh[0], .k = sh[1], .n = sh[2], .bits = sh[3],
			.block = sh[4],
		};
		size_t kb = (p.k + p.block - 1) / p.block, i, bad = 0;
		size_t nb = p.n * kb * p.block * p.bits / 8;
		size_t nz = p.n * ((kb * p.bits + 7) / 8);
		uint8_t *b = malloc(nb), *zp = malloc(nz);
		float *sc = malloc(p.n * kb * sizeof *sc);
		float *bias = malloc(p.n * sizeof *bias);
		float *a = malloc(p.m * p.k * sizeof *a);
		float *y0 = malloc(p.m * p.n * sizeof *y0);
		float *y1 = malloc(p.m * p.n * sizeof *y1);
		float *y2 = malloc(p.m * p.n * sizeof *y2);
		double see = 0, srr = 0, rel;
		void *ws;

		for (i = 0; i < nb; i++)
			b[i] = (uint8_t)nb_rand();
		for (i = 0; i < nz; i++)
			zp[i] = (uint8_t)nb_rand();
		for (i = 0; i < p.n * kb; i++)
			sc[i] = ((float)(nb_rand() % 2000) - 900) / 65536;
		for (i = 0; i < p.n; i++)
			bias[i] = (float)(nb_rand() % 200) / 16 - 6;
		for (i = 0; i < p.m * p.k; i++)
			a[i] = ((float)(nb_rand() % 20001) - 10000) /
			       (float)(1 + i / p.k * 37);
		p.b = b;
		p.scales = sc;
		p.zp = sh[5] ? zp : NULL;
		p.bias = sh[5] ? bias : NULL;
		ws = malloc(qr_nbits_workspace(&p, 3));
		qr_kernels_force_portable(1);
		qr_nbits_gemm(&p, a, y0, ws, 1);
		qr_kernels_force_portable(0);
		qr_nbits_gemm(&p, a, y1, ws, 3);
		qr_nbits_force_avx2(1);
		qr_nbits_gemm(&p, a, y2, ws, 2);
		qr_nbits_force_avx2(0);
		for (i = 0; i < p.m * p.n; i++) {
			double r = nb_ref(&p, a, i / p.n, i % p.n);

			bad += memcmp(&y0[i], &y1[i], sizeof *y0) != 0 ||
			       memcmp(&y0[i], &y2[i], sizeof *y0) != 0;
			see += (y0[i] - r) * (y0[i] - r);
			srr += r * r;
		}
		rel = sqrt(see / srr);
		ok(bad == 0 && rel < 1e-6, "MatMulNBits kernel m %zu k %zu "
		   "n %zu, %zu bits, block %zu%s: portable, AVX2 and AVX-512 "
		   "paths identical (%zu differ), relative L2 %.1e from the "
		   "block sums", p.m, p.k, p.n, p.bits, p.block,
		   sh[5] ? ", zero points, bias" : "", bad, rel);
		/* a NaN in row 0's first block: row 0 NaN, the others not */
		if (t == 0) {
			a[3] = NAN;
			qr_nbits_gemm(&p, a, y1, ws, 3);
			ok(isnan(y1[0]) && isnan(y1[p.n - 1]) &&
			   !isnan(y1[p.n]), "MatMulNBits kernel: a NaN in a "
			   "block of A makes its row NaN");
		}
		free(ws);
		free(b);
		free(zp);
		free(sc);
		free(bias);
		free(a);
		free(y0);
		free(y1);
		free(y2);
	}
}

/* ---- MatMulIntegerToFloat, DynamicQuantizeMatMul ---- */

static void
test_matmul_integer_to_float(void)
{
	static const uint8_t a[] = {1, 2, 3, 4, 5, 6}, az = 1;
	static const int8_t b[] = {1, -1, 2, 0, -3, 4};
	static const float as = 0.5f, bs[] = {0.25f, 0.5f}, bias[] = {1, -2};
	/* (A - 1) B = [[-4, 8], [-4, 17]], times 0.5 * [0.25, 0.5], + bias */
	static const float want[] = {0.5f, 0, 0.5f, 2.25f};
	/* A = [-51, 0, 204]: DynamicQuantizeLinear gives scale 255 / 255 =
	 * 1 and zero point 51, so (q - 51) = A; A B = [-663, 867], times
	 * 1 * 0.5, + [1, 1] */
	static const float af[] = {-51, 0, 204}, bs1 = 0.5f, bias1[] = {1, 1};
	static const float want1[] = {-330.5f, 434.5f};
	static const int64_t dims[] = {2, 2}, dims1[] = {1, 2};
	struct tin in[] = {
		{U8, 2, {2, 3}, a}, {S8, 2, {3, 2}, b}, SCALAR(F32, &as),
		{F32, 1, {2}, bs}, SCALAR(U8, &az), NONE, {F32, 1, {2}, bias},
	};
	struct tin in1[] = {
		{F32, 2, {1, 3}, af}, {S8, 2, {3, 2}, b}, SCALAR(F32, &bs1),
		NONE, {F32, 1, {2}, bias1},
	};
	struct tin bad[] = {
		{U8, 2, {2, 3}, a}, {S8, 2, {3, 2}, b}, SCALAR(F32, &as),
		{F32, 1, {3}, af}, SCALAR(U8, &az),
	};

	expect("MatMulIntegerToFloat per-column scales, zero point, bias",
	       &qr_op_matmul_integer_to_float, in, N_OF(in), NULL, 0, 2, dims,
	       want, 4);
	expect("DynamicQuantizeMatMul: A quantized as DynamicQuantizeLinear",
	       &qr_op_dynamic_quantize_matmul, in1, N_OF(in1), NULL, 0, 2,
	       dims1, want1, 2);
	expect_refused("MatMulIntegerToFloat with 3 scales for 2 columns",
		       &qr_op_matmul_integer_to_float, bad, N_OF(bad), NULL, 0,
		       QR_EGRAPH);
}

/* ---- QLinearConv ---- */

static void
test_qlinear_conv(void)
{
	static const uint8_t x[] = {10, 11, 12, 13, 14, 15, 16, 17, 18};
	static const uint8_t xz = 10, yz = 0;
	static const int8_t w[] = {1, 0, 0, 1, 2, 2, 2, 2}, wz[] = {0, 1};
	static const int32_t bias[] = {0, 2};
	static const float xs = 0.5f, ws[] = {1.0f, 0.25f}, ys = 1.0f;
	static const int64_t k4[] = {3, 3, 3, 3};
	/* x - 10 = [[0,1,2],[3,4,5],[6,7,8]]. Channel 0 sums the
	 * diagonal: 4, 6, 10, 12, * 0.5. Channel 1 ((2 - 1) = 1 per tap)
	 * sums the window + 2: 10, 14, 22, 26, * 0.125 = 1.25, 1.75, 2.75,
	 * 3.25 -> 1, 2, 3, 3 */
	static const uint8_t want[] = {2, 3, 5, 6, 1, 2, 3, 3};
	static const int64_t dims[] = {1, 2, 2, 2};
	struct qr_attr bad[] = {a_ints("kernel_shape", k4, 4)};
	struct tin in[] = {
		{U8, 4, {1, 1, 3, 3}, x}, SCALAR(F32, &xs), SCALAR(U8, &xz),
		{S8, 4, {2, 1, 2, 2}, w}, {F32, 1, {2}, ws}, {S8, 1, {2}, wz},
		SCALAR(F32, &ys), SCALAR(U8, &yz), {S32, 1, {2}, bias},
	};

	expect("QLinearConv per-channel scales and zero points",
	       &qr_op_qlinear_conv, in, N_OF(in), NULL, 0, 4, dims, want, 8);
	expect_refused("QLinearConv 4-D kernel_shape", &qr_op_qlinear_conv,
		       in, N_OF(in), bad, 1, QR_EUNSUPPORTED);
}

int
main(void)
{
	plan_no_plan();
	RUN(test_qlinear_add);
	RUN(test_qlinear_add_fma);
	RUN(test_qlinear_mul);
	RUN(test_qlinear_sigmoid);
	RUN(test_qlinear_softmax);
	RUN(test_qlinear_leaky_relu);
	RUN(test_qlinear_concat);
	RUN(test_qlinear_global_average_pool);
	RUN(test_qlinear_average_pool);
	RUN(test_qgemm);
	RUN(test_qlinear_conv);
	RUN(test_dequantize_blocked);
	RUN(test_matmul_nbits);
	RUN(test_nbits_kernel);
	RUN(test_matmul_integer_to_float);
	return done();
}
