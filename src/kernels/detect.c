/* detect: box overlap tests for NonMaxSuppression. */
#include "kernels/kernels-int.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* qr_box_suppressed over 16 kept boxes at a time; MAXPS/MINPS(a, b)
 * are a > b ? a : b and a < b ? a : b, and the ordered comparisons are
 * false on NaN as the scalar tests. Returns 1 on a suppressor, else 0
 * with *done set to the boxes it looked at. */
static __attribute__((target("avx512f"))) int
suppressed_avx512(const struct qr_boxes *k, size_t n, const float *b,
		  float area_b, float thr, size_t *done)
{
	const __m512 bx0 = _mm512_set1_ps(b[0]), by0 = _mm512_set1_ps(b[1]);
	const __m512 bx1 = _mm512_set1_ps(b[2]), by1 = _mm512_set1_ps(b[3]);
	const __m512 ab = _mm512_set1_ps(area_b), t = _mm512_set1_ps(thr);
	const __m512 zero = _mm512_setzero_ps();
	size_t j;

	for (j = 0; j + 16 <= n; j += 16) {
		__m512 ix0 = _mm512_max_ps(_mm512_loadu_ps(k->x0 + j), bx0);
		__m512 iy0 = _mm512_max_ps(_mm512_loadu_ps(k->y0 + j), by0);
		__m512 ix1 = _mm512_min_ps(_mm512_loadu_ps(k->x1 + j), bx1);
		__m512 iy1 = _mm512_min_ps(_mm512_loadu_ps(k->y1 + j), by1);
		__m512 iw = _mm512_max_ps(_mm512_sub_ps(ix1, ix0), zero);
		__m512 ih = _mm512_max_ps(_mm512_sub_ps(iy1, iy0), zero);
		__m512 inter = _mm512_mul_ps(iw, ih);
		__m512 aa = _mm512_loadu_ps(k->area + j);
		__m512 uni = _mm512_sub_ps(_mm512_add_ps(aa, ab), inter);
		__mmask16 m;

		m = _mm512_cmp_ps_mask(inter, zero, _CMP_GT_OQ);
		m &= _mm512_cmp_ps_mask(aa, zero, _CMP_GT_OQ);
		m &= _mm512_cmp_ps_mask(uni, zero, _CMP_GT_OQ);
		if (m == 0)
			continue;
		m &= _mm512_cmp_ps_mask(_mm512_div_ps(inter, uni), t,
					_CMP_GT_OQ);
		if (m != 0)
			return 1;
	}
	*done = j;
	return 0;
}
#endif

float
qr_box_area(const float *b)
{
	return (b[2] - b[0]) * (b[3] - b[1]);
}

/* See kernels.h. */
int
qr_box_suppressed(const struct qr_boxes *k, size_t n, const float *b,
		  float thr)
{
	float area_b = qr_box_area(b);
	size_t j = 0;

	if (!(area_b > 0.0f))
		return 0;
#if defined(__x86_64__) && defined(__GNUC__)
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW) {
		if (suppressed_avx512(k, n, b, area_b, thr, &j))
			return 1;
	}
#endif
	for (; j < n; j++) {
		float ix0 = k->x0[j] > b[0] ? k->x0[j] : b[0];
		float iy0 = k->y0[j] > b[1] ? k->y0[j] : b[1];
		float ix1 = k->x1[j] < b[2] ? k->x1[j] : b[2];
		float iy1 = k->y1[j] < b[3] ? k->y1[j] : b[3];
		float iw = ix1 - ix0 > 0.0f ? ix1 - ix0 : 0.0f;
		float ih = iy1 - iy0 > 0.0f ? iy1 - iy0 : 0.0f;
		float inter = iw * ih, uni;

		if (!(inter > 0.0f))
			continue;
		uni = k->area[j] + area_b - inter;
		if (!(k->area[j] > 0.0f) || !(uni > 0.0f))
			continue;
		if (inter / uni > thr)
			return 1;
	}
	return 0;
}
