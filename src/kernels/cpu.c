/* cpu: run-time CPU feature detection and the portable-path test hook. */
#include "kernels/kernels-int.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

static int force_portable; /* set by qr_kernels_force_portable */
static unsigned ort_forced = QR_ORT_DETECT; /* qr_kernels_force_ort */

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

#if defined(__x86_64__) && defined(__GNUC__)
/* AVX-VNNI (CPUID leaf 7 subleaf 1, EAX bit 4), which clang 14's
 * __builtin_cpu_supports does not know. */
static int
has_avxvnni(void)
{
	unsigned a, b, c, d;

	return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & 0x10u) != 0;
}
#endif

/* The traits of the kernels MLAS picks on this CPU (its platform.cpp):
 * the AVX-512F exp-sum when the CPU has AVX512F; u8 x s8 products
 * summed in saturating 16-bit pairs (vpmaddubsw) on AVX2 or AVX-512BW
 * without VNNI. */
static unsigned
detect_ort(void)
{
	unsigned t = 0;

#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		t |= QR_ORT_SUMEXP_AVX512;
	if (__builtin_cpu_supports("avx2") &&
	    !__builtin_cpu_supports("avx512vnni") && !has_avxvnni())
		t |= QR_ORT_U8S8_SATURATES;
#endif
	return t;
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

unsigned
qr_kernels_ort_traits(void)
{
	static int done;
	static unsigned traits;

	if (ort_forced != QR_ORT_DETECT)
		return ort_forced;
	if (!done) {
		traits = detect_ort();
		done = 1;
	}
	return traits;
}

void
qr_kernels_force_ort(unsigned traits)
{
	ort_forced = traits;
}

int
qr_ig_use_vnni(void)
{
	return (qr_kernels_cpu_features() & QR_CPU_AVX512VNNI) != 0;
}

const char *
qr_kernels_igemm_path(void)
{
	return qr_ig_use_vnni() ? "avx512vnni" :
	       (qr_kernels_cpu_features() & QR_CPU_AVX2) ? "avx2" :
	       "portable";
}

/* The CPUs whose ONNX Runtime kernels the engine can reproduce, by the
 * names of --ort-cpu. */
static const struct {
	const char *name;
	unsigned traits;
} ort_cpus[] = {
	{"avx512vnni", QR_ORT_SUMEXP_AVX512},
	{"avx512", QR_ORT_SUMEXP_AVX512 | QR_ORT_U8S8_SATURATES},
	{"avx2vnni", 0},
	{"avx2", QR_ORT_U8S8_SATURATES},
};

const char *
qr_kernels_ort_cpu(void)
{
	unsigned t = qr_kernels_ort_traits();
	size_t i;

	for (i = 0; i < sizeof ort_cpus / sizeof ort_cpus[0]; i++)
		if (ort_cpus[i].traits == t)
			return ort_cpus[i].name;
	return "avx2";
}

int
qr_kernels_set_ort_cpu(const char *name)
{
	size_t i;

	if (strcmp(name, "native") == 0) {
		qr_kernels_force_ort(QR_ORT_DETECT);
		return 1;
	}
	for (i = 0; i < sizeof ort_cpus / sizeof ort_cpus[0]; i++)
		if (strcmp(ort_cpus[i].name, name) == 0) {
			qr_kernels_force_ort(ort_cpus[i].traits);
			return 1;
		}
	return 0;
}
