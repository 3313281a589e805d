//! From a hardware probe to the attributes registered on chain, with the driver policy: a
//! GPU is offered only when this build has CUDA and the NVIDIA driver and CUDA versions
//! meet the configured minimums; otherwise the machine is offered as CPU-only.

use gpuchain_compute::hardware::HardwareReport;
use gpuchain_staking::{ProviderAttrs, ProviderClass};

/// Minimum versions for GPU jobs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DriverPolicy {
    /// Least driver major version (e.g. 525).
    pub(crate) min_driver_major: u32,
    /// Least CUDA version, NVML-style (12000 = 12.0).
    pub(crate) min_cuda_version: u32,
}

/// `"12.4"` → 12040.
pub(crate) fn cuda_version_number(text: &str) -> u32 {
    let mut parts = text.split('.');
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    major
        .saturating_mul(1000)
        .saturating_add(minor.saturating_mul(10))
}

/// `"9.0"` → 90.
fn compute_capability_number(text: &str) -> u32 {
    let mut parts = text.split('.');
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    major.saturating_mul(10).saturating_add(minor)
}

/// Why GPUs are not offered, or `None` when they are.
pub(crate) fn gpu_refusal(report: &HardwareReport, policy: DriverPolicy) -> Option<String> {
    if report.gpus.is_empty() {
        return Some(
            report
                .nvml_error
                .clone()
                .unwrap_or_else(|| "no GPU found".into()),
        );
    }
    if !cfg!(feature = "cuda") {
        return Some("this build has no CUDA backend (build with --features cuda)".into());
    }
    let driver = report.driver_version.as_deref().unwrap_or("");
    let major: u32 = driver
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < policy.min_driver_major {
        return Some(format!(
            "NVIDIA driver {driver:?} is older than the minimum {}",
            policy.min_driver_major
        ));
    }
    let cuda = report
        .cuda_version
        .as_deref()
        .map_or(0, cuda_version_number);
    if cuda < policy.min_cuda_version {
        return Some(format!(
            "CUDA {cuda} is older than the minimum {}",
            policy.min_cuda_version
        ));
    }
    None
}

/// The attributes to register.
pub(crate) fn provider_attrs(
    report: &HardwareReport,
    policy: DriverPolicy,
    region: &str,
    endpoint_url: &str,
) -> ProviderAttrs {
    let driver_version = report
        .driver_version
        .clone()
        .unwrap_or_else(|| "none".into());
    match (gpu_refusal(report, policy), report.gpus.first()) {
        (None, Some(first)) => ProviderAttrs {
            class: ProviderClass::Gpu,
            gpu_model: first.name.clone(),
            vram_mib: first.memory_total_bytes / (1 << 20),
            gpu_count: u32::try_from(report.gpus.len()).unwrap_or(u32::MAX),
            compute_capability: compute_capability_number(&first.compute_capability),
            driver_version,
            cuda_version: report
                .cuda_version
                .as_deref()
                .map_or(0, cuda_version_number),
            region: region.to_string(),
            endpoint_url: endpoint_url.to_string(),
        },
        _ => ProviderAttrs {
            class: ProviderClass::Cpu,
            gpu_model: String::new(),
            vram_mib: 0,
            gpu_count: 0,
            compute_capability: 0,
            driver_version,
            cuda_version: 0,
            region: region.to_string(),
            endpoint_url: endpoint_url.to_string(),
        },
    }
}

/// The pricing class of these attributes: the GPU model, or `cpu`.
pub(crate) fn price_class(attrs: &ProviderAttrs) -> String {
    match attrs.class {
        ProviderClass::Gpu => attrs.gpu_model.clone(),
        ProviderClass::Cpu => "cpu".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpuchain_compute::hardware::GpuInfo;

    const POLICY: DriverPolicy = DriverPolicy {
        min_driver_major: 525,
        min_cuda_version: 12000,
    };

    fn report(gpus: usize, driver: &str, cuda: &str) -> HardwareReport {
        HardwareReport {
            gpus: (0..gpus)
                .map(|i| GpuInfo {
                    index: i as u32,
                    name: "NVIDIA H200".into(),
                    memory_total_bytes: 141 << 30,
                    memory_free_bytes: 140 << 30,
                    compute_capability: "9.0".into(),
                    utilization_percent: Some(0),
                })
                .collect(),
            driver_version: (gpus > 0).then(|| driver.to_string()),
            cuda_version: (gpus > 0).then(|| cuda.to_string()),
            nvml_error: (gpus == 0).then(|| "NVML unavailable".to_string()),
            cpu_model: "x".into(),
            cpu_threads: 2,
            memory_total_bytes: 1 << 30,
            memory_available_bytes: 1 << 30,
        }
    }

    #[test]
    fn a_machine_without_nvml_is_offered_as_cpu() {
        let a = provider_attrs(&report(0, "", ""), POLICY, "eu", "http://x");
        assert_eq!(a.class, ProviderClass::Cpu);
        assert_eq!((a.gpu_count, a.vram_mib, a.cuda_version), (0, 0, 0));
        assert_eq!(price_class(&a), "cpu");
    }

    #[test]
    fn old_drivers_are_refused_for_gpu_jobs() {
        let old = report(1, "470.1", "11.4");
        assert!(gpu_refusal(&old, POLICY).is_some());
        assert_eq!(
            provider_attrs(&old, POLICY, "r", "http://x").class,
            ProviderClass::Cpu
        );
        let new = report(2, "550.54.15", "12.4");
        let refusal = gpu_refusal(&new, POLICY);
        if cfg!(feature = "cuda") {
            assert_eq!(refusal, None);
            let a = provider_attrs(&new, POLICY, "r", "http://x");
            assert_eq!(
                (a.gpu_count, a.compute_capability, a.cuda_version),
                (2, 90, 12040)
            );
        } else {
            assert!(refusal.unwrap().contains("no CUDA backend"));
        }
    }

    #[test]
    fn versions_parse() {
        assert_eq!(cuda_version_number("12.4"), 12040);
        assert_eq!(cuda_version_number("junk"), 0);
        assert_eq!(compute_capability_number("8.6"), 86);
    }
}
