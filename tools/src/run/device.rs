//! The kinds of device `ipu-run` can run on (`--device`); not to be confused
//! with the runtime's `Device` trait, which a loaded device implements.

use ipuc_ir::{Context, OpId};
use ipuc_runtime::reference::interpreter::{self, RunStats};
use ipuc_runtime::reference::HostTensor;

/// Why a model cannot run on the simulator directly.
pub const SIM_NEEDS_EXECUTABLE: &str = "device 'sim' runs compiled programs: `ipu-run MODEL --device sim` compiles the function (ipu-plan, ipu-lower) before running it, and `ipu-run prog.ipuexe` runs a saved executable";

/// A kind of device a model runs on, as `--device` names it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// The host reference executor (the `nn` interpreter).
    Reference,
    /// The IPU simulator: runs executables built by `ipu-opt --emit=exe`.
    Sim,
}

impl DeviceKind {
    /// Every device, by name.
    pub const ALL: [(&'static str, DeviceKind); 2] = [
        ("reference", DeviceKind::Reference),
        ("sim", DeviceKind::Sim),
    ];

    /// The device called `name`.
    pub fn parse(name: &str) -> Result<DeviceKind, String> {
        DeviceKind::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, d)| d)
            .ok_or_else(|| {
                format!(
                    "unknown device '{name}' (known devices: {})",
                    DeviceKind::ALL.map(|(n, _)| n).join(", ")
                )
            })
    }

    /// The device's name.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Reference => "reference",
            DeviceKind::Sim => "sim",
        }
    }

    /// Runs `func` on `inputs`.
    pub fn run(
        self,
        ctx: &Context,
        func: OpId,
        inputs: &[HostTensor],
    ) -> Result<(Vec<HostTensor>, RunStats), String> {
        match self {
            DeviceKind::Reference => {
                interpreter::run_function_with_stats(ctx, func, inputs).map_err(|e| e.to_string())
            }
            // `ipu-run` compiles for the simulator itself; kept for callers of the library.
            DeviceKind::Sim => Err(SIM_NEEDS_EXECUTABLE.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_devices_list_the_known_ones() {
        assert_eq!(DeviceKind::parse("reference"), Ok(DeviceKind::Reference));
        assert_eq!(DeviceKind::parse("sim"), Ok(DeviceKind::Sim));
        assert_eq!(
            DeviceKind::parse("gpu").unwrap_err(),
            "unknown device 'gpu' (known devices: reference, sim)"
        );
    }
}
