//! Builtin attributes, spelled as MLIR spells them.
//!
//! An [`Attribute`] is immutable and reference counted. Large constants live
//! either in [`DenseElements`] (shared bytes) or in a named resource blob
//! ([`Resource`]) that `dense_resource<name>` refers to; neither is ever
//! copied when IR is cloned or transformed.

use std::fmt;
use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashMap;

use crate::affine::{AffineMap, IntegerSet};
use crate::location::Location;
use crate::types::{Type, TypeKind};

/// The payload of an attribute.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttrKind {
    /// `unit`.
    Unit,
    /// `true` / `false`.
    Bool(bool),
    /// `42 : i32`. The value is stored sign-extended (or zero-extended for
    /// unsigned types) in an `i128`.
    Integer { value: i128, ty: Type },
    /// `1.5 : f32`. The value is stored as the bits of an `f64`, which holds
    /// every supported format exactly.
    Float { bits: u64, ty: Type },
    /// `"text"`, optionally typed (`"text" : i32`).
    String { value: Arc<str>, ty: Option<Type> },
    /// A string attribute whose bytes are not valid UTF-8 (`"\FF\00"`):
    /// upstream's string attributes are byte strings. Printed with the same
    /// escapes; `as_str` does not see it.
    Bytes { value: Arc<[u8]>, ty: Option<Type> },
    /// A type used as an attribute.
    Type(Type),
    /// `[a, b]`.
    Array(Vec<Attribute>),
    /// `array<i64: 1, 2>`.
    DenseArray {
        element: Type,
        values: DenseArrayValues,
    },
    /// `{a = 1, b}`.
    Dictionary(Dictionary),
    /// `@root::@nested`.
    SymbolRef {
        root: Arc<str>,
        nested: Vec<Arc<str>>,
    },
    /// `dense<...> : tensor<...>`.
    DenseElements(DenseElements),
    /// `dense_resource<name> : tensor<...>`.
    DenseResource { resource: Resource, ty: Type },
    /// `affine_map<...>`.
    AffineMap(AffineMap),
    /// `affine_set<...>`.
    IntegerSet(IntegerSet),
    /// `strided<[s0, s1], offset: o>`: a memref layout of one stride per
    /// dimension and an offset, in elements; [`DYNAMIC`](crate::types::DYNAMIC)
    /// (`?`) where unknown.
    Strided { strides: Vec<i64>, offset: i64 },
    /// A location used as an attribute (`loc(...)`).
    Location(Location),
    /// A dialect attribute `#dialect.mnemonic<body>` or `#dialect<body>` kept as text.
    Dialect {
        dialect: Arc<str>,
        mnemonic: Option<Arc<str>>,
        body: Arc<str>,
    },
}

/// Values of a dense array attribute.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DenseArrayValues {
    /// Integer (and `i1`) elements.
    Int(Vec<i64>),
    /// Float elements as `f64` bits.
    Float(Vec<u64>),
}

/// An immutable, shared attribute.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Attribute(Arc<AttrKind>);

