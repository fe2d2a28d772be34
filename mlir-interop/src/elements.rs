//! Weights cross from upstream MLIR into ipuc as bytes, never as text.
//!
//! A model's constants are almost all of its size (so400m: 1.7 GB of
//! weights in a few thousand ops), and printed they double (hex). So before
//! upstream prints the module for ipuc's parser, every large elements
//! attribute hands its bytes straight to ipuc's resource table:
//!
//! - a `dense_resource<key>` blob is copied once into an ipuc resource of
//!   the same key (the attribute prints as that reference);
//! - a large `dense<...>` is copied once into a new ipuc resource, and the
//!   op's attribute becomes a `dense_resource` whose upstream blob is that
//!   very copy (unmanaged: upstream borrows ipuc's bytes, shared, not copied).
//!
//! The module is then printed with a local scope, which leaves out the
//! `dialect_resources` section, so the printout holds the IR and no weights.

use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::Arc;

use ipuc_ir::attributes::{ResourceBlob, ResourceTable};
use ipuc_ir::{Diagnostic, Location};
use melior::ir::operation::{OperationLike, OperationMutLike, WalkOrder, WalkResult};
use melior::ir::{Attribute, AttributeLike};
use melior::StringRef;
use mlir_sys::{MlirAttribute, MlirStringRef};

/// Dense elements attributes of at least this many bytes cross as bytes;
/// smaller ones (shapes, scalars, zero points) stay in the printout, where
/// they cost less than a resource each.
pub const MIN_BYTES: usize = 1024;

/// The key upstream's `dense_resource` attributes made of large `dense<...>`
/// attributes start from (upstream makes each unique).
const HINT: &str = "upstream_dense";

extern "C" {
    /// `csrc/resource_blob.cpp`: whether `attr` is a `dense_resource`; if
    /// so its key and its blob's bytes (null when the file defined none).
    fn ipucDenseResourceBlob(
        attr: MlirAttribute,
        key: *mut MlirStringRef,
        data: *mut *const c_void,
        size: *mut usize,
        alignment: *mut usize,
    ) -> bool;
}

/// What crossed from upstream to ipuc as bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handover {
    /// Resources made in ipuc's table (one per distinct upstream blob).
    pub resources: usize,
    /// Their bytes.
    pub bytes: usize,
    /// How many of them were `dense<...>` attributes made into resources.
    pub from_dense: usize,
}

/// An upstream `dense_resource` attribute's key and blob.
struct UpstreamBlob<'a> {
    key: &'a str,
    data: Option<&'a [u8]>,
    alignment: u32,
}

/// The key and bytes of `attr` if it is a `dense_resource`.
fn dense_resource(attr: Attribute<'_>) -> Option<UpstreamBlob<'_>> {
    let mut key = MlirStringRef {
        data: std::ptr::null(),
        length: 0,
    };
    let mut data = std::ptr::null();
    let (mut size, mut alignment) = (0usize, 1usize);
    // SAFETY: the attribute is alive in its context; the shim only reads it
    // and writes the out-parameters.
    let is = unsafe {
        ipucDenseResourceBlob(
            attr.to_raw(),
            &mut key,
            &mut data,
            &mut size,
            &mut alignment,
        )
    };
    if !is {
        return None;
    }
    // SAFETY: key and data point into the context's blob manager, alive
    // (and unchanged) as long as the attribute's context.
    let key = unsafe { StringRef::from_raw(key) }.as_str().unwrap_or("?");
    let data =
        (!data.is_null()).then(|| unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) });
    Some(UpstreamBlob {
        key,
        data,
        alignment: alignment.try_into().unwrap_or(u32::MAX),
    })
}

