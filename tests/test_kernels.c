/*
 * test_kernels: the kernels against literal arrays (examples of the ONNX
 * spec) and against naive reference loops written here, on random small
 * shapes. Integer paths must match exactly, and the AVX-512 VNNI path must
 * match the portable one bit for bit.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tap.h"
#include "util/util.h"

static uint32_t rng = 12345; /* LCG state, fixed for reproducible shapes */

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

static float
rnd_f(void)
{
	return (float)rnd() / 16777216.0f * 2.0f - 1.0f;
}

/* ---- float GEMM ---- */

static void
test_gemm(void)
{
	/* A 2x3, B 3x2 */
	static const float a[6] = {1, 2, 3, 4, 5, 6};
	static const float at[6] = {1, 4, 2, 5, 3, 6}; /* A^T, 3x2 */
	static const float b[6] = {7, 8, 9, 10, 11, 12};
	static const float bt[6] = {7, 9, 11, 8, 10, 12}; /* B^T, 2x3 */
	static const float want[4] = {58, 64, 139, 154};
	float c[4];
	int ta, tb, i, good;

	for (ta = 0; ta < 2; ta++) {
		for (tb = 0; tb < 2; tb++) {
			for (i = 0; i < 4; i++)
				c[i] = 100.0f;
			qr_gemm_f32(ta, tb, 2, 2, 3, 1.0f, ta ? at : a,
				    ta ? 2 : 3, tb ? bt : b, tb ? 3 : 2, 0.0f,
				    c, 2);
			good = 1;
			for (i = 0; i < 4; i++)
				good &= c[i] == want[i];
			ok(good, "gemm trans_a=%d trans_b=%d", ta, tb);
		}
	}
	for (i = 0; i < 4; i++)
		c[i] = 1.0f;
	qr_gemm_f32(0, 0, 2, 2, 3, 2.0f, a, 3, b, 2, 0.5f, c, 2);
	ok(c[0] == 116.5f && c[3] == 308.5f, "gemm alpha and beta");
}

/* ---- float conv ---- */

static void
conv_ref(const struct qr_conv_params *p, const float *x, const float *w,
	 const float *bias, float *y)
{
	size_t oh_n = qr_conv_out_h(p), ow_n = qr_conv_out_w(p);
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t n, co, oh, ow, ci, ki, kj;

	for (n = 0; n < p->n; n++)
		for (co = 0; co < p->c_out; co++)
			for (oh = 0; oh < oh_n; oh++)
				for (ow = 0; ow < ow_n; ow++) {
					double s = bias ? bias[co] : 0;
					size_t g = co / cout_g;

					for (ci = 0; ci < cin_g; ci++)
						for (ki = 0; ki < p->kh; ki++)
							for (kj = 0; kj < p->kw; kj++) {
								long ih = (long)(oh * p->stride_h + ki * p->dil_h) - (long)p->pad_t;
								long iw = (long)(ow * p->stride_w + kj * p->dil_w) - (long)p->pad_l;

								if (ih < 0 || iw < 0 || ih >= (long)p->h || iw >= (long)p->w)
									continue;
								s += (double)x[((n * p->c_in + g * cin_g + ci) * p->h + ih) * p->w + iw] *
								     w[((co * cin_g + ci) * p->kh + ki) * p->kw + kj];
							}
					y[((n * p->c_out + co) * oh_n + oh) * ow_n + ow] = (float)s;
				}
}

static void
convt_ref(const struct qr_conv_params *p, const float *x, const float *w,
	  const float *bias, float *y)
{
	size_t oh_n = qr_convt_out_h(p), ow_n = qr_convt_out_w(p);
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t n, co, ci, ih, iw, ki, kj, i;

	for (n = 0; n < p->n; n++)
		for (co = 0; co < p->c_out; co++)
			for (i = 0; i < oh_n * ow_n; i++)
				y[(n * p->c_out + co) * oh_n * ow_n + i] = bias ? bias[co] : 0;
	for (n = 0; n < p->n; n++)
		for (ci = 0; ci < p->c_in; ci++)
			for (ih = 0; ih < p->h; ih++)
				for (iw = 0; iw < p->w; iw++)
					for (co = 0; co < cout_g; co++)
						for (ki = 0; ki < p->kh; ki++)
							for (kj = 0; kj < p->kw; kj++) {
								size_t g = ci / cin_g;
								long oh = (long)(ih * p->stride_h + ki * p->dil_h) - (long)p->pad_t;
								long ow = (long)(iw * p->stride_w + kj * p->dil_w) - (long)p->pad_l;

								if (oh < 0 || ow < 0 || oh >= (long)oh_n || ow >= (long)ow_n)
									continue;
								y[((n * p->c_out + g * cout_g + co) * oh_n + oh) * ow_n + ow] +=
								    x[((n * p->c_in + ci) * p->h + ih) * p->w + iw] *
								    w[((ci * cout_g + co) * p->kh + ki) * p->kw + kj];
							}
}

static int
near_all(const float *a, const float *b, size_t n, float tol, size_t *bad)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(fabsf(a[i] - b[i]) <= tol + tol * fabsf(b[i]))) {
			*bad = i;
			return 0;
		}
	return 1;
}

