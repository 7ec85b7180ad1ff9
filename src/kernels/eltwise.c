/* eltwise: numpy-style broadcasting for binary float ops, clamps, and
 * ONNX Runtime's exp, logistic, tanh and erf. */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* max(lo, v) then min(hi, v) keep v when it is NaN, as the loop below. */
static __attribute__((target("avx512f"))) size_t
clamp_avx512(const float *x, size_t n, float lo, float hi, float *y)
{
	const __m512 l = _mm512_set1_ps(lo), h = _mm512_set1_ps(hi);
	size_t i;

	for (i = 0; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_min_ps(h, _mm512_max_ps(
			l, _mm512_loadu_ps(x + i))));
	return i;
}

/* alpha x + beta clamped to [0, 1], times x when swish; two roundings
 * before the clamp, as ONNX Runtime (no fused multiply-add). */
static __attribute__((target("avx512f"))) size_t
hard_sigmoid_avx512(const float *x, size_t n, float alpha, float beta,
		    int swish, float *y)
{
	const __m512 a = _mm512_set1_ps(alpha), b = _mm512_set1_ps(beta),
		     zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i), w;

		w = _mm512_add_ps(_mm512_mul_ps(v, a), b);
		w = _mm512_min_ps(one, _mm512_max_ps(zero, w));
		_mm512_storeu_ps(y + i, swish ? _mm512_mul_ps(v, w) : w);
	}
	return i;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
/* clamp_avx512 and hard_sigmoid_avx512 on 8 lanes, for CPUs without
 * AVX-512: the same operations in the same order. */
static __attribute__((target("avx"))) size_t
clamp_avx2(const float *x, size_t n, float lo, float hi, float *y)
{
	const __m256 l = _mm256_set1_ps(lo), h = _mm256_set1_ps(hi);
	size_t i;

	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_min_ps(h, _mm256_max_ps(
			l, _mm256_loadu_ps(x + i))));
	return i;
}

static __attribute__((target("avx"))) size_t
hard_sigmoid_avx2(const float *x, size_t n, float alpha, float beta,
		  int swish, float *y)
{
	const __m256 a = _mm256_set1_ps(alpha), b = _mm256_set1_ps(beta),
		     zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), w;

		w = _mm256_add_ps(_mm256_mul_ps(v, a), b);
		w = _mm256_min_ps(one, _mm256_max_ps(zero, w));
		_mm256_storeu_ps(y + i, swish ? _mm256_mul_ps(v, w) : w);
	}
	return i;
}

#endif

/* The scalar tail of hard_sigmoid_avx512, and the whole loop elsewhere. */
static void
hard_sigmoid_f32(const float *x, size_t n, float alpha, float beta,
		 int swish, float *y)
{
	size_t i = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		i = hard_sigmoid_avx512(x, n, alpha, beta, swish, y);
	else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		i = hard_sigmoid_avx2(x, n, alpha, beta, swish, y);
#endif
	for (; i < n; i++) {
		float v = x[i], w = v * alpha + beta;

		w = 0.0f > w ? 0.0f : w;
		w = 1.0f < w ? 1.0f : w;
		y[i] = swish ? v * w : w;
	}
}

void
qr_hard_sigmoid_f32(const float *x, size_t n, float alpha, float beta,
		    float *y)
{
	hard_sigmoid_f32(x, n, alpha, beta, 0, y);
}

void
qr_hard_swish_f32(const float *x, size_t n, float *y)
{
	hard_sigmoid_f32(x, n, 1.0f / 6.0f, 0.5f, 1, y);
}

void
qr_clamp_f32(const float *x, size_t n, float lo, float hi, float *y)
{
	size_t i = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		i = clamp_avx512(x, n, lo, hi, y);
	else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		i = clamp_avx2(x, n, lo, hi, y);
#endif
	for (; i < n; i++) {
		float v = x[i];

		v = lo > v ? lo : v;
		y[i] = hi < v ? hi : v;
	}
}

