//! ipuc dialects: func, nn, tile, bsp, ipu.

pub mod nn;
