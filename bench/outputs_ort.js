// outputs_ort.js: the graph outputs of a float model and a candidate run
// with ONNX Runtime on the samples of a qreport report, written as .npy
// for bench/outputs_check.py to recompute the output metrics with numpy.
//
//   node bench/outputs_ort.js REPORT.json FLOAT.onnx QUANT.onnx SAMPLES_DIR
//        OUT_DIR
//
// Both models run with onnxruntime-node, graph optimisation off (QDQ runs
// literally), on report.json's dataset.sample_names read from SAMPLES_DIR
// (one .npy per sample, fed to each model's single input). Output j of
// sample i goes to OUT_DIR/f<i>_<j>.npy (float model) and q<i>_<j>.npy
// (candidate); an integer candidate output is written as it is.
'use strict';
const path = require('path');
const fs = require('fs');
const ort = require(path.join(__dirname, '..', 'tests', 'ort', 'node_modules', 'onnxruntime-node'));
const npy = require(path.join(__dirname, '..', 'tests', 'ort', 'npy'));

async function main() {
  const [report, fmodel, qmodel, samples, out] = process.argv.slice(2);
  if (!out) {
    console.error('usage: node outputs_ort.js REPORT.json FLOAT.onnx QUANT.onnx SAMPLES_DIR OUT_DIR');
    process.exit(2);
  }
  const names = JSON.parse(fs.readFileSync(report, 'utf8')).dataset.sample_names;
  const opts = { graphOptimizationLevel: 'disabled' };
  const fs_ = await ort.InferenceSession.create(fmodel, opts);
  const qs = await ort.InferenceSession.create(qmodel, opts);
  fs.mkdirSync(out, { recursive: true });
  for (let i = 0; i < names.length; i++) {
    const x = npy.read(path.join(samples, names[i]));
    for (const [tag, s] of [['f', fs_], ['q', qs]]) {
      const r = await s.run({ [s.inputNames[0]]: new ort.Tensor(x.type, x.data, x.dims) });
      s.outputNames.forEach((n, j) => {
        const t = r[n];
        npy.write(path.join(out, `${tag}${i}_${j}.npy`), t.type, t.dims, t.data);
      });
    }
  }
  console.log(`${names.length} samples, ${fs_.outputNames.length} outputs`);
}

main().catch((e) => { console.error(String(e)); process.exit(1); });
