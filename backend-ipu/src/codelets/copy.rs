//! Strided copies: `rows` rows of `row_bytes` bytes from `src + r *
//! src_stride` to `dst + r * dst_stride` (row gathers, slices, padding
//! removal and the row-level rearrangements between layouts).
//!
//! Workers take contiguous shares of rows. Each row is a `rpt` loop of
//! `ldst64pace` (load the next word, store the previous one): one 64-bit
//! word per bundle, the machine model's one-store-per-cycle limit, with no
//! read past the row. A load and a store share each instruction, so the
//! source and destination words of one instruction (`src + 8(k+1)` and
//! `dst + 8k`) must be in different banks; the simulator reports a
//! conflict otherwise.

use super::launch::{self, offsets, split, WORKERS};
use super::CodeletError;

/// One strided-copy launch.
#[derive(Clone, Debug)]
pub struct StridedCopy {
    /// Rows.
    pub rows: u32,
    /// Bytes per row (a positive multiple of 8).
    pub row_bytes: u32,
    /// Source, 8-byte aligned.
    pub src: u32,
    /// Bytes between source rows (a multiple of 8).
    pub src_stride: u32,
    /// Destination, 8-byte aligned.
    pub dst: u32,
    /// Bytes between destination rows (a multiple of 8).
    pub dst_stride: u32,
}

const TAG: &str = "copy_strided";

impl StridedCopy {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.rows == 0 || self.row_bytes == 0 || !self.row_bytes.is_multiple_of(8) {
            return err(format!(
                "needs rows > 0 and a positive multiple of 8 bytes per row, got {} rows of {} bytes",
                self.rows, self.row_bytes
            ));
        }
        for (what, v) in [
            ("src", self.src),
            ("dst", self.dst),
            ("source stride", self.src_stride),
            ("destination stride", self.dst_stride),
        ] {
            if v % 8 != 0 {
                return err(format!("{what} 0x{v:x} is not a multiple of 8"));
            }
        }
        Ok(())
    }

    /// The codelet's assembly text (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        self.validate()?;
        let mut s = launch::supervisor_and_worker_header(TAG, 6);
        s.push_str(&format!(
            "    ld32 $m0, $mvertex_base, $mzero, 0   // src\n    ld32 $m1, $mvertex_base, $mzero, 1   // dst\n\
             \x20   ld32 $m2, $mvertex_base, $mzero, 2   // rows\n    ld32 $m3, $mvertex_base, $mzero, 3   // words per row - 1\n\
             \x20   ld32 $m6, $mvertex_base, $mzero, 4   // src stride\n    ld32 $m7, $mvertex_base, $mzero, 5   // dst stride\n\
             \x20   brz $m2, .L{TAG}_done\n    sub $m2, $m2, 1\n.L{TAG}_row:\n\
             \x20   add $m8, $m0, 8\n    tapack $m4:5, $m8, $mzero, $m1\n    ld64 $a0:1, $m0, $mzero, 0\n    nop\n\
             \x20   {{ rpt $m3, (.L{TAG}_end - .L{TAG}_start)/8 - 1 ; fnop }}\n.L{TAG}_start:\n\
             \x20   {{ ldst64pace $a0:1, $a0:1, $m4:5+=, $mzero, 0 ; fnop }}\n.L{TAG}_end:\n\
             \x20   st64 $a0:1, $m1, $mzero, $m3\n    add $m0, $m0, $m6\n    add $m1, $m1, $m7\n\
             \x20   brnzdec $m2, .L{TAG}_row\n.L{TAG}_done:\n    exitz $mzero\n"
        ));
        let shares = self.worker_rows();
        let offs = offsets(&shares);
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![
                self.src + offs[w] * self.src_stride,
                self.dst + offs[w] * self.dst_stride,
                shares[w],
                self.row_bytes / 8 - 1,
                self.src_stride,
                self.dst_stride,
            ]
        });
        s.push_str(&launch::vertex_state(TAG, &states));
        Ok(s)
    }

    /// Issues of a worker with `n` rows: setup 8 (6 `ld32`, `brz`, `sub`),
    /// per row 8 + words, `exitz`; an idle worker issues 6 `ld32`, `brz`, `exitz`.
    pub fn worker_issues(&self, n: u32) -> u64 {
        if n == 0 {
            return 8;
        }
        9 + u64::from(n) * (8 + u64::from(self.row_bytes / 8))
    }

    /// Estimated tile cycles from the instruction counts.
    pub fn estimate_cycles(&self) -> u64 {
        let worst = self
            .worker_rows()
            .iter()
            .map(|&n| self.worker_issues(n))
            .max()
            .unwrap_or(0);
        launch::launch_cycles(worst)
    }

    /// Reference: the destination image after the copy, given the source
    /// memory (`src_mem` starts at `src`) and the destination memory before
    /// (`dst_mem` starts at `dst`).
    pub fn reference(&self, src_mem: &[u8], dst_mem: &[u8]) -> Vec<u8> {
        let mut out = dst_mem.to_vec();
        let n = self.row_bytes as usize;
        for r in 0..self.rows as usize {
            let s = r * self.src_stride as usize;
            let d = r * self.dst_stride as usize;
            out[d..d + n].copy_from_slice(&src_mem[s..s + n]);
        }
        out
    }
}
