//! Setups for the instruction-count example (`examples/nat44_packets.rs`). Not used by the switch
//! itself.
//!
//! [`nat_switch`]: `ip::testing::router_switch` (port `src`, a replay source of 64-byte UDP
//! frames from 10.0.0.2 to `flows` destinations, routed to port `sink`) with `src` an inside
//! interface and `sink` the outside one: every frame is masqueraded by `nat44-in2out`, one
//! session per destination (made by the first frame of each, the rest find it).

use crate::ip::testing::router_switch;
use crate::nat44::{Nat44Settings, Role};
use crate::Switch;

/// See the module doc. `limit`: frames the source hands out in all (`None`: endless).
pub fn nat_switch(flows: u32, limit: Option<u64>) -> Switch {
    let mut sw = router_switch(flows, limit);
    sw.set_nat44_settings(Nat44Settings {
        max_sessions: flows.max(1) * 2,
        max_sessions_per_host: flows.max(1) * 2,
        ..Default::default()
    })
    .expect("valid settings");
    sw.nat44_set_interface("src", Some(Role::Inside))
        .expect("fresh switch");
    sw.nat44_set_interface("sink", Some(Role::Outside))
        .expect("the sink has an address");
    sw
}
