//! The textual IR parser.
//!
//! The grammar lives in `grammar.pest`. Top-level items and the bodies of
//! `module` operations are split by `chunks` and parsed one operation at a
//! time, so memory stays proportional to the IR built, not to pest's token
//! queue. The parser reports the first error precisely (file:line:col) and
//! never panics.

mod attrs;
mod chunks;
pub(crate) mod custom;
mod fast;
mod syntax;

use std::sync::Arc;

use pest::iterators::Pair;
use pest::Parser as _;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::attributes::{Attribute, Dictionary, ResourceBlob};
use crate::context::{BlockId, Context, OpId, OperationState, RegionId, Value};
use crate::diagnostics::Diagnostic;
use crate::dialect::{OperationName, Traits};
use crate::location::Location;
use crate::types::Type;
use chunks::ItemKind;
pub use custom::CustomParser;
use syntax::{MlirGrammar, Rule};

/// Parser options.
#[derive(Clone, Debug)]
pub struct ParseOptions {
    /// Operations whose text is longer than this many bytes have their
    /// largest region body parsed op by op, so pest's token queue never
    /// holds more than one of its operations (a model's single function can
    /// hold millions). The result is the same either way.
    pub stream_body_bytes: usize,
    /// Read common generic operations with the hand-written reader
    /// (`fast.rs`) before pest. The result is the same either way; off,
    /// every byte goes through pest (for differential tests).
    pub hand_reader: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            // Small enough that function bodies are read op by op, where
            // the hand-written reader takes most ops.
            stream_body_bytes: 2048,
            hand_reader: true,
        }
    }
}

/// The result of parsing a source buffer.
pub struct ParsedSource {
    /// The top-level operation (a `builtin.module`, implicit if the file
    /// holds bare operations).
    pub module: OpId,
    /// `external_resources` entries from the file metadata (e.g. `mlir_reproducer`).
    pub external_resources: Vec<(String, String, Attribute)>,
    /// How many region bodies were large enough to be parsed op by op.
    pub streamed_bodies: usize,
    /// How many operations the hand-written reader read (see
    /// [`ParseOptions::hand_reader`]).
    pub hand_read_ops: usize,
}

/// Line start offsets, for converting byte offsets to line:col quickly.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        // memchr's vectorised search: a model's text runs to gigabytes,
        // and a byte-at-a-time scan was 4 % of reading it.
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        LineIndex { starts }
    }
    fn line_col(&self, text: &str, offset: usize) -> (u32, u32) {
        let line = self.starts.partition_point(|&s| s <= offset).max(1) - 1;
        let start = self.starts[line];
        let end = offset.min(text.len());
        let col = if text.is_char_boundary(start) && text.is_char_boundary(end) && start <= end {
            text[start..end].chars().count()
        } else {
            end.saturating_sub(start)
        };
        (line as u32 + 1, col as u32 + 1)
    }
}

/// One scope of SSA names; `isolated` scopes stop name lookup.
struct Scope {
    values: FxHashMap<Box<str>, SmallVec<[Value; 1]>>,
    /// Forward references: name -> (placeholder op, use offset).
    forward: FxHashMap<Arc<str>, (OpId, usize)>,
    blocks: FxHashMap<Arc<str>, (BlockId, bool, usize)>,
    isolated: bool,
}

/// Parser state shared by generic and custom parsing.
pub struct Parser<'c> {
    pub(crate) ctx: &'c mut Context,
    file: Arc<str>,
    /// The source (borrowed: a model's text can be gigabytes).
    text: &'c str,
    lines: LineIndex,
    /// Offset of the chunk currently parsed, added to pest positions.
    base: std::cell::RefCell<Base>,
    attr_aliases: FxHashMap<String, Attribute>,
    type_aliases: FxHashMap<String, Type>,
    loc_aliases: FxHashMap<String, Location>,
    scopes: Vec<Scope>,
    default_dialects: Vec<&'static str>,
    forward_ref_name: OperationName,
    /// Locations referring to aliases defined later in the file: fixed up at the end.
    pending_loc_aliases: Vec<(OpId, String)>,
    /// Resolved generic-form op names by their quoted spelling.
    op_name_cache: FxHashMap<String, OperationName>,
    /// Converted types by their text.
    type_cache: std::cell::RefCell<FxHashMap<String, Type>>,
    /// A region body cut out of the op text being parsed, to be parsed op by
    /// op when the region is built (see `parse_chunk_op`).
    pending_body: Option<PendingBody>,
    /// Region bodies parsed op by op so far.
    streamed_bodies: usize,
    /// String literals emptied out of the resource section pest parses (see
    /// `parse_metadata`): the position of each one's opening quote in the
    /// text pest sees, and its contents in the section's source.
    literal_contents: std::cell::RefCell<Vec<(usize, std::ops::Range<usize>)>>,
    /// See [`ParseOptions::stream_body_bytes`].
    stream_body_bytes: usize,
    /// See [`ParseOptions::hand_reader`].
    hand_reader: bool,
    /// Operations the hand-written reader read so far.
    hand_read_ops: usize,
    /// What the hand-written reader shares by text (see `fast.rs`).
    interned: std::cell::RefCell<Interned<'c>>,
}

/// Attribute values and dictionary names by their text: IR repeats them,
/// and one shared copy of each keeps memory near upstream's (which uniques
/// every attribute).
#[derive(Default)]
pub(crate) struct Interned<'c> {
    attributes: FxHashMap<&'c str, Attribute>,
    names: FxHashMap<&'c str, Arc<str>>,
}

/// A gap in the text pest parses: from offset `at` on, the source lies
/// `skipped` bytes further (counting earlier gaps too).
#[derive(Clone, Copy, Debug)]
struct Cut {
    at: usize,
    skipped: usize,
}

/// Streamed region bodies are parsed in pieces of about this many bytes.
const GROUP_BYTES: usize = 64 << 10;

/// String literals longer than this are kept from pest in the resource
/// section (pest indexes the lines of all the text it is given).
const CUT_LITERAL_BYTES: usize = 4096;

/// Source offsets of a region body parsed op by op: `open` is its `{`,
/// `close` the matching `}`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingBody {
    open: usize,
    close: usize,
}

/// A generic operation read up to its regions: what the pest reader and
/// the hand-written one (`fast`) hand to [`Parser::finish_generic`].
pub(crate) struct GenericOp<'t> {
    name: OperationName,
    /// (name, result number, offset) of each operand.
    operand_uses: Vec<(&'t str, usize, usize)>,
    successors: Vec<BlockId>,
    properties: Option<Dictionary>,
    attributes: Dictionary,
    signature: Signature,
    /// Source offset of the function type.
    fn_off: usize,
    loc: Location,
}

/// The operand and result types of an operation as written.
pub(crate) enum Signature {
    /// The generic form's function type.
    Function(Type),
    /// Operand types and result types, as custom forms list them.
    Lists(Vec<Type>, Vec<Type>),
}

/// Where the regions of a generic operation come from.
pub(crate) enum RegionSource<'i> {
    /// As pest read them.
    Pairs(Vec<Pair<'i, Rule>>),
    /// The braces of each region body, to be read item by item.
    Bodies(SmallVec<[PendingBody; 1]>),
}

