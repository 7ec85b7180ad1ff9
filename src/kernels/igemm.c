/*
 * igemm: the exact int8 GEMM core. Activations are u8, weights s8 (other
 * signedness is shifted by 128 before they get here), products accumulate
 * in wrapping int32, and zero points come off afterwards with row and
 * column sums:
 *
 *   sum (x - xz)(w - wz) = sum x*w - wz * sum x - xz * sum w + k * xz * wz
 *
 * Packed activations are [k/4][cols][4] so that one 32-bit lane holds four
 * consecutive k of one column, the operand shape of AVX-512 VNNI vpdpbusd
 * (u8 x s8, four products summed into an int32, no saturation). The
 * portable path reads the same layout.
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_HAVE_VNNI_CODE 1
#endif

static size_t
round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

void
qr_ig_weights_init(struct qr_ig_weights *iw, const void *src, int is_signed,
		   size_t m, size_t k, size_t rs, size_t cs,
		   const uint32_t *order, const int32_t *zp, size_t n_zp)
{
	size_t i, j;

	QR_ASSERT(n_zp == 1 || n_zp == m);
	iw->m = m;
	iw->k = k;
	iw->k4 = round_up(k ? k : 1, 4);
	iw->w = xcalloc(m ? m * iw->k4 : 1, 1);
	iw->rowsum = xcalloc(m ? m : 1, sizeof *iw->rowsum);
	iw->zp = xcalloc(m ? m : 1, sizeof *iw->zp);
	iw->pairs16 = is_signed &&
		      (qr_kernels_ort_traits() & QR_ORT_U8S8_SATURATES);
	for (i = 0; i < m; i++) {
		int8_t *d = iw->w + i * iw->k4;
		int32_t s = 0;

		for (j = 0; j < k; j++) {
			size_t at = i * rs + (order ? order[j] : j) * cs;
			int v = is_signed ? ((const int8_t *)src)[at] :
					    (int)((const uint8_t *)src)[at] - 128;

			d[j] = (int8_t)v;
			s += v;
		}
		iw->rowsum[i] = s;
		iw->zp[i] = zp[n_zp == 1 ? 0 : i] - (is_signed ? 0 : 128);
	}
}

void
qr_ig_weights_fini(struct qr_ig_weights *iw)
{
	free(iw->w);
	free(iw->rowsum);
	free(iw->zp);
	memset(iw, 0, sizeof *iw);
}

static void
pack_cols_portable(const uint8_t *src, size_t ld, size_t k, size_t nb,
		   uint8_t x80, const uint32_t *order, uint8_t *dst,
		   int32_t *colsum)
{
	static const uint8_t zero[1];
	size_t nbp = round_up(nb, QR_IG_NALIGN), k4 = round_up(k ? k : 1, 4);
	size_t kb, j;

	memset(colsum, 0, nb * sizeof *colsum);
	for (kb = 0; kb < k4; kb += 4) {
		const uint8_t *s[4];
		size_t sstep[4];
		uint8_t *d = dst + kb * nbp;
		int t;

		for (t = 0; t < 4; t++) {
			size_t r = kb + (size_t)t;
			int real = r < k;

			s[t] = real ? src + (order ? order[r] : r) * ld : zero;
			sstep[t] = real ? 1 : 0;
		}
		for (j = 0; j < nb; j++) {
			uint8_t a = s[0][j * sstep[0]] ^ (sstep[0] ? x80 : 0);
			uint8_t b = s[1][j * sstep[1]] ^ (sstep[1] ? x80 : 0);
			uint8_t c = s[2][j * sstep[2]] ^ (sstep[2] ? x80 : 0);
			uint8_t e = s[3][j * sstep[3]] ^ (sstep[3] ? x80 : 0);

			d[4 * j] = a;
			d[4 * j + 1] = b;
			d[4 * j + 2] = c;
			d[4 * j + 3] = e;
			colsum[j] += (int32_t)a + b + c + e;
		}
		memset(d + 4 * nb, 0, 4 * (nbp - nb));
	}
}

#ifdef QR_HAVE_VNNI_CODE
/* The SIMD packers' last columns [j, nb) of one group of four rows s
 * (NULL: a row past k, zeros), then zeros up to nbp. */
