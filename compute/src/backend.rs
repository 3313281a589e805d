//! Choosing where a job runs. The choice is made here, at the edge; model code is generic
//! over burn's `Backend` trait.

/// Where a job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The deterministic single-threaded pure-Rust path (verifiers, disputes).
    Canonical,
    /// burn's ndarray CPU backend.
    Cpu,
    /// burn-cuda on GPU `device` (only with the `cuda` feature, and only when NVML sees it).
    #[cfg(feature = "cuda")]
    Cuda {
        /// CUDA device index.
        device: usize,
    },
}

impl Backend {
    /// The fastest backend available: CUDA when built with `cuda` and NVML reports a GPU,
    /// otherwise the CPU backend. Never creates a CUDA device without NVML's confirmation
    /// (burn-cuda 0.21 panics when there is no GPU).
    pub fn auto() -> Self {
        #[cfg(feature = "cuda")]
        if crate::hardware::nvml_gpu_count() > 0 {
            return Backend::Cuda { device: 0 };
        }
        Backend::Cpu
    }

    /// Parses `canonical`, `cpu`, `cuda`/`cuda:N` or `auto`.
    pub fn parse(text: &str) -> crate::Result<Self> {
        match text {
            "auto" => Ok(Self::auto()),
            "canonical" => Ok(Backend::Canonical),
            "cpu" => Ok(Backend::Cpu),
            #[cfg(feature = "cuda")]
            t if t == "cuda" || t.starts_with("cuda:") => {
                let device = t
                    .strip_prefix("cuda:")
                    .map_or(Ok(0), str::parse)
                    .map_err(|_| {
                        crate::Error::BackendUnavailable(format!("bad CUDA device in `{t}`"))
                    })?;
                if crate::hardware::nvml_gpu_count() <= device {
                    return Err(crate::Error::BackendUnavailable(format!(
                        "NVML reports no GPU {device}"
                    )));
                }
                Ok(Backend::Cuda { device })
            }
            other => Err(crate::Error::BackendUnavailable(format!(
                "unknown backend `{other}` (expected auto, canonical, cpu{})",
                if cfg!(feature = "cuda") {
                    ", cuda[:N]"
                } else {
                    "; cuda needs a build with the `cuda` feature"
                }
            ))),
        }
    }

    /// A short name for logs and reports.
    pub fn name(&self) -> String {
        match self {
            Backend::Canonical => "canonical".into(),
            Backend::Cpu => "cpu".into(),
            #[cfg(feature = "cuda")]
            Backend::Cuda { device } => format!("cuda:{device}"),
        }
    }
}

/// burn's CPU backend type.
pub type CpuBackend = burn::backend::NdArray<f32>;
/// burn's CPU backend with autodiff.
pub type CpuAutodiff = burn::backend::Autodiff<CpuBackend>;

/// Runs `$body` with `$B` bound to the burn backend type of `$backend` and `$device` to its
/// device. `Backend::Canonical` must be handled before this is reached.
#[macro_export]
#[doc(hidden)]
macro_rules! with_burn_backend {
    ($backend:expr, |$B:ident, $device:ident| $body:expr) => {{
        match $backend {
            #[cfg(feature = "cuda")]
            $crate::Backend::Cuda { device: index } => {
                type $B = burn_cuda::Cuda<f32, i32>;
                let $device = burn_cuda::CudaDevice { index };
                $body
            }
            _ => {
                type $B = $crate::backend::CpuBackend;
                let $device = burn::backend::ndarray::NdArrayDevice::Cpu;
                $body
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_parse_and_unknown_ones_explain_themselves() {
        assert_eq!(Backend::parse("cpu").unwrap(), Backend::Cpu);
        assert_eq!(Backend::parse("canonical").unwrap().name(), "canonical");
        let auto = Backend::parse("auto").unwrap();
        assert_eq!(auto, Backend::auto());
        let err = Backend::parse("tpu").unwrap_err().to_string();
        assert!(err.contains("unknown backend `tpu`"), "{err}");
        if crate::hardware::nvml_gpu_count() == 0 {
            assert_eq!(
                auto,
                Backend::Cpu,
                "without a GPU, auto must never pick CUDA"
            );
            assert!(Backend::parse("cuda").is_err());
        }
    }
}
