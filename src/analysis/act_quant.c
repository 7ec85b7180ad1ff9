/*
 * act_quant: an activation's scale and zero point: integer ranges, the
 * tensor read as floats and floats written back in its own domain
 * (through kernels/quant.c where it computes the same bits), and the
 * float values a quantized tensor cannot hold.
 *
 * Formulas (ONNX QuantizeLinear, DequantizeLinear):
 *   quantize   q = saturate(round_half_even(x / s) + zp)
 *   dequantize x = (q - zp) s
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "kernels/kernels.h"
#include "onnx/onnx.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_AS_AVX512 __attribute__((target("avx512f,avx512vl,fma")))
#define QR_AS_AVX2 __attribute__((target("avx2,fma")))
#endif

/* Integer range of dtype (int8, uint8, int16, uint16, int32, 4-bit). */
void
qr_as_qrange(int dtype, double *lo, double *hi)
{
	switch (dtype) {
	case QR_DT_UINT8:
		*lo = 0, *hi = 255;
		break;
	case QR_DT_INT8:
		*lo = -128, *hi = 127;
		break;
	case QR_DT_UINT16:
		*lo = 0, *hi = 65535;
		break;
	case QR_DT_INT16:
		*lo = -32768, *hi = 32767;
		break;
	case QR_DT_UINT4:
		*lo = 0, *hi = 15;
		break;
	case QR_DT_INT4:
		*lo = -8, *hi = 7;
		break;
	case QR_DT_INT32:
		*lo = -2147483648.0, *hi = 2147483647.0;
		break;
	default:
		*lo = -INFINITY, *hi = INFINITY;
		break;
	}
}

/* Index of the scale/zero point that element i uses. */
static size_t
qp_index(const struct qr_as_qparams *p, size_t i, size_t inner)
{
	return p->n > 1 ? (i / inner) % p->n : 0;
}

/* Elements per step of the quantization axis for a tensor of dims. */
static size_t
qp_inner(const struct qr_as_qparams *p, const int64_t *dims, int ndim)
{
	size_t inner = 1;
	int k, axis = p->axis < 0 ? p->axis + ndim : p->axis;

	for (k = axis + 1; k < ndim; k++)
		inner *= (size_t)dims[k];
	return inner ? inner : 1;
}

/*
 * The kernels' element type for a tensor of dtype under p, or -1 where
 * kernels/quant.c does not compute what the formulas above give. It does
 * for 8- and 16-bit integers both ways and for int32 when quantizing
 * (tests/test_kernels.c holds qr_quantize_f32_nan_zp to the formula on
 * all five), not for int32 when dequantizing (see qr_as_to_float); and
 * only while every zero point lies in the dtype's range, as it does in a
 * model that loads (a zero point has its tensor's dtype; the ops check
 * it).
 */
static int
kernel_qtype(int dtype, const struct qr_as_qparams *p, int quantize)
{
	double lo, hi;
	size_t c;
	int qt;

	switch (dtype) {
	case QR_DT_UINT8:
		qt = QR_QT_U8;
		break;
	case QR_DT_INT8:
		qt = QR_QT_S8;
		break;
	case QR_DT_UINT16:
		qt = QR_QT_U16;
		break;
	case QR_DT_INT16:
		qt = QR_QT_S16;
		break;
	case QR_DT_INT32:
		if (!quantize)
			return -1;
		qt = QR_QT_S32;
		break;
	default:
		return -1;
	}
	qr_as_qrange(dtype, &lo, &hi);
	for (c = 0; c < p->n; c++)
		if (p->zp[c] < lo || p->zp[c] > hi)
			return -1;
	return qt;
}

/* A piece of a tensor in the kernels' [outer][axis_len][inner] layout. */
struct qp_part {
	size_t at;               /* first element */
	size_t outer, axis_len, inner;
	size_t ch;               /* first scale and zero point it uses */
};

/*
 * Element i of n under p (inner elements per step of its axis) takes
 * scale and zero point qp_index(p, i, inner): whole blocks of p->n runs
 * of inner elements, and, when n does not divide (a shape that disagrees
 * with p), the first channels of one more block and part of a run.
 */
static void
qp_parts(const struct qr_as_qparams *p, size_t n, size_t inner,
	 struct qp_part part[3])
{
	size_t blk, rem, whole;

