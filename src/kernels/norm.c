/* norm: Softmax, the layer norms, BatchNormalization and
 * InstanceNormalization on rows of floats. qr_softmax_row_ort_f32 and
 * qr_norm_row_ort_f32 give ONNX Runtime's bits; the others accumulate
 * statistics in double, for float-vs-float comparisons. */
#include "kernels/kernels-int.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

void
qr_softmax_f32(const float *x, size_t rows, size_t n, float *y)
{
	size_t r, i;

	for (r = 0; r < rows; r++) {
		const float *xr = x + r * n;
		float *yr = y + r * n;
		float m = -INFINITY;
		double s = 0.0;

		for (i = 0; i < n; i++)
			m = xr[i] > m ? xr[i] : m;
		for (i = 0; i < n; i++) {
			yr[i] = expf(xr[i] - m);
			s += yr[i];
		}
		for (i = 0; i < n; i++)
			yr[i] = (float)(yr[i] / s);
	}
}

/* exp(v) as MLAS's AVX-512 softmax computes it
 * (MlasComputeSumExpF32KernelAvx512F): v clamped below at -103.97 (a NaN
 * kept, as MAXPS does), a reduction to 2^m * exp(r) with a two-part
 * ln 2, a degree-6 polynomial in fused multiply-adds, and 2^m applied by
 * VSCALEFPS: one rounding, so a masked attention score (-100 below the
 * row's max) gives a denormal, not 0. */
static float
mlas_exp(float v)
{
	const float bias = 12582912.0f; /* 1.5 * 2^23: rounds to an integer */
	float biased, m;

	v = -103.9720840454f > v ? -103.9720840454f : v;
	if (isnan(v))
		return v; /* VSCALEFPS gives NaN; (int)NaN would be undefined */
	biased = fmaf(v, 1.44269504088896341f, bias);
	m = biased - bias;
	v = fmaf(m, -6.93145752e-1f, v);
	v = fmaf(m, -1.42860677e-6f, v);
	return ldexpf(qr_exp_poly(v), (int)m);
}

/* exp(v) as MLAS's AVX2 softmax computes it
 * (MlasComputeSumExpF32KernelFma3): v clamped below at -88.38, the same
 * reduction and polynomial, and 2^m made by shifting the rounded value's
 * bits into the exponent field and multiplying once, so nothing below
 * 2^-126 survives (a masked score gives 0, not a denormal). */
static float
mlas_exp_fma3(float v)
{
	const float bias = 12582912.0f;
	float biased, m, scale;
	uint32_t u;

	v = -88.3762626647949f > v ? -88.3762626647949f : v;
	biased = fmaf(v, 1.44269504088896341f, bias);
	m = biased - bias;
	v = fmaf(m, -6.93145752e-1f, v);
	v = fmaf(m, -1.42860677e-6f, v);
	memcpy(&u, &biased, sizeof u);
	u = (u << 23) + 0x3F800000u;
	memcpy(&scale, &u, sizeof scale);
	return qr_exp_poly(v) * scale;
}

/*
 * One softmax row in ONNX Runtime's order on a CPU with AVX-512F (MLAS's
 * AVX-512 kernels: checked bit for bit against onnxruntime-node 1.30 on
 * rows of 1 to 1000 values and on swin_t's masked attention, as a QDQ
 * model needs to quantize attention probabilities as ORT does): e_i =
 * mlas_exp(x_i - max); the sum over two 8-lane accumulators taking 16
 * values a step, the last partial step masked
 * (its first 8 values to the first accumulator, the rest to the second;
 * 8 or fewer all to the first); the accumulators added lane by lane, then
 * the lanes in adjacent pairs, pairs of pairs, and the last two; y_i =
 * e_i * (1 / sum). x and y may be the same array.
 */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,fma")))

/* mlas_exp on 16 lanes, the same steps. */
static AVX512 __m512
mlas_exp16(__m512 v)
{
	const __m512 bias = _mm512_set1_ps(12582912.0f);
	__m512 biased, m, p;

	v = _mm512_max_ps(_mm512_set1_ps(-103.9720840454f), v);
	biased = _mm512_fmadd_ps(v, _mm512_set1_ps(1.44269504088896341f),
				 bias);
	m = _mm512_sub_ps(biased, bias);
	v = _mm512_fmadd_ps(m, _mm512_set1_ps(-6.93145752e-1f), v);
	v = _mm512_fmadd_ps(m, _mm512_set1_ps(-1.42860677e-6f), v);
	p = _mm512_set1_ps(0x1.694000p-10f);
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(0x1.125edcp-7f));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(0x1.555b5ap-5f));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(0x1.555450p-3f));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(0x1.fffff6p-2f));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(p, m);
}

