/*
 * parallel: the kernels' thread pool, and OpenBLAS's thread count.
 *
 * One process-wide pool of worker threads, started on first use and
 * grown to the largest count asked for. A job is a task count and a
 * function; the caller and the workers take tasks from a shared atomic
 * counter, so uneven tasks balance themselves. Idle workers spin for a
 * short while (consecutive nodes of a model start within microseconds)
 * and then sleep on a condition variable, so an idle process costs no
 * CPU. Calls from inside a task, or from a second thread while a job
 * runs, run serially: the pool never deadlocks on itself.
 *
 * The pool owns the cores: conv GEMMs are split into single-threaded
 * sgemm calls on its threads, so OpenBLAS is set to one thread when the
 * pool starts (OpenBLAS's idle threads busy-wait for a long while after
 * each call, which starved the pool's next job tenfold in measurements).
 */
#include "kernels/kernels-int.h"
#include "util/util.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define QR_POOL_MAX 64        /* workers, at most */
#define QR_POOL_SPIN 20000    /* idle polls before a worker sleeps */
#define QR_WAIT_SPIN 20000    /* polls before the caller yields the CPU */

static struct {
	pthread_mutex_t mu;     /* guards sleeping and starting workers */
	pthread_cond_t cv;      /* signalled when gen moves */
	int n_workers;          /* workers started */
	atomic_uint gen;        /* moves when a job is posted (wakes) */
	atomic_int sleepers;    /* workers blocked on cv */
	atomic_int busy;        /* 1 while a job runs (the pool's lock) */
	qr_par_fn fn;           /* current job */
	void *ctx;
	size_t n_tasks;
	int active;             /* workers that may join the current job */
	/* (job number << 32) | next task: a task is claimed by a CAS that
	 * also proves the job is still the one the claimer saw */
	atomic_uint_fast64_t ticket;
	/* (job number << 32) | workers joined: a worker's slot is 1 + the
	 * count it found, and no more than `active` may join */
	atomic_uint_fast64_t joined;
	atomic_size_t done;     /* tasks finished in the current job */
} pool = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

static _Thread_local int in_task; /* this thread runs a pool task */
static unsigned start_gen[QR_POOL_MAX]; /* gen when worker i was started */

/*
 * Claim and run tasks of job `job` until none is left; slot is this
 * thread's index. The caller never waits for a worker that claimed
 * nothing, so a worker the OS has not scheduled costs nothing.
 */
static void
take_tasks(uint64_t job, int slot)
{
	uint64_t v = atomic_load(&pool.ticket);

	in_task = 1;
	while ((v >> 32) == job && (v & 0xffffffffu) < pool.n_tasks) {
		if (!atomic_compare_exchange_weak(&pool.ticket, &v, v + 1))
			continue; /* v was reloaded */
		/* the job cannot finish (or change) before this task does */
		pool.fn(pool.ctx, (size_t)(v & 0xffffffffu), slot);
		atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
		v = atomic_load(&pool.ticket);
	}
	in_task = 0;
}

/* Join the current job if it wants more threads, with a slot of its own. */
static void
join(void)
{
	uint64_t j = atomic_load(&pool.joined);

	while ((j & 0xffffffffu) < (uint64_t)pool.active) {
		if (atomic_compare_exchange_weak(&pool.joined, &j, j + 1)) {
			take_tasks(j >> 32, (int)(j & 0xffffffffu) + 1);
			return;
		}
	}
}

static void *
worker(void *arg)
{
	/* not the gen now: a job may have been posted since we were made */
	unsigned seen = start_gen[(intptr_t)arg];

	for (;;) {
		long spin;

		for (spin = 0; spin < QR_POOL_SPIN &&
			       atomic_load_explicit(&pool.gen,
						    memory_order_acquire) == seen;
		     spin++)
			cpu_relax();
		if (atomic_load(&pool.gen) == seen) {
			pthread_mutex_lock(&pool.mu);
			atomic_fetch_add(&pool.sleepers, 1);
			while (atomic_load(&pool.gen) == seen)
				pthread_cond_wait(&pool.cv, &pool.mu);
			atomic_fetch_sub(&pool.sleepers, 1);
			pthread_mutex_unlock(&pool.mu);
		}
		seen = atomic_load(&pool.gen);
		join();
	}
	return NULL;
}

/* Start workers until there are n (called with busy held). */
static void
grow(int n)
{
	pthread_attr_t a;

	if (n > QR_POOL_MAX)
		n = QR_POOL_MAX;
	if (pool.n_workers == 0)
		openblas_set_num_threads(1); /* see the file comment */
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	while (pool.n_workers < n) {
		pthread_t t;

		start_gen[pool.n_workers] = atomic_load(&pool.gen);
		if (pthread_create(&t, &a, worker,
				   (void *)(intptr_t)pool.n_workers) != 0)
			break;
		pool.n_workers++;
	}
	pthread_attr_destroy(&a);
}

void
qr_parallel_for(int n_threads, size_t n_tasks, qr_par_fn fn, void *ctx)
{
	static uint64_t job;
	int expect = 0, helpers;
	size_t t;
	long spin;

	if (n_tasks == 0)
		return;
	if (n_threads <= 1 || n_tasks == 1 || in_task ||
	    n_tasks > 0xffffffffu ||
	    !atomic_compare_exchange_strong(&pool.busy, &expect, 1)) {
		for (t = 0; t < n_tasks; t++)
			fn(ctx, t, 0);
		return;
	}
	helpers = n_threads - 1;
	if ((size_t)helpers > n_tasks - 1)
		helpers = (int)(n_tasks - 1);
	if (pool.n_workers < helpers)
		grow(helpers);
	if (helpers > pool.n_workers)
		helpers = pool.n_workers;
	job = (job + 1) & 0xffffffffu;
	pool.fn = fn;
	pool.ctx = ctx;
	pool.n_tasks = n_tasks;
	pool.active = helpers;
	atomic_store(&pool.done, 0);
	atomic_store(&pool.joined, job << 32);
	atomic_store(&pool.ticket, job << 32);
	atomic_fetch_add(&pool.gen, 1);
	if (atomic_load(&pool.sleepers) > 0) {
		pthread_mutex_lock(&pool.mu);
		pthread_cond_broadcast(&pool.cv);
		pthread_mutex_unlock(&pool.mu);
	}
	take_tasks(job, 0);
	/* only tasks a worker has claimed are left: wait for them */
	for (spin = 0; atomic_load_explicit(&pool.done,
					    memory_order_acquire) < n_tasks;
	     spin++) {
		if (spin < QR_WAIT_SPIN)
			cpu_relax();
		else
			sched_yield();
	}
	atomic_store(&pool.busy, 0);
}

void
qr_parallel_range(size_t n, size_t task, size_t n_tasks, size_t align,
		  size_t *lo, size_t *hi)
{
	size_t units = (n + align - 1) / align;
	size_t a = units * task / n_tasks, b = units * (task + 1) / n_tasks;

	*lo = a * align < n ? a * align : n;
	*hi = b * align < n ? b * align : n;
}

/* OpenBLAS's pthread build: stops its worker threads (a later call
 * asking for more than one starts them again). Not in cblas.h, and not
 * in the serial or OpenMP builds, hence weak. */
extern int blas_thread_shutdown_(void) __attribute__((weak));

void
qr_kernels_set_blas_threads(int n)
{
	openblas_set_num_threads(n > 0 ? n : 1);
	/* the workers it started when the library loaded would otherwise
	 * busy-wait for their timeout (about 0.1 s of a core at start) */
	if (n <= 1 && blas_thread_shutdown_ != NULL)
		blas_thread_shutdown_();
}
