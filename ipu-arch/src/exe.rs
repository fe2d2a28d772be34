//! The executable format: every tile's image, the symbol tables, tensor
//! bindings and host streams, serialized deterministically.
//!
//! Byte layout: the magic `IPUCEXE\0`, the format version (u32 little
//! endian), the SHA-256 of the payload (32 bytes), then the payload: the
//! bincode serialization of [`Executable`]. Reading checks the magic, then
//! the version (a mismatch is a clear error, before anything else is
//! decoded), then the hash. The same executable always gives the same bytes
//! (no maps with random order; tiles and bindings are kept sorted).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::image::{ContextKind, TileImage};
use super::machine::MachineModel;

/// Version of the format this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// File magic.
pub const MAGIC: &[u8; 8] = b"IPUCEXE\0";

/// Element type of a tensor binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// `f8E4M3FNUZ` with a power-of-two scale.
    F8E4M3FNUZ {
        /// Scale exponent in -31..=31.
        scale: i8,
    },
    /// 32-bit signed integer.
    I32,
    /// 32-bit unsigned integer.
    U32,
    /// Bytes.
    U8,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> u32 {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 => 2,
            DType::F8E4M3FNUZ { .. } | DType::U8 => 1,
        }
    }
}

/// Where (part of) a named tensor lives: a contiguous run of its row-major
/// elements `[element_offset, element_offset + size/dtype.size())` at
/// `address` on `tile`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorBinding {
    /// Tensor name.
    pub name: String,
    /// Tile.
    pub tile: u32,
    /// Tile address.
    pub address: u32,
    /// Bytes of this piece.
    pub size: u32,
    /// Element type.
    pub dtype: DType,
    /// Shape of the whole tensor.
    pub shape: Vec<u64>,
    /// First element (row-major over `shape`) of this piece.
    pub element_offset: u64,
}

/// Direction of a host stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamDirection {
    /// Host to tiles, before the program runs.
    HostToDevice,
    /// Tiles to host, after the program ends.
    DeviceToHost,
}

/// A host transfer of one named tensor over the PCIe link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostStream {
    /// Stream name.
    pub name: String,
    /// The tensor (binding name) it moves.
    pub tensor: String,
    /// Direction.
    pub direction: StreamDirection,
}

/// One tile's program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileProgram {
    /// Tile number.
    pub tile: u32,
    /// Its image (sections, symbols, stacks, entry).
    pub image: TileImage,
}

/// A whole-chip program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Executable {
    /// Machine it was built for (`c600`, `bow`).
    pub machine: String,
    /// Tile programs, sorted by tile.
    pub tiles: Vec<TileProgram>,
    /// Tensor bindings, sorted by (name, element offset).
    pub tensors: Vec<TensorBinding>,
    /// Host streams, in transfer order.
    pub streams: Vec<HostStream>,
}

/// Why bytes are not a readable executable.
#[derive(Debug, thiserror::Error)]
pub enum ExeError {
    /// Not an executable at all.
    #[error("not an ipuc executable (bad magic)")]
    BadMagic,
    /// Written by another format version.
    #[error("executable format version {found} is not supported (this build reads version {expected}); rebuild the executable")]
    VersionMismatch {
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        expected: u32,
    },
    /// Payload does not match its hash.
    #[error("executable is corrupt: content hash mismatch")]
    HashMismatch,
    /// Payload does not decode.
    #[error("executable payload does not decode: {0}")]
    Decode(String),
    /// Inconsistent content.
    #[error("invalid executable: {0}")]
    Invalid(String),
}

/// Checks one tile's sections and stack regions against `machine`'s memory.
fn check_image(tile: u32, image: &TileImage, machine: &MachineModel) -> Result<(), ExeError> {
    let (base, end) = (u64::from(machine.sram_base), u64::from(machine.sram_end));
    for s in &image.sections {
        let start = u64::from(s.address);
        let stop = start + s.bytes.len() as u64;
        if start < base || stop > end {
            return Err(ExeError::Invalid(format!(
                "tile {tile}: section `{}` at 0x{start:x}..0x{stop:x} is outside tile memory 0x{base:x}..0x{end:x}",
                s.name
            )));
        }
    }
    for st in &image.stacks {
        let copies = match st.context {
            ContextKind::Worker => u64::from(machine.worker_contexts),
            ContextKind::Supervisor => 1,
        };
        let (top, size) = (u64::from(st.top), u64::from(st.size));
        let below = size.checked_mul(copies).and_then(|b| top.checked_sub(b));
        if top % 8 != 0 || size % 8 != 0 || size == 0 || top > end || below.is_none_or(|b| b < base)
        {
            return Err(ExeError::Invalid(format!(
                "tile {tile}: stack region (top 0x{top:x}, {size} bytes x {copies}) is not 8-byte aligned inside tile memory"
            )));
        }
    }
    if !(base..end).contains(&u64::from(image.entry)) {
        return Err(ExeError::Invalid(format!(
            "tile {tile}: entry 0x{:x} is outside tile memory",
            image.entry
        )));
    }
    Ok(())
}

