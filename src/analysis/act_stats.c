/*
 * act_stats: streaming statistics of activations, updated one sample at a
 * time with O(tensor) work and O(1) (or O(channels)) memory per tensor:
 * float-vs-quant comparison sums, shared histograms, per-channel ranges.
 *
 * Formulas:
 *   cosine  = sum xy / (||x|| ||y||), per sample (MCT's similarity)
 *   SQNR    = 10 log10(sum x^2 / sum (x-y)^2) with all samples
 *             concatenated, i.e. 20 log10(||x|| / ||x-y||) (ONNX Runtime's
 *             qdq_loss_debug compute_signal_to_quantization_noice_ratio)
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_AS_AVX512 __attribute__((target("avx512f,avx512vl,fma")))
#define QR_AS_AVX2 __attribute__((target("avx2,fma")))
#endif

/* sxy / (sqrt(sxx) sqrt(syy)); 1 when both vectors are zero, 0 when one
 * is. */
static double
cosine_of(double sxy, double sxx, double syy)
{
	if (sxx == 0 && syy == 0)
		return 1.0;
	if (sxx == 0 || syy == 0)
		return 0.0;
	return sxy / (sqrt(sxx) * sqrt(syy));
}

double
qr_cosine(const float *x, const float *y, size_t n)
{
	double sxy = 0, sxx = 0, syy = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		double a = x[i], b = y[i];

		if (!isfinite(a) || !isfinite(b))
			continue;
		sxy += a * b;
		sxx += a * a;
		syy += b * b;
	}
	return cosine_of(sxy, sxx, syy);
}

#define CMP_BLOCK 1024             /* elements checked for finiteness at once */

/* 1 when every value of x and y (n each) is finite: one bit test per
 * value (exponent all ones is inf or NaN), no branch. */
static int
all_finite(const float *x, const float *y, size_t n)
{
	uint32_t bad = 0, u, v;
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(&u, &x[i], sizeof u);
		memcpy(&v, &y[i], sizeof v);
		bad |= ((u & 0x7f800000u) == 0x7f800000u) |
		       ((v & 0x7f800000u) == 0x7f800000u);
	}
	return bad == 0;
}

#ifdef QR_AS_AVX512
/* all_finite, 16 values at a time: an exponent of all ones in any lane of
 * x or y sets a mask bit. */
static QR_AS_AVX512 int
all_finite_avx512(const float *x, const float *y, size_t n)
{
	const __m512i ex = _mm512_set1_epi32(0x7f800000);
	__mmask16 bad = 0;
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512i u = _mm512_and_si512(_mm512_loadu_si512(x + i), ex);
		__m512i v = _mm512_and_si512(_mm512_loadu_si512(y + i), ex);

		bad |= _mm512_cmpeq_epi32_mask(u, ex) |
		       _mm512_cmpeq_epi32_mask(v, ex);
	}
	return bad == 0 && all_finite(x + i, y + i, n - i);
}
#endif

/* Sums of one all-finite block into s[0..3] (xy, xx, yy, ee) and the
 * largest |x - y| into *mx: 16 double lanes, in double as the scalar
 * loop. Returns the elements done (a multiple of 16). */
