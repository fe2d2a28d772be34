// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(cse),symbol-dce)' --mlir-timing 2>&1 >/dev/null | filecheck %s --check-prefix=TIME
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(cse),symbol-dce)' --mlir-timing --mlir-timing-display=tree 2>&1 >/dev/null | filecheck %s --check-prefix=TREE
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(cse),symbol-dce)' --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(cse),symbol-dce)' --dump-pass-pipeline 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP

// TIME: Execution time report
// TIME: Total Execution Time:
// TIME-DAG: cse
// TIME-DAG: symbol-dce
// TIME: Total

// TREE: cse (func.func)
// TREE: symbol-dce (builtin.module)

// STATS: 'builtin.module' Pipeline
// STATS:   'func.func' Pipeline
// STATS:     cse
// STATS:       (S) 1 num-cse'd - Number of operations CSE'd
// STATS:   symbol-dce
// STATS:     (S) 1 num-dce'd - Number of symbols DCE'd

// DUMP: builtin.module(func.func(cse),symbol-dce)
func.func @a(%x: i32) -> i64 {
  %0 = builtin.unrealized_conversion_cast %x : i32 to i64
  %1 = builtin.unrealized_conversion_cast %x : i32 to i64
  return %1 : i64
}
func.func private @unused() {
  return
}