int
qr_broadcast_strides(size_t out_rank, const int64_t *out_dims, size_t in_rank,
		     const int64_t *in_dims, size_t *strides)
{
	size_t i, st = 1;

	if (in_rank > out_rank || out_rank > QR_MAX_RANK)
		return -1;
	for (i = out_rank; i-- > 0;) {
		size_t off = out_rank - i; /* 1 = innermost */
		int64_t d;

		if (off > in_rank) {
			strides[i] = 0;
			continue;
		}
		d = in_dims[in_rank - off];
		if (d == out_dims[i]) {
			strides[i] = d == 1 ? 0 : st;
		} else if (d == 1) {
			strides[i] = 0;
		} else {
			return -1;
		}
		st *= (size_t)d;
	}
	return 0;
}

static float
apply(enum qr_binop op, float a, float b)
{
	switch (op) {
	case QR_BIN_ADD: return a + b;
	case QR_BIN_SUB: return a - b;
	case QR_BIN_MUL: return a * b;
	case QR_BIN_DIV: return a / b;
	case QR_BIN_MAX: return a > b || isnan(a) ? a : b;
	case QR_BIN_MIN: return a < b || isnan(a) ? a : b;
	case QR_BIN_POW: return powf(a, b);
	}
	return 0.0f;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* qr_binary_row_f32's + - * / on 16 lanes where each side is a row
 * (stride 1) or one value (stride 0); returns how many values it did. */
static __attribute__((target("avx512f"))) size_t
inner_avx512(enum qr_binop op, size_t n, const float *a, size_t sa,
	     const float *b, size_t sb, float *y)
{
	size_t i;

#define LOOP16(OP)                                                          \
	for (i = 0; i + 16 <= n; i += 16) {                                 \
		__m512 x = sa ? _mm512_loadu_ps(a + i) : _mm512_set1_ps(*a); \
		__m512 z = sb ? _mm512_loadu_ps(b + i) : _mm512_set1_ps(*b); \
		_mm512_storeu_ps(y + i, OP(x, z));                          \
	}

	if (sa > 1 || sb > 1)
		return 0;
	switch (op) {
	case QR_BIN_ADD: LOOP16(_mm512_add_ps); break;
	case QR_BIN_SUB: LOOP16(_mm512_sub_ps); break;
	case QR_BIN_MUL: LOOP16(_mm512_mul_ps); break;
	case QR_BIN_DIV: LOOP16(_mm512_div_ps); break;
	default: return 0;
	}
#undef LOOP16
	return i;
}
#endif

/* See kernels.h. A switch outside the loop; rows and single values
 * (stride 1 or 0) of + - * / go 16 lanes at a time. */
void
qr_binary_row_f32(enum qr_binop op, size_t n, const float *a, size_t sa,
		  const float *b, size_t sb, float *y)
{
	size_t i = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	if (n >= 16 && (qr_kernels_cpu_features() & QR_CPU_AVX512BW)) {
		i = inner_avx512(op, n, a, sa, b, sb, y);
		a += i * sa;
		b += i * sb;
		y += i;
		n -= i;
	}
#endif

#define LOOP(EXPR)                                                          \
	do {                                                                \
		if (sa == 1 && sb == 1)                                     \
			for (i = 0; i < n; i++) {                           \
				float x = a[i], z = b[i];                   \
				y[i] = (EXPR);                              \
			}                                                   \
		else                                                        \
			for (i = 0; i < n; i++) {                           \
				float x = a[i * sa], z = b[i * sb];         \
				y[i] = (EXPR);                              \
			}                                                   \
	} while (0)

	switch (op) {
	case QR_BIN_ADD: LOOP(x + z); break;
	case QR_BIN_SUB: LOOP(x - z); break;
	case QR_BIN_MUL: LOOP(x * z); break;
	case QR_BIN_DIV: LOOP(x / z); break;
	default:
		for (i = 0; i < n; i++)
			y[i] = apply(op, a[i * sa], b[i * sb]);
	}
#undef LOOP
}

void
qr_binary_f32(enum qr_binop op, size_t rank, const int64_t *out_dims,
	      const float *a, const size_t *a_strides, const float *b,
	      const size_t *b_strides, float *y)
{
	size_t idx[QR_MAX_RANK] = {0};
	size_t outer = 1, n, o, d;

	QR_ASSERT(rank <= QR_MAX_RANK);
	if (rank == 0) {
		y[0] = apply(op, a[0], b[0]);
		return;
	}
	n = (size_t)out_dims[rank - 1];
	for (d = 0; d + 1 < rank; d++)
		outer *= (size_t)out_dims[d];
	if (n == 0)
		return;
	for (o = 0; o < outer; o++) {
		size_t ao = 0, bo = 0;

		for (d = 0; d + 1 < rank; d++) {
			ao += idx[d] * a_strides[d];
			bo += idx[d] * b_strides[d];
		}
		qr_binary_row_f32(op, n, a + ao, a_strides[rank - 1], b + bo,
				  b_strides[rank - 1], y + o * n);
		for (d = rank - 1; d-- > 0;) {
			if (++idx[d] < (size_t)out_dims[d])
				break;
			idx[d] = 0;
		}
	}
}

/* The float whose bits are u. */
static float
float_bits(int32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

/* MLAS's exp polynomial: exp(r) for |r| <= ln 2 / 2, degree 6, in fused
 * multiply-adds. */
float
qr_exp_poly(float r)
{
	float p = 0x1.694000p-10f;

	p = fmaf(p, r, 0x1.125edcp-7f);
	p = fmaf(p, r, 0x1.555b5ap-5f);
	p = fmaf(p, r, 0x1.555450p-3f);
	p = fmaf(p, r, 0x1.fffff6p-2f);
	p = fmaf(p, r, 1.0f);
	return fmaf(p, r, 1.0f);
}

/* MLAS's erf (a polynomial in x^2 below ERF_SPLIT, 1 - exp(-poly(|x|))
 * above, |x| clamped to ERF_ABS_MAX) and the exp it uses there. */
#define ERF_ABS_MAX 3.925f
#define ERF_SPLIT 0.921875f
#define ERF_EXP_MIN -88.3762626647949f
#define ERF_EXP_C 12582912.0f
static const float erf_small[6] = {
	-5.99104969e-4f, 4.99339588e-3f, -2.67667342e-2f, 1.12818025e-1f,
	-3.76124859e-1f, 1.28379151e-1f,
};
static const float erf_big[7] = {
	1.72948930e-5f, -3.83208680e-4f, 3.88393435e-3f, -2.42545605e-2f,
	1.06777847e-1f, 6.34846687e-1f, 1.28717512e-1f,
};
static const float erf_exp[7] = {
	1.38319808e-3f, 8.37550033e-3f, 4.16689515e-2f, 1.66664466e-1f,
	4.99999851e-1f, 1.0f, 1.0f,
};

/* MLAS's tanh (the rational polynomial Eigen uses; x clamped to [-9, 9]):
 * numerator coefficients of x^13 down to x^1, denominator of x^6 down
 * to x^0. */
static const float tanh_p[7] = {
	-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f,
	5.12229709037114e-08f, 1.48572235717979e-05f, 6.37261928875436e-04f,
	4.89352455891786e-03f,
};
static const float tanh_q[4] = {
	1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f,
	4.89352518554385e-03f,
};

#if defined(__x86_64__) && defined(__GNUC__)
#define AVX512 __attribute__((target("avx512f,avx512bw,fma")))

/* qr_exp_poly, 16 lanes. */
static AVX512 __m512
exp_poly_avx512(__m512 r)
{
	__m512 p = _mm512_set1_ps(0x1.694000p-10f);

	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.125edcp-7f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555b5ap-5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555450p-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.fffff6p-2f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	return _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
}

/* qr_exp_ort_f32's loop, 16 lanes with the same operations; MAXPS and
 * MINPS with the value second keep a NaN as its comparisons do. */
static AVX512 size_t
exp_ort_avx512(const float *x, size_t n, float *y)
{
	const __m512 bias = _mm512_set1_ps(12582912.0f);
	const __m512i one = _mm512_set1_epi32(0x3F800000);
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i), biased, m, p;
		__m512i e, normal;

		v = _mm512_max_ps(_mm512_set1_ps(-103.9720840454f), v);
		v = _mm512_min_ps(_mm512_set1_ps(88.7762626647950f), v);
		biased = _mm512_fmadd_ps(v, _mm512_set1_ps(1.44269504088896341f),
					 bias);
		m = _mm512_sub_ps(biased, bias);
		v = _mm512_fmadd_ps(m, _mm512_set1_ps(-6.93145752e-1f), v);
		v = _mm512_fmadd_ps(m, _mm512_set1_ps(-1.42860677e-6f), v);
		e = _mm512_slli_epi32(_mm512_castps_si512(biased), 23);
		normal = _mm512_min_epi32(e, one);
		normal = _mm512_max_epi32(normal,
					  _mm512_set1_epi32((int)0xC1000000));
		p = exp_poly_avx512(v);
		p = _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_add_epi32(
			_mm512_sub_epi32(e, normal), one)));
		_mm512_storeu_ps(y + i, _mm512_mul_ps(p, _mm512_castsi512_ps(
			_mm512_add_epi32(normal, one))));
	}
	return i;
}

