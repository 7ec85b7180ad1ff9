/*
 * chart: tick positions and labels, linear on 1/2/5 x 10^k and log10 by
 * decades, with matplotlib's offset text for very large or small values.
 * See chart-int.h.
 */
#include "chart/chart-int.h"

#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Append n as Unicode superscript digits. */
static void
superscript(char *dst, size_t cap, int n)
{
	static const char *const sup[10] = {
		"\u2070", "\u00b9", "\u00b2", "\u00b3", "\u2074",
		"\u2075", "\u2076", "\u2077", "\u2078", "\u2079",
	};
	char digits[16];
	size_t i;

	snprintf(digits, sizeof digits, "%d", n);
	for (i = 0; digits[i] != '\0'; i++) {
		const char *p = digits[i] == '-' ? "\u207b" :
						   sup[digits[i] - '0'];

		strncat(dst, p, cap - strlen(dst) - 1);
	}
}

/* printf("%.*f") with a typographic minus and no "-0". */
static void
fmt_num(char *dst, size_t cap, double v, int decimals)
{
	char tmp[TICK_STR];

	snprintf(tmp, sizeof tmp, "%.*f", decimals, v);
	if (tmp[0] == '-' && strspn(tmp + 1, "0.") == strlen(tmp + 1))
		memmove(tmp, tmp + 1, strlen(tmp));
	if (tmp[0] == '-')
		snprintf(dst, cap, "\u2212%s", tmp + 1);
	else
		snprintf(dst, cap, "%s", tmp);
}

/* 1, 2 or 5 x 10^k near span / target. */
static double
nice_step(double span, double target)
{
	double raw, e, f;

	if (!(span > 0) || !isfinite(span))
		return 1;
	raw = span / (target < 1 ? 1 : target);
	e = pow(10, floor(log10(raw)));
	f = raw / e;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * e;
}

/* Linear ticks on lo..hi, about target of them; integers only when asked. */
void
qr_chart_lin_ticks(struct qr_chart_ticks *t, double lo, double hi,
		   double target, int integer)
{
	double step = nice_step(hi - lo, target), first, last, big, scale = 1;
	int e, E = 0, decimals, i;

	memset(t, 0, sizeof *t);
	if (integer && step < 1)
		step = 1;
	first = ceil(lo / step - 1e-9);
	last = floor(hi / step + 1e-9);
	for (i = 0; i < MAX_TICKS && first + i <= last; i++) {
		t->v[t->n] = (first + i) * step;
		if (fabs(t->v[t->n]) < step * 1e-9)
			t->v[t->n] = 0;
		t->n++;
	}
	e = (int)floor(log10(step) + 1e-9);
	big = fmax(fabs(lo), fabs(hi));
	if (big > 0 && isfinite(big))
		E = (int)floor(log10(big));
	if (E >= 6 || E <= -4) {
		/* matplotlib's offset text: labels in units of 10^E */
		scale = pow(10, E);
		snprintf(t->offset, sizeof t->offset, "\u00d710");
		superscript(t->offset, sizeof t->offset, E);
		decimals = E - e > 0 ? E - e : 0;
	} else {
		decimals = e < 0 ? -e : 0;
	}
	for (i = 0; i < (int)t->n; i++)
		fmt_num(t->s[i], TICK_STR, t->v[i] / scale, decimals);
}

/* Decade ticks on lo..hi (log10 units), 10^k labels, 2..9 minor ticks. */
void
qr_chart_log_ticks(struct qr_chart_ticks *t, double lo, double hi,
		   double target)
{
	double k, step = ceil((hi - lo) / (target < 1 ? 1 : target));
	int m, i;

	memset(t, 0, sizeof *t);
	if (hi - lo <= 2.5 && lo > -6 && hi < 6) {
		/* few decades: 1, 2, 5 x 10^k in plain numbers */
		for (k = floor(lo); k <= hi + 1e-9 && t->n + 3 <= MAX_TICKS; k++)
			for (m = 1; m <= 5; m += m == 1 ? 1 : 3) {
				double p = k + log10(m);

				if (p < lo - 1e-9 || p > hi + 1e-9)
					continue;
				t->v[t->n] = p;
				fmt_num(t->s[t->n++], TICK_STR, pow(10, p),
					k < 0 ? (int)-k : 0);
			}
		for (k = floor(lo); k < hi; k++)
			for (m = 3; m <= 9 && t->n_minor < MAX_MINOR; m++)
				if (m != 5 && k + log10(m) > lo &&
				    k + log10(m) < hi)
					t->minor[t->n_minor++] = k + log10(m);
		return;
	}
	if (step < 1)
		step = 1;
	for (i = 0; i < MAX_TICKS && ceil(lo) + i * step <= hi + 1e-9; i++) {
		k = ceil(lo) + i * step;
		t->v[t->n] = k;
		snprintf(t->s[t->n], TICK_STR, "10");
		superscript(t->s[t->n], TICK_STR, (int)k);
		t->n++;
	}
	if (step > 1 || hi - lo > 8)
		return;
	for (k = floor(lo); k < hi; k++)
		for (m = 2; m <= 9 && t->n_minor < MAX_MINOR; m++)
			if (k + log10(m) > lo && k + log10(m) < hi)
				t->minor[t->n_minor++] = k + log10(m);
}

double
qr_chart_ticks_width(cairo_t *cr, struct qr_chart_ticks *t)
{
	size_t i;

	t->w = 0;
	for (i = 0; i < t->n; i++)
		t->w = fmax(t->w, qr_chart_text_w(cr, t->s[i]));
	return t->w;
}
