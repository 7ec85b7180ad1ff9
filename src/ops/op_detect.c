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

/* Where one bilinear sample reads a plane, and the weight of each of its
 * four corners; valid 0 outside the plane (the sample is then 0). */
struct roi_pt {
	size_t at[4];
	float wt[4];
	int valid;
};

/* The sample of an h x w plane at (y, x). */
static void
roi_point(size_t h, size_t w, float y, float x, struct roi_pt *pt)
{
	size_t y0, x0, y1, x1;
	float ly, lx, hy, hx;

	pt->valid = h > 0 && w > 0 && y >= -1.0f && y <= (float)h &&
		    x >= -1.0f && x <= (float)w; /* an empty plane reads 0 */
	if (!pt->valid)
		return;
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
	pt->at[0] = y0 * w + x0, pt->wt[0] = hy * hx;
	pt->at[1] = y0 * w + x1, pt->wt[1] = hy * lx;
	pt->at[2] = y1 * w + x0, pt->wt[2] = ly * hx;
	pt->at[3] = y1 * w + x1, pt->wt[3] = ly * lx;
}

/* The sample pt of plane p: the weighted corners' sum, or in max mode
 * the largest weighted corner. */
static float
roi_value(const float *p, const struct roi_pt *pt, int max_mode)
{
	float v[4];
	int i;

	if (!pt->valid)
		return 0.0f;
	for (i = 0; i < 4; i++)
		v[i] = pt->wt[i] * p[pt->at[i]];
	if (!max_mode)
		return v[0] + v[1] + v[2] + v[3];
	return fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3]));
}

/* One roi's sampling grid on plane set b (h x w planes): bins of bh x bw
 * from (y0, x0), gh x gw samples a bin. */
struct roi_geom {
	float y0, x0, bh, bw;
	int64_t gh, gw;
	size_t h, w, b;
};

/* Sample (iy, ix) of bin (ph, pw). */
static void
roi_sample_at(const struct roi_geom *g, int64_t ph, int64_t pw, int64_t iy,
	      int64_t ix, struct roi_pt *pt)
{
	float sy = g->y0 + (float)ph * g->bh +
		   ((float)iy + 0.5f) * g->bh / (float)g->gh;
	float sx = g->x0 + (float)pw * g->bw +
		   ((float)ix + 0.5f) * g->bw / (float)g->gw;

	roi_point(g->h, g->w, sy, sx, pt);
}

/* Bin (ph, pw) of plane p: the mean (or max) of its samples in row
 * order, read from pts (the bin's gh * gw samples) or worked out here
 * when pts is NULL. */
static float
roi_bin(const float *p, const struct roi_geom *g, const struct roi_pt *pts,
	int64_t ph, int64_t pw, int max_mode)
{
	float acc = 0.0f;
	int64_t iy, ix, n = g->gh * g->gw;

	for (iy = 0; iy < g->gh; iy++)
		for (ix = 0; ix < g->gw; ix++) {
			struct roi_pt one;
			float v;

			if (pts == NULL)
				roi_sample_at(g, ph, pw, iy, ix, &one);
			v = roi_value(p, pts ? &pts[iy * g->gw + ix] : &one,
				      max_mode);
			if (!max_mode)
				acc += v;
			else if ((iy == 0 && ix == 0) || v > acc)
				acc = v;
		}
	if (!max_mode && n > 0)
		acc /= (float)n;
	return acc;
}

/* Samples of one roi worked out once for all its channels, as ONNX
 * Runtime does, up to this many (past it, at each channel). */
#define ROI_PRECALC_MAX (1ul << 20)

/* The rois, split among threads. */
struct roi_job {
	const struct qr_op_call *c;
	const struct roi_attrs *a;
	const struct roi_geom *g; /* one per roi */
	size_t nr, n_tasks;
};

