/*
 * op_attention: the BERT fusions ONNX Runtime's transformer optimiser
 * writes (com.microsoft Attention and EmbedLayerNormalization), and the
 * QAttention its quantize_dynamic turns such an Attention into.
 *
 *   Attention   input [B,S,Hin] times weights [Hin, Hq+Hk+Hv] (+ bias)
 *               gives Q, K and V; per head h, with head sizes Hq/heads and
 *               Hv/heads: softmax(scale * Q_h K_h^T + mask (+
 *               attention_bias)) V_h, the heads side by side in [B,S,Hv].
 *               scale defaults to 1/sqrt(Hq/heads); qkv_hidden_sizes
 *               gives Hq, Hk (= Hq) and Hv, else each is a third.
 *   QAttention  the same with input and weights 8-bit and thirds: the
 *               projection is exact in int32, then each column j is
 *               (float)acc * (input_scale * weight_scale[j]) + bias[j],
 *               as ONNX Runtime's output processor computes it; the
 *               weight's scale and zero point are one value or one per
 *               column.
 *   EmbedLayerNormalization
 *               per token: word[input_id] + position[position_id or s]
 *               (+ segment[segment_id]), then a layer normalization over
 *               the hidden dim with gamma and beta (statistics in float,
 *               two passes); outputs it, mask_index (each mask row's
 *               count of 1s, 0 without a mask) and the sum before the
 *               normalization (embedding_sum).
 *
 * The mask (mask_index, int32) adds mask_filter_value (default -10000)
 * to the scores of the keys it hides: 1-D [B], keys from the value on
 * (right padding); 1-D [2B], those and the keys before the second half's
 * value (left padding); 2-D [B,S] or 3-D [B,S,S], keys whose entry is not
 * above 0. unidirectional hides the keys after each query with the
 * lowest float. The projection, each Q K^T and each probabilities-times-V
 * product sum in ONNX Runtime's GEMM order (the weights of an
 * initializer pre-packed, as ORT does), and the softmax is ORT's.
 *
 * Refused, naming the node: past and present state (a decoder's cache),
 * do_rotary, past_present_share_buffer, 4-D and [3B+2] masks.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

#define MASK_FILTER_DEFAULT -10000.0f

/* Input positions: Attention's, QAttention's. */
enum { A_X, A_W, A_BIAS, A_MASK, A_PAST, A_ABIAS, A_PAST_LEN };
enum { Q_X, Q_W, Q_BIAS, Q_XSCALE, Q_WSCALE, Q_MASK, Q_XZP, Q_WZP, Q_PAST };

/* One node's sizes and attributes. */
struct attn {
	size_t b, s, hin;        /* batch, sequence, input hidden */
	size_t hq, hk, hv;       /* widths of Q, K and V */
	size_t heads, hs, hsv;   /* heads; head size of Q and K, of V */
	float scale, filter;
	int causal;
};

/* What a node keeps between runs. */
struct attn_state {
	int packed;                  /* weights an initializer: ORT packs */
	struct qr_op_mm_cache mm;    /* QAttention's packed weights */
	void *ws;                    /* float GEMM workspace */
	size_t ws_cap;
};

static int
is_q(const struct qr_op_call *c)
{
	return strcmp(c->node->op_type, "QAttention") == 0;
}

