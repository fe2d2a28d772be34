// The patch embedding of an export that did not fold its position table
// (so400m's): a 13x13 image in patches of 6 leaves its last row and column
// in no patch (the host writes those pixels where nothing reads them), and
// the position table is the rows an nn.gather picks from a constant table
// by constant indices, in an order of its own, which the lowering
// evaluates.

// On the simulator, against the reference executor on the same f16 IR: a
// wrong pixel or a wrong row of the table shows in the output.
// RUN: ipu-run %s --device sim | filecheck %s --check-prefix=SIM
// SIM: (@gathered_positions)
// SIM: output0 {{.*}} ok
// SIM: PASS

// The plan: 4 tokens from a 13x13 image.
// RUN: ipu-run %s --device sim --plan-report 2>&1 | filecheck %s --check-prefix=REPORT
// REPORT: block 0: private memory 0x{{[0-9a-f]+}}..0x{{[0-9a-f]+}} ({{[0-9]+}} bytes) patch embedding 3x13x13 patches of 6, 4 tokens x 16

// An index outside the table is an error at the gather.
// RUN: sed 's/\[\[3, 1, 4, 0\]\]/[[3, 1, 5, 0]]/' %s > %t.mlir
// RUN: not ipu-opt %t.mlir --pass-pipeline='builtin.module(ipu-lower)' 2>&1 | filecheck %s --check-prefix=BAD
// BAD: patch-gather.mlir.tmp.mlir:32:8: error: 'nn.gather' op a position index is outside the table's 5 rows

func.func @gathered_positions(%x: tensor<1x3x13x13xf16>) -> tensor<1x4x16xf16> {
  %w = nn.constant dense<0.05> : tensor<16x3x6x6xf16>
  %b = nn.constant dense<0.125> : tensor<16xf16>
  %e = nn.conv2d %x, %w, %b {strides = array<i64: 6, 6>} : tensor<1x3x13x13xf16>, tensor<16x3x6x6xf16>, tensor<16xf16> -> tensor<1x16x2x2xf16>
  %r = nn.reshape %e {shape = array<i64: 1, 16, 4>} : tensor<1x16x2x2xf16> -> tensor<1x16x4xf16>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<1x16x4xf16> -> tensor<1x4x16xf16>
  %table = nn.constant dense<[[-0.048, 0.060, 0.424, -0.034, 0.008, 0.087, -0.315, 0.012, 0.130, 0.293, -0.406, -0.197, -0.409, 0.310, 0.193, -0.458], [0.482, 0.465, 0.154, 0.116, -0.343, -0.485, 0.028, -0.440, -0.310, -0.258, -0.470, -0.036, -0.059, 0.342, 0.019, 0.140], [-0.000, 0.162, -0.043, -0.222, 0.498, 0.496, 0.340, 0.208, -0.185, -0.270, -0.211, -0.430, 0.266, -0.100, 0.347, -0.113], [0.458, 0.347, -0.499, -0.290, 0.410, -0.030, 0.480, -0.103, -0.427, 0.129, 0.279, -0.230, -0.413, -0.167, 0.464, 0.258], [-0.382, -0.254, -0.399, -0.440, 0.297, -0.322, 0.059, -0.053, -0.309, 0.232, -0.369, 0.144, -0.383, -0.079, -0.287, -0.230]]> : tensor<5x16xf16>
  %ids = nn.constant dense<[[3, 1, 4, 0]]> : tensor<1x4xi64>
  %p = nn.gather %table, %ids {axis = 0 : i64} : tensor<5x16xf16>, tensor<1x4xi64> -> tensor<1x4x16xf16>
  %a = nn.add %t, %p : tensor<1x4x16xf16>, tensor<1x4x16xf16> -> tensor<1x4x16xf16>
  return %a : tensor<1x4x16xf16>
}
