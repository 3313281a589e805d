//! Upgrades this binary can run: the migration registry, and the start of every block,
//! where x/upgrade decides whether a scheduled plan's migration runs now, or whether this
//! binary must halt (docs/operations.md "Upgrading the chain").

use gpuchain_types::{AppError, BlockCtx, Event, Overlay, StateRead, StateWrite, Write};

use super::layered::Layered;

/// A state migration: runs once, at the start of its plan's block, before the block's
/// transactions, on the state the previous block committed. It must be deterministic like
/// any block code; an error halts the node (every honest node would fail alike).
pub type MigrationFn = fn(&mut dyn StateWrite, &BlockCtx) -> Result<(), AppError>;

/// One registered migration.
#[derive(Clone, Copy)]
pub struct Migration {
    /// The plan name validators signal for it.
    pub name: &'static str,
    /// What it changes.
    pub run: MigrationFn,
}

/// The migrations a binary registers, old and new: a release keeps every earlier release's
/// names, so that it accepts state those upgrades produced.
#[derive(Clone, Default)]
pub struct Upgrades {
    migrations: Vec<Migration>,
}

impl Upgrades {
    /// No migrations: the first release.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `migration`; its name must be valid and new.
    pub fn register(mut self, migration: Migration) -> anyhow::Result<Self> {
        gpuchain_upgrade::check_name(migration.name)?;
        anyhow::ensure!(
            !self.knows(migration.name),
            "upgrade {:?} is registered twice",
            migration.name
        );
        self.migrations.push(migration);
        Ok(self)
    }

    /// Whether a migration is registered under `name`.
    pub fn knows(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    fn get(&self, name: &str) -> Option<&Migration> {
        self.migrations.iter().find(|m| m.name == name)
    }

    /// Registered names, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.migrations.iter().map(|m| m.name).collect()
    }

    /// Whether this binary may execute the block after `state`: the same checks as the
    /// start of a block, made before the node serves anything, so an operator who started
    /// the wrong release hears it at once.
    pub fn check_startup(&self, state: &dyn StateRead, next_height: u64) -> anyhow::Result<()> {
        gpuchain_upgrade::begin_block(state, next_height, |n| self.knows(n))?;
        Ok(())
    }
}

/// The migrations this release of gpuchaind registers. None yet: the chain runs the state
/// layout it was launched with. A release that changes the layout adds its migration here
/// (and keeps the earlier ones).
pub fn released() -> Upgrades {
    Upgrades::new()
}

/// The start of a block: runs a plan due at `ctx.height` if this binary registers it,
/// appending its writes to `writes`. An error means this binary must not execute the block.
pub(crate) fn begin_block(
    base: &dyn StateRead,
    writes: &mut Write,
    ctx: &BlockCtx,
    upgrades: &Upgrades,
) -> Result<Vec<Event>, AppError> {
    let layered = Layered { top: writes, base };
    let Some(plan) = gpuchain_upgrade::begin_block(&layered, ctx.height, |n| upgrades.knows(n))?
    else {
        return Ok(Vec::new());
    };
    let Some(migration) = upgrades.get(&plan.name) else {
        return Err(gpuchain_upgrade::UpgradeError::Needed {
            name: plan.name,
            height: plan.height,
        }
        .into());
    };
    let mut fork = Overlay::new(&layered);
    (migration.run)(&mut fork, ctx)?;
    gpuchain_upgrade::record_applied(&mut fork, &plan, ctx.height);
    let (w, events) = fork.into_parts();
    writes.extend(w);
    Ok(events)
}
