/*
 * op_fused: the float fusions ONNX Runtime's optimiser writes into a
 * transformer graph (what a model it saved optimised holds), and ONNX's
 * own Gelu (opset 20), which newer exporters write:
 *
 *   Gelu (ai.onnx 20)   approximate "none": x/2 (1 + erf(x / sqrt 2));
 *                       "tanh": x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   Gelu, BiasGelu,     com.microsoft: the erf form of x, of x + bias
 *   FastGelu            (bias [last dim]), and the tanh form of x (+ bias)
 *   FusedMatMul         alpha * op(A) * op(B), op transposing the last two
 *                       dims (transA, transB); transBatchA/B refused
 *   SkipLayerNormalization, SkipSimplifiedLayerNormalization
 *                       s = input + skip (+ bias), then LayerNormalization
 *                       (or its RMS form) of s over the last dim with
 *                       gamma (and beta); outputs output, mean,
 *                       inv_std_var, s
 *   SimplifiedLayerNormalization (registered by ONNX Runtime in the ONNX
 *                       domain): x / sqrt(mean(x^2) + epsilon) * scale over
 *                       dims[axis..]
 *
 * The layer norms are ONNX Runtime's, bit for bit (kernels'
 * qr_norm_row_ort_f32): its order of summation differs by op and row
 * length, and a report can only equal ORT's if every rounding does. The
 * GELUs' erf and tanh are ONNX Runtime's own (kernels' qr_erf_ort_f32,
 * qr_tanh_ort_f32).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

#define SQRT_2_OVER_PI 0.7978845608028654
#define GELU_CUBIC 0.044715
#define SQRT_HALF 0.7071067811865476

/* ---- the GELU family ---- */

/* Which GELU, and whether input 1 is a bias over the last dim. */
struct gelu_kind {
	int tanh_form;
	int has_bias;
};

static void
gelu_kind(const struct qr_op_call *c, struct gelu_kind *k)
{
	const char *op = c->node->op_type;

	k->tanh_form = strcmp(op, "FastGelu") == 0 ||
		       (strcmp(op, "Gelu") == 0 &&
			strcmp(qr_op_attr_str(c, "approximate", "none"),
			       "tanh") == 0);
	k->has_bias = (strcmp(op, "BiasGelu") == 0 ||
		       strcmp(op, "FastGelu") == 0) && qr_op_has_in(c, 1);
}

static enum qr_status
gelu_check(const struct qr_op_call *c, struct qr_diag *d)
{
	const char *op = c->node->op_type;
	const char *ap = qr_op_attr_str(c, "approximate", "none");
	enum qr_status st;
	size_t max_in = strcmp(op, "Gelu") == 0 ? 1 : 2;
	size_t min_in = strcmp(op, "BiasGelu") == 0 ? 2 : 1;

	if ((st = qr_op_arity(c, d, min_in, max_in, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_FLOAT)) != QR_OK)
		return st;
	if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "approximate '%s' is "
				    "neither none nor tanh", ap);
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

static enum qr_status
gelu_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct gelu_kind k;
	char a[128], b[128];

	gelu_kind(c, &k);
	if (k.has_bias && (x->ndim < 1 || c->in[1]->n_elem !=
			   (size_t)x->dims[x->ndim - 1]))
		return qr_op_errorf(c, d, QR_ESHAPE, "bias '%s' %s must hold "
				    "the last dim of '%s' %s",
				    qr_op_in_name(c, 1),
				    qr_shape_str(c->in[1], a, sizeof a),
				    qr_op_in_name(c, 0),
				    qr_shape_str(x, b, sizeof b));
	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, x->ndim, x->dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
