/*
 * outliers: activation outliers at the inputs of the weighted layers
 * (Conv, Gemm, and MatMul with a rank-2 constant weight), SmoothQuant's
 * view (Xiao et al. 2023, "SmoothQuant: Accurate and Efficient
 * Post-Training Quantization for Large Language Models"): a few input
 * channels with values far larger than the rest set the activation's
 * per-tensor scale, and the other channels keep few levels. Dividing
 * input channel j by s_j and multiplying the weights that read it by s_j
 * leaves the product unchanged and moves range from the activation to
 * the weight; with a_j = max |x_j| and w_j = max |W[., j, .]|,
 *
 *     s_j = a_j^alpha / w_j^(1 - alpha)
 *
 * (alpha 0.5 is the paper's default, 0 puts every channel's range on
 * the activation, 1 on the weight).
 *
 * The float run sums per input channel max |x|, sum x^2 and the tensor's
 * power sums (act_stats.c, chan.in, on the tensors qr_ol_setup marks);
 * qr_ol_results predicts, for no migration and for alpha on a grid, the
 * SQNR of the layer's output y_o = sum_j sum_t x_j W[o,j,t] (t the
 * kernel taps) as CLE's gain is predicted from ranges (cle.c): symmetric
 * int8 with a scale from the range, round half to even, activation per
 * tensor (Dx = max_j(a_j / s_j) / 127), weight per output channel
 * (Dw_o = max_{j,t} |W[o,j,t] s_j| / 127), input values taken as
 * uncorrelated with each other:
 *
 *     S = sum_o sum_j m_j sum_t W[o,j,t]^2           (m_j = mean x_j^2)
 *     N = sum_o sum_j [ Dx^2 / 12 * sum_t (W[o,j,t] s_j)^2
 *                      + m_j / s_j^2 * sum_t e[o,j,t]^2 ]
 *     SQNR = 10 log10(S / N)
 *
 * where the activation's rounding is uniform noise of Dx^2 / 12 and e is
 * the weight's actual rounding error, W s_j - Dw_o round(W s_j (1 /
 * Dw_o)), round half to even (as CLE's prediction rounds, maths.c).
 * tests/data/make_diag_fixtures.py computes the same with numpy.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "kernels/kernels.h"
#include "onnx/onnx.h"

#define QMAX 127.0               /* symmetric int8 */
#define HEAT_COLS 512            /* channels past this are max-pooled */

/* See analysis.h. */
void
qr_smooth_scales(const float *amax, const float *wr, size_t n, double alpha,
		 double *s)
{
	size_t j;

	for (j = 0; j < n; j++)
		s[j] = amax[j] > 0 && wr[j] > 0
			? pow(amax[j], alpha) / pow(wr[j], 1.0 - alpha) : 1.0;
}

/* A layer as the prediction reads it, with what does not depend on s
 * computed once. */
struct smooth {
	const float *w;          /* [out][in / groups][taps], or [in][out]
				  * (cols) */
	size_t out, in, groups, taps;
	int cols;                /* 1: w is a MatMul's B[K, N] as the model
				  * keeps it (one group, one tap), walked
				  * input channel by input channel */
	const float *amax;       /* per input channel */
	const double *msq;       /* per input channel */
	double *w2;              /* [out][in / groups]: sum_t W^2, or NULL
				  * for one tap (W^2 itself) */
	double *wmx;             /* [out][in / groups]: max_t |W|, or NULL
				  * for one tap */
	double *dw, *inv;        /* cols: [out], each evaluation's steps
				  * and their inverses */
	double sig;              /* S */
};

/* sum_t W^2 and max_t |W| of (o, j) of L (ij = o * (in / groups) + j). */
static inline double
w2_of(const struct smooth *L, size_t ij)
{
	double v = L->w[ij];

	return L->w2 != NULL ? L->w2[ij] : v * v;
}

static inline double
wmx_of(const struct smooth *L, size_t ij)
{
	return L->wmx != NULL ? L->wmx[ij] : fabs((double)L->w[ij]);
}

