/*
 * conv: float Conv and ConvTranspose. Three algorithms: a direct loop for
 * depthwise convs (dwconv.c), a plain GEMM for 1x1 stride-1 unpadded
 * convs (the input already is the column matrix), and im2col + GEMM
 * otherwise; all three split over the pool's threads. Conv's GEMMs are
 * qr_sgemm with the order ONNX Runtime's MlasConv uses for the whole
 * group, and the bias is added after the sums as there, so every output
 * has ORT's bits (ConvTranspose still calls OpenBLAS). im2col works on
 * column blocks so the workspace stays bounded (about QR_COL_BUDGET
 * bytes) whatever the image size.
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QR_HAVE_CONV_AVX512 1
#define QR_AVX512 __attribute__((target("avx512f")))
#endif

#define QR_QROWS 64 /* rows of weights held quantized dequantized at a
		     * time (a multiple of 8: the GEMM's row blocks, and
		     * the N = 1 dot kernel's blocks of 4 rows, fall as
		     * for the whole matrix) */
#define QR_DEQ_WHOLE_MAX ((size_t)4 << 20) /* bytes of weights held
						* quantized that a conv
						* dequantizes whole, once a
						* run, when more than one
						* column block reads them */
#define QR_COL_BUDGET (1u << 20) /* bytes of im2col per block, about:
				  * one core's L2 (1 MiB on Zen 4), so the
				  * GEMM reads the block back from L2 or L3,
				  * not from memory */

struct qr_conv_f32_packed {
	size_t c_out, c_in;      /* channels */
	size_t kd, kh, kw;       /* kernel size; kd 0 but for 3-D */
	size_t group;            /* groups */
	int transposed;          /* ConvTranspose weights */
	int depthwise;           /* one input channel per group */
	float *w;                /* weights in the ONNX layout, or NULL
				  * when held quantized (qw) */
	int owned;               /* w is a heap copy (else borrowed) */
	struct qr_conv_qweights qw; /* qw.q: the weights held quantized
				  * (borrowed); the GEMM dequantizes
				  * QR_QROWS rows at a time */
};

static size_t
out_dim(size_t in, size_t k, size_t stride, size_t pb, size_t pe, size_t dil)
{
	size_t span = dil * (k - 1) + 1;

	if (in + pb + pe < span)
		return 0;
	return (in + pb + pe - span) / stride + 1;
}

static size_t
outt_dim(size_t in, size_t k, size_t stride, size_t pb, size_t pe,
	 size_t dil, size_t opad)
{
	size_t full = stride * (in - 1) + opad + dil * (k - 1) + 1;

	if (in == 0 || full <= pb + pe)
		return 0;
	return full - pb - pe;
}

size_t
qr_conv_out_h(const struct qr_conv_params *p)
{
	return out_dim(p->h, p->kh, p->stride_h, p->pad_t, p->pad_b, p->dil_h);
}

size_t
qr_conv_out_w(const struct qr_conv_params *p)
{
	return out_dim(p->w, p->kw, p->stride_w, p->pad_l, p->pad_r, p->dil_w);
}

size_t
qr_conv_out_d(const struct qr_conv_params *p)
{
	return p->kd ? out_dim(p->d, p->kd, p->stride_d, p->pad_f, p->pad_k,
			       p->dil_d) : 1;
}

size_t
qr_conv_taps(const struct qr_conv_params *p)
{
	return (p->kd ? p->kd : 1) * p->kh * p->kw;
}

size_t
qr_conv_in_size(const struct qr_conv_params *p)
{
	return (p->kd ? p->d : 1) * p->h * p->w;
}

size_t
qr_conv_out_size(const struct qr_conv_params *p)
{
	return qr_conv_out_d(p) * qr_conv_out_h(p) * qr_conv_out_w(p);
}

size_t
qr_convt_out_h(const struct qr_conv_params *p)
{
	return outt_dim(p->h, p->kh, p->stride_h, p->pad_t, p->pad_b, p->dil_h,
			p->out_pad_h);
}

size_t
qr_convt_out_w(const struct qr_conv_params *p)
{
	return outt_dim(p->w, p->kw, p->stride_w, p->pad_l, p->pad_r, p->dil_w,
			p->out_pad_w);
}

/*
 * For kernel column offset kj, the output columns ow whose input column
 * iw = ow * s - pl + kj * d lies in [0, w): [*lo, *hi).
 */
