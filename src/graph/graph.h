/*
 * graph: an index over a loaded model's main graph.
 *
 * Answers the questions analyses and the executor ask of a graph: who
 * produces a tensor, who consumes it, is it a constant (initializer or
 * Constant node output, seen through Identity), and in which order can the
 * nodes run. Node indices are indices into model->graph.nodes.
 *
 * Ownership: qr_graph_new returns an index the caller frees with
 * qr_graph_free; it borrows the model, which must outlive it. Pointers
 * returned by the getters are borrowed from the index or the model.
 */
#ifndef QR_GRAPH_H
#define QR_GRAPH_H

#include <stddef.h>

#include "util/util.h"

struct qr_model;
struct qr_node;
struct qr_tensor_data;
struct qr_graph;

/* Build the index and a topological order. Errors: QR_EGRAPH for a cycle,
 * a tensor produced twice, or an input nobody defines (naming the node and
 * the tensor). */
enum qr_status qr_graph_new(const struct qr_model *m, struct qr_graph **out,
			    struct qr_diag *d);
void qr_graph_free(struct qr_graph *g);

const struct qr_model *qr_graph_model(const struct qr_graph *g);
size_t qr_graph_n_nodes(const struct qr_graph *g);
const struct qr_node *qr_graph_node(const struct qr_graph *g, size_t i);
/* Node indices in a valid execution order (n_nodes entries). */
const size_t *qr_graph_topo_order(const struct qr_graph *g);
/* Index of the node producing tensor name, or -1 (graph input, initializer
 * or unknown). */
long qr_graph_producer(const struct qr_graph *g, const char *name);
/* The node producing name, or NULL (also for NULL or ""). */
const struct qr_node *qr_graph_producer_node(const struct qr_graph *g,
					     const char *name);
/* Indices of nodes consuming name; *n gets the count. */
const size_t *qr_graph_consumers(const struct qr_graph *g, const char *name,
				 size_t *n);
/* The constant behind name: an initializer, a Constant node's value, or
 * either seen through Identity nodes. NULL when name is not constant. */
const struct qr_tensor_data *qr_graph_const(const struct qr_graph *g,
					    const char *name);
/* Names node i's subgraphs (If, Loop and Scan bodies, nested ones too)
 * read from this graph, each once, in first-use order; *n gets the count
 * (0 for a node without subgraphs). */
const char *const *qr_graph_outer_uses(const struct qr_graph *g, size_t i,
				       size_t *n);
/* 1 when name is a graph output. */
int qr_graph_is_output(const struct qr_graph *g, const char *name);

#endif
