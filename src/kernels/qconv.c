/*
 * qconv: integer GEMM and convolution on top of the igemm core, and the
 * requantization that turns int32 accumulators into int8/uint8.
 *
 * Requantization is MLAS's MlasRequantizeOutput (onnxruntime
 * core/mlas/lib/quantize.cpp), which QLinearConv, QLinearMatMul and QGemm
 * feed with scale = x_scale * w_scale[c] / y_scale (qlinearconv.cc):
 *   v = (float)(acc + bias) * scale; v = max(v, qmin - zp);
 *   v = min(v, qmax - zp); y = round_half_even(v) + zp
 * The SSE/AVX and ConvSym paths (cvtps2dq after the same clamps) and the
 * scalar path (the 0x1.8p23 rounding trick) give the same bits.
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define QR_IG_BUDGET (512u << 10) /* bytes of packed activations, about */

static size_t
round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

float
qr_requant_scale(float x_scale, float w_scale, float y_scale)
{
	float xw = x_scale * w_scale;

	return xw / y_scale;
}

static inline int32_t
requant_one(int32_t acc, float scale, float lo, float hi, int32_t zp)
{
	float v = (float)acc * scale;

	v = v > lo ? v : lo; /* maxps: NaN gives lo */
	v = v < hi ? v : hi;
	return (int32_t)qr_round_even_small(v) + zp;
}

void
qr_requantize_row(const int32_t *acc, size_t n, int32_t bias, float scale,
		  int32_t zp, int y_signed, void *y)
{
	float lo = (float)((y_signed ? -128 : 0) - zp);
	float hi = (float)((y_signed ? 127 : 255) - zp);
	size_t i;

	if (y_signed) {
		int8_t *d = y;

		for (i = 0; i < n; i++)
			d[i] = (int8_t)requant_one(qr_wrap_add(acc[i], bias),
						   scale, lo, hi, zp);
	} else {
		uint8_t *d = y;

		for (i = 0; i < n; i++)
			d[i] = (uint8_t)requant_one(qr_wrap_add(acc[i], bias),
						    scale, lo, hi, zp);
	}
}

void
qr_requantize_cols(const int32_t *acc, size_t n, const int32_t *bias,
		   size_t n_bias, const float *scale, size_t n_scale,
		   int32_t zp, int y_signed, void *y)
{
	float lo = (float)((y_signed ? -128 : 0) - zp);
	float hi = (float)((y_signed ? 127 : 255) - zp);
	size_t i;

	QR_ASSERT(n_scale == 1 || n_scale == n);
	QR_ASSERT(bias == NULL || n_bias == 1 || n_bias == n);
	for (i = 0; i < n; i++) {
		int32_t b = bias ? bias[n_bias == 1 ? 0 : i] : 0;
		int32_t r = requant_one(qr_wrap_add(acc[i], b),
					scale[n_scale == 1 ? 0 : i], lo, hi, zp);

		if (y_signed)
			((int8_t *)y)[i] = (int8_t)r;
		else
			((uint8_t *)y)[i] = (uint8_t)r;
	}
}

/* ---- QGEMM: C = A * B, B packed as the "weights" rows of C^T ---- */

struct qr_qgemm_packed {
	struct qr_ig_weights iw; /* B^T: n rows of depth k */
	size_t k, n;             /* B is k x n */
	size_t nb;               /* rows of A per block */
};

struct qr_qgemm_packed *
qr_qgemm_pack_new(const void *b, int b_signed, int trans_b, size_t k,
		  size_t n, const int32_t *b_zp, size_t n_b_zp)
{
	struct qr_qgemm_packed *pk = xcalloc(1, sizeof *pk);

	pk->k = k;
	pk->n = n;
	/* row r of B^T is column r of B */
	if (trans_b)
		qr_ig_weights_init(&pk->iw, b, b_signed, n, k, k, 1, b_zp,
				   n_b_zp);
	else
		qr_ig_weights_init(&pk->iw, b, b_signed, n, k, 1, n, b_zp,
				   n_b_zp);
	pk->nb = QR_IG_BUDGET / pk->iw.k4 / 64 * 64;
	if (pk->nb < 64)
		pk->nb = 64;
	return pk;
}