static void
valid_span(size_t ow_n, size_t s, size_t pl, size_t off, size_t w, size_t *lo,
	   size_t *hi)
{
	/* iw >= 0  <=>  ow * s >= pl - off */
	size_t a = 0, b;

	if (pl > off)
		a = (pl - off + s - 1) / s;
	/* iw < w  <=>  ow * s < w + pl - off */
	if (w + pl <= off)
		b = 0;
	else
		b = (w + pl - off + s - 1) / s;
	if (b > ow_n)
		b = ow_n;
	if (a > b)
		a = b;
	*lo = a;
	*hi = b;
}

/* d[t] = s[t * sw] for t < n. */
static void
copy_strided_u8(uint8_t *d, const uint8_t *s, size_t n, size_t sw)
{
	size_t t;

	if (sw == 1) {
		memcpy(d, s, n);
		return;
	}
	for (t = 0; t < n; t++)
		d[t] = s[t * sw];
}

#ifdef QR_HAVE_CONV_AVX512
static __mmask16
lanes(size_t n)
{
	return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

/* Stride 2 (the stride of most downsampling convs): the even floats of
 * two loads, read only up to s[2 (n - 1)]. */
static QR_AVX512 void
copy_stride2_avx512(float *d, const float *s, size_t n)
{
	const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16,
					      14, 12, 10, 8, 6, 4, 2, 0);
	size_t t;

	for (t = 0; t < n; t += 16) {
		size_t r = n - t < 16 ? n - t : 16, used = 2 * r - 1;
		__m512 lo = _mm512_maskz_loadu_ps(lanes(used), s + 2 * t);
		__m512 hi = _mm512_maskz_loadu_ps(
			used > 16 ? lanes(used - 16) : 0, s + 2 * t + 16);

		_mm512_mask_storeu_ps(d + t, lanes(r),
				      _mm512_permutex2var_ps(lo, even, hi));
	}
}

/* Stride 1: im2col's runs are short (an output row), so masked moves
 * beat a memcpy call. */
static QR_AVX512 void
copy_stride1_avx512(float *d, const float *s, size_t n)
{
	size_t t;

	for (t = 0; t < n; t += 16)
		_mm512_mask_storeu_ps(d + t, lanes(n - t),
				      _mm512_maskz_loadu_ps(lanes(n - t), s + t));
}
#endif

#ifdef QR_HAVE_CONV_AVX512
/* copy_stride2_avx512 on 8 lanes: the even floats of 16, the last of
 * which is never read (it may lie past the row); a short tail one by
 * one. Returns the floats done. */
static __attribute__((target("avx2"))) size_t
copy_stride2_avx2(float *d, const float *s, size_t n)
{
	const __m256i first7 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, -1, 0);
	size_t t;

	for (t = 0; t + 8 <= n; t += 8) {
		__m256 v = _mm256_shuffle_ps(_mm256_loadu_ps(s + 2 * t),
					     _mm256_maskload_ps(s + 2 * t + 8,
								first7),
					     _MM_SHUFFLE(2, 0, 2, 0));

		_mm256_storeu_ps(d + t, _mm256_castpd_ps(_mm256_permute4x64_pd(
			_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0))));
	}
	return t;
}
#endif

static void
copy_strided_f32(float *d, const float *s, size_t n, size_t sw)
{
	size_t t = 0;

#ifdef QR_HAVE_CONV_AVX512
	if (sw <= 2 && (qr_kernels_cpu_features() & QR_CPU_AVX512BW)) {
		if (sw == 1)
			copy_stride1_avx512(d, s, n);
		else
			copy_stride2_avx512(d, s, n);
		return;
	}
	if (sw == 2 && (qr_kernels_cpu_features() & QR_CPU_AVX2))
		t = copy_stride2_avx2(d, s, n);
#endif
	if (sw == 1) {
		memcpy(d, s, n * sizeof *d);
		return;
	}
	for (; t < n; t++)
		d[t] = s[t * sw];
}

