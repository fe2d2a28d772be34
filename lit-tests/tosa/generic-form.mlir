// convert-tosa-to-nn on ipuc IR alone: TOSA in upstream's generic form,
// parsed by ipuc as unregistered ops (no upstream MLIR needed; this runs in
// every build). Shapes come from tosa.const_shape, which is erased.
// RUN: ipu-opt %s --allow-unregistered-dialect --convert-tosa-to-nn | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[S:.*]] = nn.softmax
// CHECK-NEXT: %[[R:.*]] = nn.reshape %[[S]] {shape = array<i64: 8>} : tensor<2x4xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[E:.*]] = nn.exp %[[R]]
// CHECK-NEXT: return %[[E]]
// CHECK-NOT: tosa.
func.func @main(%x: tensor<2x4xf32>) -> tensor<8xf32> {
  %0 = nn.softmax %x {axis = -1 : i64} : tensor<2x4xf32> -> tensor<2x4xf32>
  %s = "tosa.const_shape"() <{values = dense<8> : tensor<1xindex>}> : () -> !tosa.shape<1>
  %1 = "tosa.reshape"(%0, %s) : (tensor<2x4xf32>, !tosa.shape<1>) -> tensor<8xf32>
  %2 = "tosa.exp"(%1) : (tensor<8xf32>) -> tensor<8xf32>
  return %2 : tensor<8xf32>
}
