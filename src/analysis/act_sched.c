/*
 * act_sched: the representative data through the float model and every
 * candidate, one sample at a time, compared tensor by tensor. This file
 * schedules the runs (sample slots, lanes, the step mode, threads) and
 * holds qr_analysis_run_data; what the hooks do is in act_hook.c, the
 * results in act_results.c.
 *
 * Per sample:
 *   1. the float model runs once; its hook copies the matched float
 *      tensors of this sample (one buffer per tensor and slot, reused
 *      from sample to sample) and adds them to the per-channel
 *      statistics;
 *   2. each candidate runs twice:
 *      - cumulative: a normal run; the hook compares each matched tensor
 *        with the float one (integer tensors dequantized with their scale
 *        and zero point): the error of everything up to that point;
 *      - local: the hook compares, then overwrites the tensor with the
 *        float value in its own domain (a float copy, or quantized with
 *        its scale and zero point, round half to even, saturated), so each
 *        node reads the float model's values and its error is its own
 *        (ONNX Runtime qdq_loss_debug's "local" error; TFLite's quantization
 *        debugger feeds dequantized float inputs the same way).
 * Only sums, histograms and per-channel ranges survive a sample.
 *
 * Two lanes (threads) share this work when there are two cores or more:
 * the float run of sample s+1 beside the candidate runs of sample s, or
 * a candidate's cumulative run beside its local run (each candidate has
 * a second executor for that). Samples in flight live in two slots (the
 * float tensors, inputs and float outputs of each). Every accumulator is
 * written by one kind of task in sample order (float: per-channel
 * ranges; cumulative: cum, histograms, saturation, outputs; local: loc),
 * so the results do not depend on which lane ran what.
 *
 * That pipeline keeps two samples' compared float tensors whole, which
 * is little for a CNN (resnet18: 14 MB a sample) and too much for a
 * transformer (vit_b_16: 523 MB). So the first sample always goes "in
 * step": the float run and every candidate run of the sample at once,
 * one thread each, a candidate run waiting in its hook for a float
 * tensor not made yet, and each float tensor freed as soon as the last
 * run that reads it has. The float run may keep STEP_AHEAD bytes ahead
 * of the slowest reader, then waits while some reader is not waiting
 * for it (such a reader runs, or will when it gets a lane, and so reads
 * and frees, or comes to wait too): when every reader waits for the
 * float run it goes on, so none waits forever, whatever the graphs'
 * orders. Only as many threads compute at once as there are lanes; the
 * others wait for one.
 * When the first sample's tensors came to at most opts.pipe_bytes, the
 * other samples take the pipeline; otherwise they go in step too. The
 * two ways compute the same things in the same order per accumulator,
 * so the results are the same bits.
 *
 * A sample the float model cannot take (QR_ESHAPE: too small for a
 * MaxPool, an input of the wrong rank) is skipped, and nothing of it may
 * stay in any number. The float run adds each tensor to the float
 * statistics as it takes it, before the run is known to end well: each
 * tensor keeps its per-channel sums as they were before the sample (a
 * few numbers per channel) and gets them back when the run fails. In the
 * pipeline no candidate runs a sample before its float run has ended,
 * so that is all. In step the candidate runs read the float tensors
 * while the float run makes them, and have added to their sums when it
 * fails: each candidate keeps a copy of its pairs' sums from before the
 * sample and gets it back. Holding the candidates until the float run
 * has ended would keep the sample's float tensors whole, what step
 * exists to avoid, or run the float model twice; the copy is the size
 * of the sums (about 1.4 kB a pair), not of any tensor, and is freed
 * once the samples take the pipeline. A candidate that fails on a
 * sample the float model took is left out as before.
 */
#include "analysis/analysis-int.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "graph/graph.h"
#include "graph/tensor.h"
#include "onnx/onnx.h"
#include "run/run.h"

#define STEP_AHEAD ((size_t)16 << 20) /* float bytes kept ahead, in step */

/*
 * Pages for n floats, *cap set to the floats they hold. In step a
 * sample's float tensors come and go by the hundred; from malloc, glibc
 * soon serves blocks that size from its heap (its mmap threshold rises
 * with each large free) and keeps what is freed there: vit_b_16's peak
 * grew by 590 MB in the first sample. Mapped pages go back at once.
 */
static float *
step_map(size_t n, size_t *cap)
{
	size_t page = qr_page_size();
	/* an empty tensor (no detections) still gets a page */
	size_t want = n > 0 ? n : 1;
	size_t bytes = want > (SIZE_MAX - page) / sizeof(float) ? 0
		: (want * sizeof(float) + page - 1) / page * page;
	void *p;

	qr_mem_need(bytes);
	p = bytes ? mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;

	if (p == MAP_FAILED)
		qr_fatal("out of memory mapping %zu floats", n);
	qr_mem_mapped(bytes, 1);
	*cap = bytes / sizeof(float);
	return p;
}

