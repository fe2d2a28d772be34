//! Time-multiplexed exchange supersteps on the simulator: random
//! many-to-many transfers (multicast, receivers taking several senders in
//! turn, destinations contiguous or not, tiles that send and receive,
//! tiles far apart) land exactly where they should, and the superstep
//! takes the cycles the schedule says. The simulator faults on any word
//! that arrives unarmed, unselected, in surplus or late, so a wrong cycle
//! in the schedule fails loudly.

use ipuc_backend_ipu::codelets::emitter::{inst, op, Emitter};
use ipuc_backend_ipu::codelets::instance_memo::InstanceMemo;
use ipuc_backend_ipu::emit::build_executable;
use ipuc_backend_ipu::lower::codegen::{emit_calls, Calls};
use ipuc_backend_ipu::lower::schedule::{
    delay, schedule, schedule_before, schedule_in, schedule_joined, schedule_within, Chunk,
    CodeBudget, DelayRoutine, Joining, Order, Schedule, Segment, Transfer, DELAY_ROUTINE,
};
use ipuc_dialects::ipu::{build, SectionKind, TensorDirection, TensorPiece};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{BlockId, Context, Location, OpId, Type};
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::{SimConfig, Simulator};
use rand::{Rng, SeedableRng};

const SRC: u32 = 0x80000;
const DST: u32 = 0xa0000;
/// Words of source memory per tile.
const SRC_WORDS: u32 = 2048;

/// A fresh module holding an empty `ipu.executable` for `m`: the context,
/// the executable and its body.
fn executable(m: &MachineModel) -> (Context, OpId, BlockId) {
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = ipuc_ir::parse_source(&mut ctx, "empty.mlir", "module {}")
        .unwrap()
        .module;
    let body = ctx.entry_block(ctx.regions(module)[0]).unwrap();
    let (exe, exe_body) = build::executable(&mut ctx, &m.name, Location::unknown());
    ctx.append_op(body, exe);
    (ctx, exe, exe_body)
}

/// Appends tile `t` whose supervisor `main` is what `body` emits, then
/// `exitz`, then the subroutines `body` added to its calls.
fn tile_main_calling(
    ctx: &mut Context,
    exe_body: BlockId,
    t: u32,
    body: impl FnOnce(&mut Emitter, &mut Calls),
) {
    let loc = Location::unknown();
    let (tile_op, tile_body) = build::tile(ctx, t, None, loc.clone());
    ctx.append_op(exe_body, tile_op);
    let mut e = Emitter::new(ctx, tile_body, loc);
    e.code_section(".text.main", SectionKind::Supervisor);
    e.function("main");
    let mut calls = Calls::new();
    body(&mut e, &mut calls);
    e.solo(inst("exitz", [op::mzero()]));
    e.size_of("main");
    emit_calls(&mut e, &calls, &mut InstanceMemo::new()).unwrap();
}

/// Builds and runs one superstep of `s` on `tiles` whose source memory
/// holds `src[t]`; returns each tile's destination memory (`dst_words`
/// words) and the simulated cycles.
fn run(
    m: &MachineModel,
    tiles: &[u32],
    s: &Schedule,
    src: &[Vec<u32>],
    dst_words: u32,
) -> (Vec<Vec<u32>>, u64) {
    let (got, cycles, _) = run_with(m, tiles, s, src, dst_words, true);
    (got, cycles)
}