/// Where the text pest parses sits in the source: it starts at `start`,
/// less the `cuts` taken out of it (a region body parsed on its own, see
/// `parse_op_streaming`; long resource blobs, see `parse_metadata`).
#[derive(Clone, Debug)]
pub(crate) struct Base {
    start: usize,
    cuts: Option<std::rc::Rc<[Cut]>>,
}

/// Parses `text` (named `file` in locations and diagnostics) into `ctx`.
pub fn parse_source(ctx: &mut Context, file: &str, text: &str) -> Result<ParsedSource, Diagnostic> {
    parse_source_with(ctx, file, text, &ParseOptions::default())
}

/// [`parse_source`] with options.
pub fn parse_source_with(
    ctx: &mut Context,
    file: &str,
    text: &str,
    options: &ParseOptions,
) -> Result<ParsedSource, Diagnostic> {
    let mut p = Parser::new(ctx, file, text);
    p.stream_body_bytes = options.stream_body_bytes;
    p.hand_reader = options.hand_reader;
    // The parser recurses once per bracket level (pest's rules, then ours);
    // bound the depth and make sure the stack holds it, on whatever thread
    // we were called (2 MiB test threads, debug builds).
    let depth = chunks::nesting_depth(text.as_bytes()).map_err(|e| p.bracket_error(e))?;
    let stack = STACK_BASE + depth * STACK_PER_LEVEL;
    stacker::maybe_grow(stack, stack, || p.parse_file())
}

/// Stack the parser needs besides nesting (generous for debug builds).
const STACK_BASE: usize = 512 << 10;
/// Stack per bracket level: pest's rule closures plus our conversion; about
/// 8 KiB in debug builds, far less in release.
const STACK_PER_LEVEL: usize = 24 << 10;

