// A constant ipu.tensor is loaded with the program: each piece becomes a
// data section of its tile's image at the piece's address, and a piece that
// overlaps the tile's code or data is refused at the tensor, saying how much
// memory the program takes (a lowering that left too little room for code
// shows up here: the whole so400m's flash attention did).

// RUN: not ipu-opt %s --emit=exe -o %t.ipuexe 2>&1 | filecheck %s

// CHECK: emit-constant.mlir:[[@LINE+2]]:3: error: 'ipu.tensor' op piece on tile 0 at 0x4c000..0x4c010 overlaps section `.text.main` at 0x4c000..0x4c008: the tile's code and data take 8 bytes in 0x4c000..0x4c008, past the room the memory plan left for them below its tensors
ipu.executable machine = "c600" {
  ipu.tensor constant @k : tensor<4xf32> = dense<1.0> : tensor<4xf32> pieces [(0, 0x4c000, 0, 4)]
  ipu.tile 0 {
    ipu.section ".text.main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst exitz mzero
    }
  }
}