static void
roi_task(void *ctx, size_t t, int slot)
{
	const struct roi_job *j = ctx;
	const struct qr_tensor *x = j->c->in[R_X];
	const struct roi_attrs *a = j->a;
	size_t nc = (size_t)x->dims[1], lo, hi, r, ch, k;
	size_t bins = (size_t)(a->oh * a->ow), cap = 0;
	struct roi_pt *buf = NULL, *pts;

	(void)slot;
	qr_parallel_range(j->nr, t, j->n_tasks, 1, &lo, &hi);
	for (r = lo; r < hi; r++) {
		const struct roi_geom *g = &j->g[r];
		size_t bin_pts = (size_t)(g->gh * g->gw);
		float *y = (float *)j->c->out[0]->data + r * nc * bins;
		int64_t ph, pw, iy, ix;

		pts = NULL;
		if (bins * bin_pts <= ROI_PRECALC_MAX) {
			/* one buffer for the task's rois, grown as needed */
			if (bins * bin_pts + 1 > cap) {
				cap = bins * bin_pts + 1;
				free(buf);
				buf = xreallocarray(NULL, cap, sizeof *buf);
			}
			pts = buf;
			k = 0;
			for (ph = 0; ph < a->oh; ph++)
				for (pw = 0; pw < a->ow; pw++)
					for (iy = 0; iy < g->gh; iy++)
						for (ix = 0; ix < g->gw; ix++)
							roi_sample_at(g, ph, pw,
								      iy, ix,
								      &pts[k++]);
		}
		for (ch = 0; ch < nc; ch++) {
			const float *p = (const float *)x->data +
					 (g->b * nc + ch) * g->h * g->w;

			for (ph = 0, k = 0; ph < a->oh; ph++)
				for (pw = 0; pw < a->ow; pw++, k += bin_pts)
					*y++ = roi_bin(p, g, pts ? pts + k :
						       NULL, ph, pw,
						       a->max_mode);
		}
	}
	free(buf);
}

/* Check every roi and work out its grid, then pool the rois in parallel
 * (each output depends on its roi alone). */
static enum qr_status
roi_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[R_X], *rt = c->in[R_ROIS];
	const float *rois = rt->data;
	struct roi_attrs a;
	struct roi_geom *geo;
	struct roi_job job;
	size_t nr = (size_t)rt->dims[0], r;
	enum qr_status st = QR_OK;
	float off;

	if ((st = roi_attrs(c, d, &a)) != QR_OK)
		return st;
	off = a.half_pixel ? 0.5f : 0.0f;
	geo = xreallocarray(NULL, nr + 1, sizeof *geo);
	for (r = 0; r < nr; r++) {
		int64_t b = (int64_t)qr_op_get(c->in[R_BATCH], r);
		const float *q = rois + r * 4;
		struct roi_geom *g = &geo[r];
		float rw, rh, fh, fw;

		if (b < 0 || b >= x->dims[0]) {
			st = qr_op_errorf(c, d, QR_ESHAPE, "batch index %lld "
					  "of roi %zu is outside 0..%lld",
					  (long long)b, r,
					  (long long)x->dims[0] - 1);
			break;
		}
		g->x0 = q[0] * a.scale - off, g->y0 = q[1] * a.scale - off;
		rw = q[2] * a.scale - off - g->x0;
		rh = q[3] * a.scale - off - g->y0;
		if (!a.half_pixel) {
			rw = rw > 1.0f ? rw : 1.0f;
			rh = rh > 1.0f ? rh : 1.0f;
		}
		g->bh = rh / (float)a.oh;
		g->bw = rw / (float)a.ow;
		fh = a.sampling > 0 ? (float)a.sampling :
		     ceilf(rh / (float)a.oh);
		fw = a.sampling > 0 ? (float)a.sampling :
		     ceilf(rw / (float)a.ow);
		/* an empty or inverted roi takes no samples; a hostile one
		 * must not ask for billions */
		fh = fh > 0.0f ? fh : 0.0f;
		fw = fw > 0.0f ? fw : 0.0f;
		if (!(fh <= (float)MAX_SAMPLES && fw <= (float)MAX_SAMPLES &&
		      fh * fw * (float)(a.oh * a.ow) <= (float)MAX_SAMPLES)) {
			st = qr_op_errorf(c, d, QR_EUNSUPPORTED, "roi %zu "
					  "(%g x %g) asks for more than %lu "
					  "samples", r, (double)rw, (double)rh,
					  (unsigned long)MAX_SAMPLES);
			break;
		}
		g->gh = (int64_t)fh;
		g->gw = (int64_t)fw;
		g->h = (size_t)x->dims[2], g->w = (size_t)x->dims[3];
		g->b = (size_t)b;
	}
	if (st == QR_OK) {
		job.c = c, job.a = &a, job.g = geo, job.nr = nr;
		job.n_tasks = nr < 4 * (size_t)c->n_threads ? nr :
			      4 * (size_t)c->n_threads;
		qr_parallel_for(c->n_threads, job.n_tasks, roi_task, &job);
	}
	free(geo);
	return st;
}

const struct qr_op_desc qr_op_roi_align = {
	.domain = "", .name = "RoiAlign", .since = 10,
	.check = roi_check, .infer = roi_infer, .run = roi_run,
};
