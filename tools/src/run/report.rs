//! What `ipu-run` reports: one JSON object (`--json`) or a human summary.

use std::fmt::Write;

use serde::Serialize;

use super::compare::Tolerance;

/// The result of one `ipu-run`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The model file.
    pub model: String,
    /// The device name.
    pub device: String,
    /// The function that ran.
    pub function: String,
    /// Seconds spent loading (parsing or importing) the model.
    pub import_s: f64,
    /// Seconds spent running, over all data sets.
    pub run_s: f64,
    /// Operations executed per run: the reference executor's `nn` ops;
    /// on the simulator, its instructions (as `profile.instructions`).
    pub ops: usize,
    /// The most tensor bytes alive at once in any run (the reference
    /// executor's; 0 on the simulator, which has no tensors of its own).
    pub peak_live_bytes: usize,
    /// The comparison tolerances.
    pub tolerance: Tolerance,
    /// What a compiled run's outputs were compared with: the data set's
    /// stored outputs, or (without any) the reference executor's on the
    /// same IR; `None` for other runs, which compare with stored outputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle: Option<String>,
    /// Whether every compared output is within tolerance; `None` when nothing
    /// was compared.
    pub passed: Option<bool>,
    /// One entry per output and data set.
    pub outputs: Vec<OutputReport>,
    /// The simulator's profile of the last run (device `sim` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileSummary>,
    /// What a compiled run measured (a model or IR on `--device sim`),
    /// flattened into the JSON object.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub compiled: Option<CompiledSummary>,
    /// The files `--profile` wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_files: Option<crate::prof::Written>,
    /// The last run's recorded simulator profile (`--profile`), for the
    /// profile writer; not part of the report.
    #[serde(skip)]
    pub recorded: Option<Box<ipuc_runtime::sim::Profile>>,
}

/// The figures of a model compiled for and run on the simulator.
#[derive(Clone, Debug, Serialize)]
pub struct CompiledSummary {
    /// Device cycles of the last run.
    pub cycles: u64,
    /// Host link time of the streams, seconds.
    pub host_io_s: f64,
    /// Model FLOPs per device second over the peak of the AMP instruction
    /// the products use.
    pub mfu: f64,
    /// Sum over supersteps of the most compute cycles of any tile.
    pub compute_cycles: u64,
    /// Sum over supersteps of the most exchange cycles of any tile.
    pub exchange_cycles: u64,
    /// Sum over supersteps of the longest sync wait of any tile.
    pub sync_cycles: u64,
    /// Tiles with code.
    pub tiles_used: usize,
    /// Bytes of the fullest tile: its image (code, data, constants) and
    /// its host tensors' pieces.
    pub max_tile_bytes: u64,
    /// Bytes of code on the tile with the most (counted in
    /// `max_tile_bytes` too).
    pub max_code_bytes: u64,
    /// The most bytes of exchange code (sends, receive arming, mux switches
    /// and their delays) on one tile.
    pub exchange_code_bytes_max: u64,
    /// Seconds to load, plan, lower and encode (not the reference
    /// executor's run where it gives the expected outputs).
    pub compile_s: f64,
    /// Entries per run: the leading dimension of the first input when it
    /// has three or more dimensions (images `[N, C, H, W]`, token batches
    /// `[N, T, C]`), else 1.
    pub batch: u64,
    /// With `--batch auto`: why one image more does not fit (or where the
    /// search stopped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_limit: Option<String>,
    /// The `--precision` the function was converted to (`as-is` without).
    pub precision: String,
    /// Entries (images, for an image model) per second, the host link's
    /// input and output streams included: `batch / (device + host io)`.
    pub images_per_s: f64,
    /// Entries per second of the device alone: `batch / device seconds`.
    pub device_images_per_s: f64,
}

/// A summary of a simulated run.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileSummary {
    /// Device cycles of the run (the latest tile's end).
    pub total_cycles: u64,
    /// Host link cycles of the streams (before and after the run).
    pub host_cycles: u64,
    /// Host stream steps (one per stream and direction).
    pub host_steps: usize,
    /// The host steps' time at the machine's clock, seconds.
    pub host_io_s: f64,
    /// Instructions executed on all tiles (a bundle counts as 2).
    pub instructions: u64,
    /// Tiles that ran code.
    pub tiles: usize,
    /// Per superstep, the most cycles any tile spent in each phase.
    pub supersteps: Vec<SuperstepSummary>,
}

/// One superstep of a [`ProfileSummary`]: the maxima over tiles.
#[derive(Clone, Debug, Serialize)]
pub struct SuperstepSummary {
    /// Compute cycles.
    pub compute: u64,
    /// Exchange cycles.
    pub exchange: u64,
    /// Cycles waiting at the sync (including the sync latency).
    pub sync: u64,
}

/// One output of one data set.
#[derive(Clone, Debug, Serialize)]
pub struct OutputReport {
    /// The data set (`test_data_set_0`, or `synthesized`).
    pub data_set: String,
    /// The output's name (from the expected `.pb` file, else `output_K`).
    pub name: String,
    /// The produced shape.
    pub shape: Vec<usize>,
    /// The produced element type.
    pub dtype: String,
    /// See [`super::compare::Metrics`]; `None` without an expected value.
    pub max_abs_err: Option<f64>,
    /// Largest relative error.
    pub max_rel_err: Option<f64>,
    /// Relative L2 error.
    pub rel_l2_err: Option<f64>,
    /// Cosine similarity.
    pub cosine: Option<f64>,
    /// Elements outside the tolerance.
    pub mismatches: Option<usize>,
    /// Whether within tolerance; `None` without an expected value.
    pub passed: Option<bool>,
    /// Why the output could not be compared (e.g. a shape mismatch).
    pub problem: Option<String>,
}