static enum qr_status
attn_check(const struct qr_op_call *c, struct qr_diag *d)
{
	int q = is_q(c);
	size_t mask = q ? Q_MASK : A_MASK, past = q ? Q_PAST : A_PAST;
	enum qr_status st;

	if ((st = qr_op_arity(c, d, q ? 5 : 2, q ? 9 : 7, 1, 2)) != QR_OK)
		return st;
	if (qr_op_attr_int(c, "num_heads", 0) <= 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "attribute num_heads "
				    "must be given and positive");
	if (qr_op_has_in(c, past) || (!q && qr_op_has_in(c, A_PAST_LEN)) ||
	    (c->n_out > 1 && qr_op_out_name(c, 1)[0] != '\0'))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "past and present "
				    "state (a decoder's cache) are not "
				    "supported");
	if (qr_op_attr_int(c, "do_rotary", 0) != 0 ||
	    qr_op_attr_int(c, "past_present_share_buffer", 0) != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "do_rotary and "
				    "past_present_share_buffer are not "
				    "supported");
	if ((st = qr_op_want_dtype(c, d, mask, QR_DTM(QR_DT_INT32))) != QR_OK)
		return st;
	if (q) {
		if ((st = qr_op_want_dtype(c, d, Q_X, QR_DTM_Q8)) != QR_OK ||
		    (st = qr_op_want_dtype(c, d, Q_W, QR_DTM_Q8)) != QR_OK ||
		    (st = qr_op_want_dtype(c, d, Q_BIAS, QR_DTM_FLOAT)) !=
			    QR_OK ||
		    (st = qr_op_want_dtype(c, d, Q_XSCALE, QR_DTM_FLOAT)) !=
			    QR_OK ||
		    (st = qr_op_want_dtype(c, d, Q_WSCALE, QR_DTM_FLOAT)) !=
			    QR_OK ||
		    (st = qr_op_same_dtype(c, d, Q_X, Q_XZP)) != QR_OK ||
		    (st = qr_op_same_dtype(c, d, Q_W, Q_WZP)) != QR_OK)
			return st;
	} else if ((st = qr_op_want_dtype(c, d, A_X, QR_DTM_FLOAT)) != QR_OK ||
		   (st = qr_op_want_dtype(c, d, A_W, QR_DTM_FLOAT)) != QR_OK ||
		   (st = qr_op_want_dtype(c, d, A_BIAS, QR_DTM_FLOAT)) !=
			   QR_OK ||
		   (st = qr_op_want_dtype(c, d, A_ABIAS, QR_DTM_FLOAT)) !=
			   QR_OK) {
		return st;
	}
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

/* Sizes from the input, the weights and the attributes; the mask's and
 * attention_bias's shapes against them. */
static enum qr_status
attn_dims(const struct qr_op_call *c, struct qr_diag *d, struct attn *a)
{
	int q = is_q(c);
	const struct qr_tensor *x = c->in[0], *w = c->in[1];
	const struct qr_tensor *m = qr_op_has_in(c, q ? Q_MASK : A_MASK) ?
				    c->in[q ? Q_MASK : A_MASK] : NULL;
	const struct qr_tensor *ab = !q && qr_op_has_in(c, A_ABIAS) ?
				     c->in[A_ABIAS] : NULL;
	const int64_t *qkv;
	size_t n_qkv, cols;
	char s1[128], s2[128];

	if (x->ndim != 3 || w->ndim != 2 || w->dims[0] != x->dims[2])
		return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s and "
				    "weights '%s' %s must be [B,S,H] and "
				    "[H,N]", qr_op_in_name(c, 0),
				    qr_shape_str(x, s1, sizeof s1),
				    qr_op_in_name(c, 1),
				    qr_shape_str(w, s2, sizeof s2));
	a->b = (size_t)x->dims[0];
	a->s = (size_t)x->dims[1];
	a->hin = (size_t)x->dims[2];
	cols = (size_t)w->dims[1];
	a->heads = (size_t)qr_op_attr_int(c, "num_heads", 1);
	qkv = q ? NULL : qr_op_attr_ints(c, "qkv_hidden_sizes", &n_qkv);
	if (qkv != NULL) {
		if (n_qkv != 3 || qkv[0] <= 0 || qkv[1] != qkv[0] ||
		    qkv[2] <= 0)
			return qr_op_errorf(c, d, QR_EUNSUPPORTED,
					    "qkv_hidden_sizes must be 3 "
					    "positive sizes, Q's equal to "
					    "K's");
		a->hq = (size_t)qkv[0];
		a->hk = (size_t)qkv[1];
		a->hv = (size_t)qkv[2];
	} else {
		a->hq = a->hk = a->hv = cols / 3;
	}
	if (a->hq + a->hk + a->hv != cols || a->hq % a->heads != 0 ||
	    a->hv % a->heads != 0 || a->hq == 0)
		return qr_op_errorf(c, d, QR_ESHAPE, "weights '%s' %s do not "
				    "split into Q, K and V of %zu heads",
				    qr_op_in_name(c, 1),
				    qr_shape_str(w, s1, sizeof s1), a->heads);
	a->hs = a->hq / a->heads;
	a->hsv = a->hv / a->heads;
	a->scale = qr_op_attr_float(c, "scale", 0.0f);
	if (a->scale == 0.0f)
		a->scale = 1.0f / sqrtf((float)a->hs);
	a->filter = qr_op_attr_float(c, "mask_filter_value",
				     MASK_FILTER_DEFAULT);
	a->causal = qr_op_attr_int(c, "unidirectional", 0) != 0;
	if (qr_op_has_in(c, 2) && c->in[2]->n_elem != cols)
		return qr_op_errorf(c, d, QR_ESHAPE, "bias '%s' %s must hold "
				    "%zu values", qr_op_in_name(c, 2),
				    qr_shape_str(c->in[2], s1, sizeof s1),
				    cols);
	if (m != NULL &&
	    !(m->ndim == 1 && ((size_t)m->dims[0] == a->b ||
			       (size_t)m->dims[0] == 2 * a->b)) &&
	    !(m->ndim == 2 && (size_t)m->dims[0] == a->b &&
	      (size_t)m->dims[1] == a->s) &&
	    !(m->ndim == 3 && (size_t)m->dims[0] == a->b &&
	      (size_t)m->dims[1] == a->s && (size_t)m->dims[2] == a->s))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "mask_index '%s' "
				    "%s: supported are [B], [2B], [B,S] and "
				    "[B,S,S] with B=%zu, S=%zu",
				    qr_op_in_name(c, q ? Q_MASK : A_MASK),
				    qr_shape_str(m, s1, sizeof s1), a->b,
				    a->s);
	if (ab != NULL &&
	    (ab->ndim != 4 || (ab->dims[0] != 1 &&
			       (size_t)ab->dims[0] != a->b) ||
	     (ab->dims[1] != 1 && (size_t)ab->dims[1] != a->heads) ||
	     (size_t)ab->dims[2] != a->s || (size_t)ab->dims[3] != a->s))
		return qr_op_errorf(c, d, QR_ESHAPE, "attention_bias '%s' %s "
				    "must be [B or 1, %zu or 1, %zu, %zu]",
				    qr_op_in_name(c, A_ABIAS),
				    qr_shape_str(ab, s1, sizeof s1), a->heads,
				    a->s, a->s);
	return QR_OK;
}

