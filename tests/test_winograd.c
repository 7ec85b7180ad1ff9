/*
 * test_winograd: the Winograd F(4x4, 3x3) conv (winograd.c) against a
 * double-precision direct convolution on random shapes: odd sizes,
 * images of 1 or 2 pixels across, asymmetric pads 0..2, batch 2,
 * channel counts 1..70 and past one GEMM K slice, with and without bias.
 *
 * Tolerance: |y - ref| <= TOL * S per output, with
 * S = |bias| + sum_ci max|x[ci] in the output's 6x6 tile| * sum |w[co][ci]|
 * (see ref_conv). A direct float sum of k = 9 c_in products is off by at
 * most about k * 2^-24 of sum |x||w| (Higham, 3.1); Winograd adds the
 * growth of its transforms (entries of B^T up to 5, of A^T up to 8;
 * Lavin & Gray 2015; Barabasz et al. 2020 measure F(4x4, 3x3) one to two
 * orders of magnitude less accurate than direct in float), and mixes
 * the whole tile. The largest error seen on these shapes is about 1e-6
 * of S; TOL = 2e-5 leaves a 20x margin yet is far below what a wrong
 * transform constant or a misplaced tile gives (errors of the size of
 * the outputs themselves, 1e-2 of S and more).
 *
 * The AVX-512 and portable paths do the same operations in the same
 * order, and tiles are independent, so both paths and 1 or 2 threads
 * must give the same bits.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tap.h"
#include "util/util.h"

#define TOL 2e-5

static uint32_t rng = 20240611; /* LCG state, fixed for reproducible shapes */

static uint32_t
rnd(void)
{
	rng = rng * 1664525u + 1013904223u;
	return rng >> 8;
}

static int
rnd_int(int lo, int hi) /* [lo, hi] */
{
	return lo + (int)(rnd() % (uint32_t)(hi - lo + 1));
}

