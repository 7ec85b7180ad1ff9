/*
 * dwconv: the direct depthwise convolution of one channel, on a padded,
 * stride-phased float plane (see kernels-int.h). Output rows are built 16
 * columns at a time with every tap summed in a register (AVX-512 when the
 * CPU has it, a plain loop otherwise; both add the taps in ONNX Runtime's
 * order, so they give the same bits as each other and as ORT).
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_HAVE_AVX512_CODE 1
#endif

void
qr_dw_geom(const struct qr_conv_params *p, struct qr_dw_geom *g)
{
	g->oh = qr_conv_out_h(p);
	g->ow = qr_conv_out_w(p);
	g->rows = g->oh ? (g->oh - 1) * p->stride_h +
				  (p->kh - 1) * p->dil_h + 1 : 0;
	g->cols = g->ow ? (g->ow - 1) * p->stride_w +
				  (p->kw - 1) * p->dil_w + 1 : 0;
	g->phase_len = (g->cols + p->stride_w - 1) / p->stride_w;
	/* + 16 so masked tails never leave the row */
	g->row_len = p->stride_w * g->phase_len + 16;
}

/* Row r of the plane: zeros, then the image columns [c0, c1) of the
 * padded row (c0 >= pad_l) copied from xr[c - pad_l] into their phases,
 * phase by phase (column c goes to phase c % s, place c / s), without a
 * division per value. */
#define FILL_BODY(T, conv)                                                  \
	size_t r, c, j, ph, s = p->stride_w;                                \
	size_t c0 = p->pad_l < g->cols ? p->pad_l : g->cols;                \
	size_t c1 = p->pad_l + p->w < g->cols ? p->pad_l + p->w : g->cols;  \
	for (r = 0; r < g->rows; r++) {                                     \
		float *d = buf + r * g->row_len;                            \
		size_t ih = r - p->pad_t;                                   \
		const T *xr;                                                \
		if (r < p->pad_t || ih >= p->h || c0 >= c1) {               \
			memset(d, 0, g->row_len * sizeof *d);               \
			continue;                                           \
		}                                                           \
		xr = (const T *)x + ih * p->w - p->pad_l;                   \
		if (s == 1) {                                               \
			memset(d, 0, c0 * sizeof *d);                       \
			for (c = c0; c < c1; c++)                           \
				d[c] = conv(xr[c]);                         \
			memset(d + c1, 0, (g->row_len - c1) * sizeof *d);   \
			continue;                                           \
		}                                                           \
		memset(d, 0, g->row_len * sizeof *d);                       \
		for (ph = 0; ph < s; ph++) {                                \
			float *dp = d + ph * g->phase_len;                  \
			c = c0 + (ph + s - c0 % s) % s;                     \
			for (j = c / s; c < c1; c += s, j++)                \
				dp[j] = conv(xr[c]);                        \
		}                                                           \
	}

/* Stride 1: rows are plain copies between the pads. */
static void
fill_f32_s1(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	    const float *x, float *buf)
{
	size_t c0 = p->pad_l < g->cols ? p->pad_l : g->cols;
	size_t c1 = p->pad_l + p->w < g->cols ? p->pad_l + p->w : g->cols;
	size_t r;

	for (r = 0; r < g->rows; r++) {
		float *d = buf + r * g->row_len;
		size_t ih = r - p->pad_t;

		if (r < p->pad_t || ih >= p->h || c0 >= c1) {
			memset(d, 0, g->row_len * sizeof *d);
			continue;
		}
		memset(d, 0, c0 * sizeof *d);
		memcpy(d + c0, x + ih * p->w, (c1 - c0) * sizeof *d);
		memset(d + c1, 0, (g->row_len - c1) * sizeof *d);
	}
}

#ifdef QR_HAVE_AVX512_CODE
/* Stride 2: each padded row's even columns to phase 0, odd ones to phase
 * 1, 16 pairs at a time with two permutes. */
