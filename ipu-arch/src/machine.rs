//! Machine-model constants (normative source: `shared/ipu-machine.md`).
//!
//! Every number here is the one in the table of `ipu-machine.md`; a change
//! needs a cited public source in the same commit. `ipu-arch/TIMING.md`
//! lists every timing rule the simulator applies with the field that holds
//! its number and its source (or the assumption and its reasoning), and
//! the costs not modelled yet.

use serde::{Deserialize, Serialize};

/// One IPU machine: the constants the simulator and the cost model use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineModel {
    /// Machine name (`c600`, `bow`).
    pub name: String,
    /// Tiles per chip.
    pub tiles: u32,
    /// Tiles per exchange row (row(t) = t / tiles_per_row).
    pub tiles_per_row: u32,
    /// Tile clock in Hz.
    pub clock_hz: f64,
    /// First SRAM address of a tile.
    pub sram_base: u32,
    /// One past the last SRAM address of a tile.
    pub sram_end: u32,
    /// Start of the interleaved region (region 1); region 0 is `sram_base..`.
    pub interleaved_base: u32,
    /// Size of one memory element (bank) of the non-interleaved region.
    pub element_bytes: u32,
    /// Worker contexts (barrel slots).
    pub worker_contexts: u32,
    /// Cycles between two issues of one barrel slot.
    pub slot_period: u32,
    /// Cycles from a supervisor instruction's issue until an `$m` register
    /// (or `$CCCSLOAD`) it writes can be read: the supervisor issues every
    /// cycle and its pipeline has no bypass, so a reader issued earlier
    /// stalls. Workers issue once per `slot_period` and never see it.
    pub supervisor_result_latency: u32,
    /// Cycles from a taken branch, call or return until the same context
    /// issues again (the pipeline refill).
    pub branch_refill_cycles: u32,
    /// Cycles from `run`/`runall` until a started worker can first issue;
    /// the worker holds its barrel slot from the `run` on.
    pub worker_start_latency: u32,
    /// Largest `rpt` count (the `$REPEAT_COUNT` field mask).
    pub rpt_count_max: u32,
    /// Exchange bytes per cycle per tile, sending and receiving.
    pub exchange_bytes_per_cycle: u32,
    /// Fixed part of the exchange latency between two tiles.
    pub exchange_latency_base: u32,
    /// Per-row part of the exchange latency.
    pub exchange_latency_per_row: u32,
    /// Cycles from the last tile's `sync` to release (internal zone).
    pub sync_latency: u32,
    /// Cycles of a `put` to an exchange pointer control register.
    pub exchange_csr_put_cycles: u32,
    /// AMP weight store (CCCS) entries of 64 bits.
    pub cccs_entries: u32,
    /// Instructions by which AMP results lag their inputs.
    pub amp_pipeline_lag: u32,
    /// Host link bandwidth, bytes per second each way.
    pub host_link_bytes_per_s: f64,
    /// Fixed cost per host transfer, seconds.
    pub host_transfer_overhead_s: f64,
    /// Whether the FP8 instructions (`f8v8hihov4amp`, FP8 conversions) exist.
    pub has_fp8: bool,
    /// Issue slots each transcendental instruction holds its worker for.
    pub transcendental_issues: TranscendentalIssues,
}

/// Issue slots (barrel rounds) a transcendental instruction holds its
/// worker for: the worker's next instruction issues that many rounds after
/// it. Poplibs' elementwise cycle table (`lib/popops/popopsCycleEstimators.hpp`,
/// `unaryOpPerfInfo`, averaged on Graphcore's simulator over random inputs:
/// "NOT single cycle and NOT even constant cycle number") costs the loops of
/// `lib/popops/codelets/inlineAssemblerUnaryOps.hpp`, which issue one such
/// instruction per bundle; subtracting the loops' other bundles gives these
/// numbers (`ipu-arch/TIMING.md` derives each). The hardware's cost depends
/// on the data; these are poplibs' averages, or the worst case popnn quotes
/// from the architecture manual where that is larger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TranscendentalIssues {
    /// `f16v2exp`, `f16v2exp2` (poplibs: EXPONENT half, 4 per 4 halves).
    pub f16v2_exp: u32,
    /// `f16v2ln`, `f16v2log2` (LOGARITHM half, 4 per 4 halves).
    pub f16v2_log: u32,
    /// `f16v2tanh` (TANH half, 4 per 4 halves).
    pub f16v2_tanh: u32,
    /// `f16v2sigm` (SIGMOID half, 6 per 4 halves; popnn's worst case from
    /// the architecture manual, 2 per half, is larger and is taken).
    pub f16v2_sigm: u32,
    /// `f32exp` (EXPONENT float, 6 per 2 floats).
    pub f32_exp: u32,
    /// `f32ln` (LOGARITHM float, 12 per 2 floats).
    pub f32_ln: u32,
    /// `f32oox` (INVERSE float, 6 per 2 floats).
    pub f32_oox: u32,
    /// `f32oorx` (RSQRT float, 8 per 2 floats).
    pub f32_oorx: u32,
    /// `f32sqrt` (SQRT float, 10 per 2 floats).
    pub f32_sqrt: u32,
    /// `f32tanh` (TANH float, 12 per 2 floats).
    pub f32_tanh: u32,
    /// `f32sigm` (SIGMOID float, 12 per 2 floats).
    pub f32_sigm: u32,
}

