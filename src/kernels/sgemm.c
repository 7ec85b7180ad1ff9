/*
 * sgemm: float GEMM that sums every output element in the order ONNX
 * Runtime's MLAS sums it on x86-64, so float convs, Gemm and MatMul give
 * ONNX Runtime's bits exactly. That matters beyond neatness: in a QDQ
 * model a float conv sits between DequantizeLinear and QuantizeLinear,
 * and a sum that lands within an ulp of a .5 tie rounds to a different
 * integer when two engines add in different orders; the step then
 * spreads through every later layer. OpenBLAS sums in its own order, so
 * qreport's QDQ statistics drifted from ONNX Runtime's by up to 3e-3;
 * with this order they are the same numbers.
 *
 * The orders (checked bit for bit against onnxruntime-node 1.30 on
 * every conv, depthwise conv and Gemm shape of resnet18 and mobilenet_v2;
 * tests/ort_crosscheck.sh keeps checking):
 *
 *   QR_SGEMM_FMA  MLAS's packed kernels: K is cut into slices of
 *                 stride_k (qr_sgemm_plan picks it as MlasSgemmOperation
 *                 does from N and K); within a slice each output is one
 *                 fused multiply-add chain from 0 in k order, and the
 *                 slices are added to C one after another (the first
 *                 slice is stored when C is not accumulated).
 *                 A pre-packed B (a Gemm's or MatMul's 2-D initializer)
 *                 always takes this order, with stride_k 256.
 *   QR_SGEMM_ROW  MLAS's M = 1 kernel (B not transposed): products are
 *                 rounded, then added in groups of 4 (then 2, then 1),
 *                 and each group's sum is added to C.
 *   QR_SGEMM_DOT  MLAS's M = 1 kernel with B transposed (and N = 1 with
 *                 A and B swapped): 8 lanes each sum every 8th rounded
 *                 product, and the lanes are reduced in a pattern that
 *                 depends on whether the output is in a block of 4, 2
 *                 or 1 rows; then C is added.
 *
 * AVX-512 and portable C give the same bits; this file is compiled with
 * -ffp-contract=off (Makefile.am) so no a * b + c is fused behind our back.
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_HAVE_AVX512_CODE 1
#define QR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))
#define QR_AVX2 __attribute__((target("avx2,fma")))
#endif

#define SG_NR 32 /* columns of a packed panel of B */
#define SG_STRIDE 128 /* MLAS_SGEMM_STRIDEN and _STRIDEK */

void
qr_sgemm_plan(size_t m, size_t n, size_t k, int trans_b, size_t ldb,
	      size_t ldc, struct qr_sgemm_plan *pl)
{
	size_t sn = SG_STRIDE, sk = SG_STRIDE;

	pl->stride_k = 0;
	if (m == 1) {
		pl->order = trans_b ? QR_SGEMM_DOT : QR_SGEMM_ROW;
		return;
	}
	if (n == 1 && !trans_b && ldb == 1 && ldc == 1) {
		pl->order = QR_SGEMM_DOT;
		return;
	}
	/* Wide and shallow: longer N strides; narrow: longer K strides. */
	if (k == 0) {
		/* nothing to sum (qr_sgemm only zeroes C) */
	} else if (n >= k) {
		while (sk / 2 >= k) {
			sn *= 2;
			sk /= 2;
		}
	} else {
		while (sn > 16 && sn / 2 >= n) {
			sk *= 2;
			sn /= 2;
		}
	}
	pl->order = QR_SGEMM_FMA;
	pl->stride_k = sk;
}

void
qr_sgemm_plan_packed(struct qr_sgemm_plan *pl)
{
	pl->order = QR_SGEMM_FMA;
	pl->stride_k = 2 * SG_STRIDE; /* MLAS_SGEMM_PACKED_STRIDEK */
}

/* ---- QR_SGEMM_FMA ---- */