/* Standard normal (Box-Muller), as real activations and weights. */
static float
rnd_gauss(void)
{
	double u = ((double)rnd() + 1.0) / 16777217.0;
	double v = (double)rnd() / 16777216.0;

	return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/*
 * Direct convolution in double. mag gets the scale Winograd's error
 * follows: |bias| + sum over c_in of sum |w[co][ci]| times the largest
 * |x[ci]| in the output's 6x6 input tile (tiles start at multiples of 4
 * of the output). Not sum |x||w| over the 3x3 window: the transforms mix
 * the whole tile, so an output that sees one small in-image tap (at a
 * padded corner) still carries rounding from its tile's large inputs.
 */
static void
ref_conv(const struct qr_conv_params *p, const float *x, const float *w,
	 const float *bias, double *y, double *mag)
{
	size_t oh = qr_conv_out_h(p), ow = qr_conv_out_w(p);
	size_t n, co, ci, i, j, a, b;

	for (n = 0; n < p->n; n++)
		for (co = 0; co < p->c_out; co++)
			for (i = 0; i < oh; i++)
				for (j = 0; j < ow; j++) {
					double s = bias ? bias[co] : 0.0;
					double m = fabs(s);
					size_t o = ((n * p->c_out + co) * oh + i) *
							   ow + j;

					for (ci = 0; ci < p->c_in; ci++) {
						const float *xc = x + (n * p->c_in + ci) *
								      p->h * p->w;
						const float *wc = w + (co * p->c_in + ci) * 9;
						double xmax = 0.0, wsum = 0.0;

						/* the output's 6x6 tile, padded coordinates */
						for (a = i / 4 * 4; a < i / 4 * 4 + 6; a++)
							for (b = j / 4 * 4; b < j / 4 * 4 + 6; b++)
								if (a >= p->pad_t && a - p->pad_t < p->h &&
								    b >= p->pad_l && b - p->pad_l < p->w &&
								    fabs(xc[(a - p->pad_t) * p->w + b - p->pad_l]) > xmax)
									xmax = fabs(xc[(a - p->pad_t) * p->w +
										       b - p->pad_l]);
						for (a = 0; a < 3; a++)
							for (b = 0; b < 3; b++) {
								size_t yy = i + a, xx = j + b;

								wsum += fabs(wc[a * 3 + b]);
								if (yy < p->pad_t || yy - p->pad_t >= p->h ||
								    xx < p->pad_l || xx - p->pad_l >= p->w)
									continue;
								s += (double)xc[(yy - p->pad_t) * p->w +
										xx - p->pad_l] *
								     wc[a * 3 + b];
							}
						m += xmax * wsum;
					}
					y[o] = s;
					mag[o] = m;
				}
}

/* Largest |y - ref| / S over ny outputs (NaN counts as failure). */
static double
worst(const float *y, const double *ref, const double *mag, size_t ny)
{
	double e = 0.0;
	size_t i;

	for (i = 0; i < ny; i++) {
		double d = fabs((double)y[i] - ref[i]) /
			   (mag[i] > 0.0 ? mag[i] : 1.0);

		if (!(d <= e))
			e = d; /* NaN sticks */
	}
	return e;
}

/* One shape: AVX-512 on 1 and 2 threads, portable on 1; every run's
 * workspace and output start as NaN so a read of unwritten scratch or
 * an output left unwritten shows. */
static void
check_shape(const struct qr_conv_params *p, int with_bias)
{
	size_t oh = qr_conv_out_h(p), ow = qr_conv_out_w(p);
	size_t nx = p->n * p->c_in * p->h * p->w, nw = p->c_out * p->c_in * 9;
	size_t ny = p->n * p->c_out * oh * ow, i, wsz;
	float *x = xmalloc((nx ? nx : 1) * sizeof *x);
	float *w = xmalloc((nw ? nw : 1) * sizeof *w);
	float *b = xmalloc(p->c_out * sizeof *b + 1);
	float *y[3];
	double *ref = xmalloc(ny * sizeof *ref), *mag = xmalloc(ny * sizeof *mag);
	double sd = sqrt(2.0 / (9.0 * (double)(p->c_in ? p->c_in : 1)));
	double e[3];
	struct qr_wino_f32 *wk;
	void *ws;
	int r;

	for (i = 0; i < nx; i++)
		x[i] = rnd_gauss();
	for (i = 0; i < nw; i++)
		w[i] = (float)(rnd_gauss() * sd);
	for (i = 0; i < p->c_out; i++)
		b[i] = 0.1f * rnd_gauss();
	ref_conv(p, x, w, with_bias ? b : NULL, ref, mag);
	wk = qr_wino_f32_new(p->c_out, p->c_in, w);
	/* the workspace for 2 threads also serves 1 */
	wsz = qr_wino_f32_workspace(wk, p, 2);
	if (qr_wino_f32_workspace(wk, p, 1) > wsz)
		wsz = qr_wino_f32_workspace(wk, p, 1);
	ws = xmalloc(wsz);
	for (r = 0; r < 3; r++) {
		y[r] = xmalloc(ny * sizeof *y[r]);
		memset(y[r], 0xff, ny * sizeof *y[r]);
		memset(ws, 0xff, wsz);
		qr_kernels_force_portable(r == 2);
		qr_wino_f32_run(wk, p, x, with_bias ? b : NULL, y[r], ws,
				r == 1 ? 2 : 1);
		qr_kernels_force_portable(0);
		e[r] = worst(y[r], ref, mag, ny);
	}
	ok(e[0] <= TOL && e[2] <= TOL,
	   "n%zu c%zu->%zu %zux%zu pads t%zu l%zu b%zu r%zu%s: within %g of S (SIMD %.2e, portable %.2e)",
	   p->n, p->c_in, p->c_out, p->h, p->w, p->pad_t, p->pad_l, p->pad_b,
	   p->pad_r, with_bias ? " bias" : "", TOL, e[0], e[2]);
	ok(memcmp(y[0], y[1], ny * sizeof *y[0]) == 0 &&
		   memcmp(y[0], y[2], ny * sizeof *y[0]) == 0,
	   "  same bits on 1 and 2 threads and on the portable path");
	qr_wino_f32_free(wk);
	free(ws);
	free(x);
	free(w);
	free(b);
	free(ref);
	free(mag);
	for (r = 0; r < 3; r++)
		free(y[r]);
}

static void
init_params(struct qr_conv_params *p, size_t n, size_t c_in, size_t c_out,
	    size_t h, size_t w, size_t pt, size_t pl, size_t pb, size_t pr)
{
	memset(p, 0, sizeof *p);
	p->n = n;
	p->c_in = c_in;
	p->c_out = c_out;
	p->h = h;
	p->w = w;
	p->kh = p->kw = 3;
	p->stride_h = p->stride_w = 1;
	p->dil_h = p->dil_w = 1;
	p->group = 1;
	p->pad_t = pt;
	p->pad_l = pl;
	p->pad_b = pb;
	p->pad_r = pr;
}

static void
test_ok(void)
{
	struct qr_conv_params p;
	int good;

	init_params(&p, 1, 8, 8, 5, 5, 1, 1, 1, 1);
	good = qr_wino_f32_ok(&p);
	p.stride_w = 2;
	good &= !qr_wino_f32_ok(&p);
	p.stride_w = 1;
	p.dil_h = 2;
	good &= !qr_wino_f32_ok(&p);
	p.dil_h = 1;
	p.group = 2;
	good &= !qr_wino_f32_ok(&p);
	p.group = 1;
	p.kw = 1;
	good &= !qr_wino_f32_ok(&p);
	p.kw = 3;
	p.out_pad_h = 1;
	good &= !qr_wino_f32_ok(&p);
	ok(good, "qr_wino_f32_ok takes 3x3 stride-1 undilated ungrouped convs only");
}

static void
test_bytes(void)
{
	static const float w[2 * 3 * 9];
	struct qr_wino_f32 *wk = qr_wino_f32_new(2, 3, w);

	ok(qr_wino_f32_bytes(wk) >= 36 * 3 * 2 * sizeof(float),
	   "transformed weights hold at least 36 floats per channel pair (%zu bytes)",
	   qr_wino_f32_bytes(wk));
	qr_wino_f32_free(wk);
	qr_wino_f32_free(NULL);
}

int
main(void)
{
	/* fixed shapes: edges, several blocks of tiles, K past one slice */
	static const size_t fixed[][10] = {
		/* n, c_in, c_out, h, w, pt, pl, pb, pr */
		{1, 1, 1, 1, 1, 1, 1, 1, 1},
		{1, 1, 1, 3, 3, 0, 0, 0, 0},
		{1, 2, 3, 1, 7, 2, 0, 0, 1},
		{2, 3, 5, 2, 2, 1, 2, 2, 1},
		{1, 4, 4, 4, 4, 0, 0, 0, 0},
		{1, 5, 6, 6, 6, 0, 0, 0, 0},
		{1, 16, 32, 8, 8, 1, 1, 1, 1},
		{1, 17, 33, 9, 10, 1, 1, 1, 1},
		{2, 64, 64, 30, 26, 1, 1, 1, 1},   /* many blocks */
		{1, 130, 40, 9, 9, 1, 0, 2, 1},    /* K of 2 slices */
		{1, 300, 20, 5, 6, 1, 1, 1, 1},    /* K of 3 slices */
		{2, 70, 70, 7, 7, 1, 1, 1, 1},
	};
	size_t i;
	int k;

	plan_no_plan();
	if (!(qr_kernels_cpu_features() & (QR_CPU_AVX512BW | QR_CPU_AVX2)))
		diag("no AVX-512 or AVX2 here: both runs take the portable "
		     "path");
	RUN(test_ok);
	RUN(test_bytes);
	for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		struct qr_conv_params p;
		const size_t *f = fixed[i];

		init_params(&p, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7],
			    f[8]);
		check_shape(&p, (int)(i % 2));
	}
	for (k = 0; k < 60; k++) {
		struct qr_conv_params p;

		do {
			init_params(&p, (size_t)rnd_int(1, 2),
				    (size_t)rnd_int(1, 70),
				    (size_t)rnd_int(1, 70),
				    (size_t)rnd_int(1, 13),
				    (size_t)rnd_int(1, 13),
				    (size_t)rnd_int(0, 2), (size_t)rnd_int(0, 2),
				    (size_t)rnd_int(0, 2),
				    (size_t)rnd_int(0, 2));
		} while (qr_conv_out_h(&p) == 0 || qr_conv_out_w(&p) == 0);
		check_shape(&p, k % 3 != 0);
	}
	return done();
}
