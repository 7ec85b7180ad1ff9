// run_once.js: load and run models once with ONNX Runtime (graph
// optimisation off, so QDQ runs literally), to tell which test models it
// accepts.
//
//   node run_once.js JOBS.json OUT.json
//
// JOBS.json: [{"model": PATH, "input": NPY}, ...], NPY fed to the model's
// only input. OUT.json: {PATH: {"ran": bool, "error": string or null,
// "output": [numbers] (the first output, when it ran)}}.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const npy = require(path.join(__dirname, 'npy'));

(async () => {
  const [jobsPath, outPath] = process.argv.slice(2, 4);
  if (!outPath) {
    console.error('usage: run_once.js JOBS.json OUT.json');
    process.exit(2);
  }
  const out = {};
  for (const job of JSON.parse(fs.readFileSync(jobsPath, 'utf8'))) {
    try {
      const s = await ort.InferenceSession.create(job.model, {
        graphOptimizationLevel: 'disabled', intraOpNumThreads: 1,
      });
      if (s.inputNames.length !== 1) throw new Error(`${s.inputNames.length} inputs`);
      const a = npy.read(job.input);
      const o = await s.run({ [s.inputNames[0]]: new ort.Tensor(a.type, a.data, a.dims) });
      out[job.model] = { ran: true, error: null, output: Array.from(o[s.outputNames[0]].data, Number) };
    } catch (e) {
      out[job.model] = { ran: false, error: String(e.message).slice(0, 500) };
    }
  }
  fs.writeFileSync(outPath, JSON.stringify(out));
})().catch((e) => { console.error(`run_once.js: ${e.message}`); process.exit(2); });
