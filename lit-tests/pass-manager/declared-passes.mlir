// What comes from a pass's declaration (`declare_pass!`): option printing,
// statistics merged across parallel copies, and the listing of hooks.

// --dump-pass-pipeline prints options in declaration order, leaving out
// those equal to their defaults (here max-num-rewrites=-1), whatever order
// the pipeline gave them in.
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(canonicalize{top-down=false max-num-rewrites=-1 max-iterations=3}))' --dump-pass-pipeline 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP
// DUMP: builtin.module(func.func(canonicalize{max-iterations=3 top-down=false}))

// Each function runs on its own copy of cse (in parallel); the copies'
// counters are merged into one report, with or without threads.
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(cse))' --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(cse))' --mlir-pass-statistics --mlir-disable-threading 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// STATS: cse
// STATS-NEXT: (S) 3 num-cse'd - Number of operations CSE'd

// A pass that takes no options says so.
// RUN: not ipu-opt %s --pass-pipeline='builtin.module(func.func(cse{fast=1}))' 2>&1 | filecheck %s --check-prefix=NOOPT
// NOOPT: pass 'cse' takes no options, got 'fast'

// eqsat-fuse is registered once; the tools wire the IPU cost model into it
// through its cost-model hook, and the listing says which model it uses.
// RUN: ipu-opt --list-passes | filecheck %s --check-prefix=LIST
// LIST: --eqsat-fuse
// LIST: hook cost-model = ipu (C600 machine model) - Prices each op of a candidate graph during extraction
// LIST: --ipu-verify-isa
func.func @a(%x: i32) -> i64 {
  %0 = builtin.unrealized_conversion_cast %x : i32 to i64
  %1 = builtin.unrealized_conversion_cast %x : i32 to i64
  %2 = builtin.unrealized_conversion_cast %x : i32 to i64
  return %2 : i64
}
func.func @b(%x: i32) -> i64 {
  %0 = builtin.unrealized_conversion_cast %x : i32 to i64
  %1 = builtin.unrealized_conversion_cast %x : i32 to i64
  return %1 : i64
}
