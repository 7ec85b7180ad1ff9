/*
 * winograd: 3x3, stride-1 float convs by Winograd's minimal filtering
 * F(4x4, 3x3) (Lavin & Gray 2015, "Fast Algorithms for Convolutional
 * Neural Networks"), with the interpolation points 0, 1, -1, 2, -2, inf:
 *
 *   Y = A^T [ (G g G^T) .* (B^T d B) ] A
 *
 * for every 6x6 input tile d (stride 4) and 3x3 filter g. A 4x4 output
 * tile then costs 36 multiplies per (c_in, c_out) pair instead of 144,
 * and the 36 element-wise products summed over c_in are 36 GEMMs:
 *
 *   M[xi][tile][c_out] = V[xi][tile][c_in] * U[xi][c_in][c_out]
 *
 * Tiles are the GEMM rows, so even a 7x7 image (4 tiles) gives whole
 * 32-column blocks of c_out to qr_sgemm, which reads U in place. Tiles
 * (over the whole batch) are taken in blocks small enough that V and M
 * of one block stay in L2; each block goes transform -> 36 GEMMs ->
 * output transform before the next, and blocks are the tasks the pool's
 * threads share. Every output is computed the same way whatever the
 * block size or thread count: the GEMM's fma chains run over c_in in
 * order, and the transforms do the same operations in the same order in
 * the AVX-512 and portable paths (the transforms are written once, as
 * macros over the element type), so both paths and all thread counts
 * give the same bits.
 *
 * This is not ONNX Runtime's summation order, so it must never replace
 * the direct conv where ORT's bits matter; it differs from the direct
 * result by rounding only. The weights are transformed once in double
 * (G holds 1/6, 1/12 and 1/24) and rounded to float.
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_WINO_AVX512 1
#define WINO_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
#endif

#define WT 6                /* input tile side */
#define WO 4                /* output tile side */
#define WXI (WT * WT)       /* Winograd positions (GEMMs) per tile */
#define WL 16               /* channels per vector; V rows pad to it */
#define WP 32               /* columns of a U panel (qr_sgemm's register
			     * block); M rows pad to it */
#define WBUDGET (640u << 10) /* bytes of V + M per block, about (L2) */
/* K slice of the GEMMs: a 128 x WP panel of U (16 KiB) stays in L1
 * while the block's rows stream past it; 256 was slower at c_in 512. */
#define WSTRIDE_K 128
#define WBIG_U (2u << 20)  /* U bytes past which threads split c_out */

struct qr_wino_f32 {
	size_t c_out, c_in; /* channels */
	size_t ldo;         /* c_out rounded up to WP: row stride of M */
	float *u;           /* [WXI][ldo / WP][c_in][WP], G g G^T: panels of
			     * WP output channels, each read front to back
			     * by one GEMM; padding columns 0 */
};

/*
 * The 1-D transforms, written once over an element type through the
 * operations ADD, SUB and MULK (times a small exact constant), so the
 * scalar and vector paths round identically. B^T and A^T are Lavin's:
 *
 *   B^T = [ 4  0 -5  0  1  0 ]     A^T = [ 1  1  1  1  1  0 ]
 *         [ 0 -4 -4  1  1  0 ]           [ 0  1 -1  2 -2  0 ]
 *         [ 0  4 -4 -1  1  0 ]           [ 0  1  1  4  4  0 ]
 *         [ 0 -2 -1  2  1  0 ]           [ 0  1 -1  8 -8  1 ]
 *         [ 0  2 -1 -2  1  0 ]
 *         [ 0  4  0 -5  0  1 ]
 *
 * grouped to share the common sums (d1 + d2, d3 - d1, m3 + m4, ...).
 */
#define WINO_IN1(ADD, SUB, MULK, d0, d1, d2, d3, d4, d5, r0, r1, r2, r3, r4, \
		 r5)                                                         \
	do {                                                                 \
		r0 = ADD(SUB(MULK(d0, 4.0f), MULK(d2, 5.0f)), d4);           \
		r1 = SUB(ADD(d3, d4), MULK(ADD(d1, d2), 4.0f));              \
		r2 = ADD(SUB(d4, d3), MULK(SUB(d1, d2), 4.0f));              \
		r3 = ADD(SUB(d4, d2), MULK(SUB(d3, d1), 2.0f));              \
		r4 = SUB(SUB(d4, d2), MULK(SUB(d3, d1), 2.0f));              \
		r5 = ADD(SUB(MULK(d1, 4.0f), MULK(d3, 5.0f)), d5);           \
	} while (0)

