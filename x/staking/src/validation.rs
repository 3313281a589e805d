//! Stateless shape checks shared by messages and genesis.

use ed25519_dalek::VerifyingKey;

use crate::{ProviderAttrs, ProviderClass, StakingError, StakingParams};

/// A key CometBFT will accept: a valid, non-weak ed25519 point.
pub(crate) fn consensus_key(pubkey: &[u8; 32]) -> Result<(), StakingError> {
    match VerifyingKey::from_bytes(pubkey) {
        Ok(key) if !key.is_weak() => Ok(()),
        _ => Err(StakingError::InvalidConsensusKey),
    }
}

fn printable(field: &'static str, text: &str) -> Result<(), StakingError> {
    if text.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(StakingError::BadCharacters { field })
    }
}

/// 1..=`max_moniker_len` bytes of printable ASCII.
pub(crate) fn moniker(text: &str, params: &StakingParams) -> Result<(), StakingError> {
    let max = params.max_moniker_len;
    if text.is_empty() || exceeds(text.len(), max) {
        return Err(StakingError::MonikerLength {
            len: text.len(),
            max,
        });
    }
    printable("moniker", text)
}

fn exceeds(len: usize, max: u32) -> bool {
    u32::try_from(len).map_or(true, |l| l > max)
}

fn text_attr(field: &'static str, text: &str, min: usize, max: u32) -> Result<(), StakingError> {
    if text.len() < min || exceeds(text.len(), max) {
        return Err(StakingError::AttrLength {
            field,
            len: text.len(),
            min,
            max,
        });
    }
    printable(field, text)
}

fn endpoint_url(url: &str, max: u32) -> Result<(), StakingError> {
    text_attr("endpoint_url", url, 1, max)?;
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or(StakingError::BadEndpointUrl)?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || url.contains(' ') {
        return Err(StakingError::BadEndpointUrl);
    }
    Ok(())
}

impl ProviderAttrs {
    /// Checks lengths, counts and ranges; CPU providers declare no GPU hardware.
    pub fn validate(&self, params: &StakingParams) -> Result<(), StakingError> {
        let max = params.max_attr_len;
        match self.class {
            ProviderClass::Gpu => {
                text_attr("gpu_model", &self.gpu_model, 1, max)?;
                if self.gpu_count == 0 || self.gpu_count > params.max_gpu_count {
                    return Err(StakingError::GpuCount {
                        got: self.gpu_count,
                        max: params.max_gpu_count,
                    });
                }
                if self.vram_mib == 0 {
                    return Err(StakingError::ZeroVram);
                }
                if !(10..=999).contains(&self.compute_capability) {
                    return Err(StakingError::ComputeCapability(self.compute_capability));
                }
                if self.cuda_version != 0 && !(1_000..=99_990).contains(&self.cuda_version) {
                    return Err(StakingError::CudaVersion(self.cuda_version));
                }
            }
            ProviderClass::Cpu => {
                text_attr("gpu_model", &self.gpu_model, 0, max)?;
                if self.gpu_count != 0
                    || self.vram_mib != 0
                    || self.compute_capability != 0
                    || self.cuda_version != 0
                {
                    return Err(StakingError::CpuWithGpuAttrs);
                }
            }
        }
        text_attr("driver_version", &self.driver_version, 1, max)?;
        text_attr("region", &self.region, 1, max)?;
        endpoint_url(&self.endpoint_url, params.max_url_len)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn h200() -> ProviderAttrs {
        ProviderAttrs {
            class: ProviderClass::Gpu,
            gpu_model: "NVIDIA H200".into(),
            vram_mib: 143_771,
            gpu_count: 1,
            compute_capability: 90,
            driver_version: "550.54.15".into(),
            cuda_version: 12_040,
            region: "eu-west".into(),
            endpoint_url: "https://gpu.example.org:8443/blobs".into(),
        }
    }

    fn check(edit: impl FnOnce(&mut ProviderAttrs), expect: Result<(), StakingError>) {
        let mut attrs = h200();
        edit(&mut attrs);
        assert_eq!(
            attrs.validate(&StakingParams::default()),
            expect,
            "{attrs:?}"
        );
    }

    #[test]
    fn provider_attributes_are_checked_field_by_field() {
        check(|_| {}, Ok(()));
        check(
            |a| a.gpu_count = 0,
            Err(StakingError::GpuCount { got: 0, max: 64 }),
        );
        check(
            |a| a.gpu_count = 65,
            Err(StakingError::GpuCount { got: 65, max: 64 }),
        );
        check(|a| a.vram_mib = 0, Err(StakingError::ZeroVram));
        check(
            |a| a.compute_capability = 9,
            Err(StakingError::ComputeCapability(9)),
        );
        check(|a| a.cuda_version = 12, Err(StakingError::CudaVersion(12)));
        check(|a| a.cuda_version = 0, Ok(()));
        check(
            |a| a.gpu_model = String::new(),
            Err(StakingError::AttrLength {
                field: "gpu_model",
                len: 0,
                min: 1,
                max: 64,
            }),
        );
        check(
            |a| a.region = "x".repeat(65),
            Err(StakingError::AttrLength {
                field: "region",
                len: 65,
                min: 1,
                max: 64,
            }),
        );
        check(
            |a| a.driver_version = "55\n0".into(),
            Err(StakingError::BadCharacters {
                field: "driver_version",
            }),
        );
        check(
            |a| a.endpoint_url = "ftp://x".into(),
            Err(StakingError::BadEndpointUrl),
        );
        check(
            |a| a.endpoint_url = "https://".into(),
            Err(StakingError::BadEndpointUrl),
        );
        check(
            |a| a.endpoint_url = "http://h/a b".into(),
            Err(StakingError::BadEndpointUrl),
        );
        check(
            |a| a.class = ProviderClass::Cpu,
            Err(StakingError::CpuWithGpuAttrs),
        );
        check(
            |a| {
                *a = ProviderAttrs {
                    class: ProviderClass::Cpu,
                    gpu_model: String::new(),
                    vram_mib: 0,
                    gpu_count: 0,
                    compute_capability: 0,
                    cuda_version: 0,
                    ..h200()
                }
            },
            Ok(()),
        );
    }

    #[test]
    fn consensus_keys_must_be_valid_strong_points() {
        assert_eq!(
            consensus_key(&[0; 32]),
            Err(StakingError::InvalidConsensusKey),
            "small order"
        );
        let good = ed25519_dalek::SigningKey::from_bytes(&[7; 32])
            .verifying_key()
            .to_bytes();
        assert_eq!(consensus_key(&good), Ok(()));
    }
}