/// [`run`], the tiles' code calling their routines (delays, switches)
/// or not; also returns the tiles' exchange code bytes as
/// [`Schedule::emit`] counts them.
fn run_with(
    m: &MachineModel,
    tiles: &[u32],
    s: &Schedule,
    src: &[Vec<u32>],
    dst_words: u32,
    routines: bool,
) -> (Vec<Vec<u32>>, u64, u64) {
    let (mut ctx, exe, exe_body) = executable(m);
    let loc = Location::unknown();
    let mut code = 0;
    for &t in tiles {
        // The longer waits call the tile's delay routine.
        tile_main_calling(&mut ctx, exe_body, t, |e, calls| {
            // Start the exchange superstep together.
            e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
            code += s.emit(e, m, (t, "0"), routines.then_some(calls));
            e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
        });
    }
    // The host tensor `name`: `words` words at `at` on each tile, in tile order.
    let n = tiles.len() as i64;
    let mut tensor = |name: &str, at: u32, words: u32, direction: TensorDirection| {
        let pieces: Vec<TensorPiece> = tiles
            .iter()
            .enumerate()
            .map(|(i, &t)| TensorPiece {
                tile: i64::from(t),
                address: i64::from(at),
                first: (i as i64) * i64::from(words),
                count: i64::from(words),
            })
            .collect();
        let ty = Type::tensor(&[n * i64::from(words)], Type::i32());
        let op = build::tensor(&mut ctx, name, ty, direction, &pieces, loc.clone());
        ctx.append_op(exe_body, op);
    };
    tensor("input0", SRC, SRC_WORDS, TensorDirection::Input);
    tensor("output0", DST, dst_words, TensorDirection::Output);
    ipuc_ir::verify(&ctx, exe).unwrap_or_else(|d| panic!("{}", d.message));
    let exe = build_executable(&ctx, exe).unwrap_or_else(|d| panic!("{}", d[0].message));
    let mut sim = Simulator::new(m.clone(), SimConfig::default());
    sim.load(&exe).unwrap();
    let bytes: Vec<u8> = src.iter().flatten().flat_map(|w| w.to_le_bytes()).collect();
    sim.write_tensor("input0", &bytes).unwrap();
    sim.run().unwrap_or_else(|e| panic!("{e}"));
    let out = sim.read_tensor("output0").unwrap();
    let words: Vec<u32> = out
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let per_tile = words
        .chunks(dst_words as usize)
        .map(<[u32]>::to_vec)
        .collect();
    let p = sim.profile().unwrap();
    (per_tile, p.total_cycles, code)
}

/// A random superstep: its transfers, each tile's source words, the words
/// each tile should hold at DST, and how many.
struct Case {
    transfers: Vec<Transfer>,
    src: Vec<Vec<u32>>,
    want: Vec<Vec<u32>>,
    dst_words: u32,
}

/// Random transfers among `tiles`.
fn random_case(seed: u64, tiles: &[u32]) -> Case {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let src: Vec<Vec<u32>> = tiles
        .iter()
        .map(|_| (0..SRC_WORDS).map(|_| rng.random()).collect())
        .collect();
    let dst_words = 1024u32;
    let mut want: Vec<Vec<u32>> = vec![vec![0; dst_words as usize]; tiles.len()];
    // Each receiver fills its destination front to back, sometimes
    // skipping a gap (a re-pointed write pointer).
    let mut cursor = vec![0u32; tiles.len()];
    let mut transfers = Vec::new();
    for _ in 0..24 {
        let s = rng.random_range(0..tiles.len());
        // Sometimes a strided destination: equal chunks, one per segment,
        // segments `gap_words` apart at the receivers.
        let segment = rng.random_bool(0.3).then(|| {
            let words = rng.random_range(1..40);
            (words, words + rng.random_range(0..6))
        });
        let chunks: Vec<Chunk> = (0..rng.random_range(1..4))
            .map(|_| {
                let words = segment.map_or_else(|| rng.random_range(1..40), |(w, _)| w);
                Chunk {
                    address: SRC + 4 * rng.random_range(0..SRC_WORDS - words),
                    words,
                }
            })
            .collect();
        let words: u32 = chunks.iter().map(|c| c.words).sum();
        // Where word k of the transfer lands, from the receiver's start.
        let offset = |k: u32| segment.map_or(k, |(w, stride)| k / w * stride + k % w);
        let span = offset(words - 1) + 1;
        let mut receivers = Vec::new();
        for r in 0..tiles.len() {
            // A sender takes its own words only unsegmented (it cannot
            // re-point while it sends).
            if rng.random_bool(0.4) && (segment.is_none() || r != s) {
                let gap = if rng.random_bool(0.3) {
                    rng.random_range(1..8)
                } else {
                    0
                };
                if cursor[r] + gap + span > dst_words {
                    continue;
                }
                let at = cursor[r] + gap;
                let mut k = 0;
                for c in &chunks {
                    let from = ((c.address - SRC) / 4) as usize;
                    for w in 0..c.words as usize {
                        want[r][(at + offset(k)) as usize] = src[s][from + w];
                        k += 1;
                    }
                }
                cursor[r] = at + span;
                receivers.push((tiles[r], DST + 4 * at));
            }
        }
        if !receivers.is_empty() {
            let t = Transfer {
                sender: tiles[s],
                chunks,
                receivers,
                segment: segment.map(|(words, stride)| Segment {
                    words,
                    stride: 4 * stride,
                }),
            };
            t.check().unwrap();
            transfers.push(t);
        }
    }
    Case {
        transfers,
        src,
        want,
        dst_words,
    }
}

