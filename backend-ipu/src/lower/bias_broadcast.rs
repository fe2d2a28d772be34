//! A product's bias broadcast into its initial partials: instead of a
//! block of initial partials kept in memory (32 bytes a row of every
//! output group, [`TileGemm::bias_bytes`]), a tile keeps a small source
//! in region 0 and writes the partials into the second half of each
//! output group before its vertex runs, where the first launch reads them
//! ([`TileGemm::bias_in_output`]; [`super::plan::Epilogue::bias_rows`]
//! says when).
//!
//! Two forms, after what the bias is the same along:
//!
//! - **a value per column** (the same on every row of Y, `b[N]`: qk's,
//!   out's, fc1's): one 32-byte row per output group, each broadcast over
//!   its group's rows ([`RowBroadcast`]): 32 bytes a group kept;
//! - **a value per row** (the same along N, `b[M]`: the value bias in
//!   vt's partials, [`super::plan::Epilogue::per_row`]): every output
//!   group starts from the same rows, `b[r]` in each of row `r`'s 16
//!   columns, which a splat writes from the values alone ([`SplatRows`]):
//!   2 bytes a row kept (rounded to 8) instead of a 32-byte row per row
//!   of each group (a *template* of one group's rows copied over the
//!   others would keep 32 bytes a row: on so400m about 2.9 KB on each of
//!   vt's tiles, in every later layer's loop archive too).
//!
//! The last output group's columns past N start from the bias too (the
//! bias block started them from zero): those columns are padding no
//! consumer reads as data (vt's padded tokens are keys the softmax gives
//! no weight).

use ipuc_ipu_arch::MachineModel;

use super::codegen::Instance;
use crate::codelets::amp::AmpVariant;
use crate::codelets::broadcast::{
    BroadcastCounts, RowBroadcast, SplatCounts, SplatRows, ROW_BYTES,
};
use crate::codelets::gemm::TileGemm;
use crate::codelets::program::Codelet;
use crate::codelets::subroutine::call_cycles;
use crate::codelets::CodeletError;

/// The launch that writes a tile's initial partials from its bias source.
#[derive(Clone, Debug)]
pub enum BiasBroadcast {
    /// A row per output group over the group's rows.
    Rows(RowBroadcast),
    /// A value per row over every group's rows.
    Splat(SplatRows),
}

/// The issue counts of both forms, as their estimates need them.
#[derive(Clone, Copy, Debug)]
pub struct BiasCounts {
    /// The row broadcast's.
    pub rows: BroadcastCounts,
    /// The row splat's.
    pub splat: SplatCounts,
}

impl BiasCounts {
    /// The counts, from probes of both launches.
    pub fn probe() -> Self {
        let v = probe_partials();
        let counts = |per_row| {
            BiasBroadcast::of(&v, per_row, 0x60000).expect("the probe's partials are in its output")
        };
        let (BiasBroadcast::Rows(rows), BiasBroadcast::Splat(splat)) =
            (counts(false), counts(true))
        else {
            unreachable!("the forms follow `per_row`")
        };
        BiasCounts {
            rows: rows.counts().expect("the probe's parameters are valid"),
            splat: splat.counts().expect("the probe's parameters are valid"),
        }
    }
}

impl BiasBroadcast {
    /// The launch that fills `vertex`'s initial partials in its output
    /// buffer from the source at `at` (rows per group where `per_row` is
    /// false, a value per row where it is true). `None` unless the vertex's
    /// partials are in its output.
    pub fn of(vertex: &TileGemm, per_row: bool, at: u32) -> Option<Self> {
        if !vertex.bias_in_output {
            return None;
        }
        let dst = vertex
            .bias_group(0)
            .expect("a vertex with its partials in its output");
        Some(if per_row {
            BiasBroadcast::Splat(SplatRows {
                groups: vertex.n_groups,
                rows: vertex.rows,
                src: at,
                dst,
                group_stride: vertex.group_stride(),
            })
        } else {
            BiasBroadcast::Rows(RowBroadcast {
                groups: vertex.n_groups,
                rows: vertex.rows,
                src: at,
                dst,
                group_stride: vertex.group_stride(),
            })
        })
    }