/* panel[kk][0, SG_NR) = op(B)[k0 + kk][n0, n0 + nc), zero padded. */
static void
pack_b(const float *b, size_t ldb, int trans_b, size_t k0, size_t kc,
       size_t n0, size_t nc, float *panel)
{
	size_t kk, j;

	for (kk = 0; kk < kc; kk++) {
		float *d = panel + kk * SG_NR;

		if (!trans_b) {
			memcpy(d, b + (k0 + kk) * ldb + n0, nc * sizeof *d);
		} else {
			for (j = 0; j < nc; j++)
				d[j] = b[(n0 + j) * ldb + k0 + kk];
		}
		for (j = nc; j < SG_NR; j++)
			d[j] = 0.0f;
	}
}

/* pack_b for a B held quantized: each value dequantized as it is packed.
 * t: scratch of SG_NR * kc floats (trans_b: W's rows are dequantized
 * whole, then transposed into the panel). */
static void
pack_b_q(const struct qr_sgemm_qb *b, size_t ldb, int trans_b, size_t k0,
	 size_t kc, size_t n0, size_t nc, float *panel, float *t)
{
	const char *q = b->q;
	size_t es = qr_qtype_size(b->t), kk, j;

	if (!trans_b) {
		for (kk = 0; kk < kc; kk++) {
			const char *row = q + ((k0 + kk) * ldb + n0) * es;
			float *d = panel + kk * SG_NR;

			if (b->per_col)
				qr_dequantize_cols_f32(row, b->t, nc,
						       b->scale + n0,
						       b->zp ? b->zp + n0 :
							       NULL, d);
			else
				qr_dequantize_f32(row, b->t, 1, 1, nc,
						  b->scale, b->zp, d);
			for (j = nc; j < SG_NR; j++)
				d[j] = 0.0f;
		}
		return;
	}
	for (j = 0; j < nc; j++) {
		size_t r = b->per_col ? n0 + j : 0;

		qr_dequantize_f32(q + ((n0 + j) * ldb + k0) * es, b->t, 1, 1,
				  kc, b->scale + r, b->zp ? b->zp + r : NULL,
				  t + j * kc);
	}
	for (kk = 0; kk < kc; kk++) {
		float *d = panel + kk * SG_NR;

		for (j = 0; j < nc; j++)
			d[j] = t[j * kc + kk];
		for (; j < SG_NR; j++)
			d[j] = 0.0f;
	}
}

/* Rows [0, mr) x columns [0, nc) of C from kc products each: one fma
 * chain per element; store it (add == 0) or add it to C. */
static void
fma_block_portable(size_t mr, size_t kc, const float *a, size_t lda,
		   const float *panel, float *c, size_t ldc, size_t nc,
		   int add)
{
	size_t r, j, kk;

	for (r = 0; r < mr; r++)
		for (j = 0; j < nc; j++) {
			float acc = 0.0f;

			for (kk = 0; kk < kc; kk++)
				acc = fmaf(a[r * lda + kk], panel[kk * SG_NR + j],
					   acc);
			c[r * ldc + j] = add ? c[r * ldc + j] + acc : acc;
		}
}

#ifdef QR_HAVE_AVX512_CODE
/*
 * Rows of fma chains, the accumulators named one by one so they stay in
 * registers: FMA_ROWS(W, R, EACH) defines fma_W_R for R rows of W
 * columns. Row r's column c sees products k = 0, 1, ... in order, as
 * MLAS's. W is 32 (two zmm a row), 16 (one zmm) or 8 (one ymm): a panel's
 * last few columns take the narrowest that holds them, as a ymm fma
 * costs half a zmm one on Zen 4 and a narrower row wastes fewer lanes.
 * A 32-wide row also prefetches the row of B 32 columns on: the next
 * panel when B is read in place (its rows are far apart), worth 2-3%.
 */
#define ACC32(r) __m512 c##r##0 = _mm512_setzero_ps(), \
			c##r##1 = _mm512_setzero_ps();
#define LOADB32                                                          \
	__m512 b0 = _mm512_loadu_ps(panel + kk * ldp);                   \
	__m512 b1 = _mm512_loadu_ps(panel + kk * ldp + 16);              \
	_mm_prefetch((const char *)(panel + kk * ldp + 32), _MM_HINT_T0); \
	_mm_prefetch((const char *)(panel + kk * ldp + 48), _MM_HINT_T0);