/// The raw bytes of `attr` if it is a non-splat `dense<...>` of integers or
/// floats of 8, 16, 32 or 64 bits holding at least [`MIN_BYTES`], with its
/// element size.
fn large_dense(attr: Attribute<'_>) -> Option<(&[u8], usize)> {
    let raw = attr.to_raw();
    // SAFETY: C API queries on a live attribute and its type; the raw data
    // is the attribute's own storage, alive as long as its context.
    unsafe {
        if !mlir_sys::mlirAttributeIsADenseElements(raw)
            || mlir_sys::mlirDenseElementsAttrIsSplat(raw)
        {
            return None;
        }
        let element = mlir_sys::mlirShapedTypeGetElementType(mlir_sys::mlirAttributeGetType(raw));
        let bits = if mlir_sys::mlirTypeIsAInteger(element) {
            mlir_sys::mlirIntegerTypeGetWidth(element)
        } else if mlir_sys::mlirTypeIsAFloat(element) {
            mlir_sys::mlirFloatTypeGetWidth(element)
        } else {
            return None;
        };
        if !matches!(bits, 8 | 16 | 32 | 64) {
            return None;
        }
        let size = bits as usize / 8;
        let count = usize::try_from(mlir_sys::mlirElementsAttrGetNumElements(raw)).ok()?;
        let bytes = count.checked_mul(size)?;
        if bytes < MIN_BYTES {
            return None;
        }
        let data = mlir_sys::mlirDenseElementsAttrGetRawData(raw);
        Some((std::slice::from_raw_parts(data.cast::<u8>(), bytes), size))
    }
}

/// Hands every large elements attribute of `module` to `resources` (see the
/// module doc) and rewrites the large `dense<...>` ones into references.
/// Errors if a key already has bytes in `resources` (the table must be the
/// fresh one of the module being read).
pub(crate) fn hand_over(
    module: &mut melior::ir::Module<'_>,
    resources: &ResourceTable,
) -> Result<Handover, Diagnostic> {
    let mut done = Handover::default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut error = None;
    let mut claim = |key: &str, blob: ResourceBlob| -> Result<(), Diagnostic> {
        let bytes = blob.data.len();
        resources.get_or_create(key).set_blob(blob).map_err(|e| {
            Diagnostic::error(
                Location::unknown(),
                format!("reading upstream MLIR into a context that already has this resource: {e}"),
            )
        })?;
        done.resources += 1;
        done.bytes += bytes;
        Ok(())
    };
    module
        .as_operation_mut()
        .walk_mut(WalkOrder::PreOrder, |mut op| {
            let attrs: Vec<(String, Attribute)> = op
                .attributes()
                .map(|(name, attr)| {
                    (
                        name.as_string_ref().as_str().unwrap_or("?").to_string(),
                        attr,
                    )
                })
                .collect();
            for (name, attr) in attrs {
                let result = if let Some(blob) = dense_resource(attr) {
                    match blob.data {
                        Some(data) if seen.insert(blob.key.to_string()) => claim(
                            blob.key,
                            ResourceBlob {
                                alignment: blob.alignment,
                                data: Arc::from(data),
                            },
                        ),
                        _ => Ok(()),
                    }
                } else if let Some((data, size)) = large_dense(attr) {
                    let data: Arc<[u8]> = Arc::from(data);
                    // SAFETY: the new attribute borrows `data`, which ipuc's
                    // resource table keeps alive beyond the upstream context;
                    // upstream never writes it (not mutable) nor frees it (no
                    // deleter).
                    let reference = unsafe {
                        Attribute::from_raw(mlir_sys::mlirUnmanagedDenseResourceElementsAttrGet(
                            mlir_sys::mlirAttributeGetType(attr.to_raw()),
                            StringRef::new(HINT).to_raw(),
                            data.as_ptr().cast_mut().cast(),
                            data.len(),
                            size,
                            false,
                            None,
                            std::ptr::null_mut(),
                        ))
                    };
                    let key = dense_resource(reference)
                        .expect("upstream made a dense_resource")
                        .key
                        .to_string();
                    op.set_attribute(&name, reference);
                    seen.insert(key.clone());
                    done.from_dense += 1;
                    claim(
                        &key,
                        ResourceBlob {
                            alignment: size as u32,
                            data,
                        },
                    )
                } else {
                    Ok(())
                };
                if let Err(d) = result {
                    error = Some(d);
                    return WalkResult::Interrupt;
                }
            }
            WalkResult::Advance
        });
    match error {
        Some(d) => Err(d),
        None => Ok(done),
    }
}
