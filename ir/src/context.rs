//! The IR context: arenas of operations, blocks, regions and values, plus
//! the dialect registry and resource table they refer to.
//!
//! All structural mutation goes through `Context` methods so that use-lists,
//! parent links and block order stay consistent.

use std::sync::Arc;

use smallvec::SmallVec;
use thin_vec::ThinVec;

use crate::attributes::{Attribute, Dictionary, ResourceTable};
use crate::dialect::{DialectRegistry, OperationName};
use crate::entity::Arena;
use crate::location::Location;
use crate::types::Type;

crate::entity_key!(
    /// An operation.
    OpId,
    "op"
);
crate::entity_key!(
    /// A block.
    BlockId,
    "bb"
);
crate::entity_key!(
    /// A region.
    RegionId,
    "region"
);
crate::entity_key!(
    /// An SSA value: an operation result or a block argument.
    Value,
    "%v"
);

/// Where a value is defined.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ValueDef {
    /// Result `index` of `op`.
    Result { op: OpId, index: u32 },
    /// Argument `index` of `block`.
    BlockArg { block: BlockId, index: u32 },
}

/// One use of a value: operand `index` of `op`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Use {
    /// The using operation.
    pub op: OpId,
    /// The operand position.
    pub index: u32,
}

pub(crate) struct ValueData {
    pub(crate) ty: Type,
    pub(crate) def: ValueDef,
    pub(crate) uses: SmallVec<[Use; 2]>,
    /// Block arguments carry their own location.
    pub(crate) loc: Option<Location>,
}

pub(crate) struct OperationData {
    pub(crate) name: OperationName,
    pub(crate) operands: ThinVec<Value>,
    pub(crate) results: ThinVec<Value>,
    pub(crate) properties: Option<Dictionary>,
    pub(crate) attributes: Dictionary,
    pub(crate) regions: ThinVec<RegionId>,
    pub(crate) successors: ThinVec<BlockId>,
    pub(crate) loc: Location,
    pub(crate) parent: Option<BlockId>,
    pub(crate) prev: Option<OpId>,
    pub(crate) next: Option<OpId>,
}

pub(crate) struct BlockData {
    pub(crate) args: SmallVec<[Value; 2]>,
    pub(crate) first: Option<OpId>,
    pub(crate) last: Option<OpId>,
    pub(crate) parent: Option<RegionId>,
}

pub(crate) struct RegionData {
    pub(crate) blocks: Vec<BlockId>,
    pub(crate) parent: Option<OpId>,
}

/// Everything needed to create an operation.
#[derive(Clone)]
pub struct OperationState {
    /// The operation name.
    pub name: OperationName,
    /// Operand values.
    pub operands: Vec<Value>,
    /// Result types.
    pub result_types: Vec<Type>,
    /// Inherent attributes printed in `<{...}>`, if any.
    pub properties: Option<Dictionary>,
    /// Discardable attributes.
    pub attributes: Dictionary,
    /// Regions, already built and detached (see [`Context::create_region`]).
    pub regions: Vec<RegionId>,
    /// Successor blocks.
    pub successors: Vec<BlockId>,
    /// The location.
    pub loc: Location,
}

impl OperationState {
    /// A state with only a name and location.
    pub fn new(name: OperationName, loc: Location) -> OperationState {
        OperationState {
            name,
            operands: Vec::new(),
            result_types: Vec::new(),
            properties: None,
            attributes: Dictionary::new(),
            regions: Vec::new(),
            successors: Vec::new(),
            loc,
        }
    }
    /// Adds operands.
    pub fn operands(mut self, vs: &[Value]) -> Self {
        self.operands.extend_from_slice(vs);
        self
    }
    /// Adds result types.
    pub fn results(mut self, ts: &[Type]) -> Self {
        self.result_types.extend_from_slice(ts);
        self
    }
    /// Sets an attribute: into properties if the op declares it inherent,
    /// otherwise into the discardable dictionary.
    pub fn attr(mut self, name: &str, value: Attribute) -> Self {
        if self.name.is_inherent_attr(name) {
            self.properties
                .get_or_insert_with(Dictionary::new)
                .set(name, value);
        } else {
            self.attributes.set(name, value);
        }
        self
    }
    /// Adds a region.
    pub fn region(mut self, r: RegionId) -> Self {
        self.regions.push(r);
        self
    }
    /// Adds a successor.
    pub fn successor(mut self, b: BlockId) -> Self {
        self.successors.push(b);
        self
    }
}

