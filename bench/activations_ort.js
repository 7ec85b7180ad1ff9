// activations_ort.js: qreport's per-layer float<->quant numbers computed
// again with ONNX Runtime, and compared with report.json.
//
//   node bench/activations_ort.js REPORT.json FLOAT_ALL.onnx QUANT_ALL.onnx
//        SAMPLES_DIR [--quant K] [--tol T] [--threads N] [--no-compare]
//        [--local LOCAL_ALL.onnx LOCAL.json]
//
// FLOAT_ALL / QUANT_ALL are the float and candidate K models with every
// intermediate tensor made a graph output (tests/models/expose_all.py).
// Both run with onnxruntime-node, graph optimisation off (QDQ runs
// literally), on the samples qreport used: report.json's
// dataset.sample_names, read from SAMPLES_DIR (one .npy per sample, fed
// to each model's single input). For every pair of report.json's
// activations[] with quant == K, the float tensor `tensor` is compared
// with the candidate's `quant_tensor`; an integer quant tensor is
// dequantized with the pair's scale and zero_point,
// x = fround((q - zp) * scale), as qreport does. Per pair, like
// src/analysis/act_stats.c:
//   cosine  = sum xy / (||x|| ||y||) per sample (finite pairs only, in
//             double), then its mean and min over samples;
//   SQNR    = 10 log10(sum x^2 / sum (x-y)^2), samples concatenated.
// Each is compared with report.json's cosine_mean, cosine_min and
// sqnr_db: |qreport - ORT| <= T * max(1, |ORT|) (default T 1e-4; the
// relative part only matters for SQNR in dB). Prints one TAP line per
// pair and a last line "# max |diff| cosine_mean A cosine_min B sqnr_db C
// worst |diff|/max(1,|ORT|) W (N pairs, S samples, bound T)" (W is the
// smallest T that would pass); exits 1 when a pair is out of bounds.
// --no-compare computes the same numbers without reading qreport's
// (bench/report_speed.sh times that). --threads: ORT intra-op threads
// (default: ORT's own choice, all cores).
//
// --local LOCAL_ALL.onnx LOCAL.json adds qreport's local error: the
// candidate made by tests/models/local_cut.py, whose cut tensors are fed
// the float model's values of this sample (float tensors a copy, integer
// ones x -> clamp(rne(fround(x / scale)) + zero_point), as
// src/analysis/act_quant.c qr_as_from_float) and whose NAME__local outputs
// are what each node computed from them. Per pair, local_cosine_mean,
// local_cosine_min and local_sqnr_db are computed and compared as above.
'use strict';
const path = require('path');
const fs = require('fs');
const ort = require(path.join(__dirname, '..', 'tests', 'ort', 'node_modules', 'onnxruntime-node'));
const npy = require(path.join(__dirname, '..', 'tests', 'ort', 'npy'));

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

// The report's number, with JSON's null standing for NaN/inf.
const num = (v) => (v === null || v === undefined ? NaN : v);

function close(a, b, tol) {
  if (!Number.isFinite(a) || !Number.isFinite(b)) {
    // qreport writes null for NaN and +-inf; ORT gives the value itself
    return !Number.isFinite(a) && !Number.isFinite(b);
  }
  return Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));
}

// A tensor's values as float64-readable numbers, dequantized for ints.
function values(t, p) {
  if (t.type === 'float32' || t.type === 'float64') return t.data;
  const s = p.scale; const z = p.zero_point;
  const out = new Float32Array(t.data.length);
  if (s === null || s === undefined) {
    for (let i = 0; i < out.length; i++) out[i] = Number(t.data[i]);
  } else {
    for (let i = 0; i < out.length; i++) out[i] = Math.fround((Number(t.data[i]) - z) * s);
  }
  return out;
}

// One sample of pair p into accumulator A: float tensor ft against the
// candidate's qt (named qn in messages).
function add(A, p, ft, qt, qn) {
  if (!ft || !qt || ft.data.length !== qt.data.length) {
    A.missing = !ft ? `float tensor ${p.tensor} not produced`
      : !qt ? `quant tensor ${qn} not produced` : 'sizes differ';
    return;
  }
  const u = values(ft, p); const v = values(qt, p);
  let sxy = 0; let sxx = 0; let syy = 0; let see = 0;
  for (let i = 0; i < u.length; i++) {
    const xi = u[i]; const yi = v[i];
    if (!Number.isFinite(xi) || !Number.isFinite(yi)) continue;
    const e = xi - yi;
    sxy += xi * yi; sxx += xi * xi; syy += yi * yi; see += e * e;
  }
  let cs;
  if (sxx === 0 && syy === 0) cs = 1;
  else if (sxx === 0 || syy === 0) cs = 0;
  else cs = sxy / (Math.sqrt(sxx) * Math.sqrt(syy));
  A.sxx += sxx; A.see += see; A.cosSum += cs; A.n++;
  if (cs < A.cosMin) A.cosMin = cs;
}

const RANGE = { uint8: [0, 255], int8: [-128, 127], uint16: [0, 65535], int16: [-32768, 32767], int32: [-2147483648, 2147483647] };
const ARRAY = { uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array, int32: Int32Array };

// Round half to even.
function rne(v) {
  const r = Math.floor(v); const f = v - r;
  return f > 0.5 || (f === 0.5 && r % 2 !== 0) ? r + 1 : r;
}

// Float values f in the cut tensor's own domain (type: ORT's name).
function domain(f, c, type) {
  if (type === 'float32') return Float32Array.from(f);
  const [lo, hi] = RANGE[type];
  const out = new ARRAY[type](f.length);
  for (let i = 0; i < f.length; i++) {
    const v = Math.fround(f[i] / c.scale);
    let q = Number.isNaN(v) ? c.zero_point : rne(v) + c.zero_point;
    q = q < lo ? lo : q > hi ? hi : q;
    out[i] = q;
  }
  return out;
}

