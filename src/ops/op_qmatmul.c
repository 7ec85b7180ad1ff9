/*
 * op_qmatmul: the integer matrix products, MatMulInteger (int32 output),
 * QLinearMatMul and com.microsoft's QGemm, and the integer matmul helpers
 * of op-conv-int.h (also used by MatMulIntegerToFloat and QAttention).
 *
 * QLinearMatMul and QGemm give the bits of ONNX Runtime's CPU provider:
 * int32 products, then MLAS's MlasRequantizeOutput with scale
 * x_scale * w_scale / y_scale (QGemm: alpha * a_scale * b_scale
 * [/ y_scale]; float output (float)acc * scale when y_zero_point is
 * absent), kernels.h.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

/* ---- integer matmul shapes ---- */

/* numpy matmul shapes of a times b; QR_ESHAPE naming the node. */
enum qr_status
qr_op_mm_shape(const struct qr_op_call *c, struct qr_diag *d,
	       const struct qr_tensor *a, const struct qr_tensor *b,
	       struct qr_op_mm *mm)
{
	int ar = a->ndim, br = b->ndim, i;
	int64_t ka, kb;
	size_t sa = 1, sb = 1;
	char b1[128], b2[128];

	memset(mm, 0, sizeof *mm);
	if (ar < 1 || br < 1)
		goto bad;
	mm->m = ar >= 2 ? (size_t)a->dims[ar - 2] : 1;
	ka = a->dims[ar - 1];
	kb = br >= 2 ? b->dims[br - 2] : b->dims[0];
	mm->n = br >= 2 ? (size_t)b->dims[br - 1] : 1;
	if (ka != kb)
		goto bad;
	mm->k = (size_t)ka;
	mm->nb = (ar > br ? ar : br) - 2;
	if (mm->nb < 0)
		mm->nb = 0;
	mm->batch = 1;
	for (i = mm->nb - 1; i >= 0; i--) {
		int ia = i - (mm->nb - (ar - 2)), ib = i - (mm->nb - (br - 2));
		int64_t da = ia >= 0 ? a->dims[ia] : 1;
		int64_t db = ib >= 0 ? b->dims[ib] : 1;

		if (da != db && da != 1 && db != 1)
			goto bad;
		mm->bdims[i] = da == 1 ? db : da;
		mm->a_st[i] = da == 1 ? 0 : sa;
		mm->b_st[i] = db == 1 ? 0 : sb;
		sa *= (size_t)da;
		sb *= (size_t)db;
		mm->batch *= (size_t)mm->bdims[i];
	}
	mm->a_mats = sa;
	mm->b_mats = sb;
	mm->ndim = 0;
	for (i = 0; i < mm->nb; i++)
		mm->dims[mm->ndim++] = mm->bdims[i];
	if (ar >= 2)
		mm->dims[mm->ndim++] = (int64_t)mm->m;
	if (br >= 2)
		mm->dims[mm->ndim++] = (int64_t)mm->n;
	return QR_OK;
bad:
	return qr_op_errorf(c, d, QR_ESHAPE, "inputs %s and %s cannot be "
			    "multiplied", qr_shape_str(a, b1, sizeof b1),
			    qr_shape_str(b, b2, sizeof b2));
}

/* Output 0 as input 0 times input ib. */
enum qr_status
qr_op_mm_infer(struct qr_op_call *c, struct qr_diag *d, size_t ib, int dtype)
{
	struct qr_op_mm mm;
	enum qr_status s;

	if ((s = qr_op_mm_shape(c, d, c->in[0], c->in[ib], &mm)) != QR_OK)
		return s;
	return qr_tensor_set_shape(c->out[0], dtype, mm.ndim, mm.dims,
				   qr_op_out_name(c, 0), d);
}

/* Matrix indices into A and B of output product bi. */
void
qr_op_mm_index(const struct qr_op_mm *mm, size_t bi, size_t *ai, size_t *bj)
{
	int i;

	*ai = *bj = 0;
	for (i = mm->nb - 1; i >= 0; i--) {
		size_t idx = bi % (size_t)mm->bdims[i];

		bi /= (size_t)mm->bdims[i];
		*ai += idx * mm->a_st[i];
		*bj += idx * mm->b_st[i];
	}
}

/* ---- MatMulInteger ---- */

