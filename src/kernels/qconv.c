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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_HAVE_AVX512_CODE 1
#endif

#define QR_IG_BUDGET (256u << 10) /* bytes of packed activations, about */

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

static void
requantize_row_portable(const int32_t *acc, size_t n, int32_t bias,
			float scale, int32_t zp, int y_signed, void *y)
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

#ifdef QR_HAVE_AVX512_CODE
/* The same steps on 16 lanes: vcvtdq2ps, mulps, maxps (NaN gives lo, as
 * the scalar), minps, vcvtps2dq (nearest even: the clamped values are
 * small, so it agrees with the 0x1.8p23 trick), + zp, then the low byte. */
static __attribute__((target("avx512f,avx512bw,avx512vl"))) void
requantize_row_avx512(const int32_t *acc, size_t n, int32_t bias,
		      float scale, int32_t zp, int y_signed, void *y)
{
	const __m512 lo = _mm512_set1_ps((float)((y_signed ? -128 : 0) - zp));
	const __m512 hi = _mm512_set1_ps((float)((y_signed ? 127 : 255) - zp));
	const __m512 sc = _mm512_set1_ps(scale);
	const __m512i b = _mm512_set1_epi32(bias), z = _mm512_set1_epi32(zp);
	uint8_t *d = y;
	size_t i;

	for (i = 0; i < n; i += 16) {
		size_t left = n - i;
		__mmask16 m = left >= 16 ? (__mmask16)0xffff :
			      (__mmask16)((1u << left) - 1);
		__m512i a = _mm512_maskz_loadu_epi32(m, acc + i);
		__m512 f;

		a = _mm512_add_epi32(a, b);
		f = _mm512_mul_ps(_mm512_cvtepi32_ps(a), sc);
		f = _mm512_max_ps(f, lo);
		f = _mm512_min_ps(f, hi);
		a = _mm512_add_epi32(_mm512_cvtps_epi32(f), z);
		_mm_mask_storeu_epi8(d + i, m, _mm512_cvtepi32_epi8(a));
	}
}
#endif

#ifdef QR_HAVE_AVX512_CODE
/* requantize_row_avx512 on 8 lanes (CPUs without AVX-512); returns the
 * values done, a multiple of 8. */
static __attribute__((target("avx2"))) size_t
requantize_row_avx2(const int32_t *acc, size_t n, int32_t bias, float scale,
		    int32_t zp, int y_signed, void *y)
{
	const __m256 lo = _mm256_set1_ps((float)((y_signed ? -128 : 0) - zp));
	const __m256 hi = _mm256_set1_ps((float)((y_signed ? 127 : 255) - zp));
	const __m256 sc = _mm256_set1_ps(scale);
	const __m256i b = _mm256_set1_epi32(bias), z = _mm256_set1_epi32(zp);
	const __m256i low_bytes = _mm256_setr_epi8(
		0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
		0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	uint8_t *d = y;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256i a = _mm256_add_epi32(_mm256_loadu_si256(
			(const __m256i *)(acc + i)), b);
		__m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(a), sc);
		uint32_t w0, w1;

		f = _mm256_max_ps(f, lo);
		f = _mm256_min_ps(f, hi);
		a = _mm256_add_epi32(_mm256_cvtps_epi32(f), z);
		a = _mm256_shuffle_epi8(a, low_bytes);
		w0 = (uint32_t)_mm_cvtsi128_si32(_mm256_castsi256_si128(a));
		w1 = (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(a, 1));
		memcpy(d + i, &w0, 4);
		memcpy(d + i + 4, &w1, 4);
	}
	return i;
}
#endif

void
qr_requantize_row(const int32_t *acc, size_t n, int32_t bias, float scale,
		  int32_t zp, int y_signed, void *y)
{
	size_t i = 0;

#ifdef QR_HAVE_AVX512_CODE
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW) {
		requantize_row_avx512(acc, n, bias, scale, zp, y_signed, y);
		return;
	}
	if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		i = requantize_row_avx2(acc, n, bias, scale, zp, y_signed, y);