/* qr_sigmoid_ort_f32's loop, 16 lanes with the same operations. */
static AVX512 size_t
sigmoid_ort_avx512(const float *x, size_t n, float *y)
{
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i), v2, p, q, r;

		v = _mm512_max_ps(_mm512_set1_ps(-18.0f), v);
		v = _mm512_min_ps(_mm512_set1_ps(18.0f), v);
		v2 = _mm512_mul_ps(v, v);
		p = _mm512_fmadd_ps(v2, _mm512_set1_ps(4.37031012579801e-11f),
				    _mm512_set1_ps(1.15627324459942e-07f));
		p = _mm512_fmadd_ps(p, v2, _mm512_set1_ps(6.08574864600143e-05f));
		p = _mm512_fmadd_ps(p, v2, _mm512_set1_ps(8.51377133304701e-03f));
		p = _mm512_fmadd_ps(p, v2, _mm512_set1_ps(2.48287947061529e-01f));
		p = _mm512_mul_ps(p, v);
		q = _mm512_fmadd_ps(v2, _mm512_set1_ps(6.10247389755681e-13f),
				    _mm512_set1_ps(5.76102136993427e-09f));
		q = _mm512_fmadd_ps(q, v2, _mm512_set1_ps(6.29106785017040e-06f));
		q = _mm512_fmadd_ps(q, v2, _mm512_set1_ps(1.70198817374094e-03f));
		q = _mm512_fmadd_ps(q, v2, _mm512_set1_ps(1.16817656904453e-01f));
		q = _mm512_fmadd_ps(q, v2, _mm512_set1_ps(9.93151921023180e-01f));
		r = _mm512_add_ps(_mm512_div_ps(p, q), _mm512_set1_ps(0.5f));
		r = _mm512_max_ps(_mm512_setzero_ps(), r);
		_mm512_storeu_ps(y + i, _mm512_min_ps(_mm512_set1_ps(1.0f), r));
	}
	return i;
}
/* qr_tanh_ort_f32's loop, 16 lanes with the same operations. */
static AVX512 size_t
tanh_ort_avx512(const float *x, size_t n, float *y)
{
	size_t i;
	int k;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i), v2, p, q;

		v = _mm512_max_ps(_mm512_set1_ps(-9.0f), v);
		v = _mm512_min_ps(_mm512_set1_ps(9.0f), v);
		v2 = _mm512_mul_ps(v, v);
		p = _mm512_set1_ps(tanh_p[0]);
		for (k = 1; k < 7; k++)
			p = _mm512_fmadd_ps(p, v2, _mm512_set1_ps(tanh_p[k]));
		p = _mm512_mul_ps(p, v);
		q = _mm512_set1_ps(tanh_q[0]);
		for (k = 1; k < 4; k++)
			q = _mm512_fmadd_ps(q, v2, _mm512_set1_ps(tanh_q[k]));
		_mm512_storeu_ps(y + i, _mm512_div_ps(p, q));
	}
	return i;
}

