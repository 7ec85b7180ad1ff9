/*
 * op_resize: Resize (opsets 10 to 18) and Upsample (opsets 7 and 9),
 * modes nearest (any dtype, exact), linear and cubic (float), resizing
 * the two innermost axes; every outer axis must keep its size. And
 * GridSample (opset 16; 2-D): X [N,C,H,W] sampled at grid [N,Ho,Wo,2]
 * of normalized (x, y), modes (bi)linear, nearest (halves to even) and
 * (bi)cubic (a = -0.75), padding zeros, border or reflection (as often
 * as it takes), align_corners.
 *
 * Resize-10 and Upsample have no coordinate_transformation_mode: they
 * map output index o to o / scale (asymmetric) and, as ONNX Runtime's
 * "simple" nearest mode, take floor(x) when upsampling an axis and
 * ceil(x) when downsampling it. Not supported (refused at check):
 * tf_crop_and_resize, half_pixel_symmetric, antialias and
 * keep_aspect_ratio_policy other than stretch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

/* Attributes, parsed the same way at check and at run. */
struct rs_attrs {
	int linear;                     /* mode linear (else nearest) */
	int cubic;                      /* mode cubic */
	float cubic_a;                  /* cubic_coeff_a */
	int exclude_outside;
	int simple;                     /* Resize-10 / Upsample rules */
	enum qr_resize_coord coord;     /* coordinate_transformation_mode */
	enum qr_resize_nearest nearest; /* nearest_mode */
	int n_axes;                     /* axes given (opset 18), 0 = all */
	int64_t axes[QR_TENSOR_MAX_DIMS]; /* axes as written */
};

static enum qr_status
rs_parse(const struct qr_op_call *c, struct qr_diag *d, int upsample,
	 struct rs_attrs *a)
{
	const char *mode = qr_op_attr_str(c, "mode", "nearest");
	const char *ct, *nm;
	const int64_t *axes;
	size_t n, i;

	memset(a, 0, sizeof *a);
	if (strcmp(mode, "linear") == 0 ||
	    (upsample && strcmp(mode, "bilinear") == 0))
		a->linear = 1;
	else if (strcmp(mode, "cubic") == 0 && !upsample)
		a->cubic = 1;
	else if (strcmp(mode, "nearest") != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "unknown mode '%s'", mode);
	a->cubic_a = qr_op_attr_float(c, "cubic_coeff_a", -0.75f);
	a->exclude_outside = qr_op_attr_int(c, "exclude_outside", 0) != 0;
	a->simple = upsample || c->opset < 11;
	a->coord = QR_COORD_ASYMMETRIC;
	a->nearest = QR_NEAREST_FLOOR;
	if (a->simple)
		return QR_OK;
	ct = qr_op_attr_str(c, "coordinate_transformation_mode", "half_pixel");
	if (strcmp(ct, "half_pixel") == 0)
		a->coord = QR_COORD_HALF_PIXEL;
	else if (strcmp(ct, "pytorch_half_pixel") == 0)
		a->coord = QR_COORD_PYTORCH_HALF_PIXEL;
	else if (strcmp(ct, "align_corners") == 0)
		a->coord = QR_COORD_ALIGN_CORNERS;
	else if (strcmp(ct, "asymmetric") == 0)
		a->coord = QR_COORD_ASYMMETRIC;
	else if (strcmp(ct, "tf_half_pixel_for_nn") == 0 && !a->linear &&
		 !a->cubic)
		a->coord = QR_COORD_TF_HALF_PIXEL_NN;
	else
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "coordinate_"
				    "transformation_mode %s is not supported",
				    ct);
	nm = qr_op_attr_str(c, "nearest_mode", "round_prefer_floor");
	if (strcmp(nm, "round_prefer_floor") == 0)
		a->nearest = QR_NEAREST_ROUND_PREFER_FLOOR;
	else if (strcmp(nm, "round_prefer_ceil") == 0)
		a->nearest = QR_NEAREST_ROUND_PREFER_CEIL;
	else if (strcmp(nm, "floor") == 0)
		a->nearest = QR_NEAREST_FLOOR;
	else if (strcmp(nm, "ceil") == 0)
		a->nearest = QR_NEAREST_CEIL;
	else
		return qr_op_errorf(c, d, QR_EGRAPH, "unknown nearest_mode "
				    "'%s'", nm);
	if (qr_op_attr_int(c, "antialias", 0) != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "antialias is not "
				    "supported");
	if (strcmp(qr_op_attr_str(c, "keep_aspect_ratio_policy", "stretch"),
		   "stretch") != 0)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "keep_aspect_ratio_"
				    "policy %s is not supported",
				    qr_op_attr_str(c, "keep_aspect_ratio_policy",
						   ""));
	axes = qr_op_attr_ints(c, "axes", &n);
	if (n > QR_TENSOR_MAX_DIMS)
		return qr_op_errorf(c, d, QR_EGRAPH, "axes has %zu values", n);
	for (i = 0; i < n; i++)
		a->axes[i] = axes[i];
	a->n_axes = (int)n;
	return QR_OK;
}