/* Random shape of the kind named; depthwise/pointwise forced by kind. */
static struct qr_conv_params
rand_params(int kind)
{
	struct qr_conv_params p;
	size_t g;

	memset(&p, 0, sizeof p);
	p.n = (size_t)rnd_int(1, 2);
	g = kind == 1 ? (size_t)rnd_int(2, 5) : (size_t)rnd_int(1, 3);
	p.group = g;
	p.c_in = g * (kind == 1 ? 1 : (size_t)rnd_int(1, 5));
	p.c_out = g * (kind == 1 ? (size_t)rnd_int(1, 2) : (size_t)rnd_int(1, 6));
	p.h = (size_t)rnd_int(3, 11);
	p.w = (size_t)rnd_int(3, 23);
	if (kind == 2) {
		p.kh = p.kw = 1;
		p.stride_h = p.stride_w = p.dil_h = p.dil_w = 1;
		return p;
	}
	p.kh = (size_t)rnd_int(1, 3);
	p.kw = (size_t)rnd_int(1, 3);
	p.stride_h = (size_t)rnd_int(1, 2);
	p.stride_w = (size_t)rnd_int(1, 3);
	p.dil_h = (size_t)rnd_int(1, 2);
	p.dil_w = (size_t)rnd_int(1, 2);
	p.pad_t = (size_t)rnd_int(0, 2);
	p.pad_l = (size_t)rnd_int(0, 2);
	p.pad_b = (size_t)rnd_int(0, 2);
	p.pad_r = (size_t)rnd_int(0, 1);
	return p;
}

static void
test_conv_f32(void)
{
	static const char *kinds[] = {"general", "depthwise", "pointwise"};
	int t;

	for (t = 0; t < 36; t++) {
		int kind = t % 3;
		struct qr_conv_params p = rand_params(kind);
		size_t cin_g = p.c_in / p.group;
		size_t nx = p.n * p.c_in * p.h * p.w;
		size_t nw = p.c_out * cin_g * p.kh * p.kw;
		size_t ny = p.n * p.c_out * qr_conv_out_h(&p) * qr_conv_out_w(&p);
		float *x = xmalloc(nx * 4), *w = xmalloc(nw * 4);
		float *b = xmalloc(p.c_out * 4), *y = xmalloc(ny * 4 + 4);
		float *r = xmalloc(ny * 4 + 4);
		struct qr_conv_f32_packed *pk;
		void *ws;
		size_t i, bad = 0;

		for (i = 0; i < nx; i++)
			x[i] = rnd_f();
		for (i = 0; i < nw; i++)
			w[i] = rnd_f();
		for (i = 0; i < p.c_out; i++)
			b[i] = rnd_f();
		pk = qr_conv_f32_pack_new(p.c_out, p.c_in, p.kh, p.kw, p.group,
					  w);
		ws = xmalloc(qr_conv_f32_workspace(pk, &p, 1 + t % 3) + 1);
		qr_conv_f32_run(pk, &p, x, t % 2 ? b : NULL, y, ws, 1 + t % 3);
		conv_ref(&p, x, w, t % 2 ? b : NULL, r);
		if (!ok(near_all(y, r, ny, 1e-5f, &bad),
			"conv f32 %s #%d: n%zu c%zu->%zu g%zu %zux%zu k%zux%zu s%zu,%zu d%zu,%zu p%zu,%zu,%zu,%zu",
			kinds[kind], t, p.n, p.c_in, p.c_out, p.group, p.h, p.w,
			p.kh, p.kw, p.stride_h, p.stride_w, p.dil_h, p.dil_w,
			p.pad_t, p.pad_l, p.pad_b, p.pad_r))
			diag("at %zu: got %g want %g", bad, y[bad], r[bad]);
		qr_conv_f32_packed_free(pk);
		free(ws);
		free(x);
		free(w);
		free(b);
		free(y);
		free(r);
	}
}

static void
test_convt_f32(void)
{
	int t;

	for (t = 0; t < 12; t++) {
		struct qr_conv_params p = rand_params(0);
		size_t cout_g = p.c_out / p.group;
		size_t nx, nw, ny, i, bad = 0;
		float *x, *w, *b, *y, *r;
		struct qr_conv_f32_packed *pk;
		void *ws;

		p.out_pad_h = p.stride_h > 1 ? (size_t)rnd_int(0, 1) : 0;
		p.pad_b = p.pad_t = 0;
		if (p.kh * p.dil_h > 2)
			p.pad_t = 1;
		nx = p.n * p.c_in * p.h * p.w;
		nw = p.c_in * cout_g * p.kh * p.kw;
		ny = p.n * p.c_out * qr_convt_out_h(&p) * qr_convt_out_w(&p);
		x = xmalloc(nx * 4);
		w = xmalloc(nw * 4);
		b = xmalloc(p.c_out * 4);
		y = xmalloc(ny * 4 + 4);
		r = xmalloc(ny * 4 + 4);
		for (i = 0; i < nx; i++)
			x[i] = rnd_f();
		for (i = 0; i < nw; i++)
			w[i] = rnd_f();
		for (i = 0; i < p.c_out; i++)
			b[i] = rnd_f();
		pk = qr_convt_f32_pack_new(p.c_out, p.c_in, p.kh, p.kw,
					   p.group, w);
		ws = xmalloc(qr_conv_f32_workspace(pk, &p, 1) + 1);
		qr_convt_f32_run(pk, &p, x, b, y, ws, 1);
		convt_ref(&p, x, w, b, r);
		if (!ok(near_all(y, r, ny, 1e-5f, &bad),
			"convtranspose f32 #%d: c%zu->%zu g%zu %zux%zu k%zux%zu s%zu,%zu d%zu,%zu",
			t, p.c_in, p.c_out, p.group, p.h, p.w, p.kh, p.kw,
			p.stride_h, p.stride_w, p.dil_h, p.dil_w))
			diag("at %zu: got %g want %g", bad, y[bad], r[bad]);
		qr_conv_f32_packed_free(pk);
		free(ws);
		free(x);
		free(w);
		free(b);
		free(y);
		free(r);
	}
}

/* ---- integer conv and gemm ---- */