static void
pack_tail(const uint8_t *const s[4], uint8_t x80, size_t j, size_t nb,
	  size_t nbp, uint8_t *d, int32_t *colsum)
{
	int t;

	for (; j < nb; j++) {
		int32_t sum = 0;

		for (t = 0; t < 4; t++) {
			uint8_t b = s[t] ? s[t][j] ^ x80 : 0;

			d[4 * j + (size_t)t] = b;
			sum += b;
		}
		colsum[j] += sum;
	}
	memset(d + 4 * nb, 0, 4 * (nbp - nb));
}

/* pack_cols_portable with 16 columns per step: byte/word unpacks
 * interleave four rows, vpdpbusd against ones adds them to the sums. */
static __attribute__((target("avx512f,avx512bw,avx512vnni"))) void
pack_cols_vnni(const uint8_t *src, size_t ld, size_t k, size_t nb,
	       uint8_t x80, uint8_t *dst, int32_t *colsum)
{
	const __m128i flip = _mm_set1_epi8((char)x80);
	size_t nbp = round_up(nb, QR_IG_NALIGN), k4 = round_up(k ? k : 1, 4);
	size_t n16 = nb / 16 * 16, kb, j;
	const __m512i ones = _mm512_set1_epi32(0x01010101);

	memset(colsum, 0, nb * sizeof *colsum);
	for (kb = 0; kb < k4; kb += 4) {
		const uint8_t *s[4];
		uint8_t *d = dst + kb * nbp;
		int t;

		for (t = 0; t < 4; t++)
			s[t] = kb + (size_t)t < k ? src + (kb + (size_t)t) * ld :
						    NULL;
		for (j = 0; j < n16; j += 16) {
			__m128i r[4], ab0, ab1, cd0, cd1;
			__m512i v, cs;

			for (t = 0; t < 4; t++)
				r[t] = s[t] ? _mm_xor_si128(_mm_loadu_si128(
						      (const __m128i *)(s[t] + j)),
							    flip) :
					      _mm_setzero_si128();
			ab0 = _mm_unpacklo_epi8(r[0], r[1]);
			ab1 = _mm_unpackhi_epi8(r[0], r[1]);
			cd0 = _mm_unpacklo_epi8(r[2], r[3]);
			cd1 = _mm_unpackhi_epi8(r[2], r[3]);
			v = _mm512_castsi128_si512(_mm_unpacklo_epi16(ab0, cd0));
			v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(ab0, cd0), 1);
			v = _mm512_inserti32x4(v, _mm_unpacklo_epi16(ab1, cd1), 2);
			v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(ab1, cd1), 3);
			_mm512_storeu_si512(d + 4 * j, v);
			cs = _mm512_loadu_si512(colsum + j);
			cs = _mm512_dpbusd_epi32(cs, v, ones);
			_mm512_storeu_si512(colsum + j, cs);
		}
		pack_tail(s, x80, j, nb, nbp, d, colsum);
	}
}

/* pack_cols_vnni with AVX2 (source rows through order, or in order):
 * the same interleave; vpmaddubsw and vpmaddwd against ones add each
 * column's four bytes to its sum. */