#define IM2COL_BODY(T, COPY)                                                \
	size_t oh_n = qr_conv_out_h(p), ow_n = qr_conv_out_w(p);            \
	size_t plane = oh_n * ow_n, kd_n = p->kd ? p->kd : 1;               \
	size_t d_n = p->kd ? p->d : 1, ci, kt, ki, kj;                      \
	T *row = col;                                                       \
                                                                            \
	for (ci = 0; ci < cin_g; ci++) {                                    \
		/* an empty image has no data (NULL): all padding */        \
		const T *xc = x ? x + ci * d_n * p->h * p->w : x;           \
		for (kt = 0; kt < kd_n; kt++)                               \
		for (ki = 0; ki < p->kh; ki++) {                            \
			for (kj = 0; kj < p->kw; kj++, row += ncols) {      \
				size_t lo, hi, c = col0, end = col0 + ncols;\
				/* the first column's place; then whole     \
				 * output rows, counted on (no division per \
				 * row: rows are short) */                  \
				size_t od = col0 / plane;                   \
				size_t oh = col0 / ow_n % oh_n;             \
				size_t ow = col0 % ow_n;                    \
				T *d = row;                                 \
                                                                            \
				valid_span(ow_n, p->stride_w, p->pad_l,     \
					   kj * p->dil_w, p->w, &lo, &hi);  \
				for (; c < end; ow = 0) {                   \
					size_t stop = ow_n - ow;            \
					/* 2-D: stride_d = dil_d = 0 */     \
					size_t idp = od * p->stride_d +     \
						     kt * p->dil_d;         \
					size_t ihp = oh * p->stride_h +     \
						     ki * p->dil_h;         \
					size_t t;                           \
                                                                            \
					if (stop > end - c)                 \
						stop = end - c;             \
					if (idp < p->pad_f ||               \
					    idp - p->pad_f >= d_n ||        \
					    ihp < p->pad_t || p->w == 0 ||  \
					    ihp - p->pad_t >= p->h) {       \
						for (t = 0; t < stop; t++)  \
							d[t] = pad;         \
					} else {                            \
						const T *xr = xc +          \
						    ((idp - p->pad_f) *     \
						    p->h + (ihp -           \
						    p->pad_t)) * p->w;      \
						size_t a = lo > ow ? lo - ow : 0;\
						size_t b = hi > ow ? hi - ow : 0;\
						size_t sw = p->stride_w;    \
						/* i0 may wrap below 0:     \
						 * add a first, index after \
						 * (no wrapped pointer) */  \
						size_t i0 = ow * sw +       \
						    kj * p->dil_w - p->pad_l;\
						if (a > stop)               \
							a = stop;           \
						if (b > stop)               \
							b = stop;           \
						if (b < a)                  \
							b = a;              \
						for (t = 0; t < a; t++)     \
							d[t] = pad;         \
						if (b > a) /* else no       \
							    * pointer into x */ \
							COPY(d + a,         \
							    xr + (i0 + a * sw), \
							    b - a, sw);     \
						for (t = b; t < stop; t++)  \
							d[t] = pad;         \
					}                                   \
					d += stop;                          \
					c += stop;                          \
					if (++oh == oh_n) {                 \
						oh = 0;                     \
						od++;                       \
					}                                   \
				}                                           \
			}                                                   \
		}                                                           \
	}

/*
 * Whether a conv takes IM2COL_SAME: 2-D, stride 1 both ways, output as
 * wide as the input (the "same" padding of most 3x3 convs), an image
 * with data.
 */
static int
same_stride1(const struct qr_conv_params *p, const void *x)
{
	return p->kd == 0 && p->stride_h == 1 && p->stride_w == 1 &&
	       x != NULL && p->h > 0 && p->w > 0 && qr_conv_out_w(p) == p->w;
}

/*
 * im2col for same_stride1 convs. Output column c = oh w + ow of tap
 * (ci, ki, kj) reads input element c + (ki dil_h - pad_t) w +
 * (kj dil_w - pad_l) of channel ci: one offset for all, so the columns
 * from the first of the first output row whose input row exists to the
 * last of the last are one contiguous copy. The copy also takes, at
 * each row's ends, the columns whose input column lies outside the
 * image (a0 at the start, w - b0 at the end) from the neighbouring
 * input row: those become padding again. Same values as IM2COL_BODY.
 */
