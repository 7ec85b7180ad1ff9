/*
 * op_softmax: Softmax, LogSoftmax and Hardmax, and the losses built on
 * log-probabilities (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
 *
 * The axis changed meaning at opset 13. Before, the input is coerced to 2-D
 * [prod(dims[0..axis)), prod(dims[axis..))] (axis defaults to 1) and each
 * row is normalised. From 13, only dims[axis] is normalised (axis defaults
 * to -1). Both are one loop over [outer][len][inner]: before 13,
 * len = prod(dims[axis..)) and inner = 1.
 *
 * Float Softmax is computed as ONNX Runtime computes it (MLAS's exp and
 * lane sums, kernels/norm.c), so a QDQ model quantizes attention
 * probabilities to ORT's steps. LogSoftmax and double: y = x - max -
 * log(sum), y = exp(x - max) / sum, with the sum in double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

static enum qr_status
softmax_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOATS)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

/* The [outer][len][inner] view of x for this node's axis and opset. */
static enum qr_status
softmax_view(const struct qr_op_call *c, struct qr_diag *d,
	     const struct qr_tensor *x, size_t *outer, size_t *len,
	     size_t *inner)
{
	int old = c->opset < 13, axis;
	enum qr_status st;

	st = qr_op_axis(c, d, qr_op_attr_int(c, "axis", old ? 1 : -1),
			x->ndim, 0, &axis);
	if (st != QR_OK)
		return st;
	if (x->ndim == 0) {
		*outer = *len = *inner = 1;
		return QR_OK;
	}
	*outer = qr_op_dims_prod(x->dims, 0, axis);
	if (old) {
		*len = qr_op_dims_prod(x->dims, axis, x->ndim);
		*inner = 1;
	} else {
		*len = (size_t)x->dims[axis];
		*inner = qr_op_dims_prod(x->dims, axis + 1, x->ndim);
	}
	return QR_OK;
}

static enum qr_status
softmax_infer(struct qr_op_call *c, struct qr_diag *d)
{
	size_t outer, len, inner;
	enum qr_status st = softmax_view(c, d, c->in[0], &outer, &len, &inner);

	if (st != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, c->in[0]->ndim,
				   c->in[0]->dims, qr_op_out_name(c, 0), d);
}

#define SOFTMAX_LOOP(T, EXP, LOG, c, is_log, outer, len, inner)             \
	do {                                                                \
		const T *x = (c)->in[0]->data;                              \
		T *y = (c)->out[0]->data;                                   \
		size_t o, j, k;                                             \
		for (o = 0; o < (outer); o++) {                             \
			for (j = 0; j < (inner); j++) {                     \
				size_t b = o * (len) * (inner) + j;         \
				T mx = x[b];                                \
				double sum = 0;                             \
				for (k = 1; k < (len); k++)                 \
					if (x[b + k * (inner)] > mx)        \
						mx = x[b + k * (inner)];    \
				for (k = 0; k < (len); k++) {               \
					T e = EXP(x[b + k * (inner)] - mx); \
					sum += e;                           \
					if (!(is_log))                      \
						y[b + k * (inner)] = e;     \
				}                                           \
				for (k = 0; k < (len); k++) {               \
					size_t p = b + k * (inner);         \
					if (is_log)                         \
						y[p] = x[p] - mx -          \
						       (T)LOG(sum);         \
					else                                \
						y[p] = (T)(y[p] / sum);     \
				}                                           \
			}                                                   \
		}                                                           \
	} while (0)

/* Float Softmax in ONNX Runtime's arithmetic, a row at a time (a row
 * along a middle axis gathered first, as ORT transposes it last). */
static void
softmax_ort(const float *x, float *y, size_t outer, size_t len, size_t inner)
{
	float *row = inner > 1 ? xmalloc((len ? len : 1) * sizeof *row) : NULL;
	size_t o, j, k;

	for (o = 0; o < outer; o++) {
		if (inner == 1) {
			qr_softmax_row_ort_f32(x + o * len, len, y + o * len);
			continue;
		}
		for (j = 0; j < inner; j++) {
			size_t b = o * len * inner + j;

			for (k = 0; k < len; k++)
				row[k] = x[b + k * inner];
			qr_softmax_row_ort_f32(row, len, row);
			for (k = 0; k < len; k++)
				y[b + k * inner] = row[k];
		}
	}
	free(row);
}