    /// Bytes of the source a tile of `vertex` keeps: a row per output
    /// group, or an f16 value per row (in whole 8-byte words); 0 without
    /// a broadcast.
    pub fn source_bytes(vertex: &TileGemm, per_row: bool) -> u32 {
        match (vertex.bias_in_output, per_row) {
            (false, _) => 0,
            (true, false) => vertex.n_groups * ROW_BYTES,
            (true, true) => (vertex.rows * 2).next_multiple_of(8),
        }
    }

    /// Tile cycles from `counts`, the call included.
    pub fn cycles(&self, counts: &BiasCounts) -> u64 {
        let launch = match self {
            BiasBroadcast::Rows(b) => b.cycles(&counts.rows),
            BiasBroadcast::Splat(c) => c.cycles(&counts.splat),
        };
        launch + call_cycles(&MachineModel::c600())
    }

    /// Tile cycles from the emitted code's counts, the call included.
    pub fn estimate_cycles(&self) -> Result<u64, CodeletError> {
        let launch = match self {
            BiasBroadcast::Rows(b) => b.estimate_cycles()?,
            BiasBroadcast::Splat(c) => c.estimate_cycles()?,
        };
        Ok(launch + call_cycles(&MachineModel::c600()))
    }

    /// The launch as a subroutine to emit.
    pub fn instance(self) -> Box<dyn Instance> {
        match self {
            BiasBroadcast::Rows(b) => Box::new(b),
            BiasBroadcast::Splat(c) => Box::new(c),
        }
    }
}

/// A vertex with its partials in its output, for probing the launches'
/// counts.
fn probe_partials() -> TileGemm {
    partials_vertex(2, 1)
}

/// An f16 vertex of `rows` rows and `groups` output groups with its
/// partials in its output.
fn partials_vertex(rows: u32, groups: u32) -> TileGemm {
    TileGemm {
        variant: AmpVariant::F16,
        rows,
        k_groups: 1,
        n_groups: groups,
        input: 0x80000,
        weights: 0x90000,
        output: 0xa0000,
        bias: Some(0),
        bias_in_output: false,
    }
    .with_partials_in_output(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The splat writes exactly what a bias block would hold: every
    /// group's partials start from `b[r]` on row `r`, from 2 bytes a row.
    #[test]
    fn a_splat_fills_every_group_with_the_rows_values() {
        let v = partials_vertex(5, 3);
        let values: Vec<u8> = (0..5u8).flat_map(|r| [r + 1, 0x40]).collect();
        let Some(BiasBroadcast::Splat(splat)) = BiasBroadcast::of(&v, true, 0x1000) else {
            panic!("a per-row bias is splat")
        };
        splat.validate().unwrap();
        let span = (v.group_stride() * v.n_groups) as usize;
        let before = vec![0xeeu8; span];
        let after = splat.reference(&values, &before);
        let rows: Vec<u8> = (0..5u8).flat_map(|r| [r + 1, 0x40].repeat(16)).collect();
        for g in 0..v.n_groups {
            let at = (v.bias_group(g).unwrap() - splat.dst) as usize;
            assert_eq!(&after[at..at + rows.len()], &rows[..], "group {g}");
        }
        assert_eq!(BiasBroadcast::source_bytes(&v, true), 16);
        assert_eq!(BiasBroadcast::source_bytes(&v, false), 3 * ROW_BYTES);
    }

    /// Without partials in the output there is nothing to broadcast.
    #[test]
    fn a_bias_block_needs_no_broadcast() {
        let v = TileGemm {
            bias_in_output: false,
            ..partials_vertex(4, 2)
        };
        let v = TileGemm {
            bias: Some(0x70000),
            ..v
        };
        assert!(BiasBroadcast::of(&v, true, 0).is_none());
        assert_eq!(BiasBroadcast::source_bytes(&v, false), 0);
    }

    /// The estimate from the probes' counts is the emitted code's.
    #[test]
    fn probed_counts_estimate_as_the_emitted_code() {
        let counts = BiasCounts::probe();
        for per_row in [false, true] {
            let b = BiasBroadcast::of(&partials_vertex(12, 6), per_row, 0x1000).unwrap();
            assert_eq!(b.cycles(&counts), b.estimate_cycles().unwrap());
        }
    }
}
