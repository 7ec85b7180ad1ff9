/*
 * op_qconv: the integer convolutions, ConvInteger (int32 output) and
 * QLinearConv (requantized 8-bit output), on MLAS-style packed weights
 * (kernels.h). QLinearConv gives the bits of ONNX Runtime's CPU provider:
 * int32 products, then MLAS's MlasRequantizeOutput with scale
 * x_scale * w_scale / y_scale.
 */
#include <stdlib.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

/* ---- what both keep: attributes and the packed weights ---- */

/* Per-node state of ConvInteger and QLinearConv. */
struct qconv_state {
	struct qr_op_win win;       /* window attributes */
	int w_const;                /* W and its zero points are constant,
				     * packed at prepare */
	struct qr_qconv_packed *pk; /* packed weights, or NULL */
	void *ws;                   /* kernel workspace */
	size_t ws_cap;              /* bytes in ws */
	float *scale;               /* QLinearConv's requantization scales,
				     * c_out; NULL for ConvInteger */
	size_t scale_cap;           /* entries in scale */
};

/* Packed conv weights of w for group with wzp (1 or c_out values); NULL
 * when w is not a 1-D to 3-D conv weight of that group. */
static struct qr_qconv_packed *
qconv_pack(const struct qr_tensor *w, int64_t group, const int32_t *wzp,
	   size_t n_wzp)
{
	size_t kd, kh, kw, c_out;

	if (w->ndim < 3 || w->ndim > 5 || group < 1 ||
	    (w->dtype != QR_DT_INT8 && w->dtype != QR_DT_UINT8))
		return NULL;
	kd = w->ndim == 5 ? (size_t)w->dims[2] : 0;
	kh = w->ndim >= 4 ? (size_t)w->dims[w->ndim - 2] : 1;
	kw = (size_t)w->dims[w->ndim - 1];
	c_out = (size_t)w->dims[0];
	if (c_out % (size_t)group != 0 || (n_wzp != 1 && n_wzp != c_out))
		return NULL;
	return qr_qconv_pack_new(c_out, (size_t)w->dims[1] * (size_t)group,
				 kd, kh, kw, (size_t)group, w->data,
				 w->dtype == QR_DT_INT8, wzp, n_wzp);
}

/* Prepare-time pack: W at iw and its zero points at iw_zp (may be
 * absent) must be constant. NULL when either is not constant or they are
 * malformed (the run then packs, or reports the error). */
static struct qr_qconv_packed *
qconv_prepack(const struct qr_op_call *c, size_t iw, size_t iw_zp,
	      int64_t group)
{
	const struct qr_tensor *w = c->in[iw], *z = NULL;
	struct qr_qconv_packed *pk;
	int32_t *zp;
	size_t i, nz = 1;

	if (w == NULL)
		return NULL;
	if (qr_op_has_in(c, iw_zp)) {
		z = c->in[iw_zp];
		if (z == NULL || z->dtype != w->dtype || z->ndim > 1)
			return NULL;
		nz = z->n_elem;
	}
	zp = xmalloc((nz ? nz : 1) * sizeof *zp);
	for (i = 0; i < nz; i++)
		zp[i] = z ? (int32_t)qr_op_get(z, i) : 0;
	pk = nz ? qconv_pack(w, group, zp, nz) : NULL;
	free(zp);
	return pk;
}

/* The window attributes of both, and their weights (input iw) 1-D to
 * 3-D: QR_EUNSUPPORTED naming the node otherwise. */
static enum qr_status
qconv_check_win(const struct qr_op_call *c, struct qr_diag *d, size_t iw)
{
	struct qr_op_win win;
	enum qr_status st;

	if ((st = qr_op_win_parse(c, d, &win)) != QR_OK)
		return st;
	if (win.nsp > 3)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%d-D windows are "
				    "not supported (1-D to 3-D only)",
				    win.nsp);
	if (c->in != NULL && c->in[iw] != NULL && c->in[iw]->ndim > 5)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%d-D convolution "
				    "is not supported (1-D to 3-D only)",
				    c->in[iw]->ndim - 2);
	return QR_OK;
}

/* The state, its weights (input iw, zero points at iw_zp) packed when
 * they are constant. */
static enum qr_status
qconv_prepare(struct qr_op_call *c, struct qr_diag *d, size_t iw,
	      size_t iw_zp)
{
	struct qconv_state *st = xcalloc(1, sizeof *st);
	enum qr_status s;

	c->state = st;
	if ((s = qr_op_win_parse(c, d, &st->win)) != QR_OK)
		return s;
	st->pk = qconv_prepack(c, iw, iw_zp, st->win.group);
	st->w_const = st->pk != NULL;
	return QR_OK;
}

static void
qconv_release(void *state)
{
	struct qconv_state *st = state;

	if (st == NULL)
		return;
	qr_qconv_packed_free(st->pk);
	free(st->ws);
	free(st->scale);
	free(st);
}

/* Output shape of input 0 convolved by the weights at iw, as dtype. */
static enum qr_status
qconv_infer(struct qr_op_call *c, struct qr_diag *d, size_t iw, int dtype)
{
	struct qconv_state *st = c->state;
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_conv_params p;
	enum qr_status s;
	int ndim;

	if ((s = qr_op_conv_shape(c, d, &st->win, c->in[0], c->in[iw], 0, &p,
				  &ndim, dims)) != QR_OK)
		return s;
	return qr_tensor_set_shape(c->out[0], dtype, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

/* ---- ConvInteger ---- */

static enum qr_status
convint_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 4, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_Q8)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_Q8)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 2)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 1, 3)) != QR_OK ||
	    (st = qconv_check_win(c, d, 1)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_INT32;
	return QR_OK;
}

