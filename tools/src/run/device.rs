//! The devices `ipu-run` can run on.

use ipuc_ir::{Context, OpId};
use ipuc_runtime::reference::interpreter::{self, RunStats};
use ipuc_runtime::reference::HostTensor;

/// Why a model cannot run on the simulator directly.
pub const SIM_NEEDS_EXECUTABLE: &str = "device 'sim' runs executables: compile the program to the ipu dialect and save it with `ipu-opt --emit=exe -o prog.ipuexe`, then run `ipu-run prog.ipuexe`";

/// A device a model runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// The host reference executor (the `nn` interpreter).
    Reference,
    /// The IPU simulator: runs executables built by `ipu-opt --emit=exe`.
    Sim,
}

impl Device {
    /// Every device, by name.
    pub const ALL: [(&'static str, Device); 2] =
        [("reference", Device::Reference), ("sim", Device::Sim)];

    /// The device called `name`.
    pub fn parse(name: &str) -> Result<Device, String> {
        Device::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, d)| d)
            .ok_or_else(|| {
                format!(
                    "unknown device '{name}' (known devices: {})",
                    Device::ALL.map(|(n, _)| n).join(", ")
                )
            })
    }

    /// The device's name.
    pub fn name(self) -> &'static str {
        match self {
            Device::Reference => "reference",
            Device::Sim => "sim",
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
            Device::Reference => {
                interpreter::run_function_with_stats(ctx, func, inputs).map_err(|e| e.to_string())
            }
            // `ipu-run` checks this before loading the model; kept for callers of the library.
            Device::Sim => Err(SIM_NEEDS_EXECUTABLE.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_devices_list_the_known_ones() {
        assert_eq!(Device::parse("reference"), Ok(Device::Reference));
        assert_eq!(Device::parse("sim"), Ok(Device::Sim));
        assert_eq!(
            Device::parse("gpu").unwrap_err(),
            "unknown device 'gpu' (known devices: reference, sim)"
        );
    }
}
