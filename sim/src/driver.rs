//! The block loop: generate operations from committed state, pass every transaction through
//! CheckTx, PrepareProposal and ProcessProposal, execute and commit the block on RocksDB,
//! check what each operation's transactions must have done, then the invariants.

use std::collections::BTreeMap;

use gpuchain_auction::AuctionParams;
use gpuchain_bank::BankRead;
use gpuchain_chain::{App, BlockInput};
use gpuchain_slashing::Evidence;
use gpuchain_staking::{consensus_address, ConsensusAddress, StakingRead};
use gpuchain_types::Address;

use crate::ops::{self, Expect, Gen, Planned, World, OPS};
use crate::report::Stats;
use crate::{abci, actors, invariants, Config, Failure, Rng};

/// One transaction of the block being built, and the operation that made it.
struct Candidate {
    op: Option<usize>,
    group: usize,
    raw: Vec<u8>,
    check_code: u32,
    /// Code in the block; `None` when PrepareProposal dropped it.
    block_code: Option<u32>,
}

/// A running simulation on a fresh RocksDB in a temporary directory.
pub struct Sim {
    app: App,
    _dir: tempfile::TempDir,
    world: World,
    rng: Rng,
    seed: u64,
    blocks: u64,
    max_ops: u64,
    initial_supply: u128,
    /// Every account that may ever be a provider (for reputation bounds).
    accounts: Vec<Address>,
    /// Committed height.
    pub height: u64,
    /// Time of the committed block, ms: blocks come 0.5 to 3 s apart, so that retention
    /// (counted in time) and deadlines (counted in blocks) drift against each other.
    pub time_ms: u64,
    /// App hash after every block, from height 1.
    pub hashes: Vec<[u8; 32]>,
    /// Counters for the report.
    pub stats: Stats,
    /// Auction parameters from genesis, for the liveness bound.
    pub auction: AuctionParams,
    /// Verify parameters from genesis, for the liveness bound.
    pub verify: gpuchain_verify::VerifyParams,
    /// Serving parameters from genesis, for the liveness bound.
    pub serving: gpuchain_serving::ServingParams,
}

/// The simulated chain's genesis time: 2026-01-01T00:00:00Z.
const GENESIS_TIME_MS: u64 = 1_767_225_600_000;

impl Sim {
    /// Genesis on a fresh store.
    pub fn new(config: &Config) -> anyhow::Result<Sim> {
        let dir = tempfile::tempdir()?;
        let app = App::open(dir.path())?;
        let population = actors::population();
        let genesis = actors::genesis(&population);
        app.init_chain_with(actors::CHAIN_ID, &genesis)?;
        let initial_supply = genesis.bank.balances.iter().map(|(_, v)| *v).sum();
        let accounts = population.iter().map(|a| a.address).collect();
        Ok(Sim {
            app,
            _dir: dir,
            world: World::new(population, genesis.tx.clone()),
            rng: Rng::new(config.seed),
            seed: config.seed,
            blocks: config.blocks,
            max_ops: config.max_ops_per_block,
            initial_supply,
            accounts,
            height: 0,
            time_ms: GENESIS_TIME_MS,
            hashes: Vec::new(),
            stats: Stats::new(),
            auction: genesis.auction.params,
            verify: genesis.verify.params,
            serving: genesis.serving.params,
        })
    }

    fn fail(&self, height: u64, what: impl Into<String>) -> Failure {
        Failure {
            seed: self.seed,
            height,
            blocks: self.blocks,
            what: what.into(),
        }
    }

