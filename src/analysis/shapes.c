/*
 * shapes: declared tensor shapes by name, shape strings, float copies of
 * constant tensors.
 */
#include "analysis/analysis-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"

struct qr_an_shapes {
	size_t n;                          /* entries */
	const struct qr_value_info **vi;   /* sorted by name */
};

static int
cmp_vi(const void *a, const void *b)
{
	const struct qr_value_info *x = *(const struct qr_value_info *const *)a;
	const struct qr_value_info *y = *(const struct qr_value_info *const *)b;

	return strcmp(x->name, y->name);
}

/* An index over the main graph's inputs, outputs and value_info, sorted
 * once so lookups are O(log n). Caller frees with qr_an_shapes_free. */
struct qr_an_shapes *
qr_an_shapes_new(const struct qr_model *m)
{
	const struct qr_graph_data *g = &m->graph;
	struct qr_an_shapes *s = xcalloc(1, sizeof *s);
	size_t i, k = 0;

	s->vi = xcalloc(g->n_input + g->n_output + g->n_value_info + 1,
			sizeof *s->vi);
	for (i = 0; i < g->n_input; i++)
		s->vi[k++] = &g->inputs[i];
	for (i = 0; i < g->n_output; i++)
		s->vi[k++] = &g->outputs[i];
	for (i = 0; i < g->n_value_info; i++)
		s->vi[k++] = &g->value_info[i];
	s->n = k;
	qsort(s->vi, s->n, sizeof *s->vi, cmp_vi);
	return s;
}

void
qr_an_shapes_free(struct qr_an_shapes *s)
{
	if (s == NULL)
		return;
	free(s->vi);
	free(s);
}

const struct qr_value_info *
qr_an_shapes_get(const struct qr_an_shapes *s, const char *name)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->vi[mid]->name, name);

		if (c == 0)
			return s->vi[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *
qr_an_dims_buf(const int64_t *dims, int ndim, char *buf, size_t n)
{
	size_t k = 0;
	int i;

	k += (size_t)snprintf(buf, n, "[");
	for (i = 0; i < ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "",
				      (long long)dims[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

char *
qr_an_dims_str(const int64_t *dims, int ndim)
{
	struct qr_buf b = { 0 };
	int i;

	qr_buf_putc(&b, '[');
	for (i = 0; i < ndim; i++)
		qr_buf_printf(&b, "%s%lld", i ? "," : "", (long long)dims[i]);
	qr_buf_putc(&b, ']');
	return qr_buf_take(&b);
}

int
qr_an_is_float(int dtype)
{
	return dtype == QR_DT_FLOAT || dtype == QR_DT_FLOAT16 ||
	       dtype == QR_DT_DOUBLE || dtype == QR_DT_BFLOAT16;
}

float *
qr_an_to_f32(const struct qr_tensor_data *t)
{
	float *f;

	if (t->data == NULL && t->n_elem > 0)
		return NULL;
	f = xmalloc((t->n_elem ? t->n_elem : 1) * sizeof *f);
	if (t->n_elem > 0 && qr_tensor_to_f32(t, f, NULL) != QR_OK) {
		free(f);
		return NULL;
	}
	return f;
}

const float *
qr_an_f32_view(const struct qr_tensor_data *t, int *owned)
{
	if (t->dtype == QR_DT_FLOAT && t->data &&
	    ((uintptr_t)t->data % _Alignof(float)) == 0) {
		*owned = 0;
		return t->data;
	}
	*owned = 1;
	return qr_an_to_f32(t);
}
