//! Several programs on one tile, each in a scope of its own.
//!
//! A lowered block emits a whole tile program: a supervisor `main`, its
//! subroutines (each an instance, [`super::subroutine`]), worker code and
//! vertex states, under names that are unique within the block but not
//! across blocks: two blocks that share a tile in time both define `main`,
//! `ln_main`, `.Lxa_0`, `.data.ln`. [`scope_sections`] puts what one block
//! emitted on a tile into a scope, as `emit_subroutine` does for one
//! instance:
//!
//! - every label the sections define, and every use of one in operands
//!   and assembler expressions, gets the scope as a prefix (`main` becomes
//!   `SCOPE_main`, a local `.Lx` becomes `.LSCOPE_x`); names the sections
//!   use but do not define (another scope's labels, the assembler's
//!   predefined constants) are left alone, so a block can end with
//!   `bri NEXT_main` to the next one;
//! - every section's last name component gets the scope as a prefix
//!   (`.text.main` becomes `.text.SCOPE_main`,
//!   `.text.layernorm_f16_worker.ln` becomes
//!   `.text.layernorm_f16_worker.SCOPE_ln`, a bare `.data` becomes
//!   `.data.SCOPE`): the section's kind, which places it (`.interleaved`
//!   goes to region 1), is kept, and a profile reads the codelet and the
//!   instance `SCOPE_ln` from the name as it reads an unscoped one.
//!
//! Unlike MLIR's symbol tables, scopes are not nested ops: the assembler
//! sees one flat namespace per tile, and a scope is a naming discipline
//! applied to what was emitted.

use rustc_hash::FxHashMap as HashMap;

use ipuc_ir::{Attribute, Context, OpId};

use super::subroutine::{defined_labels, instance_label, rename_labels, string_attr};

/// Section `name` inside scope `scope`: its last component prefixed.
pub fn scoped_section_name(name: &str, scope: &str) -> String {
    // The kind is the first component (`.text`, `.data`, `.interleaved`).
    let kind_end = name[1..].find('.').map_or(name.len(), |i| i + 1);
    if kind_end == name.len() {
        return format!("{name}.{scope}");
    }
    let last = name.rfind('.').expect("a dot follows the kind");
    format!("{}.{scope}_{}", &name[..last], &name[last + 1..])
}

/// The scope of block `k` of a chain of lowered blocks: `b{k}`.
pub fn block_scope(k: usize) -> String {
    format!("b{k}")
}

/// The block scope ([`block_scope`]) section `name` was put in, if any:
/// its last component's prefix up to the first `_` (or the whole
/// component for a bare kind such as `.data.b2`), where that is `b` and a
/// block's number.
pub fn section_block(name: &str) -> Option<&str> {
    let kind_end = name[1..].find('.')? + 1;
    let last = &name[kind_end..][name[kind_end..].rfind('.')? + 1..];
    let scope = last.split('_').next()?;
    let digits = scope.strip_prefix('b')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(scope)
}

/// Puts `sections` (ops of one tile body) into scope `scope`, as the
/// module doc says.
pub fn scope_sections(ctx: &mut Context, sections: &[OpId], scope: &str) {
    let labels: HashMap<String, String> = defined_labels(ctx, sections)
        .into_iter()
        .map(|l| {
            let scoped = instance_label(&l, scope);
            (l, scoped)
        })
        .collect();
    rename_labels(ctx, sections, &labels);
    for &s in sections {
        if let Some(n) = string_attr(ctx, s, "name") {
            ctx.set_attr(
                s,
                "name",
                Attribute::string(&scoped_section_name(&n, scope)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_names_keep_their_kind_and_prefix_their_last_component() {
        assert_eq!(scoped_section_name(".text.main", "b0"), ".text.b0_main");
        assert_eq!(
            scoped_section_name(".text.layernorm_f16_worker.ln", "b1"),
            ".text.layernorm_f16_worker.b1_ln"
        );
        assert_eq!(scoped_section_name(".data", "b2"), ".data.b2");
        assert_eq!(
            scoped_section_name(".interleaved.x", "b0"),
            ".interleaved.b0_x"
        );
    }

    #[test]
    fn a_sections_block_is_read_back_from_its_scoped_name() {
        for (name, k) in [
            (".text.main", 0),
            (".text.layernorm_f16_worker.ln", 12),
            (".data", 55),
        ] {
            let scoped = scoped_section_name(name, &block_scope(k));
            assert_eq!(
                section_block(&scoped),
                Some(block_scope(k).as_str()),
                "{scoped}"
            );
        }
        // Unscoped names, and prefixes that are not a block's number.
        for name in [
            ".text.main",
            ".data",
            ".text.bias_main",
            ".data.b",
            ".data.bx_1",
            "x",
        ] {
            assert_eq!(section_block(name), None, "{name}");
        }
    }
}
