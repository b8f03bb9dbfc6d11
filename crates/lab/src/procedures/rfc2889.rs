//! RFC 2889 §5.7 address caching capacity and §5.8 address learning rate: the two address tests
//! for a learning bridge (issue 9 item 6), as procedures against an [`AddressDevice`].
//!
//! Both use three ports (RFC 2889 §5.7.2): a *learning* port that sends frames from N distinct
//! source addresses, a *test* port that then sends one frame to each of those addresses, and a
//! *monitor* port that must see none of them. A test frame that reaches the monitor port was
//! flooded: the bridge had not learned (or had dropped) its destination. One trial
//! ([`AddressDevice::trial`]) is: (re)start with an empty address table (or wait out the aging
//! time), send the N learning frames at the learning rate, then the N test frames, and count what
//! arrived where.
//!
//! - [`address_caching_capacity`] (§5.7): binary search on N at a fixed learning rate, low enough
//!   not to be the limit; the result is the largest N with a passing trial.
//! - [`address_learning_rate`] (§5.8): binary search on the learning rate at a fixed N (at most
//!   the caching capacity); the result is the highest rate with a passing trial.
//!
//! A trial passes when every test frame arrived on the learning port and none on the monitor
//! port (§5.7.3: "the number of frames received on the monitor port … indicates flooding").
//! In the caching-capacity search the learning rate is fixed and chosen not to be the limit
//! (§5.7.2). A trial there that flooded nothing but lost learning frames is therefore not a verdict
//! on the table — the device (or the shared host) lost frames, not addresses — and is made again,
//! up to [`LEARNING_LOSS_ATTEMPTS`] times in all; only the last attempt decides. (In the
//! learning-rate search the same loss *is* the verdict: the rate is what is being searched.)
//! Every trial is kept in the result. [`SimBridge`] is a simulated device with a known table size
//! and learning rate, so the searches are tested without a packet.
//!
//! A device may see flooding in one of two ways ([`AddressMethod`]): the RFC's three ports, or
//! two ports where the learning port is also the test port ([`AddressMethod::TwoPortFiltering`],
//! what `vecswitch bench` does on the lab's two-port topologies, crates/testbed/src/dut/
//! l2_address.rs). There the test frames go *to addresses learned on the port they enter by*: a
//! bridge that learned the destination filters the frame (IEEE 802.1Q-2018 §8.6.3, a frame is
//! never sent back out of the port it came in by), one that did not floods it to the other port,
//! which is the monitor port. That port then counts exactly what §5.7.3 counts. A bridge that
//! drops everything would pass that test, so such a device also reports the learning frames it
//! forwarded ([`AddressObservation::learning_received`]) and a trial passes only if every one of
//! them came out.

use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// What one address trial counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressCounts {
    /// Learning frames sent (N).
    pub learning_sent: u64,
    /// Test frames sent (N).
    pub test_sent: u64,
    /// Test frames received on the learning port (forwarded to the learned address).
    pub test_received: u64,
    /// Test frames received on the monitor port (flooded: the address was not known).
    pub flooded: u64,
}

impl AddressCounts {
    /// Every test frame forwarded, none flooded (RFC 2889 §5.7.3, §5.8.3).
    pub fn passed(&self) -> bool {
        self.flooded == 0 && self.test_received == self.test_sent
    }
}

/// How a device tells a flooded test frame from a forwarded one (module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AddressMethod {
    /// RFC 2889 §5.7.2: learning, test and monitor ports; `test_received` counts the test frames
    /// that reached the learning port.
    #[default]
    ThreePort,
    /// Two ports: the test frames enter by the learning port, toward addresses learned there; a
    /// learned one is filtered, an unknown one flooded to the other port (the monitor).
    /// `test_received` is then `test_sent − flooded`: the frames the bridge kept off the monitor
    /// port, as it must for a destination behind the port they came in by.
    TwoPortFiltering,
}

impl AddressMethod {
    /// How results describe it.
    pub fn describe(self) -> &'static str {
        match self {
            AddressMethod::ThreePort => "three ports (RFC 2889 §5.7.2)",
            AddressMethod::TwoPortFiltering => {
                "two ports: test frames to addresses learned on their own port; flooded ones counted on the other"
            }
        }
    }
}

/// What one trial observed: the counts, and the learning frames that came out of the bridge
/// (`None`: the device does not count them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressObservation {
    pub counts: AddressCounts,
    pub learning_received: Option<u64>,
}

