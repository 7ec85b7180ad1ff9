/*
 * maths: plain array maths behind the weight analyses. No model types here:
 * every function takes literal arrays, so tests can check them by hand.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void
qr_an_split(const int64_t *dims, int ndim, int axis, size_t *outer,
	    size_t *chans, size_t *inner)
{
	size_t o = 1, in = 1;
	int i;

	QR_ASSERT(axis >= 0 && axis < ndim);
	for (i = 0; i < axis; i++)
		o *= (size_t)dims[i];
	for (i = axis + 1; i < ndim; i++)
		in *= (size_t)dims[i];
	*outer = o;
	*chans = (size_t)dims[axis];
	*inner = in;
}

/*
 * The hot loops below keep LANES independent float accumulators so the
 * compiler can vectorize them without -ffast-math, and flush them into
 * doubles every CHUNK elements (float error stays below ~1e-5 relative).
 */
#define LANES 8
#define CHUNK 1024

static double
lanes_sum(const float *a)
{
	double s = 0;
	int l;

	for (l = 0; l < LANES; l++)
		s += a[l];
	return s;
}

/* min, max and sum of a contiguous run of one channel. */
static void
run_minmax_sum(const float *p, size_t n, float *lo, float *hi, double *sum)
{
	float mn[LANES], mx[LANES], sm[LANES];
	size_t i = 0, end;
	int l;

	for (l = 0; l < LANES; l++) {
		mn[l] = *lo;
		mx[l] = *hi;
	}
	while (i < n) {
		end = i + CHUNK < n ? i + CHUNK : n;
		for (l = 0; l < LANES; l++)
			sm[l] = 0;
		for (; i + LANES <= end; i += LANES)
			for (l = 0; l < LANES; l++) {
				float v = p[i + l];

				mn[l] = v < mn[l] ? v : mn[l];
				mx[l] = v > mx[l] ? v : mx[l];
				sm[l] += v;
			}
		for (; i < end; i++) {
			mn[0] = p[i] < mn[0] ? p[i] : mn[0];
			mx[0] = p[i] > mx[0] ? p[i] : mx[0];
			sm[0] += p[i];
		}
		*sum += lanes_sum(sm);
	}
	for (l = 0; l < LANES; l++) {
		*lo = mn[l] < *lo ? mn[l] : *lo;
		*hi = mx[l] > *hi ? mx[l] : *hi;
	}
}

/* sum (x - m)^2 over a contiguous run. */
static double
run_sqdev(const float *p, size_t n, float m)
{
	float sq[LANES];
	size_t i = 0, end;
	double s = 0;
	int l;

	while (i < n) {
		end = i + CHUNK < n ? i + CHUNK : n;
		for (l = 0; l < LANES; l++)
			sq[l] = 0;
		for (; i + LANES <= end; i += LANES)
			for (l = 0; l < LANES; l++) {
				float d = p[i + l] - m;

				sq[l] += d * d;
			}
		for (; i < end; i++)
			sq[0] += (p[i] - m) * (p[i] - m);
		s += lanes_sum(sq);
	}
	return s;
}

/*
 * Per-channel statistics along axis: the elements of channel c are
 * w[o][c][i] for every outer index o and inner index i. mean is the
 * arithmetic mean; std is the population standard deviation
 * sqrt(sum (x - mean)^2 / n), computed in two passes (no cancellation).
 * A channel with no elements gets zeros.
 */