static int32_t
ld8(const void *p, size_t i, int is_signed)
{
	return is_signed ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* Reference requantization, written independently of qconv.c: rintf in
 * the default rounding mode is round half to even. */
static int32_t
requant_ref(int64_t acc, float scale, int32_t zp, int y_signed)
{
	float v = (float)(int32_t)acc * scale;
	long r = lrintf(v) + zp;
	long lo = y_signed ? -128 : 0, hi = y_signed ? 127 : 255;

	return (int32_t)(r < lo ? lo : r > hi ? hi : r);
}

static void
qconv_ref(const struct qr_conv_params *p, const void *x, int xs, int32_t xz,
	  const void *w, int ws_, const int32_t *wz, size_t nwz,
	  int64_t *acc)
{
	size_t oh_n = qr_conv_out_h(p), ow_n = qr_conv_out_w(p);
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t n, co, oh, ow, ci, ki, kj;

	for (n = 0; n < p->n; n++)
		for (co = 0; co < p->c_out; co++)
			for (oh = 0; oh < oh_n; oh++)
				for (ow = 0; ow < ow_n; ow++) {
					int64_t s = 0;
					size_t g = co / cout_g;

					for (ci = 0; ci < cin_g; ci++)
						for (ki = 0; ki < p->kh; ki++)
							for (kj = 0; kj < p->kw; kj++) {
								long ih = (long)(oh * p->stride_h + ki * p->dil_h) - (long)p->pad_t;
								long iw = (long)(ow * p->stride_w + kj * p->dil_w) - (long)p->pad_l;
								int32_t xv = xz;

								if (ih >= 0 && iw >= 0 && ih < (long)p->h && iw < (long)p->w)
									xv = ld8(x, ((n * p->c_in + g * cin_g + ci) * p->h + ih) * p->w + iw, xs);
								s += (int64_t)(xv - xz) *
								     (ld8(w, ((co * cin_g + ci) * p->kh + ki) * p->kw + kj, ws_) - wz[nwz == 1 ? 0 : co]);
							}
					acc[((n * p->c_out + co) * oh_n + oh) * ow_n + ow] = s;
				}
}

static void
fill8(void *p, size_t n, int is_signed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (is_signed)
			((int8_t *)p)[i] = (int8_t)rnd_int(-128, 127);
		else
			((uint8_t *)p)[i] = (uint8_t)rnd_int(0, 255);
	}
}

static const char *
kinds_name(int kind)
{
	return kind == 0 ? "general" : kind == 1 ? "depthwise" : "pointwise";
}

static void
test_qconv(void)
{
	int t;

	for (t = 0; t < 48; t++) {
		int kind = t % 3, xs = (t / 3) % 2, wsg = (t / 6) % 2;
		int ys = rnd_int(0, 1), per_ch = t % 4 != 0;
		struct qr_conv_params p = rand_params(kind);
		size_t cin_g = p.c_in / p.group;
		size_t nx = p.n * p.c_in * p.h * p.w;
		size_t nw = p.c_out * cin_g * p.kh * p.kw;
		size_t ny = p.n * p.c_out * qr_conv_out_h(&p) * qr_conv_out_w(&p);
		size_t ohw = qr_conv_out_h(&p) * qr_conv_out_w(&p);
		void *x = xmalloc(nx + 1), *w = xmalloc(nw + 1);
		int32_t *wz = xmalloc(p.c_out * 4), *bias = xmalloc(p.c_out * 4);
		float *scale = xmalloc(p.c_out * 4);
		int64_t *acc = xmalloc(ny * 8 + 8);
		int32_t *y32 = xmalloc(ny * 4 + 4), *y32p = xmalloc(ny * 4 + 4);
		uint8_t *y = xmalloc(ny + 1), *yp = xmalloc(ny + 1);
		struct qr_qconv_packed *pk;
		struct qr_qconv_quant q;
		void *wsp;
		size_t i, n_bad8 = 0, n_bad32 = 0, n_diff = 0;
		int32_t xz = xs ? rnd_int(-20, 20) : rnd_int(100, 150);

		fill8(x, nx, xs);
		fill8(w, nw, wsg);
		for (i = 0; i < p.c_out; i++) {
			wz[i] = wsg ? rnd_int(-10, 10) : rnd_int(118, 138);
			bias[i] = rnd_int(-5000, 5000);
			scale[i] = qr_requant_scale(0.02f + 0.001f * (float)rnd_int(0, 9),
						    0.001f * (float)rnd_int(1, 20), 0.5f);
		}
		pk = qr_qconv_pack_new(p.c_out, p.c_in, p.kh, p.kw, p.group, w,
				       wsg, wz, per_ch ? p.c_out : 1);
		wsp = xmalloc(qr_qconv_workspace(pk, &p, 3));
		q.x_signed = xs;
		q.x_zp = xz;
		q.bias = bias;
		q.scale = scale;
		q.n_scale = per_ch ? p.c_out : 1;
		q.y_signed = ys;
		q.y_zp = ys ? rnd_int(-10, 10) : rnd_int(100, 150);
		qconv_ref(&p, x, xs, xz, w, wsg, wz, per_ch ? p.c_out : 1, acc);

		/* fast paths on 3 threads, portable ones on 1 */
		qr_kernels_force_portable(0);
		qr_qconv_run(pk, &p, x, &q, y, wsp, 3);
		qr_qconv_run_s32(pk, &p, x, xs, xz, y32, wsp, 3);
		qr_kernels_force_portable(1);
		qr_qconv_run(pk, &p, x, &q, yp, wsp, 1);
		qr_qconv_run_s32(pk, &p, x, xs, xz, y32p, wsp, 1);
		qr_kernels_force_portable(0);
		for (i = 0; i < ny; i++) {
			size_t co = (i / ohw) % p.c_out;
			int32_t want = requant_ref(acc[i] + bias[co],
						   scale[per_ch ? co : 0],
						   q.y_zp, ys);
			int32_t got = ys ? (int8_t)y[i] : y[i];

			n_bad8 += got != want;
			n_bad32 += y32[i] != (int32_t)acc[i];
			n_diff += y[i] != yp[i] || y32[i] != y32p[i];
		}
		ok(n_bad8 == 0 && n_bad32 == 0,
		   "qconv exact %s #%d: x%s w%s y%s zp%s c%zu->%zu g%zu k%zux%zu s%zu,%zu d%zu,%zu (%zu/%zu/%zu bad)",
		   kinds_name(kind), t, xs ? "s8" : "u8", wsg ? "s8" : "u8",
		   ys ? "s8" : "u8", per_ch ? "/ch" : "", p.c_in, p.c_out,
		   p.group, p.kh, p.kw, p.stride_h, p.stride_w, p.dil_h,
		   p.dil_w, n_bad8, n_bad32, ny);
		ok(n_diff == 0, "qconv #%d: %s and portable paths agree", t,
		   qr_kernels_igemm_path());
		qr_qconv_packed_free(pk);
		free(wsp);
		free(x);
		free(w);
		free(wz);
		free(bias);
		free(scale);
		free(acc);
		free(y32);
		free(y32p);
		free(y);
		free(yp);
	}
}

