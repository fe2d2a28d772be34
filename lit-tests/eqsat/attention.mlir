// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse{rules=algebra,attention}))' | filecheck %s

// Hugging Face eager attention: heads split as [B,S,H,D] -> [B,H,S,D], the
// key transposed twice, the scale after q.k^T.
// CHECK-LABEL: func.func @batch_first
// CHECK-NEXT: %[[A:.*]] = nn.attention %arg0, %arg1, %arg2 {heads = 4 : i64, scale = 2.500000e-01 : f32} : tensor<1x16x64xf32>, tensor<1x16x64xf32>, tensor<1x16x64xf32> -> tensor<1x16x64xf32>
// CHECK-NEXT: return %[[A]]
func.func @batch_first(%q: tensor<1x16x64xf32>, %k: tensor<1x16x64xf32>, %v: tensor<1x16x64xf32>) -> tensor<1x16x64xf32> {
  %s = nn.constant dense<0.25> : tensor<f32>
  %qr = nn.reshape %q {shape = array<i64: 1, 16, 4, 16>} : tensor<1x16x64xf32> -> tensor<1x16x4x16xf32>
  %qt = nn.transpose %qr {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x4x16xf32> -> tensor<1x4x16x16xf32>
  %kr = nn.reshape %k {shape = array<i64: 1, 16, 4, 16>} : tensor<1x16x64xf32> -> tensor<1x16x4x16xf32>
  %kt = nn.transpose %kr {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x4x16xf32> -> tensor<1x4x16x16xf32>
  %ktt = nn.transpose %kt {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32>
  %vr = nn.reshape %v {shape = array<i64: 1, 16, 4, 16>} : tensor<1x16x64xf32> -> tensor<1x16x4x16xf32>
  %vt = nn.transpose %vr {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x4x16xf32> -> tensor<1x4x16x16xf32>
  %sc = nn.matmul %qt, %ktt : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32>
  %ss = nn.mul %sc, %s : tensor<1x4x16x16xf32>, tensor<f32> -> tensor<1x4x16x16xf32>
  %p = nn.softmax %ss {axis = -1 : i64} : tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32>
  %o = nn.matmul %p, %vt : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32>
  %ot = nn.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x16x16xf32> -> tensor<1x16x4x16xf32>
  %or = nn.reshape %ot {shape = array<i64: 1, 16, 64>} : tensor<1x16x4x16xf32> -> tensor<1x16x64xf32>
  return %or : tensor<1x16x64xf32>
}

// torch.nn.MultiheadAttention (SigLIP's pooling head, one probe query):
// batch-first inputs transposed to sequence-first, heads folded into the
// batch, q scaled before q.k^T, the output merged to [L*B, E].
// CHECK-LABEL: func.func @pooling_head
// CHECK-NEXT: %[[A:.*]] = nn.attention %arg0, %arg1, %arg2 {heads = 4 : i64, scale = 2.500000e-01 : f32} : tensor<2x1x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32> -> tensor<2x1x64xf32>
// CHECK-NEXT: %[[T:.*]] = nn.transpose %[[A]] {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[R:.*]] = nn.reshape %[[T]] {shape = array<i64: 2, 64>}
// CHECK-NEXT: return %[[R]]
func.func @pooling_head(%qb: tensor<2x1x64xf32>, %kb: tensor<2x16x64xf32>, %vb: tensor<2x16x64xf32>) -> tensor<2x64xf32> {
  %s = nn.constant dense<0.25> : tensor<f32>
  %q = nn.transpose %qb {perm = array<i64: 1, 0, 2>} : tensor<2x1x64xf32> -> tensor<1x2x64xf32>
  %k = nn.transpose %kb {perm = array<i64: 1, 0, 2>} : tensor<2x16x64xf32> -> tensor<16x2x64xf32>
  %v = nn.transpose %vb {perm = array<i64: 1, 0, 2>} : tensor<2x16x64xf32> -> tensor<16x2x64xf32>
  %qr = nn.reshape %q {shape = array<i64: 1, 8, 16>} : tensor<1x2x64xf32> -> tensor<1x8x16xf32>
  %qt = nn.transpose %qr {perm = array<i64: 1, 0, 2>} : tensor<1x8x16xf32> -> tensor<8x1x16xf32>
  %kr = nn.reshape %k {shape = array<i64: 16, 8, 16>} : tensor<16x2x64xf32> -> tensor<16x8x16xf32>
  %kt = nn.transpose %kr {perm = array<i64: 1, 0, 2>} : tensor<16x8x16xf32> -> tensor<8x16x16xf32>
  %vr = nn.reshape %v {shape = array<i64: 16, 8, 16>} : tensor<16x2x64xf32> -> tensor<16x8x16xf32>
  %vt = nn.transpose %vr {perm = array<i64: 1, 0, 2>} : tensor<16x8x16xf32> -> tensor<8x16x16xf32>
  %qs = nn.mul %qt, %s : tensor<8x1x16xf32>, tensor<f32> -> tensor<8x1x16xf32>
  %ktt = nn.transpose %kt {perm = array<i64: 0, 2, 1>} : tensor<8x16x16xf32> -> tensor<8x16x16xf32>
  %sc = nn.matmul %qs, %ktt : tensor<8x1x16xf32>, tensor<8x16x16xf32> -> tensor<8x1x16xf32>
  %p = nn.softmax %sc {axis = -1 : i64} : tensor<8x1x16xf32> -> tensor<8x1x16xf32>
  %o = nn.matmul %p, %vt : tensor<8x1x16xf32>, tensor<8x16x16xf32> -> tensor<8x1x16xf32>
  %ot = nn.transpose %o {perm = array<i64: 1, 0, 2>} : tensor<8x1x16xf32> -> tensor<1x8x16xf32>
  %or = nn.reshape %ot {shape = array<i64: 2, 64>} : tensor<1x8x16xf32> -> tensor<2x64xf32>
  return %or : tensor<2x64xf32>
}

// Negative: the key is not transposed for q.k^T (perm [0,2,1,3]).
// CHECK-LABEL: func.func @untransposed_key
// CHECK-NOT: nn.attention
// CHECK: return
func.func @untransposed_key(%q: tensor<1x16x64xf32>, %k: tensor<1x16x64xf32>, %v: tensor<1x16x64xf32>) -> tensor<1x16x64xf32> {
  %qr = nn.reshape %q {shape = array<i64: 1, 16, 4, 16>} : tensor<1x16x64xf32> -> tensor<1x16x4x16xf32>
  %qt = nn.transpose %qr {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x4x16xf32> -> tensor<1x4x16x16xf32>
  %kr = nn.reshape %k {shape = array<i64: 1, 16, 4, 16>} : tensor<1x16x64xf32> -> tensor<1x16x4x16xf32>
  %kt = nn.transpose %kr {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x4x16xf32> -> tensor<1x4x16x16xf32>
  %vr = nn.reshape %v {shape = array<i64: 1, 16, 4, 16>} : tensor<1x16x64xf32> -> tensor<1x16x4x16xf32>
  %vt = nn.transpose %vr {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x4x16xf32> -> tensor<1x4x16x16xf32>
  %sc = nn.matmul %qt, %kt : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32>
  %p = nn.softmax %sc {axis = -1 : i64} : tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32>
  %o = nn.matmul %p, %vt : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32> -> tensor<1x4x16x16xf32>
  %ot = nn.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x16x16xf32> -> tensor<1x16x4x16xf32>
  %or = nn.reshape %ot {shape = array<i64: 1, 16, 64>} : tensor<1x16x4x16xf32> -> tensor<1x16x64xf32>
  return %or : tensor<1x16x64xf32>
}
