//! Source locations attached to operations, as in MLIR.

use std::sync::Arc;

use crate::attributes::Attribute;

/// The structure of a location.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LocKind {
    /// `loc(unknown)`.
    Unknown,
    /// `loc("file":line:col)`.
    FileLineCol { file: Arc<str>, line: u32, col: u32 },
    /// `loc("file":line:col to end_line:end_col)` (`to :end_col` on one line).
    FileLineColRange {
        file: Arc<str>,
        line: u32,
        col: u32,
        end_line: u32,
        end_col: u32,
    },
    /// `loc("name")` or `loc("name"(child))`: e.g. an ONNX node name.
    Name {
        name: Arc<str>,
        child: Option<Location>,
    },
    /// `loc(callsite(callee at caller))`.
    CallSite { callee: Location, caller: Location },
    /// `loc(fused[a, b])` or `loc(fused<#meta>[a, b])`.
    Fused {
        locations: Vec<Location>,
        metadata: Option<Attribute>,
    },
}

/// An immutable, shared location.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location(Arc<LocKind>);

impl Location {
    /// Wraps a location structure.
    pub fn new(kind: LocKind) -> Location {
        Location(Arc::new(kind))
    }
    /// The structure.
    pub fn kind(&self) -> &LocKind {
        &self.0
    }
    /// `loc(unknown)`.
    pub fn unknown() -> Location {
        Location::new(LocKind::Unknown)
    }
    /// A file:line:col location.
    pub fn file_line_col(file: &str, line: u32, col: u32) -> Location {
        Location::new(LocKind::FileLineCol {
            file: file.into(),
            line,
            col,
        })
    }
    /// A file range; a range that ends where it starts is a `file_line_col`.
    pub fn file_line_col_range(
        file: &str,
        line: u32,
        col: u32,
        end_line: u32,
        end_col: u32,
    ) -> Location {
        if (line, col) == (end_line, end_col) {
            return Location::file_line_col(file, line, col);
        }
        Location::new(LocKind::FileLineColRange {
            file: file.into(),
            line,
            col,
            end_line,
            end_col,
        })
    }
    /// A name location (e.g. an ONNX node name).
    pub fn name(name: &str, child: Option<Location>) -> Location {
        Location::new(LocKind::Name {
            name: name.into(),
            child,
        })
    }
    /// Fuses locations, flattening nested fusions and dropping unknowns and duplicates.
    pub fn fused(locs: impl IntoIterator<Item = Location>) -> Location {
        let mut out: Vec<Location> = Vec::new();
        for l in locs {
            match l.kind() {
                LocKind::Unknown => {}
                LocKind::Fused {
                    locations,
                    metadata: None,
                } => {
                    for x in locations {
                        if !out.contains(x) {
                            out.push(x.clone());
                        }
                    }
                }
                _ => {
                    if !out.contains(&l) {
                        out.push(l);
                    }
                }
            }
        }
        match out.len() {
            0 => Location::unknown(),
            1 => out.pop().expect("one location"),
            _ => Location::new(LocKind::Fused {
                locations: out,
                metadata: None,
            }),
        }
    }
    /// Whether this is `loc(unknown)`.
    pub fn is_unknown(&self) -> bool {
        matches!(self.kind(), LocKind::Unknown)
    }
    /// The first file:line:col inside this location, for diagnostics.
    pub fn file_line_col_of(&self) -> Option<(&str, u32, u32)> {
        match self.kind() {
            LocKind::FileLineCol { file, line, col }
            | LocKind::FileLineColRange {
                file, line, col, ..
            } => Some((file, *line, *col)),
            LocKind::Name { child, .. } => child.as_ref().and_then(|c| c.file_line_col_of()),
            LocKind::CallSite { callee, .. } => callee.file_line_col_of(),
            LocKind::Fused { locations, .. } => locations.iter().find_map(|l| l.file_line_col_of()),
            LocKind::Unknown => None,
        }
    }
    /// The first name inside this location (e.g. the ONNX node name), for diagnostics.
    pub fn name_of(&self) -> Option<&str> {
        match self.kind() {
            LocKind::Name { name, .. } => Some(name),
            LocKind::CallSite { callee, .. } => callee.name_of(),
            LocKind::Fused { locations, .. } => locations.iter().find_map(|l| l.name_of()),
            _ => None,
        }
    }
}
