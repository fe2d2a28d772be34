// A weight that no FP8 scale represents: one NaN among finite values (the
// largest magnitude's fold once skipped NaNs and let it through).
func.func @main(%x: tensor<1x2xf32>) -> tensor<1x1xf32> {
  %w = nn.constant dense<[[0x7FC00000], [1.0]]> : tensor<2x1xf32>
  %0 = nn.matmul %x, %w : tensor<1x2xf32>, tensor<2x1xf32> -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}