impl Report {
    /// A report of no run yet: `function` of `model` on `device`, imported
    /// in `import_s` seconds, to be compared within `tolerance`.
    pub fn new(
        model: String,
        device: String,
        function: String,
        import_s: f64,
        tolerance: Tolerance,
    ) -> Report {
        Report {
            model,
            device,
            function,
            import_s,
            run_s: 0.0,
            ops: 0,
            peak_live_bytes: 0,
            tolerance,
            oracle: None,
            passed: None,
            outputs: Vec::new(),
            profile: None,
            compiled: None,
            profile_files: None,
            recorded: None,
        }
    }

    /// The JSON object, on one line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("reports serialize")
    }

    /// The human summary.
    pub fn to_human(&self) -> String {
        let mut s = String::new();
        if self.function.is_empty() {
            let _ = writeln!(s, "model    {}", self.model);
        } else {
            let _ = writeln!(s, "model    {} (@{})", self.model, self.function);
        }
        let _ = writeln!(s, "device   {}", self.device);
        if let Some(o) = &self.oracle {
            let _ = writeln!(s, "against  {o}");
        }
        let _ = writeln!(s, "import   {:.3} s", self.import_s);
        if self.profile.is_some() {
            // The simulator's instructions are on the profile's line; the
            // reference executor's op count and live bytes are its own.
            let _ = writeln!(s, "run      {:.3} s", self.run_s);
        } else {
            let _ = writeln!(
                s,
                "run      {:.3} s ({} ops, peak {} live)",
                self.run_s,
                self.ops,
                human_bytes(self.peak_live_bytes)
            );
        }
        if let Some(p) = &self.profile {
            let _ = writeln!(
                s,
                "profile  {} device cycles, {} instructions on {} tile(s)",
                p.total_cycles, p.instructions, p.tiles
            );
            let _ = writeln!(
                s,
                "host io  {:.1} us in {} stream step(s) ({} host-link cycles, apart from the device's)",
                p.host_io_s * 1e6,
                p.host_steps,
                p.host_cycles
            );
            for (k, st) in p.supersteps.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "  superstep {k:<3} compute {:>10}  exchange {:>10}  sync {:>10}",
                    st.compute, st.exchange, st.sync
                );
            }
        }
        if let Some(c) = &self.compiled {
            let _ = writeln!(
                s,
                "compiled {:.3} s, {} tile(s), {:.2} % of the AMP's peak; batch {}, precision {}: {:.1} images/s with host io, {:.1} on the device alone",
                c.compile_s,
                c.tiles_used,
                100.0 * c.mfu,
                c.batch,
                c.precision,
                c.images_per_s,
                c.device_images_per_s
            );
            if let Some(limit) = &c.batch_limit {
                let _ = writeln!(s, "batch    {} by --batch auto: {limit}", c.batch);
            }
            let _ = writeln!(
                s,
                "memory   {} bytes on the fullest tile (image and host tensors), at most {} of code on a tile, {} of exchange code",
                c.max_tile_bytes, c.max_code_bytes, c.exchange_code_bytes_max
            );
        }
        if let Some(w) = &self.profile_files {
            let files: Vec<String> = w
                .files
                .iter()
                .map(|(name, bytes)| format!("{name} {}", human_bytes(*bytes as usize)))
                .collect();
            let _ = writeln!(
                s,
                "profile  {} ({}) written in {:.3} s",
                w.dir,
                files.join(", "),
                w.write_s
            );
            if let Some(note) = &w.truncated {
                let _ = writeln!(s, "         {note}");
            }
        }
        let mut set = None;
        for o in &self.outputs {
            if set != Some(&o.data_set) {
                let _ = writeln!(s, "{}:", o.data_set);
                set = Some(&o.data_set);
            }
            let _ = write!(
                s,
                "  {:<16} {:<18} {:<5}",
                o.name,
                format!("{:?}", o.shape),
                o.dtype
            );
            match (&o.problem, o.max_abs_err) {
                (Some(p), _) => {
                    let _ = write!(s, " FAIL: {p}");
                }
                (None, Some(abs)) => {
                    let _ = write!(
                        s,
                        " max_abs {abs:.3e}  max_rel {:.3e}  rel_l2 {:.3e}  cosine {:.6}  {}",
                        o.max_rel_err.unwrap_or(0.0),
                        o.rel_l2_err.unwrap_or(0.0),
                        o.cosine.unwrap_or(0.0),
                        match o.passed {
                            Some(true) => "ok".to_string(),
                            _ =>
                                format!("FAIL ({} mismatched elements)", o.mismatches.unwrap_or(0)),
                        }
                    );
                }
                (None, None) => {
                    let _ = write!(s, " (no expected output)");
                }
            }
            s.push('\n');
        }
        let tol = self.tolerance.describe();
        let _ = match self.passed {
            Some(true) => writeln!(s, "PASS: every output is within {tol}"),
            Some(false) => {
                let failed = self
                    .outputs
                    .iter()
                    .filter(|o| o.passed == Some(false))
                    .count();
                writeln!(
                    s,
                    "FAIL: {failed} of {} output(s) exceed {tol}",
                    self.outputs.len()
                )
            }
            None => writeln!(s, "no expected outputs to compare with"),
        };
        s
    }
}

/// Bytes in binary units (`12.3 MiB`).
fn human_bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
