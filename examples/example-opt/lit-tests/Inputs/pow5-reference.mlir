// x^5 through nn.pow, the independent reference for numerics.mlir.
func.func @main(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %e = nn.constant dense<5.0> : tensor<f32>
  %0 = nn.pow %x, %e : tensor<3x8xf32>, tensor<f32> -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