static void
step_unmap(float *p, size_t cap)
{
	if (p != NULL) {
		munmap(p, cap * sizeof *p);
		qr_mem_mapped(cap * sizeof *p, 0);
	}
}

/*
 * Copy t into float tensor f's buffer of slot s and add it to the
 * statistics (float tasks only, in sample order); f->undo keeps them as
 * they were (ft_untake). In step each buffer is new pages (step_map). In
 * the pipeline a slot's first buffer is carved from c->bulk and kept for
 * the slot's later samples; one that a later sample outgrows (shapes
 * that vary) is replaced from the heap, freed when outgrown in turn, so
 * carved buffers never pile up. Returns 1 when taken; the caller then
 * shows it to the candidate runs (qr_ar_ft_ready).
 */
int
qr_ar_ft_take(struct qr_ar_ctx *c, struct qr_ar_ftens *f, size_t s,
	      const struct qr_tensor *t)
{
	if (c->step) {
		QR_ASSERT(f->buf[s] == NULL); /* one producer per sample */
		f->buf[s] = step_map(t->n_elem, &f->cap[s]);
	} else if (f->cap[s] == 0 && f->buf[s] == NULL) {
		f->cap[s] = t->n_elem;
		f->buf[s] = qr_bulk_alloc(&c->bulk, t->n_elem * sizeof(float));
	} else if (f->cap[s] < t->n_elem) {
		if (!f->heap[s]) {
			f->buf[s] = NULL; /* the carved one stays in bulk */
			f->cap[s] = 0;
			f->heap[s] = 1;
		}
		qr_ar_grow(&f->buf[s], &f->cap[s], t->n_elem);
	}
	if (!qr_as_to_float(t, NULL, f->buf[s]))
		return 0;
	f->n[s] = t->n_elem;
	f->ndim[s] = t->ndim;
	memcpy(f->dims[s], t->dims, sizeof f->dims[s]);
	f->first = !f->seen;
	if (!f->seen) {
		f->shape = qr_an_dims_str(t->dims, t->ndim);
		f->seen = 1;
	}
	qr_as_chan_copy(&f->undo, &f->chan);
	qr_as_chan_add(&f->chan, f->buf[s], t->dims, t->ndim);
	f->n_values += t->n_elem;
	return 1;
}

/* The float run failed on the sample in slot s: what its takes added to
 * the statistics goes (float thread only, before the next sample). */
static void
ft_untake(struct qr_ar_ctx *c, size_t s)
{
	size_t i;

	for (i = 0; i < c->n_ft; i++) {
		struct qr_ar_ftens *f = &c->ft[i];

		if (!f->have[s])
			continue;
		qr_as_chan_copy(&f->chan, &f->undo);
		f->n_values -= f->n[s];
		if (f->first) {
			free(f->shape);
			f->shape = NULL;
			f->seen = 0;
		}
	}
}

/* ---- in step ---- */

/* Take a lane (under mu). */
static void
lane_take(struct qr_ar_ctx *c)
{
	while (c->lanes_free == 0)
		pthread_cond_wait(&c->cv, &c->mu);
	c->lanes_free--;
}

/* Give the lane back (under mu). */
static void
lane_give(struct qr_ar_ctx *c)
{
	c->lanes_free++;
	pthread_cond_broadcast(&c->cv);
}

/* Free float tensor i of the sample once shown and read by every run
 * (under mu). */
static void
ft_drop(struct qr_ar_ctx *c, size_t i)
{
	struct qr_ar_ftens *f = &c->ft[i];

	if (!f->have[0] || f->buf[0] == NULL)
		return;
	c->held -= f->cap[0] * sizeof *f->buf[0];
	step_unmap(f->buf[0], f->cap[0]);
	f->buf[0] = NULL;
	f->cap[0] = 0;
	pthread_cond_broadcast(&c->cv);
}

/* Float tensor i of slot s was taken: the pipeline reads it once the
 * float task is over; in step it is shown to the candidate runs now,
 * and the float run then keeps no more than STEP_AHEAD bytes ahead of
 * them (float thread only). */
void
qr_ar_ft_ready(struct qr_ar_ctx *c, size_t s, size_t i)
{
	struct qr_ar_ftens *f = &c->ft[i];

	if (!c->step) {
		f->have[s] = 1;
		return;
	}
	pthread_mutex_lock(&c->mu);
	f->have[0] = 1;
	c->held += f->cap[0] * sizeof *f->buf[0];
	c->sample_bytes += f->n[0] * sizeof *f->buf[0];
	if (c->refs[i] == 0)
		ft_drop(c, i);
	pthread_cond_broadcast(&c->cv);
	if (c->held > STEP_AHEAD && c->waiting < c->active) {
		lane_give(c);
		while (c->held > STEP_AHEAD && c->waiting < c->active)
			pthread_cond_wait(&c->cv, &c->mu);
		lane_take(c);
	}
	pthread_mutex_unlock(&c->mu);
}

