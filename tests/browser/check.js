// Load every page of a qreport report in headless chromium and check that
// it works offline and whole:
//   1. no request leaves the report folder (every request is intercepted;
//      only file:// URLs under the folder are let through),
//   2. no console error and no uncaught page error,
//   3. every <img> has loaded (naturalWidth > 0),
//   4. every internal link resolves: its file exists and its #anchor is an
//      id (or <a name>) in the target page.
// Then it checks the overview's Hazards section (it renders, with rows
// linking to layer pages and to their kind on the help page), that the
// error-source, worst-sample and outlier sections render (activations.html,
// the overview's verdict lines), that each candidate's Outputs section
// shows the classifier's KL, top-5 overlap, flips and 10 x 10 flip matrix,
// and saves a screenshot of index.html. With a second report (OUTPUTS_DIR,
// a model with a segmenter-shaped and a detector-shaped output) it checks
// that one's pixel agreement, IoU table and per-sample SQNR charts.
//
// usage: node check.js REPORT_DIR SCREENSHOT.png [OUTPUTS_DIR]
// Prints TAP. Exit status 0 when every page passed.
"use strict";
const fs = require("fs");
const path = require("path");
const { pathToFileURL, fileURLToPath } = require("url");
const { chromium } = require("playwright-core");

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

function pagesOf(dir) {
	const out = [];
	for (const f of fs.readdirSync(dir).sort())
		if (f.endsWith(".html")) out.push(path.join(dir, f));
	const layers = path.join(dir, "layers");
	if (fs.existsSync(layers))
		for (const f of fs.readdirSync(layers).sort())
			if (f.endsWith(".html")) out.push(path.join(layers, f));
	return out;
}

