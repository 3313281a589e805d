/// A fraction in parts per million: 1_000_000 is one whole.
pub type Ppm = u32;

/// One whole in ppm.
pub const PPM_ONE: Ppm = 1_000_000;

/// `amount * ppm / 10^6`, rounded down; `None` on overflow.
pub fn mul_ppm(amount: u128, ppm: Ppm) -> Option<u128> {
    amount
        .checked_mul(u128::from(ppm))?
        .checked_div(u128::from(PPM_ONE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_down_and_detects_overflow() {
        assert_eq!(mul_ppm(1_000, 100_000), Some(100));
        assert_eq!(mul_ppm(9, 500_000), Some(4));
        assert_eq!(mul_ppm(u128::MAX, 2), None);
    }
}
