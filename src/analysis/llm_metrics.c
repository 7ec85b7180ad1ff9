/*
 * llm_metrics: what a candidate does to a decoder LLM's next-token
 * predictions, from the logits the float and candidate runs produce for
 * each sample (act_hook.c hands them over), and its decoder blocks'
 * outputs along depth.
 *
 * A decoder is a model with an `input_ids` input; its logits are the
 * output named "logits", else its first float output of rank 3 [B, S, V]
 * (or rank 2 [B, V]) with V > 1, [B, S] matching input_ids. At every
 * position (b, t) with lf = log_softmax(float logits), lq = the same for
 * the candidate (distribution.c has the maths):
 *   - KL(P_float || P_quant) = sum_v exp(lf_v) (lf_v - lq_v), nats;
 *   - top-1 agreement: the same argmax (the first index of the maximum);
 *   - top-5 overlap: |top5_f ∩ top5_q| / 5 (ties to the lower index;
 *     min(5, V) when V < 5);
 *   - with [B, S, V] logits, the negative log-likelihood of the next
 *     token, -lf[ids[b, t+1]] and -lq[ids[b, t+1]] for t = 0..S-2, and
 *     perplexity = exp(mean NLL). It is reported only when the token
 *     ids are data (a random sequence has no next token to predict).
 * Per sample: means over its positions; overall: over every position
 * (or predicted token) of every sample pooled.
 *
 * Blocks: the compared tensors are grouped by the `layers.N` or
 * `layers/N` in their producer's name (or their own); a block's output
 * is its last compared tensor in depth order, whose cumulative SQNR and
 * cosine the report charts along the blocks.
 */
#include "analysis/analysis-int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/tensor.h"
#include "onnx/onnx.h"

#define TOPK 5

/* Per-sample values, grown as samples come. */
struct llm_series {
	size_t n, cap;           /* entries used, allocated */
	double *kl, *top1, *top5, *ppl_f, *ppl_q; /* per sample */
};

/* Running sums of one candidate's logits output. */
struct qr_llm_acc {
	size_t out;              /* the output index they are of */
	size_t vocab;            /* V */
	size_t positions;        /* positions summed */
	double kl_sum, kl_max;   /* KL over positions: sum, largest */
	double top1, top5;       /* agreements summed (top5 / TOPK each) */
	size_t tokens;           /* next tokens predicted */
	double nll_f, nll_q;     /* their NLL summed, float and candidate */
	int ids_bad;             /* a token id outside 0..V-1 was met */
	struct llm_series s;     /* per sample */
	double *lf, *lq;         /* V doubles each: one position's log-probs */
};

/* The tensor named name among sl's inputs, or NULL. */
static const struct qr_tensor *
input_named(const struct qr_ar_slot *sl, const char *name)
{
	size_t i;

	for (i = 0; i < sl->n_ins; i++)
		if (sl->ins[i]->name != NULL &&
		    strcmp(sl->ins[i]->name, name) == 0)
			return sl->ins[i];
	return NULL;
}

/* Whether float output t of a model fed ids has the shape of logits. */
static int
logits_shape(const struct qr_tensor *t, const struct qr_tensor *ids)
{
	if (t == NULL || t->dtype != QR_DT_FLOAT || t->dims[t->ndim - 1] < 2)
		return 0;
	if (t->ndim == 3)
		return ids->ndim == 2 && t->dims[0] == ids->dims[0] &&
		       t->dims[1] == ids->dims[1];
	return t->ndim == 2 && t->dims[0] == (ids->ndim >= 1 ? ids->dims[0]
							      : 1);
}

/* The index of the logits among sl's float outputs, or QR_AR_NONE. */
static size_t
logits_index(const struct qr_ar_slot *sl, const struct qr_tensor *ids)
{
	size_t i, first = QR_AR_NONE;

	for (i = 0; i < sl->n_fouts; i++) {
		const struct qr_tensor *t = sl->fouts[i];

		if (t == NULL || t->ndim < 2 || !logits_shape(t, ids))
			continue;
		if (t->name != NULL && strcmp(t->name, "logits") == 0)
			return i;
		if (first == QR_AR_NONE)
			first = i;
	}
	return first;
}

