/*
 * test_analysis_math: the analysis maths on literal arrays, each expected
 * value worked out by hand in the comment beside it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "tap.h"

static void
test_channel_stats(void)
{
	/* w[2][3]: along axis 0 rows {1,2,3}, {-4,0,4}; along axis 1
	 * columns {1,-4}, {2,0}, {3,4}. */
	const float w[6] = { 1, 2, 3, -4, 0, 4 };
	const int64_t dims[2] = { 2, 3 };
	float mn[3], mx[3], mean[3], sd[3];

	qr_channel_stats(w, dims, 2, 0, mn, mx, mean, sd);
	ok(mn[0] == 1 && mx[0] == 3 && mn[1] == -4 && mx[1] == 4,
	   "axis 0: min/max per row");
	ok_near(mean[0], 2, 1e-6, "axis 0: mean row 0 = 2");
	ok_near(mean[1], 0, 1e-6, "axis 0: mean row 1 = 0");
	/* population std of {1,2,3} = sqrt(2/3); of {-4,0,4} = sqrt(32/3) */
	ok_near(sd[0], sqrt(2.0 / 3), 1e-6, "axis 0: std row 0");
	ok_near(sd[1], sqrt(32.0 / 3), 1e-6, "axis 0: std row 1");

	qr_channel_stats(w, dims, 2, 1, mn, mx, mean, sd);
	ok(mn[0] == -4 && mx[0] == 1 && mn[1] == 0 && mx[1] == 2 &&
	   mn[2] == 3 && mx[2] == 4, "axis 1: min/max per column");
	ok_near(mean[0], -1.5, 1e-6, "axis 1: mean col 0 = -1.5");
	ok_near(sd[0], 2.5, 1e-6, "axis 1: std col 0 = 2.5");
	ok_near(sd[2], 0.5, 1e-6, "axis 1: std col 2 = 0.5");

	/* a middle axis: dims [2,2,2], axis 1; channel 0 = {0,1,4,5},
	 * channel 1 = {2,3,6,7} */
	{
		const float v[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
		const int64_t d3[3] = { 2, 2, 2 };

		qr_channel_stats(v, d3, 3, 1, mn, mx, mean, sd);
		ok(mn[0] == 0 && mx[0] == 5 && mn[1] == 2 && mx[1] == 7,
		   "middle axis: min/max");
		ok_near(mean[1], 4.5, 1e-6, "middle axis: mean ch 1 = 4.5");
	}
}

static void
test_rel_range(void)
{
	/* ranges 2, 0, 8, 4: min non-zero range is 2 -> rel 1, 0, 4, 2 */
	const float mn[4] = { -1, 5, -4, 0 };
	const float mx[4] = { 1, 5, 4, 4 };
	float rel[4];
	double m = qr_rel_range(mn, mx, 4, rel);

	ok(rel[0] == 1 && rel[1] == 0 && rel[2] == 4 && rel[3] == 2,
	   "rel range 1,0,4,2 (zero-range channel is 0)");
	ok_near(m, 4, 0, "rel range max is 4");

	{
		const float z[3] = { 2, 2, 2 };

		m = qr_rel_range(z, z, 3, rel);
		ok(m == 0 && rel[0] == 0 && rel[2] == 0,
		   "all-zero ranges give 0, no division by zero");
	}
}

static void
test_tukey(void)
{
	/* [1,2,3,4,100]: numpy linear quartiles Q1 = 2, Q3 = 4, IQR = 2,
	 * fence = 4 + 1.5*2 = 7 */
	const float v[5] = { 100, 3, 1, 4, 2 };
	double q1, q3, f = qr_tukey_fence(v, 5, 1.5, &q1, &q3);

	ok_near(q1, 2, 1e-9, "tukey Q1 = 2");
	ok_near(q3, 4, 1e-9, "tukey Q3 = 4");
	ok_near(f, 7, 1e-9, "tukey fence = 7");

	/* [1,2,3,4]: positions 0.75 and 2.25 -> Q1 = 1.75, Q3 = 3.25,
	 * fence = 3.25 + 1.5*1.5 = 5.5 */
	{
		const float u[4] = { 4, 3, 2, 1 };

		f = qr_tukey_fence(u, 4, 1.5, &q1, &q3);
		ok_near(q1, 1.75, 1e-9, "interpolated Q1 = 1.75");
		ok_near(q3, 3.25, 1e-9, "interpolated Q3 = 3.25");
		ok_near(f, 5.5, 1e-9, "interpolated fence = 5.5");
	}
	ok_near(qr_tukey_fence(v, 0, 1.5, NULL, NULL), 0, 0,
		"empty set gives 0");
}