impl Executable {
    /// A new executable with tiles and bindings put in canonical order.
    pub fn new(
        machine: &str,
        mut tiles: Vec<TileProgram>,
        mut tensors: Vec<TensorBinding>,
        streams: Vec<HostStream>,
    ) -> Result<Self, ExeError> {
        tiles.sort_by_key(|t| t.tile);
        tensors.sort_by(|a, b| {
            (&a.name, a.element_offset, a.tile).cmp(&(&b.name, b.element_offset, b.tile))
        });
        let exe = Executable {
            machine: machine.into(),
            tiles,
            tensors,
            streams,
        };
        exe.validate()?;
        Ok(exe)
    }

    /// Checks that the machine is known, tiles are unique, every section
    /// and stack region lies in its tile's memory (all arithmetic checked:
    /// a crafted file is an error, never an overflow), and bindings and
    /// streams are consistent.
    pub fn validate(&self) -> Result<(), ExeError> {
        let machine = MachineModel::by_name(&self.machine).ok_or_else(|| {
            ExeError::Invalid(format!(
                "unknown machine `{}` (known: {})",
                self.machine,
                MachineModel::NAMES.join(", ")
            ))
        })?;
        for w in self.tiles.windows(2) {
            if w[0].tile >= w[1].tile {
                return Err(ExeError::Invalid(format!(
                    "tile {} appears twice or out of order",
                    w[1].tile
                )));
            }
        }
        for t in &self.tiles {
            check_image(t.tile, &t.image, &machine)?;
        }
        for b in &self.tensors {
            if b.size % b.dtype.size() != 0 {
                return Err(ExeError::Invalid(format!(
                    "binding of `{}` on tile {}: size {} is not a multiple of the element size",
                    b.name, b.tile, b.size
                )));
            }
            let total = b
                .shape
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                .ok_or_else(|| {
                    ExeError::Invalid(format!(
                        "tensor `{}` has shape {:?}, whose element count overflows 64 bits",
                        b.name, b.shape
                    ))
                })?;
            let end = b
                .element_offset
                .checked_add(u64::from(b.size / b.dtype.size()));
            if end.is_none_or(|end| end > total) {
                return Err(ExeError::Invalid(format!(
                    "binding of `{}` on tile {} runs past the tensor's {} elements",
                    b.name, b.tile, total
                )));
            }
            if let DType::F8E4M3FNUZ { scale } = b.dtype {
                if !super::float8::SCALE_RANGE.contains(&i32::from(scale)) {
                    return Err(ExeError::Invalid(format!(
                        "FP8 scale {scale} of `{}` is outside -31..=31",
                        b.name
                    )));
                }
            }
        }
        for s in &self.streams {
            if !self.tensors.iter().any(|b| b.name == s.tensor) {
                return Err(ExeError::Invalid(format!(
                    "stream `{}` moves unknown tensor `{}`",
                    s.name, s.tensor
                )));
            }
        }
        Ok(())
    }

