//! Codelets as subroutines of one tile program: the same codelet twice and
//! another between them, called from one supervisor `main`, compute what
//! the codelets' references compose to, and cost their estimates plus the
//! calls.

mod common;

use common::{assert_near_estimate, f16_bytes, simulate};
use half::f16;
use ipuc_backend_ipu::codelets::elementwise::{Binary, BinaryOp, VecType};
use ipuc_backend_ipu::codelets::emitter::{inst, op, Emitter};
use ipuc_backend_ipu::codelets::gelu::{Gelu, GeluForm};
use ipuc_backend_ipu::codelets::instance_memo::{InstanceMemo, MemoCounts};
use ipuc_backend_ipu::codelets::program::{Codelet, CodeletProgram};
use ipuc_backend_ipu::codelets::subroutine::{call_cycles, emit_call, emit_subroutine};
use ipuc_backend_ipu::codelets::CodeletError;
use ipuc_dialects::ipu::{build, SectionKind};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{print_op, Context, Location, PrintOptions};
use ipuc_runtime::device::Device;
use rand::{Rng, SeedableRng};

fn halves(b: &[u8]) -> Vec<f16> {
    b.chunks_exact(2)
        .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]])))
        .collect()
}

/// `n` halves drawn from [-4, 4).
fn random_halves(rng: &mut impl Rng, n: u32) -> Vec<f16> {
    (0..n)
        .map(|_| f16::from_f64(rng.random_range(-4.0..4.0)))
        .collect()
}

/// A codelet emitted as a subroutine under a name of its own.
trait Subroutine {
    fn emit_as(&self, e: &mut Emitter, name: &str) -> Result<(), CodeletError>;
}

impl<C: Codelet> Subroutine for C {
    fn emit_as(&self, e: &mut Emitter, name: &str) -> Result<(), CodeletError> {
        emit_subroutine(e, name, self).map(drop)
    }
}

/// The program of tile 3 whose supervisor `main` calls `subroutines` in
/// order, each emitted after it.
fn program_calling(m: &MachineModel, subroutines: &[(&str, &dyn Subroutine)]) -> CodeletProgram {
    let build = CodeletProgram::build(3, m, |e| {
        e.code_section(".text.main", SectionKind::Supervisor);
        e.function("main");
        for (name, _) in subroutines {
            emit_call(e, name);
        }
        e.solo(inst("exitz", [op::mzero()]));
        e.size_of("main");
        subroutines
            .iter()
            .try_for_each(|(name, codelet)| codelet.emit_as(e, name))
    });
    build.unwrap_or_else(|e| panic!("{e}")).0
}

#[test]
fn two_instances_of_one_codelet_and_another_run_in_sequence() {
    let m = MachineModel::c600();
    let len = 4 * 37;
    let (a, b, c) = (0x80000, 0x90000, 0xa0000);
    // out = gelu_tanh(gelu_erf(a) + b), the first GELU in place.
    let g1 = Gelu {
        form: GeluForm::Erf,
        len,
        input: a,
        output: a,
    };
    let add = Binary {
        op: BinaryOp::Add,
        ty: VecType::F16,
        len,
        x: a,
        y: b,
        out: c,
    };
    let g2 = Gelu {
        form: GeluForm::Tanh,
        len,
        input: c,
        output: c,
    };
    let prog = program_calling(&m, &[("g1", &g1), ("add", &add), ("g2", &g2)]);
    let text = prog.assembly();
    assert!(text.contains("call $lr, g1_main"), "{text}");
    assert!(text.contains("br $lr"), "{text}");

    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let xs = random_halves(&mut rng, len);
    let ys = random_halves(&mut rng, len);
    let s = simulate(&prog, 3, &[(a, &f16_bytes(&xs)), (b, &f16_bytes(&ys))]);
    let got = halves(&s.read_memory(3, c, len * 2).unwrap());
    for i in 0..len as usize {
        let first = g1.reference(xs[i]);
        let first16 = f16::from_f64(first);
        let tol1 = g1.tolerance(xs[i], first);
        let sum = add.reference(&[first16.to_f64()], &[ys[i].to_f64()])[0];
        let want = g2.reference(f16::from_f64(sum));
        // The first GELU may be off by its bound; propagate it through the
        // add (one f16 rounding) and the second GELU (slope below 1.13).
        let tol =
            g2.tolerance(f16::from_f64(sum), want) + 1.13 * (tol1 + sum.abs() * 2f64.powi(-11));
        assert!(
            (got[i].to_f64() - want).abs() <= tol,
            "element {i}: got {} want {want} (tolerance {tol:e})",
            got[i]
        );
    }
    let est = g1.estimate_cycles().unwrap()
        + add.estimate_cycles().unwrap()
        + g2.estimate_cycles().unwrap()
        + 3 * call_cycles(&m);
    let cycles = s.profile().unwrap().total_cycles;
    assert_near_estimate(cycles, est, "three codelets and their calls");
}