static void
series_push(struct llm_series *s, double kl, double t1, double t5,
	    double pf, double pq)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->kl = xreallocarray(s->kl, s->cap, sizeof *s->kl);
		s->top1 = xreallocarray(s->top1, s->cap, sizeof *s->top1);
		s->top5 = xreallocarray(s->top5, s->cap, sizeof *s->top5);
		s->ppl_f = xreallocarray(s->ppl_f, s->cap, sizeof *s->ppl_f);
		s->ppl_q = xreallocarray(s->ppl_q, s->cap, sizeof *s->ppl_q);
	}
	s->kl[s->n] = kl;
	s->top1[s->n] = t1;
	s->top5[s->n] = t5;
	s->ppl_f[s->n] = pf;
	s->ppl_q[s->n] = pq;
	s->n++;
}

/* The token id at element i of ids, -1 when it is not an integer. */
static long long
token_at(const struct qr_tensor *ids, size_t i)
{
	switch (ids->dtype) {
	case QR_DT_INT64: return (long long)((const int64_t *)ids->data)[i];
	case QR_DT_INT32: return ((const int32_t *)ids->data)[i];
	default: return -1;
	}
}

/* See analysis-int.h. */
void
qr_llm_add(struct qr_llm_acc **accp, const struct qr_ar_slot *sl, size_t i,
	   const float *x, const float *y)
{
	const struct qr_tensor *ids = input_named(sl, "input_ids"), *t;
	struct qr_llm_acc *a = *accp;
	size_t b, p, vocab, nb, ns, k, n = 0, toks = 0;
	size_t tf[TOPK], tq[TOPK];
	double kl_s = 0, t1_s = 0, t5_s = 0, nf = 0, nq = 0;

	if (ids == NULL || i >= sl->n_fouts || logits_index(sl, ids) != i)
		return;
	t = sl->fouts[i];
	vocab = (size_t)t->dims[t->ndim - 1];
	nb = (size_t)t->dims[0];
	ns = t->ndim == 3 ? (size_t)t->dims[1] : 1;
	if (a == NULL) {
		a = *accp = xcalloc(1, sizeof *a);
		a->out = i;
		a->vocab = vocab;
		a->lf = xcalloc(vocab, sizeof *a->lf);
		a->lq = xcalloc(vocab, sizeof *a->lq);
	}
	if (a->vocab != vocab)
		return;
	k = vocab < TOPK ? vocab : TOPK;
	for (b = 0; b < nb; b++)
		for (p = 0; p < ns; p++) {
			const float *xr = x + (b * ns + p) * vocab;
			const float *yr = y + (b * ns + p) * vocab;
			double kl, common;

			qr_an_log_softmax(xr, vocab, a->lf);
			qr_an_log_softmax(yr, vocab, a->lq);
			kl = qr_an_kl(a->lf, a->lq, vocab);
			qr_an_top_k(xr, vocab, k, tf);
			qr_an_top_k(yr, vocab, k, tq);
			common = (double)qr_an_top_common(tf, tq, k);
			kl_s += kl;
			if (kl > a->kl_max || n + a->positions == 0)
				a->kl_max = kl;
			t1_s += tf[0] == tq[0];
			t5_s += common / (double)k;
			n++;
			if (t->ndim == 3 && p + 1 < ns) {
				long long id = token_at(ids, b * ns + p + 1);

				if (id < 0 || (size_t)id >= vocab) {
					a->ids_bad = 1;
					continue;
				}
				nf -= a->lf[id];
				nq -= a->lq[id];
				toks++;
			}
		}
	a->positions += n;
	a->kl_sum += kl_s;
	a->top1 += t1_s;
	a->top5 += t5_s;
	a->tokens += toks;
	a->nll_f += nf;
	a->nll_q += nq;
	series_push(&a->s, n ? kl_s / n : NAN, n ? t1_s / n : NAN,
		    n ? t5_s / n : NAN, toks ? exp(nf / toks) : NAN,
		    toks ? exp(nq / toks) : NAN);
}

/* See analysis-int.h. */
void
qr_llm_acc_free(struct qr_llm_acc *a)
{
	if (a == NULL)
		return;
	free(a->s.kl);
	free(a->s.top1);
	free(a->s.top5);
	free(a->s.ppl_f);
	free(a->s.ppl_q);
	free(a->lf);
	free(a->lq);
	free(a);
}

/* N of the first "layers.N" or "layers/N" in s, or -1. */
static int
block_of(const char *s)
{
	const char *p;

	for (p = s; s != NULL && (p = strstr(p, "layers")) != NULL; p++)
		if ((p[6] == '.' || p[6] == '/' || p[6] == '_') &&
		    isdigit((unsigned char)p[7]))
			return atoi(p + 7);
	return -1;
}

