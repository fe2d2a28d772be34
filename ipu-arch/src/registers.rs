//! Register names of the tile: the MRF (`$m0`..`$m15`) and the ARF
//! (`$a0`..`$a15`) with their ABI aliases (Tile Vertex ISA manual).

/// `$m15` always reads zero; writes are discarded.
pub const MZERO: u8 = 15;
/// `$a15` always reads zero; writes are discarded (`$a14:15` is `$azeros`).
pub const AZERO: u8 = 15;
/// Stack pointer `$sp`.
pub const SP: u8 = 7;
/// Link register `$lr`.
pub const LR: u8 = 6;
/// Frame pointer `$fp`.
pub const FP: u8 = 5;
/// Worker base `$mworker_base`.
pub const WORKER_BASE: u8 = 12;
/// Vertex base `$mvertex_base`, set by `run`/`runall`.
pub const VERTEX_BASE: u8 = 13;

/// The register file a register name belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegFile {
    /// Integer/address registers.
    M,
    /// Floating-point registers (workers only).
    A,
}

/// Parses a register name without its `$` (e.g. `m3`, `sp`, `azero`).
pub fn parse_register(name: &str) -> Option<(RegFile, u8)> {
    let alias = match name {
        "mzero" => Some((RegFile::M, MZERO)),
        "sp" => Some((RegFile::M, SP)),
        "lr" => Some((RegFile::M, LR)),
        "fp" => Some((RegFile::M, FP)),
        "mworker_base" => Some((RegFile::M, WORKER_BASE)),
        "mvertex_base" => Some((RegFile::M, VERTEX_BASE)),
        "azero" => Some((RegFile::A, AZERO)),
        "azeros" => Some((RegFile::A, 14)),
        _ => None,
    };
    if alias.is_some() {
        return alias;
    }
    let (file, digits) = match name.as_bytes().first()? {
        b'm' => (RegFile::M, &name[1..]),
        b'a' => (RegFile::A, &name[1..]),
        _ => return None,
    };
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if digits.len() == 2 && digits.starts_with('0') {
        return None;
    }
    let n: u8 = digits.parse().ok()?;
    (n < 16).then_some((file, n))
}

/// Canonical printed name of a register (aliases are printed by number,
/// except the zero registers, which print as `$mzero`/`$azero`).
pub fn register_name(file: RegFile, n: u8) -> String {
    match (file, n) {
        (RegFile::M, MZERO) => "$mzero".into(),
        (RegFile::A, AZERO) => "$azero".into(),
        (RegFile::M, n) => format!("$m{n}"),
        (RegFile::A, n) => format!("$a{n}"),
    }
}
