/*
 * op_conv: Conv and ConvTranspose (float), and the window attribute
 * helpers the pooling and quantized conv ops share (op-conv-int.h).
 *
 * Constant weights are packed once, at prepare time (a pack does not
 * depend on the image size); weights that are graph inputs are packed at
 * every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-conv-int.h"

/* ---- window attributes ---- */

/* INTS attribute name into dst (at most max values, each >= lo); *n
 * gets the count (0 when absent). */
static enum qr_status
win_ints(const struct qr_op_call *c, struct qr_diag *d, const char *name,
	 int64_t *dst, size_t max, int *n, int64_t lo)
{
	size_t cnt, i;
	const int64_t *v = qr_op_attr_ints(c, name, &cnt);

	*n = 0;
	if (v == NULL)
		return QR_OK;
	if (cnt > max)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%s has %zu values; "
				    "windows of more than 3 spatial dims are "
				    "not supported", name, cnt);
	for (i = 0; i < cnt; i++) {
		if (v[i] < lo)
			return qr_op_errorf(c, d, QR_EGRAPH, "%s[%zu] is %lld, "
					    "below %lld", name, i,
					    (long long)v[i], (long long)lo);
		/* keeps the int64 window arithmetic (dilation * kernel,
		 * input + pads) far from overflow */
		if (v[i] > QR_OP_WIN_VALUE_MAX)
			return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%s[%zu] is "
					    "%lld, above %lld", name, i,
					    (long long)v[i],
					    (long long)QR_OP_WIN_VALUE_MAX);
		dst[i] = v[i];
	}
	*n = (int)cnt;
	return QR_OK;
}

/* Agree on the spatial rank: *nsp is 0 (unknown) or what earlier
 * attributes said. */
static enum qr_status
win_rank(const struct qr_op_call *c, struct qr_diag *d, const char *name,
	 int n, int *nsp)
{
	if (n == 0)
		return QR_OK;
	if (*nsp != 0 && *nsp != n)
		return qr_op_errorf(c, d, QR_EGRAPH, "%s has %d values but "
				    "other attributes name %d spatial dims",
				    name, n, *nsp);
	*nsp = n;
	return QR_OK;
}

/* Parse the window attributes of c's node into w; QR_EGRAPH for bad
 * values, QR_EUNSUPPORTED for more than 3 spatial dims. */
enum qr_status
qr_op_win_parse(const struct qr_op_call *c, struct qr_diag *d,
		struct qr_op_win *w)
{
	enum qr_status st;
	const char *ap;
	int n, i;

	memset(w, 0, sizeof *w);
	for (i = 0; i < QR_OP_SP_MAX; i++)
		w->strides[i] = w->dil[i] = 1;
	if ((st = win_ints(c, d, "kernel_shape", w->kernel, QR_OP_SP_MAX, &n,
			   1)) != QR_OK ||
	    (st = win_rank(c, d, "kernel_shape", n, &w->nsp)) != QR_OK)
		return st;
	w->has_kernel = n > 0;
	if ((st = win_ints(c, d, "strides", w->strides, QR_OP_SP_MAX, &n,
			   1)) != QR_OK ||
	    (st = win_rank(c, d, "strides", n, &w->nsp)) != QR_OK)
		return st;
	if ((st = win_ints(c, d, "dilations", w->dil, QR_OP_SP_MAX, &n, 1)) !=
		    QR_OK ||
	    (st = win_rank(c, d, "dilations", n, &w->nsp)) != QR_OK)
		return st;
	if ((st = win_ints(c, d, "pads", w->pads, 2 * QR_OP_SP_MAX, &n, 0)) !=
	    QR_OK)
		return st;
	if (n % 2 != 0)
		return qr_op_errorf(c, d, QR_EGRAPH, "pads has %d values, not "
				    "twice the spatial dims", n);
	if ((st = win_rank(c, d, "pads", n / 2, &w->nsp)) != QR_OK)
		return st;
	w->has_pads = n > 0;
	if ((st = win_ints(c, d, "output_padding", w->out_pad, QR_OP_SP_MAX,
			   &n, 0)) != QR_OK ||
	    (st = win_rank(c, d, "output_padding", n, &w->nsp)) != QR_OK)
		return st;
	if ((st = win_ints(c, d, "output_shape", w->out_shape,
			   QR_OP_SP_MAX + 2, &w->n_out_shape, 1)) != QR_OK)
		return st;
	ap = qr_op_attr_str(c, "auto_pad", "NOTSET");
	if (strcmp(ap, "NOTSET") == 0 || ap[0] == '\0')
		w->auto_pad = QR_AUTOPAD_NOTSET;
	else if (strcmp(ap, "SAME_UPPER") == 0)
		w->auto_pad = QR_AUTOPAD_SAME_UPPER;
	else if (strcmp(ap, "SAME_LOWER") == 0)
		w->auto_pad = QR_AUTOPAD_SAME_LOWER;
	else if (strcmp(ap, "VALID") == 0)
		w->auto_pad = QR_AUTOPAD_VALID;
	else
		return qr_op_errorf(c, d, QR_EGRAPH, "unknown auto_pad '%s'",
				    ap);
	w->ceil_mode = qr_op_attr_int(c, "ceil_mode", 0) != 0;
	w->count_include_pad = qr_op_attr_int(c, "count_include_pad", 0) != 0;
	w->group = qr_op_attr_int(c, "group", 1);
	if (w->group < 1)
		return qr_op_errorf(c, d, QR_EGRAPH, "group is %lld",
				    (long long)w->group);
	return QR_OK;
}

