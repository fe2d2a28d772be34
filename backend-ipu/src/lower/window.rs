//! The memory a block may use on every tile, when several blocks share
//! the chip one after another ([`super::chain`]) or one block has it alone.
//!
//! A tile's memory, as the blocks lay it out:
//!
//! ```text
//! 0x4c000 region 0                                             0x80000 region 1 (interleaved)            0xe8000
//! | code ->  ...  <- private region 0 | add columns | (archive | archive) private (constants) ->  ...  <- shared scratch |
//! ```
//!
//! - **A loop's archive** ([`super::chain_loop`]), where a chain has one:
//!   whole elements at the top of region 0 ([`Window::shared_below`]),
//!   then the bottom of region 1, before any block's private memory.
//! - **Private interleaved memory**, from the bottom of region 1 up: each
//!   block's constants (weights, bias blocks, masks, a swapped product's
//!   constant input) and every buffer whose content must outlive another
//!   block's supersteps or was loaded with the program (a block's input
//!   rows, which the exchange before it writes; padding rows that stay
//!   zero; the post-LayerNorm rows a host output reads at the end). Blocks
//!   take it in turn: block `k + 1`'s starts where block `k`'s ends, so no
//!   block overwrites another's.
//! - **Shared scratch**, from the top of memory down: every block's
//!   products' inputs, outputs and reduction buffers, scores and
//!   probabilities, in whole element pairs where the AMP needs them. Each
//!   block lays it out as if it had the tile alone; a block neither reads
//!   what it held before the block's first superstep nor leaves anything
//!   there that another block reads, so the blocks overlay it in time.
//!   A block's fit check keeps its scratch above the private memory of
//!   every block so far.
//! - **The add columns** at the top of region 0: the rows of a product's
//!   owned adds (`sum = view + residual`, `residual = sum + bias`) in three
//!   columns of whole 16 KiB elements, residual, sum and bias one column
//!   each, so that an add's two loads and its store never share an
//!   element (a bank conflict). Each block's rows sit at the same offset
//!   in every column, after the previous blocks'; a block's result (its
//!   residual rows) survives until the exchange after it reads it.
//! - **Private region 0**, below the columns, from the top down: vertex
//!   states and the LayerNorm tiles' scale and shift, block after block.
//!   Code fills region 0 from the bottom; the assembler's check that no
//!   section overlaps a constant catches the two meeting.
//!
//! The first block of a program finds the shared scratch as the program
//! loaded it ([`Window::fresh`]): a constant it reads once may sit there.
//!
//! A block alone ([`Window::alone`]) sizes the columns to its own rows; a
//! chain fixes them for all its blocks ([`Window::shared`]) and, when a
//! block's rows do not fit, plans again with wider columns.

use ipuc_ipu_arch::MachineModel;

/// How many add columns a program has: residual, sum and bias.
pub const ADD_COLUMNS: u32 = 3;

/// The part of every tile's memory the next block may use (see the
/// module doc). Planning a block takes what it needs from it; what is
/// left is the next block's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The first free byte of private interleaved memory.
    pub base: u32,
    /// The end of free private region 0 (allocations go below it).
    pub region0: u32,
    /// Bytes of each add column in use, from the column's bottom.
    pub adds_used: u32,
    /// Each add column's size (whole elements); 0 until a block alone
    /// sizes them.
    pub adds_stride: u32,
    /// How many add columns there are (a block alone has those it needs).
    adds_columns: u32,
    /// The top of the add columns (the end of region 0).
    adds_top: u32,
    /// No block has run before: the shared scratch holds what the program
    /// loaded, so a constant read once, early in the block, may sit there
    /// (the attention block's `V^T` input does, where private memory
    /// would not leave its attention tiles room).
    pub fresh: bool,
    /// The lowest address a block's shared scratch may use besides the
    /// private memory taken so far: a chain sets it to the end of every
    /// block's private memory (a later block's constants are loaded with
    /// the program, so an earlier block's scratch must not reach them
    /// either) and plans again when a first planning finds a block's
    /// scratch below it ([`Window::scratch_low`]).
    pub floor: u32,
    /// The lowest address the scratch of any block planned so far uses.
    pub scratch_low: u32,
}

/// The marker of the error [`Window::adds`] returns when the columns are
/// full: a chain widens them and plans again.
pub const ADDS_FULL: &str = "the add columns are full";

