//! Custom assembly formats of the `ipu` ops: their MLIR custom syntax in
//! `.mlir` text (see the module docs of [`super`] for an example). The IPU
//! assembly text the ops stand for is printed elsewhere (backend-ipu's
//! `emit::asm_view`, through `ipuc_ipu_arch::printer`). Every printer falls back to the generic form
//! when the op's attributes are not in the shape its format needs, so any
//! op prints in a form that reads back.

use ipuc_ir::asm::{CustomParser, OpPrinter};
use ipuc_ir::attributes::{Attribute, Dictionary};
use ipuc_ir::printer::{write_escaped_string, write_symbol_name};
use ipuc_ir::{Diagnostic, OpId, OperationState};

use super::operand::{format_imm, is_register_name, Operand, Register};
use super::{TensorDirection, TensorPiece};

fn set_prop(state: &mut OperationState, name: &str, value: Attribute) {
    state
        .properties
        .get_or_insert_with(Dictionary::new)
        .set(name, value);
}

fn prop_str(p: &OpPrinter<'_, '_>, op: OpId, name: &str) -> Option<String> {
    p.ctx()
        .attr(op, name)
        .and_then(Attribute::as_str)
        .map(str::to_string)
}

fn discardable(p: &OpPrinter<'_, '_>, op: OpId) -> Dictionary {
    p.ctx().attributes(op).clone()
}

fn print_region_of(p: &mut OpPrinter<'_, '_>, op: OpId) {
    let attrs = discardable(p, op);
    p.attr_dict_with_keyword(&attrs, &[]);
    p.write_str(" ");
    let r = p.ctx().regions(op)[0];
    p.region(r, false);
}

fn parse_attrs_and_region(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
    isolated: bool,
) -> Result<(), Diagnostic> {
    p.parse_optional_attr_dict_with_keyword(&mut state.attributes)?;
    let r = p.parse_region(&[], isolated)?;
    state.regions.push(r);
    Ok(())
}

fn parse_int(p: &mut CustomParser<'_, '_>, what: &str) -> Result<i64, Diagnostic> {
    let loc_err = p.error(format!("expected {what}"));
    let a = p.parse_attribute().map_err(|_| loc_err.clone())?;
    a.as_int()
        .and_then(|v| i64::try_from(v).ok())
        .ok_or(loc_err)
}

fn parse_string(p: &mut CustomParser<'_, '_>, what: &str) -> Result<String, Diagnostic> {
    let err = p.error(format!("expected {what}"));
    let a = p.parse_attribute().map_err(|_| err.clone())?;
    a.as_str().map(str::to_string).ok_or(err)
}

// ---------------------------------------------------------------- executable

pub(super) fn print_executable(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let Some(machine) = prop_str(p, op, "machine") else {
        p.generic(op);
        return Ok(());
    };
    p.write_str(" machine = ");
    let mut s = String::new();
    write_escaped_string(&mut s, &machine);
    p.write_str(&s);
    print_region_of(p, op);
    Ok(())
}

pub(super) fn parse_executable(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    p.expect_keyword("machine")?;
    p.expect_punct("=")?;
    let m = parse_string(p, "a machine name string (\"c600\" or \"bow\")")?;
    set_prop(state, "machine", Attribute::string(&m));
    parse_attrs_and_region(p, state, true)
}

// ---------------------------------------------------------------- tensor

pub(super) fn print_tensor(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let (Some(name), Some(dir), Some(ty), Some(pieces)) = (
        ctx.attr(op, "sym_name").and_then(Attribute::as_str),
        ctx.attr(op, "direction")
            .and_then(Attribute::as_str)
            .and_then(TensorDirection::parse),
        ctx.attr(op, "tensor_type").and_then(Attribute::as_type),
        ctx.attr(op, "pieces").and_then(Attribute::as_array),
    ) else {
        p.generic(op);
        return Ok(());
    };
    let pieces: Option<Vec<TensorPiece>> = pieces.iter().map(TensorPiece::from_attr).collect();
    let Some(pieces) = pieces else {
        p.generic(op);
        return Ok(());
    };
    let (name, ty) = (name.to_string(), ty.clone());
    let scale = ctx.attr(op, "fp8_scale").and_then(Attribute::as_int);
    let value = ctx.attr(op, "value").cloned();
    p.write_str(" ");
    p.write_str(dir.as_str());
    p.write_str(" ");
    p.symbol_name(&name);
    p.write_str(" : ");
    p.ty(&ty);
    if let Some(s) = scale {
        p.write_str(&format!(" fp8_scale {s}"));
    }
    if let Some(v) = value {
        p.write_str(" = ");
        p.attr(&v);
    }
    p.write_str(" pieces [");
    for (i, pc) in pieces.iter().enumerate() {
        if i > 0 {
            p.write_str(", ");
        }
        p.write_str(&format!(
            "({}, {}, {}, {})",
            pc.tile,
            format_imm(pc.address),
            pc.first,
            pc.count
        ));
    }
    p.write_str("]");
    let attrs = discardable(p, op);
    p.attr_dict(&attrs, &[]);
    Ok(())
}

