// npy.js: read and write NumPy .npy files (v1/v2, C order) for the
// ONNX Runtime cross-checks and benchmarks.
'use strict';
const fs = require('fs');

const TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
  '<i4': ['int32', Int32Array], '<i8': ['int64', BigInt64Array],
  '|b1': ['bool', Uint8Array], '<u2': ['uint16', Uint16Array],
  '<i2': ['int16', Int16Array],
};

function read(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1]
    .split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${path}: Fortran order`);
  const t = TYPES[descr];
  if (!t) throw new Error(`${path}: dtype ${descr} not handled`);
  const off = hstart + hlen;
  const bytes = buf.subarray(off);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  const data = new t[1](copy.buffer, 0, bytes.length / t[1].BYTES_PER_ELEMENT);
  return { type: t[0], dims: shape, data };
}

function write(path, type, dims, data) {
  const descr = Object.keys(TYPES).find((k) => TYPES[k][0] === type);
  let h = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims.join(', ')}${dims.length === 1 ? ',' : ''}), }`;
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(h.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([head, Buffer.from(h, 'latin1'), body]));
}

module.exports = { read, write };