#define IM2COL_SAME(T)                                                      \
	size_t oh_n = qr_conv_out_h(p), w = p->w, hw = p->h * p->w;         \
	size_t end = col0 + ncols, ci, ki, kj, t;                           \
	T *row = col;                                                       \
                                                                            \
	for (ci = 0; ci < cin_g; ci++) {                                    \
		const T *xc = x + ci * hw;                                  \
		for (ki = 0; ki < p->kh; ki++) {                            \
			/* output rows [oh_lo, oh_hi) read input row        \
			 * oh + dy - pad_t, inside [0, h) */                \
			size_t dy = ki * p->dil_h;                          \
			size_t oh_lo = p->pad_t > dy ? p->pad_t - dy : 0;   \
			size_t oh_hi = p->h + p->pad_t > dy ?               \
				       p->h + p->pad_t - dy : 0;            \
                                                                            \
			if (oh_hi > oh_n)                                   \
				oh_hi = oh_n;                               \
			for (kj = 0; kj < p->kw; kj++, row += ncols) {      \
				size_t dx = kj * p->dil_w, s = col0, e = col0; \
				size_t a0 = p->pad_l > dx ? p->pad_l - dx : 0; \
				size_t b0 = w + p->pad_l > dx ?             \
					    w + p->pad_l - dx : 0, r;       \
                                                                            \
				if (b0 > w)                                 \
					b0 = w;                             \
				if (oh_lo < oh_hi && a0 < b0) {             \
					s = oh_lo * w + a0;                 \
					e = (oh_hi - 1) * w + b0;           \
					s = s > col0 ? (s < end ? s : end) : col0; \
					e = e < end ? (e > s ? e : s) : end;\
				}                                           \
				for (t = col0; t < s; t++)                  \
					row[t - col0] = pad;                \
				if (e > s) /* else no pointer into x */     \
					memcpy(row + (s - col0), xc +       \
					    ((ptrdiff_t)s +                 \
					    ((ptrdiff_t)dy -                \
					     (ptrdiff_t)p->pad_t) *         \
					    (ptrdiff_t)w + (ptrdiff_t)dx -  \
					    (ptrdiff_t)p->pad_l),           \
					    (e - s) * sizeof *row);         \
				for (t = e; t < end; t++)                   \
					row[t - col0] = pad;                \
				for (r = s / w; r * w < e &&                \
				     (a0 > 0 || b0 < w); r++) {             \
					size_t z0 = r * w > s ? r * w : s;  \
					size_t z1 = r * w + a0 < e ?        \
						    r * w + a0 : e;         \
					for (t = z0; t < z1; t++)           \
						row[t - col0] = pad;        \
					z0 = r * w + b0 > s ? r * w + b0 : s;\
					z1 = r * w + w < e ? r * w + w : e; \
					for (t = z0; t < z1; t++)           \
						row[t - col0] = pad;        \
				}                                           \
			}                                                   \
		}                                                           \
	}

void
qr_im2col_f32(const struct qr_conv_params *p, const float *x, size_t cin_g,
	      size_t col0, size_t ncols, float *col)
{
	const float pad = 0;

	if (same_stride1(p, x)) {
		IM2COL_SAME(float)
		return;
	}
	{
		IM2COL_BODY(float, copy_strided_f32)
	}
}

void
qr_im2col_u8(const struct qr_conv_params *p, const uint8_t *x, size_t cin_g,
	     size_t col0, size_t ncols, uint8_t pad, uint8_t *col)
{
	if (same_stride1(p, x)) {
		IM2COL_SAME(uint8_t)
		return;
	}
	{
		IM2COL_BODY(uint8_t, copy_strided_u8)
	}
}

static size_t
col_block(size_t k, size_t n, size_t elem)
{
	size_t nb = QR_COL_BUDGET / (elem * (k ? k : 1));

	nb = nb / 64 * 64;
	if (nb < 64)
		nb = 64;
	return nb < n ? nb : n;
}

static struct qr_conv_f32_packed *
pack(size_t c_out, size_t c_in, size_t kh, size_t kw, size_t group,
     const float *w, int transposed, int borrow)
{
	struct qr_conv_f32_packed *pk = xcalloc(1, sizeof *pk);
	size_t nw;

	QR_ASSERT(group >= 1 && c_in % group == 0 && c_out % group == 0);
	QR_ASSERT(kh >= 1 && kw >= 1);
	pk->c_out = c_out;
	pk->c_in = c_in;
	pk->kh = kh;
	pk->kw = kw;
	pk->group = group;
	pk->transposed = transposed;
	pk->depthwise = !transposed && c_in == group && group > 1;
	nw = c_out * (c_in / group) * kh * kw;
	if (borrow) {
		pk->w = (float *)w;
		return pk;
	}
	pk->w = xmalloc((nw ? nw : 1) * sizeof *pk->w);
	pk->owned = 1;
	memcpy(pk->w, w, nw * sizeof *w);
	return pk;
}

struct qr_conv_f32_packed *
qr_conv_f32_pack_new(size_t c_out, size_t c_in, size_t kh, size_t kw,
		     size_t group, const float *w)
{
	return pack(c_out, c_in, kh, kw, group, w, 0, 0);
}

struct qr_conv_f32_packed *
qr_conv_f32_pack_view(size_t c_out, size_t c_in, size_t kh, size_t kw,
		      size_t group, const float *w, int transposed)
{
	return pack(c_out, c_in, kh, kw, group, w, transposed, 1);
}

struct qr_conv_f32_packed *
qr_conv3d_f32_pack_view(size_t c_out, size_t c_in, size_t kd, size_t kh,
			size_t kw, size_t group, const float *w)
{
	struct qr_conv_f32_packed *pk = pack(c_out, c_in, kh, kw, group, w, 0,
					     1);

	QR_ASSERT(kd >= 1);
	pk->kd = kd;
	pk->depthwise = 0;
	return pk;
}