/* qr_erf_ort_f32's loop, 16 lanes with the same operations. */
static AVX512 size_t
erf_ort_avx512(const float *x, size_t n, float *y)
{
	const __m512i sign_bit = _mm512_set1_epi32((int)0x80000000u);
	const __m512 c = _mm512_set1_ps(ERF_EXP_C), zero = _mm512_setzero_ps();
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512i v = _mm512_loadu_si512(x + i), sign;
		__m512 a, s, p, q, r, f, e, big_res;
		__mmask16 big;

		sign = _mm512_and_si512(v, sign_bit);
		a = _mm512_castsi512_ps(_mm512_andnot_si512(sign_bit, v));
		a = _mm512_min_ps(_mm512_set1_ps(ERF_ABS_MAX), a);
		s = _mm512_mul_ps(a, a);
		p = _mm512_set1_ps(erf_small[0]);
		for (int k = 1; k < 6; k++)
			p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(erf_small[k]));
		p = _mm512_fmadd_ps(p, a, a);
		big = _mm512_cmp_ps_mask(_mm512_set1_ps(ERF_SPLIT), a,
					 _CMP_LE_OQ);
		p = _mm512_mask_blend_ps(big, p, zero);
		a = _mm512_mask_blend_ps(big, zero, a);
		q = _mm512_set1_ps(erf_big[0]);
		for (int k = 1; k < 7; k++)
			q = _mm512_fmadd_ps(q, a, _mm512_set1_ps(erf_big[k]));
		q = _mm512_fmadd_ps(q, a, a);
		q = _mm512_max_ps(_mm512_sub_ps(zero, q) /* -q */, _mm512_set1_ps(
			ERF_EXP_MIN));
		r = _mm512_fmadd_ps(q, _mm512_set1_ps(1.44269504088896341f), c);
		r = _mm512_sub_ps(r, c);
		f = _mm512_fmadd_ps(r, _mm512_set1_ps(-6.93145752e-1f), q);
		f = _mm512_fmadd_ps(r, _mm512_set1_ps(-1.42860677e-6f), f);
		e = _mm512_set1_ps(erf_exp[0]);
		for (int k = 1; k < 7; k++)
			e = _mm512_fmadd_ps(e, f, _mm512_set1_ps(erf_exp[k]));
		e = _mm512_mul_ps(e, _mm512_castsi512_ps(_mm512_slli_epi32(
			_mm512_add_epi32(_mm512_cvttps_epi32(r),
					 _mm512_set1_epi32(127)), 23)));
		big_res = _mm512_sub_ps(_mm512_set1_ps(1.0f), e);
		_mm512_storeu_si512(y + i, _mm512_or_si512(sign, _mm512_or_si512(
			_mm512_castps_si512(p), _mm512_castps_si512(big_res))));
	}
	return i;
}
#undef AVX512