static enum qr_status
softmax_any_run(struct qr_op_call *c, struct qr_diag *d, int is_log)
{
	size_t outer, len, inner;

	softmax_view(c, d, c->in[0], &outer, &len, &inner);
	if (c->out[0]->n_elem == 0)
		return QR_OK;
	if (c->in[0]->dtype == QR_DT_FLOAT && !is_log)
		softmax_ort(c->in[0]->data, c->out[0]->data, outer, len, inner);
	else if (c->in[0]->dtype == QR_DT_FLOAT)
		SOFTMAX_LOOP(float, expf, log, c, is_log, outer, len, inner);
	else
		SOFTMAX_LOOP(double, exp, log, c, is_log, outer, len, inner);
	return QR_OK;
}

static enum qr_status
softmax_run(struct qr_op_call *c, struct qr_diag *d)
{
	return softmax_any_run(c, d, 0);
}

static enum qr_status
log_softmax_run(struct qr_op_call *c, struct qr_diag *d)
{
	return softmax_any_run(c, d, 1);
}

const struct qr_op_desc qr_op_softmax = {
	.domain = "", .name = "Softmax", .since = 1,
	.check = softmax_check, .infer = softmax_infer, .run = softmax_run,
};
const struct qr_op_desc qr_op_log_softmax = {
	.domain = "", .name = "LogSoftmax", .since = 1,
	.check = softmax_check, .infer = softmax_infer,
	.run = log_softmax_run,
};

/* ---- Hardmax: 1 at the first maximum along the axis, else 0 ---- */

static enum qr_status
hardmax_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *y = c->out[0];
	size_t outer, len, inner, o, j, k;

	softmax_view(c, d, x, &outer, &len, &inner);
	if (y->nbytes > 0)
		memset(y->data, 0, y->nbytes);
	for (o = 0; o < outer; o++) {
		for (j = 0; j < inner; j++) {
			size_t b = o * len * inner + j, best = 0;

			for (k = 1; k < len; k++)
				if (qr_op_get(x, b + k * inner) >
				    qr_op_get(x, b + best * inner))
					best = k;
			if (len > 0)
				qr_op_set(y, b + best * inner, 1);
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_hardmax = {
	.domain = "", .name = "Hardmax", .since = 1,
	.check = softmax_check, .infer = softmax_infer, .run = hardmax_run,
};

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ---- */

/*
 * Both score log-probabilities logp [N][C][D...] against int targets
 * [N][D...]: loss = -logp[n][t][d] * w[t] (0 where t == ignore_index),
 * then reduction "none" (shape of the targets), "sum", or "mean" (sum
 * divided by the sum of the weights used), as the ONNX reference does.
 */
static enum qr_status
loss_check(const struct qr_op_call *c, struct qr_diag *d)
{
	const char *red = qr_op_attr_str(c, "reduction", "mean");
	int sce = strcmp(c->node->op_type, "SoftmaxCrossEntropyLoss") == 0;
	enum qr_status st;
	size_t j;

	if ((st = qr_op_arity(c, d, 2, 3, 1, sce ? 2 : 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOATS)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_INDEX)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 2)) != QR_OK)
		return st;
	if (strcmp(red, "none") != 0 && strcmp(red, "sum") != 0 &&
	    strcmp(red, "mean") != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "reduction '%s' is not "
				    "none, sum or mean", red);
	for (j = 0; j < c->n_out; j++)
		c->out_dtype[j] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
loss_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *t = c->in[1];
	const struct qr_tensor *w = c->n_in > 2 ? c->in[2] : NULL;
	int none = strcmp(qr_op_attr_str(c, "reduction", "mean"), "none") == 0;
	enum qr_status st;
	char a[128], b[128];
	int i, bad = x->ndim < 2 || t->ndim != x->ndim - 1 ||
		t->dims[0] != x->dims[0];

	for (i = 2; !bad && i < x->ndim; i++)
		if (t->dims[i - 1] != x->dims[i])
			bad = 1;
	if (bad)
		return qr_op_errorf(c, d, QR_ESHAPE, "scores %s and targets "
				    "%s disagree", qr_shape_str(x, a, sizeof a),
				    qr_shape_str(t, b, sizeof b));
	if (w != NULL && (w->ndim != 1 || w->dims[0] != x->dims[1]))
		return qr_op_errorf(c, d, QR_ESHAPE, "weights %s, expected "
				    "[%lld]", qr_shape_str(w, a, sizeof a),
				    (long long)x->dims[1]);
	st = qr_tensor_set_shape(c->out[0], x->dtype, none ? t->ndim : 0,
				 t->dims, qr_op_out_name(c, 0), d);
	if (st == QR_OK && c->n_out > 1)
		st = qr_tensor_set_shape(c->out[1], x->dtype, x->ndim, x->dims,
					 qr_op_out_name(c, 1), d);
	return st;
}

