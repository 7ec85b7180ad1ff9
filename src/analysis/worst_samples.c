/*
 * worst_samples: the QR_WORST_SAMPLES samples whose outputs a candidate
 * matches worst (lowest output cosine, the lowest over its graph
 * outputs), each with its cosine at every compared tensor: where along
 * the depth that one sample went wrong. Nothing of a sample is kept
 * unless it is among the worst so far, so the memory is
 * QR_WORST_SAMPLES floats and one counter per pair (plus a thumbnail of
 * at most THUMB_SIDE x THUMB_SIDE pixels each when the data are images),
 * whatever the number of samples.
 *
 * The cumulative run of a candidate goes sample by sample, in order, on
 * one task at a time (act_sched.c), and qr_cmp_add leaves each pair's
 * last cosine in cum.cos_last: when the run has compared its outputs,
 * a pair whose cum.samples moved since the last sample was compared in
 * this one, and its cos_last is this sample's. A sample the float model
 * could not take never gets here (its runs fail), and the pairs' sums
 * are put back to what they were.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"

#define THUMB_SIDE 64            /* a thumbnail's longer side, pixels */

/* See analysis-int.h. */
void
qr_ws_setup(struct qr_ar_ctx *c)
{
	size_t k;

	for (k = 0; k < c->n_c; k++) {
		struct qr_ar_cand *q = &c->c[k];

		if (!q->ran)
			continue;
		q->worst = xcalloc(1, sizeof *q->worst);
		q->worst->seen = xcalloc(q->am.n + 1, sizeof *q->worst->seen);
		q->worst->images = c->o->source != NULL &&
				   strcmp(c->o->source, "images") == 0;
	}
}

/* The first input that looks like an image batch: float, rank 4, with 1
 * or 3 channels on axis 1 (NCHW) or else axis 3 (NHWC). *nhwc tells
 * which. NULL when none does. */
static const struct qr_tensor *
image_input(const struct qr_ar_slot *sl, int *nhwc)
{
	size_t i;

	for (i = 0; i < sl->n_ins; i++) {
		const struct qr_tensor *t = sl->ins[i];

		if (t == NULL || t->dtype != QR_DT_FLOAT || t->ndim != 4 ||
		    t->dims[2] < 1)
			continue;
		if (t->dims[1] == 1 || t->dims[1] == 3) {
			*nhwc = 0;
			return t;
		}
		if (t->dims[3] == 1 || t->dims[3] == 3) {
			*nhwc = 1;
			return t;
		}
	}
	return NULL;
}

/*
 * A thumbnail of the first image of the batch: box-averaged to at most
 * THUMB_SIDE pixels a side, each channel stretched from its min..max to
 * 0..255 (the preprocessing's scale, mean and std are linear per
 * channel, so this undoes them but for the contrast), grey images as
 * RGB. NULL when the sample is not an image.
 */
static uint8_t *
thumbnail(const struct qr_ar_slot *sl, int *tw, int *th)
{
	int nhwc = 0;
	const struct qr_tensor *t = image_input(sl, &nhwc);
	const float *x;
	size_t C, H, W, w, h, X, Y, c, i, j;
	uint8_t *rgb;
	double lo[3], hi[3];

	if (t == NULL)
		return NULL;
	x = t->data;
	C = (size_t)(nhwc ? t->dims[3] : t->dims[1]);
	H = (size_t)(nhwc ? t->dims[1] : t->dims[2]);
	W = (size_t)(nhwc ? t->dims[2] : t->dims[3]);
	if (H == 0 || W == 0)
		return NULL;
	w = W >= H ? (W < THUMB_SIDE ? W : THUMB_SIDE)
		   : (W * THUMB_SIDE + H - 1) / H;
	h = H >= W ? (H < THUMB_SIDE ? H : THUMB_SIDE)
		   : (H * THUMB_SIDE + W - 1) / W;
	w = w < 1 ? 1 : w > W ? W : w;
	h = h < 1 ? 1 : h > H ? H : h;
	for (c = 0; c < C; c++) {
		lo[c] = INFINITY;
		hi[c] = -INFINITY;
		for (i = 0; i < H * W; i++) {
			double v = nhwc ? x[i * C + c] : x[c * H * W + i];

			if (isfinite(v)) {
				lo[c] = v < lo[c] ? v : lo[c];
				hi[c] = v > hi[c] ? v : hi[c];
			}
		}
	}
	rgb = xcalloc(w * h * 3, 1);
	for (Y = 0; Y < h; Y++)
		for (X = 0; X < w; X++)
			for (c = 0; c < 3; c++) {
				size_t ch = C == 3 ? c : 0;
				double s = 0, n = 0, v;

				for (i = Y * H / h; i < (Y + 1) * H / h; i++)
					for (j = X * W / w; j < (X + 1) * W / w;
					     j++) {
						v = nhwc ? x[(i * W + j) * C + ch]
							 : x[(ch * H + i) * W + j];
						if (isfinite(v)) {
							s += v;
							n++;
						}
					}
				v = n > 0 && hi[ch] > lo[ch]
					? (s / n - lo[ch]) / (hi[ch] - lo[ch])
					: 0;
				rgb[(Y * w + X) * 3 + c] =
					(uint8_t)lround(255.0 * v);
			}
	*tw = (int)w;
	*th = (int)h;
	return rgb;
}