impl Attribute {
    /// Wraps an attribute payload.
    pub fn new(kind: AttrKind) -> Attribute {
        Attribute(Arc::new(kind))
    }
    /// The payload.
    #[inline]
    pub fn kind(&self) -> &AttrKind {
        &self.0
    }
    /// `unit`.
    pub fn unit() -> Attribute {
        Attribute::new(AttrKind::Unit)
    }
    /// A bool.
    pub fn bool(b: bool) -> Attribute {
        Attribute::new(AttrKind::Bool(b))
    }
    /// A typed integer (value truncated to the type's width).
    pub fn integer(value: i128, ty: Type) -> Attribute {
        let value = normalize_int(value, &ty);
        Attribute::new(AttrKind::Integer { value, ty })
    }
    /// `value : i64`.
    pub fn i64(value: i64) -> Attribute {
        Attribute::integer(value as i128, Type::i64())
    }
    /// A typed float (the value is rounded to the type's format by the caller).
    pub fn float(value: f64, ty: Type) -> Attribute {
        Attribute::new(AttrKind::Float {
            bits: value.to_bits(),
            ty,
        })
    }
    /// An untyped string.
    pub fn string(s: &str) -> Attribute {
        Attribute::new(AttrKind::String {
            value: s.into(),
            ty: None,
        })
    }
    /// A string attribute from raw bytes, optionally typed: a `String` when
    /// the bytes are UTF-8, `Bytes` otherwise.
    pub fn string_from_bytes(bytes: Vec<u8>, ty: Option<Type>) -> Attribute {
        match String::from_utf8(bytes) {
            Ok(s) => Attribute::new(AttrKind::String {
                value: s.into(),
                ty,
            }),
            Err(e) => Attribute::new(AttrKind::Bytes {
                value: e.into_bytes().into(),
                ty,
            }),
        }
    }
    /// A type attribute.
    pub fn type_attr(ty: Type) -> Attribute {
        Attribute::new(AttrKind::Type(ty))
    }
    /// An array.
    pub fn array(items: Vec<Attribute>) -> Attribute {
        Attribute::new(AttrKind::Array(items))
    }
    /// `array<i64: ...>`.
    pub fn dense_i64_array(values: &[i64]) -> Attribute {
        Attribute::new(AttrKind::DenseArray {
            element: Type::i64(),
            values: DenseArrayValues::Int(values.to_vec()),
        })
    }
    /// A flat symbol reference `@name`.
    pub fn symbol_ref(name: &str) -> Attribute {
        Attribute::new(AttrKind::SymbolRef {
            root: name.into(),
            nested: Vec::new(),
        })
    }
    /// A dictionary.
    pub fn dictionary(d: Dictionary) -> Attribute {
        Attribute::new(AttrKind::Dictionary(d))
    }

    /// The integer value, if this is an integer or bool attribute.
    pub fn as_int(&self) -> Option<i128> {
        match self.kind() {
            AttrKind::Integer { value, .. } => Some(*value),
            AttrKind::Bool(b) => Some(*b as i128),
            _ => None,
        }
    }
    /// The float value, if this is a float attribute.
    pub fn as_f64(&self) -> Option<f64> {
        match self.kind() {
            AttrKind::Float { bits, .. } => Some(f64::from_bits(*bits)),
            _ => None,
        }
    }
    /// The string value, if this is a string attribute.
    pub fn as_str(&self) -> Option<&str> {
        match self.kind() {
            AttrKind::String { value, .. } => Some(value),
            _ => None,
        }
    }
    /// The type, if this is a type attribute.
    pub fn as_type(&self) -> Option<&Type> {
        match self.kind() {
            AttrKind::Type(t) => Some(t),
            _ => None,
        }
    }
    /// The items, if this is an array attribute.
    pub fn as_array(&self) -> Option<&[Attribute]> {
        match self.kind() {
            AttrKind::Array(a) => Some(a),
            _ => None,
        }
    }
    /// The dictionary, if this is a dictionary attribute.
    pub fn as_dictionary(&self) -> Option<&Dictionary> {
        match self.kind() {
            AttrKind::Dictionary(d) => Some(d),
            _ => None,
        }
    }
    /// Integer values of a dense array or of an array of integer attributes.
    pub fn as_i64_list(&self) -> Option<Vec<i64>> {
        match self.kind() {
            AttrKind::DenseArray {
                values: DenseArrayValues::Int(v),
                ..
            } => Some(v.clone()),
            AttrKind::Array(items) => items.iter().map(|a| a.as_int().map(|v| v as i64)).collect(),
            _ => None,
        }
    }
    /// The root name of a symbol reference.
    pub fn as_symbol_root(&self) -> Option<&str> {
        match self.kind() {
            AttrKind::SymbolRef { root, .. } => Some(root),
            _ => None,
        }
    }
    /// The type of a typed attribute (integer, float, elements, typed string).
    pub fn ty(&self) -> Option<&Type> {
        match self.kind() {
            AttrKind::Integer { ty, .. } | AttrKind::Float { ty, .. } => Some(ty),
            AttrKind::String { ty, .. } | AttrKind::Bytes { ty, .. } => ty.as_ref(),
            AttrKind::DenseElements(d) => Some(&d.ty),
            AttrKind::DenseResource { ty, .. } => Some(ty),
            _ => None,
        }
    }
}