/// A bridge driven by the address test.
pub trait AddressDevice {
    /// Starts from an empty address table, learns `addresses` source addresses on the learning
    /// port at `learn_rate_fps`, then sends one test frame to each from the test port.
    fn trial(&mut self, addresses: u32, learn_rate_fps: f64) -> Result<AddressCounts, LabError>;

    /// [`AddressDevice::trial`] with what else the device counted; by default nothing else.
    fn observe(
        &mut self,
        addresses: u32,
        learn_rate_fps: f64,
    ) -> Result<AddressObservation, LabError> {
        Ok(AddressObservation {
            counts: self.trial(addresses, learn_rate_fps)?,
            learning_received: None,
        })
    }

    /// How this device sees flooding.
    fn method(&self) -> AddressMethod {
        AddressMethod::ThreePort
    }
}

/// One trial as the results keep it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AddressTrial {
    pub addresses: u32,
    pub learn_rate_fps: f64,
    pub counts: AddressCounts,
    /// Learning frames the bridge forwarded (when the device counts them): fewer than sent fails
    /// the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_received: Option<u64>,
    pub passed: bool,
}

/// §5.7: the search bounds on N and the learning rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CachingConfig {
    /// Smallest and largest address count tried (RFC 2889 leaves the range to the tester).
    pub min_addresses: u32,
    pub max_addresses: u32,
    /// Stop when the pass/fail bounds are this close.
    pub resolution: u32,
    /// Learning rate, frames/s: below the device's learning rate (§5.7.2).
    pub learn_rate_fps: f64,
}

/// §5.8: the address count and the search bounds on the rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LearningRateConfig {
    /// N, at most the caching capacity (§5.8.2).
    pub addresses: u32,
    pub min_fps: f64,
    pub max_fps: f64,
    /// Stop when the pass/fail bounds are this close, frames/s.
    pub resolution_fps: f64,
}

/// The result of either search: the largest passing value (`None` if even the lower bound
/// failed) and every trial in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddressResult {
    /// §5.7: addresses; §5.8: frames/s.
    pub value: Option<f64>,
    pub trials: Vec<AddressTrial>,
    /// How the device saw flooding.
    #[serde(default)]
    pub method: AddressMethod,
}

/// At most this many trials per search (2^40 steps of resolution would never end otherwise).
const MAX_TRIALS: usize = 64;

/// Attempts of one caching-capacity trial whose only fault was lost learning frames (module doc).
pub const LEARNING_LOSS_ATTEMPTS: usize = 3;

impl AddressTrial {
    /// Nothing flooded and every test frame accounted for, but learning frames lost: the device
    /// dropped frames while learning, which says nothing about its table.
    pub fn lost_learning_frames_only(&self) -> bool {
        self.counts.passed()
            && self
                .learning_received
                .is_some_and(|r| r < self.counts.learning_sent)
    }
}

fn run(
    dev: &mut dyn AddressDevice,
    trials: &mut Vec<AddressTrial>,
    addresses: u32,
    rate: f64,
) -> Result<bool, LabError> {
    let AddressObservation {
        counts,
        learning_received,
    } = dev.observe(addresses, rate)?;
    let passed = counts.passed() && learning_received.is_none_or(|r| r >= counts.learning_sent);
    trials.push(AddressTrial {
        addresses,
        learn_rate_fps: rate,
        counts,
        learning_received,
        passed,
    });
    Ok(passed)
}

/// [`run`] for the caching-capacity search: a trial that failed only by lost learning frames is
/// made again, up to [`LEARNING_LOSS_ATTEMPTS`] in all (module doc).
fn run_capacity(
    dev: &mut dyn AddressDevice,
    trials: &mut Vec<AddressTrial>,
    addresses: u32,
    rate: f64,
) -> Result<bool, LabError> {
    for _ in 1..LEARNING_LOSS_ATTEMPTS {
        if run(dev, trials, addresses, rate)? {
            return Ok(true);
        }
        if !trials
            .last()
            .is_some_and(AddressTrial::lost_learning_frames_only)
        {
            return Ok(false);
        }
    }
    run(dev, trials, addresses, rate)
}