pub(super) fn parse_tensor(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    let dir_err = p.error("expected the tensor direction: input, output, internal or constant");
    let dir = p.parse_keyword().map_err(|_| dir_err.clone())?;
    if TensorDirection::parse(&dir).is_none() {
        return Err(dir_err);
    }
    set_prop(state, "direction", Attribute::string(&dir));
    let name = p.parse_symbol_name()?;
    set_prop(state, "sym_name", Attribute::string(&name));
    let ty = p.parse_colon_type()?;
    set_prop(state, "tensor_type", Attribute::type_attr(ty));
    if p.parse_optional_keyword("fp8_scale") {
        let s = parse_int(p, "an FP8 scale exponent")?;
        set_prop(state, "fp8_scale", Attribute::i64(s));
    }
    if p.parse_optional_punct("=") {
        let v = p.parse_attribute()?;
        set_prop(state, "value", v);
    }
    p.expect_keyword("pieces")?;
    let pieces = p.parse_square(|q| {
        let mut out = Vec::new();
        if q.is_at_end() {
            return Ok(out);
        }
        loop {
            let piece = q.parse_parens(|r| {
                let tile = parse_int(r, "a tile number")?;
                r.expect_punct(",")?;
                let address = parse_int(r, "an address")?;
                r.expect_punct(",")?;
                let first = parse_int(r, "the first element")?;
                r.expect_punct(",")?;
                let count = parse_int(r, "an element count")?;
                Ok(TensorPiece {
                    tile,
                    address,
                    first,
                    count,
                })
            })?;
            out.push(piece.to_attr());
            if !q.parse_optional_punct(",") {
                return Ok(out);
            }
        }
    })?;
    set_prop(state, "pieces", Attribute::array(pieces));
    p.parse_optional_attr_dict(&mut state.attributes)
}

// ---------------------------------------------------------------- tile

pub(super) fn print_tile(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let Some(tile) = p.ctx().attr(op, "tile").and_then(Attribute::as_int) else {
        p.generic(op);
        return Ok(());
    };
    p.write_str(&format!(" {tile}"));
    if let Some(entry) = p
        .ctx()
        .attr(op, "entry")
        .and_then(Attribute::as_symbol_root)
        .map(str::to_string)
    {
        p.write_str(" entry ");
        p.symbol_name(&entry);
    }
    print_region_of(p, op);
    Ok(())
}

pub(super) fn parse_tile(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    let t = parse_int(p, "a tile number")?;
    set_prop(state, "tile", Attribute::i64(t));
    if p.parse_optional_keyword("entry") {
        let e = p.parse_symbol_name()?;
        set_prop(state, "entry", Attribute::symbol_ref(&e));
    }
    parse_attrs_and_region(p, state, true)
}

// ---------------------------------------------------------------- section

pub(super) fn print_section(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let (Some(name), Some(kind)) = (prop_str(p, op, "name"), prop_str(p, op, "kind")) else {
        p.generic(op);
        return Ok(());
    };
    let mut s = String::from(" ");
    write_escaped_string(&mut s, &name);
    if let Some(flags) = prop_str(p, op, "flags") {
        s.push_str(", ");
        write_escaped_string(&mut s, &flags);
    }
    s.push(' ');
    s.push_str(&kind);
    p.write_str(&s);
    print_region_of(p, op);
    Ok(())
}

pub(super) fn parse_section(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    let name = parse_string(p, "a section name string")?;
    set_prop(state, "name", Attribute::string(&name));
    if p.parse_optional_punct(",") {
        let flags = parse_string(p, "a section flags string")?;
        set_prop(state, "flags", Attribute::string(&flags));
    }
    let kind_err = p.error("expected the section kind: supervisor or worker");
    let kind = p.parse_keyword().map_err(|_| kind_err.clone())?;
    if kind != "supervisor" && kind != "worker" {
        return Err(kind_err);
    }
    set_prop(state, "kind", Attribute::string(&kind));
    parse_attrs_and_region(p, state, false)
}

// ---------------------------------------------------------------- label

pub(super) fn print_label(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let Some(name) = prop_str(p, op, "sym_name") else {
        p.generic(op);
        return Ok(());
    };
    p.write_str(" ");
    p.symbol_name(&name);
    let attrs = discardable(p, op);
    p.attr_dict(&attrs, &[]);
    Ok(())
}

pub(super) fn parse_label(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    let name = p.parse_symbol_name()?;
    set_prop(state, "sym_name", Attribute::string(&name));
    p.parse_optional_attr_dict(&mut state.attributes)
}