impl fmt::Debug for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        crate::printer::write_attribute(&mut s, self, &crate::printer::PrintOptions::default());
        f.write_str(&s)
    }
}

/// Truncates `value` to the width of `ty`, sign- or zero-extending back.
pub fn normalize_int(value: i128, ty: &Type) -> i128 {
    match ty.kind() {
        TypeKind::Integer { width, signedness } if *width < 128 => {
            let w = *width;
            let mask = (1i128 << w) - 1;
            let v = value & mask;
            let unsigned = matches!(signedness, crate::types::Signedness::Unsigned) || w == 1;
            if !unsigned && w > 0 && (v >> (w - 1)) & 1 == 1 {
                v - (1i128 << w)
            } else {
                v
            }
        }
        TypeKind::Index => value as i64 as i128,
        _ => value,
    }
}

/// A dictionary's entries, sorted by name.
type Entries = Vec<(Arc<str>, Attribute)>;

/// A sorted attribute dictionary (names are unique).
///
/// The entries are shared copy-on-write: cloning a dictionary is one
/// reference count, and an empty one allocates nothing. Emitted code has
/// millions of ops whose attributes repeat (a tile's `nop`s, its loads of
/// the same vertex-state words): their builders hand each op a clone of
/// one dictionary instead of a copy (`Emitter`'s instruction cache in
/// `ipuc-backend-ipu`). A mutation copies the entries only while they
/// are shared.
#[derive(Clone, Debug, Default)]
pub struct Dictionary(Option<Arc<Entries>>);

impl PartialEq for Dictionary {
    fn eq(&self, other: &Self) -> bool {
        self.entries() == other.entries()
    }
}

impl Eq for Dictionary {}

impl std::hash::Hash for Dictionary {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.entries().hash(state)
    }
}

impl Dictionary {
    /// An empty dictionary.
    pub fn new() -> Dictionary {
        Dictionary(None)
    }
    /// Builds from entries; later duplicates win.
    pub fn from_entries(entries: impl IntoIterator<Item = (Arc<str>, Attribute)>) -> Dictionary {
        let mut d = Dictionary::new();
        for (k, v) in entries {
            d.set(&k, v);
        }
        d
    }
    fn entries(&self) -> &[(Arc<str>, Attribute)] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
    /// The entries to change: copied first if another dictionary shares
    /// them.
    fn entries_mut(&mut self) -> &mut Entries {
        Arc::make_mut(self.0.get_or_insert_with(Default::default))
    }
    fn find(&self, name: &str) -> Result<usize, usize> {
        self.entries().binary_search_by(|(k, _)| (**k).cmp(name))
    }
    /// Looks up an entry.
    pub fn get(&self, name: &str) -> Option<&Attribute> {
        self.find(name).ok().map(|i| &self.entries()[i].1)
    }
    /// Inserts or replaces an entry; returns the previous value.
    pub fn set(&mut self, name: &str, value: Attribute) -> Option<Attribute> {
        match self.find(name) {
            Ok(i) => Some(std::mem::replace(&mut self.entries_mut()[i].1, value)),
            Err(i) => {
                self.entries_mut().insert(i, (name.into(), value));
                None
            }
        }
    }
    /// [`Dictionary::set`] with a name already shared (readers share the
    /// names they see).
    pub fn set_shared(&mut self, name: &Arc<str>, value: Attribute) -> Option<Attribute> {
        match self.find(name) {
            Ok(i) => Some(std::mem::replace(&mut self.entries_mut()[i].1, value)),
            Err(i) => {
                self.entries_mut().insert(i, (name.clone(), value));
                None
            }
        }
    }
    /// Moves the entries whose name satisfies `pred` into a dictionary of
    /// their own (both stay sorted; the names move, shared, not copied).
    /// Entries shared with another dictionary are copied only when some
    /// name moves (so `pred` may be asked of a name twice).
    pub fn split_off_where(&mut self, mut pred: impl FnMut(&str) -> bool) -> Dictionary {
        if !self.entries().iter().any(|(k, _)| pred(k)) {
            return Dictionary::new();
        }
        let moved: Entries = self
            .entries_mut()
            .extract_if(.., |(k, _)| pred(k))
            .collect();
        if self.is_empty() {
            self.0 = None;
        }
        Dictionary(Some(Arc::new(moved)))
    }
    /// Removes an entry.
    pub fn remove(&mut self, name: &str) -> Option<Attribute> {
        let i = self.find(name).ok()?;
        let removed = self.entries_mut().remove(i).1;
        if self.is_empty() {
            self.0 = None;
        }
        Some(removed)
    }
    /// Entries in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Attribute)> + Clone {
        self.entries().iter().map(|(k, v)| (&**k, v))
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries().len()
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
}

