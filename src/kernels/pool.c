/*
 * pool: MaxPool, AveragePool, the global pools and
 * QLinearGlobalAveragePool, NCHW. Window taps of output index o along an
 * axis sit at o * stride - pad_begin + i * dil, i < k.
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <float.h>
#include <math.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_POOL_AVX512 1
#endif

static size_t
pool_out(size_t in, size_t k, size_t s, size_t pb, size_t pe, size_t dil,
	 int ceil_mode)
{
	size_t span = dil * (k - 1) + 1, num, out;

	if (in + pb + pe < span)
		return 0;
	num = in + pb + pe - span;
	out = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
	/* the last window must start inside the image or the left padding */
	if (ceil_mode && out > 1 && (out - 1) * s >= in + pb)
		out--;
	return out;
}

size_t
qr_pool_out_h(const struct qr_pool_params *p)
{
	return pool_out(p->h, p->kh, p->stride_h, p->pad_t, p->pad_b, p->dil_h,
			p->ceil_mode);
}

size_t
qr_pool_out_w(const struct qr_pool_params *p)
{
	return pool_out(p->w, p->kw, p->stride_w, p->pad_l, p->pad_r, p->dil_w,
			p->ceil_mode);
}

size_t
qr_pool_out_d(const struct qr_pool_params *p)
{
	return pool_out(p->d, p->kd, p->stride_d, p->pad_f, p->pad_k, p->dil_d,
			p->ceil_mode);
}

/* Taps of window o along one axis: first tap index in the input (may be
 * negative), and how many taps fall in [0, in) and in [-pb, in + pe). */
struct taps {
	ptrdiff_t start; /* input index of tap 0 */
	size_t valid;    /* taps inside the image */
	size_t padded;   /* taps inside the padded image */
};

static struct taps
taps_of(size_t o, size_t in, size_t k, size_t s, size_t pb, size_t pe,
	size_t dil)
{
	struct taps t;
	size_t i;

	t.start = (ptrdiff_t)(o * s) - (ptrdiff_t)pb;
	t.valid = t.padded = 0;
	for (i = 0; i < k; i++) {
		ptrdiff_t at = t.start + (ptrdiff_t)(i * dil);

		if (at >= 0 && at < (ptrdiff_t)in)
			t.valid++;
		if (at >= -(ptrdiff_t)pb && at < (ptrdiff_t)(in + pe))
			t.padded++;
	}
	return t;
}

/* ---- 3-D windows ---- */

/* The taps of output (od, oh, ow) along each axis. */
struct taps3 {
	struct taps d, h, w;
};

static struct taps3
taps3_of(const struct qr_pool_params *p, size_t od, size_t oh, size_t ow)
{
	struct taps3 t;

	t.d = taps_of(od, p->d, p->kd, p->stride_d, p->pad_f, p->pad_k,
		      p->dil_d);
	t.h = taps_of(oh, p->h, p->kh, p->stride_h, p->pad_t, p->pad_b,
		      p->dil_h);
	t.w = taps_of(ow, p->w, p->kw, p->stride_w, p->pad_l, p->pad_r,
		      p->dil_w);
	return t;
}

/* Input index of tap i of t along an axis of length n, or -1 outside. */
static inline ptrdiff_t
tap_at(const struct taps *t, size_t i, size_t dil, size_t n)
{
	ptrdiff_t at = t->start + (ptrdiff_t)(i * dil);

	return at >= 0 && at < (ptrdiff_t)n ? at : -1;
}

/* Element (id, ih, iw) of a [d][h][w] volume. */
#define AT3(xp, p, id, ih, iw) \
	((xp)[((size_t)(id) * (p)->h + (size_t)(ih)) * (p)->w + (size_t)(iw)])