/* Leading and trailing padding of one axis for Conv and the pools. */
static void
win_pads(const struct qr_op_win *win, int nsp, int i, int64_t in, int64_t dk,
	 int64_t *pb, int64_t *pe)
{
	int64_t s = win->strides[i], target, need;

	switch (win->auto_pad) {
	case QR_AUTOPAD_VALID:
		*pb = *pe = 0;
		break;
	case QR_AUTOPAD_SAME_UPPER:
	case QR_AUTOPAD_SAME_LOWER:
		target = (in + s - 1) / s;
		need = (target - 1) * s + dk - in;
		if (need < 0)
			need = 0;
		*pb = win->auto_pad == QR_AUTOPAD_SAME_LOWER ? (need + 1) / 2 :
							       need / 2;
		*pe = need - *pb;
		break;
	default:
		*pb = win->pads[i];
		*pe = win->pads[nsp + i];
		break;
	}
}

/* Common checks of an [N][C][spatial] input: 1 to max_nsp spatial dims
 * agreeing with the attributes. */
static enum qr_status
win_input(const struct qr_op_call *c, struct qr_diag *d,
	  const struct qr_op_win *win, const struct qr_tensor *x, int max_nsp,
	  int *nsp)
{
	char b[128];

	if (x->ndim < 3)
		return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s must be "
				    "[N][C][spatial...]", qr_op_in_name(c, 0),
				    qr_shape_str(x, b, sizeof b));
	*nsp = x->ndim - 2;
	if (*nsp > max_nsp)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%d-D input '%s' is "
				    "not supported (up to %d-D)", *nsp,
				    qr_op_in_name(c, 0), max_nsp);
	if (win->nsp != 0 && win->nsp != *nsp)
		return qr_op_errorf(c, d, QR_ESHAPE, "attributes name %d "
				    "spatial dims but input '%s' is %s",
				    win->nsp, qr_op_in_name(c, 0),
				    qr_shape_str(x, b, sizeof b));
	return QR_OK;
}

/* ConvTranspose padding of one axis; may grow *adj (output_padding) when
 * output_shape asks for more than the full output: total = full - target,
 * split with the odd pixel at the end, except SAME_LOWER which puts it
 * first (the ONNX spec, and ORT since 1.13). */
static void
convt_pads(const struct qr_op_win *win, int nsp, int i, int64_t in,
	   int64_t full, int64_t *pb, int64_t *pe, int64_t *adj)
{
	int64_t target, total;

	if (win->n_out_shape == 0 && win->auto_pad != QR_AUTOPAD_SAME_UPPER &&
	    win->auto_pad != QR_AUTOPAD_SAME_LOWER) {
		if (win->auto_pad == QR_AUTOPAD_VALID) {
			*pb = *pe = 0;
		} else {
			*pb = win->pads[i];
			*pe = win->pads[nsp + i];
		}
		return;
	}
	target = win->n_out_shape ?
			 win->out_shape[win->n_out_shape - nsp + i] :
			 in * win->strides[i];
	total = full - target;
	if (total < 0) {
		*pb = *pe = 0;
		*adj += -total;
		return;
	}
	if (win->auto_pad == QR_AUTOPAD_SAME_LOWER)
		*pb = total - total / 2;
	else
		*pb = total / 2;
	*pe = total - *pb;
}

/* One convolution's geometry, per spatial axis (up to 3). */
struct conv_geom {
	int nsp;                 /* spatial dims */
	int64_t n, cin, cout, g; /* batch, channels, group */
	int64_t in[QR_OP_SP_MAX], k[QR_OP_SP_MAX];   /* input, kernel */
	int64_t s[QR_OP_SP_MAX], dl[QR_OP_SP_MAX];   /* stride, dilation */
	int64_t pb[QR_OP_SP_MAX], pe[QR_OP_SP_MAX];  /* pads */
	int64_t adj[QR_OP_SP_MAX];                   /* output_padding */
	int64_t out[QR_OP_SP_MAX];                   /* output size */
};

