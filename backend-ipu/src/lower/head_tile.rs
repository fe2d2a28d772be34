//! The pooling head's *head tiles* ([`super::pool_head`]): each holds
//! one head's softmax over every token and 16 of its value channels'
//! share of `P V_h`, in the memory and the launches [`HeadTile`]
//! describes.

use ipuc_ipu_arch::MachineModel;

use super::codegen::Instance;
use super::plan::output_used;
use super::pool_head::PoolShape;
use crate::codelets::amp::{AmpBlock, AmpVariant, Elem};
use crate::codelets::fill::Fill;
use crate::codelets::gemm::TileGemm;
use crate::codelets::program::Codelet;
use crate::codelets::softmax_join::SoftmaxJoin;
use crate::codelets::softmax_panels::SoftmaxPanels;
use crate::codelets::subroutine::call_cycles;
use crate::codelets::transpose::{Transpose, TransposeElem};

/// Bytes past a head tile's probabilities that `P V_h`'s last launch
/// reads: a weight panel is 16 rows of 32 bytes, and launch `g` loads the
/// one that starts at token group `g`'s row ([`HeadTile::values`]).
pub const PANEL_TAIL: u32 = 15 * 32;

/// A head tile's tensors, all scratch from the top of memory down
/// ([`HeadTile::packed`]), and its launches.
///
/// The softmax's row is the head's scores over every token (`kp` groups
/// of 16, in token order), laid out as `rows` rows of `groups` groups
/// (group `g` row `r` holds token group `g rows + r`, so the layout is
/// the token order): [`SoftmaxPanels`] gives each worker whole rows and
/// writes each row's exponentials and statistics, and [`SoftmaxJoin`]
/// makes them the probabilities over the whole row, in place
/// ([`softmax_rows`] picks the shape; one row normalises itself).
///
/// A head runs on [`super::pool_head::head_parts`] tiles, one per group of 16 of its value
/// channels, each with the whole softmax (the scores are multicast to
/// them) and its channels' share of `P V_h`: the value panels a head
/// tile takes in exchange B, the bound of that exchange (a port's 4
/// bytes a cycle), are a fifth of the head's for so400m.
///
/// `P V_h` runs transposed, `(P V_h)^T = V_h^T P^T`: the tile's 16 value
/// channels are the product's rows, its input the value panels as sv
/// wrote them (token group `g`'s 16 tokens of every channel, 32 bytes a
/// channel), and the probabilities its weights, one output column: a
/// launch's CCCS load takes 16 rows of 32 bytes from token group `g`'s
/// probabilities on ([`TileGemm::emit_supervisor_stepping`], step 32),
/// so its row 0 (output channel 0) is group `g`'s, and the rows after it
/// the next groups' (their columns are computed and ignored; the last
/// launches read [`PANEL_TAIL`] bytes past the probabilities, zeroed).
/// That is `kp` launches of 16 rows, where the product with the
/// probabilities as its one input row took `kp dp / 16` launches of one
/// row each on one tile (so400m: 46 launches of 16 rows on each of 5
/// tiles against 230 of 1 row on one; 62k cycles against about 9k).
/// Column 0 of the output is the tile's 16 channels of the head's
/// output; a transpose makes it a row ([`HeadTile::output`], row 0),
/// which exchange C sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeadTile {
    /// The softmax's rows (at least 2, or 1 where `kp` is 1).
    pub rows: u32,
    /// Each row's `(-m, s)` (f32 pairs).
    pub stats: u32,
    /// `(P V_h)^T` on the tile.
    pub values: TileGemm,
    /// Its output transposed, `[16][16]` f16: row 0 is the tile's 16
    /// channels of the head's output.
    pub output: u32,
    /// The lowest byte the tile's tensors take.
    pub bottom: u32,
}

/// A head tile's `(P V_h)^T` over `kp` groups of 16 tokens, its tensors
/// not yet placed ([`HeadTile::packed`] places them).
fn unplaced_values(kp: u32) -> TileGemm {
    TileGemm {
        variant: AmpVariant::F16,
        rows: 16,
        k_groups: kp,
        n_groups: 1,
        input: 0,
        weights: 0,
        output: 0,
        bias: None,
        bias_in_output: false,
    }
}

/// The shape of the softmax of a head's `kp` groups of 16 scores: `(rows,
/// groups)` with `rows groups = kp`, the fewest estimated cycles of the
/// softmax over panels and the join (at least two rows to join, unless
/// `kp` is 1).
pub fn softmax_rows(kp: u32) -> Result<(u32, u32), crate::codelets::CodeletError> {
    let mut best: Option<(u64, (u32, u32))> = None;
    for rows in (1..=kp).filter(|r| kp.is_multiple_of(*r) && (*r > 1 || kp == 1)) {
        let tile = HeadTile {
            rows,
            stats: 0x70000,
            values: unplaced_values(kp),
            output: 0,
            bottom: 0,
        };
        let mut cycles = tile.softmax().estimate_cycles()?;
        if let Some(join) = tile.join() {
            cycles += join.estimate_cycles()?;
        }
        if best.is_none_or(|(c, _)| cycles < c) {
            best = Some((cycles, (rows, kp / rows)));
        }
    }
    Ok(best.map_or((1, kp), |(_, shape)| shape))
}

