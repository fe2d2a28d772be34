// RUN: ipu-opt %s | filecheck %s
// RUN: ipu-opt %s | ipu-opt | filecheck %s
// RUN: ipu-opt %s --mlir-print-op-generic | ipu-opt | filecheck %s

// The custom form of every nn op: `operands attr-dict : operand-types -> result-types`.

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>, %arg2: tensor<2x3xi32>, %arg3: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK-NEXT: %0 = nn.add %arg0, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %0 = nn.add %arg0, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %1 = nn.sub %0, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %1 = nn.sub %0, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %2 = nn.mul %1, %1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = nn.mul %1, %1 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %3 = nn.div %2, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %3 = nn.div %2, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %4 = nn.mod %3, %arg0 {fmod = 1 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = nn.mod %3, %arg0 {fmod = 1 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %5 = nn.mod %arg2, %arg2 : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  %5 = nn.mod %arg2, %arg2 : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
  // CHECK-NEXT: %6 = nn.pow %4, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %6 = nn.pow %4, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %7 = nn.max %6, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %7 = nn.max %6, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %8 = nn.min %7, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %8 = nn.min %7, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %9 = nn.sqrt %8 : tensor<2x3xf32> -> tensor<2x3xf32>
  %9 = nn.sqrt %8 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %10 = nn.reciprocal %9 : tensor<2x3xf32> -> tensor<2x3xf32>
  %10 = nn.reciprocal %9 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %11 = nn.exp %10 : tensor<2x3xf32> -> tensor<2x3xf32>
  %11 = nn.exp %10 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %12 = nn.log %11 : tensor<2x3xf32> -> tensor<2x3xf32>
  %12 = nn.log %11 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %13 = nn.tanh %12 : tensor<2x3xf32> -> tensor<2x3xf32>
  %13 = nn.tanh %12 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %14 = nn.erf %13 : tensor<2x3xf32> -> tensor<2x3xf32>
  %14 = nn.erf %13 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %15 = nn.neg %14 : tensor<2x3xf32> -> tensor<2x3xf32>
  %15 = nn.neg %14 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %16 = nn.abs %15 : tensor<2x3xf32> -> tensor<2x3xf32>
  %16 = nn.abs %15 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %17 = nn.relu %16 : tensor<2x3xf32> -> tensor<2x3xf32>
  %17 = nn.relu %16 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %18 = nn.sigmoid %17 : tensor<2x3xf32> -> tensor<2x3xf32>
  %18 = nn.sigmoid %17 : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %19 = nn.equal %18, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  %19 = nn.equal %18, %arg1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  // CHECK-NEXT: %20 = nn.less %arg2, %5 : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi1>
  %20 = nn.less %arg2, %5 : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi1>
  // CHECK-NEXT: %21 = nn.greater %18, %arg0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
  %21 = nn.greater %18, %arg0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
  // CHECK-NEXT: %22 = nn.where %arg3, %18, %arg1 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %22 = nn.where %arg3, %18, %arg1 : tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %23 = nn.cast %22 {saturate = 0 : i64, to = f8E4M3FNUZ} : tensor<2x3xf32> -> tensor<2x3xf8E4M3FNUZ>
  %23 = nn.cast %22 {to = f8E4M3FNUZ, saturate = 0 : i64} : tensor<2x3xf32> -> tensor<2x3xf8E4M3FNUZ>
  // CHECK-NEXT: %24 = nn.cast %23 {to = f32} : tensor<2x3xf8E4M3FNUZ> -> tensor<2x3xf32>
  %24 = nn.cast %23 {to = f32} : tensor<2x3xf8E4M3FNUZ> -> tensor<2x3xf32>
  // CHECK-NEXT: return %24 : tensor<2x3xf32>
  return %24 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @contractions
func.func @contractions(%arg0: tensor<729x1152xf16>, %arg1: tensor<1152x4304xf8E4M3FNUZ>, %arg2: tensor<2x729x1152xf32>, %arg3: tensor<1152x4304xf32>, %arg4: tensor<4304xf32>) -> (tensor<729x4304xf16>, tensor<2x729x4304xf32>, tensor<2x729x4304xf32>, tensor<4304x4304xf32>) {
  // CHECK-NEXT: %0 = nn.matmul %arg0, %arg1 : tensor<729x1152xf16>, tensor<1152x4304xf8E4M3FNUZ> -> tensor<729x4304xf16>
  %0 = nn.matmul %arg0, %arg1 : tensor<729x1152xf16>, tensor<1152x4304xf8E4M3FNUZ> -> tensor<729x4304xf16>
  // CHECK-NEXT: %1 = nn.matmul %arg2, %arg3 : tensor<2x729x1152xf32>, tensor<1152x4304xf32> -> tensor<2x729x4304xf32>
  %1 = nn.matmul %arg2, %arg3 : tensor<2x729x1152xf32>, tensor<1152x4304xf32> -> tensor<2x729x4304xf32>
  // CHECK-NEXT: %2 = nn.linear %arg2, %arg3, %arg4 : tensor<2x729x1152xf32>, tensor<1152x4304xf32>, tensor<4304xf32> -> tensor<2x729x4304xf32>
  %2 = nn.linear %arg2, %arg3, %arg4 : tensor<2x729x1152xf32>, tensor<1152x4304xf32>, tensor<4304xf32> -> tensor<2x729x4304xf32>
  // CHECK-NEXT: %3 = nn.gemm %arg3, %arg3, %arg4 {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, transA = 1 : i64} : tensor<1152x4304xf32>, tensor<1152x4304xf32>, tensor<4304xf32> -> tensor<4304x4304xf32>
  %3 = nn.gemm %arg3, %arg3, %arg4 {alpha = 0.5 : f32, beta = 2.0 : f32, transA = 1 : i64} : tensor<1152x4304xf32>, tensor<1152x4304xf32>, tensor<4304xf32> -> tensor<4304x4304xf32>
  // CHECK-NEXT: return %0, %1, %2, %3
  return %0, %1, %2, %3 : tensor<729x4304xf16>, tensor<2x729x4304xf32>, tensor<2x729x4304xf32>, tensor<4304x4304xf32>
}

// CHECK-LABEL: func.func @patch_embedding
func.func @patch_embedding(%arg0: tensor<1x3x384x384xf32>, %arg1: tensor<1152x3x14x14xf32>, %arg2: tensor<1152xf32>) -> tensor<1x1152x27x27xf32> {
  // CHECK-NEXT: %0 = nn.conv2d %arg0, %arg1, %arg2 {strides = array<i64: 14, 14>} : tensor<1x3x384x384xf32>, tensor<1152x3x14x14xf32>, tensor<1152xf32> -> tensor<1x1152x27x27xf32>
  %0 = nn.conv2d %arg0, %arg1, %arg2 {strides = array<i64: 14, 14>} : tensor<1x3x384x384xf32>, tensor<1152x3x14x14xf32>, tensor<1152xf32> -> tensor<1x1152x27x27xf32>
  return %0 : tensor<1x1152x27x27xf32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%arg0: tensor<2x3xf32>, %arg1: tensor<4xi64>) -> (tensor<3x2xf32>, tensor<2x1xf32>, tensor<2x2xf32>, tensor<3x2xf32>) {
  // CHECK-NEXT: %0 = nn.reshape %arg0 {shape = array<i64: 3, 2>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %0 = nn.reshape %arg0 {shape = array<i64: 3, 2>} : tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK-NEXT: %1 = nn.transpose %0 {perm = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32>
  %1 = nn.transpose %0 {perm = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %2 = nn.concat %1, %arg0 {axis = -1 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  %2 = nn.concat %1, %arg0 {axis = -1 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  // CHECK-NEXT: %3:3 = nn.split %2 {axis = 1 : i64, sizes = array<i64: 1, 2, 3>} : tensor<2x6xf32> -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
  %3:3 = nn.split %2 {axis = 1 : i64, sizes = array<i64: 1, 2, 3>} : tensor<2x6xf32> -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
  // CHECK-NEXT: %4 = nn.slice %3#2 {axes = array<i64: 1>, ends = array<i64: -9223372036854775808>, starts = array<i64: -1>, steps = array<i64: -1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = nn.slice %3#2 {starts = array<i64: -1>, ends = array<i64: -9223372036854775808>, axes = array<i64: 1>, steps = array<i64: -1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %5 = nn.gather %4, %arg1 {axis = 1 : i64} : tensor<2x3xf32>, tensor<4xi64> -> tensor<2x4xf32>
  %5 = nn.gather %4, %arg1 {axis = 1 : i64} : tensor<2x3xf32>, tensor<4xi64> -> tensor<2x4xf32>
  // CHECK-NEXT: %6 = nn.unsqueeze %5 {axes = array<i64: 0, -1>} : tensor<2x4xf32> -> tensor<1x2x4x1xf32>
  %6 = nn.unsqueeze %5 {axes = array<i64: 0, -1>} : tensor<2x4xf32> -> tensor<1x2x4x1xf32>
  // CHECK-NEXT: %7 = nn.squeeze %6 : tensor<1x2x4x1xf32> -> tensor<2x4xf32>
  %7 = nn.squeeze %6 : tensor<1x2x4x1xf32> -> tensor<2x4xf32>
  // CHECK-NEXT: %8 = nn.flatten %6 {axis = 2 : i64} : tensor<1x2x4x1xf32> -> tensor<2x4xf32>
  %8 = nn.flatten %6 {axis = 2 : i64} : tensor<1x2x4x1xf32> -> tensor<2x4xf32>
  // CHECK-NEXT: %9 = nn.expand %3#0 {shape = array<i64: 3, 2, 2>} : tensor<2x1xf32> -> tensor<3x2x2xf32>
  %9 = nn.expand %3#0 {shape = array<i64: 3, 2, 2>} : tensor<2x1xf32> -> tensor<3x2x2xf32>
  // CHECK-NEXT: %10 = nn.tile %3#1 {repeats = array<i64: 1, 2>} : tensor<2x2xf32> -> tensor<2x4xf32>
  %10 = nn.tile %3#1 {repeats = array<i64: 1, 2>} : tensor<2x2xf32> -> tensor<2x4xf32>
  // CHECK-NEXT: %11 = nn.pad %3#0 {pads = array<i64: 0, 0, 1, 1>, value = -1.000000e+00 : f32} : tensor<2x1xf32> -> tensor<3x2xf32>
  %11 = nn.pad %3#0 {pads = array<i64: 0, 0, 1, 1>, value = -1.0 : f32} : tensor<2x1xf32> -> tensor<3x2xf32>
  // CHECK-NEXT: %12 = nn.identity %0 : tensor<3x2xf32> -> tensor<3x2xf32>
  %12 = nn.identity %0 : tensor<3x2xf32> -> tensor<3x2xf32>
  // CHECK-NEXT: return %12, %3#0, %3#1, %11
  return %12, %3#0, %3#1, %11 : tensor<3x2xf32>, tensor<2x1xf32>, tensor<2x2xf32>, tensor<3x2xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%arg0: tensor<2x3x4xf32>) -> (tensor<2x1x4xf32>, tensor<f32>, tensor<3xf32>) {
  // CHECK-NEXT: %0 = nn.reduce_mean %arg0 {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %0 = nn.reduce_mean %arg0 {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  // CHECK-NEXT: %1 = nn.reduce_sum %arg0 {keepdims = 0 : i64} : tensor<2x3x4xf32> -> tensor<f32>
  %1 = nn.reduce_sum %arg0 {keepdims = 0 : i64} : tensor<2x3x4xf32> -> tensor<f32>
  // CHECK-NEXT: %2 = nn.reduce_max %arg0 {axes = array<i64: 0, -1>, keepdims = 0 : i64} : tensor<2x3x4xf32> -> tensor<3xf32>
  %2 = nn.reduce_max %arg0 {axes = array<i64: 0, -1>, keepdims = 0 : i64} : tensor<2x3x4xf32> -> tensor<3xf32>
  return %0, %1, %2 : tensor<2x1x4xf32>, tensor<f32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @encoder_fragment
func.func @encoder_fragment(%arg0: tensor<1x729x1152xf32>, %arg1: tensor<1152xf32>, %arg2: tensor<1152xf32>, %arg3: tensor<1152x1152xf32>, %arg4: tensor<1x1x729x729xf32>) -> tensor<1x729x1152xf32> {
  // CHECK-NEXT: %0 = nn.layer_normalization %arg0, %arg1, %arg2 {axis = -1 : i64, epsilon = 1.000000e-06 : f32} : tensor<1x729x1152xf32>, tensor<1152xf32>, tensor<1152xf32> -> tensor<1x729x1152xf32>
  %0 = nn.layer_normalization %arg0, %arg1, %arg2 {axis = -1 : i64, epsilon = 1.000000e-06 : f32} : tensor<1x729x1152xf32>, tensor<1152xf32>, tensor<1152xf32> -> tensor<1x729x1152xf32>
  // CHECK-NEXT: %1 = nn.linear %0, %arg3, %arg1 : tensor<1x729x1152xf32>, tensor<1152x1152xf32>, tensor<1152xf32> -> tensor<1x729x1152xf32>
  %1 = nn.linear %0, %arg3, %arg1 : tensor<1x729x1152xf32>, tensor<1152x1152xf32>, tensor<1152xf32> -> tensor<1x729x1152xf32>
  // CHECK-NEXT: %2 = nn.attention %1, %1, %1, %arg4 {heads = 16 : i64, scale = 1.250000e-01 : f32} : tensor<1x729x1152xf32>, tensor<1x729x1152xf32>, tensor<1x729x1152xf32>, tensor<1x1x729x729xf32> -> tensor<1x729x1152xf32>
  %2 = nn.attention %1, %1, %1, %arg4 {heads = 16 : i64, scale = 1.250000e-01 : f32} : tensor<1x729x1152xf32>, tensor<1x729x1152xf32>, tensor<1x729x1152xf32>, tensor<1x1x729x729xf32> -> tensor<1x729x1152xf32>
  // CHECK-NEXT: %3 = nn.gelu %2 {approximate = "tanh"} : tensor<1x729x1152xf32> -> tensor<1x729x1152xf32>
  %3 = nn.gelu %2 {approximate = "tanh"} : tensor<1x729x1152xf32> -> tensor<1x729x1152xf32>
  // CHECK-NEXT: %4 = nn.softmax %3 {axis = -1 : i64} : tensor<1x729x1152xf32> -> tensor<1x729x1152xf32>
  %4 = nn.softmax %3 {axis = -1 : i64} : tensor<1x729x1152xf32> -> tensor<1x729x1152xf32>
  return %4 : tensor<1x729x1152xf32>
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<3xf32>, tensor<2x2xi8>, tensor<2xf32>) {
  // CHECK-NEXT: %0 = nn.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
  %0 = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  // CHECK-NEXT: %1 = nn.constant {note = "splat"} dense<7> : tensor<2x2xi8>
  %1 = nn.constant {note = "splat"} dense<7> : tensor<2x2xi8>
  // CHECK-NEXT: %2 = nn.constant dense_resource<w0> : tensor<2xf32>
  %2 = nn.constant dense_resource<w0> : tensor<2xf32>
  return %0, %1, %2 : tensor<3xf32>, tensor<2x2xi8>, tensor<2xf32>
}

// CHECK: dialect_resources
// CHECK: w0: "0x040000000000803F00000040"
{-#
  dialect_resources: {
    builtin: {
      w0: "0x040000000000803F00000040"
    }
  }
#-}