impl TranscendentalIssues {
    /// The numbers derived from poplibs' table.
    pub fn poplibs() -> Self {
        TranscendentalIssues {
            f16v2_exp: 2,
            f16v2_log: 2,
            f16v2_tanh: 2,
            f16v2_sigm: 4,
            f32_exp: 3,
            f32_ln: 6,
            f32_oox: 3,
            f32_oorx: 4,
            f32_sqrt: 5,
            f32_tanh: 6,
            f32_sigm: 6,
        }
    }
}

impl MachineModel {
    /// The default machine: one IPU21 as on the C600 card at 1.5 GHz.
    pub fn c600() -> Self {
        MachineModel {
            name: "c600".into(),
            tiles: 1472,
            tiles_per_row: 16,
            clock_hz: 1.5e9,
            sram_base: 0x4c000,
            sram_end: 0xe8000,
            interleaved_base: 0x80000,
            element_bytes: 16 * 1024,
            worker_contexts: 6,
            slot_period: 6,
            supervisor_result_latency: 6,
            branch_refill_cycles: 6,
            worker_start_latency: 6,
            rpt_count_max: 0xffff,
            exchange_bytes_per_cycle: 4,
            exchange_latency_base: 52,
            exchange_latency_per_row: 2,
            sync_latency: 600,
            exchange_csr_put_cycles: 13,
            cccs_entries: 64,
            amp_pipeline_lag: 4,
            host_link_bytes_per_s: 25e9,
            host_transfer_overhead_s: 10e-6,
            has_fp8: true,
            transcendental_issues: TranscendentalIssues::poplibs(),
        }
    }

    /// The same chip model at Bow's 1.85 GHz, without FP8.
    pub fn bow() -> Self {
        MachineModel {
            name: "bow".into(),
            clock_hz: 1.85e9,
            has_fp8: false,
            ..Self::c600()
        }
    }

    /// The names [`MachineModel::by_name`] knows.
    pub const NAMES: &'static [&'static str] = &["c600", "bow"];

    /// Looks a machine up by name (one of [`MachineModel::NAMES`]).
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "c600" => Some(Self::c600()),
            "bow" => Some(Self::bow()),
            _ => None,
        }
    }

    /// Tile SRAM bytes.
    pub fn sram_bytes(&self) -> u32 {
        self.sram_end - self.sram_base
    }

    /// Exchange row of a tile.
    pub fn row(&self, tile: u32) -> u32 {
        tile / self.tiles_per_row
    }

    /// Cycles from a word's send on tile `from` to its arrival at tile `to`.
    pub fn exchange_latency(&self, from: u32, to: u32) -> u64 {
        let rows = self.row(from).abs_diff(self.row(to));
        u64::from(self.exchange_latency_base)
            + u64::from(self.exchange_latency_per_row) * u64::from(rows)
    }

    /// Cycles a host transfer of `bytes` takes on the modelled PCIe link.
    pub fn host_transfer_cycles(&self, bytes: u64) -> u64 {
        // The fixed part is a whole number of cycles; round it so that float
        // noise does not add one.
        let fixed = (self.host_transfer_overhead_s * self.clock_hz).round() as u64;
        fixed + (bytes as f64 * self.clock_hz / self.host_link_bytes_per_s).ceil() as u64
    }

    /// Whether `addr` lies in the interleaved region (region 1).
    pub fn is_interleaved(&self, addr: u32) -> bool {
        addr >= self.interleaved_base && addr < self.sram_end
    }

    /// The bank an access to `addr` uses, for the same-instruction conflict
    /// rule: in region 0 the 16 KiB element; in region 1 the 32 KiB element
    /// pair and the parity of the 64-bit word (model assumption, see
    /// `ipu-machine.md`).
    pub fn bank_of(&self, addr: u32) -> u32 {
        if addr < self.interleaved_base {
            (addr - self.sram_base) / self.element_bytes
        } else {
            let off = addr - self.interleaved_base;
            let pair = off / (2 * self.element_bytes);
            0x1000 + pair * 2 + ((off >> 3) & 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_the_machine_table() {
        let m = MachineModel::c600();
        assert_eq!(m.sram_bytes(), 638_976);
        assert_eq!(
            (m.supervisor_result_latency, m.branch_refill_cycles),
            (6, 6)
        );
        assert_eq!((m.worker_start_latency, m.rpt_count_max), (6, 0xffff));
        assert_eq!(m.exchange_latency(0, 15), 52);
        assert_eq!(m.exchange_latency(0, 16 * 3), 58);
        assert_eq!(m.exchange_latency(16 * 91, 0), 52 + 182);
        // 10 us at 1.5 GHz plus 25 KB at 25 GB/s (1 us).
        assert_eq!(m.host_transfer_cycles(25_000), 16_500);
        let bow = MachineModel::by_name("bow").unwrap();
        assert!(!bow.has_fp8);
        // Codelet estimates count with c600's transcendental costs.
        assert_eq!(bow.transcendental_issues, m.transcendental_issues);
        assert_eq!(bow.clock_hz, 1.85e9);
        assert!(MachineModel::by_name("ipu1").is_none());
    }

    #[test]
    fn banks_follow_the_region_rules() {
        let m = MachineModel::c600();
        assert_eq!(m.bank_of(0x4c000), m.bank_of(0x4c000 + 16 * 1024 - 8));
        assert_ne!(m.bank_of(0x4c000), m.bank_of(0x4c000 + 16 * 1024));
        assert_ne!(m.bank_of(0x80000), m.bank_of(0x80008));
        assert_eq!(m.bank_of(0x80000), m.bank_of(0x80010));
        assert_ne!(m.bank_of(0x80000), m.bank_of(0x80000 + 32 * 1024));
    }
}
