//! Reading a pcap back with tshark (Wireshark's dissectors are the independent judge of what
//! crossed a port).

use std::path::Path;
use std::process::Command;

use crate::tool::require;

/// Runs `tshark -r <pcap> [extra…] -T fields -E separator=| -e <field>…` and returns one row of
/// field values per packet. Panics naming the package when tshark is missing, and with tshark's
/// stderr when it fails.
pub fn fields(pcap: &Path, extra: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new(require("tshark"));
    cmd.arg("-r").arg(pcap).args(extra);
    cmd.args(["-T", "fields", "-E", "separator=|"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark -r {} failed: {}",
        pcap.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}