static enum qr_status
conv_geom(const struct qr_op_call *c, struct qr_diag *d,
	  const struct qr_op_win *win, const struct qr_tensor *x,
	  const struct qr_tensor *w, int transposed, int max_nsp,
	  struct conv_geom *g)
{
	char b1[128], b2[128];
	enum qr_status st;
	int i;

	memset(g, 0, sizeof *g);
	if ((st = win_input(c, d, win, x, max_nsp, &g->nsp)) != QR_OK)
		return st;
	if (w->ndim != x->ndim)
		return qr_op_errorf(c, d, QR_ESHAPE, "weights '%s' %s do not "
				    "match input '%s' %s", w->name ? w->name :
				    "", qr_shape_str(w, b1, sizeof b1),
				    qr_op_in_name(c, 0),
				    qr_shape_str(x, b2, sizeof b2));
	g->n = x->dims[0];
	g->cin = x->dims[1];
	g->g = win->group;
	if (transposed) {
		g->cout = w->dims[1] * g->g;
		if (w->dims[0] != g->cin || g->cin % g->g != 0)
			goto bad_channels;
	} else {
		g->cout = w->dims[0];
		if (w->dims[1] * g->g != g->cin || g->cout % g->g != 0)
			goto bad_channels;
	}
	for (i = 0; i < g->nsp; i++) {
		int64_t dk, full;

		g->in[i] = x->dims[2 + i];
		g->k[i] = w->dims[2 + i];
		g->s[i] = win->strides[i];
		g->dl[i] = win->dil[i];
		g->adj[i] = transposed ? win->out_pad[i] : 0;
		if (g->k[i] < 1 || (win->has_kernel && win->kernel[i] != g->k[i]))
			return qr_op_errorf(c, d, QR_ESHAPE, "kernel_shape "
					    "does not match weights '%s' %s",
					    w->name ? w->name : "",
					    qr_shape_str(w, b1, sizeof b1));
		dk = g->dl[i] * (g->k[i] - 1) + 1;
		if (!transposed) {
			win_pads(win, g->nsp, i, g->in[i], dk, &g->pb[i],
				 &g->pe[i]);
			if (g->in[i] + g->pb[i] + g->pe[i] < dk)
				return qr_op_errorf(c, d, QR_ESHAPE, "kernel "
						    "is larger than the padded "
						    "input '%s' %s",
						    qr_op_in_name(c, 0),
						    qr_shape_str(x, b1,
								 sizeof b1));
			g->out[i] = (g->in[i] + g->pb[i] + g->pe[i] - dk) /
					    g->s[i] + 1;
			continue;
		}
		full = g->s[i] * (g->in[i] - 1) + g->adj[i] + dk;
		convt_pads(win, g->nsp, i, g->in[i], full, &g->pb[i],
			   &g->pe[i], &g->adj[i]);
		g->out[i] = g->s[i] * (g->in[i] - 1) + g->adj[i] + dk -
			    g->pb[i] - g->pe[i];
		if (g->in[i] < 1 || g->out[i] < 1)
			return qr_op_errorf(c, d, QR_ESHAPE, "pads leave no "
					    "output for input '%s' %s",
					    qr_op_in_name(c, 0),
					    qr_shape_str(x, b1, sizeof b1));
	}
	return QR_OK;

bad_channels:
	return qr_op_errorf(c, d, QR_ESHAPE, "input '%s' %s, weights '%s' %s "
			    "and group %lld disagree on channels",
			    qr_op_in_name(c, 0), qr_shape_str(x, b1, sizeof b1),
			    w->name ? w->name : "",
			    qr_shape_str(w, b2, sizeof b2), (long long)g->g);
}

/* The output shape [N][C_out][out...] of a geometry. */
static void
geom_dims(const struct conv_geom *g, int *ndim, int64_t *dims)
{
	int i;

	*ndim = g->nsp + 2;
	dims[0] = g->n;
	dims[1] = g->cout;
	for (i = 0; i < g->nsp; i++)
		dims[2 + i] = g->out[i];
}

/* The kernels' params of a geometry: 1-D is the w axis, 3-D adds the
 * depth axis before h (1-D and 2-D leave kd 0). */
