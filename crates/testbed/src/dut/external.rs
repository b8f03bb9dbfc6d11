//! `external`: a device the lab does not start — a switch, a router, a VM or a hardware box
//! between two generator ports the suite names (topology `external`, see
//! [`crate::topology::ExternalPort`]). Setup and teardown touch nothing.
//!
//! Counters: optionally a shell command (`counters_command` in the suite's `[[dut]]`) whose
//! output gives the device's cumulative counters, read before and after every trial like any
//! driver's ([`Dut::counters`]). Its output is either `key=value` lines (blank lines and lines
//! starting with `#` ignored) or one JSON object, with any of these keys (non-negative integers):
//!
//! | key | meaning |
//! |---|---|
//! | `rx_frames` | frames the device received on the generator's ports |
//! | `tx_frames` | frames it transmitted toward the generator |
//! | `rx_dropped` | frames dropped at its receive side |
//! | `internal_dropped` | frames dropped inside it |
//! | `tx_dropped` | frames it failed to transmit toward the generator |
//! | `busy_clocks` | busy CPU clocks of its forwarding core (device cost) |
//! | `idle_polls`, `total_polls` | a poll-mode device's idle and total polls |
//!
//! A key it does not print stays unknown; an unknown key, a value that is not a number or a
//! command that fails is an error naming it. Without a command the device has no counters.

use crate::dut::counters::DeviceCounters;
use crate::dut::{unsupported_wiring, Dut};
use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::topology::Wiring;

/// Keys the counter command may print (see the module doc).
pub const COUNTER_KEYS: &str =
    "rx_frames, tx_frames, rx_dropped, internal_dropped, tx_dropped, busy_clocks, idle_polls, total_polls";

/// The external device.
#[derive(Debug, Default)]
pub struct ExternalDut {
    counters_command: Option<String>,
    wiring: Option<Wiring>,
}

impl ExternalDut {
    /// `counters_command`: a shell command (run with `sh -c`) printing the counters.
    pub fn new(counters_command: Option<String>) -> ExternalDut {
        ExternalDut {
            counters_command,
            wiring: None,
        }
    }
}

/// Parses a counter command's output (`key=value` lines or a JSON object).
pub fn parse_counters(out: &str) -> Result<DeviceCounters> {
    let trimmed = out.trim();
    let pairs: Vec<(String, String)> = if trimmed.starts_with('{') {
        let v: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(trimmed).map_err(|e| Error::Invalid {
                field: "external counters",
                value: format!("{}: {e}", trimmed.chars().take(200).collect::<String>()),
                expected: format!("a JSON object with keys {COUNTER_KEYS}"),
            })?;
        v.into_iter().map(|(k, v)| (k, v.to_string())).collect()
    } else {
        trimmed
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                l.split_once('=')
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .ok_or_else(|| Error::Invalid {
                        field: "external counters line",
                        value: l.to_string(),
                        expected: format!("key=value with a key of {COUNTER_KEYS}"),
                    })
            })
            .collect::<Result<_>>()?
    };
    if pairs.is_empty() {
        return Err(Error::Invalid {
            field: "external counters",
            value: "no output".into(),
            expected: format!("key=value lines or a JSON object with keys {COUNTER_KEYS}"),
        });
    }
    let mut c = DeviceCounters::default();
    for (k, v) in pairs {
        let n: u64 = v.parse().map_err(|_| Error::Invalid {
            field: "external counter value",
            value: format!("{k}={v}"),
            expected: "a non-negative integer".into(),
        })?;
        let slot = match k.as_str() {
            "rx_frames" => &mut c.rx_frames,
            "tx_frames" => &mut c.tx_frames,
            "rx_dropped" => &mut c.rx_dropped,
            "internal_dropped" => &mut c.internal_dropped,
            "tx_dropped" => &mut c.tx_dropped,
            "busy_clocks" => &mut c.busy_clocks,
            "idle_polls" => &mut c.idle_polls,
            "total_polls" => &mut c.total_polls,
            _ => {
                return Err(Error::Invalid {
                    field: "external counter",
                    value: k,
                    expected: COUNTER_KEYS.into(),
                })
            }
        };
        *slot = Some(n);
    }
    Ok(c)
}

impl Dut for ExternalDut {
    fn name(&self) -> &str {
        "external"
    }

    fn describe(&self) -> String {
        let ports = self
            .wiring
            .as_ref()
            .map(|w| match &w.topology {
                crate::topology::Topology::External { ports } => ports
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
                t => t.to_string(),
            })
            .unwrap_or_else(|| "not set up".into());
        format!(
            "external device (not started by the lab) on {ports}; counters: {}",
            self.counters_command.as_deref().unwrap_or("none")
        )
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        if !w.topology.is_external() {
            return Err(unsupported_wiring(
                self.name(),
                w,
                "the external driver starts nothing; use topology external with the device's ports",
            ));
        }
        self.wiring = Some(w.clone());
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        self.wiring = None;
        Ok(())
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        // Not ours: where it runs is unknown to the lab.
        Vec::new()
    }

    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        let Some(cmd) = &self.counters_command else {
            return Ok(None);
        };
        let out = crate::cmd::run("sh", &["-c", cmd])?;
        parse_counters(&out).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_value_and_json_counters_parse() {
        let c = parse_counters("# from my switch\nrx_frames=100\ntx_frames = 98\n\ntx_dropped=2\n")
            .unwrap();
        assert_eq!(c.rx_frames, Some(100));
        assert_eq!(c.tx_frames, Some(98));
        assert_eq!(c.tx_dropped, Some(2));
        assert_eq!(c.internal_dropped, None);
        let j =
            parse_counters(r#"{"rx_frames": 5, "internal_dropped": 1, "busy_clocks": 9}"#).unwrap();
        assert_eq!(
            (j.rx_frames, j.internal_dropped, j.busy_clocks),
            (Some(5), Some(1), Some(9))
        );
        for (bad, names) in [
            ("rx_packets=5", "rx_packets"),
            ("rx_frames=-1", "rx_frames=-1"),
            ("rx_frames", "rx_frames"),
            ("", "no output"),
            ("{\"rx_frames\": \"x\"}", "rx_frames"),
            ("{nope", "nope"),
        ] {
            let e = parse_counters(bad).unwrap_err().to_string();
            assert!(e.contains(names), "{bad}: {e}");
        }
    }

    #[test]
    fn the_command_runs_and_a_failing_one_is_an_error() {
        let mut d = ExternalDut::new(Some("echo rx_frames=7; echo tx_frames=6".into()));
        let c = d.counters().unwrap().unwrap();
        assert_eq!((c.rx_frames, c.tx_frames), (Some(7), Some(6)));
        let mut d = ExternalDut::new(Some("exit 3".into()));
        assert!(d.counters().is_err());
        assert_eq!(ExternalDut::new(None).counters().unwrap(), None);
    }
}
