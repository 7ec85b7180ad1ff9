/*
 * activations: the representative data through the float model and every
 * candidate, one sample at a time, compared tensor by tensor.
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

#define NONE ((size_t)-1)
#define BORN_CAP_DB 100.0        /* SQNR cap when looking for the drop */
#define RMSE_SCALE_BAD 0.7       /* TFLite debugger: suspect above */
#define SATURATION_BAD 0.01      /* fraction of values outside the range */
#define CANCEL_RATIO 1e-5        /* float RMS / inputs' RMS: a cancellation */

#define SLOTS 2                  /* samples in flight (double buffer) */
#define STEP_AHEAD ((size_t)16 << 20) /* float bytes kept ahead, in step */

/* A float tensor compared by some candidate. */
struct ftens {
	const char *name;        /* borrowed from the float model */
	long node;               /* producer node index, -1 for an input */
	long pos;                /* topological position, -1 for an input */
	float *buf[SLOTS];       /* values of the sample in each slot */
	size_t cap[SLOTS];       /* floats allocated in buf */
	size_t n[SLOTS];         /* elements of that sample */
	int ndim[SLOTS];
	int64_t dims[SLOTS][QR_TENSOR_MAX_DIMS];
	int have[SLOTS];         /* 1 once seen in that sample */
	int heap[SLOTS];         /* buf is from the heap (grow), not
				  * carved from ctx.bulk */
	int seen;                /* 1 once seen in any sample */
	char *shape;             /* of the first sample */
	struct qr_as_chan chan;  /* per-channel statistics */
	uint64_t n_values;
	size_t out;              /* index in a->act_tensors */
};

/* A matched pair of one candidate, with its running sums. The cumulative
 * run's task alone writes cum, the histograms, saturation, qdtype and
 * shape_bad; the local run's task alone writes loc. */
struct cpair {
	size_t ft;               /* index into the ftens array */
	const struct qr_am_pair *am; /* borrowed from cand.am */
	struct qr_as_qparams qp; /* of the compared tensor */
	struct qr_as_qparams *also_qp; /* per am->also */
	int qdtype;              /* dtype seen at run time */
	struct qr_cmp_acc cum, loc;
	int hist_set;
	double hlo, hhi;
	uint64_t hf[QR_ACT_HIST_BINS], hq[QR_ACT_HIST_BINS];
	uint64_t uf, of, uq, oq;
	uint64_t sat, sat_n;     /* saturated float values, values seen */
	int shape_bad;
};

/* What the hook does at one output of one node. */
struct hook_ent {
	size_t slot;             /* output index of the node */
	size_t pair;             /* index into cand.pairs (or ftens) */
	long also;               /* -1: the compared tensor; k: also[k] */
};

/* Entries per node, CSR style. */
struct hook_map {
	size_t *start;           /* n_nodes + 1 offsets into ent */
	struct hook_ent *ent;
	size_t n_ent;
};

struct outacc {
	size_t samples, cap;
	double *cos, *sqnr;
	struct qr_cmp_acc total;
	int classifier;
	size_t rows, agree, labeled, fcorrect, qcorrect;
	struct qr_as_qparams qp; /* for an integer output */
};

struct cand {
	const struct qr_model *m;
	struct qr_graph *g;
	struct qr_exec *e;       /* the cumulative run's executor */
	struct qr_exec *el;      /* the local run's: its own when two lanes
				  * run them at once, else e */
	struct qr_am am;
	struct cpair *pairs;     /* am.n */
	struct hook_map map;
	size_t *pre;             /* pairs on graph inputs (compared before) */
	size_t n_pre;
	struct outacc *outs;
	size_t n_outs;
	int ran;
	char *why;
	double seconds;
	size_t next[2];          /* next sample of the cumulative / local
				  * task */
	int busy[2];             /* that task is running */
	unsigned *uses;          /* per ftens: reads by one run (hook
				  * entries and compared inputs) */
};

/* One sample in flight: the inputs (copied, the feed reuses its own)
 * and the float model's outputs, kept until every candidate task of the
 * sample has read them. */
struct slot {
	struct qr_tensor **ins;  /* n_ins owned copies */
	size_t n_ins;
	struct qr_tensor **fouts; /* the float outputs (owned copies) */
	size_t n_fouts;
	int label;
	size_t pending;          /* candidate tasks of this sample left */
};

struct ctx {
	struct qr_analysis *a;
	const struct qr_act_opts *o;
	const struct qr_model *fm;
	struct qr_graph *fg;
	struct qr_exec *fe;
	struct ftens *ft;
	size_t n_ft;
	struct hook_map fmap;    /* float node -> ftens */
	struct cand *c;
	size_t n_c;
	struct slot slot[SLOTS];
	struct qr_bulk bulk;     /* the slots' float tensors in the
				  * pipeline (float task only) */
	/* scheduling, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t next_f;           /* next sample the float task reads */
	size_t f_done;           /* samples whose float task finished */
	int f_busy;              /* a float task runs */
	int eof;                 /* the feed is exhausted at next_f */
	enum qr_status stop;     /* QR_OK, or why every lane stops */
	enum qr_status partial;  /* QR_EPARTIAL once a candidate failed */
	size_t done, running;    /* progress: runs done, models running */
	struct qr_diag *d;       /* the caller's; the float task's only */
	/* in step (slot 0 only), under mu */
	int step;                /* this sample goes in step */
	unsigned *refs;          /* per ftens: runs yet to read it */
	size_t held;             /* bytes of float tensors held */
	size_t sample_bytes;     /* bytes of this sample's float tensors */
	int f_end;               /* the float run of the sample has ended */
	int waiting;             /* runs waiting for a float tensor */
	int active;              /* candidate threads still running */
	int lanes_free;          /* threads that may compute now */
};

/* What one run's hook works with (one per task: lanes run at once). */
struct hctx {
	struct ctx *c;
	struct cand *q;          /* NULL for the float run */
	int local;               /* the local run */
	size_t s;                /* slot */
	float *scratch;          /* quant values of one tensor */
	size_t scratch_cap;
	unsigned *left;          /* in step: per ftens, reads left in this
				  * run; NULL in the pipeline */
	double waited;           /* in step: seconds spent waiting for the
				  * float run */
};

static float *
grow(float **buf, size_t *cap, size_t n)
{
	if (n > *cap) {
		free(*buf);
		*cap = n + n / 4 + 16;
		*buf = xmalloc(*cap * sizeof **buf);
	}
	return *buf;
}