static enum qr_status
convint_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	return qconv_prepare(c, d, 1, 3);
}

static enum qr_status
convint_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qconv_infer(c, d, 1, QR_DT_INT32);
}

static enum qr_status
convint_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qconv_state *st = c->state;
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_conv_params p;
	int32_t *wzp = NULL, xzp;
	enum qr_status s;
	int ndim;

	if ((s = qr_op_conv_shape(c, d, &st->win, c->in[0], c->in[1], 0, &p,
				  &ndim, dims)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &xzp)) != QR_OK)
		return s;
	if (c->out[0]->n_elem == 0)
		return QR_OK;
	if (!st->w_const) {
		const struct qr_tensor *z = qr_op_has_in(c, 3) ? c->in[3] :
								 NULL;
		size_t i, nz = z ? z->n_elem : 1;

		if (z != NULL && (z->dtype != c->in[1]->dtype ||
				  z->ndim > 1 || (nz != 1 && nz != p.c_out)))
			return qr_op_errorf(c, d, QR_EGRAPH, "w_zero_point "
					    "must hold 1 or %zu values of the "
					    "weights' dtype", p.c_out);
		wzp = xmalloc(nz * sizeof *wzp);
		for (i = 0; i < nz; i++)
			wzp[i] = z ? (int32_t)qr_op_get(z, i) : 0;
		qr_qconv_packed_free(st->pk);
		st->pk = qconv_pack(c->in[1], st->win.group, wzp, nz);
		QR_ASSERT(st->pk != NULL);
	}
	qr_qconv_run_s32(st->pk, &p, c->in[0]->data,
			 c->in[0]->dtype == QR_DT_INT8, xzp, c->out[0]->data,
			 qr_op_ws(c, &st->ws, &st->ws_cap,
				       qr_qconv_workspace(st->pk, &p,
							  c->n_threads)),
			 c->n_threads);
	free(wzp);
	return QR_OK;
}

const struct qr_op_desc qr_op_conv_integer = {
	.domain = "", .name = "ConvInteger", .since = 10,
	.check = convint_check, .prepare = convint_prepare,
	.infer = convint_infer, .run = convint_run,
	.release = qconv_release,
};

/* ---- QLinearConv ---- */

static enum qr_status
qlconv_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 8, 9, 1, 1)) != QR_OK ||
	    (st = qr_op_q8_dtypes(c, d, 0x5, 0x2 | 0x10 | 0x40)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 3, QR_DTM_Q8)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 3, 5)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 7, QR_DTM_Q8)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 8, QR_DTM(QR_DT_INT32))) != QR_OK ||
	    (st = qconv_check_win(c, d, 3)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 7);
	return QR_OK;
}

/* w_zero_point (input 5) is required: the weights are packed at prepare
 * when it is constant too. */
static enum qr_status
qlconv_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	return qconv_prepare(c, d, 3, 5);
}

static enum qr_status
qlconv_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qconv_infer(c, d, 3, c->in[7]->dtype);
}

static enum qr_status
qlconv_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qconv_state *st = c->state;
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct qr_conv_params p;
	struct qr_qconv_quant q;
	float xs, ys, *ws = NULL, *scale = NULL;
	int32_t *wzp = NULL, xz, yz;
	enum qr_status s;
	size_t i;
	char b[128];
	int ndim;

	if ((s = qr_op_conv_shape(c, d, &st->win, c->in[0], c->in[3], 0, &p,
				  &ndim, dims)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 1, &xs)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &xz)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 6, &ys)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 7, c->in[7]->dtype, &yz)) != QR_OK ||
	    (s = qr_op_q_vec(c, d, 4, 5, p.c_out, &ws, &wzp)) != QR_OK)
		goto out;
	if (qr_op_has_in(c, 8) && (c->in[8]->ndim != 1 ||
				   c->in[8]->n_elem != p.c_out)) {
		s = qr_op_errorf(c, d, QR_ESHAPE, "bias '%s' %s must hold %zu "
				 "values", qr_op_in_name(c, 8),
				 qr_shape_str(c->in[8], b, sizeof b), p.c_out);
		goto out;
	}
	if (c->out[0]->n_elem == 0)
		goto out;
	if (!st->w_const) {
		qr_qconv_packed_free(st->pk);
		st->pk = qconv_pack(c->in[3], st->win.group, wzp, p.c_out);
		QR_ASSERT(st->pk != NULL);
	}
	scale = qr_op_scratch((void **)&st->scale, &st->scale_cap,
			      (p.c_out ? p.c_out : 1) * sizeof *scale);
	for (i = 0; i < p.c_out; i++)
		scale[i] = qr_requant_scale(xs, ws[i], ys);
	q.x_signed = c->in[0]->dtype == QR_DT_INT8;
	q.x_zp = xz;
	q.bias = qr_op_has_in(c, 8) ? c->in[8]->data : NULL;
	q.scale = scale;
	q.n_scale = p.c_out;
	q.y_signed = c->out[0]->dtype == QR_DT_INT8;
	q.y_zp = yz;
	qr_qconv_run(st->pk, &p, c->in[0]->data, &q, c->out[0]->data,
		     qr_op_ws(c, &st->ws, &st->ws_cap,
				   qr_qconv_workspace(st->pk, &p,
						      c->n_threads)),
		     c->n_threads);
out:
	free(ws);
	free(wzp);
	return s;
}

const struct qr_op_desc qr_op_qlinear_conv = {
	.domain = "", .name = "QLinearConv", .since = 10,
	.check = qlconv_check, .prepare = qlconv_prepare,
	.infer = qlconv_infer, .run = qlconv_run, .release = qconv_release,
};