/// Walk order for [`Context::walk`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WalkOrder {
    /// Visit an operation before the operations nested in it.
    PreOrder,
    /// Visit an operation after the operations nested in it.
    PostOrder,
}

/// The IR context.
pub struct Context {
    pub(crate) ops: Arena<OpId, OperationData>,
    pub(crate) blocks: Arena<BlockId, BlockData>,
    pub(crate) regions: Arena<RegionId, RegionData>,
    pub(crate) values: Arena<Value, ValueData>,
    registry: Arc<DialectRegistry>,
    resources: Arc<ResourceTable>,
    /// Whether operations of unregistered dialects may be created and parsed.
    pub allow_unregistered: bool,
}

impl Context {
    /// A context over the dialects of `registry`.
    pub fn new(registry: Arc<DialectRegistry>) -> Context {
        Context {
            ops: Arena::default(),
            blocks: Arena::default(),
            regions: Arena::default(),
            values: Arena::default(),
            registry,
            resources: Arc::new(ResourceTable::default()),
            allow_unregistered: false,
        }
    }

    /// A context with the same registry, resource table and options, and no IR.
    pub fn fork_empty(&self) -> Context {
        Context {
            ops: Arena::default(),
            blocks: Arena::default(),
            regions: Arena::default(),
            values: Arena::default(),
            registry: self.registry.clone(),
            resources: self.resources.clone(),
            allow_unregistered: self.allow_unregistered,
        }
    }

    /// The dialect registry.
    pub fn registry(&self) -> &Arc<DialectRegistry> {
        &self.registry
    }
    /// The resource table shared by this module.
    pub fn resources(&self) -> &Arc<ResourceTable> {
        &self.resources
    }
    /// Looks up (or, for unregistered names, creates) an operation name.
    pub fn op_name(&self, name: &str) -> OperationName {
        self.registry.op_name(name)
    }
    /// Number of live operations.
    pub fn num_ops(&self) -> usize {
        self.ops.len()
    }
    /// Whether `op` names a live operation of this context.
    pub fn is_live(&self, op: OpId) -> bool {
        self.ops.contains(op)
    }

    // ----- creation -------------------------------------------------------

    /// Creates a detached operation from `state`.
    pub fn create_op(&mut self, state: OperationState) -> OpId {
        let op = self.ops.alloc(OperationData {
            name: state.name,
            operands: ThinVec::from(state.operands),
            results: ThinVec::new(),
            properties: state.properties,
            attributes: state.attributes,
            regions: ThinVec::from(state.regions),
            successors: ThinVec::from(state.successors),
            loc: state.loc,
            parent: None,
            prev: None,
            next: None,
        });
        for i in 0..self.ops[op].operands.len() {
            let v = self.ops[op].operands[i];
            self.values[v].uses.push(Use {
                op,
                index: i as u32,
            });
        }
        let mut results = ThinVec::with_capacity(state.result_types.len());
        for (i, ty) in state.result_types.into_iter().enumerate() {
            results.push(self.values.alloc(ValueData {
                ty,
                def: ValueDef::Result {
                    op,
                    index: i as u32,
                },
                uses: SmallVec::new(),
                loc: None,
            }));
        }
        self.ops[op].results = results;
        for i in 0..self.ops[op].regions.len() {
            let r = self.ops[op].regions[i];
            self.regions[r].parent = Some(op);
        }
        op
    }