#define WINO_OUT1(ADD, SUB, MULK, m0, m1, m2, m3, m4, m5, o0, o1, o2, o3)    \
	do {                                                                 \
		o0 = ADD(ADD(m0, ADD(m1, m2)), ADD(m3, m4));                 \
		o1 = ADD(SUB(m1, m2), MULK(SUB(m3, m4), 2.0f));              \
		o2 = ADD(ADD(m1, m2), MULK(ADD(m3, m4), 4.0f));              \
		o3 = ADD(ADD(SUB(m1, m2), MULK(SUB(m3, m4), 8.0f)), m5);     \
	} while (0)

#define S_ADD(a, b) ((a) + (b))
#define S_SUB(a, b) ((a) - (b))
#define S_MULK(a, k) ((a) * (k))

/* ---- weights ---- */

int
qr_wino_f32_ok(const struct qr_conv_params *p)
{
	return p->kh == 3 && p->kw == 3 && p->stride_h == 1 &&
	       p->stride_w == 1 && p->dil_h == 1 && p->dil_w == 1 &&
	       p->group == 1 && p->out_pad_h == 0 && p->out_pad_w == 0;
}

/* Bytes of wk->u (xpages; at least 1). */
static size_t
u_bytes(const struct qr_wino_f32 *wk)
{
	size_t n = WXI * wk->c_in * wk->ldo;

	return (n ? n : 1) * sizeof *wk->u;
}

struct qr_wino_f32 *
qr_wino_f32_new(size_t c_out, size_t c_in, const float *w)
{
	/* Lavin's G for the points 0, 1, -1, 2, -2, inf */
	static const double g[WT][3] = {
		{1.0 / 4, 0, 0},
		{-1.0 / 6, -1.0 / 6, -1.0 / 6},
		{-1.0 / 6, 1.0 / 6, -1.0 / 6},
		{1.0 / 24, 1.0 / 12, 1.0 / 6},
		{1.0 / 24, -1.0 / 12, 1.0 / 6},
		{0, 0, 1},
	};
	struct qr_wino_f32 *wk = xmalloc(sizeof *wk);
	size_t co, ci, i, j, a, b;

	wk->c_out = c_out;
	wk->c_in = c_in;
	wk->ldo = (c_out + WP - 1) / WP * WP;
	wk->u = xpages(u_bytes(wk));
	for (co = 0; co < c_out; co++)
		for (ci = 0; ci < c_in; ci++) {
			const float *f = w + (co * c_in + ci) * 9;
			double t[WT][3]; /* G g */

			for (i = 0; i < WT; i++)
				for (b = 0; b < 3; b++) {
					t[i][b] = 0;
					for (a = 0; a < 3; a++)
						t[i][b] += g[i][a] * f[a * 3 + b];
				}
			for (i = 0; i < WT; i++)
				for (j = 0; j < WT; j++) {
					double s = 0;

					for (b = 0; b < 3; b++)
						s += t[i][b] * g[j][b];
					wk->u[((i * WT + j) * wk->ldo +
					       co / WP * WP) * c_in +
					      ci * WP + co % WP] = (float)s;
				}
		}
	return wk;
}

size_t
qr_wino_f32_bytes(const struct qr_wino_f32 *wk)
{
	return sizeof *wk + WXI * wk->c_in * wk->ldo * sizeof *wk->u;
}

void
qr_wino_f32_free(struct qr_wino_f32 *wk)
{
	if (!wk)
		return;
	xpages_free(wk->u, u_bytes(wk));
	free(wk);
}

/* ---- geometry ---- */