#define POOL_LOOP(T, INIT, STEP, FINISH)                                    \
	size_t oh_n = qr_pool_out_h(p), ow_n = qr_pool_out_w(p);            \
	size_t pl, oh, ow, i, j;                                            \
	for (pl = 0; pl < p->n * p->c; pl++) {                              \
		/* an empty image (all taps padding) has no data */         \
		const T *xp = x ? x + pl * p->h * p->w : x;                 \
		T *yp = y + pl * oh_n * ow_n;                               \
		for (oh = 0; oh < oh_n; oh++) {                             \
			struct taps th = taps_of(oh, p->h, p->kh,           \
			    p->stride_h, p->pad_t, p->pad_b, p->dil_h);     \
			for (ow = 0; ow < ow_n; ow++) {                     \
				struct taps tw = taps_of(ow, p->w, p->kw,   \
				    p->stride_w, p->pad_l, p->pad_r,        \
				    p->dil_w);                              \
				INIT;                                       \
				for (i = 0; i < p->kh; i++) {               \
					ptrdiff_t ih = th.start +           \
					    (ptrdiff_t)(i * p->dil_h);      \
					if (ih < 0 || ih >= (ptrdiff_t)p->h)\
						continue;                   \
					for (j = 0; j < p->kw; j++) {       \
						ptrdiff_t iw = tw.start +   \
						    (ptrdiff_t)(j * p->dil_w);\
						T v;                        \
						if (iw < 0 ||               \
						    iw >= (ptrdiff_t)p->w)  \
							continue;           \
						v = xp[ih * (ptrdiff_t)p->w + iw];\
						STEP;                       \
					}                                   \
				}                                           \
				FINISH;                                     \
			}                                                   \
		}                                                           \
	}

#ifdef QR_POOL_AVX512
#define POOL_ROWS_MAX 1024

/*
 * The outputs of one row whose taps across all lie inside the row:
 * [*lo, *hi). Those go 16 at a time, the few at the edges tap by tap.
 */
static void
inner_span(const struct qr_pool_params *p, size_t ow_n, size_t *lo,
	   size_t *hi)
{
	size_t s = p->stride_w, span = (p->kw - 1) * p->dil_w;

	*lo = (p->pad_l + s - 1) / s;
	*hi = p->w + p->pad_l > span ? (p->w + p->pad_l - span - 1) / s + 1 :
				       0;
	if (*hi > ow_n)
		*hi = ow_n;
	if (*lo > *hi)
		*lo = *hi;
}

/*
 * MaxPool with AVX-512 over [n][c][d][h][w] (2-D as d = 1), stride 1 or
 * 2 across, taps in the scalar order (planes, rows, columns) in every
 * lane. MAXPOOL_AVX512 makes one function per element type: VT is the
 * vector type, LOAD(q, mask) reads up to 16 consecutive elements into
 * lanes (zero elsewhere), EVEN(lo, hi) keeps lanes 0, 2, .. of the 32,
 * VMAX(v, m) is the scalar step m = v > m ? v : m (max_ps(v, m) keeps m
 * when v is NaN, as the scalar compare does), STORE writes the lanes.
 */