/* e_i = exp(x_i + negmax) into y and their sum, as MLAS's AVX-512F
 * MlasComputeSumExpF32Kernel: the two 8-lane accumulators of
 * qr_softmax_row_ort_f32 are the low and high halves of one 16-lane sum
 * (a masked-off lane adds nothing, and +0 added to a sum of exps changes
 * no bit). */
static AVX512 float
sumexp_avx512(const float *x, size_t n, float negmax, float *y)
{
	__m512 nm = _mm512_set1_ps(negmax), acc = _mm512_setzero_ps();
	float a[16];
	size_t i, l;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512 e = mlas_exp16(_mm512_add_ps(_mm512_loadu_ps(x + i),
						    nm));

		_mm512_storeu_ps(y + i, e);
		acc = _mm512_add_ps(acc, e);
	}
	if (i < n) {
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1);
		__m512 e = mlas_exp16(_mm512_add_ps(_mm512_maskz_loadu_ps(
			k, x + i), nm));

		_mm512_mask_storeu_ps(y + i, k, e);
		acc = _mm512_mask_add_ps(acc, k, acc, e);
	}
	_mm512_storeu_ps(a, acc);
	for (l = 0; l < 8; l++)
		a[l] += a[8 + l];
	return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* qr_softmax_row_ort_f32 on 16 lanes. */
static AVX512 void
softmax_row_avx512(const float *x, size_t n, float *y)
{
	__m512 mx16 = _mm512_set1_ps(-FLT_MAX);
	float mx, a[16], rc;
	size_t i, l;

	for (i = 0; i + 16 <= n; i += 16)
		mx16 = _mm512_max_ps(_mm512_loadu_ps(x + i), mx16);
	_mm512_storeu_ps(a, mx16);
	for (mx = a[0], l = 1; l < 16; l++)
		mx = a[l] > mx ? a[l] : mx;
	for (; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	rc = 1.0f / sumexp_avx512(x, n, -mx, y);
	mx16 = _mm512_set1_ps(rc);
	for (i = 0; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i),
						      mx16));
	for (; i < n; i++)
		y[i] *= rc;
}
#undef AVX512

#define AVX2 __attribute__((target("avx2,fma")))

/* mlas_exp_fma3 on 8 lanes, the same steps. */
static AVX2 __m256
mlas_exp_fma3_8(__m256 v)
{
	const __m256 bias = _mm256_set1_ps(12582912.0f);
	__m256 biased, m, p;
	__m256i e;

	v = _mm256_max_ps(_mm256_set1_ps(-88.3762626647949f), v);
	biased = _mm256_fmadd_ps(v, _mm256_set1_ps(1.44269504088896341f),
				 bias);
	m = _mm256_sub_ps(biased, bias);
	v = _mm256_fmadd_ps(m, _mm256_set1_ps(-6.93145752e-1f), v);
	v = _mm256_fmadd_ps(m, _mm256_set1_ps(-1.42860677e-6f), v);
	e = _mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(biased), 23),
			     _mm256_set1_epi32(0x3F800000));
	p = _mm256_set1_ps(0x1.694000p-10f);
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(0x1.125edcp-7f));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(0x1.555b5ap-5f));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(0x1.555450p-3f));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(0x1.fffff6p-2f));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(1.0f));
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* sumexp as MLAS's AVX2/FMA3 kernel on 8 lanes: the last partial step
 * goes lane by lane into the first lanes (MLAS's masked step adds +0 to
 * the others, which changes no bit of a sum of exps). */
