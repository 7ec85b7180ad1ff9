/*
 * distribution: a row of scores (logits or probabilities) read as a
 * probability distribution over its classes, and two such rows compared:
 * log-softmax, log of given probabilities, KL divergence, the top k
 * classes and their overlap. Plain arrays, no model types: the next-token
 * metrics of a decoder (llm_metrics.c) and a classifier's (outputs.c)
 * share them.
 */
#include "analysis/analysis-int.h"

#include <math.h>

/* See analysis-int.h. */
void
qr_an_log_softmax(const float *x, size_t n, double *out)
{
	double mx = -INFINITY, sum = 0, lse;
	size_t v;

	for (v = 0; v < n; v++)
		if (x[v] > mx)
			mx = x[v];
	for (v = 0; v < n; v++)
		sum += exp((double)x[v] - mx);
	lse = mx + log(sum);
	for (v = 0; v < n; v++)
		out[v] = (double)x[v] - lse;
}

/* See analysis-int.h. */
void
qr_an_log_probs(const float *x, size_t n, double *out)
{
	double sum = 0;
	size_t v;

	for (v = 0; v < n; v++)
		sum += x[v] > 0 ? (double)x[v] : 0;
	for (v = 0; v < n; v++) {
		double p = sum > 0 && x[v] > 0 ? (double)x[v] / sum : 0;

		out[v] = log(p > QR_AN_PROB_FLOOR ? p : QR_AN_PROB_FLOOR);
	}
}

/* See analysis-int.h. */
int
qr_an_is_distribution(const float *x, size_t n)
{
	double sum = 0;
	size_t v;

	for (v = 0; v < n; v++) {
		if (!(x[v] >= 0 && x[v] <= 1))
			return 0;
		sum += x[v];
	}
	return fabs(sum - 1) <= QR_AN_PROB_SUM_TOL;
}

/* See analysis-int.h. */
double
qr_an_kl(const double *lp, const double *lq, size_t n)
{
	double kl = 0;
	size_t v;

	for (v = 0; v < n; v++)
		kl += exp(lp[v]) * (lp[v] - lq[v]);
	return kl;
}

/* See analysis-int.h. */
void
qr_an_top_k(const float *x, size_t n, size_t k, size_t *top)
{
	size_t v, j, m = 0;

	for (v = 0; v < n; v++) {
		if (m == k && x[v] <= x[top[k - 1]])
			continue;
		j = m < k ? m++ : k - 1;
		while (j > 0 && x[top[j - 1]] < x[v]) {
			top[j] = top[j - 1];
			j--;
		}
		top[j] = v;
	}
}

/* See analysis-int.h. */
size_t
qr_an_top_common(const size_t *a, const size_t *b, size_t k)
{
	size_t i, j, common = 0;

	for (i = 0; i < k; i++)
		for (j = 0; j < k; j++)
			common += a[i] == b[j];
	return common;
}