    /// Creates a detached, empty region.
    pub fn create_region(&mut self) -> RegionId {
        self.regions.alloc(RegionData {
            blocks: Vec::new(),
            parent: None,
        })
    }

    /// Creates a detached block with arguments of the given types.
    pub fn create_block(&mut self, arg_types: &[Type]) -> BlockId {
        let block = self.blocks.alloc(BlockData {
            args: SmallVec::new(),
            first: None,
            last: None,
            parent: None,
        });
        for ty in arg_types {
            self.add_block_argument(block, ty.clone(), None);
        }
        block
    }

    /// Appends an argument to `block`.
    pub fn add_block_argument(&mut self, block: BlockId, ty: Type, loc: Option<Location>) -> Value {
        let index = self.blocks[block].args.len() as u32;
        let v = self.values.alloc(ValueData {
            ty,
            def: ValueDef::BlockArg { block, index },
            uses: SmallVec::new(),
            loc,
        });
        self.blocks[block].args.push(v);
        v
    }

    /// Inserts an argument at position `index` of `block` (later arguments
    /// move up by one).
    pub fn insert_block_argument(
        &mut self,
        block: BlockId,
        index: usize,
        ty: Type,
        loc: Option<Location>,
    ) -> Value {
        let v = self.values.alloc(ValueData {
            ty,
            def: ValueDef::BlockArg {
                block,
                index: index as u32,
            },
            uses: SmallVec::new(),
            loc,
        });
        self.blocks[block].args.insert(index, v);
        for (i, &a) in self.blocks[block].args.iter().enumerate().skip(index + 1) {
            self.values[a].def = ValueDef::BlockArg {
                block,
                index: i as u32,
            };
        }
        v
    }

    /// Removes argument `index` of `block`, which must have no uses.
    pub fn erase_block_argument(&mut self, block: BlockId, index: usize) {
        let v = self.blocks[block].args.remove(index);
        assert!(
            self.values[v].uses.is_empty(),
            "erasing a block argument that still has uses"
        );
        self.values.free(v);
        for (i, &a) in self.blocks[block].args.iter().enumerate().skip(index) {
            self.values[a].def = ValueDef::BlockArg {
                block,
                index: i as u32,
            };
        }
    }

    // ----- operation accessors ------------------------------------------