#endif
	requantize_row_portable(acc + i, n - i, bias, scale, zp, y_signed,
				(uint8_t *)y + i);
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
		qr_ig_weights_init(&pk->iw, b, b_signed, n, k, k, 1, NULL,
				   b_zp, n_b_zp);
	else
		qr_ig_weights_init(&pk->iw, b, b_signed, n, k, 1, n, NULL,
				   b_zp, n_b_zp);
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
qr_qgemm_workspace(const struct qr_qgemm_packed *pk, size_t m, int n_threads)
{
	size_t nbp = round_up(qgemm_nb(pk, m), QR_IG_NALIGN);

	return pk->iw.k4 * nbp + nbp * sizeof(int32_t) +
	       pk->n * nbp * sizeof(int32_t) + 4 * 64;
}

/* One block of A rows, packed once; threads split the rows of B^T. */
struct qgemm_job {
	const struct qr_qgemm_packed *pk;
	const uint8_t *xp;
	const int32_t *colsum;
	size_t nb, nbp, m0;
	int32_t xz;
	int a_signed;
	int32_t *t, *c;
	size_t ldc;
	size_t n_tasks;   /* row ranges */
};

static void
qgemm_task(void *ctx, size_t task, int slot)
{
	struct qgemm_job *j = ctx;
	struct qr_ig_weights v;
	size_t r0, r1, i, jj;

	qr_parallel_range(j->pk->n, task, j->n_tasks, 16, &r0, &r1);
	if (r0 == r1)
		return;
	qr_ig_weights_rows(&j->pk->iw, r0, r1, &v);
	qr_ig_gemm(&v, j->xp, j->colsum, j->nb, j->xz, !j->a_signed,
		   j->t + r0 * j->nbp, j->nbp);
	for (jj = 0; jj < j->nb; jj++)
		for (i = r0; i < r1; i++)
			j->c[(j->m0 + jj) * j->ldc + i] = j->t[i * j->nbp + jj];
}

void
qr_qgemm_run(const struct qr_qgemm_packed *pk, const void *a, int a_signed,
	     int32_t a_zp, size_t m, int32_t *c, size_t ldc, void *ws,
	     int n_threads)
{
	size_t nbmax = qgemm_nb(pk, m), nbp = round_up(nbmax, QR_IG_NALIGN);
	uint8_t *xp = qr_align64(ws);
	int32_t *colsum = qr_align64(xp + pk->iw.k4 * nbp);
	int32_t *t = qr_align64(colsum + nbp);
	struct qgemm_job j;
	size_t m0, tasks;

	j.pk = pk;
	j.xp = xp;
	j.colsum = colsum;
	j.nbp = nbp;
	j.xz = a_zp + (a_signed ? 128 : 0);
	j.a_signed = a_signed;
	j.t = t;
	j.c = c;
	j.ldc = ldc;
	/* enough rows per thread to pay for waking it */
	tasks = pk->n * pk->iw.k4 >= 16384 && n_threads > 1 ?
			4 * (size_t)n_threads : 1;
	j.n_tasks = tasks;
	for (m0 = 0; m0 < m; m0 += nbmax) {
		size_t nb = m - m0 < nbmax ? m - m0 : nbmax;

		qr_ig_pack_rows((const uint8_t *)a + m0 * pk->k, pk->k, pk->k,
				nb, a_signed, xp, colsum);
		j.nb = nb;
		j.m0 = m0;
		qr_parallel_for(n_threads, tasks, qgemm_task, &j);
	}
}

/* ---- Integer convolution ---- */

