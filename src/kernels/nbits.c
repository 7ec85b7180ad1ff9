/*
 * nbits: the weight-only n-bit matmul with int8 activations, ONNX
 * Runtime's com.microsoft MatMulNBits at accuracy_level 4 (its
 * SQNBIT_CompInt8 path: contrib_ops/cpu/quantization/matmul_nbits.cc,
 * MlasQNBitGemmBatch in mlas/lib/qnbitgemm.cpp), y = A W + bias with
 * W[k][n] = (code - zp) * scale per block of `block` values along k.
 *
 * Each row of A is quantized per block as MLAS's QuantizeARow_CompInt8
 * does: s = max|a| / 127, q = a * (127 / max|a|) rounded half to even
 * (all 0 for an all-zero block), and its blocks' "scaled sums"
 * za = s * sum(q). A NaN in a block makes its s NaN, hence y NaN (MLAS's
 * result then depends on the NaN's position; qreport's does not).
 *
 * 4 bits, block 32 or >= 128: ONNX Runtime's AVX-512 VNNI kernels
 * (sqnbitgemm_kernel_avx512_int8_blklen32.h and _blklen128.h, which
 * serve blocks of 128 and more; the u8 x s8 products of unsigned codes
 * and signed q), bit for bit:
 *   - K is walked in chunks of 128 values. Each chunk gives 16 int32
 *     lanes, each the sum of 8 products: lane i of a block >= 128 holds
 *     values 4i..4i+3 and 64+4i..64+4i+3 of the chunk; a chunk of four
 *     blocks of 32 puts those of words (w, w + 2) (a word is 4 values)
 *     in lane 4L+j, w = (j < 2 ? 0 : 16) + 4L + j % 2. Each lane is
 *     converted to float and fused-multiply-added, scaled by the lane's
 *     block's s * scale, into that lane's float accumulator;
 *   - block 32: the 16 lanes are folded to 8 (lane i + lane i+8) and
 *     the last k_blocks % 4 blocks add one 8-lane step each (lane i:
 *     values 4i..4i+3); the 8 lanes are summed as MLAS's
 *     FoldAccumulators does for columns in groups of 4 and as its
 *     hsum_float_8 for the last N % 4 columns;
 *   - block >= 128: the 16 lanes are summed as _mm512_reduce_add_ps,
 *     except the last row of an odd M in columns of groups of 4, which
 *     MLAS folds 4 lanes at a time (its 512-bit FoldAccumulators);
 *   - then + bias, then + the zero-point term: the sum over blocks, in
 *     order, of za * (-scale * zp) as fused multiply-adds from 0 (MLAS's
 *     float GEMM of the block sums).
 * Other shapes (2 or 8 bits, blocks of 16 or 64) sum each block's
 * integer dot product of q and (code - zp), scaled by s * scale, block
 * after block: within a few 1e-7 of ONNX Runtime, not bit for bit.
 *
 * The weights are read where they lie (B as the model stores it, never
 * copied): with AVX-512 BW the 64 bytes of a chunk are permuted by words
 * into the lanes above, with AVX2 unpacked or shuffled into two halves of
 * eight, and A is laid out to match; the portable path decodes one
 * column at a time and sums the same lanes in C. Columns are split over
 * threads; results never depend on the thread count or the path.
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NB_X86 1
#endif

#define CHUNK 128 /* values of A and B per lane step */
#define COLS 16   /* columns per parallel task */
#define ROWS 4    /* rows per pass of the SIMD chunk loop */

/* The word pairs of the 16 lanes of a chunk. */
static const uint8_t wp128[16][2] = {
	{0, 16}, {1, 17}, {2, 18}, {3, 19}, {4, 20}, {5, 21}, {6, 22},
	{7, 23}, {8, 24}, {9, 25}, {10, 26}, {11, 27}, {12, 28}, {13, 29},
	{14, 30}, {15, 31}};
static const uint8_t wp32[16][2] = {
	{0, 2}, {1, 3}, {16, 18}, {17, 19}, {4, 6}, {5, 7}, {20, 22},
	{21, 23}, {8, 10}, {9, 11}, {24, 26}, {25, 27}, {12, 14}, {13, 15},
	{28, 30}, {29, 31}};