static enum qr_status
attn_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	struct attn_state *st = xcalloc(1, sizeof *st);

	(void)d;
	c->state = st;
	st->packed = c->in[1] != NULL && c->in_init != NULL && c->in_init[1];
	if (is_q(c))
		qr_op_mm_prepack(c, &st->mm, Q_W, Q_WZP, 0);
	return QR_OK;
}

static void
attn_release(void *state)
{
	struct attn_state *st = state;

	if (st == NULL)
		return;
	qr_qgemm_packed_free(st->mm.pk);
	free(st->mm.ws);
	free(st->ws);
	free(st);
}

static enum qr_status
attn_infer(struct qr_op_call *c, struct qr_diag *d)
{
	struct attn a;
	int64_t dims[3];
	enum qr_status st;

	if ((st = attn_dims(c, d, &a)) != QR_OK)
		return st;
	dims[0] = (int64_t)a.b;
	dims[1] = (int64_t)a.s;
	dims[2] = (int64_t)a.hv;
	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, 3, dims,
				   qr_op_out_name(c, 0), d);
}

/* The additive mask of batch b as [S][S] (query, key) into m. */
static void
mask_rows(const struct attn *a, const struct qr_tensor *mask, size_t b,
	  float *m)
{
	size_t n = a->s, i, j;

	memset(m, 0, n * n * sizeof *m);
	if (mask != NULL && mask->ndim == 1) {
		const int32_t *v = mask->data;
		int64_t end = v[b], start = mask->n_elem == 2 * a->b ?
					    v[a->b + b] : 0;

		end = end < 0 ? 0 : end > (int64_t)n ? (int64_t)n : end;
		start = start < 0 ? 0 : start > (int64_t)n ? (int64_t)n :
							     start;
		for (j = 0; j < n; j++)
			if ((int64_t)j >= end || (int64_t)j < start)
				m[j] = a->filter;
		for (i = 1; i < n; i++)
			memcpy(m + i * n, m, n * sizeof *m);
	} else if (mask != NULL) {
		const int32_t *v = (const int32_t *)mask->data +
				   b * (mask->ndim == 2 ? n : n * n);

		for (i = 0; i < n; i++)
			for (j = 0; j < n; j++)
				if (v[mask->ndim == 2 ? j : i * n + j] <= 0)
					m[i * n + j] = a->filter;
	}
	if (a->causal)
		for (i = 0; i < n; i++)
			for (j = i + 1; j < n; j++)
				m[i * n + j] = -FLT_MAX;
}