struct qr_qconv_packed {
	size_t c_out, c_in;       /* channels */
	size_t kd, kh, kw;        /* kernel size; kd 0 but for 3-D */
	size_t group;             /* groups */
	int depthwise;            /* direct loop instead of GEMM (2-D) */
	struct qr_ig_weights *gw; /* GEMM weights, one per group, owned */
	uint32_t *order;          /* GEMM depth in ONNX Runtime's order, or
				     NULL (see qr_qconv_pack_new) */
	int32_t *dw;              /* depthwise: w - w_zp, [c_out][kh*kw] */
	float *dwf;               /* the same as floats (exact) */
};

struct qr_qconv_packed *
qr_qconv_pack_new(size_t c_out, size_t c_in, size_t kd, size_t kh,
		  size_t kw, size_t group, const void *w, int w_signed,
		  const int32_t *w_zp, size_t n_w_zp)
{
	struct qr_qconv_packed *pk = xcalloc(1, sizeof *pk);
	size_t cin_g, cout_g, k, g, i, j, t, taps;

	QR_ASSERT(group >= 1 && c_in % group == 0 && c_out % group == 0);
	QR_ASSERT(n_w_zp == 1 || n_w_zp == c_out);
	pk->c_out = c_out;
	pk->c_in = c_in;
	pk->kd = kd;
	pk->kh = kh;
	pk->kw = kw;
	pk->group = group;
	cin_g = c_in / group;
	cout_g = c_out / group;
	k = cin_g * (kd ? kd : 1) * kh * kw;
	/* ORT runs a depthwise conv with a channel multiplier (more than
	 * one output per group) as grouped GEMMs, which saturate pairs of
	 * taps where its u8 x s8 kernels do: so does this one then */
	if (cin_g == 1 && group > 1 && kd == 0 &&
	    !(cout_g > 1 && w_signed &&
	      (qr_kernels_ort_traits() & QR_ORT_U8S8_SATURATES))) {
		pk->depthwise = 1;
		pk->dw = xmalloc((c_out * k + 1) * sizeof *pk->dw);
		pk->dwf = xmalloc((c_out * k + 1) * sizeof *pk->dwf);
		for (i = 0; i < c_out; i++) {
			int32_t z = w_zp[n_w_zp == 1 ? 0 : i];

			for (j = 0; j < k; j++) {
				size_t at = i * k + j;
				int32_t v = w_signed ?
					((const int8_t *)w)[at] :
					((const uint8_t *)w)[at];

				pk->dw[at] = v - z;
				pk->dwf[at] = (float)(v - z);
			}
		}
		return pk;
	}
	/* Where ONNX Runtime saturates pairs of products (u8 x s8 without
	 * VNNI), which products pair matters: ORT's im2col is NHWC, depth
	 * index (tap, channel), so the GEMM depth takes that order here too
	 * (packed row r of the weights and the columns is row order[r] of
	 * OIHW's (channel, tap)). Exact sums do not depend on it. */
	taps = cin_g ? k / cin_g : 0;
	if (w_signed && (qr_kernels_ort_traits() & QR_ORT_U8S8_SATURATES) &&
	    taps > 1 && cin_g > 1) {
		pk->order = xmalloc(k * sizeof *pk->order);
		for (t = 0; t < taps; t++)
			for (i = 0; i < cin_g; i++)
				pk->order[t * cin_g + i] = (uint32_t)(i * taps + t);
	}
	pk->gw = xcalloc(group, sizeof *pk->gw);
	for (g = 0; g < group; g++) {
		const uint8_t *wg = (const uint8_t *)w + g * cout_g * k;

		qr_ig_weights_init(&pk->gw[g], wg, w_signed, cout_g, k, k, 1,
				   pk->order,
				   n_w_zp == 1 ? w_zp : w_zp + g * cout_g,
				   n_w_zp == 1 ? 1 : cout_g);
	}
	return pk;
}

void
qr_qconv_packed_free(struct qr_qconv_packed *pk)
{
	size_t g;

	if (pk == NULL)
		return;
	if (pk->gw)
		for (g = 0; g < pk->group; g++)
			qr_ig_weights_fini(&pk->gw[g]);
	free(pk->gw);
	free(pk->order);
	free(pk->dw);
	free(pk->dwf);
	free(pk);
}