static void
geom_params(const struct conv_geom *g, struct qr_conv_params *p)
{
	int o = 2 - g->nsp, i;
	size_t v[6][2];

	for (i = 0; i < 2; i++) {
		int a = i - o;

		v[0][i] = a >= 0 ? (size_t)g->in[a] : 1;
		v[1][i] = a >= 0 ? (size_t)g->k[a] : 1;
		v[2][i] = a >= 0 ? (size_t)g->s[a] : 1;
		v[3][i] = a >= 0 ? (size_t)g->dl[a] : 1;
		v[4][i] = a >= 0 ? (size_t)g->pb[a] : 0;
		v[5][i] = a >= 0 ? (size_t)g->pe[a] : 0;
		if (i == 0)
			p->out_pad_h = a >= 0 ? (size_t)g->adj[a] : 0;
		else
			p->out_pad_w = a >= 0 ? (size_t)g->adj[a] : 0;
	}
	p->n = (size_t)g->n;
	p->c_in = (size_t)g->cin;
	p->c_out = (size_t)g->cout;
	p->group = (size_t)g->g;
	p->h = v[0][0];
	p->w = v[0][1];
	p->kh = v[1][0];
	p->kw = v[1][1];
	p->stride_h = v[2][0];
	p->stride_w = v[2][1];
	p->dil_h = v[3][0];
	p->dil_w = v[3][1];
	p->pad_t = v[4][0];
	p->pad_l = v[4][1];
	p->pad_b = v[5][0];
	p->pad_r = v[5][1];
	if (g->nsp == 3) {
		p->d = (size_t)g->in[0];
		p->kd = (size_t)g->k[0];
		p->stride_d = (size_t)g->s[0];
		p->dil_d = (size_t)g->dl[0];
		p->pad_f = (size_t)g->pb[0];
		p->pad_k = (size_t)g->pe[0];
	}
}

/* 1-D to 3-D conv geometry as the kernels' params and the output shape;
 * errors name the node (see op-conv-int.h). */
enum qr_status
qr_op_conv_shape(const struct qr_op_call *c, struct qr_diag *d,
		 const struct qr_op_win *win, const struct qr_tensor *x,
		 const struct qr_tensor *w, int transposed,
		 struct qr_conv_params *p, int *ndim, int64_t *dims)
{
	struct conv_geom g;
	enum qr_status st;

	memset(p, 0, sizeof *p);
	if ((st = conv_geom(c, d, win, x, w, transposed, 3, &g)) != QR_OK)
		return st;
	geom_params(&g, p);
	geom_dims(&g, ndim, dims);
	return QR_OK;
}

/* Pool geometry and output shape of an [N][C][spatial] input. */
enum qr_status
qr_op_pool_shape(const struct qr_op_call *c, struct qr_diag *d,
		 const struct qr_op_win *win, const struct qr_tensor *x,
		 struct qr_pool_params *p, int *ndim, int64_t *dims)
{
	/* index 0 depth, 1 height, 2 width; a missing axis is 1 long */
	int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1};
	int64_t dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
	enum qr_status st;
	size_t work;
	char b[128];
	int nsp, i;

	if ((st = win_input(c, d, win, x, 3, &nsp)) != QR_OK)
		return st;
	if (win->nsp != nsp || !win->has_kernel)
		return qr_op_errorf(c, d, QR_EGRAPH, "kernel_shape must name "
				    "the %d spatial dims", nsp);
	for (i = 0; i < nsp; i++) {
		int a = 3 - nsp + i;
		int64_t dk;

		in[a] = x->dims[2 + i];
		k[a] = win->kernel[i];
		s[a] = win->strides[i];
		dl[a] = win->dil[i];
		dk = dl[a] * (k[a] - 1) + 1;
		win_pads(win, nsp, i, in[a], dk, &pb[a], &pe[a]);
		if (in[a] + pb[a] + pe[a] < dk)
			return qr_op_errorf(c, d, QR_ESHAPE, "window is larger "
					    "than the padded input '%s' %s",
					    qr_op_in_name(c, 0),
					    qr_shape_str(x, b, sizeof b));
	}
	memset(p, 0, sizeof *p);
	p->n = (size_t)x->dims[0];
	p->c = (size_t)x->dims[1];
	p->d = (size_t)in[0];
	p->h = (size_t)in[1];
	p->w = (size_t)in[2];
	p->kd = (size_t)k[0];
	p->kh = (size_t)k[1];
	p->kw = (size_t)k[2];
	p->stride_d = (size_t)s[0];
	p->stride_h = (size_t)s[1];
	p->stride_w = (size_t)s[2];
	p->dil_d = (size_t)dl[0];
	p->dil_h = (size_t)dl[1];
	p->dil_w = (size_t)dl[2];
	p->pad_f = (size_t)pb[0];
	p->pad_k = (size_t)pe[0];
	p->pad_t = (size_t)pb[1];
	p->pad_b = (size_t)pe[1];
	p->pad_l = (size_t)pb[2];
	p->pad_r = (size_t)pe[2];
	/* SAME pads make the division exact: ceil_mode changes nothing */
	p->ceil_mode = win->auto_pad == QR_AUTOPAD_NOTSET ? win->ceil_mode : 0;
	p->count_include_pad = win->count_include_pad;
	*ndim = x->ndim;
	dims[0] = x->dims[0];
	dims[1] = x->dims[1];
	if (nsp == 3)
		dims[2] = (int64_t)qr_pool_out_d(p);
	if (nsp >= 2)
		dims[nsp] = (int64_t)qr_pool_out_h(p);
	dims[1 + nsp] = (int64_t)qr_pool_out_w(p);
	/* the kernels visit every window position of every output */
	if (qr_mul_overflow(p->n, p->c, &work) ||
	    qr_mul_overflow(work, qr_pool_out_d(p), &work) ||
	    qr_mul_overflow(work, p->kd, &work) ||
	    qr_mul_overflow(work, qr_pool_out_h(p), &work) ||
	    qr_mul_overflow(work, qr_pool_out_w(p), &work) ||
	    qr_mul_overflow(work, p->kh, &work) ||
	    qr_mul_overflow(work, p->kw, &work) ||
	    work > QR_OP_POOL_WORK_MAX) {
		char kb[80];

		if (nsp == 3)
			snprintf(kb, sizeof kb, "%zux%zux%zu", p->kd, p->kh,
				 p->kw);
		else
			snprintf(kb, sizeof kb, "%zux%zu", p->kh, p->kw);
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "window %s over "
				    "input '%s' %s needs more than %llu steps",
				    kb, qr_op_in_name(c, 0),
				    qr_shape_str(x, b, sizeof b),
				    (unsigned long long)QR_OP_POOL_WORK_MAX);
	}
	return QR_OK;
}

