use gpuchain_types::{Address, Amount, StateRead, StateReadExt, StateWrite, StateWriteExt};

use crate::{state_key, Account, BankError, BankParams, TransferEvent};

/// Why [`BankWrite::charge_signer`] refused a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChargeError {
    /// The transaction's nonce is not the account's next one.
    BadNonce {
        /// The account's next nonce.
        expected: u64,
    },
    /// The account cannot pay the fee.
    CannotPayFee {
        /// The account's balance.
        balance: Amount,
    },
}

/// Typed bank reads.
pub trait BankRead: StateRead {
    /// The account record of `address` (both fields zero for unknown accounts).
    fn account(&self, address: &Address) -> Account {
        self.get(&state_key::account(address)).unwrap_or_default()
    }

    /// Balance of `address` in ugpu (0 for unknown accounts).
    fn balance(&self, address: &Address) -> Amount {
        self.account(address).balance
    }

    /// The nonce the next transaction signed by `address` must carry.
    fn nonce(&self, address: &Address) -> u64 {
        self.account(address).nonce
    }

    /// The account whose transfer first funded `address` (`None` for accounts funded at
    /// genesis or by a mint). Verifier draws use it to keep an order's parties and the
    /// accounts that funded them, or were funded by them, off its cases.
    fn funder(&self, address: &Address) -> Option<Address> {
        self.get(&state_key::funder(address))
    }

    /// Total supply in ugpu.
    fn supply(&self) -> Amount {
        self.get(state_key::supply()).unwrap_or(0)
    }

    /// Module parameters.
    fn bank_params(&self) -> BankParams {
        self.get(state_key::params()).unwrap_or_default()
    }

    /// Every account's balance (accounts that only hold a nonce included, at 0), in
    /// address order.
    fn all_balances(&self) -> Vec<(String, Amount)> {
        self.prefix::<Account>(state_key::accounts_prefix())
            .into_iter()
            .map(|(key, account)| (key, account.balance))
            .collect()
    }
}

impl<S: StateRead + ?Sized> BankRead for S {}

/// Typed bank writes. Every method either applies fully or changes nothing.
pub trait BankWrite: StateWrite {
    /// Stores the module parameters.
    fn put_bank_params(&mut self, params: &BankParams) {
        self.put(state_key::params().to_string(), params);
    }

    /// Moves `amount` from `from` to `to`.
    fn transfer(&mut self, from: &Address, to: &Address, amount: Amount) -> Result<(), BankError> {
        if amount == 0 {
            return Err(BankError::ZeroAmount);
        }
        let mut payer = self.account(from);
        let new_from = payer
            .balance
            .checked_sub(amount)
            .ok_or(BankError::InsufficientFunds {
                address: *from,
                available: payer.balance,
                required: amount,
            })?;
        if from == to {
            return Ok(());
        }
        payer.balance = new_from;
        pay(self, from, &payer, to, amount)
    }

    /// The ante handler's update of a transaction signer's account: checks that the
    /// transaction carries the account's `nonce`, moves the `fee` to `to` and bumps the
    /// nonce, reading and writing the signer's account once. Nothing is written on error.
    fn charge_signer(
        &mut self,
        signer: &Address,
        nonce: u64,
        fee: Amount,
        to: &Address,
    ) -> Result<(), ChargeError> {
        let mut account = self.account(signer);
        if nonce != account.nonce {
            return Err(ChargeError::BadNonce {
                expected: account.nonce,
            });
        }
        let cannot_pay = ChargeError::CannotPayFee {
            balance: account.balance,
        };
        let remaining = account.balance.checked_sub(fee).ok_or(cannot_pay)?;
        // A u64 nonce cannot be exhausted by any real account; saturate rather than wrap.
        account.nonce = account.nonce.saturating_add(1);
        // As in `transfer`, a payment to oneself checks the funds and moves nothing.
        if fee > 0 && signer != to {
            account.balance = remaining;
            pay(self, signer, &account, to, fee).map_err(|_| cannot_pay)
        } else {
            put_account(self, signer, &account);
            Ok(())
        }
    }

    /// Creates `amount` new ugpu in `to` (genesis and protocol rewards only).
    fn mint(&mut self, to: &Address, amount: Amount) -> Result<(), BankError> {
        let supply = self
            .supply()
            .checked_add(amount)
            .ok_or(BankError::Overflow)?;
        let balance = self
            .balance(to)
            .checked_add(amount)
            .ok_or(BankError::Overflow)?;
        set_balance(self, to, balance);
        self.put(state_key::supply().to_string(), &supply);
        Ok(())
    }

    /// Destroys `amount` ugpu held by `from` (the burned share of slashes).
    fn burn(&mut self, from: &Address, amount: Amount) -> Result<(), BankError> {
        let balance = self.balance(from);
        let new_balance = balance
            .checked_sub(amount)
            .ok_or(BankError::InsufficientFunds {
                address: *from,
                available: balance,
                required: amount,
            })?;
        let supply = self
            .supply()
            .checked_sub(amount)
            .ok_or(BankError::Overflow)?;
        set_balance(self, from, new_balance);
        self.put(state_key::supply().to_string(), &supply);
        Ok(())
    }
}

impl<S: StateWrite + ?Sized> BankWrite for S {}

/// Sets the balance of `address`, keeping its nonce.
fn set_balance<S: StateWrite + ?Sized>(state: &mut S, address: &Address, amount: Amount) {
    let mut account = state.account(address);
    account.balance = amount;
    put_account(state, address, &account);
}

/// Writes `payer`, already debited by `amount`, as `from`'s account, credits `to` (another
/// account) and records the transfer. Fails, having written nothing, if `to`'s balance
/// would overflow.
fn pay<S: StateWrite + ?Sized>(
    state: &mut S,
    from: &Address,
    payer: &Account,
    to: &Address,
    amount: Amount,
) -> Result<(), BankError> {
    let mut payee = state.account(to);
    let first_funding = payee.is_empty() && state.funder(to).is_none();
    payee.balance = payee
        .balance
        .checked_add(amount)
        .ok_or(BankError::Overflow)?;
    put_account(state, from, payer);
    put_account(state, to, &payee);
    if first_funding {
        state.put(state_key::funder(to), from);
    }
    state.emit(
        TransferEvent {
            from: *from,
            to: *to,
            amount,
        }
        .into(),
    );
    Ok(())
}

/// Empty accounts are deleted so that state holds only live accounts.
fn put_account<S: StateWrite + ?Sized>(state: &mut S, address: &Address, account: &Account) {
    let key = state_key::account(address);
    if account.is_empty() {
        state.delete(key);
    } else {
        state.put(key, account);
    }
}