	if (p->n <= 1)
		inner = n; /* one scale for all */
	blk = (p->n > 1 ? p->n : 1) * inner;
	rem = n % blk;
	whole = rem / inner;
	part[0] = (struct qp_part){ 0, n / blk, p->n > 1 ? p->n : 1, inner, 0 };
	part[1] = (struct qp_part){ n - rem, 1, whole, inner, 0 };
	part[2] = (struct qp_part){ n - rem + whole * inner, 1, 1,
				    rem % inner, whole };
}

/* t's elements as floats into out (n_elem entries), dequantized with p
 * when t is an integer tensor and p has a scale. Returns 0 for dtypes it
 * cannot read (strings). */
int
qr_as_to_float(const struct qr_tensor *t, const struct qr_as_qparams *p,
	       float *out)
{
	size_t n = t->n_elem, i, inner, k;
	int deq = p != NULL && p->n > 0 && t->dtype != QR_DT_FLOAT &&
		  t->dtype != QR_DT_DOUBLE && t->dtype != QR_DT_FLOAT16 &&
		  t->dtype != QR_DT_BFLOAT16;
	float one = 1.0f;
	int32_t zero = 0;
	struct qr_as_qparams unit = { .n = 1, .scale = &one, .zp = &zero };
	const struct qr_as_qparams *kp = deq ? p : &unit;
	struct qr_tensor_data v = {0};
	struct qp_part pt[3];
	int qt;

	if (t->dtype == QR_DT_FLOAT) {
		if (n)
			memcpy(out, t->data, n * sizeof *out);
		return 1;
	}
	if ((qt = kernel_qtype(t->dtype, kp, 0)) >= 0) {
		/* y = (float)(q - zp) * s, the integer difference exact in
		 * float for these widths */
		if (n == 0)
			return 1;
		qp_parts(kp, n, qp_inner(kp, t->dims, t->ndim), pt);
		for (k = 0; k < 3; k++)
			qr_dequantize_f32((const char *)t->data + pt[k].at *
					  qr_qtype_size(qt), qt, pt[k].outer,
					  pt[k].axis_len, pt[k].inner,
					  kp->scale + pt[k].ch,
					  kp->zp + pt[k].ch, out + pt[k].at);
		return 1;
	}
	v.name = t->name;
	v.dtype = t->dtype;
	v.ndim = t->ndim;
	memcpy(v.dims, t->dims, sizeof v.dims);
	v.n_elem = n;
	v.data = t->data;
	v.nbytes = t->nbytes;
	if (qr_tensor_to_f32(&v, out, NULL) != QR_OK)
		return 0;
	if (!deq)
		return 1;
	/* int32 and the other widths: (float)q - (float)zp, then times s.
	 * The kernels subtract in integers first, which differs from this
	 * once |q| or |zp| passes 2^24. */
	inner = qp_inner(p, t->dims, t->ndim);
	if (p->n == 1) {
		float s = p->scale[0], z = (float)p->zp[0];

		for (i = 0; i < n; i++)
			out[i] = (out[i] - z) * s;
	} else {
		for (i = 0; i < n; i++) {
			size_t c = qp_index(p, i, inner);

			out[i] = (out[i] - (float)p->zp[c]) * p->scale[c];
		}
	}
	return 1;
}

/* Write x (t->n_elem floats) into t in t's own domain: a float tensor
 * gets the values, an integer tensor q = saturate(rne(x / s) + zp) with
 * p (without p: rne(x), saturated), a NaN quotient the zero point (0
 * without p), through qr_quantize_f32_nan_zp. Other dtypes, and zero
 * points outside t's range (see kernel_qtype), are left alone (0). */
int
qr_as_from_float(struct qr_tensor *t, const struct qr_as_qparams *p,
		 const float *x)
{
	size_t n = t->n_elem, k;
	float one = 1.0f;
	int32_t zero = 0;
	struct qr_as_qparams unit = { .n = 1, .scale = &one, .zp = &zero };
	struct qp_part pt[3];
	int qt;

	if (t->dtype == QR_DT_FLOAT) {
		if (n && t->data != x)
			memcpy(t->data, x, n * sizeof *x);
		return 1;
	}
	if (p == NULL || p->n == 0)
		p = &unit;
	if ((qt = kernel_qtype(t->dtype, p, 1)) < 0)
		return 0;
	if (n == 0)
		return 1;
	qp_parts(p, n, qp_inner(p, t->dims, t->ndim), pt);
	for (k = 0; k < 3; k++)
		qr_quantize_f32_nan_zp(x + pt[k].at, pt[k].outer,
				       pt[k].axis_len, pt[k].inner,
				       p->scale + pt[k].ch, p->zp + pt[k].ch,
				       qt, (char *)t->data + pt[k].at *
				       qr_qtype_size(qt));
	return 1;
}