/// Why [`DenseElements::new`] refused its type or bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DenseElementsError {
    /// The type has no element type (not a tensor or vector).
    #[error("dense elements need a shaped type, got {0}")]
    NotShaped(Type),
    /// The element type has no dense byte layout.
    #[error("unsupported dense element type {0}")]
    UnsupportedElement(Type),
    /// A dynamic dimension, or more than 2^64 elements.
    #[error("dense elements need a static shape of at most 2^64 elements, got {0}")]
    NotStatic(Type),
    /// The byte count overflows the address space.
    #[error("dense elements of {0} need more bytes than memory holds")]
    TooLarge(Type),
    /// The data does not hold one element (splat) or every element.
    #[error("dense elements of {ty} need {expected} bytes, got {found}")]
    ByteCount {
        /// The shaped type.
        ty: Type,
        /// The bytes it needs.
        expected: usize,
        /// The bytes given.
        found: usize,
    },
}

/// Dense elements: a shaped type plus little-endian element bytes.
///
/// Integers take `ceil(width / 8)` bytes (`i1` one byte, 0 or 1), `index`
/// eight, floats their storage width. A splat stores a single element.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DenseElements {
    /// The shaped (tensor or vector) type.
    pub ty: Type,
    /// Element bytes.
    pub data: Arc<[u8]>,
    /// Whether `data` holds one element standing for all.
    pub splat: bool,
}

