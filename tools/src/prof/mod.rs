//! Profiles of simulated runs: `ipu-run --device sim --profile DIR` records
//! the run ([`ipuc_runtime::sim::SimConfig::record`]) and writes
//!
//! - `profile.json` ([`schema`](crate::prof::schema)): per tile and superstep, the compute sets
//!   (codelet instances attributed to `nn` ops), sends, sync waits and the
//!   memory map; per step of the lowering, its estimate against the
//!   simulated cycles;
//! - `trace.json` ([`trace`](crate::prof::trace)): Chrome trace events, one track per tile;
//! - `report.html` ([`html`](crate::prof::html)): a self-contained page of timelines, the
//!   occupancy heat map, the cost model's error, exchange volume and
//!   memory maps;
//!
//! and `ipu-prof DIR` ([`cli`](crate::prof::cli)) answers questions about it ([`views`](crate::prof::views)).
//!
//! The recording is bounded (`ipu-run --profile-limit MIB`,
//! [`ipuc_runtime::sim::SimConfig::record_limit`]): past its limit it
//! records nothing more, the profile keeps the later supersteps' cycles
//! alone, and every file says where it stops ([`schema::Truncated`](crate::prof::schema::Truncated)).
//! `profile.json` and `trace.json` are written as they are serialized,
//! not built in memory first.

pub mod attribution;
pub mod cli;
pub mod collect;
pub mod html;
pub mod schema;
pub mod trace;
pub mod views;

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

/// What [`write()`] wrote.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Written {
    /// The directory.
    pub dir: String,
    /// Each file's name and bytes.
    pub files: Vec<(String, u64)>,
    /// Seconds to build and write them.
    pub write_s: f64,
    /// Where the profile stops, if the recording reached its limit
    /// ([`schema::Truncated::note`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
}

/// Builds the profile of a recorded run and writes its files into `dir`
/// (created if missing).
pub fn write(dir: &Path, inputs: &collect::Inputs) -> Result<Written, String> {
    let started = Instant::now();
    let data = collect::collect(inputs)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create profile directory '{}': {e}", dir.display()))?;
    let mut files = Vec::new();
    let mut put = |name: &str,
                   write: &dyn Fn(&mut BufWriter<std::fs::File>) -> std::io::Result<()>|
     -> Result<(), String> {
        let path = dir.join(name);
        let cannot = |e: std::io::Error| format!("cannot write '{}': {e}", path.display());
        let mut out = BufWriter::new(std::fs::File::create(&path).map_err(cannot)?);
        write(&mut out).and_then(|()| out.flush()).map_err(cannot)?;
        let bytes = std::fs::metadata(&path).map_err(cannot)?.len();
        files.push((name.to_string(), bytes));
        Ok(())
    };
    put("profile.json", &|out| {
        Ok(serde_json::to_writer(out, &data)?)
    })?;
    put("trace.json", &|out| trace::write(&data, out))?;
    put("report.html", &|out| {
        out.write_all(html::report(&data).as_bytes())
    })?;
    Ok(Written {
        dir: dir.display().to_string(),
        files,
        write_s: started.elapsed().as_secs_f64(),
        truncated: data.truncated.map(|t| t.note()),
    })
}

/// Reads `DIR/profile.json`.
pub fn read(dir: &Path) -> Result<schema::ProfileData, String> {
    let path = dir.join("profile.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "cannot read '{}': {e} (write a profile with `ipu-run MODEL --device sim --profile {}`)",
            path.display(),
            dir.display()
        )
    })?;
    schema::ProfileData::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}
