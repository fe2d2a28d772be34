// An op convert-precision cannot retype: it is not an nn op and its
// tensors are floats, so the pass stops at it instead of guessing.
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "test.opaque"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
