/*
 * report: the graph view. The float model's layers laid out by Graphviz
 * (libgvc, the "dot" layout, top to bottom) and rendered to SVG, once per
 * candidate: a node's fill is the colour of its cumulative SQNR, its
 * border the colour of its local SQNR (the layer's own error), so the
 * place where error is born shows as the first node whose border turns.
 * Without candidates the fill shows the weight range verdict.
 *
 * Every node links to its layer page (URL) and names itself and its
 * numbers in a tooltip. Model strings never reach DOT syntax: nodes are
 * created through the API with generated ids ("n12"), and labels and
 * tooltips pass qr_dot_text (valid UTF-8, no control characters, and no
 * backslash Graphviz could read as \N or \G). Graphviz escapes them for
 * XML when it writes the SVG.
 */
#include "report/report.h"
#include "report/report-int.h"
#include "analysis/analysis.h"

#include <cjson/cJSON.h>
#include <gvc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_MAX 30     /* bytes of a name shown in a node */
#define TOOLTIP_MAX 300  /* bytes of a name in a tooltip */
#define GRAPH_FAST_LAYERS 150 /* above this, bounded layout effort */
/* Above either, no layout at all: dot's time grows about quadratically
 * (a 4000-layer chain takes seconds, a 2000-wide fan 6 s, 50,000 layers
 * minutes and then a crash inside dot), and a drawing that large is no
 * use to read. The layers table lists every layer whatever the size. */
#define GRAPH_MAX_LAYERS 1500
#define GRAPH_MAX_EDGES 3000

/* Node colours: fill (light) and border (strong) per verdict. */
#define C_GOOD_FILL "#dafbe1"
#define C_WARN_FILL "#fff3b0"
#define C_BAD_FILL "#ffc9c4"
#define C_NONE_FILL "#f6f8fa"
#define C_GOOD_LINE "#1a7f37"
#define C_WARN_LINE "#bf8700"
#define C_BAD_LINE "#cf222e"
#define C_NONE_LINE "#8c959f"

char *
qr_dot_text(const char *s, size_t max, int tooltip)
{
	struct qr_buf b = {0};
	char *u = qr_utf8_dup(s != NULL ? s : "");
	size_t i, n = strlen(u), keep = n;

	if (n > max) {
		/* cut at a UTF-8 boundary */
		keep = max;
		while (keep > 0 && ((unsigned char)u[keep] & 0xc0) == 0x80)
			keep--;
	}
	for (i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)u[i];

		if (c == '\\' && tooltip)
			qr_buf_puts(&b, "\xe2\x88\x96"); /* U+2216, looks alike */
		else if (c == '\\')
			qr_buf_puts(&b, "\\\\");
		else if (c < 0x20 || c == 0x7f)
			qr_buf_putc(&b, ' ');
		else
			qr_buf_putc(&b, (char)c);
	}
	if (keep < n)
		qr_buf_puts(&b, "\xe2\x80\xa6");
	free(u);
	return b.data != NULL ? qr_buf_take(&b) : xstrdup("");
}

/* A short display name: the node name without a trailing "/<op>" (torch
 * exports repeat the op), its tail when long. */
static char *
short_name(const char *name, const char *op)
{
	size_t n = strlen(name), o = strlen(op);
	char *tmp, *r;

	if (n > o + 1 && name[n - o - 1] == '/' &&
	    strcmp(name + n - o, op) == 0)
		n -= o + 1;
	if (n > LABEL_MAX) {
		const char *tail = name + n - (LABEL_MAX - 1);

		/* start at a UTF-8 boundary */
		while (((unsigned char)*tail & 0xc0) == 0x80)
			tail++;
		tmp = xasprintf("\xe2\x80\xa6%.*s",
				(int)(name + n - tail), tail);
	} else {
		tmp = xstrndup(name, n);
	}
	r = qr_dot_text(tmp, LABEL_MAX + 8, 0);
	free(tmp);
	return r;
}

static void
set_attr(void *obj, const char *key, const char *value)
{
	agsafeset(obj, (char *)key, (char *)value, "");
}

/* *node, the "model inputs" or "model outputs" node (name "inputs" or
 * "outputs") of candidate k's graph, made the first time an edge needs
 * it; its id is "q<k+1>-<tag>". */