void
qr_channel_stats(const float *w, const int64_t *dims, int ndim, int axis,
		 float *mn, float *mx, float *mean, float *std)
{
	size_t outer, C, inner, o, c, per;
	double *sum = NULL, *sq = NULL;

	qr_an_split(dims, ndim, axis, &outer, &C, &inner);
	if (C == 0)
		return;
	per = outer * inner;
	sum = xcalloc(C, sizeof *sum);
	sq = xcalloc(C, sizeof *sq);
	for (c = 0; c < C; c++) {
		mn[c] = per ? INFINITY : 0;
		mx[c] = per ? -INFINITY : 0;
	}
	for (o = 0; o < outer; o++) {
		const float *row = w + o * C * inner;

		if (inner == 1) {
			for (c = 0; c < C; c++) {
				float v = row[c];

				mn[c] = v < mn[c] ? v : mn[c];
				mx[c] = v > mx[c] ? v : mx[c];
				sum[c] += v;
			}
			continue;
		}
		for (c = 0; c < C; c++)
			run_minmax_sum(row + c * inner, inner, &mn[c], &mx[c],
				       &sum[c]);
	}
	for (c = 0; c < C; c++) {
		sum[c] = per ? sum[c] / (double)per : 0;
		mean[c] = (float)sum[c];
	}
	for (o = 0; o < outer; o++) {
		const float *row = w + o * C * inner;

		if (inner == 1) {
			for (c = 0; c < C; c++) {
				double d = (double)row[c] - sum[c];

				sq[c] += d * d;
			}
			continue;
		}
		for (c = 0; c < C; c++)
			sq[c] += run_sqdev(row + c * inner, inner, mean[c]);
	}
	for (c = 0; c < C; c++)
		std[c] = per ? (float)sqrt(sq[c] / (double)per) : 0;
	free(sum);
	free(sq);
}

static int
cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* numpy.quantile's default ("linear"): position p(n-1) in the sorted
 * values, interpolated between its two neighbours. */
static double
quantile_sorted(const float *s, size_t n, double p)
{
	double pos = p * (double)(n - 1), frac;
	size_t lo = (size_t)floor(pos);

	if (lo + 1 >= n)
		return s[n - 1];
	frac = pos - (double)lo;
	return (double)s[lo] + frac * ((double)s[lo + 1] - (double)s[lo]);
}

/*
 * Dead channels: range_c = mx_c - mn_c is 0, or below QR_DEAD_FRACTION
 * of the median range over the channels with a finite range (numpy's
 * median). A NaN or infinite range is not dead (it is left to the
 * callers, as before). dead may be NULL.
 */
size_t
qr_dead_channels(const float *mn, const float *mx, size_t n,
		 unsigned char *dead)
{
	float *r = xmalloc((n ? n : 1) * sizeof *r);
	size_t c, m = 0, cnt = 0;
	double thr = 0;

	for (c = 0; c < n; c++) {
		double v = (double)mx[c] - (double)mn[c];

		if (isfinite(v))
			r[m++] = (float)v;
	}
	if (m > 0) {
		qsort(r, m, sizeof *r, cmp_float);
		thr = QR_DEAD_FRACTION * quantile_sorted(r, m, 0.5);
	}
	free(r);
	for (c = 0; c < n; c++) {
		double v = (double)mx[c] - (double)mn[c];
		int d = v == 0 || (isfinite(v) && v < thr);

		if (dead != NULL)
			dead[c] = (unsigned char)d;
		cnt += (size_t)d;
	}
	return cnt;
}

/*
 * AIMET's relative weight range: rel_c = range_c / min_k range_k where
 * range = max - min and the minimum is taken over the live channels
 * (qr_dead_channels: not dead, and a range > 0). A dead channel gets 0
 * and so does a NaN range; when no channel is live all rel are 0. Dead
 * channels stay out of the minimum because a pruned channel (range 0,
 * or a denormal 1e-38) would otherwise divide every other one into
 * 1e30 and beyond, a number that says nothing about the live ones.
 */
double
qr_rel_range(const float *mn, const float *mx, size_t n, float *rel)
{
	unsigned char *dead = xmalloc(n ? n : 1);
	double lo = INFINITY, best = 0;
	size_t c;

	qr_dead_channels(mn, mx, n, dead);
	for (c = 0; c < n; c++) {
		double r = (double)mx[c] - (double)mn[c];

		if (!dead[c] && r > 0 && r < lo)
			lo = r;
	}
	for (c = 0; c < n; c++) {
		double r = (double)mx[c] - (double)mn[c];

		rel[c] = (!dead[c] && r > 0 && isfinite(lo)) ?
			(float)(r / lo) : 0;
		if (rel[c] > best)
			best = rel[c];
	}
	free(dead);
	return best;
}

/*
 * Tukey's fence Q3 + k*IQR (Tukey, "Exploratory Data Analysis", 1977; AIMET
 * flags channels above it with k = 1.5). Quartiles use numpy's linear
 * interpolation so the numbers match a Python notebook. One sort: O(n log
 * n). An empty set gives 0 for everything.
 */
