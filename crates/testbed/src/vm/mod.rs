//! QEMU guests for the VM topologies (`pvp-vm`, `pvvp-vm`, `v2v-vm`): virtual machines attached
//! to the switch by vhost-user, as the VNFs of the industry reports are.
//!
//! Main types: [`GuestImage`] (the kernel and initramfs that `scripts/guest/build.sh` builds from
//! Debian packages into `build/guest/`), [`VmSpec`] (NICs and what the guest does with them) and
//! [`Vm`] (a running QEMU, its serial console in a log file, stopped on drop).
//!
//! # Emulated, not accelerated
//!
//! `/dev/kvm` on these machines is nested kvm-pvm, which does not boot stock guest kernels
//! (docs/TESTBED.md, DESIGN.md), so every guest runs under TCG, QEMU's software CPU. The guest
//! boots in 10–40 s (the load of the machine decides) and forwards a few thousand frames per
//! second: a VM topology here proves that the switch's vhost-user port carries a real guest's
//! traffic, exactly counted, not how fast. Results say so ([`EMULATED_NOTE`] in the placement
//! record of every VM process).
//!
//! # How a guest is started
//!
//! ```text
//! qemu-system-x86_64 -nodefaults -display none -machine pc,accel=tcg -m 256M -smp 1 \
//!   -object memory-backend-memfd,id=mem,size=256M,share=on -numa node,memdev=mem \
//!   -kernel build/guest/vmlinux -initrd build/guest/initramfs.cpio.gz \
//!   -append "console=ttyS0 quiet ipv6.disable=1 panic=-1 vs.mode=bridge" \
//!   -serial file:CONSOLE -no-reboot \
//!   -chardev socket,id=c0,path=SOCK0 -netdev vhost-user,id=n0,chardev=c0 \
//!   -device virtio-net-pci,netdev=n0,mac=52:54:00:..,vectors=0,speed=10000,duplex=full
//!                                                                (and the same for NIC 1)
//! ```
//!
//! - The guest's RAM must be shareable: the backend maps it from the file descriptors QEMU sends
//!   (SET_MEM_TABLE), hence the memfd backend with `share=on`.
//! - `vectors=0` (no MSI-X): QEMU 7.2 (Debian 12) under TCG crashes in
//!   `msix_set_vector_notifiers` when a vhost-user virtio-net with MSI-X starts; legacy INTx
//!   interrupts work.
//! - `speed=10000,duplex=full`: virtio-net reports no speed or duplex otherwise, and the Linux
//!   bonding driver in 802.3ad mode disables LACP on a port whose duplex is unknown (it neither
//!   sends nor heeds LACPDUs there: `ad_update_actor_keys`), so a `vs.mode=bond` guest never
//!   aggregates. Harmless for the bridge.
//! - `vmlinux` is booted through its PVH entry point, which skips the XZ decompression of the
//!   bzImage (about 40 s under TCG on the loaded 2-core machine).
//! - `ipv6.disable=1`: a guest with IPv6 sends router and MLD solicitations of its own on its
//!   NICs; without them every frame leaving the guest is one the generator sent.
//! - QEMU connects to a socket the switch listens on (`qemu_listens = false`, the switch's port
//!   has `role = "server"`), or listens itself (`server=on,wait=off`; the switch's port is a
//!   client). A vhost-user netdev blocks QEMU's start-up until its backend answers, so whoever
//!   holds the backend ends must poll them while the guest starts ([`Vm::wait_ready`] takes a
//!   closure that does).
//!
//! The guest's `/init` (scripts/guest/init) prints `vecswitch-guest: ready mode=...` when its NICs
//! are up (and bridged); [`Vm::wait_ready`] waits for that line and, on a timeout, the error
//! carries the end of the console.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::process::{ChildGuard, ProcessSpec};

/// The QEMU binary (Debian package `qemu-system-x86`).
pub const QEMU: &str = "qemu-system-x86_64";

/// What the results say about every VM process.
pub const EMULATED_NOTE: &str = "emulated: QEMU TCG (software CPU; nested KVM does not boot stock guests here) - an interoperability result, not a speed figure";

/// The console line the guest's /init prints once it is ready.
pub const READY_LINE: &str = "vecswitch-guest: ready";

/// Guest RAM in MiB: the Debian kernel, an initramfs of 1.3 MB and the bridge need well under it.
pub const GUEST_MEM_MB: u32 = 256;

/// The guest kernel and initramfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestImage {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
}

impl GuestImage {
    /// The image in `$VECSWITCH_GUEST_DIR`, else in the repository's `build/guest/` (where
    /// `make setup` puts it). Missing files are an error that says how to build them.
    pub fn locate() -> Result<GuestImage> {
        let dir = match std::env::var_os("VECSWITCH_GUEST_DIR") {
            Some(d) => PathBuf::from(d),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../build/guest"),
        };
        GuestImage::in_dir(&dir)
    }