struct wino_job {
	const struct qr_wino_f32 *wk;
	const struct qr_conv_params *p;
	const float *x, *bias;
	float *y;
	char *ws;          /* per-slot blocks */
	size_t slot;       /* bytes per slot */
	size_t oh, ow;     /* output size */
	size_t th, tw;     /* tiles down and across one image */
	size_t n_tiles;    /* tiles over the batch */
	size_t bt;         /* tiles per block */
	size_t n_blocks;   /* blocks over the batch's tiles */
	size_t n_cs;       /* splits of c_out (in panels): tasks per block */
	size_t ldi;        /* c_in rounded up to WL: row stride of V */
	struct qr_sgemm_plan plan;
};

static void
plan_job(const struct qr_wino_f32 *wk, const struct qr_conv_params *p,
	 int n_threads, struct wino_job *j)
{
	size_t nt = n_threads > 1 ? (size_t)n_threads : 1, per, nb;

	QR_ASSERT(qr_wino_f32_ok(p) && p->c_in == wk->c_in &&
		  p->c_out == wk->c_out);
	j->wk = wk;
	j->p = p;
	j->oh = qr_conv_out_h(p);
	j->ow = qr_conv_out_w(p);
	j->th = (j->oh + WO - 1) / WO;
	j->tw = (j->ow + WO - 1) / WO;
	j->n_tiles = p->n * j->th * j->tw;
	j->ldi = (wk->c_in + WL - 1) / WL * WL;
	/* V and M of a block in L2, in whole 8-row blocks of the GEMM */
	per = WXI * (j->ldi + wk->ldo) * sizeof(float);
	j->bt = WBUDGET / per / 8 * 8;
	if (j->bt < 8)
		j->bt = 8;
	if (j->bt > j->n_tiles)
		j->bt = j->n_tiles ? j->n_tiles : 1;
	nb = (j->n_tiles + j->bt - 1) / j->bt;
	/*
	 * Threads share blocks, and split c_out too when blocks are few or U
	 * is beyond L2: then each thread streams only its panels of U
	 * instead of all of it (with a whole U each, two threads on a
	 * 512-channel 7x7 conv were slower than one). Each split redoes
	 * its block's input transform, which is cheap next to the GEMMs.
	 * None of this changes a result.
	 */
	j->n_cs = 1;
	if (nt > 1 && (nb < nt || qr_wino_f32_bytes(wk) > WBIG_U)) {
		j->n_cs = wk->ldo / WP < nt ? wk->ldo / WP : nt;
		if (j->n_cs < 1)
			j->n_cs = 1;
	}
	if (nt > 1 && nb * j->n_cs < nt && j->n_tiles > 1) {
		j->bt = (j->n_tiles + nt - 1) / nt;
		nb = (j->n_tiles + j->bt - 1) / j->bt;
	}
	j->n_blocks = nb;
	j->plan.order = QR_SGEMM_FMA;
	j->plan.stride_k = WSTRIDE_K;
	j->slot = WXI * j->bt * (j->ldi + wk->ldo) * sizeof(float) + 128 +
		  qr_sgemm_workspace();
}

size_t
qr_wino_f32_workspace(const struct qr_wino_f32 *wk,
		      const struct qr_conv_params *p, int n_threads)
{
	struct wino_job j;

	plan_job(wk, p, n_threads, &j);
	return (n_threads > 1 ? (size_t)n_threads : 1) * j.slot;
}

/* Where tile t (over the batch) sits: image, top-left output pixel. */
static void
tile_at(const struct wino_job *j, size_t t, size_t *img, size_t *oy,
	size_t *ox)
{
	size_t per = j->th * j->tw, r = t % per;

	*img = t / per;
	*oy = r / j->tw * WO;
	*ox = r % j->tw * WO;
}

/* ---- portable transforms ---- */