impl DenseElements {
    /// Bytes per element of an element type, or `None` if it cannot be stored densely.
    pub fn element_size(element: &Type) -> Option<usize> {
        element
            .int_or_float_bit_width()
            .map(|w| w.div_ceil(8) as usize)
    }
    /// Builds dense elements, checking the byte count (MLIR's
    /// `DenseElementsAttr::getChecked`): the caller renders the error at
    /// the location of what it was building from.
    pub fn new(
        ty: Type,
        data: Arc<[u8]>,
        splat: bool,
    ) -> Result<DenseElements, DenseElementsError> {
        let elem = ty
            .element_type()
            .ok_or_else(|| DenseElementsError::NotShaped(ty.clone()))?;
        let size = Self::element_size(elem)
            .ok_or_else(|| DenseElementsError::UnsupportedElement(elem.clone()))?;
        let n = ty
            .num_elements()
            .ok_or_else(|| DenseElementsError::NotStatic(ty.clone()))?;
        let expected = if splat {
            size
        } else {
            usize::try_from(n)
                .ok()
                .and_then(|n| n.checked_mul(size))
                .ok_or_else(|| DenseElementsError::TooLarge(ty.clone()))?
        };
        if data.len() != expected {
            return Err(DenseElementsError::ByteCount {
                ty,
                expected,
                found: data.len(),
            });
        }
        Ok(DenseElements { ty, data, splat })
    }
    /// The element type.
    pub fn element_type(&self) -> &Type {
        self.ty
            .element_type()
            .expect("dense elements have a shaped type")
    }
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.ty.num_elements().unwrap_or(0) as usize
    }
    /// Whether the shape has zero elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The raw bytes of element `i`.
    pub fn element_bytes(&self, i: usize) -> &[u8] {
        let size = Self::element_size(self.element_type()).unwrap_or(1);
        let i = if self.splat { 0 } else { i };
        &self.data[i * size..(i + 1) * size]
    }
    /// Element `i` as an integer (sign-extended per the element type).
    pub fn int_at(&self, i: usize) -> i128 {
        let bytes = self.element_bytes(i);
        let mut buf = [0u8; 16];
        buf[..bytes.len()].copy_from_slice(bytes);
        normalize_int(i128::from_le_bytes(buf), self.element_type())
    }
    /// Every element as an `f64`, in order (`None` for other than float
    /// element types): [`Self::float_at`] of each, decoded in one pass.
    pub fn floats(&self) -> Option<Vec<f64>> {
        let mut out = Vec::new();
        self.floats_into(&mut out).then_some(out)
    }
    /// [`Self::floats`] into `out` (cleared first; `false`, `out` empty,
    /// for other than float element types): a caller decoding many
    /// tensors in turn reuses one buffer's memory rather than fresh pages.
    pub fn floats_into(&self, out: &mut Vec<f64>) -> bool {
        out.clear();
        let Some(kind) = self.element_type().float_kind() else {
            return false;
        };
        if self.splat {
            out.resize(self.len(), self.float_at(0));
        } else {
            crate::float_format::decode_into(kind, &self.data, out);
        }
        true
    }
    /// The largest magnitude of the elements (`None` for other than float
    /// element types; NaN if one is NaN): [`Self::floats`]' without
    /// collecting them.
    pub fn max_abs(&self) -> Option<f64> {
        let kind = self.element_type().float_kind()?;
        if self.splat {
            return Some(if self.is_empty() {
                0.0
            } else {
                self.float_at(0).abs()
            });
        }
        Some(crate::float_format::max_abs(kind, &self.data))
    }
    /// Element `i` as an `f64` (for float element types).
    pub fn float_at(&self, i: usize) -> f64 {
        crate::printer::decode_float(
            self.element_type()
                .float_kind()
                .expect("float element type"),
            self.element_bytes(i),
        )
    }
}

/// A named blob of bytes referenced by `dense_resource<name>`.
///
/// The blob may be attached after the reference is parsed (the file's
/// `dialect_resources` section comes last). Cloning shares the entry.
#[derive(Clone)]
pub struct Resource(Arc<ResourceEntry>);

/// The shared state of a [`Resource`].
pub struct ResourceEntry {
    name: Arc<str>,
    blob: OnceLock<ResourceBlob>,
}

/// Resource bytes with their required alignment.
#[derive(Clone, Debug)]
pub struct ResourceBlob {
    /// Alignment in bytes the data needs (upstream's leading 4-byte word).
    pub alignment: u32,
    /// The bytes, shared.
    pub data: Arc<[u8]>,
}

/// A new shared buffer of `len` zero bytes, for a caller to fill through
/// `Arc::get_mut` (it is unique) and then share as blob data: allocated
/// once (an iterator of known length collects straight into the `Arc`),
/// where `Arc::from(vec)` would copy every byte into a second allocation
/// (a model's weights: so400m's 1.7 GB of f32).
pub fn zeroed_bytes(len: usize) -> Arc<[u8]> {
    std::iter::repeat_n(0u8, len).collect()
}