static __attribute__((target("avx2"))) void
pack_cols_avx2(const uint8_t *src, size_t ld, size_t k, size_t nb,
	       uint8_t x80, const uint32_t *order, uint8_t *dst,
	       int32_t *colsum)
{
	const __m128i flip = _mm_set1_epi8((char)x80);
	const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
	size_t nbp = round_up(nb, QR_IG_NALIGN), k4 = round_up(k ? k : 1, 4);
	size_t n16 = nb / 16 * 16, kb, j;

	memset(colsum, 0, nb * sizeof *colsum);
	for (kb = 0; kb < k4; kb += 4) {
		const uint8_t *s[4];
		uint8_t *d = dst + kb * nbp;
		int t;

		for (t = 0; t < 4; t++) {
			size_t r = kb + (size_t)t;

			s[t] = r < k ? src + (order ? order[r] : r) * ld : NULL;
		}
		for (j = 0; j < n16; j += 16) {
			__m128i r[4], ab0, ab1, cd0, cd1;
			__m256i v0, v1, c0, c1;

			for (t = 0; t < 4; t++)
				r[t] = s[t] ? _mm_xor_si128(_mm_loadu_si128(
						      (const __m128i *)(s[t] + j)),
							    flip) :
					      _mm_setzero_si128();
			ab0 = _mm_unpacklo_epi8(r[0], r[1]);
			ab1 = _mm_unpackhi_epi8(r[0], r[1]);
			cd0 = _mm_unpacklo_epi8(r[2], r[3]);
			cd1 = _mm_unpackhi_epi8(r[2], r[3]);
			v0 = _mm256_set_m128i(_mm_unpackhi_epi16(ab0, cd0),
					      _mm_unpacklo_epi16(ab0, cd0));
			v1 = _mm256_set_m128i(_mm_unpackhi_epi16(ab1, cd1),
					      _mm_unpacklo_epi16(ab1, cd1));
			_mm256_storeu_si256((__m256i *)(d + 4 * j), v0);
			_mm256_storeu_si256((__m256i *)(d + 4 * j + 32), v1);
			c0 = _mm256_madd_epi16(_mm256_maddubs_epi16(v0, ones8),
					       ones16);
			c1 = _mm256_madd_epi16(_mm256_maddubs_epi16(v1, ones8),
					       ones16);
			_mm256_storeu_si256((__m256i *)(colsum + j),
				_mm256_add_epi32(c0, _mm256_loadu_si256(
					(const __m256i *)(colsum + j))));
			_mm256_storeu_si256((__m256i *)(colsum + j + 8),
				_mm256_add_epi32(c1, _mm256_loadu_si256(
					(const __m256i *)(colsum + j + 8))));
		}
		pack_tail(s, x80, j, nb, nbp, d, colsum);
	}
}
#endif

void
qr_ig_pack_cols(const uint8_t *src, size_t ld, size_t k, size_t nb, int flip,
		const uint32_t *order, uint8_t *dst, int32_t *colsum)
{
	uint8_t x80 = flip ? 0x80 : 0;

#ifdef QR_HAVE_VNNI_CODE
	if (qr_ig_use_vnni() && order == NULL) {
		pack_cols_vnni(src, ld, k, nb, x80, dst, colsum);
		return;
	}
	if (qr_kernels_cpu_features() & QR_CPU_AVX2) {
		pack_cols_avx2(src, ld, k, nb, x80, order, dst, colsum);
		return;
	}
#endif
	pack_cols_portable(src, ld, k, nb, x80, order, dst, colsum);
}

void
qr_ig_pack_rows(const uint8_t *src, size_t ld, size_t k, size_t nb, int flip,
		uint8_t *dst, int32_t *colsum)
{
	size_t nbp = round_up(nb, QR_IG_NALIGN), k4 = round_up(k ? k : 1, 4);
	uint8_t x = flip ? 0x80 : 0;
	size_t j, kk;

	for (j = 0; j < nb; j++) {
		const uint8_t *s = src + j * ld;
		int32_t sum = 0;

		for (kk = 0; kk < k4; kk++) {
			uint8_t v = kk < k ? (uint8_t)(s[kk] ^ x) : 0;

			dst[(kk / 4) * nbp * 4 + 4 * j + kk % 4] = v;
			sum += v;
		}
		colsum[j] = sum;
	}
	for (kk = 0; kk < k4; kk += 4)
		memset(dst + kk * nbp + 4 * nb, 0, 4 * (nbp - nb));
}

static inline int32_t
sat16(int32_t v)
{
	return v > INT16_MAX ? INT16_MAX : v < INT16_MIN ? INT16_MIN : v;
}

/* Raw sums, portable: c[i][j] = sum_k w[i][k] * x[k][j] (mod 2^32). With
 * pairs16, as ONNX Runtime's u8 x s8 kernels compute them on CPUs
 * without VNNI (vpmaddubsw, then vpmaddwd with ones): each pair of
 * products, k and k + 1 for even k, saturated to int16 before it is
 * added. */
