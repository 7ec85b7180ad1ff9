/*
 * resize: Resize of the two innermost axes, nearest and linear, with the
 * coordinate transformations of the ONNX spec (operators.md, Resize).
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

float
qr_resize_coord(enum qr_resize_coord mode, size_t o, float scale,
		size_t in_len, size_t out_len)
{
	float x = (float)o;

	switch (mode) {
	case QR_COORD_HALF_PIXEL:
		return (x + 0.5f) / scale - 0.5f;
	case QR_COORD_PYTORCH_HALF_PIXEL:
		return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
	case QR_COORD_ALIGN_CORNERS:
		return out_len == 1 ? 0.0f :
				      x * (float)(in_len - 1) /
					      (float)(out_len - 1);
	case QR_COORD_TF_HALF_PIXEL_NN:
		return (x + 0.5f) / scale;
	case QR_COORD_ASYMMETRIC:
	default:
		return x / scale;
	}
}

static size_t
nearest_index(enum qr_resize_nearest m, float x, size_t in_len)
{
	float r;

	switch (m) {
	case QR_NEAREST_FLOOR:
		r = floorf(x);
		break;
	case QR_NEAREST_CEIL:
		r = ceilf(x);
		break;
	case QR_NEAREST_ROUND_PREFER_CEIL:
		/* x - floor(x) is exact, unlike x + 0.5 */
		r = x - floorf(x) >= 0.5f ? ceilf(x) : floorf(x);
		break;
	case QR_NEAREST_ROUND_PREFER_FLOOR:
	default:
		r = x - floorf(x) > 0.5f ? ceilf(x) : floorf(x);
		break;
	}
	if (!(r >= 0.0f))
		return 0;
	if (r >= (float)(in_len - 1))
		return in_len - 1;
	return (size_t)r;
}

void
qr_resize_nearest(const struct qr_resize_params *p, const void *x,
		  size_t elem_size, void *y)
{
	size_t *ih = xmalloc((p->oh ? p->oh : 1) * sizeof *ih);
	size_t *iw = xmalloc((p->ow ? p->ow : 1) * sizeof *iw);
	size_t c, i, j;

	for (i = 0; i < p->oh; i++)
		ih[i] = nearest_index(p->nearest,
				      qr_resize_coord(p->coord, i, p->scale_h,
						      p->h, p->oh),
				      p->h);
	for (j = 0; j < p->ow; j++)
		iw[j] = nearest_index(p->nearest,
				      qr_resize_coord(p->coord, j, p->scale_w,
						      p->w, p->ow),
				      p->w);
	for (c = 0; c < p->nc; c++) {
		const char *xp = (const char *)x + c * p->h * p->w * elem_size;
		char *yp = (char *)y + c * p->oh * p->ow * elem_size;

		for (i = 0; i < p->oh; i++)
			for (j = 0; j < p->ow; j++)
				memcpy(yp + (i * p->ow + j) * elem_size,
				       xp + (ih[i] * p->w + iw[j]) * elem_size,
				       elem_size);
	}
	free(ih);
	free(iw);
}

/*
 * Linear taps along one axis as ONNX Runtime's UpsampleBilinear takes
 * them: x clamped to [0, n - 1], i0 = its integer part, i1 = i0 + 1 (or
 * n - 1), and the weights w0 = |x - i1| of i0 and w1 = |x - i0| of i1,
 * both 0.5 when i0 = i1 (the last index).
 */
static void
linear_taps(float x, size_t in_len, size_t *i0, size_t *i1, float *w0,
	    float *w1)
{
	if (!(x > 0.0f))
		x = 0.0f;
	if (x > (float)(in_len - 1))
		x = (float)(in_len - 1);
	*i0 = (size_t)x;
	*i1 = *i0 + 1 < in_len ? *i0 + 1 : in_len - 1;
	*w0 = fabsf(x - (float)*i1);
	*w1 = fabsf(x - (float)*i0);
	if (*i0 == *i1)
		*w0 = *w1 = 0.5f;
}

/* Summed as ONNX Runtime does: w0y*w0x*X00 + w0y*w1x*X01 + w1y*w0x*X10 +
 * w1y*w1x*X11, each weight product taken first, left to right. */