impl Window {
    /// The whole tile for one block: columns sized by its first request.
    pub fn alone(machine: &MachineModel) -> Self {
        Window {
            base: machine.interleaved_base,
            region0: machine.interleaved_base,
            adds_used: 0,
            adds_stride: 0,
            adds_columns: 0,
            adds_top: machine.interleaved_base,
            fresh: true,
            floor: machine.interleaved_base,
            scratch_low: machine.sram_end,
        }
    }

    /// The whole tile for the first of several blocks: add columns of
    /// `stride` bytes each (whole elements).
    pub fn shared(machine: &MachineModel, stride: u32) -> Self {
        Self::shared_below(machine, stride, 0)
    }

    /// As [`Self::shared`], with the top `kept` bytes of region 0 (whole
    /// elements, right below the interleaved region) kept out of the
    /// blocks' reach: a loop's archive lies there
    /// ([`super::chain_loop`]), the columns and private region 0 below it.
    pub fn shared_below(machine: &MachineModel, stride: u32, kept: u32) -> Self {
        debug_assert!(stride.is_multiple_of(machine.element_bytes));
        debug_assert!(kept.is_multiple_of(machine.element_bytes));
        let adds_top = machine.interleaved_base - kept;
        Window {
            base: machine.interleaved_base,
            region0: adds_top - ADD_COLUMNS * stride,
            adds_used: 0,
            adds_stride: stride,
            adds_columns: ADD_COLUMNS,
            adds_top,
            fresh: true,
            floor: machine.interleaved_base,
            scratch_low: machine.sram_end,
        }
    }

    /// What a block planned in this window leaves for the next one.
    pub fn after_block(self) -> Self {
        Window {
            fresh: false,
            ..self
        }
    }

    /// The lowest address the block being planned may use as scratch,
    /// once it has taken its private memory.
    pub fn scratch_floor(&self) -> u32 {
        self.base.max(self.floor)
    }

    /// What the error of a block whose scratch does not fit adds when the
    /// floor, not its own private memory, bounds it: empty otherwise.
    pub fn floor_note(&self) -> String {
        if self.floor > self.base {
            format!(
                " (the scratch stays above private memory to 0x{:x}, which the whole chain keeps, later blocks' constants included)",
                self.floor
            )
        } else {
            String::new()
        }
    }

    /// Records that the block being planned uses scratch from `bottom`.
    pub fn use_scratch(&mut self, bottom: u32) {
        self.scratch_low = self.scratch_low.min(bottom);
    }

    /// Takes `bytes` of private interleaved memory, 16-byte aligned.
    pub fn private(&mut self, bytes: u32) -> u32 {
        let at = self.base.next_multiple_of(16);
        self.base = at + bytes;
        at
    }

    /// Takes `bytes` of private region 0 below what is taken, 8-byte
    /// aligned.
    pub fn region0(&mut self, bytes: u32) -> u32 {
        self.region0 = (self.region0 - bytes) & !7;
        self.region0
    }

