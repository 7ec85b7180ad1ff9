/*
 * tap: a tiny Test Anything Protocol emitter for qreport's C tests
 * (automake's tap-driver.sh reads it). Header-only on purpose: every test
 * program includes it once.
 *
 *   plan_no_plan();          ... ok(cond, "name %d", i); ... return done();
 *   skip_all("reason");      prints "1..0 # SKIP reason" and exits 0
 *   RUN(test_fn);            runs test_fn() unless QR_TEST_FILTER is set
 *                            and "test_fn" does not contain it, so that
 *                            QR_TEST_FILTER=strmap tests/test_util runs
 *                            one case (tap_want(name) for other calls)
 */
#ifndef QR_TAP_H
#define QR_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Whether the test named name runs: QR_TEST_FILTER unset or empty, or a
 * substring of name. */
static inline int
tap_want(const char *name)
{
	const char *f = getenv("QR_TEST_FILTER");

	return f == NULL || *f == '\0' || strstr(name, f) != NULL;
}

#define RUN(fn) do { if (tap_want(#fn)) fn(); } while (0)

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