static __attribute__((target("avx512f"))) void
fill_f32_s2(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	    const float *x, float *buf)
{
	const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16,
					      14, 12, 10, 8, 6, 4, 2, 0);
	const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17,
					     15, 13, 11, 9, 7, 5, 3, 1);
	size_t c0 = p->pad_l < g->cols ? p->pad_l : g->cols;
	size_t c1 = p->pad_l + p->w < g->cols ? p->pad_l + p->w : g->cols;
	size_t r, c;

	for (r = 0; r < g->rows; r++) {
		float *d = buf + r * g->row_len, *d1 = d + g->phase_len;
		size_t ih = r - p->pad_t;
		const float *xr;

		memset(d, 0, g->row_len * sizeof *d);
		if (r < p->pad_t || ih >= p->h || c0 >= c1)
			continue;
		xr = x + ih * p->w - p->pad_l;
		c = c0;
		if (c % 2) {
			d1[c / 2] = xr[c];
			c++;
		}
		for (; c < c1; c += 32) {
			size_t n = c1 - c < 32 ? c1 - c : 32; /* values */
			__mmask16 m0 = n >= 16 ? 0xffff : (1u << n) - 1;
			__mmask16 m1 = n > 16 ? (n >= 32 ? 0xffff :
				       (1u << (n - 16)) - 1) : 0;
			__m512 lo = _mm512_maskz_loadu_ps(m0, xr + c);
			__m512 hi = _mm512_maskz_loadu_ps(m1, xr + c + 16);
			size_t ne = (n + 1) / 2, no = n / 2; /* evens, odds */

			_mm512_mask_storeu_ps(d + c / 2, (__mmask16)(
				ne >= 16 ? 0xffff : (1u << ne) - 1),
				_mm512_permutex2var_ps(lo, even, hi));
			_mm512_mask_storeu_ps(d1 + c / 2, (__mmask16)(
				no >= 16 ? 0xffff : (1u << no) - 1),
				_mm512_permutex2var_ps(lo, odd, hi));
		}
	}
}
#endif

void
qr_dw_fill_f32(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	       const float *x, float *buf)
{
#define AS_F(v) (v)
	if (p->stride_w == 1)
		fill_f32_s1(p, g, x, buf);
#ifdef QR_HAVE_AVX512_CODE
	else if (p->stride_w == 2 &&
		 (qr_kernels_cpu_features() & QR_CPU_AVX512BW))
		fill_f32_s2(p, g, x, buf);
#endif
	else {
		FILL_BODY(float, AS_F)
	}
#undef AS_F
}

#ifdef QR_HAVE_AVX512_CODE
/* d[i] = (float)(x[i] - zp) for n bytes x. */
static __attribute__((target("avx512f,avx512bw,avx512vl"))) void
cvt_row_q8_avx512(const uint8_t *x, size_t n, int is_signed, int32_t zp,
		  float *d)
{
	const __m512i z = _mm512_set1_epi32(zp);
	size_t i;

	for (i = 0; i < n; i += 16) {
		size_t left = n - i;
		__mmask16 m = left >= 16 ? (__mmask16)0xffff :
			      (__mmask16)((1u << left) - 1);
		__m128i b = _mm_maskz_loadu_epi8(m, x + i);
		__m512i v = is_signed ? _mm512_cvtepi8_epi32(b) :
					_mm512_cvtepu8_epi32(b);

		_mm512_mask_storeu_ps(d + i, m, _mm512_cvtepi32_ps(
							_mm512_sub_epi32(v, z)));
	}
}

/* The same on 8 lanes (CPUs without AVX-512), then one by one. */
static __attribute__((target("avx2"))) void
cvt_row_q8_avx2(const uint8_t *x, size_t n, int is_signed, int32_t zp,
		float *d)
{
	const __m256i z = _mm256_set1_epi32(zp);
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(x + i));
		__m256i v = is_signed ? _mm256_cvtepi8_epi32(b) :
					_mm256_cvtepu8_epi32(b);

		_mm256_storeu_ps(d + i, _mm256_cvtepi32_ps(
						_mm256_sub_epi32(v, z)));
	}
	for (; i < n; i++)
		d[i] = (float)((is_signed ? (int32_t)(int8_t)x[i] :
					    (int32_t)x[i]) - zp);
}

static void
cvt_row_q8(const uint8_t *x, size_t n, int is_signed, int32_t zp, float *d)
{
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		cvt_row_q8_avx512(x, n, is_signed, zp, d);
	else
		cvt_row_q8_avx2(x, n, is_signed, zp, d);
}

/* Stride-1 int8 planes, rows converted 16 (or 8) bytes at a time. */
static void
fill_q8_s1(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	   const void *x, int is_signed, int32_t zp, float *buf)
{
	size_t c0 = p->pad_l < g->cols ? p->pad_l : g->cols;
	size_t c1 = p->pad_l + p->w < g->cols ? p->pad_l + p->w : g->cols;
	size_t r;

	for (r = 0; r < g->rows; r++) {
		float *d = buf + r * g->row_len;
		size_t ih = r - p->pad_t;

		if (r < p->pad_t || ih >= p->h || c0 >= c1) {
			memset(d, 0, g->row_len * sizeof *d);
			continue;
		}
		memset(d, 0, c0 * sizeof *d);
		cvt_row_q8((const uint8_t *)x + ih * p->w, c1 - c0, is_signed,
			   zp, d + c0);
		memset(d + c1, 0, (g->row_len - c1) * sizeof *d);
	}
}
#endif