/* Block (of 4) of each lane of a chunk of blocks of 32. */
static const uint8_t blk32[16] = {0, 0, 2, 2, 0, 0, 2, 2,
				  1, 1, 3, 3, 1, 1, 3, 3};

/* Lanes in the order the SIMD code holds them: AVX-512 as they are;
 * AVX2 in two halves, as its 128-bit-lane word unpacks (blocks >= 128) or
 * byte shuffles (blocks of 32) leave them. */
static const uint8_t perm16[16] = {0, 1, 2, 3, 4, 5, 6, 7,
				   8, 9, 10, 11, 12, 13, 14, 15};
static const uint8_t perm128_avx2[16] = {0, 1, 2, 3, 8, 9, 10, 11,
					 4, 5, 6, 7, 12, 13, 14, 15};
static const uint8_t perm32_avx2[16] = {0, 1, 4, 5, 8, 9, 12, 13,
					2, 3, 6, 7, 10, 11, 14, 15};

static int force_avx2; /* qr_nbits_force_avx2 */

/* One call's geometry and buffers. */
struct nb_job {
	const struct qr_nbits_params *p;
	const float *a;       /* [m][k] */
	float *y;             /* [m][n] */
	size_t kb, bs;        /* blocks per column, block length */
	size_t kp;            /* kb * bs: a quantized row */
	size_t blob;          /* bytes of one block of codes */
	size_t zrow;          /* bytes of packed zero points per column */
	size_t nch;           /* full chunks of 128 per row (exact path) */
	size_t mp;            /* m rounded up to 16 */
	int exact;            /* ONNX Runtime's order (4 bits, 32 or >= 128) */
	int simd;             /* 2: the AVX-512 path, 1: AVX2, 0: C */
	const uint8_t *perm;  /* lane of each of the 16 dword slots of a
			       * chunk's SIMD layout (qa, sav, lane scales) */
	int8_t *q;            /* [m][kp] quantized A, natural order */
	int8_t *qa;           /* [m][nch][2][64]: A laid out for the SIMD
			       * lanes (low nibbles' values, high nibbles') */
	float *sa;            /* [m][kb] A's block scales */
	float *za;            /* [m][kb] s * sum(q) */
	float *zat;           /* [kb][mp] za transposed (SIMD path) */
	float *sav;           /* [m][nch][16]: each lane's row scale (SIMD) */
	char *scratch;        /* per thread: the generic path's decoded
			       * column (int16_t [kp]); the SIMD path's
			       * zero-point terms (float [2][mp]) and
			       * column lane scales (float [2][nch][16]) */
	size_t slot;          /* bytes of scratch per thread */
};

static size_t
round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- Quantizing A ---- */

/* Row m of A into q, sa, za (and qa, zat for the SIMD path). */
static void
quant_row(const struct nb_job *j, size_t m)
{
	const struct qr_nbits_params *p = j->p;
	const float *ar = j->a + m * p->k;
	int8_t *q = j->q + m * j->kp;
	size_t b, i;

	for (b = 0; b < j->kb; b++) {
		size_t k0 = b * j->bs;
		size_t len = p->k - k0 < j->bs ? p->k - k0 : j->bs;
		float amax = 0, s, inv;
		int32_t sum = 0;
		int nan = 0;

		for (i = 0; i < len; i++) {
			float v = fabsf(ar[k0 + i]);

			if (v != v)
				nan = 1;
			else if (v > amax)
				amax = v;
		}
		if (nan)
			amax = NAN;
		s = amax / 127.0f;
		inv = amax != 0.0f ? 127.0f / amax : 0.0f;
		for (i = 0; i < len; i++) {
			float v = rintf(ar[k0 + i] * inv);
			int8_t c = v != v ? 0 : v >= 127.0f ? 127 :
				   v <= -127.0f ? -127 : (int8_t)v;

			q[k0 + i] = c;
			sum += c;
		}
		memset(q + k0 + len, 0, j->bs - len);
		j->sa[m * j->kb + b] = s;
		j->za[m * j->kb + b] = s * (float)sum;
		if (j->zat != NULL)
			j->zat[b * j->mp + m] = j->za[m * j->kb + b];
	}
	if (j->qa == NULL)
		return;
	for (b = 0; b < j->nch; b++)
		for (i = 0; i < 16; i++)
			j->sav[(m * j->nch + b) * 16 + i] = j->bs == 32 ?
				j->sa[m * j->kb + 4 * b + blk32[j->perm[i]]] :
				j->sa[m * j->kb + b / (j->bs / CHUNK)];
	for (b = 0; b < j->nch; b++) {
		const uint8_t (*wp)[2] = j->bs == 32 ? wp32 : wp128;
		const int8_t *qc = q + b * CHUNK;
		int8_t *d = j->qa + (m * j->nch + b) * CHUNK;
		size_t l, h, t;

		for (l = 0; l < 16; l++)
			for (h = 0; h < 2; h++)
				for (t = 0; t < 2; t++) {
					size_t v = 4 * (size_t)wp[j->perm[l]][h] +
						   2 * t;

					d[4 * l + 2 * h + t] = qc[v];
					d[64 + 4 * l + 2 * h + t] = qc[v + 1];
				}
	}
}