gelu_run(struct qr_op_call *c, struct qr_diag *d)
{
	const float *x = c->in[0]->data;
	const float *bias = NULL;
	float *y = c->out[0]->data;
	size_t n = c->out[0]->n_elem, nb = 1, i;
	struct gelu_kind k;

	(void)d;
	gelu_kind(c, &k);
	if (k.has_bias) {
		bias = c->in[1]->data;
		nb = c->in[1]->n_elem;
	}
	if (k.tanh_form) {
		/* ONNX Runtime's steps: x (C x^2 + B) with C = 0.044715 B and
		 * B = sqrt(2/pi) rounded to float, MLAS's tanh over them,
		 * then x/2 (t + 1) */
		for (i = 0; i < n; i++) {
			float v = bias ? x[i] + bias[i % nb] : x[i];

			y[i] = v * ((float)(GELU_CUBIC * SQRT_2_OVER_PI) * v *
				    v + (float)SQRT_2_OVER_PI);
		}
		qr_tanh_ort_f32(y, n, y);
		for (i = 0; i < n; i++)
			y[i] = 0.5f * (bias ? x[i] + bias[i % nb] : x[i]) *
			       (y[i] + 1.0f);
		return QR_OK;
	}
	/* x/2 (1 + erf(x / sqrt 2)) in ONNX Runtime's steps: every
	 * x * sqrt(1/2), MLAS's erf over them, then the rest */
	for (i = 0; i < n; i++)
		y[i] = (bias ? x[i] + bias[i % nb] : x[i]) * (float)SQRT_HALF;
	qr_erf_ort_f32(y, n, y);
	for (i = 0; i < n; i++)
		y[i] = 0.5f * (bias ? x[i] + bias[i % nb] : x[i]) *
		       (y[i] + 1.0f);
	return QR_OK;
}

const struct qr_op_desc qr_op_gelu = {
	.domain = "", .name = "Gelu", .since = 20,
	.check = gelu_check, .infer = gelu_infer, .run = gelu_run,
};

const struct qr_op_desc qr_op_ms_gelu = {
	.domain = "com.microsoft", .name = "Gelu", .since = 1,
	.check = gelu_check, .infer = gelu_infer, .run = gelu_run,
};

const struct qr_op_desc qr_op_bias_gelu = {
	.domain = "com.microsoft", .name = "BiasGelu", .since = 1,
	.check = gelu_check, .infer = gelu_infer, .run = gelu_run,
};

const struct qr_op_desc qr_op_fast_gelu = {
	.domain = "com.microsoft", .name = "FastGelu", .since = 1,
	.check = gelu_check, .infer = gelu_infer, .run = gelu_run,
};

/* ---- FusedMatMul ---- */

static enum qr_status
fmm_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 1)) != QR_OK)
		return st;
	if (qr_op_attr_int(c, "transBatchA", 0) != 0 ||
	    qr_op_attr_int(c, "transBatchB", 0) != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "transBatchA and "
				    "transBatchB are not supported");
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

/* t with its last two dims swapped into *o (data copied when with_data;
 * o->data then heap, else NULL). A tensor of rank < 2 is taken as is. */
static void
swap_last(const struct qr_tensor *t, struct qr_tensor *o, int with_data)
{
	size_t rows, cols, mats, m, i, j;
	const float *s = t->data;
	float *dst;

	*o = *t;
	o->owned = 0;
	o->data = NULL;
	if (t->ndim < 2) {
		o->data = with_data ? t->data : NULL;
		return;
	}
	rows = (size_t)t->dims[t->ndim - 2];
	cols = (size_t)t->dims[t->ndim - 1];
	o->dims[t->ndim - 2] = (int64_t)cols;
	o->dims[t->ndim - 1] = (int64_t)rows;
	if (!with_data)
		return;
	dst = xmalloc(t->nbytes ? t->nbytes : 1);
	mats = rows != 0 && cols != 0 ? t->n_elem / (rows * cols) : 0;
	for (m = 0; m < mats; m++)
		for (i = 0; i < rows; i++)
			for (j = 0; j < cols; j++)
				dst[m * rows * cols + j * rows + i] =
					s[m * rows * cols + i * cols + j];
	o->data = dst;
}

/* Run stage (MatMul's infer or run) on op(A), op(B). */
static enum qr_status
fmm_stage(struct qr_op_call *c, struct qr_diag *d, int run)
{
	struct qr_tensor *in0 = c->in[0], *in1 = c->in[1], ta, tb;
	int trans[2] = {(int)qr_op_attr_int(c, "transA", 0),
			(int)qr_op_attr_int(c, "transB", 0)};
	enum qr_status st;

	if (trans[0])
		swap_last(in0, &ta, run);
	if (trans[1])
		swap_last(in1, &tb, run);
	c->in[0] = trans[0] ? &ta : in0;
	c->in[1] = trans[1] ? &tb : in1;
	st = run ? qr_op_matmul.run(c, d) : qr_op_matmul.infer(c, d);
	c->in[0] = in0;
	c->in[1] = in1;
	if (trans[0] && ta.data != in0->data)
		free(ta.data);
	if (trans[1] && tb.data != in1->data)
		free(tb.data);
	return st;
}