    /// The operation's name.
    #[inline]
    pub fn name(&self, op: OpId) -> &OperationName {
        &self.ops[op].name
    }
    /// The operation's name as text.
    #[inline]
    pub fn name_str(&self, op: OpId) -> &str {
        self.ops[op].name.as_str()
    }
    /// Operands.
    #[inline]
    pub fn operands(&self, op: OpId) -> &[Value] {
        &self.ops[op].operands
    }
    /// Operand `i`.
    #[inline]
    pub fn operand(&self, op: OpId, i: usize) -> Value {
        self.ops[op].operands[i]
    }
    /// Results.
    #[inline]
    pub fn results(&self, op: OpId) -> &[Value] {
        &self.ops[op].results
    }
    /// Result `i`.
    #[inline]
    pub fn result(&self, op: OpId, i: usize) -> Value {
        self.ops[op].results[i]
    }
    /// Regions.
    #[inline]
    pub fn regions(&self, op: OpId) -> &[RegionId] {
        &self.ops[op].regions
    }
    /// Successor blocks.
    #[inline]
    pub fn successors(&self, op: OpId) -> &[BlockId] {
        &self.ops[op].successors
    }
    /// Replaces the successor list.
    pub fn set_successors(&mut self, op: OpId, succ: &[BlockId]) {
        self.ops[op].successors = ThinVec::from(succ);
    }
    /// Location.
    #[inline]
    pub fn loc(&self, op: OpId) -> &Location {
        &self.ops[op].loc
    }
    /// Replaces the location.
    pub fn set_loc(&mut self, op: OpId, loc: Location) {
        self.ops[op].loc = loc;
    }
    /// Inherent attributes (`<{...}>`), if the op has properties.
    pub fn properties(&self, op: OpId) -> Option<&Dictionary> {
        self.ops[op].properties.as_ref()
    }
    /// Discardable attributes.
    pub fn attributes(&self, op: OpId) -> &Dictionary {
        &self.ops[op].attributes
    }
    /// Looks up an attribute in the properties first, then the discardable dictionary.
    pub fn attr(&self, op: OpId, name: &str) -> Option<&Attribute> {
        let data = &self.ops[op];
        data.properties
            .as_ref()
            .and_then(|p| p.get(name))
            .or_else(|| data.attributes.get(name))
    }
    /// Sets an attribute, as an inherent property if the op declares it so.
    pub fn set_attr(&mut self, op: OpId, name: &str, value: Attribute) {
        let data = &mut self.ops[op];
        if data.name.is_inherent_attr(name)
            || data
                .properties
                .as_ref()
                .is_some_and(|p| p.get(name).is_some())
        {
            data.properties
                .get_or_insert_with(Dictionary::new)
                .set(name, value);
        } else {
            data.attributes.set(name, value);
        }
    }
    /// Removes an attribute from wherever it is.
    pub fn remove_attr(&mut self, op: OpId, name: &str) -> Option<Attribute> {
        let data = &mut self.ops[op];
        data.properties
            .as_mut()
            .and_then(|p| p.remove(name))
            .or_else(|| data.attributes.remove(name))
    }
    /// Replaces the discardable attribute dictionary.
    pub fn set_attributes(&mut self, op: OpId, attrs: Dictionary) {
        self.ops[op].attributes = attrs;
    }
    /// The block holding `op`.
    #[inline]
    pub fn parent_block(&self, op: OpId) -> Option<BlockId> {
        self.ops[op].parent
    }
    /// The operation whose region holds `op`.
    pub fn parent_op(&self, op: OpId) -> Option<OpId> {
        let b = self.ops[op].parent?;
        self.block_parent_op(b)
    }
    /// The next operation in the same block.
    #[inline]
    pub fn next_op(&self, op: OpId) -> Option<OpId> {
        self.ops[op].next
    }
    /// The previous operation in the same block.
    #[inline]
    pub fn prev_op(&self, op: OpId) -> Option<OpId> {
        self.ops[op].prev
    }
    /// Whether `ancestor` is `op` or contains it.
    pub fn is_ancestor(&self, ancestor: OpId, mut op: OpId) -> bool {
        loop {
            if op == ancestor {
                return true;
            }
            match self.parent_op(op) {
                Some(p) => op = p,
                None => return false,
            }
        }
    }

    // ----- values -----------------------------------------------------------

    /// The type of a value.
    #[inline]
    pub fn value_type(&self, v: Value) -> &Type {
        &self.values[v].ty
    }
    /// The types of an op's operands.
    pub fn operand_types(&self, op: OpId) -> Vec<Type> {
        self.operands(op)
            .iter()
            .map(|&v| self.value_type(v).clone())
            .collect()
    }
    /// The types of an op's results.
    pub fn result_types(&self, op: OpId) -> Vec<Type> {
        self.results(op)
            .iter()
            .map(|&v| self.value_type(v).clone())
            .collect()
    }
    /// Changes the type of a value (the caller keeps the IR valid).
    pub fn set_value_type(&mut self, v: Value, ty: Type) {
        self.values[v].ty = ty;
    }
    /// Where the value is defined.
    #[inline]
    pub fn value_def(&self, v: Value) -> ValueDef {
        self.values[v].def
    }
    /// The defining operation of a result value.
    pub fn defining_op(&self, v: Value) -> Option<OpId> {
        match self.values[v].def {
            ValueDef::Result { op, .. } => Some(op),
            ValueDef::BlockArg { .. } => None,
        }
    }
    /// The block a value is defined in.
    pub fn value_block(&self, v: Value) -> Option<BlockId> {
        match self.values[v].def {
            ValueDef::Result { op, .. } => self.ops[op].parent,
            ValueDef::BlockArg { block, .. } => Some(block),
        }
    }
    /// The location of a block argument.
    pub fn value_loc(&self, v: Value) -> Option<&Location> {
        self.values[v].loc.as_ref()
    }
    /// Uses of a value.
    #[inline]
    pub fn uses(&self, v: Value) -> &[Use] {
        &self.values[v].uses
    }
    /// Whether the value has no uses.
    pub fn use_empty(&self, v: Value) -> bool {
        self.values[v].uses.is_empty()
    }
    /// Whether a value is live in this context.
    pub fn value_is_live(&self, v: Value) -> bool {
        self.values.contains(v)
    }

