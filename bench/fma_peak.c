/*
 * fma_peak: this CPU's float fused multiply-add throughput, the ceiling
 * for any conv that must sum in ONNX Runtime's order (see
 * bench/RESULTS.md, "The whole report against an ONNX Runtime script").
 * Twelve independent AVX-512 FMA chains, registers only, so nothing but
 * the FMA units limits it.
 *
 *   cc -O2 -mavx512f -o fma_peak bench/fma_peak.c && ./fma_peak
 *
 * Prints GFLOPS (2 per lane per FMA) for one thread; bench/fma_peak.sh
 * also runs one copy per core at once.
 */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#define CHAINS 12
#define ROUNDS 200000000L

int
main(void)
{
	const __m512 b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-9f);
	__m512 a[CHAINS];
	struct timespec t0, t1;
	float sink = 0;
	double s;
	long k;
	int i;

	for (i = 0; i < CHAINS; i++)
		a[i] = _mm512_set1_ps((float)i);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (k = 0; k < ROUNDS; k++) {
		/* spelt out so the chains stay in registers at any -O */
#define F(i) a[i] = _mm512_fmadd_ps(a[i], b, c);
		F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)
#undef F
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec -
							     t0.tv_nsec);
	for (i = 0; i < CHAINS; i++)
		sink += _mm512_reduce_add_ps(a[i]);
	/* the sum keeps the chains alive; it is printed, not interpreted */
	printf("%.1f GFLOPS (one thread; checksum %g)\n",
	       (double)ROUNDS * CHAINS * 32 / s / 1e9, (double)sink);
	return 0;
}