#ifdef QR_AS_AVX512
static QR_AS_AVX512 size_t
cmp_block_avx512(const float *x, const float *y, size_t m, double s[4],
		 double *mx)
{
	__m512d p0 = _mm512_setzero_pd(), p1 = p0, q0 = p0, q1 = p0;
	__m512d r0 = p0, r1 = p0, t0 = p0, t1 = p0, mm = p0;
	size_t i;

	for (i = 0; i + 16 <= m; i += 16) {
		__m512d u0 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
		__m512d u1 = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
		__m512d v0 = _mm512_cvtps_pd(_mm256_loadu_ps(y + i));
		__m512d v1 = _mm512_cvtps_pd(_mm256_loadu_ps(y + i + 8));
		__m512d e0 = _mm512_sub_pd(u0, v0), e1 = _mm512_sub_pd(u1, v1);

		p0 = _mm512_fmadd_pd(u0, v0, p0);
		p1 = _mm512_fmadd_pd(u1, v1, p1);
		q0 = _mm512_fmadd_pd(u0, u0, q0);
		q1 = _mm512_fmadd_pd(u1, u1, q1);
		r0 = _mm512_fmadd_pd(v0, v0, r0);
		r1 = _mm512_fmadd_pd(v1, v1, r1);
		t0 = _mm512_fmadd_pd(e0, e0, t0);
		t1 = _mm512_fmadd_pd(e1, e1, t1);
		mm = _mm512_max_pd(mm, _mm512_abs_pd(e0));
		mm = _mm512_max_pd(mm, _mm512_abs_pd(e1));
	}
	s[0] = _mm512_reduce_add_pd(_mm512_add_pd(p0, p1));
	s[1] = _mm512_reduce_add_pd(_mm512_add_pd(q0, q1));
	s[2] = _mm512_reduce_add_pd(_mm512_add_pd(r0, r1));
	s[3] = _mm512_reduce_add_pd(_mm512_add_pd(t0, t1));
	*mx = _mm512_reduce_max_pd(mm);
	return i;
}
#endif

#ifdef QR_AS_AVX2
/* all_finite and cmp_block_avx512 with AVX2 (4 double lanes, four sets
 * of sums for 16 values a step). */
static QR_AS_AVX2 int
all_finite_avx2(const float *x, const float *y, size_t n)
{
	const __m256i ex = _mm256_set1_epi32(0x7f800000);
	__m256i bad = _mm256_setzero_si256();
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256i u = _mm256_and_si256(_mm256_loadu_si256(
			(const __m256i *)(x + i)), ex);
		__m256i v = _mm256_and_si256(_mm256_loadu_si256(
			(const __m256i *)(y + i)), ex);

		bad = _mm256_or_si256(bad, _mm256_or_si256(
			_mm256_cmpeq_epi32(u, ex), _mm256_cmpeq_epi32(v, ex)));
	}
	return _mm256_testz_si256(bad, bad) && all_finite(x + i, y + i, n - i);
}

static QR_AS_AVX2 double
hsum4(__m256d v)
{
	double t[4];

	_mm256_storeu_pd(t, v);
	return (t[0] + t[1]) + (t[2] + t[3]);
}

static QR_AS_AVX2 size_t
cmp_block_avx2(const float *x, const float *y, size_t m, double s[4],
	       double *mx)
{
	const __m256d sign = _mm256_set1_pd(-0.0);
	__m256d p[4], q[4], r[4], t[4], mm = _mm256_setzero_pd();
	double mt[4];
	size_t i;
	int g;

	for (g = 0; g < 4; g++)
		p[g] = q[g] = r[g] = t[g] = _mm256_setzero_pd();
	for (i = 0; i + 16 <= m; i += 16)
		for (g = 0; g < 4; g++) {
			__m256d u = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * g));
			__m256d v = _mm256_cvtps_pd(_mm_loadu_ps(y + i + 4 * g));
			__m256d e = _mm256_sub_pd(u, v);

			p[g] = _mm256_fmadd_pd(u, v, p[g]);
			q[g] = _mm256_fmadd_pd(u, u, q[g]);
			r[g] = _mm256_fmadd_pd(v, v, r[g]);
			t[g] = _mm256_fmadd_pd(e, e, t[g]);
			mm = _mm256_max_pd(mm, _mm256_andnot_pd(sign, e));
		}
	s[0] = hsum4(_mm256_add_pd(_mm256_add_pd(p[0], p[1]),
				   _mm256_add_pd(p[2], p[3])));
	s[1] = hsum4(_mm256_add_pd(_mm256_add_pd(q[0], q[1]),
				   _mm256_add_pd(q[2], q[3])));
	s[2] = hsum4(_mm256_add_pd(_mm256_add_pd(r[0], r[1]),
				   _mm256_add_pd(r[2], r[3])));
	s[3] = hsum4(_mm256_add_pd(_mm256_add_pd(t[0], t[1]),
				   _mm256_add_pd(t[2], t[3])));
	_mm256_storeu_pd(mt, mm);
	*mx = mt[0];
	for (g = 1; g < 4; g++)
		*mx = mt[g] > *mx ? mt[g] : *mx;
	return i;
}
#endif