static AVX2 float
sumexp_avx2(const float *x, size_t n, float negmax, float *y)
{
	__m256 nm = _mm256_set1_ps(negmax), acc = _mm256_setzero_ps();
	float a[8];
	size_t i, l;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 e = mlas_exp_fma3_8(_mm256_add_ps(_mm256_loadu_ps(x + i),
							 nm));

		_mm256_storeu_ps(y + i, e);
		acc = _mm256_add_ps(acc, e);
	}
	_mm256_storeu_ps(a, acc);
	for (l = 0; i + l < n; l++) {
		y[i + l] = mlas_exp_fma3(x[i + l] + negmax);
		a[l] += y[i + l];
	}
	return ((a[4] + a[5]) + (a[6] + a[7])) + ((a[0] + a[1]) + (a[2] + a[3]));
}

/* softmax_row_fma3 on 8 lanes. */
static AVX2 void
softmax_row_avx2(const float *x, size_t n, float *y)
{
	__m256 mx8 = _mm256_set1_ps(-FLT_MAX);
	float mx, a[8], rc;
	size_t i, l;

	for (i = 0; i + 8 <= n; i += 8)
		mx8 = _mm256_max_ps(_mm256_loadu_ps(x + i), mx8);
	_mm256_storeu_ps(a, mx8);
	for (mx = a[0], l = 1; l < 8; l++)
		mx = a[l] > mx ? a[l] : mx;
	for (; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	rc = 1.0f / sumexp_avx2(x, n, -mx, y);
	mx8 = _mm256_set1_ps(rc);
	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i),
						      mx8));
	for (; i < n; i++)
		y[i] *= rc;
}
#undef AVX2
#endif

/*
 * One softmax row as ONNX Runtime computes it on a CPU without AVX-512F
 * (MLAS's AVX2/FMA3 exp-sum; checked bit for bit against
 * onnxruntime-node 1.30 on an AMD EPYC with AVX2): e_i = mlas_exp_fma3(x_i
 * - max); the sum on one 8-lane accumulator taking 8 values a step (the
 * last step masked), its lanes then added in adjacent pairs and pairs of
 * pairs, the upper half's total plus the lower's; y_i = e_i * (1 / sum).
 * sumexp_fma3 is its exp-sum (e_i into y, the sum returned).
 */
static float
sumexp_fma3(const float *x, size_t n, float negmax, float *y)
{
	float a[8] = {0};
	size_t i;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		return sumexp_avx2(x, n, negmax, y);
#endif
	for (i = 0; i < n; i++) {
		y[i] = mlas_exp_fma3(x[i] + negmax);
		a[i % 8] += y[i];
	}
	return ((a[4] + a[5]) + (a[6] + a[7])) + ((a[0] + a[1]) + (a[2] + a[3]));
}

static void
softmax_row_fma3(const float *x, size_t n, float *y)
{
	float mx = -FLT_MAX, rc;
	size_t i;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX2) {
		softmax_row_avx2(x, n, y);
		return;
	}
#endif
	for (i = 0; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	rc = 1.0f / sumexp_fma3(x, n, -mx, y);
	for (i = 0; i < n; i++)
		y[i] *= rc;
}

/* sumexp in the AVX-512F kernel's order, in portable C. */
static float
sumexp_512(const float *x, size_t n, float negmax, float *y)
{
	float a0[8] = {0}, a1[8] = {0};
	size_t i, l;

	for (i = 0; i < n; i++)
		y[i] = mlas_exp(x[i] + negmax);
	for (i = 0; i + 16 <= n; i += 16)
		for (l = 0; l < 8; l++) {
			a0[l] += y[i + l];
			a1[l] += y[i + 8 + l];
		}
	for (l = 0; i + l < n; l++) {
		if (l < 8)
			a0[l] += y[i + l];
		else
			a1[l - 8] += y[i + l];
	}
	for (l = 0; l < 8; l++)
		a0[l] += a1[l];
	return ((a0[0] + a0[1]) + (a0[2] + a0[3])) +
	       ((a0[4] + a0[5]) + (a0[6] + a0[7]));
}

float
qr_sumexp_ort_f32(const float *x, size_t n, float negmax, float *y)
{
	if (!(qr_kernels_ort_traits() & QR_ORT_SUMEXP_AVX512))
		return sumexp_fma3(x, n, negmax, y);
#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		return sumexp_avx512(x, n, negmax, y);
#endif
	return sumexp_512(x, n, negmax, y);
}

