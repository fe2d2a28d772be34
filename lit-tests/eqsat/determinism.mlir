// Same input, same output: with and without threads, and run to run (the
// functions are optimised in parallel by default).
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse))' --mlir-print-debuginfo > %t.a
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse))' --mlir-print-debuginfo > %t.b
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse))' --mlir-print-debuginfo --mlir-disable-threading > %t.c
// RUN: diff %t.a %t.b
// RUN: diff %t.a %t.c
// RUN: filecheck %s --input-file=%t.a
// CHECK-COUNT-3: nn.linear

func.func @a(%x: tensor<4x2xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %wq = nn.constant dense<1.0> : tensor<2x1xf32>
  %wk = nn.constant dense<2.0> : tensor<2x1xf32>
  %q = nn.linear %x, %wq : tensor<4x2xf32>, tensor<2x1xf32> -> tensor<4x1xf32>
  %k = nn.linear %x, %wk : tensor<4x2xf32>, tensor<2x1xf32> -> tensor<4x1xf32>
  return %q, %k : tensor<4x1xf32>, tensor<4x1xf32>
}
func.func @b(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = nn.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %1 = nn.add %0, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
func.func @c(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = nn.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %1 = nn.add %b, %0 : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
