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

#include "kernels/kernels-int.h"
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

/* ---- float sums in ONNX Runtime's order (sgemm.c, dwconv.c, pool.c) ----
 *
 * The references below are written from the orders documented at the top
 * of sgemm.c (and MLAS's SgemmKernelM1Avx / SgemmKernelM1TransposeBAvx),
 * with fmaf where a fused step is meant and plain float operations
 * elsewhere (-ffp-contract=off keeps them unfused), and must give the
 * kernels' bits exactly, on the AVX-512 paths and on the portable ones.
 */

/* Of magnitude up to 2^-10 .. 2^10, so that sums taken in different
 * orders round differently. */
static float
rnd_mag(void)
{
	return rnd_f() * (float)(1u << rnd_int(0, 20)) * 0x1p-10f;
}

/* n floats of rnd_mag(), heap. */
static float *
rnd_mags(size_t n)
{
	float *v = xmalloc(n * sizeof *v);
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = rnd_mag();
	return v;
}

/* One GEMM call: C (+)= A[m][k] * op(B), with random operands. */
struct sg_case {
	size_t m, n, k;       /* C is m x n, depth k */
	size_t lda, ldb, ldc; /* row strides, elements */
	int tb;               /* B stored transposed ([n][k]) */
	int acc;              /* accumulate into C */
	float *a, *b;         /* operands, heap */
	float *c0;            /* C before the call, m * ldc, heap */
	size_t nc;            /* elements of c0 */
};

static void
sg_new(struct sg_case *t, size_t m, size_t n, size_t k, int tb, int acc,
       size_t pad)
{
	size_t na, nb, i;

	t->m = m;
	t->n = n;
	t->k = k;
	t->tb = tb;
	t->acc = acc;
	t->lda = k + pad;
	t->ldb = (tb ? k : n) + pad;
	t->ldc = n + pad;
	na = m * t->lda;
	nb = (tb ? n : k) * t->ldb;
	t->nc = m * t->ldc;
	t->a = xmalloc(na * sizeof *t->a);
	t->b = xmalloc(nb * sizeof *t->b);
	t->c0 = xmalloc(t->nc * sizeof *t->c0);
	for (i = 0; i < na; i++)
		t->a[i] = rnd_mag();
	for (i = 0; i < nb; i++)
		t->b[i] = rnd_mag();
	for (i = 0; i < t->nc; i++)
		t->c0[i] = rnd_mag() * 64.0f;
}

static void
sg_free(struct sg_case *t)
{
	free(t->a);
	free(t->b);
	free(t->c0);
}

static float
sg_a(const struct sg_case *t, size_t i, size_t kk)
{
	return t->a[i * t->lda + kk];
}

/* op(B)[kk][j] */
static float
sg_b(const struct sg_case *t, size_t kk, size_t j)
{
	return t->tb ? t->b[j * t->ldb + kk] : t->b[kk * t->ldb + j];
}

/* MlasSgemmOperation's choice, written out: M = 1 takes the M = 1
 * kernels; N = 1 with a contiguous, untransposed B is swapped into the
 * transposed M = 1 kernel; else K strides of 128 that halve (as N strides
 * double) while half the stride still covers K, when N >= K, or double
 * (as N strides halve, down to 16) while half the N stride covers N. */
static void
plan_ref(size_t m, size_t n, size_t k, int tb, size_t ldb, size_t ldc,
	 struct qr_sgemm_plan *pl)
{
	size_t sn = 128, sk = 128;

	pl->stride_k = 0;
	if (m == 1) {
		pl->order = tb ? QR_SGEMM_DOT : QR_SGEMM_ROW;
		return;
	}
	if (n == 1 && !tb && ldb == 1 && ldc == 1) {
		pl->order = QR_SGEMM_DOT;
		return;
	}
	if (n >= k) {
		for (; sk / 2 >= k; sk /= 2)
			sn *= 2;
	} else {
		for (; sn > 16 && sn / 2 >= n; sn /= 2)
			sk *= 2;
	}
	pl->order = QR_SGEMM_FMA;
	pl->stride_k = sk;
}

/* QR_SGEMM_FMA by hand: per output, one fma chain from 0 over each K
 * slice of sk; the first slice is stored (unless accumulating), each
 * later one added to C. */
static void
ref_fma(const struct sg_case *t, size_t sk, float *c)
{
	size_t i, j, k0, kk;

	for (i = 0; i < t->m; i++)
		for (j = 0; j < t->n; j++) {
			float *cij = c + i * t->ldc + j, total = *cij;

			for (k0 = 0; k0 < t->k; k0 += sk) {
				size_t end = t->k - k0 < sk ? t->k : k0 + sk;
				float chain = 0.0f;

				for (kk = k0; kk < end; kk++)
					chain = fmaf(sg_a(t, i, kk),
						     sg_b(t, kk, j), chain);
				if (k0 == 0 && !t->acc)
					total = chain;
				else
					total = total + chain;
			}
			*cij = total;
		}
}

/* QR_SGEMM_ROW by hand (m = 1, B not transposed): rounded products added
 * ((p0 + p1) + p2) + p3 in groups of 4, then a group of 2, then 1, each
 * group's sum added to the total (C when accumulating, else 0). */
static void
ref_row(const struct sg_case *t, float *c)
{
	size_t j, kk;

	for (j = 0; j < t->n; j++) {
		float total = t->acc ? c[j] : 0.0f, g, p0, p1, p2, p3;

		for (kk = 0; kk + 4 <= t->k; kk += 4) {
			p0 = sg_a(t, 0, kk) * sg_b(t, kk, j);
			p1 = sg_a(t, 0, kk + 1) * sg_b(t, kk + 1, j);
			p2 = sg_a(t, 0, kk + 2) * sg_b(t, kk + 2, j);
			p3 = sg_a(t, 0, kk + 3) * sg_b(t, kk + 3, j);
			g = p0 + p1;
			g = g + p2;
			g = g + p3;
			total = total + g;
		}
		if (kk + 2 <= t->k) {
			p0 = sg_a(t, 0, kk) * sg_b(t, kk, j);
			p1 = sg_a(t, 0, kk + 1) * sg_b(t, kk + 1, j);
			g = p0 + p1;
			total = total + g;
			kk += 2;
		}
		if (kk < t->k) {
			p0 = sg_a(t, 0, kk) * sg_b(t, kk, j);
			total = total + p0;
		}
		c[j] = total;
	}
}

/* The lanes' reduction of SgemmKernelM1TransposeBAvx for output o of
 * nout: outputs go in blocks of 4 (transpose, then lanes 0..3 and 4..7
 * added in order), then one block of 2 (unpack pairs: even and odd lanes
 * apart), then one of 1 (two horizontal adds). */
static float
ref_dot_reduce(const float l[8], size_t o, size_t nout)
{
	size_t n4 = nout - nout % 4, n2 = n4 + (nout % 4 >= 2 ? 2 : 0);
	float lo, hi;

	if (o < n4) {
		lo = l[0] + l[1];
		lo = lo + l[2];
		lo = lo + l[3];
		hi = l[4] + l[5];
		hi = hi + l[6];
		hi = hi + l[7];
	} else if (o < n2) {
		lo = (l[0] + l[2]) + (l[4] + l[6]);
		hi = (l[1] + l[3]) + (l[5] + l[7]);
	} else {
		lo = (l[0] + l[1]) + (l[2] + l[3]);
		hi = (l[4] + l[5]) + (l[6] + l[7]);
	}
	return lo + hi;
}

/* QR_SGEMM_DOT by hand: m = 1 with B^T (outputs are the columns of C)
 * or n = 1 (outputs are the rows). Lane l sums the rounded products
 * l, l + 8, ... from 0; the reduced lanes are added to C (or 0). */
static void
ref_dot(const struct sg_case *t, float *c)
{
	size_t nout = t->m == 1 ? t->n : t->m, o, kk;

	for (o = 0; o < nout; o++) {
		float l[8] = {0, 0, 0, 0, 0, 0, 0, 0}, p, s;
		float *out = t->m == 1 ? c + o : c + o * t->ldc;

		for (kk = 0; kk < t->k; kk++) {
			p = t->m == 1 ? sg_a(t, 0, kk) * sg_b(t, kk, o) :
					sg_a(t, o, kk) * sg_b(t, kk, 0);
			l[kk % 8] = l[kk % 8] + p;
		}
		s = ref_dot_reduce(l, o, nout);
		*out = s + (t->acc ? *out : 0.0f);
	}
}

/* c = C0, then the reference of the given order on it. */
static void
sg_ref(const struct sg_case *t, const struct qr_sgemm_plan *pl, float *c)
{
	memcpy(c, t->c0, t->nc * sizeof *c);
	if (pl->order == QR_SGEMM_ROW)
		ref_row(t, c);
	else if (pl->order == QR_SGEMM_DOT)
		ref_dot(t, c);
	else
		ref_fma(t, pl->stride_k, c);
}

/* c = C0, then qr_sgemm with the plan on the AVX-512 paths (portable 0,
 * where the CPU has them) or the portable C ones (1). */
static void
sg_run(const struct sg_case *t, const struct qr_sgemm_plan *pl,
       int portable, float *c, void *ws)
{
	memcpy(c, t->c0, t->nc * sizeof *c);
	qr_kernels_force_portable(portable);
	qr_sgemm(pl, t->m, t->n, t->k, t->a, t->lda, t->b, t->ldb, t->tb, c,
		 t->ldc, t->acc, ws);
	qr_kernels_force_portable(0);
}

/* As sg_run, but C computed block by block: rows cut at rc[0..nr],
 * columns at cc[0..ncc] (each list from 0 to m or n). */
static void
sg_run_blocks(const struct sg_case *t, const struct qr_sgemm_plan *pl,
	      const size_t *rc, size_t nr, const size_t *cc, size_t ncc,
	      int portable, float *c, void *ws)
{
	size_t bi, bj;

	memcpy(c, t->c0, t->nc * sizeof *c);
	qr_kernels_force_portable(portable);
	for (bi = 0; bi < nr; bi++)
		for (bj = 0; bj < ncc; bj++) {
			size_t r0 = rc[bi], c0 = cc[bj];
			const float *b = t->tb ? t->b + c0 * t->ldb : t->b + c0;

			qr_sgemm(pl, rc[bi + 1] - r0, cc[bj + 1] - c0, t->k,
				 t->a + r0 * t->lda, t->lda, b, t->ldb, t->tb,
				 c + r0 * t->ldc + c0, t->ldc, t->acc, ws);
		}
	qr_kernels_force_portable(0);
}

/* Scratch for the checks: reference, fast and portable results. */
struct sg_bufs {
	float *ref, *fast, *port;
	size_t cap; /* floats each */
	void *ws;   /* qr_sgemm workspace */
};

static void
sg_bufs_fit(struct sg_bufs *s, size_t n)
{
	if (n <= s->cap)
		return;
	free(s->ref);
	free(s->fast);
	free(s->port);
	s->ref = xmalloc(n * sizeof *s->ref);
	s->fast = xmalloc(n * sizeof *s->fast);
	s->port = xmalloc(n * sizeof *s->port);
	s->cap = n;
}

/* 1 when qr_sgemm with plan pl gives the reference's bits for order
 * want on both paths, padding of C untouched. */
static int
sg_check(const struct sg_case *t, const struct qr_sgemm_plan *pl,
	 const struct qr_sgemm_plan *want, struct sg_bufs *s)
{
	size_t bytes = t->nc * sizeof(float);

	sg_bufs_fit(s, t->nc);
	sg_ref(t, want, s->ref);
	sg_run(t, pl, 0, s->fast, s->ws);
	sg_run(t, pl, 1, s->port, s->ws);
	return memcmp(s->fast, s->ref, bytes) == 0 &&
	       memcmp(s->port, s->ref, bytes) == 0;
}

static const char *
sg_order_name(enum qr_sgemm_order o)
{
	return o == QR_SGEMM_FMA ? "FMA" : o == QR_SGEMM_ROW ? "ROW" : "DOT";
}

