/*
 * exec_fold: what qr_exec_new computes once instead of at each run.
 * A step whose inputs are all constant is run at load and its outputs
 * kept (or borrowed from opts.share's executor); opts.trim_folds frees
 * folded values only other folded steps read; opts.views leaves a
 * weight's DequantizeLinear unrun for a reader that dequantizes as it
 * goes. See exec-int.h.
 */
#include <stdlib.h>

#include "run/exec-int.h"

/* opts.views, before load: who reads each value (e->reader). */
void
qr_ex_readers_index(struct qr_exec *e)
{
	size_t i, j;

	e->reader = xmalloc((e->n_vals + 1) * sizeof *e->reader);
	e->reader_in = xcalloc(e->n_vals + 1, sizeof *e->reader_in);
	for (i = 0; i < e->n_vals; i++)
		e->reader[i] = NO_STEP;
	for (i = 0; i < e->n_steps; i++) {
		for (j = 0; j < e->steps[i].call.n_in; j++) {
			size_t v = e->steps[i].in_val[j];

			if (v == NO_STEP)
				continue;
			e->reader[v] = e->reader[v] == NO_STEP ? i : e->n_steps;
			e->reader_in[v] = j;
		}
		/* an If's branches read whole tensors: never a view */
		for (j = 0; j < e->steps[i].n_outer; j++)
			e->reader[e->steps[i].outer_val[j]] = e->n_steps;
	}
}

/* With opts.views at load: the step that would read s's output as a view
 * (ops.h, "Views"): s's op can describe its one output so, the output is
 * no graph output or kept tensor, and its one reader takes that input as
 * a view. NULL otherwise. */
static struct step *
view_taker(const struct qr_exec *e, const struct step *s)
{
	size_t v = s->call.n_out == 1 ? s->out_val[0] : NO_STEP;
	struct step *t;

	if (e->reader == NULL || s->desc->view == NULL || v == NO_STEP ||
	    e->vals[v].keep || e->reader[v] == NO_STEP ||
	    e->reader[v] == e->n_steps)
		return NULL;
	t = &e->steps[e->reader[v]];
	if (!(t->desc->view_in & (1u << e->reader_in[v])))
		return NULL;
	return t;
}

/* Take step s's folded outputs from opts.share when that executor (of
 * the same model) folded the same node: views of its tensors, which it
 * keeps; an output it trimmed (fold_trim) is trimmed here too (NULL).
 * 1 when done. */
static int
fold_borrow(struct qr_exec *e, struct step *s)
{
	const struct qr_exec *o = e->opts.share;
	const struct step *os;
	struct qr_tensor **out;
	size_t j;

	if (o == NULL || o->m != e->m || s->node >= o->n_steps)
		return 0;
	os = &o->steps[o->step_of_node[s->node]];
	if (os->folded == NULL)
		return 0;
	out = xcalloc(s->call.n_out + 1, sizeof *out);
	for (j = 0; j < s->call.n_out; j++) {
		struct value *v = &e->vals[s->out_val[j]];

		v->folded = 1;
		if (os->folded[j] == NULL)
			continue;
		out[j] = xmalloc(sizeof *out[j]);
		*out[j] = *os->folded[j];
		out[j]->owned = 0;
		v->konst = out[j];
	}
	s->folded = out;
	return 1;
}

/*
 * Constant folding: a step whose inputs are all constants (initializers,
 * Constant outputs, or outputs of steps folded before it) is run once
 * here, with the op's own infer and run, so its outputs are the same bits
 * a run would give (in ONNX Runtime's order even when opts.any_order is
 * set, so that executors of one model fold alike and can share the
 * results: fold_borrow). Its outputs become constants that later
 * prepares see (so weights behind a DequantizeLinear are packed once) and
 * that each run hands to the hook without recomputing them. A step that
 * fails, has an unnamed output or would take the executor's folded bytes
 * past opts.fold_max is left to run normally; so is one the share did
 * not fold. With opts.views, one whose reader would take it as a view
 * is folded only when the reader says a constant is worth it
 * (desc->view_fold: a Conv that Winograd can take; a MatMul gains
 * nothing), and is left to views_plan otherwise.
 */
