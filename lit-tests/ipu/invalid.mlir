// Verifier and parser errors of the ipu dialect.

// RUN: ipu-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{'ipu.executable' op attribute 'machine'}}
"ipu.executable"() <{machine = "c700"}> ({
}) : () -> ()

// -----

ipu.executable machine = "c600" {
  // expected-note @+1 {{first program of the tile}}
  ipu.tile 0 {
  }
  // expected-error @+1 {{'ipu.tile' op tile 0 has a second program}}
  ipu.tile 0 {
  }
}

// -----

ipu.executable machine = "c600" {
  // expected-error @+1 {{'ipu.tensor' op has a piece on tile 3, which has no 'ipu.tile'}}
  ipu.tensor input @a : tensor<4xf32> pieces [(3, 0x70000, 0, 4)]
  ipu.tile 0 {
  }
}

// -----

ipu.executable machine = "c600" {
  // expected-error @+1 {{'ipu.tensor' op pieces cover 3 elements, but the tensor has 4}}
  ipu.tensor output @a : tensor<4xf32> pieces [(0, 0x70000, 0, 3)]
  ipu.tile 0 {
  }
}

// -----

ipu.executable machine = "c600" {
  // expected-error @+1 {{'ipu.tensor' op pieces must cover the elements exactly once: element 2 is covered twice}}
  ipu.tensor output @a : tensor<4xf32> pieces [(0, 0x70000, 0, 2), (0, 0x70010, 1, 3)]
  ipu.tile 0 {
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      // expected-note @+1 {{previous definition}}
      ipu.label @main
      // expected-error @+1 {{'ipu.label' op label @main is already defined in this tile}}
      ipu.label @main
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" worker {
      // expected-error @+1 {{'ipu.bundle' op holds exactly two 'ipu.inst' (main, then aux), found 1 op(s)}}
      ipu.bundle {
        ipu.inst nop
      }
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    // expected-error @+1 {{'ipu.inst' op expects parent op 'ipu.section' or 'ipu.bundle'}}
    ipu.inst nop
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" worker {
      // expected-error @+1 {{'ipu.directive' op `.worker` is expressed by 'ipu.section' (its name, flags and kind), not by a directive}}
      ipu.directive worker
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      // expected-error @+1 {{'ipu.directive' op `.align` expects an integer alignment}}
      ipu.directive align @main
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      // expected-error @+1 {{`q7` is not a register name, so it cannot form a group or be post-incremented}}
      ipu.inst ld64 q7:8, m0, mzero, 0
    }
  }
}

// -----

// An operand attribute whose parameters the dialect refuses: the error lands
// on the attribute, not at the end of the op.
ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      // expected-error @+1 {{invalid attribute 'ipu.reg': `16` in register `a0:16` is not a register number below 16}}
      ipu.inst ld64 #ipu.reg<a0:16>, m0, mzero, 0
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    ipu.section ".text" supervisor {
      // expected-error @+1 {{'ipu.inst' op operands #0: `@function` is a directive argument, not an instruction operand}}
      ipu.inst bri #ipu.at<function>
    }
  }
}

// -----

ipu.executable machine = "c600" {
  ipu.tile 0 {
    // expected-error @+1 {{expected the section kind: supervisor or worker}}
    ipu.section ".text" boss {
    }
  }
}

// -----

// expected-error @+1 {{'ipu.tile' op expects parent op 'ipu.executable'}}
ipu.tile 0 {
}

// -----

// A constant tensor carries its value.
ipu.executable machine = "c600" {
  // expected-error @+1 {{'ipu.tensor' op a constant tensor needs a value}}
  ipu.tensor constant @k : tensor<4xf32> pieces [(0, 0x80000, 0, 4)]
  ipu.tile 0 {
  }
}

// -----

// Only a constant has a value: a host tensor is written by the host.
ipu.executable machine = "c600" {
  // expected-error @+1 {{'ipu.tensor' op only a constant tensor has a value}}
  ipu.tensor input @k : tensor<4xf32> = dense<1.0> : tensor<4xf32> pieces [(0, 0x80000, 0, 4)]
  ipu.tile 0 {
  }
}

// -----

ipu.executable machine = "c600" {
  // expected-error @+1 {{'ipu.tensor' op value of type tensor<2xf32> does not match the tensor type tensor<4xf32>}}
  ipu.tensor constant @k : tensor<4xf32> = dense<1.0> : tensor<2xf32> pieces [(0, 0x80000, 0, 4)]
  ipu.tile 0 {
  }
}

// -----

// Replicas may repeat elements, but no piece runs past the tensor.
ipu.executable machine = "c600" {
  // expected-error @+1 {{'ipu.tensor' op piece (tile 0, first 2, count 4) runs past the tensor's 4 elements}}
  ipu.tensor constant @k : tensor<4xf32> = dense<1.0> : tensor<4xf32> pieces [(0, 0x80000, 2, 4)]
  ipu.tile 0 {
  }
}
