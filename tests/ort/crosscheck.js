// crosscheck.js: run a model with ONNX Runtime (graph optimisation off, so
// QDQ runs literally) and compare every output with qreport's.
//
//   node crosscheck.js MODEL.onnx INPUT_DIR QR_DIR [--float-tol T]
//                      [--int-max-diff N] [--int-max-frac F]
//                      [--n-final K --final-tol T2]
//
// INPUT_DIR holds <input name>.npy; QR_DIR holds qreport run's
// <sanitized name>.npy for every output (use a model whose intermediate
// tensors were made outputs to compare every layer). Floats: relative L2
// error ||q - o|| / ||o|| <= T (default 1e-5) over the finite values, NaN
// and infinities where ORT has them. Integers: the largest
// absolute difference <= N and the fraction of differing elements <= F
// (defaults 0 and 0: identical). The first K outputs (the model's own,
// which expose_all.py keeps first) may have their own float bound T2.
// Prints one TAP line per tensor and exits
// 1 when any is out of bounds.
'use strict';
const path = require('path');
const fs = require('fs');
const ort = require('onnxruntime-node');
const npy = require('./npy');

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

const sanitize = (n) => n.replace(/[^A-Za-z0-9._-]/g, '_');

(async () => {
  const [model, inDir, qrDir] = process.argv.slice(2, 5);
  const floatTol = arg('--float-tol', 1e-5);
  const intMaxDiff = arg('--int-max-diff', 0);
  const intMaxFrac = arg('--int-max-frac', 0);
  const nFinal = arg('--n-final', 0);
  const finalTol = arg('--final-tol', floatTol);
  const sess = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'disabled', intraOpNumThreads: 1,
  });
  const feeds = {};
  for (const n of sess.inputNames) {
    const a = npy.read(path.join(inDir, `${sanitize(n)}.npy`));
    feeds[n] = new ort.Tensor(a.type, a.data, a.dims);
  }
  const out = await sess.run(feeds);
  let n = 0; let bad = 0; let worstRel = 0; let intDiffs = 0; let intElems = 0;
  for (const name of sess.outputNames) {
    const o = out[name];
    const file = path.join(qrDir, `${sanitize(name)}.npy`);
    n++;
    if (!fs.existsSync(file)) {
      console.log(`not ok ${n} - ${name}: qreport wrote no ${file}`);
      bad++;
      continue;
    }
    const q = npy.read(file);
    if (q.data.length !== o.data.length) {
      console.log(`not ok ${n} - ${name}: ${q.data.length} elements, ORT has ${o.data.length}`);
      bad++;
      continue;
    }
    if (o.type === 'float32' || o.type === 'float64') {
      // NaN and infinities must sit where ORT has them, with its sign;
      // the finite rest is measured by relative L2
      let num = 0; let den = 0; let special = 0;
      for (let i = 0; i < o.data.length; i++) {
        const a = q.data[i]; const b = o.data[i];
        if (!Number.isFinite(a) || !Number.isFinite(b)) {
          if (!(a === b || (Number.isNaN(a) && Number.isNaN(b)))) special++;
          continue;
        }
        const d = a - b;
        num += d * d; den += b * b;
      }
      const rel = den > 0 ? Math.sqrt(num / den) : Math.sqrt(num);
      const tol = n <= nFinal ? finalTol : floatTol;
      const good = rel <= tol && special === 0;
      worstRel = Math.max(worstRel, rel);
      if (!good) bad++;
      console.log(`${good ? 'ok' : 'not ok'} ${n} - ${name} (${o.type}): relative L2 ${rel.toExponential(3)} (bound ${tol})` +
        (special ? `, ${special} NaN or infinities differ` : ''));
    } else {
      let maxd = 0; let diff = 0;
      for (let i = 0; i < o.data.length; i++) {
        const d = Math.abs(Number(q.data[i]) - Number(o.data[i]));
        if (d) diff++;
        if (d > maxd) maxd = d;
      }
      intDiffs += diff; intElems += o.data.length;
      const frac = diff / Math.max(1, o.data.length);
      const good = maxd <= intMaxDiff && frac <= intMaxFrac;
      if (!good) bad++;
      console.log(`${good ? 'ok' : 'not ok'} ${n} - ${name} (${o.type}): ${diff} of ${o.data.length} differ, max ${maxd}`);
    }
  }
  console.log(`# ${path.basename(model)}: ${n} tensors, ${bad} out of bounds, worst float relative L2 ${worstRel.toExponential(3)}, integer elements differing ${intDiffs} of ${intElems}`);
  process.exit(bad ? 1 : 0);
})().catch((e) => { console.log(`not ok - ${e.message.split('\n')[0]}`); process.exit(1); });