#define FMA32(r)                                                         \
	{                                                                \
		__m512 av_ = _mm512_set1_ps(a[(r) * lda + kk]);          \
		c##r##0 = _mm512_fmadd_ps(av_, b0, c##r##0);             \
		c##r##1 = _mm512_fmadd_ps(av_, b1, c##r##1);             \
	}
#define OUT32(r)                                                         \
	{                                                                \
		float *cr_ = c + (r) * ldc;                              \
		if (add) {                                               \
			c##r##0 = _mm512_add_ps(                         \
				c##r##0, _mm512_maskz_loadu_ps(m0, cr_));\
			c##r##1 = _mm512_add_ps(c##r##1,                 \
				_mm512_maskz_loadu_ps(m1, cr_ + 16));    \
		}                                                        \
		_mm512_mask_storeu_ps(cr_, m0, c##r##0);                 \
		_mm512_mask_storeu_ps(cr_ + 16, m1, c##r##1);            \
	}
#define ACC16(r) __m512 c##r##0 = _mm512_setzero_ps();
#define LOADB16 __m512 b0 = _mm512_loadu_ps(panel + kk * ldp);
#define FMA16(r) c##r##0 = _mm512_fmadd_ps(_mm512_set1_ps(a[(r) * lda + kk]), \
					   b0, c##r##0);
#define OUT16(r)                                                         \
	{                                                                \
		float *cr_ = c + (r) * ldc;                              \
		if (add)                                                 \
			c##r##0 = _mm512_add_ps(                         \
				c##r##0, _mm512_maskz_loadu_ps(m0, cr_));\
		_mm512_mask_storeu_ps(cr_, m0, c##r##0);                 \
	}
#define ACC8(r) __m256 c##r##0 = _mm256_setzero_ps();
#define LOADB8 __m256 b0 = _mm256_loadu_ps(panel + kk * ldp);
#define FMA8(r) c##r##0 = _mm256_fmadd_ps(_mm256_set1_ps(a[(r) * lda + kk]), \
					  b0, c##r##0);
#define OUT8(r)                                                          \
	{                                                                \
		float *cr_ = c + (r) * ldc;                              \
		if (add)                                                 \
			c##r##0 = _mm256_add_ps(c##r##0,                 \
				_mm256_maskz_loadu_ps((__mmask8)m0, cr_));\
		_mm256_mask_storeu_ps(cr_, (__mmask8)m0, c##r##0);       \
	}
/* m0 and m1 mask the stores of columns [0, 16) and [16, 32) (W = 8:
 * m0's low 8 bits). */
#define FMA_ROWS(W, R, EACH)                                             \
	static QR_AVX512 void                                            \
	fma_##W##_##R(size_t kc, const float *a, size_t lda,             \
		      const float *panel, size_t ldp, float *c,          \
		      size_t ldc, __mmask16 m0, __mmask16 m1, int add)   \
	{                                                                \
		size_t kk;                                               \
		(void)m1;                                                \
		EACH(ACC##W)                                             \
		for (kk = 0; kk < kc; kk++) {                            \
			LOADB##W                                         \
			EACH(FMA##W)                                     \
		}                                                        \
		EACH(OUT##W)                                             \
	}
#define EACH8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define EACH4(X) X(0) X(1) X(2) X(3)
#define EACH1(X) X(0)
FMA_ROWS(32, 8, EACH8)
FMA_ROWS(32, 4, EACH4)
FMA_ROWS(32, 1, EACH1)
FMA_ROWS(16, 8, EACH8)
FMA_ROWS(16, 4, EACH4)
FMA_ROWS(16, 1, EACH1)
FMA_ROWS(8, 8, EACH8)
FMA_ROWS(8, 4, EACH4)
FMA_ROWS(8, 1, EACH1)

typedef void (*fma_rows_fn)(size_t, const float *, size_t, const float *,
			    size_t, float *, size_t, __mmask16, __mmask16,
			    int);

/* All mr rows of one slab of columns, W wide (fn[0..2]: 8, 4, 1 rows). */
static QR_AVX512 void
fma_slab(const fma_rows_fn fn[3], size_t mr, size_t kc, const float *a,
	 size_t lda, const float *panel, size_t ldp, float *c, size_t ldc,
	 __mmask16 m0, __mmask16 m1, int add)
{
	for (; mr >= 8; mr -= 8, a += 8 * lda, c += 8 * ldc)
		fn[0](kc, a, lda, panel, ldp, c, ldc, m0, m1, add);
	for (; mr >= 4; mr -= 4, a += 4 * lda, c += 4 * ldc)
		fn[1](kc, a, lda, panel, ldp, c, ldc, m0, m1, add);
	for (; mr >= 1; mr -= 1, a += lda, c += ldc)
		fn[2](kc, a, lda, panel, ldp, c, ldc, m0, m1, add);
}

static __mmask16
lanes(size_t n)
{
	return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

/* panel: rows of op(B) ldp floats apart (SG_NR when packed, or B's own
 * rows when 32 whole columns are read in place); nc <= SG_NR columns,
 * and a packed panel's columns past nc are zero, so the narrower rows
 * may read them. */
static QR_AVX512 void
fma_block_avx512(size_t mr, size_t kc, const float *a, size_t lda,
		 const float *panel, size_t ldp, float *c, size_t ldc,
		 size_t nc, int add)
{
	static const fma_rows_fn w32[3] = {fma_32_8, fma_32_4, fma_32_1};
	static const fma_rows_fn w16[3] = {fma_16_8, fma_16_4, fma_16_1};
	static const fma_rows_fn w8[3] = {fma_8_8, fma_8_4, fma_8_1};

	if (nc > 24) {
		fma_slab(w32, mr, kc, a, lda, panel, ldp, c, ldc, lanes(nc),
			 lanes(nc - 16), add);
		return;
	}
	if (nc >= 16) {
		fma_slab(w16, mr, kc, a, lda, panel, ldp, c, ldc, 0xffff, 0,
			 add);
		panel += 16;
		c += 16;
		nc -= 16;
	}
	if (nc > 8)
		fma_slab(w16, mr, kc, a, lda, panel, ldp, c, ldc, lanes(nc), 0,
			 add);
	else if (nc > 0)
		fma_slab(w8, mr, kc, a, lda, panel, ldp, c, ldc, lanes(nc), 0,
			 add);
}
#endif

#ifdef QR_HAVE_AVX512_CODE
/*
 * The same fma chains with AVX2 (CPUs without AVX-512): tiles of 6 rows
 * (or 1) by 16 columns, two ymm accumulators a row, each column's
 * products in order k = 0, 1, ... as in the portable loop.
 */
#define ACC2(r) __m256 c##r##0 = _mm256_setzero_ps(), \
		       c##r##1 = _mm256_setzero_ps();
#define FMA2(r)                                                          \
	{                                                                \
		__m256 av_ = _mm256_broadcast_ss(a + (r) * lda + kk);    \
		c##r##0 = _mm256_fmadd_ps(av_, b0, c##r##0);             \
		c##r##1 = _mm256_fmadd_ps(av_, b1, c##r##1);             \
	}
#define OUT2(r)                                                          \
	{                                                                \
		float *cr_ = c + (r) * ldc;                              \
		if (full) {                                              \
			if (add) {                                       \
				c##r##0 = _mm256_add_ps(c##r##0,         \
					_mm256_loadu_ps(cr_));           \
				c##r##1 = _mm256_add_ps(c##r##1,         \
					_mm256_loadu_ps(cr_ + 8));       \
			}                                                \
			_mm256_storeu_ps(cr_, c##r##0);                  \
			_mm256_storeu_ps(cr_ + 8, c##r##1);              \
		} else {                                                 \
			if (add) {                                       \
				c##r##0 = _mm256_add_ps(c##r##0,         \
					_mm256_maskload_ps(cr_, m0));    \
				c##r##1 = _mm256_add_ps(c##r##1,         \
					_mm256_maskload_ps(cr_ + 8, m1));\
			}                                                \
			_mm256_maskstore_ps(cr_, m0, c##r##0);           \
			_mm256_maskstore_ps(cr_ + 8, m1, c##r##1);       \
		}                                                        \
	}
#define FMA2_ROWS(R, EACH)                                               \
	static QR_AVX2 void                                              \
	fma2_16_##R(size_t kc, const float *a, size_t lda,               \
		    const float *panel, size_t ldp, float *c, size_t ldc,\
		    __m256i m0, __m256i m1, int full, int add)           \
	{                                                                \
		size_t kk;                                               \
		EACH(ACC2)                                               \
		for (kk = 0; kk < kc; kk++) {                            \
			__m256 b0 = _mm256_loadu_ps(panel + kk * ldp);   \
			__m256 b1 = _mm256_loadu_ps(panel + kk * ldp + 8);\
			EACH(FMA2)                                       \
		}                                                        \
		EACH(OUT2)                                               \
	}
#define EACH6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define EACH2(X) X(0) X(1)
FMA2_ROWS(6, EACH6)
FMA2_ROWS(4, EACH4)
FMA2_ROWS(2, EACH2)
FMA2_ROWS(1, EACH1)

static QR_AVX2 __m256i
lanes8(size_t n)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n < 8 ? n : 8)),
				  idx);
}