void
qr_softmax_row_ort_f32(const float *x, size_t n, float *y)
{
	float mx = -FLT_MAX, rc;
	size_t i;

	if (!(qr_kernels_ort_traits() & QR_ORT_SUMEXP_AVX512)) {
		softmax_row_fma3(x, n, y);
		return;
	}
#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW) {
		softmax_row_avx512(x, n, y);
		return;
	}
#endif
	for (i = 0; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	rc = 1.0f / sumexp_512(x, n, -mx, y);
	for (i = 0; i < n; i++)
		y[i] *= rc;
}

/*
 * The sum of n floats as ONNX Runtime's ReduceSum/ReduceMean compute it
 * over contiguous values (Eigen's vectorized redux with SSE packets of
 * 4; checked bit for bit against onnxruntime-node 1.30 on rows of 1 to
 * 1000): packets start at the first 16-byte-aligned value, so the order
 * depends on x's address as Eigen's does; two packet accumulators take
 * 8 values a step, then a last single packet; the accumulators are added
 * and reduced as (l0 + l2) + (l1 + l3); then the values before the
 * aligned start and those after the packets are added one by one. With
 * no whole packet, a plain left-to-right sum.
 */
float
qr_sum_ort_f32(const float *x, size_t n)
{
	size_t a = ((16 - ((uintptr_t)x & 15)) & 15) / sizeof *x;
	size_t size, al, al2, i, l;
	float p0[4], p1[4], s;

	if (n == 0)
		return 0.0f;
	a = a < n ? a : n;
	size = n - a;
	al = size / 4 * 4;
	al2 = size / 8 * 8;
	if (al == 0) {
		for (s = x[0], i = 1; i < n; i++)
			s += x[i];
		return s;
	}
	memcpy(p0, x + a, sizeof p0);
	if (al > 4) {
		memcpy(p1, x + a + 4, sizeof p1);
		for (i = a + 8; i < a + al2; i += 8)
			for (l = 0; l < 4; l++) {
				p0[l] += x[i + l];
				p1[l] += x[i + 4 + l];
			}
		for (l = 0; l < 4; l++)
			p0[l] += p1[l];
		if (al > al2)
			for (l = 0; l < 4; l++)
				p0[l] += x[a + al2 + l];
	}
	s = (p0[0] + p0[2]) + (p0[1] + p0[3]);
	for (i = 0; i < a; i++)
		s += x[i];
	for (i = a + al; i < n; i++)
		s += x[i];
	return s;
}

/* Population mean and variance of n floats, two passes. */
static void
stats(const float *x, size_t n, double *mean, double *var)
{
	double s = 0.0, q = 0.0;
	size_t i;

	for (i = 0; i < n; i++)
		s += x[i];
	s = n ? s / (double)n : 0.0;
	for (i = 0; i < n; i++)
		q += (x[i] - s) * (x[i] - s);
	*mean = s;
	*var = n ? q / (double)n : 0.0;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* sumsq_ort's 8 lanes and mean_ort's 4 on AVX2: the same operations
 * lane by lane, so the same bits. */
static __attribute__((target("avx2,fma"))) void
sumsq_lanes_avx2(const float *x, size_t n, float m, float *a)
{
	__m256 acc = _mm256_setzero_ps(), mm = _mm256_set1_ps(m), d;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		d = _mm256_sub_ps(_mm256_loadu_ps(x + i), mm);
		acc = _mm256_fmadd_ps(d, d, acc);
	}
	_mm256_storeu_ps(a, acc);
}

static __attribute__((target("avx2,fma"))) void
sum_lanes_avx2(const float *x, size_t n, double *a)
{
	__m256d acc = _mm256_setzero_pd();
	size_t i;

	for (i = 0; i + 4 <= n; i += 4)
		acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
	_mm256_storeu_pd(a, acc);
}
#endif

