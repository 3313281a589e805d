//! CPU used by processes and by the whole machine, read from Linux's `/proc`.

use std::path::Path;

/// Linux reports CPU time in clock ticks of 1/100 s (USER_HZ) on every platform this runs on.
pub const CLOCK_TICKS_PER_SEC: u64 = 100;

/// User plus system CPU ticks of a process so far, from `/proc/<pid>/stat` (fields 14 and
/// 15, counted after the parenthesised command name, which may hold spaces); 0 when the
/// process is gone.
pub fn process_ticks(stat: &Path) -> u64 {
    let text = std::fs::read_to_string(stat).unwrap_or_default();
    let Some((_, rest)) = text.rsplit_once(')') else {
        return 0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // After ")": state is field 3, so utime (14) and stime (15) are at 11 and 12.
    field(11) + field(12)
}

/// CPU ticks of process `pid` so far.
pub fn pid_ticks(pid: u32) -> u64 {
    process_ticks(&Path::new("/proc").join(pid.to_string()).join("stat"))
}

/// The machine's busy and total CPU ticks so far, over all cores (`/proc/stat`'s `cpu`
/// line; idle and iowait count as not busy).
pub fn machine_ticks() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = text.lines().find(|l| l.starts_with("cpu ")) else {
        return (0, 0);
    };
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = values.iter().sum();
    let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    (total.saturating_sub(idle), total)
}

/// The 1-minute load average, which says whether the machine was idle before a run.
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let dir = tempfile::tempdir().unwrap();
        let stat = dir.path().join("stat");
        std::fs::write(
            &stat,
            "42 (a (weird) name) S 1 42 42 0 -1 4194304 100 0 0 0 250 75 0 0 20 0 1 0",
        )
        .unwrap();
        assert_eq!(process_ticks(&stat), 325);
        assert_eq!(process_ticks(&dir.path().join("gone")), 0);
    }

    #[test]
    fn this_process_and_the_machine_have_used_cpu() {
        // Busy for 100 ms of wall time: at least a few ticks of CPU.
        let until = std::time::Instant::now() + std::time::Duration::from_millis(100);
        while std::time::Instant::now() < until {
            std::hint::black_box(0u64);
        }
        assert!(pid_ticks(std::process::id()) > 0);
        let (busy, total) = machine_ticks();
        assert!(busy > 0 && total >= busy);
    }
}