static int
block_finite(const float *x, const float *y, size_t n)
{
#ifdef QR_AS_AVX512
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		return all_finite_avx512(x, y, n);
	if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		return all_finite_avx2(x, y, n);
#endif
	return all_finite(x, y, n);
}

/* One sample: sums over finite pairs, non-finite counts, the sample's
 * cosine. Blocks that are all finite (nearly always) take a branch-free
 * loop with independent sets of sums (AVX-512 when the CPU has it); the
 * others are checked value by value. */
void
qr_cmp_add(struct qr_cmp_acc *a, const float *x, const float *y, size_t n)
{
	double sxy = 0, sxx = 0, syy = 0, see = 0, mx = a->max_abs, cs;
	uint64_t good = 0;
	size_t i, b, m;

	for (b = 0; b < n; b += m) {
		m = n - b < CMP_BLOCK ? n - b : CMP_BLOCK;
		if (block_finite(x + b, y + b, m)) {
			double p[4] = {0}, q[4] = {0}, r[4] = {0}, t[4] = {0};
			double mm[4] = {mx, mx, mx, mx};
			size_t k;

			i = b;
#ifdef QR_AS_AVX512
			if (qr_kernels_cpu_features() &
			    (QR_CPU_AVX512BW | QR_CPU_AVX2)) {
				double sv[4], vm;

				i += (qr_kernels_cpu_features() & QR_CPU_AVX512BW) ?
				     cmp_block_avx512(x + b, y + b, m, sv, &vm) :
				     cmp_block_avx2(x + b, y + b, m, sv, &vm);
				p[0] = sv[0];
				q[0] = sv[1];
				r[0] = sv[2];
				t[0] = sv[3];
				mm[0] = vm > mx ? vm : mx;
			}
#endif
			for (; i + 4 <= b + m; i += 4) {
				for (k = 0; k < 4; k++) {
					double u = x[i + k], v = y[i + k];
					double e = u - v;

					p[k] += u * v;
					q[k] += u * u;
					r[k] += v * v;
					t[k] += e * e;
					e = fabs(e);
					mm[k] = e > mm[k] ? e : mm[k];
				}
			}
			for (; i < b + m; i++) {
				double u = x[i], v = y[i], e = u - v;

				p[0] += u * v;
				q[0] += u * u;
				r[0] += v * v;
				t[0] += e * e;
				e = fabs(e);
				mm[0] = e > mm[0] ? e : mm[0];
			}
			sxy += (p[0] + p[1]) + (p[2] + p[3]);
			sxx += (q[0] + q[1]) + (q[2] + q[3]);
			syy += (r[0] + r[1]) + (r[2] + r[3]);
			see += (t[0] + t[1]) + (t[2] + t[3]);
			for (k = 0; k < 4; k++)
				mx = mm[k] > mx ? mm[k] : mx;
			good += m;
			continue;
		}
		for (i = b; i < b + m; i++) {
			double u = x[i], v = y[i], e;

			if (!isfinite(u) || !isfinite(v)) {
				a->nan_x += isnan(u) != 0;
				a->inf_x += isinf(u) != 0;
				a->nan_y += isnan(v) != 0;
				a->inf_y += isinf(v) != 0;
				continue;
			}
			e = u - v;
			sxy += u * v;
			sxx += u * u;
			syy += v * v;
			see += e * e;
			if (fabs(e) > mx)
				mx = fabs(e);
			good++;
		}
	}
	cs = cosine_of(sxy, sxx, syy);
	a->sxx += sxx;
	a->see += see;
	a->max_abs = mx;
	a->n += good;
	a->cos_sum += cs;
	a->cos_min = a->samples == 0 || cs < a->cos_min ? cs : a->cos_min;
	a->cos_max = a->samples == 0 || cs > a->cos_max ? cs : a->cos_max;
	a->cos_last = cs;
	a->samples++;
}

double
qr_cmp_cosine_mean(const struct qr_cmp_acc *a)
{
	return a->samples ? a->cos_sum / (double)a->samples : NAN;
}