/*
 * ONNX Runtime 1.30's float layer norms on one row (its CPU execution
 * provider; checked bit for bit against onnxruntime-node 1.30 on rows of
 * 1 to 2049 values of spread scales, with cancelling values, with and
 * without beta, skip and bias: tests/ort_norm.sh). A report equals ONNX
 * Runtime's only if every rounding happens where ORT's does, so each
 * kind keeps ORT's own order, which differs by op and row length:
 *
 *   Welford (SkipLayerNormalization; LayerNormalization on rows under
 *     8): in float, in order, d = x_i - m, m += d / (i + 1),
 *     M2 += d * (x_i - m); sd = sqrt(M2 / n + eps);
 *     y = (x - m) / sd * gamma + beta, two roundings each.
 *   two passes (LayerNormalization on rows of 8 or more): the mean in
 *     double over 4 lanes taking 4 values a step, the lanes added as
 *     (l0 + l2) + (l1 + l3), the last n % 4 values one by one, divided
 *     by n and rounded to float; the sum of squares of d = x_i - mean by
 *     sumsq_ort; inv = 1 / sqrt(sum / n + eps) in float;
 *     y = fma((x - mean) * inv, gamma, beta), or (x - mean) * inv * gamma.
 *   RMS, vector (SimplifiedLayerNormalization on rows of 16 or more):
 *     inv = 1 / sqrt(sumsq_ort(x) / n + eps); y = x * inv * gamma.
 *   RMS, scalar (SkipSimplifiedLayerNormalization; Simplified on rows
 *     under 16): sum of x_i * x_i in float in order (products rounded);
 *     rms = sqrt(sum / n + eps); y = x / rms * gamma; inv = 1 / rms.
 *   double (LayerNormalization with its scale or bias broadcast): the
 *     sum and the sum of squares in double, in order;
 *     sd = sqrt(sumsq / n - mean^2 + eps); y = (x - mean) / sd * gamma
 *     + beta (+ 0 without) in double, rounded once.
 *
 * n converts to float before dividing, as ORT's int does.
 */

/* Sum of (x_i - m)^2 as ORT's vector layer norms take it: 8 float lanes
 * of fused multiply-adds, 8 values a step; the lanes folded in halves
 * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)); then 4 more
 * values, if there are, as rounded products added in order; the last
 * ones fused into the sum one by one. */
static float
sumsq_ort(const float *x, size_t n, float m)
{
	float a[8] = {0}, s, d;
	size_t i = 0, l;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		sumsq_lanes_avx2(x, n, m, a);
	else
#endif
		for (; i + 8 <= n; i += 8)
			for (l = 0; l < 8; l++) {
				d = x[i + l] - m;
				a[l] = fmaf(d, d, a[l]);
			}
	i = n / 8 * 8;
	s = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
	if (i + 4 <= n)
		for (l = 0; l < 4; l++, i++) {
			d = x[i] - m;
			s += d * d;
		}
	for (; i < n; i++) {
		d = x[i] - m;
		s = fmaf(d, d, s);
	}
	return s;
}

/* The mean of the two-pass layer norm (above), rounded to float. */
static float
mean_ort(const float *x, size_t n)
{
	double a[4] = {0}, s;
	size_t i = 0, l;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		sum_lanes_avx2(x, n, a);
	else
#endif
		for (; i + 4 <= n; i += 4)
			for (l = 0; l < 4; l++)
				a[l] += x[i + l];
	i = n / 4 * 4;
	s = (a[0] + a[2]) + (a[1] + a[3]);
	for (; i < n; i++)
		s += x[i];
	return (float)(s / (double)n);
}

static void
layernorm_welford(const float *x, size_t n, const float *gamma,
		  const float *beta, float eps, float *y, float *mean_out,
		  float *inv_out)
{
	float m = 0.0f, m2 = 0.0f, d, sd;
	size_t i;

	for (i = 0; i < n; i++) {
		d = x[i] - m;
		m += d / (float)(i + 1);
		m2 += d * (x[i] - m);
	}
	sd = sqrtf(m2 / (float)n + eps);
	for (i = 0; i < n; i++) {
		float v = (x[i] - m) / sd * gamma[i];

		y[i] = beta ? v + beta[i] : v;
	}
	*mean_out = m;
	*inv_out = 1.0f / sd;
}

static void
layernorm_two_pass(const float *x, size_t n, const float *gamma,
		   const float *beta, float eps, float *y, float *mean_out,
		   float *inv_out)
{
	float m = mean_ort(x, n);
	float inv = 1.0f / sqrtf(sumsq_ort(x, n, m) / (float)n + eps);
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = beta ? fmaf((x[i] - m) * inv, gamma[i], beta[i]) :
			      (x[i] - m) * inv * gamma[i];
	*mean_out = m;
	*inv_out = inv;
}