// ---------------------------------------------------------------- operands

/// The custom text of an operand.
fn operand_text(o: &Operand) -> String {
    match o {
        Operand::Reg(r) => r.to_string(),
        Operand::Csr(n) => n.clone(),
        Operand::Imm(v) => format_imm(*v),
        Operand::Symbol(s) => {
            let mut out = String::new();
            write_symbol_name(&mut out, s);
            out
        }
        Operand::Expr(e) => {
            let mut out = String::new();
            write_escaped_string(&mut out, e);
            out
        }
        Operand::At(k) => format!("#ipu.at<{k}>"),
    }
}

/// Prints `mnemonic op, op, ...` and the discardable attributes; `None`
/// when an operand is malformed (the caller prints the generic form).
fn print_mnemonic_and_operands(
    p: &mut OpPrinter<'_, '_>,
    op: OpId,
    name_attr: &str,
    list_attr: &str,
) -> Option<()> {
    let name = prop_str(p, op, name_attr)?;
    let items = p.ctx().attr(op, list_attr)?.as_array()?.to_vec();
    let ops: Vec<Operand> = items
        .iter()
        .map(Operand::from_attr)
        .collect::<Result<_, _>>()
        .ok()?;
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
    {
        return None;
    }
    let mut s = format!(" {name}");
    for (i, o) in ops.iter().enumerate() {
        s.push_str(if i == 0 { " " } else { ", " });
        s.push_str(&operand_text(o));
    }
    p.write_str(&s);
    let attrs = discardable(p, op);
    p.attr_dict_with_keyword(&attrs, &[]);
    Some(())
}

/// Parses one operand of the custom form: a bare word (register or control
/// register), or an attribute (integer, `@symbol`, expression string, `#ipu.*`).
fn parse_operand(p: &mut CustomParser<'_, '_>) -> Result<Operand, Diagnostic> {
    let at = p.current_loc();
    if let Ok(word) = p.parse_keyword() {
        let mut last = None;
        if p.parse_optional_punct(":") {
            let n = parse_int(p, "the last register number of a group")?;
            last = Some(n);
        }
        let mut inc = false;
        if p.parse_optional_punct("+") {
            p.expect_punct("=")?;
            inc = true;
        }
        if is_register_name(&word) {
            let last = match last {
                Some(n) => Some(u8::try_from(n).ok().filter(|&v| v < 16).ok_or_else(|| {
                    Diagnostic::error(
                        at.clone(),
                        format!("`{n}` is not a register number below 16"),
                    )
                })?),
                None => None,
            };
            return Ok(Operand::Reg(Register {
                name: word,
                last,
                inc,
            }));
        }
        if last.is_some() || inc {
            return Err(Diagnostic::error(
                at,
                format!("`{word}` is not a register name, so it cannot form a group or be post-incremented"),
            ));
        }
        return Ok(Operand::Csr(word));
    }
    let a = p.parse_attribute()?;
    Operand::from_attr(&a).map_err(|e| Diagnostic::error(at, e.to_string()))
}

fn parse_mnemonic_and_operands(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
    name_attr: &str,
    list_attr: &str,
    what: &str,
) -> Result<(), Diagnostic> {
    let err = p.error(format!("expected {what}"));
    let name = p.parse_keyword().map_err(|_| err)?;
    set_prop(state, name_attr, Attribute::string(&name));
    let mut ops = Vec::new();
    let mut has_attrs = p.parse_optional_keyword("attributes");
    if !has_attrs && !p.is_at_end() {
        loop {
            ops.push(parse_operand(p)?.to_attr());
            if !p.parse_optional_punct(",") {
                break;
            }
        }
        has_attrs = p.parse_optional_keyword("attributes");
    }
    set_prop(state, list_attr, Attribute::array(ops));
    if has_attrs {
        p.parse_optional_attr_dict(&mut state.attributes)?;
    }
    Ok(())
}

// ---------------------------------------------------------------- inst, directive

pub(super) fn print_inst(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    if print_mnemonic_and_operands(p, op, "mnemonic", "operands").is_none() {
        p.generic(op);
    }
    Ok(())
}

pub(super) fn parse_inst(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    parse_mnemonic_and_operands(p, state, "mnemonic", "operands", "an instruction mnemonic")
}

pub(super) fn print_directive(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    if print_mnemonic_and_operands(p, op, "name", "args").is_none() {
        p.generic(op);
    }
    Ok(())
}

pub(super) fn parse_directive(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    parse_mnemonic_and_operands(
        p,
        state,
        "name",
        "args",
        "a directive name (without the dot)",
    )
}

// ---------------------------------------------------------------- bundle

pub(super) fn print_bundle(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    print_region_of(p, op);
    Ok(())
}

pub(super) fn parse_bundle(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    parse_attrs_and_region(p, state, false)
}
