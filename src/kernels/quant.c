/*
 * quant: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the
 * com.microsoft QLinearAdd / QLinearMul elementwise ops, each written to
 * give the bits ONNX Runtime's MLAS gives on x86-64 (formulas in
 * kernels.h).
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_HAVE_AVX512_CODE 1
#define QR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define QR_AVX2 __attribute__((target("avx2")))
#endif

static void
qrange(enum qr_qtype t, int64_t *lo, int64_t *hi)
{
	switch (t) {
	case QR_QT_U8: *lo = 0; *hi = 255; break;
	case QR_QT_S8: *lo = -128; *hi = 127; break;
	case QR_QT_U16: *lo = 0; *hi = 65535; break;
	case QR_QT_S16: *lo = -32768; *hi = 32767; break;
	default: *lo = INT32_MIN; *hi = INT32_MAX; break;
	}
}

static void
store(void *y, size_t i, enum qr_qtype t, int64_t v)
{
	switch (t) {
	case QR_QT_U8: ((uint8_t *)y)[i] = (uint8_t)v; break;
	case QR_QT_S8: ((int8_t *)y)[i] = (int8_t)v; break;
	case QR_QT_U16: ((uint16_t *)y)[i] = (uint16_t)v; break;
	case QR_QT_S16: ((int16_t *)y)[i] = (int16_t)v; break;
	default: ((int32_t *)y)[i] = (int32_t)v; break;
	}
}

static int64_t
load(const void *x, size_t i, enum qr_qtype t)
{
	switch (t) {
	case QR_QT_U8: return ((const uint8_t *)x)[i];
	case QR_QT_S8: return ((const int8_t *)x)[i];
	case QR_QT_U16: return ((const uint16_t *)x)[i];
	case QR_QT_S16: return ((const int16_t *)x)[i];
	default: return ((const int32_t *)x)[i];
	}
}

/* One element: x / s, NaN -> lo, clamp to [lo, hi] = [qmin - zp,
 * qmax - zp], round half to even, + zp. */
static int64_t
quant_one(float x, float s, int32_t zp, int64_t qmin, int64_t qmax)
{
	float v = x / s;
	double lo = (double)(qmin - zp), hi = (double)(qmax - zp);
	double d;

	if (qmax - qmin <= 65535) {
		float flo = (float)lo, fhi = (float)hi;

		v = v > flo ? v : flo;
		v = v < fhi ? v : fhi;
		return (int64_t)qr_round_even_small(v) + zp;
	}
	/* int32: bounds are not floats; clamp in double after rounding. */
	d = v > lo ? (double)v : lo;
	d = d < hi ? d : hi;
	return (int64_t)nearbyint(d) + zp;
}

#ifdef QR_HAVE_AVX512_CODE
/* quant_one on 16 lanes for 8-bit types: divps, maxps (NaN gives lo, as
 * the scalar), minps, vcvtps2dq (nearest even; the clamped values are
 * small), + zp, low byte. */
static QR_AVX512 void
quant_row_q8(const float *x, size_t n, float s, int32_t zp, int is_signed,
	     void *y)
{
	const __m512 vs = _mm512_set1_ps(s);
	const __m512 lo = _mm512_set1_ps((float)((is_signed ? -128 : 0) - zp));
	const __m512 hi = _mm512_set1_ps((float)((is_signed ? 127 : 255) - zp));
	const __m512i z = _mm512_set1_epi32(zp);
	uint8_t *d = y;
	size_t i;

	for (i = 0; i < n; i += 16) {
		size_t left = n - i;
		__mmask16 m = left >= 16 ? (__mmask16)0xffff :
			      (__mmask16)((1u << left) - 1);
		__m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), vs);
		__m512i r;

		v = _mm512_max_ps(v, lo);
		v = _mm512_min_ps(v, hi);
		r = _mm512_add_epi32(_mm512_cvtps_epi32(v), z);
		_mm_mask_storeu_epi8(d + i, m, _mm512_cvtepi32_epi8(r));
	}
}

/* y[i] = (float)(x[i] - zp) * s on 16 lanes, 8-bit x; each = 1: s and
 * zp hold a value per element (zp may be NULL), else one for all. */
