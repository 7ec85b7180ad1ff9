/*
 * conv: float Conv and ConvTranspose. Three algorithms, chosen once at pack
 * time: a direct loop for depthwise convs, a plain GEMM for 1x1 stride-1
 * unpadded convs (the input already is the column matrix), and im2col +
 * cblas_sgemm otherwise. im2col works on column blocks so the workspace
 * stays bounded (about QR_COL_BUDGET bytes) whatever the image size.
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define QR_COL_BUDGET (4u << 20) /* bytes of im2col per block, about */

enum conv_algo {
	ALGO_GEMM,      /* im2col + GEMM */
	ALGO_POINTWISE, /* 1x1, stride 1, no padding: GEMM on x directly */
	ALGO_DEPTHWISE, /* one input channel per group: direct loop */
};

struct qr_conv_f32_packed {
	struct qr_conv_params p; /* shape, copied */
	int transposed;          /* ConvTranspose weights */
	enum conv_algo algo;     /* chosen at pack time */
	float *w;                /* weights in the ONNX layout, heap, owned */
	size_t nb;               /* columns per im2col block */
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

#define IM2COL_BODY(T)                                                      \
	size_t oh_n = qr_conv_out_h(p), ow_n = qr_conv_out_w(p);            \
	size_t ci, ki, kj;                                                  \
	T *row = col;                                                       \
                                                                            \
	for (ci = 0; ci < cin_g; ci++) {                                    \
		const T *xc = x + ci * p->h * p->w;                         \
		for (ki = 0; ki < p->kh; ki++) {                            \
			for (kj = 0; kj < p->kw; kj++, row += ncols) {      \
				size_t lo, hi, c = col0, end = col0 + ncols;\
				T *d = row;                                 \
                                                                            \
				valid_span(ow_n, p->stride_w, p->pad_l,     \
					   kj * p->dil_w, p->w, &lo, &hi);  \
				while (c < end) {                           \
					size_t oh = c / ow_n, ow = c % ow_n;\
					size_t stop = ow_n - ow;            \
					size_t ihp = oh * p->stride_h +     \
						     ki * p->dil_h;         \
					size_t t;                           \
                                                                            \
					(void)oh_n;                         \
					if (stop > end - c)                 \
						stop = end - c;             \
					if (ihp < p->pad_t ||               \
					    ihp - p->pad_t >= p->h) {       \
						for (t = 0; t < stop; t++)  \
							d[t] = pad;         \
					} else {                            \
						const T *xr = xc +          \
						    (ihp - p->pad_t) * p->w;\
						size_t a = lo > ow ? lo - ow : 0;\
						size_t b = hi > ow ? hi - ow : 0;\
						size_t sw = p->stride_w;    \
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
						if (sw == 1)                \
							memcpy(d + a, xr + i0 + a, \
							    (b - a) * sizeof(T)); \
						else                        \
							for (t = a; t < b; t++) \
								d[t] = xr[i0 + t * sw]; \
						for (t = b; t < stop; t++)  \
							d[t] = pad;         \
					}                                   \
					d += stop;                          \
					c += stop;                          \
				}                                           \
			}                                                   \
		}                                                           \
	}

void
qr_im2col_f32(const struct qr_conv_params *p, const float *x, size_t cin_g,
	      size_t col0, size_t ncols, float *col)
{
	const float pad = 0;

	IM2COL_BODY(float)
}

void
qr_im2col_u8(const struct qr_conv_params *p, const uint8_t *x, size_t cin_g,
	     size_t col0, size_t ncols, uint8_t pad, uint8_t *col)
{
	IM2COL_BODY(uint8_t)
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
pack(const struct qr_conv_params *p, const float *w, int transposed)
{
	struct qr_conv_f32_packed *pk = xcalloc(1, sizeof *pk);
	size_t cin_g, cout_g, nw;

	QR_ASSERT(p->group >= 1 && p->c_in % p->group == 0 &&
		  p->c_out % p->group == 0);
	QR_ASSERT(p->stride_h >= 1 && p->stride_w >= 1 && p->dil_h >= 1 &&
		  p->dil_w >= 1 && p->kh >= 1 && p->kw >= 1);
	pk->p = *p;
	pk->transposed = transposed;
	cin_g = p->c_in / p->group;
	cout_g = p->c_out / p->group;
	nw = p->c_out * cin_g * p->kh * p->kw;
	pk->w = xmalloc((nw ? nw : 1) * sizeof *pk->w);
	memcpy(pk->w, w, nw * sizeof *w);
	if (transposed) {
		pk->algo = ALGO_GEMM;
		pk->nb = col_block(cout_g * p->kh * p->kw, p->h * p->w,
				   sizeof(float));
	} else if (cin_g == 1 && p->group > 1) {
		pk->algo = ALGO_DEPTHWISE;
	} else if (p->kh == 1 && p->kw == 1 && p->stride_h == 1 &&
		   p->stride_w == 1 && !p->pad_t && !p->pad_l && !p->pad_b &&
		   !p->pad_r) {
		pk->algo = ALGO_POINTWISE;
	} else {
		pk->algo = ALGO_GEMM;
		pk->nb = col_block(cin_g * p->kh * p->kw,
				   qr_conv_out_h(p) * qr_conv_out_w(p),
				   sizeof(float));
	}
	return pk;
}

struct qr_conv_f32_packed *
qr_conv_f32_pack_new(const struct qr_conv_params *p, const float *w)
{
	return pack(p, w, 0);
}

struct qr_conv_f32_packed *
qr_convt_f32_pack_new(const struct qr_conv_params *p, const float *w)
{
	return pack(p, w, 1);
}

void
qr_conv_f32_packed_free(struct qr_conv_f32_packed *pk)
{
	if (pk == NULL)
		return;
	free(pk->w);
	free(pk);
}

size_t
qr_conv_f32_workspace(const struct qr_conv_f32_packed *pk)
{
	const struct qr_conv_params *p = &pk->p;
	size_t k;

	if (pk->algo != ALGO_GEMM)
		return 0;
	if (pk->transposed)
		k = p->c_out / p->group * p->kh * p->kw;
	else
		k = p->c_in / p->group * p->kh * p->kw;
	return k * pk->nb * sizeof(float) + 64;
}

/* Fill rows [c][hw] of y with bias[c] (or zero). */
static void
fill_bias(float *y, const float *bias, size_t c, size_t hw)
{
	size_t i, j;

	for (i = 0; i < c; i++) {
		float b = bias ? bias[i] : 0.0f;

		for (j = 0; j < hw; j++)
			y[i * hw + j] = b;
	}
}

/* Depthwise: output channel co reads input channel co / mult. */
static void
run_depthwise(const struct qr_conv_f32_packed *pk, const float *x,
	      const float *bias, float *y)
{
	const struct qr_conv_params *p = &pk->p;
	size_t oh_n = qr_conv_out_h(p), ow_n = qr_conv_out_w(p);
	size_t mult = p->c_out / p->group;
	size_t n, co, oh, ki, kj;

	for (n = 0; n < p->n; n++) {
		for (co = 0; co < p->c_out; co++) {
			const float *xc = x + (n * p->c_in + co / mult) *
						      p->h * p->w;
			const float *wc = pk->w + co * p->kh * p->kw;
			float *yc = y + (n * p->c_out + co) * oh_n * ow_n;

			fill_bias(yc, bias ? bias + co : NULL, 1, oh_n * ow_n);
			for (oh = 0; oh < oh_n; oh++) {
				float *yr = yc + oh * ow_n;

				for (ki = 0; ki < p->kh; ki++) {
					size_t ihp = oh * p->stride_h +
						     ki * p->dil_h;
					const float *xr;

					if (ihp < p->pad_t ||
					    ihp - p->pad_t >= p->h)
						continue;
					xr = xc + (ihp - p->pad_t) * p->w;
					for (kj = 0; kj < p->kw; kj++) {
						float wv = wc[ki * p->kw + kj];
						size_t lo, hi, ow, off;

						valid_span(ow_n, p->stride_w,
							   p->pad_l,
							   kj * p->dil_w, p->w,
							   &lo, &hi);
						off = kj * p->dil_w - p->pad_l;
						if (p->stride_w == 1) {
							const float *xs =
								xr + off;
							for (ow = lo; ow < hi;
							     ow++)
								yr[ow] += wv *
									  xs[ow];
						} else {
							for (ow = lo; ow < hi;
							     ow++)
								yr[ow] += wv *
								    xr[ow * p->stride_w + off];
						}
					}
				}
			}
		}
	}
}

void
qr_conv_f32_run(const struct qr_conv_f32_packed *pk, const float *x,
		const float *bias, float *y, void *ws)
{
	const struct qr_conv_params *p = &pk->p;
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t ohw = qr_conv_out_h(p) * qr_conv_out_w(p), hw = p->h * p->w;
	size_t k = cin_g * p->kh * p->kw;
	float *col = ws ? qr_align64(ws) : NULL;
	size_t n, g, c0;

	QR_ASSERT(!pk->transposed);
	if (pk->algo == ALGO_DEPTHWISE) {
		run_depthwise(pk, x, bias, y);
		return;
	}
	for (n = 0; n < p->n; n++) {
		for (g = 0; g < p->group; g++) {
			const float *xg = x + (n * p->c_in + g * cin_g) * hw;
			const float *wg = pk->w + g * cout_g * k;
			float *yg = y + (n * p->c_out + g * cout_g) * ohw;

			fill_bias(yg, bias ? bias + g * cout_g : NULL, cout_g,
				  ohw);
			if (pk->algo == ALGO_POINTWISE) {
				qr_gemm_f32(0, 0, cout_g, ohw, cin_g, 1.0f, wg,
					    cin_g, xg, hw, 1.0f, yg, ohw);
				continue;
			}
			for (c0 = 0; c0 < ohw; c0 += pk->nb) {
				size_t nb = ohw - c0 < pk->nb ? ohw - c0 :
								 pk->nb;

				qr_im2col_f32(p, xg, cin_g, c0, nb, col);
				qr_gemm_f32(0, 0, cout_g, nb, k, 1.0f, wg, k,
					    col, nb, 1.0f, yg + c0, ohw);
			}
		}
	}
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
qr_convt_f32_run(const struct qr_conv_f32_packed *pk, const float *x,
		 const float *bias, float *y, void *ws)
{
	const struct qr_conv_params *p = &pk->p;
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t ohw = qr_convt_out_h(p) * qr_convt_out_w(p), hw = p->h * p->w;
	size_t k = cout_g * p->kh * p->kw;
	float *col = qr_align64(ws);
	size_t n, g, c0;

	QR_ASSERT(pk->transposed);
	for (n = 0; n < p->n; n++) {
		for (g = 0; g < p->group; g++) {
			const float *xg = x + (n * p->c_in + g * cin_g) * hw;
			const float *wg = pk->w + g * cin_g * k;
			float *yg = y + (n * p->c_out + g * cout_g) * ohw;

			fill_bias(yg, bias ? bias + g * cout_g : NULL, cout_g,
				  ohw);
			for (c0 = 0; c0 < hw; c0 += pk->nb) {
				size_t nb = hw - c0 < pk->nb ? hw - c0 : pk->nb;

				/* col = W_g^T (k x cin_g) * X_g[:, c0..] */
				qr_gemm_f32(1, 0, k, nb, cin_g, 1.0f, wg, k,
					    xg + c0, hw, 0.0f, col, nb);
				col2im_add(p, col, cout_g, c0, nb, yg);
			}
		}
	}
}