/* The three loops above on 8 lanes, for CPUs without AVX-512: the same
 * operations in the same order (blends for the masks). */
#define AVX2 __attribute__((target("avx2,fma")))

static AVX2 __m256
exp_poly_avx2(__m256 r)
{
	__m256 p = _mm256_set1_ps(0x1.694000p-10f);

	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.125edcp-7f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.555b5ap-5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.555450p-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.fffff6p-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	return _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
}

static AVX2 size_t
exp_ort_avx2(const float *x, size_t n, float *y)
{
	const __m256 bias = _mm256_set1_ps(12582912.0f);
	const __m256i one = _mm256_set1_epi32(0x3F800000);
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), biased, m, p;
		__m256i e, normal;

		v = _mm256_max_ps(_mm256_set1_ps(-103.9720840454f), v);
		v = _mm256_min_ps(_mm256_set1_ps(88.7762626647950f), v);
		biased = _mm256_fmadd_ps(v, _mm256_set1_ps(1.44269504088896341f),
					 bias);
		m = _mm256_sub_ps(biased, bias);
		v = _mm256_fmadd_ps(m, _mm256_set1_ps(-6.93145752e-1f), v);
		v = _mm256_fmadd_ps(m, _mm256_set1_ps(-1.42860677e-6f), v);
		e = _mm256_slli_epi32(_mm256_castps_si256(biased), 23);
		normal = _mm256_min_epi32(e, one);
		normal = _mm256_max_epi32(normal,
					  _mm256_set1_epi32((int)0xC1000000));
		p = exp_poly_avx2(v);
		p = _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_add_epi32(
			_mm256_sub_epi32(e, normal), one)));
		_mm256_storeu_ps(y + i, _mm256_mul_ps(p, _mm256_castsi256_ps(
			_mm256_add_epi32(normal, one))));
	}
	return i;
}