static QR_AVX512 void
dequant_row_q8(const void *x, size_t n, const float *s, const int32_t *zp,
	       int each, int is_signed, float *y)
{
	const __m512 vs = _mm512_set1_ps(s[0]);
	const __m512i z = _mm512_set1_epi32(zp ? zp[0] : 0);
	const uint8_t *src = x;
	size_t i;

	for (i = 0; i < n; i += 16) {
		size_t left = n - i;
		__mmask16 m = left >= 16 ? (__mmask16)0xffff :
			      (__mmask16)((1u << left) - 1);
		__m128i b = _mm_maskz_loadu_epi8(m, src + i);
		__m512i v = is_signed ? _mm512_cvtepi8_epi32(b) :
					_mm512_cvtepu8_epi32(b);

		if (!each)
			v = _mm512_sub_epi32(v, z);
		else if (zp != NULL)
			v = _mm512_sub_epi32(v, _mm512_maskz_loadu_epi32(
				m, zp + i));
		_mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(
			_mm512_cvtepi32_ps(v),
			each ? _mm512_maskz_loadu_ps(m, s + i) : vs));
	}
}

/* quant_row_q8 on 8 lanes (CPUs without AVX-512), the same steps;
 * returns the elements done, a multiple of 8. */
static QR_AVX2 size_t
quant_row_q8_avx2(const float *x, size_t n, float s, int32_t zp,
		  int is_signed, void *y)
{
	const __m256 vs = _mm256_set1_ps(s);
	const __m256 lo = _mm256_set1_ps((float)((is_signed ? -128 : 0) - zp));
	const __m256 hi = _mm256_set1_ps((float)((is_signed ? 127 : 255) - zp));
	const __m256i z = _mm256_set1_epi32(zp);
	const __m256i low_bytes = _mm256_setr_epi8(
		0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
		0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	uint8_t *d = y;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), vs);
		__m256i r;
		uint32_t w0, w1;

		v = _mm256_max_ps(v, lo);
		v = _mm256_min_ps(v, hi);
		r = _mm256_add_epi32(_mm256_cvtps_epi32(v), z);
		r = _mm256_shuffle_epi8(r, low_bytes);
		w0 = (uint32_t)_mm_cvtsi128_si32(_mm256_castsi256_si128(r));
		w1 = (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(r, 1));
		memcpy(d + i, &w0, 4);
		memcpy(d + i + 4, &w1, 4);
	}
	return i;
}

/* dequant_row_q8 on 8 lanes; returns the elements done. */
static QR_AVX2 size_t
dequant_row_q8_avx2(const void *x, size_t n, const float *s,
		    const int32_t *zp, int each, int is_signed, float *y)
{
	const __m256 vs = _mm256_set1_ps(s[0]);
	const __m256i z = _mm256_set1_epi32(zp ? zp[0] : 0);
	const uint8_t *src = x;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(src + i));
		__m256i v = is_signed ? _mm256_cvtepi8_epi32(b) :
					_mm256_cvtepu8_epi32(b);

		if (!each)
			v = _mm256_sub_epi32(v, z);
		else if (zp != NULL)
			v = _mm256_sub_epi32(v, _mm256_loadu_si256(
				(const __m256i *)(zp + i)));
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(v),
			each ? _mm256_loadu_ps(s + i) : vs));
	}
	return i;
}
#endif

/* 2: the AVX-512 rows above; 1: their AVX2 forms, then scalar; 0:
 * scalar. */
static int
fast_q8(enum qr_qtype t)
{
#ifdef QR_HAVE_AVX512_CODE
	if (t != QR_QT_U8 && t != QR_QT_S8)
		return 0;
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		return 2;
	return (qr_kernels_cpu_features() & QR_CPU_AVX2) ? 1 : 0;
#else
	(void)t;
	return 0;
#endif
}

void
qr_quantize_f32(const float *x, size_t outer, size_t axis_len, size_t inner,
		const float *scale, const int32_t *zp, enum qr_qtype t,
		void *y)
{
	int64_t qmin, qmax;
	size_t o, a, i, at = 0;
	int fast = fast_q8(t);

	if (inner == 0)
		return; /* no elements: x and y may be NULL */
	qrange(t, &qmin, &qmax);
	for (o = 0; o < outer; o++) {
		for (a = 0; a < axis_len; a++) {
			float s = scale[a];
			int32_t z = zp ? zp[a] : 0;

			i = 0;
#ifdef QR_HAVE_AVX512_CODE
			if (fast == 2) {
				quant_row_q8(x + at, inner, s, z,
					     t == QR_QT_S8, (uint8_t *)y + at);
				at += inner;
				continue;
			}
			if (fast == 1) {
				i = quant_row_q8_avx2(x + at, inner, s, z,
						      t == QR_QT_S8,
						      (uint8_t *)y + at);
				at += i;
			}
#endif
			for (; i < inner; i++, at++)
				store(y, at, t,
				      quant_one(x[at], s, z, qmin, qmax));
		}
	}
	(void)fast;
}