/* cols: w is [in][out] (a MatMul's B[K, N]), one group, one tap. */
static void
smooth_init(struct smooth *L, const float *w, size_t out, size_t in,
	    size_t groups, size_t taps, int cols, const float *amax,
	    const double *msq)
{
	size_t ig = in / groups, og = out / groups, o, j, t;

	L->w = w;
	L->out = out;
	L->in = in;
	L->groups = groups;
	L->taps = taps;
	L->cols = cols && groups == 1 && taps == 1;
	L->amax = amax;
	L->msq = msq;
	L->w2 = L->wmx = L->dw = L->inv = NULL;
	L->sig = 0;
	if (L->cols) {
		L->dw = xcalloc(out + 1, sizeof *L->dw);
		L->inv = xcalloc(out + 1, sizeof *L->inv);
		for (j = 0; j < in; j++) {
			const float *row = w + j * out;
			double w2 = 0;

			for (o = 0; o < out; o++)
				w2 += (double)row[o] * row[o];
			L->sig += msq[j] * w2;
		}
		return;
	}
	if (taps > 1) {
		/* a Gemm's or MatMul's would be its weight again, in double */
		L->w2 = xcalloc(out * ig + 1, sizeof *L->w2);
		L->wmx = xcalloc(out * ig + 1, sizeof *L->wmx);
	}
	for (o = 0; o < out; o++)
		for (j = 0; j < ig; j++) {
			const float *v = w + (o * ig + j) * taps;
			double w2 = 0, mx = 0;

			for (t = 0; t < taps && L->w2 != NULL; t++) {
				w2 += (double)v[t] * v[t];
				mx = fabs(v[t]) > mx ? fabs(v[t]) : mx;
			}
			if (L->w2 != NULL) {
				L->w2[o * ig + j] = w2;
				L->wmx[o * ig + j] = mx;
			}
			L->sig += msq[(o / og) * ig + j] * w2_of(L, o * ig + j);
		}
}

static void
smooth_free(struct smooth *L)
{
	free(L->w2);
	free(L->wmx);
	free(L->dw);
	free(L->inv);
}

/* Round half to even for |x| < 2^51 without a libm call (as maths.c's
 * round_even does for floats): adding 1.5 * 2^52 pushes the fraction
 * out of a double's mantissa, and the default rounding mode does the
 * rest. The quotients here are at most 127. */
static inline double
rne(double x)
{
	const double big = 6755399441055744.0; /* 1.5 * 2^52 */

	return (x + big) - big;
}

/* max |W| over the output channels and taps that read each input
 * channel, into r[in]. */
static void
smooth_ranges(const struct smooth *L, float *r)
{
	size_t ig = L->in / L->groups, og = L->out / L->groups, o, j, t;

	if (L->cols) {
		for (j = 0; j < L->in; j++)
			for (o = 0; o < L->out; o++)
				if (fabsf(L->w[j * L->out + o]) > r[j])
					r[j] = fabsf(L->w[j * L->out + o]);
		return;
	}
	for (o = 0; o < L->out; o++)
		for (j = 0; j < ig; j++)
			for (t = 0; t < L->taps; t++) {
				float a = fabsf(L->w[(o * ig + j) * L->taps + t]);
				size_t jj = (o / og) * ig + j;

				if (a > r[jj])
					r[jj] = a;
			}
}

/* smooth_eval's noise for a [in][out] weight, summed in the order the
 * weight is kept: the steps of every output channel first. */
static double
cols_noise(const struct smooth *L, const double *s, double dx2)
{
	size_t o, j;
	double noise = 0;

	for (o = 0; o < L->out; o++)
		L->dw[o] = 0;
	for (j = 0; j < L->in; j++) {
		const float *row = L->w + j * L->out;
		double sj = s != NULL ? s[j] : 1.0;

		for (o = 0; o < L->out; o++) {
			double v = fabs((double)row[o]) * sj;

			L->dw[o] = v > L->dw[o] ? v : L->dw[o];
		}
	}
	for (o = 0; o < L->out; o++) {
		L->dw[o] /= QMAX;
		L->inv[o] = L->dw[o] > 0 ? 1.0 / L->dw[o] : 0;
	}
	for (j = 0; j < L->in; j++) {
		const float *row = L->w + j * L->out;
		double sj = s != NULL ? s[j] : 1.0, a = dx2 * sj * sj;
		double b = L->msq[j] / (sj * sj);

		for (o = 0; o < L->out; o++) {
			double ws = row[o] * sj;
			double e = ws - rne(ws * L->inv[o]) * L->dw[o];

			noise += a * ((double)row[o] * row[o]) + b * (e * e);
		}
	}
	return noise;
}

