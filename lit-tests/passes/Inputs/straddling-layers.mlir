// An op whose location fuses computing nodes of layers 0 and 1: no block
// boundary can separate them.
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = nn.add %x, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc(fused["/model/encoder/layers.0/Add_1", "/model/encoder/layers.1/layer_norm1/LayerNormalization"])
  return %0 : tensor<2x4xf32>
}