static Agnode_t *
io_node(Agraph_t *g, Agnode_t **node, const char *name, const char *tag,
	size_t k)
{
	char buf[64];

	if (*node != NULL)
		return *node;
	*node = agnode(g, (char *)name, 1);
	snprintf(buf, sizeof buf, "q%zu-%s", k + 1, tag);
	set_attr(*node, "id", buf);
	snprintf(buf, sizeof buf, "model %s", name);
	set_attr(*node, "label", buf);
	set_attr(*node, "shape", "ellipse");
	set_attr(*node, "style", "filled");
	set_attr(*node, "fillcolor", "#ddf4ff");
	set_attr(*node, "color", "#0969da");
	set_attr(*node, "penwidth", "1");
	return *node;
}

enum verdict { V_NONE, V_GOOD, V_WARN, V_BAD };

static enum verdict
sqnr_verdict(double v, double thr)
{
	if (isnan(v))
		return V_NONE;
	if (v < thr)
		return V_BAD;
	if (v < thr + 10)
		return V_WARN;
	return V_GOOD;
}

static const char *const fills[] = { C_NONE_FILL, C_GOOD_FILL, C_WARN_FILL,
				      C_BAD_FILL };
static const char *const lines[] = { C_NONE_LINE, C_GOOD_LINE, C_WARN_LINE,
				     C_BAD_LINE };

static void
fmt_db(char *buf, size_t n, double v)
{
	if (isfinite(v))
		snprintf(buf, n, "%.1f dB", v);
	else if (isinf(v))
		snprintf(buf, n, "exact");
	else
		snprintf(buf, n, "n/a");
}

/* Lay out and render the graph coloured for candidate k (or by weights
 * when k == n_quant and there are no candidates). *svg gets the SVG text
 * (new), starting at "<svg". */
