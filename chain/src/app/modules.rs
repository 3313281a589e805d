//! The app's modules in their one order. InitChain writes their genesis sections in this
//! order, each message goes to the module that owns its variant, its state's invariants are
//! checked in this order ([`check_invariants`]: the simulator after every block), and every
//! block ends with
//! each module's end-of-block work in this order: slashing first (the block's evidence and
//! missed signatures), then the market (auction, then verify, which judges what the auction
//! settled, then serving, whose audits slash through the same modules), and staking last, which turns the block's bonds, unbonds, jailings and slashes
//! into the validator updates. Adding a module is one entry here, its message variant in
//! x/tx and its section in `AppGenesis`. (x/upgrade's start-of-block check needs the
//! release's migrations, so `upgrade::begin_block` runs it before the transactions.)

use gpuchain_auction::AuctionRead;
use gpuchain_bank::BankRead;
use gpuchain_genesis::AppGenesis;
use gpuchain_serving::ServingRead;
use gpuchain_staking::{StakingRead, ValidatorUpdate};
use gpuchain_tx::Msg;
use gpuchain_types::{Address, AppError, BlockCtx, Overlay};
use gpuchain_verify::VerifyRead;

use super::execute::BlockInput;
use super::invariants;
use crate::Store;

/// Writes a module's genesis section; staking returns the starting validator set.
type Genesis = fn(&mut Overlay<'_>, &AppGenesis) -> Result<Vec<ValidatorUpdate>, String>;

/// Runs a message if the module owns its variant; `None` if it does not.
type Route = fn(&mut Overlay<'_>, &BlockCtx, &Address, &Msg) -> Option<Result<(), AppError>>;

/// A module's end-of-block work; staking returns the validator updates.
type EndBlock =
    fn(&mut Overlay<'_>, &BlockCtx, &BlockInput<'_>) -> Result<Vec<ValidatorUpdate>, AppError>;

/// What must hold of a module's committed state (its money in escrow matching what it
/// owes, its indexes matching its objects); what is broken, if anything.
type Invariants = fn(&Store) -> Result<(), String>;

/// One module's part in every phase of the app.
pub(crate) struct Module {
    /// The module's name: its genesis section, codespace and state-key root.
    pub(crate) name: &'static str,
    /// Its genesis section.
    pub(crate) genesis: Genesis,
    /// Its messages.
    pub(crate) route: Route,
    /// Its end-of-block work.
    pub(crate) end_block: EndBlock,
    /// Its invariants.
    pub(crate) invariants: Invariants,
}

/// Every module, in the order of every phase.
pub(crate) const MODULES: [Module; 8] = [
    Module {
        name: "bank",
        genesis: |s, g| no_validators(g.bank.apply(s)),
        route: |s, _, signer, msg| match msg {
            Msg::Bank(m) => Some(bank(s, signer, m)),
            _ => None,
        },
        end_block: nothing_at_the_end,
        invariants: nothing_to_check,
    },
    Module {
        name: "slashing",
        genesis: |s, g| no_validators(g.slashing.apply(s)),
        route: |s, ctx, signer, msg| match msg {
            Msg::Slashing(m) => Some(slashing(s, ctx, signer, m)),
            _ => None,
        },
        end_block: slashing_end_block,
        invariants: nothing_to_check,
    },
    Module {
        name: "reputation",
        genesis: |s, g| no_validators(g.reputation.apply(s)),
        route: |_, _, _, _| None,
        end_block: nothing_at_the_end,
        invariants: nothing_to_check,
    },
    Module {
        name: "auction",
        genesis: |s, g| no_validators(g.auction.apply(s)),
        route: |s, ctx, signer, msg| match msg {
            Msg::Auction(m) => Some(auction(s, ctx, signer, m)),
            _ => None,
        },
        end_block: |s, ctx, _| {
            gpuchain_auction::end_block(s, ctx)?;
            Ok(Vec::new())
        },
        invariants: |s| {
            gpuchain_auction::escrow::check_invariants(s)?;
            invariants::leases(s)
        },
    },
    Module {
        name: "verify",
        genesis: |s, g| no_validators(g.verify.apply(s)),
        route: |s, ctx, signer, msg| match msg {
            Msg::Verify(m) => Some(verify(s, ctx, signer, m)),
            _ => None,
        },
        end_block: |s, ctx, _| {
            gpuchain_verify::end_block(s, ctx)?;
            Ok(Vec::new())
        },
        invariants: |s| {
            gpuchain_verify::check_invariants(s)?;
            invariants::verify_cases(s)
        },
    },
    Module {
        name: "serving",
        genesis: |s, g| no_validators(g.serving.apply(s)),
        route: |s, ctx, signer, msg| match msg {
            Msg::Serving(m) => Some(serving(s, ctx, signer, m)),
            _ => None,
        },
        end_block: |s, ctx, _| {
            gpuchain_serving::end_block(s, ctx)?;
            Ok(Vec::new())
        },
        invariants: |s| gpuchain_serving::check_invariants(s),
    },
    Module {
        name: "staking",
        genesis: |s, g| g.staking.apply(s).map_err(|e| e.to_string()),
        route: |s, ctx, signer, msg| match msg {
            Msg::Staking(m) => Some(staking(s, ctx, signer, m)),
            _ => None,
        },
        end_block: |s, ctx, _| Ok(gpuchain_staking::end_block(s, ctx)?),
        invariants: invariants::stakes,
    },
    Module {
        name: "upgrade",
        genesis: |_, _| Ok(Vec::new()),
        route: |s, ctx, signer, msg| match msg {
            Msg::Upgrade(m) => Some(upgrade(s, ctx, signer, m)),
            _ => None,
        },
        end_block: nothing_at_the_end,
        invariants: nothing_to_check,
    },
];

/// Checks every module's invariants on committed state `s`, in the table's order; how many
/// modules were checked, or the first broken invariant, named by its module.
pub fn check_invariants(s: &Store) -> Result<u64, String> {
    let mut checked = 0u64;
    for m in &MODULES {
        (m.invariants)(s).map_err(|e| format!("{}: {e}", m.name))?;
        checked = checked.saturating_add(1);
    }
    Ok(checked)
}

fn nothing_to_check(_: &Store) -> Result<(), String> {
    Ok(())
}

/// A genesis section that starts no validators, its error as text.
fn no_validators<E: std::fmt::Display>(
    applied: Result<(), E>,
) -> Result<Vec<ValidatorUpdate>, String> {
    applied.map(|()| Vec::new()).map_err(|e| e.to_string())
}

fn nothing_at_the_end(
    _: &mut Overlay<'_>,
    _: &BlockCtx,
    _: &BlockInput<'_>,
) -> Result<Vec<ValidatorUpdate>, AppError> {
    Ok(Vec::new())
}

fn slashing_end_block(
    s: &mut Overlay<'_>,
    ctx: &BlockCtx,
    input: &BlockInput<'_>,
) -> Result<Vec<ValidatorUpdate>, AppError> {
    for evidence in input.misbehavior {
        gpuchain_slashing::handle_evidence(s, ctx, evidence)?;
    }
    gpuchain_slashing::handle_commit_info(s, ctx, input.votes)?;
    Ok(Vec::new())
}

fn bank(s: &mut Overlay<'_>, signer: &Address, m: &gpuchain_bank::BankMsg) -> Result<(), AppError> {
    gpuchain_bank::handler::check_stateless(m, || s.bank_params())?;
    gpuchain_bank::handler::execute(s, signer, m)?;
    Ok(())
}

fn staking(
    s: &mut Overlay<'_>,
    ctx: &BlockCtx,
    signer: &Address,
    m: &gpuchain_staking::StakingMsg,
) -> Result<(), AppError> {
    gpuchain_staking::handler::check_stateless(m, &s.staking_params())?;
    gpuchain_staking::handler::execute(s, ctx, signer, m)?;
    Ok(())
}

fn slashing(
    s: &mut Overlay<'_>,
    ctx: &BlockCtx,
    signer: &Address,
    m: &gpuchain_slashing::SlashingMsg,
) -> Result<(), AppError> {
    gpuchain_slashing::handler::check_stateless(m)?;
    gpuchain_slashing::handler::execute(s, ctx, signer, m)?;
    Ok(())
}

fn auction(
    s: &mut Overlay<'_>,
    ctx: &BlockCtx,
    signer: &Address,
    m: &gpuchain_auction::AuctionMsg,
) -> Result<(), AppError> {
    gpuchain_auction::handler::check_stateless(m, &s.auction_params())?;
    gpuchain_auction::handler::execute(s, ctx, signer, m)?;
    Ok(())
}

fn verify(
    s: &mut Overlay<'_>,
    ctx: &BlockCtx,
    signer: &Address,
    m: &gpuchain_verify::VerifyMsg,
) -> Result<(), AppError> {
    gpuchain_verify::handler::check_stateless(m, &s.verify_params())?;
    gpuchain_verify::handler::execute(s, ctx, signer, m)?;
    Ok(())
}

fn upgrade(
    s: &mut Overlay<'_>,
    ctx: &BlockCtx,
    signer: &Address,
    m: &gpuchain_upgrade::UpgradeMsg,
) -> Result<(), AppError> {
    gpuchain_upgrade::handler::check_stateless(m)?;
    gpuchain_upgrade::handler::execute(s, ctx, signer, m)?;
    Ok(())
}

fn serving(
    s: &mut Overlay<'_>,
    ctx: &BlockCtx,
    signer: &Address,
    m: &gpuchain_serving::ServingMsg,
) -> Result<(), AppError> {
    gpuchain_serving::handler::check_stateless(m, &s.serving_params())?;
    gpuchain_serving::handler::execute(s, ctx, signer, m)?;
    Ok(())
}

/// Runs one message in the module that owns its variant (every variant has one: tested
/// below).
pub(crate) fn route(
    state: &mut Overlay<'_>,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &Msg,
) -> Result<(), AppError> {
    MODULES
        .iter()
        .find_map(|m| (m.route)(state, ctx, signer, msg))
        .unwrap_or(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One message of every variant; the match fails to compile when x/tx gains a variant,
    /// so that the new one is listed here and given its module.
    fn one_of_each() -> Vec<Msg> {
        let msgs = vec![
            Msg::Bank(gpuchain_bank::BankMsg::Send(gpuchain_bank::MsgSend {
                to: Address([1; 20]),
                amount: 1,
            })),
            Msg::Staking(gpuchain_staking::StakingMsg::DelegateSelf(
                gpuchain_staking::MsgDelegateSelf { amount: 1 },
            )),
            Msg::Slashing(gpuchain_slashing::SlashingMsg::Unjail(
                gpuchain_slashing::MsgUnjail {},
            )),
            Msg::Auction(gpuchain_auction::AuctionMsg::WithdrawRewards(
                gpuchain_auction::MsgWithdrawRewards {},
            )),
            Msg::Verify(gpuchain_verify::VerifyMsg::RegisterVerifier(
                gpuchain_verify::MsgRegisterVerifier { bond: 1 },
            )),
            Msg::Upgrade(gpuchain_upgrade::UpgradeMsg::Withdraw(
                gpuchain_upgrade::MsgWithdrawSignal {},
            )),
            Msg::Serving(gpuchain_serving::ServingMsg::End(
                gpuchain_serving::MsgEndServing { order_id: 1 },
            )),
        ];
        for msg in &msgs {
            match msg {
                Msg::Bank(_)
                | Msg::Staking(_)
                | Msg::Slashing(_)
                | Msg::Auction(_)
                | Msg::Verify(_)
                | Msg::Upgrade(_)
                | Msg::Serving(_) => {}
            }
        }
        msgs
    }

    #[test]
    fn every_message_variant_has_exactly_one_module() {
        let empty = gpuchain_types::MemState::new();
        let ctx = BlockCtx {
            height: 1,
            chain_id: "t".into(),
            entropy: [0; 32],
            time_ms: 0,
        };
        for msg in &one_of_each() {
            let owners = MODULES
                .iter()
                .filter(|m| {
                    let mut fork = Overlay::new(&empty);
                    (m.route)(&mut fork, &ctx, &Address([2; 20]), msg).is_some()
                })
                .count();
            assert_eq!(owners, 1, "{} is routed by {owners} modules", msg.name());
        }
    }

    #[test]
    fn module_names_are_unique_and_staking_ends_the_block() {
        let names: Vec<&str> = MODULES.iter().map(|m| m.name).collect();
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len());
        let staking = names.iter().position(|n| *n == "staking");
        let market = names.iter().position(|n| *n == "verify");
        assert!(
            staking > market,
            "validator updates must see the block's slashes"
        );
    }
}
