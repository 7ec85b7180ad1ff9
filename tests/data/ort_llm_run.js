// ort_llm_run.js: run one model with ONNX Runtime (graph optimisation
// off, one thread) on IN_DIR/<input name>.npy and write each output as
// OUT_DIR/output_<k>.npy, k in the session's output order. Used by
// tests/data/make_llm_op_fixtures.py to record the expected outputs of
// the com.microsoft LLM op fixtures.
//
//   node tests/data/ort_llm_run.js MODEL.onnx IN_DIR OUT_DIR
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', 'ort', 'node_modules',
  'onnxruntime-node'));
const npy = require(path.join(__dirname, '..', 'ort', 'npy'));

(async () => {
  const [model, inDir, outDir] = process.argv.slice(2, 5);
  const sess = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'disabled', intraOpNumThreads: 1,
  });
  const feeds = {};
  for (const n of sess.inputNames) {
    const a = npy.read(path.join(inDir, `${n}.npy`));
    feeds[n] = new ort.Tensor(a.type, a.data, a.dims);
  }
  const out = await sess.run(feeds);
  sess.outputNames.forEach((n, k) => {
    const t = out[n];
    npy.write(path.join(outDir, `output_${k}.npy`), t.type, t.dims, t.data);
  });
})().catch((e) => { console.error(e.message); process.exit(1); });