static void
quant_task(void *ctx, size_t task, int slot)
{
	quant_row(ctx, task);
}

/* ---- The exact path's pieces, shared by both implementations ---- */

/* 4-bit code v of a chunk or block whose codes start at c. */
static inline int
code4(const uint8_t *c, size_t v)
{
	return v & 1 ? c[v / 2] >> 4 : c[v / 2] & 15;
}

/* Zero point of column n, block b. */
static inline int
zero_point(const struct nb_job *j, size_t n, size_t b)
{
	const struct qr_nbits_params *p = j->p;

	if (p->zp == NULL)
		return 1 << (p->bits - 1);
	return (int)qr_packed_code(p->zp + n * j->zrow, b,
				   (unsigned)p->bits);
}

/* MLAS's FoldAccumulators (one column of four): each 128-bit half's
 * lanes in order, then the halves. */
static float
fold8(const float *x)
{
	return (((x[0] + x[1]) + x[2]) + x[3]) +
	       (((x[4] + x[5]) + x[6]) + x[7]);
}

/* MLAS's hsum_float_8: halves, then pairs at distance 2, then 1. */
static float
hsum8(const float *x)
{
	float r0 = x[4] + x[0], r1 = x[5] + x[1];
	float r2 = x[6] + x[2], r3 = x[7] + x[3];

	return (r0 + r2) + (r1 + r3);
}

/* _mm512_reduce_add_ps and hsum_float_16: 256-bit halves, then hsum8. */
static float
hsum16(const float *x)
{
	float h[8];
	int i;

	for (i = 0; i < 8; i++)
		h[i] = x[i] + x[i + 8];
	return hsum8(h);
}

/* The 512-bit FoldAccumulators (one column of four). */
static float
fold16(const float *x)
{
	float s[4];
	int l;

	for (l = 0; l < 4; l++)
		s[l] = ((x[4 * l] + x[4 * l + 1]) + x[4 * l + 2]) +
		       x[4 * l + 3];
	return (s[0] + s[2]) + (s[1] + s[3]);
}

/*
 * Row m, column n from the 16 lanes of its chunks (acc): the block-32
 * tail, the lanes' sum, bias and the zero-point term z.
 */
static float
finish(const struct nb_job *j, size_t m, size_t n, const float *acc, float z)
{
	const struct qr_nbits_params *p = j->p;
	int c4 = n < p->n - p->n % 4;
	float r;

	if (j->bs == 32) {
		const uint8_t *col = p->b + n * j->kb * j->blob;
		const int8_t *q = j->q + m * j->kp;
		float acc2[8];
		size_t b, i, t;

		for (i = 0; i < 8; i++)
			acc2[i] = acc[i] + acc[i + 8];
		for (b = j->kb / 4 * 4; b < j->kb; b++) {
			float sc = j->sa[m * j->kb + b] *
				   p->scales[n * j->kb + b];

			for (i = 0; i < 8; i++) {
				int32_t s = 0;

				for (t = 0; t < 4; t++)
					s += q[32 * b + 4 * i + t] *
					     code4(col + b * j->blob, 4 * i + t);
				acc2[i] = fmaf((float)s, sc, acc2[i]);
			}
		}
		r = c4 ? fold8(acc2) : hsum8(acc2);
	} else {
		r = c4 && p->m % 2 == 1 && m == p->m - 1 ? fold16(acc) :
							   hsum16(acc);
	}
	if (p->bias != NULL)
		r += p->bias[n];
	return r + z;
}

