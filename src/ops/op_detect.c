/*
 * op_detect: the post-processing of object detectors.
 *
 *   NonMaxSuppression (opset 10 on)
 *       boxes [B, N, 4], scores [B, C, N], max_output_boxes_per_class
 *       (int64, default 0: nothing kept), iou_threshold (default 0),
 *       score_threshold (default none). Per batch and class: the boxes
 *       scoring above score_threshold, best first (ties: lower box index
 *       first), each kept unless its IoU with a box kept before is above
 *       iou_threshold, at most max_output_boxes_per_class of them.
 *       Output [K, 3] int64 rows (batch, class, box), batch by batch,
 *       class by class, in the order kept. center_point_box 0: a box is
 *       two opposite corners [y1, x1, y2, x2] in any order; 1: [x_center,
 *       y_center, width, height]. Boxes that do not overlap, or have no
 *       area, never suppress each other (as ONNX Runtime decides).
 *
 *   RoiAlign (opset 10 on)
 *       X [N,C,H,W], rois [R,4] (x1, y1, x2, y2 in input pixels before
 *       spatial_scale), batch_indices [R] -> [R,C,output_height,
 *       output_width]. Each bin averages (mode avg) or takes the largest
 *       of (mode max) sampling_ratio^2 bilinear samples, or
 *       ceil(roi size / bins) per axis when sampling_ratio is 0.
 *       coordinate_transformation_mode half_pixel (opset 16's default)
 *       shifts the roi by -0.5 pixel; output_half_pixel (opset 10's
 *       only behaviour) does not and makes every roi at least 1x1.
 *       Samples more than a pixel outside X count 0. In max mode each
 *       sample is the largest of its four weighted corners, as ONNX
 *       Runtime computes it.
 *
 * NonMaxSuppression's output length depends on the values, so infer
 * runs the selection to count it and run runs it again to write it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"

enum { N_BOXES, N_SCORES, N_MAX, N_IOU, N_SCORE };

static enum qr_status
nms_check(const struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status st;
	int64_t cpb = qr_op_attr_int(c, "center_point_box", 0);

	if ((st = qr_op_arity(c, d, 2, 5, 1, 1)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, N_BOXES, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, N_SCORES, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, N_MAX, QR_DTM(QR_DT_INT64))) !=
		    QR_OK ||
	    (st = qr_op_want_dtype(c, d, N_IOU, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, N_SCORE, QR_DTM_FLOAT)) != QR_OK)
		return st;
	if (cpb != 0 && cpb != 1)
		return qr_op_errorf(c, d, QR_EGRAPH, "center_point_box must "
				    "be 0 or 1, not %lld", (long long)cpb);
	c->out_dtype[0] = QR_DT_INT64;
	return QR_OK;
}

/* A box as its corners. */
struct box {
	float x0, y0, x1, y1;
};

static struct box
box_at(const float *b, int center)
{
	struct box r;

	if (center) {
		float hw = b[2] / 2.0f, hh = b[3] / 2.0f;

		r.x0 = b[0] - hw, r.x1 = b[0] + hw;
		r.y0 = b[1] - hh, r.y1 = b[1] + hh;
	} else {
		r.y0 = b[0] < b[2] ? b[0] : b[2], r.y1 = b[0] < b[2] ? b[2] : b[0];
		r.x0 = b[1] < b[3] ? b[1] : b[3], r.x1 = b[1] < b[3] ? b[3] : b[1];
	}
	return r;
}

struct cand {
	float score;
	size_t i;
};

/* best score first, then the lower index */
static int
cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* Input i as one value (its first), or dflt when absent or empty. */
static double
scalar_in(const struct qr_op_call *c, size_t i, double dflt)
{
	if (!qr_op_has_in(c, i) || c->in[i]->n_elem == 0)
		return dflt;
	return qr_op_get(c->in[i], 0);
}

/*
 * The selection: its row count into *n, and the rows into y when y is
 * not NULL (it then holds *n rows from an earlier count).
 */