double
qr_tukey_fence(const float *v, size_t n, double k, double *q1, double *q3)
{
	float *s;
	double a, b;

	if (n == 0) {
		if (q1)
			*q1 = 0;
		if (q3)
			*q3 = 0;
		return 0;
	}
	s = xmalloc(n * sizeof *s);
	memcpy(s, v, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_float);
	a = quantile_sorted(s, n, 0.25);
	b = quantile_sorted(s, n, 0.75);
	free(s);
	if (q1)
		*q1 = a;
	if (q3)
		*q3 = b;
	return b + k * (b - a);
}

/*
 * Round half to even for |x| < 2^22 without a libm call: adding 1.5*2^23
 * pushes the fraction out of a float's mantissa, and the FPU's default
 * rounding mode (to nearest, ties to even) does the rest. Inputs here are
 * at most 2^15 after the clamp, and the build never uses -ffast-math.
 */
static inline float
round_even(float x)
{
	const float big = 12582912.0f; /* 1.5 * 2^23 */

	return (x + big) - big;
}

/* v less its symmetric quantization with scale s (inv = 1 / s):
 * q = clamp(round_half_even(v * inv), -qmax, qmax), then v - q s. */
static inline float
sym_err(float v, float inv, float s, float qmax)
{
	float q = round_even(v * inv);

	q = q > qmax ? qmax : (q < -qmax ? -qmax : q);
	return v - q * s;
}

void
qr_an_channel_absmax(const float *w, const int64_t *dims, int ndim, int axis,
		     float *mx)
{
	size_t outer, C, inner, o, c, i;

	qr_an_split(dims, ndim, axis, &outer, &C, &inner);
	for (c = 0; c < C; c++)
		mx[c] = 0;
	for (o = 0; o < outer; o++) {
		for (c = 0; c < C; c++) {
			const float *p = w + (o * C + c) * inner;
			float m = mx[c];

			for (i = 0; i < inner; i++) {
				float a = fabsf(p[i]);

				m = a > m ? a : m;
			}
			mx[c] = m;
		}
	}
}

static double
sqnr_from(double sig, double err)
{
	if (err == 0)
		return INFINITY;
	return 10.0 * log10(sig / err);
}

/* Accumulators of one SQNR pass: signal, per-tensor and per-channel
 * error. */
struct sqacc {
	double sig, et, ec;
};

/* A run of n elements that share the per-channel scale cs (1/cs = ci). */
static void
run_sqnr(const float *p, size_t n, float ti, float ts, float ci, float cs,
	 float qmax, struct sqacc *acc)
{
	float s[LANES], a[LANES], b[LANES];
	size_t i = 0, end;
	int l;

	while (i < n) {
		end = i + CHUNK < n ? i + CHUNK : n;
		for (l = 0; l < LANES; l++)
			s[l] = a[l] = b[l] = 0;
		for (; i + LANES <= end; i += LANES)
			for (l = 0; l < LANES; l++) {
				float v = p[i + l], d;

				d = sym_err(v, ti, ts, qmax);
				a[l] += d * d;
				d = sym_err(v, ci, cs, qmax);
				b[l] += d * d;
				s[l] += v * v;
			}
		for (; i < end; i++) {
			float v = p[i], d;

			d = sym_err(v, ti, ts, qmax);
			a[0] += d * d;
			d = sym_err(v, ci, cs, qmax);
			b[0] += d * d;
			s[0] += v * v;
		}
		acc->sig += lanes_sum(s);
		acc->et += lanes_sum(a);
		acc->ec += lanes_sum(b);
	}
}

/* A row of C elements, one per channel (the channel axis is the last). */
static void
row_sqnr(const float *p, size_t C, float ti, float ts, const float *ci,
	 const float *cs, float qmax, struct sqacc *acc)
{
	double s = 0, a = 0, b = 0;
	size_t c;

	for (c = 0; c < C; c++) {
		float v = p[c], d;

		d = sym_err(v, ti, ts, qmax);
		a += (double)d * d;
		d = sym_err(v, ci[c], cs[c], qmax);
		b += (double)d * d;
		s += (double)v * v;
	}
	acc->sig += s;
	acc->et += a;
	acc->ec += b;
}