static void
qcheck_geom(const struct qr_qconv_packed *pk, const struct qr_conv_params *p)
{
	QR_ASSERT(p->c_out == pk->c_out && p->c_in == pk->c_in &&
		  p->kd == pk->kd && p->kh == pk->kh && p->kw == pk->kw &&
		  p->group == pk->group);
	QR_ASSERT(p->stride_h >= 1 && p->stride_w >= 1 && p->dil_h >= 1 &&
		  p->dil_w >= 1);
}

static int
q_pointwise(const struct qr_conv_params *p)
{
	return p->kh == 1 && p->kw == 1 && p->stride_h == 1 &&
	       p->stride_w == 1 && !p->pad_t && !p->pad_l && !p->pad_b &&
	       !p->pad_r && p->kd <= 1 && p->stride_d <= 1 && !p->pad_f &&
	       !p->pad_k;
}

static int
dw_exact_float(const struct qr_conv_params *p)
{
	return p->kh * p->kw <= QR_DW_EXACT_TAPS;
}

/* Output columns per GEMM block for geometry p. */
static size_t
q_block(const struct qr_qconv_packed *pk, const struct qr_conv_params *p)
{
	size_t ohw = qr_conv_out_size(p);
	size_t nb = QR_IG_BUDGET / pk->gw[0].k4 / 64 * 64;

	if (nb < 64)
		nb = 64;
	if (nb > round_up(ohw ? ohw : 1, QR_IG_NALIGN))
		nb = round_up(ohw ? ohw : 1, QR_IG_NALIGN);
	return nb;
}

/* Bytes of one thread's workspace. */
static size_t
q_slot(const struct qr_qconv_packed *pk, const struct qr_conv_params *p)
{
	size_t ohw = qr_conv_out_size(p), k, nbp;

	if (pk->depthwise) {
		struct qr_dw_geom g;

		qr_dw_geom(p, &g);
		return g.rows * g.row_len * sizeof(float) +
		       2 * ohw * sizeof(int32_t) + 3 * 64;
	}
	k = p->c_in / p->group * qr_conv_taps(p);
	nbp = round_up(q_block(pk, p), QR_IG_NALIGN);
	return k * nbp + pk->gw[0].k4 * nbp + nbp * sizeof(int32_t) +
	       (p->c_out / p->group) * nbp * sizeof(int32_t) + 5 * 64;
}

size_t
qr_qconv_workspace(const struct qr_qconv_packed *pk,
		   const struct qr_conv_params *p, int n_threads)
{
	qcheck_geom(pk, p);
	return (n_threads > 1 ? (size_t)n_threads : 1) * q_slot(pk, p);
}

