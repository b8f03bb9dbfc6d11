//! Noisy neighbour (seed 003, VSPERF): a stressor that thrashes the last-level cache (LLC)
//! beside the device under test, at a working set of a given share of the LLC (10 %, 50 %,
//! 100 % in the seed), and the L7 profile run once per level ([`l7_levels`]).
//!
//! The stressor is a thread of the lab's process pinned to one CPU that writes one byte per
//! 64-byte cache line across its working set, over and over, until stopped; it reports how many
//! passes it made (proof that it ran). The LLC's size and the CPUs sharing it come from sysfs
//! ([`llc`]). On the 2-CPU lab machine both CPUs share the 32 MiB LLC, so the default place is
//! the tester's CPU ([`crate::CorePlan::generator`]): it evicts the device's lines without
//! taking the device's CPU time — but it takes the tester's (the L7 client and servers run
//! there), which the results must be read with. With more cores give it a core of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::l7::{L7Bed, L7Report, Profile};

/// The last-level cache of CPU 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    pub level: u32,
    pub bytes: u64,
    /// `shared_cpu_list` as sysfs prints it (`0-1`).
    pub shared_cpus: String,
}

/// `32768K`, `16M`, `512` (bytes) → bytes.
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1024),
        'M' => (&s[..s.len() - 1], 1024 * 1024),
        'G' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// The highest-level data or unified cache of CPU 0, from
/// `/sys/devices/system/cpu/cpu0/cache/index*/`.
pub fn llc() -> Result<CacheInfo> {
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).map(|s| s.trim().to_string());
    let mut best: Option<CacheInfo> = None;
    let entries = std::fs::read_dir(base).map_err(|source| Error::Io {
        what: "reading cache topology",
        path: base.to_path_buf(),
        source,
    })?;
    for e in entries.flatten() {
        let d = e.path();
        let (Ok(level), Ok(kind), Ok(size)) = (
            read(d.join("level")),
            read(d.join("type")),
            read(d.join("size")),
        ) else {
            continue;
        };
        if kind == "Instruction" {
            continue;
        }
        let (Ok(level), Some(bytes)) = (level.parse::<u32>(), parse_cache_size(&size)) else {
            continue;
        };
        if best.as_ref().is_none_or(|b| level > b.level) {
            best = Some(CacheInfo {
                level,
                bytes,
                shared_cpus: read(d.join("shared_cpu_list")).unwrap_or_default(),
            });
        }
    }
    best.ok_or_else(|| Error::Invalid {
        field: "cache topology",
        value: base.display().to_string(),
        expected: "index*/level, type and size files (a kernel with cacheinfo in sysfs)".into(),
    })
}

/// What a stressor did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StressorReport {
    pub cpu: usize,
    pub working_set_bytes: u64,
    /// Complete passes over the working set.
    pub passes: u64,
    pub seconds: f64,
}

/// A running cache stressor.
#[derive(Debug)]
pub struct Stressor {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<u64>>,
    cpu: usize,
    working_set: u64,
    started: Instant,
}

impl Stressor {
    /// Starts thrashing `working_set` bytes on `cpu`.
    pub fn start(working_set: u64, cpu: usize) -> Result<Stressor> {
        if !(64..=1 << 32).contains(&working_set) {
            return Err(Error::Invalid {
                field: "stressor working set",
                value: working_set.to_string(),
                expected: "64 bytes to 4 GiB".into(),
            });
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name(format!("noisy-cpu{cpu}"))
            .spawn(move || {
                let not_here = |what: String| Error::Invalid {
                    field: "stressor",
                    value: what,
                    expected: "a CPU this process may run on".into(),
                };
                let mut set = CpuSet::new();
                set.set(cpu)
                    .map_err(|e| not_here(format!("cpu {cpu}: {e}")))?;
                // Pid 0: the calling thread.
                sched_setaffinity(Pid::from_raw(0), &set)
                    .map_err(|e| not_here(format!("pinning to cpu {cpu}: {e}")))?;
                let mut buf = vec![0u8; working_set as usize];
                let mut passes = 0u64;
                while !flag.load(Ordering::Relaxed) {
                    for i in (0..buf.len()).step_by(64) {
                        buf[i] = buf[i].wrapping_add(1);
                    }
                    std::hint::black_box(&mut buf);
                    passes += 1;
                }
                Ok(passes)
            })
            .map_err(|source| Error::Io {
                what: "spawning the stressor thread",
                path: "noisy".into(),
                source,
            })?;
        Ok(Stressor {
            stop,
            handle,
            cpu,
            working_set,
            started: Instant::now(),
        })
    }

    /// Stops it and says what it did.
    pub fn stop(self) -> Result<StressorReport> {
        self.stop.store(true, Ordering::Relaxed);
        let seconds = self.started.elapsed().as_secs_f64();
        let passes = self.handle.join().unwrap_or_else(|_| {
            Err(Error::Invalid {
                field: "stressor",
                value: "the stressor thread panicked".into(),
                expected: "a thread that stops when told".into(),
            })
        })?;
        Ok(StressorReport {
            cpu: self.cpu,
            working_set_bytes: self.working_set,
            passes,
            seconds,
        })
    }
}

/// One level of the noisy-neighbour run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoisyLevel {
    /// Working set as a share of the LLC (0: no stressor, the baseline).
    pub percent_of_llc: u32,
    pub stressor: Option<StressorReport>,
    pub report: L7Report,
}

/// Runs `profile` on `bed` once per level of `percents` (0 = no stressor) with the stressor on
/// `cpu`; the LLC is read once.
pub fn l7_levels(
    bed: &mut L7Bed,
    profile: &Profile,
    percents: &[u32],
    cpu: usize,
) -> Result<(CacheInfo, Vec<NoisyLevel>)> {
    let cache = llc()?;
    let mut out = Vec::new();
    for &p in percents {
        if p > 400 {
            return Err(Error::Invalid {
                field: "noisy-neighbour level",
                value: format!("{p} %"),
                expected: "0 to 400 % of the last-level cache".into(),
            });
        }
        let stressor = if p == 0 {
            None
        } else {
            let s = Stressor::start(cache.bytes * u64::from(p) / 100, cpu)?;
            // Let it fill the cache before the first arrival.
            std::thread::sleep(Duration::from_millis(200));
            Some(s)
        };
        let r = bed.run(profile);
        let s = stressor.map(Stressor::stop).transpose()?;
        out.push(NoisyLevel {
            percent_of_llc: p,
            stressor: s,
            report: r?,
        });
    }
    Ok((cache, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("16M"), Some(16 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("x"), None);
    }

    #[test]
    fn a_stressor_runs_on_its_cpu_and_stops() {
        let c = llc().unwrap();
        assert!(c.bytes >= 1 << 20, "{c:?}");
        let s = Stressor::start(c.bytes / 10, 0).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let r = s.stop().unwrap();
        assert!(r.passes > 0, "{r:?}");
        assert_eq!(r.working_set_bytes, c.bytes / 10);
        assert!(Stressor::start(1, 0).is_err());
    }
}