struct qr_conv_f32_packed *
qr_convt_f32_pack_new(size_t c_out, size_t c_in, size_t kh, size_t kw,
		      size_t group, const float *w)
{
	return pack(c_out, c_in, kh, kw, group, w, 1, 0);
}

/* a[i][0, k) = weights row row0 + i dequantized, for i < n. */
static void
deq_rows(const struct qr_conv_qweights *qw, size_t row0, size_t n, size_t k,
	 float *a)
{
	size_t i, es = qr_qtype_size(qw->t);

	for (i = 0; i < n; i++) {
		size_t r = qw->per_row ? row0 + i : 0;

		qr_dequantize_f32((const char *)qw->q + (row0 + i) * k * es,
				  qw->t, 1, 1, k, qw->scale + r,
				  qw->zp ? qw->zp + r : NULL, a + i * k);
	}
}

struct qr_conv_f32_packed *
qr_conv_f32_pack_q(size_t c_out, size_t c_in, size_t kh, size_t kw,
		   size_t group, const struct qr_conv_qweights *q)
{
	struct qr_conv_f32_packed *pk = pack(c_out, c_in, kh, kw, group, NULL,
					     0, 1);
	size_t k = c_in / group * kh * kw;

	if (pk->depthwise) {
		pk->w = xmalloc((c_out * k > 0 ? c_out * k : 1) * sizeof *pk->w);
		pk->owned = 1;
		deq_rows(q, 0, c_out, k, pk->w);
		return pk;
	}
	pk->qw = *q;
	return pk;
}

void
qr_conv_f32_packed_free(struct qr_conv_f32_packed *pk)
{
	if (pk == NULL)
		return;
	if (pk->owned)
		free(pk->w);
	free(pk);
}

static void
check_geom(const struct qr_conv_f32_packed *pk, const struct qr_conv_params *p)
{
	QR_ASSERT(p->c_out == pk->c_out && p->c_in == pk->c_in &&
		  p->kd == pk->kd && p->kh == pk->kh && p->kw == pk->kw &&
		  p->group == pk->group);
	QR_ASSERT(p->stride_h >= 1 && p->stride_w >= 1 && p->dil_h >= 1 &&
		  p->dil_w >= 1);
}

static int
is_pointwise(const struct qr_conv_params *p)
{
	return p->kh == 1 && p->kw == 1 && p->stride_h == 1 &&
	       p->stride_w == 1 && !p->pad_t && !p->pad_l && !p->pad_b &&
	       !p->pad_r && p->kd <= 1 && p->stride_d <= 1 && !p->pad_f &&
	       !p->pad_k;
}


#ifdef QR_HAVE_CONV_AVX512
static QR_AVX512 void
fill_bias_avx512(float *y, const float *bias, size_t c, size_t hw)
{
	size_t i, j;

	for (i = 0; i < c; i++) {
		__m512 b = _mm512_set1_ps(bias ? bias[i] : 0.0f);
		float *r = y + i * hw;

		for (j = 0; j + 16 <= hw; j += 16)
			_mm512_storeu_ps(r + j, b);
		if (j < hw)
			_mm512_mask_storeu_ps(r + j,
					      (__mmask16)((1u << (hw - j)) - 1),
					      b);
	}
}
#endif

/* Fill rows [c][hw] of y with bias[c] (or zero). */
static void
fill_bias(float *y, const float *bias, size_t c, size_t hw)
{
	size_t i, j;

#ifdef QR_HAVE_CONV_AVX512
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW) {
		fill_bias_avx512(y, bias, c, hw);
		return;
	}
#endif
	for (i = 0; i < c; i++) {
		float b = bias ? bias[i] : 0.0f;

		for (j = 0; j < hw; j++)
			y[i * hw + j] = b;
	}
}

/* Depthwise: tasks are (image, input channel); output channel co reads
 * input channel co / mult. */
struct dw_job {
	const struct qr_conv_f32_packed *pk;
	const struct qr_conv_params *p;
	struct qr_dw_geom g;
	const float *x, *bias;
	float *y;
	char *ws;        /* per-thread planes */
	size_t ws_step;  /* bytes per plane (one per thread slot) */
	size_t n_tasks;  /* tasks the planes are cut into */
};