static enum qr_status
rs_check(const struct qr_op_call *c, struct qr_diag *d, int upsample)
{
	struct rs_attrs a;
	enum qr_status st;
	size_t max_in = upsample ? (c->opset < 9 ? 1 : 2) :
				   (c->opset < 11 ? 2 : 4);

	if ((st = qr_op_arity(c, d, upsample && c->opset < 9 ? 1 :
				    (c->opset < 11 ? 2 : 1), max_in, 1, 1)) !=
		    QR_OK ||
	    (st = rs_parse(c, d, upsample, &a)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, a.linear || a.cubic ?
					   QR_DTM_FLOAT : QR_DTM_ANY)) != QR_OK)
		return st;
	if (upsample && c->opset < 9) {
		size_t n;

		if (qr_op_attr_floats(c, "scales", &n) == NULL)
			return qr_op_errorf(c, d, QR_EGRAPH, "attribute "
					    "scales is required");
	}
	c->out_dtype[0] = qr_op_dtype(c, 0);
	return QR_OK;
}

static enum qr_status
resize_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return rs_check(c, d, 0);
}

static enum qr_status
upsample_check(const struct qr_op_call *c, struct qr_diag *d)
{
	return rs_check(c, d, 1);
}

/* The whole resize of one call: output dims and a scale per axis. */
struct rs_plan {
	int rank;
	int64_t out[QR_TENSOR_MAX_DIMS];  /* output dims */
	float scale[QR_TENSOR_MAX_DIMS];  /* coordinate scale per axis */
	int from_scales;                  /* scales given (not sizes) */
};

/* Values of a 1-D tensor (scales or sizes) placed on the axes they name. */
static enum qr_status
rs_spread(const struct qr_op_call *c, struct qr_diag *d,
	  const struct rs_attrs *a, const struct qr_tensor *t, const char *what,
	  int rank, double *dst, int *given)
{
	size_t i, want = a->n_axes ? (size_t)a->n_axes : (size_t)rank;
	char b[128];

	if (t->ndim > 1 || t->n_elem != want)
		return qr_op_errorf(c, d, QR_ESHAPE, "%s '%s' %s must hold %zu "
				    "values", what, t->name ? t->name : "",
				    qr_shape_str(t, b, sizeof b), want);
	for (i = 0; i < want; i++) {
		int ax = (int)i;
		enum qr_status st;

		if (a->n_axes &&
		    (st = qr_op_axis(c, d, a->axes[i], rank, 0, &ax)) != QR_OK)
			return st;
		dst[ax] = qr_op_get(t, i);
		given[ax] = 1;
	}
	return QR_OK;
}

static enum qr_status
rs_plan(struct qr_op_call *c, struct qr_diag *d, int upsample,
	struct rs_plan *pl, struct rs_attrs *a)
{
	const struct qr_tensor *x = c->in[0], *scales = NULL, *sizes = NULL;
	double v[QR_TENSOR_MAX_DIMS];
	int given[QR_TENSOR_MAX_DIMS] = {0};
	enum qr_status st;
	int i, r = x->ndim;