#define MAXPOOL_AVX512(NAME, T, ACC, INIT, VT, VINIT, LOAD, EVEN, VMAX,    \
		       STORE)                                               \
	static __attribute__((target("avx512f,avx512bw,avx512vl"))) void    \
	NAME(const struct qr_pool_params *p, const T *x, T *y)              \
	{                                                                   \
		size_t od_n = qr_pool_out_d(p), oh_n = qr_pool_out_h(p);    \
		size_t ow_n = qr_pool_out_w(p), vol = p->d * p->h * p->w;   \
		size_t s = p->stride_w, lo, hi, pl, od, oh, ow, a, b, k, r; \
		inner_span(p, ow_n, &lo, &hi);                              \
		for (pl = 0; pl < p->n * p->c; pl++) {                      \
		/* an empty image has no data (NULL) */                     \
		const T *xp = x ? x + pl * vol : x;                         \
		for (od = 0; od < od_n; od++)                               \
		for (oh = 0; oh < oh_n; oh++, y += ow_n) {                  \
			struct taps3 t = taps3_of(p, od, oh, 0);            \
			const T *row[POOL_ROWS_MAX];                        \
			size_t n_row = 0;                                   \
			ptrdiff_t id, ih, iw;                               \
			/* the rows the window covers, planes then rows */  \
			for (a = 0; a < p->kd; a++) {                       \
				if ((id = tap_at(&t.d, a, p->dil_d, p->d)) < 0)\
					continue;                           \
				for (b = 0; b < p->kh; b++)                 \
					if ((ih = tap_at(&t.h, b, p->dil_h, \
							 p->h)) >= 0)       \
						row[n_row++] =              \
						    &AT3(xp, p, id, ih, 0); \
			}                                                   \
			for (ow = 0; ow < ow_n; ow++) {                     \
				ACC m = INIT;                               \
				if (ow == lo && lo < hi) {                  \
					ow = hi - 1;                        \
					continue;                           \
				}                                           \
				t.w = taps_of(ow, p->w, p->kw, p->stride_w, \
					      p->pad_l, p->pad_r, p->dil_w);\
				for (r = 0; r < n_row; r++)                 \
				for (k = 0; k < p->kw; k++) {               \
					T v;                                \
					iw = tap_at(&t.w, k, p->dil_w, p->w);\
					if (iw < 0)                         \
						continue;                   \
					v = row[r][iw];                     \
					m = v > m ? v : m;                  \
				}                                           \
				y[ow] = (T)m;                               \
			}                                                   \
			for (ow = lo; ow < hi; ow += 16) {                  \
				size_t left = hi - ow < 16 ? hi - ow : 16;  \
				size_t nl = 2 * left - 1;                   \
				size_t at = ow * s - p->pad_l;              \
				__mmask16 mk = (__mmask16)((1u << left) - 1);\
				__mmask16 m0 = nl >= 16 ? 0xffff :          \
					(__mmask16)((1u << nl) - 1);        \
				__mmask16 m1 = nl > 16 ?                    \
					(__mmask16)((1u << (nl - 16)) - 1) : 0;\
				VT acc = VINIT;                             \
				for (r = 0; r < n_row; r++)                 \
				for (k = 0; k < p->kw; k++) {               \
					const T *q = row[r] + at +          \
						     k * p->dil_w;          \
					VT v = s == 1 ? LOAD(q, mk) :       \
					    EVEN(LOAD(q, m0),               \
						 LOAD(q + 16, m1));         \
					acc = VMAX(v, acc);                 \
				}                                           \
				STORE(y + ow, mk, acc);                     \
			}                                                   \
		}                                                           \
		}                                                           \
	}

static inline __attribute__((always_inline, target("avx512f"))) __m512i
even32(__m512i lo, __m512i hi)
{
	return _mm512_permutex2var_epi32(lo, _mm512_set_epi32(
		30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0), hi);
}

#define F_LOAD(q, mk) _mm512_maskz_loadu_ps(mk, q)
#define F_EVEN(lo, hi) _mm512_castsi512_ps(even32(_mm512_castps_si512(lo), \
						  _mm512_castps_si512(hi)))
#define F_MAX(v, m) _mm512_max_ps(v, m)
#define F_STORE(d, mk, v) _mm512_mask_storeu_ps(d, mk, v)
#define U8_LOAD(q, mk) _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mk, q))
#define S8_LOAD(q, mk) _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(mk, q))
#define I_MAX(v, m) _mm512_max_epi32(v, m)
#define I8_STORE(d, mk, v) _mm512_mask_cvtepi32_storeu_epi8(d, mk, v)

MAXPOOL_AVX512(maxpool_f32_avx512, float, float, -INFINITY, __m512,
	       _mm512_set1_ps(-INFINITY), F_LOAD, F_EVEN, F_MAX, F_STORE)
MAXPOOL_AVX512(maxpool_u8_avx512, uint8_t, int, 0, __m512i,
	       _mm512_setzero_si512(), U8_LOAD, even32, I_MAX, I8_STORE)
