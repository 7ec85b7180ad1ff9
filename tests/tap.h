/*
 * tap: a tiny Test Anything Protocol emitter for qreport's C tests
 * (automake's tap-driver.sh reads it). Header-only on purpose: every test
 * program includes it once.
 *
 *   plan_no_plan();          ... ok(cond, "name %d", i); ... return done();
 *   skip_all("reason");      prints "1..0 # SKIP reason" and exits 0
 */
#ifndef QR_TAP_H
#define QR_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n;      /* tests run so far */
static int tap_failed; /* tests that failed */

static inline void
plan_no_plan(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline int
ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	return cond;
}

/* ok() for |got - want| <= tol, printing both on failure. */
static inline int
ok_near(double got, double want, double tol, const char *what)
{
	int cond = fabs(got - want) <= tol || (isinf(got) && isinf(want) &&
					       (got > 0) == (want > 0));

	ok(cond, "%s", what);
	if (!cond)
		printf("#   got %.9g, want %.9g (tol %g)\n", got, want, tol);
	return cond;
}

static inline void
diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static inline void
skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	exit(0);
}

static inline int
done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