/* fma_block_avx512's contract, 16 columns at a time. */
static QR_AVX2 void
fma_block_avx2(size_t mr, size_t kc, const float *a, size_t lda,
	       const float *panel, size_t ldp, float *c, size_t ldc,
	       size_t nc, int add)
{
	size_t h;

	for (h = 0; h < nc; h += 16) {
		size_t w = nc - h < 16 ? nc - h : 16, r = mr;
		__m256i m0 = lanes8(w), m1 = lanes8(w > 8 ? w - 8 : 0);
		const float *ar = a;
		float *cr = c + h;
		int full = w == 16;

		/* rows 6 at a time; the rest 4, 2, 1 (enough chains in
		 * flight to hide the fma latency) */
		for (; r >= 6; r -= 6, ar += 6 * lda, cr += 6 * ldc)
			fma2_16_6(kc, ar, lda, panel + h, ldp, cr, ldc, m0, m1,
				  full, add);
		if (r >= 4) {
			fma2_16_4(kc, ar, lda, panel + h, ldp, cr, ldc, m0, m1,
				  full, add);
			r -= 4, ar += 4 * lda, cr += 4 * ldc;
		}
		if (r >= 2) {
			fma2_16_2(kc, ar, lda, panel + h, ldp, cr, ldc, m0, m1,
				  full, add);
			r -= 2, ar += 2 * lda, cr += 2 * ldc;
		}
		if (r >= 1)
			fma2_16_1(kc, ar, lda, panel + h, ldp, cr, ldc, m0, m1,
				  full, add);
	}
}

