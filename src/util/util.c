/* util: allocation, diagnostics, arena, buffers. See util.h. */
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Out of memory (or a size that overflows): one line, the folders the run
 * was building removed, exit 2 (EXIT_INPUT: what was asked for does not
 * fit this machine), never an abort. */
void
qr_fatal(const char *fmt, ...)
{
	va_list ap;

	fputs("qreport: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	qr_cleanup_now();
	_exit(2);
}

/* A bug in qreport: abort, so that a core or a sanitizer shows where. */
void
qr_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "qreport: fatal: assertion '%s' failed at %s:%d "
		"(this is a bug in qreport)\n", what, file, line);
	qr_cleanup_now();
	abort();
}

void *
xmalloc(size_t size)
{
	void *p;

	qr_mem_need(size);
	p = malloc(size ? size : 1);

	if (p == NULL)
		qr_fatal("out of memory allocating %zu bytes", size);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p;

	if (n == 0 || size == 0)
		n = size = 1;
	if (n <= SIZE_MAX / size)
		qr_mem_need(n * size);
	p = calloc(n, size);
	if (p == NULL)
		qr_fatal("out of memory allocating %zu x %zu bytes", n, size);
	return p;
}

void *
xrealloc(void *p, size_t size)
{
	void *q;

	qr_mem_need(size); /* a growth is rarely in place at that size */
	q = realloc(p, size ? size : 1);

	if (q == NULL)
		qr_fatal("out of memory reallocating %zu bytes", size);
	return q;
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	size_t total;

	if (qr_mul_overflow(n, size, &total))
		qr_fatal("allocation of %zu x %zu bytes overflows", n, size);
	return xrealloc(p, total);
}

#define HUGE_PAGE ((size_t)2 << 20)

size_t
qr_page_size(void)
{
	long pg = sysconf(_SC_PAGESIZE);

	return pg > 0 ? (size_t)pg : 4096;
}

