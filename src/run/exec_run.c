/*
 * exec_run: qr_exec_run and what reads its results. Inputs are checked
 * against their declarations (binding symbolic dims); then per step the
 * inputs are filled, shapes inferred, buffers taken from the pool, the
 * op run and timed, the hook called and the values used for the last
 * time released. qr_exec_run_node runs one node alone. See exec-int.h.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"
#include "run/exec-int.h"

/* One bound symbolic dim. */
struct sym {
	const char *param;   /* dim_param, borrowed */
	int64_t value;
	const char *input;   /* the input that bound it */
};

/* Check t against input v's declaration, binding symbolic dims. */
static enum qr_status
check_input(struct qr_exec *e, const struct value *v,
	    const struct qr_tensor *t, struct sym *syms, size_t *n_syms,
	    struct qr_diag *d)
{
	const struct qr_value_info *vi = v->decl;
	char buf[128];
	int i;
	size_t k;

	if (vi->dtype != QR_DT_UNDEFINED && t->dtype != vi->dtype)
		return qr_errorf(d, QR_ESHAPE, "model '%s': input '%s' is %s, "
				 "expected %s", e->m->path, v->name,
				 qr_dtype_name(t->dtype),
				 qr_dtype_name(vi->dtype));
	if (vi->ndim < 0)
		return QR_OK;
	if (t->ndim != vi->ndim)
		return qr_errorf(d, QR_ESHAPE, "model '%s': input '%s' %s has "
				 "rank %d, expected %d", e->m->path, v->name,
				 qr_shape_str(t, buf, sizeof buf), t->ndim,
				 vi->ndim);
	for (i = 0; i < vi->ndim; i++) {
		const struct qr_dim *dm = &vi->dims[i];

		if (dm->value >= 0 && t->dims[i] != dm->value)
			return qr_errorf(d, QR_ESHAPE, "model '%s': input '%s' "
					 "%s: dim %d is %lld, expected %lld",
					 e->m->path, v->name,
					 qr_shape_str(t, buf, sizeof buf), i,
					 (long long)t->dims[i],
					 (long long)dm->value);
		if (dm->value >= 0 || dm->param == NULL)
			continue;
		for (k = 0; k < *n_syms; k++)
			if (strcmp(syms[k].param, dm->param) == 0)
				break;
		if (k == *n_syms) {
			syms[k].param = dm->param;
			syms[k].value = t->dims[i];
			syms[k].input = v->name;
			(*n_syms)++;
		} else if (syms[k].value != t->dims[i]) {
			return qr_errorf(d, QR_ESHAPE, "model '%s': input '%s' "
					 "has %s = %lld but input '%s' has "
					 "%lld", e->m->path, v->name,
					 dm->param, (long long)t->dims[i],
					 syms[k].input,
					 (long long)syms[k].value);
		}
	}
	return QR_OK;
}

/* Release every activation of the previous run. */
void
qr_ex_reset(struct qr_exec *e)
{
	size_t i;

	for (i = 0; i < e->n_vals; i++) {
		struct value *v = &e->vals[i];

		if (v->kind == V_INPUT)
			v->cur = NULL;
		if (v->kind != V_NODE)
			continue;
		if (v->cur != NULL && v->cur == &v->store && !v->view)
			qr_ex_pool_release(e, &v->store);
		v->cur = NULL;
	}
	for (i = 0; i < e->n_outs; i++)
		e->outs[i] = NULL;
}

/* Re-run check with the actual input dtypes (some were unknown at load). */
static enum qr_status
step_recheck(struct step *s, struct qr_diag *d)
{
	size_t j;

	for (j = 0; j < s->call.n_in; j++)
		s->in_dtype[j] = s->call.in[j] != NULL ?
			s->call.in[j]->dtype : QR_DT_UNDEFINED;
	if (s->desc->check == NULL)
		return QR_OK;
	return s->desc->check(&s->call, d);
}

/* Fill step s's call.in with what its inputs hold this run (NULL for an
 * absent one). */
static void
step_inputs(struct qr_exec *e, struct step *s)
{
	size_t j;

	for (j = 0; j < s->call.n_in; j++)
		s->call.in[j] = s->in_val[j] == NO_STEP ?
			NULL : e->vals[s->in_val[j]].cur;
}

/* Give step s's output j (its shape set) a buffer: an output named ""
 * from the heap, a value's from the pool, which readers then see. */
void
qr_ex_out_alloc(struct qr_exec *e, struct step *s, size_t j)
{
	struct qr_tensor *t = s->call.out[j];

	if (s->out_val[j] == NO_STEP) {
		qr_tensor_alloc(t);
		return;
	}
	t->name = e->vals[s->out_val[j]].name;
	qr_ex_pool_alloc(e, t);
	e->vals[s->out_val[j]].cur = t;
}

