//! The ONNX → `nn` importer: one `builtin.module` holding `func.func @main`
//! with static shapes, weights as `dense_resource` blobs, and the exporter's
//! shape arithmetic folded away.
//!
//! ```no_run
//! use ipuc_frontends::onnx::import::{import_file, ImportOptions};
//! use ipuc_frontends::onnx::{LoadOptions, WeightsPolicy};
//! use ipuc_ir::{print_op, Context, PrintOptions};
//!
//! let mut ctx = Context::new(ipuc_dialects::registry());
//! let load = LoadOptions { weights: WeightsPolicy::Random { seed: 0 } };
//! let opts = ImportOptions {
//!     input_shapes: vec![("pixel_values".into(), vec![1, 3, 384, 384])],
//!     batch: None,
//!     file_name: "model.onnx".into(),
//! };
//! let module = import_file(&mut ctx, "model.onnx".as_ref(), &load, &opts)?;
//! println!("{}", print_op(&ctx, module, &PrintOptions::default()));
//! # Ok::<(), ipuc_frontends::onnx::import::ImportError>(())
//! ```
//!
//! How it works: nodes are visited in topological order and each becomes
//! `nn` ops built by the dialect's typed builders (which infer the result
//! types). Every op is folded as soon as it is built, with the `nn` folders,
//! so shape computations on constants (`Shape`, `Gather`, `Concat`, ...)
//! become `nn.constant`s on the spot and the inputs that must be constant
//! (reshape targets, axes, pads, ...) are read from them. `Shape`,
//! `ConstantOfShape` and `Range` have no `nn` op: they are computed here.
//! Finally dead ops are removed. Initializers become constants only when
//! used: small ones (at most [`SMALL_CONSTANT_ELEMENTS`] elements) inline
//! as `dense<...>`, the rest as `dense_resource<name>` blobs in the
//! context's resource table.

mod attention;
pub mod binding;
mod body;
mod col2im;
mod constants;
mod control;
mod conv_transpose;
mod cumulative;
mod deform_conv;
mod determinant;
mod einsum;
mod elementwise;
mod error;
mod feature_norms;
mod flex_attention;
mod functions;
mod generators;
mod grid_sample;
mod index;
mod inputs;
mod linalg;
mod linear_attention;
mod normalization;
mod pool;
mod quantize;
mod rearrange;
mod recurrent;
mod resize;
mod roi_align;
mod rotary;
mod scatter;
mod selection;
mod shape;
mod signal;
mod storage_types;
mod tfidf;
mod window;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use ipuc_dialects::func;
use ipuc_dialects::nn::ConstantOp;
use ipuc_ir::dialect::FoldResult;
use ipuc_ir::rewrite::{
    apply_patterns_greedily, constant_value, fold_op, GreedyConfig, RewritePatternSet,
};
use ipuc_ir::{
    Attribute, BlockId, Context, Diagnostic, Location, OpId, OperationState, Type, Value,
};

pub use binding::{bind_inputs, BoundInputs};
pub use constants::SMALL_CONSTANT_ELEMENTS;
pub use error::ImportError;

use super::weights::{fill_synthesized, synthesize_all, SynthesisJob};
use super::{LoadOptions, Model, Node, WeightSource, WeightsPolicy};

/// The lowest and highest default-domain opset versions the importer knows.
pub const OPSET_RANGE: std::ops::RangeInclusive<i64> = 7..=28;

/// Options of [`import_model`].
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Static shapes for graph inputs, by name (`--input-shape
    /// pixel_values=1x3x384x384`). Symbolic dimensions not fixed here default
    /// to 1 when they are batch-like (the leading dimension, or named like
    /// `batch`); any other unresolved dimension is an error.
    pub input_shapes: Vec<(String, Vec<i64>)>,
    /// What the batch-like symbolic dimensions left unfixed by
    /// `input_shapes` take (`--batch N`; `None`: 1). Given above 1, some
    /// input must have one: a model whose batch is fixed is an error.
    pub batch: Option<i64>,
    /// The model's file name, for the module's location.
    pub file_name: String,
}

