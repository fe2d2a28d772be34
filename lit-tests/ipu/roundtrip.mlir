// The ipu dialect's custom forms print and read back to themselves, and the
// generic form of the same module reads back to the same custom form.

// RUN: ipu-opt %s | filecheck %s
// RUN: ipu-opt %s | ipu-opt | filecheck %s
// RUN: ipu-opt %s --mlir-print-op-generic | ipu-opt | filecheck %s
// RUN: ipu-opt %s --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: ipu.executable machine = "c600" {
// CHECK-NEXT:    ipu.tensor input @a : tensor<8xf32> pieces [(0, 0x70000, 0, 4), (1, 0x70000, 4, 4)]
// CHECK-NEXT:    ipu.tensor output @w : tensor<16xf8E4M3FNUZ> fp8_scale -2 pieces [(1, 0x80000, 0, 16)]
// A constant may be replicated: the same elements on two tiles.
// CHECK-NEXT:    ipu.tensor constant @k : tensor<4xf16> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf16> pieces [(0, 0x80000, 0, 4), (1, 0x80000, 0, 4)]
// CHECK-NEXT:    ipu.tile 0 {
// CHECK-NEXT:      ipu.section ".text.main", "ax" supervisor {
// CHECK-NEXT:        ipu.directive globl @main
// CHECK-NEXT:        ipu.directive type @main, #ipu.at<function>
// CHECK-NEXT:        ipu.label @main
// CHECK-NEXT:        ipu.inst setzi m0, 0x70000
// CHECK-NEXT:        ipu.inst put INCOMING_MUX, m2
// CHECK-NEXT:        ipu.inst sync @TEXCH_SYNCZONE_INTERNAL
// CHECK-NEXT:        ipu.inst add m1, m1, -3
// CHECK-NEXT:        ipu.inst brnzdec m1, @main
// CHECK-NEXT:        ipu.inst exitz mzero
// CHECK-NEXT:        ipu.directive size @main, ". - main"
// CHECK-NEXT:      }
// CHECK-NEXT:      ipu.section ".text.main", "ax" worker {
// CHECK-NEXT:        ipu.directive align 8
// CHECK-NEXT:        ipu.label @worker
// CHECK-NEXT:        ipu.bundle {
// CHECK-NEXT:          ipu.inst rpt m5, "(.Lend - .Lstart) / 8 - 1"
// CHECK-NEXT:          ipu.inst fnop
// CHECK-NEXT:        }
// CHECK-NEXT:        ipu.label @".Lstart"
// CHECK-NEXT:        ipu.bundle {
// CHECK-NEXT:          ipu.inst ld2xst64pace a0:3, a4:5, m0:1+=, m2, 9
// CHECK-NEXT:          ipu.inst f32v2add a4:5, a0:1, a2:3
// CHECK-NEXT:        }
// CHECK-NEXT:        ipu.label @".Lend"
// CHECK-NEXT:        ipu.inst ld32step m3, mvertex_base, m4+=, 1 attributes {note = "kept"}
// CHECK-NEXT:        ipu.inst exitz mzero
// CHECK-NEXT:      }
// CHECK-NEXT:      ipu.section ".data" worker {
// CHECK-NEXT:        ipu.directive word 1, 0x12345678, @main
// CHECK-NEXT:        ipu.directive space 16
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    ipu.tile 1 entry @start {
// CHECK-NEXT:      ipu.section ".text" supervisor {
// CHECK-NEXT:        ipu.label @start
// CHECK-NEXT:        ipu.inst exitz mzero
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// GENERIC: "ipu.executable"() <{machine = "c600"}> ({
// GENERIC: "ipu.tensor"() <{direction = "input", pieces = [array<i64: 0, 458752, 0, 4>, array<i64: 1, 458752, 4, 4>], sym_name = "a", tensor_type = tensor<8xf32>}> : () -> ()
// GENERIC: "ipu.inst"() <{mnemonic = "put", operands = [#ipu.csr<INCOMING_MUX>, #ipu.reg<m2>]}> : () -> ()
// GENERIC: "ipu.inst"() <{mnemonic = "ld2xst64pace", operands = [#ipu.reg<a0:3>, #ipu.reg<a4:5>, #ipu.reg<m0:1+=>, #ipu.reg<m2>, 9 : i64]}> : () -> ()

ipu.executable machine = "c600" {
  ipu.tensor input @a : tensor<8xf32> pieces [(0, 0x70000, 0, 4), (1, 458752, 4, 4)]
  ipu.tensor output @w : tensor<16xf8E4M3FNUZ> fp8_scale -2 pieces [(1, 0x80000, 0, 16)]
  ipu.tensor constant @k : tensor<4xf16> = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf16> pieces [(0, 0x80000, 0, 4), (1, 0x80000, 0, 4)]
  ipu.tile 0 {
    ipu.section ".text.main", "ax" supervisor {
      ipu.directive globl @main
      ipu.directive type @main, #ipu.at<function>
      ipu.label @main
      ipu.inst setzi m0, 0x70000
      ipu.inst put INCOMING_MUX, m2
      ipu.inst sync @TEXCH_SYNCZONE_INTERNAL
      ipu.inst add m1, m1, -3
      ipu.inst brnzdec m1, @main
      ipu.inst exitz mzero
      ipu.directive size @main, ". - main"
    }
    ipu.section ".text.main", "ax" worker {
      ipu.directive align 8
      ipu.label @worker
      ipu.bundle {
        ipu.inst rpt m5, "(.Lend - .Lstart) / 8 - 1"
        ipu.inst fnop
      }
      ipu.label @".Lstart"
      ipu.bundle {
        ipu.inst ld2xst64pace a0:3, a4:5, m0:1+=, m2, 9
        ipu.inst f32v2add a4:5, a0:1, a2:3
      }
      ipu.label @".Lend"
      ipu.inst ld32step m3, mvertex_base, m4+=, 1 attributes {note = "kept"}
      ipu.inst exitz mzero
    }
    ipu.section ".data" worker {
      ipu.directive word 1, 0x12345678, @main
      ipu.directive space 16
    }
  }
  ipu.tile 1 entry @start {
    ipu.section ".text" supervisor {
      ipu.label @start
      ipu.inst exitz mzero
    }
  }
}
