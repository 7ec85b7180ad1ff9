/*
 * op_pool: MaxPool (float, uint8, int8; with the optional Indices output),
 * AveragePool (float), GlobalAveragePool and GlobalMaxPool (float, any
 * spatial rank). Windows are 1-D, 2-D or 3-D; see op-conv-int.h.
 */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

#define POOL_DTYPES (QR_DTM_FLOAT | QR_DTM(QR_DT_UINT8) | QR_DTM(QR_DT_INT8))

static enum qr_status
pool_check(const struct qr_op_call *c, struct qr_diag *d, int is_max)
{
	struct qr_op_win win;
	enum qr_status st;
	int dt;

	if ((st = qr_op_arity(c, d, 1, 1, 1, is_max ? 2 : 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, is_max ? POOL_DTYPES :
						     QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_win_parse(c, d, &win)) != QR_OK ||
	    (st = qr_op_pool_win_check(c, d, &win, 3)) != QR_OK)
		return st;
	if (win.has_pads && win.auto_pad != QR_AUTOPAD_NOTSET)
		return qr_op_errorf(c, d, QR_EGRAPH, "pads and auto_pad %s are "
				    "both given", qr_op_attr_str(c, "auto_pad",
								 ""));
	dt = qr_op_dtype(c, 0);
	c->out_dtype[0] = dt;
	if (c->n_out > 1)
		c->out_dtype[1] = QR_DT_INT64;
	return QR_OK;
}

static enum qr_status
maxpool_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return pool_check(c, d, 1);
}

static enum qr_status
avgpool_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return pool_check(c, d, 0);
}

static enum qr_status
pool_params(struct qr_op_call *c, struct qr_diag *d, struct qr_pool_params *p,
	    int *ndim, int64_t *dims)
{
	struct qr_op_win win;
	enum qr_status st;

	if ((st = qr_op_win_parse(c, d, &win)) != QR_OK)
		return st;
	return qr_op_pool_shape(c, d, &win, c->in[0], p, ndim, dims);
}

static enum qr_status
pool_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_pool_params p;
	enum qr_status st;
	int ndim;

	if ((st = pool_params(c, d, &p, &ndim, dims)) != QR_OK ||
	    (st = qr_tensor_set_shape(c->out[0], c->in[0]->dtype, ndim, dims,
				      qr_op_out_name(c, 0), d)) != QR_OK)
		return st;
	if (c->n_out > 1 && c->out[1] != NULL)
		st = qr_tensor_set_shape(c->out[1], QR_DT_INT64, ndim, dims,
					 qr_op_out_name(c, 1), d);
	return st;
}

/*
 * MaxPool with Indices, as ONNX Runtime: the first maximum of each window
 * wins, and its index is flat over the whole input tensor, each volume
 * row major, or column major with storage_order 1 (the first spatial
 * axis fastest). A 1-D or 2-D window has one plane (d = 1).
 */
#define MAXPOOL_IDX(T)                                                      \
	do {                                                                \
		const T *x = c->in[0]->data;                                \
		T *y = c->out[0]->data;                                     \
		for (pl = 0; pl < p.n * p.c; pl++)                          \
		for (od = 0; od < od_n; od++)                               \
		for (oh = 0; oh < oh_n; oh++)                               \
		for (ow = 0; ow < ow_n; ow++, at++) {                       \
			ptrdiff_t d0 = (ptrdiff_t)(od * p.stride_d) -       \
				       (ptrdiff_t)p.pad_f;                  \
			ptrdiff_t h0 = (ptrdiff_t)(oh * p.stride_h) -       \
				       (ptrdiff_t)p.pad_t;                  \
			ptrdiff_t w0 = (ptrdiff_t)(ow * p.stride_w) -       \
				       (ptrdiff_t)p.pad_l;                  \
			int found = 0;                                      \
			T m = 0;                                            \
			int64_t mi = 0;                                     \
			for (a = 0; a < p.kd; a++)                          \
			for (i = 0; i < p.kh; i++)                          \
			for (j = 0; j < p.kw; j++) {                        \
				ptrdiff_t id = d0 + (ptrdiff_t)(a * p.dil_d);\
				ptrdiff_t ih = h0 + (ptrdiff_t)(i * p.dil_h);\
				ptrdiff_t iw = w0 + (ptrdiff_t)(j * p.dil_w);\
				T v;                                        \
				if (id < 0 || id >= (ptrdiff_t)p.d ||       \
				    ih < 0 || ih >= (ptrdiff_t)p.h ||       \
				    iw < 0 || iw >= (ptrdiff_t)p.w)         \
					continue;                           \
				v = x[pl * vol + ((size_t)id * p.h +        \
					(size_t)ih) * p.w + (size_t)iw];    \
				if (!found || v > m) {                      \
					m = v;                              \
					mi = (int64_t)(pl * vol) +          \
					    (col_major ? id + (ih + iw *    \
					    (ptrdiff_t)p.h) * (ptrdiff_t)p.d\
					    : (id * (ptrdiff_t)p.h + ih) *  \
					    (ptrdiff_t)p.w + iw);           \
					found = 1;                          \
				}                                           \
			}                                                   \
			y[at] = m;                                          \
			idx[at] = mi;                                       \
		}                                                           \
	} while (0)