	if ((st = rs_parse(c, d, upsample, a)) != QR_OK)
		return st;
	pl->rank = r;
	for (i = 0; i < r; i++)
		v[i] = 1.0;
	if (upsample && c->opset < 9) {
		size_t n;
		const float *f = qr_op_attr_floats(c, "scales", &n);

		if ((int)n != r)
			return qr_op_errorf(c, d, QR_ESHAPE, "scales has %zu "
					    "values for rank %d", n, r);
		for (i = 0; i < r; i++)
			v[i] = f[i];
	} else {
		size_t si = upsample || c->opset < 11 ? 1 : 2;

		if (qr_op_has_in(c, si) && c->in[si]->n_elem > 0)
			scales = c->in[si];
		if (!upsample && c->opset >= 11 && qr_op_has_in(c, 3) &&
		    c->in[3]->n_elem > 0)
			sizes = c->in[3];
		if ((scales == NULL) == (sizes == NULL))
			return qr_op_errorf(c, d, QR_EGRAPH, "exactly one of "
					    "scales and sizes must be given");
		if (scales != NULL && scales->dtype != QR_DT_FLOAT)
			return qr_op_errorf(c, d, QR_EGRAPH, "scales must be "
					    "float, not %s",
					    qr_dtype_name(scales->dtype));
		if (sizes != NULL && sizes->dtype != QR_DT_INT64)
			return qr_op_errorf(c, d, QR_EGRAPH, "sizes must be "
					    "int64, not %s",
					    qr_dtype_name(sizes->dtype));
		st = rs_spread(c, d, a, scales ? scales : sizes,
			       scales ? "scales" : "sizes", r, v, given);
		if (st != QR_OK)
			return st;
	}
	pl->from_scales = sizes == NULL;
	for (i = 0; i < r; i++) {
		double in = (double)x->dims[i];

		if (sizes != NULL) {
			pl->out[i] = given[i] ? (int64_t)v[i] : x->dims[i];
			pl->scale[i] = x->dims[i] ?
				(float)pl->out[i] / (float)x->dims[i] : 1.0f;
		} else {
			pl->out[i] = (int64_t)floor(in * (double)(float)v[i]);
			pl->scale[i] = (float)v[i];
		}
		if (pl->out[i] < 0 || !(pl->scale[i] > 0.0f))
			return qr_op_errorf(c, d, QR_ESHAPE, "axis %d: scale "
					    "%g gives no valid size", i,
					    (double)pl->scale[i]);
		if (i < r - 2 && pl->out[i] != x->dims[i])
			return qr_op_errorf(c, d, QR_EUNSUPPORTED, "resizing "
					    "axis %d of %d is not supported "
					    "(only the two innermost axes)", i,
					    r);
	}
	return QR_OK;
}