void
qr_qgemm_packed_free(struct qr_qgemm_packed *pk)
{
	if (pk == NULL)
		return;
	qr_ig_weights_fini(&pk->iw);
	free(pk);
}

static size_t
qgemm_nb(const struct qr_qgemm_packed *pk, size_t m)
{
	size_t nb = round_up(m ? m : 1, QR_IG_NALIGN);

	return nb < pk->nb ? nb : pk->nb;
}

size_t
qr_qgemm_workspace(const struct qr_qgemm_packed *pk, size_t m)
{
	size_t nbp = round_up(qgemm_nb(pk, m), QR_IG_NALIGN);

	return pk->iw.k4 * nbp + nbp * sizeof(int32_t) +
	       pk->n * nbp * sizeof(int32_t) + 4 * 64;
}

void
qr_qgemm_run(const struct qr_qgemm_packed *pk, const void *a, int a_signed,
	     int32_t a_zp, size_t m, int32_t *c, size_t ldc, void *ws)
{
	size_t nbmax = qgemm_nb(pk, m), nbp = round_up(nbmax, QR_IG_NALIGN);
	uint8_t *xp = qr_align64(ws);
	int32_t *colsum = qr_align64(xp + pk->iw.k4 * nbp);
	int32_t *t = qr_align64(colsum + nbp);
	int32_t xz = a_zp + (a_signed ? 128 : 0);
	size_t m0, i, j;

	for (m0 = 0; m0 < m; m0 += nbmax) {
		size_t nb = m - m0 < nbmax ? m - m0 : nbmax;

		qr_ig_pack_rows((const uint8_t *)a + m0 * pk->k, pk->k, pk->k,
				nb, a_signed, xp, colsum);
		qr_ig_gemm(&pk->iw, xp, colsum, nb, xz, t, nbp);
		for (j = 0; j < nb; j++)
			for (i = 0; i < pk->n; i++)
				c[(m0 + j) * ldc + i] = t[i * nbp + j];
	}
}

/* ---- Integer convolution ---- */

struct qr_qconv_packed {
	struct qr_conv_params p;  /* shape, copied */
	int depthwise;            /* direct loop instead of im2col + GEMM */
	struct qr_ig_weights *gw; /* GEMM weights, one per group, owned */
	int32_t *dw;              /* depthwise: w - w_zp, [c_out][kh*kw] */
	size_t nb;                /* output columns per block */
};

struct qr_qconv_packed *
qr_qconv_pack_new(const struct qr_conv_params *p, const void *w, int w_signed,
		  const int32_t *w_zp, size_t n_w_zp)
{
	struct qr_qconv_packed *pk = xcalloc(1, sizeof *pk);
	size_t cin_g, cout_g, k, g, i, j;

	QR_ASSERT(p->group >= 1 && p->c_in % p->group == 0 &&
		  p->c_out % p->group == 0);
	QR_ASSERT(n_w_zp == 1 || n_w_zp == p->c_out);
	pk->p = *p;
	cin_g = p->c_in / p->group;
	cout_g = p->c_out / p->group;
	k = cin_g * p->kh * p->kw;
	if (cin_g == 1 && p->group > 1) {
		pk->depthwise = 1;
		pk->dw = xmalloc((p->c_out * k + 1) * sizeof *pk->dw);
		for (i = 0; i < p->c_out; i++) {
			int32_t z = w_zp[n_w_zp == 1 ? 0 : i];

			for (j = 0; j < k; j++) {
				size_t at = i * k + j;
				int32_t v = w_signed ?
					((const int8_t *)w)[at] :
					((const uint8_t *)w)[at];

				pk->dw[at] = v - z;
			}
		}
		return pk;
	}
	pk->gw = xcalloc(p->group, sizeof *pk->gw);
	for (g = 0; g < p->group; g++) {
		const uint8_t *wg = (const uint8_t *)w + g * cout_g * k;

		qr_ig_weights_init(&pk->gw[g], wg, w_signed, cout_g, k, k, 1,
				   n_w_zp == 1 ? w_zp : w_zp + g * cout_g,
				   n_w_zp == 1 ? 1 : cout_g);
	}
	pk->nb = QR_IG_BUDGET / pk->gw[0].k4 / 64 * 64;
	if (pk->nb < 64)
		pk->nb = 64;
	i = qr_conv_out_h(p) * qr_conv_out_w(p);
	if (pk->nb > round_up(i ? i : 1, QR_IG_NALIGN))
		pk->nb = round_up(i ? i : 1, QR_IG_NALIGN);
	return pk;
}