static double *
copy_series(const double *v, size_t n)
{
	double *r = xcalloc(n + 1, sizeof *r);

	memcpy(r, v, n * sizeof *r);
	return r;
}

/* Candidate k's blocks: the last compared tensor of each layers.N. */
static void
blocks_out(const struct qr_analysis *a, size_t k, struct qr_llm_result *r)
{
	size_t i, j;

	for (i = 0; i < a->n_act_pairs; i++) {
		const struct qr_act_pair *p = &a->act_pairs[i];
		const struct qr_act_tensor *t = &a->act_tensors[p->tensor];
		struct qr_llm_block *bl = NULL;
		int n;

		if (p->quant != k || (p->flags & (QR_ACT_NOT_FINDING |
						  QR_ACT_FLAG_SHAPE)))
			continue;
		if ((n = block_of(t->layer)) < 0 && (n = block_of(t->name)) < 0)
			continue;
		for (j = 0; j < r->n_blocks && bl == NULL; j++)
			if (r->blocks[j].block == n)
				bl = &r->blocks[j];
		if (bl == NULL) {
			r->blocks = xreallocarray(r->blocks, r->n_blocks + 1,
						  sizeof *r->blocks);
			bl = &r->blocks[r->n_blocks++];
			bl->block = n;
			bl->pair = -1;
		}
		if (bl->pair < 0 ||
		    a->act_tensors[a->act_pairs[bl->pair].tensor].depth <=
		    t->depth) {
			bl->pair = (long)i;
			bl->sqnr_db = p->sqnr_db;
			bl->cosine = p->cosine_mean;
			bl->local_sqnr_db = p->local_sqnr_db;
		}
	}
	/* insertion sort by block number */
	for (i = 1; i < r->n_blocks; i++)
		for (j = i; j > 0 && r->blocks[j - 1].block >
				     r->blocks[j].block; j--) {
			struct qr_llm_block x = r->blocks[j];

			r->blocks[j] = r->blocks[j - 1];
			r->blocks[j - 1] = x;
		}
}

/* See analysis-int.h. */
void
qr_llm_results(struct qr_ar_ctx *c, size_t k)
{
	struct qr_ar_cand *q = &c->c[k];
	struct qr_analysis *a = c->a;
	const struct qr_llm_acc *acc = NULL;
	struct qr_llm_result *r;
	size_t i;

	for (i = 0; i < q->n_outs && acc == NULL; i++)
		acc = q->outs[i].llm;
	if (acc == NULL || acc->positions == 0)
		return;
	r = a->act_runs[k].llm = xcalloc(1, sizeof *r);
	r->output = xstrdup(c->fm->graph.outputs[acc->out].name);
	r->vocab = acc->vocab;
	r->samples = acc->s.n;
	r->positions = acc->positions;
	r->kl = copy_series(acc->s.kl, acc->s.n);
	r->top1 = copy_series(acc->s.top1, acc->s.n);
	r->top5 = copy_series(acc->s.top5, acc->s.n);
	r->kl_mean = acc->kl_sum / acc->positions;
	r->kl_max = acc->kl_max;
	r->top1_agree = acc->top1 / acc->positions;
	r->top5_overlap = acc->top5 / acc->positions;
	r->perplexity = acc->tokens > 0 && !acc->ids_bad &&
			a->data.source != NULL &&
			strcmp(a->data.source, "random") != 0;
	r->ppl_float_all = r->ppl_quant_all = r->ppl_change = NAN;
	if (r->perplexity) {
		r->ppl_float = copy_series(acc->s.ppl_f, acc->s.n);
		r->ppl_quant = copy_series(acc->s.ppl_q, acc->s.n);
		r->ppl_tokens = acc->tokens;
		r->ppl_float_all = exp(acc->nll_f / acc->tokens);
		r->ppl_quant_all = exp(acc->nll_q / acc->tokens);
		r->ppl_change = r->ppl_quant_all / r->ppl_float_all - 1;
	}
	blocks_out(a, k, r);
}

/* See analysis-int.h. */
void
qr_llm_result_free(struct qr_llm_result *r)
{
	if (r == NULL)
		return;
	free(r->output);
	free(r->kl);
	free(r->top1);
	free(r->top5);
	free(r->ppl_float);
	free(r->ppl_quant);
	free(r->blocks);
	free(r);
}