void
qr_quantize_f32_nan_zp(const float *x, size_t outer, size_t axis_len,
		       size_t inner, const float *scale, const int32_t *zp,
		       enum qr_qtype t, void *y)
{
	size_t o, a, i, at = 0;

	qr_quantize_f32(x, outer, axis_len, inner, scale, zp, t, y);
	for (o = 0; o < outer; o++)
		for (a = 0; a < axis_len; a++) {
			float s = scale[a];

			for (i = 0; i < inner; i++, at++)
				if (isnan(x[at] / s))
					store(y, at, t, zp ? zp[a] : 0);
		}
}

void
qr_dequantize_f32(const void *x, enum qr_qtype t, size_t outer,
		  size_t axis_len, size_t inner, const float *scale,
		  const int32_t *zp, float *y)
{
	size_t o, a, i, at = 0;
	int fast = fast_q8(t);

	if (inner == 0)
		return; /* no elements: x and y may be NULL */
	for (o = 0; o < outer; o++) {
		for (a = 0; a < axis_len; a++) {
			float s = scale[a];
			int64_t z = zp ? zp[a] : 0;

			i = 0;
#ifdef QR_HAVE_AVX512_CODE
			if (fast == 2) {
				dequant_row_q8((const uint8_t *)x + at, inner,
					       scale + a, zp ? zp + a : NULL,
					       0, t == QR_QT_S8, y + at);
				at += inner;
				continue;
			}
			if (fast == 1) {
				i = dequant_row_q8_avx2(
					(const uint8_t *)x + at, inner,
					scale + a, zp ? zp + a : NULL, 0,
					t == QR_QT_S8, y + at);
				at += i;
			}
#endif
			for (; i < inner; i++, at++)
				y[at] = (float)(int32_t)(load(x, at, t) - z) *
					s;
		}
	}
	(void)fast;
}

size_t
qr_qtype_size(enum qr_qtype t)
{
	return t == QR_QT_S32 ? 4 : t == QR_QT_U16 || t == QR_QT_S16 ? 2 : 1;
}

void
qr_dequantize_cols_f32(const void *x, enum qr_qtype t, size_t n,
		       const float *scale, const int32_t *zp, float *y)
{
	size_t i;

	i = 0;
#ifdef QR_HAVE_AVX512_CODE
	if (fast_q8(t) == 2) {
		dequant_row_q8(x, n, scale, zp, 1, t == QR_QT_S8, y);
		return;
	}
	if (fast_q8(t) == 1)
		i = dequant_row_q8_avx2(x, n, scale, zp, 1, t == QR_QT_S8, y);
#endif
	for (; i < n; i++)
		y[i] = (float)(int32_t)(load(x, i, t) - (zp ? zp[i] : 0)) *
		       scale[i];
}

void
qr_dynamic_quantize_u8(const float *x, size_t n, uint8_t *y, float *scale,
		       uint8_t *zp)
{
	float lo = 0.0f, hi = 0.0f, s, z0;
	int32_t z;
	size_t i;

	for (i = 0; i < n; i++) {
		lo = x[i] < lo ? x[i] : lo;
		hi = x[i] > hi ? x[i] : hi;
	}
	s = hi == lo ? 1.0f : (hi - lo) / 255.0f;
	z0 = 0.0f - lo / s;
	z0 = z0 < 255.0f ? z0 : 255.0f;
	z0 = z0 > 0.0f ? z0 : 0.0f;
	z = (int32_t)qr_round_even_small(z0);
	*scale = s;
	*zp = (uint8_t)z;
	qr_quantize_f32(x, 1, 1, n, &s, &z, QR_QT_U8, y);
}

static int32_t
sat8(int32_t v, enum qr_qtype t)
{
	int32_t lo = t == QR_QT_S8 ? -128 : 0, hi = t == QR_QT_S8 ? 127 : 255;

	return v < lo ? lo : v > hi ? hi : v;
}