    fn remove_use(&mut self, v: Value, u: Use) {
        let uses = &mut self.values[v].uses;
        if let Some(pos) = uses.iter().position(|x| *x == u) {
            uses.swap_remove(pos);
        }
    }

    /// Sets operand `i` of `op` to `v`.
    pub fn set_operand(&mut self, op: OpId, i: usize, v: Value) {
        let old = self.ops[op].operands[i];
        if old == v {
            return;
        }
        let u = Use {
            op,
            index: i as u32,
        };
        self.remove_use(old, u);
        self.ops[op].operands[i] = v;
        self.values[v].uses.push(u);
    }

    /// Replaces all operands of `op`.
    pub fn set_operands(&mut self, op: OpId, vs: &[Value]) {
        let old: SmallVec<[Value; 4]> = self.ops[op].operands.iter().copied().collect();
        for (i, v) in old.iter().enumerate() {
            self.remove_use(
                *v,
                Use {
                    op,
                    index: i as u32,
                },
            );
        }
        self.ops[op].operands = ThinVec::from(vs);
        for (i, v) in vs.iter().enumerate() {
            self.values[*v].uses.push(Use {
                op,
                index: i as u32,
            });
        }
    }

    /// Replaces every use of `from` with `to`.
    pub fn replace_all_uses(&mut self, from: Value, to: Value) {
        if from == to {
            return;
        }
        let uses = std::mem::take(&mut self.values[from].uses);
        for u in &uses {
            self.ops[u.op].operands[u.index as usize] = to;
        }
        self.values[to].uses.extend(uses);
    }

    /// Replaces the uses of `from` for which `pred` holds.
    pub fn replace_uses_if(
        &mut self,
        from: Value,
        to: Value,
        mut pred: impl FnMut(&Context, Use) -> bool,
    ) {
        let uses: Vec<Use> = self.values[from].uses.to_vec();
        for u in uses {
            if pred(self, u) {
                self.set_operand(u.op, u.index as usize, to);
            }
        }
    }

    /// Replaces all uses of `op`'s results with `values` (same count).
    pub fn replace_op_uses(&mut self, op: OpId, values: &[Value]) {
        let results: SmallVec<[Value; 2]> = self.ops[op].results.iter().copied().collect();
        assert_eq!(
            results.len(),
            values.len(),
            "replacement value count differs from result count"
        );
        for (r, v) in results.iter().zip(values) {
            self.replace_all_uses(*r, *v);
        }
    }

    // ----- blocks and regions ---------------------------------------------