static void
dw_task(void *ctx, size_t t, int slot)
{
	struct dw_job *j = ctx;
	const struct qr_conv_params *p = j->p;
	size_t ohw = j->g.oh * j->g.ow, mult = p->c_out / p->group;
	size_t lo, hi, i, m;
	float *buf;

	qr_parallel_range(p->n * p->c_in, t, j->n_tasks, 1, &lo, &hi);
	buf = qr_align64(j->ws + (size_t)slot * j->ws_step);
	for (i = lo; i < hi; i++) {
		size_t n = i / p->c_in, ci = i % p->c_in;

		/* an empty image has no data: every tap is padding */
		qr_dw_fill_f32(p, &j->g, p->h * p->w != 0 ? j->x + i * p->h * p->w :
			       j->x, buf);
		for (m = 0; m < mult; m++) {
			size_t co = ci * mult + m;

			qr_dw_plane(p, &j->g, buf, j->pk->w + co * p->kh * p->kw,
				    j->bias ? j->bias[co] : 0.0f, mult == 1,
				    j->y + (n * p->c_out + co) * ohw);
		}
	}
}

/*
 * GEMM convs: units are (image, group, column block, row block). Each
 * runs its own im2col block and a single-threaded sgemm, so the pool
 * alone splits the work (OpenBLAS's own threads would spin on the cores
 * the pool needs between nodes). Rows are split only when the image has
 * too few column blocks to go round.
 */
struct gemm_job {
	const struct qr_conv_f32_packed *pk;
	const struct qr_conv_params *p;
	const float *x, *bias;
	float *y;
	char *ws;        /* per-slot im2col blocks */
	size_t slot;     /* bytes per slot */
	size_t nb;       /* columns per block */
	size_t n_cb;     /* column blocks per (image, group) */
	size_t n_rb;     /* row blocks per column block */
	size_t units;
	struct qr_sgemm_plan plan; /* ORT's summation order for the group */
	size_t whole;    /* bytes after the slots for the weights
			  * dequantized whole (0: by blocks of rows in
			  * each unit, or not quantized) */
	const float *w;  /* the float weights the units read, or NULL:
			  * each unit dequantizes its rows */
};

static void
gemm_plan(const struct qr_conv_f32_packed *pk, const struct qr_conv_params *p,
	  int n_threads, struct gemm_job *j)
{
	size_t ohw = qr_conv_out_size(p), k = p->c_in / p->group * qr_conv_taps(p);
	size_t cout_g = p->c_out / p->group, ng = p->n * p->group;
	size_t nt = n_threads > 1 ? (size_t)n_threads : 1;

	/* MLAS runs the whole group as one GEMM of N = ohw (ldb = ldc = ohw
	 * when ohw is 1); its order is fixed by those sizes, whatever our
	 * blocks. */
	qr_sgemm_plan(cout_g, ohw, k, 0, ohw, ohw, &j->plan);
	j->nb = col_block(k, ohw, sizeof(float));
	if (j->nb == 0)
		j->nb = 1;
	j->n_cb = (ohw + j->nb - 1) / j->nb;
	j->n_rb = 1;
	if (nt > 1 && ng * j->n_cb < 2 * nt &&
	    j->plan.order != QR_SGEMM_DOT) { /* DOT: rows in one call */
		size_t want = (ohw + 2 * nt - 1) / (2 * nt);

		want = (want + 15) / 16 * 16;
		if (want >= 64 && want < j->nb) {
			j->nb = want;
			j->n_cb = (ohw + j->nb - 1) / j->nb;
		}
		if (ng * j->n_cb < nt) {
			j->n_rb = (cout_g + 15) / 16;
			if (j->n_rb > nt)
				j->n_rb = nt;
			if (j->n_rb < 1)
				j->n_rb = 1;
		}
	}
	j->units = ng * j->n_cb * j->n_rb;
	j->slot = (is_pointwise(p) ? 0 : k * j->nb * sizeof(float) + 64) +
		  qr_sgemm_workspace();
	j->whole = 0;
	if (pk->qw.q == NULL)
		return;
	/* weights read by more than one column block (or image) are
	 * dequantized once, when small enough; else each unit dequantizes
	 * QR_QROWS rows at a time */
	if (p->n * j->n_cb > 1 &&
	    p->c_out * k * sizeof(float) <= QR_DEQ_WHOLE_MAX)
		j->whole = p->c_out * k * sizeof(float) + 64;
	else
		j->slot += (QR_QROWS + 7) * k * sizeof(float) + 64;
}

/* Dequantize rows of the whole weights (tasks of 8 rows and more). */
struct deq_job {
	const struct qr_conv_qweights *qw;
	size_t rows, k, n_tasks;
	float *w;
};

static void
deq_task(void *ctx, size_t t, int slot)
{
	const struct deq_job *j = ctx;
	size_t r0, r1;

	(void)slot;
	qr_parallel_range(j->rows, t, j->n_tasks, 8, &r0, &r1);
	if (r1 > r0)
		deq_rows(j->qw, r0, r1 - r0, j->k, j->w + r0 * j->k);
}

