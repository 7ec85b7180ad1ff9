/*
 * registry: the table of operators, built from ops.def with X-macros, and
 * lookup by (domain, op_type, opset). See ops.h.
 */
#include <pthread.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ops/op-int.h"
#include "ops/ops.h"

/* One ops.def row. */
struct row {
	const char *domain;            /* "" for ai.onnx */
	const char *name;              /* op_type */
	int since;                     /* lowest opset of this row */
	const struct qr_op_desc *desc; /* the descriptor */
};

static const struct row rows[] = {
#define QR_OP(dom, name, since, desc) {dom, name, since, &desc},
#include "ops/ops.def"
#undef QR_OP
};

static const struct qr_op_desc *const all[] = {
#define QR_OP(dom, name, since, desc) &desc,
#include "ops/ops.def"
#undef QR_OP
};

#define N_ROWS (sizeof rows / sizeof rows[0])

static const char *
norm_domain(const char *dom)
{
	if (dom == NULL || strcmp(dom, "ai.onnx") == 0)
		return "";
	return dom;
}

/*
 * The descriptor for (domain, op_type) at opset: among the ops.def rows of
 * that name, the one with the highest `since` not above opset. NULL when
 * there is none. Borrowed, static.
 */
const struct qr_op_desc *
qr_op_find(const char *domain, const char *op_type, int opset)
{
	const struct row *best = NULL;
	size_t i;

	domain = norm_domain(domain);
	for (i = 0; i < N_ROWS; i++) {
		const struct row *r = &rows[i];

		if (strcmp(r->name, op_type) != 0 ||
		    strcmp(r->domain, domain) != 0 || r->since > opset)
			continue;
		if (best == NULL || r->since > best->since)
			best = r;
	}
	return best != NULL ? best->desc : NULL;
}

/* Every descriptor in ops.def order; *n gets the count. Static. */
const struct qr_op_desc *const *
qr_op_all(size_t *n)
{
	*n = N_ROWS;
	return all;
}

static void
init_once(void)
{
	(void)qr_kernels_cpu_features();
	qr_kernels_set_blas_threads(1);
}

/* See ops.h. */
void
qr_ops_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, init_once);
}
