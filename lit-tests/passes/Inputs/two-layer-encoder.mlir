// A fused two-layer pre-norm encoder (2 tokens, hidden 4, MLP 8) whose op
// locations are the ONNX node scopes of the legacy PyTorch exporter, as
// `eqsat-fuse` leaves them: fused ops carry every replaced node's name, and
// the shared GELU constants of layer 0 appear in layer 1's GELU too.
func.func @main(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %g = nn.constant dense<1.0> : tensor<4xf32> loc("model.encoder.layers.0.layer_norm1.weight")
  %b = nn.constant dense<0.5> : tensor<4xf32> loc("model.encoder.layers.0.layer_norm1.bias")
  %wqkv = nn.constant dense<0.25> : tensor<4x12xf32> loc(fused["onnx::MatMul_1", "/model/encoder/layers.0/self_attn/q_proj/MatMul"])
  %wo = nn.constant dense<0.125> : tensor<4x4xf32> loc("onnx::MatMul_2")
  %w1 = nn.constant dense<0.5> : tensor<4x8xf32> loc("onnx::MatMul_3")
  %b1 = nn.constant dense<0.1> : tensor<8xf32> loc("model.encoder.layers.0.mlp.fc1.bias")
  %w2 = nn.constant dense<-0.25> : tensor<8x4xf32> loc("onnx::MatMul_4")
  %e = nn.add %x, %x : tensor<1x2x4xf32>, tensor<1x2x4xf32> -> tensor<1x2x4xf32> loc("/model/embeddings/Add")
  %0 = nn.layer_normalization %e, %g, %b {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<1x2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.0/layer_norm1/LayerNormalization")
  %1 = nn.linear %0, %wqkv : tensor<1x2x4xf32>, tensor<4x12xf32> -> tensor<1x2x12xf32> loc(fused["/model/encoder/layers.0/self_attn/q_proj/MatMul", "/model/encoder/layers.0/self_attn/k_proj/MatMul", "/model/encoder/layers.0/self_attn/v_proj/MatMul"])
  %2:3 = nn.split %1 {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) loc("/model/encoder/layers.0/self_attn/q_proj/MatMul")
  %3 = nn.attention %2#0, %2#1, %2#2 {heads = 2 : i64} : tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32> -> tensor<1x2x4xf32> loc(fused["/model/encoder/layers.0/self_attn/Constant_9", "/model/encoder/layers.0/self_attn/MatMul", "/model/encoder/layers.0/self_attn/Softmax"])
  %4 = nn.linear %3, %wo : tensor<1x2x4xf32>, tensor<4x4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.0/self_attn/out_proj/MatMul")
  %5 = nn.add %e, %4 : tensor<1x2x4xf32>, tensor<1x2x4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.0/Add")
  %6 = nn.layer_normalization %5, %g, %b {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<1x2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.0/layer_norm2/LayerNormalization")
  %7 = nn.linear %6, %w1, %b1 : tensor<1x2x4xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<1x2x8xf32> loc(fused["/model/encoder/layers.0/mlp/fc1/MatMul", "/model/encoder/layers.0/mlp/fc1/Add"])
  %8 = nn.gelu %7 {approximate = "tanh"} : tensor<1x2x8xf32> -> tensor<1x2x8xf32> loc(fused["/model/encoder/layers.0/mlp/activation_fn/Constant", "/model/encoder/layers.0/mlp/activation_fn/Mul"])
  %9 = nn.linear %8, %w2 : tensor<1x2x8xf32>, tensor<8x4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.0/mlp/fc2/MatMul")
  %10 = nn.add %5, %9 : tensor<1x2x4xf32>, tensor<1x2x4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.0/Add_1")
  %11 = nn.layer_normalization %10, %g, %b {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<1x2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.1/layer_norm1/LayerNormalization")
  %12 = nn.linear %11, %wqkv : tensor<1x2x4xf32>, tensor<4x12xf32> -> tensor<1x2x12xf32> loc("/model/encoder/layers.1/self_attn/q_proj/MatMul")
  %13:3 = nn.split %12 {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : tensor<1x2x12xf32> -> (tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) loc("/model/encoder/layers.1/self_attn/q_proj/MatMul")
  %14 = nn.attention %13#0, %13#1, %13#2 {heads = 2 : i64} : tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.1/self_attn/MatMul")
  %15 = nn.linear %14, %wo : tensor<1x2x4xf32>, tensor<4x4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.1/self_attn/out_proj/MatMul")
  %16 = nn.add %10, %15 : tensor<1x2x4xf32>, tensor<1x2x4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.1/Add")
  %17 = nn.layer_normalization %16, %g, %b {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<1x2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.1/layer_norm2/LayerNormalization")
  %18 = nn.linear %17, %w1, %b1 : tensor<1x2x4xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<1x2x8xf32> loc("/model/encoder/layers.1/mlp/fc1/MatMul")
  %19 = nn.gelu %18 {approximate = "tanh"} : tensor<1x2x8xf32> -> tensor<1x2x8xf32> loc(fused["/model/encoder/layers.0/mlp/activation_fn/Constant_1", "/model/encoder/layers.1/mlp/activation_fn/Mul"])
  %20 = nn.linear %19, %w2 : tensor<1x2x8xf32>, tensor<8x4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.1/mlp/fc2/MatMul")
  %21 = nn.add %16, %20 : tensor<1x2x4xf32>, tensor<1x2x4xf32> -> tensor<1x2x4xf32> loc("/model/encoder/layers.1/Add_1")
  %22 = nn.layer_normalization %21, %g, %b {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<1x2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x2x4xf32> loc("/model/post_layernorm/LayerNormalization")
  return %22 : tensor<1x2x4xf32>
}