static enum qr_status
mmint_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 4, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_Q8)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_Q8)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 0, 2)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 1, 3)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_INT32;
	return QR_OK;
}

static enum qr_status
mmint_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = xcalloc(1, sizeof *st);

	c->state = st;
	qr_op_mm_prepack(c, st, 1, 3, 0);
	return QR_OK;
}

/* Release function of the integer matmul nodes; NULL does nothing. */
void
qr_op_mm_cache_free(void *state)
{
	struct qr_op_mm_cache *st = state;

	if (st == NULL)
		return;
	qr_qgemm_packed_free(st->pk);
	free(st->ws);
	free(st);
}

static enum qr_status
mmint_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_mm_infer(c, d, 1, QR_DT_INT32);
}

/*
 * B's zero points: 1 or n values (per column), of B's dtype. A zero
 * point per row of a batched B is refused (QR_EUNSUPPORTED).
 */
static enum qr_status
mm_bzp(const struct qr_op_call *c, struct qr_diag *d, size_t ib, size_t i,
       size_t n, int32_t **zp, size_t *nz)
{
	const struct qr_tensor *z = qr_op_has_in(c, i) ? c->in[i] : NULL;
	size_t j;

	*nz = z ? z->n_elem : 1;
	*zp = NULL;
	if (z != NULL && (z->dtype != c->in[ib]->dtype ||
			  (*nz != 1 && (*nz != n || z->ndim != 1))))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "zero point '%s' "
				    "of B must be one value or one per column "
				    "(%zu) of B's dtype", qr_op_in_name(c, i),
				    n);
	*zp = xmalloc(*nz * sizeof **zp);
	for (j = 0; j < *nz; j++)
		(*zp)[j] = z ? (int32_t)qr_op_get(z, j) : 0;
	return QR_OK;
}

/* Prepare-time pack of a constant single-matrix B (see op-conv-int.h). */
void
qr_op_mm_prepack(const struct qr_op_call *c, struct qr_op_mm_cache *st,
		 size_t ib, size_t ib_zp, int trans_b)
{
	const struct qr_tensor *b = c->in[ib];
	struct qr_diag quiet = {0};
	int32_t *zp = NULL;
	size_t k, n, nz;

	st->b_const = b != NULL &&
		      (!qr_op_has_in(c, ib_zp) || c->in[ib_zp] != NULL);
	if (!st->b_const || b->ndim != 2 ||
	    (b->dtype != QR_DT_INT8 && b->dtype != QR_DT_UINT8))
		return;
	k = (size_t)b->dims[trans_b ? 1 : 0];
	n = (size_t)b->dims[trans_b ? 0 : 1];
	if (k == 0 || n == 0 ||
	    mm_bzp(c, &quiet, ib, ib_zp, n, &zp, &nz) != QR_OK) {
		qr_diag_clear(&quiet);
		free(zp);
		return;
	}
	st->pk = qr_qgemm_pack_new(b->data, b->dtype == QR_DT_INT8, trans_b,
				   k, n, zp, nz);
	st->k = k;
	st->n = n;
	free(zp);
}

/* Exact int32 products of inputs ia and ib into acc (see op-conv-int.h);
 * B is packed into st once when it is a constant single matrix. */
enum qr_status
qr_op_mm_int32(struct qr_op_call *c, struct qr_diag *d,
	       struct qr_op_mm_cache *st, const struct qr_op_mm *mm,
	       size_t ia, int32_t a_zp, size_t ib, size_t ib_zp, int32_t *acc)
{
	const struct qr_tensor *a = c->in[ia], *b = c->in[ib];
	int a_signed = a->dtype == QR_DT_INT8, b_signed = b->dtype == QR_DT_INT8;
	size_t bi, ai, bj, nz = 1, last = (size_t)-1;
	struct qr_qgemm_packed *pk = NULL;
	int32_t *zp = NULL;
	enum qr_status s;
	int cached;

	if (mm->k == 0 || mm->m == 0 || mm->n == 0) {
		memset(acc, 0, mm->batch * mm->m * mm->n * sizeof *acc);
		return QR_OK;
	}
	cached = mm->b_mats == 1 && st->b_const && st->pk != NULL &&
		 st->k == mm->k && st->n == mm->n;
	if (cached)
		pk = st->pk;
	else if ((s = mm_bzp(c, d, ib, ib_zp, mm->n, &zp, &nz)) != QR_OK)
		return s;
	for (bi = 0; bi < mm->batch; bi++) {
		qr_op_mm_index(mm, bi, &ai, &bj);
		if (!cached && bj != last) {
			qr_qgemm_packed_free(pk);
			pk = qr_qgemm_pack_new((const uint8_t *)b->data +
						       bj * mm->k * mm->n,
					       b_signed, 0, mm->k, mm->n, zp,
					       nz);
			last = bj;
		}
		qr_qgemm_run(pk, (const uint8_t *)a->data + ai * mm->m * mm->k,
			     a_signed, a_zp, mm->m, acc + bi * mm->m * mm->n,
			     mm->n,
			     qr_op_ws(c, &st->ws, &st->ws_cap,
					   qr_qgemm_workspace(pk, mm->m,
							      c->n_threads)),
			     c->n_threads);
	}
	if (!cached) {
		if (mm->b_mats == 1 && st->b_const) {
			qr_qgemm_packed_free(st->pk);
			st->pk = pk;
			st->k = mm->k;
			st->n = mm->n;
		} else {
			qr_qgemm_packed_free(pk);
		}
	}
	free(zp);
	return QR_OK;
}