static enum qr_status
nms(const struct qr_op_call *c, struct qr_diag *d, int64_t *y, size_t *n)
{
	const struct qr_tensor *bx = c->in[N_BOXES], *sc = c->in[N_SCORES];
	int center = qr_op_attr_int(c, "center_point_box", 0) != 0;
	double max_out = scalar_in(c, N_MAX, 0);
	float iou = (float)scalar_in(c, N_IOU, 0);
	int has_thr = qr_op_has_in(c, N_SCORE) && c->in[N_SCORE]->n_elem > 0;
	float thr = (float)scalar_in(c, N_SCORE, 0);
	size_t nb, nc, nbox, b, k, i, kept, cap;
	struct cand *cd;
	struct qr_boxes keep;
	float *col;
	char s1[128], s2[128];

	*n = 0;
	if (bx->ndim != 3 || bx->dims[2] != 4 || sc->ndim != 3 ||
	    sc->dims[0] != bx->dims[0] || sc->dims[2] != bx->dims[1])
		return qr_op_errorf(c, d, QR_ESHAPE, "boxes '%s' %s and scores "
				    "'%s' %s must be [B,N,4] and [B,C,N]",
				    qr_op_in_name(c, N_BOXES),
				    qr_shape_str(bx, s1, sizeof s1),
				    qr_op_in_name(c, N_SCORES),
				    qr_shape_str(sc, s2, sizeof s2));
	if (iou < 0.0f || iou > 1.0f)
		return qr_op_errorf(c, d, QR_EGRAPH, "iou_threshold %g is not "
				    "in [0, 1]", (double)iou);
	nb = (size_t)bx->dims[0];
	nc = (size_t)sc->dims[1];
	nbox = (size_t)bx->dims[1];
	cap = max_out <= 0 ? 0 : max_out < (double)nbox ? (size_t)max_out :
							 nbox;
	if (cap == 0)
		return QR_OK;
	cd = xmalloc(nbox * sizeof *cd);
	col = xmalloc(5 * cap * sizeof *col);
	keep.x0 = col, keep.y0 = col + cap, keep.x1 = col + 2 * cap;
	keep.y1 = col + 3 * cap, keep.area = col + 4 * cap;
	for (b = 0; b < nb; b++)
		for (k = 0; k < nc; k++) {
			const float *s = (const float *)sc->data +
					 (b * nc + k) * nbox;
			const float *bb = (const float *)bx->data +
					  b * nbox * 4;
			size_t m = 0;

			for (i = 0; i < nbox; i++)
				if (!has_thr || s[i] > thr) {
					cd[m].score = s[i];
					cd[m++].i = i;
				}
			qsort(cd, m, sizeof *cd, cand_cmp);
			for (i = 0, kept = 0; i < m && kept < cap; i++) {
				struct box cur = box_at(bb + cd[i].i * 4,
							center);
				float c4[4] = {cur.x0, cur.y0, cur.x1,
					       cur.y1};

				if (qr_box_suppressed(&keep, kept, c4, iou))
					continue;
				keep.x0[kept] = cur.x0, keep.y0[kept] = cur.y0;
				keep.x1[kept] = cur.x1, keep.y1[kept] = cur.y1;
				keep.area[kept++] = qr_box_area(c4);
				if (y != NULL) {
					y[*n * 3] = (int64_t)b;
					y[*n * 3 + 1] = (int64_t)k;
					y[*n * 3 + 2] = (int64_t)cd[i].i;
				}
				(*n)++;
			}
		}
	free(cd);
	free(col);
	return QR_OK;
}