    /// The image in `dir` (`vmlinux`, `initramfs.cpio.gz`).
    pub fn in_dir(dir: &Path) -> Result<GuestImage> {
        let image = GuestImage {
            kernel: dir.join("vmlinux"),
            initrd: dir.join("initramfs.cpio.gz"),
        };
        for f in [&image.kernel, &image.initrd] {
            if !f.is_file() {
                return Err(Error::Unsupported {
                    dut: "vm".into(),
                    what: "this machine".into(),
                    why: format!(
                        "guest image file {} missing: build it with scripts/guest/build.sh \
                         (make setup runs it; set VECSWITCH_GUEST_DIR to use another directory)",
                        f.display()
                    ),
                });
            }
        }
        Ok(image)
    }
}

/// Fails, naming the package, if QEMU is not installed.
pub fn require_qemu() -> Result<()> {
    if crate::cmd::have(QEMU) {
        Ok(())
    } else {
        Err(Error::Unsupported {
            dut: "vm".into(),
            what: "this machine".into(),
            why: format!(
                "{QEMU} not found; install the Debian package qemu-system-x86 (make setup)"
            ),
        })
    }
}

/// What the guest does with its NICs (its kernel command line `vs.mode=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestMode {
    /// A kernel bridge over its two NICs: every frame in on one leaves on the other.
    Bridge,
    /// The kernel's bonding driver in 802.3ad (LACP) mode over its two NICs, with an address
    /// (`vs.ip=`, in [`VmSpec::append`]) that answers ARP and ping: a real LACP partner.
    Bond,
}

impl GuestMode {
    pub fn as_str(self) -> &'static str {
        match self {
            GuestMode::Bridge => "bridge",
            GuestMode::Bond => "bond",
        }
    }
}

/// One virtio-net NIC of a guest, attached by vhost-user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmNic {
    /// The vhost-user socket.
    pub socket: PathBuf,
    /// Whether QEMU listens on it (`server=on`); otherwise it connects to the backend.
    pub qemu_listens: bool,
}

/// A guest to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmSpec {
    /// Process name (`vm0`, ...): its log is `<run>/<name>.log`, its console
    /// `<run>/<name>-console.log`.
    pub name: String,
    /// Index of this guest in the topology: its NICs' MACs are `52:54:00:00:<index>:<nic>`.
    pub index: u8,
    pub nics: Vec<VmNic>,
    pub mode: GuestMode,
    /// CPU QEMU is pinned to.
    pub cpu: Option<usize>,
    /// Namespace QEMU runs in (so that deleting it ends the guest with the rest of the run).
    pub netns: Option<String>,
    /// More words for the guest's kernel command line, e.g. `vs.stats=1`, `vs.ip=10.77.0.2/24`
    /// (scripts/guest/init lists them).
    pub append: Vec<String>,
}

impl VmSpec {
    /// QEMU's arguments (after the program name) for this guest on `image`, console to `console`.
    pub fn qemu_args(&self, image: &GuestImage, console: &Path) -> Vec<String> {
        let mem = GUEST_MEM_MB;
        let mut a: Vec<String> = [
            "-nodefaults",
            "-display",
            "none",
            "-machine",
            "pc,accel=tcg",
            "-smp",
            "1",
            "-m",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.push(format!("{mem}M"));
        a.push("-object".into());
        a.push(format!("memory-backend-memfd,id=mem,size={mem}M,share=on"));
        a.extend(["-numa".into(), "node,memdev=mem".into()]);
        a.extend(["-kernel".into(), image.kernel.display().to_string()]);
        a.extend(["-initrd".into(), image.initrd.display().to_string()]);
        a.push("-append".into());
        let mut cmdline = format!(
            "console=ttyS0 quiet ipv6.disable=1 panic=-1 vs.mode={}",
            self.mode.as_str()
        );
        for word in &self.append {
            cmdline.push(' ');
            cmdline.push_str(word);
        }
        a.push(cmdline);
        a.extend(["-serial".into(), format!("file:{}", console.display())]);
        a.push("-no-reboot".into());
        for (i, nic) in self.nics.iter().enumerate() {
            let server = if nic.qemu_listens {
                ",server=on,wait=off"
            } else {
                ""
            };
            a.push("-chardev".into());
            a.push(format!(
                "socket,id=c{i},path={}{server}",
                nic.socket.display()
            ));
            a.push("-netdev".into());
            a.push(format!("vhost-user,id=n{i},chardev=c{i}"));
            a.push("-device".into());
            a.push(format!(
                "virtio-net-pci,netdev=n{i},mac=52:54:00:00:{:02x}:{i:02x},vectors=0,speed=10000,duplex=full",
                self.index
            ));
        }
        a
    }
}

/// A running guest; QEMU is stopped when it is dropped.
#[derive(Debug)]
pub struct Vm {
    child: ChildGuard,
    console: PathBuf,
}

impl Vm {
    /// Starts QEMU for `spec`. Does not wait for the guest (see [`Vm::wait_ready`]).
    pub fn start(spec: &VmSpec, image: &GuestImage, run_dir: &Path) -> Result<Vm> {
        require_qemu()?;
        let console = run_dir.join(format!("{}-console.log", spec.name));
        let _ = std::fs::remove_file(&console);
        let ps = ProcessSpec::new(&spec.name, QEMU)
            .args(spec.qemu_args(image, &console))
            .netns(spec.netns.as_deref())
            .cpus(spec.cpu.map(|c| vec![c]));
        let child = ChildGuard::spawn(&ps, run_dir)?;
        Ok(Vm { child, console })
    }