static void
maxpool_indices(struct qr_op_call *c, const struct qr_pool_params *pp)
{
	struct qr_pool_params p = *pp;
	size_t od_n = qr_pool_out_d(&p), oh_n = qr_pool_out_h(&p);
	size_t ow_n = qr_pool_out_w(&p), vol = p.d * p.h * p.w;
	size_t pl, od, oh, ow, a, i, j, at = 0;
	int64_t *idx = c->out[1]->data;
	int col_major = qr_op_attr_int(c, "storage_order", 0) != 0;

	switch (c->in[0]->dtype) {
	case QR_DT_FLOAT: MAXPOOL_IDX(float); break;
	case QR_DT_UINT8: MAXPOOL_IDX(uint8_t); break;
	case QR_DT_INT8: MAXPOOL_IDX(int8_t); break;
	default: QR_ASSERT(!"dtype refused by check");
	}
}

static enum qr_status
maxpool_run(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_pool_params p;
	enum qr_status st;
	int ndim;

	if ((st = pool_params(c, d, &p, &ndim, dims)) != QR_OK)
		return st;
	if (c->out[0]->n_elem == 0)
		return QR_OK;
	if (c->n_out > 1 && c->out[1] != NULL) {
		maxpool_indices(c, &p);
		return QR_OK;
	}
	if (ndim == 5 && c->in[0]->dtype == QR_DT_FLOAT)
		qr_maxpool3d_f32(&p, c->in[0]->data, c->out[0]->data);
	else if (ndim == 5)
		qr_maxpool3d_q8(&p, c->in[0]->data,
				c->in[0]->dtype == QR_DT_INT8, c->out[0]->data);
	else if (c->in[0]->dtype == QR_DT_FLOAT)
		qr_maxpool_f32(&p, c->in[0]->data, c->out[0]->data);
	else
		qr_maxpool_q8(&p, c->in[0]->data,
			      c->in[0]->dtype == QR_DT_INT8, c->out[0]->data);
	return QR_OK;
}

static enum qr_status
avgpool_run(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_pool_params p;
	enum qr_status st;
	int ndim;

	if ((st = pool_params(c, d, &p, &ndim, dims)) != QR_OK)
		return st;
	if (c->out[0]->n_elem != 0 && ndim == 5)
		qr_avgpool3d_f32(&p, c->in[0]->data, c->out[0]->data);
	else if (c->out[0]->n_elem != 0)
		qr_avgpool_f32(&p, c->in[0]->data, c->out[0]->data);
	return QR_OK;
}

const struct qr_op_desc qr_op_max_pool = {
	.domain = "", .name = "MaxPool", .since = 1,
	.check = maxpool_check, .infer = pool_infer, .run = maxpool_run,
};

const struct qr_op_desc qr_op_average_pool = {
	.domain = "", .name = "AveragePool", .since = 1,
	.check = avgpool_check, .infer = pool_infer, .run = avgpool_run,
};

/* ---- GlobalAveragePool, GlobalMaxPool ---- */

static enum qr_status
global_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 1, 1, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOAT)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

static enum qr_status
global_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0];
	int64_t dims[QR_TENSOR_MAX_DIMS];
	char b[128];
	int i;

	if (x->ndim < 3)
		return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s must be "
				    "[N][C][spatial...]", qr_op_in_name(c, 0),
				    qr_shape_str(x, b, sizeof b));
	dims[0] = x->dims[0];
	dims[1] = x->dims[1];
	for (i = 2; i < x->ndim; i++)
		dims[i] = 1;
	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, x->ndim, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
global_run(struct qr_op_call *c, int is_max)
{
	const struct qr_tensor *x = c->in[0];
	size_t nc = (size_t)(x->dims[0] * x->dims[1]);
	size_t hw = qr_op_dims_prod(x->dims, 2, x->ndim);

	if (is_max)
		qr_global_maxpool_f32(x->data, nc, hw, c->out[0]->data);
	else
		qr_global_avgpool_f32(x->data, nc, hw, c->out[0]->data);
	return QR_OK;
}

static enum qr_status
global_avg_run(struct qr_op_call *c, struct qr_diag *d)
{
	return global_run(c, 0);
}

static enum qr_status
global_max_run(struct qr_op_call *c, struct qr_diag *d)
{
	return global_run(c, 1);
}

const struct qr_op_desc qr_op_global_average_pool = {
	.domain = "", .name = "GlobalAveragePool", .since = 1,
	.check = global_check, .infer = global_infer, .run = global_avg_run,
};

const struct qr_op_desc qr_op_global_max_pool = {
	.domain = "", .name = "GlobalMaxPool", .since = 1,
	.check = global_check, .infer = global_infer, .run = global_max_run,
};