/* In step: wait until float tensor i of the sample is shown (i == QR_AR_NONE:
 * until the float run ends) or the float run has ended. Returns nonzero
 * when the sample is given up (the float run failed: the data run
 * stops, or the sample is skipped). */
int
qr_ar_step_wait(struct qr_ar_hctx *h, size_t i)
{
	struct qr_ar_ctx *c = h->c;
	int r;

	if (h->left == NULL)
		return 0;
	pthread_mutex_lock(&c->mu);
	if ((i == QR_AR_NONE || !c->ft[i].have[0]) && !c->f_end) {
		double t0 = qr_now();

		/* counted as waiting for the float run only until it is
		 * there: a run that then waits for a lane does not hold the
		 * float run back */
		c->waiting++;
		lane_give(c);
		while ((i == QR_AR_NONE || !c->ft[i].have[0]) && !c->f_end)
			pthread_cond_wait(&c->cv, &c->mu);
		c->waiting--;
		lane_take(c);
		h->waited += qr_now() - t0;
	}
	r = c->stop != QR_OK || c->f_fail;
	pthread_mutex_unlock(&c->mu);
	return r;
}

/* In step: run h has read float tensor i once more; the last read of
 * the last run frees it. */
void
qr_ar_step_read(struct qr_ar_hctx *h, size_t i)
{
	struct qr_ar_ctx *c = h->c;

	if (h->left == NULL || h->left[i] == 0 || --h->left[i] > 0)
		return;
	pthread_mutex_lock(&c->mu);
	if (--c->refs[i] == 0)
		ft_drop(c, i);
	pthread_mutex_unlock(&c->mu);
}

/* In step: run h has ended (done or failed); what it did not read it
 * never will. */
static void
step_end(struct qr_ar_hctx *h)
{
	struct qr_ar_ctx *c = h->c;
	size_t i;

	if (h->left == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < c->n_ft; i++)
		if (h->left[i] > 0) {
			h->left[i] = 0;
			if (--c->refs[i] == 0)
				ft_drop(c, i);
		}
	pthread_mutex_unlock(&c->mu);
}

static void
strv_add(char ***v, size_t *n, const char *s)
{
	*v = xreallocarray(*v, *n + 1, sizeof **v);
	(*v)[(*n)++] = xstrdup(s != NULL ? s : "");
}

/* The message of the last error in d, then d cleared of it. */
static char *
take_error(struct qr_diag *d)
{
	char *s = xstrdup(d != NULL && d->msg[0] ? d->msg : "unknown error");

	if (d != NULL) {
		d->status = QR_OK;
		d->msg[0] = '\0';
	}
	return s;
}

/* ---- one sample ---- */

/* Free the sample held in sl (pending, the scheduler's, is left alone). */
static void
slot_clear(struct qr_ar_slot *sl)
{
	size_t i;

	for (i = 0; i < sl->n_ins; i++)
		qr_tensor_free(sl->ins[i]);
	for (i = 0; i < sl->n_fouts; i++)
		qr_tensor_free(sl->fouts[i]);
	free(sl->ins);
	free(sl->fouts);
	sl->ins = NULL;
	sl->fouts = NULL;
	sl->n_ins = sl->n_fouts = 0;
	sl->label = -1;
}

/* Run candidate q's cumulative (local 0) or local run on the sample in
 * slot s. The inputs are renamed to the candidate's graph inputs by
 * position. d is the task's own. *waited (in step) gets the seconds the
 * run waited for the float one. */
static enum qr_status
run_cand(struct qr_ar_ctx *c, struct qr_ar_cand *q, int local, size_t s,
	 struct qr_diag *d, double *waited)
{
	struct qr_ar_slot *sl = &c->slot[s];
	struct qr_exec *e = local ? q->el : q->e;
	struct qr_ar_hctx h = {0};
	enum qr_status st;
	size_t nfi, nqi, i, j;
	const char *const *fnames = qr_exec_inputs(c->fe, &nfi);
	const char *const *qnames = qr_exec_inputs(e, &nqi);
	struct qr_tensor *alias = xcalloc(sl->n_ins + 1, sizeof *alias);
	struct qr_tensor **ptr = xcalloc(sl->n_ins + 1, sizeof *ptr);

