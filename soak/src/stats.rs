//! What the soak counts: latencies in fixed-size histograms (so the soak's own bookkeeping never grows with
//! its length and cannot pass for a leak), results by tool and kind, and the process's memory and open
//! descriptors read from `/proc/self`.

use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::time::Duration;

/// Buckets grow by 2 % from 1 µs: percentiles are exact to 2 %, up to 1.02^1400 µs (far beyond any call).
const GROWTH: f64 = 1.02;
const BUCKETS: usize = 1400;

/// A latency histogram.
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: Duration,
}

impl Default for Histogram {
    fn default() -> Self {
        Self { counts: vec![0; BUCKETS], total: 0, max: Duration::ZERO }
    }
}

impl Histogram {
    pub fn record(&mut self, elapsed: Duration) {
        let micros = elapsed.as_secs_f64() * 1e6;
        let index = if micros <= 1.0 { 0 } else { (micros.ln() / GROWTH.ln()).ceil() as usize };
        self.counts[index.min(BUCKETS - 1)] += 1;
        self.total += 1;
        self.max = self.max.max(elapsed);
    }

    /// The upper bound of the bucket holding the `q` quantile.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.total == 0 {
            return Duration::ZERO;
        }
        let rank = ((self.total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Duration::from_secs_f64(GROWTH.powi(index as i32) / 1e6).min(self.max);
            }
        }
        self.max
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn json(&self) -> Value {
        json!({
            "calls": self.total,
            "p50_us": micros(self.quantile(0.50)),
            "p99_us": micros(self.quantile(0.99)),
            "max_us": micros(self.max),
        })
    }
}

pub fn micros(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e7).round() / 10.0
}

/// Human-readable duration.
pub fn show(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// The process at one moment.
#[derive(Debug, Clone)]
pub struct Sample {
    pub at: &'static str,
    pub seconds: f64,
    pub calls: u64,
    /// Resident set now, and its peak so far (`VmRSS`, `VmHWM`), and the resident set's anonymous (heap,
    /// stacks) and file-backed (mapped libraries) parts, in bytes.
    pub rss: u64,
    pub peak_rss: u64,
    pub rss_anon: u64,
    pub rss_file: u64,
    /// What malloc has handed out and not had back: live heap, without the allocator's free space.
    pub heap_in_use: u64,
    pub threads: u64,
    /// Entries of `/proc/self/fd`.
    pub fds: usize,
    /// Plugin library copies mapped in this process now, and their mapped bytes (`ReloadStats::process_*`).
    pub mapped_copies: u64,
    pub mapped_library_bytes: u64,
}

impl Sample {
    pub fn take(
        at: &'static str,
        seconds: f64,
        calls: u64,
        (mapped_copies, mapped_library_bytes): (u64, u64),
    ) -> Result<Self> {
        let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
        let field = |name: &str| -> Result<u64> {
            let line = status.lines().find(|l| l.starts_with(name)).with_context(|| format!("no {name}"))?;
            let value: u64 = line.split_whitespace().nth(1).context("no value")?.parse()?;
            Ok(if line.ends_with("kB") { value * 1024 } else { value })
        };
        // The directory handle read_dir holds is one of the entries; it is there in every sample alike.
        let fds = std::fs::read_dir("/proc/self/fd").context("reading /proc/self/fd")?.count();
        Ok(Self {
            at,
            seconds,
            calls,
            rss: field("VmRSS:")?,
            peak_rss: field("VmHWM:")?,
            rss_anon: field("RssAnon:")?,
            rss_file: field("RssFile:")?,
            heap_in_use: heap_in_use(),
            threads: field("Threads:")?,
            fds,
            mapped_copies,
            mapped_library_bytes,
        })
    }

    pub fn json(&self) -> Value {
        json!({
            "at": self.at,
            "seconds": (self.seconds * 10.0).round() / 10.0,
            "calls": self.calls,
            "rss_bytes": self.rss,
            "peak_rss_bytes": self.peak_rss,
            "rss_anon_bytes": self.rss_anon,
            "rss_file_bytes": self.rss_file,
            "heap_in_use_bytes": self.heap_in_use,
            "threads": self.threads,
            "open_fds": self.fds,
            "mapped_library_copies": self.mapped_copies,
            "mapped_library_bytes": self.mapped_library_bytes,
        })
    }

    pub fn line(&self) -> String {
        format!(
            "{:<8} {:>6.1} s {:>8} calls  RSS {} (peak {}, anon {}, files {})  heap in use {}  {} fds  {} threads  {} copies mapped",
            self.at,
            self.seconds,
            self.calls,
            mib(self.rss),
            mib(self.peak_rss),
            mib(self.rss_anon),
            mib(self.rss_file),
            mib(self.heap_in_use),
            self.fds,
            self.threads,
            self.mapped_copies
        )
    }
}

/// Bytes in use by malloc in every arena plus its large mapped blocks (glibc's `mallinfo2`), or 0 where there
/// is no glibc. Set beside the anonymous RSS it tells a leak (this grows) from the allocator keeping freed
/// memory for reuse (only the RSS grows).
fn heap_in_use() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters (it takes each arena's lock).
        let info = unsafe { libc::mallinfo2() };
        (info.uordblks + info.hblkhd) as u64
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    0
}

pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