double
qr_cmp_sqnr_db(const struct qr_cmp_acc *a)
{
	if (a->samples == 0)
		return NAN;
	if (a->see == 0)
		return INFINITY;
	if (a->sxx == 0)
		return -INFINITY;
	return 10.0 * log10(a->sxx / a->see);
}

double
qr_cmp_mse(const struct qr_cmp_acc *a)
{
	return a->n ? a->see / (double)a->n : NAN;
}

double
qr_cmp_norm_l2(const struct qr_cmp_acc *a)
{
	if (a->samples == 0)
		return NAN;
	if (a->sxx == 0)
		return a->see == 0 ? 0.0 : INFINITY;
	return sqrt(a->see / a->sxx);
}

/*
 * The shared histogram range: min and max over the finite values of x
 * and y (the first sample), padded by 5% of the span on each side so
 * later samples that reach a little further still land in a bin; a
 * constant tensor gets +-0.5 (+-5% of |v|). Values outside go to the
 * under/overflow counts.
 */
void
qr_as_hist_range(const float *x, const float *y, size_t n, double *lo,
		 double *hi)
{
	double mn = INFINITY, mx = -INFINITY, pad;
	size_t i;

	for (i = 0; i < n; i++) {
		if (isfinite(x[i])) {
			mn = x[i] < mn ? x[i] : mn;
			mx = x[i] > mx ? x[i] : mx;
		}
		if (y != NULL && isfinite(y[i])) {
			mn = y[i] < mn ? y[i] : mn;
			mx = y[i] > mx ? y[i] : mx;
		}
	}
	if (!(mn <= mx)) {
		mn = 0;
		mx = 0;
	}
	pad = (mx - mn) * 0.05;
	if (pad == 0)
		pad = mx != 0 ? fabs(mx) * 0.05 : 0.5;
	*lo = mn - pad;
	*hi = mx + pad;
}

/* Count the finite values of v into nbins bins over [lo, hi] (hi itself
 * goes in the last bin). */
#ifdef QR_AS_AVX512
/* The bin of each of v[0..n) in idx, n a multiple of 8, computed exactly
 * as the scalar loop does ((t - lo) * k in double, truncated, the last
 * bin for hi); nbins under lo, nbins + 1 over hi, nbins + 2 not finite. */
static QR_AS_AVX512 size_t
hist_idx_avx512(double lo, double hi, double k, size_t nbins, const float *v,
		size_t n, int32_t *idx)
{
	const __m512d vlo = _mm512_set1_pd(lo), vhi = _mm512_set1_pd(hi);
	const __m512d vk = _mm512_set1_pd(k);
	const __m256i last = _mm256_set1_epi32((int)nbins - 1);
	const __m256i below = _mm256_set1_epi32((int)nbins);
	const __m256i above = _mm256_set1_epi32((int)nbins + 1);
	const __m256i skip = _mm256_set1_epi32((int)nbins + 2);
	const __m256i zero = _mm256_setzero_si256();
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__m512d t = _mm512_cvtps_pd(_mm256_loadu_ps(v + i));
		__mmask8 fin = _mm512_cmp_pd_mask(t, t, _CMP_ORD_Q) &
			       _mm512_cmp_pd_mask(_mm512_abs_pd(t),
						  _mm512_set1_pd(INFINITY),
						  _CMP_NEQ_UQ);
		__mmask8 under = _mm512_cmp_pd_mask(t, vlo, _CMP_LT_OQ) & fin;
		__mmask8 over = _mm512_cmp_pd_mask(t, vhi, _CMP_GT_OQ) & fin;
		__mmask8 in = fin & ~under & ~over;
		__m256i b = _mm512_maskz_cvttpd_epi32(
			in, _mm512_mul_pd(_mm512_sub_pd(t, vlo), vk));

		/* within [0, nbins - 1] whatever (t - lo) * k gave: the
		 * caller indexes its counts with it */
		b = _mm256_min_epi32(_mm256_max_epi32(b, zero), last);
		b = _mm256_mask_mov_epi32(b, (__mmask8)~fin, skip);
		b = _mm256_mask_mov_epi32(b, under, below);
		b = _mm256_mask_mov_epi32(b, over, above);
		_mm256_storeu_si256((__m256i *)(idx + i), b);
	}
	return i;
}
#endif

