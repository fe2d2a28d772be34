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
//!   block's supersteps or was loaded with the program (padding rows that
//!   stay zero; the post-LayerNorm rows a host output reads at the end).
//!   The attention and MLP blocks' input rows are scratch on their LN
//!   tiles: the link before a block writes them after the block before
//!   it ran, and the block's exchange A reads them. Blocks
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
//!   section overlaps a constant catches the two meeting. A chain keeps
//!   only the bottom of each column for the rows ([`Columns::rows`]: the
//!   rows of so400m's 57 blocks take 2,784 bytes of each 16 KiB column)
//!   and puts what no instruction reads beside a row (vertex states,
//!   scale and shift, masks: [`Window::region0_beside_rows`]) in the
//!   columns' free tops, from the top down, before it goes below them:
//!   region 0 left to a loop's archive grows by as much.
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
    /// The bytes at the bottom of each column kept for the rows
    /// ([`Columns::rows`]).
    rows_room: u32,
    /// Each column's free top: what [`Self::region0_beside_rows`] puts
    /// there goes below it, down to the rows' room.
    tails: [u32; ADD_COLUMNS as usize],
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

/// The marker of the error [`Window::adds`] returns when the rows outgrow
/// the bottom of the columns kept for them ([`Columns::rows`]): a chain
/// keeps more ([`Columns::more_rows`]) and plans again.
pub const ROWS_FULL: &str = "the add rows outgrow the room kept for them";

/// Bytes left free between the rows' room and what sits in a column's
/// top: a loop's body grows its ranges to whole copy grains
/// ([`Window::taken_since`]; the loop's grain is 48 bytes).
const TAIL_SLACK: u32 = 64;

/// Bytes of each column a chain first keeps for the rows
/// ([`Columns::chain`]).
const ROWS_FIRST: u32 = 4096;

/// Bytes the rows' room grows by each time the rows outgrow it
/// ([`Columns::more_rows`]): what it takes from the columns' tops goes
/// below the columns, out of a loop's archive's region 0.
const ROWS_STEP: u32 = 1024;

/// A chain's add columns: each `stride` bytes (whole elements), the
/// bottom `rows` bytes of each kept for the rows, the rest for private
/// region 0 ([`Window::region0_beside_rows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Columns {
    /// Each column's bytes, whole elements.
    pub stride: u32,
    /// The bytes at the bottom of each column kept for the rows (at most
    /// `stride`; `stride`: the columns hold rows only).
    pub rows: u32,
}

impl Columns {
    /// One element a column, its first 4 KiB kept for rows.
    pub fn chain(machine: &MachineModel) -> Self {
        let stride = machine.element_bytes;
        Columns {
            stride,
            rows: ROWS_FIRST.min(stride),
        }
    }

    /// Columns of `stride` bytes that hold rows only.
    pub fn rows_only(stride: u32) -> Self {
        Columns {
            stride,
            rows: stride,
        }
    }

    /// 1 KiB more room for the rows (the whole columns at most),
    /// after [`ROWS_FULL`].
    pub fn more_rows(self) -> Self {
        Columns {
            rows: (self.rows + ROWS_STEP).min(self.stride),
            ..self
        }
    }

    /// One element more a column, all of it rows, after [`ADDS_FULL`]
    /// (which comes only once the rows have the whole columns).
    pub fn widened(self, machine: &MachineModel) -> Self {
        Self::rows_only(self.stride + machine.element_bytes)
    }

    /// The columns to plan again with after a block's `error`: more room
    /// for rows after [`ROWS_FULL`], wider columns after [`ADDS_FULL`]
    /// while region 0 holds them; `None` for any other error (either
    /// marker may sit inside a longer message: a search that refused
    /// every grid for it names it as its closest).
    pub fn after_full(self, error: &str, machine: &MachineModel) -> Option<Self> {
        let bank = machine.element_bytes;
        let most = (machine.interleaved_base - machine.sram_base) / bank / ADD_COLUMNS;
        if error.contains(ROWS_FULL) {
            Some(self.more_rows())
        } else if error.contains(ADDS_FULL) && self.stride / bank < most {
            Some(self.widened(machine))
        } else {
            None
        }
    }
}

