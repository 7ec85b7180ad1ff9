/*
 * test_util: the bulk allocator (qr_bulk), which executors and the
 * activation run carve their long-lived buffers from: alignment, no two
 * buffers overlapping, ownership, a buffer larger than a chunk, and
 * xpages on both sides of its 2 MiB line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The string map against a plain array search, over enough keys to grow
 * the table several times, with keys that share prefixes. */
static void
test_strmap(void)
{
	enum { N = 3000 };
	static char keys[N][16];
	struct qr_strmap m = {0};
	size_t i, bad = 0;

	ok(qr_strmap_get(&m, "x") == QR_STRMAP_NONE, "strmap: empty map finds nothing");
	for (i = 0; i < N; i++) {
		snprintf(keys[i], sizeof keys[i], "t%zu", i * 7919 % N);
		if (qr_strmap_put(&m, keys[i], i) != i)
			bad++;
	}
	ok(bad == 0 && m.n == N, "strmap: %d new keys stored (%zu wrong)", N, bad);
	for (i = 0, bad = 0; i < N; i++)
		bad += qr_strmap_get(&m, keys[i]) != i;
	ok(bad == 0, "strmap: every key finds its index (%zu wrong)", bad);
	ok(qr_strmap_put(&m, "t0", 99999) == qr_strmap_get(&m, "t0") &&
	   m.n == N, "strmap: putting a present key keeps its index");
	ok(qr_strmap_get(&m, "t") == QR_STRMAP_NONE &&
	   qr_strmap_get(&m, "t00") == QR_STRMAP_NONE &&
	   qr_strmap_get(&m, "") == QR_STRMAP_NONE, "strmap: absent keys");
	ok(qr_hash_str("") == 0xcbf29ce484222325ull &&
	   qr_hash_str("a") == 0xaf63dc4c8601ec8cull, "strmap: FNV-1a 64");
	qr_strmap_free(&m);
	ok(m.cap == 0 && qr_strmap_get(&m, "t1") == QR_STRMAP_NONE,
	   "strmap: freed map is empty");
}

/* binary16 and bfloat16 round trips and rounding at known values. */
static void
test_half(void)
{
	uint32_t h, bad = 0;

	for (h = 0; h < 0x10000; h++) {
		float f = qr_f16_to_f32((uint16_t)h);

		if (isnan(f) ? (qr_f32_to_f16(f) & 0x7e00) != 0x7e00 ||
				       ((h & 0x7c00) != 0x7c00)
			     : qr_f32_to_f16(f) != h)
			bad++;
	}
	ok(bad == 0, "half: all 65536 binary16 values round-trip (%u wrong)", bad);
	ok(qr_f16_to_f32(0x3c00) == 1.0f && qr_f16_to_f32(0xc000) == -2.0f &&
	   qr_f16_to_f32(0x0001) == ldexpf(1, -24) &&
	   qr_f16_to_f32(0x7bff) == 65504.0f, "half: known binary16 values");
	ok(qr_f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3c00 &&
	   qr_f32_to_f16(1.0f + 3 * ldexpf(1, -11)) == 0x3c02 &&
	   qr_f32_to_f16(65520.0f) == 0x7c00 && qr_f32_to_f16(-0.0f) == 0x8000,
	   "half: ties to even, overflow to Inf, signed zero");
	ok(qr_bf16_to_f32(0x3f80) == 1.0f && qr_f32_to_bf16(1.0f) == 0x3f80 &&
	   qr_f32_to_bf16(1.0f + ldexpf(1, -8)) == 0x3f80 &&
	   qr_f32_to_bf16(1.0f + 3 * ldexpf(1, -8)) == 0x3f82 &&
	   isnan(qr_bf16_to_f32(qr_f32_to_bf16(NAN))), "half: bfloat16");
}

/* Paths that are, or lie inside, one another, through links and "..". */
static void
test_path_overlap(void)
{
	char tmpl[] = "/tmp/qr-overlap-XXXXXX", p[4][512];

	if (mkdtemp(tmpl) == NULL) {
		ok(0, "overlap: mkdtemp");
		return;
	}
	snprintf(p[0], sizeof p[0], "%s/data/imgs", tmpl);
	snprintf(p[1], sizeof p[1], "%s/link", tmpl);
	snprintf(p[2], sizeof p[2], "%s/data", tmpl);
	snprintf(p[3], sizeof p[3], "%s/database", tmpl);
	ok(qr_mkdirs(p[0], NULL) == QR_OK && symlink(p[2], p[1]) == 0,
	   "overlap: fixture");
	ok(qr_path_overlap(p[0], p[2]) && qr_path_overlap(p[2], p[0]),
	   "overlap: a folder and one inside it, both ways");
	snprintf(p[3], sizeof p[3], "%s/link/imgs/new/report", tmpl);
	ok(qr_path_overlap(p[3], p[2]), "overlap: through a link, to a "
	   "folder that does not exist yet");
	snprintf(p[3], sizeof p[3], "%s/data/../data/imgs/x.png", tmpl);
	ok(qr_path_overlap(p[0], p[3]), "overlap: through \"..\"");
	snprintf(p[3], sizeof p[3], "%s/database", tmpl);
	ok(!qr_path_overlap(p[2], p[3]) && !qr_path_overlap(p[3], p[2]),
	   "overlap: a shared name prefix is not inside");
	qr_remove_tree(tmpl);
}

int
main(void)
{
	plan_no_plan();
	RUN(test_bulk);
	RUN(test_xpages);
	RUN(test_strmap);
	RUN(test_half);
	RUN(test_path_overlap);
	return done();
}