static void
test_sqnr(void)
{
	/* bits 2 -> qmax 1; w = [1, 0.4, -0.6, 0]: scale 1, q = [1,0,-1,0],
	 * error 0.16+0.16 = 0.32, signal 1+0.16+0.36 = 1.52,
	 * SQNR = 10 log10(4.75) = 6.76693 dB */
	const float w[4] = { 1, 0.4f, -0.6f, 0 };
	const int64_t d1[1] = { 4 };
	/* bits 3 -> qmax 3; w = [3, 0.5, 1.5, 2.5, -0.5]: scale 1, halves
	 * round to even: q = [3,0,2,2,0], error 4*0.25 = 1, signal 18,
	 * SQNR = 10 log10(18) = 12.5527 dB */
	const float h[5] = { 3, 0.5f, 1.5f, 2.5f, -0.5f };
	const int64_t d5[1] = { 5 };
	/* per channel, bits 2: rows {1, 0.4} and {0.1, -0.06}: per-tensor
	 * scale 1 gives q = [1,0,0,0], error 0.16+0.01+0.0036 = 0.1736,
	 * signal 1.1736 -> 10 log10(1.1736/0.1736) = 8.29971 dB;
	 * per channel scales 1 and 0.1 give q = [1,0,1,-1], error
	 * 0.16 + 0 + 0.0016 = 0.1616 -> 10 log10(1.1736/0.1616) = 8.61073 */
	const float pc[4] = { 1, 0.4f, 0.1f, -0.06f };
	const int64_t d22[2] = { 2, 2 };
	const float y[4] = { 1, 0, -1, 0 };

	ok_near(qr_sqnr_sym(w, d1, 1, 0, 0, 2), 6.76693, 1e-4,
		"2-bit SQNR of [1,.4,-.6,0] = 6.767 dB");
	ok_near(qr_sqnr_sym(h, d5, 1, 0, 0, 3), 12.55273, 1e-4,
		"3-bit SQNR with ties = 12.553 dB");
	ok_near(qr_sqnr_sym(pc, d22, 2, 0, 0, 2), 8.29971, 1e-4,
		"per-tensor 2-bit SQNR = 8.299 dB");
	ok_near(qr_sqnr_sym(pc, d22, 2, 0, 1, 2), 8.61073, 1e-4,
		"per-channel 2-bit SQNR = 8.611 dB");
	ok(isinf(qr_sqnr_sym(y, d1, 1, 0, 0, 8)) &&
	   qr_sqnr_sym(y, d1, 1, 0, 0, 8) > 0, "exact quantization is +inf");
	ok_near(qr_sqnr_db(w, y, 4), 6.76693, 1e-4,
		"qr_sqnr_db of the same pair");
	{
		/* int8: w = [0.1,-0.5,0.33,0.25,-0.07,0.9] per tensor 47.0477
		 * dB, per row of 3 52.1439 dB (numpy, float32) */
		const float v[6] = { 0.1f, -0.5f, 0.33f, 0.25f, -0.07f, 0.9f };
		const int64_t d23[2] = { 2, 3 };

		ok_near(qr_sqnr_sym(v, d23, 2, 0, 0, 8), 47.04766, 1e-3,
			"int8 per-tensor SQNR = 47.048 dB");
		ok_near(qr_sqnr_sym(v, d23, 2, 0, 1, 8), 52.14387, 1e-3,
			"int8 per-channel SQNR = 52.144 dB");
	}
}

static void
test_cle(void)
{
	/* pair: r1 = [4, 1, 0, 9], r2 = [1, 4, 2, 1]:
	 * s = [2, 0.5, 1 (zero range), 3] */
	const float r1[4] = { 4, 1, 0, 9 };
	const float r2[4] = { 1, 4, 2, 1 };
	float s[4], s12[3], s23[3];
	int i, eq = 1;

	qr_cle_pair_scales(r1, r2, 4, s);
	ok_near(s[0], 2, 1e-6, "pair s0 = sqrt(4/1) = 2");
	ok_near(s[1], 0.5, 1e-6, "pair s1 = sqrt(1/4) = 0.5");
	ok_near(s[2], 1, 0, "pair zero range gives 1");
	ok_near(s[3], 3, 1e-6, "pair s3 = 3");
	for (i = 0; i < 4; i++)
		if (r1[i] > 0 && fabs(r1[i] / s[i] - r2[i] * s[i]) > 1e-5)
			eq = 0;
	ok(eq, "pair: r1/s == r2*s for every channel");

	{
		/* triplet: r0 = 8, r1 = 1, r2 = 1 -> c = 2, s12 = 4,
		 * s23 = 2; r0 = 1, r1 = 8, r2 = 27 -> c = 6, s12 = 1/6,
		 * s23 = 6/27 */
		const float a[3] = { 8, 1, 0 };
		const float b[3] = { 1, 8, 3 };
		const float c[3] = { 1, 27, 5 };

		qr_cle_triplet_scales(a, b, c, 3, s12, s23);
		ok_near(s12[0], 4, 1e-5, "triplet s12 = 8/cbrt(8) = 4");
		ok_near(s23[0], 2, 1e-5, "triplet s23 = cbrt(8)/1 = 2");
		ok_near(s12[1], 1.0 / 6, 1e-6, "triplet s12 = 1/6");
		ok_near(s23[1], 6.0 / 27, 1e-6, "triplet s23 = 6/27");
		ok(s12[2] == 1 && s23[2] == 1, "triplet zero range gives 1");
		eq = 1;
		for (i = 0; i < 2; i++) {
			double x = a[i] / s12[i], y = b[i] * s12[i] / s23[i],
			       z = c[i] * s23[i];

			if (fabs(x - y) > 1e-4 * x || fabs(y - z) > 1e-4 * x)
				eq = 0;
		}
		ok(eq, "triplet: r0/s12 == r1*s12/s23 == r2*s23");
	}
}

int
main(void)
{
	plan_no_plan();
	(void)skip_all;
	diag("analysis maths on literal arrays");
	RUN(test_channel_stats);
	RUN(test_rel_range);
	RUN(test_tukey);
	RUN(test_sqnr);
	RUN(test_cle);
	ok(strcmp(qr_qformat_name(QR_QFMT_WEIGHT_ONLY), "weight-only") == 0 &&
	   strcmp(qr_qformat_name(QR_QFMT_QDQ), "qdq") == 0,
	   "format names follow report.json");
	ok(strcmp(qr_match_name(QR_MATCH_STRUCTURE), "structure") == 0,
	   "match names follow report.json");
	return done();
}