impl Window {
    /// The whole tile for one block: columns sized by its first request.
    pub fn alone(machine: &MachineModel) -> Self {
        Window {
            base: machine.interleaved_base,
            region0: machine.interleaved_base,
            adds_used: 0,
            adds_stride: 0,
            rows_room: 0,
            tails: [0; ADD_COLUMNS as usize],
            adds_columns: 0,
            adds_top: machine.interleaved_base,
            fresh: true,
            floor: machine.interleaved_base,
            scratch_low: machine.sram_end,
        }
    }

    /// The whole tile for the first of several blocks: add columns of
    /// `columns.stride` bytes each (whole elements), the bottom
    /// `columns.rows` of each for the rows.
    pub fn shared(machine: &MachineModel, columns: Columns) -> Self {
        Self::shared_below(machine, columns, 0)
    }

    /// As [`Self::shared`], with the top `kept` bytes of region 0 (whole
    /// elements, right below the interleaved region) kept out of the
    /// blocks' reach: a loop's archive lies there
    /// ([`super::chain_loop`]), the columns and private region 0 below it.
    pub fn shared_below(machine: &MachineModel, columns: Columns, kept: u32) -> Self {
        let stride = columns.stride;
        debug_assert!(stride.is_multiple_of(machine.element_bytes));
        debug_assert!(kept.is_multiple_of(machine.element_bytes));
        debug_assert!(columns.rows <= stride);
        let adds_top = machine.interleaved_base - kept;
        let bottom = adds_top - ADD_COLUMNS * stride;
        Window {
            base: machine.interleaved_base,
            region0: bottom,
            adds_used: 0,
            adds_stride: stride,
            rows_room: columns.rows.next_multiple_of(16),
            tails: std::array::from_fn(|c| bottom + (c as u32 + 1) * stride),
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

    /// Takes `bytes` of private region 0, 8-byte aligned, for data no
    /// instruction accesses together with an add row (vertex states,
    /// LayerNorm's scale and shift, softmax masks: an add's two loads and
    /// its store each need a column's element of their own, and these
    /// may share one): in the top of the add column with the most room
    /// above its rows (the first of equals), else as [`Self::region0`].
    pub fn region0_beside_rows(&mut self, bytes: u32) -> u32 {
        let room = |w: &Self, c: usize| {
            let col = w.adds_top - (w.adds_columns - c as u32) * w.adds_stride;
            w.tails[c].saturating_sub(col + w.rows_room + TAIL_SLACK)
        };
        let need = bytes.next_multiple_of(8) + 8;
        let best = (0..self.adds_columns as usize)
            .filter(|&c| room(self, c) >= need)
            .max_by_key(|&c| (room(self, c), std::cmp::Reverse(c)));
        match best {
            Some(c) => {
                self.tails[c] = (self.tails[c] - bytes) & !7;
                self.tails[c]
            }
            None => self.region0(bytes),
        }
    }

    /// Bytes of private region 0 taken since `before`, in the columns'
    /// tops and below them.
    pub fn region0_taken_since(&self, before: &Window) -> u32 {
        let tails: u32 = (0..ADD_COLUMNS as usize)
            .map(|c| before.tails[c] - self.tails[c])
            .sum();
        before.region0 - self.region0 + tails
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
            self.rows_room = self.adds_stride;
            self.adds_columns = columns;
            self.region0 = self.adds_top - columns * self.adds_stride;
            let bottom = self.region0;
            self.tails = std::array::from_fn(|c| bottom + (c as u32 + 1) * self.adds_stride);
        }
        let span = span.next_multiple_of(16);
        if columns <= self.adds_columns
            && self.rows_room < self.adds_stride
            && self.adds_used + span > self.rows_room
        {
            return Err(format!(
                "{ROWS_FULL}: a product's owned rows take {span} bytes in each of {columns} columns, beside the {} bytes earlier blocks take, in the {} bytes of each column kept for rows",
                self.adds_used, self.rows_room
            ));
        }
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
        let bottom = self.adds_top - self.adds_columns * self.adds_stride;
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
            if used > self.rows_room {
                let marker = if self.rows_room < self.adds_stride {
                    ROWS_FULL
                } else {
                    ADDS_FULL
                };
                return Err(format!(
                    "{marker}: the rows of a repeated body take {} bytes of each column, {} kept for rows, when grown to whole {grain}-byte copies",
                    used - before.adds_used,
                    self.rows_room
                ));
            }
            self.adds_used = used;
            for c in 0..self.adds_columns {
                let col = bottom + c * self.adds_stride;
                out.push((col + before.adds_used, col + used));
            }
        }
        // What the columns' tops took, grown down to whole grains.
        debug_assert!(
            grain <= TAIL_SLACK,
            "the columns' tops grow by less than a grain"
        );
        for c in 0..self.adds_columns as usize {
            if self.tails[c] < before.tails[c] {
                let hi = before.tails[c];
                self.tails[c] = hi - grow(hi - self.tails[c]);
                debug_assert!(
                    self.tails[c] >= bottom + c as u32 * self.adds_stride + self.rows_room
                );
                out.push((self.tails[c], hi));
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
        let mut w = Window::shared(&m, Columns::rows_only(0x4000));
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
        let mut w = Window::shared_below(&m, Columns::rows_only(0x4000), 0x8000);
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
        let mut w = Window::shared(&m, Columns::rows_only(0x4000));
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
        let mut full = Window::shared(&m, Columns::rows_only(0x4000));
        let start = full;
        full.adds(0x4000, 1, &m).unwrap();
        let e = full.taken_since(&start, 48).unwrap_err();
        assert!(e.starts_with(ADDS_FULL), "{e}");
    }

    #[test]
    fn private_region0_fills_the_columns_tops_above_the_rows() {
        let m = MachineModel::c600();
        let cols = Columns {
            stride: 0x4000,
            rows: 0x1000,
        };
        let mut w = Window::shared(&m, cols);
        let below = w.region0;
        assert_eq!(below, 0x74000);
        // The column with the most room, the first of equals.
        assert_eq!(w.region0_beside_rows(100), 0x78000 - 104);
        assert_eq!(w.region0_beside_rows(100), 0x7c000 - 104);
        assert_eq!(w.region0_beside_rows(0x2000), 0x80000 - 0x2000);
        // Nothing went below the columns, and the taking is counted.
        assert_eq!(w.region0, below);
        let start = Window::shared(&m, cols);
        assert_eq!(w.region0_taken_since(&start), 104 + 104 + 0x2000);
        // Rows stay in their room, whatever the tops hold.
        let rows = w.adds(0x800, 3, &m).unwrap();
        assert_eq!(rows, vec![0x74000, 0x78000, 0x7c000]);
        let e = w.adds(0x900, 3, &m).unwrap_err();
        assert!(e.starts_with(ROWS_FULL), "{e}");
        // A request no top has room for (the rows' room and the slack
        // kept) goes below the columns.
        assert_eq!(w.region0_beside_rows(0x3000), below - 0x3000);
        // Columns of rows only keep the old layout.
        let mut only = Window::shared(&m, Columns::rows_only(0x4000));
        assert_eq!(only.region0_beside_rows(8), 0x74000 - 8);
        assert!(only.adds(0x4000, 3, &m).is_ok());
        let mut c = Columns::chain(&m);
        for _ in 0..12 {
            assert!(c.rows < c.stride);
            c = c.more_rows();
        }
        assert_eq!(c, Columns::rows_only(m.element_bytes));
        // A chain plans again with more rows, or wider columns once the
        // rows have them whole, whatever message carries the marker.
        let wrapped = |marker: &str| format!("fc2: the closest, grid 1x1: {marker}: ...");
        let first = Columns::chain(&m);
        assert_eq!(
            first.after_full(&wrapped(ROWS_FULL), &m),
            Some(first.more_rows())
        );
        assert_eq!(c.after_full(&wrapped(ADDS_FULL), &m), Some(c.widened(&m)));
        assert_eq!(c.after_full("no tile grid fits", &m), None);
    }

    #[test]
    fn a_bodys_column_tops_are_ranges_in_whole_grains() {
        let m = MachineModel::c600();
        let mut w = Window::shared(
            &m,
            Columns {
                stride: 0x4000,
                rows: 0x1000,
            },
        );
        w.region0_beside_rows(16);
        let before = w;
        w.region0_beside_rows(20);
        w.region0_beside_rows(20);
        let ranges = w.taken_since(&before, 48).unwrap();
        assert_eq!(
            ranges,
            vec![(0x7c000 - 48, 0x7c000), (0x80000 - 48, 0x80000)]
        );
        assert_eq!(w.region0_taken_since(&before), 96);
    }
}