#[test]
fn random_many_to_many_supersteps_deliver_every_word_in_time() {
    let m = MachineModel::c600();
    // Neighbours, the same exchange row, rows far apart.
    let tiles = [0u32, 1, 17, 100, 700, 1471];
    // 40 draws: seed 33 caught a switch that reserved a put it does not
    // issue, over a segment's first re-point (the scheduler's overlap
    // assertion).
    let mut split = 0;
    for seed in 0..40 {
        let Case {
            transfers,
            src,
            want,
            dst_words,
        } = random_case(seed, &tiles);
        // Each order alone (the earliest-first ones reorder the senders'
        // transfers and receivers' switches freely; the split ones also
        // pause a sender's words while it switches its own mux), and the
        // shortest of those `schedule` tries.
        let all = [
            Order::Listed,
            Order::Earliest,
            Order::Critical,
            Order::EarliestSplit,
            Order::CriticalSplit,
        ]
        .map(|order| (order, schedule_in(&m, &tiles, &transfers, order)));
        let best = schedule(&m, &tiles, &transfers);
        let tried = all
            .iter()
            .filter(|(o, _)| Order::TRIED.contains(o))
            .map(|(_, s)| s.cycles)
            .min();
        assert_eq!(Some(best.cycles), tried);
        for (order, s) in &all {
            if order.split() {
                split += s.split;
            } else {
                assert_eq!(s.split, 0, "seed {seed}, {order:?} splits no send");
            }
            let (got, cycles) = run(&m, &tiles, s, &src, dst_words);
            for (i, t) in tiles.iter().enumerate() {
                assert_eq!(got[i], want[i], "seed {seed}, {order:?}: tile {t}");
            }
            // The run is two syncs plus the superstep: the schedule's
            // length is what the superstep costs, up to the closing sync.
            let syncs = 2 * u64::from(m.sync_latency);
            assert!(
                cycles >= s.cycles + syncs && cycles <= s.cycles + syncs + 16,
                "seed {seed}, {order:?}: simulated {cycles}, scheduled {} + {syncs}",
                s.cycles
            );
        }
    }
    // The draws exercise split sends (tiles there both send and receive).
    assert!(split > 0, "no draw split a send");
}
#[test]
fn the_earliest_first_order_keeps_receivers_busy_that_the_listed_order_leaves_waiting() {
    // Senders a and b each send L words to receiver x and to receiver y,
    // listed a->x, b->x, b->y, a->y. In that order b->y waits for b->x,
    // and a->y for b->y: about 4L. Earliest first pairs them, a->x with
    // b->y, then a->y with b->x: about 2L.
    let m = MachineModel::c600();
    let (a, b, x, y) = (5u32, 300, 40, 900);
    let words = 1024;
    let send = |from: u32, to: u32, slot: u32| Transfer {
        sender: from,
        chunks: vec![Chunk {
            address: SRC,
            words,
        }],
        receivers: vec![(to, DST + 4 * words * slot)],
        segment: None,
    };
    let transfers = vec![send(a, x, 0), send(b, x, 1), send(b, y, 0), send(a, y, 1)];
    let tiles = [a, b, x, y];
    let listed = schedule_in(&m, &tiles, &transfers, Order::Listed);
    let earliest = schedule_in(&m, &tiles, &transfers, Order::Earliest);
    let l = u64::from(words);
    assert!(listed.cycles > 4 * l, "listed {}", listed.cycles);
    assert!(
        earliest.cycles < 2 * l + 200,
        "earliest {} cycles for two rounds of {l} words",
        earliest.cycles
    );
    let best = schedule(&m, &tiles, &transfers);
    assert!(best.cycles <= earliest.cycles);
    assert_eq!(best.busiest_port(), 2 * words);
    assert_eq!(
        best.to_string(),
        format!("{} cycles (busiest port {} words)", best.cycles, 2 * words)
    );
    // And it delivers: each receiver's buffer holds a's words then b's
    // (x) or b's then a's (y).
    let src = tagged_sources(&tiles);
    let (got, _) = run(&m, &tiles, &best, &src, 2 * words);
    for (r, first, second) in [(2usize, a, b), (3, b, a)] {
        for k in 0..words {
            assert_eq!(got[r][k as usize], first << 16 | k);
            assert_eq!(got[r][(words + k) as usize], second << 16 | k);
        }
    }
}