/*
 * Predicted SQNR of symmetric signed quantization with `bits` bits, the
 * scheme ONNX Runtime's quantizer uses for weights (symmetric=True,
 * int8 range [-127, 127]): qmax = 2^(bits-1) - 1, scale = max|w| / qmax,
 * q = clamp(round_half_even(w / scale), -qmax, qmax), w' = q * scale, and
 * SQNR = 10 log10(sum w^2 / sum (w - w')^2) dB. Scale and q are float as
 * in ORT, w / scale is taken as w * (1/scale) (it may differ in the last
 * bit, which moves a tie about once in millions of weights); sums are
 * float per 1024 elements, then double. +inf when the error is 0 (an
 * all-zero tensor or channel included); report.json writes that as null.
 */
void
qr_an_sqnr_sym2(const float *w, const int64_t *dims, int ndim, int axis,
		const float *chmax, int bits, double *per_tensor,
		double *per_channel)
{
	size_t outer, C, inner, o, c;
	float qmax = (float)((1 << (bits - 1)) - 1), tmax = 0, ts, ti;
	float *cs, *ci;
	struct sqacc acc = { 0, 0, 0 };

	qr_an_split(dims, ndim, axis, &outer, &C, &inner);
	cs = xmalloc((C ? C : 1) * sizeof *cs);
	ci = xmalloc((C ? C : 1) * sizeof *ci);
	for (c = 0; c < C; c++) {
		tmax = chmax[c] > tmax ? chmax[c] : tmax;
		/* an all-zero channel: any scale is exact */
		cs[c] = chmax[c] > 0 ? chmax[c] / qmax : 1;
		ci[c] = 1.0f / cs[c];
	}
	ts = tmax > 0 ? tmax / qmax : 1;
	ti = 1.0f / ts;
	for (o = 0; o < outer; o++) {
		const float *row = w + o * C * inner;

		if (inner == 1) {
			row_sqnr(row, C, ti, ts, ci, cs, qmax, &acc);
			continue;
		}
		for (c = 0; c < C; c++)
			run_sqnr(row + c * inner, inner, ti, ts, ci[c], cs[c],
				 qmax, &acc);
	}
	free(cs);
	free(ci);
	if (per_tensor)
		*per_tensor = sqnr_from(acc.sig, acc.et);
	if (per_channel)
		*per_channel = sqnr_from(acc.sig, acc.ec);
}

/* Per-tensor only: the scheme of qr_an_sqnr_sym2 with one scale for the
 * absolute maximum amax, in one pass. */
double
qr_an_sqnr_sym_tensor(const float *w, size_t n, float amax, int bits)
{
	float qmax = (float)((1 << (bits - 1)) - 1);
	float ts = amax > 0 ? amax / qmax : 1, ti = 1.0f / ts;
	float s[LANES], a[LANES];
	double sig = 0, err = 0;
	size_t i = 0, end;
	int l;

	while (i < n) {
		end = i + CHUNK < n ? i + CHUNK : n;
		for (l = 0; l < LANES; l++)
			s[l] = a[l] = 0;
		for (; i + LANES <= end; i += LANES)
			for (l = 0; l < LANES; l++) {
				float v = w[i + l], d;

				d = sym_err(v, ti, ts, qmax);
				a[l] += d * d;
				s[l] += v * v;
			}
		for (; i < end; i++) {
			float v = w[i], d;

			d = sym_err(v, ti, ts, qmax);
			a[0] += d * d;
			s[0] += v * v;
		}
		sig += lanes_sum(s);
		err += lanes_sum(a);
	}
	return sqnr_from(sig, err);
}

/* Per-channel min and max only, one pass (see qr_channel_stats). */
void
qr_an_channel_minmax(const float *w, const int64_t *dims, int ndim, int axis,
		     float *mn, float *mx)
{
	size_t outer, C, inner, o, c;
	double dummy = 0;

	qr_an_split(dims, ndim, axis, &outer, &C, &inner);
	for (c = 0; c < C; c++) {
		mn[c] = outer * inner != 0 ? INFINITY : 0;
		mx[c] = outer * inner != 0 ? -INFINITY : 0;
	}
	for (o = 0; o < outer; o++) {
		const float *row = w + o * C * inner;

		if (inner == 1) {
			for (c = 0; c < C; c++) {
				mn[c] = row[c] < mn[c] ? row[c] : mn[c];
				mx[c] = row[c] > mx[c] ? row[c] : mx[c];
			}
			continue;
		}
		for (c = 0; c < C; c++)
			run_minmax_sum(row + c * inner, inner, &mn[c], &mx[c],
				       &dummy);
	}
}