static void
test_qgemm(void)
{
	int t;

	for (t = 0; t < 16; t++) {
		int as = t % 2, bs = (t / 2) % 2, tb = (t / 4) % 2;
		size_t m = (size_t)rnd_int(1, 40), n = (size_t)rnd_int(1, 70);
		size_t k = (size_t)rnd_int(1, 300);
		size_t nzp = t % 3 ? n : 1, i, j, kk, bad = 0, diff = 0;
		void *a = xmalloc(m * k), *b = xmalloc(k * n);
		int32_t *bz = xmalloc(n * 4), *c = xmalloc(m * (n + 3) * 4);
		int32_t *c2 = xmalloc(m * (n + 3) * 4);
		int32_t az = as ? rnd_int(-128, 127) : rnd_int(0, 255);
		struct qr_qgemm_packed *pk;
		void *ws;

		if (t == 15) /* large depth, worst-case values */
			k = 2000;
		free(a);
		free(b);
		a = xmalloc(m * k);
		b = xmalloc(k * n);
		fill8(a, m * k, as);
		fill8(b, k * n, bs);
		if (t == 15) {
			memset(a, as ? 0x80 : 0xff, m * k);
			memset(b, bs ? 0x80 : 0x00, k * n);
			az = 0;
		}
		for (i = 0; i < n; i++)
			bz[i] = bs ? rnd_int(-128, 127) : rnd_int(0, 255);
		pk = qr_qgemm_pack_new(b, bs, tb, k, n, bz, nzp);
		ws = xmalloc(qr_qgemm_workspace(pk, m, 2));
		qr_qgemm_run(pk, a, as, az, m, c, n + 3, ws, 2);
		qr_kernels_force_portable(1);
		qr_qgemm_run(pk, a, as, az, m, c2, n + 3, ws, 1);
		qr_kernels_force_portable(0);
		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++) {
				int64_t s = 0;

				for (kk = 0; kk < k; kk++)
					s += (int64_t)(ld8(a, i * k + kk, as) - az) *
					     (ld8(b, tb ? j * k + kk : kk * n + j, bs) -
					      bz[nzp == 1 ? 0 : j]);
				bad += c[i * (n + 3) + j] != (int32_t)s;
				diff += c[i * (n + 3) + j] != c2[i * (n + 3) + j];
			}
		ok(bad == 0 && diff == 0,
		   "qgemm exact #%d: a%s b%s trans_b=%d m%zu n%zu k%zu (%zu bad, %zu differ)",
		   t, as ? "s8" : "u8", bs ? "s8" : "u8", tb, m, n, k, bad, diff);
		qr_qgemm_packed_free(pk);
		free(ws);
		free(a);
		free(b);
		free(bz);
		free(c);
		free(c2);
	}
}

/* ---- requantize, quantize, dequantize ---- */

static void
test_requant(void)
{
	static const int32_t acc[8] = {5, 7, -5, -7, 1000, -1000, 3, 1};
	uint8_t u[8];
	int8_t s[8];
	static const int8_t want_s[8] = {2, 4, -2, -4, 127, -128, 2, 0};
	static const uint8_t want_u[8] = {102, 104, 98, 96, 255, 0, 102, 100};
	float scale = 0.5f;

	qr_requantize_row(acc, 8, 0, scale, 0, 1, s);
	ok(memcmp(s, want_s, 8) == 0,
	   "requantize s8: 2.5->2 3.5->4 -2.5->-2 -3.5->-4, saturation");
	qr_requantize_row(acc, 8, 0, scale, 100, 0, u);
	ok(memcmp(u, want_u, 8) == 0, "requantize u8 zp 100, saturation");
	qr_requantize_row(acc, 1, 2, scale, 0, 1, s);
	ok(s[0] == 4, "requantize adds bias before scaling (7*0.5 -> 4)");
	ok(qr_requant_scale(0.1f, 0.2f, 0.3f) == (0.1f * 0.2f) / 0.3f,
	   "requant scale is (x_scale * w_scale) / y_scale in float");
}