#[test]
fn a_receiver_with_work_after_the_exchange_takes_its_words_first() {
    // Sender a sends L words to x, then (as listed) L words to y; y then
    // runs 3L cycles of work before the next sync (a link's LN tile),
    // x nothing. Listed, y's words come second: y ends near 2L and the
    // superstep near 5L. With y's tail the critical orders count it as
    // words y has yet to take and send y's first: y ends near L, x near
    // 2L, the superstep near 4L.
    let m = MachineModel::c600();
    let (a, x, y) = (5u32, 40, 900);
    let words = 1024;
    let l = u64::from(words);
    let send = |to: u32| Transfer {
        sender: a,
        chunks: vec![Chunk {
            address: SRC,
            words,
        }],
        receivers: vec![(to, DST)],
        segment: None,
    };
    let transfers = vec![send(x), send(y)];
    let tiles = [a, x, y];
    let tails = std::collections::BTreeMap::from([(y, 3 * l)]);
    let plain = schedule(&m, &tiles, &transfers);
    let before = schedule_before(&m, &tiles, &transfers, Joining::Contiguous, &tails);
    // Without tails nothing changes: the superstep is the exchange.
    assert_eq!(plain.superstep, plain.cycles);
    assert!(plain.ends[&x] < plain.ends[&y]);
    assert!(plain.ends[&y] + 3 * l > 5 * l, "plain {:?}", plain.ends);
    // With them y goes first, and the superstep is the latest tile's end
    // plus its tail.
    assert!(before.ends[&y] < before.ends[&x], "{:?}", before.ends);
    assert!(before.ends[&y] < l + 200, "{:?}", before.ends);
    let latest = before
        .ends
        .iter()
        .map(|(t, &end)| end + tails.get(t).copied().unwrap_or(0))
        .max()
        .unwrap();
    assert_eq!(before.superstep, latest.max(before.cycles));
    assert!(before.superstep < plain.ends[&y] + 3 * l);
    // And it delivers.
    let src = tagged_sources(&tiles);
    let (got, _) = run(&m, &tiles, &before, &src, words);
    for r in [1usize, 2] {
        for k in 0..words {
            assert_eq!(got[r][k as usize], a << 16 | k);
        }
    }
}

#[test]
fn a_code_budget_trades_the_superstep_for_the_measured_tiles_code() {
    // Random supersteps whose first two tiles work after the exchange,
    // the code measured on them: the least-code budget's choice has the
    // least code of the three choices; the critical budget allows at
    // least as much, so its superstep is no longer; with no budget the
    // superstep is the shortest. Each choice delivers every word.
    let m = MachineModel::c600();
    let tiles = [0u32, 1, 17, 100, 700, 1471];
    let lines = |s: &Schedule| {
        tiles[..2]
            .iter()
            .map(|&t| tile_text(&m, s, t).lines().count() as u64)
            .max()
            .unwrap()
    };
    for seed in 0..8 {
        let case = random_case(seed, &tiles);
        let tails = std::collections::BTreeMap::from([(tiles[0], 3000), (tiles[1], 1500)]);
        let within = |budget| {
            schedule_within(
                &m,
                &tiles,
                &case.transfers,
                Joining::Contiguous,
                &tails,
                Some((&lines, budget)),
            )
        };
        let (least, critical) = (within(CodeBudget::Least), within(CodeBudget::Critical));
        let free = schedule_before(&m, &tiles, &case.transfers, Joining::Contiguous, &tails);
        assert!(lines(&least) <= lines(&critical), "seed {seed}");
        assert!(lines(&least) <= lines(&free), "seed {seed}");
        assert!(critical.superstep <= least.superstep, "seed {seed}");
        assert!(free.superstep <= critical.superstep, "seed {seed}");
        for s in [&least, &critical] {
            let (got, _) = run(&m, &tiles, s, &case.src, case.dst_words);
            assert_eq!(got, case.want, "seed {seed}");
        }
    }
}