/* See qr_an_sqnr_sym2 for the scheme and its source. */
double
qr_sqnr_sym(const float *w, const int64_t *dims, int ndim, int axis,
	    int per_channel, int bits)
{
	size_t outer, C, inner;
	float *mx;
	double pt, pc;

	qr_an_split(dims, ndim, axis, &outer, &C, &inner);
	mx = xmalloc((C ? C : 1) * sizeof *mx);
	qr_an_channel_absmax(w, dims, ndim, axis, mx);
	qr_an_sqnr_sym2(w, dims, ndim, axis, mx, bits, &pt, &pc);
	free(mx);
	return per_channel ? pc : pt;
}

/*
 * SQNR of y against the reference x in dB, 10 log10(sum x^2 / sum
 * (x-y)^2), the same quantity as ONNX Runtime qdq_loss_debug's
 * 20 log10(|x| / |x-y|). +inf when y equals x.
 */
double
qr_sqnr_db(const float *x, const float *y, size_t n)
{
	float s[LANES], e[LANES];
	double sig = 0, err = 0;
	size_t i = 0, end;
	int l;

	while (i < n) {
		end = i + CHUNK < n ? i + CHUNK : n;
		for (l = 0; l < LANES; l++)
			s[l] = e[l] = 0;
		for (; i + LANES <= end; i += LANES)
			for (l = 0; l < LANES; l++) {
				float d = x[i + l] - y[i + l];

				s[l] += x[i + l] * x[i + l];
				e[l] += d * d;
			}
		for (; i < end; i++) {
			s[0] += x[i] * x[i];
			e[0] += (x[i] - y[i]) * (x[i] - y[i]);
		}
		sig += lanes_sum(s);
		err += lanes_sum(e);
	}
	return sqnr_from(sig, err);
}

/*
 * CLE pair scales (Nagel et al. 2019, "Data-Free Quantization Through
 * Weight Equalization and Bias Correction", eq. 11): s_i = sqrt(r1_i /
 * r2_i), so that r1_i / s_i == r2_i * s_i. A zero (or non-finite) range
 * gives s = 1: that channel is left alone.
 */
void
qr_cle_pair_scales(const float *r1, const float *r2, size_t n, float *s)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double v = (double)r1[i] / (double)r2[i];

		s[i] = (r1[i] > 0 && r2[i] > 0 && isfinite(v)) ?
			(float)sqrt(v) : 1.0f;
	}
}

/*
 * CLE triplet scales for conv -> depthwise -> conv (AIMET's
 * cross_layer_scaling for depthwise-separable layers, after Nagel et al.
 * 2019): with c = cbrt(r0 r1 r2), s12 = r0 / c and s23 = c / r2, so all
 * three ranges become c. Any zero range gives s12 = s23 = 1.
 */
void
qr_cle_triplet_scales(const float *r0, const float *r1, const float *r2,
		      size_t n, float *s12, float *s23)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double c = cbrt((double)r0[i] * r1[i] * r2[i]);

		if (r0[i] > 0 && r1[i] > 0 && r2[i] > 0 && isfinite(c) &&
		    c > 0) {
			s12[i] = (float)(r0[i] / c);
			s23[i] = (float)(c / r2[i]);
		} else {
			s12[i] = 1.0f;
			s23[i] = 1.0f;
		}
	}
}

void
qr_an_scale_axis(float *w, const int64_t *dims, int ndim, int axis,
		 const float *s)
{
	size_t outer, C, inner, o, c, i;

	qr_an_split(dims, ndim, axis, &outer, &C, &inner);
	for (o = 0; o < outer; o++) {
		for (c = 0; c < C; c++) {
			float *p = w + (o * C + c) * inner;

			for (i = 0; i < inner; i++)
				p[i] *= s[c];
		}
	}
}
