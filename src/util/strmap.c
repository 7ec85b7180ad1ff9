/*
 * util/strmap.c: a map from strings to indices, the one hash table of
 * qreport (the graph index, the executor's values and activation
 * matching all look names up through it).
 *
 * Open addressing with linear probing over FNV-1a hashes; keys are
 * borrowed (they live in the model or in the caller's arrays) and the
 * table doubles when half full, so a lookup touches a slot or two.
 */
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* FNV-1a, 64 bits. */
uint64_t
qr_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The slot holding key, or the free slot where it would go. */
static size_t
slot_of(const struct qr_strmap *m, const char *key)
{
	size_t i;

	for (i = qr_hash_str(key) & (m->cap - 1); m->keys[i] != NULL;
	     i = (i + 1) & (m->cap - 1))
		if (strcmp(m->keys[i], key) == 0)
			break;
	return i;
}

static void
grow(struct qr_strmap *m, size_t want)
{
	struct qr_strmap old = *m;
	size_t i, cap = old.cap ? old.cap : 16;

	while (cap < 2 * want)
		cap *= 2;
	if (cap == old.cap)
		return;
	m->cap = cap;
	m->keys = xcalloc(cap, sizeof *m->keys);
	m->vals = xcalloc(cap, sizeof *m->vals);
	for (i = 0; i < old.cap; i++)
		if (old.keys[i] != NULL) {
			size_t j = slot_of(m, old.keys[i]);

			m->keys[j] = old.keys[i];
			m->vals[j] = old.vals[i];
		}
	free(old.keys);
	free(old.vals);
}

void
qr_strmap_reserve(struct qr_strmap *m, size_t n)
{
	grow(m, n);
}

size_t
qr_strmap_get(const struct qr_strmap *m, const char *key)
{
	size_t i;

	if (m->cap == 0)
		return QR_STRMAP_NONE;
	i = slot_of(m, key);
	return m->keys[i] != NULL ? m->vals[i] : QR_STRMAP_NONE;
}

size_t
qr_strmap_put(struct qr_strmap *m, const char *key, size_t val)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap)
		grow(m, m->n + 1);
	i = slot_of(m, key);
	if (m->keys[i] != NULL)
		return m->vals[i];
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return val;
}

void
qr_strmap_free(struct qr_strmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}