static enum qr_status
render(const struct qr_analysis *a, const struct qr_report_layers *L,
       size_t k, GVC_t *gvc, char **svg, struct qr_diag *d)
{
	Agraph_t *g;
	Agnode_t **nodes = xcalloc(L->n + 1, sizeof *nodes);
	Agnode_t *in_node = NULL, *out_node = NULL;
	enum qr_status st = QR_OK;
	char id[64], *data = NULL;
	unsigned int len = 0;
	size_t i, j;
	int weights_only = a->n_quant == 0;
	double ts = a->data.sqnr_threshold > 0 || a->data.ran
			    ? a->data.sqnr_threshold : QR_SQNR_BAD_DB;

	*svg = NULL;
	g = agopen((char *)"qreport", Agdirected, NULL);
	snprintf(id, sizeof id, "g%zu", k + 1);
	agattr(g, AGRAPH, (char *)"id", id);
	agattr(g, AGRAPH, (char *)"rankdir", (char *)"TB");
	agattr(g, AGRAPH, (char *)"nodesep", (char *)"0.18");
	agattr(g, AGRAPH, (char *)"ranksep", (char *)"0.22");
	agattr(g, AGRAPH, (char *)"bgcolor", (char *)"transparent");
	agattr(g, AGRAPH, (char *)"fontname", (char *)"DejaVu Sans");
	agattr(g, AGNODE, (char *)"shape", (char *)"box");
	agattr(g, AGNODE, (char *)"style", (char *)"rounded,filled");
	agattr(g, AGNODE, (char *)"fontname", (char *)"DejaVu Sans");
	agattr(g, AGNODE, (char *)"fontsize", (char *)"9");
	agattr(g, AGNODE, (char *)"margin", (char *)"0.08,0.03");
	agattr(g, AGNODE, (char *)"height", (char *)"0.3");
	agattr(g, AGNODE, (char *)"penwidth", (char *)"2");
	agattr(g, AGNODE, (char *)"target", (char *)"_top");
	agattr(g, AGEDGE, (char *)"color", (char *)"#8c959f");
	agattr(g, AGEDGE, (char *)"arrowsize", (char *)"0.5");
	agattr(g, AGEDGE, (char *)"penwidth", (char *)"0.8");
	/* dot's network simplex and crossing minimisation grow fast with
	 * long skip edges: densenet121 (about 900 edges) took 324 s per
	 * layout. Bounding their iterations on large graphs takes 3.4 s
	 * there, with more crossings; small graphs keep the full layout. */
	if (L->n > GRAPH_FAST_LAYERS) {
		agattr(g, AGRAPH, (char *)"nslimit", (char *)"1");
		agattr(g, AGRAPH, (char *)"nslimit1", (char *)"1");
		agattr(g, AGRAPH, (char *)"mclimit", (char *)"0.05");
	}

	for (i = 0; i < L->n; i++) {
		const struct qr_report_layer *l = &L->v[i];
		enum verdict fill = V_NONE, line = V_NONE;
		struct qr_buf lab = {0}, tip = {0};
		char *sn = short_name(l->name, l->op), *op, *full;
		char c1[32], c2[32];

		snprintf(id, sizeof id, "n%zu", i);
		nodes[i] = agnode(g, id, 1);
		snprintf(id, sizeof id, "q%zu-n%zu", k + 1, i);
		set_attr(nodes[i], "id", id);
		op = qr_dot_text(l->op, 40, 0);
		full = qr_dot_text(l->name, TOOLTIP_MAX, 1);
		qr_buf_printf(&lab, "%s\\n%s", op, sn);
		free(op);
		op = qr_dot_text(l->op, 40, 1);
		qr_buf_printf(&tip, "%s (%s)", full, op);
		if (!weights_only && k < a->n_quant && l->act[k] >= 0) {
			const struct qr_act_pair *p = &a->act_pairs[l->act[k]];

			/* a cancellation's SQNR is rounding noise, a suspect
			 * pairing's compares other values: no colour */
			if (!(p->flags & QR_ACT_NOT_FINDING))
				fill = sqnr_verdict(p->sqnr_db, ts);
			line = sqnr_verdict(p->local_sqnr_db, ts);
			fmt_db(c1, sizeof c1, p->sqnr_db);
			fmt_db(c2, sizeof c2, p->local_sqnr_db);
			qr_buf_printf(&lab, "\\n%s", c1);
			qr_buf_printf(&tip, ": SQNR %s cumulative, %s local; "
				      "cosine %.5f%s", c1, c2, p->cosine_mean,
				      p->flags & QR_ACT_FLAG_CANCEL
				      ? " (cancellation: the float value is "
					"rounding noise)" :
				      p->flags & QR_ACT_FLAG_SUSPECT
				      ? " (suspect pairing: not the same "
					"value)" : "");
		} else if (weights_only && l->weight >= 0) {
			const struct qr_weight_stats *w = &a->weights[l->weight];

			fill = w->max_rel_range > QR_BAD_REL_RANGE ? V_BAD
			       : w->max_rel_range > QR_BAD_REL_RANGE / 2
				       ? V_WARN : V_GOOD;
			line = sqnr_verdict(w->sqnr_per_tensor_db,
					    QR_SQNR_BAD_DB);
			fmt_db(c1, sizeof c1, w->sqnr_per_tensor_db);
			qr_buf_printf(&lab, "\\nrel. range %.3g",
				      w->max_rel_range);
			qr_buf_printf(&tip, ": max relative range %.4g, "
				      "predicted per-tensor SQNR %s",
				      w->max_rel_range, c1);
		} else if (k < a->n_quant && l->qweight[k] >= 0) {
			fmt_db(c1, sizeof c1,
			       a->qweights[l->qweight[k]].sqnr_db);
			qr_buf_printf(&tip, ": weight SQNR %s (activation "
				      "not compared)", c1);
		}
		set_attr(nodes[i], "label", lab.data);
		set_attr(nodes[i], "tooltip", tip.data);
		set_attr(nodes[i], "URL", l->page);
		set_attr(nodes[i], "fillcolor", (char *)fills[fill]);
		set_attr(nodes[i], "color", (char *)lines[line]);
		if (line == V_NONE)
			set_attr(nodes[i], "penwidth", "1");
		qr_buf_free(&lab);
		qr_buf_free(&tip);
		free(full);
		free(op);
		free(sn);
	}
	for (i = 0; i < L->n; i++) {
		const struct qr_report_layer *l = &L->v[i];

		for (j = 0; j < l->n_in; j++)
			agedge(g, nodes[l->in[j]], nodes[i], NULL, 1);
		if (l->reads_input)
			agedge(g, io_node(g, &in_node, "inputs", "in", k),
			       nodes[i], NULL, 1);
		if (l->writes_output)
			agedge(g, nodes[i],
			       io_node(g, &out_node, "outputs", "out", k), NULL,
			       1);
	}
	if (gvLayout(gvc, g, "dot") != 0) {
		qr_warnf(d, "the graph view is left out: Graphviz could not "
			 "lay out the graph");
		st = QR_EUNSUPPORTED;
		goto out;
	}
	if (gvRenderData(gvc, g, "svg", &data, &len) != 0 || data == NULL) {
		qr_warnf(d, "the graph view is left out: Graphviz could not "
			 "render SVG");
		st = QR_EUNSUPPORTED;
	} else {
		const char *p = strstr(data, "<svg");

		*svg = xstrdup(p != NULL ? p : data);
	}
	if (data != NULL)
		gvFreeRenderData(data);
	gvFreeLayout(gvc, g);
out:
	agclose(g);
	free(nodes);
	return st;
}

