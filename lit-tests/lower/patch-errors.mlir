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

// -----

// Every block of a chain has the whole chip, and the patch embedding
// needs a row tile per 6 patch rows: 14400 rows need 2400, more than the
// chip has, and the error says which block and why.
// CHECK: patch-errors.mlir:[[@LINE+3]]:8: error: 'nn.conv2d' op cannot plan the patch embedding (block 0 of the chain's 2): 14400 patch rows need 2400 row tiles and the product tiles of its own: the block has 1472 (the blocks share the chip's tiles one after another; each keeps its weights and inputs in memory of its own: blocks 0..0 keep 0 of every tile's 425984 bytes of interleaved memory)
func.func @too_many_rows(%x: tensor<1x3x960x960xf16>) -> tensor<1x14400x16xf16> {
  %w = nn.constant dense<0.01> : tensor<16x3x8x8xf16>
  %e = nn.conv2d %x, %w {strides = array<i64: 8, 8>} : tensor<1x3x960x960xf16>, tensor<16x3x8x8xf16> -> tensor<1x16x120x120xf16>
  %r = nn.reshape %e {shape = array<i64: 1, 16, 14400>} : tensor<1x16x120x120xf16> -> tensor<1x16x14400xf16>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<1x16x14400xf16> -> tensor<1x14400x16xf16>
  %p = nn.constant dense<0.25> : tensor<1x14400x16xf16>
  %a = nn.add %t, %p : tensor<1x14400x16xf16>, tensor<1x14400x16xf16> -> tensor<1x14400x16xf16>
  %g = nn.constant dense<1.0> : tensor<16xf16>
  %b = nn.constant dense<0.0> : tensor<16xf16>
  %ln = nn.layer_normalization %a, %g, %b {acc_type = f32, axis = -1 : i64, epsilon = 1.000000e-06 : f32} : tensor<1x14400x16xf16>, tensor<16xf16>, tensor<16xf16> -> tensor<1x14400x16xf16>
  %w1 = nn.constant dense<0.1> : tensor<16x32xf16>
  %b1 = nn.constant dense<0.0> : tensor<32xf16>
  %h = nn.linear %ln, %w1, %b1 : tensor<1x14400x16xf16>, tensor<16x32xf16>, tensor<32xf16> -> tensor<1x14400x32xf16>
  %u = nn.gelu %h {approximate = "tanh"} : tensor<1x14400x32xf16> -> tensor<1x14400x32xf16>
  %w2 = nn.constant dense<0.1> : tensor<32x16xf16>
  %o = nn.linear %u, %w2 : tensor<1x14400x32xf16>, tensor<32x16xf16> -> tensor<1x14400x16xf16>
  %y = nn.add %a, %o : tensor<1x14400x16xf16>, tensor<1x14400x16xf16> -> tensor<1x14400x16xf16>
  return %y : tensor<1x14400x16xf16>
}
