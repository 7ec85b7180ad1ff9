/*
 * attn: the arithmetic of ONNX Runtime's LLM attention ops on one head's
 * rows, in the order MLAS computes it on x86-64 (checked bit for bit
 * against onnxruntime-node 1.30 by tests/test_llm_ops.c):
 *
 *   qr_rope_row_f32    one row of rotary embedding (MLAS's AVX2 RoPE
 *                      kernel: a fused multiply-add against a rounded
 *                      product; the interleaved kernel's last partial
 *                      step rounds both products after its first pair)
 *   qr_sgemm_alpha     C = alpha * A op(B) as MlasSgemmOperation sums it
 *                      when alpha is not 1
 *   qr_attn_flash_f32  MLAS's flash attentions of GroupQueryAttention
 *                      (tiled online softmax for a prompt, two GEMVs for
 *                      one new token) and of MultiHeadAttention
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void
qr_rope_row_f32(const float *x, const float *sin, const float *cos,
		size_t dim, int interleaved, float *y)
{
	size_t half = dim / 2, tail = dim / 16 * 8, i;

	for (i = 0; i < half; i++) {
		size_t r = interleaved ? 2 * i : i;
		size_t m = interleaved ? 2 * i + 1 : i + half;
		float re = x[r], im = x[m];

		if (interleaved && i > tail) {
			y[r] = re * cos[i] - im * sin[i];
			y[m] = re * sin[i] + im * cos[i];
			continue;
		}
		y[r] = fmaf(re, cos[i], -(im * sin[i]));
		y[m] = fmaf(re, sin[i], im * cos[i]);
	}
}

void
qr_sgemm_alpha(size_t m, size_t n, size_t k, float alpha, const float *a,
	       size_t lda, const float *b, size_t ldb, int trans_b, float *c,
	       size_t ldc, void *ws)
{
	struct qr_sgemm_plan pl;
	float *t;
	size_t k0, i, j;

	if (alpha == 1.0f) {
		qr_sgemm_plan(m, n, k, trans_b, ldb, ldc, &pl);
		qr_sgemm(&pl, m, n, k, a, lda, b, ldb, trans_b, c, ldc, 0, ws);
		return;
	}
	/* MLAS's M = 1 and N = 1 shortcuts take alpha 1 only: the packed
	 * order, its K slices picked from N and K alone */
	qr_sgemm_plan(2, n, k, 0, 2, 2, &pl);
	if (m == 0 || n == 0)
		return;
	if (k == 0) {
		for (i = 0; i < m; i++)
			memset(c + i * ldc, 0, n * sizeof *c);
		return;
	}
	t = xreallocarray(NULL, m * n, sizeof *t);
	for (k0 = 0; k0 < k; k0 += pl.stride_k) {
		size_t kc = k - k0 < pl.stride_k ? k - k0 : pl.stride_k;

		qr_sgemm(&pl, m, n, kc, a + k0, lda,
			 trans_b ? b + k0 : b + k0 * ldb, ldb, trans_b, t, n, 0,
			 ws);
		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++)
				c[i * ldc + j] = k0 == 0 ?
					t[i * n + j] * alpha :
					fmaf(t[i * n + j], alpha,
					     c[i * ldc + j]);
	}
	free(t);
}

/* MLAS's decode GEMV q . k_t for each key: 8 lanes of rounded products
 * (no fused multiply-add), reduced in pairs, the rest of the head added
 * one by one, then times scale. */
static void
decode_qk(const float *q, const float *k, size_t n_kv, size_t hs,
	  float scale, float *scores)
{
	size_t t, h, j;

	for (t = 0; t < n_kv; t++) {
		const float *kr = k + t * hs;
		float acc[8] = {0}, sum;

		for (h = 0; h + 8 <= hs; h += 8)
			for (j = 0; j < 8; j++)
				acc[j] = acc[j] + q[h + j] * kr[h + j];
		sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
		      ((acc[4] + acc[5]) + (acc[6] + acc[7]));
		for (; h < hs; h++)
			sum = sum + q[h] * kr[h];
		scores[t] = sum * scale;
	}
}

/* MLAS's decode GEMV out = sum_t p_t v_t, rounded products added in key
 * order. */
static void
decode_sv(const float *p, const float *v, size_t n_kv, size_t hs, float *out)
{
	size_t t, h;

	memset(out, 0, hs * sizeof *out);
	for (t = 0; t < n_kv; t++)
		for (h = 0; h < hs; h++)
			out[h] = out[h] + p[t] * v[t * hs + h];
}