/* The zero-point term of row m, column n. */
static float
zp_term(const struct nb_job *j, size_t m, size_t n)
{
	const float *sc = j->p->scales + n * j->kb;
	float z = 0;
	size_t b;

	for (b = 0; b < j->kb; b++)
		z = fmaf(j->za[m * j->kb + b],
			 -sc[b] * (float)zero_point(j, n, b), z);
	return z;
}

/* Chunk c's lane scales for row m, column n. */
static void
chunk_scales(const struct nb_job *j, size_t m, size_t n, size_t c,
	     float *sc)
{
	const float *sa = j->sa + m * j->kb, *sb = j->p->scales + n * j->kb;
	size_t l;

	if (j->bs == 32) {
		float s4[4];

		for (l = 0; l < 4; l++)
			s4[l] = sb[4 * c + l] * sa[4 * c + l];
		for (l = 0; l < 16; l++)
			sc[l] = s4[blk32[l]];
	} else {
		size_t b = c / (j->bs / CHUNK);

		for (l = 0; l < 16; l++)
			sc[l] = sa[b] * sb[b];
	}
}

/* Portable exact path: one output; w holds column n's codes, [kp]. */
static float
exact_one(const struct nb_job *j, size_t m, size_t n, const int16_t *w)
{
	const uint8_t (*wp)[2] = j->bs == 32 ? wp32 : wp128;
	const int8_t *q = j->q + m * j->kp;
	float acc[16] = {0}, sc[16];
	size_t c, l, h, t;

	for (c = 0; c < j->nch; c++) {
		const int16_t *wc = w + c * CHUNK;
		const int8_t *qc = q + c * CHUNK;

		chunk_scales(j, m, n, c, sc);
		for (l = 0; l < 16; l++) {
			int32_t s = 0;

			for (h = 0; h < 2; h++) {
				size_t v = 4 * (size_t)wp[l][h];

				for (t = 0; t < 4; t++)
					s += qc[v + t] * wc[v + t];
			}
			acc[l] = fmaf((float)s, sc[l], acc[l]);
		}
	}
	return finish(j, m, n, acc, zp_term(j, m, n));
}

/* ---- Other shapes: block after block ---- */

/* Column n's codes, minus the zero points unless raw, [kp], into d. */
static void
decode_col(const struct nb_job *j, size_t n, int raw, int16_t *d)
{
	const struct qr_nbits_params *p = j->p;
	const uint8_t *col = p->b + n * j->kb * j->blob;
	size_t b, i;

	for (b = 0; b < j->kb; b++) {
		int zp = raw ? 0 : zero_point(j, n, b);

		for (i = 0; i < j->bs; i++)
			d[b * j->bs + i] = (int16_t)((int)qr_packed_code(
				col + b * j->blob, i, (unsigned)p->bits) - zp);
	}
}

static float
generic_one(const struct nb_job *j, size_t m, size_t n, const int16_t *w)
{
	const struct qr_nbits_params *p = j->p;
	const int8_t *q = j->q + m * j->kp;
	float r = 0;
	size_t b, i;

	for (b = 0; b < j->kb; b++) {
		int32_t s = 0;

		for (i = 0; i < j->bs; i++)
			s += q[b * j->bs + i] * w[b * j->bs + i];
		r += (float)s * (j->sa[m * j->kb + b] *
				 p->scales[n * j->kb + b]);
	}
	return p->bias != NULL ? r + p->bias[n] : r;
}

