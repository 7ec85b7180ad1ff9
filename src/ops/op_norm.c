/*
 * op_norm: BatchNormalization (inference), InstanceNormalization,
 * LayerNormalization (opset 17), LRN and MeanVarianceNormalization.
 *
 *   BatchNormalization:    y = (x - mean) / sqrt(var + eps) * scale + B,
 *                          per channel (axis 1), running statistics given
 *   InstanceNormalization: the same with mean/var of each (n, c) plane
 *   LayerNormalization:    over dims[axis..], population statistics;
 *                          optional outputs Mean and InvStdDev; ONNX
 *                          Runtime's arithmetic and order, bit for bit
 *                          (qr_norm_row_ort_f32)
 *
 * float runs on the kernels (src/kernels/norm.c); double is not supported.
 * Training-mode BatchNormalization is refused at check.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

/* Input i must be 1-D of n elements. */
static enum qr_status
want_vec(const struct qr_op_call *c, struct qr_diag *d, size_t i, int64_t n)
{
	char buf[128];

	if (c->in[i]->ndim != 1 || c->in[i]->dims[0] != n)
		return qr_op_errorf(c, d, QR_ESHAPE, "input %zu '%s' is %s, "
				    "expected [%lld]", i, qr_op_in_name(c, i),
				    qr_shape_str(c->in[i], buf, sizeof buf),
				    (long long)n);
	return QR_OK;
}

/* ---- BatchNormalization ---- */

static enum qr_status
bn_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 5, 5, 1, 5)) != QR_OK ||
	    (st = qr_op_all_float(c, d)) != QR_OK)
		return st;
	if (c->opset >= 14 && qr_op_attr_int(c, "training_mode", 0))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "training_mode=1 "
				    "is not supported");
	if (c->opset < 7 && qr_op_attr_int(c, "is_test", 0) == 0 &&
	    c->n_out > 1)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "training mode "
				    "(is_test=0) is not supported");
	if (c->opset < 9 && qr_op_attr_int(c, "spatial", 1) == 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "spatial=0 is not "
				    "supported");
	if (c->n_out > 1)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "training outputs "
				    "(mean, var, ...) are not supported");
	return QR_OK;
}

static enum qr_status
bn_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	enum qr_status st;
	int64_t ch;
	size_t i;

	if (x->ndim < 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "X must have rank >= 2, "
				    "not %d", x->ndim);
	ch = x->dims[1];
	for (i = 1; i < 5; i++)
		if ((st = want_vec(c, d, i, ch)) != QR_OK)
			return st;
	return qr_op_same_infer(c, d);
}

static enum qr_status
bn_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];

	qr_batchnorm_f32(x->data, (size_t)x->dims[0], (size_t)x->dims[1],
			 qr_op_dims_prod(x->dims, 2, x->ndim), c->in[1]->data,
			 c->in[2]->data, c->in[3]->data, c->in[4]->data,
			 qr_op_attr_float(c, "epsilon", 1e-5f),
			 c->out[0]->data);
	return QR_OK;
}

const struct qr_op_desc qr_op_batch_norm = {
	.domain = "", .name = "BatchNormalization", .since = 1,
	.check = bn_check, .infer = bn_infer, .run = bn_run,
};

/* ---- InstanceNormalization ---- */

static enum qr_status
in_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 3, 3, 1, 1)) != QR_OK)
		return st;
	return qr_op_all_float(c, d);
}

static enum qr_status
in_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	enum qr_status st;

	if (x->ndim < 3)
		return qr_op_errorf(c, d, QR_ESHAPE, "input must have rank >= "
				    "3, not %d", x->ndim);
	if ((st = want_vec(c, d, 1, x->dims[1])) != QR_OK ||
	    (st = want_vec(c, d, 2, x->dims[1])) != QR_OK)
		return st;
	return qr_op_same_infer(c, d);
}

static enum qr_status
in_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];

	qr_instancenorm_f32(x->data, (size_t)x->dims[0], (size_t)x->dims[1],
			    qr_op_dims_prod(x->dims, 2, x->ndim),
			    c->in[1]->data, c->in[2]->data,
			    qr_op_attr_float(c, "epsilon", 1e-5f),
			    c->out[0]->data);
	return QR_OK;
}

const struct qr_op_desc qr_op_instance_norm = {
	.domain = "", .name = "InstanceNormalization", .since = 1,
	.check = in_check, .infer = in_infer, .run = in_run,
};

/* ---- LayerNormalization ---- */

static enum qr_status
ln_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 3, 1, 3)) != QR_OK)
		return st;
	if (qr_op_attr_int(c, "stash_type", 1) != 1)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "stash_type %lld is "
				    "not supported", (long long)qr_op_attr_int(
				    c, "stash_type", 1));
	return qr_op_all_float(c, d);
}

