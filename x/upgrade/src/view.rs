use gpuchain_types::{Address, StateRead, StateReadExt, StateWrite, StateWriteExt};

use crate::{state_key, AppliedUpgrade, Plan};

/// Typed upgrade reads.
pub trait UpgradeRead: StateRead {
    /// The scheduled plan.
    fn upgrade_plan(&self) -> Option<Plan> {
        self.get(state_key::plan())
    }

    /// Every standing signal: (operator key suffix, plan), in operator order.
    fn upgrade_signals(&self) -> Vec<(String, Plan)> {
        self.prefix(state_key::signals_prefix())
            .into_iter()
            .map(|(k, p)| {
                let operator = k
                    .strip_prefix(state_key::signals_prefix())
                    .unwrap_or(&k)
                    .to_string();
                (operator, p)
            })
            .collect()
    }

    /// The signal of one operator.
    fn upgrade_signal(&self, operator: &Address) -> Option<Plan> {
        self.get(&state_key::signal(operator))
    }

    /// One applied upgrade by name.
    fn applied_upgrade(&self, name: &str) -> Option<AppliedUpgrade> {
        self.get(&state_key::applied(name))
    }

    /// Every applied upgrade, in name order.
    fn applied_upgrades(&self) -> Vec<AppliedUpgrade> {
        self.prefix(state_key::applied_prefix())
            .into_iter()
            .map(|(_, a)| a)
            .collect()
    }
}

impl<S: StateRead + ?Sized> UpgradeRead for S {}

/// Typed upgrade writes.
pub trait UpgradeWrite: StateWrite {
    /// Schedules `plan`.
    fn put_upgrade_plan(&mut self, plan: &Plan) {
        self.put(state_key::plan().to_string(), plan);
    }

    /// Clears the plan.
    fn delete_upgrade_plan(&mut self) {
        self.delete(state_key::plan().to_string());
    }

    /// Records `operator`'s signal.
    fn put_upgrade_signal(&mut self, operator: &Address, plan: &Plan) {
        self.put(state_key::signal(operator), plan);
    }

    /// Removes `operator`'s signal.
    fn delete_upgrade_signal(&mut self, operator: &Address) {
        self.delete(state_key::signal(operator));
    }

    /// Removes every standing signal.
    fn clear_upgrade_signals(&mut self) {
        for (key, _) in self.prefix_raw(state_key::signals_prefix()) {
            self.delete(key);
        }
    }

    /// Records an applied upgrade.
    fn put_applied_upgrade(&mut self, applied: &AppliedUpgrade) {
        self.put(state_key::applied(&applied.name), applied);
    }
}

impl<S: StateWrite + ?Sized> UpgradeWrite for S {}