MAXPOOL_AVX512(maxpool_s8_avx512, int8_t, int, -128, __m512i,
	       _mm512_set1_epi32(-128), S8_LOAD, even32, I_MAX, I8_STORE)

/* Float MaxPool on 8 lanes for CPUs without AVX-512: the same rows and
 * taps as MAXPOOL_AVX512; 8 outputs at a time inside the row, the rest
 * tap by tap. Stride 2 reads 15 values and keeps the even ones (the
 * 16th is masked off: it may lie past the tensor). */
static __attribute__((target("avx2"))) void
maxpool_f32_avx2(const struct qr_pool_params *p, const float *x, float *y)
{
	size_t od_n = qr_pool_out_d(p), oh_n = qr_pool_out_h(p);
	size_t ow_n = qr_pool_out_w(p), vol = p->d * p->h * p->w;
	size_t s = p->stride_w, lo, hi, pl, od, oh, ow, a, b, k, r;
	const __m256i first7 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, -1, 0);

	inner_span(p, ow_n, &lo, &hi);
	for (pl = 0; pl < p->n * p->c; pl++) {
		const float *xp = x ? x + pl * vol : x;

		for (od = 0; od < od_n; od++)
			for (oh = 0; oh < oh_n; oh++, y += ow_n) {
				struct taps3 t = taps3_of(p, od, oh, 0);
				const float *row[POOL_ROWS_MAX];
				size_t n_row = 0;
				ptrdiff_t id, ih, iw;

				for (a = 0; a < p->kd; a++) {
					if ((id = tap_at(&t.d, a, p->dil_d,
							 p->d)) < 0)
						continue;
					for (b = 0; b < p->kh; b++)
						if ((ih = tap_at(&t.h, b, p->dil_h,
								 p->h)) >= 0)
							row[n_row++] = &AT3(
								xp, p, id, ih, 0);
				}
				for (ow = 0; ow < ow_n; ow++) {
					float m = -INFINITY;

					if (ow >= lo && ow + 8 <= hi) {
						size_t at = ow * s - p->pad_l;
						__m256 acc = _mm256_set1_ps(
							-INFINITY);

						for (r = 0; r < n_row; r++)
							for (k = 0; k < p->kw; k++) {
								const float *q = row[r] + at + k * p->dil_w;
								__m256 v;

								if (s == 1) {
									v = _mm256_loadu_ps(q);
								} else {
									v = _mm256_shuffle_ps(
										_mm256_loadu_ps(q),
										_mm256_maskload_ps(q + 8, first7),
										_MM_SHUFFLE(2, 0, 2, 0));
									v = _mm256_castpd_ps(_mm256_permute4x64_pd(
										_mm256_castps_pd(v),
										_MM_SHUFFLE(3, 1, 2, 0)));
								}
								acc = _mm256_max_ps(v, acc);
							}
						_mm256_storeu_ps(y + ow, acc);
						ow += 7;
						continue;
					}
					t.w = taps_of(ow, p->w, p->kw, p->stride_w,
						      p->pad_l, p->pad_r, p->dil_w);
					for (r = 0; r < n_row; r++)
						for (k = 0; k < p->kw; k++) {
							float v;

							iw = tap_at(&t.w, k, p->dil_w,
								    p->w);
							if (iw < 0)
								continue;
							v = row[r][iw];
							m = v > m ? v : m;
						}
					y[ow] = m;
				}
			}
	}
}

/* The AVX-512 pools take strides 1 and 2 across, and windows of at most
 * POOL_ROWS_MAX rows (planes times rows). */
static int
pool_simd(const struct qr_pool_params *p)
{
	return (qr_kernels_cpu_features() & QR_CPU_AVX512BW) &&
	       (p->stride_w == 1 || p->stride_w == 2) &&
	       p->kd * p->kh <= POOL_ROWS_MAX;
}
#endif