/* Standalone SVG file: the XML prologue, then the drawing. */
static enum qr_status
write_svg(const char *dir, const char *file, const char *svg,
	  struct qr_diag *d)
{
	struct qr_buf b = {0};
	char *path = qr_path_join(dir, file);
	enum qr_status st;

	qr_buf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\" "
		    "standalone=\"no\"?>\n");
	qr_buf_puts(&b, svg);
	st = qr_write_file(path, b.data, b.len, d);
	qr_buf_free(&b);
	free(path);
	return st;
}

static void
set_graph_counts(cJSON *o, const struct qr_report_layers *L)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%zu", L->n);
	cJSON_AddStringToObject(o, "n_layers", buf);
	snprintf(buf, sizeof buf, "%zu", L->n_hidden);
	cJSON_AddStringToObject(o, "n_hidden", buf);
	cJSON_AddBoolToObject(o, "has_hidden", L->n_hidden > 0);
}

enum qr_status
qr_report_graph(const struct qr_analysis *a, const struct qr_report_layers *L,
		const char *dir, cJSON *view, struct qr_diag *d)
{
	enum qr_status st = QR_OK;
	cJSON *o = cJSON_CreateObject(), *arr;
	size_t k, n = a->n_quant > 0 ? a->n_quant : 1, edges = 0;
	GVC_t *gvc = NULL;

	cJSON_ReplaceItemInObject(view, "graph", o);
	cJSON_AddBoolToObject(o, "available", L->has_graph && L->n > 0);
	cJSON_AddBoolToObject(o, "several", 0);
	cJSON_AddBoolToObject(o, "left_out", 0); /* or why, below */
	set_graph_counts(o, L);
	arr = cJSON_AddArrayToObject(o, "views");
	if (!L->has_graph || L->n == 0)
		return QR_OK;
	for (k = 0; k < L->n; k++)
		edges += L->v[k].n_in;
	if (L->n > GRAPH_MAX_LAYERS || edges > GRAPH_MAX_EDGES) {
		char *why = xasprintf("the graph has %zu layers and %zu edges, "
				      "more than the %d layers or %d edges "
				      "it lays out; the layers table lists "
				      "them all", L->n, edges,
				      GRAPH_MAX_LAYERS, GRAPH_MAX_EDGES);

		qr_warnf(d, "the graph view is left out: %s", why);
		cJSON_ReplaceItemInObject(o, "available",
					  cJSON_CreateBool(0));
		cJSON_ReplaceItemInObject(o, "left_out",
					  cJSON_CreateString(why));
		free(why);
		return QR_OK;
	}
	gvc = gvContext();
	for (k = 0; k < n && st == QR_OK; k++) {
		char *svg = NULL, file[32], anchor[32];
		cJSON *x;

		if (render(a, L, a->n_quant > 0 ? k : a->n_quant, gvc, &svg,
			   d) != QR_OK)
			break;
		if (k == 0)
			snprintf(file, sizeof file, "graph.svg");
		else
			snprintf(file, sizeof file, "graph-q%zu.svg", k + 1);
		st = write_svg(dir, file, svg, d);
		x = cJSON_CreateObject();
		snprintf(anchor, sizeof anchor, "graph-%zu", k + 1);
		cJSON_AddStringToObject(x, "anchor", anchor);
		if (a->n_quant > 0) {
			char label[64];

			snprintf(label, sizeof label, "Candidate %zu (%s)",
				 k + 1, qr_qformat_name(a->quants[k].format));
			cJSON_AddStringToObject(x, "label", label);
		} else {
			cJSON_AddStringToObject(x, "label", "Float model");
		}
		cJSON_AddBoolToObject(x, "by_weights", a->n_quant == 0);
		cJSON_AddStringToObject(x, "file", file);
		cJSON_AddStringToObject(x, "svg", svg);
		cJSON_AddItemToArray(arr, x);
		free(svg);
	}
	cJSON_ReplaceItemInObject(o, "available", cJSON_CreateBool(
		cJSON_GetArraySize(arr) > 0));
	cJSON_ReplaceItemInObject(o, "several", cJSON_CreateBool(
		cJSON_GetArraySize(arr) > 1));
	gvFreeContext(gvc);
	return st;
}
