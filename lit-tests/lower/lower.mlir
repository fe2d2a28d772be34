// ipu-lower turns a planned function into an ipu.executable beside it:
// host tensors with their pieces, one ipu.tile per grid position, the
// broadcast of X blocks along grid rows, the GEMM launch loop.

// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(ipu-plan),ipu-lower)' | filecheck %s
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(ipu-plan),ipu-lower)' --emit=exe -o %t.ipuexe
// RUN: ipu-run %t.ipuexe | filecheck %s --check-prefix=SIM

// A forced 2x2 grid: 4 rows and 1 output group per tile; tiles 0 and 2 are
// the grid rows' first tiles, where X enters and is sent from.
func.func @mm(%x: tensor<8x24xf16>) -> tensor<8x32xf16> {
  %w = nn.constant dense<0.25> : tensor<24x32xf16>
  %y = nn.matmul %x, %w {ipu.plan = {grid = array<i64: 2, 2>}} : tensor<8x24xf16>, tensor<24x32xf16> -> tensor<8x32xf16>
  return %y : tensor<8x32xf16>
}

// The plan is re-estimated for the forced grid.
// CHECK: nn.matmul %arg0, %0 {ipu.plan = {{.*}}exchange_cycles = {{[1-9][0-9]*}} : i64, grid = array<i64: 2, 2>, groups = 1 : i64, instruction = "f16v4hihov4amp", k_panels = 2 : i64, reduction_cycles = 0 : i64, rows = 4 : i64, sync_cycles = 600 : i64

// CHECK:      ipu.executable machine = "c600" {
// The home tile sends its X block (2 panels x 4 rows x 32 bytes = 64
// words) after the delay that lets the receivers arm first.
// CHECK:        ipu.tile 0 {
// CHECK:          ipu.label @main
// CHECK-NEXT:     ipu.inst setzi m0, 0xd8000
// CHECK-NEXT:     ipu.inst nop
// CHECK:          ipu.inst send m0, 64
// CHECK-NEXT:     ipu.inst sync @TEXCH_SYNCZONE_INTERNAL
// CHECK:          ipu.inst setzi m0, 0x80000
// CHECK:          ipu.inst runall m1, m2, 3
// A receiver arms its window for the home tile's words.
// CHECK:        ipu.tile 1 {
// CHECK:          ipu.label @main
// CHECK-NEXT:     ipu.inst setzi m0, 0xd8000
// CHECK-NEXT:     ipu.inst setzi m1, 64
// CHECK-NEXT:     ipu.inst setzi m2, 0
// CHECK-NEXT:     ipu.inst put INCOMING_BASE, m0
// CHECK-NEXT:     ipu.inst put INCOMING_DCOUNT, m1
// CHECK-NEXT:     ipu.inst put INCOMING_MUX, m2
// CHECK-NEXT:     ipu.inst sync @TEXCH_SYNCZONE_INTERNAL
// CHECK:        ipu.tile 2 {
// CHECK:        ipu.tile 3 {
// CHECK:          ipu.inst setzi m2, 2
// X enters on tiles 0 and 2 only, 16 elements per piece (one panel row);
// Y leaves from all four tiles.
// The vertex states (2 launches x 6 workers x 3 words: the three
// addresses packed as `tapack` packs them, and the rows) are the same on
// every tile: one constant at the top of region 0, replicated.
// CHECK:        ipu.tensor constant @gemm0_vertex_states : tensor<36xi32> = dense_resource<gemm0_vertex_states> : tensor<36xi32> pieces [(0, 0x7ff70, 0, 36), (1, 0x7ff70, 0, 36), (2, 0x7ff70, 0, 36), (3, 0x7ff70, 0, 36)]
// Each grid column's weight panels are one constant, loaded with the
// program at the start of interleaved memory on every tile of the column.
// CHECK:        ipu.tensor constant @gemm0_weights_col0 : tensor<512xf16> = dense_resource<gemm0_weights_col0> : tensor<512xf16> pieces [(0, 0x80000, 0, 512), (2, 0x80000, 0, 512)]
// CHECK:        ipu.tensor constant @gemm0_weights_col1 : tensor<512xf16> = dense_resource<gemm0_weights_col1> : tensor<512xf16> pieces [(1, 0x80000, 0, 512), (3, 0x80000, 0, 512)]
// The second panel holds channels 16..23 and padding.
// CHECK:        ipu.tensor input @input0 : tensor<8x24xf16> pieces [(0, 0xd8000, 0, 16), (0, 0xd8020, 24, 16),
// CHECK-SAME:     (0, 0xd8080, 16, 8)
// CHECK-SAME:     (2, 0xd8000, 96, 16)
// CHECK-NOT:      (1,
// CHECK-SAME:     ]
// CHECK:        ipu.tensor output @output0 : tensor<8x32xf16> pieces [(0, 0xe0088, 0, 16),
// CHECK-SAME:     (1, 0xe0088, 16, 16)
// CHECK-SAME:     (3, 0xe00e8, 240, 16)]

// The executable runs on the simulator: four tiles, an exchange superstep
// and a compute superstep.
// SIM: on 4 tile(s)
// SIM: superstep 0
// SIM: superstep 1
