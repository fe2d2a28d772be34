// ipu-verify-isa reports instructions the assembler would reject, at the op.

// RUN: ipu-opt %S/Inputs/vector-add.mlir --ipu-verify-isa | filecheck %s --check-prefix=OK
// RUN: ipu-opt %s --split-input-file --verify-diagnostics --ipu-verify-isa

// OK: ipu.executable machine = "c600"

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      ipu.label @main
      // expected-error @+1 {{unknown instruction `addd`}}
      ipu.inst addd m0, m0, m1
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      ipu.label @main
      // expected-error @+1 {{operands do not match any form of `add`; its forms are: add $m, $m, $m | add $m, $m, simm16}}
      ipu.inst add m0, a1, m1
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      ipu.label @main
      // expected-error @+1 {{operand #2 of `add`: 40000 does not fit a signed 16-bit immediate (-32768..=32767)}}
      ipu.inst add m0, m0, 40000
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      ipu.label @main
      // expected-error @+1 {{`f32v2add` is a worker instruction, not allowed in a supervisor section}}
      ipu.inst f32v2add a0:1, a0:1, a2:3
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" worker {
      ipu.label @main
      ipu.bundle {
        // expected-error @+1 {{`f32v2add` is an auxiliary-pipeline instruction and cannot be the first (main) half of a bundle}}
        ipu.inst f32v2add a0:1, a0:1, a2:3
        ipu.inst nop
      }
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      ipu.label @main
      // expected-error @+1 {{bundles are worker-only: the supervisor has no auxiliary pipeline}}
      ipu.bundle {
        ipu.inst nop
        ipu.inst fnop
      }
    }
  }
}

// -----

ipu.executable machine = "bow" {
  ipu.tile 0 {
    ipu.section ".text" worker {
      ipu.label @main
      // expected-error @+1 {{`f8v8hihov4amp` needs FP8 (ipu21); machine `bow` has none}}
      ipu.inst f8v8hihov4amp a0:1, a2:3, a4:5, 0
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      ipu.label @main
      // expected-error @+1 {{symbol @loop is neither a label of this tile nor an assembler constant}}
      ipu.inst brnz m0, @loop
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      ipu.label @main
      // expected-error @+1 {{unknown control register `$NOT_A_CSR` for `put`}}
      ipu.inst put NOT_A_CSR, m0
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" worker {
      ipu.label @main
      // expected-error @+1 {{operand #0 of `ld128`: operand is not an $a register quad ($aN:N+3, N a multiple of 4)}}
      ipu.inst ld128 a2:5, m0, mzero, 0
    }
  }
}