/* A 2-D window as a 3-D one over a single plane. */
static struct qr_pool_params
one_plane(const struct qr_pool_params *p)
{
	struct qr_pool_params q = *p;

	q.d = q.kd = q.stride_d = q.dil_d = 1;
	q.pad_f = q.pad_k = 0;
	return q;
}

void
qr_maxpool_f32(const struct qr_pool_params *p, const float *x, float *y)
{
	float m;

#ifdef QR_POOL_AVX512
	if (pool_simd(p)) {
		struct qr_pool_params q = one_plane(p);

		maxpool_f32_avx512(&q, x, y);
		return;
	}
	if ((qr_kernels_cpu_features() & QR_CPU_AVX2) &&
	    (p->stride_w == 1 || p->stride_w == 2) &&
	    p->kh <= POOL_ROWS_MAX) {
		struct qr_pool_params q = one_plane(p);

		maxpool_f32_avx2(&q, x, y);
		return;
	}
#endif
	POOL_LOOP(float, m = -INFINITY, m = v > m ? v : m,
		  yp[oh * ow_n + ow] = m)
}

static void
maxpool_u8(const struct qr_pool_params *p, const uint8_t *x, uint8_t *y)
{
	int m;

	POOL_LOOP(uint8_t, m = 0, m = v > m ? v : m,
		  yp[oh * ow_n + ow] = (uint8_t)m)
}

static void
maxpool_s8(const struct qr_pool_params *p, const int8_t *x, int8_t *y)
{
	int m;

	POOL_LOOP(int8_t, m = -128, m = v > m ? v : m,
		  yp[oh * ow_n + ow] = (int8_t)m)
}

void
qr_maxpool_q8(const struct qr_pool_params *p, const void *x, int is_signed,
	      void *y)
{
#ifdef QR_POOL_AVX512
	if (pool_simd(p)) {
		struct qr_pool_params q = one_plane(p);

		qr_maxpool3d_q8(&q, x, is_signed, y);
		return;
	}
#endif
	if (is_signed)
		maxpool_s8(p, x, y);
	else
		maxpool_u8(p, x, y);
}

/* MaxPool over every volume: m starts at INIT, keeps the largest tap. */
#define MAXPOOL3_LOOP(T, INIT)                                              \
	size_t od_n = qr_pool_out_d(p), oh_n = qr_pool_out_h(p);            \
	size_t ow_n = qr_pool_out_w(p), vol = p->d * p->h * p->w;           \
	size_t pl, od, oh, ow, a, b, k;                                     \
	for (pl = 0; pl < p->n * p->c; pl++) {                              \
		const T *xp = x ? x + pl * vol : x;                         \
		for (od = 0; od < od_n; od++)                               \
		for (oh = 0; oh < oh_n; oh++)                               \
		for (ow = 0; ow < ow_n; ow++, y++) {                        \
			struct taps3 t = taps3_of(p, od, oh, ow);           \
			ptrdiff_t id, ih, iw;                               \
			m = INIT;                                           \
			for (a = 0; a < p->kd; a++) {                       \
				id = tap_at(&t.d, a, p->dil_d, p->d);       \
				for (b = 0; id >= 0 && b < p->kh; b++) {    \
					ih = tap_at(&t.h, b, p->dil_h, p->h);\
					for (k = 0; ih >= 0 && k < p->kw;   \
					     k++) {                         \
						iw = tap_at(&t.w, k,        \
							    p->dil_w, p->w);\
						if (iw >= 0 &&              \
						    AT3(xp, p, id, ih, iw) > m)\
							m = AT3(xp, p, id,  \
								ih, iw);    \
					}                                   \
				}                                           \
			}                                                   \
			*y = m;                                             \
		}                                                           \
	}

void
qr_maxpool3d_f32(const struct qr_pool_params *p, const float *x, float *y)
{
	float m;

#ifdef QR_POOL_AVX512
	if (pool_simd(p)) {
		maxpool_f32_avx512(p, x, y);
		return;
	}
#endif
	MAXPOOL3_LOOP(float, -INFINITY)
}