/// New shared buffers of `lens[i]` bytes, each zeroed and then written by
/// `fill(i, buffer)`, on the host's threads (the largest first). The
/// calling thread allocates every buffer and the thread that fills it
/// first touches it: the kernel's zeroing of the fresh pages is shared
/// between the threads, and the memory is the caller's, which the
/// allocator reuses once it is freed (memory a thread allocated stays with
/// that thread's heap after it exits: so400m's imported weights, made so,
/// were not reused by the passes that replace them).
pub fn filled_bytes(lens: &[usize], fill: impl Fn(usize, &mut [u8]) + Sync) -> Vec<Arc<[u8]>> {
    let mut buffers: Vec<Arc<[MaybeUninit<u8>]>> =
        lens.iter().map(|&n| Arc::new_uninit_slice(n)).collect();
    let mut jobs: Vec<(usize, &mut [MaybeUninit<u8>])> = buffers
        .iter_mut()
        .map(|b| Arc::get_mut(b).expect("a new buffer is unique"))
        .enumerate()
        .collect();
    jobs.sort_by_key(|(_, b)| std::cmp::Reverse(b.len()));
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get().min(8))
        .min(jobs.len());
    let queue = Mutex::new(jobs.into_iter());
    let work = || loop {
        let next = queue.lock().expect("a filling thread panicked").next();
        let Some((i, buffer)) = next else { break };
        for b in buffer.iter_mut() {
            b.write(0);
        }
        // SAFETY: every byte was just initialised, and `u8` has the
        // layout of `MaybeUninit<u8>`.
        let bytes = unsafe { &mut *(buffer as *mut [MaybeUninit<u8>] as *mut [u8]) };
        fill(i, bytes);
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    buffers
        .into_iter()
        // SAFETY: every buffer was zeroed (then filled) above; a panic
        // in `fill` would have ended the scope before.
        .map(|b| unsafe { b.assume_init() })
        .collect()
}

impl Resource {
    /// The resource name (the key in `dialect_resources`).
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// The blob, once attached.
    pub fn blob(&self) -> Option<&ResourceBlob> {
        self.0.blob.get()
    }
    /// Attaches the blob; fails if one is already attached.
    pub fn set_blob(&self, blob: ResourceBlob) -> Result<(), String> {
        self.0
            .blob
            .set(blob)
            .map_err(|_| format!("resource '{}' is defined twice", self.0.name))
    }
}

impl PartialEq for Resource {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.name == other.0.name
    }
}
impl Eq for Resource {}
impl std::hash::Hash for Resource {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.name.hash(state)
    }
}
impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Resource({})", self.0.name)
    }
}

/// The `builtin` dialect's resource table: name -> resource, shared by every
/// context that works on the same module (including contexts split off for
/// parallel passes).
#[derive(Default)]
pub struct ResourceTable {
    entries: Mutex<FxHashMap<Arc<str>, Resource>>,
}

