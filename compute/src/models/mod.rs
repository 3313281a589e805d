//! burn implementations of the models, plus the shared architecture constants and
//! seeded initialisation. Weights move in and out as [`crate::params::Params`].

pub mod burn_io;
pub mod cnn;
pub mod cnn_cpu;
pub mod fit;
pub mod init;
pub mod mlp;

#[cfg(test)]
mod tests {
    #[test]
    fn documented_parameter_counts_hold() {
        assert_eq!(super::mlp::init_params(0).numel(), 9_610);
        assert_eq!(super::cnn::init_params(0).numel(), 1_898);
        assert_eq!(super::mlp::init_params(5), super::mlp::init_params(5));
        assert_ne!(super::mlp::init_params(5), super::mlp::init_params(6));
    }
}