void
qr_dw_fill_q8(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	      const void *x, int is_signed, int32_t zp, float *buf)
{
#ifdef QR_HAVE_AVX512_CODE
	if (p->stride_w == 1 && (qr_kernels_cpu_features() &
				 (QR_CPU_AVX512BW | QR_CPU_AVX2))) {
		fill_q8_s1(p, g, x, is_signed, zp, buf);
		return;
	}
#endif
#define SUB_ZP(v) ((float)((int32_t)(v) - zp))
	if (is_signed) {
		FILL_BODY(int8_t, SUB_ZP)
	} else {
		FILL_BODY(uint8_t, SUB_ZP)
	}
#undef SUB_ZP
}

/* Start of the run read by tap (ki, kj) for output row oh. */
static inline const float *
tap_src(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	const float *buf, size_t oh, size_t ki, size_t kj)
{
	size_t off = kj * p->dil_w;

	return buf + (oh * p->stride_h + ki * p->dil_h) * g->row_len +
	       (off % p->stride_w) * g->phase_len + off / p->stride_w;
}

/*
 * One output's taps summed in ONNX Runtime's order (see sgemm.c): with
 * row nonzero, MLAS's M = 1 kernel (a depthwise conv of multiplier 1 is a
 * one-row GEMM there): rounded products added in groups of 4, 2, 1, each
 * group's sum added to the total; else one fma chain from 0. The bias
 * comes last, as MLAS adds it after the GEMM.
 */
static void
plane_portable(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	       const float *buf, const float *w, float bias, int row, float *y)
{
	size_t ntap = p->kh * p->kw, oh, ow, t;

	for (oh = 0; oh < g->oh; oh++)
		for (ow = 0; ow < g->ow; ow++) {
			float acc = 0.0f, s;

#define X(i) tap_src(p, g, buf, oh, (i) / p->kw, (i) % p->kw)[ow]
#define P(i) (w[i] * X(i))
			if (!row) {
				for (t = 0; t < ntap; t++)
					acc = fmaf(w[t], X(t), acc);
			} else {
				for (t = 0; t + 4 <= ntap; t += 4) {
					s = P(t);
					s = s + P(t + 1);
					s = s + P(t + 2);
					s = s + P(t + 3);
					acc = s + acc;
				}
				if (ntap - t >= 2) {
					s = P(t) + P(t + 1);
					acc = s + acc;
					t += 2;
				}
				if (t < ntap)
					acc = P(t) + acc;
			}
#undef P
#undef X
			y[oh * g->ow + ow] = acc + bias;
		}
}

#ifdef QR_HAVE_AVX512_CODE
#define QR_AVX512 __attribute__((target("avx512f,fma")))

/* 16 outputs of one row from column ow (mask m), in the order above. */
static inline __attribute__((always_inline)) QR_AVX512 __m512
taps16(const float *const *src, const __m512 *wv, size_t ntap, size_t ow,
       __mmask16 m, int row)
{
	__m512 acc = _mm512_setzero_ps(), s;
	size_t t;

#define X(i) _mm512_maskz_loadu_ps(m, src[i] + ow)
#define P(i) _mm512_mul_ps(wv[i], X(i))
	if (!row) {
		for (t = 0; t < ntap; t++)
			acc = _mm512_fmadd_ps(wv[t], X(t), acc);
		return acc;
	}
	for (t = 0; t + 4 <= ntap; t += 4) {
		s = P(t);
		s = _mm512_add_ps(s, P(t + 1));
		s = _mm512_add_ps(s, P(t + 2));
		s = _mm512_add_ps(s, P(t + 3));
		acc = _mm512_add_ps(s, acc);
	}
	if (ntap - t >= 2) {
		s = _mm512_add_ps(P(t), P(t + 1));
		acc = _mm512_add_ps(s, acc);
		t += 2;
	}
	if (t < ntap)
		acc = _mm512_add_ps(P(t), acc);
#undef P
#undef X
	return acc;
}

static QR_AVX512 void
plane_avx512(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	     const float *buf, const float *w, float bias, int row, float *y)
{
	size_t ntap = p->kh * p->kw, oh, ow, t;
	const float *src[64], *tap0[64];
	__m512 wv[64];
	const __m512 b = _mm512_set1_ps(bias);

	/* each tap's run for output row 0; row oh is stride_h rows on */
	for (t = 0; t < ntap && t < 64; t++) {
		wv[t] = _mm512_set1_ps(w[t]);
		tap0[t] = tap_src(p, g, buf, 0, t / p->kw, t % p->kw);
	}
	for (oh = 0; oh < g->oh; oh++) {
		float *yr = y + oh * g->ow;
		size_t step = oh * p->stride_h * g->row_len;

		for (t = 0; t < ntap; t++)
			src[t] = tap0[t] + step;
		for (ow = 0; ow < g->ow; ow += 16) {
			size_t left = g->ow - ow;
			__mmask16 m = left >= 16 ? (__mmask16)0xffff :
				      (__mmask16)((1u << left) - 1);
			__m512 acc = ntap == 9 && row ?
				     taps16(src, wv, 9, ow, m, 1) :
				     taps16(src, wv, ntap, ow, m, row);

			_mm512_mask_storeu_ps(yr + ow, m,
					      _mm512_add_ps(acc, b));
		}
	}
}
#endif