impl ResourceTable {
    /// The resource named `name`, created (without blob) if new.
    pub fn get_or_create(&self, name: &str) -> Resource {
        let mut map = self.entries.lock().expect("resource table poisoned");
        map.entry(name.into())
            .or_insert_with(|| {
                Resource(Arc::new(ResourceEntry {
                    name: name.into(),
                    blob: OnceLock::new(),
                }))
            })
            .clone()
    }
    /// Creates a new resource with `blob` under a unique name derived from `hint`
    /// (`hint`, `hint_1`, `hint_2`, ...).
    pub fn insert_unique(&self, hint: &str, blob: ResourceBlob) -> Resource {
        let mut map = self.entries.lock().expect("resource table poisoned");
        let mut name = hint.to_string();
        let mut n = 0;
        while map.contains_key(name.as_str()) {
            n += 1;
            name = format!("{hint}_{n}");
        }
        let entry = ResourceEntry {
            name: name.as_str().into(),
            blob: OnceLock::new(),
        };
        let _ = entry.blob.set(blob);
        let r = Resource(Arc::new(entry));
        map.insert(name.into(), r.clone());
        r
    }
    /// Drops resource `name` from the table (a blob no attribute refers to
    /// any more, such as a constant a pass built, read and erased); the
    /// handles still held keep their bytes. Returns whether it was there.
    pub fn remove(&self, name: &str) -> bool {
        self.entries
            .lock()
            .expect("resource table poisoned")
            .remove(name)
            .is_some()
    }
    /// Frees the bytes of resource `name` if nothing but the table refers
    /// to it (the constant a pass has just replaced and erased), at once
    /// rather than after the pass: a pass replacing a model's weights one
    /// by one then reuses the memory of the last one for the next. The
    /// name stays taken (a resource without blob) until
    /// [`Self::prune_unreferenced`] drops it, so the names
    /// [`Self::insert_unique`] gives meanwhile are the ones it would have
    /// given. Returns the blob (`None` if the resource is referred to,
    /// unknown or has no blob): its bytes are freed when it is dropped
    /// unless something else shares them, and a caller that is about to
    /// make a blob of the same size may write into them instead.
    pub fn release_if_unreferenced(&self, name: &str) -> Option<ResourceBlob> {
        let mut map = self.entries.lock().expect("resource table poisoned");
        map.get_mut(name)
            .and_then(|r| Arc::get_mut(&mut r.0))
            .and_then(|entry| entry.blob.take())
    }
    /// Drops every resource that only the table still holds: no attribute
    /// (nor any other handle) refers to it, so no IR can print or read it.
    /// Returns the blob bytes so released from the table (the bytes
    /// themselves are freed unless something else shares them).
    ///
    /// The pass manager calls it after each entry of its root pipeline (a
    /// pass, or a nested pipeline over every function): a pass that replaces a
    /// constant (convert-precision's FP8 weights, the fusion's concatenated
    /// QKV weights) leaves the old blob unreferenced, and a model's weights
    /// would otherwise stay in memory, in every precision they passed
    /// through, until the context is dropped (so400m: 1.7 GB of f32 weights
    /// beside their FP8 copies). Safe at any time, also beside passes
    /// running on split contexts: a resource some thread is about to refer
    /// to is held by that thread's handle and so is kept. Upstream MLIR
    /// likewise prints only the resources the IR refers to.
    pub fn prune_unreferenced(&self) -> u64 {
        let mut map = self.entries.lock().expect("resource table poisoned");
        let mut freed = 0;
        map.retain(|_, r| {
            let keep = Arc::strong_count(&r.0) > 1;
            if !keep {
                freed += r.blob().map_or(0, |b| b.data.len() as u64);
            }
            keep
        });
        freed
    }
    /// Looks up an existing resource.
    pub fn get(&self, name: &str) -> Option<Resource> {
        self.entries
            .lock()
            .expect("resource table poisoned")
            .get(name)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(bytes: &[u8]) -> ResourceBlob {
        ResourceBlob {
            alignment: 8,
            data: bytes.into(),
        }
    }

    fn hash_of(d: &Dictionary) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        d.hash(&mut h);
        h.finish()
    }

    #[test]
    fn a_shared_dictionary_copies_its_entries_only_when_changed() {
        let mut a = Dictionary::new();
        a.set("b", Attribute::i64(2));
        a.set("a", Attribute::i64(1));
        let mut b = a.clone();
        // A clone shares the entries until one of them changes.
        assert!(Arc::ptr_eq(a.0.as_ref().unwrap(), b.0.as_ref().unwrap()));
        assert_eq!(b.set("a", Attribute::i64(7)), Some(Attribute::i64(1)));
        assert_eq!(
            a.get("a"),
            Some(&Attribute::i64(1)),
            "the original is untouched"
        );
        assert_eq!(b.get("a"), Some(&Attribute::i64(7)));
        assert_eq!(a.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["a", "b"]);
        // Split off and removed down to nothing, a dictionary equals (and
        // hashes as) a new one.
        let moved = b.split_off_where(|k| k == "a");
        assert_eq!(moved.len(), 1);
        assert_eq!(b.remove("b"), Some(Attribute::i64(2)));
        assert_eq!(b.remove("b"), None);
        assert!(b.is_empty());
        assert_eq!(b, Dictionary::new());
        assert_eq!(hash_of(&b), hash_of(&Dictionary::new()));
        // Splitting off nothing leaves the entries shared.
        let c = a.clone();
        assert!(a.split_off_where(|k| k == "z").is_empty());
        assert!(Arc::ptr_eq(a.0.as_ref().unwrap(), c.0.as_ref().unwrap()));
    }