	h.c = c;
	h.q = q;
	h.local = local;
	h.s = s;
	if (c->step) {
		h.left = xcalloc(c->n_ft + 1, sizeof *h.left);
		memcpy(h.left, q->uses, c->n_ft * sizeof *h.left);
	}
	for (i = 0; i < sl->n_ins; i++) {
		alias[i] = *sl->ins[i];
		alias[i].owned = 0;
		for (j = 0; j < nfi && j < nqi; j++)
			if (sl->ins[i]->name &&
			    strcmp(sl->ins[i]->name, fnames[j]) == 0)
				alias[i].name = qnames[j];
		ptr[i] = &alias[i];
	}
	for (i = 0; i < q->n_pre; i++) {
		struct qr_ar_pair *p = &q->pairs[q->pre[i]];

		for (j = 0; j < sl->n_ins; j++)
			if (strcmp(alias[j].name, p->am->q) == 0)
				qr_ar_compare(&h, p, &alias[j]);
		qr_ar_step_read(&h, p->ft);
	}
	st = qr_exec_run(e, ptr, sl->n_ins, qr_ar_cand_hook, &h, d);
	step_end(&h);
	if (st == QR_OK && !local && !qr_ar_step_wait(&h, QR_AR_NONE))
		qr_ar_compare_outputs(q, sl);
	free(h.left);
	free(h.scratch);
	*waited = h.waited;
	free(ptr);
	free(alias);
	return st;
}

/* Read the next sample into slot s and take the float tensors that are
 * graph inputs (float thread only). *eof is set when the feed has no
 * more samples; *name gets the sample's name (the feed's, good until its
 * next call). */
static enum qr_status
sample_read(struct qr_ar_ctx *c, size_t s, int *eof, const char **name)
{
	struct qr_ar_slot *sl = &c->slot[s];
	struct qr_tensor *const *ins = NULL;
	const char *const *fnames;
	size_t n_ins = 0, nfi, i, j;
	int label = -1;
	enum qr_status st;

	*eof = 0;
	*name = NULL;
	st = c->o->next(c->o->user, &ins, &n_ins, &label, name, c->d);
	if (st != QR_OK)
		return st;
	if (n_ins == 0) {
		*eof = 1;
		return QR_OK;
	}
	slot_clear(sl);
	fnames = qr_exec_inputs(c->fe, &nfi);
	sl->ins = xcalloc(n_ins + 1, sizeof *sl->ins);
	sl->n_ins = n_ins;
	sl->label = label;
	for (i = 0; i < n_ins; i++) {
		sl->ins[i] = qr_tensor_copy(ins[i]);
		/* the feed's names may not outlive its next call */
		for (j = 0; j < nfi; j++)
			if (ins[i]->name && strcmp(ins[i]->name, fnames[j]) == 0)
				sl->ins[i]->name = fnames[j];
	}
	for (i = 0; i < c->n_ft; i++)
		c->ft[i].have[s] = 0;
	for (i = 0; i < n_ins; i++) {
		size_t fi = ins[i]->name ? qr_ar_ft_find(c, ins[i]->name)
					  : QR_AR_NONE;

		if (fi != QR_AR_NONE && c->ft[fi].node < 0 &&
		    qr_ar_ft_take(c, &c->ft[fi], s, sl->ins[i]))
			qr_ar_ft_ready(c, s, fi);
	}
	return QR_OK;
}

/* The float run failed on the sample in slot s, named name, with a
 * shape error: its statistics go, the caller's diag gets a warning, and
 * a->data.skipped the sample and the reason (float thread only). */
static void
sample_skip(struct qr_ar_ctx *c, size_t s, const char *name)
{
	struct qr_act_data *dt = &c->a->data;
	struct qr_act_skip *k;

	ft_untake(c, s);
	dt->skipped = xreallocarray(dt->skipped, dt->n_skipped + 1,
				    sizeof *dt->skipped);
	k = &dt->skipped[dt->n_skipped++];
	k->sample = xstrdup(name != NULL ? name : "");
	k->why = take_error(c->d);
	qr_warnf(c->d, "sample '%s' skipped: the float model cannot take "
		 "it: %s", k->sample, k->why);
}

/* Run the float model on the sample read into slot s and keep its
 * outputs there (float thread only, on the caller's diag). *skipped is
 * set when the float model cannot take the sample (sample_skip); the
 * status is then QR_OK. */
static enum qr_status
float_run(struct qr_ar_ctx *c, size_t s, const char *name, int *skipped)
{
	struct qr_analysis *a = c->a;
	struct qr_ar_slot *sl = &c->slot[s];
	struct qr_tensor *const *fo;
	struct qr_ar_hctx h = {0};
	enum qr_status st;
	size_t nf, i;

	h.c = c;
	h.s = s;
	*skipped = 0;
	st = qr_exec_run(c->fe, sl->ins, sl->n_ins, qr_ar_float_hook, &h, c->d);
	if (st == QR_ESHAPE) {
		sample_skip(c, s, name);
		*skipped = 1;
		return QR_OK;
	}
	if (st != QR_OK) {
		if (st == QR_EUSAGE)
			return st;
		a->data.why = take_error(c->d);
		return QR_EPARTIAL;
	}
	fo = qr_exec_outputs(c->fe, &nf);
	sl->fouts = xcalloc(nf + 1, sizeof *sl->fouts);
	sl->n_fouts = nf;
	for (i = 0; i < nf; i++)
		sl->fouts[i] = fo[i] ? qr_tensor_copy(fo[i]) : NULL;
	strv_add(&a->data.sample_names, &a->data.samples, name);
	a->data.labels = xreallocarray(a->data.labels, a->data.samples,
				       sizeof *a->data.labels);
	a->data.labels[a->data.samples - 1] = sl->label;
	return QR_OK;
}

