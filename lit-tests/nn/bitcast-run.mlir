// The reference executor's nn.bitcast: the bytes of each element read as
// the new type (values from numpy's `view`).
// RUN: ipu-run %s --device reference --print-outputs | filecheck %s

// float32 [1.0, -2.0, 0.5].view(int32)
// CHECK: output_0 = [1065353216.0000, -1073741824.0000, 1056964608.0000]
// int8 [-1, 127, -128].view(uint8)
// CHECK: output_1 = [255.0000, 127.0000, 128.0000]
func.func @main() -> (tensor<3xi32>, tensor<3xui8>) {
  %x = nn.constant dense<[1.0, -2.0, 0.5]> : tensor<3xf32>
  %y = nn.constant dense<[-1, 127, -128]> : tensor<3xi8>
  %0 = nn.bitcast %x {to = i32} : tensor<3xf32> -> tensor<3xi32>
  %1 = nn.bitcast %y {to = ui8} : tensor<3xi8> -> tensor<3xui8>
  return %0, %1 : tensor<3xi32>, tensor<3xui8>
}
