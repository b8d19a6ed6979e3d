//! What the benchmarks measure of a process and the machine, from `/proc` (Linux; zeros
//! elsewhere): resident memory, CPU time; and counting a sink file's lines as it grows.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::ensure;

/// Peak resident set size of `pid` so far (VmHWM in `/proc/PID/status`), bytes; 0 elsewhere.
pub(crate) fn peak_rss(pid: u32) -> u64 {
    status_kib(pid, "VmHWM:") * 1024
}

/// Current resident set size of `pid` (VmRSS), bytes.
pub(crate) fn rss(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:") * 1024
}

pub(crate) fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// CPU seconds used so far by process `pid` (user + system), from `/proc` (Linux; 0 elsewhere).
pub(crate) fn process_cpu(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the `(comm)`, which may hold spaces: state is field 3, utime 14, stime 15.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / CLOCK_TICKS
}

/// CPU seconds the whole machine spent busy so far (every process), from `/proc/stat`.
pub(crate) fn machine_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().next() else {
        return 0.0;
    };
    // cpu user nice system idle iowait irq softirq steal
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let get = |i: usize| v.get(i).copied().unwrap_or(0.0);
    (get(0) + get(1) + get(2) + get(5) + get(6) + get(7)) / CLOCK_TICKS
}

/// `sysconf(_SC_CLK_TCK)` on Linux.
const CLOCK_TICKS: f64 = 100.0;

/// CPU use over a measured phase.
pub(crate) struct Cpu {
    machine: f64,
    own: f64,
    sluice: Option<(u32, f64)>,
}

impl Cpu {
    pub(crate) fn start(sluice: Option<u32>) -> Self {
        Self {
            machine: machine_cpu(),
            own: process_cpu(std::process::id()),
            sluice: sluice.map(|pid| (pid, process_cpu(pid))),
        }
    }

    /// "machine X cpu-s: sluice A, this client B, broker and the rest C".
    pub(crate) fn report(&self) -> String {
        let machine = machine_cpu() - self.machine;
        let own = process_cpu(std::process::id()) - self.own;
        let sluice = self.sluice.map_or(0.0, |(pid, at)| process_cpu(pid) - at);
        format!(
            "cpu-seconds: machine {machine:.2} = sluice {sluice:.2} + bench client {own:.2} + broker and the rest {:.2}",
            machine - sluice - own
        )
    }
}

/// Counts lines as the file grows until it has `want`.
pub(crate) fn wait_for_lines(path: &Path, want: usize, timeout: Duration) -> anyhow::Result<usize> {
    let started = Instant::now();
    let mut lines = 0;
    let mut offset = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    while lines < want {
        ensure!(
            started.elapsed() < timeout,
            "the sink had {lines} of {want} events after {timeout:?}"
        );
        if let Ok(mut f) = std::fs::File::open(path) {
            f.seek(SeekFrom::Start(offset))?;
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                offset += n as u64;
                lines += buf[..n].iter().filter(|b| **b == b'\n').count();
            }
        }
        if lines < want {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(lines)
}