void *
xpages(size_t size)
{
	size_t len = size ? size : 1, span, page = qr_page_size();
	uintptr_t a, b;
	char *p;

	qr_mem_need(len);
	if (len >= HUGE_PAGE) {
		/* a 2 MiB-aligned range inside a larger mapping: huge pages
		 * need the alignment; the ends are given back at once */
		if (qr_add_overflow(len, HUGE_PAGE, &span))
			qr_fatal("out of memory mapping %zu bytes", size);
		p = mmap(NULL, span, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			qr_fatal("out of memory mapping %zu bytes", size);
		a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
		b = (uintptr_t)p + span;
		if (a > (uintptr_t)p)
			munmap(p, a - (uintptr_t)p);
		len = (len + page - 1) / page * page;
		if (b > a + len)
			munmap((char *)(a + len), b - (a + len));
		p = (char *)a;
#ifdef MADV_HUGEPAGE
		madvise(p, len, MADV_HUGEPAGE); /* a hint: may be refused */
#endif
		qr_mem_mapped(len, 1);
		return p;
	}
	/* smaller: the heap's recycled pages beat pages of its own */
	if (posix_memalign((void **)&p, 64, len) != 0)
		qr_fatal("out of memory allocating %zu bytes", size);
	memset(p, 0, len);
	return p;
}

void
xpages_free(void *p, size_t size)
{
	size_t len = size ? size : 1;

	if (p == NULL)
		return;
	if (len >= HUGE_PAGE) {
		len = (len + qr_page_size() - 1) / qr_page_size() *
		      qr_page_size();
		munmap(p, len);
		qr_mem_mapped(len, 0);
	} else {
		free(p);
	}
}

#define BULK_CHUNK ((size_t)4 << 20) /* two huge pages */

struct qr_bulk_chunk {
	struct qr_bulk_chunk *next;  /* the chunk carved before */
	char *mem;                   /* from xpages */
	size_t size, used;           /* bytes in mem, bytes given out */
};

void *
qr_bulk_alloc(struct qr_bulk *b, size_t size)
{
	struct qr_bulk_chunk *c = b->head;
	size_t need = size ? size : 1;

	if (qr_add_overflow(need, 63, &need))
		qr_fatal("out of memory allocating %zu bytes", size);
	need &= ~(size_t)63;
	if (c == NULL || c->size - c->used < need) {
		c = xmalloc(sizeof *c);
		c->size = need < BULK_CHUNK ? BULK_CHUNK
			: (need + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
		if (c->size < need)
			qr_fatal("out of memory allocating %zu bytes", size);
		c->mem = xpages(c->size);
		c->used = 0;
		b->bytes += c->size;
		/* a chunk made for one large buffer leaves the one being
		 * carved in front, its room still to use */
		if (b->head != NULL && need > BULK_CHUNK / 2) {
			c->next = b->head->next;
			b->head->next = c;
		} else {
			c->next = b->head;
			b->head = c;
		}
	}
	c->used += need;
	return c->mem + c->used - need;
}

int
qr_bulk_owns(const struct qr_bulk *b, const void *p)
{
	const struct qr_bulk_chunk *c;
	uintptr_t a = (uintptr_t)p;

	for (c = b->head; c != NULL; c = c->next)
		if (a >= (uintptr_t)c->mem && a < (uintptr_t)c->mem + c->size)
			return 1;
	return 0;
}

void
qr_bulk_free(struct qr_bulk *b)
{
	struct qr_bulk_chunk *c, *next;

	for (c = b->head; c != NULL; c = next) {
		next = c->next;
		xpages_free(c->mem, c->size);
		free(c);
	}
	b->head = NULL;
	b->bytes = 0;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	struct qr_buf b = {0};
	va_list ap;

	va_start(ap, fmt);
	qr_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	return qr_buf_take(&b);
}

int
qr_mul_overflow(size_t a, size_t b, size_t *out)
{
	return __builtin_mul_overflow(a, b, out);
}

int
qr_add_overflow(size_t a, size_t b, size_t *out)
{
	return __builtin_add_overflow(a, b, out);
}

static void
diag_vset(struct qr_diag *d, enum qr_status st, const char *fmt, va_list ap)
{
	char msg[QR_DIAG_MSG_MAX], *nl;

	/* formatted apart first: the arguments may be d->msg itself, as
	 * when a caller puts a prefix before the message it was given */
	vsnprintf(msg, sizeof msg, fmt, ap);
	memcpy(d->msg, msg, sizeof msg);
	d->status = st;
	/* Messages are one line, whatever a model's strings contain. */
	while ((nl = strpbrk(d->msg, "\r\n")) != NULL)
		*nl = ' ';
}

enum qr_status
qr_errorf(struct qr_diag *d, enum qr_status st, const char *fmt, ...)
{
	va_list ap;

	if (d != NULL) {
		va_start(ap, fmt);
		diag_vset(d, st, fmt, ap);
		va_end(ap);
	}
	return st;
}

void
qr_warnf(struct qr_diag *d, const char *fmt, ...)
{
	struct qr_buf b = {0};
	va_list ap;
	char *nl;

	if (d == NULL)
		return;
	va_start(ap, fmt);
	qr_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	d->warnings = xreallocarray(d->warnings, d->n_warnings + 1,
				    sizeof *d->warnings);
	d->warnings[d->n_warnings].msg = qr_buf_take(&b);
	while ((nl = strpbrk(d->warnings[d->n_warnings].msg, "\r\n")) != NULL)
		*nl = ' ';
	d->n_warnings++;
}

void
qr_diag_print(FILE *f, const char *prefix, const char *msg)
{
	const unsigned char *p;

	fputs(prefix, f);
	for (p = (const unsigned char *)msg; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	fputc('\n', f);
}

void
qr_diag_clear(struct qr_diag *d)
{
	size_t i;

	if (d == NULL)
		return;
	for (i = 0; i < d->n_warnings; i++)
		free(d->warnings[i].msg);
	free(d->warnings);
	d->warnings = NULL;
	d->n_warnings = 0;
	d->status = QR_OK;
	d->msg[0] = '\0';
}

void
qr_diag_take_warnings(struct qr_diag *d, size_t at, struct qr_diag *src)
{
	size_t n = src->n_warnings;

	if (n == 0)
		return;
	if (at > d->n_warnings)
		at = d->n_warnings;
	d->warnings = xreallocarray(d->warnings, d->n_warnings + n,
				    sizeof *d->warnings);
	memmove(d->warnings + at + n, d->warnings + at,
		(d->n_warnings - at) * sizeof *d->warnings);
	memcpy(d->warnings + at, src->warnings, n * sizeof *d->warnings);
	d->n_warnings += n;
	free(src->warnings);
	src->warnings = NULL;
	src->n_warnings = 0;
}

const char *
qr_status_name(enum qr_status st)
{
	switch (st) {
	case QR_OK: return "ok";
	case QR_EUSAGE: return "usage error";
	case QR_EIO: return "i/o error";
	case QR_EFORMAT: return "bad format";
	case QR_EUNSUPPORTED: return "unsupported";
	case QR_ESHAPE: return "bad shape";
	case QR_EGRAPH: return "bad graph";
	case QR_EPARTIAL: return "partial";
	case QR_ETHRESHOLD: return "threshold crossed";
	case QR_ENOMEM: return "not enough memory";
	}
	return "unknown";
}

/* Arena: a list of blocks, each at least 64 KiB. */
struct qr_arena_block {
	struct qr_arena_block *next; /* older block */
	size_t used;                 /* bytes used in mem */
	size_t size;                 /* bytes available in mem */
	_Alignas(16) unsigned char mem[]; /* payload */
};

#define ARENA_BLOCK_MIN ((size_t)64 * 1024)

void *
qr_arena_alloc(struct qr_arena *a, size_t size)
{
	struct qr_arena_block *b = a->head;
	size_t need = (size + 15) & ~(size_t)15;
	void *p;

	if (need < size)
		qr_fatal("arena allocation of %zu bytes overflows", size);
	if (b == NULL || b->size - b->used < need) {
		size_t bsize = need > ARENA_BLOCK_MIN ? need : ARENA_BLOCK_MIN;

		b = xmalloc(sizeof *b + bsize);
		b->used = 0;
		b->size = bsize;
		/* Keep a partly used block in front when the new one is a
		 * one-off large allocation. */
		if (a->head != NULL && need > ARENA_BLOCK_MIN) {
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	p = b->mem + b->used;
	b->used += need;
	a->total += need;
	memset(p, 0, size);
	return p;
}

void *
qr_arena_array(struct qr_arena *a, size_t n, size_t size)
{
	size_t total;

	if (qr_mul_overflow(n, size, &total))
		qr_fatal("arena array of %zu x %zu bytes overflows", n, size);
	return qr_arena_alloc(a, total);
}

char *
qr_arena_strndup(struct qr_arena *a, const char *s, size_t n)
{
	char *p = qr_arena_alloc(a, n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
qr_arena_strdup(struct qr_arena *a, const char *s)
{
	return qr_arena_strndup(a, s, strlen(s));
}

void
qr_arena_free(struct qr_arena *a)
{
	struct qr_arena_block *b, *next;

	if (a == NULL)
		return;
	for (b = a->head; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
	a->total = 0;
}

static void
buf_reserve(struct qr_buf *b, size_t extra)
{
	size_t need;

	if (qr_add_overflow(b->len, extra + 1, &need))
		qr_fatal("buffer size overflows");
	if (need <= b->cap)
		return;
	if (b->cap == 0)
		b->cap = 256;
	while (b->cap < need)
		b->cap *= 2;
	b->data = xrealloc(b->data, b->cap);
}

void
qr_buf_append(struct qr_buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void
qr_buf_puts(struct qr_buf *b, const char *s)
{
	qr_buf_append(b, s, strlen(s));
}

void
qr_buf_putc(struct qr_buf *b, char c)
{
	qr_buf_append(b, &c, 1);
}

void
qr_buf_vprintf(struct qr_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		qr_fatal("bad format string '%s'", fmt);
	buf_reserve(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void
qr_buf_printf(struct qr_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	qr_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

char *
qr_buf_take(struct qr_buf *b)
{
	char *s = b->data;

	if (s == NULL)
		s = xstrdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	return s;
}

void
qr_buf_free(struct qr_buf *b)
{
	if (b == NULL)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

double
qr_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
