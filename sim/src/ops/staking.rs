//! x/staking and x/slashing operations, and validator faults outside transactions (going
//! offline, double-signing).

use gpuchain_slashing::{Evidence, EvidenceKind, MsgUnjail, SlashingMsg};
use gpuchain_staking::{
    consensus_address, MsgBondProvider, MsgCreateValidator, MsgDelegateSelf, MsgDeregisterProvider,
    MsgEditValidator, MsgRegisterProvider, MsgUnbondProvider, MsgUnbondValidator,
    MsgUpdateProvider, StakingMsg, StakingRead,
};
use gpuchain_tx::Msg;

use super::{Gen, Planned};
use crate::actors::{attrs, Role, GPU};

fn staking(m: StakingMsg) -> Msg {
    Msg::Staking(m)
}

fn is_newcomer(g: &Gen<'_>, i: usize) -> bool {
    g.world
        .actors
        .get(i)
        .is_some_and(|a| a.role == Role::Newcomer)
}

/// A newcomer registers as a provider (GPU or CPU at random).
pub(super) fn register_provider(g: &mut Gen<'_>) -> Planned {
    let Some(who) =
        g.actor_where(|g, i| is_newcomer(g, i) && g.state.provider(&g.addr(i)).is_none())
    else {
        return Planned::NoOp;
    };
    let cpu = g.rng.one_in(4);
    let bond = u128::from(g.rng.range(100, 400)) * GPU;
    let msg = StakingMsg::RegisterProvider(MsgRegisterProvider {
        attrs: attrs(who, cpu),
        bond,
    });
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

/// Registers with impossible hardware (a GPU box with no GPUs).
pub(super) fn register_bad_attrs(g: &mut Gen<'_>) -> Planned {
    let who = g.any_actor();
    let mut bad = attrs(who, false);
    bad.gpu_count = 0;
    let msg = StakingMsg::RegisterProvider(MsgRegisterProvider {
        attrs: bad,
        bond: 200 * GPU,
    });
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

/// A provider adds to its bond.
pub(super) fn bond_provider(g: &mut Gen<'_>) -> Planned {
    let Some((who, _)) = g.provider_actor() else {
        return Planned::NoOp;
    };
    let amount = u128::from(g.rng.range(1, 100)) * GPU;
    let msg = StakingMsg::BondProvider(MsgBondProvider { amount });
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

/// A provider unbonds part of its bond (sometimes more than it may).
pub(super) fn unbond_provider(g: &mut Gen<'_>) -> Planned {
    let Some((who, p)) = g.provider_actor() else {
        return Planned::NoOp;
    };
    let amount = (p.bonded / 10).max(1);
    let msg = StakingMsg::UnbondProvider(MsgUnbondProvider { amount });
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

/// A provider re-declares its hardware.
pub(super) fn update_provider(g: &mut Gen<'_>) -> Planned {
    let Some((who, p)) = g.provider_actor() else {
        return Planned::NoOp;
    };
    let mut a = p.attrs;
    a.driver_version = format!("550.{}", g.rng.below(100));
    let msg = StakingMsg::UpdateProvider(MsgUpdateProvider { attrs: a });
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

/// A newcomer provider leaves (refused while it has open leases).
pub(super) fn deregister_provider(g: &mut Gen<'_>) -> Planned {
    let Some(who) =
        g.actor_where(|g, i| is_newcomer(g, i) && g.state.provider(&g.addr(i)).is_some())
    else {
        return Planned::NoOp;
    };
    let msg = StakingMsg::DeregisterProvider(MsgDeregisterProvider {});
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

/// A newcomer creates a validator.
pub(super) fn create_validator(g: &mut Gen<'_>) -> Planned {
    let Some(who) =
        g.actor_where(|g, i| is_newcomer(g, i) && g.state.validator(&g.addr(i)).is_none())
    else {
        return Planned::NoOp;
    };
    let consensus_pubkey = g
        .world
        .actors
        .get(who)
        .map(|a| a.consensus_key)
        .unwrap_or_default();
    let msg = StakingMsg::CreateValidator(MsgCreateValidator {
        consensus_pubkey,
        moniker: format!("newcomer-{who}"),
        self_bond: u128::from(g.rng.range(10, 300)) * GPU,
    });
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

fn validator_actor(g: &mut Gen<'_>) -> Option<(usize, gpuchain_staking::Validator)> {
    let ours: Vec<(usize, gpuchain_staking::Validator)> = g
        .state
        .validators()
        .into_iter()
        .filter_map(|v| g.world.index.get(&v.operator).map(|&i| (i, v)))
        .collect();
    g.rng.pick(&ours).cloned()
}

/// A validator bonds more.
pub(super) fn delegate_self(g: &mut Gen<'_>) -> Planned {
    let Some((who, _)) = validator_actor(g) else {
        return Planned::NoOp;
    };
    let amount = u128::from(g.rng.range(1, 50)) * GPU;
    let msg = StakingMsg::DelegateSelf(MsgDelegateSelf { amount });
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

/// A validator unbonds a fifth of its bond.
pub(super) fn unbond_validator(g: &mut Gen<'_>) -> Planned {
    let Some((who, v)) = validator_actor(g) else {
        return Planned::NoOp;
    };
    let msg = StakingMsg::UnbondValidator(MsgUnbondValidator {
        amount: (v.bonded / 5).max(1),
    });
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

/// A validator renames itself.
pub(super) fn edit_validator(g: &mut Gen<'_>) -> Planned {
    let Some((who, _)) = validator_actor(g) else {
        return Planned::NoOp;
    };
    let msg = StakingMsg::EditValidator(MsgEditValidator {
        moniker: format!("v{who}-{}", g.height),
    });
    Planned::Txs(vec![g.tx(who, vec![staking(msg)])])
}

fn unjail_msg() -> Msg {
    Msg::Slashing(SlashingMsg::Unjail(MsgUnjail {}))
}

/// A jailed validator whose jail time is served comes back online and unjails.
pub(super) fn unjail(g: &mut Gen<'_>) -> Planned {
    let h = g.height;
    let Some(who) = g.actor_where(|g, i| {
        g.state
            .validator(&g.addr(i))
            .is_some_and(|v| v.jailed && !v.tombstoned && v.jailed_until <= h)
    }) else {
        return Planned::NoOp;
    };
    g.world.offline.remove(&who);
    Planned::Txs(vec![g.tx(who, vec![unjail_msg()])])
}

/// A validator that is not jailed, or still serving its time, tries to unjail.
pub(super) fn unjail_early(g: &mut Gen<'_>) -> Planned {
    let h = g.height;
    let Some(who) = g.actor_where(|g, i| {
        g.state
            .validator(&g.addr(i))
            .is_some_and(|v| !v.jailed || v.tombstoned || v.jailed_until > h)
    }) else {
        return Planned::NoOp;
    };
    Planned::Txs(vec![g.tx(who, vec![unjail_msg()])])
}

/// The first genesis validator: always online and never double-signs, so the set is never
/// empty.
fn first_validator(g: &Gen<'_>) -> Option<usize> {
    g.world
        .actors
        .iter()
        .position(|a| a.role == Role::Validator)
}

/// A validator stops signing blocks until it comes back (downtime jail follows).
pub(super) fn go_offline(g: &mut Gen<'_>) -> Planned {
    let first = first_validator(g);
    let Some((who, _)) = validator_actor(g) else {
        return Planned::NoOp;
    };
    if Some(who) == first {
        return Planned::NoOp;
    }
    g.world.offline.insert(who);
    Planned::Effect
}

/// An offline validator signs again.
pub(super) fn come_online(g: &mut Gen<'_>) -> Planned {
    let offline: Vec<usize> = g.world.offline.iter().copied().collect();
    let Some(&who) = g.rng.pick(&offline) else {
        return Planned::NoOp;
    };
    g.world.offline.remove(&who);
    Planned::Effect
}

/// CometBFT reports misbehaviour evidence against a validator (never the first one).
pub(super) fn double_sign(g: &mut Gen<'_>) -> Planned {
    // Rare: a tombstone is forever.
    if !g.rng.one_in(5) {
        return Planned::NoOp;
    }
    let first = first_validator(g);
    let candidates: Vec<[u8; 32]> = g
        .state
        .validators()
        .into_iter()
        .filter(|v| !v.tombstoned && g.world.index.get(&v.operator) != first.as_ref())
        .map(|v| v.consensus_pubkey)
        .collect();
    // Keep a few validators to jail and unjail for the rest of a long run.
    if candidates.len() < 3 {
        return Planned::NoOp;
    }
    let Some(pubkey) = g.rng.pick(&candidates).copied() else {
        return Planned::NoOp;
    };
    g.evidence.push(Evidence {
        kind: if g.rng.one_in(2) {
            EvidenceKind::DuplicateVote
        } else {
            EvidenceKind::LightClientAttack
        },
        consensus_address: consensus_address(&pubkey),
        height: g.height.saturating_sub(1).max(1),
    });
    Planned::Effect
}
