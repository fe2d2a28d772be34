// RUN: ipu-opt %s --split-input-file --verify-diagnostics

// What the pooling verifier refuses, each with the reason.

func.func @result_shape(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x1x1xf32> {
  // A floor-mode window count of (4 - 3) / 2 + 1 = 1 per axis would fit; ceil mode makes it 2.
  // expected-error @+1 {{'nn.max_pool' op result #0 has type 'tensor<1x1x1x1xf32>', but the inferred type is 'tensor<1x1x2x2xf32>'}}
  %0 = nn.max_pool %x {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : tensor<1x1x4x4xf32> -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

func.func @kernel_rank(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3xf32> {
  // expected-error @+1 {{'nn.average_pool' op 'kernel_shape' must have 2 entries for 2 spatial dimension(s), but has 1}}
  %0 = nn.average_pool %x {kernel_shape = array<i64: 2>} : tensor<1x1x4x4xf32> -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}

// -----

func.func @pads_not_below_kernel(%x: tensor<1x1x8xf32>) -> tensor<1x1x11xf32> {
  // expected-error @+1 {{'nn.max_pool' op pads (2, 2) of spatial axis 0 must be smaller than its kernel extent 2}}
  %0 = nn.max_pool %x {kernel_shape = array<i64: 2>, pads = array<i64: 2, 2>} : tensor<1x1x8xf32> -> tensor<1x1x11xf32>
  return %0 : tensor<1x1x11xf32>
}

// -----

func.func @window_too_large(%x: tensor<1x1x4xf32>) -> tensor<1x1x1xf32> {
  // expected-error @+1 {{'nn.max_pool' op spatial axis 0: window extent 7 exceeds the padded input extent 4}}
  %0 = nn.max_pool %x {dilations = array<i64: 3>, kernel_shape = array<i64: 3>} : tensor<1x1x4xf32> -> tensor<1x1x1xf32>
  return %0 : tensor<1x1x1xf32>
}

// -----

func.func @integer_average(%x: tensor<1x1x4xi32>) -> tensor<1x1x3xi32> {
  // expected-error @+1 {{'nn.average_pool' op averages floats, but the input has element type 'i32'}}
  %0 = nn.average_pool %x {kernel_shape = array<i64: 2>} : tensor<1x1x4xi32> -> tensor<1x1x3xi32>
  return %0 : tensor<1x1x3xi32>
}

// -----

func.func @missing_kernel(%x: tensor<1x1x4xf32>) -> tensor<1x1x3xf32> {
  // expected-error @+1 {{'nn.max_pool' op requires attribute 'kernel_shape'}}
  %0 = nn.max_pool %x : tensor<1x1x4xf32> -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}