/*
 * The attention from Q, K and V projected into qkv ([B*S] rows of
 * Hq+Hk+Hv): per batch and head, the head's rows gathered as ORT lays
 * them out ([S][head size]), the scores, their softmax and the product
 * with V written into y [B,S,Hv].
 */
static void
attend(const struct attn *a, const float *qkv, const struct qr_tensor *mask,
       const struct qr_tensor *abias, float *y, void *ws)
{
	size_t n = a->s, ld = a->hq + a->hk + a->hv, b, h, i, j;
	float *q = xmalloc(n * a->hs * sizeof *q);
	float *k = xmalloc(n * a->hs * sizeof *k);
	float *v = xmalloc(n * a->hsv * sizeof *v);
	float *p = xmalloc(n * n * sizeof *p);
	float *o = xmalloc(n * a->hsv * sizeof *o);
	float *m = NULL;
	struct qr_sgemm_plan qk, pv;

	if (mask != NULL || a->causal)
		m = xmalloc(n * n * sizeof *m);
	qr_sgemm_plan(n, n, a->hs, 1, a->hs, n, &qk);
	qr_sgemm_plan(n, a->hsv, n, 0, a->hsv, a->hsv, &pv);
	for (b = 0; b < a->b; b++) {
		if (m != NULL)
			mask_rows(a, mask, b, m);
		for (h = 0; h < a->heads; h++) {
			const float *ab = NULL;

			for (i = 0; i < n; i++) {
				const float *row = qkv + (b * n + i) * ld;

				memcpy(q + i * a->hs, row + h * a->hs,
				       a->hs * sizeof *q);
				memcpy(k + i * a->hs, row + a->hq + h * a->hs,
				       a->hs * sizeof *k);
				memcpy(v + i * a->hsv,
				       row + a->hq + a->hk + h * a->hsv,
				       a->hsv * sizeof *v);
			}
			qr_sgemm(&qk, n, n, a->hs, q, a->hs, k, a->hs, 1, p,
				 n, 0, ws);
			if (abias != NULL)
				ab = (const float *)abias->data +
				     ((abias->dims[0] == 1 ? 0 : b) *
					      (size_t)abias->dims[1] +
				      (abias->dims[1] == 1 ? 0 : h)) * n * n;
			for (i = 0; i < n * n; i++) {
				p[i] = a->scale * p[i];
				if (m != NULL)
					p[i] += m[i];
				if (ab != NULL)
					p[i] += ab[i];
			}
			for (i = 0; i < n; i++)
				qr_softmax_row_ort_f32(p + i * n, n, p + i * n);
			qr_sgemm(&pv, n, a->hsv, n, p, n, v, a->hsv, 0, o,
				 a->hsv, 0, ws);
			for (i = 0; i < n; i++)
				for (j = 0; j < a->hsv; j++)
					y[(b * n + i) * a->hv + h * a->hsv +
					  j] = o[i * a->hsv + j];
		}
	}
	free(q);
	free(k);
	free(v);
	free(p);
	free(o);
	free(m);
}

/* Attention's projection: qkv = bias + x W, in ORT's GEMM order (one
 * batch's S rows per call, as ORT's per-head calls sum each element). */
static void
project_f32(struct qr_op_call *c, const struct attn *a, float *qkv, void *ws)
{
	const struct attn_state *st = c->state;
	size_t ld = a->hq + a->hk + a->hv, r, b;
	const float *x = c->in[A_X]->data, *w = c->in[A_W]->data;
	int bias = qr_op_has_in(c, A_BIAS);
	struct qr_sgemm_plan pl;

	if (st->packed)
		qr_sgemm_plan_packed(&pl);
	else
		qr_sgemm_plan(a->s, a->hs, a->hin, 0, ld, a->hs, &pl);
	for (r = 0; bias && r < a->b * a->s; r++)
		memcpy(qkv + r * ld, c->in[A_BIAS]->data, ld * sizeof *qkv);
	for (b = 0; b < a->b; b++)
		qr_sgemm(&pl, a->s, ld, a->hin, x + b * a->s * a->hin, a->hin,
			 w, ld, 0, qkv + b * a->s * ld, ld, bias, ws);
}