#ifdef QR_HAVE_AVX512_CODE
/* The both-vectors loop of qr_qlinear_add on 16 lanes (fused
 * multiply-adds as the scalar fmaf; vcvtps2dq gives INT32_MIN out of
 * range, as qr_cvt_even_s32); returns the elements done. */
static __attribute__((target("avx512f,avx512bw,avx512vl,fma"))) size_t
qadd_avx512(const void *a, const void *b, float ra, float rb, float k,
	    int is_signed, void *y, size_t n)
{
	const __m512 va = _mm512_set1_ps(ra), vb = _mm512_set1_ps(rb);
	const __m512 vk = _mm512_set1_ps(k);
	const __m512i lo = _mm512_set1_epi32(is_signed ? -128 : 0);
	const __m512i hi = _mm512_set1_epi32(is_signed ? 127 : 255);
	const uint8_t *pa = a, *pb = b;
	uint8_t *d = y;
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m128i xa = _mm_loadu_si128((const __m128i *)(pa + i));
		__m128i xb = _mm_loadu_si128((const __m128i *)(pb + i));
		__m512 fa = _mm512_cvtepi32_ps(is_signed ?
				_mm512_cvtepi8_epi32(xa) :
				_mm512_cvtepu8_epi32(xa));
		__m512 fb = _mm512_cvtepi32_ps(is_signed ?
				_mm512_cvtepi8_epi32(xb) :
				_mm512_cvtepu8_epi32(xb));
		__m512 v = _mm512_fmadd_ps(fa, va, _mm512_fmadd_ps(fb, vb, vk));
		__m512i r = _mm512_cvtps_epi32(v);

		r = _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
		_mm_storeu_si128((__m128i *)(d + i), _mm512_cvtepi32_epi8(r));
	}
	return i;
}

/* qadd_avx512 on 8 lanes (CPUs without AVX-512), the same operations;
 * returns the elements done. */
static __attribute__((target("avx2,fma"))) size_t
qadd_avx2(const void *a, const void *b, float ra, float rb, float k,
	  int is_signed, void *y, size_t n)
{
	const __m256 va = _mm256_set1_ps(ra), vb = _mm256_set1_ps(rb);
	const __m256 vk = _mm256_set1_ps(k);
	const __m256i lo = _mm256_set1_epi32(is_signed ? -128 : 0);
	const __m256i hi = _mm256_set1_epi32(is_signed ? 127 : 255);
	const __m256i low_bytes = _mm256_setr_epi8(
		0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
		0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	const uint8_t *pa = a, *pb = b;
	uint8_t *d = y;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m128i xa = _mm_loadl_epi64((const __m128i *)(pa + i));
		__m128i xb = _mm_loadl_epi64((const __m128i *)(pb + i));
		__m256 fa = _mm256_cvtepi32_ps(is_signed ?
				_mm256_cvtepi8_epi32(xa) :
				_mm256_cvtepu8_epi32(xa));
		__m256 fb = _mm256_cvtepi32_ps(is_signed ?
				_mm256_cvtepi8_epi32(xb) :
				_mm256_cvtepu8_epi32(xb));
		__m256 v = _mm256_fmadd_ps(fa, va, _mm256_fmadd_ps(fb, vb, vk));
		__m256i r = _mm256_cvtps_epi32(v);
		uint32_t w0, w1;

		r = _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
		r = _mm256_shuffle_epi8(r, low_bytes);
		w0 = (uint32_t)_mm_cvtsi128_si32(_mm256_castsi256_si128(r));
		w1 = (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(r, 1));
		memcpy(d + i, &w0, 4);
		memcpy(d + i + 4, &w1, 4);
	}
	return i;
}
#endif