impl<'c> Parser<'c> {
    fn new(ctx: &'c mut Context, file: &str, text: &'c str) -> Parser<'c> {
        let forward_ref_name = ctx.op_name("builtin.<<forward-reference>>");
        Parser {
            ctx,
            file: file.into(),
            text,
            lines: LineIndex::new(text),
            base: std::cell::RefCell::new(Base {
                start: 0,
                cuts: None,
            }),
            attr_aliases: FxHashMap::default(),
            type_aliases: FxHashMap::default(),
            loc_aliases: FxHashMap::default(),
            scopes: Vec::new(),
            default_dialects: Vec::new(),
            forward_ref_name,
            pending_loc_aliases: Vec::new(),
            op_name_cache: FxHashMap::default(),
            type_cache: Default::default(),
            pending_body: None,
            streamed_bodies: 0,
            literal_contents: Default::default(),
            stream_body_bytes: ParseOptions::default().stream_body_bytes,
            hand_reader: ParseOptions::default().hand_reader,
            hand_read_ops: 0,
            interned: Default::default(),
        }
    }

    /// Runs `f` with pair offsets counted from `base` (for text parsed on
    /// its own, e.g. a type matched by extent), restoring the old base.
    pub(crate) fn with_base<T>(&self, base: usize, f: impl FnOnce(&Self) -> T) -> T {
        let saved = self.base.replace(Base {
            start: base,
            cuts: None,
        });
        let out = f(self);
        self.base.replace(saved);
        out
    }

    /// Counts pair offsets from `start` in the source text.
    pub(crate) fn set_base(&self, start: usize) {
        self.base.replace(Base { start, cuts: None });
    }

    /// The source offset of an offset in the text pest is parsing.
    pub(crate) fn abs(&self, rel: usize) -> usize {
        let b = self.base.borrow();
        let skipped = b.cuts.as_deref().map_or(0, |cuts| {
            let k = cuts.partition_point(|c| c.at <= rel);
            if k == 0 {
                0
            } else {
                cuts[k - 1].skipped
            }
        });
        b.start + rel + skipped
    }

    /// The location of an absolute byte offset.
    pub(crate) fn loc_at(&self, offset: usize) -> Location {
        let (line, col) = self.lines.line_col(self.text, offset);
        Location::new(crate::location::LocKind::FileLineCol {
            file: self.file.clone(),
            line,
            col,
        })
    }

    /// The location of a pair's start.
    pub(crate) fn loc_of(&self, pair: &Pair<'_, Rule>) -> Location {
        self.loc_at(self.abs(pair.as_span().start()))
    }

    /// An error at a pair.
    pub(crate) fn err(&self, pair: &Pair<'_, Rule>, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.loc_of(pair), msg)
    }

    fn bracket_error(&self, e: chunks::BracketError) -> Diagnostic {
        let bytes = self.text.as_bytes();
        match e {
            chunks::BracketError::TooDeep(at) => Diagnostic::error(
                self.loc_at(at),
                format!(
                    "brackets nest deeper than {} levels; split the construct or \
                     name parts of it with aliases",
                    chunks::MAX_NESTING
                ),
            ),
            chunks::BracketError::Unopened(at) => Diagnostic::error(
                self.loc_at(at),
                format!(
                    "unexpected '{}': no bracket is open here",
                    bytes[at] as char
                ),
            ),
            chunks::BracketError::Mismatched { at, opener } => {
                let (line, col) = self.lines.line_col(self.text, opener);
                Diagnostic::error(
                    self.loc_at(at),
                    format!(
                        "unexpected '{}': the innermost open bracket is the '{}' at {line}:{col}, \
                         which '{}' closes",
                        bytes[at] as char,
                        bytes[opener] as char,
                        chunks::closer_of(bytes[opener]) as char
                    ),
                )
            }
        }
    }

    pub(crate) fn pest_error(&self, e: pest::error::Error<Rule>, what: &str) -> Diagnostic {
        let offset = match e.location {
            pest::error::InputLocation::Pos(p) => p,
            pest::error::InputLocation::Span((s, _)) => s,
        };
        let expected = match &e.variant {
            pest::error::ErrorVariant::ParsingError { positives, .. } => {
                describe_expected(positives)
            }
            pest::error::ErrorVariant::CustomError { message } => message.clone(),
        };
        let abs = self.abs(offset);
        let found = self.text[abs.min(self.text.len())..].chars().next();
        let found = match found {
            Some(c) if !c.is_whitespace() => {
                let tok: String = self.text[abs..]
                    .chars()
                    .take_while(|c| !c.is_whitespace())
                    .take(20)
                    .collect();
                format!("'{tok}'")
            }
            Some(_) | None => "end of line".to_string(),
        };
        let found = if abs >= self.text.len() {
            "end of file".to_string()
        } else {
            found
        };
        Diagnostic::error(
            self.loc_at(abs),
            format!("{what}: expected {expected}, found {found}"),
        )
    }

    fn parse_rule<'i>(
        &self,
        rule: Rule,
        input: &'i str,
        what: &str,
    ) -> Result<Pair<'i, Rule>, Diagnostic> {
        match MlirGrammar::parse(rule, input) {
            Ok(mut pairs) => Ok(pairs.next().expect("pest returns the top rule")),
            Err(e) => Err(self.pest_error(e, what)),
        }
    }

    /// Parses `text[start..end]` as `rule`, its locations counted from `start`.
    fn parse_rule_at(
        &self,
        rule: Rule,
        start: usize,
        end: usize,
        what: &str,
    ) -> Result<Pair<'c, Rule>, Diagnostic> {
        self.set_base(start);
        let text = self.text;
        self.parse_rule(rule, &text[start..end], what)
    }

    fn parse_file(&mut self) -> Result<ParsedSource, Diagnostic> {
        let text = self.text;
        // `nesting_depth` has already reported any closer that closes
        // nothing; this is the split's own guard.
        let items = chunks::split_top_level(text).map_err(|off| {
            Diagnostic::error(self.loc_at(off), "unbalanced closing bracket at top level")
        })?;
        // Aliases first (location aliases are printed after the IR).
        for item in items.iter().filter(|i| i.kind == ItemKind::Alias) {
            let pair = self.parse_rule_at(
                Rule::single_alias,
                item.start,
                item.end,
                "invalid alias definition",
            )?;
            self.define_alias(pair.into_inner().next().expect("alias_def"))?;
        }
        let mut external = Vec::new();
        for item in items.iter().filter(|i| i.kind == ItemKind::Metadata) {
            self.set_base(item.start);
            self.parse_metadata(&text[item.start..item.end], &mut external)?;
        }
        // Operations: a single `module` is the top level; bare ops get an implicit module.
        let ops: Vec<_> = items
            .iter()
            .filter(|i| i.kind == ItemKind::Operation)
            .collect();
        self.scopes.push(Scope::new(true));
        let module = if ops.len() == 1 && is_module_start(&text[ops[0].start..ops[0].end]) {
            self.parse_top_module(ops[0].start, ops[0].end)?
        } else {
            let mut parsed = Vec::with_capacity(ops.len());
            for item in &ops {
                parsed.push(if is_module_start(&text[item.start..item.end]) {
                    self.parse_top_module(item.start, item.end)?
                } else {
                    self.parse_chunk_op(item.start, item.end)?
                });
            }
            // A single module written in generic form is the top level too,
            // as upstream treats it (so `--mlir-print-op-generic` output round-trips).
            if parsed.len() == 1 && self.ctx.name_str(parsed[0]) == "builtin.module" {
                parsed[0]
            } else {
                let region = self.ctx.create_region();
                let block = self.ctx.create_block(&[]);
                self.ctx.append_block(region, block);
                for op in parsed {
                    self.ctx.append_op(block, op);
                }
                let name = self.ctx.op_name("builtin.module");
                // Upstream locates the implicit module at `file:0:0`.
                let loc = Location::new(crate::location::LocKind::FileLineCol {
                    file: self.file.clone(),
                    line: 0,
                    col: 0,
                });
                self.ctx
                    .create_op(OperationState::new(name, loc).region(region))
            }
        };
        self.finish_scope()?;
        self.resolve_pending_loc_aliases()?;
        Ok(ParsedSource {
            module,
            external_resources: external,
            streamed_bodies: self.streamed_bodies,
            hand_read_ops: self.hand_read_ops,
        })
    }

    /// Parses `module @name attributes {...} { body } loc(...)`, splitting the body.
    fn parse_top_module(&mut self, start: usize, end: usize) -> Result<OpId, Diagnostic> {
        let text = self.text;
        let src = &text[start..end];
        if !src.trim_start().starts_with("module") {
            return self.parse_chunk_op(start, end);
        }
        // Header: up to and including the `{` that opens the body.
        let Some(brace) = header_brace(src) else {
            return self.parse_chunk_op(start, end);
        };
        let header = self.parse_rule_at(
            Rule::module_header,
            start,
            start + brace + 1,
            "invalid module header",
        )?;
        let loc = self.loc_at(start);
        let mut sym_name = None;
        let mut attrs = Dictionary::new();
        for p in header.into_inner() {
            match p.as_rule() {
                Rule::symbol_name => sym_name = Some(self.symbol_name_text(&p)?),
                Rule::dict_attr => attrs = self.convert_dict(p)?,
                _ => {}
            }
        }
        let region = self.ctx.create_region();
        let block = self.ctx.create_block(&[]);
        self.ctx.append_block(region, block);
        self.scopes.push(Scope::new(true));
        self.default_dialects.push("builtin");
        let bytes = text.as_bytes();
        let mut i = chunks::skip_trivia(bytes, start + brace + 1);
        loop {
            if i >= end {
                return Err(Diagnostic::error(
                    self.loc_at(end),
                    "expected '}' to close the module body",
                ));
            }
            if bytes[i] == b'}' {
                break;
            }
            let (op_end, _) = chunks::scan_item_end(&bytes[..end], i);
            let op = self.parse_chunk_op(i, op_end)?;
            self.ctx.append_op(block, op);
            i = chunks::skip_trivia(bytes, op_end);
        }
        self.default_dialects.pop();
        self.finish_scope()?;
        // Trailer: `}` and an optional location.
        let trailer = self.parse_rule_at(Rule::module_trailer, i, end, "invalid module trailer")?;
        let mut state = OperationState::new(self.ctx.op_name("builtin.module"), loc).region(region);
        if let Some(n) = sym_name {
            state = state.attr("sym_name", Attribute::string(&n));
        }
        for (k, v) in attrs.iter() {
            state = state.attr(k, v.clone());
        }
        let op = self.ctx.create_op(state);
        if let Some(l) = trailer
            .into_inner()
            .find(|p| p.as_rule() == Rule::trailing_location)
        {
            let l = self.convert_trailing_location(l, op)?;
            self.ctx.set_loc(op, l);
        }
        Ok(op)
    }

    /// Parses one operation from `text[start..end]`.
    fn parse_chunk_op(&mut self, start: usize, end: usize) -> Result<OpId, Diagnostic> {
        if let Some(op) = self
            .hand_reader
            .then(|| self.read_fast_op(start, end))
            .flatten()
        {
            return self.build_fast_op(op);
        }
        let text = self.text;
        if end - start > self.stream_body_bytes {
            if let Some((open, close)) = chunks::region_body(text.as_bytes(), start, end) {
                if let Some(op) = self.parse_op_streaming(start, end, open, close)? {
                    return Ok(op);
                }
            }
        }
        let pair = self.parse_rule_at(Rule::single_operation, start, end, "invalid operation")?;
        let op_pair = pair.into_inner().next().expect("operation");
        self.build_operation(op_pair)
    }

    /// Parses the op in `start..end` with the body between `open` and
    /// `close` cut out; `build_region` parses the body op by op when it
    /// builds the region that starts at `open`. `None` if the op did not
    /// build that region (the brace was not a region): parse it whole.
    fn parse_op_streaming(
        &mut self,
        start: usize,
        end: usize,
        open: usize,
        close: usize,
    ) -> Result<Option<OpId>, Diagnostic> {
        let text = self.text;
        let mut cut = String::with_capacity(open + 2 - start + end - close);
        cut.push_str(&text[start..=open]);
        cut.push('\n');
        let at = cut.len();
        cut.push_str(&text[close..end]);
        self.base.replace(Base {
            start,
            cuts: Some(std::rc::Rc::new([Cut {
                at,
                skipped: close - start - at,
            }])),
        });
        let Ok(pair) = self.parse_rule(Rule::single_operation, &cut, "invalid operation") else {
            // Report errors on the whole text.
            return Ok(None);
        };
        // Only if pest read the brace as a region (not, say, a dictionary).
        let region_at = open - start;
        let is_region = pair
            .clone()
            .into_inner()
            .flatten()
            .any(|p| p.as_rule() == Rule::region && p.as_span().start() == region_at);
        if !is_region {
            return Ok(None);
        }
        self.pending_body = Some(PendingBody { open, close });
        let op = self.build_operation(pair.into_inner().next().expect("operation"))?;
        if self.pending_body.take().is_some() {
            return Err(Diagnostic::error(
                self.loc_at(open),
                "internal error: this region was not built from its body; \
                 please report it with the input",
            ));
        }
        Ok(Some(op))
    }

    /// Parses a region body item by item: large operations with their own
    /// body cut out (`parse_op_streaming`, recursively), everything else
    /// (ops, block labels, both on one line) as `region_items`.
    fn stream_body(
        &mut self,
        body: PendingBody,
        region: RegionId,
        named_entry_args: bool,
        saw_label: &mut bool,
        current: &mut Option<BlockId>,
    ) -> Result<(), Diagnostic> {
        let text = self.text;
        let bytes = &text.as_bytes()[..body.close];
        // Small items are parsed in groups of about GROUP_BYTES: one pest
        // call per op would cost more than the op.
        let mut group: Option<(usize, usize)> = None;
        let mut i = chunks::skip_trivia(bytes, body.open + 1);
        while i < body.close {
            let (item_end, _) = chunks::scan_item_end(bytes, i);
            if let Some(pieces) = self
                .hand_reader
                .then(|| self.read_fast_pieces(i, item_end))
                .flatten()
            {
                self.flush_group(group.take(), region, named_entry_args, saw_label, current)?;
                for piece in pieces {
                    match piece {
                        fast::FastPiece::Label(label) => {
                            let first = named_entry_args && !*saw_label;
                            let b = self.build_fast_label(label, region, first, *current)?;
                            *saw_label = true;
                            *current = Some(b);
                        }
                        fast::FastPiece::Op(op) => {
                            let op = self.build_fast_op(op)?;
                            let b = self.current_block(region, current);
                            self.ctx.append_op(b, op);
                        }
                    }
                }
                i = chunks::skip_trivia(bytes, item_end);
                continue;
            }
            let large = (bytes[i] != b'^' && item_end - i > self.stream_body_bytes)
                .then(|| chunks::region_body(bytes, i, item_end))
                .flatten();
            let streamed = match large {
                Some((open, close)) => {
                    self.flush_group(group.take(), region, named_entry_args, saw_label, current)?;
                    self.parse_op_streaming(i, item_end, open, close)?
                }
                None => None,
            };
            if let Some(op) = streamed {
                let b = self.current_block(region, current);
                self.ctx.append_op(b, op);
            } else {
                let (start, _) = group.unwrap_or((i, i));
                group = Some((start, item_end));
                if item_end - start >= GROUP_BYTES {
                    self.flush_group(group.take(), region, named_entry_args, saw_label, current)?;
                }
            }
            i = chunks::skip_trivia(bytes, item_end);
        }
        self.flush_group(group, region, named_entry_args, saw_label, current)
    }

    /// The block ops of `region` are appended to: `current`, or a new
    /// entry block.
    fn current_block(&mut self, region: RegionId, current: &mut Option<BlockId>) -> BlockId {
        match *current {
            Some(b) => b,
            None => {
                let b = self.ctx.create_block(&[]);
                self.ctx.append_block(region, b);
                *current = Some(b);
                b
            }
        }
    }

    /// Parses a group of body items (`start..end`) as `region_items`.
    fn flush_group(
        &mut self,
        group: Option<(usize, usize)>,
        region: RegionId,
        named_entry_args: bool,
        saw_label: &mut bool,
        current: &mut Option<BlockId>,
    ) -> Result<(), Diagnostic> {
        let Some((start, end)) = group else {
            return Ok(());
        };
        let pair = self.parse_rule_at(Rule::region_items, start, end, "invalid operation")?;
        self.build_region_items(
            pair.into_inner(),
            region,
            named_entry_args,
            saw_label,
            current,
        )
    }

    fn define_alias(&mut self, pair: Pair<'_, Rule>) -> Result<(), Diagnostic> {
        let mut inner = pair.into_inner();
        let name_pair = inner.next().expect("alias name");
        let value = inner
            .next()
            .expect("alias value")
            .into_inner()
            .next()
            .expect("alias value");
        let name = name_pair.as_str()[1..].to_string();
        match name_pair.as_rule() {
            Rule::type_alias_name => {
                if value.as_rule() == Rule::location {
                    return Err(self.err(&value, "type alias must name a type"));
                }
                let attr = self.convert_attribute(value.clone())?;
                let Some(t) = attr.as_type().cloned() else {
                    return Err(self.err(&value, "type alias must name a type"));
                };
                if self.type_aliases.insert(name.clone(), t).is_some() {
                    return Err(
                        self.err(&name_pair, format!("redefinition of type alias '!{name}'"))
                    );
                }
            }
            _ => {
                if value.as_rule() == Rule::location {
                    let l = self.convert_location(value.into_inner().next().expect("loc body"))?;
                    self.loc_aliases.insert(name, l);
                } else {
                    let a = self.convert_attribute(value)?;
                    if let crate::attributes::AttrKind::Location(l) = a.kind() {
                        self.loc_aliases.insert(name.clone(), l.clone());
                    }
                    if self.attr_aliases.insert(name.clone(), a).is_some() {
                        return Err(self.err(
                            &name_pair,
                            format!("redefinition of attribute alias '#{name}'"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn parse_metadata(
        &mut self,
        src: &str,
        external: &mut Vec<(String, String, Attribute)>,
    ) -> Result<(), Diagnostic> {
        // Blobs are gigabytes of hex: pest sees them as `""` and we read
        // their contents from the source.
        let long = chunks::long_strings(src.as_bytes(), CUT_LITERAL_BYTES);
        if long.is_empty() {
            return self.parse_metadata_text(src, src, external);
        }
        let mut reduced = String::new();
        let mut cuts = Vec::new();
        let mut contents = Vec::new();
        let mut copied = 0;
        for (open, close) in long {
            reduced.push_str(&src[copied..=open]);
            let quote = reduced.len() - 1;
            copied = close;
            let skipped = cuts.last().map_or(0, |c: &Cut| c.skipped);
            cuts.push(Cut {
                at: quote + 1,
                skipped: skipped + (close - open - 1),
            });
            contents.push((quote, open + 1..close));
        }
        reduced.push_str(&src[copied..]);
        let start = self.base.borrow().start;
        *self.literal_contents.borrow_mut() = contents;
        self.base.replace(Base {
            start,
            cuts: Some(cuts.into()),
        });
        let result = self.parse_metadata_text(src, &reduced, external);
        self.literal_contents.borrow_mut().clear();
        self.set_base(start);
        result
    }

    /// The contents of a string literal of the resource section, quotes
    /// included, whether pest saw it whole or emptied.
    fn resource_literal<'s>(
        &self,
        src: &'s str,
        lit: &Pair<'_, Rule>,
    ) -> std::borrow::Cow<'s, str> {
        let quote = lit.as_span().start();
        let contents = self.literal_contents.borrow();
        match contents.binary_search_by_key(&quote, |c| c.0) {
            Ok(k) => src[contents[k].1.start - 1..contents[k].1.end + 1].into(),
            Err(_) => {
                let from = self.abs(quote) - self.base.borrow().start;
                src[from..from + lit.as_str().len()].into()
            }
        }
    }

    fn parse_metadata_text(
        &mut self,
        src: &str,
        reduced: &str,
        external: &mut Vec<(String, String, Attribute)>,
    ) -> Result<(), Diagnostic> {
        let pair = self.parse_rule(Rule::resource_section, reduced, "invalid file metadata")?;
        for group in pair
            .into_inner()
            .filter(|p| p.as_rule() == Rule::resource_group)
        {
            let mut g = group.into_inner();
            let group_name = g.next().expect("group name");
            let is_dialect = group_name.as_str() == "dialect_resources";
            if !is_dialect && group_name.as_str() != "external_resources" {
                return Err(self.err(
                    &group_name,
                    format!("unknown file metadata section '{}'", group_name.as_str()),
                ));
            }
            for dialect in g {
                let mut d = dialect.into_inner();
                let dname = d.next().expect("dialect name");
                for entry in d {
                    let mut e = entry.into_inner();
                    let key_pair = e.next().expect("key");
                    let key = self.keyword_or_string(&key_pair)?;
                    let value = e.next().expect("value");
                    if is_dialect {
                        if dname.as_str() != "builtin" {
                            if self.ctx.allow_unregistered
                                || self.ctx.registry().has_dialect(dname.as_str())
                            {
                                continue;
                            }
                            return Err(self.err(
                                &dname,
                                format!(
                                    "unknown dialect '{}' in dialect_resources",
                                    dname.as_str()
                                ),
                            ));
                        }
                        if value.as_rule() != Rule::string_lit {
                            return Err(
                                self.err(&value, "expected a hex string for a resource blob")
                            );
                        }
                        // Hex needs no unescaping (and is too big to copy).
                        let lit = self.resource_literal(src, &value);
                        let lit = lit.as_ref();
                        let hex: std::borrow::Cow<'_, str> = if lit.contains('\\') {
                            attrs::unescape(lit)
                                .map_err(|m| self.err(&value, m))?
                                .into()
                        } else {
                            lit[1..lit.len() - 1].into()
                        };
                        // Bytes, not text: a mutated blob may hold non-ASCII.
                        let digits = attrs::hex_digits(&hex)
                            .map_err(|m| self.err(&value, m))?
                            .as_bytes();
                        if digits.len() < 8 {
                            return Err(self.err(
                                &value,
                                "resource blob is missing its 4-byte alignment prefix",
                            ));
                        }
                        let prefix = attrs::decode_hex_digits(&digits[..8])
                            .map_err(|m| self.err(&value, m))?;
                        let data = attrs::decode_hex_shared(&digits[8..])
                            .map_err(|m| self.err(&value, m))?;
                        let alignment = u32::from_le_bytes(prefix[..].try_into().expect("4 bytes"));
                        if alignment == 0 || !alignment.is_power_of_two() {
                            return Err(self.err(
                                &value,
                                format!("resource alignment {alignment} is not a power of two"),
                            ));
                        }
                        let resource = self.ctx.resources().get_or_create(&key);
                        resource
                            .set_blob(ResourceBlob { alignment, data })
                            .map_err(|m| self.err(&key_pair, m))?;
                    } else {
                        let attr = match value.as_rule() {
                            Rule::string_lit => Attribute::string(
                                &attrs::unescape(&self.resource_literal(src, &value))
                                    .map_err(|m| self.err(&value, m))?,
                            ),
                            Rule::bool_attr => Attribute::bool(value.as_str() == "true"),
                            Rule::number => Attribute::i64(self.convert_number_int(&value)? as i64),
                            _ => self.convert_attribute_inner(value)?,
                        };
                        external.push((dname.as_str().to_string(), key, attr));
                    }
                }
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ scopes

    pub(crate) fn push_scope(&mut self, isolated: bool) {
        self.scopes.push(Scope::new(isolated));
    }

    /// Pops a scope, reporting unresolved forward references.
    pub(crate) fn finish_scope(&mut self) -> Result<(), Diagnostic> {
        let scope = self.scopes.pop().expect("scope stack underflow");
        if let Some((name, (_, off))) = scope.forward.iter().min_by_key(|(_, (_, off))| *off) {
            return Err(Diagnostic::error(
                self.loc_at(*off),
                format!("use of undeclared SSA value name '{name}'"),
            ));
        }
        if let Some((name, (_, _, off))) = scope
            .blocks
            .iter()
            .filter(|(_, (_, defined, _))| !defined)
            .min_by_key(|(_, (_, _, off))| *off)
        {
            return Err(Diagnostic::error(
                self.loc_at(*off),
                format!("reference to an undefined block '{name}'"),
            ));
        }
        Ok(())
    }

    /// `v`, if a use of `name` at `offset` that expects `ty` agrees with its type.
    fn check_use_type(
        &self,
        v: Value,
        name: &str,
        ty: &Type,
        offset: usize,
    ) -> Result<Value, Diagnostic> {
        let vt = self.ctx.value_type(v);
        if vt != ty {
            return Err(Diagnostic::error(
                self.loc_at(offset),
                format!("use of value '{name}' expects different type than prior uses: '{ty}' vs '{vt}'"),
            ));
        }
        Ok(v)
    }

    /// Looks up a value use, creating a forward reference of type `ty` if unknown.
    pub(crate) fn resolve_value(
        &mut self,
        name: &str,
        index: usize,
        ty: &Type,
        offset: usize,
    ) -> Result<Value, Diagnostic> {
        for scope in self.scopes.iter().rev() {
            if let Some(vals) = scope.values.get(name) {
                let Some(&v) = vals.get(index) else {
                    return Err(Diagnostic::error(
                        self.loc_at(offset),
                        format!(
                            "'{name}#{index}' is out of range: '{name}' has {} results",
                            vals.len()
                        ),
                    ));
                };
                return self.check_use_type(v, name, ty, offset);
            }
            if let Some((op, _)) = scope.forward.get(name) {
                let v = self.ctx.result(*op, 0);
                if index != 0 {
                    return Err(Diagnostic::error(
                        self.loc_at(offset),
                        "result-number forward references are not supported",
                    ));
                }
                return self.check_use_type(v, name, ty, offset);
            }
            if scope.isolated {
                break;
            }
        }
        // Forward reference in the innermost scope.
        let state = OperationState::new(self.forward_ref_name.clone(), Location::unknown())
            .results(std::slice::from_ref(ty));
        let op = self.ctx.create_op(state);
        let scope = self.scopes.last_mut().expect("a scope is open");
        scope.forward.insert(name.into(), (op, offset));
        Ok(self.ctx.result(op, 0))
    }

    /// Defines SSA names for `values` (a result group or one block argument).
    pub(crate) fn define_values(
        &mut self,
        name: &str,
        values: SmallVec<[Value; 1]>,
        offset: usize,
    ) -> Result<(), Diagnostic> {
        let scope = self.scopes.last_mut().expect("a scope is open");
        if scope.values.contains_key(name) {
            return Err(Diagnostic::error(
                self.loc_at(offset),
                format!("redefinition of SSA value '{name}'"),
            ));
        }
        if let Some((placeholder, _)) = scope.forward.remove(name) {
            let pv = self.ctx.result(placeholder, 0);
            let new = values[0];
            if self.ctx.value_type(pv) != self.ctx.value_type(new) {
                let (a, b) = (
                    self.ctx.value_type(pv).clone(),
                    self.ctx.value_type(new).clone(),
                );
                return Err(Diagnostic::error(
                    self.loc_at(offset),
                    format!("definition of SSA value '{name}' has type '{b}' but it was used with type '{a}'"),
                ));
            }
            self.ctx.replace_all_uses(pv, new);
            self.ctx.erase_op(placeholder);
        }
        let scope = self.scopes.last_mut().expect("a scope is open");
        scope.values.insert(name.into(), values);
        Ok(())
    }

    /// The block named `name` in the current region, created on first reference.
    pub(crate) fn block_ref(&mut self, name: &str, offset: usize) -> BlockId {
        if let Some((b, _, _)) = self.scopes.last().expect("scope").blocks.get(name) {
            return *b;
        }
        let b = self.ctx.create_block(&[]);
        self.scopes
            .last_mut()
            .expect("scope")
            .blocks
            .insert(name.into(), (b, false, offset));
        b
    }

    // ------------------------------------------------------------ operations

    /// Builds an operation from an `operation` pair (detached).
    pub(crate) fn build_operation(&mut self, pair: Pair<'_, Rule>) -> Result<OpId, Diagnostic> {
        let mut results: Vec<(&str, usize, usize)> = Vec::new();
        let mut op = None;
        let mut trailing = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::op_result_list => {
                    for r in p.into_inner() {
                        let off = self.abs(r.as_span().start());
                        let (name, count) = match r.as_str().split_once(':') {
                            Some((n, c)) => (
                                n,
                                c.parse::<usize>().map_err(|_| {
                                    Diagnostic::error(self.loc_at(off), "invalid result count")
                                })?,
                            ),
                            None => (r.as_str(), 1),
                        };
                        if count == 0 {
                            return Err(Diagnostic::error(
                                self.loc_at(off),
                                "expected a non-zero result count",
                            ));
                        }
                        results.push((name, count, off));
                    }
                }
                // As upstream, an op is located at its name (after `%r = `).
                Rule::generic_operation => {
                    let op_loc = self.loc_of(&p);
                    op = Some(self.build_generic(p, op_loc)?)
                }
                Rule::custom_operation => {
                    let op_loc = self.loc_of(&p);
                    let expected: usize = results.iter().map(|r| r.1).sum();
                    op = Some(self.build_custom(p, op_loc, expected)?)
                }
                Rule::trailing_location => trailing = Some(p),
                _ => unreachable!("unexpected rule in operation"),
            }
        }
        let op = op.expect("an operation body");
        if let Some(t) = trailing {
            let l = self.convert_trailing_location(t, op)?;
            self.ctx.set_loc(op, l);
        }
        self.bind_results(op, &results)?;
        Ok(op)
    }

    /// Names the results of `op`: `results` are (name, count, offset) of
    /// each `%name` or `%name:count` written before `=`.
    pub(crate) fn bind_results(
        &mut self,
        op: OpId,
        results: &[(&str, usize, usize)],
    ) -> Result<(), Diagnostic> {
        let total: usize = results.iter().map(|r| r.1).sum();
        let nres = self.ctx.results(op).len();
        // As upstream, results need not be bound at all (`"a.b"() : () -> i32`).
        if let Some(&(_, _, off)) = results.first() {
            if total != nres {
                return Err(Diagnostic::error(
                    self.loc_at(off),
                    format!("operation defines {nres} results but was provided {total} to bind"),
                ));
            }
        }
        let mut next = 0;
        for &(name, count, off) in results {
            let vals = SmallVec::from_slice(&self.ctx.results(op)[next..next + count]);
            next += count;
            self.define_values(name, vals, off)?;
        }
        Ok(())
    }

    fn build_generic(&mut self, pair: Pair<'_, Rule>, loc: Location) -> Result<OpId, Diagnostic> {
        let mut inner = pair.into_inner();
        let name_pair = inner.next().expect("op name");
        let name_off = self.abs(name_pair.as_span().start());
        let name = self.generic_op_name(name_pair.as_str(), name_off)?;
        let mut operand_uses = Vec::new();
        let mut successors = Vec::new();
        let mut properties = None;
        let mut region_pairs = Vec::new();
        let mut attributes = Dictionary::new();
        let mut fn_type = None;
        for p in inner {
            match p.as_rule() {
                Rule::value_use_list => {
                    for u in p.into_inner() {
                        operand_uses.push(self.value_use_parts(&u)?);
                    }
                }
                Rule::successor_list => {
                    for s in p.into_inner() {
                        let off = self.abs(s.as_span().start());
                        successors.push(self.block_ref(s.as_str(), off));
                    }
                }
                Rule::properties => {
                    let d = p.into_inner().next().expect("dict");
                    properties = Some(self.convert_dict(d)?);
                }
                Rule::region_list => region_pairs.extend(p.into_inner()),
                Rule::dict_attr => attributes = self.convert_dict(p)?,
                Rule::function_type | Rule::function_type_text => {
                    let off = self.abs(p.as_span().start());
                    fn_type = Some((self.convert_function_type(p)?, off))
                }
                _ => unreachable!("unexpected rule in generic operation"),
            }
        }
        let (fn_type, fn_off) = fn_type.expect("generic op has a function type");
        let op = GenericOp {
            name,
            operand_uses,
            successors,
            properties,
            attributes,
            signature: Signature::Function(fn_type),
            fn_off,
            loc,
        };
        self.finish_generic(op, RegionSource::Pairs(region_pairs))
    }

    /// The operation name a generic form spells as the string literal
    /// `literal` (at source offset `off`), checked against the registry.
    pub(crate) fn generic_op_name(
        &mut self,
        literal: &str,
        off: usize,
    ) -> Result<OperationName, Diagnostic> {
        // Op names repeat: resolve each spelling once.
        if let Some(n) = self.op_name_cache.get(literal) {
            return Ok(n.clone());
        }
        let name_text =
            attrs::unescape(literal).map_err(|m| Diagnostic::error(self.loc_at(off), m))?;
        let n = self.op_name_checked(&name_text, off)?;
        self.op_name_cache.insert(literal.to_string(), n.clone());
        Ok(n)
    }

    /// Builds a generic operation from its parts and its regions (the
    /// hand-written reader's custom forms end here too: they differ from
    /// the generic form only in spelling).
    pub(crate) fn finish_generic(
        &mut self,
        op: GenericOp<'_>,
        region_source: RegionSource<'_>,
    ) -> Result<OpId, Diagnostic> {
        let GenericOp {
            name,
            operand_uses,
            successors,
            mut properties,
            mut attributes,
            signature,
            fn_off,
            loc,
        } = op;
        let (inputs, result_types) = match &signature {
            Signature::Function(t) => t.function_signature().expect("function type"),
            Signature::Lists(inputs, results) => (&inputs[..], &results[..]),
        };
        if inputs.len() != operand_uses.len() {
            return Err(Diagnostic::error(
                self.loc_at(fn_off),
                format!(
                    "expected {} operand types but had {}",
                    operand_uses.len(),
                    inputs.len()
                ),
            ));
        }
        let mut operands = Vec::with_capacity(operand_uses.len());
        for ((n, idx, off), ty) in operand_uses.iter().zip(inputs) {
            operands.push(self.resolve_value(n, *idx, ty, *off)?);
        }
        let result_types = match signature {
            Signature::Lists(_, results) => results,
            Signature::Function(_) => result_types.to_vec(),
        };
        // Registered ops keep inherent attributes in properties, as upstream does.
        if name.is_registered() && properties.is_none() {
            let inherent = attributes.split_off_where(|k| name.is_inherent_attr(k));
            if !inherent.is_empty() {
                properties = Some(inherent);
            }
        }
        let isolated = name.has_trait(Traits::ISOLATED_FROM_ABOVE);
        let mut regions = Vec::new();
        let default_dialect = name.def().and_then(|d| d.default_dialect);
        if let Some(d) = default_dialect {
            self.default_dialects.push(d);
        }
        match region_source {
            RegionSource::Pairs(pairs) => {
                for r in pairs {
                    regions.push(self.build_region(r, isolated, &[])?);
                }
            }
            RegionSource::Bodies(bodies) => {
                for body in bodies {
                    regions.push(self.build_region_body(body, isolated)?);
                }
            }
        }
        if default_dialect.is_some() {
            self.default_dialects.pop();
        }
        let state = OperationState {
            name,
            operands,
            result_types,
            properties,
            attributes,
            regions,
            successors,
            loc,
        };
        Ok(self.ctx.create_op(state))
    }

    fn build_custom(
        &mut self,
        pair: Pair<'_, Rule>,
        loc: Location,
        num_results: usize,
    ) -> Result<OpId, Diagnostic> {
        let mut inner = pair.into_inner();
        let name_pair = inner.next().expect("custom op name");
        let written = name_pair.as_str();
        let name = self.resolve_custom_name(written).ok_or_else(|| {
            self.err(&name_pair, format!("custom op '{written}' is unknown (did you mean the generic form \"{written}\"(...)?)"))
        })?;
        let def = name.def().expect("resolved custom names are registered");
        let Some(parse) = def.parse else {
            return Err(self.err(
                &name_pair,
                format!(
                    "operation '{}' has no custom assembly format; use the generic form",
                    name.as_str()
                ),
            ));
        };
        let default_dialect = def.default_dialect;
        let elems: Vec<Pair<'_, Rule>> = inner
            .map(|e| e.into_inner().next().expect("custom element"))
            .collect();
        let end_offset = self.abs(name_pair.as_span().end());
        let mut state = OperationState::new(name.clone(), loc);
        if let Some(d) = default_dialect {
            self.default_dialects.push(d);
        }
        let result = {
            let mut cp = CustomParser::new(self, elems, end_offset, num_results);
            parse(&mut cp, &mut state).and_then(|_| cp.expect_end())
        };
        if default_dialect.is_some() {
            self.default_dialects.pop();
        }
        result?;
        Ok(self.ctx.create_op(state))
    }

    /// Resolves a custom-form op name: as written, then under the enclosing
    /// default dialect, then under `builtin`.
    pub(crate) fn resolve_custom_name(&self, written: &str) -> Option<OperationName> {
        let reg = self.ctx.registry();
        if reg.op_def(written).is_some() {
            return Some(reg.op_name(written));
        }
        for d in self
            .default_dialects
            .iter()
            .rev()
            .take(1)
            .chain(std::iter::once(&"builtin"))
        {
            let full = format!("{d}.{written}");
            if reg.op_def(&full).is_some() {
                return Some(reg.op_name(&full));
            }
        }
        None
    }

    fn op_name_checked(&self, name: &str, off: usize) -> Result<OperationName, Diagnostic> {
        let err = |msg: String| Diagnostic::error(self.loc_at(off), msg);
        let n = self.ctx.op_name(name);
        if n.is_registered() {
            return Ok(n);
        }
        if !name.contains('.') {
            return Err(err(format!(
                "operation name '{name}' must be of the form 'dialect.op'"
            )));
        }
        let dialect = n.dialect();
        if let Some(d) = self.ctx.registry().dialect(dialect) {
            if d.allow_unknown_operations {
                return Ok(n);
            }
            return Err(err(format!("unregistered operation '{name}' found in dialect ('{dialect}') that does not allow unknown operations")));
        }
        if !self.ctx.allow_unregistered {
            return Err(err(format!("operation '{name}' of unregistered dialect '{dialect}' (use --allow-unregistered-dialect to accept it)")));
        }
        Ok(n)
    }

    pub(crate) fn value_use_parts<'i>(
        &self,
        u: &Pair<'i, Rule>,
    ) -> Result<(&'i str, usize, usize), Diagnostic> {
        let off = self.abs(u.as_span().start());
        let text = u.as_str();
        let (name, idx) = match text.split_once('#') {
            Some((n, i)) => (
                n,
                i.parse::<usize>()
                    .map_err(|_| self.err(u, "invalid result number"))?,
            ),
            None => (text, 0),
        };
        Ok((name, idx, off))
    }

    /// Builds a region from a `region` pair. `entry_args` are (name, type,
    /// location, offset) of entry-block arguments defined by a custom form.
    pub(crate) fn build_region(
        &mut self,
        pair: Pair<'_, Rule>,
        isolated: bool,
        entry_args: &[(String, Type, Option<Location>, usize)],
    ) -> Result<RegionId, Diagnostic> {
        let region = self.ctx.create_region();
        self.push_scope(isolated);
        let mut current: Option<BlockId> = None;
        if !entry_args.is_empty() {
            let b = self.ctx.create_block(&[]);
            self.ctx.append_block(region, b);
            for (name, ty, loc, off) in entry_args {
                // As upstream, an argument without `loc(...)` is located
                // where it is written.
                let loc = loc.clone().unwrap_or_else(|| self.loc_at(*off));
                let v = self.ctx.add_block_argument(b, ty.clone(), Some(loc));
                self.define_values(name, smallvec::smallvec![v], *off)?;
            }
            current = Some(b);
        }
        let mut saw_label = false;
        let streamed = self
            .pending_body
            .filter(|b| b.open == self.abs(pair.as_span().start()));
        if let Some(body) = streamed {
            // The body was cut out of the text pest saw: parse it op by op.
            self.pending_body = None;
            self.streamed_bodies += 1;
            tracing::debug!(
                bytes = body.close - body.open,
                "parsing a region body op by op"
            );
            let saved = self.base.borrow().clone();
            self.stream_body(
                body,
                region,
                !entry_args.is_empty(),
                &mut saw_label,
                &mut current,
            )?;
            self.base.replace(saved);
        }
        self.build_region_items(
            pair.into_inner(),
            region,
            !entry_args.is_empty(),
            &mut saw_label,
            &mut current,
        )?;
        self.finish_scope()?;
        Ok(region)
    }

    /// Builds the operations and blocks of a region body (`operation*
    /// block*` pairs) into `region`, appending to `current`.
    fn build_region_items<'i>(
        &mut self,
        items: impl Iterator<Item = Pair<'i, Rule>>,
        region: RegionId,
        named_entry_args: bool,
        saw_label: &mut bool,
        current: &mut Option<BlockId>,
    ) -> Result<(), Diagnostic> {
        for p in items {
            match p.as_rule() {
                Rule::operation => {
                    let b = self.current_block(region, current);
                    let op = self.build_operation(p)?;
                    self.ctx.append_op(b, op);
                }
                Rule::block => {
                    let mut it = p.into_inner();
                    let label = it.next().expect("block label");
                    let b =
                        self.begin_block(label, region, named_entry_args && !*saw_label, *current)?;
                    *saw_label = true;
                    *current = Some(b);
                    for op_pair in it {
                        let op = self.build_operation(op_pair)?;
                        self.ctx.append_op(b, op);
                    }
                }
                Rule::EOI => {}
                _ => unreachable!("unexpected rule in region"),
            }
        }
        Ok(())
    }

    /// Starts the block a `^name(args):` label defines, appending it to
    /// `region`. `first_after_entry_args`: the region has named entry
    /// arguments and this is its first label.
    fn begin_block(
        &mut self,
        label: Pair<'_, Rule>,
        region: RegionId,
        first_after_entry_args: bool,
        current: Option<BlockId>,
    ) -> Result<BlockId, Diagnostic> {
        let mut lit = label.into_inner();
        let name_pair = lit.next().expect("caret id");
        let off = self.abs(name_pair.as_span().start());
        let b = self.start_block(
            name_pair.as_str(),
            off,
            region,
            first_after_entry_args,
            current,
        )?;
        if let Some(args) = lit.next() {
            for a in args.into_inner() {
                let aoff = self.abs(a.as_span().start());
                let mut ai = a.into_inner();
                let vname = ai.next().expect("value id").as_str();
                let ty = self.convert_type(ai.next().expect("type"))?;
                let loc = match ai.next() {
                    Some(l) => Some(
                        self.convert_location(
                            l.into_inner()
                                .next()
                                .expect("loc")
                                .into_inner()
                                .next()
                                .expect("body"),
                        )?,
                    ),
                    None => None,
                };
                self.add_block_argument(b, vname, aoff, ty, loc)?;
            }
        }
        Ok(b)
    }

    /// The checks and bookkeeping of a block label `^name` at `off` (see
    /// [`Parser::begin_block`]), shared with the hand-written reader.
    pub(crate) fn start_block(
        &mut self,
        name: &str,
        off: usize,
        region: RegionId,
        first_after_entry_args: bool,
        current: Option<BlockId>,
    ) -> Result<BlockId, Diagnostic> {
        let err = |me: &Self, msg: String| Diagnostic::error(me.loc_at(off), msg);
        if first_after_entry_args
            && current.is_some()
            && self.ctx.block_is_empty(current.expect("block"))
        {
            return Err(err(
                self,
                "invalid block name in region with named arguments".into(),
            ));
        }
        let b = self.block_ref(name, off);
        {
            let scope = self.scopes.last_mut().expect("scope");
            let entry = scope.blocks.get_mut(name).expect("just referenced");
            if entry.1 {
                return Err(err(self, format!("redefinition of block '{name}'")));
            }
            entry.1 = true;
        }
        if self.ctx.block_parent(b).is_some() {
            return Err(err(self, "block defined in another region".into()));
        }
        self.ctx.append_block(region, b);
        Ok(b)
    }

    /// Adds the argument `%name: ty` written at `off` to block `b`; as
    /// upstream, an argument without `loc(...)` is located where it is
    /// written.
    pub(crate) fn add_block_argument(
        &mut self,
        b: BlockId,
        name: &str,
        off: usize,
        ty: Type,
        loc: Option<Location>,
    ) -> Result<(), Diagnostic> {
        let loc = loc.unwrap_or_else(|| self.loc_at(off));
        let v = self.ctx.add_block_argument(b, ty, Some(loc));
        self.define_values(name, smallvec::smallvec![v], off)
    }

    fn convert_trailing_location(
        &mut self,
        pair: Pair<'_, Rule>,
        op: OpId,
    ) -> Result<Location, Diagnostic> {
        let body = attrs::loc_body(pair);
        let inner = body.clone().into_inner().next().expect("loc body kind");
        if inner.as_rule() == Rule::loc_alias {
            let name = inner.as_str()[1..].to_string();
            if let Some(l) = self.loc_aliases.get(&name) {
                return Ok(l.clone());
            }
            self.pending_loc_aliases.push((op, name));
            return Ok(self.ctx.loc(op).clone());
        }
        self.convert_location(body)
    }

    fn resolve_pending_loc_aliases(&mut self) -> Result<(), Diagnostic> {
        for (op, name) in std::mem::take(&mut self.pending_loc_aliases) {
            match self.loc_aliases.get(&name) {
                Some(l) => self.ctx.set_loc(op, l.clone()),
                None => {
                    let at = self.ctx.loc(op).clone();
                    return Err(Diagnostic::error(
                        at,
                        format!("undefined location alias '#{name}'"),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Scope {
    fn new(isolated: bool) -> Scope {
        Scope {
            values: FxHashMap::default(),
            forward: FxHashMap::default(),
            blocks: FxHashMap::default(),
            isolated,
        }
    }
}

fn is_module_start(src: &str) -> bool {
    let s = src.trim_start();
    s.starts_with("module")
        && s[6..].starts_with(|c: char| c.is_whitespace() || c == '{' || c == '@')
}

/// The offset of the `"` that closes the string literal opening at `open`
/// (escaped characters skipped), or past the end of `bytes` when it is
/// unterminated: how the scans that only need to step over strings do it.
pub(crate) fn closing_quote(bytes: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while i < bytes.len() && bytes[i] != b'"' {
        if bytes[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    i
}

/// Offset of the `{` opening a custom-form module's body (outside strings and nested braces).
fn header_brace(src: &str) -> Option<usize> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut depth = 0i32;
    let mut saw_attributes = false;
    while i < b.len() {
        match b[i] {
            b'"' => i = closing_quote(b, i),
            b'{' => {
                if depth == 0 {
                    let before = src[..i].trim_end();
                    if before.ends_with("attributes") && !saw_attributes {
                        saw_attributes = true;
                        depth += 1;
                    } else {
                        return Some(i);
                    }
                } else {
                    depth += 1;
                }
            }
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

fn describe_expected(rules: &[Rule]) -> String {
    let mut names: Vec<&str> = rules.iter().map(|r| rule_description(*r)).collect();
    names.sort_unstable();
    names.dedup();
    match names.len() {
        0 => "something else".to_string(),
        1 => names[0].to_string(),
        _ => {
            let last = names.pop().expect("non-empty");
            format!("{} or {}", names.join(", "), last)
        }
    }
}

fn rule_description(r: Rule) -> &'static str {
    match r {
        Rule::operation
        | Rule::generic_operation
        | Rule::custom_operation
        | Rule::custom_op_name => "an operation",
        Rule::any_type
        | Rule::non_function_type
        | Rule::function_type
        | Rule::function_type_text
        | Rule::shaped_type_text => "a type",
        Rule::attribute | Rule::custom_attr => "an attribute",
        Rule::value_use | Rule::value_id | Rule::value_use_list => "an SSA value",
        Rule::op_result_list | Rule::op_result => "an SSA result",
        Rule::dict_attr | Rule::named_attr => "an attribute dictionary",
        Rule::region | Rule::region_list => "a region",
        Rule::block | Rule::block_label => "a block",
        Rule::caret_id => "a block label",
        Rule::string_lit => "a string",
        Rule::bare_id | Rule::keyword => "an identifier",
        Rule::number | Rule::dec_int => "a number",
        Rule::trailing_location | Rule::location => "a location",
        Rule::EOI => "end of input",
        Rule::properties => "properties",
        Rule::successor_list => "successors",
        Rule::dims => "a dimension list",
        Rule::alias_def => "an alias definition",
        _ => "valid syntax",
    }
}
