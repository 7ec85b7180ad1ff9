/* chart: deep copies of specs, and a pool of threads drawing charts and
 * heatmaps while the caller adds more. See chart.h. */
#include "chart/chart.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
dup_or_null(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

static double *
dup_doubles(const double *v, size_t n)
{
	double *c;

	if (v == NULL)
		return NULL;
	c = xreallocarray(NULL, n ? n : 1, sizeof *c);
	memcpy(c, v, n * sizeof *c);
	return c;
}

/* Longest series: how many x ticks a spec carries. */
static size_t
n_ticks(const struct qr_chart_spec *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->n_series; i++)
		if (s->series[i].n > n)
			n = s->series[i].n;
	return n;
}

struct qr_chart_spec *
qr_chart_spec_copy(const struct qr_chart_spec *s)
{
	struct qr_chart_spec *c = xmalloc(sizeof *c);
	struct qr_series *series;
	struct qr_hline *hl;
	size_t i, nt;

	*c = *s;
	c->title = dup_or_null(s->title);
	c->xlabel = dup_or_null(s->xlabel);
	c->ylabel = dup_or_null(s->ylabel);
	series = xcalloc(s->n_series ? s->n_series : 1, sizeof *series);
	for (i = 0; i < s->n_series; i++) {
		series[i] = s->series[i];
		series[i].label = dup_or_null(s->series[i].label);
		series[i].y = dup_doubles(s->series[i].y, s->series[i].n);
		series[i].y2 = dup_doubles(s->series[i].y2, s->series[i].n);
	}
	c->series = series;
	if (s->xticks != NULL) {
		char **t;

		nt = n_ticks(s);
		t = xcalloc(nt ? nt : 1, sizeof *t);
		for (i = 0; i < nt; i++)
			t[i] = dup_or_null(s->xticks[i]);
		c->xticks = (const char *const *)t;
	}
	if (s->marks != NULL) {
		struct qr_mark *m = xcalloc(s->n_marks ? s->n_marks : 1,
					    sizeof *m);

		memcpy(m, s->marks, s->n_marks * sizeof *m);
		c->marks = m;
	}
	if (s->hlines != NULL) {
		hl = xcalloc(s->n_hlines ? s->n_hlines : 1, sizeof *hl);
		for (i = 0; i < s->n_hlines; i++) {
			hl[i] = s->hlines[i];
			hl[i].label = dup_or_null(s->hlines[i].label);
		}
		c->hlines = hl;
	}
	return c;
}

void
qr_chart_spec_free(struct qr_chart_spec *c)
{
	size_t i, nt;

	if (c == NULL)
		return;
	free((char *)c->title);
	free((char *)c->xlabel);
	free((char *)c->ylabel);
	if (c->xticks != NULL) {
		nt = n_ticks(c);
		for (i = 0; i < nt; i++)
			free((char *)c->xticks[i]);
		free((char **)c->xticks);
	}
	for (i = 0; i < c->n_series; i++) {
		free((char *)c->series[i].label);
		free((double *)c->series[i].y);
		free((double *)c->series[i].y2);
	}
	free((struct qr_series *)c->series);
	free((struct qr_mark *)c->marks);
	for (i = 0; c->hlines != NULL && i < c->n_hlines; i++)
		free((char *)c->hlines[i].label);
	free((struct qr_hline *)c->hlines);
	free(c);
}

#define POOL_THREADS_MAX 16

/* Shared by the workers; every field below lock is read and written
 * under it. */
struct qr_chart_pool {
	pthread_t tid[POOL_THREADS_MAX]; /* started workers */
	int n_tid;                 /* entries in tid */
	pthread_mutex_t lock;
	pthread_cond_t more;       /* a job was added, or finishing began */
	struct qr_chart_job **jobs; /* added jobs, in order */
	size_t n, cap;             /* added, allocated */
	size_t next;               /* next job to take */
	int closing;               /* no more jobs will be added */
};

