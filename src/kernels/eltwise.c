/* eltwise: numpy-style broadcasting for binary float ops, clamps, and
 * ONNX Runtime's exp. */
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
#endif

void
qr_clamp_f32(const float *x, size_t n, float lo, float hi, float *y)
{
	size_t i = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		i = clamp_avx512(x, n, lo, hi, y);
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

/* Innermost axis with a switch outside the loop, so the common
 * stride-1 / stride-0 cases vectorize. */
static void
inner(enum qr_binop op, size_t n, const float *a, size_t sa, const float *b,
      size_t sb, float *y)
{
	size_t i;

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
		inner(op, n, a + ao, a_strides[rank - 1], b + bo,
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

/* See kernels.h. m = round(x / ln 2) through the 1.5 * 2^23 bias; x - m
 * ln 2 with ln 2 in two parts; 2^m split into 2^n (n clamped to the
 * normal exponents) and 2^(m - n), multiplied in that order after. */
void
qr_exp_ort_f32(const float *x, size_t n, float *y)
{
	const float bias = 12582912.0f;
	size_t i;

	for (i = 0; i < n; i++) {
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
	size_t i;

	for (i = 0; i < n; i++) {
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
