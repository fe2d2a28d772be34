// RUN: not ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse{rules=gelu,fast}))' 2>&1 | filecheck %s --check-prefix=BAD
// BAD: invalid value 'fast' for option 'rules' of pass 'eqsat-fuse': expected a list of rule groups (algebra, gelu, layernorm, softmax, linear, attention, qkv)

// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse{max-iterations=1}))' --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// STATS: eqsat-fuse
// STATS: (S) 1 iterations
// STATS: (S) 1 stop-iteration-limit
// STATS: (S) 1 linear-bias

// RUN: rm -rf %t && ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse{dump-dot=%t}))' >/dev/null && filecheck %s --check-prefix=DOT --input-file=%t/f.0.dot
// DOT: digraph egraph
// DOT: linear

// RUN: ipu-opt %s --list-passes | filecheck %s --check-prefix=LIST
// LIST: --eqsat-fuse
// LIST: max-iterations=<uint>
// LIST: rules=<string list>
// LIST: dump-dot=<string>
func.func @f(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = nn.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %1 = nn.add %0, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