/* Column n's lane scales, [nch][16], into sb (the layout of j->sav). */
static void
col_lanes(const struct nb_job *j, size_t n, float *sb)
{
	const float *sc = j->p->scales + n * j->kb;
	size_t c, l;

	for (c = 0; c < j->nch; c++)
		for (l = 0; l < 16; l++)
			sb[c * 16 + l] = j->bs == 32 ?
				sc[4 * c + blk32[j->perm[l]]] :
				sc[c / (j->bs / CHUNK)];
}

/* ---- AVX-512 ---- */

#ifdef NB_X86
#define NB_AVX2 __attribute__((target("avx2,fma")))
#define NB_AVX512 __attribute__((target("avx512f,avx512bw")))
#define NB_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

/* The zero-point terms of column n for every row, into z[mp], 8 rows a
 * step (both SIMD paths). */
static NB_AVX2 void
zp_terms_avx2(const struct nb_job *j, size_t n, float *z)
{
	const float *sc = j->p->scales + n * j->kb;
	size_t m, b;

	for (m = 0; m < j->p->m; m += 8) {
		__m256 acc = _mm256_setzero_ps();

		for (b = 0; b < j->kb; b++)
			acc = _mm256_fmadd_ps(
				_mm256_loadu_ps(j->zat + b * j->mp + m),
				_mm256_set1_ps(-sc[b] *
					       (float)zero_point(j, n, b)),
				acc);
		_mm256_storeu_ps(z + m, acc);
	}
}

/* The word permutation that puts a chunk's lanes in place. */
static NB_AVX512 __m512i
lane_index(const struct nb_job *j)
{
	const uint8_t (*wp)[2] = j->bs == 32 ? wp32 : wp128;
	int16_t idx[32];
	int l;

	for (l = 0; l < 16; l++) {
		idx[2 * l] = wp[l][0];
		idx[2 * l + 1] = wp[l][1];
	}
	return _mm512_loadu_si512(idx);
}

/*
 * Rows [m0, m0 + mr) (mr <= ROWS) of columns n[0] and n[1] (the same
 * column twice for a last odd one): the chunks' lanes into
 * acc[2][ROWS][16]. sb holds each column's lane scales ([2][nch][16]);
 * a lane's scale is its row's (j->sav) times its column's, one rounding
 * as MLAS's. vnni selects vpdpbusd over vpmaddubsw + vpmaddwd (the same
 * sums: no pair of products reaches 16 bits).
 */
#define NB_CHUNKS(ATTR, NAME, DOT)                                          \
static ATTR void                                                            \
NAME(const struct nb_job *j, size_t m0, size_t mr, const size_t *n,         \
     __m512i idx, const float *sb, float (*acc)[ROWS][16])                  \
{                                                                           \
	const uint8_t *c0 = j->p->b + n[0] * j->kb * j->blob;               \
	const uint8_t *c1 = j->p->b + n[1] * j->kb * j->blob;               \
	const __m512i low = _mm512_set1_epi8(15);                           \
	const __m512i ones = _mm512_set1_epi16(1);                          \
	__m512 v0[ROWS], v1[ROWS];                                          \
	size_t c, r;                                                        \
                                                                            \
	(void)ones;                                                         \
	for (r = 0; r < ROWS; r++)                                          \
		v0[r] = v1[r] = _mm512_setzero_ps();                        \
	for (c = 0; c < j->nch; c++) {                                      \
		__m512i b0 = _mm512_permutexvar_epi16(idx,                  \
			_mm512_loadu_si512(c0 + c * (CHUNK / 2)));          \
		__m512i b1 = _mm512_permutexvar_epi16(idx,                  \
			_mm512_loadu_si512(c1 + c * (CHUNK / 2)));          \
		__m512i lo0 = _mm512_and_si512(b0, low);                    \
		__m512i hi0 = _mm512_and_si512(_mm512_srli_epi16(b0, 4),    \
					       low);                        \
		__m512i lo1 = _mm512_and_si512(b1, low);                    \
		__m512i hi1 = _mm512_and_si512(_mm512_srli_epi16(b1, 4),    \
					       low);                        \
		__m512 s0 = _mm512_loadu_ps(sb + c * 16);                   \
		__m512 s1 = _mm512_loadu_ps(sb + (j->nch + c) * 16);        \
                                                                            \
		for (r = 0; r < mr; r++) {                                  \
			size_t at = (m0 + r) * j->nch + c;                  \
			const int8_t *qa = j->qa + at * CHUNK;              \
			__m512i alo = _mm512_loadu_si512(qa);               \
			__m512i ahi = _mm512_loadu_si512(qa + 64);          \
			__m512 sa = _mm512_loadu_ps(j->sav + at * 16);      \
                                                                            \
			v0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(         \
				DOT(lo0, hi0)), _mm512_mul_ps(s0, sa), v0[r]);\
			v1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(         \
				DOT(lo1, hi1)), _mm512_mul_ps(s1, sa), v1[r]);\
		}                                                           \
	}                                                                   \
	for (r = 0; r < mr; r++) {                                          \
		_mm512_storeu_ps(acc[0][r], v0[r]);                         \
		_mm512_storeu_ps(acc[1][r], v1[r]);                         \
	}                                                                   \
	/* the callers go on to finish(), plain SSE code: GCC leaves out    \
	 * the vzeroupper of a static AVX-512 function only AVX-512 code    \
	 * calls, and SSE code after dirty upper halves ran three times     \
	 * slower on an Intel Xeon (a false dependency on every register) */ \
	_mm256_zeroupper();                                                 \
}

