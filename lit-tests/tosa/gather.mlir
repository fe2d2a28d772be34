// tosa.gather is batched (values[N,K,C], indices[N,W]); ONNX Gather is not: the values are flattened and the indices offset by n*K.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.reshape {{.*}}shape = array<i64: 6, 2>
// CHECK: nn.add
// CHECK: nn.gather {{.*}}axis = 0
// CHECK-NOT: tosa.
// VALUES: output_0 = [4.0000, 5.0000, 0.0000, 1.0000, 8.0000, 9.0000, 8.0000, 9.0000]
// TOSA: tosa.gather
func.func @main() -> tensor<2x2x2xf32> {
  %v = "tosa.const"() {values = dense<[[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [[6.0, 7.0], [8.0, 9.0], [10.0, 11.0]]]> : tensor<2x3x2xf32>} : () -> tensor<2x3x2xf32>
  %i = "tosa.const"() {values = dense<[[2, 0], [1, 1]]> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
  %r = tosa.gather %v, %i : (tensor<2x3x2xf32>, tensor<2x2xi32>) -> tensor<2x2x2xf32>
  return %r : tensor<2x2x2xf32>
}