/* The predicted SQNR of L with scales s (NULL: none). The weight's
 * rounding is v s_j - Dw round(v s_j / Dw), the quotient taken as a
 * product with 1 / Dw as CLE's prediction does (maths.c). */
static double
smooth_eval(const struct smooth *L, const double *s)
{
	size_t ig = L->in / L->groups, og = L->out / L->groups, o, j, t;
	double xmax = 0, dx2, noise = 0;

	for (j = 0; j < L->in; j++) {
		double v = s != NULL ? L->amax[j] / s[j] : L->amax[j];

		xmax = v > xmax ? v : xmax;
	}
	dx2 = (xmax / QMAX) * (xmax / QMAX) / 12.0;
	if (L->cols)
		noise = cols_noise(L, s, dx2);
	for (o = 0; o < L->out && !L->cols; o++) {
		const float *row = L->w + o * ig * L->taps;
		const double *sg = s != NULL ? s + (o / og) * ig : NULL;
		const double *mg = L->msq + (o / og) * ig;
		double wmax = 0, dw, inv;

		for (j = 0; j < ig; j++) {
			double v = wmx_of(L, o * ig + j) *
				   (sg != NULL ? sg[j] : 1.0);

			wmax = v > wmax ? v : wmax;
		}
		dw = wmax / QMAX;
		inv = dw > 0 ? 1.0 / dw : 0;
		for (j = 0; j < ig; j++) {
			const float *v = row + j * L->taps;
			double sj = sg != NULL ? sg[j] : 1.0, e2 = 0;

			for (t = 0; t < L->taps; t++) {
				double ws = v[t] * sj, e = ws - rne(ws * inv) * dw;

				e2 += e * e;
			}
			noise += dx2 * sj * sj * w2_of(L, o * ig + j) +
				 mg[j] / (sj * sj) * e2;
		}
	}
	if (!(L->sig > 0))
		return NAN;
	if (noise == 0)
		return INFINITY;
	return 10.0 * log10(L->sig / noise);
}

/* See analysis.h and the top of this file. */
double
qr_smooth_sqnr(const float *w, size_t out, size_t in, size_t groups,
	       size_t taps, const float *amax, const double *msq,
	       const double *s)
{
	struct smooth L;
	double r;

	smooth_init(&L, w, out, in, groups, taps, 0, amax, msq);
	r = smooth_eval(&L, s);
	smooth_free(&L);
	return r;
}

/* The input-channel axis of layer wl's input (-1: the last), or -2 when
 * the layer is not analysed: a Conv (axis 1), a Gemm (A's K axis), a
 * MatMul with a rank-2 weight (the last). */
static int
in_axis(const struct qr_an_wlayer *wl)
{
	const struct qr_node *n = wl->n;

	if (n->domain[0] != '\0')
		return -2;
	if (wl->family == QR_AN_FAM_CONV)
		return 1;
	if (wl->family != QR_AN_FAM_MATMUL || wl->w->ndim != 2)
		return -2;
	if (strcmp(n->op_type, "Gemm") == 0)
		return qr_node_attr_int(n, "transA", 0) != 0 ? 0 : -1;
	return strcmp(n->op_type, "MatMul") == 0 ? -1 : -2;
}

/* See analysis-int.h. */
void
qr_ol_setup(struct qr_ar_ctx *c)
{
	struct qr_an_wlayer *fl = NULL;
	size_t n = 0, i, fi;
	int ax;

	if (qr_an_wlayers(c->fg, &fl, &n, NULL) != QR_OK)
		return;
	for (i = 0; i < n; i++) {
		struct qr_ar_ftens *f;

		if ((ax = in_axis(&fl[i])) == -2 ||
		    (fi = qr_ar_ft_find(c, fl[i].n->in[0])) == QR_AR_NONE)
			continue;
		f = &c->ft[fi];
		if (f->chan.in != NULL)
			continue;
		f->chan.in = xcalloc(1, sizeof *f->chan.in);
		f->chan.in->axis = ax;
	}
	free(fl);
}

