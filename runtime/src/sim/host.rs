//! Host streams as simulated steps of a run.
//!
//! An executable declares its host transfers ([`HostStream`]): host-to-device
//! streams run before the device program, device-to-host streams after it,
//! one at a time over the one modelled PCIe link, each taking
//! [`MachineModel::host_transfer_cycles`] of its tensor's bytes (the link's
//! bandwidth and per-transfer latency from the machine description). The
//! run's timeline is therefore: the input steps from cycle 0, the device
//! program, the output steps; [`Profile::run_cycles`] counts all of it and
//! [`Profile::host_cycles`] the steps alone, so device figures stay apart
//! from host time.
//!
//! Data moves through the steps: bytes staged with
//! [`Device::write_stream`] land in the tensor's tile pieces at their
//! input step, and every output step copies its tensor into a host buffer
//! that [`Device::read_stream`] returns. A step whose input was not staged
//! still takes its time (the tensor keeps what `write_tensor`, the test
//! helper, put there).

use ipuc_ipu_arch::{HostStream, MachineModel, StreamDirection};

use super::profile::HostStep;
use super::Simulator;
use crate::device::{Device, DeviceError};

/// Bytes of the tensor a stream moves.
fn stream_bytes(sim: &Simulator, s: &HostStream) -> u64 {
    sim.exe.as_ref().map_or(0, |exe| {
        exe.tensors
            .iter()
            .filter(|b| b.name == s.tensor)
            .map(|b| u64::from(b.size))
            .sum()
    })
}

/// One step of `s` starting at `start`.
fn step(m: &MachineModel, s: &HostStream, bytes: u64, start: u64) -> HostStep {
    HostStep {
        stream: s.name.clone(),
        direction: s.direction,
        bytes,
        start,
        cycles: m.host_transfer_cycles(bytes),
    }
}

impl Simulator {
    fn stream(&self, name: &str, direction: StreamDirection) -> Result<HostStream, DeviceError> {
        let exe = self.exe.as_ref().ok_or(DeviceError::NotLoaded)?;
        exe.streams
            .iter()
            .find(|s| s.name == name && s.direction == direction)
            .cloned()
            .ok_or_else(|| {
                let way = match direction {
                    StreamDirection::HostToDevice => "host-to-device",
                    StreamDirection::DeviceToHost => "device-to-host",
                };
                DeviceError::UnknownTensor(format!("{name} (no {way} stream of that name)"))
            })
    }

    /// [`Device::write_stream`].
    pub(super) fn stage_input(&mut self, name: &str, bytes: &[u8]) -> Result<(), DeviceError> {
        let s = self.stream(name, StreamDirection::HostToDevice)?;
        let expected = stream_bytes(self, &s);
        if bytes.len() as u64 != expected {
            return Err(DeviceError::SizeMismatch {
                name: name.into(),
                expected,
                got: bytes.len() as u64,
            });
        }
        self.staged.insert(name.into(), bytes.to_vec());
        Ok(())
    }

    /// [`Device::read_stream`].
    pub(super) fn delivered_output(&self, name: &str) -> Result<Vec<u8>, DeviceError> {
        self.stream(name, StreamDirection::DeviceToHost)?;
        self.delivered
            .get(name)
            .cloned()
            .ok_or(DeviceError::NotLoaded)
    }

    /// The steps of the streams of `direction`, in declaration order,
    /// one after another from cycle `from`.
    fn plan(&self, direction: StreamDirection, from: u64) -> Vec<(HostStream, HostStep)> {
        let streams = self.exe.as_ref().map_or(Vec::new(), |e| e.streams.clone());
        let mut at = from;
        streams
            .into_iter()
            .filter(|s| s.direction == direction)
            .map(|s| {
                let st = step(&self.machine, &s, stream_bytes(self, &s), at);
                at += st.cycles;
                (s, st)
            })
            .collect()
    }

    /// The input steps from cycle 0, moving staged bytes to the tiles.
    pub(super) fn run_input_streams(&mut self) -> Result<Vec<HostStep>, DeviceError> {
        let plan = self.plan(StreamDirection::HostToDevice, 0);
        for (s, _) in &plan {
            if let Some(bytes) = self.staged.remove(&s.name) {
                self.write_tensor(&s.tensor, &bytes)?;
            }
        }
        Ok(plan.into_iter().map(|p| p.1).collect())
    }

    /// The output steps from cycle `from`, copying each tensor to its host
    /// buffer.
    pub(super) fn run_output_streams(&mut self, from: u64) -> Result<Vec<HostStep>, DeviceError> {
        let plan = self.plan(StreamDirection::DeviceToHost, from);
        self.delivered.clear();
        for (s, _) in &plan {
            let bytes = self.read_tensor(&s.tensor)?;
            self.delivered.insert(s.name.clone(), bytes);
        }
        Ok(plan.into_iter().map(|p| p.1).collect())
    }
}