/* One row of C (m = 1, B not transposed) in the FMA order: B's rows are
 * streamed whole, each column's chain kept in t (n floats, the panel
 * workspace). Same bits as the blocked path, far fewer cache misses for
 * a Gemm/MatMul vector times a large weight. */
static QR_AVX512 void
fma_row_stream_avx512(size_t n, size_t k, size_t stride_k, const float *a,
		      const float *b, size_t ldb, float *c, int accumulate,
		      float *t)
{
	size_t k0, kk, j;

	for (k0 = 0; k0 < k; k0 += stride_k) {
		size_t kc = k - k0 < stride_k ? k - k0 : stride_k;
		int add = accumulate || k0 > 0;

		memset(t, 0, n * sizeof *t);
		for (kk = k0; kk < k0 + kc; kk++) {
			const __m512 av = _mm512_set1_ps(a[kk]);
			const float *br = b + kk * ldb;

			for (j = 0; j + 16 <= n; j += 16)
				_mm512_storeu_ps(t + j, _mm512_fmadd_ps(
					av, _mm512_loadu_ps(br + j),
					_mm512_loadu_ps(t + j)));
			for (; j < n; j++)
				t[j] = fmaf(a[kk], br[j], t[j]);
		}
		for (j = 0; j < n; j++)
			c[j] = add ? c[j] + t[j] : t[j];
	}
}
#endif