static void
test_sgemm_plan_values(void)
{
	struct qr_sgemm_plan pl;
	static const struct {
		size_t m, n, k; /* ldb = ldc = n, B not transposed */
		size_t sk;      /* stride_k qr_sgemm_plan must pick */
	} fma[] = {
		{64, 3136, 576, 128},  /* resnet18 layer1 3x3: N >= K */
		{512, 49, 4608, 256},  /* layer4 3x3: narrow N, longer K */
		{64, 64, 64, 64},      /* 128 / 2 >= 64: halved once (1 slice) */
		{32, 12544, 27, 32},   /* mobilenet stem: K 27 -> 32 */
		{8, 3136, 1, 1},
		{8, 300, 129, 128},    /* N >= K > 128: slices of 128 */
		{8, 100, 1100, 128},   /* N < K, N > 64 */
		{8, 33, 1100, 256},
		{8, 32, 1100, 512},
		{8, 17, 1100, 512},
		{8, 16, 1100, 1024},
		{8, 2, 1100, 1024},    /* N strides stop at 16 */
	};
	size_t i;
	int good;

	for (i = 0; i < sizeof fma / sizeof fma[0]; i++) {
		qr_sgemm_plan(fma[i].m, fma[i].n, fma[i].k, 0, fma[i].n,
			      fma[i].n, &pl);
		ok(pl.order == QR_SGEMM_FMA && pl.stride_k == fma[i].sk,
		   "sgemm plan m=%zu n=%zu k=%zu: FMA, stride_k %zu (got %s %zu)",
		   fma[i].m, fma[i].n, fma[i].k, fma[i].sk,
		   sg_order_name(pl.order), pl.stride_k);
	}
	qr_sgemm_plan(1, 1000, 512, 0, 1000, 1000, &pl);
	good = pl.order == QR_SGEMM_ROW && pl.stride_k == 0;
	qr_sgemm_plan(1, 1000, 512, 1, 512, 1000, &pl);
	good &= pl.order == QR_SGEMM_DOT && pl.stride_k == 0;
	ok(good, "sgemm plan m=1: ROW, or DOT when B is transposed");
	qr_sgemm_plan(8, 1, 512, 0, 1, 1, &pl);
	good = pl.order == QR_SGEMM_DOT;
	qr_sgemm_plan(8, 1, 512, 1, 512, 1, &pl);
	good &= pl.order == QR_SGEMM_FMA && pl.stride_k == 1024;
	qr_sgemm_plan(8, 1, 512, 0, 1, 4, &pl);
	good &= pl.order == QR_SGEMM_FMA;
	qr_sgemm_plan(8, 1, 512, 0, 3, 1, &pl);
	good &= pl.order == QR_SGEMM_FMA;
	ok(good, "sgemm plan n=1: DOT only when B is untransposed and "
	   "ldb = ldc = 1");
	pl.order = QR_SGEMM_DOT;
	pl.stride_k = 0;
	qr_sgemm_plan_packed(&pl);
	ok(pl.order == QR_SGEMM_FMA && pl.stride_k == 256,
	   "sgemm packed plan: FMA, stride_k 256");
}

/* What the grid ran, to show it reached every order. */
struct sg_seen {
	size_t order[3]; /* calls per order */
	size_t dot_rows; /* DOT calls with m > 1 (n = 1) */
	size_t multi;    /* FMA calls of several K slices */
	unsigned cnt;    /* calls so far, picks the padding */
};

/* All n (and trans_b, accumulate) for one m and k through qr_sgemm_plan:
 * the plan must be MLAS's (plan_ref) and the bits the reference's. */
static void
sg_grid_cell(struct sg_bufs *s, size_t m, size_t k, const size_t *ns,
	     size_t nn, struct sg_seen *seen)
{
	static const size_t pads[] = {0, 1, 7};
	size_t ni, bad = 0, calls = 0;
	char first[200] = "";
	int tb, acc;

	for (ni = 0; ni < nn; ni++)
		for (tb = 0; tb < 2; tb++)
			for (acc = 0; acc < 2; acc++) {
				struct sg_case t;
				struct qr_sgemm_plan pl, want;
				int good;

				sg_new(&t, m, ns[ni], k, tb, acc,
				       pads[seen->cnt++ % 3]);
				qr_sgemm_plan(m, t.n, k, tb, t.ldb, t.ldc, &pl);
				plan_ref(m, t.n, k, tb, t.ldb, t.ldc, &want);
				good = pl.order == want.order &&
				       pl.stride_k == want.stride_k &&
				       sg_check(&t, &pl, &want, s);
				seen->order[want.order]++;
				seen->dot_rows += want.order == QR_SGEMM_DOT &&
						  m > 1;
				seen->multi += want.order == QR_SGEMM_FMA &&
					       k > want.stride_k;
				calls++;
				if (!good && !bad++)
					snprintf(first, sizeof first,
						 "n=%zu trans_b=%d acc=%d lda=%zu ldb=%zu ldc=%zu: plan %s/%zu, want %s/%zu",
						 t.n, tb, acc, t.lda, t.ldb,
						 t.ldc, sg_order_name(pl.order),
						 pl.stride_k,
						 sg_order_name(want.order),
						 want.stride_k);
				sg_free(&t);
			}
	if (!ok(bad == 0,
		"sgemm plan m=%zu k=%zu n=%zu..%zu: %zu calls (n, trans_b, accumulate, strides) have the reference's bits, SIMD and portable",
		m, k, ns[0], ns[nn - 1], calls))
		diag("%zu bad, first %s", bad, first);
}