#define NB_DOT_VNNI(lo, hi)                                                 \
	_mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(),     \
						(lo), alo), (hi), ahi)
#define NB_DOT_BW(lo, hi)                                                   \
	_mm512_add_epi32(                                                   \
		_mm512_madd_epi16(_mm512_maddubs_epi16((lo), alo), ones),   \
		_mm512_madd_epi16(_mm512_maddubs_epi16((hi), ahi), ones))
NB_CHUNKS(NB_VNNI, chunks_vnni, NB_DOT_VNNI)
NB_CHUNKS(NB_AVX512, chunks_avx512, NB_DOT_BW)


/* Columns [n0, n1) of the exact path with AVX-512; z holds j->mp floats
 * and sb 2 * nch * 16. */
static NB_AVX512 void
exact_cols_avx512(const struct nb_job *j, size_t n0, size_t n1, float *z,
		  float *sb)
{
	const struct qr_nbits_params *p = j->p;
	int vnni = (qr_kernels_cpu_features() & QR_CPU_AVX512VNNI) != 0;
	__m512i idx = lane_index(j);
	float acc[2][ROWS][16];
	size_t n, m, r, t;

	for (n = n0; n < n1; n += 2) {
		size_t nn[2] = {n, n + 1 < n1 ? n + 1 : n};
		size_t nc = nn[1] != n ? 2 : 1;

		col_lanes(j, nn[0], sb);
		col_lanes(j, nn[1], sb + j->nch * 16);
		for (m = 0; m < p->m; m += ROWS) {
			size_t mr = p->m - m < ROWS ? p->m - m : ROWS;

			if (vnni)
				chunks_vnni(j, m, mr, nn, idx, sb, acc);
			else
				chunks_avx512(j, m, mr, nn, idx, sb, acc);
			for (t = 0; t < nc; t++) {
				/* z[] of column nn[t], for the rows of this
				 * tile, made on its first tile */
				if (m == 0)
					zp_terms_avx2(j, nn[t],
							z + t * j->mp);
				for (r = 0; r < mr; r++)
					j->y[(m + r) * p->n + nn[t]] =
						finish(j, m + r, nn[t],
						       acc[t][r],
						       z[t * j->mp + m + r]);
			}
		}
	}
}

/* ---- AVX2 ---- */

/*
 * Rows [m0, m0 + mr) of column n: a chunk's two 256-bit halves hold the
 * lanes j->perm lists (word unpacks for blocks >= 128, a byte shuffle
 * within each 8 bytes for blocks of 32), summed with vpmaddubsw +
 * vpmaddwd; acc[ROWS][16] gets the lanes back in order.
 */
