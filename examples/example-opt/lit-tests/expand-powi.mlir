// example-opt is ipu-opt plus the example dialect and pass: the pass runs in
// pipelines next to ipuc's own, with every ipu-opt flag.

// RUN: example-opt %s --pass-pipeline='builtin.module(func.func(example-expand-powi))' | filecheck %s
// RUN: example-opt %s --pass-pipeline='builtin.module(func.func(example-expand-powi{max-exponent=32},canonicalize))' --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMP
// RUN: example-opt %s --pass-pipeline='builtin.module(func.func(example-expand-powi))' --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS
// RUN: example-opt %s --pass-pipeline='builtin.module(func.func(example-expand-powi{max-exponent=32}))' | filecheck %s --check-prefix=BIG
// RUN: example-opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: not example-opt %s --pass-pipeline='builtin.module(func.func(example-expand-powi{max-exponent=-1}))' 2>&1 | filecheck %s --check-prefix=BAD

// x^1 is x itself.
// CHECK-LABEL: func.func @one
// CHECK-NEXT: return %arg0
func.func @one(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = example.powi %x {exponent = 1} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// x^5 = x * (x^2)^2: three multiplications, not four.
// CHECK-LABEL: func.func @five
// CHECK-NEXT: %[[X2:.*]] = nn.mul %arg0, %arg0
// CHECK-NEXT: %[[X4:.*]] = nn.mul %[[X2]], %[[X2]]
// CHECK-NEXT: %[[X5:.*]] = nn.mul %arg0, %[[X4]]
// CHECK-NEXT: return %[[X5]]
func.func @five(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %0 = example.powi %x {exponent = 5} : tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// x^8 is three squarings.
// CHECK-LABEL: func.func @eight
// CHECK-NEXT: %[[A:.*]] = nn.mul %arg0, %arg0
// CHECK-NEXT: %[[B:.*]] = nn.mul %[[A]], %[[A]]
// CHECK-NEXT: %[[C:.*]] = nn.mul %[[B]], %[[B]]
// CHECK-NEXT: return %[[C]]
func.func @eight(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = example.powi %x {exponent = 8} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Above max-exponent (default 16) the op stays; with max-exponent=32 it
// expands (x^20 = x^4 * x^16: 4 squarings and one product).
// CHECK-LABEL: func.func @twenty
// CHECK-NEXT: example.powi %arg0 {exponent = 20 : i64} : tensor<4xf32>
// BIG-LABEL: func.func @twenty
// BIG-COUNT-5: nn.mul
// BIG-NOT: example.powi
func.func @twenty(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = example.powi %x {exponent = 20} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// DUMP: builtin.module(func.func(example-expand-powi{max-exponent=32},canonicalize))

// STATS: example-expand-powi
// STATS-NEXT: (S) 3 num-expanded - Number of example.powi expanded
// STATS-NEXT: (S) 6 num-multiplies - Number of nn.mul created

// LIST: --canonicalize
// LIST: --example-expand-powi {{ *}}- Expand example.powi into nn.mul by repeated squaring
// LIST-NEXT: max-exponent=<uint> - Expand only exponents up to this (larger ones stay example.powi) (default: 16)

// BAD: invalid value '-1' for option 'max-exponent' of pass 'example-expand-powi': expected uint