/* QAttention's projection: exact int32, then scaled and biased. */
static enum qr_status
project_q8(struct qr_op_call *c, struct qr_diag *d, const struct attn *a,
	   float *qkv)
{
	struct attn_state *st = c->state;
	const struct qr_tensor *x = c->in[Q_X], *w = c->in[Q_W];
	size_t ld = a->hq + a->hk + a->hv, rows = a->b * a->s, i, j;
	const float *bias = c->in[Q_BIAS]->data;
	float xs, *ws_scale = NULL, mult;
	int32_t xz, *wz = NULL, *acc = NULL;
	enum qr_status s;

	if ((s = qr_op_q_scale(c, d, Q_XSCALE, &xs)) != QR_OK ||
	    (s = qr_op_q_zp(c, d, Q_XZP, x->dtype, &xz)) != QR_OK ||
	    (s = qr_op_q_vec(c, d, Q_WSCALE, Q_WZP, ld, &ws_scale, &wz)) !=
		    QR_OK)
		goto out;
	if (!st->mm.b_const || st->mm.pk == NULL) {
		qr_qgemm_packed_free(st->mm.pk);
		st->mm.pk = qr_qgemm_pack_new(w->data, w->dtype == QR_DT_INT8,
					      0, a->hin, ld, wz,
					      c->in[Q_WSCALE]->n_elem == 1 ?
					      1 : ld);
	}
	acc = xcalloc(rows * ld, sizeof *acc);
	if (a->hin > 0)
		qr_qgemm_run(st->mm.pk, x->data, x->dtype == QR_DT_INT8, xz,
			     rows, acc, ld,
			     qr_op_ws(c, &st->mm.ws, &st->mm.ws_cap,
				      qr_qgemm_workspace(st->mm.pk, rows,
							 c->n_threads)),
			     c->n_threads);
	for (j = 0; j < ld; j++) {
		mult = xs * ws_scale[j];
		for (i = 0; i < rows; i++)
			qkv[i * ld + j] = (float)acc[i * ld + j] * mult +
					  bias[j];
	}
out:
	free(ws_scale);
	free(wz);
	free(acc);
	return s;
}

static enum qr_status
attn_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct attn_state *st = c->state;
	int q = is_q(c);
	size_t mi = q ? Q_MASK : A_MASK;
	struct attn a;
	float *qkv;
	void *ws;
	enum qr_status s;

	if ((s = attn_dims(c, d, &a)) != QR_OK)
		return s;
	ws = qr_op_ws(c, &st->ws, &st->ws_cap, qr_sgemm_workspace());
	qkv = xmalloc(a.b * a.s * (a.hq + a.hk + a.hv) * sizeof *qkv);
	if (q)
		s = project_q8(c, d, &a, qkv);
	else
		project_f32(c, &a, qkv, ws);
	if (s == QR_OK)
		attend(&a, qkv, qr_op_has_in(c, mi) ? c->in[mi] : NULL,
		       !q && qr_op_has_in(c, A_ABIAS) ? c->in[A_ABIAS] : NULL,
		       c->out[0]->data, ws);
	free(qkv);
	return s;
}

const struct qr_op_desc qr_op_attention = {
	.domain = "com.microsoft", .name = "Attention", .since = 1,
	.check = attn_check, .prepare = attn_prepare, .infer = attn_infer,
	.run = attn_run, .release = attn_release,
};

const struct qr_op_desc qr_op_qattention = {
	.domain = "com.microsoft", .name = "QAttention", .since = 1,
	.check = attn_check, .prepare = attn_prepare, .infer = attn_infer,
	.run = attn_run, .release = attn_release,
};

/* ---- EmbedLayerNormalization ---- */

enum { E_IDS, E_SEG, E_WORD, E_POS, E_SEGEMB, E_GAMMA, E_BETA, E_MASK,
       E_POSIDS };