/// Imports `model` into `ctx` as a `builtin.module` holding `func.func @main`
/// and returns the module. `ctx` must know the `func` and `nn` dialects
/// (`ipuc_dialects::registry()`).
///
/// Large initializers are copied once into the context's resource table; use
/// [`import_file`] to import without holding the weights twice.
pub fn import_model(
    ctx: &mut Context,
    model: &Model,
    opts: &ImportOptions,
) -> Result<OpId, ImportError> {
    let mut weights =
        |index: usize| -> Arc<[u8]> { Arc::from(&model.graph.initializers[index].tensor.data[..]) };
    import_with_weights(ctx, model, opts, &mut weights)
}

/// Loads `path` with `load` and imports it (see [`import_model`]).
///
/// Weights are held once: each large initializer is moved into the resource
/// table and its loader buffer released before the next one. Synthesised
/// random weights are generated straight into the resource buffers (the same
/// values [`Model::load`] would give), so peak memory stays close to the
/// weight bytes.
pub fn import_file(
    ctx: &mut Context,
    path: &Path,
    load: &LoadOptions,
    opts: &ImportOptions,
) -> Result<OpId, ImportError> {
    import_file_with_data(ctx, path, load, opts, &[]).map(|(module, _)| module)
}

/// Loads `path` with `load`, binds its runtime inputs to `data` (one tensor
/// per runtime input; see [`bind_inputs`]: shapes from the data, inputs used
/// as shapes or axes become constants) and imports it (see [`import_file`]).
/// Empty `data` binds nothing. Shapes bound from the data take precedence
/// over `opts.input_shapes`.
pub fn import_file_with_data(
    ctx: &mut Context,
    path: &Path,
    load: &LoadOptions,
    opts: &ImportOptions,
    data: &[super::NamedTensor],
) -> Result<(OpId, BoundInputs), ImportError> {
    // Timed (`IPUC_LOG=ipu-import=info`), whichever tool imports.
    let _time = tracing::info_span!(target: "ipu-import", "import the ONNX model").entered();
    // Missing weights load as untouched zero pages; random values are
    // written once, into the final buffers.
    let load_zeros = LoadOptions {
        weights: match load.weights {
            WeightsPolicy::Random { .. } => WeightsPolicy::Zeros,
            other => other,
        },
    };
    let mut model = Model::load(path, &load_zeros)?;
    let mut opts = opts.clone();
    let bound = if data.is_empty() {
        BoundInputs::default()
    } else {
        let bound = bind_inputs(&mut model, data)?;
        opts.input_shapes.extend(bound.input_shapes.iter().cloned());
        bound
    };
    let mut moved: Vec<Option<Arc<[u8]>>> = Vec::with_capacity(model.graph.initializers.len());
    // Large synthesised weights (by initializer), made together below.
    let mut to_make: Vec<(usize, usize)> = Vec::new();
    for (index, init) in model.graph.initializers.iter_mut().enumerate() {
        let synthesized = matches!(init.source, WeightSource::Synthesized(_));
        let (kind, role, policy) = (init.tensor.kind, init.role, load.weights);
        if init.tensor.element_count() > SMALL_CONSTANT_ELEMENTS {
            let bytes = std::mem::take(&mut init.tensor.data);
            if synthesized {
                // The loader's zeros are not copied (and their memory is
                // free for the new buffers).
                to_make.push((index, bytes.len()));
                moved.push(None);
                continue;
            }
            moved.push(Some(Arc::from(&bytes[..])));
        } else {
            if synthesized {
                let mut data = init.tensor.data.to_vec();
                fill_synthesized(&init.name, kind, role, policy, &mut data);
                init.tensor.data = data.into();
            }
            moved.push(None);
        }
    }
    let jobs: Vec<SynthesisJob<'_>> = to_make
        .iter()
        .map(|&(i, len)| {
            let init = &model.graph.initializers[i];
            SynthesisJob {
                name: &init.name,
                kind: init.tensor.kind,
                role: init.role,
                len,
            }
        })
        .collect();
    let made = synthesize_all(&jobs, load.weights);
    drop(jobs);
    for (&(i, _), bytes) in to_make.iter().zip(made) {
        moved[i] = Some(bytes);
    }
    if opts.file_name.is_empty() {
        opts.file_name = path.display().to_string();
    }
    let mut weights = |index: usize| -> Arc<[u8]> {
        match moved[index].take() {
            Some(bytes) => bytes,
            None => Arc::from(&model.graph.initializers[index].tensor.data[..]),
        }
    };
    let module = import_with_weights(ctx, &model, &opts, &mut weights)?;
    Ok((module, bound))
}