/* The float task of the pipeline: the next sample into slot s, through
 * the float model (*skipped: it could not take it). */
static enum qr_status
run_float(struct qr_ar_ctx *c, size_t s, int *eof, int *skipped)
{
	const char *name;
	enum qr_status st = sample_read(c, s, eof, &name);

	*skipped = 0;
	if (st != QR_OK || *eof)
		return st;
	return float_run(c, s, name, skipped);
}

/* A unit of work for a lane. */
struct task {
	int kind;                /* 0 none, 1 float, 2 candidate */
	struct qr_ar_cand *q;
	int local;
	size_t sample;
};

/* The next runnable task, under c->mu; kind 0 when none is. The float
 * task of the next sample goes first (it fills the pipeline), then the
 * candidates' runs of the oldest sample. Each accumulator is written by
 * one kind of task, in sample order, so results do not depend on the
 * schedule. */
static struct task
pick(struct qr_ar_ctx *c)
{
	struct task t = {0};
	size_t k;
	int r;

	if (c->stop != QR_OK)
		return t;
	if (!c->f_busy && !c->eof && c->next_f == c->f_done &&
	    c->slot[c->next_f % QR_AR_SLOTS].pending == 0) {
		t.kind = 1;
		t.sample = c->next_f;
		return t;
	}
	for (k = 0; k < c->n_c; k++) {
		struct qr_ar_cand *q = &c->c[k];

		for (r = 0; r < 2; r++) {
			if (!q->ran || q->busy[r] || q->next[r] >= c->f_done)
				continue;
			t.kind = 2;
			t.q = q;
			t.local = r;
			t.sample = q->next[r];
			return t;
		}
	}
	return t;
}

/* Nothing left to run or wait for. */
static int
finished(const struct qr_ar_ctx *c)
{
	size_t k;

	if (c->f_busy)
		return 0;
	for (k = 0; k < c->n_c; k++)
		if (c->c[k].busy[0] || c->c[k].busy[1])
			return 0;
	if (c->stop != QR_OK)
		return 1;
	if (!c->eof)
		return 0;
	for (k = 0; k < c->n_c; k++)
		if (c->c[k].ran && (c->c[k].next[0] < c->f_done ||
				    c->c[k].next[1] < c->f_done))
			return 0;
	return 1;
}

/* Mark a candidate task done (under mu): its sample's slot is released
 * once every candidate task of the sample has run. */
static void
task_done(struct qr_ar_ctx *c, struct task *t)
{
	struct qr_ar_slot *sl = &c->slot[t->sample % QR_AR_SLOTS];

	t->q->busy[t->local] = 0;
	t->q->next[t->local]++;
	sl->pending--;
}

/* A candidate that failed leaves its remaining tasks undone: their
 * slots' counts go down now. */
static void
cand_drop(struct qr_ar_ctx *c, struct qr_ar_cand *q)
{
	int r;
	size_t s;

	q->ran = 0;
	c->partial = QR_EPARTIAL;
	for (r = 0; r < 2; r++)
		for (s = q->next[r] + (q->busy[r] ? 1 : 0); s < c->f_done;
		     s++)
			c->slot[s % QR_AR_SLOTS].pending--;
	q->next[0] = q->next[1] = (size_t)-1 / 2;
}

static void
progress(struct qr_ar_ctx *c)
{
	size_t total = c->o->samples > c->skipped
			       ? c->o->samples - c->skipped : 0;

	if (total < c->f_done)
		total = c->f_done;
	if (c->o->progress)
		c->o->progress(++c->done, total * c->running,
			       c->o->progress_user);
}

/* A lane: take tasks until none is left. Lanes run at once, each with
 * its own executors' runs; the float task alone touches the caller's
 * diag, a candidate task reports through its own. */
