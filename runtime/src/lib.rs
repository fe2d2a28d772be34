//! ipuc runtime: Device trait, IPU simulator, host reference executor.
pub mod reference;
