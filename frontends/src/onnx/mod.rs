//! The ONNX frontend: reading `.onnx` models and `.pb` tensors into host data
//! structures the importer (ONNX → `nn` IR) and the test tools build on.
//!
//! ```no_run
//! use ipuc_frontends::onnx::{LoadOptions, Model, WeightsPolicy};
//! let options = LoadOptions { weights: WeightsPolicy::Random { seed: 0 } };
//! let model = Model::load("model.onnx".as_ref(), &options)?;
//! let order = model.graph.topological_order()?;
//! for &i in &order {
//!     let node = &model.graph.nodes[i];
//!     println!("{} {}", node.name, node.op_type);
//! }
//! # Ok::<(), ipuc_frontends::onnx::OnnxError>(())
//! ```

mod attribute;
mod data_type;
mod error;
mod external_data;
mod graph;
pub mod import;
mod model;
mod op_histogram;
pub mod proto;
mod tensor;
mod test_data;
mod topology;
mod weights;

pub use attribute::Attribute;
pub use data_type::{data_type_name, data_type_of, element_kind_of};
pub use error::{OnnxError, Result};
pub use external_data::{externalize_initializers, ExternalData};
pub use graph::{Dim, Graph, Initializer, Node, ValueInfo, ValueType, WeightSource};
pub use model::{LoadOptions, Model};
pub use op_histogram::OpCount;
pub use tensor::Tensor;
pub use test_data::{read_tensor_pb, read_test_data_set, write_tensor_pb, NamedTensor};
pub use weights::{WeightRole, WeightsPolicy};

pub(crate) use model::LoadContext;