static void *
lane(void *arg)
{
	struct qr_ar_ctx *c = arg;
	struct qr_diag qd;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		struct task t = pick(c);
		enum qr_status st;
		double t0, waited;
		size_t k;
		int eof, skipped;

		if (t.kind == 0) {
			if (finished(c))
				break;
			pthread_cond_wait(&c->cv, &c->mu);
			continue;
		}
		if (t.kind == 1) {
			c->f_busy = 1;
			pthread_mutex_unlock(&c->mu);
			st = run_float(c, t.sample % QR_AR_SLOTS, &eof,
				       &skipped);
			pthread_mutex_lock(&c->mu);
			c->f_busy = 0;
			if (st != QR_OK) {
				c->stop = st;
			} else if (eof) {
				c->eof = 1;
			} else if (skipped) {
				/* the next sample takes its place */
				c->skipped++;
			} else {
				c->running = 1;
				for (k = 0; k < c->n_c; k++) {
					c->running += c->c[k].ran;
					if (c->c[k].ran)
						c->slot[t.sample % QR_AR_SLOTS]
							.pending += 2;
				}
				c->next_f++;
				c->f_done++;
				progress(c);
			}
			pthread_cond_broadcast(&c->cv);
			continue;
		}
		t.q->busy[t.local] = 1;
		pthread_mutex_unlock(&c->mu);
		memset(&qd, 0, sizeof qd);
		t0 = qr_now();
		st = run_cand(c, t.q, t.local, t.sample % QR_AR_SLOTS, &qd,
			      &waited);
		pthread_mutex_lock(&c->mu);
		t.q->seconds += qr_now() - t0;
		if (st != QR_OK) {
			if (t.q->ran) {
				t.q->why = take_error(&qd);
				task_done(c, &t);
				cand_drop(c, t.q);
			} else {
				task_done(c, &t);
			}
		} else {
			task_done(c, &t);
			/* one progress step per candidate and sample */
			if (t.q->ran && t.q->next[0] == t.sample + 1 &&
			    t.q->next[1] == t.sample + 1)
				progress(c);
		}
		qr_diag_clear(&qd);
		pthread_cond_broadcast(&c->cv);
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* A candidate run of a sample in step, on a thread of its own. */
struct step_task {
	struct qr_ar_ctx *c;
	struct qr_ar_cand *q;
	int local;
	int thread;              /* runs on th (else on the caller's) */
	pthread_t th;
	enum qr_status st;
	struct qr_diag d;
	double seconds;
};

static void *
step_thread(void *arg)
{
	struct step_task *t = arg;
	struct qr_ar_ctx *c = t->c;
	double t0, waited;

	pthread_mutex_lock(&c->mu);
	lane_take(c);
	pthread_mutex_unlock(&c->mu);
	t0 = qr_now();
	t->st = run_cand(c, t->q, t->local, 0, &t->d, &waited);
	t->seconds = qr_now() - t0 - waited;
	pthread_mutex_lock(&c->mu);
	if (t->thread)
		c->active--;
	lane_give(c);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/*
 * The next sample in step (slot 0): every candidate run starts on its
 * own thread, the float model runs on this one, and each float tensor
 * lives from the float hook that makes it to the last candidate hook
 * that reads it. A run whose thread cannot start runs after the float
 * one (its tensors are then kept whole). Bookkeeping as the pipeline's
 * lanes do it. When the float model cannot take the sample (*skipped),
 * every candidate's pairs get back the sums they had before it, and the
 * candidate runs' own failures on it do not count. Returns the float
 * side's status.
 */
static enum qr_status
step_sample(struct qr_ar_ctx *c, int *eof, int *skipped)
{
	struct step_task *t;
	const char *name;
	enum qr_status st;
	size_t n = 0, i, k;
	int r;

	c->step = 1;
	c->f_end = c->f_fail = 0;
	*skipped = 0;
	c->held = c->sample_bytes = 0;
	c->waiting = c->active = 0;
	t = xcalloc(2 * c->n_c + 1, sizeof *t);
	memset(c->refs, 0, c->n_ft * sizeof *c->refs);
	for (k = 0; k < c->n_c; k++) {
		if (!c->c[k].ran)
			continue;
		for (r = 0; r < 2; r++) {
			t[n].c = c;
			t[n].q = &c->c[k];
			t[n].local = r;
			n++;
		}
		for (i = 0; i < c->n_ft; i++)
			c->refs[i] += c->c[k].uses[i] ? 2 : 0;
	}
	st = sample_read(c, 0, eof, &name);
	if (st == QR_OK && !*eof) {
		for (k = 0; k < c->n_c; k++) {
			struct qr_ar_cand *q = &c->c[k];

			if (!q->ran)
				continue;
			if (q->undo == NULL)
				q->undo = xcalloc(q->am.n + 1, sizeof *q->undo);
			memcpy(q->undo, q->pairs, q->am.n * sizeof *q->undo);
		}
		for (i = 0; i < n; i++) {
			pthread_mutex_lock(&c->mu);
			c->active++;
			pthread_mutex_unlock(&c->mu);
			t[i].thread = pthread_create(&t[i].th, NULL,
						     step_thread, &t[i]) == 0;
			if (!t[i].thread) {
				pthread_mutex_lock(&c->mu);
				c->active--;
				pthread_mutex_unlock(&c->mu);
			}
		}
		pthread_mutex_lock(&c->mu);
		lane_take(c);
		pthread_mutex_unlock(&c->mu);
		st = float_run(c, 0, name, skipped);
		pthread_mutex_lock(&c->mu);
		c->f_end = 1;
		if (st != QR_OK)
			c->stop = st;
		else if (*skipped)
			c->f_fail = 1;
		lane_give(c);
		pthread_mutex_unlock(&c->mu);
		for (i = 0; i < n; i++) {
			if (t[i].thread)
				pthread_join(t[i].th, NULL);
			else
				step_thread(&t[i]);
		}
	}
	if (st == QR_OK && !*eof && *skipped) {
		for (k = 0; k < c->n_c; k++)
			if (c->c[k].ran)
				memcpy(c->c[k].pairs, c->c[k].undo,
				       c->c[k].am.n * sizeof *c->c[k].undo);
		pthread_mutex_lock(&c->mu);
		c->skipped++;
		pthread_mutex_unlock(&c->mu);
	} else if (st == QR_OK && !*eof) {
		c->running = 1;
		for (k = 0; k < c->n_c; k++)
			c->running += c->c[k].ran;
		c->next_f++;
		c->f_done++;
		progress(c);
		for (i = 0; i < n; i++) {
			struct qr_ar_cand *q = t[i].q;

			q->seconds += t[i].seconds;
			if (t[i].st != QR_OK && q->ran) {
				q->why = take_error(&t[i].d);
				q->ran = 0;
				c->partial = QR_EPARTIAL;
			}
			if (q->ran)
				q->next[t[i].local] = c->f_done;
			else
				q->next[0] = q->next[1] = (size_t)-1 / 2;
			/* one progress step per candidate and sample */
			if (t[i].local && q->ran)
				progress(c);
		}
	}
	for (i = 0; i < n; i++)
		qr_diag_clear(&t[i].d);
	for (i = 0; i < c->n_ft; i++) {
		step_unmap(c->ft[i].buf[0], c->ft[i].cap[0]);
		c->ft[i].buf[0] = NULL;
		c->ft[i].cap[0] = 0;
	}
	c->held = 0;
	c->step = 0;
	free(t);
	return st;
}

/*
 * See analysis.h. The float model that cannot be prepared (unsupported
 * op) or fails on a sample inside the graph leaves data.why and returns
 * QR_EPARTIAL; so does a candidate, which is then left out (act_runs[k]
 * .why) while the others go on. A sample whose shapes the float model
 * cannot take (QR_ESHAPE) is skipped (see the top of this file); when
 * every sample is, QR_ESHAPE names the first. The feed's errors and
 * inputs that do not fit the float model (QR_EUSAGE) are returned as
 * they are.
 */
enum qr_status
qr_analysis_run_data(struct qr_analysis *a, const struct qr_model *fmodel,
		     const struct qr_model *const *quant, size_t n_quant,
		     const struct qr_act_opts *o, struct qr_diag *d)
{
	struct qr_ar_ctx c;
	struct qr_exec_opts eo = {0}, fast;
	enum qr_status st = QR_OK;
	size_t i, k, s, pipe_bytes = o->pipe_bytes ? o->pipe_bytes
							 : QR_ACT_PIPE_BYTES;
	int lanes, helper = 0, eof = 0, skipped = 0;
	pthread_t th;
	double t0 = qr_now();

	memset(&c, 0, sizeof c);
	c.a = a;
	c.o = o;
	c.fm = fmodel;
	c.d = d;
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	a->data.source = xstrdup(o->source ? o->source : "random");
	a->data.preprocessing = o->preprocessing ? xstrdup(o->preprocessing)
						 : NULL;
	a->data.cos_threshold = o->cos_threshold;
	a->data.sqnr_threshold = o->sqnr_threshold;
	for (i = 0; o->classes != NULL && i < o->n_classes; i++)
		strv_add(&a->data.classes, &a->data.n_classes, o->classes[i]);
	a->act_runs = xcalloc(n_quant + 1, sizeof *a->act_runs);
	for (k = 0; k < n_quant; k++) {
		a->act_runs[k].path = xstrdup(quant[k]->path);
		a->act_runs[k].born = a->act_runs[k].worst_local = -1;
		a->act_runs[k].born_drop_db = NAN;
	}
	/*
	 * o->n_threads threads in all. With two or more, two lanes run whole
	 * models at once (the float model of the next sample beside the
	 * candidates' runs of this one, or a candidate's cumulative run
	 * beside its local run), each op with half the threads: batch-1
	 * models split poorly inside an op, whole runs side by side do not.
	 */
	lanes = o->n_threads >= 2 ? 2 : 1;
	eo.n_threads = o->n_threads / lanes > 0 ? o->n_threads / lanes : 1;
	eo.trim_folds = 1; /* folded constants are never activations */
	eo.views = 1; /* nor are weights read quantized by their Conv,
		       * MatMul or Gemm */
	eo.fold_max = o->fold_max;
	/*
	 * A local run of its own may sum float convs in any order
	 * (Winograd): each node's error is measured from the float model's
	 * values afresh, so a tie that rounds the other way moves one
	 * element by one step and nothing downstream. The float run and the
	 * cumulative runs keep ONNX Runtime's order bit for bit: the float
	 * values are what every candidate is measured against (a QOperator
	 * candidate's local run quantizes them, so rounding there moves
	 * whole steps), and a cumulative run carries each tie its
	 * quantizers meet through every later layer.
	 */
	fast = eo;
	fast.any_order = !o->exact;

	if ((st = qr_graph_new(fmodel, &c.fg, d)) != QR_OK)
		goto out;
	if ((st = qr_exec_new(fmodel, &eo, &c.fe, d)) != QR_OK) {
		if (st != QR_EUNSUPPORTED)
			goto out;
		a->data.why = take_error(d);
		st = QR_EPARTIAL;
		goto out;
	}
	c.c = xcalloc(n_quant + 1, sizeof *c.c);
	c.n_c = n_quant;
	for (k = 0; k < n_quant; k++) {
		struct qr_ar_cand *q = &c.c[k];

		q->m = quant[k];
		if ((st = qr_graph_new(quant[k], &q->g, d)) != QR_OK)
			goto out;
		qr_am_match(c.fg, q->g, &q->am);
		if (qr_exec_new(quant[k], &eo, &q->e, d) != QR_OK) {
			q->why = take_error(d);
			c.partial = QR_EPARTIAL;
			continue;
		}
		/* the local run has its own executor: in step, and in the
		 * pipeline with two lanes, it runs beside the cumulative one */
		fast.share = q->e; /* the dequantized weights, once */
		if (qr_exec_new(quant[k], &fast, &q->el, d) != QR_OK) {
			q->why = take_error(d);
			c.partial = QR_EPARTIAL;
			continue;
		}
		q->ran = 1;
	}
	qr_ar_collect_ftens(&c);
	c.refs = xcalloc(c.n_ft + 1, sizeof *c.refs);
	for (k = 0; k < n_quant; k++)
		qr_ar_cand_setup(&c, &c.c[k]);
	qr_ol_setup(&c);
	qr_ws_setup(&c);

	/* the first sample in step; the others too if it was big */
	c.lanes_free = lanes;
	st = step_sample(&c, &eof, &skipped);
	while (st == QR_OK && !eof && (skipped || c.sample_bytes > pipe_bytes))
		st = step_sample(&c, &eof, &skipped);
	for (k = 0; k < n_quant; k++) { /* only step needs them */
		free(c.c[k].undo);
		c.c[k].undo = NULL;
	}
	if (st != QR_OK) {
		c.stop = st;
	} else if (eof) {
		c.eof = 1;
	} else {
		if (lanes > 1 && pthread_create(&th, NULL, lane, &c) == 0)
			helper = 1;
		lane(&c);
		if (helper)
			pthread_join(th, NULL);
	}
	st = c.stop;
	if (st != QR_OK)
		goto out;
	if (a->data.samples == 0 && a->data.n_skipped > 0) {
		st = qr_errorf(d, QR_ESHAPE, "every sample was skipped (%zu): "
			       "the float model cannot take them; the first, "
			       "'%s': %s", a->data.n_skipped,
			       a->data.skipped[0].sample,
			       a->data.skipped[0].why);
		goto out;
	}
	a->data.ran = 1;
	qr_ar_results(&c);
	st = a->data.n_skipped > 0 ? QR_EPARTIAL : c.partial;
out:
	if (d != NULL)
		for (i = o->warn_first; i < d->n_warnings; i++)
			strv_add(&a->data.warnings, &a->data.n_warnings,
				 d->warnings[i].msg);
	for (k = 0; k < c.n_c; k++) {
		if (st == QR_EPARTIAL && c.c[k].why != NULL &&
		    a->act_runs[k].why == NULL)
			a->act_runs[k].why = xstrdup(c.c[k].why);
		qr_ar_cand_free(&c.c[k]);
	}
	free(c.c);
	for (i = 0; i < c.n_ft; i++) {
		for (s = 0; s < QR_AR_SLOTS; s++)
			if (c.ft[i].heap[s])
				free(c.ft[i].buf[s]);
		free(c.ft[i].shape);
		qr_as_chan_free(&c.ft[i].chan);
		qr_as_chan_free(&c.ft[i].undo);
	}
	free(c.ft);
	qr_strmap_free(&c.ft_idx);
	qr_bulk_free(&c.bulk);
	free(c.refs);
	for (s = 0; s < QR_AR_SLOTS; s++)
		slot_clear(&c.slot[s]);
	qr_ar_map_free(&c.fmap);
	qr_exec_free(c.fe);
	qr_graph_free(c.fg);
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);
	a->data.seconds = qr_now() - t0;
	return st;
}
