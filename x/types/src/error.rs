use std::fmt;

/// A module's user-facing error: it fails the transaction with `code` in `codespace` and a
/// readable log, and the transaction's state changes are discarded.
pub trait ModuleError: fmt::Display {
    /// The module's name, e.g. `"bank"`.
    fn codespace(&self) -> &'static str;
    /// A code unique within the codespace; never 0 (0 means success).
    fn code(&self) -> u32;
}

/// A failed transaction or query as reported over ABCI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppError {
    /// Module that produced the error.
    pub codespace: String,
    /// Non-zero code, unique within the codespace.
    pub code: u32,
    /// Human-readable explanation of what was wrong.
    pub log: String,
}

impl AppError {
    /// Converts any module error.
    pub fn from_module(e: &dyn ModuleError) -> Self {
        AppError {
            codespace: e.codespace().to_string(),
            code: e.code(),
            log: e.to_string(),
        }
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.codespace, self.code, self.log)
    }
}

impl<E: ModuleError> From<E> for AppError {
    fn from(e: E) -> Self {
        AppError::from_module(&e)
    }
}