static enum qr_status
fmm_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return fmm_stage(c, d, 0);
}

static enum qr_status
fmm_run(struct qr_op_call *c, struct qr_diag *d)
{
	float alpha = qr_op_attr_float(c, "alpha", 1.0f);
	float *y = c->out[0]->data;
	enum qr_status st;
	size_t i;

	if ((st = fmm_stage(c, d, 1)) != QR_OK || alpha == 1.0f)
		return st;
	for (i = 0; i < c->out[0]->n_elem; i++)
		y[i] *= alpha;
	return QR_OK;
}

const struct qr_op_desc qr_op_fused_matmul = {
	.domain = "com.microsoft", .name = "FusedMatMul", .since = 1,
	.check = fmm_check, .infer = fmm_infer, .run = fmm_run,
};

/* ---- layer normalizations ---- */

/* Input i, when present, must hold n floats. */
static enum qr_status
want_n(const struct qr_op_call *c, struct qr_diag *d, size_t i, size_t n)
{
	char b[128];

	if (!qr_op_has_in(c, i) || c->in[i]->n_elem == n)
		return QR_OK;
	return qr_op_errorf(c, d, QR_ESHAPE, "input %zu '%s' %s must hold %zu "
			    "values", i, qr_op_in_name(c, i),
			    qr_shape_str(c->in[i], b, sizeof b), n);
}

/* The Skip*LayerNormalization inputs: gamma, beta (none when simplified),
 * bias. */
struct skip_in {
	int rms;
	size_t gamma, beta, bias;
};

static void
skip_in(const struct qr_op_call *c, struct skip_in *s)
{
	s->rms = strcmp(c->node->op_type, "SkipSimplifiedLayerNormalization") ==
		 0;
	s->gamma = 2;
	s->beta = s->rms ? (size_t)-1 : 3;
	s->bias = s->rms ? 3 : 4;
}

static enum qr_status
skip_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 3, 5, 1, 4)) != QR_OK)
		return st;
	return qr_op_all_float(c, d);
}

static enum qr_status
skip_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *sk = c->in[1];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct skip_in s;
	enum qr_status st;
	size_t h;
	char a[128], b[128];
	int i;

	skip_in(c, &s);
	if (x->ndim < 1 || sk->ndim < 1 || x->n_elem % sk->n_elem != 0 ||
	    sk->dims[sk->ndim - 1] != x->dims[x->ndim - 1])
		return qr_op_errorf(c, d, QR_ESHAPE, "skip '%s' %s does not "
				    "fit input '%s' %s", qr_op_in_name(c, 1),
				    qr_shape_str(sk, a, sizeof a),
				    qr_op_in_name(c, 0),
				    qr_shape_str(x, b, sizeof b));
	h = (size_t)x->dims[x->ndim - 1];
	if ((st = want_n(c, d, s.gamma, h)) != QR_OK ||
	    (!s.rms && (st = want_n(c, d, s.beta, h)) != QR_OK) ||
	    (st = want_n(c, d, s.bias, h)) != QR_OK)
		return st;
	for (i = 0; i < x->ndim; i++)
		dims[i] = i < x->ndim - 1 ? x->dims[i] : 1;
	if ((st = qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, x->ndim, x->dims,
				      qr_op_out_name(c, 0), d)) != QR_OK)
		return st;
	for (i = 1; i < 3 && (size_t)i < c->n_out; i++)
		if ((st = qr_tensor_set_shape(c->out[i], QR_DT_FLOAT, x->ndim,
					      dims, qr_op_out_name(c, (size_t)i),
					      d)) != QR_OK)
			return st;
	if (c->n_out > 3)
		st = qr_tensor_set_shape(c->out[3], QR_DT_FLOAT, x->ndim,
					 x->dims, qr_op_out_name(c, 3), d);
	return st;
}