static AVX2 size_t
sigmoid_ort_avx2(const float *x, size_t n, float *y)
{
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), v2, p, q, r;

		v = _mm256_max_ps(_mm256_set1_ps(-18.0f), v);
		v = _mm256_min_ps(_mm256_set1_ps(18.0f), v);
		v2 = _mm256_mul_ps(v, v);
		p = _mm256_fmadd_ps(v2, _mm256_set1_ps(4.37031012579801e-11f),
				    _mm256_set1_ps(1.15627324459942e-07f));
		p = _mm256_fmadd_ps(p, v2, _mm256_set1_ps(6.08574864600143e-05f));
		p = _mm256_fmadd_ps(p, v2, _mm256_set1_ps(8.51377133304701e-03f));
		p = _mm256_fmadd_ps(p, v2, _mm256_set1_ps(2.48287947061529e-01f));
		p = _mm256_mul_ps(p, v);
		q = _mm256_fmadd_ps(v2, _mm256_set1_ps(6.10247389755681e-13f),
				    _mm256_set1_ps(5.76102136993427e-09f));
		q = _mm256_fmadd_ps(q, v2, _mm256_set1_ps(6.29106785017040e-06f));
		q = _mm256_fmadd_ps(q, v2, _mm256_set1_ps(1.70198817374094e-03f));
		q = _mm256_fmadd_ps(q, v2, _mm256_set1_ps(1.16817656904453e-01f));
		q = _mm256_fmadd_ps(q, v2, _mm256_set1_ps(9.93151921023180e-01f));
		r = _mm256_add_ps(_mm256_div_ps(p, q), _mm256_set1_ps(0.5f));
		r = _mm256_max_ps(_mm256_setzero_ps(), r);
		_mm256_storeu_ps(y + i, _mm256_min_ps(_mm256_set1_ps(1.0f), r));
	}
	return i;
}

static AVX2 size_t
tanh_ort_avx2(const float *x, size_t n, float *y)
{
	size_t i;
	int k;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), v2, p, q;

		v = _mm256_max_ps(_mm256_set1_ps(-9.0f), v);
		v = _mm256_min_ps(_mm256_set1_ps(9.0f), v);
		v2 = _mm256_mul_ps(v, v);
		p = _mm256_set1_ps(tanh_p[0]);
		for (k = 1; k < 7; k++)
			p = _mm256_fmadd_ps(p, v2, _mm256_set1_ps(tanh_p[k]));
		p = _mm256_mul_ps(p, v);
		q = _mm256_set1_ps(tanh_q[0]);
		for (k = 1; k < 4; k++)
			q = _mm256_fmadd_ps(q, v2, _mm256_set1_ps(tanh_q[k]));
		_mm256_storeu_ps(y + i, _mm256_div_ps(p, q));
	}
	return i;
}