/* Infer, allocate and run one step whose call.in is filled. */
static enum qr_status
step_exec(struct qr_exec *e, struct step *s, struct qr_diag *d)
{
	enum qr_status st;
	size_t j;

	if (s->branch[0] != NULL)
		return s->is_loop ? qr_ex_loop_exec(e, s, d) :
				    qr_ex_if_exec(e, s, d);
	if (s->recheck) {
		st = step_recheck(s, d);
		if (st != QR_OK)
			return st;
	}
	st = s->desc->infer(&s->call, d);
	if (st != QR_OK)
		return st;
	for (j = 0; j < s->call.n_out; j++) {
		const struct qr_tensor *t = s->call.out[j];

		QR_ASSERT(s->out_val[j] == NO_STEP ||
			  t->dtype != QR_DT_UNDEFINED);
		QR_ASSERT(s->out_val[j] == NO_STEP || s->recheck ||
			  s->out_dtype[j] == QR_DT_UNDEFINED ||
			  s->out_dtype[j] == t->dtype);
		qr_ex_out_alloc(e, s, j);
	}
	return s->desc->run(&s->call, d);
}

/*
 * See run.h. Binds the inputs, then per step: fill the inputs, re-check
 * dtypes if load could not, infer, allocate from the pool, run, time,
 * call the hook, release what this step used last. On failure every
 * activation of the run is released.
 */
enum qr_status
qr_exec_run(struct qr_exec *e, struct qr_tensor *const *inputs,
	    size_t n_inputs, qr_hook_fn hook, void *user, struct qr_diag *d)
{
	struct sym *syms = NULL;
	size_t n_syms = 0, i, j;
	enum qr_status st = QR_OK;

	qr_ex_reset(e);
	syms = xcalloc(64 + n_inputs * QR_TENSOR_MAX_DIMS, sizeof *syms);
	for (i = 0; i < n_inputs; i++) {
		const struct qr_tensor *t = inputs[i];
		size_t v = t->name != NULL ? qr_ex_val_find(e, t->name) : NO_STEP;

		if (v == NO_STEP || e->vals[v].kind != V_INPUT) {
			st = qr_errorf(d, QR_EUSAGE, "model '%s': no graph "
				       "input named '%s'", e->m->path,
				       t->name ? t->name : "(null)");
			goto out;
		}
		if (e->vals[v].cur != NULL) {
			st = qr_errorf(d, QR_EUSAGE, "model '%s': graph input "
				       "'%s' is given twice", e->m->path,
				       t->name);
			goto out;
		}
		st = check_input(e, &e->vals[v], t, syms, &n_syms, d);
		if (st != QR_OK)
			goto out;
		e->vals[v].cur = (struct qr_tensor *)t;
	}
	for (i = 0; i < e->n_inputs; i++) {
		if (e->vals[qr_ex_val_find(e, e->inputs[i])].cur == NULL) {
			st = qr_errorf(d, QR_EUSAGE, "model '%s': graph input "
				       "'%s' was not given", e->m->path,
				       e->inputs[i]);
			goto out;
		}
	}
	for (i = 0; i < e->n_steps; i++) {
		struct step *s = &e->steps[i];
		double t0 = e->opts.profile ? qr_now() : 0;

		struct qr_tensor **outs = s->call.out;

		if (s->folded != NULL) {
			for (j = 0; j < s->call.n_out; j++)
				e->vals[s->out_val[j]].cur = s->folded[j];
			outs = s->folded;
		} else if (s->view != NULL) {
			/* its reader reads the view: only the shape */
			step_inputs(e, s);
			st = s->desc->infer(&s->call, d);
			if (st != QR_OK)
				goto out;
			s->call.out[0]->name = e->vals[s->out_val[0]].name;
			e->vals[s->out_val[0]].cur = s->call.out[0];
			outs = s->nulls;
		} else {
			step_inputs(e, s);
			st = step_exec(e, s, d);
			if (st != QR_OK)
				goto out;
		}
		if (e->opts.profile) {
			e->prof[s->prof].seconds += qr_now() - t0;
			e->prof[s->prof].calls++;
		}
		if (hook != NULL) {
			int rc = hook(s->call.node, outs, s->call.n_out,
				      user);

			if (rc != 0) {
				st = rc > 0 && rc <= QR_ENOMEM ?
					(enum qr_status)rc : QR_EPARTIAL;
				qr_errorf(d, st, "model '%s': run stopped "
					  "after node '%s'", e->m->path,
					  s->call.node->name);
				goto out;
			}
		}
		for (j = 0; j < s->n_release; j++) {
			struct value *v = &e->vals[s->release[j]];

			if (!v->folded && !v->view)
				qr_ex_pool_release(e, &v->store);
			v->cur = NULL;
		}
	}
	for (i = 0; i < e->n_outs; i++)
		e->outs[i] = e->vals[e->out_vals[i]].cur;
out:
	/* Inputs are borrowed for this run only. */
	for (i = 0; i < e->n_inputs; i++)
		e->vals[qr_ex_val_find(e, e->inputs[i])].cur = NULL;
	if (st != QR_OK)
		qr_ex_reset(e);
	free(syms);
	return st;
}