#ifdef QR_HAVE_CONV_AVX512
static QR_AVX512 void
add_bias_avx512(float *y, size_t ld, const float *bias, size_t r0,
		size_t r1, size_t c0, size_t nb)
{
	size_t r, i;

	for (r = r0; r < r1; r++) {
		float *yr = y + r * ld + c0;
		__m512 b = _mm512_set1_ps(bias[r]);

		for (i = 0; i < nb; i += 16) {
			__mmask16 m = lanes(nb - i);

			_mm512_mask_storeu_ps(yr + i, m, _mm512_add_ps(
				_mm512_maskz_loadu_ps(m, yr + i), b));
		}
	}
}
#endif

/* Add their bias to rows [r0, r1), columns [c0, c0 + nb) of y (row
 * stride ld), after the sums, as MLAS does. */
static void
add_bias_block(float *y, size_t ld, const float *bias, size_t r0, size_t r1,
	       size_t c0, size_t nb)
{
	size_t r, i;

	if (!bias)
		return;
#ifdef QR_HAVE_CONV_AVX512
	if (qr_kernels_cpu_features() & QR_CPU_AVX512BW) {
		add_bias_avx512(y, ld, bias, r0, r1, c0, nb);
		return;
	}
#endif
	for (r = r0; r < r1; r++) {
		float *yr = y + r * ld + c0, b = bias[r];

		for (i = 0; i < nb; i++)
			yr[i] = yr[i] + b;
	}
}

static void
gemm_task(void *ctx, size_t u, int slot)
{
	const struct gemm_job *j = ctx;
	const struct qr_conv_params *p = j->p;
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t ohw = qr_conv_out_size(p), hw = qr_conv_in_size(p), k = cin_g * qr_conv_taps(p);
	size_t rb = u % j->n_rb, cu = u / j->n_rb;
	size_t cb = cu % j->n_cb, ngi = cu / j->n_cb;
	size_t g = ngi % p->group, n = ngi / p->group;
	size_t c0 = cb * j->nb, nb = ohw - c0 < j->nb ? ohw - c0 : j->nb;
	const float *xg = hw ? j->x + (n * p->c_in + g * cin_g) * hw :
			  j->x; /* empty image: no data, all padding */
	float *yg = j->y + (n * p->c_out + g * cout_g) * ohw;
	char *sl = j->ws + (size_t)slot * j->slot;
	const float *b;
	size_t r0, r1, ldb, m0, mr;
	void *sws;

	qr_parallel_range(cout_g, rb, j->n_rb, 8, &r0, &r1);
	if (r0 == r1 || nb == 0)
		return;
	if (is_pointwise(p)) {
		b = xg + c0;
		ldb = hw;
		sws = sl;
	} else {
		float *col = qr_align64(sl);

		qr_im2col_f32(p, xg, cin_g, c0, nb, col);
		b = col;
		ldb = nb;
		sws = (char *)col + k * nb * sizeof(float);
	}
	if (j->w != NULL) {
		qr_sgemm(&j->plan, r1 - r0, nb, k,
			 j->w + (g * cout_g + r0) * k, k, b, ldb, 0,
			 yg + r0 * ohw + c0, ohw, 0, sws);
	} else {
		float *a = qr_align64((char *)sws + qr_sgemm_workspace());

		for (m0 = r0; m0 < r1; m0 += mr) {
			/* a last block of under 8 rows joins this one:
			 * qr_sgemm takes one row as a vector times a
			 * matrix, which the whole matrix's rows are not */
			mr = r1 - m0 < QR_QROWS + 8 ? r1 - m0 : QR_QROWS;
			deq_rows(&j->pk->qw, g * cout_g + m0, mr, k, a);
			qr_sgemm(&j->plan, mr, nb, k, a, k, b, ldb, 0,
				 yg + m0 * ohw + c0, ohw, 0, sws);
		}
	}
	add_bias_block(yg, ohw, j->bias ? j->bias + g * cout_g : NULL, r0, r1,
		       c0, nb);
}

size_t
qr_conv_f32_workspace(const struct qr_conv_f32_packed *pk,
		      const struct qr_conv_params *p, int n_threads)
{
	struct qr_dw_geom g;
	size_t k, n;

	check_geom(pk, p);
	if (pk->depthwise) {
		qr_dw_geom(p, &g);
		n = n_threads > 1 ? (size_t)n_threads : 1;
		return n * (g.rows * g.row_len * sizeof(float) + 64);
	}
	if (pk->transposed) {
		k = p->c_out / p->group * p->kh * p->kw;
		n = p->h * p->w;
		return k * col_block(k, n, sizeof(float)) * sizeof(float) + 64;
	}
	{
		struct gemm_job j;

		gemm_plan(pk, p, n_threads, &j);
		return (n_threads > 1 ? (size_t)n_threads : 1) * j.slot +
		       j.whole;
	}
}