/* Output i's data, or NULL when the node does not ask for it. */
static float *
out_or_null(struct qr_op_call *c, size_t i)
{
	return i < c->n_out && c->out[i] != NULL ? c->out[i]->data : NULL;
}

static enum qr_status
skip_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *sk = c->in[1];
	float eps = qr_op_attr_float(c, "epsilon", 1e-12f);
	size_t h = (size_t)x->dims[x->ndim - 1], rows = x->n_elem / h, r, i;
	const float *xd = x->data, *sd = sk->data, *gamma, *beta = NULL;
	const float *bias = NULL;
	float *y = c->out[0]->data, *mean = out_or_null(c, 1);
	float *inv = out_or_null(c, 2), *sum = out_or_null(c, 3), *row, m, v;
	struct skip_in s;

	(void)d;
	skip_in(c, &s);
	gamma = c->in[s.gamma]->data;
	if (!s.rms && qr_op_has_in(c, s.beta))
		beta = c->in[s.beta]->data;
	if (qr_op_has_in(c, s.bias))
		bias = c->in[s.bias]->data;
	row = xmalloc(h * sizeof *row);
	for (r = 0; r < rows; r++) {
		size_t so = (r * h) % sk->n_elem;

		for (i = 0; i < h; i++) {
			row[i] = xd[r * h + i] + sd[so + i];
			if (bias)
				row[i] += bias[i];
		}
		if (sum)
			memcpy(sum + r * h, row, h * sizeof *row);
		qr_norm_row_ort_f32(s.rms ? QR_ORT_SKIP_RMSNORM :
				    QR_ORT_SKIP_LAYERNORM, row, h, gamma, beta,
				    eps, y + r * h, &m, &v);
		if (mean)
			mean[r] = m;
		if (inv)
			inv[r] = v;
	}
	free(row);
	return QR_OK;
}

const struct qr_op_desc qr_op_skip_layer_norm = {
	.domain = "com.microsoft", .name = "SkipLayerNormalization",
	.since = 1,
	.check = skip_check, .infer = skip_infer, .run = skip_run,
};

const struct qr_op_desc qr_op_skip_simplified_layer_norm = {
	.domain = "com.microsoft", .name = "SkipSimplifiedLayerNormalization",
	.since = 1,
	.check = skip_check, .infer = skip_infer, .run = skip_run,
};

static enum qr_status
sln_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 2)) != QR_OK)
		return st;
	return qr_op_all_float(c, d);
}

static enum qr_status
sln_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int axis, i;

	if ((st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", -1), x->ndim, 0,
			     &axis)) != QR_OK ||
	    (st = want_n(c, d, 1, qr_op_dims_prod(x->dims, axis,
						  x->ndim))) != QR_OK ||
	    (st = qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, x->ndim, x->dims,
				      qr_op_out_name(c, 0), d)) != QR_OK)
		return st;
	for (i = 0; i < x->ndim; i++)
		dims[i] = i < axis ? x->dims[i] : 1;
	if (c->n_out > 1)
		st = qr_tensor_set_shape(c->out[1], QR_DT_FLOAT, x->ndim, dims,
					 qr_op_out_name(c, 1), d);
	return st;
}

static enum qr_status
sln_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	float eps = qr_op_attr_float(c, "epsilon", 1e-5f), m, v;
	float *inv = out_or_null(c, 1);
	size_t n, rows, r;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", -1), x->ndim, 0, &axis);
	n = qr_op_dims_prod(x->dims, axis, x->ndim);
	rows = n ? x->n_elem / n : 0;
	for (r = 0; r < rows; r++) {
		qr_norm_row_ort_f32(QR_ORT_RMSNORM,
				    (const float *)x->data + r * n, n,
				    c->in[1]->data, NULL, eps,
				    (float *)c->out[0]->data + r * n, &m, &v);
		if (inv)
			inv[r] = v;
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_simplified_layer_norm = {
	.domain = "", .name = "SimplifiedLayerNormalization", .since = 1,
	.check = sln_check, .infer = sln_infer, .run = sln_run,
};