/* Build a CSR map from (node, entry) lists. */
static void
map_build(struct hook_map *m, size_t n_nodes, const size_t *node,
	  const struct hook_ent *ent, size_t n)
{
	size_t i, *fill;

	m->start = xcalloc(n_nodes + 2, sizeof *m->start);
	m->ent = xcalloc(n + 1, sizeof *m->ent);
	m->n_ent = n;
	for (i = 0; i < n; i++)
		m->start[node[i] + 1]++;
	for (i = 0; i < n_nodes; i++)
		m->start[i + 1] += m->start[i];
	fill = xcalloc(n_nodes + 1, sizeof *fill);
	for (i = 0; i < n; i++)
		m->ent[m->start[node[i]] + fill[node[i]]++] = ent[i];
	free(fill);
}

static void
map_free(struct hook_map *m)
{
	free(m->start);
	free(m->ent);
}

static size_t
ft_find(const struct ctx *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n_ft; i++)
		if (strcmp(c->ft[i].name, name) == 0)
			return i;
	return NONE;
}

/* The output slot of name in node n. */
static size_t
out_slot(const struct qr_node *n, const char *name)
{
	size_t i;

	for (i = 0; i < n->n_out; i++)
		if (strcmp(n->out[i], name) == 0)
			return i;
	return NONE;
}

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
	void *p = bytes ? mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
			: MAP_FAILED;

	if (p == MAP_FAILED)
		qr_fatal("out of memory mapping %zu floats", n);
	*cap = bytes / sizeof(float);
	return p;
}

static void
step_unmap(float *p, size_t cap)
{
	if (p != NULL)
		munmap(p, cap * sizeof *p);
}

/*
 * Copy t into float tensor f's buffer of slot s and add it to the
 * statistics (float tasks only, in sample order). In step each buffer is
 * new pages (step_map). In the pipeline a slot's first buffer is carved
 * from c->bulk and kept for the slot's later samples; one that a later
 * sample outgrows (shapes that vary) is replaced from the heap, freed
 * when outgrown in turn, so carved buffers never pile up. Returns 1 when
 * taken; the caller then shows it to the candidate runs (ft_ready).
 */
static int
ft_take(struct ctx *c, struct ftens *f, size_t s, const struct qr_tensor *t)
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
		grow(&f->buf[s], &f->cap[s], t->n_elem);
	}
	if (!qr_as_to_float(t, NULL, f->buf[s]))
		return 0;
	f->n[s] = t->n_elem;
	f->ndim[s] = t->ndim;
	memcpy(f->dims[s], t->dims, sizeof f->dims[s]);
	if (!f->seen) {
		f->shape = qr_an_dims_str(t->dims, t->ndim);
		f->seen = 1;
	}
	qr_as_chan_add(&f->chan, f->buf[s], t->dims, t->ndim);
	f->n_values += t->n_elem;
	return 1;
}

/* ---- in step ---- */

/* Take a lane (under mu). */
static void
lane_take(struct ctx *c)
{
	while (c->lanes_free == 0)
		pthread_cond_wait(&c->cv, &c->mu);
	c->lanes_free--;
}

/* Give the lane back (under mu). */
static void
lane_give(struct ctx *c)
{
	c->lanes_free++;
	pthread_cond_broadcast(&c->cv);
}

/* Free float tensor i of the sample once shown and read by every run
 * (under mu). */