/// RFC 2889 §5.7 address caching capacity: binary search on the number of addresses.
pub fn address_caching_capacity(
    dev: &mut dyn AddressDevice,
    cfg: &CachingConfig,
) -> Result<AddressResult, LabError> {
    if cfg.min_addresses == 0 || cfg.min_addresses > cfg.max_addresses {
        return Err(LabError::invalid(
            "rfc2889.min_addresses",
            cfg.min_addresses,
            "1 ..= max_addresses",
        ));
    }
    if !(cfg.learn_rate_fps > 0.0 && cfg.learn_rate_fps.is_finite()) {
        return Err(LabError::invalid(
            "rfc2889.learn_rate_fps",
            cfg.learn_rate_fps,
            "a positive rate in frames/s",
        ));
    }
    let resolution = cfg.resolution.max(1);
    let mut trials = Vec::new();
    if !run_capacity(dev, &mut trials, cfg.min_addresses, cfg.learn_rate_fps)? {
        return Ok(AddressResult {
            value: None,
            trials,
            method: dev.method(),
        });
    }
    if run_capacity(dev, &mut trials, cfg.max_addresses, cfg.learn_rate_fps)? {
        return Ok(AddressResult {
            value: Some(cfg.max_addresses as f64),
            trials,
            method: dev.method(),
        });
    }
    // Invariant: `pass` passed, `fail` failed.
    let (mut pass, mut fail) = (cfg.min_addresses, cfg.max_addresses);
    while fail - pass > resolution {
        if trials.len() >= MAX_TRIALS {
            return Err(LabError::NoConvergence {
                procedure: "rfc2889 address caching capacity",
                max_trials: MAX_TRIALS,
            });
        }
        let mid = pass + (fail - pass) / 2;
        if run_capacity(dev, &mut trials, mid, cfg.learn_rate_fps)? {
            pass = mid;
        } else {
            fail = mid;
        }
    }
    Ok(AddressResult {
        value: Some(pass as f64),
        trials,
        method: dev.method(),
    })
}

/// RFC 2889 §5.8 address learning rate: binary search on the learning rate at N addresses.
pub fn address_learning_rate(
    dev: &mut dyn AddressDevice,
    cfg: &LearningRateConfig,
) -> Result<AddressResult, LabError> {
    if cfg.addresses == 0 {
        return Err(LabError::invalid(
            "rfc2889.addresses",
            cfg.addresses,
            "at least 1 (and at most the caching capacity)",
        ));
    }
    if !(cfg.min_fps > 0.0 && cfg.min_fps <= cfg.max_fps && cfg.max_fps.is_finite()) {
        return Err(LabError::invalid(
            "rfc2889.min_fps",
            format!("{} (max_fps {})", cfg.min_fps, cfg.max_fps),
            "0 < min_fps <= max_fps, finite",
        ));
    }
    let resolution = if cfg.resolution_fps > 0.0 {
        cfg.resolution_fps
    } else {
        1.0
    };
    let mut trials = Vec::new();
    if !run(dev, &mut trials, cfg.addresses, cfg.min_fps)? {
        return Ok(AddressResult {
            value: None,
            trials,
            method: dev.method(),
        });
    }
    if run(dev, &mut trials, cfg.addresses, cfg.max_fps)? {
        return Ok(AddressResult {
            value: Some(cfg.max_fps),
            trials,
            method: dev.method(),
        });
    }
    let (mut pass, mut fail) = (cfg.min_fps, cfg.max_fps);
    while fail - pass > resolution {
        if trials.len() >= MAX_TRIALS {
            return Err(LabError::NoConvergence {
                procedure: "rfc2889 address learning rate",
                max_trials: MAX_TRIALS,
            });
        }
        let mid = pass + (fail - pass) / 2.0;
        if run(dev, &mut trials, cfg.addresses, mid)? {
            pass = mid;
        } else {
            fail = mid;
        }
    }
    Ok(AddressResult {
        value: Some(pass),
        trials,
        method: dev.method(),
    })
}

/// A simulated learning bridge with a known answer: a table of `capacity` entries (addresses
/// beyond it are not learned, and their test frames are flooded) and a learning path that keeps
/// up with `max_learn_fps` (at a higher rate, the fraction `1 − max/rate` of the learning frames
/// is not learned). Deterministic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimBridge {
    pub capacity: u32,
    pub max_learn_fps: f64,
}