(async () => {
  const [reportPath, floatModel, quantModel, samplesDir] = process.argv.slice(2, 6);
  if (!samplesDir) {
    console.error('usage: activations_ort.js REPORT.json FLOAT_ALL.onnx QUANT_ALL.onnx SAMPLES_DIR [--quant K] [--tol T] [--threads N] [--no-compare] [--local LOCAL_ALL.onnx LOCAL.json]');
    process.exit(2);
  }
  const K = arg('--quant', 0);
  const tol = arg('--tol', 1e-4);
  const threads = arg('--threads', 0);
  const compare = !process.argv.includes('--no-compare');
  const li = process.argv.indexOf('--local');
  const localModel = li > 0 ? process.argv[li + 1] : null;
  const cutInfo = li > 0 ? JSON.parse(fs.readFileSync(process.argv[li + 2], 'utf8')) : null;
  const report = JSON.parse(fs.readFileSync(reportPath, 'utf8'));
  const pairs = report.activations.filter((a) => a.quant === K);
  const names = report.dataset.sample_names;
  const opts = { graphOptimizationLevel: 'disabled' };
  if (threads > 0) opts.intraOpNumThreads = threads;
  const fs_ = await ort.InferenceSession.create(floatModel, opts);
  const qs = await ort.InferenceSession.create(quantModel, opts);
  if (fs_.inputNames.length !== 1 || qs.inputNames.length !== 1) throw new Error('models with one input only');
  const ls = localModel ? await ort.InferenceSession.create(localModel, opts) : null;
  const newAcc = () => ({ sxx: 0, see: 0, cosSum: 0, cosMin: Infinity, n: 0, missing: null });
  const acc = pairs.map(newAcc);
  const lacc = pairs.map(newAcc);

  for (const name of names) {
    const a = npy.read(path.join(samplesDir, name));
    const x = new ort.Tensor(a.type, a.data, a.dims);
    const fo = await fs_.run({ [fs_.inputNames[0]]: x });
    fo[fs_.inputNames[0]] = x;
    const qo = await qs.run({ [qs.inputNames[0]]: x });
    qo[qs.inputNames[0]] = x;
    pairs.forEach((p, k) => add(acc[k], p, fo[p.tensor], qo[p.quant_tensor], p.quant_tensor));
    if (ls) {
      const feeds = { [ls.inputNames[0]]: x };
      for (const c of cutInfo.cuts) {
        const q = qo[c.name]; const f = fo[c.float];
        if (!q || !f || q.data.length !== f.data.length) throw new Error(`cannot feed ${c.name} from ${c.float}`);
        feeds[c.name] = new ort.Tensor(q.type, domain(f.data, c, q.type), q.dims);
      }
      const lo = await ls.run(feeds);
      Object.assign(lo, feeds);
      pairs.forEach((p, k) => add(lacc[k], p, fo[p.tensor], lo[cutInfo.local[p.quant_tensor]], p.quant_tensor));
    }
  }

  let bad = 0; let need = 0;
  const worst = { cosine_mean: 0, cosine_min: 0, sqnr_db: 0 };
  if (ls) Object.assign(worst, { local_cosine_mean: 0, local_cosine_min: 0, local_sqnr_db: 0 });
  const metrics = (A) => ({
    cosine_mean: A.n ? A.cosSum / A.n : NaN,
    cosine_min: A.n ? A.cosMin : NaN,
    sqnr_db: A.see === 0 ? Infinity : A.sxx === 0 ? -Infinity : 10 * Math.log10(A.sxx / A.see),
  });
  pairs.forEach((p, k) => {
    const A = acc[k];
    const o = metrics(A);
    if (ls) {
      const l = metrics(lacc[k]);
      o.local_cosine_mean = l.cosine_mean; o.local_cosine_min = l.cosine_min; o.local_sqnr_db = l.sqnr_db;
      A.missing = A.missing || lacc[k].missing;
    }
    const fmt = (m) => `${m} ${compare ? `qreport ${num(p[m]).toPrecision(8)} ` : ''}ORT ${o[m].toPrecision(8)}`;
    if (A.missing) {
      bad++;
      console.log(`not ok ${k + 1} - ${p.tensor} <-> ${p.quant_tensor}: ${A.missing}`);
      return;
    }
    let good = true;
    if (compare) {
      for (const m of Object.keys(worst)) {
        const a = num(p[m]); const b = o[m];
        if (!close(a, b, tol)) good = false;
        if (Number.isFinite(a) && Number.isFinite(b)) {
          worst[m] = Math.max(worst[m], Math.abs(a - b));
          need = Math.max(need, Math.abs(a - b) / Math.max(1, Math.abs(b)));
        }
      }
    }
    if (!good) bad++;
    console.log(`${good ? 'ok' : 'not ok'} ${k + 1} - ${p.tensor} <-> ${p.quant_tensor} (${p.match}): ${Object.keys(worst).map(fmt).join(', ')}`);
  });
  console.log(`1..${pairs.length}`);
  if (compare) {
    console.log(`# max |diff| ${Object.keys(worst).map((m) => `${m} ${worst[m].toExponential(2)}`).join(' ')} worst |diff|/max(1,|ORT|) ${need.toExponential(2)} (${pairs.length} pairs, ${names.length} samples, bound ${tol})`);
  }
  process.exit(bad ? 1 : 0);
})().catch((e) => { console.error(`activations_ort.js: ${e.message}`); process.exit(2); });