#[test]
fn a_codelet_that_writes_the_link_register_is_refused() {
    // The GEMM's inline supervisor uses $m6 (= $lr); a codelet whose own
    // `main` writes it cannot return. Build one by hand.
    struct Clobber;
    impl Codelet for Clobber {
        type Counts = ();
        fn emit(
            &self,
            e: &mut ipuc_backend_ipu::codelets::emitter::Emitter,
        ) -> Result<(), CodeletError> {
            e.code_section(".text.x", SectionKind::Supervisor);
            e.function("main");
            e.solo(inst("setzi", [op::m(6), op::imm(1)]));
            e.solo(inst("exitz", [op::mzero()]));
            Ok(())
        }
        fn cycles(&self, _: &()) -> u64 {
            0
        }
    }
    let err = CodeletProgram::build(0, &MachineModel::c600(), |e| {
        emit_subroutine(e, "x", &Clobber)
    })
    .err()
    .expect("refused");
    assert!(err.to_string().contains("$lr"), "{err}");
}

#[test]
fn launches_of_one_shape_share_their_code_and_keep_their_own_vertex_states() {
    let m = MachineModel::c600();
    let (n1, n2) = (4 * 37, 4 * 20);
    let (a, b, c, d) = (0x80000, 0x90000, 0xa0000, 0xb0000);
    // c = a + b; c = gelu(c); d = c + b over the first n2 elements: the
    // two adds have one shape (their lengths and addresses are vertex
    // state), the GELU between them another.
    let add1 = Binary {
        op: BinaryOp::Add,
        ty: VecType::F16,
        len: n1,
        x: a,
        y: b,
        out: c,
    };
    let g = Gelu {
        form: GeluForm::Tanh,
        len: n1,
        input: c,
        output: c,
    };
    let add2 = Binary {
        len: n2,
        x: c,
        y: b,
        out: d,
        ..add1.clone()
    };
    let prog = program_calling(&m, &[("add1", &add1), ("g", &g), ("add2", &add2)]);
    let text = prog.assembly();
    // One copy of the add's worker code, which both `main`s start.
    assert_eq!(text.matches("add_f16_worker:").count(), 1, "{text}");
    assert!(text.contains("add1_add_f16_worker:"), "{text}");
    assert_eq!(
        text.matches("setzi $m1, add1_add_f16_worker").count(),
        2,
        "{text}"
    );
    // Each add has its own `main` and vertex states.
    for own in [
        "add2_main:",
        "add2_add_f16_vertex_state:",
        "setzi $m2, add2_add_f16_vertex_state",
    ] {
        assert!(text.contains(own), "{own} missing:\n{text}");
    }

    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let (xs, ys) = (random_halves(&mut rng, n1), random_halves(&mut rng, n1));
    let zeros = vec![f16::ZERO; n1 as usize];
    let (x, y, z) = (f16_bytes(&xs), f16_bytes(&ys), f16_bytes(&zeros));
    let s = simulate(&prog, 3, &[(a, &x), (b, &y), (d, &z)]);
    let got_c = halves(&s.read_memory(3, c, n1 * 2).unwrap());
    let got_d = halves(&s.read_memory(3, d, n1 * 2).unwrap());
    for i in 0..n1 as usize {
        let sum = add1.reference(&[xs[i].to_f64()], &[ys[i].to_f64()])[0];
        let want_c = g.reference(f16::from_f64(sum));
        let tol = g.tolerance(f16::from_f64(sum), want_c);
        assert!(
            (got_c[i].to_f64() - want_c).abs() <= tol,
            "c[{i}]: got {} want {want_c} (tolerance {tol:e})",
            got_c[i]
        );
        // The second add reads what the device computed for c, over its
        // own length only.
        let want_d = if i < n2 as usize {
            add2.reference(&[got_c[i].to_f64()], &[ys[i].to_f64()])[0]
        } else {
            0.0
        };
        assert_eq!(got_d[i].to_f64(), want_d, "d[{i}]");
    }
    let est = 2 * add1
        .estimate_cycles()
        .unwrap()
        .max(add2.estimate_cycles().unwrap())
        + g.estimate_cycles().unwrap()
        + 3 * call_cycles(&m);
    let cycles = s.profile().unwrap().total_cycles;
    assert_near_estimate(cycles, est, "a shared add, a GELU and the add again");
}

