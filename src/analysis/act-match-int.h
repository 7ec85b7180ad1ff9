/*
 * act-match-int: what act_match.c (the pairing) and act_classes.c (each
 * graph's activations and the candidate's value classes) share.
 */
#ifndef QR_ACT_MATCH_INT_H
#define QR_ACT_MATCH_INT_H

#include "analysis/analysis-int.h"

#define NONE ((size_t)-1)

/* A name table: names (borrowed) to indices. */
struct names {
	const char **v;          /* names, borrowed */
	size_t n, cap;
	struct qr_strmap idx;    /* name -> index in v */
};

/* One graph's activations. */
struct side {
	const struct qr_graph *g;
	const struct qr_model *m;
	struct names t;          /* activations: graph inputs, node outputs */
	long *pos;               /* per tensor: producer's topological
				  * position, -1 for a graph input */
	long *prod;              /* per tensor: producer node index or -1 */
	size_t *parent;          /* union-find over Q/DQ links (quant) */
	size_t *canon;           /* per class root: the member compared */
	size_t *match;           /* per tensor (float) or class root
				  * (quant): the other side's index */
	size_t n_inputs;
	size_t *inputs;          /* graph inputs (non-constant), in order */
};

size_t am_names_find(const struct names *t, const char *s);
int am_is_op(const struct qr_node *n, const char *op);
int am_is_qdq(const struct qr_node *n);
/* The root of tensor i's class (union-find, path halving). */
size_t am_find(struct side *s, size_t i);
void am_side_init(struct side *s, const struct qr_graph *g);
void am_side_free(struct side *s);
/* The producer of tensor t, or of tensor name, or NULL. */
const struct qr_node *am_producer(const struct side *s, size_t t);
const struct qr_node *am_producer_of(const struct side *s, const char *name);
/* The input of Mul n that is a Cast of an integer accumulator, or -1. */
int am_acc_mul_input(const struct side *s, const struct qr_node *n);
/* Whether n carries one value in another form; *in the input linked. */
int am_is_link(const struct side *s, const struct qr_node *n, size_t *in);
/* The candidate's classes and the member each is compared through. */
void am_side_classes(struct side *s);
/* Consumers of class r's members that are not links (heap, *n). */
size_t *am_class_consumers(struct side *s, size_t r, size_t *n);
int am_class_has_consumer(struct side *s, size_t r, const char *op1,
			  const char *op2);

#endif