#[test]
fn a_receiver_fed_by_many_senders_back_to_back_runs_at_the_port_rate() {
    // Row pieces of 64 words from 16 senders into one contiguous buffer
    // on each of two receivers, as a GEMM's input gathers rows: the mux
    // switches hide behind the arrivals, so the receivers' ports are busy
    // almost all the time.
    let m = MachineModel::c600();
    let senders: Vec<u32> = (0..16).map(|i| 32 + 16 * i).collect();
    let receivers = [3u32, 900];
    let mut tiles = senders.clone();
    tiles.extend(receivers);
    let transfers: Vec<Transfer> = (0..4)
        .flat_map(|round| {
            senders.iter().enumerate().map(move |(i, &s)| Transfer {
                sender: s,
                chunks: vec![Chunk {
                    address: SRC + 4 * 64 * round,
                    words: 64,
                }],
                receivers: receivers
                    .iter()
                    .map(|&r| (r, DST + 4 * 64 * (round * 16 + i as u32)))
                    .collect(),
                segment: None,
            })
        })
        .collect();
    let s = schedule(&m, &tiles, &transfers);
    let words = 4 * 16 * 64;
    assert_eq!(s.received[&3], words);
    // Port time plus the opening and the farthest latency.
    assert!(
        s.cycles < u64::from(words) + 400,
        "{} cycles for {words} words",
        s.cycles
    );
    let src = tagged_sources(&tiles);
    let (got, _) = run(&m, &tiles, &s, &src, words);
    for r in [16usize, 17] {
        for round in 0..4u32 {
            for (i, &sender) in senders.iter().enumerate() {
                for k in 0..64 {
                    let at = ((round * 16 + i as u32) * 64 + k) as usize;
                    assert_eq!(got[r][at], sender << 16 | (round * 64 + k));
                }
            }
        }
    }
}

/// A switch or re-point with time before it is a call of the tile's
/// switch routine (its registers' `setzi`s, `setzi $m7` and the call:
/// the wait and the puts are the routine's): every word lands where and
/// when it does with the code inline (the simulator faults on a word
/// that arrives unselected or late), the run takes the same cycles, and
/// the exchange code, the routines counted, is smaller.
#[test]
fn switches_called_as_routines_keep_every_cycle_and_shrink_the_code() {
    let m = MachineModel::c600();
    let tiles = [0u32, 1, 17, 100, 700, 1471];
    let (mut inline_total, mut called_total) = (0, 0);
    for seed in 0..12 {
        let Case {
            transfers,
            src,
            want,
            dst_words,
        } = random_case(seed, &tiles);
        let s = schedule(&m, &tiles, &transfers);
        let (called, cycles, called_code) = run_with(&m, &tiles, &s, &src, dst_words, true);
        let (inline, inline_cycles, inline_code) = run_with(&m, &tiles, &s, &src, dst_words, false);
        assert_eq!(called, want, "seed {seed}");
        assert_eq!(inline, want, "seed {seed}");
        assert_eq!(cycles, inline_cycles, "seed {seed}");
        inline_total += inline_code;
        called_total += called_code;
    }
    // Inline, the delays are loops, `bri`s and `nop`s and every switch
    // puts its own registers (the random draws' few switches a tile: 5 %
    // less).
    assert!(
        called_total * 100 < inline_total * 97,
        "{called_total} bytes calling the routines, {inline_total} inline"
    );
}

/// The emitted text of tile `t`'s code for schedule `s`, routines called.
fn tile_text(m: &MachineModel, s: &Schedule, t: u32) -> String {
    let (mut ctx, _, exe_body) = executable(m);
    tile_main_calling(&mut ctx, exe_body, t, |e, calls| {
        s.emit(e, m, (t, "0"), Some(calls));
    });
    let tile = ctx.last_op(exe_body).unwrap();
    ipuc_backend_ipu::emit::asm_view::tile_asm(&ctx, tile).text
}