/* At most max_nsp spatial dims, and a kernel_shape. */
enum qr_status
qr_op_pool_win_check(const struct qr_op_call *c, struct qr_diag *d,
		     const struct qr_op_win *win, int max_nsp)
{
	if (win->nsp > max_nsp)
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "%d-D windows are "
				    "not supported (%s only)", win->nsp,
				    max_nsp == 2 ? "1-D and 2-D" :
						   "1-D to 3-D");
	if (!win->has_kernel)
		return qr_op_errorf(c, d, QR_EGRAPH, "kernel_shape is "
				    "required");
	return QR_OK;
}

/* Grow *buf (heap, owned by the caller) to n bytes; contents not kept. */
void *
qr_op_scratch(void **buf, size_t *cap, size_t n)
{
	if (n == 0)
		n = 1;
	if (*buf == NULL || *cap < n) {
		free(*buf);
		*buf = xmalloc(n);
		*cap = n;
	}
	return *buf;
}

/* See op-conv-int.h. */
void *
qr_op_ws(const struct qr_op_call *c, void **own, size_t *own_cap, size_t n)
{
	if (c->ws != NULL && c->ws_cap != NULL)
		return qr_op_scratch(c->ws, c->ws_cap, n);
	return qr_op_scratch(own, own_cap, n);
}

/* ---- Conv, ConvTranspose ---- */

#define WINO_MAX_WEIGHTS (256 * 256) /* c_in * c_out */

/* Per-node state: attributes and the packed weights. */
struct conv_state {
	struct qr_op_win win;          /* window attributes */
	int transposed;                /* ConvTranspose */
	int w_const;                   /* W is a constant, packed at prepare */
	struct qr_conv_f32_packed *pk; /* packed weights, or NULL */
	struct qr_wino_f32 *wino;      /* Winograd weights (any_order),
					* made at the first run that uses
					* them, or NULL */
	void *ws;                      /* kernel workspace, heap */
	size_t ws_cap;                 /* bytes in ws */
};

static enum qr_status
conv_check(const struct qr_op_call *c, struct qr_diag *d)
{
	struct qr_op_win win;
	enum qr_status st;
	size_t i;

	if ((st = qr_op_arity(c, d, 2, 3, 1, 1)) != QR_OK)
		return st;
	for (i = 0; i < c->n_in; i++)
		if ((st = qr_op_want_dtype(c, d, i, QR_DTM_FLOAT)) != QR_OK)
			return st;
	if ((st = qr_op_win_parse(c, d, &win)) != QR_OK)
		return st;
	if (c->in != NULL && c->in[1] != NULL &&
	    (c->in[1]->ndim < 3 || c->in[1]->ndim > 5))
		return qr_op_errorf(c, d, QR_EUNSUPPORTED, "weights of rank %d "
				    "are not supported (1-D to 3-D "
				    "convolutions)", c->in[1]->ndim);
	c->out_dtype[0] = QR_DT_FLOAT;
	return QR_OK;
}

/*
 * Wrap 1-D / 2-D weights w (float, [M][C/group][k...] or, transposed,
 * [C][M/group][k...]) for group; NULL for 3-D weights (direct loop) or a
 * group that does not divide the channels (conv_geom reports it at run).
 * wv: w is given as that view (w has no data); NULL too when its scales
 * are along another axis than M.
 */