static enum qr_status
nms_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[2];
	size_t n;
	enum qr_status st;

	if ((st = nms(c, d, NULL, &n)) != QR_OK)
		return st;
	dims[0] = (int64_t)n;
	dims[1] = 3;
	return qr_tensor_set_shape(c->out[0], QR_DT_INT64, 2, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
nms_run(struct qr_op_call *c, struct qr_diag *d)
{
	size_t n;

	return nms(c, d, c->out[0]->data, &n);
}

const struct qr_op_desc qr_op_non_max_suppression = {
	.domain = "", .name = "NonMaxSuppression", .since = 10,
	.check = nms_check, .infer = nms_infer, .run = nms_run,
};

/* ---- RoiAlign ---- */

enum { R_X, R_ROIS, R_BATCH };

#define MAX_SAMPLES (1ul << 28) /* bilinear samples of one roi's bins */

/* The attributes, as at check and at run. */
struct roi_attrs {
	int max_mode, half_pixel, sampling;
	int64_t oh, ow;
	float scale;
};

static enum qr_status
roi_attrs(const struct qr_op_call *c, struct qr_diag *d, struct roi_attrs *a)
{
	const char *mode = qr_op_attr_str(c, "mode", "avg");
	const char *ct = qr_op_attr_str(c, "coordinate_transformation_mode",
					c->opset >= 16 ? "half_pixel" :
							 "output_half_pixel");
	int64_t sr = qr_op_attr_int(c, "sampling_ratio", 0);

	a->oh = qr_op_attr_int(c, "output_height", 1);
	a->ow = qr_op_attr_int(c, "output_width", 1);
	a->scale = qr_op_attr_float(c, "spatial_scale", 1.0f);
	if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "mode '%s' is not avg or "
				    "max", mode);
	if (strcmp(ct, "half_pixel") != 0 &&
	    strcmp(ct, "output_half_pixel") != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "coordinate_"
				    "transformation_mode '%s' is not "
				    "half_pixel or output_half_pixel", ct);
	if (a->oh < 1 || a->ow < 1 || a->oh > 65536 || a->ow > 65536 ||
	    sr < 0 || sr > 65536)
		return qr_op_errorf(c, d, QR_EGRAPH, "output_height %lld, "
				    "output_width %lld and sampling_ratio %lld "
				    "must be positive (sampling_ratio may be "
				    "0) and at most 65536", (long long)a->oh,
				    (long long)a->ow, (long long)sr);
	a->max_mode = mode[0] == 'm';
	a->half_pixel = strcmp(ct, "half_pixel") == 0;
	a->sampling = (int)sr;
	return QR_OK;
}

static enum qr_status
roi_check(const struct qr_op_call *c, struct qr_diag *d)
{
	struct roi_attrs a;
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 3, 3, 1, 1)) != QR_OK ||
	    (st = roi_attrs(c, d, &a)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, R_X, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, R_ROIS, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, R_BATCH, QR_DTM_INDEX)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

static enum qr_status
roi_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[R_X], *r = c->in[R_ROIS];
	const struct qr_tensor *bi = c->in[R_BATCH];
	struct roi_attrs a;
	int64_t dims[4];
	enum qr_status st;
	char s1[128], s2[128];

	if ((st = roi_attrs(c, d, &a)) != QR_OK)
		return st;
	if (x->ndim != 4 || r->ndim != 2 || r->dims[1] != 4 ||
	    bi->ndim != 1 || bi->dims[0] != r->dims[0])
		return qr_op_errorf(c, d, QR_ESHAPE, "X '%s' %s, rois %s and "
				    "batch_indices must be [N,C,H,W], [R,4] "
				    "and [R]", qr_op_in_name(c, R_X),
				    qr_shape_str(x, s1, sizeof s1),
				    qr_shape_str(r, s2, sizeof s2));
	dims[0] = r->dims[0];
	dims[1] = x->dims[1];
	dims[2] = a.oh;
	dims[3] = a.ow;
	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, 4, dims,
				   qr_op_out_name(c, 0), d);
}

/* One bilinear sample of plane p (h x w) at (y, x), 0 outside; in max
 * mode the largest weighted corner instead of their sum. */
static float
roi_sample(const float *p, size_t h, size_t w, float y, float x, int max_mode)
{
	size_t y0, x0, y1, x1;
	float ly, lx, hy, hx, v[4];

	if (!(y >= -1.0f && y <= (float)h && x >= -1.0f && x <= (float)w))
		return 0.0f;
	y = y > 0.0f ? y : 0.0f;
	x = x > 0.0f ? x : 0.0f;
	y0 = (size_t)y;
	x0 = (size_t)x;
	if (y0 >= h - 1) {
		y0 = y1 = h - 1;
		y = (float)y0;
	} else {
		y1 = y0 + 1;
	}
	if (x0 >= w - 1) {
		x0 = x1 = w - 1;
		x = (float)x0;
	} else {
		x1 = x0 + 1;
	}
	ly = y - (float)y0, lx = x - (float)x0;
	hy = 1.0f - ly, hx = 1.0f - lx;
	v[0] = hy * hx * p[y0 * w + x0];
	v[1] = hy * lx * p[y0 * w + x1];
	v[2] = ly * hx * p[y1 * w + x0];
	v[3] = ly * lx * p[y1 * w + x1];
	if (!max_mode)
		return v[0] + v[1] + v[2] + v[3];
	return fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
}