/// Each of the three switch routines is called where its kind of event
/// has room before it: a switch that re-points, one that continues the
/// write pointer, a lone re-point.
#[test]
fn each_switch_routine_is_called() {
    let m = MachineModel::c600();
    let tiles = [0u32, 1, 17, 100, 700, 1471];
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let s = schedule(&m, &tiles, &random_case(seed, &tiles).transfers);
        for &t in &tiles {
            let text = tile_text(&m, &s, t);
            for name in ["xswitch", "xmux", "xbase"] {
                if text.contains(&format!("call $lr, {name}_r")) {
                    assert!(text.contains(&format!(".text.{name}")), "{text}");
                    seen.insert(name);
                }
            }
        }
    }
    assert_eq!(seen.len(), 3, "routines called: {seen:?}");
}

/// Inline, and calling the tile's delay routine (two instructions where
/// the inline loop would end in `nop`s), a delay holds the supervisor
/// exactly its cycles.
#[test]
fn delays_hold_the_supervisor_exactly() {
    let m = MachineModel::c600();
    // Cycles, whether the routine was called, and the instructions of
    // `main` (the delay's and `exitz`).
    let cycles_of = |d: u64, routine: bool| -> (u64, bool, u64) {
        let (mut ctx, exe, exe_body) = executable(&m);
        let mut called = false;
        let mut issues = 0;
        tile_main_calling(&mut ctx, exe_body, 0, |e, calls| {
            let name = routine.then_some(DELAY_ROUTINE);
            let before = e.issues();
            called = delay(e, &m, d, ".Ld", name);
            issues = e.issues() - before;
            if called {
                calls.push((DELAY_ROUTINE.into(), Box::new(DelayRoutine::of(&m))));
            }
        });
        let exe = build_executable(&ctx, exe).unwrap_or_else(|d| panic!("{}", d[0].message));
        let mut sim = Simulator::new(m.clone(), SimConfig::default());
        sim.load(&exe).unwrap();
        sim.run().unwrap();
        (sim.profile().unwrap().total_cycles, called, issues)
    };
    let (base, _, _) = cycles_of(0, false);
    let fixed = DelayRoutine::of(&m).fixed();
    for d in [
        1, 5, 6, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 23, 24, 25, 100, 1001, 4096,
    ] {
        let (cycles, called, _) = cycles_of(d, false);
        assert_eq!((cycles - base, called), (d, false), "delay({d})");
        let (cycles, called, _) = cycles_of(d, true);
        assert_eq!(cycles - base, d, "delay({d}) calling the routine");
        // The routine where it saves `nop`s: past its fixed cost, not
        // where the inline loop ends on a whole turn (7 + 6n cycles).
        assert_eq!(called, d >= fixed && (d - 7) % 6 != 0, "delay({d})");
    }
    // A taken branch to the next instruction is a refill's pause in one
    // instruction: 6 cycles one `bri` (six `nop`s before), 12 two (a loop
    // and five `nop`s before), 11 one and five `nop`s (as the loop).
    for (d, issues) in [(5, 5), (6, 1), (11, 6), (12, 2), (13, 2)] {
        assert_eq!(cycles_of(d, true).2, issues, "delay({d})");
    }
}

/// A transfer of `segments` segments of 48 words from `sender`'s source
/// to `receiver`'s destination from `at`, 64 words apart there (a row of
/// an input panel from six LN rows each).
fn segmented(sender: u32, receiver: u32, segments: u32, at: u32) -> Transfer {
    Transfer {
        sender,
        chunks: (0..segments)
            .map(|g| Chunk {
                address: SRC + 4 * 48 * g,
                words: 48,
            })
            .collect(),
        receivers: vec![(receiver, at)],
        segment: Some(Segment {
            words: 48,
            stride: 4 * 64,
        }),
    }
}

/// Each tile's source words, tagged with the tile: `t << 16 | k`.
fn tagged_sources(tiles: &[u32]) -> Vec<Vec<u32>> {
    tiles
        .iter()
        .map(|&t| (0..SRC_WORDS).map(|k| t << 16 | k).collect())
        .collect()
}