/* Depthwise accumulators of output channel co of image n (int32 loop for
 * kernels too large for the float path): acc[oh*ow]. */
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
dw_acc_int(const struct qr_qconv_packed *pk, const struct qr_conv_params *p,
	   const void *x, int x_signed, int32_t x_zp, size_t n, size_t co,
	   int32_t *acc)
{
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

/* What every task of one conv call shares. */
struct qconv_job {
	const struct qr_qconv_packed *pk;
	const struct qr_conv_params *p;
	const void *x;
	int x_signed;
	int32_t x_zp;
	const struct qr_qconv_quant *q; /* NULL: int32 output */
	void *y8;
	int32_t *y32;
	char *ws;
	size_t slot;      /* bytes per thread */
	size_t nb;        /* GEMM columns per block */
	size_t n_cb;      /* column blocks per (image, group) */
	size_t n_rb;      /* row blocks per column block */
	size_t units;     /* work units */
	size_t n_tasks;   /* tasks the units are cut into */
};

/* Store nb accumulators of output channel oc at (image n, column c0). */
static void
q_emit(const struct qconv_job *j, const int32_t *acc, size_t n, size_t oc,
       size_t c0, size_t nb, size_t ohw)
{
	const struct qr_qconv_quant *q = j->q;
	size_t at = (n * j->p->c_out + oc) * ohw + c0;

	if (q == NULL) {
		memcpy(j->y32 + at, acc, nb * sizeof *acc);
		return;
	}
	qr_requantize_row(acc, nb, q->bias ? q->bias[oc] : 0,
			  q->scale[q->n_scale == 1 ? 0 : oc], q->y_zp,
			  q->y_signed, (uint8_t *)j->y8 + at);
}

static void
qdw_task(void *ctx, size_t t, int slot)
{
	struct qconv_job *j = ctx;
	const struct qr_conv_params *p = j->p;
	const struct qr_qconv_packed *pk = j->pk;
	size_t ohw = qr_conv_out_h(p) * qr_conv_out_w(p);
	size_t mult = p->c_out / p->group, lo, hi, u, m;
	char *base = j->ws + (size_t)slot * j->slot;
	struct qr_dw_geom g;
	float *plane, *accf;
	int32_t *acc;

	qr_dw_geom(p, &g);
	plane = qr_align64(base);
	accf = qr_align64(plane + g.rows * g.row_len);
	acc = qr_align64(accf + ohw);
	qr_parallel_range(p->n * p->c_in, t, j->n_tasks, 1, &lo, &hi);
	for (u = lo; u < hi; u++) {
		size_t n = u / p->c_in, ci = u % p->c_in;
		const uint8_t *xc = p->h * p->w != 0 ? (const uint8_t *)j->x +
						  u * p->h * p->w :
						  (const uint8_t *)j->x;

		if (dw_exact_float(p))
			qr_dw_fill_q8(p, &g, xc, j->x_signed, j->x_zp, plane);
		for (m = 0; m < mult; m++) {
			size_t co = ci * mult + m;

			if (dw_exact_float(p)) {
				qr_dw_plane(p, &g, plane,
					    pk->dwf + co * p->kh * p->kw, 0.0f,
					    0, accf);
				qr_dw_to_s32(accf, ohw, acc);
			} else {
				dw_acc_int(pk, p, j->x, j->x_signed, j->x_zp,
					   n, co, acc);
			}
			q_emit(j, acc, n, co, 0, ohw, ohw);
		}
	}
}

static void
qgemm_conv_task(void *ctx, size_t t, int slot)
{
	struct qconv_job *j = ctx;
	const struct qr_conv_params *p = j->p;
	const struct qr_qconv_packed *pk = j->pk;
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t ohw = qr_conv_out_size(p), hw = qr_conv_in_size(p);
	size_t k = cin_g * qr_conv_taps(p), nbp = round_up(j->nb, QR_IG_NALIGN);
	char *base = j->ws + (size_t)slot * j->slot;
	uint8_t *col = qr_align64(base);
	uint8_t *xp = qr_align64(col + k * nbp);
	int32_t *colsum = qr_align64(xp + pk->gw[0].k4 * nbp);
	int32_t *acc = qr_align64(colsum + nbp);
	int32_t xz = j->x_zp + (j->x_signed ? 128 : 0);
	size_t lo, hi, u, i, co;
	size_t last_col = (size_t)-1; /* unit whose columns xp holds */

	qr_parallel_range(j->units, t, j->n_tasks, 1, &lo, &hi);
	for (u = lo; u < hi; u++) {
		size_t rb = u % j->n_rb, cu = u / j->n_rb;
		size_t cb = cu % j->n_cb, ng = cu / j->n_cb;
		size_t g = ng % p->group, n = ng / p->group;
		size_t c0 = cb * j->nb, nb = ohw - c0 < j->nb ? ohw - c0 : j->nb;
		/* an empty image has no data (all taps are padding) */
		const uint8_t *xg = hw ? (const uint8_t *)j->x +
					 (n * p->c_in + g * cin_g) * hw :
					 (const uint8_t *)j->x;
		struct qr_ig_weights v;
		size_t r0, r1;

		qr_parallel_range(cout_g, rb, j->n_rb, 4, &r0, &r1);
		if (r0 == r1)
			continue;
		if (cu != last_col) {
			if (q_pointwise(p)) {
				qr_ig_pack_cols(xg + c0, hw, k, nb,
						j->x_signed, NULL, xp, colsum);
			} else {
				qr_im2col_u8(p, xg, cin_g, c0, nb,
					     (uint8_t)j->x_zp, col);
				qr_ig_pack_cols(col, nb, k, nb, j->x_signed,
						pk->order, xp, colsum);
			}
			last_col = cu;
		}
		qr_ig_weights_rows(&pk->gw[g], r0, r1, &v);
		/* ORT's ConvInteger (y32) runs u8 x s8 as weights x
		 * activations, in MLAS's exact portable kernel */
		qr_ig_gemm(&v, xp, colsum, nb, xz, !j->x_signed && j->q,
			   acc, nbp);
		for (co = r0, i = 0; co < r1; co++, i++)
			q_emit(j, acc + i * nbp, n, g * cout_g + co, c0, nb,
			       ohw);
	}
}

/*
 * The one driver behind both runs: int32 accumulators, then either
 * requantized (q != NULL) into y8 or copied into y32. Work is cut into
 * units (image, channel) for depthwise convs and (image, group, column
 * block, row block) for GEMM convs; rows are split only when there are
 * too few column blocks to keep every thread busy.
 */
static void
qconv_core(const struct qr_qconv_packed *pk, const struct qr_conv_params *p,
	   const void *x, int x_signed, int32_t x_zp,
	   const struct qr_qconv_quant *q, void *y8, int32_t *y32, void *ws,
	   int n_threads)
{
	size_t ohw = qr_conv_out_size(p);
	size_t nt = n_threads > 1 ? (size_t)n_threads : 1;
	struct qconv_job j;

	qcheck_geom(pk, p);
	memset(&j, 0, sizeof j);
	j.pk = pk;
	j.p = p;
	j.x = x;
	j.x_signed = x_signed;
	j.x_zp = x_zp;
	j.q = q;
	j.y8 = y8;
	j.y32 = y32;
	j.ws = ws;
	j.slot = q_slot(pk, p);
	if (pk->depthwise) {
		j.units = p->n * p->c_in;
		j.n_tasks = nt > 1 ? 4 * nt : 1;
		if (j.n_tasks > j.units)
			j.n_tasks = j.units;
		qr_parallel_for(n_threads, j.n_tasks, qdw_task, &j);
		return;
	}
	j.nb = q_block(pk, p);
	j.n_cb = (ohw + j.nb - 1) / j.nb;
	j.n_rb = 1;
	if (p->n * p->group * j.n_cb < 2 * nt && nt > 1) {
		j.n_rb = (p->c_out / p->group + 15) / 16;
		if (j.n_rb > nt)
			j.n_rb = nt;
		if (j.n_rb < 1)
			j.n_rb = 1;
	}
	j.units = p->n * p->group * j.n_cb * j.n_rb;
	j.n_tasks = j.units; /* one unit each: the pool balances them */
	qr_parallel_for(n_threads, j.n_tasks, qgemm_conv_task, &j);
}

void
qr_qconv_run(const struct qr_qconv_packed *pk, const struct qr_conv_params *p,
	     const void *x, const struct qr_qconv_quant *q, void *y, void *ws,
	     int n_threads)
{
	QR_ASSERT(q->n_scale == 1 || q->n_scale == p->c_out);
	qconv_core(pk, p, x, q->x_signed, q->x_zp, q, y, NULL, ws, n_threads);
}

void
qr_qconv_run_s32(const struct qr_qconv_packed *pk,
		 const struct qr_conv_params *p, const void *x, int x_signed,
		 int32_t x_zp, int32_t *y, void *ws, int n_threads)
{
	qconv_core(pk, p, x, x_signed, x_zp, NULL, NULL, y, ws, n_threads);
}