void
qr_resize_linear_f32(const struct qr_resize_params *p, const float *x,
		     float *y)
{
	size_t *h0 = xmalloc((p->oh ? p->oh : 1) * 2 * sizeof *h0);
	size_t *w0 = xmalloc((p->ow ? p->ow : 1) * 2 * sizeof *w0);
	float *fh = xmalloc((p->oh ? p->oh : 1) * 2 * sizeof *fh);
	float *fw = xmalloc((p->ow ? p->ow : 1) * 2 * sizeof *fw);
	size_t c, i, j;

	for (i = 0; i < p->oh; i++)
		linear_taps(qr_resize_coord(p->coord, i, p->scale_h, p->h,
					    p->oh),
			    p->h, &h0[2 * i], &h0[2 * i + 1], &fh[2 * i],
			    &fh[2 * i + 1]);
	for (j = 0; j < p->ow; j++)
		linear_taps(qr_resize_coord(p->coord, j, p->scale_w, p->w,
					    p->ow),
			    p->w, &w0[2 * j], &w0[2 * j + 1], &fw[2 * j],
			    &fw[2 * j + 1]);
	for (c = 0; c < p->nc; c++) {
		const float *xp = x + c * p->h * p->w;
		float *yp = y + c * p->oh * p->ow;

		for (i = 0; i < p->oh; i++) {
			const float *r0 = xp + h0[2 * i] * p->w;
			const float *r1 = xp + h0[2 * i + 1] * p->w;
			float a0 = fh[2 * i], a1 = fh[2 * i + 1];

			for (j = 0; j < p->ow; j++) {
				size_t j0 = w0[2 * j], j1 = w0[2 * j + 1];
				float b0 = fw[2 * j], b1 = fw[2 * j + 1];

				yp[i * p->ow + j] = b0 * a0 * r0[j0] +
						    b1 * a0 * r0[j1] +
						    b0 * a1 * r1[j0] +
						    b1 * a1 * r1[j1];
			}
		}
	}
	free(h0);
	free(w0);
	free(fh);
	free(fw);
}

/* Keys' cubic convolution weight of a tap at distance t (|t| < 2). */
static float
cubic_weight(float t, float a)
{
	t = fabsf(t);
	if (t <= 1.0f)
		return ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
	if (t < 2.0f)
		return ((a * t - 5.0f * a) * t + 8.0f * a) * t - 4.0f * a;
	return 0.0f;
}

/* The 4 taps of every output index along one axis: idx[4 * o + k] and
 * w[4 * o + k] for k = 0..3 (input floor(x) - 1 + k). */
static void
cubic_taps(const struct qr_resize_params *p, size_t out_len, size_t in_len,
	   float scale, size_t *idx, float *w)
{
	size_t o;
	int k;

	for (o = 0; o < out_len; o++) {
		float x = qr_resize_coord(p->coord, o, scale, in_len, out_len);
		float fl = floorf(x), ratio = x - fl, sum = 0.0f;

		for (k = 0; k < 4; k++) {
			float at = fl - 1.0f + (float)k;
			float wk = cubic_weight(ratio + 1.0f - (float)k,
						p->cubic_a);

			if (!(at >= 0.0f && at <= (float)(in_len - 1))) {
				if (p->exclude_outside)
					wk = 0.0f;
				at = at > 0.0f ? (float)(in_len - 1) : 0.0f;
			}
			idx[4 * o + (size_t)k] = (size_t)at;
			w[4 * o + (size_t)k] = wk;
			sum += wk;
		}
		for (k = 0; p->exclude_outside && sum != 0.0f && k < 4; k++)
			w[4 * o + (size_t)k] /= sum;
	}
}

void
qr_resize_cubic_f32(const struct qr_resize_params *p, const float *x,
		    float *y)
{
	size_t *ih = xmalloc(4 * (p->oh ? p->oh : 1) * sizeof *ih);
	size_t *iw = xmalloc(4 * (p->ow ? p->ow : 1) * sizeof *iw);
	float *fh = xmalloc(4 * (p->oh ? p->oh : 1) * sizeof *fh);
	float *fw = xmalloc(4 * (p->ow ? p->ow : 1) * sizeof *fw);
	size_t c, i, j, k;

	cubic_taps(p, p->oh, p->h, p->scale_h, ih, fh);
	cubic_taps(p, p->ow, p->w, p->scale_w, iw, fw);
	for (c = 0; c < p->nc; c++) {
		const float *xp = x + c * p->h * p->w;
		float *yp = y + c * p->oh * p->ow;

		for (i = 0; i < p->oh; i++)
			for (j = 0; j < p->ow; j++) {
				float acc = 0.0f;

				for (k = 0; k < 4; k++) {
					const float *row = xp + ih[4 * i + k] *
								p->w;
					float r = 0.0f;
					size_t m;

					for (m = 0; m < 4; m++)
						r += fw[4 * j + m] *
						     row[iw[4 * j + m]];
					acc += fh[4 * i + k] * r;
				}
				yp[i * p->ow + j] = acc;
			}
	}
	free(ih);
	free(iw);
	free(fh);
	free(fw);
}

/* ---- GridSample ---- */

/* A normalized coordinate in [-1, 1] as a pixel position along len. */
static float
grid_denorm(float v, size_t len, int align)
{
	return align ? (v + 1.0f) / 2.0f * (float)(len - 1)
		     : ((v + 1.0f) * (float)len - 1.0f) / 2.0f;
}

/* v reflected into [lo, hi] (as many times as it takes). */
static float
grid_reflect(float v, float lo, float hi)
{
	float range = hi - lo, d, flips, r;

	if (range <= 0.0f)
		return lo;
	if (v >= lo && v <= hi)
		return v;
	d = v < lo ? lo - v : v - hi;
	flips = floorf(d / range);
	r = d - flips * range;
	if (fmodf(flips, 2.0f) == 0.0f)
		return v < lo ? lo + r : hi - r;
	return v < lo ? hi - r : lo + r;
}