static AVX2 size_t
erf_ort_avx2(const float *x, size_t n, float *y)
{
	const __m256i sign_bit = _mm256_set1_epi32((int)0x80000000u);
	const __m256 c = _mm256_set1_ps(ERF_EXP_C), zero = _mm256_setzero_ps();
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(x + i)), sign;
		__m256 a, s, p, q, r, f, e, big_res, big;

		sign = _mm256_and_si256(v, sign_bit);
		a = _mm256_castsi256_ps(_mm256_andnot_si256(sign_bit, v));
		a = _mm256_min_ps(_mm256_set1_ps(ERF_ABS_MAX), a);
		s = _mm256_mul_ps(a, a);
		p = _mm256_set1_ps(erf_small[0]);
		for (int k = 1; k < 6; k++)
			p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(erf_small[k]));
		p = _mm256_fmadd_ps(p, a, a);
		big = _mm256_cmp_ps(_mm256_set1_ps(ERF_SPLIT), a, _CMP_LE_OQ);
		p = _mm256_blendv_ps(p, zero, big);
		a = _mm256_blendv_ps(zero, a, big);
		q = _mm256_set1_ps(erf_big[0]);
		for (int k = 1; k < 7; k++)
			q = _mm256_fmadd_ps(q, a, _mm256_set1_ps(erf_big[k]));
		q = _mm256_fmadd_ps(q, a, a);
		q = _mm256_max_ps(_mm256_sub_ps(zero, q) /* -q */, _mm256_set1_ps(
			ERF_EXP_MIN));
		r = _mm256_fmadd_ps(q, _mm256_set1_ps(1.44269504088896341f), c);
		r = _mm256_sub_ps(r, c);
		f = _mm256_fmadd_ps(r, _mm256_set1_ps(-6.93145752e-1f), q);
		f = _mm256_fmadd_ps(r, _mm256_set1_ps(-1.42860677e-6f), f);
		e = _mm256_set1_ps(erf_exp[0]);
		for (int k = 1; k < 7; k++)
			e = _mm256_fmadd_ps(e, f, _mm256_set1_ps(erf_exp[k]));
		e = _mm256_mul_ps(e, _mm256_castsi256_ps(_mm256_slli_epi32(
			_mm256_add_epi32(_mm256_cvttps_epi32(r),
					 _mm256_set1_epi32(127)), 23)));
		big_res = _mm256_sub_ps(_mm256_set1_ps(1.0f), e);
		_mm256_storeu_si256((__m256i *)(y + i), _mm256_or_si256(sign,
			_mm256_or_si256(_mm256_castps_si256(p),
					_mm256_castps_si256(big_res))));
	}
	return i;
}
#undef AVX2
#endif

/* See kernels.h. m = round(x / ln 2) through the 1.5 * 2^23 bias; x - m
 * ln 2 with ln 2 in two parts; 2^m split into 2^n (n clamped to the
 * normal exponents) and 2^(m - n), multiplied in that order after. */
void
qr_exp_ort_f32(const float *x, size_t n, float *y)
{
	const float bias = 12582912.0f;
	size_t i = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		i = exp_ort_avx512(x, n, y);
	else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		i = exp_ort_avx2(x, n, y);
#endif
	for (; i < n; i++) {
		float v = x[i], biased, m, p;
		int32_t e, normal;

		v = v < -103.9720840454f ? -103.9720840454f : v;
		v = v > 88.7762626647950f ? 88.7762626647950f : v;
		biased = fmaf(v, 1.44269504088896341f, bias);
		m = biased - bias;
		v = fmaf(m, -6.93145752e-1f, v);
		v = fmaf(m, -1.42860677e-6f, v);
		memcpy(&e, &biased, sizeof e);
		e = (int32_t)((uint32_t)e << 23);
		normal = e > 0x3F800000 ? 0x3F800000 : e;
		normal = normal < (int32_t)0xC1000000 ? (int32_t)0xC1000000 :
			 normal;
		p = qr_exp_poly(v);
		p *= float_bits((int32_t)((uint32_t)(e - normal) + 0x3F800000u));
		y[i] = p * float_bits((int32_t)((uint32_t)normal + 0x3F800000u));
	}
}

/* See kernels.h. The clamps keep a NaN, as MAXPS/MINPS with the value
 * second do. */