/* See analysis-int.h. */
void
qr_ws_note(struct qr_ar_cand *q, const struct qr_ar_slot *sl, double out_cos)
{
	struct qr_ws_store *w = q->worst;
	struct qr_ws_kept *e = NULL;
	size_t s, i, top = 0;

	if (w == NULL)
		return;
	s = w->next++;
	for (i = 1; i < w->n; i++)
		if (w->e[i].cos > w->e[top].cos ||
		    (w->e[i].cos == w->e[top].cos &&
		     w->e[i].sample > w->e[top].sample))
			top = i;
	if (!isnan(out_cos) && w->n < QR_WORST_SAMPLES)
		e = &w->e[w->n++];
	else if (!isnan(out_cos) && out_cos < w->e[top].cos)
		e = &w->e[top];
	if (e != NULL) {
		e->sample = s;
		e->cos = out_cos;
		if (e->trace == NULL)
			e->trace = xcalloc(q->am.n + 1, sizeof *e->trace);
		for (i = 0; i < q->am.n; i++)
			e->trace[i] = q->pairs[i].cum.samples != w->seen[i]
				? (float)q->pairs[i].cum.cos_last : NAN;
		free(e->thumb);
		e->thumb = w->images ? thumbnail(sl, &e->w, &e->h) : NULL;
	}
	for (i = 0; i < q->am.n; i++)
		w->seen[i] = q->pairs[i].cum.samples;
}

/* See analysis-int.h. */
void
qr_ws_results(struct qr_ar_ctx *c, size_t k, const long *pv, size_t n_pv)
{
	struct qr_act_run *r = &c->a->act_runs[k];
	struct qr_ws_store *w = c->c[k].worst;
	size_t i, j, order[QR_WORST_SAMPLES];

	if (w == NULL)
		return;
	for (i = 0; i < w->n; i++) {
		/* by cosine, then sample */
		for (j = i; j > 0 && (w->e[order[j - 1]].cos > w->e[i].cos ||
				      (w->e[order[j - 1]].cos == w->e[i].cos &&
				       w->e[order[j - 1]].sample >
					       w->e[i].sample)); j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (j = 0; j < w->n; j++) {
		struct qr_ws_kept *e = &w->e[order[j]];
		struct qr_worst_sample *o = &r->worst[j];

		o->sample = e->sample;
		o->cosine = e->cos;
		o->n_trace = n_pv;
		o->trace = xcalloc(n_pv + 1, sizeof *o->trace);
		for (i = 0; i < n_pv; i++)
			o->trace[i] = NAN;
		for (i = 0; i < c->c[k].am.n; i++)
			if (pv[i] >= 0 && (size_t)pv[i] < n_pv)
				o->trace[pv[i]] = e->trace[i];
		o->thumb = e->thumb;
		o->thumb_w = e->w;
		o->thumb_h = e->h;
		e->thumb = NULL;
	}
	r->n_worst = w->n;
}

/* See analysis-int.h. */
void
qr_ws_free(struct qr_ar_cand *q)
{
	size_t i;

	if (q->worst == NULL)
		return;
	for (i = 0; i < QR_WORST_SAMPLES; i++) {
		free(q->worst->e[i].trace);
		free(q->worst->e[i].thumb);
	}
	free(q->worst->seen);
	free(q->worst);
	q->worst = NULL;
}