static enum qr_status
ln_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	enum qr_status st;
	int axis, i, k;
	size_t j;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", -1), x->ndim, 0,
			&axis);
	if (st != QR_OK)
		return st;
	/* Scale and B broadcast to dims[axis..] (right-aligned; dims of 1
	 * may stand before axis, as in a [1, C] scale over axis -1). */
	for (j = 1; j < c->n_in; j++) {
		const struct qr_tensor *p = c->in[j];
		char a[128], b[128];

		if (p == NULL)
			continue;
		for (k = 0; k < p->ndim; k++) {
			int xi = x->ndim - p->ndim + k;

			if (xi < 0 || (xi < axis && p->dims[k] != 1) ||
			    (p->dims[k] != 1 && p->dims[k] != x->dims[xi]))
				return qr_op_errorf(c, d, QR_ESHAPE, "input "
						    "'%s' %s does not "
						    "broadcast to X %s from "
						    "axis %d",
						    qr_op_in_name(c, j),
						    qr_shape_str(p, a, sizeof a),
						    qr_shape_str(x, b, sizeof b),
						    axis);
		}
	}
	st = qr_op_same_infer(c, d);
	for (i = 0; i < x->ndim; i++)
		dims[i] = i < axis ? x->dims[i] : 1;
	for (j = 1; st == QR_OK && j < c->n_out; j++)
		st = qr_tensor_set_shape(c->out[j], QR_DT_FLOAT, x->ndim, dims,
					 qr_op_out_name(c, j), d);
	return st;
}

/* Index into a parameter p broadcast over a row of n elements whose
 * shape is x's dims[axis..]. */
static size_t
param_index(const struct qr_tensor *p, const struct qr_tensor *x, size_t i)
{
	size_t idx = 0, mul = 1;
	int k;

	for (k = x->ndim - 1; k >= x->ndim - p->ndim; k--) {
		size_t dim = (size_t)x->dims[k], pos = i % dim;
		int pk = k - (x->ndim - p->ndim);

		i /= dim;
		if (p->dims[pk] != 1)
			idx += pos * mul;
		mul *= (size_t)p->dims[pk];
	}
	return idx;
}

/* A parameter p as a whole row of n: itself, or broadcast into buf. */
static const float *
ln_param(const struct qr_tensor *p, const struct qr_tensor *x, size_t n,
	 float **buf)
{
	size_t i;

	if (p == NULL)
		return NULL;
	if (p->n_elem == n)
		return p->data;
	*buf = xreallocarray(NULL, n + 1, sizeof **buf);
	for (i = 0; i < n; i++)
		(*buf)[i] = ((const float *)p->data)[param_index(p, x, i)];
	return *buf;
}

static enum qr_status
ln_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *g = c->in[1];
	const struct qr_tensor *b = c->n_in > 2 ? c->in[2] : NULL;
	float eps = qr_op_attr_float(c, "epsilon", 1e-5f);
	float *y = c->out[0]->data, *gbuf = NULL, *bbuf = NULL;
	const float *gd, *bd;
	enum qr_ort_norm kind = QR_ORT_LAYERNORM;
	size_t rows, n, r;
	int axis;

	qr_op_axis(c, d, qr_op_attr_int(c, "axis", -1), x->ndim, 0, &axis);
	rows = qr_op_dims_prod(x->dims, 0, axis);
	n = qr_op_dims_prod(x->dims, axis, x->ndim);
	gd = ln_param(g, x, n, &gbuf);
	bd = ln_param(b, x, n, &bbuf);
	/* ONNX Runtime takes another path, in double, when either is
	 * broadcast */
	if (g->n_elem != n || (b != NULL && b->n_elem != n))
		kind = QR_ORT_LAYERNORM_BCAST;
	for (r = 0; r < rows; r++) {
		float mean, inv;

		qr_norm_row_ort_f32(kind, (const float *)x->data + r * n, n,
				    gd, bd, eps, y + r * n, &mean, &inv);
		if (c->n_out > 1 && c->out[1]->data != NULL)
			((float *)c->out[1]->data)[r] = mean;
		if (c->n_out > 2 && c->out[2]->data != NULL)
			((float *)c->out[2]->data)[r] = inv;
	}
	free(gbuf);
	free(bbuf);
	return QR_OK;
}

const struct qr_op_desc qr_op_layer_norm = {
	.domain = "", .name = "LayerNormalization", .since = 17,
	.check = ln_check, .infer = ln_infer, .run = ln_run,
};

/* ---- LRN: across channels ---- */

