//! An upstream MLIR context: parse, verify and print, with upstream's
//! diagnostics turned into ipuc ones.

use std::cell::RefCell;
use std::rc::Rc;

use ipuc_ir::attributes::ResourceTable;
use ipuc_ir::{Diagnostic, Location};
use melior::dialect::{DialectHandle, DialectRegistry};
use melior::ir::block::BlockLike;
use melior::ir::operation::{OperationLike, OperationPrintingFlags};
use melior::ir::{Module, Operation};
use melior::StringRef;

use crate::elements::{self, Handover};

/// An upstream MLIR context knowing `func`, `arith`, `tensor` and `tosa`.
pub struct Upstream {
    ctx: melior::Context,
    diagnostics: Rc<RefCell<Vec<Diagnostic>>>,
}

/// A module parsed by [`Upstream::parse`].
pub struct UpstreamModule<'c> {
    upstream: &'c Upstream,
    module: Module<'c>,
}

impl Default for Upstream {
    fn default() -> Self {
        Self::new()
    }
}

impl Upstream {
    /// A context with the dialects TOSA models use. Threading is off: the
    /// caller's own parallelism decides, and output stays deterministic.
    pub fn new() -> Upstream {
        let registry = DialectRegistry::new();
        for handle in [
            DialectHandle::func(),
            DialectHandle::arith(),
            DialectHandle::tensor(),
        ] {
            handle.insert_dialect(&registry);
        }
        // SAFETY: the handle is a static registration hook of libMLIR and the
        // registry is alive.
        unsafe {
            mlir_sys::mlirDialectHandleInsertDialect(
                mlir_sys::mlirGetDialectHandle__tosa__(),
                registry.to_raw(),
            );
        }
        let ctx = melior::Context::new_with_registry(&registry, false);
        ctx.load_all_available_dialects();
        let diagnostics = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&diagnostics);
        ctx.attach_diagnostic_handler(move |d| {
            sink.borrow_mut().push(convert_diagnostic(&d));
            true
        });
        Upstream { ctx, diagnostics }
    }

    /// Whether ops of unknown dialects parse (as `mlir-opt
    /// --allow-unregistered-dialect`).
    pub fn set_allow_unregistered(&self, allow: bool) {
        self.ctx.set_allow_unregistered_dialects(allow);
    }

    fn take_diagnostics(&self, fallback: &str) -> Vec<Diagnostic> {
        let mut d = std::mem::take(&mut *self.diagnostics.borrow_mut());
        if d.is_empty() {
            d.push(Diagnostic::error(Location::unknown(), fallback));
        }
        d
    }

    /// Parses `text` (custom or generic syntax); `file` names it in
    /// locations. Errors are upstream's diagnostics.
    pub fn parse(&self, file: &str, text: &str) -> Result<UpstreamModule<'_>, Vec<Diagnostic>> {
        self.diagnostics.borrow_mut().clear();
        // SAFETY: the context is alive and the string refs outlive the call;
        // the result is null or an owned operation.
        let op = unsafe {
            let raw = mlir_sys::mlirOperationCreateParse(
                self.ctx.to_raw(),
                StringRef::new(text).to_raw(),
                StringRef::new(file).to_raw(),
            );
            Operation::from_option_raw(raw)
        };
        let op = op.ok_or_else(|| {
            self.take_diagnostics(&format!("{file}: upstream MLIR could not parse the input"))
        })?;
        // A lone top-level op (a `func.func` without a module around it)
        // comes back as itself; wrap it as mlir-opt does.
        let module = if op.name().as_string_ref().as_str() == Ok("builtin.module") {
            Module::from_operation(op).expect("checked: a builtin.module")
        } else {
            let module = Module::new(op.location());
            module.body().append_operation(op);
            module
        };
        Ok(UpstreamModule {
            upstream: self,
            module,
        })
    }
}

impl UpstreamModule<'_> {
    /// Runs upstream's verifier.
    pub fn verify(&self) -> Result<(), Vec<Diagnostic>> {
        self.upstream.diagnostics.borrow_mut().clear();
        if self.module.as_operation().verify() {
            Ok(())
        } else {
            Err(self
                .upstream
                .take_diagnostics("upstream MLIR's verifier rejected the module"))
        }
    }

    /// Hands the module's weights to `resources` as bytes and makes every
    /// large `dense<...>` a `dense_resource` reference to them (see
    /// [`crate::elements`]); call before [`Self::print_generic`].
    pub fn hand_over_elements(
        &mut self,
        resources: &ResourceTable,
    ) -> Result<Handover, Vec<Diagnostic>> {
        elements::hand_over(&mut self.module, resources).map_err(|d| vec![d])
    }

    /// The generic form with locations: what ipuc's parser reads. The local
    /// scope leaves out the `dialect_resources` section (and inlines the
    /// location aliases), so no weight is printed: they cross as bytes
    /// through [`Self::hand_over_elements`].
    pub fn print_generic(&self) -> String {
        self.print(
            OperationPrintingFlags::new()
                .print_generic_operation_form()
                .enable_debug_info(true, false)
                .use_local_scope(),
        )
    }

    /// Upstream's custom syntax, without locations.
    pub fn print_custom(&self) -> String {
        self.print(OperationPrintingFlags::new())
    }

    fn print(&self, flags: OperationPrintingFlags) -> String {
        self.module
            .as_operation()
            .to_string_with_flags(flags)
            .expect("upstream prints valid UTF-8")
    }
}

/// An upstream location as an ipuc one (file:line:col, names, call sites
/// and fused locations by their first part).
fn convert_location(loc: &melior::ir::Location) -> Location {
    if loc.is_file_line_col_range() {
        let file = loc.file_line_col_range_filename();
        return Location::file_line_col(
            file.as_string_ref().as_str().unwrap_or("?"),
            loc.file_line_col_range_start_line() as u32,
            loc.file_line_col_range_start_column() as u32,
        );
    }
    if loc.is_name() {
        let child = convert_location(&loc.name_child_location());
        let name = loc.name_value();
        return Location::name(
            name.as_string_ref().as_str().unwrap_or("?"),
            (!child.is_unknown()).then_some(child),
        );
    }
    if loc.is_call_site() {
        return convert_location(&loc.call_site_callee());
    }
    if loc.is_fused() && loc.fused_num_locations() > 0 {
        return convert_location(&loc.fused_location(0));
    }
    Location::unknown()
}

fn convert_diagnostic(d: &melior::diagnostic::Diagnostic) -> Diagnostic {
    use melior::diagnostic::DiagnosticSeverity;
    let loc = convert_location(&d.location());
    let message = format!("upstream MLIR: {d}");
    let mut out = match d.severity() {
        DiagnosticSeverity::Warning => Diagnostic::warning(loc, message),
        DiagnosticSeverity::Remark | DiagnosticSeverity::Note => Diagnostic::remark(loc, message),
        DiagnosticSeverity::Error => Diagnostic::error(loc, message),
    };
    for i in 0..d.note_count() {
        if let Ok(n) = d.note(i) {
            out = out.with_note(convert_location(&n.location()), n.to_string());
        }
    }
    out
}
