//! External programs: where they are, which Debian package provides them, and running them with
//! errors that say what failed. A test never passes because a tool is missing: [`require`] panics
//! naming the package to install (scripts/setup.sh installs all of them).

use std::path::PathBuf;
use std::process::Command;

/// The Debian package that provides `program` (as scripts/setup.sh installs it).
pub fn package_of(program: &str) -> &'static str {
    match program {
        "ip" | "nstat" | "tc" | "bridge" => "iproute2",
        "ethtool" => "ethtool",
        "tshark" => "tshark",
        "busybox" => "busybox",
        "python3" => "python3",
        "stdbuf" => "coreutils",
        "dpdk-testpmd" => "dpdk (with librte-net-memif23 and librte-net-virtio23)",
        "nft" => "nftables",
        "ovs-vsctl" | "ovs-vswitchd" | "ovsdb-server" => "openvswitch-switch",
        "qemu-system-x86_64" => "qemu-system-x86",
        _ => "the package that provides it",
    }
}

/// The path of `program` in `PATH`; panics naming the package to install when it is not there.
pub fn require(program: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{program}` not found in PATH: this test needs it; install the Debian package \
                 {} (`make setup` / scripts/setup.sh installs it)",
                package_of(program)
            )
        })
}

/// Runs `program args`: its stdout when it succeeds, else an error naming the command and its
/// stderr (or the package to install when it could not start).
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program).args(args).output().map_err(|e| {
        format!(
            "`{program}` could not run ({e}): install the Debian package {} (scripts/setup.sh)",
            package_of(program)
        )
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{program} {} ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// [`run`], panicking with its error.
pub fn must(program: &str, args: &[&str]) -> String {
    run(program, args).unwrap_or_else(|e| panic!("{e}"))
}

/// `ip args`, panicking with the error.
pub fn ip(args: &[&str]) -> String {
    must("ip", args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_its_package() {
        let e = run("vecswitch-no-such-tool", &[]).unwrap_err();
        assert!(e.contains("could not run"), "{e}");
        let p = std::panic::catch_unwind(|| require("dpdk-testpmd-not-here")).unwrap_err();
        let msg = p.downcast_ref::<String>().unwrap();
        assert!(msg.contains("not found in PATH"), "{msg}");
        assert_eq!(package_of("ip"), "iproute2");
    }

    #[test]
    fn a_failing_command_reports_its_stderr() {
        let e = run("sh", &["-c", "echo boom >&2; exit 3"]).unwrap_err();
        assert!(e.contains("boom") && e.contains('3'), "{e}");
        assert_eq!(run("sh", &["-c", "echo hi"]).unwrap(), "hi\n");
    }
}