void
qr_maxpool3d_q8(const struct qr_pool_params *p, const void *xv, int is_signed,
		void *yv)
{
#ifdef QR_POOL_AVX512
	if (pool_simd(p)) {
		if (is_signed)
			maxpool_s8_avx512(p, xv, yv);
		else
			maxpool_u8_avx512(p, xv, yv);
		return;
	}
#endif
	if (is_signed) {
		const int8_t *x = xv;
		int8_t *y = yv;
		int8_t m;

		MAXPOOL3_LOOP(int8_t, -128)
	} else {
		const uint8_t *x = xv;
		uint8_t *y = yv;
		uint8_t m;

		MAXPOOL3_LOOP(uint8_t, 0)
	}
}

/* Whether MLAS pools these windows with its vector kernel (see
 * kernels.h); the reduction buffer holds 2048 floats, 4 of them spare. */
static int
mlas_vector_order(const struct qr_pool_params *p)
{
	return !(p->count_include_pad && p->ceil_mode) && p->stride_w <= 2 && p->kd <= 32 && p->kh <= 32 &&
	       p->kw <= 32 && p->w + p->pad_l + p->pad_r <= 2044;
}

/* MLAS's vector order: each kernel column down its planes and rows, then
 * the column sums left to right. */
static float
sum_columns(const struct qr_pool_params *p, const float *xp,
	    const struct taps3 *t)
{
	ptrdiff_t id, ih, iw;
	float s = 0.0f;
	size_t a, b, k;

	for (k = 0; k < p->kw; k++) {
		float col = 0.0f;

		if ((iw = tap_at(&t->w, k, p->dil_w, p->w)) < 0)
			continue;
		for (a = 0; a < p->kd; a++) {
			if ((id = tap_at(&t->d, a, p->dil_d, p->d)) < 0)
				continue;
			for (b = 0; b < p->kh; b++)
				if ((ih = tap_at(&t->h, b, p->dil_h, p->h)) >= 0)
					col += AT3(xp, p, id, ih, iw);
		}
		s += col;
	}
	return s;
}

/* MLAS's generic order: plane by plane, row by row, in order. */
static float
sum_in_order(const struct qr_pool_params *p, const float *xp,
	     const struct taps3 *t)
{
	ptrdiff_t id, ih, iw;
	float s = 0.0f;
	size_t a, b, k;

	for (a = 0; a < p->kd; a++) {
		if ((id = tap_at(&t->d, a, p->dil_d, p->d)) < 0)
			continue;
		for (b = 0; b < p->kh; b++) {
			if ((ih = tap_at(&t->h, b, p->dil_h, p->h)) < 0)
				continue;
			for (k = 0; k < p->kw; k++)
				if ((iw = tap_at(&t->w, k, p->dil_w, p->w)) >= 0)
					s += AT3(xp, p, id, ih, iw);
		}
	}
	return s;
}

/* Whether the window is the whole unpadded volume at stride 1, which
 * MLAS pools with its global kernel. */
static int
global_window(const struct qr_pool_params *p)
{
	return p->kd == p->d && p->kh == p->h && p->kw == p->w &&
	       p->stride_d == 1 && p->stride_h == 1 && p->stride_w == 1 &&
	       !p->pad_f && !p->pad_k && !p->pad_t && !p->pad_b &&
	       !p->pad_l && !p->pad_r;
}

#ifdef QR_POOL_AVX512
/* Up to 16 values a stride s (1 or 2) apart from q, lanes past left
 * zero. */
static inline __attribute__((always_inline, target("avx512f"))) __m512
load_across(const float *q, size_t s, size_t left)
{
	size_t nl = 2 * left - 1;

	if (s == 1)
		return _mm512_maskz_loadu_ps((__mmask16)((1u << left) - 1), q);
	return F_EVEN(_mm512_maskz_loadu_ps(nl >= 16 ? 0xffff : (__mmask16)(
				(1u << nl) - 1), q),
		      _mm512_maskz_loadu_ps(nl > 16 ? (__mmask16)(
				(1u << (nl - 16)) - 1) : 0, q + 16));
}

