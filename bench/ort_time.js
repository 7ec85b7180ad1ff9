// ort_time.js: median time of one inference with ONNX Runtime
// (onnxruntime-node), for bench/engine.sh.
//
//   node ort_time.js MODEL.onnx INPUT.npy THREADS RUNS [OPT]
//
// OPT is ORT's graphOptimizationLevel: "all" (the default) or "disabled"
// (the graph run literally, as qreport runs it). Prints "<median ms> <min
// ms>".
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', 'tests', 'ort', 'node_modules', 'onnxruntime-node'));
const npy = require(path.join(__dirname, '..', 'tests', 'ort', 'npy'));

(async () => {
  const [model, input, threads, runs, opt] = process.argv.slice(2);
  const sess = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: opt || 'all',
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const a = npy.read(input);
  const feeds = { [sess.inputNames[0]]: new ort.Tensor(a.type, a.data, a.dims) };
  for (let i = 0; i < 3; i++) await sess.run(feeds);
  const t = [];
  for (let i = 0; i < Number(runs); i++) {
    const t0 = process.hrtime.bigint();
    await sess.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  t.sort((x, y) => x - y);
  console.log(`${t[t.length >> 1].toFixed(3)} ${t[0].toFixed(3)}`);
})().catch((e) => { console.error(e.message); process.exit(1); });