static enum qr_status
mmint_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = c->state;
	struct qr_op_mm mm;
	enum qr_status s;
	int32_t a_zp;

	if ((s = qr_op_mm_shape(c, d, c->in[0], c->in[1], &mm)) != QR_OK)
		return s;
	if (qr_op_has_in(c, 2) && c->in[2]->n_elem != 1)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "a_zero_point '%s' "
				    "must be one value (per-row zero points "
				    "are not supported)", qr_op_in_name(c, 2));
	if ((s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &a_zp)) != QR_OK)
		return s;
	return qr_op_mm_int32(c, d, st, &mm, 0, a_zp, 1, 3, c->out[0]->data);
}

const struct qr_op_desc qr_op_matmul_integer = {
	.domain = "", .name = "MatMulInteger", .since = 10,
	.check = mmint_check, .prepare = mmint_prepare, .infer = mmint_infer,
	.run = mmint_run, .release = qr_op_mm_cache_free,
};

/* ---- QLinearMatMul ---- */

static enum qr_status
qlmm_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 8, 8, 1, 1)) != QR_OK ||
	    (st = qr_op_q8_dtypes(c, d, 0x5, 0x2 | 0x10 | 0x40)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 3, QR_DTM_Q8)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 3, 5)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 7, QR_DTM_Q8)) != QR_OK)
		return st;
	c->out_dtype[0] = qr_op_dtype(c, 7);
	return QR_OK;
}

static enum qr_status
qmm_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = xcalloc(1, sizeof *st);

	c->state = st;
	if (c->in[5] != NULL)
		qr_op_mm_prepack(c, st, 3, 5, 0);
	return QR_OK;
}

static enum qr_status
qlmm_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return qr_op_mm_infer(c, d, 3, c->in[7]->dtype);
}

/* Requantize rows of n accumulators with one scale or one per column. */
static void
requant_rows(const int32_t *acc, size_t rows, size_t n, const float *scale,
	     size_t n_scale, int32_t zp, int y_signed, uint8_t *y)
{
	size_t r;

	for (r = 0; r < rows; r++) {
		if (n_scale == 1)
			qr_requantize_row(acc + r * n, n, 0, scale[0], zp,
					  y_signed, y + r * n);
		else
			qr_requantize_cols(acc + r * n, n, NULL, 0, scale, n,
					   zp, y_signed, y + r * n);
	}
}

static enum qr_status
qlmm_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm mm;
	float as, ys, *bs = NULL, *scale = NULL;
	int32_t az, yz, *bz = NULL, *acc = NULL;
	size_t i, n_scale;
	enum qr_status s;

	if ((s = qr_op_mm_shape(c, d, c->in[0], c->in[3], &mm)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 1, &as)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, c->in[0]->dtype, &az)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 6, &ys)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 7, c->in[7]->dtype, &yz)) != QR_OK ||
	    (s = qr_op_q_vec(c, d, 4, 5, mm.n, &bs, &bz)) != QR_OK)
		goto out;
	n_scale = c->in[4]->n_elem == 1 ? 1 : mm.n;
	scale = xmalloc((mm.n ? mm.n : 1) * sizeof *scale);
	for (i = 0; i < mm.n; i++)
		scale[i] = qr_requant_scale(as, bs[i], ys);
	acc = xmalloc((c->out[0]->n_elem ? c->out[0]->n_elem : 1) *
		      sizeof *acc);
	if ((s = qr_op_mm_int32(c, d, c->state, &mm, 0, az, 3, 5, acc)) !=
	    QR_OK)
		goto out;
	requant_rows(acc, mm.batch * mm.m, mm.n, scale, n_scale, yz,
		     c->out[0]->dtype == QR_DT_INT8, c->out[0]->data);