#ifdef QR_AS_AVX2
/* hist_idx_avx512 with AVX2: the bins of 8 values from two 4-double
 * halves; the rare lanes under, over or not finite are set one by one
 * from the comparison masks. */
static QR_AS_AVX2 size_t
hist_idx_avx2(double lo, double hi, double k, size_t nbins, const float *v,
	      size_t n, int32_t *idx)
{
	const __m256d vlo = _mm256_set1_pd(lo), vhi = _mm256_set1_pd(hi);
	const __m256d vk = _mm256_set1_pd(k), inf = _mm256_set1_pd(INFINITY);
	const __m256d sign = _mm256_set1_pd(-0.0);
	const __m256i last = _mm256_set1_epi32((int)nbins - 1);
	const __m256i zero = _mm256_setzero_si256();
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		int fin = 0, under = 0, over = 0, h, l;
		__m128i bh[2];
		__m256i b;

		for (h = 0; h < 2; h++) {
			__m256d t = _mm256_cvtps_pd(_mm_loadu_ps(v + i + 4 * h));
			__m256d f = _mm256_and_pd(
				_mm256_cmp_pd(t, t, _CMP_ORD_Q),
				_mm256_cmp_pd(_mm256_andnot_pd(sign, t), inf,
					      _CMP_NEQ_UQ));

			fin |= _mm256_movemask_pd(f) << (4 * h);
			under |= _mm256_movemask_pd(_mm256_and_pd(f,
				_mm256_cmp_pd(t, vlo, _CMP_LT_OQ))) << (4 * h);
			over |= _mm256_movemask_pd(_mm256_and_pd(f,
				_mm256_cmp_pd(t, vhi, _CMP_GT_OQ))) << (4 * h);
			bh[h] = _mm256_cvttpd_epi32(_mm256_mul_pd(
				_mm256_sub_pd(t, vlo), vk));
		}
		b = _mm256_set_m128i(bh[1], bh[0]);
		b = _mm256_min_epi32(_mm256_max_epi32(b, zero), last);
		_mm256_storeu_si256((__m256i *)(idx + i), b);
		if (fin == 0xff && under == 0 && over == 0)
			continue;
		for (l = 0; l < 8; l++)
			if (!(fin >> l & 1))
				idx[i + l] = (int32_t)nbins + 2;
			else if (under >> l & 1)
				idx[i + l] = (int32_t)nbins;
			else if (over >> l & 1)
				idx[i + l] = (int32_t)nbins + 1;
	}
	return i;
}
#endif

#ifdef QR_AS_AVX512
#define HIST_FAST_BINS 256

static void
hist_fold(uint32_t (*cnt)[HIST_FAST_BINS + 3], size_t nbins, uint64_t *bins,
	  uint64_t *under, uint64_t *over)
{
	size_t b;

	for (b = 0; b < nbins; b++)
		bins[b] += (uint64_t)cnt[0][b] + cnt[1][b] + cnt[2][b] +
			   cnt[3][b];
	*under += (uint64_t)cnt[0][nbins] + cnt[1][nbins] + cnt[2][nbins] +
		  cnt[3][nbins];
	b = nbins + 1;
	*over += (uint64_t)cnt[0][b] + cnt[1][b] + cnt[2][b] + cnt[3][b];
}
#endif