/// Whether the importer handles `op_type` of `domain`.
pub fn is_supported(domain: &str, op_type: &str) -> bool {
    if domain == flex_attention::DOMAIN {
        return flex_attention::OPS.contains(&op_type);
    }
    matches!(domain, "" | "ai.onnx")
        && [
            elementwise::OPS,
            linalg::OPS,
            shape::OPS,
            normalization::OPS,
            constants::OPS,
            functions::OPS,
            attention::OPS,
            index::OPS,
            rearrange::OPS,
            generators::OPS,
            feature_norms::OPS,
            cumulative::OPS,
            resize::OPS,
            quantize::OPS,
            conv_transpose::OPS,
            rotary::OPS,
            einsum::OPS,
            signal::OPS,
            recurrent::OPS,
            selection::OPS,
            scatter::OPS,
            grid_sample::OPS,
            control::OPS,
            pool::OPS,
            linear_attention::OPS,
            determinant::OPS,
            col2im::OPS,
            tfidf::OPS,
            roi_align::OPS,
            deform_conv::OPS,
        ]
        .iter()
        .any(|ops| ops.contains(&op_type))
}

/// The shared import: `weights(i)` gives the bytes of large initializer `i`
/// (called at most once per initializer).
fn import_with_weights(
    ctx: &mut Context,
    model: &Model,
    opts: &ImportOptions,
    weights: &mut dyn FnMut(usize) -> Arc<[u8]>,
) -> Result<OpId, ImportError> {
    for dialect in ["func", "nn"] {
        if ctx.registry().dialect(dialect).is_none() {
            return Err(ImportError::Model(format!(
                "the context does not know the `{dialect}` dialect; create it with \
                 `Context::new(ipuc_dialects::registry())`"
            )));
        }
    }
    let opset = model.opset_version("").ok_or_else(|| {
        ImportError::Model("the model imports no default-domain (ai.onnx) opset".into())
    })?;
    if !OPSET_RANGE.contains(&opset) {
        return Err(ImportError::Model(format!(
            "default-domain opset {opset} is not supported (supported: {} to {}); \
             convert the model with onnx.version_converter",
            OPSET_RANGE.start(),
            OPSET_RANGE.end()
        )));
    }
    let graph = &model.graph;
    graph.check_supported(is_supported)?;
    let order = graph.topological_order()?;
    let arg_types = inputs::resolve_input_types(graph, &opts.input_shapes, opts.batch)?;

    let module_loc = if opts.file_name.is_empty() {
        Location::unknown()
    } else {
        Location::name(&opts.file_name, None)
    };
    let arg_tys: Vec<Type> = arg_types.iter().map(|(_, t)| t.clone()).collect();
    let main = func::build_func(ctx, "main", &arg_tys, &[], module_loc.clone());
    let block = func::entry_block(ctx, main).expect("build_func creates an entry block");

    let mut importer = Importer {
        ctx,
        opset,
        block,
        values: HashMap::new(),
        initializers: graph
            .initializers
            .iter()
            .enumerate()
            .map(|(i, init)| (init.name.as_str(), i))
            .collect(),
        model,
        weights,
        used: graph
            .nodes
            .iter()
            .flat_map(|n| n.inputs.iter())
            .chain(graph.outputs.iter().map(|o| &o.name))
            .map(String::as_str)
            .collect(),
    };
    for (i, (name, _)) in arg_types.iter().enumerate() {
        let arg = importer.ctx.block_args(block)[i];
        importer.values.insert(name.clone(), arg);
    }
    for &i in &order {
        let node = &graph.nodes[i];
        importer.import_node(node)?;
    }
    let mut results = Vec::with_capacity(graph.outputs.len());
    for output in &graph.outputs {
        let v = importer.value(&output.name).map_err(|detail| {
            ImportError::Model(format!("graph output `{}`: {detail}", output.name))
        })?;
        results.push(v);
    }
    let ctx = importer.ctx;
    let result_types: Vec<Type> = results.iter().map(|&v| ctx.value_type(v).clone()).collect();
    let ret = OperationState::new(ctx.op_name(func::RETURN), module_loc.clone()).operands(&results);
    let ret = ctx.create_op(ret);
    ctx.append_op(block, ret);
    ctx.set_attr(
        main,
        "function_type",
        Attribute::type_attr(Type::function(arg_tys, result_types)),
    );

    let region = ctx.create_region();
    let body = ctx.create_block(&[]);
    ctx.append_block(region, body);
    let module = ctx.create_op(
        OperationState::new(ctx.op_name(ipuc_ir::builtin::MODULE), module_loc).region(region),
    );
    ctx.append_op(body, main);

    // Remove what folding left unused (constants, dead shape chains).
    let patterns = RewritePatternSet::new().freeze();
    apply_patterns_greedily(ctx, module, &patterns, &GreedyConfig::default());
    ipuc_ir::verify(ctx, module).map_err(|d| {
        ImportError::Model(format!(
            "internal error: the imported module does not verify: {}",
            d.message
        ))
    })?;
    Ok(module)
}

