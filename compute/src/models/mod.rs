//! burn implementations of the models, plus the shared architecture constants and
//! seeded initialisation. Weights move in and out as [`crate::params::Params`].

pub mod burn_io;
pub mod cnn;
pub mod fit;
pub mod init;
pub mod mlp;
