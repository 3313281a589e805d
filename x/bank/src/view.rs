use gpuchain_types::{Address, Amount, StateRead, StateReadExt, StateWrite, StateWriteExt};

use crate::{state_key, BankError, BankParams, TransferEvent};

/// Typed bank reads.
pub trait BankRead: StateRead {
    /// Balance of `address` in ugpu (0 for unknown accounts).
    fn balance(&self, address: &Address) -> Amount {
        self.get(&state_key::balance(address)).unwrap_or(0)
    }

    /// Total supply in ugpu.
    fn supply(&self) -> Amount {
        self.get(state_key::supply()).unwrap_or(0)
    }

    /// Module parameters.
    fn bank_params(&self) -> BankParams {
        self.get(state_key::params()).unwrap_or_default()
    }

    /// Every non-zero balance, in address order.
    fn all_balances(&self) -> Vec<(String, Amount)> {
        self.prefix(state_key::balances_prefix())
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
        let from_balance = self.balance(from);
        let new_from = from_balance
            .checked_sub(amount)
            .ok_or(BankError::InsufficientFunds {
                address: *from,
                available: from_balance,
                required: amount,
            })?;
        if from == to {
            return Ok(());
        }
        let new_to = self
            .balance(to)
            .checked_add(amount)
            .ok_or(BankError::Overflow)?;
        set_balance(self, from, new_from);
        set_balance(self, to, new_to);
        self.emit(
            TransferEvent {
                from: *from,
                to: *to,
                amount,
            }
            .into(),
        );
        Ok(())
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

/// Zero balances are deleted so that state holds only live accounts.
fn set_balance<S: StateWrite + ?Sized>(state: &mut S, address: &Address, amount: Amount) {
    let key = state_key::balance(address);
    if amount == 0 {
        state.delete(key);
    } else {
        state.put(key, &amount);
    }
}