static void
rmsnorm_scalar(const float *x, size_t n, const float *gamma, float eps,
	       float *y, float *inv_out)
{
	float s = 0.0f, rms;
	size_t i;

	for (i = 0; i < n; i++)
		s += x[i] * x[i];
	rms = sqrtf(s / (float)n + eps);
	for (i = 0; i < n; i++)
		y[i] = x[i] / rms * gamma[i];
	*inv_out = 1.0f / rms;
}

static void
rmsnorm_vector(const float *x, size_t n, const float *gamma, float eps,
	       float *y, float *inv_out)
{
	float inv = 1.0f / sqrtf(sumsq_ort(x, n, 0.0f) / (float)n + eps);
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = x[i] * inv * gamma[i];
	*inv_out = inv;
}

static void
layernorm_double(const float *x, size_t n, const float *gamma,
		 const float *beta, float eps, float *y, float *mean_out,
		 float *inv_out)
{
	double m = 0.0, q = 0.0, sd;
	size_t i;

	for (i = 0; i < n; i++) {
		m += x[i];
		q += (double)x[i] * x[i];
	}
	m /= (double)n;
	sd = sqrt(q / (double)n - m * m + eps);
	for (i = 0; i < n; i++)
		y[i] = (float)((x[i] - m) / sd * gamma[i] +
			       (beta ? beta[i] : 0.0));
	*mean_out = (float)m;
	*inv_out = (float)(1.0 / sd);
}

void
qr_norm_row_ort_f32(enum qr_ort_norm kind, const float *x, size_t n,
		    const float *gamma, const float *beta, float eps, float *y,
		    float *mean, float *inv)
{
	float m = 0.0f, v;

	if (kind == QR_ORT_RMSNORM && n >= 16)
		rmsnorm_vector(x, n, gamma, eps, y, &v);
	else if (kind == QR_ORT_RMSNORM || kind == QR_ORT_SKIP_RMSNORM)
		rmsnorm_scalar(x, n, gamma, eps, y, &v);
	else if (kind == QR_ORT_LAYERNORM_BCAST)
		layernorm_double(x, n, gamma, beta, eps, y, &m, &v);
	else if (kind == QR_ORT_LAYERNORM && n >= 8)
		layernorm_two_pass(x, n, gamma, beta, eps, y, &m, &v);
	else
		layernorm_welford(x, n, gamma, beta, eps, y, &m, &v);
	if (mean)
		*mean = m;
	if (inv)
		*inv = v;
}

void
qr_layernorm_f32(const float *x, size_t rows, size_t n, const float *gamma,
		 const float *beta, float eps, float *y)
{
	size_t r;

	for (r = 0; r < rows; r++)
		qr_norm_row_ort_f32(QR_ORT_LAYERNORM, x + r * n, n, gamma,
				    beta, eps, y + r * n, NULL, NULL);
}

void
qr_batchnorm_f32(const float *x, size_t n, size_t c, size_t hw,
		 const float *scale, const float *bias, const float *mean,
		 const float *var, float eps, float *y)
{
	size_t b, ch, i;

	if (hw == 0)
		return; /* no elements: x and y are NULL */
	for (b = 0; b < n; b++) {
		for (ch = 0; ch < c; ch++) {
			const float *xp = x + (b * c + ch) * hw;
			float *yp = y + (b * c + ch) * hw;
			float k = 1.0f / sqrtf(var[ch] + eps) * scale[ch];
			float o = bias[ch] - mean[ch] * k;

			for (i = 0; i < hw; i++)
				yp[i] = xp[i] * k + o;
		}
	}
}

void
qr_instancenorm_f32(const float *x, size_t n, size_t c, size_t hw,
		    const float *scale, const float *bias, float eps, float *y)
{
	size_t b, ch, i;

	if (hw == 0)
		return; /* no elements: x and y are NULL */
	for (b = 0; b < n; b++) {
		for (ch = 0; ch < c; ch++) {
			const float *xp = x + (b * c + ch) * hw;
			float *yp = y + (b * c + ch) * hw;
			double mean, var, inv;

			stats(xp, hw, &mean, &var);
			inv = 1.0 / sqrt(var + eps);
			for (i = 0; i < hw; i++)
				yp[i] = (float)((xp[i] - mean) * inv) *
						scale[ch] +
					bias[ch];
		}
	}
}
