//! A loadable tile image: the sections the assembler laid out in tile
//! memory, the symbol table, and the stack regions.

use serde::{Deserialize, Serialize};

/// Which kind of context code is written for (`.supervisor` / `.worker`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ContextKind {
    /// Supervisor code.
    Supervisor,
    /// Worker code.
    Worker,
}

/// One laid-out section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    /// Section name (`.text.foo`, `.data`, `.interleaved.w`).
    pub name: String,
    /// Flags string as written (`"ax"`), empty if none.
    pub flags: String,
    /// Whether it holds instructions (flag `x` or a `.text` name).
    pub is_code: bool,
    /// Tile address of its first byte.
    pub address: u32,
    /// Contents. Serialised as one byte string (`serde_bytes`): the same
    /// encoding as a sequence of bytes in bincode, without a call per
    /// byte (so400m's 620 MB took 3.5 s as a sequence).
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
    /// Context mode changes in code: (byte offset, mode), ascending.
    pub modes: Vec<(u32, ContextKind)>,
}

impl Section {
    /// One past its last address (saturating: a section that would run
    /// past 4 GiB is refused by `Executable::validate`).
    pub fn end(&self) -> u32 {
        u32::try_from(u64::from(self.address) + self.bytes.len() as u64).unwrap_or(u32::MAX)
    }

    /// The context mode in force at byte `offset`.
    pub fn mode_at(&self, offset: u32) -> ContextKind {
        self.modes
            .iter()
            .rev()
            .find(|(o, _)| *o <= offset)
            .map(|m| m.1)
            .unwrap_or(ContextKind::Supervisor)
    }
}

/// A symbol (label) of the image.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    /// Name.
    pub name: String,
    /// Tile address.
    pub address: u32,
    /// `.size`, if given.
    pub size: Option<u32>,
    /// `.globl`/`.global`.
    pub global: bool,
    /// `.type name, @function`.
    pub is_function: bool,
}

/// A stack region (`.stack` directive, an ipuc extension): accesses through
/// `$sp` below `top - size` are stack overflows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackRegion {
    /// Whose stack: the supervisor's, or each worker's (worker n gets
    /// `top - n*size .. top - (n+1)*size`, growing down).
    pub context: ContextKind,
    /// Initial `$sp` (one past the highest stack byte).
    pub top: u32,
    /// Bytes per context.
    pub size: u32,
}

/// Everything one tile loads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileImage {
    /// Sections in address order.
    pub sections: Vec<Section>,
    /// Symbols in address order (ties by name).
    pub symbols: Vec<Symbol>,
    /// Stack regions.
    pub stacks: Vec<StackRegion>,
    /// Supervisor entry address.
    pub entry: u32,
}

impl TileImage {
    /// Bytes of code (counted against the tile's memory like everything else).
    pub fn code_bytes(&self) -> u32 {
        self.sections
            .iter()
            .filter(|s| s.is_code)
            .map(|s| s.bytes.len() as u32)
            .sum()
    }

    /// Total bytes the image occupies.
    pub fn total_bytes(&self) -> u32 {
        self.sections.iter().map(|s| s.bytes.len() as u32).sum()
    }

    /// The symbol with this name.
    pub fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.symbols.iter().find(|s| s.name == name)
    }

    /// The section holding `address`.
    pub fn section_at(&self, address: u32) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| s.address <= address && address < s.end())
    }
}