/*
 * qr_avgpool3d_f32 with AVX-512, stride 1 or 2 across: the outputs of a
 * row whose taps across all lie inside it go 16 at a time, each lane
 * summing its taps in the order the scalar sum_columns or sum_in_order
 * does, and dividing by the same count; the edges go through those.
 */
static __attribute__((target("avx512f,avx512bw,avx512vl"))) void
avgpool_avx512(const struct qr_pool_params *p, const float *x, float *y,
	       int columns)
{
	size_t od_n = qr_pool_out_d(p), oh_n = qr_pool_out_h(p);
	size_t ow_n = qr_pool_out_w(p), vol = p->d * p->h * p->w;
	size_t s = p->stride_w, lo, hi, pl, od, oh, ow, a, b, k;

	inner_span(p, ow_n, &lo, &hi);
	for (pl = 0; pl < p->n * p->c; pl++) {
	/* an empty image has no data (NULL) */
	const float *xp = x ? x + pl * vol : x;

	for (od = 0; od < od_n; od++)
	for (oh = 0; oh < oh_n; oh++, y += ow_n) {
		struct taps3 t = taps3_of(p, od, oh, 0);
		size_t cnt = p->count_include_pad ?
			     t.d.padded * t.h.padded * p->kw :
			     t.d.valid * t.h.valid * p->kw;
		const float *row[POOL_ROWS_MAX];
		size_t n_row = 0, r;
		ptrdiff_t id, ih;

		for (ow = 0; ow < ow_n; ow++) {
			struct taps3 u;
			size_t c;
			float v;

			if (ow == lo && lo < hi) {
				ow = hi - 1;
				continue;
			}
			u = taps3_of(p, od, oh, ow);
			c = p->count_include_pad ?
			    u.d.padded * u.h.padded * u.w.padded :
			    u.d.valid * u.h.valid * u.w.valid;
			v = columns ? sum_columns(p, xp, &u) :
				      sum_in_order(p, xp, &u);
			y[ow] = c ? v / (float)c : 0.0f;
		}
		if (lo == hi)
			continue;
		/* the rows the window covers, planes then rows */
		for (a = 0; a < p->kd; a++) {
			if ((id = tap_at(&t.d, a, p->dil_d, p->d)) < 0)
				continue;
			for (b = 0; b < p->kh; b++)
				if ((ih = tap_at(&t.h, b, p->dil_h, p->h)) >= 0)
					row[n_row++] = &AT3(xp, p, id, ih, 0);
		}
		for (ow = lo; ow < hi; ow += 16) {
			size_t left = hi - ow < 16 ? hi - ow : 16;
			size_t at = ow * s - p->pad_l; /* lo * s >= pad_l */
			__m512 sum = _mm512_setzero_ps();

			for (k = 0; columns && k < p->kw; k++) {
				__m512 col = _mm512_setzero_ps();

				for (r = 0; r < n_row; r++)
					col = _mm512_add_ps(col, load_across(
						row[r] + at + k * p->dil_w, s,
						left));
				sum = _mm512_add_ps(sum, col);
			}
			for (r = 0; !columns && r < n_row; r++)
				for (k = 0; k < p->kw; k++)
					sum = _mm512_add_ps(sum, load_across(
						row[r] + at + k * p->dil_w, s,
						left));
			sum = cnt ? _mm512_div_ps(sum, _mm512_set1_ps(
					(float)cnt)) : _mm512_setzero_ps();
			_mm512_mask_storeu_ps(y + ow, (__mmask16)((1u << left) -
								  1), sum);
		}
	}
	}
}
#endif