static int
cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* numpy's median of v[0..n) (the mean of the middle two for even n). */
static double
median(const float *v, size_t n)
{
	float *s = xmalloc((n ? n : 1) * sizeof *s);
	double m;

	if (n == 0) {
		free(s);
		return NAN;
	}
	memcpy(s, v, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_float);
	m = n % 2 ? s[n / 2] : ((double)s[n / 2 - 1] + s[n / 2]) / 2.0;
	free(s);
	return m;
}

/*
 * The layer's weight as floats and its shape, or NULL when its input
 * channels are not `in`: a Conv's W[M, C/g, k...] and a Gemm's B[N, K]
 * with transB are [out][in / groups][taps]; a Gemm's or MatMul's B[K, N]
 * is [in][out] (*cols 1), read where the model keeps it when it is
 * float (a decoder's lm_head is 250 MB). *own is what to free.
 */
static const float *
weight_of(const struct qr_an_wlayer *wl, size_t in, size_t *out,
	  size_t *groups, size_t *taps, int *cols, float **own)
{
	const struct qr_tensor_data *w = wl->w;
	const float *v;
	int k, owned = 0;

	*own = NULL;
	*groups = *taps = 1;
	*cols = wl->family != QR_AN_FAM_CONV &&
		!(strcmp(wl->n->op_type, "Gemm") == 0 &&
		  qr_node_attr_int(wl->n, "transB", 0) != 0);
	if (*cols && (w->ndim != 2 || (size_t)w->dims[0] != in))
		return NULL;
	if ((v = qr_an_f32_view(w, &owned)) == NULL)
		return NULL;
	if (owned)
		*own = (float *)v;
	if (*cols) {
		*out = (size_t)w->dims[1];
		return v;
	}
	*out = (size_t)w->dims[0];
	if (wl->family == QR_AN_FAM_CONV) {
		*groups = (size_t)wl->group;
		for (k = 2; k < w->ndim; k++)
			*taps *= (size_t)w->dims[k];
	}
	if ((size_t)w->dims[1] * *groups == in)
		return v;
	free(*own);
	*own = NULL;
	return NULL;
}

/* log10(v[j] / med), max-pooled from n channels to cols (NaN where not
 * positive), into row. */
static void
heat_row(const double *v, size_t n, size_t cols, float *row)
{
	float *t = xmalloc((n ? n : 1) * sizeof *t);
	double med;
	size_t i, j;

	for (j = 0; j < n; j++)
		t[j] = (float)v[j];
	med = median(t, n);
	free(t);
	for (i = 0; i < cols; i++) {
		double m = NAN;

		for (j = i * n / cols; j < (i + 1) * n / cols; j++) {
			double x = v[j] > 0 && med > 0 ? log10(v[j] / med) : NAN;

			if (!isnan(x) && (isnan(m) || x > m))
				m = x;
		}
		row[i] = (float)m;
	}
}

/* One layer's outlier view, or 0 when its input was not summed or its
 * weight does not fit it. */
static int
layer_outlier(struct qr_ar_ctx *c, const struct qr_an_wlayer *wl,
	      struct qr_act_outlier *o)
{
	size_t fi = qr_ar_ft_find(c, wl->n->in[0]), J, out, groups, taps;
	size_t j, k;
	const struct qr_as_inch *in;
	double *msq, *s, *v, n, mu, c2, c4;
	struct smooth L;
	const float *w;
	float *own;
	int cols;