    /// Generates, executes and commits one block, then checks it.
    pub fn step(&mut self, faults_on: bool) -> Result<(), Failure> {
        let h = self.height.saturating_add(1);
        let (mut cands, evidence, votes) = self.generate(h, faults_on);
        for c in &mut cands {
            c.check_code = abci::check_tx(&self.app, &c.raw);
        }
        let raws: Vec<Vec<u8>> = cands.iter().map(|c| c.raw.clone()).collect();
        let block = abci::prepare(&self.app, h, &raws);
        let hash = blake3::hash(&[self.seed.to_le_bytes(), h.to_le_bytes()].concat());
        if !abci::process(&self.app, h, hash.as_bytes(), &block) {
            return Err(self.fail(h, "ProcessProposal rejected our own PrepareProposal"));
        }
        let refs: Vec<&[u8]> = block.iter().map(Vec::as_slice).collect();
        let time_ms = self
            .time_ms
            .saturating_add(500 + u64::from(hash.as_bytes()[0] % 11) * 250);
        let input = BlockInput {
            height: h,
            hash: hash.as_bytes(),
            time_ms,
            txs: &refs,
            misbehavior: &evidence,
            votes: &votes,
        };
        let (outcome, app_hash) = self
            .app
            .finalize(&input)
            .map_err(|e| self.fail(h, format!("FinalizeBlock: {e:#}")))?;
        self.app
            .commit()
            .map_err(|e| self.fail(h, format!("Commit: {e:#}")))?;
        self.height = h;
        self.time_ms = time_ms;
        self.hashes.push(app_hash);
        // PrepareProposal keeps order and only drops: match the block back to candidates.
        let mut results = block.iter().zip(outcome.tx_results.iter()).peekable();
        for c in &mut cands {
            if let Some((raw, r)) = results.peek() {
                if **raw == c.raw {
                    c.block_code = Some(r.code);
                    results.next();
                }
            }
        }
        let accepted: Vec<Vec<u8>> = cands
            .iter()
            .filter(|c| c.block_code == Some(0))
            .map(|c| c.raw.clone())
            .collect();
        self.world.remember(&accepted);
        self.expectations(h, &cands)?;
        self.stats.blocks = self.stats.blocks.saturating_add(1);
        let checks = self
            .app
            .read_committed(|s| invariants::check_all(s, h, self.initial_supply, &self.accounts))
            .map_err(|e| self.fail(h, format!("invariant broken: {e}")))?;
        self.stats.invariant_checks = self.stats.invariant_checks.saturating_add(checks);
        Ok(())
    }

    /// Operations for block `h`, drawn against committed state.
    fn generate(
        &mut self,
        h: u64,
        faults_on: bool,
    ) -> (Vec<Candidate>, Vec<Evidence>, Vec<(ConsensusAddress, bool)>) {
        let (world, rng, stats, max_ops) = (
            &mut self.world,
            &mut self.rng,
            &mut self.stats,
            self.max_ops,
        );
        self.app.read_committed(|store| {
            let mut g = Gen {
                state: store,
                height: h,
                rng,
                world,
                faults_on,
                nonces: BTreeMap::new(),
                evidence: Vec::new(),
                orders: std::cell::OnceCell::new(),
                leases: std::cell::OnceCell::new(),
            };
            let mut cands = Vec::new();
            let mut group = 0usize;
            let n = g.rng.below(max_ops.saturating_add(1));
            for _ in 0..n {
                let Some(i) = ops::pick(g.rng, faults_on) else {
                    continue;
                };
                let Some(spec) = OPS.get(i) else { continue };
                match (spec.run)(&mut g) {
                    Planned::NoOp => stats.noop(i),
                    Planned::Effect => stats.effect(i),
                    Planned::Txs(txs) => {
                        group = group.saturating_add(1);
                        cands.extend(txs.into_iter().map(|raw| Candidate {
                            op: Some(i),
                            group,
                            raw,
                            check_code: 0,
                            block_code: None,
                        }));
                    }
                }
            }
            if !faults_on {
                let mut drained = ops::drain(&mut g);
                drained.extend(ops::drain_verdicts(&mut g));
                drained.extend(ops::drain_serving(&mut g));
                for raw in drained {
                    group = group.saturating_add(1);
                    cands.push(Candidate {
                        op: None,
                        group,
                        raw,
                        check_code: 0,
                        block_code: None,
                    });
                }
            }
            let votes = store
                .active_set()
                .into_iter()
                .map(|v| {
                    let offline = g
                        .world
                        .index
                        .get(&v.operator)
                        .is_some_and(|i| g.world.offline.contains(i));
                    (consensus_address(&v.pubkey), !offline)
                })
                .collect();
            let evidence = std::mem::take(&mut g.evidence);
            (cands, evidence, votes)
        })
    }