void
qr_sigmoid_ort_f32(const float *x, size_t n, float *y)
{
	size_t i = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		i = sigmoid_ort_avx512(x, n, y);
	else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		i = sigmoid_ort_avx2(x, n, y);
#endif
	for (; i < n; i++) {
		float v = x[i], v2, p, q, r;

		v = v < -18.0f ? -18.0f : v;
		v = v > 18.0f ? 18.0f : v;
		v2 = v * v;
		p = fmaf(v2, 4.37031012579801e-11f, 1.15627324459942e-07f);
		p = fmaf(p, v2, 6.08574864600143e-05f);
		p = fmaf(p, v2, 8.51377133304701e-03f);
		p = fmaf(p, v2, 2.48287947061529e-01f);
		p *= v;
		q = fmaf(v2, 6.10247389755681e-13f, 5.76102136993427e-09f);
		q = fmaf(q, v2, 6.29106785017040e-06f);
		q = fmaf(q, v2, 1.70198817374094e-03f);
		q = fmaf(q, v2, 1.16817656904453e-01f);
		q = fmaf(q, v2, 9.93151921023180e-01f);
		r = p / q + 0.5f;
		r = r < 0.0f ? 0.0f : r;
		y[i] = r > 1.0f ? 1.0f : r;
	}
}

/* See kernels.h. MLAS's FMA3 kernel (the one ONNX Runtime runs on x86-64
 * CPUs with FMA): the polynomials in fused multiply-adds, one division;
 * the clamps keep a NaN, as its MAXPS/MINPS with the value second do. */
void
qr_tanh_ort_f32(const float *x, size_t n, float *y)
{
	size_t i = 0;
	int k;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		i = tanh_ort_avx512(x, n, y);
	else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		i = tanh_ort_avx2(x, n, y);
#endif
	for (; i < n; i++) {
		float v = x[i], v2, p, q;

		v = v < -9.0f ? -9.0f : v;
		v = v > 9.0f ? 9.0f : v;
		v2 = v * v;
		p = tanh_p[0];
		for (k = 1; k < 7; k++)
			p = fmaf(p, v2, tanh_p[k]);
		p *= v;
		q = tanh_q[0];
		for (k = 1; k < 4; k++)
			q = fmaf(q, v2, tanh_q[k]);
		y[i] = p / q;
	}
}

/* See kernels.h. Both parts are computed for every value and joined by
 * their bits (the other part is +0), as MLAS's vector kernel does; NaN
 * stays NaN, and infinities clamp to +-ERF_ABS_MAX. */
void
qr_erf_ort_f32(const float *x, size_t n, float *y)
{
	size_t i = 0;
	int k;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		i = erf_ort_avx512(x, n, y);
	else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		i = erf_ort_avx2(x, n, y);
#endif
	for (; i < n; i++) {
		uint32_t v, sign, out;
		float a, s, p, q, r, f, e, big_res;
		int32_t ri;

		memcpy(&v, &x[i], sizeof v);
		sign = v & 0x80000000u;
		v &= 0x7FFFFFFFu;
		memcpy(&a, &v, sizeof a);
		a = ERF_ABS_MAX < a ? ERF_ABS_MAX : a;
		s = a * a;
		p = erf_small[0];
		for (k = 1; k < 6; k++)
			p = fmaf(p, s, erf_small[k]);
		p = fmaf(p, a, a);
		if (ERF_SPLIT <= a)
			p = 0.0f;
		else
			a = 0.0f;
		q = erf_big[0];
		for (k = 1; k < 7; k++)
			q = fmaf(q, a, erf_big[k]);
		q = -fmaf(q, a, a);
		q = q > ERF_EXP_MIN ? q : ERF_EXP_MIN;
		r = fmaf(q, 1.44269504088896341f, ERF_EXP_C) - ERF_EXP_C;
		f = fmaf(r, -6.93145752e-1f, q);
		f = fmaf(r, -1.42860677e-6f, f);
		e = erf_exp[0];
		for (k = 1; k < 7; k++)
			e = fmaf(e, f, erf_exp[k]);
		ri = (int32_t)r;
		e *= float_bits((int32_t)((uint32_t)(ri + 127) << 23));
		big_res = 1.0f - e;
		memcpy(&v, &p, sizeof v);
		memcpy(&out, &big_res, sizeof out);
		out |= v | sign;
		memcpy(&y[i], &out, sizeof out);
	}
}
