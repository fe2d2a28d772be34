//! ipuc runtime: Device trait, IPU simulator, host reference executor.

pub mod device;
pub mod reference;
pub mod sim;