async function main() {
	const [dirArg, shot, outArg] = process.argv.slice(2);
	if (!dirArg || !shot) {
		console.error("usage: node check.js REPORT_DIR SCREENSHOT.png");
		process.exit(2);
	}
	const dir = fs.realpathSync(dirArg);
	const root = pathToFileURL(dir).href + "/";
	const outRoot = outArg ? pathToFileURL(fs.realpathSync(outArg)).href + "/" : null;
	const pages = pagesOf(dir);
	const userData = fs.mkdtempSync(path.join(require("os").tmpdir(), "qr-chromium-"));
	const browser = await chromium.launchPersistentContext(userData, {
		executablePath: CHROMIUM,
		headless: true,
		args: ["--headless", "--no-sandbox", "--disable-gpu",
		       "--disable-background-networking",
		       "--disable-component-update", "--no-first-run"],
		viewport: { width: 1280, height: 900 },
	});
	let failed = 0, n = 0;
	const idsCache = new Map(); // file -> Set of ids/names

	function ok(cond, msg, details) {
		n++;
		if (cond) {
			console.log(`ok ${n} - ${msg}`);
		} else {
			failed++;
			console.log(`not ok ${n} - ${msg}`);
			for (const d of (details || []).slice(0, 20))
				console.log(`# ${d}`);
		}
	}

	console.log(`1..${pages.length * 4 + 7 + (outArg ? 1 : 0)}`);
	const page = browser.pages()[0] || await browser.newPage();
	let outside = [], errors = [];
	await page.route("**/*", (route) => {
		const url = route.request().url();
		if (url.startsWith(root) || url === root.slice(0, -1) ||
		    (outRoot !== null && url.startsWith(outRoot))) {
			route.continue();
		} else {
			outside.push(url);
			route.abort();
		}
	});
	page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
	page.on("pageerror", (e) => errors.push(String(e)));

	async function idsOf(file) {
		if (idsCache.has(file)) return idsCache.get(file);
		// parse the target's ids without a second browser round trip
		const html = fs.readFileSync(file, "utf8");
		const ids = new Set();
		for (const m of html.matchAll(/\s(?:id|name)="([^"]*)"/g))
			ids.add(m[1].replace(/&amp;/g, "&").replace(/&quot;/g, "\"")
				.replace(/&#39;/g, "'").replace(/&lt;/g, "<")
				.replace(/&gt;/g, ">"));
		idsCache.set(file, ids);
		return ids;
	}

	for (const file of pages) {
		const rel = path.relative(dir, file);
		outside = [];
		errors = [];
		await page.goto(pathToFileURL(file).href, { waitUntil: "load" });
		// lazy images load when scrolled to: make them all load now
		const imgs = await page.evaluate(async () => {
			const all = Array.from(document.images);
			all.forEach((i) => { i.loading = "eager"; });
			await Promise.all(all.map((i) => i.complete ? null :
				new Promise((r) => { i.onload = i.onerror = r; })));
			return all.map((i) => ({ src: i.getAttribute("src"), w: i.naturalWidth }));
		});
		const links = await page.evaluate(() => {
			const out = [];
			for (const a of document.querySelectorAll("a, area")) {
				const h = a.getAttribute("href") || a.getAttribute("xlink:href");
				if (h === null) continue;
				out.push({ raw: h, abs: new URL(h, document.baseURI).href });
			}
			return out;
		});
		await page.waitForTimeout(50);
		ok(outside.length === 0, `${rel}: no request leaves the report`, outside);
		ok(errors.length === 0, `${rel}: no console error`, errors);
		const broken = imgs.filter((i) => !(i.w > 0)).map((i) => `image not loaded: ${i.src}`);
		ok(broken.length === 0, `${rel}: all ${imgs.length} images loaded`, broken);
		const bad = [];
		for (const l of links) {
			const u = new URL(l.abs);
			if (u.protocol !== "file:") {
				bad.push(`leaves the report: ${l.raw}`);
				continue;
			}
			const target = fileURLToPath(u.href.split("#")[0]);
			if (!target.startsWith(dir + path.sep) && target !== dir) {
				bad.push(`outside the report: ${l.raw}`);
				continue;
			}
			if (!fs.existsSync(target) || fs.statSync(target).isDirectory()) {
				bad.push(`missing file: ${l.raw}`);
				continue;
			}
			const hash = decodeURIComponent(u.hash.slice(1));
			if (hash && target.endsWith(".html") && !(await idsOf(target)).has(hash))
				bad.push(`missing anchor: ${l.raw}`);
		}
		ok(bad.length === 0, `${rel}: all ${links.length} links resolve`, bad);
	}
	await sections(page, dir, ok);
	if (outArg) await segOutputs(page, fs.realpathSync(outArg), ok);
	await page.goto(pathToFileURL(path.join(dir, "index.html")).href, { waitUntil: "load" });
	const hz = await page.evaluate(() => {
		const h = document.getElementById("hazards");
		const rows = Array.from(document.querySelectorAll("table.hazards tbody tr"));
		const hrefs = (sel) => rows.flatMap((r) => Array.from(r.querySelectorAll(sel))
			.map((a) => a.getAttribute("href")));
		return { shown: h !== null && h.offsetHeight > 0, rows: rows.length,
			 layers: hrefs("a[href^='layers/']"),
			 help: hrefs("a[href^='help.html#hz-']") };
	});
	const hzBad = [];
	for (const l of hz.layers)
		if (!fs.existsSync(path.join(dir, l))) hzBad.push(`missing layer page: ${l}`);
	for (const l of hz.help)
		if (!(await idsOf(path.join(dir, "help.html"))).has(l.split("#")[1]))
			hzBad.push(`missing help anchor: ${l}`);
	if (hz.rows > 0 && hz.help.length !== hz.rows) hzBad.push("a row without its help link");
	ok(hz.shown && hz.rows > 0 && hz.layers.length > 0 && hzBad.length === 0,
	   `index.html: the Hazards section shows ${hz.rows} rows, ${hz.layers.length} layer links resolve`, hzBad);
	await page.evaluate(async () => {
		Array.from(document.images).forEach((i) => { i.loading = "eager"; });
		await Promise.all(Array.from(document.images).map((i) => i.complete ? null :
			new Promise((r) => { i.onload = i.onerror = r; })));
	});
	await page.screenshot({ path: shot, fullPage: true });
	ok(fs.existsSync(shot) && fs.statSync(shot).size > 1000, `screenshot of index.html in ${shot}`);
	await browser.close();
	fs.rmSync(userData, { recursive: true, force: true });
	process.exit(failed ? 1 : 0);
}

// What the activations page and the overview say about where the error
// comes from, the worst samples and the activation outliers, as rendered.
async function sections(page, dir, ok) {
	await page.goto(pathToFileURL(path.join(dir, "activations.html")).href, { waitUntil: "load" });
	const a = await page.evaluate(async () => {
		Array.from(document.images).forEach((i) => { i.loading = "eager"; });
		await Promise.all(Array.from(document.images).map((i) => i.complete ? null :
			new Promise((r) => { i.onload = i.onerror = r; })));
		const out = { src: [], worst: [], outliers: null };
		for (const h of document.querySelectorAll("h3[id^='src-']")) {
			const p = h.nextElementSibling;
			const grid = p && p.nextElementSibling;
			out.src.push({ id: h.id, sentence: p ? p.textContent : "",
				tables: grid ? grid.querySelectorAll("table").length : 0,
				rows: grid ? grid.querySelectorAll("tbody tr").length : 0 });
		}
		for (const h of document.querySelectorAll("h3[id^='worst-']")) {
			const t = h.nextElementSibling.nextElementSibling;
			const rows = Array.from(t.querySelectorAll("tbody tr"));
			out.worst.push({ id: h.id, rows: rows.length,
				thumbs: rows.filter((r) => {
					const i = r.querySelector("img.thumb");
					return i && i.naturalWidth >= 64;
				}).length,
				traces: rows.filter((r) => {
					const l = r.querySelector("a[href^='#ws-']");
					const f = l && document.getElementById(l.getAttribute("href").slice(1));
					const i = f && f.querySelector("img");
					return i && i.naturalWidth > 0;
				}).length });
		}
		const o = document.getElementById("outliers");
		if (o) {
			const t = o.nextElementSibling.nextElementSibling;
			out.outliers = { rows: t.querySelectorAll("tbody tr").length,
				heat: Array.from(document.querySelectorAll("figure.heat img"))
					.filter((i) => i.getAttribute("src").startsWith("charts/ho") &&
						i.naturalWidth > 0).length };
		}
		return out;
	});
	ok(a.src.length === 2 && a.src.every((x) => /born at|builds up/.test(x.sentence) &&
		x.tables >= 2 && x.rows >= 3),
	   "activations.html: each candidate says where its error comes from, with its tables",
	   a.src.map((x) => `${x.id}: ${x.tables} tables, ${x.rows} rows: ${x.sentence}`));
	ok(a.worst.length === 2 && a.worst.every((x) => x.rows === 5 && x.thumbs === 5 && x.traces === 5),
	   "activations.html: five worst samples per candidate, each with its thumbnail and trace chart",
	   a.worst.map((x) => `${x.id}: ${x.rows} rows, ${x.thumbs} thumbnails, ${x.traces} traces`));
	ok(a.outliers !== null && a.outliers.rows > 0 && a.outliers.heat === a.outliers.rows,
	   "activations.html: the outlier table, one heatmap per layer",
	   [JSON.stringify(a.outliers)]);
	const outs = await page.evaluate(() => Array.from(
		document.querySelectorAll("h3[id$='-outputs']")).map((h) => {
		const sec = h.closest("section");
		const kv = (k) => {
			const th = Array.from(sec.querySelectorAll("table.kv th"))
				.find((t) => t.textContent.startsWith(k));
			return th ? th.nextElementSibling.textContent : null;
		};
		const m = sec.querySelector("table.flipmatrix");
		return { id: h.id, kl: kv("KL("), top5: kv("Top-5 overlap"),
			flips: kv("Flips"), dist: kv("Distributions"),
			matrix: m ? [m.querySelectorAll("tbody tr").length,
				m.querySelectorAll("tbody tr:first-child td").length,
				m.querySelectorAll("td.diag").length] : null,
			samples: sec.querySelectorAll("details table tbody tr").length };
	}));
	ok(outs.length === 2 && outs.every((o) => /nats mean/.test(o.kl) &&
		/%$/.test(o.top5) && /of 20 samples flipped/.test(o.flips) &&
		/logits: softmax taken/.test(o.dist) && o.matrix !== null &&
		o.matrix.join() === "10,10,10"),
	   "activations.html: each candidate's Outputs show KL, top-5, the flips and a 10 x 10 flip matrix",
	   outs.map((o) => JSON.stringify(o)));
	await page.goto(pathToFileURL(path.join(dir, "index.html")).href, { waitUntil: "load" });
	const lines = await page.evaluate(() =>
		Array.from(document.querySelectorAll("ul.headlines li")).map((l) => l.textContent));
	ok(lines.length === 2 && lines.every((l) => /error is born at|error builds up over many layers/.test(l)),
	   "index.html: each verdict line says where the error comes from", lines);
}

// The segmenter- and detector-shaped outputs' section of a second report:
// pixel agreement and the IoU table for the one, a per-sample SQNR chart
// (loaded) for both.
async function segOutputs(page, dir, ok) {
	await page.goto(pathToFileURL(path.join(dir, "activations.html")).href, { waitUntil: "load" });
	const s = await page.evaluate(async () => {
		Array.from(document.images).forEach((i) => { i.loading = "eager"; });
		await Promise.all(Array.from(document.images).map((i) => i.complete ? null :
			new Promise((r) => { i.onload = i.onerror = r; })));
		const th = Array.from(document.querySelectorAll("table.kv th"))
			.find((t) => t.textContent === "Pixel agreement");
		return { pixel: th ? th.nextElementSibling.textContent : null,
			iou: Array.from(document.querySelectorAll("summary"))
				.filter((x) => x.textContent === "IoU per class").length,
			charts: Array.from(document.querySelectorAll("img"))
				.filter((i) => /charts\/model-\d+-out-q1-\d/.test(i.getAttribute("src")) &&
					i.naturalWidth > 0).length };
	});
	ok(s.pixel !== null && /% of 80 pixels/.test(s.pixel) && s.iou === 1 && s.charts === 2,
	   "activations.html (outputs report): pixel agreement, IoU per class, a per-sample SQNR chart per output",
	   [JSON.stringify(s)]);
}

main().catch((e) => {
	console.log(`Bail out! ${String(e).split("\n")[0]}`);
	process.exit(1);
});
