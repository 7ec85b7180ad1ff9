/*
 * test_norm_ort: qr_norm_row_ort_f32's two paths, AVX2 and portable C,
 * give the same bits for every kind of layer norm on rows of 1 to 70
 * values and of 2049 (every tail of its 4- and 8-value steps), values of
 * spread scales and offsets, and large values that cancel. tests/ort_norm.sh holds the AVX2 path to
 * ONNX Runtime's bits; this holds the portable one to the same. A few
 * rows whose results follow from the arithmetic alone are checked too.
 */
#include "kernels/kernels.h"
#include "tap.h"

#include <stdint.h>
#include <string.h>

#define NMAX 2049

static uint32_t seed = 12345;

/* A float from a small LCG: a value in [-1, 1) times 2^e, e in [-20, 20),
 * plus the row's offset. */
static float
draw(float offset)
{
	float u;
	int e;

	seed = seed * 1664525u + 1013904223u;
	u = (float)(seed >> 8) / 8388608.0f - 1.0f;
	seed = seed * 1664525u + 1013904223u;
	e = (int)(seed >> 27) - 16;
	return ldexpf(u, e) + offset;
}

static int
same(const float *a, const float *b, size_t n)
{
	return memcmp(a, b, n * sizeof *a) == 0;
}

/* Every kind on one row, with the portable path and with the CPU's;
 * 1 when all outputs agree bit for bit. */
static int
paths_agree(const float *x, size_t n, const float *g, const float *b)
{
	static float y0[NMAX], y1[NMAX];
	float m0, m1, i0, i1;
	int k, good = 1;

	for (k = QR_ORT_LAYERNORM; k <= QR_ORT_LAYERNORM_BCAST; k++) {
		qr_kernels_force_portable(1);
		qr_norm_row_ort_f32((enum qr_ort_norm)k, x, n, g, b, 1e-5f, y0,
				    &m0, &i0);
		qr_kernels_force_portable(0);
		qr_norm_row_ort_f32((enum qr_ort_norm)k, x, n, g, b, 1e-5f, y1,
				    &m1, &i1);
		good &= same(y0, y1, n) && same(&m0, &m1, 1) &&
			same(&i0, &i1, 1);
	}
	return good;
}

static void
test_paths(void)
{
	static float x[NMAX], g[NMAX], b[NMAX];
	size_t n, i, bad = 0, rows = 0;
	int r;

	for (i = 0; i < NMAX; i++) {
		g[i] = draw(0.5f);
		b[i] = draw(0.0f);
	}
	for (n = 1; n <= NMAX; n = n == 70 ? NMAX : n + 1) {
		for (r = 0; r < 8; r++) {
			float off = r < 3 ? 0.0f : draw(0.0f) * 1000.0f;

			for (i = 0; i < n; i++)
				x[i] = draw(off);
			/* pairs 2^50 and more apart, which cancel: the
			 * mean's double sum then depends on its order */
			for (i = 0; r >= 6 && i + 1 < n; i += 3) {
				x[i] = ldexpf(draw(0.0f) > 0 ? 1 : -1,
					      20 + (int)(i % 23));
				x[i + 1] = -x[i];
				x[i + 2 < n ? i + 2 : i] = ldexpf(draw(0.0f),
								  -30);
			}
			rows++;
			if (!paths_agree(x, n, g, r % 2 ? b : NULL))
				bad++;
		}
	}
	ok(bad == 0, "AVX2 and portable paths agree bit for bit (%zu of %zu "
	   "rows differ)", bad, rows);
}

/* Rows whose results the arithmetic fixes: a constant row has mean the
 * value and deviation 0, so y = beta and inv = 1 / sqrt(eps), on both
 * sides of the Welford/two-pass threshold; x = (3, 4) repeated has
 * RMS 3.5355339 (mean square 12.5). */
static void
test_values(void)
{
	static const float g[20] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
				    1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	float x[20], b[20], y[20], m, inv;
	size_t n, i;
	int good = 1;

	for (n = 4; n <= 20; n += 16) {
		for (i = 0; i < n; i++) {
			x[i] = 2.5f;
			b[i] = (float)i;
		}
		qr_norm_row_ort_f32(QR_ORT_LAYERNORM, x, n, g, b, 0.25f, y, &m,
				    &inv);
		for (i = 0; i < n; i++)
			good &= y[i] == (float)i;
		ok(good && m == 2.5f && inv == 2.0f, "a constant row of %zu: "
		   "y = beta, mean 2.5, inv 2 (%g %g)", n, (double)m,
		   (double)inv);
	}
	for (i = 0; i < 20; i++)
		x[i] = i % 2 ? 4.0f : 3.0f;
	qr_norm_row_ort_f32(QR_ORT_RMSNORM, x, 20, g, NULL, 0.0f, y, &m, &inv);
	ok(fabsf(inv * 3.5355339f - 1.0f) < 1e-6f && m == 0.0f &&
		   fabsf(y[1] - 4.0f / 3.5355339f) < 1e-6f,
	   "RMS of 3, 4, ...: inv %.9g", (double)inv);
}

int
main(void)
{
	plan_no_plan();
	RUN(test_paths);
	RUN(test_values);
	return done();
}
