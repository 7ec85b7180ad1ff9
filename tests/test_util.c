/*
 * test_util: the bulk allocator (qr_bulk), which executors and the
 * activation run carve their long-lived buffers from: alignment, no two
 * buffers overlapping, ownership, a buffer larger than a chunk, and
 * xpages on both sides of its 2 MiB line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "util/util.h"

#define N_BUF 40

static void
test_bulk(void)
{
	static const size_t sizes[] = {1, 63, 64, 65, 4096, 65536, 800000,
				       3 << 20, 5 << 20, 100};
	struct qr_bulk b = {0};
	unsigned char *p[N_BUF], heap[8];
	size_t n[N_BUF], i, j, bad_align = 0, bad_fill = 0, bad_own = 0;

	for (i = 0; i < N_BUF; i++) {
		n[i] = sizes[i % (sizeof sizes / sizeof sizes[0])] + i;
		p[i] = qr_bulk_alloc(&b, n[i]);
		bad_align += ((uintptr_t)p[i] & 63) != 0;
		bad_own += !qr_bulk_owns(&b, p[i]) ||
			   !qr_bulk_owns(&b, p[i] + n[i] - 1);
		memset(p[i], (int)(i & 0xff), n[i]);
	}
	/* every buffer still holds its own bytes: none overlaps another */
	for (i = 0; i < N_BUF; i++)
		for (j = 0; j < n[i]; j += 997)
			bad_fill += p[i][j] != (unsigned char)(i & 0xff) ||
				    p[i][n[i] - 1] != (unsigned char)(i & 0xff);
	ok(bad_align == 0, "bulk: %d buffers of 1 B to 5 MiB are 64-byte "
	   "aligned (%zu not)", N_BUF, bad_align);
	ok(bad_fill == 0, "bulk: no two buffers overlap (%zu bytes "
	   "overwritten)", bad_fill);
	ok(bad_own == 0, "bulk: each buffer is owned from its first byte to "
	   "its last (%zu not)", bad_own);
	ok(!qr_bulk_owns(&b, heap) && !qr_bulk_owns(&b, &b),
	   "bulk: a buffer not carved from it is not owned");
	ok(b.bytes >= N_BUF * 100 && b.bytes % (2 << 20) == 0,
	   "bulk: chunks are whole 2 MiB huge pages (%zu bytes)", b.bytes);
	qr_bulk_free(&b);
	ok(b.head == NULL && b.bytes == 0 && !qr_bulk_owns(&b, p[0]),
	   "bulk: freed, it owns nothing");
}

static void
test_xpages(void)
{
	static const size_t sizes[] = {1, 4096, (2 << 20) - 1, 2 << 20,
				       (5 << 20) + 3};
	size_t i, j, zero;

	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		unsigned char *p = xpages(sizes[i]);

		zero = 1;
		for (j = 0; j < sizes[i]; j += 4093)
			zero &= p[j] == 0;
		zero &= p[sizes[i] - 1] == 0;
		memset(p, 0xa5, sizes[i]);
		ok(zero && ((uintptr_t)p & 63) == 0,
		   "xpages: %zu bytes, zeroed, 64-byte aligned", sizes[i]);
		xpages_free(p, sizes[i]);
	}
}

int
main(void)
{
	plan_no_plan();
	test_bulk();
	test_xpages();
	return done();
}