void
qr_ex_step_fold(struct qr_exec *e, struct step *s)
{
	struct qr_tensor **out;
	struct qr_op_call c = s->call;
	struct qr_diag quiet = {0};
	size_t j, n_in = 0, bytes = 0;
	size_t fold_max = e->opts.fold_max ? e->opts.fold_max
					   : QR_EXEC_FOLD_MAX;
	const struct step *taker;
	int ok = 1;

	if (s->recheck || s->call.n_out == 0 || s->branch[0] != NULL)
		return;
	for (j = 0; j < s->call.n_out; j++)
		if (s->out_val[j] == NO_STEP || e->vals[s->out_val[j]].keep ||
		    e->vals[s->out_val[j]].konst != NULL)
			return;
	/* before the inputs: one the share trimmed is NULL here */
	if (fold_borrow(e, s))
		return;
	if (e->opts.share != NULL && e->opts.share->m == e->m)
		return; /* what the share did not fold (its budget) */
	taker = view_taker(e, s);
	for (j = 0; j < s->call.n_in; j++) {
		if (s->in_val[j] == NO_STEP)
			continue;
		if (s->prep_in[j] == NULL)
			return;
		n_in++;
	}
	if (n_in == 0)
		return; /* nothing to gain (and generators stay live) */
	out = xcalloc(s->call.n_out + 1, sizeof *out);
	for (j = 0; j < s->call.n_out; j++) {
		out[j] = xcalloc(1, sizeof *out[j]);
		out[j]->owned = 1;
	}
	c.in = s->prep_in;
	c.out = out;
	c.any_order = 0;
	if (s->desc->infer(&c, &quiet) != QR_OK) {
		ok = 0;
		goto done;
	}
	for (j = 0; j < s->call.n_out; j++) {
		if (out[j]->nbytes > fold_max - bytes ||
		    bytes + out[j]->nbytes > fold_max - e->fold_bytes ||
		    (taker != NULL && (taker->desc->view_fold == NULL ||
				       !taker->desc->view_fold(
					       &taker->call,
					       e->reader_in[s->out_val[0]],
					       out[j])))) {
			ok = 0;
			goto done;
		}
		bytes += out[j]->nbytes;
	}
	for (j = 0; j < s->call.n_out; j++) {
		out[j]->name = e->vals[s->out_val[j]].name;
		qr_tensor_alloc(out[j]);
	}
	if (s->desc->run(&c, &quiet) != QR_OK)
		ok = 0;
done:
	qr_diag_clear(&quiet);
	if (!ok) {
		for (j = 0; j < s->call.n_out; j++)
			qr_tensor_free(out[j]);
		free(out);
		return;
	}
	for (j = 0; j < s->call.n_out; j++) {
		struct value *v = &e->vals[s->out_val[j]];

		v->konst = out[j];
		v->folded = 1;
	}
	s->folded = out;
	e->fold_bytes += bytes;
}

/*
 * opts.trim_folds, after step i is prepared (and folded or not): free
 * each folded value whose last reader is step i when no step that runs
 * at run time reads it and it is no graph output or kept tensor. A
 * weight behind Transpose -> QuantizeLinear -> DequantizeLinear keeps
 * only the last (vit_b_16 exported without constant folding, then
 * quantized: 390 MB less), and never holds all three at once. live: per value, read by a step not folded.
 */
void
qr_ex_fold_trim(struct qr_exec *e, size_t i, unsigned char *live)
{
	const struct step *s = &e->steps[i];
	size_t j, k, n = s->call.n_in + s->call.n_out;

	for (j = 0; s->folded == NULL && j < s->call.n_in; j++)
		if (s->in_val[j] != NO_STEP)
			live[s->in_val[j]] = 1;
	for (j = 0; j < n; j++) {
		size_t v = j < s->call.n_in ? s->in_val[j]
					     : s->out_val[j - s->call.n_in];
		struct value *val;
		struct step *p;

		if (v == NO_STEP)
			continue;
		val = &e->vals[v];
		if (val->kind != V_NODE || !val->folded || val->keep ||
		    live[v] || val->last_use != i || val->konst == NULL)
			continue;
		p = &e->steps[val->producer];
		for (k = 0; k < p->call.n_out; k++)
			if (p->out_val[k] == v)
				p->folded[k] = NULL;
		if (val->konst->owned)
			e->fold_bytes -= val->konst->nbytes;
		qr_tensor_free(val->konst);
		val->konst = NULL;
	}
}

/*
 * opts.views, after load: leave as a view each step that was not folded
 * (step_fold folds only small ones when they can be views) and has a
 * view taker, when every input is constant: a weight's DequantizeLinear,
 * of an initializer or of a folded Transpose -> QuantizeLinear chain.
 */
void
qr_ex_views_plan(struct qr_exec *e)
{
	size_t i, j;

	for (i = 0; i < e->n_steps; i++) {
		struct step *s = &e->steps[i], *t = view_taker(e, s);
		struct qr_op_call c = s->call;
		struct qr_qview *view;
		size_t v;
		int konst = 1;

		if (t == NULL || s->folded != NULL || t->folded != NULL)
			continue;
		for (j = 0; j < s->call.n_in; j++)
			if (s->in_val[j] != NO_STEP && s->prep_in[j] == NULL)
				konst = 0;
		if (!konst)
			continue;
		c.in = s->prep_in;
		view = xcalloc(1, sizeof *view);
		if (s->desc->view(&c, view) != QR_OK) {
			free(view);
			continue;
		}
		v = s->out_val[0];
		s->view = view;
		s->nulls = xcalloc(2, sizeof *s->nulls);
		e->vals[v].view = 1;
		t->in_q = xcalloc(t->call.n_in + 1, sizeof *t->in_q);
		t->in_q[e->reader_in[v]] = view;
		t->call.in_q = t->in_q;
	}
}
