//! What hardware this machine has, from NVML (GPUs) and the OS (CPU, memory). A machine
//! without NVML is normal: it is described as CPU-only.

use serde::Serialize;

/// One GPU as NVML reports it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GpuInfo {
    /// Device index.
    pub index: u32,
    /// Model name.
    pub name: String,
    /// Total memory in bytes.
    pub memory_total_bytes: u64,
    /// Free memory in bytes.
    pub memory_free_bytes: u64,
    /// CUDA compute capability, `major.minor`.
    pub compute_capability: String,
    /// GPU utilisation in percent.
    pub utilization_percent: Option<u32>,
}

/// The machine's hardware.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct HardwareReport {
    /// GPUs (empty on CPU-only machines).
    pub gpus: Vec<GpuInfo>,
    /// NVIDIA driver version, when NVML loaded.
    pub driver_version: Option<String>,
    /// CUDA driver API version (e.g. `12.4`), when NVML loaded.
    pub cuda_version: Option<String>,
    /// Why NVML is unavailable, when it is.
    pub nvml_error: Option<String>,
    /// CPU model name.
    pub cpu_model: String,
    /// Logical CPUs.
    pub cpu_threads: usize,
    /// Total system memory in bytes (0 when unknown).
    pub memory_total_bytes: u64,
    /// Available system memory in bytes (0 when unknown).
    pub memory_available_bytes: u64,
}

/// Number of GPUs NVML reports (0 when NVML is missing).
pub fn nvml_gpu_count() -> usize {
    nvml_wrapper::Nvml::init()
        .ok()
        .and_then(|n| n.device_count().ok())
        .unwrap_or(0) as usize
}

/// Probes the machine. Never fails: missing pieces are reported as such.
pub fn probe() -> HardwareReport {
    let (total, avail) = meminfo();
    let mut report = HardwareReport {
        gpus: Vec::new(),
        driver_version: None,
        cuda_version: None,
        nvml_error: None,
        cpu_model: cpu_model(),
        cpu_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_total_bytes: total,
        memory_available_bytes: avail,
    };
    let nvml = match nvml_wrapper::Nvml::init() {
        Ok(n) => n,
        Err(e) => {
            report.nvml_error = Some(format!("NVML unavailable ({e}); CPU-only machine"));
            return report;
        }
    };
    report.driver_version = nvml.sys_driver_version().ok();
    report.cuda_version = nvml
        .sys_cuda_driver_version()
        .ok()
        .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
    let count = nvml.device_count().unwrap_or(0);
    for index in 0..count {
        let Ok(dev) = nvml.device_by_index(index) else {
            continue;
        };
        let mem = dev.memory_info().ok();
        report.gpus.push(GpuInfo {
            index,
            name: dev.name().unwrap_or_else(|_| "unknown".into()),
            memory_total_bytes: mem.as_ref().map_or(0, |m| m.total),
            memory_free_bytes: mem.as_ref().map_or(0, |m| m.free),
            compute_capability: dev
                .cuda_compute_capability()
                .map(|c| format!("{}.{}", c.major, c.minor))
                .unwrap_or_default(),
            utilization_percent: dev.utilization_rates().ok().map(|u| u.gpu),
        });
    }
    report
}

/// `(MemTotal, MemAvailable)` in bytes from `/proc/meminfo`; zeros when unreadable.
pub fn meminfo() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("MemTotal:"), field("MemAvailable:"))
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}