void
qr_qconv_packed_free(struct qr_qconv_packed *pk)
{
	size_t g;

	if (pk == NULL)
		return;
	if (pk->gw)
		for (g = 0; g < pk->p.group; g++)
			qr_ig_weights_fini(&pk->gw[g]);
	free(pk->gw);
	free(pk->dw);
	free(pk);
}

size_t
qr_qconv_workspace(const struct qr_qconv_packed *pk)
{
	const struct qr_conv_params *p = &pk->p;
	size_t k, nbp;

	if (pk->depthwise)
		return qr_conv_out_h(p) * qr_conv_out_w(p) * sizeof(int32_t) +
		       64;
	k = p->c_in / p->group * p->kh * p->kw;
	nbp = round_up(pk->nb, QR_IG_NALIGN);
	return k * nbp + pk->gw[0].k4 * nbp + nbp * sizeof(int32_t) +
	       (p->c_out / p->group) * nbp * sizeof(int32_t) + 5 * 64;
}

/* Depthwise accumulators of output channel co of image n: acc[oh*ow]. */
#define DW_BODY(T)                                                          \
	const T *xc = (const T *)x + (n * p->c_in + co / mult) * p->h * p->w;\
	for (oh = 0; oh < oh_n; oh++) {                                     \
		int32_t *ar = acc + oh * ow_n;                              \
		for (ki = 0; ki < p->kh; ki++) {                            \
			size_t ihp = oh * p->stride_h + ki * p->dil_h;      \
			const T *xr;                                        \
			if (ihp < p->pad_t || ihp - p->pad_t >= p->h)       \
				continue;                                   \
			xr = xc + (ihp - p->pad_t) * p->w;                  \
			for (kj = 0; kj < p->kw; kj++) {                    \
				int32_t wv = wc[ki * p->kw + kj];           \
				size_t lo, hi, ow;                          \
				size_t off = kj * p->dil_w - p->pad_l;      \
				lo = 0;                                     \
				while (lo < ow_n &&                         \
				       lo * p->stride_w + kj * p->dil_w <   \
					       p->pad_l)                    \
					lo++;                               \
				hi = lo;                                    \
				while (hi < ow_n &&                         \
				       hi * p->stride_w + kj * p->dil_w -   \
						       p->pad_l < p->w)     \
					hi++;                               \
				for (ow = lo; ow < hi; ow++)                \
					ar[ow] = qr_wrap_add(ar[ow],        \
					    qr_wrap_mul((int32_t)xr[ow * p->stride_w + off] - x_zp, wv)); \
			}                                                   \
		}                                                           \
	}

static void
dw_acc(const struct qr_qconv_packed *pk, const void *x, int x_signed,
       int32_t x_zp, size_t n, size_t co, int32_t *acc)
{
	const struct qr_conv_params *p = &pk->p;
	size_t oh_n = qr_conv_out_h(p), ow_n = qr_conv_out_w(p);
	size_t mult = p->c_out / p->group, oh, ki, kj;
	const int32_t *wc = pk->dw + co * p->kh * p->kw;

	memset(acc, 0, oh_n * ow_n * sizeof *acc);
	if (x_signed) {
		DW_BODY(int8_t)
	} else {
		DW_BODY(uint8_t)
	}
}