void
qr_avgpool3d_f32(const struct qr_pool_params *p, const float *x, float *y)
{
	size_t od_n = qr_pool_out_d(p), oh_n = qr_pool_out_h(p);
	size_t ow_n = qr_pool_out_w(p), vol = p->d * p->h * p->w;
	size_t pl, od, oh, ow;
	int columns = mlas_vector_order(p);

	if (global_window(p) && x != NULL) {
		qr_global_avgpool_f32(x, p->n * p->c, vol, y);
		return;
	}
#ifdef QR_POOL_AVX512
	if (pool_simd(p)) {
		avgpool_avx512(p, x, y, columns);
		return;
	}
#endif
	for (pl = 0; pl < p->n * p->c; pl++) {
		/* an empty image (all taps padding) has no data */
		const float *xp = x ? x + pl * vol : x;

		for (od = 0; od < od_n; od++)
		for (oh = 0; oh < oh_n; oh++)
		for (ow = 0; ow < ow_n; ow++, y++) {
			struct taps3 t = taps3_of(p, od, oh, ow);
			size_t cnt = p->count_include_pad ?
				t.d.padded * t.h.padded * t.w.padded :
				t.d.valid * t.h.valid * t.w.valid;
			float s = columns ? sum_columns(p, xp, &t) :
					    sum_in_order(p, xp, &t);

			*y = cnt ? s / (float)cnt : 0.0f;
		}
	}
}

void
qr_avgpool_f32(const struct qr_pool_params *p, const float *x, float *y)
{
	struct qr_pool_params q = one_plane(p);

	qr_avgpool3d_f32(&q, x, y);
}

/* Summed as ONNX Runtime's MLAS does (so a QDQ model's pooled value near
 * a quantization tie rounds as in ORT): 4 lanes over the plane, the lanes
 * reduced as (l0 + l2) + (l1 + l3), then the leftover elements one by
 * one, then divided by the plane size. */
void
qr_global_avgpool_f32(const float *x, size_t nc, size_t hw, float *y)
{
	size_t c, i, j;

	for (c = 0; c < nc; c++) {
		const float *xp = hw ? x + c * hw : x; /* NULL if empty */
		float l[4] = { 0.0f, 0.0f, 0.0f, 0.0f }, s;

		for (i = 0; i + 4 <= hw; i += 4)
			for (j = 0; j < 4; j++)
				l[j] = l[j] + xp[i + j];
		s = (l[0] + l[2]) + (l[1] + l[3]);
		for (; i < hw; i++)
			s = s + xp[i];
		y[c] = hw ? s / (float)hw : 0.0f;
	}
}

void
qr_global_maxpool_f32(const float *x, size_t nc, size_t hw, float *y)
{
	size_t c, i;

	for (c = 0; c < nc; c++) {
		const float *xp = hw ? x + c * hw : x; /* NULL if empty */
		float m = -INFINITY;

		for (i = 0; i < hw; i++)
			m = xp[i] > m ? xp[i] : m;
		y[c] = m;
	}
}

void
qr_qlinear_global_avgpool(const void *x, int is_signed, size_t nc, size_t hw,
			  float x_scale, int32_t x_zp, float y_scale,
			  int32_t y_zp, void *y)
{
	float scale = x_scale / (y_scale * (float)hw);
	size_t c, i;

	for (c = 0; c < nc; c++) {
		int32_t acc = qr_wrap_mul(-x_zp, (int32_t)hw);

		if (is_signed) {
			const int8_t *xp = hw ? (const int8_t *)x + c * hw :
						 (const int8_t *)x;

			for (i = 0; i < hw; i++)
				acc = qr_wrap_add(acc, xp[i]);
			qr_requantize_row(&acc, 1, 0, scale, y_zp, 1,
					  (int8_t *)y + c);
		} else {
			const uint8_t *xp = hw ? (const uint8_t *)x + c * hw :
						  (const uint8_t *)x;

			for (i = 0; i < hw; i++)
				acc = qr_wrap_add(acc, xp[i]);
			qr_requantize_row(&acc, 1, 0, scale, y_zp, 0,
					  (uint8_t *)y + c);
		}
	}
}