    /// Block arguments.
    #[inline]
    pub fn block_args(&self, b: BlockId) -> &[Value] {
        &self.blocks[b].args
    }
    /// The region holding a block.
    #[inline]
    pub fn block_parent(&self, b: BlockId) -> Option<RegionId> {
        self.blocks[b].parent
    }
    /// The operation owning the region holding a block.
    pub fn block_parent_op(&self, b: BlockId) -> Option<OpId> {
        self.blocks[b].parent.and_then(|r| self.regions[r].parent)
    }
    /// First operation of a block.
    #[inline]
    pub fn first_op(&self, b: BlockId) -> Option<OpId> {
        self.blocks[b].first
    }
    /// Last operation of a block.
    #[inline]
    pub fn last_op(&self, b: BlockId) -> Option<OpId> {
        self.blocks[b].last
    }
    /// Iterates over the operations of a block in order.
    pub fn block_ops(&self, b: BlockId) -> BlockOps<'_> {
        BlockOps {
            ctx: self,
            next: self.blocks[b].first,
        }
    }
    /// Collects the operations of a block (useful while mutating).
    pub fn block_ops_vec(&self, b: BlockId) -> Vec<OpId> {
        self.block_ops(b).collect()
    }
    /// Whether the block has no operations.
    pub fn block_is_empty(&self, b: BlockId) -> bool {
        self.blocks[b].first.is_none()
    }
    /// The blocks of a region, in order.
    #[inline]
    pub fn region_blocks(&self, r: RegionId) -> &[BlockId] {
        &self.regions[r].blocks
    }
    /// The operation owning a region.
    #[inline]
    pub fn region_parent(&self, r: RegionId) -> Option<OpId> {
        self.regions[r].parent
    }
    /// The entry block of a region.
    pub fn entry_block(&self, r: RegionId) -> Option<BlockId> {
        self.regions[r].blocks.first().copied()
    }
    /// Appends a detached block to a region.
    pub fn append_block(&mut self, r: RegionId, b: BlockId) {
        assert!(
            self.blocks[b].parent.is_none(),
            "block {b:?} is already in a region"
        );
        self.blocks[b].parent = Some(r);
        self.regions[r].blocks.push(b);
    }
    /// Inserts a detached block at position `index` of a region.
    pub fn insert_block(&mut self, r: RegionId, index: usize, b: BlockId) {
        assert!(
            self.blocks[b].parent.is_none(),
            "block {b:?} is already in a region"
        );
        self.blocks[b].parent = Some(r);
        self.regions[r].blocks.insert(index, b);
    }
    /// Removes a block from its region (keeping its contents).
    pub fn detach_block(&mut self, b: BlockId) {
        if let Some(r) = self.blocks[b].parent.take() {
            self.regions[r].blocks.retain(|x| *x != b);
        }
    }
    /// Moves all blocks of `from` to the end of `to`.
    pub fn take_region_blocks(&mut self, from: RegionId, to: RegionId) {
        let blocks = std::mem::take(&mut self.regions[from].blocks);
        for b in blocks {
            self.blocks[b].parent = Some(to);
            self.regions[to].blocks.push(b);
        }
    }

    /// The terminator (last op) of a block, if any.
    pub fn terminator(&self, b: BlockId) -> Option<OpId> {
        self.blocks[b].last.filter(|&op| {
            self.ops[op]
                .name
                .has_trait(crate::dialect::Traits::TERMINATOR)
        })
    }

    // ----- insertion and removal --------------------------------------------

    /// Appends a detached operation to the end of `b`.
    pub fn append_op(&mut self, b: BlockId, op: OpId) {
        assert!(
            self.ops[op].parent.is_none(),
            "operation {op:?} is already in a block"
        );
        let last = self.blocks[b].last;
        self.ops[op].parent = Some(b);
        self.ops[op].prev = last;
        self.ops[op].next = None;
        match last {
            Some(l) => self.ops[l].next = Some(op),
            None => self.blocks[b].first = Some(op),
        }
        self.blocks[b].last = Some(op);
    }

    /// Inserts a detached operation at the start of `b`.
    pub fn prepend_op(&mut self, b: BlockId, op: OpId) {
        match self.blocks[b].first {
            Some(first) => self.insert_op_before(first, op),
            None => self.append_op(b, op),
        }
    }

    /// Inserts a detached operation before `anchor`.
    pub fn insert_op_before(&mut self, anchor: OpId, op: OpId) {
        assert!(
            self.ops[op].parent.is_none(),
            "operation {op:?} is already in a block"
        );
        let b = self.ops[anchor]
            .parent
            .expect("anchor operation is not in a block");
        let prev = self.ops[anchor].prev;
        self.ops[op].parent = Some(b);
        self.ops[op].prev = prev;
        self.ops[op].next = Some(anchor);
        self.ops[anchor].prev = Some(op);
        match prev {
            Some(p) => self.ops[p].next = Some(op),
            None => self.blocks[b].first = Some(op),
        }
    }

    /// Inserts a detached operation after `anchor`.
    pub fn insert_op_after(&mut self, anchor: OpId, op: OpId) {
        match self.ops[anchor].next {
            Some(n) => self.insert_op_before(n, op),
            None => {
                let b = self.ops[anchor]
                    .parent
                    .expect("anchor operation is not in a block");
                self.append_op(b, op)
            }
        }
    }

    /// Unlinks an operation from its block (it stays alive, detached).
    pub fn detach_op(&mut self, op: OpId) {
        let Some(b) = self.ops[op].parent.take() else {
            return;
        };
        let (prev, next) = (self.ops[op].prev.take(), self.ops[op].next.take());
        match prev {
            Some(p) => self.ops[p].next = next,
            None => self.blocks[b].first = next,
        }
        match next {
            Some(n) => self.ops[n].prev = prev,
            None => self.blocks[b].last = prev,
        }
    }

    /// Moves an operation (attached or not) before `anchor`.
    pub fn move_op_before(&mut self, op: OpId, anchor: OpId) {
        self.detach_op(op);
        self.insert_op_before(anchor, op);
    }

    /// Moves an operation to the end of a block.
    pub fn move_op_to_end(&mut self, op: OpId, b: BlockId) {
        self.detach_op(op);
        self.append_op(b, op);
    }

    /// Erases an operation and everything nested in it. Its results must
    /// have no uses outside the erased operations.
    pub fn erase_op(&mut self, op: OpId) {
        self.detach_op(op);
        self.drop_op_tree(op);
    }

    fn drop_op_tree(&mut self, op: OpId) {
        // Drop operand uses first so that uses inside the tree disappear.
        let mut all = Vec::new();
        self.walk(op, WalkOrder::PostOrder, &mut |_, o| all.push(o));
        for &o in &all {
            let operands: SmallVec<[Value; 4]> = self.ops[o].operands.iter().copied().collect();
            for (i, v) in operands.iter().enumerate() {
                self.remove_use(
                    *v,
                    Use {
                        op: o,
                        index: i as u32,
                    },
                );
            }
        }
        for &o in &all {
            let data = self.ops.free(o);
            for r in data.results {
                debug_assert!(
                    self.values[r].uses.is_empty(),
                    "erasing {} whose result still has uses",
                    data.name.as_str()
                );
                self.values.free(r);
            }
            for region in data.regions {
                let rd = self.regions.free(region);
                for b in rd.blocks {
                    let bd = self.blocks.free(b);
                    for a in bd.args {
                        self.values.free(a);
                    }
                }
            }
        }
    }

    /// Erases a block (detached or not) and its operations.
    pub fn erase_block(&mut self, b: BlockId) {
        self.detach_block(b);
        let ops = self.block_ops_vec(b);
        for &op in ops.iter().rev() {
            self.detach_op(op);
        }
        for &op in &ops {
            let operands: SmallVec<[Value; 4]> = self.ops[op].operands.iter().copied().collect();
            for (i, v) in operands.iter().enumerate() {
                self.remove_use(
                    *v,
                    Use {
                        op,
                        index: i as u32,
                    },
                );
            }
        }
        for op in ops {
            self.drop_op_tree(op);
        }
        let bd = self.blocks.free(b);
        for a in bd.args {
            self.values.free(a);
        }
    }

    // ----- traversal -------------------------------------------------------

    /// Visits `root` and every operation nested in it.
    pub fn walk(&self, root: OpId, order: WalkOrder, f: &mut dyn FnMut(&Context, OpId)) {
        if order == WalkOrder::PreOrder {
            f(self, root);
        }
        for &r in self.ops[root].regions.iter() {
            for &b in &self.regions[r].blocks {
                let mut cur = self.blocks[b].first;
                while let Some(op) = cur {
                    cur = self.ops[op].next;
                    self.walk(op, order, f);
                }
            }
        }
        if order == WalkOrder::PostOrder {
            f(self, root);
        }
    }

    /// Collects `root` and all nested operations in the given order.
    pub fn collect_ops(&self, root: OpId, order: WalkOrder) -> Vec<OpId> {
        let mut out = Vec::new();
        self.walk(root, order, &mut |_, op| out.push(op));
        out
    }

    /// Deep-copies an operation (detached). Operands defined outside the
    /// copy are looked up in `mapping` and kept as-is when absent; values
    /// defined inside are remapped to their copies and recorded in `mapping`.
    pub fn clone_op(
        &mut self,
        op: OpId,
        mapping: &mut rustc_hash::FxHashMap<Value, Value>,
    ) -> OpId {
        let data = &self.ops[op];
        let name = data.name.clone();
        let properties = data.properties.clone();
        let attributes = data.attributes.clone();
        let loc = data.loc.clone();
        let operands: Vec<Value> = data
            .operands
            .iter()
            .map(|v| *mapping.get(v).unwrap_or(v))
            .collect();
        let result_types: Vec<Type> = data
            .results
            .iter()
            .map(|&r| self.values[r].ty.clone())
            .collect();
        let old_results: SmallVec<[Value; 2]> = data.results.iter().copied().collect();
        let old_regions: SmallVec<[RegionId; 2]> = data.regions.iter().copied().collect();
        let successors: Vec<BlockId> = data.successors.to_vec();
        let mut regions = Vec::with_capacity(old_regions.len());
        let mut block_map = rustc_hash::FxHashMap::default();
        for &r in &old_regions {
            let nr = self.create_region();
            let blocks = self.regions[r].blocks.clone();
            // Create all blocks first so that successors can be remapped.
            for &b in &blocks {
                let nb = self.create_block(&[]);
                let args = self.blocks[b].args.clone();
                for a in args {
                    let ty = self.values[a].ty.clone();
                    let loc = self.values[a].loc.clone();
                    let na = self.add_block_argument(nb, ty, loc);
                    mapping.insert(a, na);
                }
                self.append_block(nr, nb);
                block_map.insert(b, nb);
            }
            for &b in &blocks {
                let nb = block_map[&b];
                for o in self.block_ops_vec(b) {
                    let c = self.clone_op(o, mapping);
                    let succ: Vec<BlockId> = self.ops[c]
                        .successors
                        .iter()
                        .map(|s| *block_map.get(s).unwrap_or(s))
                        .collect();
                    self.ops[c].successors = ThinVec::from(succ);
                    self.append_op(nb, c);
                }
            }
            regions.push(nr);
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
        let new = self.create_op(state);
        for (i, r) in old_results.iter().enumerate() {
            mapping.insert(*r, self.ops[new].results[i]);
        }
        new
    }
}

/// Iterator over the operations of a block.
pub struct BlockOps<'a> {
    ctx: &'a Context,
    next: Option<OpId>,
}

impl Iterator for BlockOps<'_> {
    type Item = OpId;
    fn next(&mut self) -> Option<OpId> {
        let cur = self.next?;
        self.next = self.ctx.ops[cur].next;
        Some(cur)
    }
}
