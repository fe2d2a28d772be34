//! The `Device` trait: what the runtime needs from an IPU, simulated or real.

use ipuc_ipu_arch::Executable;

use crate::sim::{Fault, Profile};

/// Why a device operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The executable cannot be loaded.
    #[error("cannot load executable: {0}")]
    Load(String),
    /// No executable is loaded.
    #[error("no executable is loaded")]
    NotLoaded,
    /// No binding with this name.
    #[error("unknown tensor `{0}`")]
    UnknownTensor(String),
    /// Host data of the wrong size.
    #[error("tensor `{name}` is {expected} bytes, got {got}")]
    SizeMismatch {
        /// Tensor.
        name: String,
        /// Bytes the bindings cover.
        expected: u64,
        /// Bytes given.
        got: u64,
    },
    /// The program faulted.
    #[error("{0}")]
    Fault(Box<Fault>),
}

/// A device that runs ipuc executables.
pub trait Device {
    /// Loads an executable (tile images into memory).
    fn load(&mut self, exe: &Executable) -> Result<(), DeviceError>;
    /// Stages the host bytes of host-to-device stream `name` (its whole
    /// tensor, row-major): they reach the tiles at the stream's step of the
    /// next run, which the run's cycles count.
    fn write_stream(&mut self, name: &str, bytes: &[u8]) -> Result<(), DeviceError>;
    /// What device-to-host stream `name` delivered to the host in the last run.
    fn read_stream(&self, name: &str) -> Result<Vec<u8>, DeviceError>;
    /// Test helper: writes a whole tensor (row-major bytes) to every tile
    /// piece bound to `name` at once, outside the run's timeline.
    fn write_tensor(&mut self, name: &str, bytes: &[u8]) -> Result<(), DeviceError>;
    /// Runs the loaded program to completion.
    fn run(&mut self) -> Result<(), DeviceError>;
    /// Test helper: reads a whole tensor back from its tile pieces, outside
    /// the run's timeline.
    fn read_tensor(&mut self, name: &str) -> Result<Vec<u8>, DeviceError>;
    /// The profile of the last run.
    fn profile(&self) -> Option<&Profile>;
}