static void
test_quantize(void)
{
	static const float x[10] = {2.5f, 3.5f, -2.5f, -3.5f, 0.4f, 300.0f,
				    -300.0f, 127.5f, -128.5f, NAN};
	static const int8_t want_s[10] = {2, 4, -2, -4, 0, 127, -128, 127,
					  -128, -128};
	static const uint8_t want_u[10] = {130, 132, 126, 124, 128, 255, 0,
					   255, 0, 0};
	static const float xd[4] = {1.0f, 2.0f, 3.0f, 4.0f};
	static const float sc2[2] = {1.0f, 0.5f};
	static const int32_t zp2[2] = {0, 10};
	static const int8_t want_ax[4] = {1, 2, 16, 18};
	static const int8_t q4[4] = {-128, -1, 0, 127};
	static const float want_dq[4] = {-64.0f, -0.5f, 0.0f, 63.5f};
	static const uint8_t q4u[4] = {0, 127, 128, 255};
	static const float want_dqu[4] = {-12.8f, -0.1f, 0.0f, 12.7f};
	static const float xs32[3] = {3e9f, -3e9f, 2.5f};
	float one = 1.0f, half = 0.5f, tenth = 0.1f, dq[4];
	int32_t z0 = 0, z128 = 128, out32[3], i;
	int8_t s[10];
	uint8_t u[10];
	int good;

	qr_quantize_f32(x, 1, 1, 10, &one, &z0, QR_QT_S8, s);
	ok(memcmp(s, want_s, 10) == 0,
	   "quantize s8: half to even, saturate 127/-128, NaN -> -128");
	qr_quantize_f32(x, 1, 1, 10, &one, &z128, QR_QT_U8, u);
	ok(memcmp(u, want_u, 10) == 0, "quantize u8 zp 128: saturate 255/0");
	qr_quantize_f32(xd, 1, 2, 2, sc2, zp2, QR_QT_S8, s);
	ok(memcmp(s, want_ax, 4) == 0, "quantize per axis (scale, zp)");
	qr_quantize_f32(xs32, 1, 1, 3, &one, &z0, QR_QT_S32, out32);
	ok(out32[0] == INT32_MAX && out32[1] == INT32_MIN && out32[2] == 2,
	   "quantize int32 saturates");
	qr_dequantize_f32(q4, QR_QT_S8, 1, 1, 4, &half, &z0, dq);
	good = 1;
	for (i = 0; i < 4; i++)
		good &= dq[i] == want_dq[i];
	ok(good, "dequantize s8");
	qr_dequantize_f32(q4u, QR_QT_U8, 1, 1, 4, &tenth, &z128, dq);
	good = 1;
	for (i = 0; i < 4; i++)
		good &= dq[i] == (float)(int)(q4u[i] - 128) * 0.1f &&
			fabsf(dq[i] - want_dqu[i]) < 1e-6f;
	ok(good, "dequantize u8 zp 128");
}

static void
test_dynamic_quant(void)
{
	/* onnx/backend/test/case/node/dynamicquantizelinear.py */
	static const float x[6] = {0, 2, -3, -2.5f, 1.34f, 0.5f};
	static const uint8_t want[6] = {153, 255, 0, 26, 221, 179};
	static const float x2[6] = {-1.0f, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f};
	static const uint8_t want2[6] = {191, 121, 172, 96, 42, 0};
	uint8_t y[6], zp;
	float s;

	qr_dynamic_quantize_u8(x, 6, y, &s, &zp);
	ok(memcmp(y, want, 6) == 0 && zp == 153,
	   "dynamic quantize: spec example 1");
	ok_near(s, 0.0196078438, 1e-9, "dynamic quantize: scale 5 / 255");
	qr_dynamic_quantize_u8(x2, 6, y, &s, &zp);
	ok(memcmp(y, want2, 6) == 0 && zp == 255,
	   "dynamic quantize: spec example 2 (all negative)");
}

static void
test_qlinear_eltwise(void)
{
	static const uint8_t a[4] = {10, 200, 11, 13};
	static const uint8_t b[4] = {20, 0, 0, 0};
	static const uint8_t want_add[4] = {5, 95, 0, 2};
	static const int8_t sa8[3] = {-128, 0, 127};
	static const int8_t sb8[1] = {100};
	static const int8_t want_s[3] = {-28, 100, 127};
	static const uint8_t ma[3] = {12, 14, 20};
	static const uint8_t mb[3] = {13, 11, 10};
	static const uint8_t want_mul[3] = {3, 2, 1};
	uint8_t y[4];
	int8_t ys[3];

	/* (a - 10) * 0.5 + b * 0.25: 0+5, 95+0, 0.5 -> 0, 1.5 -> 2 */
	qr_qlinear_add(a, 1, 0.5f, 10, b, 1, 0.25f, 0, 1.0f, 0, QR_QT_U8, y, 4);
	ok(memcmp(y, want_add, 4) == 0, "qlinear add u8, ties to even");
	qr_qlinear_add(sa8, 1, 1.0f, 0, sb8, 0, 1.0f, 0, 1.0f, 0, QR_QT_S8, ys,
		       3);
	ok(memcmp(ys, want_s, 3) == 0, "qlinear add s8 broadcast b, saturate");
	/* (a-10)(b-10) * 0.25 + 1: 6 -> 1.5 -> 2 (+1), 4 -> 1 (+1), 0 (+1) */
	qr_qlinear_mul(ma, 1, 0.5f, 10, mb, 1, 0.5f, 10, 1.0f, 1, QR_QT_U8, y,
		       3);
	ok(memcmp(y, want_mul, 3) == 0, "qlinear mul u8, ties to even");
}

/* ---- pooling ---- */

