/* qreport: optional sorting, filtering and graph zoom. Every page works
 * without it (static tables, scrollable graph); no network, no globals. */
(function () {
	"use strict";

	function key(td) {
		var v = td.getAttribute("data-v");
		if (v === null) return null;
		if (v === "") return NaN;
		return parseFloat(v);
	}

	/* Click a column head of table.sortable to sort by it; again to
	 * reverse. Numbers sort by data-v (empty last), text by content. */
	function sortable(table) {
		var heads = table.tHead ? table.tHead.rows[table.tHead.rows.length - 1].cells : [];
		Array.prototype.forEach.call(heads, function (th, col) {
			th.classList.add("sorter");
			th.tabIndex = 0;
			function go() {
				var body = table.tBodies[0], dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
				var rows = Array.prototype.slice.call(body.rows);
				var numeric = th.getAttribute("data-sort") === "num";
				rows.sort(function (a, b) {
					var x = a.cells[col], y = b.cells[col];
					if (!x || !y) return 0;
					if (numeric) {
						var p = key(x), q = key(y);
						if (p === null) p = parseFloat(x.textContent);
						if (q === null) q = parseFloat(y.textContent);
						var pn = isNaN(p), qn = isNaN(q);
						if (pn || qn) return pn === qn ? 0 : pn ? 1 : -1;
						return p === q ? 0 : (p < q ? -dir : dir);
					}
					return dir * x.textContent.localeCompare(y.textContent);
				});
				rows.forEach(function (r) { body.appendChild(r); });
				Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
				th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
			}
			th.addEventListener("click", go);
			th.addEventListener("keydown", function (e) {
				if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); }
			});
		});
	}

	/* The filter bar of layers.html: name text, op, flagged only. */
	function filters(box) {
		var text = box.querySelector("[data-filter-text]");
		var op = box.querySelector("[data-filter-op]");
		var flagged = box.querySelector("[data-filter-flagged]");
		var count = box.querySelector("[data-filter-count]");
		var table = document.getElementById(text.getAttribute("data-filter-text"));
		if (!table) return;
		function apply() {
			var t = text.value.trim().toLowerCase(), o = op.value, f = flagged.checked, shown = 0;
			var rows = table.tBodies[0].rows;
			Array.prototype.forEach.call(rows, function (r) {
				var ok = (!t || (r.getAttribute("data-name") || "").toLowerCase().indexOf(t) >= 0) &&
					(!o || r.getAttribute("data-op") === o) &&
					(!f || r.getAttribute("data-flagged") === "1");
				r.hidden = !ok;
				if (ok) shown++;
			});
			count.textContent = shown + " of " + rows.length + " shown";
		}
		text.addEventListener("input", apply);
		op.addEventListener("change", apply);
		flagged.addEventListener("change", apply);
		box.hidden = false;
		apply();
	}

	/* Graph zoom: scale the inline SVG; "fit width" fits its frame. */
	function zoom(section) {
		var bar = section.querySelector(".zoom"), svg = section.querySelector(".graph-scroll svg");
		if (!bar || !svg) return;
		var w0 = svg.width.baseVal.value, h0 = svg.height.baseVal.value, s = 1;
		function set(x) {
			s = Math.min(4, Math.max(0.1, x));
			svg.setAttribute("width", (w0 * s).toFixed(1) + "pt");
			svg.setAttribute("height", (h0 * s).toFixed(1) + "pt");
		}
		bar.addEventListener("click", function (e) {
			var z = e.target.getAttribute("data-zoom");
			if (z === null) return;
			if (z === "0") {
				var frame = section.querySelector(".graph-scroll");
				set((frame.clientWidth - 24) / (w0 * 4 / 3));
			} else {
				set(s * (z === "1" ? 1.25 : 0.8));
			}
		});
		bar.hidden = false;
	}

	function init() {
		Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);
		Array.prototype.forEach.call(document.querySelectorAll(".filters"), filters);
		Array.prototype.forEach.call(document.querySelectorAll(".graph-view"), zoom);
	}
	if (document.readyState === "loading")
		document.addEventListener("DOMContentLoaded", init);
	else
		init();
})();
