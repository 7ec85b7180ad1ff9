/* cpu: run-time CPU feature detection and the portable-path test hook. */
#include "kernels/kernels-int.h"

static int force_portable; /* set by qr_kernels_force_portable */

static unsigned
detect(void)
{
	unsigned f = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		f |= QR_CPU_AVX2;
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl"))
		f |= QR_CPU_AVX512BW;
	if ((f & QR_CPU_AVX512BW) && __builtin_cpu_supports("avx512vnni"))
		f |= QR_CPU_AVX512VNNI;
#endif
	return f;
}

unsigned
qr_kernels_cpu_features(void)
{
	static int done;
	static unsigned feat;

	if (!done) {
		feat = detect();
		done = 1;
	}
	return force_portable ? 0 : feat;
}

void
qr_kernels_force_portable(int on)
{
	force_portable = on != 0;
}

int
qr_ig_use_vnni(void)
{
	return (qr_kernels_cpu_features() & QR_CPU_AVX512VNNI) != 0;
}

const char *
qr_kernels_igemm_path(void)
{
	return qr_ig_use_vnni() ? "avx512vnni" : "portable";
}