static void
test_pool(void)
{
	float x16[16], x9[9], y[16];
	struct qr_pool_params p;
	static const float want_max_ceil[4] = {11, 12, 15, 16};
	static const float want_avg_ceil[4] = {6, 7.5f, 12, 13.5f};
	static const float want_inc[16] = {0.25f, 0.75f, 1.25f, 0.75f,
					   1.25f, 3.0f, 4.0f, 2.25f,
					   2.75f, 6.0f, 7.0f, 3.75f,
					   1.75f, 3.75f, 4.25f, 2.25f};
	static const float want_exc[16] = {1, 1.5f, 2.5f, 3, 2.5f, 3, 4, 4.5f,
					   5.5f, 6, 7, 7.5f, 7, 7.5f, 8.5f, 9};
	uint8_t xu[16], yu[4];
	int i, good;

	for (i = 0; i < 16; i++)
		x16[i] = (float)(i + 1);
	for (i = 0; i < 9; i++)
		x9[i] = (float)(i + 1);
	/* onnx maxpool_2d_ceil / averagepool_2d_ceil: 4x4, k3 s2, ceil */
	memset(&p, 0, sizeof p);
	p.n = p.c = 1;
	p.h = p.w = 4;
	p.kh = p.kw = 3;
	p.stride_h = p.stride_w = 2;
	p.dil_h = p.dil_w = 1;
	p.ceil_mode = 1;
	ok(qr_pool_out_h(&p) == 2 && qr_pool_out_w(&p) == 2,
	   "pool ceil_mode output 2x2");
	qr_maxpool_f32(&p, x16, y);
	ok(memcmp(y, want_max_ceil, sizeof want_max_ceil) == 0,
	   "maxpool ceil_mode (spec example)");
	qr_avgpool_f32(&p, x16, y);
	ok(memcmp(y, want_avg_ceil, sizeof want_avg_ceil) == 0,
	   "averagepool ceil_mode (spec example)");
	p.ceil_mode = 0;
	ok(qr_pool_out_h(&p) == 1, "pool floor mode output 1x1");
	/* ceil mode must not start a window in the trailing padding:
	 * in 4, k 2, s 2, pads 0/1: ceil(3 / 2) + 1 = 3, but window 2 would
	 * start at 4, in the padding -> 2 */
	p.h = 4;
	p.kh = 2;
	p.pad_b = 1;
	p.ceil_mode = 1;
	ok(qr_pool_out_h(&p) == 2, "ceil mode drops a window in the padding");
	/* 4x4, k3 s2, pads 1, ceil, count_include_pad: the last window is
	 * clipped to the padded image (2 taps of 3 per axis) */
	p.h = 4;
	p.kh = 3;
	p.pad_t = p.pad_l = p.pad_b = p.pad_r = 1;
	p.count_include_pad = 1;
	qr_avgpool_f32(&p, x16, y);
	ok(qr_pool_out_h(&p) == 3 && fabsf(y[0] - 14.0f / 9) < 1e-6f &&
		   y[4] == 11.0f && y[6] == 27.0f / 6 && y[8] == 4.0f,
	   "averagepool ceil + count_include_pad clips to the padded image");
	p.count_include_pad = 0;
	qr_avgpool_f32(&p, x16, y);
	ok(y[0] == 3.5f && y[6] == 13.5f && y[8] == 16.0f,
	   "averagepool ceil, pads excluded");
	/* 3x3, k2 s1, pads 1: count_include_pad */
	memset(&p, 0, sizeof p);
	p.n = p.c = 1;
	p.h = p.w = 3;
	p.kh = p.kw = 2;
	p.stride_h = p.stride_w = 1;
	p.dil_h = p.dil_w = 1;
	p.pad_t = p.pad_l = p.pad_b = p.pad_r = 1;
	p.count_include_pad = 1;
	qr_avgpool_f32(&p, x9, y);
	good = 1;
	for (i = 0; i < 16; i++)
		good &= fabsf(y[i] - want_inc[i]) < 1e-6f;
	ok(good, "averagepool count_include_pad=1");
	p.count_include_pad = 0;
	qr_avgpool_f32(&p, x9, y);
	good = 1;
	for (i = 0; i < 16; i++)
		good &= fabsf(y[i] - want_exc[i]) < 1e-6f;
	ok(good, "averagepool count_include_pad=0");
	/* onnx maxpool_2d_dilations: 4x4, k2, d2 -> [[11,12],[15,16]] */
	memset(&p, 0, sizeof p);
	p.n = p.c = 1;
	p.h = p.w = 4;
	p.kh = p.kw = 2;
	p.stride_h = p.stride_w = 1;
	p.dil_h = p.dil_w = 2;
	qr_maxpool_f32(&p, x16, y);
	ok(qr_pool_out_h(&p) == 2 &&
		   memcmp(y, want_max_ceil, sizeof want_max_ceil) == 0,
	   "maxpool dilations (spec example)");
	for (i = 0; i < 16; i++)
		xu[i] = (uint8_t)(i + 1);
	qr_maxpool_q8(&p, xu, 0, yu);
	ok(yu[0] == 11 && yu[3] == 16, "maxpool uint8");
	qr_global_avgpool_f32(x16, 2, 8, y);
	ok(y[0] == 4.5f && y[1] == 12.5f, "global average pool");
	qr_global_maxpool_f32(x16, 2, 8, y);
	ok(y[0] == 8.0f && y[1] == 16.0f, "global max pool");
}

static void
test_qgap(void)
{
	static const uint8_t x[8] = {10, 20, 30, 41, 0, 0, 0, 3};
	uint8_t y[2];
	int8_t ys[1];
	static const int8_t xs[4] = {-100, -100, -100, -99};

	/* sum-x_zp*4 = 101-40 = 61; scale 1/(0.5*4) = 0.5 -> 30.5 -> 30 */
	qr_qlinear_global_avgpool(x, 0, 2, 4, 1.0f, 10, 0.5f, 0, y);
	ok(y[0] == 30 && y[1] == 0, "qlinear global avgpool u8 (ties even, clamp 0)");
	qr_qlinear_global_avgpool(xs, 1, 1, 4, 1.0f, 0, 1.0f, 0, ys);
	ok(ys[0] == -100, "qlinear global avgpool s8 (-99.75 -> -100)");
}

/* ---- resize ---- */