static NB_AVX2 void
chunks_avx2(const struct nb_job *j, size_t m0, size_t mr, size_t n,
	    const float *sb, float (*acc)[16])
{
	const uint8_t *col = j->p->b + n * j->kb * j->blob;
	const __m256i low = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
	const __m256i pat = _mm256_setr_epi8(0, 1, 4, 5, 2, 3, 6, 7, 8, 9,
					     12, 13, 10, 11, 14, 15, 0, 1, 4,
					     5, 2, 3, 6, 7, 8, 9, 12, 13, 10,
					     11, 14, 15);
	__m256 vp[ROWS], vq[ROWS];
	float t[16];
	size_t c, r, i;

	for (r = 0; r < ROWS; r++)
		vp[r] = vq[r] = _mm256_setzero_ps();
	for (c = 0; c < j->nch; c++) {
		__m256i x = _mm256_loadu_si256((const __m256i *)(void *)
					       (col + c * (CHUNK / 2)));
		__m256i y = _mm256_loadu_si256((const __m256i *)(void *)
					       (col + c * (CHUNK / 2) + 32));
		__m256i bp, bq, lop, hip, loq, hiq;
		__m256 sp = _mm256_loadu_ps(sb + c * 16);
		__m256 sq = _mm256_loadu_ps(sb + c * 16 + 8);

		if (j->bs == 32) {
			bp = _mm256_shuffle_epi8(x, pat);
			bq = _mm256_shuffle_epi8(y, pat);
		} else {
			bp = _mm256_unpacklo_epi16(x, y);
			bq = _mm256_unpackhi_epi16(x, y);
		}
		lop = _mm256_and_si256(bp, low);
		hip = _mm256_and_si256(_mm256_srli_epi16(bp, 4), low);
		loq = _mm256_and_si256(bq, low);
		hiq = _mm256_and_si256(_mm256_srli_epi16(bq, 4), low);
		for (r = 0; r < mr; r++) {
			size_t at = (m0 + r) * j->nch + c;
			const int8_t *qa = j->qa + at * CHUNK;
			const float *sa = j->sav + at * 16;
#define NB_DOT2(b, off)                                                     \
	_mm256_madd_epi16(_mm256_maddubs_epi16((b), _mm256_loadu_si256(     \
		(const __m256i *)(const void *)(qa + (off)))), ones)
			__m256i dp = _mm256_add_epi32(NB_DOT2(lop, 0),
						      NB_DOT2(hip, 64));
			__m256i dq = _mm256_add_epi32(NB_DOT2(loq, 32),
						      NB_DOT2(hiq, 96));
#undef NB_DOT2

			vp[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dp),
				_mm256_mul_ps(sp, _mm256_loadu_ps(sa)), vp[r]);
			vq[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dq),
				_mm256_mul_ps(sq, _mm256_loadu_ps(sa + 8)),
				vq[r]);
		}
	}
	for (r = 0; r < mr; r++) {
		_mm256_storeu_ps(t, vp[r]);
		_mm256_storeu_ps(t + 8, vq[r]);
		for (i = 0; i < 16; i++)
			acc[r][j->perm[i]] = t[i];
	}
}

/* Columns [n0, n1) of the exact path with AVX2; z holds j->mp floats and
 * sb nch * 16. */
static NB_AVX2 void
exact_cols_avx2(const struct nb_job *j, size_t n0, size_t n1, float *z,
		float *sb)
{
	const struct qr_nbits_params *p = j->p;
	float acc[ROWS][16];
	size_t n, m, r;

	for (n = n0; n < n1; n++) {
		col_lanes(j, n, sb);
		zp_terms_avx2(j, n, z);
		for (m = 0; m < p->m; m += ROWS) {
			size_t mr = p->m - m < ROWS ? p->m - m : ROWS;

			chunks_avx2(j, m, mr, n, sb, acc);
			for (r = 0; r < mr; r++)
				j->y[(m + r) * p->n + n] =
					finish(j, m + r, n, acc[r], z[m + r]);
		}
	}
}
#endif

/* ---- Driver ---- */