/* qb: B held quantized (b unused), every panel packed through
 * pack_b_q with scratch t; else NULL. */
static void
gemm_fma(size_t m, size_t n, size_t k, size_t stride_k, const float *a,
	 size_t lda, const float *b, size_t ldb, int trans_b, float *c,
	 size_t ldc, int accumulate, float *panel,
	 const struct qr_sgemm_qb *qb, float *t)
{
	size_t k0, n0;
	int vec = 0, vec2 = 0;

#ifdef QR_HAVE_AVX512_CODE
	vec = (qr_kernels_cpu_features() & QR_CPU_AVX512BW) != 0;
	vec2 = !vec && (qr_kernels_cpu_features() & QR_CPU_AVX2) != 0;
	if (vec && m == 1 && !trans_b && qb == NULL &&
	    n <= (size_t)8 * SG_STRIDE * SG_NR) { /* t fits the panel */
		fma_row_stream_avx512(n, k, stride_k, a, b, ldb, c,
				      accumulate, panel);
		return;
	}
#endif
	for (k0 = 0; k0 < k; k0 += stride_k) {
		size_t kc = k - k0 < stride_k ? k - k0 : stride_k;
		int add = accumulate || k0 > 0;

		for (n0 = 0; n0 < n; n0 += SG_NR) {
			size_t nc = n - n0 < SG_NR ? n - n0 : SG_NR;

#ifdef QR_HAVE_AVX512_CODE
			if ((vec || vec2) && !trans_b && nc == SG_NR &&
			    qb == NULL) {
				/* whole columns: read B in place */
				(vec ? fma_block_avx512 : fma_block_avx2)(
					m, kc, a + k0, lda, b + k0 * ldb + n0,
					ldb, c + n0, ldc, nc, add);
				continue;
			}
#endif
			if (qb != NULL)
				pack_b_q(qb, ldb, trans_b, k0, kc, n0, nc,
					 panel, t);
			else
				pack_b(b, ldb, trans_b, k0, kc, n0, nc, panel);
#ifdef QR_HAVE_AVX512_CODE
			if (vec || vec2) {
				(vec ? fma_block_avx512 : fma_block_avx2)(
					m, kc, a + k0, lda, panel, SG_NR,
					c + n0, ldc, nc, add);
				continue;
			}
#endif
			fma_block_portable(m, kc, a + k0, lda, panel, c + n0,
					   ldc, nc, add);
		}
	}
}

/* ---- QR_SGEMM_ROW ---- */

/* c[j] (+)= sum_k a[k] * b[k][j] in groups of 4, 2, 1 (see the top). */
static void
gemm_row_portable(size_t n, size_t k, const float *a, const float *b,
		  size_t ldb, float *c, int accumulate)
{
	size_t j, kk;

	for (j = 0; j < n; j++) {
		float acc = accumulate ? c[j] : 0.0f, t;

		for (kk = 0; kk + 4 <= k; kk += 4) {
			t = a[kk] * b[kk * ldb + j];
			t = t + a[kk + 1] * b[(kk + 1) * ldb + j];
			t = t + a[kk + 2] * b[(kk + 2) * ldb + j];
			t = t + a[kk + 3] * b[(kk + 3) * ldb + j];
			acc = t + acc;
		}
		if (k - kk >= 2) {
			t = a[kk] * b[kk * ldb + j];
			t = t + a[kk + 1] * b[(kk + 1) * ldb + j];
			acc = t + acc;
			kk += 2;
		}
		if (kk < k)
			acc = a[kk] * b[kk * ldb + j] + acc;
		c[j] = acc;
	}
}

