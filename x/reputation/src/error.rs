use gpuchain_types::ModuleError;

/// Why a reputation operation failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReputationError {
    /// Parameters the module cannot run with.
    #[error("invalid reputation parameters: {0}")]
    InvalidParams(String),
    /// A counter does not fit in 64 bits.
    #[error("arithmetic overflow")]
    Overflow,
}

impl ModuleError for ReputationError {
    fn codespace(&self) -> &'static str {
        "reputation"
    }

    fn code(&self) -> u32 {
        match self {
            ReputationError::InvalidParams(_) => 1,
            ReputationError::Overflow => 2,
        }
    }
}
