//! Errors of the route API. Each names the field, the value and what is accepted.

use std::net::IpAddr;

/// An invalid route or a route that is not there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FibError {
    /// `len` larger than the address width.
    #[error("prefix length {len} is out of range for {family}: accepted 0..={max}")]
    PrefixLen {
        /// "IPv4" or "IPv6".
        family: &'static str,
        /// The length given.
        len: u8,
        /// The largest length accepted (32 or 128).
        max: u8,
    },
    /// The address has bits set after the first `len` bits. Rejected rather than masked (as
    /// `ip route` does: "Invalid prefix for given prefix length"), because a silently masked
    /// route is usually a typo in a config file.
    #[error("prefix address {addr}/{len} has host bits set: the bits after the first {len} must be zero (accepted: {network}/{len})")]
    HostBits {
        /// The address given.
        addr: IpAddr,
        /// The length given.
        len: u8,
        /// The address with the host bits cleared, which would be accepted.
        network: IpAddr,
    },
    /// No next hop, or more than [`MAX_ECMP`](crate::MAX_ECMP).
    #[error("next hops for {prefix}: {count} given, accepted 1..={max} (ECMP)")]
    NextHopCount {
        /// The route, `addr/len`.
        prefix: String,
        /// How many were given.
        count: usize,
        /// [`MAX_ECMP`](crate::MAX_ECMP).
        max: usize,
    },
    /// `remove` of a route that is not in the table.
    #[error("route {prefix} is not in the table")]
    NotFound {
        /// The route, `addr/len`.
        prefix: String,
    },
}