static enum qr_status
eln_check(const struct qr_op_call *c, struct qr_diag *d)
{
	static const size_t ints[] = { E_IDS, E_SEG, E_MASK, E_POSIDS };
	static const size_t floats[] = { E_WORD, E_POS, E_SEGEMB, E_GAMMA,
					 E_BETA };
	static const size_t required[] = { E_IDS, E_WORD, E_POS, E_GAMMA,
					   E_BETA };
	enum qr_status st;
	size_t i;

	/* segment_ids and segment_embedding (1 and 4) may be "" */
	if ((st = qr_op_arity(c, d, 1, 9, 1, 3)) != QR_OK)
		return st;
	for (i = 0; i < sizeof required / sizeof *required; i++)
		if (!qr_op_has_in(c, required[i]))
			return qr_op_errorf(c, d, QR_EGRAPH, "input %zu is "
					    "required", required[i]);
	for (i = 0; i < sizeof ints / sizeof *ints; i++)
		if ((st = qr_op_want_dtype(c, d, ints[i],
					   QR_DTM(QR_DT_INT32))) != QR_OK)
			return st;
	for (i = 0; i < sizeof floats / sizeof *floats; i++)
		if ((st = qr_op_want_dtype(c, d, floats[i], QR_DTM_FLOAT)) !=
		    QR_OK)
			return st;
	if (qr_op_has_in(c, E_SEG) != qr_op_has_in(c, E_SEGEMB))
		return qr_op_errorf(c, d, QR_EGRAPH, "segment_ids and "
				    "segment_embedding go together");
	c->out_dtype[0] = QR_DT_FLOAT;
	if (c->n_out > 1)
		c->out_dtype[1] = QR_DT_INT32;
	if (c->n_out > 2)
		c->out_dtype[2] = QR_DT_FLOAT;
	return QR_OK;
}

/* Input i as a table of rows of h floats. */
static enum qr_status
eln_table(const struct qr_op_call *c, struct qr_diag *d, size_t i, size_t h)
{
	const struct qr_tensor *t = c->in[i];
	char b[128];

	if (t->ndim == 2 && (size_t)t->dims[1] == h && t->dims[0] > 0)
		return QR_OK;
	return qr_op_errorf(c, d, QR_ESHAPE, "embedding '%s' %s must be "
			    "[rows, %zu]", qr_op_in_name(c, i),
			    qr_shape_str(t, b, sizeof b), h);
}

static enum qr_status
eln_infer(struct qr_op_call *c, struct qr_diag *d)
{
	static const size_t per_token[] = { E_SEG, E_MASK, E_POSIDS };
	const struct qr_tensor *ids = c->in[E_IDS], *word = c->in[E_WORD];
	int64_t dims[3];
	enum qr_status st;
	size_t h, i;
	char b[128];

	if (ids->ndim != 2 || word->ndim != 2)
		return qr_op_errorf(c, d, QR_ESHAPE, "input_ids '%s' %s must "
				    "be [B,S] and word_embedding 2-D",
				    qr_op_in_name(c, E_IDS),
				    qr_shape_str(ids, b, sizeof b));
	h = (size_t)word->dims[1];
	if ((st = eln_table(c, d, E_WORD, h)) != QR_OK ||
	    (st = eln_table(c, d, E_POS, h)) != QR_OK ||
	    (qr_op_has_in(c, E_SEGEMB) &&
	     (st = eln_table(c, d, E_SEGEMB, h)) != QR_OK))
		return st;
	for (i = E_GAMMA; i <= E_BETA; i++)
		if (c->in[i]->n_elem != h)
			return qr_op_errorf(c, d, QR_ESHAPE, "'%s' %s must "
					    "hold %zu values",
					    qr_op_in_name(c, i),
					    qr_shape_str(c->in[i], b,
							 sizeof b), h);
	for (i = 0; i < sizeof per_token / sizeof *per_token; i++) {
		const struct qr_tensor *t = qr_op_has_in(c, per_token[i]) ?
					    c->in[per_token[i]] : NULL;

		if (t != NULL && (t->ndim != 2 || t->dims[1] != ids->dims[1] ||
				  (t->dims[0] != ids->dims[0] &&
				   !(per_token[i] == E_POSIDS &&
				     t->dims[0] == 1))))
			return qr_op_errorf(c, d, QR_ESHAPE, "'%s' %s does "
					    "not fit input_ids [%lld,%lld]",
					    qr_op_in_name(c, per_token[i]),
					    qr_shape_str(t, b, sizeof b),
					    (long long)ids->dims[0],
					    (long long)ids->dims[1]);
	}
	dims[0] = ids->dims[0];
	dims[1] = ids->dims[1];
	dims[2] = (int64_t)h;
	if ((st = qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, 3, dims,
				      qr_op_out_name(c, 0), d)) != QR_OK)
		return st;
	if (c->n_out > 1 && c->out[1] != NULL &&
	    (st = qr_tensor_set_shape(c->out[1], QR_DT_INT32, 1, dims,
				      qr_op_out_name(c, 1), d)) != QR_OK)
		return st;
	if (c->n_out > 2 && c->out[2] != NULL)
		st = qr_tensor_set_shape(c->out[2], QR_DT_FLOAT, 3, dims,
					 qr_op_out_name(c, 2), d);
	return st;
}

