/*
 * exec_profile: per-op-type timings (opts.profile), with the ops of If
 * and Loop bodies listed under their enclosing ops, and the memory
 * accounting. See exec-int.h.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"
#include "run/exec-int.h"

static int
prof_cmp(const void *a, const void *b)
{
	const struct qr_exec_prof *x = a, *y = b;

	return (x->seconds < y->seconds) - (x->seconds > y->seconds);
}

/* Add calls and seconds under name to e->prof_sorted, merging a name
 * seen before; name is owned by e->prof_names when nested. */
static void
prof_add(struct qr_exec *e, const char *name, size_t calls, double seconds,
	 int nested, size_t *cap)
{
	size_t i;

	for (i = 0; i < e->n_sorted; i++)
		if (strcmp(e->prof_sorted[i].op_type, name) == 0) {
			e->prof_sorted[i].calls += calls;
			e->prof_sorted[i].seconds += seconds;
			return;
		}
	if (e->n_sorted == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		e->prof_sorted = xreallocarray(e->prof_sorted, *cap,
					       sizeof *e->prof_sorted);
	}
	e->prof_sorted[e->n_sorted].op_type = name;
	e->prof_sorted[e->n_sorted].calls = calls;
	e->prof_sorted[e->n_sorted].seconds = seconds;
	e->prof_sorted[e->n_sorted++].nested = nested;
}

/* The entries of child c (and its children), named "prefix/op", into
 * top's list. */
static void
prof_nested(struct qr_exec *top, const struct qr_exec *c, const char *prefix,
	    size_t *cap)
{
	size_t i, b;

	for (i = 0; i < c->n_prof; i++) {
		char *name;

		if (c->prof[i].calls == 0)
			continue;
		name = xasprintf("%s/%s", prefix, c->prof[i].op_type);
		top->prof_names = xreallocarray(top->prof_names,
						top->n_names + 1,
						sizeof *top->prof_names);
		top->prof_names[top->n_names++] = name;
		prof_add(top, name, c->prof[i].calls, c->prof[i].seconds, 1,
			 cap);
	}
	for (i = 0; i < c->n_steps; i++)
		for (b = 0; b < 2; b++)
			if (c->steps[i].branch[b] != NULL) {
				char *p = xasprintf("%s/%s", prefix,
						    c->steps[i].call.node->
						    op_type);

				prof_nested(top, c->steps[i].branch[b], p,
					    cap);
				free(p);
			}
}

void
qr_ex_prof_names_free(struct qr_exec *e)
{
	size_t i;

	for (i = 0; i < e->n_names; i++)
		free(e->prof_names[i]);
	free(e->prof_names);
	e->prof_names = NULL;
	e->n_names = 0;
}

/* See run.h: this executor's op types, then those of its If and Loop
 * bodies (nested), most time first (borrowed until the next call). */
const struct qr_exec_prof *
qr_exec_profile(struct qr_exec *e, size_t *n)
{
	size_t i, b, cap = 0;

	*n = 0;
	if (!e->opts.profile)
		return NULL;
	free(e->prof_sorted);
	e->prof_sorted = NULL;
	e->n_sorted = 0;
	qr_ex_prof_names_free(e);
	for (i = 0; i < e->n_prof; i++)
		prof_add(e, e->prof[i].op_type, e->prof[i].calls,
			 e->prof[i].seconds, 0, &cap);
	for (i = 0; i < e->n_steps; i++)
		for (b = 0; b < 2; b++)
			if (e->steps[i].branch[b] != NULL)
				prof_nested(e, e->steps[i].branch[b],
					    e->steps[i].call.node->op_type,
					    &cap);
	if (e->n_sorted > 0)
		qsort(e->prof_sorted, e->n_sorted, sizeof *e->prof_sorted,
		      prof_cmp);
	*n = e->n_sorted;
	return e->prof_sorted;
}

/* Zero the per-op-type timings (e.g. after warm-up runs). */
void
qr_exec_profile_reset(struct qr_exec *e)
{
	size_t i, b;

	for (i = 0; i < e->n_prof; i++) {
		e->prof[i].calls = 0;
		e->prof[i].seconds = 0;
	}
	for (i = 0; i < e->n_steps; i++)
		for (b = 0; b < 2; b++)
			if (e->steps[i].branch[b] != NULL)
				qr_exec_profile_reset(e->steps[i].branch[b]);
}

/* Current and peak activation memory (see struct qr_exec_mem). */
void
qr_exec_mem(const struct qr_exec *e, struct qr_exec_mem *out)
{
	out->live_tensors = e->live_tensors;
	out->live_bytes = e->live_bytes;
	out->pool_bytes = e->pool_bytes;
	out->peak_bytes = e->peak_bytes;
}
