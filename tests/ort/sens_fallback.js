// sens_fallback.js: the fallback model qreport wrote (--write-fallback)
// and the float model run in onnxruntime-node (graph optimisation off) on
// the same samples as the report's sensitivity runs: the rows of a .npy
// taken ROWS at a time, the first N batches. Prints the mean over
// batches of the cosine of the two models' first outputs (in double, as
// qreport computes it), one number.
//
//   node tests/ort/sens_fallback.js FLOAT.onnx FALLBACK.onnx DATA.npy ROWS N
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));
const npy = require(path.join(__dirname, 'npy'));

function cosine(x, y) {
  let xy = 0, xx = 0, yy = 0;
  for (let i = 0; i < x.length; i++) {
    xy += x[i] * y[i];
    xx += x[i] * x[i];
    yy += y[i] * y[i];
  }
  if (xx === 0 && yy === 0) return 1;
  if (xx === 0 || yy === 0) return 0;
  return xy / (Math.sqrt(xx) * Math.sqrt(yy));
}

async function main() {
  const [fp, qp, dp, rowsArg, nArg] = process.argv.slice(2);
  const rows = Number(rowsArg), n = Number(nArg);
  const opts = { graphOptimizationLevel: 'disabled' };
  const fs = await ort.InferenceSession.create(fp, opts);
  const qs = await ort.InferenceSession.create(qp, opts);
  const data = npy.read(dp);
  const per = data.dims.slice(1).reduce((a, b) => a * b, 1);
  let sum = 0, batches = 0;
  for (let b = 0; b < n && (b + 1) * rows <= data.dims[0]; b++) {
    const x = new ort.Tensor('float32',
      data.data.slice(b * rows * per, (b + 1) * rows * per),
      [rows].concat(data.dims.slice(1)));
    const fo = await fs.run({ [fs.inputNames[0]]: x });
    const qo = await qs.run({ [qs.inputNames[0]]: x });
    sum += cosine(fo[fs.outputNames[0]].data, qo[qs.outputNames[0]].data);
    batches++;
  }
  console.log((sum / batches).toPrecision(17));
}

main().catch((e) => { console.error(e.message); process.exit(1); });