static struct qr_conv_f32_packed *
conv_pack(const struct qr_tensor *w, int64_t group, int transposed,
	  const struct qr_qview *wv)
{
	size_t kh, kw, c_in, c_out;

	if (w->ndim < 3 || w->ndim > 4 || group < 1)
		return NULL;
	kh = w->ndim == 4 ? (size_t)w->dims[2] : 1;
	kw = (size_t)w->dims[w->ndim - 1];
	if (transposed) {
		c_in = (size_t)w->dims[0];
		c_out = (size_t)w->dims[1] * (size_t)group;
	} else {
		c_out = (size_t)w->dims[0];
		c_in = (size_t)w->dims[1] * (size_t)group;
	}
	if (c_in % (size_t)group != 0 || c_out % (size_t)group != 0 ||
	    kh < 1 || kw < 1)
		return NULL;
	if (wv != NULL) {
		struct qr_conv_qweights q;

		if (transposed || wv->outer != 1 ||
		    (wv->axis_len != 1 && wv->axis_len != c_out))
			return NULL;
		q.q = wv->q;
		q.t = (enum qr_qtype)wv->qtype;
		q.scale = wv->scale;
		q.zp = wv->zp;
		q.per_row = wv->axis_len != 1;
		return qr_conv_f32_pack_q(c_out, c_in, kh, kw, (size_t)group,
					  &q);
	}
	/* a view: constant weights (initializers, folded DequantizeLinear
	 * outputs) outlive the state, and a weight packed at run is used
	 * for that run only */
	return qr_conv_f32_pack_view(c_out, c_in, kh, kw, (size_t)group,
				     w->data, transposed);
}

static enum qr_status
conv_prepare_common(struct qr_op_call *c, struct qr_diag *d, int transposed)
{
	struct conv_state *st = xcalloc(1, sizeof *st);
	enum qr_status s;

	c->state = st;
	st->transposed = transposed;
	if ((s = qr_op_win_parse(c, d, &st->win)) != QR_OK)
		return s;
	if (c->in[1] != NULL) {
		st->pk = conv_pack(c->in[1], st->win.group, transposed, NULL);
		st->w_const = st->pk != NULL;
	}
	return QR_OK;
}

/*
 * Whether a 2-D conv of attributes w with weights shaped as t takes
 * Winograd in a run that may sum in any order (wino_worth, known before
 * the input's shape: stride and dilation 1, one group, 3x3; the pads do
 * not matter).
 */
static int
wino_weight(const struct qr_op_win *w, const struct qr_tensor *t)
{
	return t->ndim == 4 && t->dims[2] == 3 && t->dims[3] == 3 &&
	       t->dims[0] * t->dims[1] <= WINO_MAX_WEIGHTS && w->group == 1 &&
	       w->strides[0] == 1 && w->strides[1] == 1 && w->dil[0] == 1 &&
	       w->dil[1] == 1;
}

/*
 * A constant weight that Winograd will take is transformed here, at
 * load, rather than in the first run: the local run of the first sample
 * otherwise ends last by that much, with the other cores idle.
 */
static enum qr_status
conv_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	enum qr_status s = conv_prepare_common(c, d, 0);
	struct conv_state *st = c->state;
	const struct qr_tensor *w = c->in[1];

	if (s == QR_OK && c->any_order && st->w_const &&
	    wino_weight(&st->win, w))
		st->wino = qr_wino_f32_new((size_t)w->dims[0],
					   (size_t)w->dims[1], w->data);
	return s;
}

static enum qr_status
convt_prepare(struct qr_op_call *c, struct qr_diag *d)
{
	return conv_prepare_common(c, d, 1);
}

static void
conv_release(void *state)
{
	struct conv_state *st = state;

	if (st == NULL)
		return;
	qr_conv_f32_packed_free(st->pk);
	qr_wino_f32_free(st->wino);
	free(st->ws);
	free(st);
}

static enum qr_status
conv_shape(struct qr_op_call *c, struct qr_diag *d, struct conv_geom *g)
{
	struct conv_state *st = c->state;
	enum qr_status s;
	char b[128];

	s = conv_geom(c, d, &st->win, c->in[0], c->in[1], st->transposed, 3,
		      g);
	if (s != QR_OK)
		return s;
	if (qr_op_has_in(c, 2) && (c->in[2]->ndim != 1 ||
				   c->in[2]->dims[0] != g->cout))
		return qr_op_errorf(c, d, QR_ESHAPE, "bias '%s' %s must hold "
				    "%lld values", qr_op_in_name(c, 2),
				    qr_shape_str(c->in[2], b, sizeof b),
				    (long long)g->cout);
	return QR_OK;
}

