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

/* Linear taps along one axis: indices i0, i1 and weight of i1. */
static void
linear_taps(float x, size_t in_len, size_t *i0, size_t *i1, float *f)
{
	float fl;

	if (x < 0.0f)
		x = 0.0f;
	if (x > (float)(in_len - 1))
		x = (float)(in_len - 1);
	fl = floorf(x);
	*i0 = (size_t)fl;
	*i1 = *i0 + 1 < in_len ? *i0 + 1 : in_len - 1;
	*f = x - fl;
}

void
qr_resize_linear_f32(const struct qr_resize_params *p, const float *x,
		     float *y)
{
	size_t *h0 = xmalloc((p->oh ? p->oh : 1) * 2 * sizeof *h0);
	size_t *w0 = xmalloc((p->ow ? p->ow : 1) * 2 * sizeof *w0);
	float *fh = xmalloc((p->oh ? p->oh : 1) * sizeof *fh);
	float *fw = xmalloc((p->ow ? p->ow : 1) * sizeof *fw);
	size_t c, i, j;

	for (i = 0; i < p->oh; i++)
		linear_taps(qr_resize_coord(p->coord, i, p->scale_h, p->h,
					    p->oh),
			    p->h, &h0[2 * i], &h0[2 * i + 1], &fh[i]);
	for (j = 0; j < p->ow; j++)
		linear_taps(qr_resize_coord(p->coord, j, p->scale_w, p->w,
					    p->ow),
			    p->w, &w0[2 * j], &w0[2 * j + 1], &fw[j]);
	for (c = 0; c < p->nc; c++) {
		const float *xp = x + c * p->h * p->w;
		float *yp = y + c * p->oh * p->ow;

		for (i = 0; i < p->oh; i++) {
			const float *r0 = xp + h0[2 * i] * p->w;
			const float *r1 = xp + h0[2 * i + 1] * p->w;
			float a = fh[i];

			for (j = 0; j < p->ow; j++) {
				size_t j0 = w0[2 * j], j1 = w0[2 * j + 1];
				float b = fw[j];
				float top = r0[j0] * (1.0f - b) + r0[j1] * b;
				float bot = r1[j0] * (1.0f - b) + r1[j1] * b;

				yp[i * p->ow + j] = top * (1.0f - a) + bot * a;
			}
		}
	}
	free(h0);
	free(w0);
	free(fh);
	free(fw);
}
