//! Scaffolding shared by the workspace's integration tests; a dev-dependency only, never shipped.
//!
//! - [`tool`]: finding and running external programs. A missing program fails the test with the
//!   Debian package that provides it ([`tool::require`]), never skips it.
//! - [`netns`]: network namespaces ([`Netns`]) and veth pairs ([`Veth`]) whose names carry the
//!   pid and a per-process counter ([`unique_name`]), deleted by their `Drop` even when the test
//!   panics; [`VethLab`] is the common "host end here, peer end in a namespace" shape.
//! - [`testpmd`]: DPDK's `dpdk-testpmd` driven interactively ([`TestPmd`]) for memif and
//!   virtio-user interop tests, and [`serial`] to run such tests one at a time.
//! - [`TempDir`]: a unique temporary directory removed on drop.
//! - [`process`]: a `vecswitch run` child killed on drop, with `ctl` helpers ([`RunningSwitch`]).
//! - [`tshark`]: reading fields out of a pcap with tshark.
//!
//! It depends on no vecswitch crate (the crates under test use it as a dev-dependency; a
//! dependency back would build them twice with incompatible types), so port-specific helpers
//! (waiting for a port's link, building frames into a pool) stay in each crate's tests.
#![forbid(unsafe_code)]

pub mod netns;
pub mod process;
pub mod tempdir;
pub mod testpmd;
pub mod tool;
pub mod tshark;

pub use netns::{unique_name, Netns, Veth, VethLab};
pub use process::RunningSwitch;
pub use tempdir::TempDir;
pub use testpmd::{serial, Commander, TestPmd};