static enum qr_status
conv_infer(struct qr_op_call *c, struct qr_diag *d)
{
	int64_t dims[QR_TENSOR_MAX_DIMS];
	struct conv_geom g;
	enum qr_status s;
	int ndim;

	if ((s = conv_shape(c, d, &g)) != QR_OK)
		return s;
	geom_dims(&g, &ndim, dims);
	return qr_tensor_set_shape(c->out[0], QR_DT_FLOAT, ndim, dims,
				   qr_op_out_name(c, 0), d);
}

/*
 * 3-D ConvTranspose: a plain direct loop (the kernels' ConvTranspose is
 * 2-D), summing in the order of the input channels and kernel taps. Slow,
 * but exact enough for the few 3-D decoders qreport meets. (3-D Conv goes
 * through the GEMM as 2-D convs do.)
 */
static void
conv3d_run(const struct conv_geom *g, int transposed, const float *x,
	   const float *w, const float *bias, float *y)
{
	size_t cin_g = (size_t)(g->cin / g->g), cout_g = (size_t)(g->cout / g->g);
	size_t in_sz = (size_t)(g->in[0] * g->in[1] * g->in[2]);
	size_t out_sz = (size_t)(g->out[0] * g->out[1] * g->out[2]);
	size_t ksz = (size_t)(g->k[0] * g->k[1] * g->k[2]);
	size_t n, gi, ci, co, i;
	int64_t a[3], o[3], k[3], p[3];

	for (n = 0; n < (size_t)g->n; n++)
		for (co = 0; co < (size_t)g->cout; co++)
			for (i = 0; i < out_sz; i++)
				y[(n * (size_t)g->cout + co) * out_sz + i] =
					bias ? bias[co] : 0.0f;
	for (n = 0; n < (size_t)g->n; n++)
	for (gi = 0; gi < (size_t)g->g; gi++)
	for (ci = 0; ci < cin_g; ci++)
	for (co = 0; co < cout_g; co++) {
		size_t xc = n * (size_t)g->cin + gi * cin_g + ci;
		size_t yc = n * (size_t)g->cout + gi * cout_g + co;
		const float *wk = transposed ?
			w + ((gi * cin_g + ci) * cout_g + co) * ksz :
			w + ((gi * cout_g + co) * cin_g + ci) * ksz;
		const int64_t *lim = transposed ? g->in : g->out;

		for (a[0] = 0; a[0] < lim[0]; a[0]++)
		for (a[1] = 0; a[1] < lim[1]; a[1]++)
		for (a[2] = 0; a[2] < lim[2]; a[2]++)
		for (k[0] = 0; k[0] < g->k[0]; k[0]++)
		for (k[1] = 0; k[1] < g->k[1]; k[1]++)
		for (k[2] = 0; k[2] < g->k[2]; k[2]++) {
			int ok = 1, t;

			for (t = 0; t < 3; t++) {
				p[t] = a[t] * g->s[t] - g->pb[t] +
				       k[t] * g->dl[t];
				if (p[t] < 0 ||
				    p[t] >= (transposed ? g->out[t] : g->in[t]))
					ok = 0;
			}
			if (!ok)
				continue;
			{
				const int64_t *xi = transposed ? a : p;
				const int64_t *yo = transposed ? p : a;
				const int64_t *xd = g->in, *yd = g->out;
				float wv = wk[(k[0] * g->k[1] + k[1]) * g->k[2] +
					      k[2]];

				o[0] = (yo[0] * yd[1] + yo[1]) * yd[2] + yo[2];
				y[yc * out_sz + (size_t)o[0]] +=
					x[xc * in_sz + (size_t)((xi[0] * xd[1] +
								 xi[1]) * xd[2] +
								xi[2])] * wv;
			}
		}
	}
}

/*
 * Whether a conv that may sum in any order takes Winograd: a 3x3
 * stride-1 conv of one group (2-3x faster on one thread from 7x7 to
 * 56x56 images, 64 to 512 channels), with weights small enough that the
 * transformed copy, 4x their size and kept for the executor's life,
 * stays modest (resnet18: 38 MB for layer1-3, where layer4 alone would
 * add 113 MB).
 */
static int
wino_worth(const struct qr_conv_params *p)
{
	return qr_wino_f32_ok(p) && p->c_in * p->c_out <= WINO_MAX_WEIGHTS;
}

/*
 * Whether weights shaped as t are worth folding rather than reading as a
 * view: Winograd takes them (wino_worth, in a run that may sum in any
 * order), which needs them constant. Other convs read a view as fast.
 */
static int
conv_view_fold(const struct qr_op_call *c, size_t i, const struct qr_tensor *t)
{
	struct qr_diag quiet = {0};
	struct qr_op_win w;
	int ok;

	if (i != 1)
		return 0;
	ok = qr_op_win_parse(c, &quiet, &w) == QR_OK && wino_weight(&w, t);
	qr_diag_clear(&quiet);
	return ok;
}