/// A segmented transfer's re-points (segments of 48 words, a row of an
/// input panel from six LN rows), a fixed stride and period apart, are
/// one loop on the receiver (`put ; add ; delay ; brnzdec`, the last put
/// after it) instead of a `setzi`, a `put` and a delay per segment: every
/// word still lands in its segment on time (the simulator faults on a late
/// or misplaced one), in the cycles the schedule says, and the receiver's
/// exchange code does not grow with the segments.
#[test]
fn a_segmented_receive_re_points_in_a_loop() {
    let m = MachineModel::c600();
    let (sender, receiver) = (40u32, 7u32);
    let tiles = [receiver, sender];
    let code = |segments: u32| {
        let s = schedule(&m, &tiles, &[segmented(sender, receiver, segments, DST)]);
        let (ctx, _, body) = executable(&m);
        let mut ctx = ctx;
        let (tile_op, tile_body) = build::tile(&mut ctx, receiver, None, Location::unknown());
        ctx.append_op(body, tile_op);
        let mut e = Emitter::new(&mut ctx, tile_body, Location::unknown());
        e.code_section(".text.main", SectionKind::Supervisor);
        (s.emit(&mut e, &m, (receiver, "0"), None), s)
    };
    // Twice the segments: the same loop, only the waits' delay loops may
    // differ by a few `nop`s. Unrolled, each segment took a `setzi`, a
    // `put` and its delay, 12 bytes or more.
    let (double, _) = code(80);
    let (large, s) = code(40);
    assert!(
        double <= large + 48 && large < 40 * 12,
        "{large} bytes for 40 segments, {double} for 80"
    );
    let src = tagged_sources(&tiles);
    let (got, cycles) = run(&m, &tiles, &s, &src, 40 * 64);
    for g in 0..40u32 {
        for k in 0..48 {
            assert_eq!(got[0][(g * 64 + k) as usize], sender << 16 | (g * 48 + k));
        }
    }
    assert!(
        cycles >= s.cycles,
        "{cycles} simulated, {} scheduled",
        s.cycles
    );
}

/// A run of re-points followed by another transfer is one loop entered
/// at its put (`bri` past the turn's wait), every put inside it: no put
/// and `nop`s after the loop. The words land on time (the simulator
/// faults on a late or misplaced one).
#[test]
fn a_segmented_receive_before_another_puts_every_segment_in_its_loop() {
    let m = MachineModel::c600();
    let (first, second, receiver) = (40u32, 41u32, 7u32);
    let tiles = [receiver, first, second];
    let transfers = [
        segmented(first, receiver, 12, DST),
        Transfer {
            sender: second,
            chunks: vec![Chunk {
                address: SRC,
                words: 100,
            }],
            receivers: vec![(receiver, DST + 4 * 12 * 64)],
            segment: None,
        },
    ];
    let s = schedule(&m, &tiles, &transfers);
    let text = tile_text(&m, &s, receiver);
    assert!(text.contains("bri .Lx0_p"), "{text}");
    // Nothing of the run after its loop: the next line switches the mux
    // or waits for that.
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let exit = lines
        .iter()
        .position(|l| l.starts_with("brnzdec $m8"))
        .expect("a re-point loop");
    assert!(
        !lines[exit + 1].starts_with("put") && lines[exit + 1] != "nop",
        "{text}"
    );
    let src = tagged_sources(&tiles);
    let (got, _) = run(&m, &tiles, &s, &src, 12 * 64 + 100);
    for g in 0..12u32 {
        for k in 0..48 {
            assert_eq!(got[0][(g * 64 + k) as usize], first << 16 | (g * 48 + k));
        }
    }
    for k in 0..100u32 {
        assert_eq!(got[0][(12 * 64 + k) as usize], second << 16 | k);
    }
}

