// The patch embedding's matcher refuses convolutions it cannot lower as a
// rearrangement plus one product, with a located error that says what the
// lowering takes.

// RUN: not ipu-opt %s --split-input-file --pass-pipeline='builtin.module(ipu-lower)' 2>&1 | filecheck %s

// Overlapping patches (a stride below the kernel) are not a rearrangement.
// CHECK: patch-errors.mlir:[[@LINE+3]]:8: error: 'nn.conv2d' op the kernel must be square, over every channel, with its side as its stride; the lowering takes a patch embedding
func.func @overlapping(%x: tensor<1x1x5x5xf16>) -> tensor<1x16x16xf16> {
  %w = nn.constant dense<0.5> : tensor<16x1x2x2xf16>
  %e = nn.conv2d %x, %w : tensor<1x1x5x5xf16>, tensor<16x1x2x2xf16> -> tensor<1x16x4x4xf16>
  %r = nn.reshape %e {shape = array<i64: 1, 16, 16>} : tensor<1x16x4x4xf16> -> tensor<1x16x16xf16>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<1x16x16xf16> -> tensor<1x16x16xf16>
  %p = nn.constant dense<0.25> : tensor<1x16x16xf16>
  %y = nn.add %t, %p : tensor<1x16x16xf16>, tensor<1x16x16xf16> -> tensor<1x16x16xf16>
  return %y : tensor<1x16x16xf16>
}

// -----

// Padding would put zeros that are not pixels into the patch rows.
// CHECK: patch-errors.mlir:[[@LINE+3]]:8: error: 'nn.conv2d' op the convolution must have no padding or dilation
func.func @padded(%x: tensor<1x1x6x6xf16>) -> tensor<1x16x16xf16> {
  %w = nn.constant dense<0.5> : tensor<16x1x2x2xf16>
  %e = nn.conv2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x1x6x6xf16>, tensor<16x1x2x2xf16> -> tensor<1x16x4x4xf16>
  %r = nn.reshape %e {shape = array<i64: 1, 16, 16>} : tensor<1x16x4x4xf16> -> tensor<1x16x16xf16>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<1x16x16xf16> -> tensor<1x16x16xf16>
  %p = nn.constant dense<0.25> : tensor<1x16x16xf16>
  %y = nn.add %t, %p : tensor<1x16x16xf16>, tensor<1x16x16xf16> -> tensor<1x16x16xf16>
  return %y : tensor<1x16x16xf16>
}

// -----

// The tokens must get a position table: a bare convolution is not matched
// as a patch embedding.
// CHECK: patch-errors.mlir:[[@LINE+5]]:8: error: 'nn.transpose' op the tokens' only user is not the position add
func.func @no_positions(%x: tensor<1x1x8x8xf16>) -> tensor<1x16x16xf16> {
  %w = nn.constant dense<0.5> : tensor<16x1x2x2xf16>
  %e = nn.conv2d %x, %w {strides = array<i64: 2, 2>} : tensor<1x1x8x8xf16>, tensor<16x1x2x2xf16> -> tensor<1x16x4x4xf16>
  %r = nn.reshape %e {shape = array<i64: 1, 16, 16>} : tensor<1x16x4x4xf16> -> tensor<1x16x16xf16>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<1x16x16xf16> -> tensor<1x16x16xf16>
  %y = nn.gelu %t : tensor<1x16x16xf16> -> tensor<1x16x16xf16>
  return %y : tensor<1x16x16xf16>
}