void
qr_as_hist_add(double lo, double hi, uint64_t *bins, size_t nbins,
	       uint64_t *under, uint64_t *over, const float *v, size_t n)
{
	double k = nbins / (hi - lo);
	size_t i = 0;

#ifdef QR_AS_AVX512
	if ((qr_kernels_cpu_features() & (QR_CPU_AVX512BW | QR_CPU_AVX2)) &&
	    nbins <= HIST_FAST_BINS && n >= 8) {
		/* Four interleaved count sets, so runs of values in one bin
		 * do not wait on each other's increments; the bins after
		 * nbins count values below, above and not finite. */
		uint32_t cnt[4][HIST_FAST_BINS + 3];
		int32_t idx[256];
		size_t j, since = 0;

		memset(cnt, 0, sizeof cnt);
		while (n - i >= 8) {
			size_t m = n - i < 256 ? (n - i) / 8 * 8 : 256;

			if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
				hist_idx_avx512(lo, hi, k, nbins, v + i, m,
						idx);
			else
				hist_idx_avx2(lo, hi, k, nbins, v + i, m, idx);
			for (j = 0; j < m; j += 4) {
				cnt[0][idx[j]]++;
				cnt[1][idx[j + 1]]++;
				cnt[2][idx[j + 2]]++;
				cnt[3][idx[j + 3]]++;
			}
			i += m;
			since += m;
			if (since >= (size_t)1 << 30) {
				/* fold before a uint32 count could wrap */
				hist_fold(cnt, nbins, bins, under, over);
				memset(cnt, 0, sizeof cnt);
				since = 0;
			}
		}
		hist_fold(cnt, nbins, bins, under, over);
	}
#endif
	for (; i < n; i++) {
		double t = v[i], f;
		long b;

		if (!isfinite(t))
			continue;
		if (t < lo) {
			(*under)++;
			continue;
		}
		if (t > hi) {
			(*over)++;
			continue;
		}
		f = (t - lo) * k;
		/* hi in the last bin; a NaN (lo == hi) in the first, as the
		 * vector path's clamp puts it */
		b = f >= (double)nbins ? (long)nbins - 1 : f > 0 ? (long)f : 0;
		bins[b]++;
	}
}

/* The channel axis of an activation: 1 for rank >= 3 (NCHW), the last
 * axis for rank 2 ([batch, features]), none (-1) otherwise. */
int
qr_as_channel_axis(int ndim)
{
	if (ndim >= 3)
		return 1;
	if (ndim == 2)
		return 1;
	return -1;
}

/* Add one sample to per-channel min/max/sum; fixes the channel count on
 * the first sample. Returns 0 when dims disagree with it (skipped). */
#ifdef QR_AS_AVX512
/* One channel's run of qr_as_chan_add, 16 values at a time: the finite
 * values' min and max (into *mn, *mx), their sum in double (eight lanes
 * each for the low and high halves, so the sum's rounding differs from
 * the scalar loop's in the last bits) and count. Returns the elements
 * done (a multiple of 16). */
static QR_AS_AVX512 size_t
chan_run_avx512(const float *p, size_t n, float *mn, float *mx, double *s,
		uint64_t *m)
{
	const __m512 inf = _mm512_set1_ps(INFINITY);
	__m512 vmn = _mm512_set1_ps(*mn), vmx = _mm512_set1_ps(*mx);
	__m512d s0 = _mm512_setzero_pd(), s1 = s0;
	uint64_t c = 0;
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(p + i);
		__mmask16 fin = _mm512_cmp_ps_mask(_mm512_abs_ps(v), inf,
						   _CMP_LT_OQ);

		vmn = _mm512_mask_min_ps(vmn, fin, vmn, v);
		vmx = _mm512_mask_max_ps(vmx, fin, vmx, v);
		s0 = _mm512_add_pd(s0, _mm512_maskz_cvtps_pd(
			(__mmask8)fin, _mm512_castps512_ps256(v)));
		s1 = _mm512_add_pd(s1, _mm512_maskz_cvtps_pd(
			(__mmask8)(fin >> 8),
			_mm256_castpd_ps(_mm512_extractf64x4_pd(
				_mm512_castps_pd(v), 1))));
		c += (uint64_t)__builtin_popcount(fin);
	}
	*mn = _mm512_reduce_min_ps(vmn);
	*mx = _mm512_reduce_max_ps(vmx);
	*s += _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
	*m += c;
	return i;
}
#endif

#ifdef QR_AS_AVX2
/* chan_run_avx512 on 8 lanes: blends keep min and max to the finite
 * values, the not-finite ones add +0 to the sums. */
