// ipu-run on IR: synthesise inputs and write a test data set, then run again
// against it (exact match), and check that a perturbed model fails it.

// RUN: ipu-run %s --device reference --seed 7 -o %t | filecheck %s --check-prefix=WRITE
// RUN: ipu-run %s --device reference --input %t --json | filecheck %s --check-prefix=PASS
// RUN: not ipu-run %S/Inputs/perturbed.mlir --device reference --input %t | filecheck %s --check-prefix=FAIL
// RUN: not ipu-run %s 2>&1 | filecheck %s --check-prefix=DEVICE

// WRITE: device   reference
// WRITE: synthesized:
// WRITE-NEXT: output_0 [2, 4] f32 (no expected output)
// WRITE: no expected outputs to compare with

// PASS: {"model":"{{.*}}roundtrip.mlir","device":"reference","function":"main",
// PASS-SAME: "passed":true,"outputs":[{"data_set":"{{.*}}","name":"output_0","shape":[2,4],"dtype":"f32","max_abs_err":0.0,

// FAIL: output_0 {{.*}} FAIL ({{[0-9]+}} mismatched elements)
// FAIL: FAIL: 1 of 1 output(s) exceed atol 1e-4, rtol 1e-3

// The simulator, the default device, compiles the function first; what
// the lowering cannot handle yet is an error at the op, saying what to do
// (the GELU codelet is f16, this function f32), and how to run the
// function anyway.
// DEVICE: error: {{.*}}roundtrip.mlir:[[@LINE+7]]:8: error: 'nn.gelu' op GELU after a product lowers to the IPU in f16 only yet (convert the function with --precision fp16)
// DEVICE-NEXT: help: to run it anyway, on the host reference executor (no lowering), add `--device reference`

func.func @main(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w = nn.constant dense<[[1.0, 0.5, -1.0, 2.0], [0.0, 1.5, 0.25, -0.5], [3.0, -2.0, 1.0, 0.75]]> : tensor<3x4xf32>
  %b = nn.constant dense<0.125> : tensor<4xf32>
  %0 = nn.linear %x, %w, %b : tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %1 = nn.gelu %0 {approximate = "tanh"} : tensor<2x4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