out:
	free(bs);
	free(bz);
	free(scale);
	free(acc);
	return s;
}

const struct qr_op_desc qr_op_qlinear_matmul = {
	.domain = "", .name = "QLinearMatMul", .since = 10,
	.check = qlmm_check, .prepare = qmm_prepare, .infer = qlmm_infer,
	.run = qlmm_run, .release = qr_op_mm_cache_free,
};

/* ---- QGemm ---- */

static enum qr_status
qgemm_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 6, 9, 1, 1)) != QR_OK ||
	    (st = qr_op_q8_dtypes(c, d, 0x1 | 0x4, 0x2 | 0x10 | 0x80)) !=
		    QR_OK ||
	    (st = qr_op_want_dtype(c, d, 3, QR_DTM_Q8)) != QR_OK ||
	    (st = qr_op_same_dtype(c, d, 3, 5)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 6, QR_DTM(QR_DT_INT32))) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 8, QR_DTM_Q8)) != QR_OK)
		return st;
	if (qr_op_has_in(c, 8) != qr_op_has_in(c, 7))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "y_scale and "
				    "y_zero_point must be given together");
	c->out_dtype[0] = qr_op_has_in(c, 8) ? qr_op_dtype(c, 8) :
					       QR_DT_FLOAT;
	return QR_OK;
}

/* M, K, N of op(A) [M][K] * op(B) [K][N]. */
static enum qr_status
qgemm_dims(const struct qr_op_call *c, struct qr_diag *d, size_t *m,
	   size_t *k, size_t *n)
{
	const struct qr_tensor *a = c->in[0], *b = c->in[3];
	int ta = qr_op_attr_int(c, "transA", 0) != 0;
	int tb = qr_op_attr_int(c, "transB", 0) != 0;
	char b1[128], b2[128];

	if (a->ndim != 2 || b->ndim != 2 ||
	    a->dims[ta ? 0 : 1] != b->dims[tb ? 1 : 0])
		return qr_op_errorf(c, d, QR_ESHAPE, "A %s and B %s do not "
				    "multiply", qr_shape_str(a, b1, sizeof b1),
				    qr_shape_str(b, b2, sizeof b2));
	*m = (size_t)a->dims[ta ? 1 : 0];
	*k = (size_t)a->dims[ta ? 0 : 1];
	*n = (size_t)b->dims[tb ? 0 : 1];
	return QR_OK;
}

static enum qr_status
qgemm_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[2];
	size_t m, k, n;
	enum qr_status s;

	if ((s = qgemm_dims(c, d, &m, &k, &n)) != QR_OK)
		return s;
	dims[0] = (int64_t)m;
	dims[1] = (int64_t)n;
	return qr_tensor_set_shape(c->out[0], qr_op_has_in(c, 8) ?
				   c->in[8]->dtype : QR_DT_FLOAT, 2, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
qgemm_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = xcalloc(1, sizeof *st);

	c->state = st;
	if (c->in[5] != NULL)
		qr_op_mm_prepack(c, st, 3, 5,
				 qr_op_attr_int(c, "transB", 0) != 0);
	return QR_OK;
}

/* Add C (int32, broadcast to [m][n] as ORT's GemmBroadcastBias: (), (1),
 * (n), (1, n), (m, 1) or (m, n)) to acc, wrapping. */