static QR_AS_AVX2 size_t
chan_run_avx2(const float *p, size_t n, float *mn, float *mx, double *s,
	      uint64_t *m)
{
	const __m256 inf = _mm256_set1_ps(INFINITY), sign = _mm256_set1_ps(-0.0f);
	__m256 vmn = _mm256_set1_ps(*mn), vmx = _mm256_set1_ps(*mx);
	__m256d s0 = _mm256_setzero_pd(), s1 = s0;
	float a[8], b[8];
	uint64_t c = 0;
	size_t i;
	int l;

	for (i = 0; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(p + i);
		__m256 fin = _mm256_cmp_ps(_mm256_andnot_ps(sign, v), inf,
					   _CMP_LT_OQ);
		__m256 f = _mm256_and_ps(v, fin);

		vmn = _mm256_blendv_ps(vmn, _mm256_min_ps(vmn, v), fin);
		vmx = _mm256_blendv_ps(vmx, _mm256_max_ps(vmx, v), fin);
		s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
		s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(
			_mm256_extractf128_ps(f, 1)));
		c += (uint64_t)__builtin_popcount(
			(unsigned)_mm256_movemask_ps(fin));
	}
	_mm256_storeu_ps(a, vmn);
	_mm256_storeu_ps(b, vmx);
	for (l = 0; l < 8; l++) {
		*mn = a[l] < *mn ? a[l] : *mn;
		*mx = b[l] > *mx ? b[l] : *mx;
	}
	{
		double t[4];

		_mm256_storeu_pd(t, _mm256_add_pd(s0, s1));
		*s += (t[0] + t[1]) + (t[2] + t[3]);
	}
	*m += c;
	return i;
}
#endif

/*
 * One sample into the input-channel sums of a weighted layer's input:
 * per channel of in->axis max |x|, sum x^2 and the count, and over the
 * whole tensor the power sums of x up to the fourth (for the kurtosis),
 * finite values only, in double. Skipped when the channel count differs
 * from the first sample's.
 */
static void
inch_add(struct qr_as_inch *in, const float *x, const int64_t *dims, int ndim)
{
	int ax = in->axis < 0 ? ndim - 1 : in->axis;
	size_t outer, ch, inner, o, k, i;
	double m0 = 0, m1 = 0, m2 = 0, m3 = 0;
	uint64_t n = 0;

	if (ndim < 1 || ax >= ndim)
		return;
	qr_an_split(dims, ndim, ax, &outer, &ch, &inner);
	if (in->ch == 0 && ch > 0) {
		in->ch = ch;
		in->amax = xcalloc(ch, sizeof *in->amax);
		in->ss = xcalloc(ch, sizeof *in->ss);
		in->cnt = xcalloc(ch, sizeof *in->cnt);
	}
	if (ch != in->ch || ch == 0)
		return;
	for (o = 0; o < outer; o++)
		for (k = 0; k < ch; k++) {
			const float *p = x + (o * ch + k) * inner;
			float amax = in->amax[k];
			double ss = 0;
			uint64_t m = 0;

			for (i = 0; i < inner; i++) {
				double v = p[i], v2;

				if (!isfinite(v))
					continue;
				amax = fabsf(p[i]) > amax ? fabsf(p[i]) : amax;
				v2 = v * v;
				ss += v2;
				m0 += v;
				m2 += v2 * v;
				m3 += v2 * v2;
				m++;
			}
			in->amax[k] = amax;
			in->ss[k] += ss;
			in->cnt[k] += m;
			m1 += ss;
			n += m;
		}
	in->m[0] += m0;
	in->m[1] += m1;
	in->m[2] += m2;
	in->m[3] += m3;
	in->n += n;
}

