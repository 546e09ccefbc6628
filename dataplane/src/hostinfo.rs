//! What the benchmark reports say about the run: the date, the CPU model,
//! the load average and a thread's CPU time. Shared by the examples under
//! `dataplane/examples` and `control/examples`; nothing on the packet path.

pub use crate::counters::thread_cpu_ns;

fn unix_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64
}

/// (year, month, day) of a day count since 1970-01-01 (civil-from-days,
/// H. Hinnant).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Today, `YYYY-MM-DD` (UTC).
pub fn utc_date() -> String {
    let (y, m, d) = civil(unix_secs().div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Now, `YYYY-MM-DD HH:MM UTC`.
pub fn utc_now() -> String {
    let s = unix_secs().rem_euclid(86_400);
    format!("{} {:02}:{:02} UTC", utc_date(), s / 3600, (s / 60) % 60)
}

/// The CPU's model name from /proc/cpuinfo.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|m| m.trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").ok().map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil(0), (1970, 1, 1));
        assert_eq!(super::civil(19_723), (2024, 1, 1));
        assert_eq!(super::civil(20_414), (2025, 11, 22));
        assert_eq!(super::civil(11_016), (2000, 2, 29));
    }
}