    /// Records outcomes and checks each operation's expectation.
    fn expectations(&mut self, h: u64, cands: &[Candidate]) -> Result<(), Failure> {
        let mut groups: BTreeMap<usize, Vec<&Candidate>> = BTreeMap::new();
        for c in cands {
            groups.entry(c.group).or_default().push(c);
        }
        for txs in groups.values() {
            let Some(first) = txs.first() else { continue };
            let passed = txs.iter().filter(|c| c.block_code == Some(0)).count();
            let included = txs.iter().filter(|c| c.block_code.is_some()).count();
            self.stats.txs(
                first.op,
                txs.len(),
                included,
                passed,
                txs.iter().filter(|c| c.check_code == 0).count(),
            );
            let Some(spec) = first.op.and_then(|i| OPS.get(i)) else {
                continue;
            };
            let broken = match spec.expect {
                Expect::Any => false,
                Expect::Rejected => passed > 0 || txs.iter().any(|c| c.check_code == 0),
                Expect::AtMostOne => passed > 1,
            };
            if broken {
                return Err(self.fail(
                    h,
                    format!(
                        "operation {} must be refused but {passed} of {} transactions passed (CheckTx codes {:?})",
                        spec.name,
                        txs.len(),
                        txs.iter().map(|c| c.check_code).collect::<Vec<_>>()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Liveness: whether every order has closed and escrow is empty.
    pub fn settled(&self) -> Result<(), String> {
        self.app.read_committed(invariants::all_settled)
    }

    /// Counts of orders and leases by state, slashes and validator fates, for the report.
    pub fn census(&self) -> BTreeMap<String, u64> {
        self.app.read_committed(|s| {
            use gpuchain_auction::AuctionRead;
            use gpuchain_slashing::SlashingRead;
            let mut out: BTreeMap<String, u64> = BTreeMap::new();
            let mut bump = |k: String| {
                let n = out.entry(k).or_default();
                *n = n.saturating_add(1);
            };
            s.orders()
                .iter()
                .for_each(|o| bump(format!("orders {:?}", o.state)));
            s.leases()
                .iter()
                .for_each(|l| bump(format!("leases {}", l.state.name())));
            s.slash_records()
                .iter()
                .for_each(|r| bump(format!("slashes {}", r.reason.name())));
            for v in s.validators() {
                if v.tombstoned {
                    bump("validators tombstoned".into());
                } else if v.jailed {
                    bump("validators jailed".into());
                } else {
                    bump("validators active".into());
                }
            }
            {
                use gpuchain_verify::{CaseOutcome, VerifyRead};
                for c in s.cases() {
                    match c.outcome {
                        CaseOutcome::Open => bump("cases open".into()),
                        CaseOutcome::NoVerdict => bump("cases no verdict".into()),
                        CaseOutcome::Settled(v) => bump(format!("cases settled {}", v.name())),
                    }
                    if c.appellant.is_some() {
                        bump("cases appealed".into());
                    }
                    if c.challenge_id.is_some() {
                        bump("cases opened by a ringer".into());
                    }
                }
                let verifiers = s.verifiers();
                out.insert(
                    "verifiers registered".into(),
                    u64::try_from(verifiers.len()).unwrap_or(u64::MAX),
                );
                let misses = verifiers
                    .iter()
                    .fold(0u64, |a, v| a.saturating_add(v.misses));
                let overturned = verifiers
                    .iter()
                    .fold(0u64, |a, v| a.saturating_add(v.overturned));
                out.insert("verifier misses".into(), misses);
                out.insert("verifier verdicts overturned".into(), overturned);
            }
            let providers = u64::try_from(s.providers().len()).unwrap_or(u64::MAX);
            out.insert("providers registered".into(), providers);
            out.insert(
                "supply ugpu".into(),
                u64::try_from(s.supply()).unwrap_or(u64::MAX),
            );
            out
        })
    }
}