	if (fi == QR_AR_NONE || (in = c->ft[fi].chan.in) == NULL ||
	    in->ch == 0 || in->n == 0)
		return 0;
	J = in->ch;
	if ((w = weight_of(wl, J, &out, &groups, &taps, &cols, &own)) == NULL)
		return 0;
	memset(o, 0, sizeof *o);
	o->layer = xstrdup(wl->n->name);
	o->op = xstrdup(wl->n->op_type);
	o->tensor = c->ft[fi].out;
	o->depth = wl->depth;
	o->channels = J;
	o->act_absmax = xmalloc(J * sizeof *o->act_absmax);
	o->w_range = xcalloc(J, sizeof *o->w_range);
	msq = xcalloc(J, sizeof *msq);
	s = xmalloc(J * sizeof *s);
	v = xmalloc(J * sizeof *v);
	memcpy(o->act_absmax, in->amax, J * sizeof *o->act_absmax);
	for (j = 0; j < J; j++) {
		msq[j] = in->cnt[j] ? in->ss[j] / (double)in->cnt[j] : 0;
		if (o->act_absmax[j] > o->act_absmax[o->top_channel])
			o->top_channel = j;
	}
	o->absmax_max = o->act_absmax[o->top_channel];
	o->absmax_median = median(o->act_absmax, J);
	o->max_over_median = o->absmax_median > 0
		? o->absmax_max / o->absmax_median : NAN;
	/* central moments from the power sums */
	n = (double)in->n;
	mu = in->m[0] / n;
	c2 = in->m[1] / n - mu * mu;
	c4 = in->m[3] / n - 4 * mu * in->m[2] / n + 6 * mu * mu * in->m[1] / n -
	     3 * mu * mu * mu * mu;
	o->kurtosis = c2 > 0 ? c4 / (c2 * c2) : NAN;
	smooth_init(&L, w, out, J, groups, taps, cols, o->act_absmax, msq);
	smooth_ranges(&L, o->w_range);
	o->sqnr_none_db = smooth_eval(&L, NULL);
	o->best_alpha = NAN;
	o->best_sqnr_db = NAN;
	for (k = 0; k < QR_OL_ALPHAS; k++) {
		double al = (double)k / (QR_OL_ALPHAS - 1);

		qr_smooth_scales(o->act_absmax, o->w_range, J, al, s);
		o->sqnr_db[k] = smooth_eval(&L, s);
		if (!isnan(o->sqnr_db[k]) &&
		    (isnan(o->best_sqnr_db) || o->sqnr_db[k] > o->best_sqnr_db)) {
			o->best_sqnr_db = o->sqnr_db[k];
			o->best_alpha = al;
		}
	}
	o->heat_cols = J < HEAT_COLS ? J : HEAT_COLS;
	o->heat = xmalloc(4 * o->heat_cols * sizeof *o->heat);
	qr_smooth_scales(o->act_absmax, o->w_range, J, 0.5, s);
	for (k = 0; k < 4; k++) {
		for (j = 0; j < J; j++) {
			double x = k % 2 == 0 ? o->act_absmax[j] : o->w_range[j];

			v[j] = k < 2 ? x : k == 2 ? x / s[j] : x * s[j];
		}
		heat_row(v, J, o->heat_cols, o->heat + k * o->heat_cols);
	}
	smooth_free(&L);
	free(v);
	free(s);
	free(msq);
	free(own);
	return 1;
}

/* The layers of qr_ol_results, one task each. */
struct ol_job {
	struct qr_ar_ctx *c;
	const struct qr_an_wlayer *fl;
	struct qr_act_outlier *o; /* per layer */
	int *done;               /* per layer: o filled */
};

static void
ol_task(void *ctx, size_t i, int slot)
{
	struct ol_job *j = ctx;

	(void)slot;
	j->done[i] = in_axis(&j->fl[i]) != -2 &&
		     layer_outlier(j->c, &j->fl[i], &j->o[i]);
}

/* See analysis-int.h. The layers are independent: they are computed on
 * the run's threads, each into its own entry, then kept in order. */
void
qr_ol_results(struct qr_ar_ctx *c)
{
	struct qr_analysis *a = c->a;
	struct qr_an_wlayer *fl = NULL;
	struct ol_job j;
	size_t n = 0, i;

	if (qr_an_wlayers(c->fg, &fl, &n, NULL) != QR_OK)
		return;
	j.c = c;
	j.fl = fl;
	j.o = xcalloc(n + 1, sizeof *j.o);
	j.done = xcalloc(n + 1, sizeof *j.done);
	qr_parallel_for(c->o->n_threads > 0 ? c->o->n_threads : 1, n, ol_task,
			&j);
	a->outliers = xcalloc(n + 1, sizeof *a->outliers);
	for (i = 0; i < n; i++)
		if (j.done[i])
			a->outliers[a->n_outliers++] = j.o[i];
	free(j.done);
	free(j.o);
	free(fl);
}

/* See analysis-int.h. */
void
qr_ol_free(struct qr_analysis *a)
{
	size_t i;

	for (i = 0; i < a->n_outliers; i++) {
		free(a->outliers[i].layer);
		free(a->outliers[i].op);
		free(a->outliers[i].act_absmax);
		free(a->outliers[i].w_range);
		free(a->outliers[i].heat);
	}
	free(a->outliers);
	a->outliers = NULL;
	a->n_outliers = 0;
}