/* V[xi][t][c] for tiles [t0, t0 + nt), every channel. */
static void
in_portable(const struct wino_job *j, size_t t0, size_t nt, float *v)
{
	const struct qr_conv_params *p = j->p;
	size_t hw = p->h * p->w, t, c, a, b, img, oy, ox;

	for (t = 0; t < nt; t++) {
		tile_at(j, t0 + t, &img, &oy, &ox);
		for (c = 0; c < p->c_in; c++) {
			size_t base = (img * p->c_in + c) * hw;
			float d[WT][WT], r[WT][WT];

			for (a = 0; a < WT; a++)
				for (b = 0; b < WT; b++) {
					/* input row oy + a - pad_t, unsigned */
					size_t yy = oy + a, xx = ox + b;

					d[a][b] = yy >= p->pad_t &&
							  yy - p->pad_t < p->h &&
							  xx >= p->pad_l &&
							  xx - p->pad_l < p->w ?
						  j->x[base + (yy - p->pad_t) *
							       p->w +
						       xx - p->pad_l] :
						  0.0f;
				}
			for (b = 0; b < WT; b++) /* B^T d, column by column */
				WINO_IN1(S_ADD, S_SUB, S_MULK, d[0][b], d[1][b],
					 d[2][b], d[3][b], d[4][b], d[5][b],
					 r[0][b], r[1][b], r[2][b], r[3][b],
					 r[4][b], r[5][b]);
			for (a = 0; a < WT; a++) { /* (B^T d) B, row by row */
				float *o = v + (a * WT * j->bt + t) * j->ldi + c;
				size_t s = j->bt * j->ldi; /* next xi */

				WINO_IN1(S_ADD, S_SUB, S_MULK, r[a][0], r[a][1],
					 r[a][2], r[a][3], r[a][4], r[a][5],
					 o[0], o[s], o[2 * s], o[3 * s],
					 o[4 * s], o[5 * s]);
			}
		}
	}
}

/* y of tiles [t0, t0 + nt) from M[xi][t][c_out], + bias. */
static void
out_portable(const struct wino_job *j, size_t t0, size_t nt, size_t c0,
	     size_t c1, const float *m)
{
	const struct qr_conv_params *p = j->p;
	size_t ohw = j->oh * j->ow, ldo = j->wk->ldo, s = j->bt * ldo;
	size_t t, c, a, b, img, oy, ox;

	for (t = 0; t < nt; t++) {
		tile_at(j, t0 + t, &img, &oy, &ox);
		for (c = c0; c < c1; c++) {
			float *yc = j->y + (img * p->c_out + c) * ohw;
			float r[WO][WT], o[WO][WO];
			float bias = j->bias ? j->bias[c] : 0.0f;

			for (b = 0; b < WT; b++) { /* A^T M, column by column */
				const float *q = m + (b * j->bt + t) * ldo + c;

				WINO_OUT1(S_ADD, S_SUB, S_MULK, q[0],
					  q[WT * s], q[2 * WT * s],
					  q[3 * WT * s], q[4 * WT * s],
					  q[5 * WT * s], r[0][b], r[1][b],
					  r[2][b], r[3][b]);
			}
			for (a = 0; a < WO; a++) /* (A^T M) A, row by row */
				WINO_OUT1(S_ADD, S_SUB, S_MULK, r[a][0],
					  r[a][1], r[a][2], r[a][3], r[a][4],
					  r[a][5], o[a][0], o[a][1], o[a][2],
					  o[a][3]);
			for (a = 0; a < WO && oy + a < j->oh; a++)
				for (b = 0; b < WO && ox + b < j->ow; b++)
					yc[(oy + a) * j->ow + ox + b] =
						o[a][b] + bias;
		}
	}
}

/* ---- AVX-512 transforms: 16 channels per vector ---- */

#ifdef QR_WINO_AVX512
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MULK(a, k) _mm512_mul_ps(a, _mm512_set1_ps(k))

/* Channels are h * w floats apart in NCHW, so a tile's 16 channels are
 * gathered; lanes past c_in and pixels in the padding read as zero. */