static enum qr_status
lrn_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK ||
	    (st = qr_op_all_float(c, d)) != QR_OK)
		return st;
	if (qr_op_attr_int(c, "size", 0) < 1)
		return qr_op_errorf(c, d, QR_EGRAPH, "size must be >= 1");
	return QR_OK;
}

static enum qr_status
lrn_infer(struct qr_op_call *c, struct qr_diag *d)
{
	if (c->in[0]->ndim < 3)
		return qr_op_errorf(c, d, QR_ESHAPE, "input must have rank >= "
				    "3, not %d", c->in[0]->ndim);
	return qr_op_same_infer(c, d);
}

/*
 * y = x / (bias + alpha / size * sum of x^2 over channels
 * [c - floor((size-1)/2), c + ceil((size-1)/2)]) ^ beta (ONNX LRN).
 */
static enum qr_status
lrn_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	const float *xd = x->data;
	float *y = c->out[0]->data;
	double alpha = qr_op_attr_float(c, "alpha", 1e-4f);
	double beta = qr_op_attr_float(c, "beta", 0.75f);
	double bias = qr_op_attr_float(c, "bias", 1.0f);
	int64_t size = qr_op_attr_int(c, "size", 1);
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
	int64_t n = x->dims[0], ch = x->dims[1], b, k, j;
	size_t hw = qr_op_dims_prod(x->dims, 2, x->ndim), p;

	for (b = 0; b < n; b++) {
		for (k = 0; k < ch; k++) {
			for (p = 0; p < hw; p++) {
				double s = 0, v;

				for (j = k - lo; j <= k + hi; j++) {
					if (j < 0 || j >= ch)
						continue;
					v = xd[((size_t)(b * ch + j)) * hw + p];
					s += v * v;
				}
				v = xd[((size_t)(b * ch + k)) * hw + p];
				y[((size_t)(b * ch + k)) * hw + p] = (float)(v /
					pow(bias + alpha / (double)size * s,
					    beta));
			}
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_lrn = {
	.domain = "", .name = "LRN", .since = 1,
	.check = lrn_check, .infer = lrn_infer, .run = lrn_run,
};

/* ---- MeanVarianceNormalization: (x - mean) / sqrt(var) over axes ---- */

static enum qr_status
mvn_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK)
		return st;
	return qr_op_all_float(c, d);
}

/* red[i] = 1 for the axes normalised over (default 0, 2, 3). */
static enum qr_status
mvn_axes(const struct qr_op_call *c, struct qr_diag *d, int *red)
{
	static const int64_t dflt[] = {0, 2, 3};
	const int64_t *axes;
	size_t n;
	int i;

	axes = qr_op_attr_ints(c, "axes", &n);
	if (axes == NULL) {
		axes = dflt;
		n = 3;
	}
	for (i = 0; i < c->in[0]->ndim; i++)
		red[i] = 0;
	return qr_op_axes_mark(c, d, axes, n, c->in[0]->ndim, red);
}

static enum qr_status
mvn_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int red[QR_TENSOR_MAX_DIMS];
	enum qr_status st = mvn_axes(c, d, red);

	return st != QR_OK ? st : qr_op_same_infer(c, d);
}

static enum qr_status
mvn_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	const float *xd = x->data;
	float *y = c->out[0]->data;
	int red[QR_TENSOR_MAX_DIMS];
	int64_t ost[QR_TENSOR_MAX_DIMS];
	size_t n_out, count, k, pass;
	double *sum, *sq;

	mvn_axes(c, d, red);
	count = qr_op_reduce_strides(x, red, ost, &n_out);
	sum = xcalloc(n_out + 1, sizeof *sum);
	sq = xcalloc(n_out + 1, sizeof *sq);
	/* pass 0: sums; pass 1: write (x - mean) / sqrt(E[x^2] - mean^2) */
	for (pass = 0; pass < 2; pass++) {
		int64_t idx[QR_TENSOR_MAX_DIMS] = {0};
		size_t o = 0;

		for (k = 0; k < x->n_elem; k++) {
			double v = xd[k];

			if (pass == 0) {
				sum[o] += v;
				sq[o] += v * v;
			} else {
				double m = sum[o] / (double)count;
				double var = sq[o] / (double)count - m * m;

				y[k] = (float)((v - m) / sqrt(var));
			}
			qr_op_next_offset(x->ndim, x->dims, ost, idx, &o);
		}
	}
	free(sum);
	free(sq);
	return QR_OK;
}

const struct qr_op_desc qr_op_mvn = {
	.domain = "", .name = "MeanVarianceNormalization", .since = 9,
	.check = mvn_check, .infer = mvn_infer, .run = mvn_run,
};