static enum qr_status
rs_infer(struct qr_op_call *c, struct qr_diag *d, int upsample)
{
	struct rs_attrs a;
	struct rs_plan pl;
	enum qr_status st;

	if ((st = rs_plan(c, d, upsample, &pl, &a)) != QR_OK)
		return st;
	return qr_tensor_set_shape(c->out[0], c->in[0]->dtype, pl.rank, pl.out,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
resize_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return rs_infer(c, d, 0);
}

static enum qr_status
upsample_infer(struct qr_op_call *c, struct qr_diag *d)
{
	return rs_infer(c, d, 1);
}

/* The asymmetric scale equal to align_corners with a given scale. */
static float
align_scale(size_t in, size_t out, float scale)
{
	if (out <= 1)
		return 1.0f; /* the only output index, 0, maps to 0 */
	if (in <= 1)
		return INFINITY;
	return ((float)in * scale - 1.0f) / (float)(in - 1);
}

static enum qr_status
rs_run(struct qr_op_call *c, struct qr_diag *d, int upsample)
{
	const struct qr_tensor *x = c->in[0];
	struct qr_resize_params p;
	struct rs_attrs a;
	struct rs_plan pl;
	enum qr_status st;
	size_t es = qr_dtype_size(x->dtype);
	int r;

	if ((st = rs_plan(c, d, upsample, &pl, &a)) != QR_OK)
		return st;
	r = pl.rank;
	if (c->out[0]->n_elem == 0)
		return QR_OK;
	if (x->n_elem == 0)
		return qr_op_errorf(c, d, QR_ESHAPE, "cannot resize an empty "
				    "input to a non-empty output");
	memset(&p, 0, sizeof p);
	p.nc = r > 2 ? qr_op_dims_prod(x->dims, 0, r - 2) : 1;
	p.h = r > 1 ? (size_t)x->dims[r - 2] : 1;
	p.oh = r > 1 ? (size_t)pl.out[r - 2] : 1;
	p.scale_h = r > 1 ? pl.scale[r - 2] : 1.0f;
	p.w = r > 0 ? (size_t)x->dims[r - 1] : 1;
	p.ow = r > 0 ? (size_t)pl.out[r - 1] : 1;
	p.scale_w = r > 0 ? pl.scale[r - 1] : 1.0f;
	p.coord = a.coord;
	p.nearest = a.nearest;
	p.cubic_a = a.cubic_a;
	p.exclude_outside = a.exclude_outside;
	if (a.coord == QR_COORD_ALIGN_CORNERS && pl.from_scales) {
		/*
		 * With scales, the spec's align_corners divides by the
		 * unrounded output length in * scale - 1, not by out - 1:
		 * that is asymmetric with scale (in * scale - 1) / (in - 1).
		 */
		p.coord = QR_COORD_ASYMMETRIC;
		p.scale_h = align_scale(p.h, p.oh, p.scale_h);
		p.scale_w = align_scale(p.w, p.ow, p.scale_w);
	}
	if (a.linear) {
		qr_resize_linear_f32(&p, x->data, c->out[0]->data);
		return QR_OK;
	}
	if (a.cubic) {
		qr_resize_cubic_f32(&p, x->data, c->out[0]->data);
		return QR_OK;
	}
	if (a.simple) {
		enum qr_resize_nearest mh = p.scale_h < 1.0f ? QR_NEAREST_CEIL :
							       QR_NEAREST_FLOOR;
		enum qr_resize_nearest mw = p.scale_w < 1.0f ? QR_NEAREST_CEIL :
							       QR_NEAREST_FLOOR;

		if (mh != mw) {
			/* one axis at a time: asymmetric with scale 1 is the
			 * identity on the other axis */
			struct qr_resize_params p1 = p, p2 = p;
			void *tmp = xmalloc(p.nc * p.oh * p.w * es + 1);

			p1.ow = p.w;
			p1.scale_w = 1.0f;
			p1.nearest = mh;
			p2.h = p.oh;
			p2.scale_h = 1.0f;
			p2.nearest = mw;
			qr_resize_nearest(&p1, x->data, es, tmp);
			qr_resize_nearest(&p2, tmp, es, c->out[0]->data);
			free(tmp);
			return QR_OK;
		}
		p.nearest = mh;
	}
	qr_resize_nearest(&p, x->data, es, c->out[0]->data);
	return QR_OK;
}

static enum qr_status
resize_run(struct qr_op_call *c, struct qr_diag *d)
{
	return rs_run(c, d, 0);
}

static enum qr_status
upsample_run(struct qr_op_call *c, struct qr_diag *d)
{
	return rs_run(c, d, 1);
}

const struct qr_op_desc qr_op_resize = {
	.domain = "", .name = "Resize", .since = 10,
	.check = resize_check, .infer = resize_infer, .run = resize_run,
};

const struct qr_op_desc qr_op_upsample = {
	.domain = "", .name = "Upsample", .since = 7,
	.check = upsample_check, .infer = upsample_infer, .run = upsample_run,
};

/* ---- GridSample (opset 16: 2-D; opset 20's 4-D inputs too) ---- */

static enum qr_status
gs_attrs(const struct qr_op_call *c, struct qr_diag *d,
	 struct qr_grid_params *p)
{
	const char *mode = qr_op_attr_str(c, "mode", c->opset >= 20 ?
					  "linear" : "bilinear");
	const char *pad = qr_op_attr_str(c, "padding_mode", "zeros");

	memset(p, 0, sizeof *p);
	if (strcmp(mode, "bilinear") == 0 || strcmp(mode, "linear") == 0)
		p->mode = QR_GRID_LINEAR;
	else if (strcmp(mode, "nearest") == 0)
		p->mode = QR_GRID_NEAREST;
	else if (strcmp(mode, "bicubic") == 0 || strcmp(mode, "cubic") == 0)
		p->mode = QR_GRID_CUBIC;
	else
		return qr_op_errorf(c, d, QR_EGRAPH, "unknown mode '%s'", mode);
	if (strcmp(pad, "zeros") == 0)
		p->pad = QR_GRID_ZEROS;
	else if (strcmp(pad, "border") == 0)
		p->pad = QR_GRID_BORDER;
	else if (strcmp(pad, "reflection") == 0)
		p->pad = QR_GRID_REFLECTION;
	else
		return qr_op_errorf(c, d, QR_EGRAPH, "unknown padding_mode "
				    "'%s'", pad);
	p->align_corners = qr_op_attr_int(c, "align_corners", 0) != 0;
	return QR_OK;
}

static enum qr_status
gs_check(const struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_grid_params p;
	enum qr_status st;

	if ((st = qr_op_arity(c, d, 2, 2, 1, 1)) != QR_OK ||
	    (st = gs_attrs(c, d, &p)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 0, QR_DTM_FLOAT)) != QR_OK ||
	    (st = qr_op_want_dtype(c, d, 1, QR_DTM_FLOAT)) != QR_OK)
		return st;
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

static enum qr_status
gs_infer(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *g = c->in[1];
	int64_t dims[4];
	char s1[128], s2[128];

	if (x->ndim != 4 || g->ndim != 4 || g->dims[0] != x->dims[0] ||
	    g->dims[3] != 2)
		return qr_op_errorf(c, d, x->ndim > 4 ? QR_EUNSUPPORTED :
				    QR_ESHAPE, "X '%s' %s and grid '%s' %s "
				    "must be [N,C,H,W] and [N,Hout,Wout,2] "
				    "(only 2-D sampling is supported)",
				    qr_op_in_name(c, 0),
				    qr_shape_str(x, s1, sizeof s1),
				    qr_op_in_name(c, 1),
				    qr_shape_str(g, s2, sizeof s2));
	if (x->dims[2] == 0 || x->dims[3] == 0)
		return qr_op_errorf(c, d, QR_ESHAPE, "X '%s' is empty",
				    qr_op_in_name(c, 0));
	dims[0] = x->dims[0];
	dims[1] = x->dims[1];
	dims[2] = g->dims[1];
	dims[3] = g->dims[2];
	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, 4, dims,
				   qr_op_out_name(c, 0), d);
}

static enum qr_status
gs_run(struct qr_op_call *c, struct qr_diag *d)
{
	const struct qr_tensor *x = c->in[0], *g = c->in[1];
	struct qr_grid_params p;
	enum qr_status st;

	if ((st = gs_attrs(c, d, &p)) != QR_OK)
		return st;
	p.n = (size_t)x->dims[0];
	p.c = (size_t)x->dims[1];
	p.h = (size_t)x->dims[2];
	p.w = (size_t)x->dims[3];
	p.oh = (size_t)g->dims[1];
	p.ow = (size_t)g->dims[2];
	qr_grid_sample_f32(&p, x->data, g->data, c->out[0]->data);
	return QR_OK;
}

const struct qr_op_desc qr_op_grid_sample = {
	.domain = "", .name = "GridSample", .since = 16,
	.check = gs_check, .infer = gs_infer, .run = gs_run,
};
