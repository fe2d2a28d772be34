// RUN: example-opt %s --split-input-file --verify-diagnostics

// The dialect's verifier runs on parsed input.
func.func @zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'example.powi' needs an exponent of at least 1, found 0}}
  %0 = example.powi %x {exponent = 0} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{exponent}}
  %0 = example.powi %x {exponent = 2.0} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