/// A tile that takes many short transfers and sends a long one: with
/// whole sends its supervisor can either switch its mux between the
/// arrivals or hold the send, so one waits for the other; split around
/// its switches, the send's words pause while the tile switches and both
/// go on at once. The words land where they should in every order.
#[test]
fn a_tile_that_receives_and_sends_splits_its_send_around_its_switches() {
    let m = MachineModel::c600();
    let (busy, far) = (5u32, 600u32);
    let senders: Vec<u32> = (0..8).map(|i| 40 + 16 * i).collect();
    let mut tiles = senders.clone();
    tiles.extend([busy, far]);
    let mut transfers: Vec<Transfer> = senders
        .iter()
        .enumerate()
        .map(|(i, &s)| Transfer {
            sender: s,
            chunks: vec![Chunk {
                address: SRC,
                words: 64,
            }],
            receivers: vec![(busy, DST + 4 * 64 * i as u32)],
            segment: None,
        })
        .collect();
    transfers.push(Transfer {
        sender: busy,
        chunks: vec![Chunk {
            address: SRC,
            words: 300,
        }],
        receivers: vec![(far, DST)],
        segment: None,
    });
    let whole = [Order::Listed, Order::Earliest, Order::Critical]
        .map(|o| schedule_in(&m, &tiles, &transfers, o).cycles)
        .into_iter()
        .min()
        .unwrap();
    let split = schedule_in(&m, &tiles, &transfers, Order::CriticalSplit);
    assert!(split.split > 0, "the long send is split");
    assert!(
        split.cycles + 80 < whole,
        "split {} cycles, whole sends {whole}",
        split.cycles
    );
    assert!(schedule(&m, &tiles, &transfers).cycles <= split.cycles);
    let src = tagged_sources(&tiles);
    let (got, _) = run(&m, &tiles, &split, &src, 8 * 64);
    let at = |t: u32| tiles.iter().position(|&x| x == t).unwrap();
    for (i, &s) in senders.iter().enumerate() {
        for k in 0..64 {
            assert_eq!(got[at(busy)][i * 64 + k], s << 16 | k as u32);
        }
    }
    let sent: Vec<u32> = (0..300).map(|k| busy << 16 | k).collect();
    assert_eq!(got[at(far)][..300], sent[..]);
}

/// A sender's short pieces of one size, each a fixed stride after the one
/// before at its receivers (a tile's rows of a head's channel groups, each
/// group a panel of the attention tiles' input), are placed as one
/// segmented transfer: each receiver switches its mux once for the run and
/// re-points between the pieces. Every word lands where its piece says
/// (the simulator faults on a late or misplaced one), and the superstep is
/// shorter than with a switch a piece, where two senders take turns.
#[test]
fn short_pieces_a_stride_apart_are_received_as_one_segmented_transfer() {
    let m = MachineModel::c600();
    let (a, b, receivers) = (40u32, 300u32, [7u32, 9]);
    let tiles = [receivers[0], receivers[1], a, b];
    // Each sender's 12 groups of 16 words, group g at 64 g words of the
    // receivers' destination (sender b's after sender a's).
    let pieces = |sender: u32, base: u32| -> Vec<Transfer> {
        (0..12u32)
            .map(|g| Transfer {
                sender,
                chunks: vec![Chunk {
                    address: SRC + 4 * 16 * g,
                    words: 16,
                }],
                receivers: receivers
                    .iter()
                    .map(|&r| (r, DST + 4 * (base + 64 * g)))
                    .collect(),
                segment: None,
            })
            .collect()
    };
    // Listed alternating, as a lowering lists a group's pieces sender by
    // sender.
    let transfers: Vec<Transfer> = pieces(a, 0)
        .into_iter()
        .zip(pieces(b, 16))
        .flat_map(|(x, y)| [x, y])
        .collect();
    let joined = schedule_joined(&m, &tiles, &transfers, Joining::Strided);
    let apart = schedule(&m, &tiles, &transfers);
    assert!(
        joined.cycles < apart.cycles,
        "joined {} cycles, a switch a piece {}",
        joined.cycles,
        apart.cycles
    );
    let src = tagged_sources(&tiles);
    for s in [&joined, &apart] {
        let (got, _) = run(&m, &tiles, s, &src, 12 * 64);
        for dst in &got[..2] {
            for g in 0..12u32 {
                for k in 0..16 {
                    let at = (64 * g + k) as usize;
                    assert_eq!(dst[at], a << 16 | (16 * g + k));
                    assert_eq!(dst[at + 16], b << 16 | (16 * g + k));
                }
            }
        }
    }
}