static void
ft_drop(struct ctx *c, size_t i)
{
	struct ftens *f = &c->ft[i];

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
static void
ft_ready(struct ctx *c, size_t s, size_t i)
{
	struct ftens *f = &c->ft[i];

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

/* In step: wait until float tensor i of the sample is shown (i == NONE:
 * until the float run ends) or the float run has ended. Returns nonzero
 * when the sample is given up (the float run failed). */
static int
step_wait(struct hctx *h, size_t i)
{
	struct ctx *c = h->c;
	int r;

	if (h->left == NULL)
		return 0;
	pthread_mutex_lock(&c->mu);
	if ((i == NONE || !c->ft[i].have[0]) && !c->f_end) {
		double t0 = qr_now();

		/* counted as waiting for the float run only until it is
		 * there: a run that then waits for a lane does not hold the
		 * float run back */
		c->waiting++;
		lane_give(c);
		while ((i == NONE || !c->ft[i].have[0]) && !c->f_end)
			pthread_cond_wait(&c->cv, &c->mu);
		c->waiting--;
		lane_take(c);
		h->waited += qr_now() - t0;
	}
	r = c->stop != QR_OK;
	pthread_mutex_unlock(&c->mu);
	return r;
}

/* In step: run h has read float tensor i once more; the last read of
 * the last run frees it. */
static void
step_read(struct hctx *h, size_t i)
{
	struct ctx *c = h->c;

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
step_end(struct hctx *h)
{
	struct ctx *c = h->c;
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

static int
float_hook(const struct qr_node *node, struct qr_tensor *const *outs,
	   size_t n_outs, void *user)
{
	struct hctx *h = user;
	struct ctx *c = h->c;
	size_t ni = (size_t)(node - c->fm->graph.nodes), k;

	for (k = c->fmap.start[ni]; k < c->fmap.start[ni + 1]; k++) {
		const struct hook_ent *e = &c->fmap.ent[k];

		if (e->slot < n_outs && outs[e->slot] != NULL &&
		    ft_take(c, &c->ft[e->pair], h->s, outs[e->slot]))
			ft_ready(c, h->s, e->pair);
	}
	return 0;
}

/* Whether a float tensor of dims fd[fn] and t hold their elements in
 * the same layout: the same dims once the 1s are left out ([1,64] and
 * [64] do; [4,49,96] and [4,7,7,96] do not, though their counts agree:
 * compared element by element they would pair unrelated values). */
static int
same_layout(const int64_t *fd, int fn, const struct qr_tensor *t)
{
	int i = 0, j = 0;

	for (;;) {
		while (i < fn && fd[i] == 1)
			i++;
		while (j < t->ndim && t->dims[j] == 1)
			j++;
		if (i == fn || j == t->ndim)
			return i == fn && j == t->ndim;
		if (fd[i++] != t->dims[j++])
			return 0;
	}
}

/* Compare quant tensor t with its float counterpart: the cumulative run
 * feeds cum, the histograms and saturation; the local run loc only. */
static void
compare(struct hctx *h, struct cpair *p, struct qr_tensor *t)
{
	struct ftens *f = &h->c->ft[p->ft];
	const float *x = f->buf[h->s];
	size_t n = f->n[h->s];
	float *y;

	if (!f->have[h->s])
		return;
	if (t->n_elem != n || !same_layout(f->dims[h->s], f->ndim[h->s], t)) {
		if (!h->local)
			p->shape_bad = 1;
		return;
	}
	if (h->local) {
		if (t->dtype == QR_DT_FLOAT) {
			qr_cmp_add(&p->loc, x, t->data, n);
			return;
		}
		y = grow(&h->scratch, &h->scratch_cap, n);
		if (qr_as_to_float(t, p->qp.n ? &p->qp : NULL, y))
			qr_cmp_add(&p->loc, x, y, n);
		return;
	}
	p->qdtype = t->dtype;
	if (t->dtype == QR_DT_FLOAT) {
		y = t->data;
	} else {
		y = grow(&h->scratch, &h->scratch_cap, n);
		if (!qr_as_to_float(t, p->qp.n ? &p->qp : NULL, y))
			return;
	}
	qr_cmp_add(&p->cum, x, y, n);
	if (!p->hist_set) {
		qr_as_hist_range(x, y, n, &p->hlo, &p->hhi);
		p->hist_set = 1;
	}
	qr_as_hist_add(p->hlo, p->hhi, p->hf, QR_ACT_HIST_BINS, &p->uf,
		       &p->of, x, n);
	qr_as_hist_add(p->hlo, p->hhi, p->hq, QR_ACT_HIST_BINS, &p->uq,
		       &p->oq, y, n);
	if (p->qp.n) {
		p->sat += qr_as_saturated(&p->qp, x, n, f->dims[h->s],
					  f->ndim[h->s]);
		p->sat_n += n;
	}
}

/* One hook entry: compare, and in the local run put the float value in
 * the candidate's tensor. */
static void
hook_one(struct hctx *h, const struct hook_ent *e,
	 struct qr_tensor *const *outs, size_t n_outs)
{
	struct cpair *p = &h->q->pairs[e->pair];
	struct ftens *f = &h->c->ft[p->ft];
	struct qr_tensor *t;

	if (e->slot >= n_outs || (t = outs[e->slot]) == NULL)
		return;
	if (e->also < 0)
		compare(h, p, t);
	if (!h->local || !f->have[h->s] || t->n_elem != f->n[h->s] ||
	    !same_layout(f->dims[h->s], f->ndim[h->s], t))
		return;
	if (e->also < 0)
		qr_as_from_float(t, p->qp.n ? &p->qp : NULL, f->buf[h->s]);
	else
		qr_as_from_float(t, p->also_qp[e->also].n
				 ? &p->also_qp[e->also] : NULL,
				 f->buf[h->s]);
}

static int
cand_hook(const struct qr_node *node, struct qr_tensor *const *outs,
	  size_t n_outs, void *user)
{
	struct hctx *h = user;
	struct cand *q = h->q;
	size_t ni = (size_t)(node - q->m->graph.nodes), k;

	for (k = q->map.start[ni]; k < q->map.start[ni + 1]; k++) {
		const struct hook_ent *e = &q->map.ent[k];
		size_t fi = q->pairs[e->pair].ft;

		if (step_wait(h, fi))
			return QR_EPARTIAL;
		hook_one(h, e, outs, n_outs);
		step_read(h, fi);
	}
	return 0;
}

/* ---- setup ---- */

/* The float tensors of every candidate's pairs, in topological order. */
static void
collect_ftens(struct ctx *c)
{
	size_t k, i, j;

	for (k = 0; k < c->n_c; k++) {
		for (i = 0; i < c->c[k].am.n; i++) {
			const char *nm = c->c[k].am.pairs[i].f;
			struct ftens *f;

			if (ft_find(c, nm) != NONE)
				continue;
			c->ft = xreallocarray(c->ft, c->n_ft + 1, sizeof *c->ft);
			f = &c->ft[c->n_ft++];
			memset(f, 0, sizeof *f);
			f->name = nm;
			f->node = qr_graph_producer(c->fg, nm);
			f->pos = c->c[k].am.pairs[i].fpos;
		}
	}
	/* insertion sort by position, names breaking ties */
	for (i = 1; i < c->n_ft; i++)
		for (j = i; j > 0 && (c->ft[j - 1].pos > c->ft[j].pos ||
				      (c->ft[j - 1].pos == c->ft[j].pos &&
				       strcmp(c->ft[j - 1].name,
					      c->ft[j].name) > 0)); j--) {
			struct ftens x = c->ft[j];

			c->ft[j] = c->ft[j - 1];
			c->ft[j - 1] = x;
		}
	{
		size_t *node = xcalloc(c->n_ft + 1, sizeof *node), n = 0;
		struct hook_ent *ent = xcalloc(c->n_ft + 1, sizeof *ent);

		for (i = 0; i < c->n_ft; i++) {
			const struct qr_node *fn;

			if (c->ft[i].node < 0)
				continue;
			fn = qr_graph_node(c->fg, (size_t)c->ft[i].node);
			node[n] = (size_t)c->ft[i].node;
			ent[n].slot = out_slot(fn, c->ft[i].name);
			ent[n].pair = i;
			ent[n].also = -1;
			n++;
		}
		map_build(&c->fmap, qr_graph_n_nodes(c->fg), node, ent, n);
		free(node);
		free(ent);
	}
}

/* Pairs, hook map and output accumulators of candidate q. */
static void
cand_setup(struct ctx *c, struct cand *q)
{
	size_t i, k, n = 0, cap = 16, no;
	size_t *node = xcalloc(cap, sizeof *node);
	struct hook_ent *ent = xcalloc(cap, sizeof *ent);

	q->pairs = xcalloc(q->am.n + 1, sizeof *q->pairs);
	q->pre = xcalloc(q->am.n + 1, sizeof *q->pre);
	for (i = 0; i < q->am.n; i++) {
		const struct qr_am_pair *ap = &q->am.pairs[i];
		struct cpair *p = &q->pairs[i];
		long pi;

		p->ft = ft_find(c, ap->f);
		p->am = ap;
		qr_am_qparams(q->g, ap->q, &p->qp);
		p->also_qp = xcalloc(ap->n_also + 1, sizeof *p->also_qp);
		for (k = 0; k <= ap->n_also; k++) {
			const char *nm = k == 0 ? ap->q : ap->also[k - 1];
			const struct qr_node *qn;

			if (k > 0)
				qr_am_qparams(q->g, nm, &p->also_qp[k - 1]);
			pi = qr_graph_producer(q->g, nm);
			if (pi < 0) {
				if (k == 0)
					q->pre[q->n_pre++] = i;
				continue;
			}
			qn = qr_graph_node(q->g, (size_t)pi);
			if (n == cap) {
				cap *= 2;
				node = xreallocarray(node, cap, sizeof *node);
				ent = xreallocarray(ent, cap, sizeof *ent);
			}
			node[n] = (size_t)pi;
			ent[n].slot = out_slot(qn, nm);
			ent[n].pair = i;
			ent[n].also = (long)k - 1;
			n++;
		}
	}
	map_build(&q->map, qr_graph_n_nodes(q->g), node, ent, n);
	q->uses = xcalloc(c->n_ft + 1, sizeof *q->uses);
	for (i = 0; i < n; i++)
		q->uses[q->pairs[ent[i].pair].ft]++;
	for (i = 0; i < q->n_pre; i++)
		q->uses[q->pairs[q->pre[i]].ft]++;
	free(node);
	free(ent);
	no = c->fm->graph.n_output < q->m->graph.n_output
		     ? c->fm->graph.n_output : q->m->graph.n_output;
	q->outs = xcalloc(no + 1, sizeof *q->outs);
	q->n_outs = no;
	for (i = 0; i < no; i++)
		qr_am_qparams(q->g, q->m->graph.outputs[i].name,
			      &q->outs[i].qp);
}

static void
cand_free(struct cand *q)
{
	size_t i, k;

	for (i = 0; q->pairs != NULL && i < q->am.n; i++) {
		qr_as_qparams_free(&q->pairs[i].qp);
		for (k = 0; k < q->am.pairs[i].n_also; k++)
			qr_as_qparams_free(&q->pairs[i].also_qp[k]);
		free(q->pairs[i].also_qp);
	}
	free(q->pairs);
	free(q->pre);
	free(q->uses);
	for (i = 0; i < q->n_outs; i++) {
		free(q->outs[i].cos);
		free(q->outs[i].sqnr);
		qr_as_qparams_free(&q->outs[i].qp);
	}
	free(q->outs);
	map_free(&q->map);
	qr_am_free(&q->am);
	if (q->el != q->e)
		qr_exec_free(q->el);
	qr_exec_free(q->e);
	qr_graph_free(q->g);
	free(q->why);
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

static size_t
argmax_row(const float *v, size_t n)
{
	size_t i, best = 0;

	for (i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

/* Compare the candidate's graph outputs with the float model's (kept in
 * slot sl). Cumulative tasks only, in sample order. */
static void
compare_outputs(struct cand *q, const struct slot *sl)
{
	size_t nq, i, r;
	struct qr_tensor *const *qo = qr_exec_outputs(q->e, &nq);
	float *x = NULL, *y = NULL;

	for (i = 0; i < q->n_outs && i < sl->n_fouts && i < nq; i++) {
		struct outacc *o = &q->outs[i];
		struct qr_cmp_acc one = {0};
		const struct qr_tensor *a = sl->fouts[i], *b = qo[i];

		if (a == NULL || b == NULL || a->n_elem != b->n_elem)
			continue;
		x = xreallocarray(x, a->n_elem + 1, sizeof *x);
		y = xreallocarray(y, a->n_elem + 1, sizeof *y);
		if (!qr_as_to_float(a, NULL, x) ||
		    !qr_as_to_float(b, o->qp.n ? &o->qp : NULL, y))
			continue;
		qr_cmp_add(&one, x, y, a->n_elem);
		qr_cmp_add(&o->total, x, y, a->n_elem);
		if (o->samples == o->cap) {
			o->cap = o->cap ? o->cap * 2 : 32;
			o->cos = xreallocarray(o->cos, o->cap, sizeof *o->cos);
			o->sqnr = xreallocarray(o->sqnr, o->cap,
						sizeof *o->sqnr);
		}
		o->cos[o->samples] = qr_cmp_cosine_mean(&one);
		o->sqnr[o->samples] = qr_cmp_sqnr_db(&one);
		o->samples++;
		if (a->ndim != 2 || a->dims[1] < 2)
			continue;
		o->classifier = 1;
		for (r = 0; r < (size_t)a->dims[0]; r++) {
			size_t w = (size_t)a->dims[1];
			size_t af = argmax_row(x + r * w, w);
			size_t aq = argmax_row(y + r * w, w);

			o->rows++;
			o->agree += af == aq;
			if (sl->label >= 0 && a->dims[0] == 1) {
				o->labeled++;
				o->fcorrect += af == (size_t)sl->label;
				o->qcorrect += aq == (size_t)sl->label;
			}
		}
	}
	free(x);
	free(y);
}

/* Free the sample held in sl (pending, the scheduler's, is left alone). */
static void
slot_clear(struct slot *sl)
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
run_cand(struct ctx *c, struct cand *q, int local, size_t s,
	 struct qr_diag *d, double *waited)
{
	struct slot *sl = &c->slot[s];
	struct qr_exec *e = local ? q->el : q->e;
	struct hctx h = {0};
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
		struct cpair *p = &q->pairs[q->pre[i]];

		for (j = 0; j < sl->n_ins; j++)
			if (strcmp(alias[j].name, p->am->q) == 0)
				compare(&h, p, &alias[j]);
		step_read(&h, p->ft);
	}
	st = qr_exec_run(e, ptr, sl->n_ins, cand_hook, &h, d);
	step_end(&h);
	if (st == QR_OK && !local && !step_wait(&h, NONE))
		compare_outputs(q, sl);
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
sample_read(struct ctx *c, size_t s, int *eof, const char **name)
{
	struct slot *sl = &c->slot[s];
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
		size_t fi = ins[i]->name ? ft_find(c, ins[i]->name) : NONE;

		if (fi != NONE && c->ft[fi].node < 0 &&
		    ft_take(c, &c->ft[fi], s, sl->ins[i]))
			ft_ready(c, s, fi);
	}
	return QR_OK;
}

/* Run the float model on the sample read into slot s and keep its
 * outputs there (float thread only, on the caller's diag). */
static enum qr_status
float_run(struct ctx *c, size_t s, const char *name)
{
	struct qr_analysis *a = c->a;
	struct slot *sl = &c->slot[s];
	struct qr_tensor *const *fo;
	struct hctx h = {0};
	enum qr_status st;
	size_t nf, i;

	h.c = c;
	h.s = s;
	st = qr_exec_run(c->fe, sl->ins, sl->n_ins, float_hook, &h, c->d);
	if (st != QR_OK) {
		if (st == QR_EUSAGE || st == QR_ESHAPE)
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
 * the float model. */
static enum qr_status
run_float(struct ctx *c, size_t s, int *eof)
{
	const char *name;
	enum qr_status st = sample_read(c, s, eof, &name);

	if (st != QR_OK || *eof)
		return st;
	return float_run(c, s, name);
}

/* A unit of work for a lane. */
struct task {
	int kind;                /* 0 none, 1 float, 2 candidate */
	struct cand *q;
	int local;
	size_t sample;
};

/* The next runnable task, under c->mu; kind 0 when none is. The float
 * task of the next sample goes first (it fills the pipeline), then the
 * candidates' runs of the oldest sample. Each accumulator is written by
 * one kind of task, in sample order, so results do not depend on the
 * schedule. */
static struct task
pick(struct ctx *c)
{
	struct task t = {0};
	size_t k;
	int r;

	if (c->stop != QR_OK)
		return t;
	if (!c->f_busy && !c->eof && c->next_f == c->f_done &&
	    c->slot[c->next_f % SLOTS].pending == 0) {
		t.kind = 1;
		t.sample = c->next_f;
		return t;
	}
	for (k = 0; k < c->n_c; k++) {
		struct cand *q = &c->c[k];

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
finished(const struct ctx *c)
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
task_done(struct ctx *c, struct task *t)
{
	struct slot *sl = &c->slot[t->sample % SLOTS];

	t->q->busy[t->local] = 0;
	t->q->next[t->local]++;
	sl->pending--;
}

/* A candidate that failed leaves its remaining tasks undone: their
 * slots' counts go down now. */
static void
cand_drop(struct ctx *c, struct cand *q)
{
	int r;
	size_t s;

	q->ran = 0;
	c->partial = QR_EPARTIAL;
	for (r = 0; r < 2; r++)
		for (s = q->next[r] + (q->busy[r] ? 1 : 0); s < c->f_done;
		     s++)
			c->slot[s % SLOTS].pending--;
	q->next[0] = q->next[1] = (size_t)-1 / 2;
}

static void
progress(struct ctx *c)
{
	size_t total = c->o->samples;

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
	struct ctx *c = arg;
	struct qr_diag qd;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		struct task t = pick(c);
		enum qr_status st;
		double t0, waited;
		size_t k;
		int eof;

		if (t.kind == 0) {
			if (finished(c))
				break;
			pthread_cond_wait(&c->cv, &c->mu);
			continue;
		}
		if (t.kind == 1) {
			c->f_busy = 1;
			pthread_mutex_unlock(&c->mu);
			st = run_float(c, t.sample % SLOTS, &eof);
			pthread_mutex_lock(&c->mu);
			c->f_busy = 0;
			if (st != QR_OK) {
				c->stop = st;
			} else if (eof) {
				c->eof = 1;
			} else {
				c->running = 1;
				for (k = 0; k < c->n_c; k++) {
					c->running += c->c[k].ran;
					if (c->c[k].ran)
						c->slot[t.sample % SLOTS]
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
		st = run_cand(c, t.q, t.local, t.sample % SLOTS, &qd, &waited);
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
	struct ctx *c;
	struct cand *q;
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
	struct ctx *c = t->c;
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
 * lanes do it. Returns the float side's status.
 */
static enum qr_status
step_sample(struct ctx *c, int *eof)
{
	struct step_task *t;
	const char *name;
	enum qr_status st;
	size_t n = 0, i, k;
	int r;

	c->step = 1;
	c->f_end = 0;
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
		st = float_run(c, 0, name);
		pthread_mutex_lock(&c->mu);
		c->f_end = 1;
		if (st != QR_OK)
			c->stop = st;
		lane_give(c);
		pthread_mutex_unlock(&c->mu);
		for (i = 0; i < n; i++) {
			if (t[i].thread)
				pthread_join(t[i].th, NULL);
			else
				step_thread(&t[i]);
		}
	}
	if (st == QR_OK && !*eof) {
		c->running = 1;
		for (k = 0; k < c->n_c; k++)
			c->running += c->c[k].ran;
		c->next_f++;
		c->f_done++;
		progress(c);
		for (i = 0; i < n; i++) {
			struct cand *q = t[i].q;

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

/* ---- results ---- */

static void
act_tensors_out(struct ctx *c)
{
	struct qr_analysis *a = c->a;
	size_t i, k, n = 0;

	a->act_tensors = xcalloc(c->n_ft + 1, sizeof *a->act_tensors);
	for (i = 0; i < c->n_ft; i++) {
		struct ftens *f = &c->ft[i];
		struct qr_act_tensor *t = &a->act_tensors[n];
		const struct qr_node *fn = f->node >= 0
			? qr_graph_node(c->fg, (size_t)f->node) : NULL;

		f->out = n++;
		t->name = xstrdup(f->name);
		t->layer = xstrdup(fn ? fn->name : "");
		t->op = xstrdup(fn ? fn->op_type : "input");
		t->depth = (int)f->pos;
		t->shape = f->shape ? xstrdup(f->shape) : xstrdup("?");
		t->channels = f->chan.ch;
		t->ch_min = xcalloc(f->chan.ch + 1, sizeof *t->ch_min);
		t->ch_max = xcalloc(f->chan.ch + 1, sizeof *t->ch_max);
		t->ch_mean = xcalloc(f->chan.ch + 1, sizeof *t->ch_mean);
		for (k = 0; k < f->chan.ch; k++) {
			t->ch_min[k] = f->chan.mn[k];
			t->ch_max[k] = f->chan.mx[k];
			t->ch_mean[k] = f->chan.cnt[k]
				? (float)(f->chan.sum[k] / f->chan.cnt[k]) : NAN;
		}
		t->min = f->chan.ch ? f->chan.min : NAN;
		t->max = f->chan.ch ? f->chan.max : NAN;
		t->n_values = f->n_values;
	}
	a->n_act_tensors = n;
}

static double
capped(double v)
{
	if (isnan(v))
		return NAN;
	return v > BORN_CAP_DB ? BORN_CAP_DB : v;
}

static void
pair_out(const struct ctx *c, struct qr_act_pair *o, const struct cpair *p,
	 size_t k, int cancel)
{
	const struct qr_act_data *dt = &c->a->data;
	double lmse;

	o->quant = k;
	o->tensor = c->ft[p->ft].out;
	o->quant_tensor = xstrdup(p->am->q);
	o->quant_dtype = xstrdup(p->qdtype ? qr_dtype_name(p->qdtype) : "?");
	o->match = p->am->how;
	o->match_reason = xstrdup(p->am->reason);
	o->samples = p->cum.samples;
	o->cosine_mean = qr_cmp_cosine_mean(&p->cum);
	o->cosine_min = p->cum.samples ? p->cum.cos_min : NAN;
	o->cosine_max = p->cum.samples ? p->cum.cos_max : NAN;
	o->mse = qr_cmp_mse(&p->cum);
	o->max_abs = p->cum.samples ? p->cum.max_abs : NAN;
	o->norm_l2 = qr_cmp_norm_l2(&p->cum);
	o->sqnr_db = qr_cmp_sqnr_db(&p->cum);
	o->local_cosine_mean = qr_cmp_cosine_mean(&p->loc);
	o->local_cosine_min = p->loc.samples ? p->loc.cos_min : NAN;
	o->local_mse = lmse = qr_cmp_mse(&p->loc);
	o->local_sqnr_db = qr_cmp_sqnr_db(&p->loc);
	o->nan_float = p->cum.nan_x;
	o->inf_float = p->cum.inf_x;
	o->nan_quant = p->cum.nan_y;
	o->inf_quant = p->cum.inf_y;
	o->has_qparams = p->qp.n > 0;
	o->scale = o->zero_point = o->qmin = o->qmax = NAN;
	o->saturation = o->rmse_over_scale = NAN;
	if (p->qp.n > 0) {
		double lo = p->qp.qmin, hi = p->qp.qmax;

		if (p->qdtype && p->qdtype != QR_DT_FLOAT)
			qr_as_qrange(p->qdtype, &lo, &hi);
		o->scale = p->qp.scale[0];
		o->zero_point = p->qp.zp[0];
		o->qmin = lo;
		o->qmax = hi;
		o->saturation = p->sat_n ? (double)p->sat / p->sat_n : NAN;
		o->rmse_over_scale = o->scale > 0 ? sqrt(lmse) / o->scale : NAN;
	}
	o->hist_lo = p->hlo;
	o->hist_hi = p->hhi;
	memcpy(o->hist_float, p->hf, sizeof o->hist_float);
	memcpy(o->hist_quant, p->hq, sizeof o->hist_quant);
	o->under_float = p->uf;
	o->over_float = p->of;
	o->under_quant = p->uq;
	o->over_quant = p->oq;
	o->flags = 0;
	if (p->shape_bad)
		o->flags |= QR_ACT_FLAG_SHAPE;
	if (cancel)
		o->flags |= QR_ACT_FLAG_CANCEL;
	else if (o->cosine_mean < dt->cos_threshold)
		o->flags |= QR_ACT_FLAG_COSINE;
	if (!cancel && o->sqnr_db < dt->sqnr_threshold)
		o->flags |= QR_ACT_FLAG_SQNR;
	/* TFLite's bound assumes the output's rounding dominates, as with 8
	 * bits; a 16-bit output's step is 256 times finer, so the weights'
	 * error alone exceeds it and the flag would mark every layer */
	if (o->rmse_over_scale > RMSE_SCALE_BAD && p->qp.qmax - p->qp.qmin < 256)
		o->flags |= QR_ACT_FLAG_RMSE_SCALE;
	if (o->saturation > SATURATION_BAD)
		o->flags |= QR_ACT_FLAG_SATURATION;
	if (o->nan_float + o->inf_float + o->nan_quant + o->inf_quant)
		o->flags |= QR_ACT_FLAG_NONFINITE;
}

/* The RMS of each float tensor over every sample (NaN if no pair summed
 * it), from any candidate's pair on it: the float side of the sums is
 * the same. */
static double *
float_rms(const struct ctx *c)
{
	double *rms = xcalloc(c->n_ft + 1, sizeof *rms);
	size_t k, i;

	for (i = 0; i < c->n_ft; i++)
		rms[i] = NAN;
	for (k = 0; k < c->n_c; k++)
		for (i = 0; c->c[k].ran && i < c->c[k].am.n; i++) {
			const struct cpair *p = &c->c[k].pairs[i];

			if (p->ft != NONE && isnan(rms[p->ft]) && p->cum.n > 0)
				rms[p->ft] = sqrt(p->cum.sxx /
						  (double)p->cum.n);
		}
	return rms;
}

/*
 * Whether float tensor ft is a cancellation: made by an op that adds
 * (Add, Sub, Sum, Mean, ReduceSum, ReduceMean) and whose RMS is below
 * CANCEL_RATIO of its largest compared input's. Fewer than about 7 of
 * float's 24 bits then survive, so what the float model holds is mostly
 * rounding noise (a LayerNorm's mean over rows the previous LayerNorm
 * centred: about 1e-8 against inputs about 1). The candidate's error
 * there is real but harmless, and its SQNR (-100 dB) would otherwise
 * top every list and verdict.
 */
static int
is_cancellation(const struct ctx *c, const double *rms, size_t ft)
{
	static const char *const adds[] = { "Add", "Sub", "Sum", "Mean",
					    "ReduceSum", "ReduceMean" };
	const struct ftens *f = &c->ft[ft];
	const struct qr_node *n;
	double in = 0;
	size_t i, fi;
	int add = 0;

	if (f->node < 0)
		return 0;
	n = qr_graph_node(c->fg, (size_t)f->node);
	for (i = 0; i < sizeof adds / sizeof adds[0]; i++)
		add |= n->domain[0] == '\0' && strcmp(n->op_type, adds[i]) == 0;
	if (!add || isnan(rms[ft]))
		return 0;
	for (i = 0; i < n->n_in; i++)
		if (n->in[i] != NULL && (fi = ft_find(c, n->in[i])) != NONE &&
		    rms[fi] > in)
			in = rms[fi];
	return in > 0 && rms[ft] < CANCEL_RATIO * in;
}

/* Name -> float tensor index, sorted for bsearch. */
struct ft_name {
	const char *name;
	size_t ft;
};

static int
cmp_ft_name(const void *a, const void *b)
{
	return strcmp(((const struct ft_name *)a)->name,
		      ((const struct ft_name *)b)->name);
}

#define BORN_WALK 256            /* float nodes visited looking upward */

/*
 * Where error is born: among the compared tensors the candidate computes
 * with an error of its own (own[ft]: a finite local SQNR), the one whose
 * cumulative SQNR (sq[ft], capped; NaN when it is not compared or is a
 * cancellation) falls most below the worst of the compared tensors it
 * was computed from: the nearest ones above its producer in the float
 * graph, through tensors that were not compared.
 *  - Against its own inputs, not the tensor before it in depth order: a
 *    LayerNorm's variance path (40 dB) interleaves with its main path
 *    (25 dB), and nothing is lost where one follows the other.
 *  - Only where the layer adds error: an op the candidate runs exactly
 *    (a float Sub, Pow or ReduceMean in QDQ) can lower SQNR only by
 *    shrinking the signal under the error it inherits (a mean of 1e-3
 *    over inputs of 4 reads -8 dB), which is not where error is born.
 * at[ft] is the pair's index in act_pairs.
 */
static void
born(const struct ctx *c, const double *sq, const unsigned char *own,
     const size_t *at, struct qr_act_run *r)
{
	size_t nn = qr_graph_n_nodes(c->fg), i, j;
	struct ft_name *ix = xcalloc(c->n_ft + 1, sizeof *ix);
	unsigned char *seen = xcalloc(nn + 1, 1);
	size_t *stack = xcalloc(BORN_WALK + 1, sizeof *stack);
	size_t *visited = xcalloc(BORN_WALK + 1, sizeof *visited);

	for (i = 0; i < c->n_ft; i++) {
		ix[i].name = c->ft[i].name;
		ix[i].ft = i;
	}
	qsort(ix, c->n_ft, sizeof *ix, cmp_ft_name);
	for (i = 0; i < c->n_ft; i++) {
		size_t sp = 0, nv = 0;
		double in = INFINITY;

		if (isnan(sq[i]) || !own[i] || c->ft[i].node < 0)
			continue;
		stack[sp++] = (size_t)c->ft[i].node;
		while (sp > 0) {
			const struct qr_node *n = qr_graph_node(c->fg,
								stack[--sp]);

			for (j = 0; j < n->n_in; j++) {
				struct ft_name key = { n->in[j], 0 }, *hit;
				long p;

				if (n->in[j] == NULL || n->in[j][0] == '\0')
					continue;
				hit = bsearch(&key, ix, c->n_ft, sizeof *ix,
					      cmp_ft_name);
				if (hit != NULL && !isnan(sq[hit->ft])) {
					if (sq[hit->ft] < in)
						in = sq[hit->ft];
					continue;
				}
				if (hit != NULL && c->ft[hit->ft].node < 0)
					continue;
				p = qr_graph_producer(c->fg, n->in[j]);
				if (p < 0 || seen[p] || nv == BORN_WALK)
					continue;
				seen[p] = 1;
				visited[nv++] = (size_t)p;
				stack[sp++] = (size_t)p;
			}
		}
		for (j = 0; j < nv; j++)
			seen[visited[j]] = 0;
		if (isfinite(in) && in - sq[i] > 0 &&
		    (r->born < 0 || in - sq[i] > r->born_drop_db)) {
			r->born = (long)at[i];
			r->born_drop_db = in - sq[i];
		}
	}
	free(visited);
	free(stack);
	free(seen);
	free(ix);
}

static void
cand_out(struct ctx *c, size_t k, const double *rms)
{
	struct qr_analysis *a = c->a;
	struct cand *q = &c->c[k];
	struct qr_act_run *r = &a->act_runs[k];
	size_t i, *at;
	double worst = INFINITY, *sq;
	unsigned char *own;

	r->ran = q->ran;
	r->why = q->why ? xstrdup(q->why) : NULL;
	r->born = r->worst_local = -1;
	r->born_drop_db = NAN;
	r->seconds = q->seconds;
	for (i = 0; i < q->am.n_un; i++) {
		struct qr_act_unmatched *u;
		long pi = qr_graph_producer(c->fg, q->am.un[i].f);

		a->act_unmatched = xreallocarray(a->act_unmatched,
						 a->n_act_unmatched + 1,
						 sizeof *a->act_unmatched);
		u = &a->act_unmatched[a->n_act_unmatched++];
		u->quant = k;
		u->tensor = xstrdup(q->am.un[i].f);
		u->layer = xstrdup(pi >= 0 ? qr_graph_node(c->fg, (size_t)pi)->name
					   : "");
		u->reason = xstrdup(q->am.un[i].reason);
	}
	if (!q->ran)
		return;
	a->act_pairs = xreallocarray(a->act_pairs, a->n_act_pairs + q->am.n + 1,
				     sizeof *a->act_pairs);
	sq = xcalloc(c->n_ft + 1, sizeof *sq);
	own = xcalloc(c->n_ft + 1, 1);
	at = xcalloc(c->n_ft + 1, sizeof *at);
	for (i = 0; i < c->n_ft; i++)
		sq[i] = NAN;
	for (i = 0; i < q->am.n; i++) {
		struct qr_act_pair *o = &a->act_pairs[a->n_act_pairs];

		if (q->pairs[i].ft == NONE || !c->ft[q->pairs[i].ft].seen)
			continue;
		memset(o, 0, sizeof *o);
		pair_out(c, o, &q->pairs[i], k,
			 is_cancellation(c, rms, q->pairs[i].ft));
		a->n_act_pairs++;
		r->n_pairs++;
		r->n_name += o->match == QR_MATCH_NAME;
		r->n_structure += o->match == QR_MATCH_STRUCTURE;
		r->n_flagged += (o->flags & (QR_ACT_FLAG_COSINE |
					     QR_ACT_FLAG_SQNR)) != 0;
		sq[q->pairs[i].ft] = o->flags & QR_ACT_FLAG_CANCEL ? NAN :
				     capped(o->sqnr_db);
		at[q->pairs[i].ft] = a->n_act_pairs - 1;
		own[q->pairs[i].ft] = isfinite(o->local_sqnr_db);
		if (!(o->flags & QR_ACT_FLAG_CANCEL) &&
		    !isnan(o->local_sqnr_db) && o->local_sqnr_db < worst) {
			worst = o->local_sqnr_db;
			r->worst_local = (long)(a->n_act_pairs - 1);
		}
	}
	born(c, sq, own, at, r);
	free(sq);
	free(own);
	free(at);
	a->act_outputs = xreallocarray(a->act_outputs,
				       a->n_act_outputs + q->n_outs + 1,
				       sizeof *a->act_outputs);
	for (i = 0; i < q->n_outs; i++) {
		struct outacc *oa = &q->outs[i];
		struct qr_act_output *o = &a->act_outputs[a->n_act_outputs++];
		size_t s;

		memset(o, 0, sizeof *o);
		o->quant = k;
		o->name = xstrdup(c->fm->graph.outputs[i].name);
		o->quant_name = xstrdup(q->m->graph.outputs[i].name);
		o->samples = oa->samples;
		o->cosine = xcalloc(oa->samples + 1, sizeof *o->cosine);
		o->sqnr_db = xcalloc(oa->samples + 1, sizeof *o->sqnr_db);
		for (s = 0; s < oa->samples; s++) {
			o->cosine[s] = oa->cos[s];
			o->sqnr_db[s] = oa->sqnr[s];
		}
		o->cosine_mean = qr_cmp_cosine_mean(&oa->total);
		o->cosine_min = oa->total.samples ? oa->total.cos_min : NAN;
		o->sqnr_total_db = qr_cmp_sqnr_db(&oa->total);
		o->classifier = oa->classifier;
		o->rows = oa->rows;
		o->agree = oa->agree;
		o->labeled = oa->labeled;
		o->float_correct = oa->fcorrect;
		o->quant_correct = oa->qcorrect;
	}
}

/*
 * See analysis.h. The float model that cannot be prepared (unsupported
 * op) or fails on a sample inside the graph leaves data.why and returns
 * QR_EPARTIAL; so does a candidate, which is then left out (act_runs[k]
 * .why) while the others go on. The feed's errors and inputs that do not
 * fit the float model (QR_EUSAGE, QR_ESHAPE) are returned as they are.
 */
enum qr_status
qr_analysis_run_data(struct qr_analysis *a, const struct qr_model *fmodel,
		     const struct qr_model *const *quant, size_t n_quant,
		     const struct qr_act_opts *o, struct qr_diag *d)
{
	struct ctx c;
	struct qr_exec_opts eo = {0}, fast;
	enum qr_status st = QR_OK;
	size_t i, k, s, pipe_bytes = o->pipe_bytes ? o->pipe_bytes
							 : QR_ACT_PIPE_BYTES;
	int lanes, helper = 0, eof = 0;
	pthread_t th;
	double t0 = qr_now(), *rms;

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
		struct cand *q = &c.c[k];

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
	collect_ftens(&c);
	c.refs = xcalloc(c.n_ft + 1, sizeof *c.refs);
	for (k = 0; k < n_quant; k++)
		cand_setup(&c, &c.c[k]);

	/* the first sample in step; the others too if it was big */
	c.lanes_free = lanes;
	st = step_sample(&c, &eof);
	while (st == QR_OK && !eof && c.sample_bytes > pipe_bytes)
		st = step_sample(&c, &eof);
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
	a->data.ran = 1;
	act_tensors_out(&c);
	rms = float_rms(&c);
	for (k = 0; k < n_quant; k++)
		cand_out(&c, k, rms);
	free(rms);
	st = c.partial;
out:
	if (d != NULL)
		for (i = o->warn_first; i < d->n_warnings; i++)
			strv_add(&a->data.warnings, &a->data.n_warnings,
				 d->warnings[i].msg);
	for (k = 0; k < c.n_c; k++) {
		if (st == QR_EPARTIAL && c.c[k].why != NULL &&
		    a->act_runs[k].why == NULL)
			a->act_runs[k].why = xstrdup(c.c[k].why);
		cand_free(&c.c[k]);
	}
	free(c.c);
	for (i = 0; i < c.n_ft; i++) {
		for (s = 0; s < SLOTS; s++)
			if (c.ft[i].heap[s])
				free(c.ft[i].buf[s]);
		free(c.ft[i].shape);
		qr_as_chan_free(&c.ft[i].chan);
	}
	free(c.ft);
	qr_bulk_free(&c.bulk);
	free(c.refs);
	for (s = 0; s < SLOTS; s++)
		slot_clear(&c.slot[s]);
	map_free(&c.fmap);
	qr_exec_free(c.fe);
	qr_graph_free(c.fg);
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);
	a->data.seconds = qr_now() - t0;
	return st;
}

/* Free the activation part of a (called by qr_analysis_free). */
void
qr_an_act_free(struct qr_analysis *a)
{
	size_t i;

	free(a->data.why);
	free(a->data.source);
	free(a->data.preprocessing);
	for (i = 0; i < a->data.samples; i++)
		free(a->data.sample_names[i]);
	free(a->data.sample_names);
	free(a->data.labels);
	for (i = 0; i < a->data.n_classes; i++)
		free(a->data.classes[i]);
	free(a->data.classes);
	for (i = 0; i < a->data.n_warnings; i++)
		free(a->data.warnings[i]);
	free(a->data.warnings);
	for (i = 0; i < a->n_act_tensors; i++) {
		struct qr_act_tensor *t = &a->act_tensors[i];

		free(t->name);
		free(t->layer);
		free(t->op);
		free(t->shape);
		free(t->ch_min);
		free(t->ch_max);
		free(t->ch_mean);
	}
	free(a->act_tensors);
	for (i = 0; i < a->n_act_pairs; i++) {
		free(a->act_pairs[i].quant_tensor);
		free(a->act_pairs[i].quant_dtype);
		free(a->act_pairs[i].match_reason);
	}
	free(a->act_pairs);
	for (i = 0; i < a->n_act_outputs; i++) {
		free(a->act_outputs[i].name);
		free(a->act_outputs[i].quant_name);
		free(a->act_outputs[i].cosine);
		free(a->act_outputs[i].sqnr_db);
	}
	free(a->act_outputs);
	for (i = 0; i < a->n_act_unmatched; i++) {
		free(a->act_unmatched[i].tensor);
		free(a->act_unmatched[i].layer);
		free(a->act_unmatched[i].reason);
	}
	free(a->act_unmatched);
	for (i = 0; a->act_runs != NULL && i < a->n_quant; i++) {
		free(a->act_runs[i].path);
		free(a->act_runs[i].why);
	}
	free(a->act_runs);
}