static void
ig_raw_portable(const struct qr_ig_weights *iw, const uint8_t *xp, size_t nb,
		int32_t *c, size_t ldc, int pairs16)
{
	size_t nbp = round_up(nb, QR_IG_NALIGN), kq = iw->k4 / 4;
	size_t i, kb, j;

	for (i = 0; i < iw->m; i++) {
		const int8_t *w = iw->w + i * iw->k4;
		uint32_t *ci = (uint32_t *)(c + i * ldc);

		for (j = 0; j < nb; j++)
			ci[j] = 0;
		for (kb = 0; kb < kq; kb++) {
			const uint8_t *x = xp + kb * nbp * 4;
			int32_t w0 = w[4 * kb], w1 = w[4 * kb + 1];
			int32_t w2 = w[4 * kb + 2], w3 = w[4 * kb + 3];

			if (pairs16)
				for (j = 0; j < nb; j++)
					ci[j] += (uint32_t)(
						sat16(w0 * x[4 * j] +
						      w1 * x[4 * j + 1]) +
						sat16(w2 * x[4 * j + 2] +
						      w3 * x[4 * j + 3]));
			else
				for (j = 0; j < nb; j++)
					ci[j] += (uint32_t)(
						(w0 * x[4 * j] +
						 w1 * x[4 * j + 1]) +
						(w2 * x[4 * j + 2] +
						 w3 * x[4 * j + 3]));
		}
	}
}

#ifdef QR_HAVE_VNNI_CODE
/* ig_raw_pairs16 with the instructions ONNX Runtime's kernels use:
 * vpmaddubsw (u8 x s8, adjacent products summed with int16 saturation)
 * and vpmaddwd against ones. One tile: R rows (a constant, 1 to 4) by 16
 * columns from column j, accumulators in registers (the packed columns
 * past nb are zero, so whole vectors are read; n <= 16 are stored). */
#define P16_ROW(r)                                                        \
	if (R > (r)) {                                                    \
		int32_t w4_;                                              \
		__m256i wv_;                                              \
		memcpy(&w4_, w + (r) * k4 + 4 * kb, 4);                   \
		wv_ = _mm256_set1_epi32(w4_);                             \
		a##r##0 = _mm256_add_epi32(a##r##0, _mm256_madd_epi16(    \
			_mm256_maddubs_epi16(x0, wv_), ones));            \
		a##r##1 = _mm256_add_epi32(a##r##1, _mm256_madd_epi16(    \
			_mm256_maddubs_epi16(x1, wv_), ones));            \
	}