void
qr_conv_f32_run(const struct qr_conv_f32_packed *pk,
		const struct qr_conv_params *p, const float *x,
		const float *bias, float *y, void *ws, int n_threads)
{
	struct gemm_job j;

	check_geom(pk, p);
	QR_ASSERT(!pk->transposed);
	if (pk->depthwise) {
		struct dw_job dj;
		size_t tasks = n_threads > 1 ? 4 * (size_t)n_threads : 1;

		dj.pk = pk;
		dj.p = p;
		qr_dw_geom(p, &dj.g);
		dj.x = x;
		dj.bias = bias;
		dj.y = y;
		dj.ws = ws;
		dj.ws_step = dj.g.rows * dj.g.row_len * sizeof(float) + 64;
		if (tasks > p->n * p->c_in)
			tasks = p->n * p->c_in;
		dj.n_tasks = tasks;
		qr_parallel_for(n_threads, tasks, dw_task, &dj);
		return;
	}
	gemm_plan(pk, p, n_threads, &j);
	j.pk = pk;
	j.p = p;
	j.x = x;
	j.bias = bias;
	j.y = y;
	j.ws = ws;
	j.w = pk->w;
	if (j.whole > 0) {
		struct deq_job dq;
		size_t nt = n_threads > 1 ? (size_t)n_threads : 1;

		dq.qw = &pk->qw;
		dq.rows = p->c_out;
		dq.k = p->c_in / p->group * qr_conv_taps(p);
		dq.n_tasks = nt < (p->c_out + 7) / 8 ? nt : (p->c_out + 7) / 8;
		dq.w = qr_align64((char *)ws + nt * j.slot);
		qr_parallel_for(n_threads, dq.n_tasks, deq_task, &dq);
		j.w = dq.w;
	}
	qr_parallel_for(n_threads, j.units, gemm_task, &j);
}

/* Scatter-add col ([cout_g * kh * kw][nb], input pixels [c0, c0 + nb)) into
 * yg ([cout_g][oh][ow]). */
static void
col2im_add(const struct qr_conv_params *p, const float *col, size_t cout_g,
	   size_t c0, size_t nb, float *yg)
{
	size_t oh_n = qr_convt_out_h(p), ow_n = qr_convt_out_w(p);
	size_t co, ki, kj, t;
	const float *row = col;

	for (co = 0; co < cout_g; co++) {
		float *yc = yg + co * oh_n * ow_n;

		for (ki = 0; ki < p->kh; ki++) {
			for (kj = 0; kj < p->kw; kj++, row += nb) {
				for (t = 0; t < nb; t++) {
					size_t pix = c0 + t;
					size_t ih = pix / p->w, iw = pix % p->w;
					size_t ohp = ih * p->stride_h +
						     ki * p->dil_h;
					size_t owp = iw * p->stride_w +
						     kj * p->dil_w;

					if (ohp < p->pad_t || owp < p->pad_l)
						continue;
					ohp -= p->pad_t;
					owp -= p->pad_l;
					if (ohp >= oh_n || owp >= ow_n)
						continue;
					yc[ohp * ow_n + owp] += row[t];
				}
			}
		}
	}
}

void
qr_convt_f32_run(const struct qr_conv_f32_packed *pk,
		 const struct qr_conv_params *p, const float *x,
		 const float *bias, float *y, void *ws, int n_threads)
{
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t ohw = qr_convt_out_h(p) * qr_convt_out_w(p), hw = p->h * p->w;
	size_t k = cout_g * p->kh * p->kw;
	size_t nbmax = col_block(k, hw, sizeof(float));
	float *col = qr_align64(ws);
	size_t n, g, c0;

	check_geom(pk, p);
	QR_ASSERT(pk->transposed);
	for (n = 0; n < p->n; n++) {
		for (g = 0; g < p->group; g++) {
			const float *xg = x + (n * p->c_in + g * cin_g) * hw;
			const float *wg = pk->w + g * cin_g * k;
			float *yg = y + (n * p->c_out + g * cout_g) * ohw;

			fill_bias(yg, bias ? bias + g * cout_g : NULL, cout_g,
				  ohw);
			for (c0 = 0; c0 < hw; c0 += nbmax) {
				size_t nb = hw - c0 < nbmax ? hw - c0 : nbmax;

				/* col = W_g^T (k x cin_g) * X_g[:, c0..] */
				qr_gemm_f32(1, 0, k, nb, cin_g, 1.0f, wg, k,
					    xg + c0, hw, 0.0f, col, nb);
				col2im_add(p, col, cout_g, c0, nb, yg);
			}
		}
	}
}
