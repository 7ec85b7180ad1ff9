/*
 * util/half.c: IEEE binary16 and bfloat16 to and from float, for the
 * loader (initializers), the operators (Cast, 16-bit float tensors) and
 * the analysis alike.
 */
#include <math.h>
#include <string.h>

#include "util/util.h"

/* IEEE binary16 bits to float (exact). */
float
qr_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31;
	uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
	float f;

	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (mant << 13);
	} else if (exp != 0) {
		bits = sign | ((exp + 112) << 23) | (mant << 13);
	} else {
		/* zero or subnormal: mant * 2^-24 */
		f = ldexpf((float)mant, -24);
		return sign ? -f : f;
	}
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* float to binary16, rounding to nearest even (as numpy's astype). */
uint16_t
qr_f32_to_f16(float f)
{
	uint32_t x, sign, exp, mant;

	memcpy(&x, &f, sizeof x);
	sign = (x >> 16) & 0x8000u;
	exp = (x >> 23) & 0xff;
	mant = x & 0x7fffffu;
	if (exp == 0xff) /* Inf or NaN (keep NaN quiet) */
		return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
	if (exp > 142) /* >= 2^16 after rounding: overflow */
		return (uint16_t)(sign | 0x7c00u);
	if (exp < 113) { /* subnormal half or zero */
		uint32_t shift, m, r, half;

		if (exp < 102)
			return (uint16_t)sign;
		m = mant | 0x800000u;
		shift = 126 - exp; /* 14..24 */
		r = m >> shift;
		half = 1u << (shift - 1);
		if ((m & ((half << 1) - 1)) > half ||
		    ((m & ((half << 1) - 1)) == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	{
		uint32_t h = ((exp - 112) << 10) | (mant >> 13);
		uint32_t rest = mant & 0x1fffu;

		if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
			h++; /* may carry into the exponent, up to Inf */
		return (uint16_t)(sign | h);
	}
}

/* bfloat16 bits to float (exact). */
float
qr_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;

	memcpy(&f, &bits, sizeof f);
	return f;
}

/* float to bfloat16, rounding to nearest even; NaN stays NaN. */
uint16_t
qr_f32_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof x);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}
