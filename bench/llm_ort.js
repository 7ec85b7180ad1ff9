// llm_ort.js: ONNX Runtime's side of bench/llm.sh (onnxruntime-node).
//
//   node bench/llm_ort.js compare FLOAT_ALL.onnx QUANT_ALL.onnx ROWS N
//   node bench/llm_ort.js time MODEL.onnx ROW RUNS OPT THREADS
//
// compare: the float and int4 decoders with every intermediate tensor an
// output (tests/models/expose_all.py), graph optimisation off (the graph
// run literally, as the report compares it), ORT's default threads, on
// samples ROWS/row<i>/<input>.npy, i < N. Per sample both models run and
// every output the two have by name is compared as the report compares
// its pairs: cosine and SQNR summed in double. Prints the logits' mean
// cosine and SQNR and the tensors compared; the wall time is the caller's.
//
// time: 3 warm-up runs of MODEL on ROW/<input>.npy, then the median and
// minimum of RUNS ("MEDIAN_MS MIN_MS"), graph optimisation OPT ("all" or
// "disabled"), THREADS intra-op threads.
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', 'tests', 'ort', 'node_modules', 'onnxruntime-node'));
const npy = require(path.join(__dirname, '..', 'tests', 'ort', 'npy'));

function feeds(sess, dir) {
  const f = {};
  for (const n of sess.inputNames) {
    const a = npy.read(path.join(dir, `${n}.npy`));
    f[n] = new ort.Tensor(a.type, a.data, a.dims);
  }
  return f;
}

// Sums of one float tensor x against y, as the report's qr_cmp_add.
function add(acc, x, y) {
  let sxx = 0, syy = 0, sxy = 0, see = 0;
  for (let i = 0; i < x.length; i++) {
    const a = x[i], b = y[i];
    if (!Number.isFinite(a) || !Number.isFinite(b)) continue;
    sxx += a * a; syy += b * b; sxy += a * b; see += (a - b) * (a - b);
  }
  const cos = sxx === 0 && syy === 0 ? 1 : sxy / Math.sqrt(sxx * syy);
  acc.cos += cos; acc.n++; acc.sxx += sxx; acc.see += see;
}

async function compare(fm, qm, rows, n) {
  const opt = { graphOptimizationLevel: 'disabled' };
  const fs = await ort.InferenceSession.create(fm, opt);
  const qs = await ort.InferenceSession.create(qm, opt);
  const names = fs.outputNames.filter((o) => qs.outputNames.includes(o));
  const acc = {};
  for (const o of names) acc[o] = { cos: 0, n: 0, sxx: 0, see: 0 };
  for (let i = 0; i < n; i++) {
    const dir = path.join(rows, `row${i}`);
    const fo = await fs.run(feeds(fs, dir));
    const qo = await qs.run(feeds(qs, dir));
    for (const o of names) {
      const x = fo[o], y = qo[o];
      if (x.type !== 'float32' || y.type !== 'float32' ||
          x.data.length !== y.data.length) continue;
      add(acc[o], x.data, y.data);
    }
  }
  const l = acc.logits || { cos: NaN, n: 1, sxx: NaN, see: NaN };
  const used = names.filter((o) => acc[o].n > 0).length;
  console.log(`# logits cosine ${(l.cos / l.n).toFixed(6)} SQNR ` +
    `${(10 * Math.log10(l.sxx / l.see)).toFixed(2)} dB; ${used} tensors ` +
    `compared on ${n} samples`);
}

async function time(model, row, runs, opt, threads) {
  const sess = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: opt, intraOpNumThreads: threads,
    interOpNumThreads: 1, executionMode: 'sequential',
  });
  const f = feeds(sess, row);
  for (let i = 0; i < 3; i++) await sess.run(f);
  const t = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await sess.run(f);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  t.sort((a, b) => a - b);
  console.log(`${t[t.length >> 1].toFixed(3)} ${t[0].toFixed(3)}`);
}

(async () => {
  const [mode, a, b, c, d, e] = process.argv.slice(2);
  if (mode === 'compare') await compare(a, b, c, Number(d));
  else if (mode === 'time') await time(a, b, Number(c), d, Number(e));
  else throw new Error('usage: llm_ort.js compare|time ...');
})().catch((err) => { console.error(err.message); process.exit(1); });
