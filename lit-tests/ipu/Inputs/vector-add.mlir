// Two tiles each add their half of two 8-element f32 vectors written by the
// host: c = a + b. Each tile's supervisor starts one worker on the tile's
// pieces (a at 0x70000, b at 0x70010, c at 0x70020) and waits for it.
ipu.executable machine = "c600" {
  ipu.tensor input @a : tensor<8xf32> pieces [(0, 0x70000, 0, 4), (1, 0x70000, 4, 4)]
  ipu.tensor input @b : tensor<8xf32> pieces [(0, 0x70010, 0, 4), (1, 0x70010, 4, 4)]
  ipu.tensor output @c : tensor<8xf32> pieces [(0, 0x70020, 0, 4), (1, 0x70020, 4, 4)]
  ipu.tile 0 {
    ipu.section ".text.main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, @worker
      ipu.inst setzi m1, 0x70000
      ipu.inst run m0, m1, 0
      ipu.inst sync @TEXCH_SYNCZONE_LOCAL
      ipu.inst exitz mzero
    }
    ipu.section ".text.worker", "ax" worker {
      ipu.label @worker
      ipu.inst ld64 a0:1, mvertex_base, mzero, 0
      ipu.inst ld64 a2:3, mvertex_base, mzero, 2
      ipu.bundle {
        ipu.inst ld64 a4:5, mvertex_base, mzero, 1
        ipu.inst f32v2add a0:1, a0:1, a2:3
      }
      ipu.bundle {
        ipu.inst ld64 a6:7, mvertex_base, mzero, 3
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
  ipu.tile 1 {
    ipu.section ".text.main", "ax" supervisor {
      ipu.directive globl @main
      ipu.label @main
      ipu.inst setzi m0, @worker
      ipu.inst setzi m1, 0x70000
      ipu.inst run m0, m1, 0
      ipu.inst sync @TEXCH_SYNCZONE_LOCAL
      ipu.inst exitz mzero
    }
    ipu.section ".text.worker", "ax" worker {
      ipu.label @worker
      ipu.inst ld64 a0:1, mvertex_base, mzero, 0
      ipu.inst ld64 a2:3, mvertex_base, mzero, 2
      ipu.bundle {
        ipu.inst ld64 a4:5, mvertex_base, mzero, 1
        ipu.inst f32v2add a0:1, a0:1, a2:3
      }
      ipu.bundle {
        ipu.inst ld64 a6:7, mvertex_base, mzero, 3
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