static void
test_sgemm_grid(struct sg_bufs *s)
{
	static const size_t ms[] = {1, 2, 3, 7, 8, 9, 17};
	static const size_t ns[] = {1, 5, 12, 16, 17, 24, 31, 32, 33, 100};
	static const size_t ks[] = {1, 3, 4, 5, 9, 127, 128, 129, 300, 1100};
	/* n >= k > 128: N-major plans in slices of 128 */
	static const size_t extra[][3] = {{3, 300, 129}, {9, 400, 300},
					  {2, 300, 257}};
	struct sg_seen seen;
	size_t mi, ki;

	memset(&seen, 0, sizeof seen);
	for (mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
		for (ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
			sg_grid_cell(s, ms[mi], ks[ki], ns,
				     sizeof ns / sizeof ns[0], &seen);
	for (ki = 0; ki < sizeof extra / sizeof extra[0]; ki++)
		sg_grid_cell(s, extra[ki][0], extra[ki][2], &extra[ki][1], 1,
			     &seen);
	ok(seen.order[QR_SGEMM_FMA] && seen.order[QR_SGEMM_ROW] &&
		   seen.dot_rows && seen.order[QR_SGEMM_DOT] > seen.dot_rows &&
		   seen.multi,
	   "sgemm grid ran every order: FMA %zu (%zu of several K slices), ROW %zu, DOT %zu (%zu with n = 1)",
	   seen.order[QR_SGEMM_FMA], seen.multi, seen.order[QR_SGEMM_ROW],
	   seen.order[QR_SGEMM_DOT], seen.dot_rows);
}

/* The packed plan (FMA in slices of 256) on every shape, m = 1 included. */
static void
test_sgemm_packed(struct sg_bufs *s)
{
	static const size_t ms[] = {1, 2, 3, 7, 8, 9, 17};
	static const size_t ns[] = {1, 5, 12, 16, 17, 24, 31, 32, 33, 100};
	static const size_t ks[] = {1, 3, 5, 9, 128, 129, 255, 256, 257,
				    600};
	const struct qr_sgemm_plan want = {QR_SGEMM_FMA, 256};
	struct qr_sgemm_plan pl;
	size_t mi, ki, ni;
	unsigned cnt = 0;
	int tb, acc;

	qr_sgemm_plan_packed(&pl);
	for (mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
		size_t bad = 0, calls = 0;
		char first[120] = "";

		for (ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
			for (ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
				for (tb = 0; tb < 2; tb++)
					for (acc = 0; acc < 2; acc++) {
				struct sg_case t;

				sg_new(&t, ms[mi], ns[ni], ks[ki], tb, acc,
				       cnt++ % 3 ? 0 : 5);
				calls++;
				if (!sg_check(&t, &pl, &want, s) && !bad++)
					snprintf(first, sizeof first,
						 "n=%zu k=%zu trans_b=%d acc=%d",
						 ns[ni], ks[ki], tb, acc);
				sg_free(&t);
					}
		if (!ok(bad == 0,
			"sgemm packed plan m=%zu: %zu calls = reference FMA/256, SIMD and portable",
			ms[mi], calls))
			diag("%zu bad, first %s", bad, first);
	}
}

/* A caller may compute any block of rows and columns with the plan of
 * the whole call (FMA and ROW) and get the whole call's bits. */
static void
test_sgemm_blocks(struct sg_bufs *s)
{
	static const struct {
		size_t m, n, k;
		int packed;
		size_t rc[5], nr, cc[5], ncc; /* cuts, from 0 to m or n */
	} bl[] = {
		{17, 100, 300, 0, {0, 5, 13, 17}, 3, {0, 7, 40, 100}, 3},
		{9, 33, 1100, 0, {0, 1, 9}, 2, {0, 16, 17, 33}, 3},
		{8, 100, 300, 1, {0, 3, 8}, 2, {0, 50, 63, 100}, 3},
		{1, 100, 129, 0, {0, 1}, 1, {0, 3, 20, 37, 100}, 4},
		{1, 70, 1100, 0, {0, 1}, 1, {0, 16, 32, 69, 70}, 4},
	};
	size_t i;
	int tb, acc, portable;

	for (i = 0; i < sizeof bl / sizeof bl[0]; i++)
		for (tb = 0; tb < 2; tb++)
			for (acc = 0; acc < 2; acc++) {
				struct sg_case t;
				struct qr_sgemm_plan pl, want;
				float *blk;
				int good = 1;

				sg_new(&t, bl[i].m, bl[i].n, bl[i].k, tb, acc,
				       3);
				if (bl[i].packed) {
					qr_sgemm_plan_packed(&pl);
					want.order = QR_SGEMM_FMA;
					want.stride_k = 256;
				} else {
					qr_sgemm_plan(t.m, t.n, t.k, tb, t.ldb,
						      t.ldc, &pl);
					plan_ref(t.m, t.n, t.k, tb, t.ldb,
						 t.ldc, &want);
				}
				if (want.order == QR_SGEMM_DOT) {
					sg_free(&t);
					continue; /* DOT takes whole calls */
				}
				good = sg_check(&t, &pl, &want, s);
				blk = xmalloc(t.nc * sizeof *blk);
				for (portable = 0; portable < 2; portable++) {
					sg_run_blocks(&t, &pl, bl[i].rc,
						      bl[i].nr, bl[i].cc,
						      bl[i].ncc, portable, blk,
						      s->ws);
					good &= memcmp(blk, s->ref,
						       t.nc * sizeof *blk) == 0;
				}
				ok(good,
				   "sgemm %s/%zu in %zux%zu blocks = whole call: m=%zu n=%zu k=%zu trans_b=%d acc=%d",
				   sg_order_name(pl.order), pl.stride_k,
				   bl[i].nr, bl[i].ncc, t.m, t.n, t.k, tb, acc);
				free(blk);
				sg_free(&t);
			}
}

/*
 * The K stride decides the bits. k = 129, a[0] b[0] = 2^-24 and
 * a[128] b[128] = (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, all else 0. One
 * chain (stride 256) rounds 2^-24 + 1 + 2^-11 + 2^-24 once: 1 + 2^-11 +
 * 2^-23. Slices of 128 store 2^-24, then add the second chain,
 * fl((1 + 2^-12)^2) = 1 + 2^-11 (a tie, to even), and 2^-24 + that is a
 * tie again: 1 + 2^-11.
 */
static void
test_sgemm_stride_matters(struct sg_bufs *s)
{
	enum { K = 129, NMAX = 129 };
	static float a[2 * K], b[K * NMAX], c[2 * NMAX];
	const float one_chain = 1.0f + 0x1p-11f + 0x1p-23f;
	const float two_slices = 1.0f + 0x1p-11f;
	struct qr_sgemm_plan p128 = {QR_SGEMM_FMA, 128};
	struct qr_sgemm_plan p256 = {QR_SGEMM_FMA, 256};
	struct qr_sgemm_plan pl;
	struct sg_case t;
	size_t i, j;
	int portable, good128 = 1, good256 = 1, goodw = 1, goodn = 1;

	for (i = 0; i < 2; i++) {
		a[i * K] = 0x1p-12f;
		a[i * K + K - 1] = 1.0f + 0x1p-12f;
	}
	for (j = 0; j < NMAX; j++) {
		b[j] = 0x1p-12f;
		b[(K - 1) * NMAX + j] = 1.0f + 0x1p-12f;
	}
	ok(one_chain != two_slices, "stride example: the two results differ");
	for (portable = 0; portable < 2; portable++) {
		qr_kernels_force_portable(portable);
		/* the same 2 x 2 product, hand-made plans */
		qr_sgemm(&p128, 2, 2, K, a, K, b, NMAX, 0, c, 2, 0, s->ws);
		for (i = 0; i < 4; i++)
			good128 &= c[i] == two_slices;
		qr_sgemm(&p256, 2, 2, K, a, K, b, NMAX, 0, c, 2, 0, s->ws);
		for (i = 0; i < 4; i++)
			good256 &= c[i] == one_chain;
		/* the plans MLAS picks: n = 129 >= k -> 128, n = 2 -> 1024 */
		qr_sgemm_plan(2, NMAX, K, 0, NMAX, NMAX, &pl);
		qr_sgemm(&pl, 2, NMAX, K, a, K, b, NMAX, 0, c, NMAX, 0, s->ws);
		for (i = 0; i < 2 * NMAX; i++)
			goodw &= c[i] == two_slices;
		qr_sgemm_plan(2, 2, K, 0, NMAX, 2, &pl);
		qr_sgemm(&pl, 2, 2, K, a, K, b, NMAX, 0, c, 2, 0, s->ws);
		for (i = 0; i < 4; i++)
			goodn &= c[i] == one_chain;
		qr_kernels_force_portable(0);
	}
	ok(good128, "FMA stride_k 128 on k=129: 1 + 2^-11");
	ok(good256, "FMA stride_k 256 on k=129: 1 + 2^-11 + 2^-23");
	ok(goodw, "planned m=2 n=129 k=129 (stride 128): 1 + 2^-11");
	ok(goodn, "planned m=2 n=2 k=129 (stride 1024): 1 + 2^-11 + 2^-23");

	/* and on random data every pair of orders gives other bits */
	sg_new(&t, 1, 100, 300, 0, 0, 0);
	{
		struct qr_sgemm_plan row = {QR_SGEMM_ROW, 0};
		float *r128 = xmalloc(t.nc * 4), *r256 = xmalloc(t.nc * 4);
		float *rrow = xmalloc(t.nc * 4);

		sg_ref(&t, &p128, r128);
		sg_ref(&t, &p256, r256);
		sg_ref(&t, &row, rrow);
		ok(memcmp(r128, r256, t.nc * 4) != 0 &&
			   memcmp(r128, rrow, t.nc * 4) != 0 &&
			   memcmp(r256, rrow, t.nc * 4) != 0,
		   "random data: FMA/128, FMA/256 and ROW references differ (1x100, k=300)");
		free(r128);
		free(r256);
		free(rrow);
	}
	sg_free(&t);
	sg_new(&t, 1, 7, 300, 1, 0, 0);
	{
		struct qr_sgemm_plan dot = {QR_SGEMM_DOT, 0};
		float *rd = xmalloc(t.nc * 4), *rf = xmalloc(t.nc * 4);
		float l[8];
		size_t nd = 0;

		sg_ref(&t, &dot, rd);
		sg_ref(&t, &p128, rf);
		/* the three lane reductions differ on random lanes */
		for (i = 0; i < 1000; i++) {
			float r4, r2, r1;

			for (j = 0; j < 8; j++)
				l[j] = rnd_mag();
			r4 = ref_dot_reduce(l, 0, 7);
			r2 = ref_dot_reduce(l, 4, 7);
			r1 = ref_dot_reduce(l, 6, 7);
			nd += r4 != r2 && r4 != r1 && r2 != r1;
		}
		ok(memcmp(rd, rf, t.nc * 4) != 0 && nd > 0,
		   "random data: DOT and FMA references differ, and so do the 3 lane reductions (%zu of 1000 lane sets)",
		   nd);
		free(rd);
		free(rf);
	}
	sg_free(&t);
}

static void
test_sgemm_k0(struct sg_bufs *s)
{
	/* a hand-made plan: qr_sgemm_plan's K loop needs k >= 1 */
	struct qr_sgemm_plan pl = {QR_SGEMM_FMA, 128};
	float a[1] = {1}, b[1] = {1}, c[6] = {1, 2, 3, 4, 5, 6};
	static const float keep[6] = {1, 2, 3, 4, 5, 6};
	static const float zero[6] = {0, 0, 9, 0, 0, 9};

	qr_sgemm(&pl, 2, 2, 0, a, 1, b, 2, 0, c, 3, 1, s->ws);
	ok(memcmp(c, keep, sizeof c) == 0, "sgemm k=0 accumulate leaves C");
	c[2] = c[5] = 9;
	qr_sgemm(&pl, 2, 2, 0, a, 1, b, 2, 0, c, 3, 0, s->ws);
	ok(memcmp(c, zero, sizeof c) == 0, "sgemm k=0 stores zeros");
}

/* Random weights held quantized, for case i of a table: n codes, and
 * nc scales about `unit` and zero points; uint8 on odd cases, else int8. */
struct rnd_q {
	uint8_t *codes;
	float *scale;
	int32_t *zp;
	enum qr_qtype t;
};

static void
rnd_q_new(struct rnd_q *r, size_t i, size_t n, size_t nc, float unit)
{
	size_t j;

	r->codes = xmalloc(n ? n : 1);
	r->scale = xmalloc((nc ? nc : 1) * sizeof *r->scale);
	r->zp = xmalloc((nc ? nc : 1) * sizeof *r->zp);
	r->t = i % 2 ? QR_QT_U8 : QR_QT_S8;
	for (j = 0; j < n; j++)
		r->codes[j] = (uint8_t)rnd_int(0, 255);
	for (j = 0; j < nc; j++) {
		r->scale[j] = (rnd_f() + 1.5f) * unit;
		r->zp[j] = i % 2 ? rnd_int(0, 255) : rnd_int(-128, 127);
	}
}

static void
rnd_q_free(struct rnd_q *r)
{
	free(r->codes);
	free(r->scale);
	free(r->zp);
}

/*
 * qr_sgemm_q (B held quantized) gives qr_sgemm's bits on B dequantized
 * first, in every order: FMA slices with whole and partial panels, B
 * transposed or not, the M = 1 row and dot kernels (B dequantized a
 * block of rows at a time: one block, several with a short last one,
 * or whole when 4 rows pass the workspace) and the N = 1 dot kernel
 * (B dequantized whole); int8 and uint8, per column and per tensor,
 * with and without zero points.
 */
static void
test_sgemm_q(void)
{
	static const struct {
		size_t m, n, k;
		int tb;
	} cs[] = {
		{7, 70, 300, 0},  /* K slices, a partial panel */
		{33, 64, 129, 1}, /* B^T: rows dequantized, transposed */
		{5, 3, 40, 0},    /* one partial panel */
		{1, 50, 37, 0},   /* M = 1: the row kernel */
		{1, 19, 70, 1},   /* M = 1, B^T: the dot kernel */
		{9, 1, 33, 0},    /* N = 1: the dot kernel */
		{64, 1000, 768, 1},
		{1, 300, 1001, 0}, /* the row kernel over 5 blocks of k */
		{1, 1003, 512, 1}, /* the dot kernel over 9 blocks of n
				    * (a classifier's Gemm) */
		{1, 6, 20000, 1},  /* 4 rows of B^T pass the workspace */
	};
	size_t i, j;

	for (i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		size_t m = cs[i].m, n = cs[i].n, k = cs[i].k, nb = n * k;
		int tb = cs[i].tb, good = 1, r;
		size_t ldb = tb ? k : n, rows = tb ? n : k;
		float *a = rnd_mags(m * k), *bf = xmalloc(nb * 4);
		float *want = xmalloc(m * n * 4), *y = xmalloc(m * n * 4);
		void *ws = xmalloc(qr_sgemm_q_workspace());
		struct qr_sgemm_qb q;
		struct qr_sgemm_plan pl;
		struct rnd_q rq;
		const uint8_t *codes;
		const float *scale;

		rnd_q_new(&rq, i, nb, n, 0x1p-6f);
		codes = rq.codes;
		scale = rq.scale;
		q.q = codes;
		q.t = rq.t;
		q.scale = scale;
		q.zp = i % 3 == 1 ? NULL : rq.zp;
		q.per_col = i % 4 != 2;
		for (j = 0; j < rows; j++) {
			size_t c0 = q.per_col && tb ? j : 0;

			if (q.per_col && !tb)
				qr_dequantize_cols_f32(codes + j * ldb, q.t, ldb,
						       scale, q.zp, bf + j * ldb);
			else
				qr_dequantize_f32(codes + j * ldb, q.t, 1, 1, ldb,
						  scale + c0,
						  q.zp ? q.zp + c0 : NULL,
						  bf + j * ldb);
		}
		qr_sgemm_plan(m, n, k, tb, ldb, n, &pl);
		for (r = 0; r < 2; r++) {
			qr_kernels_force_portable(r == 1);
			qr_sgemm(&pl, m, n, k, a, k, bf, ldb, tb, want, n, 0, ws);
			memset(y, 0xff, m * n * 4);
			qr_sgemm_q(&pl, m, n, k, a, k, &q, ldb, tb, y, n, 0, ws);
			qr_kernels_force_portable(0);
			good &= memcmp(y, want, m * n * 4) == 0;
		}
		/* the per-column dequantizer against its definition */
		for (j = 0; j < n && q.per_col && !tb; j++)
			good &= bf[j] == (float)((q.t == QR_QT_U8 ?
						  (int32_t)codes[j] :
						  (int32_t)(int8_t)codes[j]) -
						 (q.zp ? q.zp[j] : 0)) *
					scale[j];
		ok(good, "sgemm, B held %s %s%s: m%zu n%zu k%zu%s (%s order) = "
		   "the dequantized B's bits, SIMD and portable",
		   q.t == QR_QT_U8 ? "uint8" : "int8",
		   q.per_col ? "per column" : "per tensor",
		   q.zp ? "" : " without zero point", m, n, k,
		   tb ? " B^T" : "", pl.order == QR_SGEMM_FMA ? "fma" :
		   pl.order == QR_SGEMM_ROW ? "row" : "dot");
		free(a);
		free(bf);
		free(want);
		free(y);
		free(ws);
		rnd_q_free(&rq);
	}
}

static void
test_sgemm_orders(void)
{
	struct sg_bufs s;

	memset(&s, 0, sizeof s);
	s.ws = xmalloc(qr_sgemm_workspace());
	test_sgemm_plan_values();
	test_sgemm_grid(&s);
	test_sgemm_packed(&s);
	test_sgemm_blocks(&s);
	test_sgemm_stride_matters(&s);
	test_sgemm_k0(&s);
	test_sgemm_q();
	free(s.ref);
	free(s.fast);
	free(s.port);
	free(s.ws);
}

/* Depthwise conv by hand: per output, the taps in ki-major order with
 * padding read as 0; row != 0 adds the rounded products in groups of 4,
 * 2, 1 as ref_row does, else one fma chain from 0; then + bias. */
static void
ref_dw(const struct qr_conv_params *p, const float *x, const float *w,
       const float *bias, int row, float *y)
{
	size_t oh_n = qr_conv_out_h(p), ow_n = qr_conv_out_w(p);
	size_t mult = p->c_out / p->c_in, ntap = p->kh * p->kw;
	size_t n, co, oh, ow, t;
	float xv[128];

	for (n = 0; n < p->n; n++)
		for (co = 0; co < p->c_out; co++)
			for (oh = 0; oh < oh_n; oh++)
				for (ow = 0; ow < ow_n; ow++) {
					const float *xc = x + (n * p->c_in + co / mult) * p->h * p->w;
					const float *wc = w + co * ntap;
					float total = 0.0f, g;

					for (t = 0; t < ntap; t++) {
						long ih = (long)(oh * p->stride_h + t / p->kw * p->dil_h) - (long)p->pad_t;
						long iw = (long)(ow * p->stride_w + t % p->kw * p->dil_w) - (long)p->pad_l;

						xv[t] = ih < 0 || iw < 0 || ih >= (long)p->h || iw >= (long)p->w ?
							0.0f : xc[ih * (long)p->w + iw];
					}
					if (!row) {
						for (t = 0; t < ntap; t++)
							total = fmaf(wc[t], xv[t], total);
					} else {
						for (t = 0; t + 4 <= ntap; t += 4) {
							g = wc[t] * xv[t];
							g = g + wc[t + 1] * xv[t + 1];
							g = g + wc[t + 2] * xv[t + 2];
							g = g + wc[t + 3] * xv[t + 3];
							total = total + g;
						}
						if (t + 2 <= ntap) {
							g = wc[t] * xv[t];
							g = g + wc[t + 1] * xv[t + 1];
							total = total + g;
							t += 2;
						}
						if (t < ntap)
							total = total + wc[t] * xv[t];
					}
					y[((n * p->c_out + co) * oh_n + oh) * ow_n + ow] = total + bias[co];
				}
}

/* Depthwise convs through the public conv API: multiplier 1 sums as
 * MLAS's M = 1 GEMM (ROW), larger multipliers as an fma chain. */
static void
test_dw_orders(void)
{
	static const struct {
		size_t c, mult, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
	} cs[] = {
		{3, 1, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
		{3, 1, 12, 41, 3, 3, 2, 2, 1, 1, 0, 1, 1, 1},
		{2, 1, 11, 35, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1},
		{2, 1, 7, 20, 2, 3, 1, 1, 0, 0, 0, 0, 1, 1},
		{2, 1, 6, 19, 1, 3, 1, 1, 0, 1, 0, 1, 1, 1},
		{2, 1, 10, 23, 7, 7, 1, 1, 3, 3, 3, 3, 1, 1},
		{2, 1, 12, 30, 9, 9, 1, 2, 4, 4, 4, 4, 1, 1}, /* 81 taps */
		{2, 1, 9, 26, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},
		{2, 1, 5, 17, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},
		{3, 2, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
		{3, 2, 12, 41, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
		{2, 2, 11, 35, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1},
		{2, 3, 8, 18, 2, 3, 1, 2, 1, 0, 1, 2, 1, 1},
	};
	size_t i, j;

	for (i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		struct qr_conv_params p;
		size_t nx, nw, ny, ndiff = 0;
		float *x, *w, *b, *want, *other, *y[3];
		struct qr_conv_f32_packed *pk;
		void *ws;
		int row = cs[i].mult == 1, good = 1, r;

		memset(&p, 0, sizeof p);
		p.n = 2;
		p.c_in = p.group = cs[i].c;
		p.c_out = cs[i].c * cs[i].mult;
		p.h = cs[i].h;
		p.w = cs[i].w;
		p.kh = cs[i].kh;
		p.kw = cs[i].kw;
		p.stride_h = cs[i].sh;
		p.stride_w = cs[i].sw;
		p.pad_t = cs[i].pt;
		p.pad_l = cs[i].pl;
		p.pad_b = cs[i].pb;
		p.pad_r = cs[i].pr;
		p.dil_h = cs[i].dh;
		p.dil_w = cs[i].dw;
		nx = p.n * p.c_in * p.h * p.w;
		nw = p.c_out * p.kh * p.kw;
		ny = p.n * p.c_out * qr_conv_out_h(&p) * qr_conv_out_w(&p);
		x = rnd_mags(nx);
		w = rnd_mags(nw);
		b = rnd_mags(p.c_out);
		want = xmalloc(ny * 4);
		other = xmalloc(ny * 4);
		pk = qr_conv_f32_pack_new(p.c_out, p.c_in, p.kh, p.kw, p.group,
					  w);
		ws = xmalloc(qr_conv_f32_workspace(pk, &p, 2));
		ref_dw(&p, x, w, b, row, want);
		ref_dw(&p, x, w, b, !row, other);
		/* AVX-512 on 1 and 2 threads, portable on 1 */
		for (r = 0; r < 3; r++) {
			y[r] = xmalloc(ny * 4);
			qr_kernels_force_portable(r == 2);
			qr_conv_f32_run(pk, &p, x, b, y[r], ws, r == 1 ? 2 : 1);
			qr_kernels_force_portable(0);
			good &= memcmp(y[r], want, ny * 4) == 0;
		}
		for (j = 0; j < ny; j++)
			ndiff += memcmp(&want[j], &other[j], 4) != 0;
		ok(good,
		   "depthwise x%zu %s order: c%zu %zux%zu k%zux%zu s%zu,%zu p%zu,%zu,%zu,%zu d%zu,%zu = reference, SIMD (1, 2 threads) and portable",
		   cs[i].mult, row ? "ROW" : "fma", p.c_in, p.h, p.w, p.kh,
		   p.kw, p.stride_h, p.stride_w, p.pad_t, p.pad_l, p.pad_b,
		   p.pad_r, p.dil_h, p.dil_w);
		if (p.kh * p.kw > 1)
			ok(ndiff > 0,
			   "depthwise #%zu: the other order gives other bits on %zu of %zu outputs",
			   i, ndiff, ny);
		qr_conv_f32_packed_free(pk);
		free(ws);
		free(x);
		free(w);
		free(b);
		free(want);
		free(other);
		for (r = 0; r < 3; r++)
			free(y[r]);
	}
}

/* GlobalAveragePool as MLAS sums it: 4 lanes over the full groups of 4,
 * (l0 + l2) + (l1 + l3), the leftovers one by one, then / hw. */
static void
test_gap_order(void)
{
	static const size_t hws[] = {1, 3, 4, 5, 49, 50};
	enum { NC = 16 };
	size_t i, c, j;

	/* data of its own: with the state earlier tests leave (which the
	 * sanitizer build's test run left elsewhere) the 16 planes of hw=5
	 * can happen to sum alike in both orders */
	rng = 4242;
	for (i = 0; i < sizeof hws / sizeof hws[0]; i++) {
		size_t hw = hws[i], ndiff = 0;
		float *x = rnd_mags(NC * hw), want[NC], y[2][NC];
		int r;

		for (c = 0; c < NC; c++) {
			const float *xc = x + c * hw;
			float l0 = 0.0f, l1 = 0.0f, l2 = 0.0f, l3 = 0.0f, s;
			float seq = 0.0f;

			for (j = 0; j + 4 <= hw; j += 4) {
				l0 = l0 + xc[j];
				l1 = l1 + xc[j + 1];
				l2 = l2 + xc[j + 2];
				l3 = l3 + xc[j + 3];
			}
			s = (l0 + l2) + (l1 + l3);
			for (; j < hw; j++)
				s = s + xc[j];
			want[c] = s / (float)hw;
			for (j = 0; j < hw; j++)
				seq = seq + xc[j];
			ndiff += seq / (float)hw != want[c];
		}
		for (r = 0; r < 2; r++) {
			qr_kernels_force_portable(r);
			qr_global_avgpool_f32(x, NC, hw, y[r]);
			qr_kernels_force_portable(0);
		}
		ok(memcmp(y[0], want, sizeof want) == 0 &&
			   memcmp(y[1], want, sizeof want) == 0,
		   "global average pool hw=%zu: 4-lane order, bit exact", hw);
		if (hw >= 5)
			ok(ndiff > 0,
			   "global average pool hw=%zu: a plain left-to-right sum differs on %zu of %d planes",
			   hw, ndiff, NC);
		free(x);
	}
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

/* A GEMM conv in ONNX Runtime's order by hand: per output, one fma chain
 * from 0 per K slice of the whole group's plan over the taps (channel,
 * then kernel row, then column; padding reads 0), the slices added in
 * order, then + bias. */
static void
ref_conv_order(const struct qr_conv_params *p, const float *x, const float *w,
	       const float *bias, float *y)
{
	size_t oh_n = qr_conv_out_h(p), ow_n = qr_conv_out_w(p);
	size_t ohw = oh_n * ow_n, cin_g = p->c_in / p->group;
	size_t cout_g = p->c_out / p->group, ntap = p->kh * p->kw;
	size_t k = cin_g * ntap, n, co, pix, k0, kk;
	struct qr_sgemm_plan pl;

	qr_sgemm_plan(cout_g, ohw, k, 0, ohw, ohw, &pl);
	for (n = 0; n < p->n; n++)
		for (co = 0; co < p->c_out; co++)
			for (pix = 0; pix < ohw; pix++) {
				size_t g = co / cout_g;
				const float *xg = x + (n * p->c_in + g * cin_g) * p->h * p->w;
				float total = 0.0f;

				for (k0 = 0; k0 < k; k0 += pl.stride_k) {
					size_t end = k - k0 < pl.stride_k ? k : k0 + pl.stride_k;
					float chain = 0.0f;

					for (kk = k0; kk < end; kk++) {
						size_t ci = kk / ntap, ki = kk % ntap / p->kw, kj = kk % p->kw;
						long ih = (long)(pix / ow_n * p->stride_h + ki * p->dil_h) - (long)p->pad_t;
						long iw = (long)(pix % ow_n * p->stride_w + kj * p->dil_w) - (long)p->pad_l;
						float xv = ih < 0 || iw < 0 || ih >= (long)p->h || iw >= (long)p->w ?
							0.0f : xg[(ci * p->h + (size_t)ih) * p->w + (size_t)iw];

						chain = fmaf(w[co * k + kk], xv, chain);
					}
					total = k0 == 0 ? chain : total + chain;
				}
				y[(n * p->c_out + co) * ohw + pix] = bias ? total + bias[co] : total;
			}
}

/* A conv of square stride and padding, no dilation. */
struct conv_case {
	size_t n, c, co, g, h, w, kh, kw, s, pad;
};

static struct qr_conv_params
case_params(const struct conv_case *c)
{
	struct qr_conv_params p;

	memset(&p, 0, sizeof p);
	p.n = c->n;
	p.c_in = c->c;
	p.c_out = c->co;
	p.group = c->g;
	p.h = c->h;
	p.w = c->w;
	p.kh = c->kh;
	p.kw = c->kw;
	p.stride_h = p.stride_w = c->s;
	p.pad_t = p.pad_l = p.pad_b = p.pad_r = c->pad;
	p.dil_h = p.dil_w = 1;
	return p;
}

/* GEMM convs (im2col, strided copies, pointwise, N tails, several K
 * slices) through the public API have the reference's bits, AVX-512 on
 * 1 and 2 threads and portable. */
static void
test_conv_f32_order(void)
{
	static const struct conv_case cs[] = {
		{1, 3, 8, 1, 45, 45, 7, 7, 2, 3},   /* stem: stride-2 rows of 23 */
		{1, 16, 24, 1, 20, 70, 3, 3, 2, 1}, /* stride-2 rows of 35 */
		{2, 20, 9, 1, 13, 13, 3, 3, 1, 1},  /* K = 180: 2 slices */
		{1, 40, 33, 1, 7, 7, 3, 3, 1, 1},   /* N = 49, K = 360 */
		{1, 24, 17, 1, 14, 14, 3, 3, 1, 1}, /* N = 196 */
		{1, 64, 20, 1, 9, 9, 1, 1, 2, 0},   /* 1x1 stride 2 */
		{1, 150, 12, 1, 6, 11, 1, 1, 1, 0}, /* pointwise, K = 150 */
		{2, 12, 12, 3, 10, 19, 3, 3, 1, 1}, /* groups */
	};
	size_t i;

	for (i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		struct qr_conv_params p;
		size_t nx, nw, ny;
		float *x, *w, *b, *want, *y;
		struct qr_conv_f32_packed *pk;
		void *ws;
		int good = 1, r;

		p = case_params(&cs[i]);
		nx = p.n * p.c_in * p.h * p.w;
		nw = p.c_out * p.c_in / p.group * p.kh * p.kw;
		ny = p.n * p.c_out * qr_conv_out_h(&p) * qr_conv_out_w(&p);
		x = rnd_mags(nx);
		w = rnd_mags(nw);
		b = rnd_mags(p.c_out);
		want = xmalloc(ny * 4);
		y = xmalloc(ny * 4);
		pk = qr_conv_f32_pack_new(p.c_out, p.c_in, p.kh, p.kw, p.group,
					  w);
		ws = xmalloc(qr_conv_f32_workspace(pk, &p, 2));
		ref_conv_order(&p, x, w, i % 2 ? b : NULL, want);
		for (r = 0; r < 3; r++) {
			qr_kernels_force_portable(r == 2);
			qr_conv_f32_run(pk, &p, x, i % 2 ? b : NULL, y, ws,
					r == 1 ? 2 : 1);
			qr_kernels_force_portable(0);
			good &= memcmp(y, want, ny * 4) == 0;
		}
		ok(good,
		   "conv f32 ORT order: n%zu c%zu->%zu g%zu %zux%zu k%zux%zu s%zu p%zu%s = reference, SIMD (1, 2 threads) and portable",
		   p.n, p.c_in, p.c_out, p.group, p.h, p.w, p.kh, p.kw,
		   p.stride_h, p.pad_t, i % 2 ? " bias" : "");
		qr_conv_f32_packed_free(pk);
		free(ws);
		free(x);
		free(w);
		free(b);
		free(want);
		free(y);
	}
}

/*
 * Weights held quantized (qr_conv_f32_pack_q) give the bits of the same
 * conv on the weights dequantized first, in every GEMM order: FMA slices,
 * the M = 1 row kernel (one output channel per group), the N = 1 dot
 * kernel (1x1 outputs) with row counts that leave a last block of under
 * 8 rows or more than 64, rows split over 2 threads, groups, depthwise,
 * weights read by several column blocks (dequantized once, or by rows
 * in each block when past QR_DEQ_WHOLE_MAX); int8 and uint8, per
 * channel and per tensor.
 */
static void
test_conv_f32_qweights(void)
{
	static const struct conv_case cs[] = {
		{1, 40, 73, 1, 7, 7, 3, 3, 1, 1},   /* rows 64 + 9 */
		{1, 16, 70, 1, 9, 9, 3, 3, 1, 1},   /* rows 70 at once */
		{1, 24, 130, 1, 14, 14, 3, 3, 1, 1}, /* rows 64 + 66 */
		{1, 20, 137, 1, 1, 1, 1, 1, 1, 0},  /* N = 1: 64 + 64 + 9 */
		{1, 8, 70, 1, 3, 3, 3, 3, 1, 0},    /* N = 1 through im2col */
		{2, 12, 12, 3, 10, 19, 3, 3, 1, 1}, /* groups */
		{1, 6, 3, 3, 5, 5, 3, 3, 1, 1},     /* one row per group */
		{1, 150, 12, 1, 6, 11, 1, 1, 1, 0}, /* pointwise, K = 150 */
		{1, 8, 16, 8, 9, 9, 3, 3, 1, 1},    /* depthwise x2 */
		{1, 64, 40, 1, 32, 32, 3, 3, 1, 1}, /* 3 column blocks: the
						     * weights dequantized
						     * once */
		{1, 256, 456, 1, 9, 9, 3, 3, 1, 1}, /* 2 column blocks, 4.2
						     * MB of weights: by
						     * rows in each */
	};
	size_t i;

	for (i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		struct qr_conv_params p;
		struct qr_conv_qweights q;
		size_t nx, nw, ny, k;
		float *x, *w, *b, *want, *y;
		struct rnd_q rq;
		struct qr_conv_f32_packed *pf, *pq;
		void *ws;
		int good = 1, r;

		p = case_params(&cs[i]);
		k = p.c_in / p.group * p.kh * p.kw;
		nx = p.n * p.c_in * p.h * p.w;
		nw = p.c_out * k;
		ny = p.n * p.c_out * qr_conv_out_h(&p) * qr_conv_out_w(&p);
		x = rnd_mags(nx);
		b = rnd_mags(p.c_out);
		rnd_q_new(&rq, i, nw, p.c_out, 0x1p-7f);
		q.q = rq.codes;
		q.t = rq.t;
		q.scale = rq.scale;
		q.zp = i % 3 == 2 ? NULL : rq.zp;
		q.per_row = i % 4 != 3;
		w = xmalloc(nw * sizeof *w);
		if (q.per_row)
			qr_dequantize_f32(rq.codes, q.t, 1, p.c_out, k, rq.scale,
					  q.zp, w);
		else
			qr_dequantize_f32(rq.codes, q.t, 1, 1, nw, rq.scale,
					  q.zp, w);
		want = xmalloc(ny * 4);
		y = xmalloc(ny * 4);
		pf = qr_conv_f32_pack_new(p.c_out, p.c_in, p.kh, p.kw, p.group,
					  w);
		pq = qr_conv_f32_pack_q(p.c_out, p.c_in, p.kh, p.kw, p.group,
					&q);
		ws = xmalloc(qr_conv_f32_workspace(pq, &p, 2));
		free(w); /* the quantized pack must not need it */
		for (r = 0; r < 3; r++) {
			qr_kernels_force_portable(r == 2);
			qr_conv_f32_run(pf, &p, x, b, want, ws, r == 1 ? 2 : 1);
			memset(y, 0xff, ny * 4);
			qr_conv_f32_run(pq, &p, x, b, y, ws, r == 1 ? 2 : 1);
			qr_kernels_force_portable(0);
			good &= memcmp(y, want, ny * 4) == 0;
		}
		ok(good,
		   "conv f32, weights held %s %s%s: n%zu c%zu->%zu g%zu %zux%zu k%zux%zu = the dequantized weights' bits, SIMD (1, 2 threads) and portable",
		   q.t == QR_QT_U8 ? "uint8" : "int8",
		   q.per_row ? "per channel" : "per tensor",
		   q.zp ? "" : " without zero point", p.n, p.c_in, p.c_out,
		   p.group, p.h, p.w, p.kh, p.kw);
		qr_conv_f32_packed_free(pf);
		qr_conv_f32_packed_free(pq);
		free(ws);
		free(x);
		free(b);
		rnd_q_free(&rq);
		free(want);
		free(y);
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

static int32_t
sat16_ref(int32_t v)
{
	return v > 32767 ? 32767 : v < -32768 ? -32768 : v;
}

/* Add product prod, depth kk's, to *sxw: at once, or with p16 summed
 * with the next one and saturated to int16 as a pair (*half holds an
 * even depth's until then; the caller adds a last odd one). */
static void
pair_add(int64_t *sxw, int32_t *half, size_t kk, int32_t prod, int p16)
{
	if (!p16)
		*sxw += prod;
	else if (kk % 2 == 0)
		*half = prod;
	else
		*sxw += sat16_ref(*half + prod);
}

/* Exact conv sums, or with pairs16 ONNX Runtime's on CPUs without VNNI:
 * raw x * w products in its im2col order (tap, then channel), k and k + 1
 * (k even) summed and saturated to int16, the zero points taken off
 * exactly afterwards. */
static void
qconv_ref(const struct qr_conv_params *p, const void *x, int xs, int32_t xz,
	  const void *w, int ws_, const int32_t *wz, size_t nwz, int pairs16,
	  int64_t *acc)
{
	size_t oh_n = qr_conv_out_h(p), ow_n = qr_conv_out_w(p);
	size_t cin_g = p->c_in / p->group, cout_g = p->c_out / p->group;
	size_t n, co, oh, ow, ci, ki, kj;

	for (n = 0; n < p->n; n++)
		for (co = 0; co < p->c_out; co++)
			for (oh = 0; oh < oh_n; oh++)
				for (ow = 0; ow < ow_n; ow++) {
					int64_t sxw = 0, sx = 0, sw = 0;
					int32_t half = 0, z = wz[nwz == 1 ? 0 : co];
					size_t g = co / cout_g, kk = 0;

					for (ki = 0; ki < p->kh; ki++)
						for (kj = 0; kj < p->kw; kj++)
							for (ci = 0; ci < cin_g; ci++, kk++) {
								long ih = (long)(oh * p->stride_h + ki * p->dil_h) - (long)p->pad_t;
								long iw = (long)(ow * p->stride_w + kj * p->dil_w) - (long)p->pad_l;
								int32_t xv = xz, wv;

								if (ih >= 0 && iw >= 0 && ih < (long)p->h && iw < (long)p->w)
									xv = ld8(x, ((n * p->c_in + g * cin_g + ci) * p->h + ih) * p->w + iw, xs);
								wv = ld8(w, ((co * cin_g + ci) * p->kh + ki) * p->kw + kj, ws_);
								sx += xv;
								sw += wv;
								pair_add(&sxw, &half, kk, xv * wv,
									 pairs16);
							}
					if (pairs16 && kk % 2)
						sxw += half;
					acc[((n * p->c_out + co) * oh_n + oh) * ow_n + ow] =
						sxw - z * sx - xz * sw + (int64_t)kk * xz * z;
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

/* Every conv kind and signedness against the reference, fast paths and
 * portable ones alike. With sat, as ONNX Runtime runs them on a CPU
 * without VNNI (QR_ORT_U8S8_SATURATES): QLinearConv's u8 x s8 GEMM convs
 * saturate pairs of products (depthwise convs of multiplier 1 stay
 * exact; larger multipliers are grouped GEMMs there), ConvInteger
 * (the int32 output) stays exact; *n_sat counts outputs where that
 * changed the value. */
static void
test_qconv(int sat, size_t *n_sat)
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
		int64_t *acc = xmalloc(ny * 8 + 8), *acc8 = acc;
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
		qr_kernels_force_ort(sat ? QR_ORT_U8S8_SATURATES :
					   QR_ORT_SUMEXP_AVX512);
		pk = qr_qconv_pack_new(p.c_out, p.c_in, 0, p.kh, p.kw, p.group, w,
				       wsg, wz, per_ch ? p.c_out : 1);
		wsp = xmalloc(qr_qconv_workspace(pk, &p, 3));
		q.x_signed = xs;
		q.x_zp = xz;
		q.bias = bias;
		q.scale = scale;
		q.n_scale = per_ch ? p.c_out : 1;
		q.y_signed = ys;
		q.y_zp = ys ? rnd_int(-10, 10) : rnd_int(100, 150);
		qconv_ref(&p, x, xs, xz, w, wsg, wz, per_ch ? p.c_out : 1, 0,
			  acc);
		/* depthwise convs of multiplier 1 stay exact in ORT */
		if (sat && !xs && wsg && (kind != 1 || p.c_out != p.c_in)) {
			acc8 = xmalloc(ny * 8 + 8);
			qconv_ref(&p, x, xs, xz, w, wsg, wz,
				  per_ch ? p.c_out : 1, 1, acc8);
			for (i = 0; i < ny; i++)
				*n_sat += acc8[i] != acc[i];
		}

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
			int32_t want = requant_ref(acc8[i] + bias[co],
						   scale[per_ch ? co : 0],
						   q.y_zp, ys);
			int32_t got = ys ? (int8_t)y[i] : y[i];

			n_bad8 += got != want;
			n_bad32 += y32[i] != (int32_t)acc[i];
			n_diff += y[i] != yp[i] || y32[i] != y32p[i];
		}
		ok(n_bad8 == 0 && n_bad32 == 0,
		   "qconv %s %s #%d: x%s w%s y%s zp%s c%zu->%zu g%zu k%zux%zu s%zu,%zu d%zu,%zu (%zu/%zu/%zu bad)",
		   acc8 != acc ? "ORT pairs16" : "exact",
		   kinds_name(kind), t, xs ? "s8" : "u8", wsg ? "s8" : "u8",
		   ys ? "s8" : "u8", per_ch ? "/ch" : "", p.c_in, p.c_out,
		   p.group, p.kh, p.kw, p.stride_h, p.stride_w, p.dil_h,
		   p.dil_w, n_bad8, n_bad32, ny);
		ok(n_diff == 0, "qconv #%d: %s and portable paths agree", t,
		   qr_kernels_igemm_path());
		qr_qconv_packed_free(pk);
		qr_kernels_force_ort(QR_ORT_SUMEXP_AVX512);
		free(wsp);
		free(x);
		free(w);
		free(wz);
		free(bias);
		free(scale);
		if (acc8 != acc)
			free(acc8);
		free(acc);
		free(y32);
		free(y32p);
		free(y);
		free(yp);
	}
}

/* QGEMM against the reference; with sat, u8 x s8 products summed in
 * saturating pairs as ONNX Runtime's MLAS kernels do without VNNI (the
 * other signednesses stay exact). *n_sat as in test_qconv. */
static void
test_qgemm(int sat, size_t *n_sat)
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
		qr_kernels_force_ort(sat ? QR_ORT_U8S8_SATURATES :
					   QR_ORT_SUMEXP_AVX512);
		pk = qr_qgemm_pack_new(b, bs, tb, k, n, bz, nzp);
		qr_kernels_force_ort(QR_ORT_SUMEXP_AVX512);
		ws = xmalloc(qr_qgemm_workspace(pk, m, 2));
		qr_qgemm_run(pk, a, as, az, m, c, n + 3, ws, 2);
		qr_kernels_force_portable(1);
		qr_qgemm_run(pk, a, as, az, m, c2, n + 3, ws, 1);
		qr_kernels_force_portable(0);
		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++) {
				int64_t s = 0, sx = 0, sw = 0, sxw = 0, se = 0;
				int32_t z = bz[nzp == 1 ? 0 : j], half = 0;
				int p16 = sat && !as && bs;

				for (kk = 0; kk < k; kk++) {
					int32_t xv = ld8(a, i * k + kk, as);
					int32_t wv = ld8(b, tb ? j * k + kk : kk * n + j, bs);

					sx += xv;
					sw += wv;
					se += (int64_t)xv * wv;
					pair_add(&sxw, &half, kk, xv * wv, p16);
				}
				if (p16 && k % 2)
					sxw += half;
				*n_sat += sxw != se;
				s = sxw - z * sx - az * sw + (int64_t)k * az * z;
				bad += c[i * (n + 3) + j] != (int32_t)s;
				diff += c[i * (n + 3) + j] != c2[i * (n + 3) + j];
			}
		ok(bad == 0 && diff == 0,
		   "qgemm %s #%d: a%s b%s trans_b=%d m%zu n%zu k%zu (%zu bad, %zu differ)",
		   sat && !as && bs ? "ORT pairs16" : "exact", t,
		   as ? "s8" : "u8", bs ? "s8" : "u8", tb, m, n, k, bad, diff);
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

/* q = saturate(round_half_even(x / s) + zp), rounded in double, NaN
 * quotient -> zp: what qr_quantize_f32_nan_zp must give. */
static int64_t
quant_ref(float x, float s, int32_t zp, enum qr_qtype t)
{
	static const double lo[] = {0, -128, 0, -32768, -2147483648.0};
	static const double hi[] = {255, 127, 65535, 32767, 2147483647.0};
	double v = (float)(x / s), r, f;

	if (isnan(v))
		return zp;
	r = floor(v);
	f = v - r;
	if (f > 0.5 || (f == 0.5 && fmod(r, 2.0) != 0))
		r += 1;
	r += zp;
	return (int64_t)(r < lo[t] ? lo[t] : r > hi[t] ? hi[t] : r);
}

/* qr_quantize_f32_nan_zp on every element type, per axis, SIMD and
 * portable, against quant_ref: halves on both sides of zero, values just
 * past each end of the range, infinities, NaN, 0 / 0 (a zero scale),
 * and int32 beyond float's 24 bits. */
static void
test_quantize_nan_zp(void)
{
	enum { N = 1000, AX = 4 };
	static const float sc[AX] = {0.037f, 1.0f, 0.0f, 3e-3f};
	static const int32_t zp8[2][AX] = {{3, 128, 255, 0}, {-7, 0, 127, -128}};
	static const int32_t zp16[2][AX] = {{3, 32768, 65535, 0},
					    {-7, 0, 32767, -32768}};
	static const int32_t zp32[AX] = {5, -1, 0, 1 << 30};
	static float x[N];
	static uint8_t y[N * 4];
	size_t i, sz, bad = 0, n_nan = 0;
	int t, pass;

	for (i = 0; i < N; i++) {
		float s = sc[(i / (N / AX / 5)) % AX];

		switch (i % 5) {
		case 0: x[i] = ((float)rnd_int(-70000, 70000) + 0.5f) * s; break;
		case 1: x[i] = (float)rnd_int(-70000, 70000) / 8.0f; break;
		case 2: x[i] = rnd_f() * 3e9f; break;
		case 3: x[i] = (float)rnd_int(-40, 40) * 0.25f; break;
		default: x[i] = rnd_f() * 300.0f; break;
		}
	}
	x[3] = NAN;
	x[7] = INFINITY;
	x[11] = -INFINITY;
	x[13] = 16777217.0f;
	x[60] = 0.0f; /* a zero scale there: 0 / 0 */
	for (t = QR_QT_U8; t <= QR_QT_S32; t++)
		for (pass = 0; pass < 2; pass++) {
			const int32_t *zp = t == QR_QT_S32 ? zp32 :
				t <= QR_QT_S8 ? zp8[t == QR_QT_S8] :
				zp16[t == QR_QT_S16];

			qr_kernels_force_portable(pass);
			/* [5][AX][N / AX / 5]: each scale on N / AX / 5 in a row */
			qr_quantize_f32_nan_zp(x, 5, AX, N / AX / 5, sc, zp,
					       (enum qr_qtype)t, y);
			sz = qr_qtype_size((enum qr_qtype)t);
			for (i = 0; i < N; i++) {
				size_t a = (i / (N / AX / 5)) % AX;
				int64_t want = quant_ref(x[i], sc[a], zp[a],
							 (enum qr_qtype)t);

				/* want's low sz bytes (little-endian) are its
				 * value in t */
				bad += memcmp(y + i * sz, &want, sz) != 0;
				n_nan += isnan(x[i] / sc[a]);
			}
		}
	qr_kernels_force_portable(0);
	ok(bad == 0 && n_nan > 0,
	   "quantize, NaN -> zero point: u8 s8 u16 s16 s32 per axis, simd and "
	   "portable = saturate(round_half_even(x / s) + zp) in double "
	   "(%zu differ; %zu NaN quotients)", bad, n_nan);
}

static size_t float_bits_differ(const float *a, const float *b, size_t n);

/* QuantizeLinear and DequantizeLinear rows of 8-bit codes: the SIMD
 * paths (AVX-512 or AVX2, with a scalar tail) give the portable bits on
 * 1001 values with NaN, infinities, halves and saturating ones. */
static void
test_quant_simd(void)
{
	enum { N = 1001 };
	float x[N], d0[N], d1[N], sc[3] = {0.037f, 1.0f, 0.5f};
	uint8_t q0[N], q1[N];
	int32_t zp[3] = {3, 128, -7};
	size_t i, bad = 0;
	int t, sgn;

	for (i = 0; i < N; i++)
		x[i] = (float)rnd_int(-4000, 4000) / 8.0f;
	x[5] = NAN;
	x[17] = INFINITY;
	x[900] = -INFINITY;
	for (t = 0; t < 3; t++)
		for (sgn = 0; sgn < 2; sgn++) {
			enum qr_qtype qt = sgn ? QR_QT_S8 : QR_QT_U8;
			int32_t z = sgn ? zp[t] : zp[t] + 100;

			qr_quantize_f32(x, 1, 1, N, &sc[t], &z, qt, q0);
			qr_dequantize_f32(q0, qt, 1, 1, N, &sc[t], &z, d0);
			qr_kernels_force_portable(1);
			qr_quantize_f32(x, 1, 1, N, &sc[t], &z, qt, q1);
			qr_dequantize_f32(q0, qt, 1, 1, N, &sc[t], &z, d1);
			qr_kernels_force_portable(0);
			bad += memcmp(q0, q1, N) != 0;
			bad += float_bits_differ(d0, d1, N) != 0;
		}
	ok(bad == 0, "quantize/dequantize 8-bit rows: simd = portable (%zu "
	   "of 12 differ)", bad);
}

/* QLinearAdd over every pair of 8-bit codes (scales for which 4 pairs
 * round to another code when a's product is rounded before it is added,
 * as a fused multiply-add does not)
 * and clamps of rows with NaN: SIMD = portable. */
static void
test_qadd_clamp_simd(void)
{
	enum { N = 65536 };
	static uint8_t a[N], b[N], y0[N], y1[N];
	static float x[N], f0[N], f1[N];
	size_t i, bad = 0;
	int sg, pass;

	for (i = 0; i < N; i++) {
		a[i] = (uint8_t)(i & 255);
		b[i] = (uint8_t)(i >> 8);
		x[i] = (float)rnd_int(-3000, 3000) / 512.0f;
	}
	x[77] = NAN;
	for (sg = 0; sg < 2; sg++) {
		enum qr_qtype t = sg ? QR_QT_S8 : QR_QT_U8;
		uint8_t *y[2] = {y0, y1};

		for (pass = 0; pass < 2; pass++) {
			qr_kernels_force_portable(pass);
			qr_qlinear_add(a, 1, 0.0192f, sg ? -13 : 115, b, 1,
				       0.04435f, sg ? -47 : 81, 0.0389f,
				       sg ? 127 : 255, t, y[pass], N);
		}
		for (i = 0; i < N; i++)
			bad += y0[i] != y1[i];
	}
	qr_kernels_force_portable(0);
	ok(bad == 0, "qlinear add, every pair of codes: simd = portable (%zu "
	   "differ)", bad);
	qr_clamp_f32(x, N, -2.5f, 4.0f, f0);
	qr_kernels_force_portable(1);
	qr_clamp_f32(x, N, -2.5f, 4.0f, f1);
	qr_kernels_force_portable(0);
	ok(float_bits_differ(f0, f1, N) == 0 && isnan(f0[77]) &&
	   f0[0] >= -2.5f && f0[0] <= 4.0f, "clamp: simd = portable, NaN kept "
	   "(%zu differ)", float_bits_differ(f0, f1, N));
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
	static const uint8_t want_mul[3] = {2, 2, 1};
	uint8_t y[4];
	int8_t ys[3];

	/* (a - 10) * 0.5 + b * 0.25: 0+5, 95+0, 0.5 -> 0, 1.5 -> 2 */
	qr_qlinear_add(a, 1, 0.5f, 10, b, 1, 0.25f, 0, 1.0f, 0, QR_QT_U8, y, 4);
	ok(memcmp(y, want_add, 4) == 0, "qlinear add u8, ties to even");
	qr_qlinear_add(sa8, 1, 1.0f, 0, sb8, 0, 1.0f, 0, 1.0f, 0, QR_QT_S8, ys,
		       3);
	ok(memcmp(ys, want_s, 3) == 0, "qlinear add s8 broadcast b, saturate");
	/* (a-10)(b-10) * 0.25 + 1, the zero point added before rounding:
	 * 6 -> 2.5 -> 2, 4 -> 2, 0 -> 1 (onnxruntime-node 1.30 gives 2 2 1;
	 * rounding first and adding 1 after gave 3 for the first) */
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

/* qr_softmax_row_ort_f32 against onnxruntime-node 1.30's Softmax on one
 * row of 31 (a full 16-step, then 8 and a masked 7; the bits below are
 * ORT's output). tests/ort_crosscheck.sh checks more shapes. */
/* qr_sum_ort_f32 follows Eigen's packets, which start at the first
 * 16-byte-aligned value: {1e8, 1, -1e8, 1, 3} sums to 5 from an aligned
 * address ((1e8 + -1e8) + (1 + 1), then 3) and to 4 left to right
 * (1e8 + 1 rounds to 1e8), as from an address 4 bytes past alignment,
 * where no whole packet fits. tests/ort_crosscheck.sh checks ORT. */
static void
test_sum_ort(void)
{
	static _Alignas(16) float buf[12];
	static const float v[5] = {1e8f, 1.0f, -1e8f, 1.0f, 3.0f};

	memcpy(buf, v, sizeof v);
	memcpy(buf + 5, v, sizeof v);
	ok(qr_sum_ort_f32(buf, 5) == 5.0f, "ORT-order sum from an aligned "
	   "address: a packet, then the rest (%g)",
	   (double)qr_sum_ort_f32(buf, 5));
	ok(qr_sum_ort_f32(buf + 5, 5) == 4.0f, "ORT-order sum 4 bytes past "
	   "alignment: left to right (%g)",
	   (double)qr_sum_ort_f32(buf + 5, 5));
}

/* Positions where a and b differ in their bits (any NaN equals any
 * NaN): how the SIMD-versus-portable tests compare floats. */
static size_t
float_bits_differ(const float *a, const float *b, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		k += isnan(a[i]) ? !isnan(b[i]) :
		     memcmp(&a[i], &b[i], sizeof a[i]) != 0;
	return k;
}

/* Softmax rows of 1 to 70 values (scaled up to reach exp's clamp, with a
 * NaN and -inf in some): the SIMD path of ORT's kernels for traits (the
 * 16-lane AVX-512 one, or the 8-lane AVX2 one) gives the portable bits. */
static void
test_softmax_simd(unsigned traits)
{
	enum { N = 70 };
	float x[N], a[N], b[N];
	unsigned seed = 3;
	size_t n, i;
	int bad = 0;

	for (n = 1; n <= N; n++) {
		for (i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			x[i] = ((float)(seed >> 9) / (float)(1u << 23) - 0.5f) *
			       (n % 3 ? 20.0f : 400.0f);
		}
		if (n % 7 == 0)
			x[n / 2] = -INFINITY;
		if (n % 11 == 0)
			x[n - 1] = NAN;
		qr_kernels_force_ort(traits);
		qr_softmax_row_ort_f32(x, n, a);
		qr_kernels_force_portable(1);
		qr_softmax_row_ort_f32(x, n, b);
		qr_kernels_force_portable(0);
		bad += float_bits_differ(a, b, n) > 0;
	}
	qr_kernels_force_ort(QR_ORT_SUMEXP_AVX512);
	ok(bad == 0, "softmax rows of 1..%d, ORT's %s kernel: simd = portable "
	   "(%d rows differ)", N,
	   traits & QR_ORT_SUMEXP_AVX512 ? "AVX-512" : "AVX2", bad);
}

/* A row of 40 (five 8-lane steps; two 16-lane steps and a masked 8) with
 * scores 90 and 100 below the max, against onnxruntime-node 1.30 on an
 * AMD EPYC without AVX-512 (bits below). Its AVX2 exp-sum flushes both to
 * 0 where the AVX-512 one keeps denormals, and sums in another order, so
 * the AVX-512 kernel must not give these bits. */
static void
test_softmax_ort_avx2(void)
{
	static const uint32_t xb[40] = {
		0x406544fc, 0xc0868a8b, 0xc0805188, 0xbfec9088, 0xbd315400,
		0xc2bd0c0c, 0xbe098080, 0xbe373480, 0xc091365f, 0x3fffc648,
		0xc07c9888, 0x40949ca1, 0xbf130e28, 0x40979b96, 0x3e0c8d40,
		0xc0be1b8c, 0xc059c3aa, 0xc2a90c0c, 0x40606bb6, 0x3faed908,
		0x3d3d4800, 0xc0279664, 0xc0a23d02, 0x40adc715, 0xc02c56a2,
		0xc0549ed4, 0xbe538360, 0x40562534, 0x409b1fe7, 0x4031147c,
		0x4023bf8a, 0xc068b5dc, 0xbf8b7118, 0x3f528100, 0xbf7e0880,
		0x408d0570, 0x40733b9a, 0x3f20e198, 0x3feaf348, 0x40af3f3b,
	};
	static const uint32_t want[40] = {
		0x3d06797c, 0x3764b22d, 0x378ae4a9, 0x3916d0b9, 0x3a653539,
		0x00000000, 0x3a514615, 0x3a48238a, 0x3723d838, 0x3bdcae69,
		0x3793f235, 0x3dc26b15, 0x3a06c24c, 0x3dd57fe1, 0x3a89480a,
		0x36212253, 0x37fef4bd, 0x00000000, 0x3cf9536b, 0x3b6a8a41,
		0x3a7aab4a, 0x388b9aa5, 0x36c07b8e, 0x3e556d6e, 0x38819db4,
		0x380a259b, 0x3a42ae8e, 0x3cd4580c, 0x3dee4d2e, 0x3c6dfc3f,
		0x3c413bc7, 0x37c9db5e, 0x39a10b65, 0x3b082bb1, 0x39b17617,
		0x3d995cdd, 0x3d2742ad, 0x3ae05a30, 0x3bbb8c12, 0x3e5f74af,
	};
	float x[40], y[40], w[40];
	int portable;

	memcpy(x, xb, sizeof x);
	memcpy(w, want, sizeof w);
	qr_kernels_force_ort(0);
	for (portable = 0; portable < 2; portable++) {
		qr_kernels_force_portable(portable);
		qr_softmax_row_ort_f32(x, 40, y);
		ok(float_bits_differ(y, w, 40) == 0, "softmax row of 40, ORT's "
		   "AVX2 kernel%s: ONNX Runtime's bits (%zu differ)",
		   portable ? ", portable path" : "",
		   float_bits_differ(y, w, 40));
	}
	qr_kernels_force_portable(0);
	qr_kernels_force_ort(QR_ORT_SUMEXP_AVX512);
	qr_softmax_row_ort_f32(x, 40, y);
	ok(float_bits_differ(y, w, 40) > 0, "the AVX-512 kernel gives other "
	   "bits there (%zu differ)", float_bits_differ(y, w, 40));
}

static void
test_softmax_ort(void)
{
	static const float x[31] = {
		0x1.5caedp+0f, 0x1.5976eep+2f, 0x1.2b1786p+3f, -0x1.aff01p+1f,
		0x1.578382p+2f, 0x1.93040cp+1f, -0x1.084956p+1f, 0x1.38ab42p+3f,
		-0x1.668514p+2f, -0x1.bb05c8p+0f, -0x1.08b4f2p+1f,
		-0x1.165d7cp+3f, 0x1.cc65cap+2f, -0x1.6b100ep+0f,
		-0x1.043a16p+3f, -0x1.069032p+2f, -0x1.44e31cp+2f,
		0x1.276bdcp+3f, 0x1.0bc04ap+2f, 0x1.ff3806p+2f, 0x1.6224aap+0f,
		0x1.80d0c6p+1f, -0x1.8143eep+2f, 0x1.20fc9ap+2f, -0x1.2ebb42p+1f,
		0x1.a056c6p+1f, -0x1.be9032p-1f, -0x1.c16418p+2f, 0x1.433078p+3f,
		-0x1.4337d8p+1f, 0x1.c630b6p+3f,
	};
	static const uint32_t want[31] = {
		0x362b7f3a, 0x3917a464, 0x3bf5cd46, 0x32c07d45, 0x391316f2,
		0x377fe692, 0x33b24f3b, 0x3c3bda81, 0x312605ba, 0x33f90fdc,
		0x33b1b98d, 0x2ef00b23, 0x3a64640f, 0x342a2fe2, 0x2f538e86,
		0x3239e38e, 0x318c6611, 0x3bdb2a00, 0x38341b2c, 0x3afca59e,
		0x362f31bc, 0x375dfb9f, 0x30daa0c3, 0x387af98c, 0x33840c66,
		0x378dfc78, 0x3492e717, 0x30208ac5, 0x3c827cc4, 0x33610974,
		0x3f74868f,
	};
	float y[31];
	size_t i, same = 0;

	qr_softmax_row_ort_f32(x, 31, y);
	for (i = 0; i < 31; i++) {
		uint32_t u;

		memcpy(&u, &y[i], sizeof u);
		same += u == want[i];
	}
	ok(same == 31, "softmax row of 31: ONNX Runtime's bits (%zu of 31)",
	   same);
	memcpy(y, x, sizeof y);
	qr_softmax_row_ort_f32(y, 31, y);
	for (i = 0, same = 0; i < 31; i++) {
		uint32_t u;

		memcpy(&u, &y[i], sizeof u);
		same += u == want[i];
	}
	ok(same == 31, "softmax row in place: the same bits (%zu of 31)", same);
	qr_kernels_force_portable(1);
	qr_softmax_row_ort_f32(x, 31, y);
	qr_kernels_force_portable(0);
	for (i = 0, same = 0; i < 31; i++) {
		uint32_t u;

		memcpy(&u, &y[i], sizeof u);
		same += u == want[i];
	}
	ok(same == 31, "softmax row, portable path: ONNX Runtime's bits (%zu "
	   "of 31)", same);
	test_softmax_simd(QR_ORT_SUMEXP_AVX512);
	test_softmax_simd(0);
	test_softmax_ort_avx2();
}

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

/* One broadcast run of + - * /, rows and single values on each side,
 * 16-lane blocks and a tail, SIMD and portable: each value as C's own
 * operator gives it (NaN and infinities included). */
static void
test_binary_rows(void)
{
	enum { N = 37 };
	static const enum qr_binop ops[] = {QR_BIN_ADD, QR_BIN_SUB, QR_BIN_MUL,
					    QR_BIN_DIV};
	float a[N], b[N], y[N], want;
	size_t i, o, sa, sb;
	int port, bad = 0, cases = 0;

	for (i = 0; i < N; i++) {
		a[i] = (float)i * 0.37f - 5.0f;
		b[i] = 3.0f - (float)i * 0.21f;
	}
	a[3] = NAN;
	b[20] = INFINITY;
	b[0] = 0.0f;
	for (port = 0; port <= 1; port++)
		for (o = 0; o < 4; o++)
			for (sa = 0; sa <= 1; sa++)
				for (sb = 0; sb <= 1; sb++) {
	qr_kernels_force_portable(port);
	qr_binary_row_f32(ops[o], N, a, sa, b, sb, y);
	qr_kernels_force_portable(0);
	cases++;
	for (i = 0; i < N; i++) {
		float x = a[i * sa], z = b[i * sb];

		want = o == 0 ? x + z : o == 1 ? x - z : o == 2 ? x * z : x / z;
		if (isnan(want) ? !isnan(y[i]) :
		    memcmp(&want, &y[i], sizeof want) != 0) {
			bad++;
			break;
		}
	}
				}
	ok(bad == 0, "binary rows: %d of %d op/stride/path cases wrong", bad,
	   cases);
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
	test_binary_rows();
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
	int sg, pass, k;
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
		/* both rows, then each side a single code; scales with .5
		 * ties (0.5 * 0.5 / 1) and a tiny output scale that
		 * saturates */
		{
			static const size_t steps[3][2] = {{1, 1}, {0, 1},
							    {1, 0}};
			int st, bad = 0;

			for (st = 0; st < 3; st++)
				for (k = 0; k < 2; k++) {
					for (pass = 0; pass < 2; pass++) {
						qr_kernels_force_portable(pass);
						qr_qlinear_mul(a, steps[st][0],
							0.5f, sg ? -5 : 120, b,
							steps[st][1], 0.5f,
							sg ? 7 : 130,
							k ? 1e-3f : 1.0f,
							sg ? 1 : 127, t,
							y8[pass], N);
					}
					bad += memcmp(y8[0], y8[1], N) != 0;
				}
			ok(bad == 0, "qlinear mul %s: simd = portable (rows "
			   "and single codes, %d of 6 differ)",
			   sg ? "s8" : "u8", bad);
		}
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

/* Float MaxPool: the AVX-512 path (strides 1 and 2) gives the portable
 * loop's bits, NaN included, over kernel sizes, pads, dilations, ceil
 * mode and widths that leave edge outputs and masked tails. */
/* n pool inputs in [-143, 143] from *seed, one of them NaN. */
static void
pool_fill(float *x, size_t n, unsigned *seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		*seed = *seed * 1103515245u + 12345u;
		x[i] = (float)((int)(*seed >> 16) % 2001 - 1000) / 7.0f;
	}
	x[(*seed >> 8) % n] = NAN;
}

/* im2col (float and uint8) against the definition, one column at a
 * time: 2- and 3-D geometry with strides, pads and dilations, over
 * column ranges that start inside an output row and run across rows and
 * depth planes, as the conv's column blocks do. */
static void
test_im2col(void)
{
	int t, bad = 0, bad8 = 0, shapes = 0, same = 0;

	for (t = 0; t < 300; t++) {
		struct qr_conv_params p = rand_params(0);
		size_t cin, od_n, oh_n, ow_n, plane;
		size_t k, kt, ki, kj, ci, c, col0, ncols, n_in, kd_n;
		float *x, *col;
		uint8_t *x8, *col8;

		/* one image of one group: what a column block sees */
		p.n = 1;
		p.group = 1;
		cin = p.c_in;
		p.h = (size_t)rnd_int(1, 9);
		if (t % 3 == 0) { /* 3-D */
			p.d = (size_t)rnd_int(1, 4);
			p.kd = (size_t)rnd_int(1, 2);
			p.stride_d = (size_t)rnd_int(1, 2);
			p.dil_d = 1;
			p.pad_f = (size_t)rnd_int(0, 1);
			p.pad_k = (size_t)rnd_int(0, 1);
		} else if (t % 3 == 1) {
			/* stride 1, as wide as the input: one copy a tap
			 * (the padding split any way, some rows all pad) */
			size_t span = p.dil_w * (p.kw - 1);

			p.stride_h = p.stride_w = 1;
			p.pad_l = (size_t)rnd_int(0, (int)span);
			p.pad_r = span - p.pad_l;
			p.pad_t = (size_t)rnd_int(0, 3);
			same += qr_conv_out_w(&p) == p.w && p.h > 0;
		}
		od_n = qr_conv_out_d(&p);
		oh_n = qr_conv_out_h(&p);
		ow_n = qr_conv_out_w(&p);
		plane = od_n * oh_n * ow_n;
		if (plane == 0)
			continue;
		shapes++;
		kd_n = p.kd ? p.kd : 1;
		col0 = (size_t)rnd_int(0, (int)plane - 1);
		ncols = (size_t)rnd_int(1, (int)(plane - col0));
		n_in = cin * (p.d ? p.d : 1) * p.h * p.w;
		x = xmalloc(n_in * sizeof *x);
		x8 = xmalloc(n_in);
		for (k = 0; k < n_in; k++) {
			x[k] = (float)k + 1.0f;
			x8[k] = (uint8_t)(k % 250 + 1);
		}
		k = cin * kd_n * p.kh * p.kw;
		col = xmalloc(k * ncols * sizeof *col);
		col8 = xmalloc(k * ncols);
		qr_im2col_f32(&p, x, cin, col0, ncols, col);
		qr_im2col_u8(&p, x8, cin, col0, ncols, 7, col8);
		k = 0;
		for (ci = 0; ci < cin; ci++)
		for (kt = 0; kt < kd_n; kt++)
		for (ki = 0; ki < p.kh; ki++)
		for (kj = 0; kj < p.kw; kj++, k++)
			for (c = 0; c < ncols; c++) {
				size_t o = col0 + c, ow = o % ow_n;
				size_t oh = o / ow_n % oh_n, od = o / ow_n / oh_n;
				long id = (long)(od * p.stride_d + kt * p.dil_d) -
					  (long)p.pad_f;
				long ih = (long)(oh * p.stride_h + ki * p.dil_h) -
					  (long)p.pad_t;
				long iw = (long)(ow * p.stride_w + kj * p.dil_w) -
					  (long)p.pad_l;
				size_t dn = p.d ? p.d : 1, at;
				float want = 0;
				uint8_t want8 = 7; /* the padding */

				if (id >= 0 && id < (long)dn && ih >= 0 &&
				    ih < (long)p.h && iw >= 0 && iw < (long)p.w) {
					at = ((ci * dn + (size_t)id) * p.h +
					      (size_t)ih) * p.w + (size_t)iw;
					want = x[at];
					want8 = x8[at];
				}
				bad += col[k * ncols + c] != want;
				bad8 += col8[k * ncols + c] != want8;
			}
		free(x);
		free(x8);
		free(col);
		free(col8);
	}
	ok(shapes > 100 && same > 50 && bad == 0, "im2col f32 = definition "
	   "on %d shapes (%d of stride 1 as wide as the input), 2- and 3-D, "
	   "column ranges across rows and planes (%d differ)", shapes, same,
	   bad);
	ok(bad8 == 0, "im2col u8 = definition, padded with the zero point (%d "
	   "differ)", bad8);
}

/* 3-D (and 2-D, as depth 1) MaxPool and AveragePool: the AVX-512 path
 * gives the portable bits over windows, strides, pads, dilations, ceil
 * mode and count_include_pad, with a NaN in each volume. */
static void
test_pool3d_simd(void)
{
	int d, h, k, s, pd, dl, cm, cip, cases = 0, bad_max = 0, bad_avg = 0;
	int bad8 = 0;
	unsigned seed = 9;

	for (d = 1; d <= 4; d += 3)
	for (h = 2; h <= 20; h += 6)
	for (k = 1; k <= 3; k++)
	for (s = 1; s <= 3; s++)
	for (pd = 0; pd < k && pd <= 1; pd++)
	for (dl = 1; dl <= 2; dl++)
	for (cm = 0; cm <= 1; cm++)
	for (cip = 0; cip <= 1; cip++) {
	struct qr_pool_params p = {0};
	size_t no, n, i;
	float *x, *a, *b;
	uint8_t *x8, *a8, *b8;
	int sg;

	p.n = 1, p.c = 2, p.d = (size_t)d, p.h = (size_t)h;
	p.w = (size_t)h + 19;
	p.kd = d > 1 ? (size_t)k : 1, p.kh = (size_t)k, p.kw = (size_t)k + 1;
	p.stride_d = p.stride_h = (size_t)s, p.stride_w = (size_t)(s % 2 + 1);
	p.pad_f = p.pad_k = d > 1 ? (size_t)pd : 0;
	p.pad_t = p.pad_b = p.pad_l = p.pad_r = (size_t)pd;
	p.dil_d = p.dil_h = 1, p.dil_w = (size_t)dl;
	p.ceil_mode = cm, p.count_include_pad = cip;
	no = p.n * p.c * qr_pool_out_d(&p) * qr_pool_out_h(&p) *
	     qr_pool_out_w(&p);
	if (no == 0)
		continue;
	n = p.n * p.c * p.d * p.h * p.w;
	x = xmalloc(n * sizeof *x);
	a = xmalloc(no * sizeof *a);
	b = xmalloc(no * sizeof *b);
	pool_fill(x, n, &seed);
	cases++;
	qr_maxpool3d_f32(&p, x, a);
	qr_kernels_force_portable(1);
	qr_maxpool3d_f32(&p, x, b);
	qr_kernels_force_portable(0);
	bad_max += memcmp(a, b, no * sizeof *a) != 0;
	qr_avgpool3d_f32(&p, x, a);
	qr_kernels_force_portable(1);
	qr_avgpool3d_f32(&p, x, b);
	qr_kernels_force_portable(0);
	if (float_bits_differ(a, b, no) > 0 && bad_avg++ == 0)
		diag("first avgpool difference: d %d h %d k %d s %d pad %d "
		     "dil %d ceil %d cip %d", d, h, k, s, pd, dl, cm, cip);
	x8 = xmalloc(n);
	a8 = xmalloc(no);
	b8 = xmalloc(no);
	for (i = 0; i < n; i++)
		x8[i] = (uint8_t)(int)(x[i] * 7.0f);
	for (sg = 0; sg <= 1; sg++) {
		qr_maxpool3d_q8(&p, x8, sg, a8);
		qr_kernels_force_portable(1);
		qr_maxpool3d_q8(&p, x8, sg, b8);
		qr_kernels_force_portable(0);
		bad8 += memcmp(a8, b8, no) != 0;
	}
	free(x8);
	free(a8);
	free(b8);
	free(x);
	free(a);
	free(b);
	}
	ok(bad_max == 0, "3-D maxpool f32: simd = portable on %d shapes (%d "
	   "differ)", cases, bad_max);
	ok(bad8 == 0, "3-D maxpool u8 and s8: simd = portable (%d differ)",
	   bad8);
	ok(bad_avg == 0, "3-D and 2-D avgpool: simd = portable in both sum "
	   "orders on %d shapes (%d differ)", cases, bad_avg);
}

static void
test_maxpool_simd(void)
{
	int h, k, s, pd, d, cm, cases = 0, bad = 0, bad8 = 0;
	unsigned seed = 7;

	for (h = 1; h <= 23; h += 3)
		for (k = 1; k <= 4; k++)
			for (s = 1; s <= 3; s++)
				for (pd = 0; pd < k && pd <= 2; pd++)
					for (d = 1; d <= 2; d++)
						for (cm = 0; cm <= 1; cm++) {
	struct qr_pool_params p = {0};
	size_t oh, ow, n, no, i;
	float *x, *a, *b;
	uint8_t *x8, *a8, *b8;
	int sg;

	p.n = 1;
	p.c = 2;
	p.h = (size_t)h;
	p.w = (size_t)h + 5;
	p.kh = p.kw = (size_t)k;
	p.stride_h = p.stride_w = (size_t)s;
	p.pad_t = p.pad_l = p.pad_b = p.pad_r = (size_t)pd;
	p.dil_h = p.dil_w = (size_t)d;
	p.ceil_mode = cm;
	oh = qr_pool_out_h(&p);
	ow = qr_pool_out_w(&p);
	if (oh == 0 || ow == 0)
		continue;
	n = p.c * p.h * p.w;
	no = p.c * oh * ow;
	x = xmalloc(n * sizeof *x);
	a = xmalloc(no * sizeof *a);
	b = xmalloc(no * sizeof *b);
	pool_fill(x, n, &seed);
	qr_kernels_force_portable(0);
	qr_maxpool_f32(&p, x, a);
	qr_kernels_force_portable(1);
	qr_maxpool_f32(&p, x, b);
	qr_kernels_force_portable(0);
	cases++;
	if (memcmp(a, b, no * sizeof *a) != 0 && bad++ == 0)
		diag("first difference: h %d k %d stride %d pad %d dil %d "
		     "ceil %d", h, k, s, pd, d, cm);
	x8 = xmalloc(n);
	a8 = xmalloc(no);
	b8 = xmalloc(no);
	for (i = 0; i < n; i++)
		x8[i] = (uint8_t)(x[i] * 7.0f);
	for (sg = 0; sg <= 1; sg++) {
		qr_maxpool_q8(&p, x8, sg, a8);
		qr_kernels_force_portable(1);
		qr_maxpool_q8(&p, x8, sg, b8);
		qr_kernels_force_portable(0);
		if (memcmp(a8, b8, no) != 0 && bad8++ == 0)
			diag("first q8 difference: %s h %d k %d stride %d "
			     "pad %d dil %d ceil %d", sg ? "s8" : "u8", h, k,
			     s, pd, d, cm);
	}
	free(x8);
	free(a8);
	free(b8);
	free(x);
	free(a);
	free(b);
						}
	ok(bad == 0, "maxpool f32: simd = portable on %d shapes", cases);
	ok(bad8 == 0, "maxpool u8 and s8: simd = portable on %d shapes",
	   cases);
}

/* NonMaxSuppression's overlap test: SIMD and portable agree with the
 * test's own IoU on 2000 boxes against 37 kept ones (two 16-blocks and a
 * tail), boxes of no area, NaN corners and shared edges included. */
static void
test_box_suppressed(void)
{
	enum { K = 37, N = 2000 };
	float col[5][K], b[4];
	struct qr_boxes k = {col[0], col[1], col[2], col[3], col[4]};
	unsigned seed = 5;
	int port, bad = 0, hits = 0;
	size_t i, j;

#define RND() (seed = seed * 1103515245u + 12345u, \
	       (float)((seed >> 16) % 64) / 4.0f)
	for (j = 0; j < K; j++) {
		float x = RND(), y = RND();

		col[0][j] = x, col[1][j] = y;
		col[2][j] = x + RND(), col[3][j] = y + RND();
		col[4][j] = (col[2][j] - col[0][j]) * (col[3][j] - col[1][j]);
	}
	col[0][20] = NAN;
	col[4][20] = NAN;
	for (i = 0; i < N; i++) {
		int want = 0, got[2];

		b[0] = RND(), b[1] = RND();
		b[2] = b[0] + RND(), b[3] = b[1] + RND();
		if (i % 97 == 0)
			b[3] = NAN;
		for (j = 0; j < K && !want; j++) {
			float ix0 = col[0][j] > b[0] ? col[0][j] : b[0];
			float iy0 = col[1][j] > b[1] ? col[1][j] : b[1];
			float ix1 = col[2][j] < b[2] ? col[2][j] : b[2];
			float iy1 = col[3][j] < b[3] ? col[3][j] : b[3];
			float iw = ix1 - ix0 > 0 ? ix1 - ix0 : 0;
			float ih = iy1 - iy0 > 0 ? iy1 - iy0 : 0;
			float in = iw * ih, ab = (b[2] - b[0]) * (b[3] - b[1]);
			float un = col[4][j] + ab - in;

			want = in > 0 && col[4][j] > 0 && ab > 0 && un > 0 &&
			       in / un > 0.5f;
		}
		for (port = 0; port <= 1; port++) {
			qr_kernels_force_portable(port);
			got[port] = qr_box_suppressed(&k, K, b, 0.5f);
		}
		qr_kernels_force_portable(0);
		hits += want;
		if (got[0] != want || got[1] != want)
			bad++;
	}
#undef RND
	ok(bad == 0 && hits > 100 && hits < N - 100,
	   "box overlap: SIMD and portable match IoU > 0.5 on %d boxes "
	   "(%d suppressed, %d wrong)", N, hits, bad);
}

/* Exp, Sigmoid, Erf and Tanh (MLAS's polynomials): the 16-lane path
 * gives the portable loop's bits on 4099 values over [-120, 100] and
 * NaN. */
static void
test_exp_sigmoid_simd(void)
{
	enum { N = 4099 };
	static float x[N], a[N], b[N];
	unsigned seed = 11;
	int fn, bad[4] = {0, 0, 0, 0};
	size_t i;

	for (i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		x[i] = (float)(seed >> 8) / (float)(1u << 24) * 220.0f - 120.0f;
	}
	x[5] = NAN;
	x[N - 2] = NAN;
	for (fn = 0; fn < 4; fn++) {
		void (*f)(const float *, size_t, float *) =
			fn == 0 ? qr_exp_ort_f32 : fn == 1 ? qr_sigmoid_ort_f32 :
			fn == 2 ? qr_erf_ort_f32 : qr_tanh_ort_f32;

		qr_kernels_force_portable(0);
		f(x, N, a);
		qr_kernels_force_portable(1);
		f(x, N, b);
		qr_kernels_force_portable(0);
		bad[fn] = (int)float_bits_differ(a, b, N);
	}
	ok(bad[0] == 0, "exp: simd = portable on %d values (%d differ)", N,
	   bad[0]);
	ok(bad[1] == 0, "sigmoid: simd = portable on %d values (%d differ)", N,
	   bad[1]);
	ok(bad[2] == 0, "erf: simd = portable on %d values (%d differ)", N,
	   bad[2]);
	ok(bad[3] == 0, "tanh: simd = portable on %d values (%d differ)", N,
	   bad[3]);
}

/*
 * HardSigmoid and HardSwish against onnxruntime-node 1.30's outputs (graph
 * optimisation off) on special values: NaN stays NaN in both (HardSigmoid
 * used to give 1), -inf gives NaN in HardSwish (-inf * 0), and the sums
 * round as x * (1/6) + 0.5. Each value sits both in a 16-wide SIMD block
 * and in the scalar tail, on the SIMD and the portable path.
 */
static void
test_hard_sigmoid(void)
{
	static const float x[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, -3,
				  3, 1e30f, -1e30f, 2.5f, -2.5f, 0.1f};
	static const float sig[] = {NAN, 1, 0, 0.5f, 0.5f, 0, 1, 1, 0, 1, 0,
				    0.5199999809265137f};
	static const float swish[] = {NAN, INFINITY, NAN, -0.0f, 0.0f, -0.0f,
				      3, 1e30f, -0.0f, 2.2916667461395264f,
				      -0.20833328366279602f,
				      0.05166666582226753f};
	enum { N = sizeof x / sizeof x[0], M = 16 + N };
	float in[M], a[M], b[M];
	int port, bad_sig = 0, bad_swish = 0;
	size_t i, k;

	for (i = 0; i < M; i++)
		in[i] = x[i % N];
	for (port = 0; port <= 1; port++) {
		qr_kernels_force_portable(port);
		qr_hard_sigmoid_f32(in, M, 0.2f, 0.5f, a);
		qr_hard_swish_f32(in, M, b);
		for (i = 0; i < M; i++) {
			k = i % N;
			if (isnan(sig[k]) ? !isnan(a[i]) :
			    memcmp(&a[i], &sig[k], sizeof a[i]) != 0)
				bad_sig++;
			if (isnan(swish[k]) ? !isnan(b[i]) :
			    memcmp(&b[i], &swish[k], sizeof b[i]) != 0)
				bad_swish++;
		}
	}
	qr_kernels_force_portable(0);
	ok(bad_sig == 0, "HardSigmoid: ORT's bits on NaN, infinities, zeros "
	   "(%d wrong)", bad_sig);
	ok(bad_swish == 0, "HardSwish: ORT's bits on NaN, infinities, zeros "
	   "(%d wrong)", bad_swish);
}

int
main(void)
{
	size_t n_sat = 0;

	plan_no_plan();
	diag("int8 GEMM path: %s; this CPU's ONNX Runtime kernels: %s exp-sum, "
	     "u8 x s8 %s", qr_kernels_igemm_path(),
	     qr_kernels_ort_traits() & QR_ORT_SUMEXP_AVX512 ? "AVX-512" : "AVX2",
	     qr_kernels_ort_traits() & QR_ORT_U8S8_SATURATES ?
		     "in saturating pairs" : "exact");
	/* the tests below assume ORT's AVX-512 VNNI kernels unless they say
	 * otherwise */
	qr_kernels_force_ort(QR_ORT_SUMEXP_AVX512);
	RUN(test_gemm);
	RUN(test_sgemm_orders);
	RUN(test_dw_orders);
	RUN(test_gap_order);
	RUN(test_conv_f32);
	RUN(test_conv_f32_order);
	RUN(test_conv_f32_qweights);
	RUN(test_convt_f32);
	test_qconv(0, &n_sat);
	test_qgemm(0, &n_sat);
	n_sat = 0;
	test_qconv(1, &n_sat);
	ok(n_sat > 0, "qconv, ORT's u8 x s8 pairs: %zu outputs saturated",
	   n_sat);
	n_sat = 0;
	test_qgemm(1, &n_sat);
	ok(n_sat > 0, "qgemm, ORT's u8 x s8 pairs: %zu outputs saturated",
	   n_sat);
	RUN(test_requant);
	RUN(test_quantize);
	RUN(test_quantize_nan_zp);
	RUN(test_dynamic_quant);
	RUN(test_qlinear_eltwise);
	RUN(test_simd_matches_portable);
	RUN(test_pool);
	RUN(test_maxpool_simd);
	RUN(test_pool3d_simd);
	RUN(test_im2col);
	RUN(test_qgap);
	RUN(test_resize);
	RUN(test_norm);
	RUN(test_softmax_ort);
	RUN(test_quant_simd);
	RUN(test_qadd_clamp_simd);
	RUN(test_sum_ort);
	RUN(test_broadcast);
	RUN(test_hard_sigmoid);
	RUN(test_exp_sigmoid_simd);
	RUN(test_box_suppressed);
	return done();
}