/// Two programs on one tile, each a block's whole program in a scope of
/// its own (`codelets/scope.rs`): both define `main` and an instance
/// `add` (with its vertex state and its own worker code: launches are
/// not shared across scopes), the first ends with a branch to the
/// second's `main` where a lone program would exit, and the tile's own
/// `main` starts the first. Both adds run, in order: the second reads
/// what the first wrote.
#[test]
fn two_scoped_programs_share_a_tile_and_run_in_turn() {
    let m = MachineModel::c600();
    let len = 4 * 37;
    let (a, b, c, d) = (0x80000, 0x90000, 0xa0000, 0xb0000);
    // c = a + b (scope b0), then d = c + b (scope b1).
    let first = Binary {
        op: BinaryOp::Add,
        ty: VecType::F16,
        len,
        x: a,
        y: b,
        out: c,
    };
    let second = Binary {
        x: c,
        out: d,
        ..first.clone()
    };
    let build = CodeletProgram::build(3, &m, |e| {
        for (scope, add, end) in [("b0", &first, Some("b1_main")), ("b1", &second, None)] {
            let before = e.tile_ops().len();
            e.code_section(".text.main", SectionKind::Supervisor);
            e.function("main");
            emit_call(e, "add");
            match end {
                Some(next) => e.solo(inst("bri", [op::sym(next)])),
                None => e.solo(inst("exitz", [op::mzero()])),
            }
            e.size_of("main");
            emit_subroutine(e, "add", add)?;
            e.scope_since(before, scope);
        }
        e.code_section(".text.entry", SectionKind::Supervisor);
        e.function("main");
        e.solo(inst("bri", [op::sym("b0_main")]));
        Ok::<_, CodeletError>(())
    });
    let prog = build.unwrap_or_else(|e| panic!("{e}")).0;
    let text = prog.assembly();
    for want in [
        "b0_main:",
        "b1_main:",
        "call $lr, b0_add_main",
        "call $lr, b1_add_main",
        "bri b1_main",
        ".section .text.add_f16_worker.b0_add",
        ".section .text.add_f16_worker.b1_add",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }

    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let xs = random_halves(&mut rng, len);
    let ys = random_halves(&mut rng, len);
    let s = simulate(&prog, 3, &[(a, &f16_bytes(&xs)), (b, &f16_bytes(&ys))]);
    let got = halves(&s.read_memory(3, d, len * 2).unwrap());
    for i in 0..len as usize {
        let sum = f16::from_f64(first.reference(&[xs[i].to_f64()], &[ys[i].to_f64()])[0]);
        let want = f16::from_f64(second.reference(&[sum.to_f64()], &[ys[i].to_f64()])[0]);
        assert_eq!(got[i], want, "element {i}");
    }
}

/// Emits an instance as a test asks: through the memo when there is one.
type EmitAs<'a> =
    &'a dyn Fn(&mut Emitter, &mut Option<&mut InstanceMemo>, &str) -> Result<(), CodeletError>;

/// Codelet `c` through the memo when there is one, else emitted with no
/// section open before or after, as the memo emits it.
fn via<C: Codelet + std::fmt::Debug + 'static>(
    c: &C,
) -> impl Fn(&mut Emitter, &mut Option<&mut InstanceMemo>, &str) -> Result<(), CodeletError> + '_ {
    move |e, memo, name| match memo {
        Some(memo) => memo.emit(e, name, c),
        None => {
            e.close_section();
            emit_subroutine(e, name, c)?;
            e.close_section();
            Ok(())
        }
    }
}

/// The printed executable of tiles 0, 1, .. whose `main` (after what
/// `before` emits on the tile) calls each tile's instances, emitted after
/// it through `memo` when there is one.
fn tiles_calling(
    tiles: &[Vec<(&str, EmitAs)>],
    memo: &mut Option<&mut InstanceMemo>,
    before: &dyn Fn(u32, &mut Emitter),
) -> String {
    let mut ctx = Context::new(ipuc_dialects::registry());
    let loc = Location::unknown();
    let (exe, body) = build::executable(&mut ctx, "c600", loc.clone());
    for (t, calls) in tiles.iter().enumerate() {
        let (tile, tile_body) = build::tile(&mut ctx, t as u32, None, loc.clone());
        ctx.append_op(body, tile);
        let mut e = Emitter::new(&mut ctx, tile_body, loc.clone());
        e.code_section(".text.main", SectionKind::Supervisor);
        e.function("main");
        before(t as u32, &mut e);
        for (name, _) in calls {
            emit_call(&mut e, name);
        }
        e.solo(inst("exitz", [op::mzero()]));
        e.size_of("main");
        for (name, emit) in calls {
            emit(&mut e, memo, name).unwrap_or_else(|err| panic!("{err}"));
        }
    }
    print_op(&ctx, exe, &PrintOptions::default())
}