/// Import state: where ops go and what each ONNX value became.
pub(crate) struct Importer<'a> {
    pub(crate) ctx: &'a mut Context,
    /// The default-domain opset version.
    pub(crate) opset: i64,
    block: BlockId,
    /// ONNX value name → IR value.
    values: HashMap<String, Value>,
    /// Initializer name → index, for lazy materialisation.
    initializers: HashMap<&'a str, usize>,
    model: &'a Model,
    weights: &'a mut dyn FnMut(usize) -> Arc<[u8]>,
    /// Values read by some node or graph output.
    used: HashSet<&'a str>,
}

/// The node-level result type of the op-family importers.
pub(crate) type NodeResult = Result<Vec<Value>, ImportError>;

impl<'a> Importer<'a> {
    fn import_node(&mut self, node: &Node) -> Result<(), ImportError> {
        self.check_storage_only_inputs(node)?;
        let op = node.op_type.as_str();
        let outputs = if node.domain == flex_attention::DOMAIN {
            flex_attention::import(self, node)?
        } else if elementwise::OPS.contains(&op) {
            elementwise::import(self, node)?
        } else if linalg::OPS.contains(&op) {
            linalg::import(self, node)?
        } else if shape::OPS.contains(&op) {
            shape::import(self, node)?
        } else if normalization::OPS.contains(&op) {
            normalization::import(self, node)?
        } else if constants::OPS.contains(&op) {
            constants::import(self, node)?
        } else if functions::OPS.contains(&op) {
            functions::import(self, node)?
        } else if attention::OPS.contains(&op) {
            attention::import(self, node)?
        } else if index::OPS.contains(&op) {
            index::import(self, node)?
        } else if rearrange::OPS.contains(&op) {
            rearrange::import(self, node)?
        } else if generators::OPS.contains(&op) {
            generators::import(self, node)?
        } else if feature_norms::OPS.contains(&op) {
            feature_norms::import(self, node)?
        } else if cumulative::OPS.contains(&op) {
            cumulative::import(self, node)?
        } else if resize::OPS.contains(&op) {
            resize::import(self, node)?
        } else if quantize::OPS.contains(&op) {
            quantize::import(self, node)?
        } else if conv_transpose::OPS.contains(&op) {
            conv_transpose::import(self, node)?
        } else if rotary::OPS.contains(&op) {
            rotary::import(self, node)?
        } else if einsum::OPS.contains(&op) {
            einsum::import(self, node)?
        } else if signal::OPS.contains(&op) {
            signal::import(self, node)?
        } else if recurrent::OPS.contains(&op) {
            recurrent::import(self, node)?
        } else if selection::OPS.contains(&op) {
            selection::import(self, node)?
        } else if scatter::OPS.contains(&op) {
            scatter::import(self, node)?
        } else if grid_sample::OPS.contains(&op) {
            grid_sample::import(self, node)?
        } else if control::OPS.contains(&op) {
            control::import(self, node)?
        } else if pool::OPS.contains(&op) {
            pool::import(self, node)?
        } else if linear_attention::OPS.contains(&op) {
            linear_attention::import(self, node)?
        } else if determinant::OPS.contains(&op) {
            determinant::import(self, node)?
        } else if col2im::OPS.contains(&op) {
            col2im::import(self, node)?
        } else if tfidf::OPS.contains(&op) {
            tfidf::import(self, node)?
        } else if roi_align::OPS.contains(&op) {
            roi_align::import(self, node)?
        } else if deform_conv::OPS.contains(&op) {
            deform_conv::import(self, node)?
        } else {
            unreachable!("check_supported rejected `{op}` before import")
        };
        for (i, name) in node.outputs.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            match outputs.get(i) {
                Some(&v) => {
                    self.values.insert(name.clone(), v);
                }
                None if self.used.contains(name.as_str()) => {
                    return Err(error(
                        node,
                        format!("output #{i} (`{name}`) is used, but ipuc does not compute it"),
                    ))
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Refuses a node that computes on a storage-only element type (see
    /// [`storage_types`]). Inputs not defined yet (subgraph captures) are checked
    /// where they are read.
    fn check_storage_only_inputs(&self, node: &Node) -> Result<(), ImportError> {
        for (i, name) in node.inputs.iter().enumerate() {
            let kind = if let Some(&v) = self.values.get(name.as_str()) {
                storage_types::storage_only_kind(self.ctx.value_type(v))
            } else if let Some(&index) = self.initializers.get(name.as_str()) {
                Some(self.model.graph.initializers[index].tensor.kind)
                    .filter(|k| k.is_storage_only())
            } else {
                None
            };
            if let Some(kind) = kind {
                storage_types::check_input(node, i, kind)?;
            }
        }
        Ok(())
    }

    /// The location of ops built for `node`: `loc("node name")`.
    pub(crate) fn loc(node: &Node) -> Location {
        Location::name(&node.name, None)
    }

    /// The IR value of ONNX value `name` (materialising initializers on first use).
    fn value(&mut self, name: &str) -> Result<Value, String> {
        if let Some(&v) = self.values.get(name) {
            return Ok(v);
        }
        let Some(&index) = self.initializers.get(name) else {
            return Err(format!("value `{name}` is not defined"));
        };
        let init = &self.model.graph.initializers[index];
        let loc = Location::name(name, None);
        let attr = if init.tensor.element_count() > SMALL_CONSTANT_ELEMENTS {
            let bytes = (self.weights)(index);
            constants::resource_attribute(
                self.ctx,
                name,
                init.tensor.kind,
                &init.tensor.dims,
                bytes,
            )
        } else {
            constants::tensor_attribute(&init.tensor)
        }
        .map_err(|m| format!("initializer `{name}`: {m}"))?;
        let v = self.constant(attr, loc).map_err(|d| d.message)?;
        self.values.insert(name.to_string(), v);
        Ok(v)
    }

    /// Defines the initializers of `graph` (a subgraph of `node`) as
    /// constants, visible by name to the nodes imported after.
    pub(crate) fn define_initializers(
        &mut self,
        node: &Node,
        graph: &super::Graph,
    ) -> Result<(), ImportError> {
        for init in &graph.initializers {
            let attr = constants::tensor_attribute(&init.tensor)
                .map_err(|m| error(node, format!("initializer `{}`: {m}", init.name)))?;
            let v = self
                .constant(attr, Location::name(&init.name, None))
                .map_err(|d| error(node, d.message))?;
            self.values.insert(init.name.clone(), v);
        }
        Ok(())
    }

    /// Required input `i` of `node`.
    pub(crate) fn input(&mut self, node: &Node, i: usize) -> Result<Value, ImportError> {
        let name = node
            .input(i)
            .ok_or_else(|| error(node, format!("input #{i} is required but missing")))?;
        self.value(name).map_err(|m| error(node, m))
    }

    /// Optional input `i` of `node` (`None` when absent or `""`).
    pub(crate) fn optional_input(
        &mut self,
        node: &Node,
        i: usize,
    ) -> Result<Option<Value>, ImportError> {
        match node.input(i) {
            None => Ok(None),
            Some(name) => self.value(name).map(Some).map_err(|m| error(node, m)),
        }
    }

    /// The type of a value.
    pub(crate) fn ty(&self, v: Value) -> &Type {
        self.ctx.value_type(v)
    }

    /// The static shape of a value.
    pub(crate) fn shape(&self, v: Value) -> Vec<i64> {
        self.ctx.value_type(v).shape().unwrap_or(&[]).to_vec()
    }

    /// The constant value of `v`, if its defining op is a constant.
    pub(crate) fn constant_of(&self, v: Value) -> Option<Attribute> {
        constant_value(self.ctx, v)
    }

    /// The one element of `v`, a constant at import, or an error naming it
    /// `what` (`` `start` (input #0) ``).
    pub(crate) fn constant_scalar(
        &self,
        node: &Node,
        v: Value,
        what: impl std::fmt::Display,
    ) -> Result<ipuc_ir::attributes::DenseElements, ImportError> {
        self.constant_of(v)
            .as_ref()
            .and_then(ipuc_dialects::nn::elements::dense_data)
            .filter(|d| d.len() == 1)
            .ok_or_else(|| error(node, format!("{what} must be a constant scalar at import")))
    }

    /// Optional input `i` of `node` read as constant integers; an error naming
    /// `what` if it is present but not a constant.
    pub(crate) fn optional_const_ints(
        &mut self,
        node: &Node,
        i: usize,
        what: &str,
    ) -> Result<Option<Vec<i64>>, ImportError> {
        let Some(v) = self.optional_input(node, i)? else {
            return Ok(None);
        };
        let ints = self
            .constant_of(v)
            .as_ref()
            .and_then(ipuc_dialects::nn::elements::dense_data)
            .and_then(|d| ipuc_dialects::nn::elements::ints(&d));
        match ints {
            Some(values) => Ok(Some(values.into_iter().map(|x| x as i64).collect())),
            None => Err(error(
                node,
                format!(
                    "input #{i} (`{}`, the {what}) must be a constant integer tensor at import, \
                     but it is computed at run time; ipuc needs static shapes: fix dynamic input \
                     dimensions with --input-shape, or simplify the model (e.g. onnxsim)",
                    node.inputs[i]
                ),
            )),
        }
    }

    /// Required input `i` of `node` read as constant integers.
    pub(crate) fn const_ints(
        &mut self,
        node: &Node,
        i: usize,
        what: &str,
    ) -> Result<Vec<i64>, ImportError> {
        self.optional_const_ints(node, i, what)?.ok_or_else(|| {
            error(
                node,
                format!("input #{i} (the {what}) is required but missing"),
            )
        })
    }

    /// Creates `nn.constant` holding `attr`; values of more than
    /// [`SMALL_CONSTANT_ELEMENTS`] distinct elements move to a resource blob.
    pub(crate) fn constant(&mut self, attr: Attribute, loc: Location) -> Result<Value, Diagnostic> {
        let attr = constants::large_dense_to_resource(self.ctx, attr, &loc);
        let state = ConstantOp::build(self.ctx, attr, loc)?;
        let op = self.ctx.create_op(state);
        self.ctx.append_op(self.block, op);
        Ok(self.ctx.result(op, 0))
    }

    /// Creates the op `state` (the result of a typed builder) for `node`,
    /// folds it when its folder can, and returns its results.
    pub(crate) fn emit(
        &mut self,
        node: &Node,
        state: Result<OperationState, Diagnostic>,
    ) -> NodeResult {
        let state = state.map_err(|d| error(node, d.message))?;
        let op = self.ctx.create_op(state);
        self.ctx.append_op(self.block, op);
        Ok(self.fold(op))
    }

    /// Like [`Importer::emit`] for single-result ops.
    pub(crate) fn emit1(
        &mut self,
        node: &Node,
        state: Result<OperationState, Diagnostic>,
    ) -> Result<Value, ImportError> {
        Ok(self.emit(node, state)?[0])
    }

    /// Folds `op` with its folder; on success the op is replaced by the folded
    /// values (new constants or existing values) and erased.
    fn fold(&mut self, op: OpId) -> Vec<Value> {
        let results = self.ctx.results(op).to_vec();
        let Some(folded) = fold_op(self.ctx, op) else {
            return results;
        };
        let loc = self.ctx.loc(op).clone();
        let mut values = Vec::with_capacity(results.len());
        for (r, f) in results.iter().zip(folded) {
            match f {
                FoldResult::Value(v) => values.push(v),
                FoldResult::Constant(attr) => {
                    if attr.ty() != Some(self.ctx.value_type(*r)) {
                        return results;
                    }
                    match self.constant(attr, loc.clone()) {
                        Ok(v) => values.push(v),
                        Err(_) => return results,
                    }
                }
            }
        }
        self.ctx.replace_op_uses(op, &values);
        self.ctx.erase_op(op);
        values
    }
}

/// An error about `node`.
pub(crate) fn error(node: &Node, detail: impl std::fmt::Display) -> ImportError {
    ImportError::Node {
        node: node.name.clone(),
        op_type: node.op_type.clone(),
        detail: detail.to_string(),
    }
}