static void
test_resize(void)
{
	static const float x22[4] = {1, 2, 3, 4};
	static const float want_near[24] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
					    3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
	static const float want_lin[16] = {1, 1.25f, 1.75f, 2, 1.5f, 1.75f,
					   2.25f, 2.5f, 2.5f, 2.75f, 3.25f,
					   3.5f, 3, 3.25f, 3.75f, 4};
	static const float want_ac[16] = {1, 1.3333333f, 1.6666667f, 2,
					  1.6666667f, 2, 2.3333333f, 2.6666667f,
					  2.3333333f, 2.6666667f, 3, 3.3333333f,
					  3, 3.3333333f, 3.6666667f, 4};
	float x16[16], x8[8], y[64];
	struct qr_resize_params p;
	int i, good;

	for (i = 0; i < 16; i++)
		x16[i] = (float)(i + 1);
	for (i = 0; i < 8; i++)
		x8[i] = (float)(i + 1);
	/* resize_upsample_scales_nearest: scales 2, 3 */
	memset(&p, 0, sizeof p);
	p.nc = 1;
	p.h = p.w = 2;
	p.oh = 4;
	p.ow = 6;
	p.scale_h = 2;
	p.scale_w = 3;
	p.coord = QR_COORD_HALF_PIXEL;
	p.nearest = QR_NEAREST_ROUND_PREFER_FLOOR;
	qr_resize_nearest(&p, x22, sizeof(float), y);
	ok(memcmp(y, want_near, sizeof want_near) == 0,
	   "resize nearest upsample (spec example)");
	/* resize_downsample_scales_nearest: 2x4, scales 0.6 -> [[1, 3]] */
	p.h = 2;
	p.w = 4;
	p.oh = 1;
	p.ow = 2;
	p.scale_h = p.scale_w = 0.6f;
	qr_resize_nearest(&p, x8, sizeof(float), y);
	ok(y[0] == 1 && y[1] == 3, "resize nearest downsample (spec example)");
	/* resize_downsample_scales_linear: -> [[2.6666665, 4.3333331]] */
	qr_resize_linear_f32(&p, x8, y);
	ok(fabsf(y[0] - 2.6666665f) < 1e-5f && fabsf(y[1] - 4.3333331f) < 1e-5f,
	   "resize linear downsample half_pixel (spec example)");
	/* resize_upsample_scales_linear: 2x2 -> 4x4 half_pixel */
	p.h = p.w = 2;
	p.oh = p.ow = 4;
	p.scale_h = p.scale_w = 2;
	qr_resize_linear_f32(&p, x22, y);
	good = 1;
	for (i = 0; i < 16; i++)
		good &= fabsf(y[i] - want_lin[i]) < 1e-6f;
	ok(good, "resize linear upsample half_pixel (spec example)");
	p.coord = QR_COORD_ALIGN_CORNERS;
	qr_resize_linear_f32(&p, x22, y);
	good = 1;
	for (i = 0; i < 16; i++)
		good &= fabsf(y[i] - want_ac[i]) < 1e-6f;
	ok(good, "resize linear align_corners (spec example)");
	/* resize_downsample_sizes_linear_pytorch_half_pixel: 4x4 -> 3x1 */
	p.coord = QR_COORD_PYTORCH_HALF_PIXEL;
	p.h = p.w = 4;
	p.oh = 3;
	p.ow = 1;
	p.scale_h = 0.75f;
	p.scale_w = 0.25f;
	qr_resize_linear_f32(&p, x16, y);
	ok(fabsf(y[0] - 1.6666666f) < 1e-5f && fabsf(y[1] - 7.0f) < 1e-5f &&
		   fabsf(y[2] - 12.333333f) < 1e-5f,
	   "resize linear pytorch_half_pixel (spec example)");
	/* nearest modes on a 1x8 row, asymmetric, scale 0.4: x = 2.5 * o,
	 * taps 0, 2.5, 5, 7.5; and scale 0.8: taps 0, 1.25, 2.5, 3.75 */
	p.coord = QR_COORD_ASYMMETRIC;
	p.h = p.oh = 1;
	p.scale_h = 1;
	p.w = 8;
	p.ow = 4;
	p.scale_w = 0.4f;
	{
		static const enum qr_resize_nearest modes[4] = {
			QR_NEAREST_ROUND_PREFER_FLOOR,
			QR_NEAREST_ROUND_PREFER_CEIL, QR_NEAREST_FLOOR,
			QR_NEAREST_CEIL};
		static const char *names[4] = {"round_prefer_floor",
					       "round_prefer_ceil", "floor",
					       "ceil"};
		static const float want1[4][4] = {{1, 3, 6, 8}, {1, 4, 6, 8},
						  {1, 3, 6, 8}, {1, 4, 6, 8}};
		static const float want2[4][4] = {{1, 2, 3, 5}, {1, 2, 4, 5},
						  {1, 2, 3, 4}, {1, 3, 4, 5}};
		int m;

		for (m = 0; m < 4; m++) {
			p.nearest = modes[m];
			p.scale_w = 0.4f;
			qr_resize_nearest(&p, x8, sizeof(float), y);
			good = memcmp(y, want1[m], sizeof want1[m]) == 0;
			p.scale_w = 0.8f;
			qr_resize_nearest(&p, x8, sizeof(float), y);
			good &= memcmp(y, want2[m], sizeof want2[m]) == 0;
			ok(good, "resize nearest_mode %s", names[m]);
		}
	}
	ok(qr_resize_coord(QR_COORD_PYTORCH_HALF_PIXEL, 0, 0.25f, 4, 1) == 0.0f &&
		   qr_resize_coord(QR_COORD_HALF_PIXEL, 0, 0.25f, 4, 1) == 1.5f,
	   "pytorch_half_pixel maps a length-1 output to 0");
}

/* ---- norms, softmax, broadcast ---- */