static enum qr_status
roi_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[R_X], *rt = c->in[R_ROIS];
	const float *rois = rt->data;
	struct roi_attrs a;
	size_t nr = (size_t)rt->dims[0], nc = (size_t)x->dims[1];
	size_t h = (size_t)x->dims[2], w = (size_t)x->dims[3], r, ch;
	float *y = c->out[0]->data;
	float off;
	enum qr_status st;

	if ((st = roi_attrs(c, d, &a)) != QR_OK)
		return st;
	off = a.half_pixel ? 0.5f : 0.0f;
	for (r = 0; r < nr; r++) {
		int64_t b = (int64_t)qr_op_get(c->in[R_BATCH], r);
		const float *q = rois + r * 4;
		float x0 = q[0] * a.scale - off, y0 = q[1] * a.scale - off;
		float rw = q[2] * a.scale - off - x0;
		float rh = q[3] * a.scale - off - y0;
		float bw, bh, fh, fw;
		int64_t gh, gw, ph, pw, iy, ix;

		if (b < 0 || b >= x->dims[0])
			return qr_op_errorf(c, d, QR_ESHAPE, "batch index "
					    "%lld of roi %zu is outside 0..%lld",
					    (long long)b, r,
					    (long long)x->dims[0] - 1);
		if (!a.half_pixel) {
			rw = rw > 1.0f ? rw : 1.0f;
			rh = rh > 1.0f ? rh : 1.0f;
		}
		bh = rh / (float)a.oh;
		bw = rw / (float)a.ow;
		fh = a.sampling > 0 ? (float)a.sampling :
		     ceilf(rh / (float)a.oh);
		fw = a.sampling > 0 ? (float)a.sampling :
		     ceilf(rw / (float)a.ow);
		/* an empty or inverted roi takes no samples; a hostile one
		 * must not ask for billions */
		fh = fh > 0.0f ? fh : 0.0f;
		fw = fw > 0.0f ? fw : 0.0f;
		if (!(fh <= (float)MAX_SAMPLES && fw <= (float)MAX_SAMPLES &&
		      fh * fw * (float)(a.oh * a.ow) <= (float)MAX_SAMPLES))
			return qr_op_errorf(c, d, QR_EUNSUPPORTED, "roi %zu "
					    "(%g x %g) asks for more than %lu "
					    "samples", r, (double)rw,
					    (double)rh, (unsigned long)MAX_SAMPLES);
		gh = (int64_t)fh;
		gw = (int64_t)fw;
		for (ch = 0; ch < nc; ch++) {
			const float *p = (const float *)x->data +
					 ((size_t)b * nc + ch) * h * w;

			for (ph = 0; ph < a.oh; ph++)
				for (pw = 0; pw < a.ow; pw++) {
					float acc = 0.0f;
					int first = 1;

					for (iy = 0; iy < gh; iy++) {
						float sy = y0 + (float)ph * bh +
							   ((float)iy + 0.5f) *
							   bh / (float)gh;

						for (ix = 0; ix < gw; ix++) {
							float sx = x0 +
								(float)pw * bw +
								((float)ix + 0.5f) *
								bw / (float)gw;
							float v = roi_sample(
								p, h, w, sy, sx,
								a.max_mode);

							if (!a.max_mode)
								acc += v;
							else if (first || v > acc)
								acc = v;
							first = 0;
						}
					}
					if (!a.max_mode && gh * gw > 0)
						acc /= (float)(gh * gw);
					*y++ = acc;
				}
		}
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_roi_align = {
	.domain = "", .name = "RoiAlign", .since = 10,
	.check = roi_check, .infer = roi_infer, .run = roi_run,
};