static WINO_TARGET void
in_avx512(const struct wino_job *j, size_t t0, size_t nt, float *v)
{
	const struct qr_conv_params *p = j->p;
	size_t hw = p->h * p->w, s = j->bt * j->ldi, t, c, a, b;
	size_t img, oy, ox;
	const __m512i lane = _mm512_mullo_epi32(
		_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
				  14, 15),
		_mm512_set1_epi32((int)hw));

	for (t = 0; t < nt; t++) {
		int okr[WT], okc[WT];

		tile_at(j, t0 + t, &img, &oy, &ox);
		for (a = 0; a < WT; a++) {
			okr[a] = oy + a >= p->pad_t && oy + a - p->pad_t < p->h;
			okc[a] = ox + a >= p->pad_l && ox + a - p->pad_l < p->w;
		}
		for (c = 0; c < p->c_in; c += WL) {
			__mmask16 lm = p->c_in - c >= WL ? (__mmask16)0xffff :
				       (__mmask16)((1u << (p->c_in - c)) - 1);
			__m512 r[WT][WT];

			for (b = 0; b < WT; b++) {
				__m512 d[WT];

				for (a = 0; a < WT; a++) {
					const float *src;

					if (!okr[a] || !okc[b]) {
						d[a] = _mm512_setzero_ps();
						continue;
					}
					src = j->x + (img * p->c_in + c) * hw +
					      (oy + a - p->pad_t) * p->w + ox +
					      b - p->pad_l;
					d[a] = _mm512_mask_i32gather_ps(
						_mm512_setzero_ps(), lm, lane,
						src, 4);
				}
				WINO_IN1(V_ADD, V_SUB, V_MULK, d[0], d[1], d[2],
					 d[3], d[4], d[5], r[0][b], r[1][b],
					 r[2][b], r[3][b], r[4][b], r[5][b]);
			}
			for (a = 0; a < WT; a++) {
				float *o = v + (a * WT * j->bt + t) * j->ldi + c;
				__m512 e0, e1, e2, e3, e4, e5;

				WINO_IN1(V_ADD, V_SUB, V_MULK, r[a][0], r[a][1],
					 r[a][2], r[a][3], r[a][4], r[a][5], e0,
					 e1, e2, e3, e4, e5);
				_mm512_storeu_ps(o, e0);
				_mm512_storeu_ps(o + s, e1);
				_mm512_storeu_ps(o + 2 * s, e2);
				_mm512_storeu_ps(o + 3 * s, e3);
				_mm512_storeu_ps(o + 4 * s, e4);
				_mm512_storeu_ps(o + 5 * s, e5);
			}
		}
	}
}

/* The 16 outputs of a lane block are oh * ow floats apart: scattered. */
static WINO_TARGET void
out_avx512(const struct wino_job *j, size_t t0, size_t nt, size_t c0,
	   size_t c1, const float *m)
{
	const struct qr_conv_params *p = j->p;
	size_t ohw = j->oh * j->ow, ldo = j->wk->ldo, s = j->bt * ldo;
	size_t t, c, a, b, img, oy, ox;
	const __m512i lane = _mm512_mullo_epi32(
		_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
				  14, 15),
		_mm512_set1_epi32((int)ohw));

	for (t = 0; t < nt; t++) {
		tile_at(j, t0 + t, &img, &oy, &ox);
		for (c = c0; c < c1; c += WL) {
			__mmask16 lm = c1 - c >= WL ? (__mmask16)0xffff :
				       (__mmask16)((1u << (c1 - c)) - 1);
			__m512 bias = j->bias ?
				_mm512_maskz_loadu_ps(lm, j->bias + c) :
				_mm512_setzero_ps();
			float *yc = j->y + (img * p->c_out + c) * ohw;
			__m512 r[WO][WT];

			for (b = 0; b < WT; b++) {
				const float *q = m + (b * j->bt + t) * ldo + c;

				WINO_OUT1(V_ADD, V_SUB, V_MULK,
					  _mm512_loadu_ps(q),
					  _mm512_loadu_ps(q + WT * s),
					  _mm512_loadu_ps(q + 2 * WT * s),
					  _mm512_loadu_ps(q + 3 * WT * s),
					  _mm512_loadu_ps(q + 4 * WT * s),
					  _mm512_loadu_ps(q + 5 * WT * s),
					  r[0][b], r[1][b], r[2][b], r[3][b]);
			}
			for (a = 0; a < WO && oy + a < j->oh; a++) {
				__m512 o[WO];

				WINO_OUT1(V_ADD, V_SUB, V_MULK, r[a][0],
					  r[a][1], r[a][2], r[a][3], r[a][4],
					  r[a][5], o[0], o[1], o[2], o[3]);
				for (b = 0; b < WO && ox + b < j->ow; b++)
					_mm512_mask_i32scatter_ps(
						yc + (oy + a) * j->ow + ox + b,
						lm, lane,
						_mm512_add_ps(o[b], bias), 4);
			}
		}
	}
}
#endif