/*
 * The one loop behind both runs: int32 accumulators of each block of
 * output columns, then either requantized (q != NULL) into y8 or copied
 * into y32.
 */
static void
qconv_core(const struct qr_qconv_packed *pk, const void *x, int x_signed,
	   int32_t x_zp, const struct qr_qconv_quant *q, void *y8,
	   int32_t *y32, void *ws)
{
	const struct qr_conv_params *p = &pk->p;
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t ohw = qr_conv_out_h(p) * qr_conv_out_w(p), hw = p->h * p->w;
	size_t k = cin_g * p->kh * p->kw;
	size_t n, g, c0, co, i;

	if (pk->depthwise) {
		int32_t *acc = qr_align64(ws);

		for (n = 0; n < p->n; n++) {
			for (co = 0; co < p->c_out; co++) {
				size_t at = (n * p->c_out + co) * ohw;

				dw_acc(pk, x, x_signed, x_zp, n, co, acc);
				if (q == NULL) {
					memcpy(y32 + at, acc,
					       ohw * sizeof *acc);
					continue;
				}
				qr_requantize_row(
					acc, ohw, q->bias ? q->bias[co] : 0,
					q->scale[q->n_scale == 1 ? 0 : co],
					q->y_zp, q->y_signed,
					(uint8_t *)y8 + at);
			}
		}
		return;
	}

	size_t nbp = round_up(pk->nb, QR_IG_NALIGN);
	uint8_t *col = qr_align64(ws);
	uint8_t *xp = qr_align64(col + k * nbp);
	int32_t *colsum = qr_align64(xp + pk->gw[0].k4 * nbp);
	int32_t *acc = qr_align64(colsum + nbp);
	int32_t xz = x_zp + (x_signed ? 128 : 0);

	for (n = 0; n < p->n; n++) {
		for (g = 0; g < p->group; g++) {
			const uint8_t *xg = (const uint8_t *)x +
					    (n * p->c_in + g * cin_g) * hw;

			for (c0 = 0; c0 < ohw; c0 += pk->nb) {
				size_t nb = ohw - c0 < pk->nb ? ohw - c0 :
								 pk->nb;

				qr_im2col_u8(p, xg, cin_g, c0, nb,
					     (uint8_t)x_zp, col);
				if (x_signed)
					for (i = 0; i < k * nb; i++)
						col[i] ^= 0x80;
				qr_ig_pack_cols(col, nb, k, nb, xp, colsum);
				qr_ig_gemm(&pk->gw[g], xp, colsum, nb, xz, acc,
					   nbp);
				for (co = 0; co < cout_g; co++) {
					size_t oc = g * cout_g + co;
					size_t at = (n * p->c_out + oc) * ohw +
						    c0;

					if (q == NULL) {
						memcpy(y32 + at, acc + co * nbp,
						       nb * sizeof *acc);
						continue;
					}
					qr_requantize_row(
						acc + co * nbp, nb,
						q->bias ? q->bias[oc] : 0,
						q->scale[q->n_scale == 1 ? 0 :
									   oc],
						q->y_zp, q->y_signed,
						(uint8_t *)y8 + at);
				}
			}
		}
	}
}

void
qr_qconv_run(const struct qr_qconv_packed *pk, const void *x,
	     const struct qr_qconv_quant *q, void *y, void *ws)
{
	QR_ASSERT(q->n_scale == 1 || q->n_scale == pk->p.c_out);
	qconv_core(pk, x, q->x_signed, q->x_zp, q, y, NULL, ws);
}

void
qr_qconv_run_s32(const struct qr_qconv_packed *pk, const void *x,
		 int x_signed, int32_t x_zp, int32_t *y, void *ws)
{
	qconv_core(pk, x, x_signed, x_zp, NULL, NULL, y, ws);
}