impl HeadTile {
    /// The scores, `[kp 16]` f16 in token order, then (in place) the
    /// probabilities, then [`PANEL_TAIL`] bytes of zeros: the weights of
    /// `(P V_h)^T`.
    pub fn scores(&self) -> u32 {
        self.values.weights
    }

    /// The softmax's groups: `kp / rows`.
    pub fn groups(&self) -> u32 {
        self.values.k_groups / self.rows
    }

    /// The softmax over the rows, in place; with statistics and without
    /// normalising where [`HeadTile::join`] follows.
    pub fn softmax(&self) -> SoftmaxPanels {
        let stride = self.rows * 32;
        SoftmaxPanels {
            rows: self.rows,
            groups: self.groups(),
            scale: 1.0,
            scores: Elem::F16,
            input: self.scores(),
            input_stride: stride,
            output: self.scores(),
            output_stride: stride,
            stats: (self.rows > 1).then_some(self.stats),
            normalise: self.rows == 1,
        }
    }

    /// The join of the rows into the whole row's probabilities (none for
    /// one row).
    pub fn join(&self) -> Option<SoftmaxJoin> {
        (self.rows > 1).then(|| SoftmaxJoin {
            rows: self.rows,
            groups: self.groups(),
            scale: 1.0,
            data: self.scores(),
            stride: self.rows * 32,
            stats: self.stats,
        })
    }

    /// The zeros past the probabilities that the last launches of `P V_h`
    /// read.
    pub fn tail(&self) -> Fill {
        Fill {
            bytes: PANEL_TAIL,
            dst: self.scores() + self.values.k_groups * 32,
        }
    }

    /// The transpose of `(P V_h)^T` into [`HeadTile::output`].
    pub fn transpose(&self) -> Transpose {
        Transpose {
            elem: TransposeElem::F16,
            rows: self.values.rows,
            cols: 16,
            src: self.values.output_group(0),
            dst: self.output,
        }
    }

    /// The launches before the product, in order, with their names.
    pub fn before_product(&self) -> Vec<(&'static str, Box<dyn Instance>)> {
        let mut out: Vec<(&'static str, Box<dyn Instance>)> = vec![
            ("pool_tail", Box::new(self.tail())),
            ("pool_softmax", Box::new(self.softmax())),
        ];
        if let Some(join) = self.join() {
            out.push(("pool_join", Box::new(join)));
        }
        out
    }

    /// Places the tile's tensors for `s` (see [`HeadTile`]) above `base`,
    /// the lowest byte they may use.
    pub fn packed(s: PoolShape, machine: &MachineModel, base: u32) -> Result<HeadTile, String> {
        let kp = s.key_panels();
        let (rows, _) = softmax_rows(kp).map_err(|e| e.to_string())?;
        let mut values = unplaced_values(kp);
        // The value panels (X) at the top, the probabilities (the
        // product's weights, which the supervisor alone reads), the
        // statistics and the transposed output below them in the slack of
        // X's lowest element pair, Y below that pair (the AMP reads X and
        // Y's two halves in one instruction: they must not share a pair),
        // the small tensors below Y where the slack is too small. Offsets
        // are bytes below the top.
        let pair = u64::from(2 * machine.element_bytes);
        let x_off =
            (values.input_bytes() + u64::from(AmpBlock::READ_PAST_BYTES)).next_multiple_of(16);
        let small = [
            u64::from(kp * 32 + PANEL_TAIL),
            8 * u64::from(rows),
            32 * 16,
        ];
        let small_bytes: u64 = small.iter().map(|b| b.next_multiple_of(16)).sum();
        let pair_end = x_off.div_ceil(pair) * pair;
        let in_slack = x_off + small_bytes <= pair_end;
        let y_off = pair_end + output_used(&values);
        let mut off = if in_slack { x_off } else { y_off };
        let [p_off, stats_off, out_off] = small.map(|b| {
            off += b.next_multiple_of(16);
            off
        });
        let bottom = off.max(y_off);
        let room = u64::from(machine.sram_end - base);
        if bottom > room {
            return Err(format!(
                "a head tile does not fit: one head's value panels take {} bytes and its scores, probabilities and output {} against {room} bytes of interleaved memory",
                values.input_bytes(),
                bottom - values.input_bytes()
            ));
        }
        // Every offset is at most `bottom`, which fits below the top.
        let at = |offset: u64| machine.sram_end - offset as u32;
        values.input = at(x_off);
        values.output = at(y_off);
        values.weights = at(p_off);
        let tile = HeadTile {
            rows,
            stats: at(stats_off),
            values,
            output: at(out_off),
            bottom: at(bottom),
        };
        tile.values.validate().map_err(|e| e.to_string())?;
        tile.softmax().validate().map_err(|e| e.to_string())?;
        if let Some(join) = tile.join() {
            join.validate().map_err(|e| e.to_string())?;
        }
        tile.transpose().validate().map_err(|e| e.to_string())?;
        Ok(tile)
    }

    /// Estimated cycles: the calls before the product, the product and
    /// the transpose.
    pub fn estimate(&self, machine: &MachineModel) -> Result<u64, crate::codelets::CodeletError> {
        let call = call_cycles(machine);
        let mut cycles = self.tail().estimate_cycles()? + call;
        cycles += self.softmax().estimate_cycles()? + call;
        if let Some(join) = self.join() {
            cycles += join.estimate_cycles()? + call;
        }
        Ok(cycles + self.values.estimate_cycles()? + self.transpose().estimate_cycles()? + call)
    }
}
