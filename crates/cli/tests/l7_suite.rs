//! `vecswitch bench docs/suites/chain-l7.toml` (issue 12): the L7 mix through every device of
//! the suite, IPv4 and IPv6, at the suite's small scale (about a minute). Asserted: the seed-004
//! table has a row per device and family, the results file holds every run, no transaction
//! failed, and `vecswitch report md|html` render the document's table. Root (namespaces); needs nginx, vsftpd, dnsmasq-base, ethtool (scripts/setup.sh).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

#[test]
fn chain_l7_suite_prints_the_seed_004_table_with_no_failed_transaction() {
    let suite = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/suites/chain-l7.toml"
    );
    let out_path = std::env::temp_dir().join(format!("chain-l7-{}.json", std::process::id()));
    let out = Command::new(BIN)
        .args(["bench", suite, "-o"])
        .arg(&out_path)
        .output()
        .expect("running vecswitch bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let doc = std::fs::read_to_string(&out_path);
    // `vecswitch report md|html` render the document's table (csv: not an L7 renderer).
    let report = |fmt: &str| {
        Command::new(BIN)
            .args(["report", fmt])
            .arg(&out_path)
            .output()
            .expect("running vecswitch report")
    };
    let (md, html, csv) = (report("md"), report("html"), report("csv"));
    let _ = std::fs::remove_file(&out_path);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    assert!(
        stdout.contains("| L7 throughput (Mbit/s) | L1 line rate (%) | avg TTFB (ms) | avg TTFB http-small (ms)"),
        "{stdout}"
    );
    // The scenario table; the cost table ("Where the time went") follows it.
    let scenarios = |t: &str| -> Vec<String> {
        let main = t.split("Where the time went").next().unwrap_or_default();
        main.lines()
            .filter(|l| l.contains(" | ipv"))
            .map(str::to_string)
            .collect()
    };
    assert!(stdout.contains("Where the time went"), "{stdout}");
    let rows = scenarios(&stdout);
    assert_eq!(rows.len(), 10, "{stdout}");
    for device in [
        "| direct |",
        "| linux-bridge on phy2phy-veth |",
        "| vecswitch-xconnect on phy2phy-veth |",
        "| vecswitch-bridge on phy2phy-veth |",
        "| vecswitch-xconnect on chain-veth:kernel-router+vecswitch |",
    ] {
        assert_eq!(
            rows.iter().filter(|r| r.starts_with(device)).count(),
            2,
            "{device}: {stdout}"
        );
    }
    let md_out = String::from_utf8_lossy(&md.stdout);
    assert!(md.status.success(), "{md:?}");
    assert_eq!(scenarios(&md_out).len(), 10, "{md_out}");
    let html_out = String::from_utf8_lossy(&html.stdout);
    assert!(html.status.success() && html_out.starts_with("<!DOCTYPE html>"));
    assert_eq!(html_out.matches("<svg").count(), 2);
    assert!(!csv.status.success());
    assert!(String::from_utf8_lossy(&csv.stderr).contains("L7 results document"));
    let v: serde_json::Value = serde_json::from_str(&doc.expect("results file")).unwrap();
    let r = &v["results"];
    assert_eq!(r["schema"], "vecswitch.l7-results/1");
    assert_eq!(r["failures"].as_array().map(Vec::len), Some(0), "{r}");
    let devices = r["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 5);
    for d in devices {
        let runs = d["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{d}");
        for run in runs {
            assert_eq!(run["failed"], 0, "{run}");
            assert_eq!(run["transactions"], 100, "{run}");
            assert_eq!(run["classes"].as_array().map(Vec::len), Some(4), "{run}");
        }
    }
    assert!(v["provenance"]["command"].is_array());
}
