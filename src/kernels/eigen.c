/*
 * eigen: the float exp, log, sin and cos of ONNX Runtime's Eigen
 * expressions, and the ops ONNX Runtime builds on them (Elu, Selu, Celu,
 * Softplus, Log, Sin, Cos), bit for bit.
 *
 * ONNX Runtime evaluates these ops as Eigen array expressions over the
 * output. Eigen (SSE, packets of 4 floats, no FMA in ONNX Runtime's
 * x86-64 build) computes each packet with its own polynomial kernels
 * (GenericPacketMathFunctions.h: pexp_float, plog_float, Kahan's log1p,
 * psincos_float; each multiply-add two roundings), and the last n % 4 values one at a
 * time with the C library's expf, logf, log1pf, sinf and cosf. So value i of n
 * takes the packet form when i < n - n % 4 (ONNX Runtime's buffers are
 * aligned, and one thread takes the whole range), libm's otherwise.
 * Checked bit for bit against onnxruntime-node 1.30 by tests/ort_unary.sh.
 */
#include "kernels/kernels-int.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static uint32_t
bits_of(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

static float
of_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

/* Eigen's pmax(a, b) and pmin(a, b) on SSE (and std::max, std::min on
 * the scalar tail): a when the two compare equal or either is NaN. */
static float
emax(float a, float b)
{
	return a < b ? b : a;
}

static float
emin(float a, float b)
{
	return b < a ? b : a;
}

/* pexp_float: x = m ln 2 + r with m = floor(x log2(e) + 1/2), ln 2 in two
 * parts, a degree-6 polynomial of r in even and odd halves, 2^m applied
 * exactly (one rounding, as its pldexp); below -104 the result is 0,
 * above 88.723 x is clamped, and the max with x keeps +inf and NaN. */
static float
pexp(float x)
{
	float v, m, r, r2, pe, po, y;

	if (x < -104.0f)
		return 0.0f;
	if (isnan(x))
		return x;
	v = x > 88.723f ? 88.723f : x;
	m = floorf(v * 1.44269504088896341f + 0.5f);
	r = m * -0.693359375f + v;
	r = m * 2.12194440e-4f + r;
	r2 = r * r;
	pe = r2 * 1.37449637986719608306884765625e-3f +
	     4.166965186595916748046875e-2f;
	po = r2 * 8.36894474923610687255859375e-3f +
	     0.16666518151760101318359375f;
	pe = r2 * pe + 0.49999988079071044921875f;
	y = r * po + pe;
	y = r2 * y + (r + 1.0f);
	return emax(ldexpf(y, (int)m), x);
}

/* plog_float: x = 2^e m with m in [sqrt(1/2), sqrt(2)) (as m - 1), a
 * (3,3) rational approximation of log(1 + m - 1), plus e ln 2; 0 gives
 * -inf, +inf itself, negatives and NaN a NaN. */
static float
plog(float x)
{
	float m, fe, p, q;
	int e;

	if (x == 0.0f)
		return -INFINITY;
	if (!(x >= 0.0f))
		return NAN;
	if (x == INFINITY)
		return x;
	m = frexpf(x, &e);
	fe = (float)e;
	if (m < 0.707106781186547524f) {
		fe -= 1.0f;
		m = (m - 1.0f) + m;
	} else {
		m = m - 1.0f;
	}
	p = m * 0.18256296349849254f + 1.0000000190281063f;
	p = m * p + 1.0000000190281136f;
	p = m * p;
	q = m * 0.049616247954120038f + 0.59923249590823520f;
	q = m * q + 1.4999999999999927f;
	q = m * q + 1.0f;
	return fe * 0.693147180559945309417232121458176568f + p / q;
}

/* The bits of 2/pi in 32-bit windows, each 8 bits further along than
 * the one before, as Eigen's trig_reduce_huge reads them. */
static const uint32_t two_over_pi[] = {
	0x00000028, 0x000028be, 0x0028be60, 0x28be60db, 0xbe60db93,
	0x60db9391, 0xdb939105, 0x9391054a, 0x91054a7f, 0x054a7f09,
	0x4a7f09d5, 0x7f09d5f4, 0x09d5f47d, 0xd5f47d4d, 0xf47d4d37,
	0x7d4d3770, 0x4d377036, 0x377036d8, 0x7036d8a5, 0x36d8a566,
	0xd8a5664f, 0xa5664f10, 0x664f10e4, 0x4f10e410, 0x10e41000,
	0xe4100000,
};

/* Payne-Hanek reduction of a huge finite |x| (Eigen's
 * trig_reduce_huge): x 2/pi in 2.62 fixed point from 96 bits of 2/pi,
 * its nearest integer to *quadrant, the rest times pi/2 in double. */
static float
reduce_huge(float xf, int32_t *quadrant)
{
	uint32_t xi = bits_of(xf), e = (xi >> 23) - 118, i;
	uint64_t p, q;

	xi = ((xi & 0x007fffffu) | 0x00800000u) << (e & 7);
	i = e >> 3;
	p = (uint64_t)xi * two_over_pi[i + 7];
	p = (uint64_t)xi * two_over_pi[i + 3] + (p >> 32);
	p = ((uint64_t)(xi * two_over_pi[i - 1]) << 32) + p;
	q = (p + ((uint64_t)1 << 61)) >> 62;
	*quadrant = (int32_t)q;
	p -= q << 62;
	return (float)((double)(int64_t)p * 3.4061215800865545e-19);
}

/* psincos_float without FMA: the quadrant y = round(|x| 2/pi) by the
 * 1.5 * 2^23 trick, |x| - y pi/2 with pi/2 in four parts (Payne-Hanek
 * from 25966 for sin, 18838 for cos), then the sin or cos polynomial by
 * the quadrant's parity and the sign by its second bit. */
static float
psincos(float x0, int sine)
{
	float ax = fabsf(x0), x, y, yr, x2, c, s, r;
	int32_t q;
	uint32_t sign;

	y = ax * 0.636619746685028076171875f;
	yr = y + 12582912.0f;
	q = (int32_t)bits_of(yr);
	y = yr - 12582912.0f;
	x = y * -1.5703125f + ax;
	x = y * -0.000483989715576171875f + x;
	x = y * 1.62865035235881805419921875e-07f + x;
	x = y * 5.5644315544167710640977020375430583953857421875e-11f + x;
	if (ax >= (sine ? 25966.0f : 18838.0f) && isfinite(ax))
		x = reduce_huge(ax, &q);
	sign = sine ? (bits_of(x0) ^ ((uint32_t)q << 30)) :
		      ((uint32_t)(q + 1) << 30);
	sign &= 0x80000000u;
	x2 = x * x;
	c = 2.4372266125283204019069671630859375e-05f;
	c = c * x2 + -0.00138865201734006404876708984375f;
	c = c * x2 + 0.041666619479656219482421875f;
	c = c * x2 + -0.5f;
	c = c * x2 + 1.0f;
	s = -0.0001959234114083702898469196984621021329076029360294342041015625f;
	s = s * x2 + 0.0083326873655616851693794799871284340042620897293090820312500000f;
	s = s * x2 + -0.1666666203982298255503735617821803316473960876464843750000000000f;
	s = s * x2;
	s = s * x + x;
	r = (q & 1) == 0 ? (sine ? s : c) : (sine ? c : s);
	return of_bits(bits_of(r) ^ sign);
}

/* Element i of n in Eigen's form: a packet's, or libm's on the tail. */
#define PACKED(i, n) ((i) < (n) - (n) % 4)

/* Eigen's log1p on packets (Kahan's): x itself where 1 + x rounds to 1
 * or its log is infinite, else x log(1 + x) / ((1 + x) - 1). */
static float
plog1p(float x)
{
	float xp1 = x + 1.0f, l = plog(xp1);

	if (xp1 == 1.0f || xp1 == l)
		return x;
	return x * (l / (xp1 - 1.0f));
}

static float
e_exp(float x, int packed)
{
	return packed ? pexp(x) : expf(x);
}

static float
e_log(float x, int packed)
{
	return packed ? plog(x) : logf(x);
}

static float
e_log1p(float x, int packed)
{
	return packed ? plog1p(x) : log1pf(x);
}

void
qr_elu_ort_f32(const float *x, size_t n, float alpha, float *y)
{
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = x[i] >= 0 ? x[i] :
				   alpha * (e_exp(x[i], PACKED(i, n)) - 1.0f);
}

void
qr_selu_ort_f32(const float *x, size_t n, float alpha, float gamma, float *y)
{
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = x[i] > 0 ? gamma * x[i] :
				  gamma * alpha *
					  (e_exp(x[i], PACKED(i, n)) - 1.0f);
}

void
qr_celu_ort_f32(const float *x, size_t n, float alpha, float *y)
{
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = emax(x[i], 0.0f) +
		       emin(alpha * (e_exp(x[i] / alpha, PACKED(i, n)) - 1.0f),
			    0.0f);
}

void
qr_softplus_ort_f32(const float *x, size_t n, float *y)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int p = PACKED(i, n);

		y[i] = x[i] > 0 ? x[i] + e_log1p(e_exp(-x[i], p), p) :
				  e_log1p(e_exp(x[i], p), p);
	}
}

void
qr_log_ort_f32(const float *x, size_t n, float *y)
{
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = e_log(x[i], PACKED(i, n));
}

void
qr_sin_ort_f32(const float *x, size_t n, float *y)
{
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = PACKED(i, n) ? psincos(x[i], 1) : sinf(x[i]);
}

void
qr_cos_ort_f32(const float *x, size_t n, float *y)
{
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = PACKED(i, n) ? psincos(x[i], 0) : cosf(x[i]);
}