#ifdef QR_HAVE_AVX512_CODE
static QR_AVX512 size_t
gemm_row_avx512(size_t n, size_t k, const float *a, const float *b,
		size_t ldb, float *c, int accumulate)
{
	size_t j, kk;

	for (j = 0; j + 16 <= n; j += 16) {
		__m512 acc = accumulate ? _mm512_loadu_ps(c + j) :
			     _mm512_setzero_ps(), t;
#define P(i) _mm512_mul_ps(_mm512_set1_ps(a[i]), \
			   _mm512_loadu_ps(b + (i) * ldb + j))
		for (kk = 0; kk + 4 <= k; kk += 4) {
			t = P(kk);
			t = _mm512_add_ps(t, P(kk + 1));
			t = _mm512_add_ps(t, P(kk + 2));
			t = _mm512_add_ps(t, P(kk + 3));
			acc = _mm512_add_ps(t, acc);
		}
		if (k - kk >= 2) {
			t = _mm512_add_ps(P(kk), P(kk + 1));
			acc = _mm512_add_ps(t, acc);
			kk += 2;
		}
		if (kk < k)
			acc = _mm512_add_ps(P(kk), acc);
#undef P
		_mm512_storeu_ps(c + j, acc);
	}
	return j;
}
#endif

static void
gemm_row(size_t n, size_t k, const float *a, const float *b, size_t ldb,
	 float *c, int accumulate)
{
	size_t j = 0;

#ifdef QR_HAVE_AVX512_CODE
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW)
		j = gemm_row_avx512(n, k, a, b, ldb, c, accumulate);
#endif
	gemm_row_portable(n - j, k, a, b + j, ldb, c + j, accumulate);
}

/* ---- QR_SGEMM_DOT ---- */

/* Lane l of the 8 sums every 8th rounded product, from product l. */
static void
dot_lanes(size_t k, const float *x, const float *y, float l[8])
{
	size_t kk;

	memset(l, 0, 8 * sizeof *l);
	for (kk = 0; kk < k; kk++)
		l[kk % 8] = l[kk % 8] + x[kk] * y[kk];
}

/* The lanes' reduction for output i of n (blocks of 4, then 2, then 1). */
static float
dot_reduce(const float l[8], size_t i, size_t n)
{
	size_t n4 = n / 4 * 4;

	if (i < n4)
		return (((l[0] + l[1]) + l[2]) + l[3]) +
		       (((l[4] + l[5]) + l[6]) + l[7]);
	if ((n - n4) >= 2 && i < n4 + 2)
		return ((l[2] + l[0]) + (l[6] + l[4])) +
		       ((l[3] + l[1]) + (l[7] + l[5]));
	return ((l[0] + l[1]) + (l[2] + l[3])) +
	       ((l[4] + l[5]) + (l[6] + l[7]));
}

/* out[i * ldo] (+)= x_i . y for n vectors x_i (row stride ldx). */
static void
gemm_dot(size_t n, size_t k, const float *x, size_t ldx, const float *y,
	 float *out, size_t ldo, int accumulate)
{
	size_t i;
	float l[8];

	for (i = 0; i < n; i++) {
		float s;

		dot_lanes(k, x + i * ldx, y, l);
		s = dot_reduce(l, i, n);
		out[i * ldo] = accumulate ? s + out[i * ldo] : s + 0.0f;
	}
}

/* ---- entry points ---- */

size_t
qr_sgemm_workspace(void)
{
	/* the widest K slice is 1024 (N <= 16) */
	return (size_t)8 * SG_STRIDE * SG_NR * sizeof(float) + 64;
}

void
qr_sgemm(const struct qr_sgemm_plan *pl, size_t m, size_t n, size_t k,
	 const float *a, size_t lda, const float *b, size_t ldb, int trans_b,
	 float *c, size_t ldc, int accumulate, void *ws)
{
	size_t i;

	if (m == 0 || n == 0)
		return;
	if (k == 0) {
		if (!accumulate)
			for (i = 0; i < m; i++)
				memset(c + i * ldc, 0, n * sizeof *c);
		return;
	}
	switch (pl->order) {
	case QR_SGEMM_ROW:
		QR_ASSERT(m == 1 && !trans_b);
		gemm_row(n, k, a, b, ldb, c, accumulate);
		return;
	case QR_SGEMM_DOT:
		if (m == 1) {
			QR_ASSERT(trans_b);
			gemm_dot(n, k, b, ldb, a, c, 1, accumulate);
		} else {
			QR_ASSERT(n == 1 && !trans_b);
			gemm_dot(m, k, a, lda, b, c, ldc, accumulate);
		}
		return;
	default:
		QR_ASSERT(pl->stride_k > 0 && pl->stride_k <= 8 * SG_STRIDE);
		gemm_fma(m, n, k, pl->stride_k, a, lda, b, ldb, trans_b, c,
			 ldc, accumulate, qr_align64(ws), NULL, NULL);
	}
}

