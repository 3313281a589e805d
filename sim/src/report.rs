//! Counters kept during a run and the printed report.

use std::collections::BTreeMap;
use std::fmt;

use crate::ops::OPS;

/// What happened to one operation kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCount {
    /// Preconditions failed: nothing sent.
    pub noop: u64,
    /// Applied outside transactions (evidence, going offline).
    pub effect: u64,
    /// Drawn and sent transactions.
    pub sent: u64,
    /// Transactions sent.
    pub txs: u64,
    /// Transactions CheckTx admitted.
    pub check_ok: u64,
    /// Transactions PrepareProposal put in a block.
    pub included: u64,
    /// Included transactions that succeeded.
    pub passed: u64,
}

/// Counters of a run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Per operation name; the liveness drain is `liveness.drain`.
    pub ops: BTreeMap<&'static str, OpCount>,
    /// Blocks executed.
    pub blocks: u64,
    /// Invariant evaluations (invariant families × blocks).
    pub invariant_checks: u64,
}

fn name(op: Option<usize>) -> &'static str {
    op.and_then(|i| OPS.get(i))
        .map_or("liveness.drain", |o| o.name)
}

impl Stats {
    /// Empty counters.
    pub fn new() -> Stats {
        Stats::default()
    }

    pub(crate) fn noop(&mut self, op: usize) {
        let c = self.ops.entry(name(Some(op))).or_default();
        c.noop = c.noop.saturating_add(1);
    }

    pub(crate) fn effect(&mut self, op: usize) {
        let c = self.ops.entry(name(Some(op))).or_default();
        c.effect = c.effect.saturating_add(1);
    }

    pub(crate) fn txs(
        &mut self,
        op: Option<usize>,
        sent: usize,
        included: usize,
        passed: usize,
        check_ok: usize,
    ) {
        let c = self.ops.entry(name(op)).or_default();
        let add = |a: &mut u64, n: usize| *a = a.saturating_add(n as u64);
        add(&mut c.sent, 1);
        add(&mut c.txs, sent);
        add(&mut c.included, included);
        add(&mut c.passed, passed);
        add(&mut c.check_ok, check_ok);
    }

    /// Sum over every operation.
    pub fn total(&self) -> OpCount {
        self.ops.values().fold(OpCount::default(), |a, c| OpCount {
            noop: a.noop.saturating_add(c.noop),
            effect: a.effect.saturating_add(c.effect),
            sent: a.sent.saturating_add(c.sent),
            txs: a.txs.saturating_add(c.txs),
            check_ok: a.check_ok.saturating_add(c.check_ok),
            included: a.included.saturating_add(c.included),
            passed: a.passed.saturating_add(c.passed),
        })
    }

    /// Operations drawn: no-ops, effects and those that sent transactions.
    pub fn operations(&self) -> u64 {
        let t = self.total();
        t.noop.saturating_add(t.effect).saturating_add(t.sent)
    }

    /// Adds another run's counters.
    pub fn merge(&mut self, other: &Stats) {
        for (k, c) in &other.ops {
            let e = self.ops.entry(k).or_default();
            e.noop = e.noop.saturating_add(c.noop);
            e.effect = e.effect.saturating_add(c.effect);
            e.sent = e.sent.saturating_add(c.sent);
            e.txs = e.txs.saturating_add(c.txs);
            e.check_ok = e.check_ok.saturating_add(c.check_ok);
            e.included = e.included.saturating_add(c.included);
            e.passed = e.passed.saturating_add(c.passed);
        }
        self.blocks = self.blocks.saturating_add(other.blocks);
        self.invariant_checks = self.invariant_checks.saturating_add(other.invariant_checks);
    }
}

/// The result of a successful run.
#[derive(Clone, Debug)]
pub struct Report {
    /// Seed.
    pub seed: u64,
    /// Blocks with faults on.
    pub safety_blocks: u64,
    /// Blocks the liveness phase needed.
    pub liveness_blocks: u64,
    /// Counters.
    pub stats: Stats,
    /// App hash after the last block.
    pub app_hash: [u8; 32],
    /// Orders, leases, slashes and validators by state at the end.
    pub census: BTreeMap<String, u64>,
    /// Wall time of the run in milliseconds.
    pub elapsed_ms: u64,
    /// Whether a second run of the seed gave the same app hash at every height.
    pub replayed: bool,
}

/// Blocks per second with one decimal, from integers.
pub fn per_second(count: u64, elapsed_ms: u64) -> String {
    let tenths = count
        .saturating_mul(10_000)
        .checked_div(elapsed_ms.max(1))
        .unwrap_or(0);
    format!("{}.{}", tenths / 10, tenths % 10)
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let blocks = self.stats.blocks;
        writeln!(
            f,
            "seed {}: {} blocks ({} with faults, {} liveness) in {} ms = {} blocks/s; app hash {}{}",
            self.seed,
            blocks,
            self.safety_blocks,
            self.liveness_blocks,
            self.elapsed_ms,
            per_second(blocks, self.elapsed_ms),
            hex::encode(self.app_hash),
            if self.replayed { " (replayed: identical at every height)" } else { "" },
        )?;
        write_ops(f, &self.stats)?;
        for (k, v) in &self.census {
            writeln!(f, "  {k}: {v}")?;
        }
        Ok(())
    }
}

/// The per-operation table.
pub fn write_ops(f: &mut impl fmt::Write, stats: &Stats) -> fmt::Result {
    writeln!(
        f,
        "  {:<32} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7}",
        "operation", "no-op", "effect", "sent", "txs", "checkok", "in-block", "passed"
    )?;
    for (name, c) in &stats.ops {
        writeln!(
            f,
            "  {:<32} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7}",
            name, c.noop, c.effect, c.sent, c.txs, c.check_ok, c.included, c.passed
        )?;
    }
    let t = stats.total();
    writeln!(
        f,
        "  {:<32} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7}",
        "total", t.noop, t.effect, t.sent, t.txs, t.check_ok, t.included, t.passed
    )?;
    let families = stats
        .invariant_checks
        .checked_div(stats.blocks)
        .unwrap_or(0);
    writeln!(
        f,
        "  invariant checks: {} ({} blocks × {} families)",
        stats.invariant_checks, stats.blocks, families
    )
}