/* ---- AVX2 transforms: 8 channels per vector (no scatter: the outputs
 * go through a small buffer) ---- */

#ifdef QR_WINO_AVX512
#define WINO_AVX2 __attribute__((target("avx2")))
#define A_ADD(a, b) _mm256_add_ps(a, b)
#define A_SUB(a, b) _mm256_sub_ps(a, b)
#define A_MULK(a, k) _mm256_mul_ps(a, _mm256_set1_ps(k))

static WINO_AVX2 __m256
lanes_lt(size_t n)
{
	return _mm256_castsi256_ps(_mm256_cmpgt_epi32(
		_mm256_set1_epi32((int)(n < 8 ? n : 8)),
		_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

static WINO_AVX2 void
in_avx2(const struct wino_job *j, size_t t0, size_t nt, float *v)
{
	const struct qr_conv_params *p = j->p;
	size_t hw = p->h * p->w, s = j->bt * j->ldi, t, c, a, b;
	size_t img, oy, ox;
	const __m256i lane = _mm256_mullo_epi32(
		_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
		_mm256_set1_epi32((int)hw));

	for (t = 0; t < nt; t++) {
		int okr[WT], okc[WT];

		tile_at(j, t0 + t, &img, &oy, &ox);
		for (a = 0; a < WT; a++) {
			okr[a] = oy + a >= p->pad_t && oy + a - p->pad_t < p->h;
			okc[a] = ox + a >= p->pad_l && ox + a - p->pad_l < p->w;
		}
		for (c = 0; c < p->c_in; c += 8) {
			__m256 lm = lanes_lt(p->c_in - c);
			__m256 r[WT][WT];

			for (b = 0; b < WT; b++) {
				__m256 d[WT];

				for (a = 0; a < WT; a++) {
					const float *src;

					if (!okr[a] || !okc[b]) {
						d[a] = _mm256_setzero_ps();
						continue;
					}
					src = j->x + (img * p->c_in + c) * hw +
					      (oy + a - p->pad_t) * p->w + ox +
					      b - p->pad_l;
					d[a] = _mm256_mask_i32gather_ps(
						_mm256_setzero_ps(), src, lane,
						lm, 4);
				}
				WINO_IN1(A_ADD, A_SUB, A_MULK, d[0], d[1], d[2],
					 d[3], d[4], d[5], r[0][b], r[1][b],
					 r[2][b], r[3][b], r[4][b], r[5][b]);
			}
			for (a = 0; a < WT; a++) {
				float *o = v + (a * WT * j->bt + t) * j->ldi + c;
				__m256 e0, e1, e2, e3, e4, e5;

				WINO_IN1(A_ADD, A_SUB, A_MULK, r[a][0], r[a][1],
					 r[a][2], r[a][3], r[a][4], r[a][5], e0,
					 e1, e2, e3, e4, e5);
				_mm256_storeu_ps(o, e0);
				_mm256_storeu_ps(o + s, e1);
				_mm256_storeu_ps(o + 2 * s, e2);
				_mm256_storeu_ps(o + 3 * s, e3);
				_mm256_storeu_ps(o + 4 * s, e4);
				_mm256_storeu_ps(o + 5 * s, e5);
			}
		}
	}
}

static WINO_AVX2 void
out_avx2(const struct wino_job *j, size_t t0, size_t nt, size_t c0,
	 size_t c1, const float *m)
{
	const struct qr_conv_params *p = j->p;
	size_t ohw = j->oh * j->ow, ldo = j->wk->ldo, s = j->bt * ldo;
	size_t t, c, a, b, l, img, oy, ox;

	for (t = 0; t < nt; t++) {
		tile_at(j, t0 + t, &img, &oy, &ox);
		for (c = c0; c < c1; c += 8) {
			size_t nl = c1 - c < 8 ? c1 - c : 8;
			__m256 bias = j->bias ?
				_mm256_maskload_ps(j->bias + c,
					_mm256_castps_si256(lanes_lt(nl))) :
				_mm256_setzero_ps();
			float *yc = j->y + (img * p->c_out + c) * ohw;
			__m256 r[WO][WT];

			for (b = 0; b < WT; b++) {
				const float *q = m + (b * j->bt + t) * ldo + c;

				WINO_OUT1(A_ADD, A_SUB, A_MULK,
					  _mm256_loadu_ps(q),
					  _mm256_loadu_ps(q + WT * s),
					  _mm256_loadu_ps(q + 2 * WT * s),
					  _mm256_loadu_ps(q + 3 * WT * s),
					  _mm256_loadu_ps(q + 4 * WT * s),
					  _mm256_loadu_ps(q + 5 * WT * s),
					  r[0][b], r[1][b], r[2][b], r[3][b]);
			}
			for (a = 0; a < WO && oy + a < j->oh; a++) {
				__m256 o[WO];

				WINO_OUT1(A_ADD, A_SUB, A_MULK, r[a][0],
					  r[a][1], r[a][2], r[a][3], r[a][4],
					  r[a][5], o[0], o[1], o[2], o[3]);
				for (b = 0; b < WO && ox + b < j->ow; b++) {
					float out[8];
					float *yp = yc + (oy + a) * j->ow + ox + b;

					_mm256_storeu_ps(out,
						_mm256_add_ps(o[b], bias));
					for (l = 0; l < nl; l++)
						yp[l * ohw] = out[l];
				}
			}
		}
	}
}
#endif

/* ---- run ---- */

static void
wino_task(void *ctx, size_t task, int slot)
{
	const struct wino_job *j = ctx;
	const struct qr_wino_f32 *wk = j->wk;
	size_t blk = task / j->n_cs, t0 = blk * j->bt, nt, xi, cp, c0, c1;
	float *v = qr_align64(j->ws + (size_t)slot * j->slot);
	float *m = qr_align64(v + WXI * j->bt * j->ldi);
	void *gws = m + WXI * j->bt * wk->ldo;
	int vec = 0, vec2 = 0;

	nt = j->n_tiles - t0 < j->bt ? j->n_tiles - t0 : j->bt;
	/* this task's output channels: whole panels of U */
	qr_parallel_range(wk->ldo, task % j->n_cs, j->n_cs, WP, &c0, &c1);
	if (c0 == c1)
		return;
#ifdef QR_WINO_AVX512
	/* gather/scatter offsets are int32 */
	vec = (qr_kernels_cpu_features() & QR_CPU_AVX512BW) &&
	      (size_t)WL * j->p->h * j->p->w < 0x7fffffffu &&
	      (size_t)WL * j->oh * j->ow < 0x7fffffffu;
	if (vec)
		in_avx512(j, t0, nt, v);
	vec2 = !vec && (qr_kernels_cpu_features() & QR_CPU_AVX2) &&
	       (size_t)WL * j->p->h * j->p->w < 0x7fffffffu;
	if (vec2)
		in_avx2(j, t0, nt, v);
#endif
	if (!vec && !vec2)
		in_portable(j, t0, nt, v);
	for (xi = 0; xi < WXI; xi++)
		for (cp = c0; cp < c1; cp += WP)
			qr_sgemm(&j->plan, nt, WP, wk->c_in,
				 v + xi * j->bt * j->ldi, j->ldi,
				 wk->u + (xi * wk->ldo + cp) * wk->c_in, WP,
				 0, m + xi * j->bt * wk->ldo + cp, wk->ldo, 0,
				 gws);
	if (c1 > wk->c_out)
		c1 = wk->c_out; /* padding columns of the last panel */
#ifdef QR_WINO_AVX512
	if (vec) {
		out_avx512(j, t0, nt, c0, c1, m);
		return;
	}
	if (vec2) {
		out_avx2(j, t0, nt, c0, c1, m);
		return;
	}
#endif
	out_portable(j, t0, nt, c0, c1, m);
}

void
qr_wino_f32_run(const struct qr_wino_f32 *wk, const struct qr_conv_params *p,
		const float *x, const float *bias, float *y, void *ws,
		int n_threads)
{
	struct wino_job j;

	plan_job(wk, p, n_threads, &j);
	if (j.n_tiles == 0 || p->c_out == 0)
		return;
	j.x = x;
	j.bias = bias;
	j.y = y;
	j.ws = ws;
	qr_parallel_for(n_threads, j.n_blocks * j.n_cs, wino_task, &j);
}
