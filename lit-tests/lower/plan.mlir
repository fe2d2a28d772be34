// ipu-plan chooses each nn.matmul's tile grid by search over the IPU cost
// model and records the choice and its estimate as `ipu.plan`.

// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(ipu-plan))' | filecheck %s
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(ipu-plan{machine=bow}))' | filecheck %s --check-prefix=BOW
// RUN: not ipu-opt %s --pass-pipeline='builtin.module(func.func(ipu-plan{machine=gc200}))' 2>&1 | filecheck %s --check-prefix=MACHINE

// A small product splits its rows over tiles (each row block enters on its
// own tile: no exchange, no sync) and keeps all columns together.
// CHECK-LABEL: func.func @small
// CHECK: nn.matmul %arg0, %0 {ipu.plan = {compute_cycles = [[C:[0-9]+]] : i64, cycles = [[C]] : i64, epilogue_cycles = 0 : i64, exchange_cycles = 0 : i64, grid = array<i64: 7, 1>, groups = 2 : i64, instruction = "f16v4hihov4amp", k_panels = 3 : i64, reduction_cycles = 0 : i64, rows = 1 : i64, sync_cycles = 0 : i64, tile_bytes = {{[0-9]+}} : i64}}
func.func @small(%x: tensor<7x40xf16>) -> tensor<7x20xf16> {
  %w = nn.constant dense<0.5> : tensor<40x20xf16>
  %y = nn.matmul %x, %w : tensor<7x40xf16>, tensor<40x20xf16> -> tensor<7x20xf16>
  return %y : tensor<7x20xf16>
}

// so400m's MLP up-projection spreads over most of the chip: X blocks are
// broadcast along grid rows, and K is split in parts that sum their
// partials by recursive halving (an exchange and the adds per round, each
// closed by a sync), which costs less than the longer broadcast of whole
// rows of X.
// CHECK-LABEL: func.func @mlp_up
// CHECK: nn.matmul {{.*}}exchange_cycles = {{[1-9][0-9]*}} : i64, grid = array<i64: {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}>{{.*}}reduction_cycles = {{[1-9][0-9]*}} : i64{{.*}}sync_cycles = {{[1-9][0-9]*}} : i64
// BOW-LABEL: func.func @mlp_up
// BOW: instruction = "f16v4hihov4amp"
func.func @mlp_up(%x: tensor<729x1152xf16>) -> tensor<729x4304xf16> {
  %w = nn.constant dense<0.5> : tensor<1152x4304xf16>
  %y = nn.matmul %x, %w : tensor<729x1152xf16>, tensor<1152x4304xf16> -> tensor<729x4304xf16>
  return %y : tensor<729x4304xf16>
}

// MACHINE: unknown machine 'gc200' (known: c600, bow)
