//! ipuc dialects: func, nn, tile, bsp, ipu.
