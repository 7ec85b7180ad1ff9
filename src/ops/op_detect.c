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
 * The output's length depends on the values, so infer runs the
 * selection to count it and run runs it again to write it.
 */
#include <stdlib.h>
#include <string.h>

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

/* 1 when a and b overlap by more than thr (intersection over union). */
static int
suppresses(const struct box *a, const struct box *b, float thr)
{
	float ix0 = a->x0 > b->x0 ? a->x0 : b->x0;
	float iy0 = a->y0 > b->y0 ? a->y0 : b->y0;
	float ix1 = a->x1 < b->x1 ? a->x1 : b->x1;
	float iy1 = a->y1 < b->y1 ? a->y1 : b->y1;
	float iw = ix1 - ix0 > 0.0f ? ix1 - ix0 : 0.0f;
	float ih = iy1 - iy0 > 0.0f ? iy1 - iy0 : 0.0f;
	float inter = iw * ih, area_a, area_b, uni;

	if (inter <= 0.0f)
		return 0;
	area_a = (a->x1 - a->x0) * (a->y1 - a->y0);
	area_b = (b->x1 - b->x0) * (b->y1 - b->y0);
	uni = area_a + area_b - inter;
	if (area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f)
		return 0;
	return inter / uni > thr;
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
	size_t nb, nc, nbox, b, k, i, j, kept, cap;
	struct cand *cd;
	struct box *keep;
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
	keep = xmalloc(cap * sizeof *keep);
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

				for (j = 0; j < kept; j++)
					if (suppresses(&keep[j], &cur, iou))
						break;
				if (j < kept)
					continue;
				keep[kept++] = cur;
				if (y != NULL) {
					y[*n * 3] = (int64_t)b;
					y[*n * 3 + 1] = (int64_t)k;
					y[*n * 3 + 2] = (int64_t)cd[i].i;
				}
				(*n)++;
			}
		}
	free(cd);
	free(keep);
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