#define P16_OUT(r)                                                        \
	if (R > (r)) {                                                    \
		int32_t *ci_ = c + (r) * ldc, t_[16];                     \
		if (n == 16) {                                            \
			_mm256_storeu_si256((__m256i *)ci_, a##r##0);     \
			_mm256_storeu_si256((__m256i *)(ci_ + 8), a##r##1);\
		} else {                                                  \
			_mm256_storeu_si256((__m256i *)t_, a##r##0);      \
			_mm256_storeu_si256((__m256i *)(t_ + 8), a##r##1);\
			memcpy(ci_, t_, n * sizeof *t_);                  \
		}                                                         \
	}
static inline __attribute__((always_inline, target("avx2"))) void
p16_tile(const int8_t *w, size_t k4, const uint8_t *x, size_t xstride,
	 int32_t *c, size_t ldc, size_t n, const int R)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00;
	__m256i a20 = a00, a21 = a00, a30 = a00, a31 = a00;
	size_t kb, kq = k4 / 4;

	for (kb = 0; kb < kq; kb++, x += xstride) {
		__m256i x0 = _mm256_loadu_si256((const __m256i *)x);
		__m256i x1 = _mm256_loadu_si256((const __m256i *)(x + 32));

		P16_ROW(0)
		P16_ROW(1)
		P16_ROW(2)
		P16_ROW(3)
	}
	P16_OUT(0)
	P16_OUT(1)
	P16_OUT(2)
	P16_OUT(3)
}
#undef P16_ROW
#undef P16_OUT

/* Exact raw sums with AVX2 (no VNNI): bytes widened to int16, vpmaddwd
 * sums each column's products in two pairs (exactly: 2 * 255 * 128 fits
 * int32), and the pairs are added at the end. R rows (1 or 2, a
 * constant) by 16 columns from x. */
#define EX_ROW(r)                                                         \
	if (R > (r)) {                                                    \
		int32_t w4_;                                              \
		__m256i wv_;                                              \
		memcpy(&w4_, w + (r) * k4 + 4 * kb, 4);                   \
		wv_ = _mm256_cvtepi8_epi16(_mm_set1_epi32(w4_));          \
		a##r##0 = _mm256_add_epi32(a##r##0, _mm256_madd_epi16(x0, wv_));\
		a##r##1 = _mm256_add_epi32(a##r##1, _mm256_madd_epi16(x1, wv_));\
		a##r##2 = _mm256_add_epi32(a##r##2, _mm256_madd_epi16(x2, wv_));\
		a##r##3 = _mm256_add_epi32(a##r##3, _mm256_madd_epi16(x3, wv_));\
	}
#define EX_OUT(r)                                                         \
	if (R > (r)) {                                                    \
		int32_t t_[16];                                           \
		_mm256_storeu_si256((__m256i *)t_, _mm256_permute4x64_epi64(\
			_mm256_hadd_epi32(a##r##0, a##r##1),              \
			_MM_SHUFFLE(3, 1, 2, 0)));                        \
		_mm256_storeu_si256((__m256i *)(t_ + 8),                  \
			_mm256_permute4x64_epi64(                         \
				_mm256_hadd_epi32(a##r##2, a##r##3),      \
				_MM_SHUFFLE(3, 1, 2, 0)));                \
		memcpy(c + (r) * ldc, t_, n * sizeof *t_);                \
	}
static inline __attribute__((always_inline, target("avx2"))) void
exact_tile(const int8_t *w, size_t k4, const uint8_t *x, size_t xstride,
	   int32_t *c, size_t ldc, size_t n, const int R)
{
	__m256i a00 = _mm256_setzero_si256(), a01 = a00, a02 = a00, a03 = a00;
	__m256i a10 = a00, a11 = a00, a12 = a00, a13 = a00;
	size_t kb, kq = k4 / 4;

	for (kb = 0; kb < kq; kb++, x += xstride) {
		__m256i x0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(
			(const __m128i *)x));
		__m256i x1 = _mm256_cvtepu8_epi16(_mm_loadu_si128(
			(const __m128i *)(x + 16)));
		__m256i x2 = _mm256_cvtepu8_epi16(_mm_loadu_si128(
			(const __m128i *)(x + 32)));
		__m256i x3 = _mm256_cvtepu8_epi16(_mm_loadu_si128(
			(const __m128i *)(x + 48)));

		EX_ROW(0)
		EX_ROW(1)
	}
	EX_OUT(0)
	EX_OUT(1)
}
#undef EX_ROW
#undef EX_OUT

static __attribute__((target("avx2"))) void
ig_raw_exact_avx2(const struct qr_ig_weights *iw, const uint8_t *xp,
		  size_t nb, int32_t *c, size_t ldc)
{
	size_t nbp = round_up(nb, QR_IG_NALIGN), i, j;

	for (i = 0; i < iw->m; i += 2) {
		const int8_t *w = iw->w + i * iw->k4;

		for (j = 0; j < nb; j += 16) {
			size_t n = nb - j < 16 ? nb - j : 16;

			if (iw->m - i >= 2)
				exact_tile(w, iw->k4, xp + j * 4, nbp * 4,
					   c + i * ldc + j, ldc, n, 2);
			else
				exact_tile(w, iw->k4, xp + j * 4, nbp * 4,
					   c + i * ldc + j, ldc, n, 1);
		}
	}
}

static __attribute__((target("avx2"))) void
ig_raw_pairs16_avx2(const struct qr_ig_weights *iw, const uint8_t *xp,
		    size_t nb, int32_t *c, size_t ldc)
{
	size_t nbp = round_up(nb, QR_IG_NALIGN), i, j, rows;

	for (i = 0; i < iw->m; i += rows) {
		const int8_t *w = iw->w + i * iw->k4;

		rows = iw->m - i < 4 ? iw->m - i : 4;
		for (j = 0; j < nb; j += 16) {
			const uint8_t *x = xp + j * 4;
			int32_t *ci = c + i * ldc + j;
			size_t n = nb - j < 16 ? nb - j : 16;

			switch (rows) {
			case 4: p16_tile(w, iw->k4, x, nbp * 4, ci, ldc, n, 4);
				break;
			case 3: p16_tile(w, iw->k4, x, nbp * 4, ci, ldc, n, 3);
				break;
			case 2: p16_tile(w, iw->k4, x, nbp * 4, ci, ldc, n, 2);
				break;
			default: p16_tile(w, iw->k4, x, nbp * 4, ci, ldc, n, 1);
			}
		}
	}
}

#define QR_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

/* One tile of MR rows x NV*16 columns, accumulators in registers. */
static inline __attribute__((always_inline)) QR_VNNI void
vnni_tile(const int8_t *w, size_t k4, const uint8_t *x, size_t xstride,
	  int32_t *c, size_t ldc, size_t ncols, const int MR, const int NV)
{
	__m512i acc[4][4];
	size_t kb, kq = k4 / 4;
	int r, v;

#pragma GCC unroll 4
	for (r = 0; r < MR; r++)
#pragma GCC unroll 4
		for (v = 0; v < NV; v++)
			acc[r][v] = _mm512_setzero_si512();
	for (kb = 0; kb < kq; kb++) {
		__m512i xv[4];

#pragma GCC unroll 4
		for (v = 0; v < NV; v++)
			xv[v] = _mm512_loadu_si512(x + kb * xstride + 64 * v);
#pragma GCC unroll 4
		for (r = 0; r < MR; r++) {
			int32_t wq;
			__m512i wb;

			memcpy(&wq, w + r * k4 + 4 * kb, 4);
			wb = _mm512_set1_epi32(wq);
#pragma GCC unroll 4
			for (v = 0; v < NV; v++)
				acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], xv[v],
								wb);
		}
	}
#pragma GCC unroll 4
	for (r = 0; r < MR; r++) {
#pragma GCC unroll 4
		for (v = 0; v < NV; v++) {
			size_t col = 16 * (size_t)v;
			int32_t *d = c + r * ldc + col;

			if (col + 16 <= ncols)
				_mm512_storeu_si512(d, acc[r][v]);
			else if (col < ncols)
				_mm512_mask_storeu_epi32(
					d, (__mmask16)((1u << (ncols - col)) - 1),
					acc[r][v]);
		}
	}
}

#define VNNI_CASE(mr, nv)                                                   \
	case (mr) * 8 + (nv):                                               \
		vnni_tile(w, k4, x, xstride, cc, ldc, ncols, mr, nv);       \
		break

static QR_VNNI void
ig_raw_vnni(const struct qr_ig_weights *iw, const uint8_t *xp, size_t nb,
	    int32_t *c, size_t ldc)
{
	size_t nbp = round_up(nb, QR_IG_NALIGN), k4 = iw->k4;
	size_t xstride = nbp * 4, j0, i0;

	for (j0 = 0; j0 < nb; j0 += 64) {
		size_t ncols = nb - j0 < 64 ? nb - j0 : 64;
		int nv = (int)((ncols + 15) / 16);
		const uint8_t *x = xp + j0 * 4;

		for (i0 = 0; i0 < iw->m; i0 += 4) {
			int mr = iw->m - i0 < 4 ? (int)(iw->m - i0) : 4;
			const int8_t *w = iw->w + i0 * k4;
			int32_t *cc = c + i0 * ldc + j0;

			switch (mr * 8 + nv) {
			VNNI_CASE(4, 4); VNNI_CASE(4, 3); VNNI_CASE(4, 2);
			VNNI_CASE(4, 1); VNNI_CASE(3, 4); VNNI_CASE(3, 3);
			VNNI_CASE(3, 2); VNNI_CASE(3, 1); VNNI_CASE(2, 4);
			VNNI_CASE(2, 3); VNNI_CASE(2, 2); VNNI_CASE(2, 1);
			VNNI_CASE(1, 4); VNNI_CASE(1, 3); VNNI_CASE(1, 2);
			VNNI_CASE(1, 1);
			default:
				QR_ASSERT(0);
			}
		}
	}
}
#endif

#ifdef QR_HAVE_VNNI_CODE
/* ci[j] += k0 - wz * colsum[j] (mod 2^32) on 16 lanes; returns the
 * columns done. */
static QR_VNNI size_t
zp_fix_avx512(uint32_t *ci, const int32_t *colsum, size_t nb, uint32_t k0,
	      uint32_t wz)
{
	const __m512i vk = _mm512_set1_epi32((int)k0);
	const __m512i vw = _mm512_set1_epi32((int)wz);
	size_t j;

	for (j = 0; j + 16 <= nb; j += 16) {
		__m512i c = _mm512_loadu_si512(ci + j);
		__m512i s = _mm512_loadu_si512(colsum + j);

		c = _mm512_add_epi32(c, _mm512_sub_epi32(
						vk, _mm512_mullo_epi32(vw, s)));
		_mm512_storeu_si512(ci + j, c);
	}
	return j;
}
#endif

#ifdef QR_HAVE_VNNI_CODE
/* zp_fix_avx512 on 8 lanes. */
static __attribute__((target("avx2"))) size_t
zp_fix_avx2(uint32_t *ci, const int32_t *colsum, size_t nb, uint32_t k0,
	    uint32_t wz)
{
	const __m256i vk = _mm256_set1_epi32((int)k0);
	const __m256i vw = _mm256_set1_epi32((int)wz);
	size_t j;

	for (j = 0; j + 8 <= nb; j += 8) {
		__m256i c = _mm256_loadu_si256((const __m256i *)(ci + j));
		__m256i s = _mm256_loadu_si256((const __m256i *)(colsum + j));

		c = _mm256_add_epi32(c, _mm256_sub_epi32(
						vk, _mm256_mullo_epi32(vw, s)));
		_mm256_storeu_si256((__m256i *)(ci + j), c);
	}
	return j;
}
#endif

void
qr_ig_gemm(const struct qr_ig_weights *iw, const uint8_t *xp,
	   const int32_t *colsum, size_t nb, int32_t x_zp, int u8s8,
	   int32_t *c, size_t ldc)
{
	size_t i, j;

	if (iw->m == 0 || nb == 0)
		return;
	if (iw->pairs16 && u8s8) {
#ifdef QR_HAVE_VNNI_CODE
		if (qr_kernels_cpu_features() & QR_CPU_AVX2)
			ig_raw_pairs16_avx2(iw, xp, nb, c, ldc);
		else
#endif
			ig_raw_portable(iw, xp, nb, c, ldc, 1);
	} else
#ifdef QR_HAVE_VNNI_CODE
	if (qr_ig_use_vnni())
		ig_raw_vnni(iw, xp, nb, c, ldc);
	else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
		ig_raw_exact_avx2(iw, xp, nb, c, ldc);
	else
#endif
		ig_raw_portable(iw, xp, nb, c, ldc, 0);

	for (i = 0; i < iw->m; i++) {
		uint32_t *ci = (uint32_t *)(c + i * ldc);
		uint32_t wz = (uint32_t)iw->zp[i];
		uint32_t k0 = (uint32_t)iw->k * (uint32_t)x_zp * wz -
			      (uint32_t)x_zp * (uint32_t)iw->rowsum[i];

		j = 0;
#ifdef QR_HAVE_VNNI_CODE
		if (qr_ig_use_vnni())
			j = zp_fix_avx512(ci, colsum, nb, k0, wz);
		else if (qr_kernels_cpu_features() & QR_CPU_AVX2)
			j = zp_fix_avx2(ci, colsum, nb, k0, wz);
#endif
		for (; j < nb; j++)
			ci[j] += k0 - wz * (uint32_t)colsum[j];
	}
}

void
qr_ig_weights_rows(const struct qr_ig_weights *iw, size_t r0, size_t r1,
		   struct qr_ig_weights *view)
{
	QR_ASSERT(r0 <= r1 && r1 <= iw->m);
	*view = *iw;
	view->m = r1 - r0;
	view->w = iw->w + r0 * iw->k4;
	view->rowsum = iw->rowsum + r0;
	view->zp = iw->zp + r0;
}