    /// Canonical bytes.
    ///
    /// The payload is serialised in place, after the header, and its hash
    /// filled in after it: one buffer of the file's size (so400m's is 666
    /// MB), not a payload and its copy.
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = MAGIC.len() + 4 + 32;
        let size = bincode::serialized_size(self).unwrap_or_default() as usize;
        let mut out = Vec::with_capacity(header + size);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&[0; 32]);
        if bincode::serialize_into(&mut out, self).is_err() {
            out.truncate(header);
        }
        let digest = Sha256::digest(&out[header..]);
        out[header - 32..header].copy_from_slice(&digest);
        out
    }

    /// The content hash (SHA-256 of the payload), hex.
    pub fn content_hash(&self) -> String {
        let payload = bincode::serialize(self).unwrap_or_default();
        Sha256::digest(&payload)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// Reads bytes written by [`Executable::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ExeError> {
        if bytes.len() < 12 || &bytes[..8] != MAGIC {
            return Err(ExeError::BadMagic);
        }
        let found = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        if found != FORMAT_VERSION {
            return Err(ExeError::VersionMismatch {
                found,
                expected: FORMAT_VERSION,
            });
        }
        if bytes.len() < 44 {
            return Err(ExeError::Decode("truncated header".into()));
        }
        let payload = &bytes[44..];
        if Sha256::digest(payload).as_slice() != &bytes[12..44] {
            return Err(ExeError::HashMismatch);
        }
        let exe: Executable =
            bincode::deserialize(payload).map_err(|e| ExeError::Decode(e.to_string()))?;
        exe.validate()?;
        Ok(exe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::StackRegion;
    use crate::{assemble, AsmOptions};

    fn sample() -> Executable {
        let image = assemble(
            "main:\n setzi $m0, 1\n exitz $mzero\n",
            &AsmOptions::default(),
        )
        .unwrap();
        let t = TensorBinding {
            name: "x".into(),
            tile: 3,
            address: 0x70000,
            size: 8,
            dtype: DType::F16,
            shape: vec![2, 2],
            element_offset: 0,
        };
        let s = HostStream {
            name: "in".into(),
            tensor: "x".into(),
            direction: StreamDirection::HostToDevice,
        };
        Executable::new(
            "c600",
            vec![TileProgram { tile: 3, image }],
            vec![t],
            vec![s],
        )
        .unwrap()
    }

    #[test]
    fn bytes_are_deterministic_and_round_trip() {
        let a = sample().to_bytes();
        assert_eq!(a, sample().to_bytes());
        assert_eq!(Executable::from_bytes(&a).unwrap(), sample());
        assert_eq!(sample().content_hash().len(), 64);
    }

    #[test]
    fn version_mismatch_corruption_and_bad_magic_are_errors() {
        let mut b = sample().to_bytes();
        b[8] = 9;
        let e = Executable::from_bytes(&b).unwrap_err().to_string();
        assert!(
            e.contains("format version 9 is not supported (this build reads version 1)"),
            "{e}"
        );
        let mut c = sample().to_bytes();
        let last = c.len() - 1;
        c[last] ^= 1;
        assert!(matches!(
            Executable::from_bytes(&c),
            Err(ExeError::HashMismatch)
        ));
        assert!(matches!(
            Executable::from_bytes(b"nope"),
            Err(ExeError::BadMagic)
        ));
    }

    #[test]
    fn inconsistent_bindings_are_rejected() {
        let mut exe = sample();
        exe.tensors[0].size = 10;
        exe.tensors[0].shape = vec![2];
        assert!(exe
            .validate()
            .unwrap_err()
            .to_string()
            .contains("runs past"));
    }

    /// A crafted file: valid framing and hash, hostile content. Each must be
    /// a located `Invalid` error from `from_bytes`, never an overflow.
    fn crafted(edit: impl FnOnce(&mut Executable)) -> String {
        let mut exe = sample();
        edit(&mut exe);
        let payload = bincode::serialize(&exe).unwrap();
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&Sha256::digest(&payload));
        bytes.extend_from_slice(&payload);
        Executable::from_bytes(&bytes).unwrap_err().to_string()
    }

    #[test]
    fn crafted_overflowing_sections_stacks_and_shapes_are_errors() {
        let e = crafted(|x| {
            let s = &mut x.tiles[0].image.sections[0];
            s.address = u32::MAX - 3;
        });
        assert!(
            e.contains("tile 3: section") && e.contains("outside tile memory"),
            "{e}"
        );
        let e = crafted(|x| {
            x.tiles[0].image.stacks.push(StackRegion {
                context: ContextKind::Worker,
                top: 0x4c008,
                size: 0x7fff_fff8,
            })
        });
        assert!(e.contains("stack region"), "{e}");
        let e = crafted(|x| x.tensors[0].shape = vec![u64::MAX, 3]);
        assert!(e.contains("overflows 64 bits"), "{e}");
        let e = crafted(|x| x.tensors[0].element_offset = u64::MAX);
        assert!(e.contains("runs past"), "{e}");
        let e = crafted(|x| x.machine = "ipu9".into());
        assert!(e.contains("unknown machine `ipu9`"), "{e}");
        let e = crafted(|x| x.tiles[0].image.entry = 7);
        assert!(e.contains("entry 0x7 is outside tile memory"), "{e}");
    }
}