size_t
qr_sgemm_q_workspace(void)
{
	return 2 * qr_sgemm_workspace();
}

void
qr_sgemm_q(const struct qr_sgemm_plan *pl, size_t m, size_t n, size_t k,
	   const float *a, size_t lda, const struct qr_sgemm_qb *b, size_t ldb,
	   int trans_b, float *c, size_t ldc, int accumulate, void *ws)
{
	float *panel = qr_align64(ws);

	QR_ASSERT(ldb == (trans_b ? k : n));
	if (m == 0 || n == 0)
		return;
	if (k > 0 && pl->order == QR_SGEMM_FMA) {
		QR_ASSERT(pl->stride_k > 0 && pl->stride_k <= 8 * SG_STRIDE);
		gemm_fma(m, n, k, pl->stride_k, a, lda, NULL, ldb, trans_b, c,
			 ldc, accumulate, panel, b,
			 panel + 8 * SG_STRIDE * SG_NR);
		return;
	}
	{
		/*
		 * The M = 1 and N = 1 kernels read B dequantized: blocks of
		 * its stored rows at a time in ws, a multiple of 4 rows (a
		 * row of outputs for DOT, a run of k for ROW), so the groups
		 * of 4 their sums and reductions take fall as over the
		 * whole of B and the bits are the same. A B too wide for 4
		 * rows in ws, or N = 1's vector (its 8 lanes run the length
		 * of k), is dequantized whole.
		 */
		size_t rows = trans_b ? n : k, r0, r, cr;
		size_t es = qr_qtype_size(b->t), room;
		int dot = pl->order == QR_SGEMM_DOT;
		float *f, *own = NULL;

		if (k == 0) { /* nothing to read: C is zeroed or kept */
			qr_sgemm(pl, m, n, 0, a, lda, NULL, ldb, trans_b, c,
				 ldc, accumulate, NULL);
			return;
		}
		room = (qr_sgemm_q_workspace() - 64) / sizeof *f / ldb / 4 * 4;
		if (room == 0 || (dot && !trans_b)) {
			own = xmalloc((rows * ldb > 0 ? rows * ldb : 1) *
				      sizeof *f);
			room = rows;
		}
		f = own != NULL ? own : qr_align64(ws);
		for (r0 = 0; r0 < rows; r0 += cr) {
			cr = rows - r0 < room ? rows - r0 : room;
			for (r = 0; r < cr; r++) {
				const char *q = (const char *)b->q +
						(r0 + r) * ldb * es;
				size_t i = b->per_col && trans_b ? r0 + r : 0;

				if (b->per_col && !trans_b)
					qr_dequantize_cols_f32(q, b->t, ldb,
							       b->scale, b->zp,
							       f + r * ldb);
				else
					qr_dequantize_f32(q, b->t, 1, 1, ldb,
							  b->scale + i,
							  b->zp ? b->zp + i :
								  NULL,
							  f + r * ldb);
			}
			if (!dot) /* ROW: k rows r0.., summed on into C */
				qr_sgemm(pl, m, n, cr, a + r0, lda, f, ldb,
					 trans_b, c, ldc, accumulate || r0 > 0,
					 NULL);
			else if (trans_b) /* outputs r0.. of the row */
				qr_sgemm(pl, m, cr, k, a, lda, f, ldb, trans_b,
					 c + r0, ldc, accumulate, NULL);
			else
				qr_sgemm(pl, m, n, k, a, lda, f, ldb, trans_b,
					 c, ldc, accumulate, NULL);
		}
		free(own);
	}
}