/* The last run's graph outputs (borrowed until the next run). */
struct qr_tensor *const *
qr_exec_outputs(const struct qr_exec *e, size_t *n)
{
	*n = e->n_outs;
	return e->outs;
}

/* Move output i to the caller: an activation's buffer is handed over
 * (unless it is carved from e->bulk), an input or constant output is
 * copied. NULL when already taken. */
struct qr_tensor *
qr_exec_output_take(struct qr_exec *e, size_t i)
{
	struct value *v;
	struct qr_tensor *t;

	if (i >= e->n_outs || e->outs[i] == NULL)
		return NULL;
	v = &e->vals[e->out_vals[i]];
	if (e->outs[i] != &v->store) {
		t = qr_tensor_copy(e->outs[i]);
	} else if (qr_bulk_owns(&e->bulk, v->store.data)) {
		/* a bulk buffer is e's: the caller gets a copy */
		t = qr_tensor_copy(&v->store);
		qr_ex_pool_release(e, &v->store);
		v->cur = NULL;
	} else {
		t = xcalloc(1, sizeof *t);
		*t = v->store;
		e->live_tensors--;
		e->live_bytes -= v->store.cap;
		v->store.data = NULL;
		v->store.cap = 0;
		v->cur = NULL;
	}
	e->outs[i] = NULL;
	return t;
}

/* A kept tensor (graph output or opts.keep) or a constant, by name;
 * borrowed. */
struct qr_tensor *
qr_exec_tensor_get(const struct qr_exec *e, const char *name)
{
	size_t v = qr_ex_val_find(e, name);

	if (v == NO_STEP || (e->vals[v].kind == V_NODE && !e->vals[v].keep))
		return NULL;
	return e->vals[v].cur;
}

/*
 * See run.h. Uses the node's prepared state; outputs are fresh owned
 * tensors, never pool buffers, so they outlive later runs.
 */
enum qr_status
qr_exec_run_node(struct qr_exec *e, size_t node, struct qr_tensor *const *inputs,
		 struct qr_tensor **outputs, struct qr_diag *d)
{
	struct step *s;
	struct qr_op_call c;
	struct qr_tensor **in = NULL, **out = NULL;
	int *in_dt = NULL;
	enum qr_status st = QR_OK;
	size_t j;

	QR_ASSERT(node < e->n_steps);
	s = &e->steps[e->step_of_node[node]];
	c = s->call;
	if (s->branch[0] != NULL)
		return qr_errorf(d, QR_EUNSUPPORTED, "node '%s' (%s): control "
				 "flow runs only in a whole run", c.node->name,
				 c.node->op_type);
	for (j = 0; j < c.n_out; j++)
		outputs[j] = NULL;
	in = xcalloc(c.n_in + 1, sizeof *in);
	out = xcalloc(c.n_out + 1, sizeof *out);
	in_dt = xcalloc(c.n_in + 1, sizeof *in_dt);
	for (j = 0; j < c.n_in; j++) {
		const struct value *v;

		if (s->in_val[j] == NO_STEP)
			continue;
		v = &e->vals[s->in_val[j]];
		in[j] = inputs != NULL && inputs[j] != NULL ? inputs[j] :
			v->konst;
		if (in[j] == NULL) {
			st = qr_errorf(d, QR_EUSAGE, "node '%s' (%s): input %zu "
				       "'%s' was not given", c.node->name,
				       c.node->op_type, j, v->name);
			goto out;
		}
		if (v->dtype != QR_DT_UNDEFINED && in[j]->dtype != v->dtype) {
			st = qr_errorf(d, QR_ESHAPE, "node '%s' (%s): input "
				       "%zu '%s' is %s, expected %s",
				       c.node->name, c.node->op_type, j,
				       v->name, qr_dtype_name(in[j]->dtype),
				       qr_dtype_name(v->dtype));
			goto out;
		}
		in_dt[j] = in[j]->dtype;
	}
	for (j = 0; j < c.n_out; j++) {
		out[j] = xcalloc(1, sizeof *out[j]);
		out[j]->name = c.node->out[j];
		out[j]->owned = 1;
	}
	c.in = in;
	c.out = out;
	c.in_dtype = in_dt;
	c.out_dtype = s->out_dtype;
	if (s->recheck && s->desc->check != NULL) {
		st = s->desc->check(&c, d);
		if (st != QR_OK)
			goto out;
	}
	st = s->desc->infer(&c, d);
	if (st != QR_OK)
		goto out;
	for (j = 0; j < c.n_out; j++)
		qr_tensor_alloc(out[j]);
	st = s->desc->run(&c, d);
	if (st != QR_OK)
		goto out;
	for (j = 0; j < c.n_out; j++) {
		if (c.node->out[j][0] != '\0') {
			outputs[j] = out[j];
			out[j] = NULL;
		}
	}
out:
	for (j = 0; j < c.n_out; j++)
		qr_tensor_free(out[j]);
	free(in);
	free(out);
	free(in_dt);
	return st;
}
