// The expansion computes what nn.pow computes: the reference executor runs
// nn.pow(x, 5) on seeded inputs and stores inputs and outputs (%t), then
// runs the expanded example.powi on the same inputs and compares.

// RUN: rm -rf %t && ipu-run %S/Inputs/pow5-reference.mlir --device reference --seed 11 -o %t | filecheck %s --check-prefix=WRITE
// RUN: example-opt %s --pass-pipeline='builtin.module(func.func(example-expand-powi))' -o %t.expanded.mlir
// RUN: ipu-run %t.expanded.mlir --device reference --input %t --atol 1e-6 --rtol 1e-6 | filecheck %s
// WRITE: output_0 [3, 8] f32
// CHECK: PASS
func.func @main(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %0 = example.powi %x {exponent = 5} : tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