/* A pixel position kept where its taps still read what they would (the
 * 4 cubic taps reach 2 past it), NaN and huge values included, so that
 * it converts to an integer safely. */
static float
grid_safe(float v, size_t len)
{
	if (!(v >= -4.0f))
		return -4.0f;
	return v > (float)len + 3.0f ? (float)len + 3.0f : v;
}

/* The pixel at integer (r, c) of one plane, with the padding rule. */
static float
grid_pixel(const struct qr_grid_params *p, const float *plane, long r,
	   long c)
{
	long h = (long)p->h, w = (long)p->w;

	if (p->pad == QR_GRID_ZEROS) {
		if (r < 0 || r >= h || c < 0 || c >= w)
			return 0.0f;
	} else {
		if (p->pad == QR_GRID_REFLECTION) {
			float lo = p->align_corners ? 0.0f : -0.5f;

			c = (long)grid_reflect((float)c, lo,
					       (float)(w - 1) - lo);
			r = (long)grid_reflect((float)r, lo,
					       (float)(h - 1) - lo);
		}
		c = c < 0 ? 0 : c >= w ? w - 1 : c;
		r = r < 0 ? 0 : r >= h ? h - 1 : r;
	}
	return plane[r * w + c];
}

/* Keys' cubic with a = -0.75, the 4 weights of taps at -1..2 around
 * fraction t. */
static void
grid_cubic_w(float t, float *w)
{
	const float a = -0.75f;
	float x;

	x = t + 1.0f;
	w[0] = ((a * x - 5.0f * a) * x + 8.0f * a) * x - 4.0f * a;
	x = t;
	w[1] = ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
	x = 1.0f - t;
	w[2] = ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
	x = 2.0f - t;
	w[3] = ((a * x - 5.0f * a) * x + 8.0f * a) * x - 4.0f * a;
}

void
qr_grid_sample_f32(const struct qr_grid_params *p, const float *x,
		   const float *grid, float *y)
{
	size_t b, ch, i;
	float lo_x = p->align_corners ? 0.0f : -0.5f;
	float hi_x = (float)(p->w - 1) - lo_x, hi_y = (float)(p->h - 1) - lo_x;

	for (b = 0; b < p->n; b++)
		for (i = 0; i < p->oh * p->ow; i++) {
			const float *g = grid + (b * p->oh * p->ow + i) * 2;
			float gx = grid_denorm(g[0], p->w, p->align_corners);
			float gy = grid_denorm(g[1], p->h, p->align_corners);

			/* cubic clamps each tap instead (as ONNX Runtime
			 * and PyTorch do) */
			if (p->pad == QR_GRID_BORDER &&
			    p->mode != QR_GRID_CUBIC) {
				gx = gx < 0 ? 0 : gx > (float)(p->w - 1) ?
					(float)(p->w - 1) : gx;
				gy = gy < 0 ? 0 : gy > (float)(p->h - 1) ?
					(float)(p->h - 1) : gy;
			} else if (p->pad == QR_GRID_REFLECTION) {
				gx = grid_reflect(gx, lo_x, hi_x);
				gy = grid_reflect(gy, lo_x, hi_y);
			}
			gx = grid_safe(gx, p->w);
			gy = grid_safe(gy, p->h);
			for (ch = 0; ch < p->c; ch++) {
				const float *pl = x + (b * p->c + ch) * p->h *
							      p->w;
				float *out = y + (b * p->c + ch) * p->oh *
							 p->ow + i;

				if (p->mode == QR_GRID_NEAREST) {
					*out = grid_pixel(p, pl,
							  (long)nearbyintf(gy),
							  (long)nearbyintf(gx));
				} else if (p->mode == QR_GRID_LINEAR) {
					float fx = floorf(gx), fy = floorf(gy);
					float dx = gx - fx, dy = gy - fy;
					long c0 = (long)fx, r0 = (long)fy;
					float p00 = grid_pixel(p, pl, r0, c0);
					float p01 = grid_pixel(p, pl, r0, c0 + 1);
					float p10 = grid_pixel(p, pl, r0 + 1, c0);
					float p11 = grid_pixel(p, pl, r0 + 1,
							       c0 + 1);

					*out = (1.0f - dy) * ((1.0f - dx) * p00 +
							      dx * p01) +
					       dy * ((1.0f - dx) * p10 + dx * p11);
				} else {
					float fx = floorf(gx), fy = floorf(gy);
					float wx[4], wy[4], acc = 0.0f;
					int k, m;

					grid_cubic_w(gx - fx, wx);
					grid_cubic_w(gy - fy, wy);
					for (k = 0; k < 4; k++) {
						float r = 0.0f;

						for (m = 0; m < 4; m++)
							r += wx[m] * grid_pixel(
								p, pl,
								(long)fy - 1 + k,
								(long)fx - 1 + m);
						acc += wy[k] * r;
					}
					*out = acc;
				}
			}
		}
}