    #[test]
    fn a_removed_resource_frees_its_name_and_keeps_its_handles_bytes() {
        let table = ResourceTable::default();
        let first = table.insert_unique("w", blob(&[1, 2]));
        assert_eq!(first.name(), "w");
        assert_eq!(table.insert_unique("w", blob(&[3])).name(), "w_1");
        assert!(table.remove("w"));
        assert!(!table.remove("w"), "already gone");
        assert!(table.get("w").is_none());
        assert_eq!(first.blob().map(|b| b.data.to_vec()), Some(vec![1, 2]));
        // The name is free again; the other entry stays.
        assert_eq!(table.insert_unique("w", blob(&[4])).name(), "w");
        assert!(table.get("w_1").is_some());
    }

    #[test]
    fn a_released_blob_is_freed_and_its_name_stays_taken_until_pruned() {
        let table = ResourceTable::default();
        let held = table.insert_unique("w", blob(&[1, 2, 3]));
        assert!(table.release_if_unreferenced("w").is_none(), "still held");
        assert_eq!(held.blob().map(|b| b.data.len()), Some(3));
        drop(held);
        let mut released = table.release_if_unreferenced("w").expect("unreferenced");
        assert_eq!(&released.data[..], &[1, 2, 3]);
        assert!(
            Arc::get_mut(&mut released.data).is_some(),
            "nothing else shares it"
        );
        assert!(
            table.release_if_unreferenced("w").is_none(),
            "already released"
        );
        assert!(table.release_if_unreferenced("unknown").is_none());
        assert!(table.get("w").is_some_and(|r| r.blob().is_none()));
        // Taken until the table is pruned, as if the blob had stayed.
        assert_eq!(table.insert_unique("w", blob(&[4])).name(), "w_1");
        assert_eq!(table.prune_unreferenced(), 1, "w_1's byte; w had none");
        assert!(table.get("w").is_none());
        // Buffers filled on threads hold what each fill wrote.
        let lens = [3, 0, 100_000, 7];
        let filled = filled_bytes(&lens, |i, b| {
            b.iter_mut().step_by(2).for_each(|x| *x = i as u8 + 1)
        });
        for (i, (b, &n)) in filled.iter().zip(&lens).enumerate() {
            assert_eq!(b.len(), n);
            assert!(b
                .iter()
                .enumerate()
                .all(|(j, &x)| x == if j % 2 == 0 { i as u8 + 1 } else { 0 }));
        }
        // A zeroed buffer is one its owner can fill.
        let mut bytes = zeroed_bytes(5);
        assert_eq!(&bytes[..], &[0; 5]);
        Arc::get_mut(&mut bytes).expect("unique")[4] = 9;
        assert_eq!(&bytes[..], &[0, 0, 0, 0, 9]);
    }

    #[test]
    fn pruning_drops_only_the_resources_nothing_else_holds() {
        let table = ResourceTable::default();
        let held = table.insert_unique("held", blob(&[1, 2, 3]));
        // An attribute's handle keeps its resource, as an op would.
        let attr = Attribute::new(AttrKind::DenseResource {
            resource: table.insert_unique("in_attr", blob(&[4])),
            ty: Type::index(),
        });
        drop(table.insert_unique("replaced", blob(&[5; 10])));
        drop(table.insert_unique("replaced_too", blob(&[6; 7])));
        assert_eq!(table.prune_unreferenced(), 17, "the two dropped blobs");
        assert!(table.get("replaced").is_none());
        assert!(table.get("replaced_too").is_none());
        assert!(table.get("held").is_some());
        assert!(table.get("in_attr").is_some());
        assert_eq!(table.prune_unreferenced(), 0, "nothing more to drop");
        // Once the attribute goes, so does its resource.
        drop(attr);
        assert_eq!(table.prune_unreferenced(), 1);
        assert!(table.get("in_attr").is_none());
        assert_eq!(held.name(), "held");
    }
}