/* Float values of x (n, shaped dims) more than half a step outside the
 * range p can represent: [(qmin - zp) s - s/2, (qmax - zp) s + s/2]. */
#ifdef QR_AS_AVX512
/* Values of x[0..n) below lo or above hi (compared in double, as the
 * scalar loop; NaN compares false both ways), 8 at a time; *cnt grows by
 * that count. Returns the elements done (a multiple of 8). */
static QR_AS_AVX512 size_t
outside_avx512(const float *x, size_t n, double lo, double hi, uint64_t *cnt)
{
	const __m512d vlo = _mm512_set1_pd(lo), vhi = _mm512_set1_pd(hi);
	const __m512d inf = _mm512_set1_pd(INFINITY);
	uint64_t c = 0;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m512d t = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
		__mmask8 out = _mm512_cmp_pd_mask(t, vlo, _CMP_LT_OQ) |
			       _mm512_cmp_pd_mask(t, vhi, _CMP_GT_OQ);

		out &= _mm512_cmp_pd_mask(_mm512_abs_pd(t), inf, _CMP_LT_OQ);
		c += (uint64_t)__builtin_popcount(out);
	}
	*cnt += c;
	return i;
}
#endif

#ifdef QR_AS_AVX2
/* outside_avx512 on 4 double lanes, two vectors a step. */
static QR_AS_AVX2 size_t
outside_avx2(const float *x, size_t n, double lo, double hi, uint64_t *cnt)
{
	const __m256d vlo = _mm256_set1_pd(lo), vhi = _mm256_set1_pd(hi);
	const __m256d inf = _mm256_set1_pd(INFINITY), sign = _mm256_set1_pd(-0.0);
	uint64_t c = 0;
	size_t i;
	int h;

	for (i = 0; i + 8 <= n; i += 8)
		for (h = 0; h < 2; h++) {
			__m256d t = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * h));
			__m256d out = _mm256_or_pd(
				_mm256_cmp_pd(t, vlo, _CMP_LT_OQ),
				_mm256_cmp_pd(t, vhi, _CMP_GT_OQ));

			out = _mm256_and_pd(out, _mm256_cmp_pd(
				_mm256_andnot_pd(sign, t), inf, _CMP_LT_OQ));
			c += (uint64_t)__builtin_popcount(
				(unsigned)_mm256_movemask_pd(out));
		}
	*cnt += c;
	return i;
}
#endif

uint64_t
qr_as_saturated(const struct qr_as_qparams *p, const float *x, size_t n,
		const int64_t *dims, int ndim)
{
	size_t inner = qp_inner(p, dims, ndim), i, c, run;
	uint64_t cnt = 0;

	/* one channel's bounds per run of `inner` elements (the whole
	 * tensor for a per-tensor scale) */
	for (i = 0; i < n; i += run) {
		double s, lo, hi;
		size_t j;

		c = qp_index(p, i, inner);
		run = p->n > 1 ? inner - i % inner : n - i;
		if (run > n - i)
			run = n - i;
		s = p->scale[c];
		lo = (p->qmin - p->zp[c]) * s - s / 2;
		hi = (p->qmax - p->zp[c]) * s + s / 2;
		j = i;
#ifdef QR_AS_AVX512
		if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
			j += outside_avx512(x + i, run, lo, hi, &cnt);
		else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
			j += outside_avx2(x + i, run, lo, hi, &cnt);
#endif
		for (; j < i + run; j++)
			cnt += (x[j] < lo || x[j] > hi) && isfinite(x[j]);
	}
	return cnt;
}

void
qr_as_qparams_free(struct qr_as_qparams *p)
{
	free(p->scale);
	free(p->zp);
	memset(p, 0, sizeof *p);
}