static void
test_norm(void)
{
	static const float x[6] = {1, 2, 3, 1, 1, 1};
	static const float g[3] = {1, 1, 2};
	static const float bn_x[4] = {1, 2, 3, 4};
	static const float one1[2] = {1, 2}, zero1[2] = {0, 1};
	static const float mean[2] = {1, 3}, var[2] = {4, 0.25f};
	float y[6];

	qr_softmax_f32(x, 2, 3, y);
	ok(fabsf(y[0] - 0.09003057f) < 1e-6f && fabsf(y[2] - 0.66524096f) < 1e-6f &&
		   fabsf(y[3] - 1.0f / 3) < 1e-6f,
	   "softmax rows");
	qr_layernorm_f32(x, 2, 3, g, NULL, 1e-9f, y);
	ok(fabsf(y[0] + 1.2247449f) < 1e-5f && fabsf(y[2] - 2.4494898f) < 1e-5f &&
		   y[3] == 0.0f,
	   "layernorm rows (population variance, gamma)");
	/* [n=1][c=2][hw=2] */
	qr_batchnorm_f32(bn_x, 1, 2, 2, one1, zero1, mean, var, 0.0f, y);
	ok(y[0] == 0.0f && y[1] == 0.5f && y[2] == 1.0f && y[3] == 5.0f,
	   "batchnorm inference");
	qr_instancenorm_f32(bn_x, 1, 2, 2, one1, zero1, 0.0f, y);
	ok(fabsf(y[0] + 1) < 1e-6f && fabsf(y[1] - 1) < 1e-6f &&
		   fabsf(y[2] + 1) < 1e-6f && fabsf(y[3] - 3) < 1e-6f,
	   "instancenorm");
}

static void
test_broadcast(void)
{
	static const int64_t out[2] = {2, 3}, a_d[2] = {2, 1}, b_d[1] = {3};
	static const int64_t bad_d[1] = {2};
	static const float a[2] = {10, 20}, b[3] = {1, 2, 3};
	static const float want[6] = {11, 12, 13, 21, 22, 23};
	size_t sa[2], sb[2];
	float y[6];

	ok(qr_broadcast_strides(2, out, 2, a_d, sa) == 0 &&
		   qr_broadcast_strides(2, out, 1, b_d, sb) == 0 &&
		   sa[0] == 1 && sa[1] == 0 && sb[0] == 0 && sb[1] == 1,
	   "broadcast strides [2,1] and [3] to [2,3]");
	qr_binary_f32(QR_BIN_ADD, 2, out, a, sa, b, sb, y);
	ok(memcmp(y, want, sizeof want) == 0, "broadcast add");
	ok(qr_broadcast_strides(2, out, 1, bad_d, sb) == -1,
	   "[2] does not broadcast to [2,3]");
}

/* The SIMD paths of quantize, dequantize, QLinearAdd and requantize give
 * the portable paths' bits on long rows (tails included), with values at
 * the clamps, ties and NaN. */
static void
test_simd_matches_portable(void)
{
	enum { N = 1000 + 7 };
	static float x[N], yf[2][N];
	static uint8_t a[N], b[N], y8[2][N];
	static int32_t acc[N];
	float s = 0.05f;
	int32_t z = 3;
	int sg, pass;
	size_t i;

	for (i = 0; i < N; i++) {
		x[i] = rnd_f() * 10.0f;
		a[i] = (uint8_t)rnd_int(0, 255);
		b[i] = (uint8_t)rnd_int(0, 255);
		acc[i] = rnd_int(-100000, 100000);
	}
	x[0] = NAN;
	x[1] = 0.025f;  /* tie: 0.5 */
	x[2] = -0.075f; /* tie: -1.5 */
	x[3] = 1e30f;
	x[4] = -1e30f;
	acc[5] = INT32_MAX;
	for (sg = 0; sg < 2; sg++) {
		enum qr_qtype t = sg ? QR_QT_S8 : QR_QT_U8;

		for (pass = 0; pass < 2; pass++) {
			qr_kernels_force_portable(pass);
			qr_quantize_f32(x, 1, 1, N, &s, &z, t, y8[pass]);
		}
		ok(memcmp(y8[0], y8[1], N) == 0, "quantize %s: simd = portable",
		   sg ? "s8" : "u8");
		for (pass = 0; pass < 2; pass++) {
			qr_kernels_force_portable(pass);
			qr_dequantize_f32(a, t, 1, 1, N, &s, &z, yf[pass]);
		}
		ok(memcmp(yf[0], yf[1], sizeof yf[0]) == 0,
		   "dequantize %s: simd = portable", sg ? "s8" : "u8");
		for (pass = 0; pass < 2; pass++) {
			qr_kernels_force_portable(pass);
			qr_qlinear_add(a, 1, 0.02f, sg ? -5 : 120, b, 1, 0.03f,
				       sg ? 7 : 130, 0.04f, sg ? 1 : 128, t,
				       y8[pass], N);
		}
		ok(memcmp(y8[0], y8[1], N) == 0,
		   "qlinear add %s: simd = portable", sg ? "s8" : "u8");
		for (pass = 0; pass < 2; pass++) {
			qr_kernels_force_portable(pass);
			qr_requantize_row(acc, N, 17, 0.001f, sg ? -3 : 100, sg,
					  y8[pass]);
		}
		ok(memcmp(y8[0], y8[1], N) == 0,
		   "requantize %s: simd = portable", sg ? "s8" : "u8");
	}
	qr_kernels_force_portable(0);
}

int
main(void)
{
	plan_no_plan();
	diag("int8 GEMM path: %s", qr_kernels_igemm_path());
	test_gemm();
	test_conv_f32();
	test_convt_f32();
	test_qconv();
	test_qgemm();
	test_requant();
	test_quantize();
	test_dynamic_quant();
	test_qlinear_eltwise();
	test_simd_matches_portable();
	test_pool();
	test_qgap();
	test_resize();
	test_norm();
	test_broadcast();
	return done();
}