/* The loss from log-probabilities lp (any float tensor of x's shape). */
static enum qr_status
loss_from_logp(struct qr_op_call *c, struct qr_diag *d,
	       const struct qr_tensor *lp)
{
	const struct qr_tensor *t = c->in[1];
	const struct qr_tensor *w = c->n_in > 2 ? c->in[2] : NULL;
	const char *red = qr_op_attr_str(c, "reduction", "mean");
	int has_ignore = qr_op_has_attr(c, "ignore_index");
	int64_t ignore = qr_op_attr_int(c, "ignore_index", 0);
	struct qr_tensor *y = c->out[0];
	size_t n = (size_t)lp->dims[0], ch = (size_t)lp->dims[1];
	size_t inner = qr_op_dims_prod(lp->dims, 2, lp->ndim), i, j;
	double sum = 0, wsum = 0;

	for (i = 0; i < n; i++) {
		for (j = 0; j < inner; j++) {
			size_t p = i * inner + j;
			int64_t k = (int64_t)qr_op_get(t, p);
			double loss = 0, wt = 0;

			if (!(has_ignore && k == ignore)) {
				if (k < 0 || k >= (int64_t)ch)
					return qr_op_errorf(c, d, QR_ESHAPE,
						"target %lld is not a class "
						"in 0..%zu", (long long)k,
						ch - 1);
				wt = w ? qr_op_get(w, (size_t)k) : 1;
				loss = -qr_op_get(lp, (i * ch + (size_t)k) *
						  inner + j) * wt;
			}
			if (strcmp(red, "none") == 0)
				qr_op_set(y, p, loss);
			sum += loss;
			wsum += wt;
		}
	}
	if (strcmp(red, "sum") == 0)
		qr_op_set(y, 0, sum);
	else if (strcmp(red, "mean") == 0)
		qr_op_set(y, 0, sum / wsum);
	return QR_OK;
}

static enum qr_status
nll_run(struct qr_op_call *c, struct qr_diag *d)
{
	return loss_from_logp(c, d, c->in[0]);
}

const struct qr_op_desc qr_op_nll_loss = {
	.domain = "", .name = "NegativeLogLikelihoodLoss", .since = 12,
	.check = loss_check, .infer = loss_infer, .run = nll_run,
};

/* log_softmax over axis 1 of [N][C][D...], then the NLL loss. */
static enum qr_status
sce_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_tensor *lp, tmp;
	size_t n = (size_t)x->dims[0], ch = (size_t)x->dims[1];
	size_t inner = qr_op_dims_prod(x->dims, 2, x->ndim), i, j, k;
	enum qr_status st;

	if (c->n_out > 1) {
		lp = c->out[1];
	} else {
		tmp = *x;
		tmp.data = xreallocarray(NULL, x->n_elem + 1,
					 qr_dtype_size(x->dtype));
		tmp.owned = 0;
		lp = &tmp;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < inner; j++) {
			size_t b = i * ch * inner + j;
			double mx = -INFINITY, s = 0;

			for (k = 0; k < ch; k++)
				mx = fmax(mx, qr_op_get(x, b + k * inner));
			for (k = 0; k < ch; k++)
				s += exp(qr_op_get(x, b + k * inner) - mx);
			for (k = 0; k < ch; k++)
				qr_op_set(lp, b + k * inner,
					  qr_op_get(x, b + k * inner) - mx -
					  log(s));
		}
	}
	st = loss_from_logp(c, d, lp);
	if (lp == &tmp)
		free(tmp.data);
	return st;
}

const struct qr_op_desc qr_op_sce_loss = {
	.domain = "", .name = "SoftmaxCrossEntropyLoss", .since = 12,
	.check = loss_check, .infer = loss_infer, .run = sce_run,
};
