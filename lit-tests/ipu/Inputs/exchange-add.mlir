// Tile 0 sends its 4-element f32 vector @x to tile 1 in an exchange phase;
// tile 1 adds it to its own vector @y: z = x + y.
//
// Both supervisors sync (TEXCH_SYNCZONE_INTERNAL) to open the exchange
// phase. Tile 0 sends 4 words from 0x70000; tile 1 points its incoming
// window at 0x71000 (INCOMING_BASE, INCOMING_DCOUNT) and selects tile 0 on
// its incoming mux before the first word arrives (the exchange latency
// covers its three puts). A second sync closes the phase, after which the
// received words are visible; tile 1 then runs a worker with its vertex
// base at 0x70000: y at +0, x at +0x1000 (ld64 index 512), z at +0x20.
ipu.executable machine = "c600" {
  ipu.tensor input @x : tensor<4xf32> pieces [(0, 0x70000, 0, 4)]
  ipu.tensor input @y : tensor<4xf32> pieces [(1, 0x70000, 0, 4)]
  ipu.tensor output @z : tensor<4xf32> pieces [(1, 0x70020, 0, 4)]
  ipu.tile 0 {
    ipu.section ".text.main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst sync @TEXCH_SYNCZONE_INTERNAL
      ipu.inst setzi m0, 0x70000
      ipu.inst send m0, 4
      ipu.inst sync @TEXCH_SYNCZONE_INTERNAL
      ipu.inst exitz mzero
    }
  }
  ipu.tile 1 {
    ipu.section ".text.main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst sync @TEXCH_SYNCZONE_INTERNAL
      ipu.inst setzi m0, 0x71000
      ipu.inst put INCOMING_BASE, m0
      ipu.inst setzi m1, 4
      ipu.inst put INCOMING_DCOUNT, m1
      ipu.inst setzi m2, 0
      ipu.inst put INCOMING_MUX, m2
      ipu.inst sync @TEXCH_SYNCZONE_INTERNAL
      ipu.inst setzi m0, @worker
      ipu.inst setzi m1, 0x70000
      ipu.inst run m0, m1, 0
      ipu.inst sync @TEXCH_SYNCZONE_LOCAL
      ipu.inst exitz mzero
    }
    ipu.section ".text.worker", "ax" worker {
      ipu.label @worker
      ipu.inst ld64 a0:1, mvertex_base, mzero, 0
      ipu.inst ld64 a2:3, mvertex_base, mzero, 512
      ipu.bundle {
        ipu.inst ld64 a4:5, mvertex_base, mzero, 1
        ipu.inst f32v2add a0:1, a0:1, a2:3
      }
      ipu.bundle {
        ipu.inst ld64 a6:7, mvertex_base, mzero, 513
        ipu.inst fnop
      }
      ipu.bundle {
        ipu.inst st64 a0:1, mvertex_base, mzero, 4
        ipu.inst f32v2add a4:5, a4:5, a6:7
      }
      ipu.inst st64 a4:5, mvertex_base, mzero, 5
      ipu.inst exitz mzero
    }
  }
}