/// Every tile gets from the memo what emitting its instances gives it:
/// the same codelet and name copied to a later tile as its shape's holder
/// and as a sharer of an earlier instance's code, and where the holder
/// differs between tiles, each variant emitted once. The executables
/// print the same, op for op.
#[test]
fn memoized_instances_are_what_emitting_gives_every_tile() {
    let add = |x: u32| Binary {
        op: BinaryOp::Add,
        ty: VecType::F16,
        len: 4 * 37,
        x,
        y: 0x90000,
        out: 0xa0000,
    };
    let gelu = Gelu {
        form: GeluForm::Tanh,
        len: 4 * 37,
        input: 0xa0000,
        output: 0xa0000,
    };
    let (a0, a1) = (add(0x80000), add(0x81000));
    let (add0, add1, g) = (via(&a0), via(&a1), via(&gelu));
    // Tiles 0 and 1 alike; tiles 2 and 3 call the adds the other way
    // round, so `a1` holds the add's code there and `a0` shares it.
    let tiles: Vec<Vec<(&str, EmitAs)>> = vec![
        vec![("a0", &add0), ("a1", &add1), ("g", &g)],
        vec![("a0", &add0), ("a1", &add1), ("g", &g)],
        vec![("a1", &add1), ("a0", &add0)],
        vec![("a1", &add1), ("a0", &add0), ("g", &g)],
    ];
    let emitted = tiles_calling(&tiles, &mut None, &|_, _| {});
    let mut memo = InstanceMemo::new();
    let memoized = tiles_calling(&tiles, &mut Some(&mut memo), &|_, _| {});
    assert_eq!(memoized, emitted);
    // Emitted: a0, a1 and g on tile 0, a1 and a0 again on tile 2 (their
    // holders changed); the other six copied.
    assert_eq!(
        memo.counts(),
        MemoCounts {
            emitted: 5,
            copied: 6
        }
    );
    // The variants exist: tile 0's a1 starts a0's worker, tile 2's a0
    // starts a1's.
    let tile = |t: u32| {
        let from = emitted.find(&format!("ipu.tile {t} {{")).unwrap();
        let next = emitted[from + 1..].find("ipu.tile ");
        &emitted[from..next.map_or(emitted.len(), |n| from + 1 + n)]
    };
    assert_eq!(tile(0).matches("setzi m1, @a0_add_f16_worker").count(), 2);
    assert_eq!(tile(2).matches("setzi m1, @a1_add_f16_worker").count(), 2);
}

/// A codelet whose label is a fresh one ([`Emitter::fresh_label`]):
/// numbered by what its tile asked for before.
#[derive(Debug)]
struct FreshLabel;

impl Codelet for FreshLabel {
    type Counts = ();
    fn emit(&self, e: &mut Emitter) -> Result<(), CodeletError> {
        e.code_section(".text.fresh", SectionKind::Supervisor);
        e.function("main");
        let l = e.fresh_label(".Lhere");
        e.label(&l);
        e.solo(inst("exitz", [op::mzero()]));
        Ok(())
    }
    fn cycles(&self, _: &()) -> u64 {
        0
    }
}

/// An instance that asked for a fresh label depends on its tile's earlier
/// code (tile 0 asked for one before, tile 1 did not): the memo emits it
/// on every tile instead of copying tile 0's.
#[test]
fn an_instance_with_a_fresh_label_is_emitted_on_every_tile() {
    let fresh = FreshLabel;
    let f = via(&fresh);
    let tiles: Vec<Vec<(&str, EmitAs)>> = vec![vec![("f", &f)], vec![("f", &f)]];
    let before = |t: u32, e: &mut Emitter| {
        if t == 0 {
            let l = e.fresh_label(".Lhere");
            e.label(&l);
        }
    };
    let emitted = tiles_calling(&tiles, &mut None, &before);
    let mut memo = InstanceMemo::new();
    let memoized = tiles_calling(&tiles, &mut Some(&mut memo), &before);
    assert_eq!(memoized, emitted);
    assert_eq!(
        memo.counts(),
        MemoCounts {
            emitted: 2,
            copied: 0
        }
    );
    // The two tiles' labels differ.
    assert!(
        emitted.contains(r#"@".Lf_here_1""#) && emitted.contains(r#"@".Lf_here""#),
        "{emitted}"
    );
}
