/*
 * util/membudget.c: how much memory the run holds and may hold.
 *
 * A model can ask for tensors of gigabytes (a declared input, an
 * activation of a wide layer). Before such a tensor is given memory,
 * qr_tensor_set_shape asks whether it fits: the bytes held (malloc's own
 * count, plus the large mappings xpages makes itself) plus the new
 * tensor's must stay within the budget, which is --max-memory or else
 * what the machine has available when the run starts (MemAvailable, and
 * the address-space limit of `ulimit -v` when one is set). A run that
 * would not fit is refused with the numbers, instead of being killed by
 * the kernel or failing inside an allocation.
 */
#include "util/util.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static size_t mapped;    /* bytes xpages holds in mappings of its own */
static size_t budget;    /* 0 until set or first asked for */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void
qr_mem_mapped(size_t bytes, int add)
{
	if (add)
		__atomic_add_fetch(&mapped, bytes, __ATOMIC_RELAXED);
	else
		__atomic_sub_fetch(&mapped, bytes, __ATOMIC_RELAXED);
}

size_t
qr_mem_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd +
	       __atomic_load_n(&mapped, __ATOMIC_RELAXED);
#else
	return __atomic_load_n(&mapped, __ATOMIC_RELAXED);
#endif
}

void
qr_mem_trim(void)
{
#if defined(__GLIBC__)
	/* each thread's arena keeps the pages of what it freed; a phase
	 * that allocates in another arena next would add to them */
	malloc_trim(0);
#endif
}

/* A /proc file's "Key: N kB" line, in bytes; 0 when absent. */
static size_t
proc_kb(const char *file, const char *key)
{
	char line[256];
	size_t n = strlen(key), v = 0;
	FILE *f = fopen(file, "r");

	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = (size_t)strtoull(line + n + 1, NULL, 10) << 10;
			break;
		}
	if (f != NULL)
		fclose(f);
	return v;
}

size_t
qr_mem_budget(void)
{
	size_t b;

	pthread_mutex_lock(&lock);
	if (budget == 0) {
		size_t held = qr_mem_in_use();
		size_t avail = proc_kb("/proc/meminfo", "MemAvailable");
		struct rlimit rl;

		b = avail > 0 ? avail + held : SIZE_MAX;
		if (getrlimit(RLIMIT_AS, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY) {
			/* the address space already taken (code, stacks,
			 * mapped model files) is not ours to give */
			size_t vm = proc_kb("/proc/self/status", "VmSize");
			size_t lim = (size_t)rl.rlim_cur;
			size_t room = lim > vm ? lim - vm : 0;

			if (room + held < b)
				b = room + held;
		}
		budget = b;
	}
	b = budget;
	pthread_mutex_unlock(&lock);
	return b;
}

void
qr_mem_set_budget(size_t bytes)
{
	pthread_mutex_lock(&lock);
	budget = bytes;
	pthread_mutex_unlock(&lock);
}

void
qr_mem_need(size_t bytes)
{
	size_t held, b;

	if (bytes < QR_MEM_CHECK_MIN)
		return;
	held = qr_mem_in_use();
	b = qr_mem_budget();
	if (held > b || bytes > b - held)
		qr_fatal("the run needs %zu MiB more, on top of the %zu MiB "
			 "it holds: more than the %zu MiB it may use "
			 "(--max-memory; by default what the machine has "
			 "available)", bytes >> 20, held >> 20, b >> 20);
}
