/*
 * kernels-int: what the kernels' .c files share and nobody else sees: the
 * run-time dispatch flags, exact rounding helpers and the int8 GEMM core
 * (packed layouts) behind both qr_qgemm_* and qr_qconv_*.
 */
#ifndef QR_KERNELS_INT_H
#define QR_KERNELS_INT_H

#include "kernels/kernels.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Columns of packed activations are padded to a multiple of this. */
#define QR_IG_NALIGN 16

/* Round to nearest, ties to even, for |v| <= 2^22 (clamped values).
 * Adding 1.5 * 2^23 leaves no fraction bits; FLT_EVAL_METHOD is 0 on
 * x86-64 and nothing here is compiled with -ffast-math. */
static inline float
qr_round_even_small(float v)
{
	const float m = 12582912.0f; /* 0x1.8p23 */

	return (v + m) - m;
}

/* Round to nearest even as cvtps2dq does: out-of-range and NaN give
 * INT32_MIN. */
static inline int32_t
qr_cvt_even_s32(float v)
{
	float r;

	if (!(v >= -2147483648.0f && v < 2147483648.0f))
		return INT32_MIN;
	if (v > -4194304.0f && v < 4194304.0f)
		r = qr_round_even_small(v);
	else
		r = rintf(v); /* default mode: nearest, ties to even */
	return (int32_t)r;
}