static enum qr_status
qgemm_add_c(const struct qr_op_call *c, struct qr_diag *d, size_t m,
	    size_t n, int32_t *acc)
{
	const struct qr_tensor *t = c->in[6];
	const int32_t *cv = t->data;
	size_t rs, cs, i, j;
	char b[128];

	if (t->n_elem == 1) {
		rs = cs = 0;
	} else if ((t->ndim == 1 && (size_t)t->dims[0] == n) ||
		   (t->ndim == 2 && t->dims[0] == 1 && (size_t)t->dims[1] == n)) {
		rs = 0;
		cs = 1;
	} else if (t->ndim == 2 && (size_t)t->dims[0] == m && t->dims[1] == 1) {
		rs = 1;
		cs = 0;
	} else if (t->ndim == 2 && (size_t)t->dims[0] == m &&
		   (size_t)t->dims[1] == n) {
		rs = n;
		cs = 1;
	} else {
		return qr_op_errorf(c, d, QR_ESHAPE, "C '%s' %s does not "
				    "broadcast to [%zu,%zu]",
				    qr_op_in_name(c, 6),
				    qr_shape_str(t, b, sizeof b), m, n);
	}
	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++)
			acc[i * n + j] = (int32_t)((uint32_t)acc[i * n + j] +
						   (uint32_t)cv[i * rs + j * cs]);
	return QR_OK;
}

static enum qr_status
qgemm_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_mm_cache *st = c->state;
	const struct qr_tensor *a = c->in[0], *b = c->in[3];
	int ta = qr_op_attr_int(c, "transA", 0) != 0;
	int tb = qr_op_attr_int(c, "transB", 0) != 0;
	float alpha = qr_op_attr_float(c, "alpha", 1.0f);
	int quant_out = qr_op_has_in(c, 8);
	size_t m, k, n, i, j, n_scale;
	float as, ys = 1.0f, *bs = NULL, *scale = NULL;
	int32_t az, yz = 0, *bz = NULL, *acc = NULL;
	uint8_t *at = NULL;
	const uint8_t *ap = a->data;
	enum qr_status s;

	if ((s = qgemm_dims(c, d, &m, &k, &n)) != QR_OK ||
	    (s = qr_op_q_scale(c, d, 1, &as)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, 2, a->dtype, &az)) != QR_OK ||
	    (s = qr_op_q_vec(c, d, 4, 5, n, &bs, &bz)) != QR_OK)
		goto out;
	if (quant_out && ((s = qr_op_q_scale(c, d, 7, &ys)) != QR_OK ||
			  (s = qr_op_q_zp(c, d, 8, c->in[8]->dtype, &yz)) !=
				  QR_OK))
		goto out;
	if (m * n == 0)
		goto out;
	n_scale = c->in[4]->n_elem == 1 ? 1 : n;
	scale = xmalloc(n * sizeof *scale);
	for (j = 0; j < n; j++) {
		scale[j] = alpha * as * bs[j];
		if (quant_out)
			scale[j] /= ys;
	}
	acc = xcalloc(m * n, sizeof *acc);
	if (k > 0) {
		if (ta) {
			at = xmalloc(m * k);
			for (i = 0; i < m; i++)
				for (j = 0; j < k; j++)
					at[i * k + j] = ap[j * m + i];
			ap = at;
		}
		if (st->pk == NULL || !st->b_const || st->k != k ||
		    st->n != n) {
			qr_qgemm_packed_free(st->pk);
			st->pk = qr_qgemm_pack_new(b->data,
						   b->dtype == QR_DT_INT8, tb,
						   k, n, bz, n_scale);
			st->k = k;
			st->n = n;
		}
		qr_qgemm_run(st->pk, ap, a->dtype == QR_DT_INT8, az, m, acc, n,
			     qr_op_ws(c, &st->ws, &st->ws_cap,
					   qr_qgemm_workspace(st->pk, m,
							      c->n_threads)),
			     c->n_threads);
	}
	if (qr_op_has_in(c, 6) && (s = qgemm_add_c(c, d, m, n, acc)) != QR_OK)
		goto out;
	if (quant_out) {
		requant_rows(acc, m, n, scale, n_scale, yz,
			     c->out[0]->dtype == QR_DT_INT8, c->out[0]->data);
	} else {
		float *y = c->out[0]->data;

		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++)
				y[i * n + j] = scale[n_scale == 1 ? 0 : j] *
					       (float)acc[i * n + j];
	}
out:
	free(bs);
	free(bz);
	free(scale);
	free(acc);
	free(at);
	return s;
}

const struct qr_op_desc qr_op_qgemm = {
	.domain = "com.microsoft", .name = "QGemm", .since = 1,
	.check = qgemm_check, .prepare = qgemm_prepare, .infer = qgemm_infer,
	.run = qgemm_run, .release = qr_op_mm_cache_free,
};