void
qr_qlinear_add(const void *a, size_t a_step, float sa, int32_t za,
	       const void *b, size_t b_step, float sb, int32_t zb, float sc,
	       int32_t zc, enum qr_qtype t, void *y, size_t n)
{
	float ra = sa / sc, rb = sb / sc;
	/* ORT's build contracts ra * za + rb * zb into one fused
	 * multiply-add; rounding the two products apart moved 6 of the
	 * 65536 (a, b) pairs of one mnasnet QLinearAdd by a step */
	float k = (float)zc - fmaf(ra, (float)za, rb * (float)zb);
	size_t i;

	QR_ASSERT(t == QR_QT_U8 || t == QR_QT_S8);
	if (a_step == 0) {
		float av = (float)load(a, 0, t) * ra;

		k = k + av;
		for (i = 0; i < n; i++) {
			float bv = (float)load(b, i * b_step, t);

			store(y, i, t, sat8(qr_cvt_even_s32(fmaf(bv, rb, k)), t));
		}
	} else if (b_step == 0) {
		float bv = (float)load(b, 0, t) * rb;

		k = k + bv;
		for (i = 0; i < n; i++) {
			float av = (float)load(a, i * a_step, t);

			store(y, i, t, sat8(qr_cvt_even_s32(fmaf(av, ra, k)), t));
		}
	} else {
		i = 0;
#ifdef QR_HAVE_AVX512_CODE
		if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
			i = qadd_avx512(a, b, ra, rb, k, t == QR_QT_S8, y, n);
		else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
			i = qadd_avx2(a, b, ra, rb, k, t == QR_QT_S8, y, n);
#endif
		for (; i < n; i++) {
			float av = (float)load(a, i, t);
			float bv = (float)load(b, i, t);
			float v = fmaf(av, ra, fmaf(bv, rb, k));

			store(y, i, t, sat8(qr_cvt_even_s32(v), t));
		}
	}
}

#ifdef QR_HAVE_AVX512_CODE
/* 16 codes from p (step 1), or one code repeated (step 0), minus zp. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl")))
__m512i
qmul_load(const uint8_t *p, size_t step, int is_signed, __m512i zp)
{
	__m128i x = step ? _mm_loadu_si128((const __m128i *)p) :
		    _mm_set1_epi8((char)p[0]);

	return _mm512_sub_epi32(is_signed ? _mm512_cvtepi8_epi32(x) :
				_mm512_cvtepu8_epi32(x), zp);
}

/* qr_qlinear_mul's loop on 16 lanes: the integer product (exact), to
 * float, times r, plus the zero point, vcvtps2dq, saturated; returns the
 * elements done. */
static QR_AVX512 size_t
qmul_avx512(const uint8_t *a, size_t a_step, int32_t za, const uint8_t *b,
	    size_t b_step, int32_t zb, float r, int32_t zc, int is_signed,
	    uint8_t *y, size_t n)
{
	const __m512i vza = _mm512_set1_epi32(za), vzb = _mm512_set1_epi32(zb);
	const __m512i lo = _mm512_set1_epi32(is_signed ? -128 : 0);
	const __m512i hi = _mm512_set1_epi32(is_signed ? 127 : 255);
	const __m512 vr = _mm512_set1_ps(r), vzc = _mm512_set1_ps((float)zc);
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512i p = _mm512_mullo_epi32(
			qmul_load(a + i * a_step, a_step, is_signed, vza),
			qmul_load(b + i * b_step, b_step, is_signed, vzb));
		__m512i q = _mm512_cvtps_epi32(_mm512_add_ps(_mm512_mul_ps(
			_mm512_cvtepi32_ps(p), vr), vzc));

		q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
		_mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(q));
	}
	return i;
}
#endif

void
qr_qlinear_mul(const void *a, size_t a_step, float sa, int32_t za,
	       const void *b, size_t b_step, float sb, int32_t zb, float sc,
	       int32_t zc, enum qr_qtype t, void *y, size_t n)
{
	float sab = sa * sb;
	float r = sab / sc;
	size_t i = 0;

	QR_ASSERT(t == QR_QT_U8 || t == QR_QT_S8);
#ifdef QR_HAVE_AVX512_CODE
	if ((qr_kernels_cpu_features() & QR_CPU_AVX512BW) && a_step <= 1 &&
	    b_step <= 1)
		i = qmul_avx512(a, a_step, za, b, b_step, zb, r, zc,
				t == QR_QT_S8, y, n);
#endif
	for (; i < n; i++) {
		int32_t pa = (int32_t)load(a, i * a_step, t) - za;
		int32_t pb = (int32_t)load(b, i * b_step, t) - zb;
		float v = (float)(pa * pb) * r + (float)zc;

		/* the zero point added in float before cvtps2dq, then packs */
		store(y, i, t, sat8(qr_cvt_even_s32(v), t));
	}
}