impl AddressDevice for SimBridge {
    fn trial(&mut self, addresses: u32, learn_rate_fps: f64) -> Result<AddressCounts, LabError> {
        let n = addresses as u64;
        let by_rate = if learn_rate_fps <= self.max_learn_fps {
            n
        } else {
            (n as f64 * self.max_learn_fps / learn_rate_fps).floor() as u64
        };
        let learned = by_rate.min(self.capacity as u64);
        Ok(AddressCounts {
            learning_sent: n,
            test_sent: n,
            test_received: n,
            flooded: n - learned,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caching_capacity_finds_the_table_size_within_the_resolution() {
        for capacity in [1, 2, 1_200, 2_600, 4_095, 65_536] {
            let mut dev = SimBridge {
                capacity,
                max_learn_fps: 10_000.0,
            };
            let cfg = CachingConfig {
                min_addresses: 1,
                max_addresses: 100_000,
                resolution: 1,
                learn_rate_fps: 1_000.0,
            };
            let r = address_caching_capacity(&mut dev, &cfg).unwrap();
            assert_eq!(r.value, Some(capacity as f64), "capacity {capacity}");
            assert!(r.trials.len() <= 20, "{} trials", r.trials.len());
            // Every trial is kept, and each passed exactly when N fit.
            for t in &r.trials {
                assert_eq!(t.passed, t.addresses <= capacity, "{t:?}");
            }
        }
    }

    #[test]
    fn caching_capacity_reports_the_bounds() {
        let cfg = CachingConfig {
            min_addresses: 10,
            max_addresses: 1_000,
            resolution: 1,
            learn_rate_fps: 100.0,
        };
        let mut big = SimBridge {
            capacity: 5_000,
            max_learn_fps: 1e6,
        };
        let r = address_caching_capacity(&mut big, &cfg).unwrap();
        assert_eq!((r.value, r.trials.len()), (Some(1_000.0), 2));
        let mut tiny = SimBridge {
            capacity: 5,
            max_learn_fps: 1e6,
        };
        let r = address_caching_capacity(&mut tiny, &cfg).unwrap();
        assert_eq!((r.value, r.trials.len()), (None, 1));
    }

    #[test]
    fn learning_rate_finds_the_devices_rate_within_the_resolution() {
        for max in [150.0, 1_000.0, 33_333.0] {
            let mut dev = SimBridge {
                capacity: 1_000_000,
                max_learn_fps: max,
            };
            let cfg = LearningRateConfig {
                addresses: 2_600,
                min_fps: 100.0,
                max_fps: 100_000.0,
                resolution_fps: 10.0,
            };
            let r = address_learning_rate(&mut dev, &cfg).unwrap();
            let v = r.value.unwrap();
            assert!(
                v <= max && max - v <= 10.0 + 1e-9,
                "found {v}, device {max}"
            );
        }
    }

    #[test]
    fn bad_configs_name_the_field() {
        let mut dev = SimBridge {
            capacity: 10,
            max_learn_fps: 10.0,
        };
        let e = address_caching_capacity(
            &mut dev,
            &CachingConfig {
                min_addresses: 0,
                max_addresses: 10,
                resolution: 1,
                learn_rate_fps: 1.0,
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("rfc2889.min_addresses"), "{e}");
        let e = address_learning_rate(
            &mut dev,
            &LearningRateConfig {
                addresses: 5,
                min_fps: 10.0,
                max_fps: 1.0,
                resolution_fps: 1.0,
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("rfc2889.min_fps"), "{e}");
    }

    /// A two-port device that drops every frame: nothing is flooded, and nothing came out.
    struct BlackHole;

    impl AddressDevice for BlackHole {
        fn trial(&mut self, n: u32, _rate: f64) -> Result<AddressCounts, LabError> {
            let n = u64::from(n);
            Ok(AddressCounts {
                learning_sent: n,
                test_sent: n,
                test_received: n,
                flooded: 0,
            })
        }

        fn observe(&mut self, n: u32, rate: f64) -> Result<AddressObservation, LabError> {
            Ok(AddressObservation {
                counts: self.trial(n, rate)?,
                learning_received: Some(0),
            })
        }

        fn method(&self) -> AddressMethod {
            AddressMethod::TwoPortFiltering
        }
    }

    #[test]
    fn a_device_that_forwards_no_learning_frame_passes_nothing() {
        let cfg = CachingConfig {
            min_addresses: 1,
            max_addresses: 100,
            resolution: 1,
            learn_rate_fps: 100.0,
        };
        let r = address_caching_capacity(&mut BlackHole, &cfg).unwrap();
        assert_eq!(r.value, None);
        assert_eq!(r.method, AddressMethod::TwoPortFiltering);
        // Lost learning frames are made again, and every attempt fails.
        assert_eq!(r.trials.len(), LEARNING_LOSS_ATTEMPTS);
        for t in &r.trials {
            assert!(t.counts.passed(), "the counts alone would pass");
            assert_eq!(t.learning_received, Some(0));
            assert!(!t.passed && t.lost_learning_frames_only());
        }
        // The simulated bridge counts three ports and no learning frames.
        let mut sim = SimBridge {
            capacity: 10,
            max_learn_fps: 1e6,
        };
        let r = address_caching_capacity(&mut sim, &cfg).unwrap();
        assert_eq!(r.method, AddressMethod::ThreePort);
        assert!(r.trials.iter().all(|t| t.learning_received.is_none()));
    }

    /// A two-port bridge of `capacity` entries that loses `lose` learning frames on the first
    /// `bad_attempts` trials it runs (a descheduled device on a loaded host), then none.
    struct Hiccup {
        sim: SimBridge,
        bad_attempts: u32,
        lose: u64,
        runs: u32,
    }

    impl Hiccup {
        /// A table of `capacity` entries, losing `lose` learning frames on its first
        /// `bad_attempts` trials.
        fn new(capacity: u32, bad_attempts: u32, lose: u64) -> Hiccup {
            Hiccup {
                sim: SimBridge {
                    capacity,
                    max_learn_fps: 1e6,
                },
                bad_attempts,
                lose,
                runs: 0,
            }
        }
    }

    impl AddressDevice for Hiccup {
        fn trial(&mut self, n: u32, rate: f64) -> Result<AddressCounts, LabError> {
            self.sim.trial(n, rate)
        }

        fn observe(&mut self, n: u32, rate: f64) -> Result<AddressObservation, LabError> {
            self.runs += 1;
            let lost = if self.runs <= self.bad_attempts {
                self.lose.min(u64::from(n))
            } else {
                0
            };
            Ok(AddressObservation {
                counts: self.trial(n, rate)?,
                learning_received: Some(u64::from(n) - lost),
            })
        }

        fn method(&self) -> AddressMethod {
            AddressMethod::TwoPortFiltering
        }
    }

    #[test]
    fn lost_learning_frames_are_made_again_in_the_capacity_search_only() {
        let cfg = CachingConfig {
            min_addresses: 10,
            max_addresses: 300,
            resolution: 1,
            learn_rate_fps: 2_000.0,
        };
        // Two bad attempts: the first trial (10 addresses) passes on its third.
        let mut dev = Hiccup::new(100, 2, 7);
        let r = address_caching_capacity(&mut dev, &cfg).unwrap();
        assert_eq!(r.value, Some(100.0), "{:#?}", r.trials);
        assert_eq!(r.trials[0].addresses, 10);
        assert_eq!(r.trials[1].addresses, 10);
        assert!(r.trials[..2].iter().all(|t| t.lost_learning_frames_only()));
        assert!(r.trials[2].passed && r.trials[2].addresses == 10);
        // Three: the search stops there with no value, every attempt kept.
        let mut dev = Hiccup::new(100, 3, 7);
        let r = address_caching_capacity(&mut dev, &cfg).unwrap();
        assert_eq!((r.value, r.trials.len()), (None, LEARNING_LOSS_ATTEMPTS));
        // A flooded trial with lost learning frames is a verdict on the table: not made again.
        let mut dev = Hiccup::new(5, 1, 7);
        let r = address_caching_capacity(&mut dev, &cfg).unwrap();
        assert_eq!((r.value, r.trials.len()), (None, 1));
        // In the learning-rate search a lost learning frame is the verdict: one trial, failed.
        let mut dev = Hiccup::new(100, 1, 1);
        let lr = LearningRateConfig {
            addresses: 50,
            min_fps: 100.0,
            max_fps: 1_000.0,
            resolution_fps: 10.0,
        };
        let r = address_learning_rate(&mut dev, &lr).unwrap();
        assert_eq!((r.value, r.trials.len()), (None, 1));
    }

    #[test]
    fn a_trial_with_flooding_or_loss_fails() {
        let c = AddressCounts {
            learning_sent: 4,
            test_sent: 4,
            test_received: 4,
            flooded: 0,
        };
        assert!(c.passed());
        assert!(!AddressCounts { flooded: 1, ..c }.passed());
        assert!(!AddressCounts {
            test_received: 3,
            ..c
        }
        .passed());
    }
}