/* Wrapping int32 arithmetic (the spec's "accumulation may overflow"). */
static inline int32_t
qr_wrap_add(int32_t a, int32_t b)
{
	return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t
qr_wrap_mul(int32_t a, int32_t b)
{
	return (int32_t)((uint32_t)a * (uint32_t)b);
}

/* Nonzero when the AVX-512 VNNI int8 GEMM may run (cpu.c). */
int qr_ig_use_vnni(void);

/*
 * Weights of the int8 GEMM, "rows" of a C[m][n] = W[m][k] * X[k][n]:
 * s8 values (unsigned weights shifted by -128), rows padded to k4 (a
 * multiple of 4) with zeros, plus per-row sums and zero points of the
 * shifted values.
 */
struct qr_ig_weights {
	size_t m;         /* rows */
	size_t k;         /* depth */
	size_t k4;        /* k rounded up to a multiple of 4 */
	int8_t *w;        /* [m][k4], heap, owned */
	int32_t *rowsum;  /* [m] sum_k w, heap, owned */
	int32_t *zp;      /* [m] zero point of the shifted weights, owned */
	int pairs16;      /* s8 weights, summed with u8 activations in
			     saturating 16-bit pairs as ONNX Runtime does
			     on this CPU (QR_ORT_U8S8_SATURATES) */
};

/* Fill iw from src (int8 if is_signed else uint8), element (r, c) at
 * src[r * rs + order[c] * cs] (order NULL: c); zp has n_zp entries (1
 * or m). */
void qr_ig_weights_init(struct qr_ig_weights *iw, const void *src,
			int is_signed, size_t m, size_t k, size_t rs,
			size_t cs, const uint32_t *order, const int32_t *zp,
			size_t n_zp);
void qr_ig_weights_fini(struct qr_ig_weights *iw);

/*
 * Interleave nb columns of u8 activations (rows of k bytes, row r at
 * src + r * ld; with flip each byte is xor-ed with 0x80 first, which
 * shifts int8 to unsigned) into dst[k4 / 4][nbp][4] (nbp = nb rounded up
 * to QR_IG_NALIGN, padding zero) and write column sums to colsum[nb].
 * With order, packed row r is source row order[r].
 */
void qr_ig_pack_cols(const uint8_t *src, size_t ld, size_t k, size_t nb,
		     int flip, const uint32_t *order, uint8_t *dst,
		     int32_t *colsum);
/* A view of rows [r0, r1) of iw (borrowing its arrays). */
void qr_ig_weights_rows(const struct qr_ig_weights *iw, size_t r0, size_t r1,
			struct qr_ig_weights *view);
/* Same from a row-major [nb][k] matrix (the A of a matmul). */
void qr_ig_pack_rows(const uint8_t *src, size_t ld, size_t k, size_t nb,
		     int flip, uint8_t *dst, int32_t *colsum);

/*
 * c[i][j] (row stride ldc) = sum_k (W[i][k] - zp_w[i]) * (X[k][j] - x_zp)
 * for i < m, j < nb, with X packed by qr_ig_pack_* and x_zp the zero point
 * of the shifted activations. Exact mod 2^32, except where iw->pairs16
 * and u8s8 (the caller's ONNX Runtime op runs MLAS's u8 x s8 kernels:
 * the activations are u8): then the raw products of k and k + 1 (k even)
 * are summed and saturated to int16 first, as those kernels do on CPUs
 * without VNNI (vpmaddubsw).
 */
void qr_ig_gemm(const struct qr_ig_weights *iw, const uint8_t *xp,
		const int32_t *colsum, size_t nb, int32_t x_zp, int u8s8,
		int32_t *c,
		size_t ldc);

/* MLAS's exp polynomial (eltwise.c): exp(r) for |r| <= ln 2 / 2. */
float qr_exp_poly(float r);

/* Kernel taps per input channel, and the input and output sizes of one
 * channel (3-D convs: volumes). */
size_t qr_conv_taps(const struct qr_conv_params *p);
size_t qr_conv_in_size(const struct qr_conv_params *p);
size_t qr_conv_out_size(const struct qr_conv_params *p);

/*
 * im2col of output columns [col0, col0 + ncols) of one image and group:
 * x is [cin_g][h][w]; col is [cin_g * kh * kw][ncols] row-major; taps that
 * fall in the padding get pad. A 3-D conv (p->kd > 0): x is
 * [cin_g][d][h][w], col [cin_g * kd * kh * kw][ncols] over [od][oh][ow].
 */
void qr_im2col_f32(const struct qr_conv_params *p, const float *x,
		   size_t cin_g, size_t col0, size_t ncols, float *col);
void qr_im2col_u8(const struct qr_conv_params *p, const uint8_t *x,
		  size_t cin_g, size_t col0, size_t ncols, uint8_t pad,
		  uint8_t *col);

/*
 * Depthwise convolution of one channel (dwconv.c), shared by the float
 * and int8 convs. The channel is first copied into a zero-padded float
 * plane whose rows are split into stride_w phases (column c lands at
 * (c % stride_w) * phase_len + c / stride_w), so every kernel tap reads
 * a contiguous run of inputs whatever the stride. int8 planes hold
 * x - x_zp: products (|.| <= 255 * 255) and sums of up to 258 of them
 * stay below 2^24, so float arithmetic (FMA included) is exact there.
 */
struct qr_dw_geom {
	size_t oh, ow;      /* output size */
	size_t rows;        /* padded rows read */
	size_t cols;        /* padded columns read */
	size_t phase_len;   /* columns per phase */
	size_t row_len;     /* floats per plane row (stride_w phases) */
};

/* Largest kh * kw the int8 depthwise path computes in float. */
#define QR_DW_EXACT_TAPS 258

void qr_dw_geom(const struct qr_conv_params *p, struct qr_dw_geom *g);
/* Plane of one float channel x ([h][w]) into buf (rows * row_len). */
void qr_dw_fill_f32(const struct qr_conv_params *p,
		    const struct qr_dw_geom *g, const float *x, float *buf);
/* Plane of one int8/uint8 channel, holding x - zp. */
void qr_dw_fill_q8(const struct qr_conv_params *p, const struct qr_dw_geom *g,
		   const void *x, int is_signed, int32_t zp, float *buf);
/* y[oh][ow] = sum over taps (ki, kj in order) of w[ki][kj] * plane, then
 * + bias, summed in ONNX Runtime's order: with row nonzero as MLAS's
 * one-row GEMM (multiplier-1 depthwise), else one fma chain (sgemm.c). */
void qr_dw_plane(const struct qr_conv_params *p, const struct qr_dw_geom *g,
		 const float *buf, const float *w, float bias, int row,
		 float *y);
/* out[i] = (int32_t)acc[i] for the exact integer sums of an int8 plane. */
void qr_dw_to_s32(const float *acc, size_t n, int32_t *out);

/* Align p up to 64 bytes. */
static inline void *
qr_align64(void *p)
{
	return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

#endif