/* Row `id` of table input i, or an error naming the id. */
static enum qr_status
eln_row(const struct qr_op_call *c, struct qr_diag *d, size_t i, int32_t id,
	size_t h, const float **row)
{
	const struct qr_tensor *t = c->in[i];

	if (id < 0 || id >= t->dims[0])
		return qr_op_errorf(c, d, QR_ESHAPE, "id %d out of range for "
				    "'%s' (%lld rows)", (int)id,
				    qr_op_in_name(c, i), (long long)t->dims[0]);
	*row = (const float *)t->data + (size_t)id * h;
	return QR_OK;
}

static enum qr_status
eln_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *ids = c->in[E_IDS];
	size_t nb = (size_t)ids->dims[0], ns = (size_t)ids->dims[1];
	size_t h = (size_t)c->in[E_WORD]->dims[1], b, s, i;
	const int32_t *id = ids->data;
	const int32_t *seg = qr_op_has_in(c, E_SEG) ? c->in[E_SEG]->data : NULL;
	const int32_t *mask = qr_op_has_in(c, E_MASK) ? c->in[E_MASK]->data :
							NULL;
	const struct qr_tensor *pt = qr_op_has_in(c, E_POSIDS) ?
				     c->in[E_POSIDS] : NULL;
	const float *gamma = c->in[E_GAMMA]->data, *beta = c->in[E_BETA]->data;
	float eps = qr_op_attr_float(c, "epsilon", 1e-12f);
	float *y = c->out[0]->data;
	int32_t *mi = c->n_out > 1 && c->out[1] != NULL ? c->out[1]->data :
							   NULL;
	float *sum = c->n_out > 2 && c->out[2] != NULL ? c->out[2]->data :
							  NULL;
	enum qr_status st;

	for (b = 0; b < nb; b++)
		for (s = 0; s < ns; s++) {
			size_t r = b * ns + s;
			int32_t pos = (int32_t)s;
			const float *wr, *pr, *sr = NULL;
			float *yr = y + r * h, mean = 0.0f, var = 0.0f, e;

			if (pt != NULL)
				pos = ((const int32_t *)pt->data)
					[(pt->dims[0] == 1 ? 0 : b) * ns + s];
			if ((st = eln_row(c, d, E_WORD, id[r], h, &wr)) !=
				    QR_OK ||
			    (st = eln_row(c, d, E_POS, pos, h, &pr)) !=
				    QR_OK ||
			    (seg != NULL && (st = eln_row(c, d, E_SEGEMB,
							  seg[r], h, &sr)) !=
					    QR_OK))
				return st;
			for (i = 0; i < h; i++) {
				float t = wr[i] + pr[i];

				if (sr != NULL)
					t += sr[i];
				yr[i] = t;
				mean += t;
			}
			if (sum != NULL)
				memcpy(sum + r * h, yr, h * sizeof *yr);
			mean /= (float)h;
			for (i = 0; i < h; i++) {
				yr[i] -= mean;
				var += yr[i] * yr[i];
			}
			e = sqrtf(var / (float)h + eps);
			for (i = 0; i < h; i++)
				yr[i] = yr[i] / e * gamma[i] + beta[i];
		}
	for (b = 0; mi != NULL && b < nb; b++) {
		mi[b] = 0;
		for (s = 0; mask != NULL && s < ns; s++)
			mi[b] += mask[b * ns + s] == 1;
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_embed_layer_norm = {
	.domain = "com.microsoft", .name = "EmbedLayerNormalization",
	.since = 1,
	.check = eln_check, .infer = eln_infer, .run = eln_run,
};
