/* chart: deep copies of specs, and drawing a batch of charts on several
 * threads. See chart.h. */
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

/* Shared by the workers: the next job to take. */
struct batch {
	struct qr_chart_job *jobs; /* all jobs */
	size_t n;                  /* job count */
	size_t next;               /* next job index, under lock */
	pthread_mutex_t lock;
};

static void *
worker(void *arg)
{
	struct batch *b = arg;

	for (;;) {
		struct qr_chart_job *j;
		struct qr_diag d = {0};
		size_t i;

		pthread_mutex_lock(&b->lock);
		i = b->next++;
		pthread_mutex_unlock(&b->lock);
		if (i >= b->n)
			break;
		j = &b->jobs[i];
		j->status = qr_chart_draw(j->spec, j->path,
					  j->want_areas ? &j->areas : NULL,
					  j->want_areas ? &j->n_areas : NULL,
					  &d);
		if (j->status != QR_OK)
			snprintf(j->msg, sizeof j->msg, "%s", d.msg);
		qr_diag_clear(&d);
	}
	return NULL;
}

enum qr_status
qr_chart_draw_jobs(struct qr_chart_job *jobs, size_t n, int n_threads,
		   struct qr_diag *d)
{
	struct batch b = { jobs, n, 0, PTHREAD_MUTEX_INITIALIZER };
	pthread_t tid[16];
	int i, started = 0;
	size_t k;

	if (n_threads > 16)
		n_threads = 16;
	if ((size_t)n_threads > n)
		n_threads = (int)n;
	for (i = 1; i < n_threads; i++)
		if (pthread_create(&tid[started], NULL, worker, &b) == 0)
			started++;
	worker(&b);
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	for (k = 0; k < n; k++)
		if (jobs[k].status != QR_OK)
			return qr_errorf(d, jobs[k].status, "%s", jobs[k].msg);
	return QR_OK;
}