#ifdef QR_HAVE_AVX512_CODE
#define QR_AVX2 __attribute__((target("avx2,fma")))

/* taps16 on 8 lanes, for CPUs without AVX-512: the same order. */
static inline __attribute__((always_inline)) QR_AVX2 __m256
taps8(const float *const *src, const __m256 *wv, size_t ntap, size_t ow,
      __m256i m, int row)
{
	__m256 acc = _mm256_setzero_ps(), s;
	size_t t;

#define X(i) _mm256_maskload_ps(src[i] + ow, m)
#define P(i) _mm256_mul_ps(wv[i], X(i))
	if (!row) {
		for (t = 0; t < ntap; t++)
			acc = _mm256_fmadd_ps(wv[t], X(t), acc);
		return acc;
	}
	for (t = 0; t + 4 <= ntap; t += 4) {
		s = P(t);
		s = _mm256_add_ps(s, P(t + 1));
		s = _mm256_add_ps(s, P(t + 2));
		s = _mm256_add_ps(s, P(t + 3));
		acc = _mm256_add_ps(s, acc);
	}
	if (ntap - t >= 2) {
		s = _mm256_add_ps(P(t), P(t + 1));
		acc = _mm256_add_ps(s, acc);
		t += 2;
	}
	if (t < ntap)
		acc = _mm256_add_ps(P(t), acc);
#undef P
#undef X
	return acc;
}

static QR_AVX2 void
plane_avx2(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	   const float *buf, const float *w, float bias, int row, float *y)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	size_t ntap = p->kh * p->kw, oh, ow, t;
	const float *src[64], *tap0[64];
	__m256 wv[64];
	const __m256 b = _mm256_set1_ps(bias);

	for (t = 0; t < ntap && t < 64; t++) {
		wv[t] = _mm256_set1_ps(w[t]);
		tap0[t] = tap_src(p, g, buf, 0, t / p->kw, t % p->kw);
	}
	for (oh = 0; oh < g->oh; oh++) {
		float *yr = y + oh * g->ow;
		size_t step = oh * p->stride_h * g->row_len;

		for (t = 0; t < ntap; t++)
			src[t] = tap0[t] + step;
		for (ow = 0; ow < g->ow; ow += 8) {
			size_t left = g->ow - ow;
			__m256i m = _mm256_cmpgt_epi32(
				_mm256_set1_epi32((int)(left < 8 ? left : 8)),
				idx);
			__m256 acc = ntap == 9 && row ?
				     taps8(src, wv, 9, ow, m, 1) :
				     taps8(src, wv, ntap, ow, m, row);

			_mm256_maskstore_ps(yr + ow, m, _mm256_add_ps(acc, b));
		}
	}
}

static QR_AVX2 size_t
to_s32_avx2(const float *acc, size_t n, int32_t *out)
{
	size_t i;

	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_si256((__m256i *)(out + i),
				    _mm256_cvttps_epi32(_mm256_loadu_ps(acc + i)));
	return i;
}

static QR_AVX512 size_t
to_s32_avx512(const float *acc, size_t n, int32_t *out)
{
	size_t i;

	for (i = 0; i + 16 <= n; i += 16)
		_mm512_storeu_si512(out + i,
				    _mm512_cvttps_epi32(_mm512_loadu_ps(acc + i)));
	return i;
}
#endif

void
qr_dw_plane(const struct qr_conv_params *p, const struct qr_dw_geom *g,
	    const float *buf, const float *w, float bias, int row, float *y)
{
#ifdef QR_HAVE_AVX512_CODE
	if ((qr_kernels_cpu_features() & QR_CPU_AVX512BW) &&
	    p->kh * p->kw <= 64) {
		plane_avx512(p, g, buf, w, bias, row, y);
		return;
	}
	if ((qr_kernels_cpu_features() & QR_CPU_AVX2) &&
	    p->kh * p->kw <= 64) {
		plane_avx2(p, g, buf, w, bias, row, y);
		return;
	}
#endif
	plane_portable(p, g, buf, w, bias, row, y);
}

void
qr_dw_to_s32(const float *acc, size_t n, int32_t *out)
{
	size_t i = 0;

#ifdef QR_HAVE_AVX512_CODE
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		i = to_s32_avx512(acc, n, out);
	else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		i = to_s32_avx2(acc, n, out);
#endif
	for (; i < n; i++)
		out[i] = (int32_t)acc[i];
}