static void
cols_task(void *ctx, size_t task, int slot)
{
	const struct nb_job *j = ctx;
	const struct qr_nbits_params *p = j->p;
	size_t n0 = task * COLS, n1 = n0 + COLS < p->n ? n0 + COLS : p->n;
	char *own = j->scratch + (size_t)slot * j->slot;
	int16_t *w = (int16_t *)(void *)own;
	size_t n, m;

#ifdef NB_X86
	if (j->simd) {
		float *z = (float *)(void *)own;

		if (j->simd == 2)
			exact_cols_avx512(j, n0, n1, z, z + 2 * j->mp);
		else
			exact_cols_avx2(j, n0, n1, z, z + 2 * j->mp);
		return;
	}
#endif
	for (n = n0; n < n1; n++) {
		decode_col(j, n, j->exact, w);
		for (m = 0; m < p->m; m++)
			j->y[m * p->n + n] = j->exact ? exact_one(j, m, n, w) :
							generic_one(j, m, n, w);
	}
}

int
qr_nbits_exact(const struct qr_nbits_params *p)
{
	return p->bits == 4 && (p->block == 32 || p->block >= CHUNK);
}

/* The workspace's parts, at offsets rounded to 64 bytes. */
static size_t
layout(const struct qr_nbits_params *p, int n_threads, struct nb_job *j,
       char *ws)
{
	size_t kb = (p->k + p->block - 1) / p->block, kp = kb * p->block;
	size_t mp = round_up(p->m ? p->m : 1, 16), at = 0;
	size_t nch = qr_nbits_exact(p) ? (p->block == 32 ? kb / 4 :
						      kp / CHUNK) : 0;
	size_t slot = round_up(kp * sizeof(int16_t) +
			       (2 * mp + 2 * nch * 16) * sizeof(float), 64);
	int simd = 0;

#ifdef NB_X86
	if (qr_nbits_exact(p)) {
		unsigned f = qr_kernels_cpu_features();

		simd = (f & QR_CPU_AVX512BW) && !force_avx2 ? 2 :
		       (f & QR_CPU_AVX2) ? 1 : 0;
	}
#endif
	if (n_threads < 1)
		n_threads = 1;
#define NB_PART(field, type, count)                                         \
	do {                                                                \
		if (j != NULL)                                              \
			j->field = (type *)(void *)(ws + at);               \
		at += round_up((count) * sizeof(type), 64);                 \
	} while (0)
	NB_PART(q, int8_t, p->m * kp);
	NB_PART(sa, float, p->m * kb);
	NB_PART(za, float, p->m * kb);
	NB_PART(scratch, char, slot * (size_t)n_threads);
	if (simd) {
		NB_PART(qa, int8_t, p->m * kp);
		NB_PART(zat, float, kb * mp);
		NB_PART(sav, float, p->m * nch * 16);
	}
#undef NB_PART
	if (j != NULL) {
		j->p = p;
		j->kb = kb;
		j->bs = p->block;
		j->kp = kp;
		j->blob = p->block * p->bits / 8;
		j->zrow = (kb * p->bits + 7) / 8;
		j->mp = mp;
		j->exact = qr_nbits_exact(p);
		j->nch = nch;
		j->simd = simd;
		j->perm = simd != 1 ? perm16 : p->block == 32 ? perm32_avx2 :
					       perm128_avx2;
		j->slot = slot;
		if (!simd) {
			j->qa = NULL;
			j->zat = NULL;
			j->sav = NULL;
		}
	}
	return at + 64;
}

void
qr_nbits_force_avx2(int on)
{
	force_avx2 = on != 0;
}

size_t
qr_nbits_workspace(const struct qr_nbits_params *p, int n_threads)
{
	return layout(p, n_threads, NULL, NULL);
}

void
qr_nbits_gemm(const struct qr_nbits_params *p, const float *a, float *y,
	      void *ws, int n_threads)
{
	struct nb_job j;
	char *base = (char *)(((uintptr_t)ws + 63) & ~(uintptr_t)63);

	if (p->m == 0 || p->n == 0)
		return;
	layout(p, n_threads, &j, base);
	j.a = a;
	j.y = y;
	if (j.zat != NULL)
		memset(j.zat, 0, j.kb * j.mp * sizeof *j.zat);
	qr_parallel_for(n_threads, p->m, quant_task, &j);
	qr_parallel_for(n_threads, (p->n + COLS - 1) / COLS, cols_task, &j);
}