    /// Takes `span` bytes at the same offset of the first `columns` add
    /// columns: their addresses, column 0 first. A block alone sizes the
    /// columns to `span` (whole elements of `machine`), before any region-0
    /// allocation; with the columns full the error starts with
    /// [`ADDS_FULL`].
    pub fn adds(
        &mut self,
        span: u32,
        columns: u32,
        machine: &MachineModel,
    ) -> Result<Vec<u32>, String> {
        debug_assert!(columns <= ADD_COLUMNS);
        if self.adds_stride == 0 {
            debug_assert_eq!(self.region0, self.adds_top, "columns before region 0");
            self.adds_stride = span.next_multiple_of(machine.element_bytes);
            self.adds_columns = columns;
            self.region0 = self.adds_top - columns * self.adds_stride;
        }
        let span = span.next_multiple_of(16);
        if columns > self.adds_columns || self.adds_used + span > self.adds_stride {
            return Err(format!(
                "{ADDS_FULL}: a product's owned rows take {span} bytes in each of {columns}, beside the {} bytes earlier blocks take, in {} columns of {} bytes",
                self.adds_used, self.adds_columns, self.adds_stride
            ));
        }
        let at = self.adds_top - self.adds_columns * self.adds_stride + self.adds_used;
        self.adds_used += span;
        Ok((0..columns).map(|c| at + c * self.adds_stride).collect())
    }
    /// What was taken since `before` (a stretch of blocks planned in
    /// between, such as a loop's body), each part grown to a multiple of
    /// `grain` bytes: the private interleaved memory, the private region 0
    /// and the rows of each add column, as `[lo, hi)` ranges, empty ones
    /// left out. Growing the rows past the columns is an error starting
    /// with [`ADDS_FULL`].
    pub fn taken_since(&mut self, before: &Window, grain: u32) -> Result<Vec<(u32, u32)>, String> {
        debug_assert_eq!(self.adds_stride, before.adds_stride, "one set of columns");
        let grow = |n: u32| n.next_multiple_of(grain);
        let mut out = Vec::new();
        let lo = before.base.next_multiple_of(16);
        if self.base > lo {
            self.base = lo + grow(self.base - lo);
            out.push((lo, self.base));
        }
        if self.region0 < before.region0 {
            self.region0 = before.region0 - grow(before.region0 - self.region0);
            out.push((self.region0, before.region0));
        }
        if self.adds_used > before.adds_used {
            let used = before.adds_used + grow(self.adds_used - before.adds_used);
            if used > self.adds_stride {
                return Err(format!(
                    "{ADDS_FULL}: the rows of a repeated body take {} bytes of each column of {} when grown to whole {grain}-byte copies",
                    used - before.adds_used,
                    self.adds_stride
                ));
            }
            self.adds_used = used;
            let bottom = self.adds_top - self.adds_columns * self.adds_stride;
            for c in 0..self.adds_columns {
                let col = bottom + c * self.adds_stride;
                out.push((col + before.adds_used, col + used));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alone_sizes_the_columns_to_its_rows() {
        let m = MachineModel::c600();
        let mut w = Window::alone(&m);
        let at = w.adds(100, 2, &m).unwrap();
        assert_eq!(at, vec![0x80000 - 0x8000, 0x80000 - 0x4000]);
        assert_eq!(w.region0, 0x80000 - 0x8000);
        assert_eq!(w.region0(12), 0x80000 - 0x8000 - 16);
        // The columns hold one block's rows: a second request that does
        // not fit fails with the marker.
        let e = w.adds(0x4000, 2, &m).unwrap_err();
        assert!(e.starts_with(ADDS_FULL), "{e}");
    }

    #[test]
    fn shared_blocks_stack_in_the_same_columns() {
        let m = MachineModel::c600();
        let mut w = Window::shared(&m, 0x4000);
        assert_eq!(w.region0, 0x80000 - 0xc000);
        let a = w.adds(40, 3, &m).unwrap();
        let b = w.adds(40, 2, &m).unwrap();
        assert_eq!(a, vec![0x74000, 0x78000, 0x7c000]);
        assert_eq!(b, vec![0x74030, 0x78030]);
        // Each column's words are in its own elements.
        for (x, y) in a.iter().zip(&a[1..]) {
            assert_ne!(x / m.element_bytes, y / m.element_bytes);
        }
        assert_eq!(w.private(10), 0x80000);
        assert_eq!(w.private(4), 0x80010);
    }

    #[test]
    fn region0_kept_for_an_archive_moves_the_columns_down() {
        let m = MachineModel::c600();
        let mut w = Window::shared_below(&m, 0x4000, 0x8000);
        assert_eq!(w.region0, 0x78000 - 0xc000);
        let a = w.adds(40, 3, &m).unwrap();
        assert_eq!(a, vec![0x6c000, 0x70000, 0x74000]);
        // Interleaved memory is untouched.
        assert_eq!(w.private(10), 0x80000);
        assert_eq!(w.region0(8), 0x6c000 - 8);
    }

    #[test]
    fn taken_since_grows_each_part_to_whole_grains() {
        let m = MachineModel::c600();
        let mut w = Window::shared(&m, 0x4000);
        w.private(32);
        w.adds(16, 3, &m).unwrap();
        let before = w;
        w.private(100);
        w.region0(8);
        w.adds(32, 3, &m).unwrap();
        let ranges = w.taken_since(&before, 48).unwrap();
        assert_eq!(
            ranges,
            vec![
                (0x80020, 0x80020 + 144),
                (0x74000 - 48, 0x74000),
                (0x74010, 0x74040),
                (0x78010, 0x78040),
                (0x7c010, 0x7c040),
            ]
        );
        assert_eq!(w.base, 0x80020 + 144);
        assert_eq!(w.region0, 0x74000 - 48);
        // Nothing taken: no ranges.
        let again = w;
        assert_eq!(w.taken_since(&again, 48).unwrap(), vec![]);
        // Rows grown past the columns.
        let mut full = Window::shared(&m, 0x4000);
        let start = full;
        full.adds(0x4000, 1, &m).unwrap();
        let e = full.taken_since(&start, 48).unwrap_err();
        assert!(e.starts_with(ADDS_FULL), "{e}");
    }
}
