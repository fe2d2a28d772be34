//! Two f16 output groups to one FP8 input panel: the FP8 attention
//! block's cast of the attention's output before the output product.
//!
//! An AMP output group is `rows` rows of 16 f16 channels (32 bytes a
//! row); the FP8 AMP's input panel is `rows` rows of 32 FP8 channels (32
//! bytes a row). Row `r` of the panel is the codes of the first group's
//! row `r` (bytes 0..16) then the second group's (bytes 16..32), each
//! `code = f8(x 2^-scale)` (`f16v4tof8`, RNE, saturating; NaN and
//! infinities the NaN code 0x80), or zeros for a missing second group
//! (a head's odd last group: the product's weight rows there are zeros,
//! and a zero code keeps a NaN out of them).
//!
//! Workers split the rows ([`split`]). A *unit* is 8 channels (16 bytes
//! of input, two 64-bit loads, two conversions, one 64-bit store of
//! codes), three bundles, software-pipelined by one unit:
//! ```text
//! { st64step (previous unit's codes) ; f16v4tof8 (low word)  }
//! { ld64step (next unit's low word)  ; f16v4tof8 (high word) }
//! { ld64step (next unit's high word) ; fnop }
//! ```
//! A row is four units (first group's two, second group's two): 12
//! bundles for 32 codes; with no second group its two units' stores are
//! of `$azeros` and the row takes 8. The loads need 8-byte alignment only
//! (the groups of an AMP's output are 8 bytes apart from 16). A worker's
//! first unit is its prologue, so each pass of the `rpt` stores the four
//! units of one row; the last pass reads 32 bytes past the worker's rows
//! of the first group (their values are not used).
//!
//! **In place.** With `output == first`, row `r`'s codes land on the first
//! group's row `r`, whose four loads come before them (stores trail loads
//! by a unit); the next row is loaded after. The second group is never
//! written. Any other overlap with the input is refused by the caller's
//! layout, not checked here.

use super::emitter::{inst, ld64_next, op, st64_next, Emitter, Inst};
use super::launch::{self, split, StreamCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};
use half::f16;
use ipuc_ipu_arch::float8::{encode_scaled, SCALE_RANGE};

const TAG: &str = "pair_cast";
/// Bytes of one row of a group (16 f16) and of the panel (32 codes).
pub const ROW_BYTES: u32 = 32;

/// One launch: two groups (or one and zeros) into one FP8 panel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairCast {
    /// Rows (positive).
    pub rows: u32,
    /// The first group's rows (f16), 8-byte aligned.
    pub first: u32,
    /// The second group's rows, or `None`: zeros in the panel's second
    /// half.
    pub second: Option<u32>,
    /// The panel (may be `first`: in place), 8-byte aligned.
    pub output: u32,
    /// Power-of-two scale in -31..=31: codes hold `x 2^-scale`.
    pub scale: i32,
}

impl PairCast {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    fn tag(&self) -> &'static str {
        match self.second {
            Some(_) => TAG,
            None => "pair_cast_zeros",
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(self.tag(), m));
        if self.rows == 0 {
            return err("needs at least one row".into());
        }
        if !SCALE_RANGE.contains(&self.scale) {
            return err(format!("FP8 scale {} is outside -31..=31", self.scale));
        }
        check_alignment(
            self.tag(),
            &[
                ("first group", self.first, 8),
                ("second group", self.second.unwrap_or(0), 8),
                ("output", self.output, 8),
            ],
        )
    }

    /// The exact reference: the panel's bytes for the two groups' bytes
    /// (`second` ignored without a second group).
    pub fn reference(&self, first: &[u8], second: &[u8]) -> Vec<u8> {
        let codes = |b: &[u8]| -> Vec<u8> {
            b.chunks_exact(2)
                .map(|h| {
                    let v = f16::from_bits(u16::from_le_bytes([h[0], h[1]]));
                    encode_scaled(v.to_f64(), self.scale)
                })
                .collect()
        };
        let row = ROW_BYTES as usize;
        (0..self.rows as usize)
            .flat_map(|r| {
                let a = codes(&first[r * row..(r + 1) * row]);
                let b = match self.second {
                    Some(_) => codes(&second[r * row..(r + 1) * row]),
                    None => vec![0; row / 2],
                };
                a.into_iter().chain(b)
            })
            .collect()
    }
}

impl Codelet for PairCast {
    type Counts = StreamCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<StreamCounts, CodeletError> {
        self.validate()?;
        let tag = self.tag();
        let supervisor = launch::emit_supervisor_and_worker_entry(e, tag, 4);
        let done = format!(".L{tag}_done");
        // Vertex state: first group, second group, output, rows; $m0, $m1
        // and $m2 step through them.
        e.load_state(&[(0, 0), (1, 1), (2, 2), (3, 3)]);
        e.solo(inst("brz", [op::m(3), op::sym(done.clone())]));
        let at_branch = e.issues();
        let scale = op::imm(i64::from(self.scale));
        let lo = || inst("f16v4tof8", [op::a(4), op::a_pair(0), scale.clone()]);
        let hi = || inst("f16v4tof8", [op::a(5), op::a_pair(2), scale.clone()]);
        let fnop = || inst("fnop", []);
        let zeros = || {
            inst(
                "st64step",
                [op::azeros(), op::mzero(), op::m_inc(2), op::imm(1)],
            )
        };
        // A unit whose next unit is read through `$m{next}`: its three
        // bundles, storing the previous unit's codes (or zeros).
        let unit = |store: Inst, next: u8| -> [(Inst, Inst); 3] {
            [
                (store, lo()),
                (ld64_next(0, next), hi()),
                (ld64_next(2, next), fnop()),
            ]
        };
        // The prologue: the worker's first row's first unit, storing
        // nothing.
        e.solo(ld64_next(0, 0));
        e.solo(ld64_next(2, 0));
        for (m, a) in unit(inst("nop", []), 0) {
            e.bundle(m, a);
        }
        let body: Vec<(Inst, Inst)> = match self.second {
            // Units: first group's second, the second group's two, the
            // next row's first; each stores the one before.
            Some(_) => [
                unit(st64_next(4, 2), 1),
                unit(st64_next(4, 2), 1),
                unit(st64_next(4, 2), 0),
                unit(st64_next(4, 2), 0),
            ]
            .into_iter()
            .flatten()
            .collect(),
            // The first group's second unit, then the next row's first,
            // whose first bundles store the row's last codes and two words
            // of zeros.
            None => {
                let mut b: Vec<(Inst, Inst)> = unit(st64_next(4, 2), 0).into();
                b.push((st64_next(4, 2), lo()));
                b.push((zeros(), hi()));
                b.push((zeros(), fnop()));
                b.push((ld64_next(0, 0), fnop()));
                b.push((ld64_next(2, 0), fnop()));
                b
            }
        };
        let body = e.rpt(op::m(3), tag, body);
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let worker = e.issues();
        let shares = self.worker_rows();
        let offs = launch::offsets(&shares);
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            let at = offs[w] * ROW_BYTES;
            vec![
                self.first + at,
                self.second.map_or(0, |s| s + at),
                self.output + at,
                shares[w],
            ]
        });
        launch::emit_vertex_state(e, tag, &states);
        Ok(StreamCounts {
            supervisor,
            empty: at_branch + 1,
            worker,
            body,
            prologue_units: 0,
        })
    }

    fn cycles(&self, counts: &StreamCounts) -> u64 {
        counts.cycles(&self.worker_rows())
    }
}