/* One query row against every key (sequence length 1). */
static void
flash_decode(const struct qr_attn_flash *p, const float *q, const float *k,
	     const float *v, float *out)
{
	size_t n = p->total, start = 0, t;
	float *scores = xreallocarray(NULL, n + p->hs, sizeof *scores);
	float *acc = scores + n, mx = -FLT_MAX, sum, inv;

	decode_qk(q, k, n, p->hs, p->scale, scores);
	for (t = 0; p->bias != NULL && t < n; t++)
		scores[t] += p->bias[t];
	if (p->window >= 0 && n > (size_t)p->window)
		start = n - (size_t)p->window;
	for (t = 0; t < start; t++)
		scores[t] = -FLT_MAX;
	for (t = 0; t < n; t++)
		mx = scores[t] > mx ? scores[t] : mx;
	if (mx == -FLT_MAX) {
		memset(out, 0, p->hs * sizeof *out);
		goto done;
	}
	sum = qr_sumexp_ort_f32(scores, n, -mx, scores);
	decode_sv(scores, v, n, p->hs, acc);
	inv = sum > 0.0f ? 1.0f / sum : 0.0f;
	for (t = 0; t < p->hs; t++)
		out[t] = acc[t] * inv;
done:
	free(scores);
}

/* Rows [q0, q0 + rows) of a prompt: KV blocks in turn, online softmax. */
static void
flash_block(const struct qr_attn_flash *p, size_t q0, size_t rows,
	    const float *q, const float *k, const float *v, float *out,
	    size_t ldo, float *buf, void *ws)
{
	size_t hs = p->hs, kvb = p->kv_block, ir, i, j;
	float *l = buf, *m = l + rows, *sc = m + rows, *acc = sc + rows * kvb;
	size_t limit = p->mha ? p->total : p->past + q0 + rows;
	struct qr_sgemm_plan pv;

	for (i = 0; i < rows; i++) {
		m[i] = -FLT_MAX;
		l[i] = 0.0f;
	}
	memset(acc, 0, rows * hs * sizeof *acc);
	for (ir = 0; ir < p->total && ir < limit; ir += kvb) {
		size_t nk = p->total - ir < kvb ? p->total - ir : kvb;

		qr_sgemm_alpha(rows, nk, hs, p->scale, q + q0 * hs, hs,
			       k + ir * hs, hs, 1, sc, nk, ws);
		for (i = 0; p->bias != NULL && i < rows; i++)
			for (j = 0; j < nk; j++)
				sc[i * nk + j] += p->bias[(q0 + i) *
							  p->bias_ld + ir + j];
		for (i = 0; i < rows; i++) {
			float *r = sc + i * nk, mx = -FLT_MAX, old, sum;
			size_t causal = p->mha ? p->total : p->past + q0 + i + 1;
			size_t start = 0;

			if (p->window >= 0 && causal > (size_t)p->window)
				start = causal - (size_t)p->window;
			for (j = 0; j < nk; j++)
				if (ir + j >= causal || ir + j < start)
					r[j] = -FLT_MAX;
			for (j = 0; j < nk; j++)
				mx = r[j] > mx ? r[j] : mx;
			if (mx == -FLT_MAX) {
				memset(r, 0, nk * sizeof *r);
				continue;
			}
			old = m[i];
			m[i] = m[i] > mx ? m[i] : mx;
			sum = qr_sumexp_ort_f32(r, nk, -m[i], r);
			if (ir != 0) {
				float e = expf(old - m[i]);

				l[i] = e * l[i] + sum;
				for (j = 0; j < hs; j++)
					acc[i * hs + j] *= e;
			} else {
				l[i] = sum;
			}
		}
		qr_sgemm_plan(rows, hs, nk, 0, hs, hs, &pv);
		qr_sgemm(&pv, rows, hs, nk, sc, nk, v + ir * hs, hs, 0, acc, hs,
			 ir != 0, ws);
	}
	for (i = 0; i < rows; i++) {
		float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;

		for (j = 0; j < hs; j++)
			out[(q0 + i) * ldo + j] = p->mha ? acc[i * hs + j] / l[i] :
						  acc[i * hs + j] * inv;
	}
}

void
qr_attn_flash_f32(const struct qr_attn_flash *p, const float *q,
		  const float *k, const float *v, float *out, size_t ldo,
		  void *ws)
{
	size_t qb = p->q_block, q0;
	float *buf;

	if (p->s == 1 && !p->mha) {
		flash_decode(p, q, k, v, out);
		return;
	}
	buf = xreallocarray(NULL, qb * (2 + p->kv_block + p->hs),
			    sizeof *buf);
	for (q0 = 0; q0 < p->s; q0 += qb)
		flash_block(p, q0, p->s - q0 < qb ? p->s - q0 : qb, q, k, v,
			    out, ldo, buf, ws);
	free(buf);
}