static void
run_job(struct qr_chart_job *j)
{
	struct qr_diag d = {0};

	if (j->spec != NULL)
		j->status = qr_chart_draw(j->spec, j->path,
					  j->want_areas ? &j->areas : NULL,
					  j->want_areas ? &j->n_areas : NULL,
					  &d);
	else if (j->heat != NULL)
		j->status = qr_heatmap_write(j->path, j->heat->v,
					     j->heat->rows, j->heat->cols,
					     j->heat->cell, j->heat->vmin,
					     j->heat->vmax, &d);
	else
		j->status = qr_errorf(&d, QR_EUSAGE, "image '%s': no chart "
				      "and no heatmap", j->path);
	if (j->status != QR_OK)
		snprintf(j->msg, sizeof j->msg, "%s", d.msg);
	qr_diag_clear(&d);
}

/* Take jobs until the pool is closing and empty; when drain is set,
 * return as soon as no job is waiting (the caller's own thread). */
static void
work(struct qr_chart_pool *p, int drain)
{
	struct qr_chart_job *j;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (p->next < p->n) {
			j = p->jobs[p->next++];
			pthread_mutex_unlock(&p->lock);
			run_job(j);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		if (drain || p->closing)
			break;
		pthread_cond_wait(&p->more, &p->lock);
	}
	pthread_mutex_unlock(&p->lock);
}

static void *
worker(void *arg)
{
	work(arg, 0);
	return NULL;
}

/* Start n_threads - 1 workers; they wait for jobs. */
struct qr_chart_pool *
qr_chart_pool_new(int n_threads)
{
	struct qr_chart_pool *p = xcalloc(1, sizeof *p);
	int i;

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->more, NULL);
	if (n_threads > POOL_THREADS_MAX)
		n_threads = POOL_THREADS_MAX;
	for (i = 1; i < n_threads; i++)
		if (pthread_create(&p->tid[p->n_tid], NULL, worker, p) == 0)
			p->n_tid++;
	return p;
}

/* Queue job and wake a waiting worker. */
void
qr_chart_pool_add(struct qr_chart_pool *p, struct qr_chart_job *job)
{
	pthread_mutex_lock(&p->lock);
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->jobs = xreallocarray(p->jobs, p->cap, sizeof *p->jobs);
	}
	p->jobs[p->n++] = job;
	pthread_cond_signal(&p->more);
	pthread_mutex_unlock(&p->lock);
}

/* No more jobs: draw with the workers until none is left, join them,
 * and report the first failure in the order added. */
enum qr_status
qr_chart_pool_finish(struct qr_chart_pool *p, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	size_t k;
	int i;

	if (p == NULL)
		return QR_OK;
	pthread_mutex_lock(&p->lock);
	p->closing = 1;
	pthread_cond_broadcast(&p->more);
	pthread_mutex_unlock(&p->lock);
	work(p, 1);
	for (i = 0; i < p->n_tid; i++)
		pthread_join(p->tid[i], NULL);
	for (k = 0; k < p->n && st == QR_OK; k++)
		if (p->jobs[k]->status != QR_OK)
			st = qr_errorf(d, p->jobs[k]->status, "%s",
				       p->jobs[k]->msg);
	pthread_cond_destroy(&p->more);
	pthread_mutex_destroy(&p->lock);
	free(p->jobs);
	free(p);
	return st;
}

/* A pool of at most n threads, fed every job at once. */
enum qr_status
qr_chart_draw_jobs(struct qr_chart_job *jobs, size_t n, int n_threads,
		   struct qr_diag *d)
{
	struct qr_chart_pool *p;
	size_t k;

	if ((size_t)n_threads > n)
		n_threads = (int)n;
	p = qr_chart_pool_new(n_threads);
	for (k = 0; k < n; k++)
		qr_chart_pool_add(p, &jobs[k]);
	return qr_chart_pool_finish(p, d);
}
