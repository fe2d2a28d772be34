// Where many tiles' programs outgrow the room the memory plan left them,
// each of the first 8 gets one error (at the first constant that reaches
// it, not at every one), saying how its bytes divide among the chain's
// blocks (the `bN` section scopes) and naming its largest sections; the
// rest are summed up in one error that names the largest program. (The
// whole so400m printed 1,114 errors, one per constant tensor.)

// RUN: not ipu-opt %s --emit=exe -o %t.ipuexe 2>&1 | filecheck %s

// CHECK: error: 'ipu.tensor' op piece on tile 0 at 0x4c000..0x4c010 overlaps section `.text.b1_main` at 0x4c000..0x4c008: the tile's code and data take 24 bytes in 0x4c000..0x4c018 (by block, bytes: b2 16, b1 8; largest sections: .data.b2 16, .text.b1_main 8), past the room
// CHECK: error: 'ipu.tensor' op piece on tile 1 at 0x4c000..0x4c010 overlaps section `.text.b1_main` at 0x4c000..0x4c008: the tile's code and data take 24 bytes in 0x4c000..0x4c018 (by block, bytes: b2 16, b1 8; largest sections: .data.b2 16, .text.b1_main 8), past the room
// CHECK: error: 'ipu.tensor' op piece on tile 2 at 0x4c000..0x4c010 overlaps section `.text.b1_main` at 0x4c000..0x4c008: the tile's code and data take 24 bytes in 0x4c000..0x4c018 (by block, bytes: b2 16, b1 8; largest sections: .data.b2 16, .text.b1_main 8), past the room
// CHECK: error: 'ipu.tensor' op piece on tile 3 at 0x4c000..0x4c010 overlaps section `.text.b1_main` at 0x4c000..0x4c008: the tile's code and data take 24 bytes in 0x4c000..0x4c018 (by block, bytes: b2 16, b1 8; largest sections: .data.b2 16, .text.b1_main 8), past the room
// CHECK: error: 'ipu.tensor' op piece on tile 4 at 0x4c000..0x4c010 overlaps section `.text.b1_main` at 0x4c000..0x4c008: the tile's code and data take 24 bytes in 0x4c000..0x4c018 (by block, bytes: b2 16, b1 8; largest sections: .data.b2 16, .text.b1_main 8), past the room
// CHECK: error: 'ipu.tensor' op piece on tile 5 at 0x4c000..0x4c010 overlaps section `.text.b1_main` at 0x4c000..0x4c008: the tile's code and data take 24 bytes in 0x4c000..0x4c018 (by block, bytes: b2 16, b1 8; largest sections: .data.b2 16, .text.b1_main 8), past the room
// CHECK: error: 'ipu.tensor' op piece on tile 6 at 0x4c000..0x4c010 overlaps section `.text.b1_main` at 0x4c000..0x4c008: the tile's code and data take 24 bytes in 0x4c000..0x4c018 (by block, bytes: b2 16, b1 8; largest sections: .data.b2 16, .text.b1_main 8), past the room
// CHECK: error: 'ipu.tensor' op piece on tile 7 at 0x4c000..0x4c010 overlaps section `.text.b1_main` at 0x4c000..0x4c008: the tile's code and data take 24 bytes in 0x4c000..0x4c018 (by block, bytes: b2 16, b1 8; largest sections: .data.b2 16, .text.b1_main 8), past the room
// CHECK-NOT: piece on tile 8
// CHECK-NOT: piece on tile 9
// CHECK: error: 2 more tiles' code and data reach into their tensors, 10 in all, the most 72 bytes on tile 9 (errors for the first 8 above)
ipu.executable machine = "c600" {
  ipu.tensor constant @k : tensor<4xf32> = dense<1.0> : tensor<4xf32> pieces [(0, 0x4c000, 0, 4), (1, 0x4c000, 0, 4), (2, 0x4c000, 0, 4), (3, 0x4c000, 0, 4), (4, 0x4c000, 0, 4), (5, 0x4c000, 0, 4), (6, 0x4c000, 0, 4), (7, 0x4c000, 0, 4), (8, 0x4c000, 0, 4), (9, 0x4c000, 0, 4)]
  ipu.tensor constant @j : tensor<4xf32> = dense<2.0> : tensor<4xf32> pieces [(0, 0x4c004, 0, 4), (1, 0x4c004, 0, 4), (2, 0x4c004, 0, 4), (3, 0x4c004, 0, 4), (4, 0x4c004, 0, 4), (5, 0x4c004, 0, 4), (6, 0x4c004, 0, 4), (7, 0x4c004, 0, 4), (8, 0x4c004, 0, 4), (9, 0x4c004, 0, 4)]
  ipu.tile 0 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 16
    }
  }
  ipu.tile 1 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 16
    }
  }
  ipu.tile 2 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 16
    }
  }
  ipu.tile 3 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 16
    }
  }
  ipu.tile 4 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 16
    }
  }
  ipu.tile 5 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 16
    }
  }
  ipu.tile 6 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 16
    }
  }
  ipu.tile 7 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 16
    }
  }
  ipu.tile 8 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 16
    }
  }
  ipu.tile 9 {
    ipu.section ".text.b1_main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
    ipu.section ".data.b2" worker {
      ipu.directive space 64
    }
  }
}