int
qr_as_chan_add(struct qr_as_chan *c, const float *x, const int64_t *dims,
	       int ndim)
{
	int axis = qr_as_channel_axis(ndim);
	size_t outer, ch, inner, o, k, i;

	if (axis < 0) {
		outer = 1;
		ch = 1;
		for (inner = 1, k = 0; k < (size_t)ndim; k++)
			inner *= (size_t)dims[k];
	} else {
		qr_an_split(dims, ndim, axis, &outer, &ch, &inner);
	}
	if (c->ch == 0) {
		c->ch = ch;
		c->mn = xmalloc((ch ? ch : 1) * sizeof *c->mn);
		c->mx = xmalloc((ch ? ch : 1) * sizeof *c->mx);
		c->sum = xcalloc(ch ? ch : 1, sizeof *c->sum);
		c->cnt = xcalloc(ch ? ch : 1, sizeof *c->cnt);
		for (k = 0; k < ch; k++) {
			c->mn[k] = INFINITY;
			c->mx[k] = -INFINITY;
		}
		c->min = INFINITY;
		c->max = -INFINITY;
	}
	if (c->in != NULL)
		inch_add(c->in, x, dims, ndim);
	if (ch != c->ch)
		return 0;
	for (o = 0; o < outer; o++) {
		for (k = 0; k < ch; k++) {
			const float *p = x + (o * ch + k) * inner;
			float mn = c->mn[k], mx = c->mx[k];
			double s = 0;
			uint64_t m = 0;

			i = 0;
#ifdef QR_AS_AVX512
			if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
				i = chan_run_avx512(p, inner, &mn, &mx, &s, &m);
			else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
				i = chan_run_avx2(p, inner, &mn, &mx, &s, &m);
#endif
			for (; i < inner; i++) {
				if (!isfinite(p[i]))
					continue;
				mn = p[i] < mn ? p[i] : mn;
				mx = p[i] > mx ? p[i] : mx;
				s += p[i];
				m++;
			}
			c->mn[k] = mn;
			c->mx[k] = mx;
			c->sum[k] += s;
			c->cnt[k] += m;
			if (mn < c->min)
				c->min = mn;
			if (mx > c->max)
				c->max = mx;
		}
	}
	return 1;
}

static void
inch_free(struct qr_as_inch *in)
{
	if (in == NULL)
		return;
	free(in->amax);
	free(in->ss);
	free(in->cnt);
	free(in);
}

/* *to as a copy of from: its arrays reused when the channel counts
 * agree (the float run copies every sample's statistics). */
static void
inch_copy(struct qr_as_inch **to, const struct qr_as_inch *from)
{
	struct qr_as_inch *r = *to;
	size_t n = from != NULL ? from->ch : 0;

	if (from == NULL || (r != NULL && r->ch != n)) {
		inch_free(r);
		*to = r = NULL;
	}
	if (from == NULL)
		return;
	if (r == NULL) {
		*to = r = xcalloc(1, sizeof *r);
		if (n > 0) {
			r->amax = xmalloc(n * sizeof *r->amax);
			r->ss = xmalloc(n * sizeof *r->ss);
			r->cnt = xmalloc(n * sizeof *r->cnt);
		}
	}
	r->axis = from->axis;
	r->ch = n;
	memcpy(r->m, from->m, sizeof r->m);
	r->n = from->n;
	if (n > 0) {
		memcpy(r->amax, from->amax, n * sizeof *r->amax);
		memcpy(r->ss, from->ss, n * sizeof *r->ss);
		memcpy(r->cnt, from->cnt, n * sizeof *r->cnt);
	}
}

/* See analysis-int.h. The float run keeps a copy of each tensor's
 * statistics from before the sample it takes, to put back when that
 * run fails (act_sched.c). */
void
qr_as_chan_copy(struct qr_as_chan *to, const struct qr_as_chan *from)
{
	size_t n = from->ch;

	if (to->ch != n) {
		struct qr_as_inch *keep = to->in;

		to->in = NULL;
		qr_as_chan_free(to);
		to->in = keep;
		if (n > 0) {
			to->mn = xmalloc(n * sizeof *to->mn);
			to->mx = xmalloc(n * sizeof *to->mx);
			to->sum = xmalloc(n * sizeof *to->sum);
			to->cnt = xmalloc(n * sizeof *to->cnt);
		}
		to->ch = n;
	}
	if (n > 0) {
		memcpy(to->mn, from->mn, n * sizeof *to->mn);
		memcpy(to->mx, from->mx, n * sizeof *to->mx);
		memcpy(to->sum, from->sum, n * sizeof *to->sum);
		memcpy(to->cnt, from->cnt, n * sizeof *to->cnt);
	}
	to->min = from->min;
	to->max = from->max;
	inch_copy(&to->in, from->in);
}

void
qr_as_chan_free(struct qr_as_chan *c)
{
	free(c->mn);
	free(c->mx);
	free(c->sum);
	free(c->cnt);
	inch_free(c->in);
	memset(c, 0, sizeof *c);
}