static enum qr_status
conv_run(struct qr_op_call *c, struct qr_diag *d)
{
	struct conv_state *st = c->state;
	const struct qr_qview *wv = c->in_q != NULL ? c->in_q[1] : NULL;
	struct qr_conv_params p;
	struct conv_geom g;
	const float *bias = NULL;
	struct qr_tensor wt;
	float *wdq = NULL;
	enum qr_status s;
	void *ws;

	if ((s = conv_shape(c, d, &g)) != QR_OK)
		return s;
	if (c->out[0]->n_elem == 0)
		return QR_OK;
	if (qr_op_has_in(c, 2))
		bias = c->in[2]->data;
	if (c->in[0]->n_elem == 0) {
		size_t plane = c->out[0]->n_elem / (size_t)(g.n * g.cout), i;
		float *y = c->out[0]->data;

		for (i = 0; i < c->out[0]->n_elem; i++)
			y[i] = bias ? bias[i / plane % (size_t)g.cout] : 0.0f;
		return QR_OK;
	}
	/* weights given as a view: dequantized by the GEMM as it goes,
	 * else (3-D, scales along another axis) whole, for this run */
	wt = *c->in[1];
	if (wv != NULL) {
		qr_conv_f32_packed_free(st->pk);
		st->pk = g.nsp == 3 ? NULL :
			 conv_pack(c->in[1], st->win.group, 0, wv);
		if (st->pk == NULL) {
			wdq = xmalloc((wt.n_elem ? wt.n_elem : 1) *
				      sizeof *wdq);
			qr_dequantize_f32(wv->q, (enum qr_qtype)wv->qtype,
					  wv->outer, wv->axis_len, wv->inner,
					  wv->scale, wv->zp, wdq);
			wt.data = wdq;
		}
	}
	memset(&p, 0, sizeof p);
	geom_params(&g, &p);
	if (g.nsp == 3 && !st->transposed) {
		struct qr_conv_f32_packed *pk = qr_conv3d_f32_pack_view(
			p.c_out, p.c_in, p.kd, p.kh, p.kw, p.group, wt.data);

		ws = qr_op_ws(c, &st->ws, &st->ws_cap,
			      qr_conv_f32_workspace(pk, &p, c->n_threads));
		qr_conv_f32_run(pk, &p, c->in[0]->data, bias, c->out[0]->data,
				ws, c->n_threads);
		qr_conv_f32_packed_free(pk);
		free(wdq);
		return QR_OK;
	}
	if (g.nsp == 3) {
		conv3d_run(&g, st->transposed, c->in[0]->data, wt.data, bias,
			   c->out[0]->data);
		free(wdq);
		return QR_OK;
	}
	if (c->any_order && st->w_const && !st->transposed &&
	    wino_worth(&p)) {
		if (st->wino == NULL)
			st->wino = qr_wino_f32_new(p.c_out, p.c_in,
						   c->in[1]->data);
		ws = qr_op_ws(c, &st->ws, &st->ws_cap,
			      qr_wino_f32_workspace(st->wino, &p,
						    c->n_threads));
		qr_wino_f32_run(st->wino, &p, c->in[0]->data, bias,
				c->out[0]->data, ws, c->n_threads);
		return QR_OK;
	}
	if (!st->w_const && (wv == NULL || wdq != NULL)) {
		qr_conv_f32_packed_free(st->pk);
		st->pk = conv_pack(&wt, st->win.group, st->transposed, NULL);
		QR_ASSERT(st->pk != NULL);
	}
	ws = qr_op_ws(c, &st->ws, &st->ws_cap,
			   qr_conv_f32_workspace(st->pk, &p, c->n_threads));
	if (st->transposed)
		qr_convt_f32_run(st->pk, &p, c->in[0]->data, bias,
				 c->out[0]->data, ws, c->n_threads);
	else
		qr_conv_f32_run(st->pk, &p, c->in[0]->data, bias,
				c->out[0]->data, ws, c->n_threads);
	if (wdq != NULL) {
		/* the pack borrows wdq */
		qr_conv_f32_packed_free(st->pk);
		st->pk = NULL;
		free(wdq);
	}
	return QR_OK;
}

const struct qr_op_desc qr_op_conv = {
	.domain = "", .name = "Conv", .since = 1,
	.check = conv_check, .prepare = conv_prepare,
	.infer = conv_infer, .run = conv_run, .release = conv_release,
	.view_in = 1u << 1, /* the weights */
	.view_fold = conv_view_fold,
};

const struct qr_op_desc qr_op_conv_transpose = {
	.domain = "", .name = "ConvTranspose", .since = 1,
	.check = conv_check, .prepare = convt_prepare,
	.infer = conv_infer, .run = conv_run, .release = conv_release,
};
