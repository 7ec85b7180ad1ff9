/* norm: Softmax, LayerNormalization, BatchNormalization and
 * InstanceNormalization on rows of floats. Statistics accumulate in
 * double: these feed float-vs-float comparisons, not bit-exact ones. */
#include "kernels/kernels-int.h"

#include <math.h>

void
qr_softmax_f32(const float *x, size_t rows, size_t n, float *y)
{
	size_t r, i;

	for (r = 0; r < rows; r++) {
		const float *xr = x + r * n;
		float *yr = y + r * n;
		float m = -INFINITY;
		double s = 0.0;

		for (i = 0; i < n; i++)
			m = xr[i] > m ? xr[i] : m;
		for (i = 0; i < n; i++) {
			yr[i] = expf(xr[i] - m);
			s += yr[i];
		}
		for (i = 0; i < n; i++)
			yr[i] = (float)(yr[i] / s);
	}
}

/* Population mean and variance of n floats, two passes. */
static void
stats(const float *x, size_t n, double *mean, double *var)
{
	double s = 0.0, q = 0.0;
	size_t i;

	for (i = 0; i < n; i++)
		s += x[i];
	s = n ? s / (double)n : 0.0;
	for (i = 0; i < n; i++)
		q += (x[i] - s) * (x[i] - s);
	*mean = s;
	*var = n ? q / (double)n : 0.0;
}

void
qr_layernorm_f32(const float *x, size_t rows, size_t n, const float *gamma,
		 const float *beta, float eps, float *y)
{
	size_t r, i;

	for (r = 0; r < rows; r++) {
		const float *xr = x + r * n;
		float *yr = y + r * n;
		double mean, var, inv;

		stats(xr, n, &mean, &var);
		inv = 1.0 / sqrt(var + eps);
		for (i = 0; i < n; i++)
			yr[i] = (float)((xr[i] - mean) * inv) * gamma[i] +
				(beta ? beta[i] : 0.0f);
	}
}

void
qr_batchnorm_f32(const float *x, size_t n, size_t c, size_t hw,
		 const float *scale, const float *bias, const float *mean,
		 const float *var, float eps, float *y)
{
	size_t b, ch, i;

	if (hw == 0)
		return; /* no elements: x and y are NULL */
	for (b = 0; b < n; b++) {
		for (ch = 0; ch < c; ch++) {
			const float *xp = x + (b * c + ch) * hw;
			float *yp = y + (b * c + ch) * hw;
			float k = scale[ch] / sqrtf(var[ch] + eps);
			float o = bias[ch] - mean[ch] * k;

			for (i = 0; i < hw; i++)
				yp[i] = xp[i] * k + o;
		}
	}
}

void
qr_instancenorm_f32(const float *x, size_t n, size_t c, size_t hw,
		    const float *scale, const float *bias, float eps, float *y)
{
	size_t b, ch, i;

	if (hw == 0)
		return; /* no elements: x and y are NULL */
	for (b = 0; b < n; b++) {
		for (ch = 0; ch < c; ch++) {
			const float *xp = x + (b * c + ch) * hw;
			float *yp = y + (b * c + ch) * hw;
			double mean, var, inv;

			stats(xp, hw, &mean, &var);
			inv = 1.0 / sqrt(var + eps);
			for (i = 0; i < hw; i++)
				yp[i] = (float)((xp[i] - mean) * inv) *
						scale[ch] +
					bias[ch];
		}
	}
}
