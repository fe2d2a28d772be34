// A layer whose MLP reads the layer input directly (no LayerNorm before
// it) and that has no attention: not the pre-norm block extract-block cuts.
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w1 = nn.constant dense<0.5> : tensor<4x8xf32> loc("onnx::MatMul_1")
  %w2 = nn.constant dense<0.25> : tensor<8x4xf32> loc("onnx::MatMul_2")
  %0 = nn.linear %x, %w1 : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32> loc("/model/encoder/layers.0/mlp/fc1/MatMul")
  %1 = nn.linear %0, %w2 : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32> loc("/model/encoder/layers.0/mlp/fc2/MatMul")
  %2 = nn.add %x, %1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("/model/encoder/layers.0/Add_1")
  return %2 : tensor<2x4xf32>
}