    pub fn name(&self) -> &str {
        self.child.name()
    }

    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    pub fn child(&self) -> &ChildGuard {
        &self.child
    }

    pub fn console_path(&self) -> &Path {
        &self.console
    }

    /// What the guest printed on its serial console so far.
    pub fn console(&self) -> String {
        std::fs::read(&self.console)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// The last `n` lines of the console and of QEMU's own log, for error messages.
    pub fn tail(&self, n: usize) -> String {
        let tail = |s: String| {
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        };
        format!(
            "console {}:\n{}\nqemu log {}:\n{}",
            self.console.display(),
            tail(self.console()),
            self.child.log_path().display(),
            tail(self.child.log())
        )
    }

    /// Whether the guest's /init said it is ready.
    pub fn is_ready(&self) -> bool {
        self.console().contains(READY_LINE)
    }

    /// Fails if QEMU exited.
    pub fn check_alive(&mut self) -> Result<()> {
        self.child.check_alive()
    }

    /// Waits until the guest is ready, calling `poll` meanwhile (the caller polls the backend
    /// ends of this guest's NICs that nobody else polls). On a timeout or QEMU's exit the error
    /// carries the end of the console.
    pub fn wait_ready(&mut self, timeout: Duration, mut poll: impl FnMut()) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            poll();
            if self.is_ready() {
                return Ok(());
            }
            if let Err(e) = self.child.check_alive() {
                return Err(Error::Invalid {
                    field: "vm",
                    value: format!("{e}\n{}", self.tail(30)),
                    expected: "a guest that boots and prints its ready line".into(),
                });
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: format!(
                        "guest {} to print {READY_LINE:?}\n{}",
                        self.name(),
                        self.tail(30)
                    ),
                    timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops QEMU (SIGTERM, then SIGKILL after `grace`).
    pub fn stop(&mut self, grace: Duration) {
        self.child.stop(grace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qemu_args_share_memory_and_attach_each_nic_by_vhost_user() {
        let spec = VmSpec {
            name: "vm1".into(),
            index: 1,
            nics: vec![
                VmNic {
                    socket: "/r/a.sock".into(),
                    qemu_listens: false,
                },
                VmNic {
                    socket: "/r/b.sock".into(),
                    qemu_listens: true,
                },
            ],
            mode: GuestMode::Bridge,
            cpu: Some(1),
            netns: None,
            append: vec!["vs.stats=1".into()],
        };
        let image = GuestImage {
            kernel: "/g/vmlinux".into(),
            initrd: "/g/initrd".into(),
        };
        let a = spec
            .qemu_args(&image, Path::new("/r/vm1-console.log"))
            .join(" ");
        for want in [
            "memory-backend-memfd,id=mem,size=256M,share=on",
            "-numa node,memdev=mem",
            "-kernel /g/vmlinux -initrd /g/initrd",
            "vs.mode=bridge",
            "ipv6.disable=1",
            "vs.mode=bridge vs.stats=1",
            "-serial file:/r/vm1-console.log",
            "socket,id=c0,path=/r/a.sock -netdev vhost-user,id=n0,chardev=c0",
            "socket,id=c1,path=/r/b.sock,server=on,wait=off",
            "virtio-net-pci,netdev=n1,mac=52:54:00:00:01:01,vectors=0,speed=10000,duplex=full",
            "accel=tcg",
        ] {
            assert!(a.contains(want), "missing {want:?} in {a}");
        }
    }

    #[test]
    fn a_missing_image_says_how_to_build_it() {
        let e = GuestImage::in_dir(Path::new("/nonexistent-guest-dir"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("scripts/guest/build.sh"), "{e}");
        assert!(e.contains("/nonexistent-guest-dir/vmlinux"), "{e}");
    }
}
