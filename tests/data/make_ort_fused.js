// make_ort_fused.js: the dynamically quantized fixtures as ONNX Runtime's
// own optimiser rewrites them, saved the way a user saves an optimised
// model (SessionOptions.optimizedModelFilePath, level "extended"): its
// DynamicQuantizeMatMulFusion and MatMulIntegerToFloatFusion turn
// DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul (-> Add bias) into
// the com.microsoft ops of src/ops/op_matmul_int_float.c.
//
//   node tests/data/make_ort_fused.js      (needs tests/ort/node_modules)
//
//   dyn_fused.onnx   from dyn_quant.onnx: the MatMul and its bias become
//                    one DynamicQuantizeMatMul writing "out"; the conv
//                    stays DynamicQuantizeLinear, ConvInteger, Cast, Mul,
//                    Add
//   dyn2_fused.onnx  from dyn2_quant.onnx: one DynamicQuantizeLinear
//                    feeding two MatMulIntegerToFloat ("a" with the bias
//                    Add folded in, "b")
//   tfm_ortopt.onnx  from tfm_float.onnx (tests/data/make_fused_fixtures.py):
//                    FusedMatMul, com.microsoft Gelu
//   fz_ortopt.onnx   from fz_float.onnx: SimplifiedLayerNormalization,
//                    SkipLayerNormalization, com.microsoft Gelu
//   tfm_basic.onnx   from tfm_float.onnx at level "basic", as
//                    quant_pre_process optimises before quantizing: each
//                    Linear's MatMul + Add is one Gemm between Reshapes
//                    (make_fused_fixtures.py --qdq quantizes it)
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', 'ort', 'node_modules',
	'onnxruntime-node'));

const dir = path.join(__dirname, 'activations');
(async () => {
	for (const [src, dst] of [['dyn_quant', 'dyn_fused'],
		['dyn2_quant', 'dyn2_fused'], ['tfm_float', 'tfm_ortopt'],
		['fz_float', 'fz_ortopt']]) {
		await ort.InferenceSession.create(path.join(dir, src + '.onnx'), {
			graphOptimizationLevel: 'extended',
			optimizedModelFilePath: path.join(dir, dst + '.onnx'),
		});
		console.log('wrote', dst + '.onnx');
	}
	await ort.InferenceSession.create(path.join(dir, 'tfm_float.onnx'), {
		graphOptimizationLevel: 'basic',
		optimizedModelFilePath: path.join(dir, 'tfm_basic.onnx'),
	});
	console.log('wrote tfm_basic.onnx');
})().catch((e) => { console.error(e.message); process.exit(1); });
