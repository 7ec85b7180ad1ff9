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

void
qr_quantize_f32(const float *x, size_t outer, size_t axis_len, size_t inner,
		const float *scale, const int32_t *zp, enum qr_qtype t,
		void *y)
{
	int64_t qmin, qmax;
	size_t o, a, i, at = 0;

	qrange(t, &qmin, &qmax);
	for (o = 0; o < outer; o++) {
		for (a = 0; a < axis_len; a++) {
			float s = scale[a];
			int32_t z = zp ? zp[a] : 0;

			for (i = 0; i < inner; i++, at++)
				store(y, at, t,
				      quant_one(x[at], s, z, qmin, qmax));
		}
	}
}

void
qr_dequantize_f32(const void *x, enum qr_qtype t, size_t outer,
		  size_t axis_len, size_t inner, const float *scale,
		  const int32_t *zp, float *y)
{
	size_t o, a, i, at = 0;

	for (o = 0; o < outer; o++) {
		for (a = 0; a < axis_len; a++) {
			float s = scale[a];
			int64_t z = zp ? zp[a] : 0;

			for (i = 0; i < inner; i++, at++)
				y[at] = (float)(int32_t)(load(x, at, t) - z) *
					s;
		}
	}
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

void
qr_qlinear_add(const void *a, size_t a_step, float sa, int32_t za,
	       const void *b, size_t b_step, float sb, int32_t zb, float sc,
	       int32_t zc, enum qr_qtype t, void *y, size_t n)
{
	float ra = sa / sc, rb = sb / sc;
	float ka = ra * (float)za, kb = rb * (float)zb;
	float k = (float)zc - (ka + kb);
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
		for (i = 0; i < n; i++) {
			float av = (float)load(a, i, t);
			float bv = (float)load(b, i, t);
			float v = fmaf(av, ra, fmaf(bv, rb, k));

			store(y, i, t, sat8(qr_cvt_even_s32(v), t));
		}
	}
}

void
qr_qlinear_mul(const void *a, size_t a_step, float sa, int32_t za,
	       const void *b, size_t b_step, float sb, int32_t zb, float sc,
	       int32_t zc, enum qr_qtype t, void *y, size_t n)
{
	float sab = sa * sb;
	float r = sab / sc;
	size_t i;

	QR_ASSERT(t == QR_QT_U8 || t == QR_QT_S8);
	for (i = 0; i < n; i++) {
		int32_t pa = (int32_t)load(a, i * a_step, t) - za;
		int32_t pb = (int32_t)load(b, i * b_step, t) - zb;
		float v = (float)(pa * pb) * r;
		int32_t q = qr_cvt_even_s32(v);

		/* cvtps2dq, then the zero point in int32, then packs */
		store(y, i, t, sat8(q == INT32_MIN ? q : qr_wrap_add(q, zc), t));
	}
}
