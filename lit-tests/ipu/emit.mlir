// ipu-opt --emit=asm prints every tile's assembly after a `// tile N` line;
// --emit=exe encodes the ops directly (no text), and assembler errors point
// at the op the assembler rejected, an undefined symbol at the op naming it.

// RUN: ipu-opt %S/Inputs/vector-add.mlir --emit=asm | filecheck %s
// RUN: not ipu-opt %s --emit=exe -o %t.ipuexe 2>&1 | filecheck %s --check-prefix=ASMERR
// RUN: not ipu-opt %S/../run/roundtrip.mlir --emit=asm 2>&1 | filecheck %s --check-prefix=NOEXE

// CHECK-LABEL: // tile 0
// CHECK-NEXT:      .section .text.main, "ax"
// CHECK-NEXT:      .supervisor
// CHECK-NEXT:      .globl main
// CHECK-NEXT:  main:
// CHECK-NEXT:      setzi $m0, worker
// CHECK-NEXT:      setzi $m1, 0x70000
// CHECK-NEXT:      run $m0, $m1, 0
// CHECK-NEXT:      sync TEXCH_SYNCZONE_LOCAL
// CHECK-NEXT:      exitz $mzero
// CHECK-NEXT:      .section .text.worker, "ax"
// CHECK-NEXT:      .worker
// CHECK-NEXT:  worker:
// CHECK-NEXT:      ld64 $a0:1, $mvertex_base, $mzero, 0
// CHECK-NEXT:      ld64 $a2:3, $mvertex_base, $mzero, 2
// CHECK-NEXT:      {
// CHECK-NEXT:        ld64 $a4:5, $mvertex_base, $mzero, 1
// CHECK-NEXT:        f32v2add $a0:1, $a0:1, $a2:3
// CHECK-NEXT:      }
// CHECK:           exitz $mzero
// CHECK-NEXT:  // tile 1
// CHECK-NEXT:      .section .text.main, "ax"
// CHECK-NOT:   // tile

// NOEXE: error: the module holds no 'ipu.executable': there is no tile code to emit

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      ipu.label @main
      ipu.inst exitz mzero
    }
    ipu.section ".text.w", "ax" worker {
      ipu.label @w
      ipu.inst nop
      // ASMERR: emit.mlir:[[@LINE+1]]:7: error: bundle is not 8-byte aligned: insert a `nop` or `.align 8` before it
      ipu.bundle {
        ipu.inst nop
        ipu.inst fnop
      }
      // ASMERR: emit.mlir:[[@LINE+1]]:7: error: undefined symbol `nowhere`
      ipu.inst bri @nowhere
    }
  }
}
