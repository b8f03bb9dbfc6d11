//! Property tests: for any two valid configs A and B, building A and then applying `diff(A, B)`
//! gives the same switch as building B directly, and ports whose backend did not change are the
//! same objects; the generic diff never adds an object before what it depends on nor removes one
//! while something still depends on it; any string sent as a request or a config gets an answer,
//! never a panic.

use crate::apply::apply_changes;
use crate::apply::testing::{factory, serial, snapshot, switch, xconnects};
use crate::config::*;
use crate::diff::diff;
use crate::diff::Change;
use crate::protocol::parse_request;
use crate::validate::validate;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::collections::HashMap;
use vecswitch_switch::object::ObjectKey;
use vecswitch_switch::Switch;

const PORTS: [&str; 4] = ["p0", "p1", "p2", "p3"];

fn port(i: usize, kind: u8, admin_up: bool, ring: u32) -> PortConfig {
    let admin = if admin_up {
        AdminState::Up
    } else {
        AdminState::Down
    };
    if kind == 0 {
        PortConfig::AfPacket(AfPacketPortConfig {
            admin,
            ..AfPacketPortConfig::new(PORTS[i], &format!("veth{i}"))
        })
    } else {
        PortConfig::Memif(MemifPortConfig {
            name: PORTS[i].into(),
            socket: "/tmp/m.sock".into(),
            id: i as u32,
            role: MemifRole::Server,
            ring_size: ring,
            mode: MemifMode::Polling,
            buffer_size: 2048,
            secret: None,
            mac: None,
            admin,
        })
    }
}

/// Configs over four port names: each port present or not, of either type, up or down, in at most
/// one service; up to two bridges with random settings and static MACs; some xconnects; MTU
/// entries (`[[mtu]]`) on some ports.
fn arb_config() -> impl Strategy<Value = Config> {
    (
        proptest::collection::vec(
            (
                any::<bool>(),
                0u8..2,
                any::<bool>(),
                prop_oneof![Just(256u32), Just(1024u32)],
            ),
            4,
        ),
        proptest::collection::vec(0u8..5, 4), // service per port: 0 none, 1 bridge b0, 2 bridge b1, 3 xconnect, 4 none
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        proptest::collection::vec((0usize..4, 0u8..3), 0..3), // static macs: (port, mac)
        (any::<bool>(), proptest::collection::vec(0u8..4, 4)), // bidir; mtu per port: 0 none, 1..3
    )
        .prop_map(
            |(ports, services, (b0, b1, learn, flood), macs, (bidir, mtus))| {
                let mut c = Config::default();
                let mut present = Vec::new();
                for (i, (on, kind, up, ring)) in ports.into_iter().enumerate() {
                    if on {
                        c.ports.push(port(i, kind, up, ring));
                        present.push(i);
                    }
                }
                let mut bridges = [
                    BridgeConfig {
                        learn,
                        ..BridgeConfig::new("b0")
                    },
                    BridgeConfig {
                        flood,
                        mac_age: if learn { 0 } else { 300 },
                        ..BridgeConfig::new("b1")
                    },
                ];
                let mut xc = Vec::new();
                for &i in &present {
                    match services[i] {
                        1 => bridges[0].ports.push(PORTS[i].into()),
                        2 => bridges[1].ports.push(PORTS[i].into()),
                        3 => xc.push(PORTS[i].to_string()),
                        _ => {}
                    }
                }
                // Cross-connect the xconnect ports in pairs.
                for pair in xc.chunks(2) {
                    if let [a, b] = pair {
                        c.xconnects.push(XconnectConfig {
                            ports: Some(vec![a.clone(), b.clone()]),
                            bidirectional: bidir,
                            from: None,
                            to: None,
                            ..Default::default()
                        });
                    }
                }
                for (i, m) in macs {
                    for b in bridges.iter_mut() {
                        if b.ports.iter().any(|p| p == PORTS[i]) {
                            let mac = format!("02:00:00:00:00:0{m}").parse().unwrap();
                            if !b.static_mac.iter().any(|s| s.mac == mac) {
                                b.static_mac.push(StaticMacConfig {
                                    mac,
                                    port: PORTS[i].into(),
                                });
                            }
                        }
                    }
                }
                if b0 {
                    c.bridges.push(bridges[0].clone());
                }
                if b1 {
                    c.bridges.push(bridges[1].clone());
                }
                for &i in &present {
                    if mtus[i] > 0 {
                        c.mtu.push(vecswitch_switch::mtu::MtuConfig {
                            interface: PORTS[i].into(),
                            mtu: if mtus[i] == 1 { 1500 } else { 9000 },
                            check: mtus[i] != 2,
                        });
                    }
                }
                c
            },
        )
        .prop_filter("valid", |c| validate(c).is_ok())
}

/// The switch's state without port identities (MTUs and output features per interface too).
fn shape(sw: &Switch) -> String {
    let mut ifs: Vec<String> = sw
        .show_interfaces()
        .into_iter()
        .map(|i| format!("{}:{}:{:?}", i.name, i.mtu, i.output_features))
        .collect();
    ifs.sort();
    format!("{} {:?} {ifs:?}", snapshot(sw, false), xconnects(sw))
}

fn build(c: &Config) -> Switch {
    let mut sw = switch();
    apply_changes(
        &mut sw,
        &diff(&Config::default(), c),
        HashMap::new(),
        &*factory(),
    )
    .unwrap();
    sw
}

/// Runs `changes` on a model that holds only object keys, starting from the objects of `from`:
/// every addition finds what it depends on, every removal leaves nothing depending on it, no key is
/// added twice or removed when absent. Answers the keys at the end.
fn check_order(from: &Config, changes: &[Change]) -> Result<BTreeSet<ObjectKey>, String> {
    let mut present: BTreeSet<ObjectKey> = crate::sections::objects(from)
        .iter()
        .map(|o| o.key())
        .collect();
    let mut deps: HashMap<ObjectKey, Vec<ObjectKey>> = crate::sections::objects(from)
        .iter()
        .map(|o| (o.key(), o.depends_on()))
        .collect();
    for c in changes {
        let o = c.object();
        let k = o.key();
        match c {
            Change::Add(_) => {
                if let Some(d) = o.depends_on().into_iter().find(|d| !present.contains(d)) {
                    return Err(format!("{c} before {d}"));
                }
                if !present.insert(k.clone()) {
                    return Err(format!("{c}: {k} is there already"));
                }
                deps.insert(k, o.depends_on());
            }
            Change::Remove(_) => {
                if let Some((user, _)) = deps
                    .iter()
                    .find(|(u, d)| present.contains(*u) && d.contains(&k))
                {
                    return Err(format!("{c} while {user} depends on it"));
                }
                if !present.remove(&k) {
                    return Err(format!("{c}: {k} is not there"));
                }
            }
            Change::Modify { .. } => {
                if !present.contains(&k) {
                    return Err(format!("{c}: {k} is not there"));
                }
            }
        }
    }
    Ok(present)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn diff_then_apply_equals_building_the_new_config(a in arb_config(), b in arb_config()) {
        let mut sw = build(&a);
        let serials: HashMap<String, u64> =
            a.ports.iter().map(|p| (p.name().to_string(), serial(&sw, p.name()))).collect();
        let changes = diff(&a, &b);
        apply_changes(&mut sw, &changes, HashMap::new(), &*factory())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{changes:#?}")))?;
        prop_assert_eq!(shape(&sw), shape(&build(&b)));
        for p in &b.ports {
            if let Some(old) = a.port(p.name()) {
                if old.same_backend(p) {
                    prop_assert_eq!(serial(&sw, p.name()), serials[p.name()], "{} re-created", p.name());
                }
            }
        }
        // And the way back.
        let back = diff(&b, &a);
        apply_changes(&mut sw, &back, HashMap::new(), &*factory()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(shape(&sw), shape(&build(&a)));
    }

    #[test]
    fn generic_diff_respects_dependencies_and_reaches_the_new_objects(a in arb_config(), b in arb_config()) {
        let changes = diff(&a, &b);
        let end = check_order(&a, &changes).map_err(|e| TestCaseError::fail(format!("{e}\n{changes:#?}")))?;
        let want: BTreeSet<ObjectKey> = crate::sections::objects(&b).iter().map(|o| o.key()).collect();
        prop_assert_eq!(end, want);
        // Nothing unchanged is touched: an object equal in both configs is in a change only if
        // something it depends on is (a re-created port's memberships and cross-connects).
        let old = crate::sections::objects(&a);
        let changed: BTreeSet<ObjectKey> = changes.iter().map(|c| c.object().key()).collect();
        for n in crate::sections::objects(&b) {
            let k = n.key();
            let unchanged = old.iter().any(|o| o.key() == k && o.same(&*n));
            if unchanged && changed.contains(&k) {
                prop_assert!(n.depends_on().iter().any(|d| changed.contains(d)), "{} touched: {:#?}", k, changes);
            }
        }
    }

    #[test]
    fn any_request_line_is_answered_without_panic(line in "\\PC{0,200}") {
        let _ = parse_request(&line);
    }

    #[test]
    fn json_shaped_garbage_is_answered_without_panic(
        cmd in prop_oneof![Just("show"), Just("port_add"), Just("bridge_add"), Just("mac_add"), Just("reload"), Just("x")],
        key in "[a-z_]{1,8}",
        val in prop_oneof![Just("1".to_string()), Just("\"s\"".to_string()), Just("{}".to_string()), Just("[1,{}]".to_string()), Just("null".to_string())],
    ) {
        let line = format!("{{\"cmd\":\"{cmd}\",\"{key}\":{val}}}");
        let r = parse_request(&line);
        if cmd == "x" {
            prop_assert!(r.is_err());
        }
        // A key no command has is refused by name.
        if key.len() == 8 {
            let e = r.unwrap_err().to_string();
            prop_assert!(e.contains(&key) || e.contains("cmd"), "{}", e);
        }
    }

    #[test]
    fn any_toml_text_parses_or_errs_and_validation_never_panics(text in "\\PC{0,300}") {
        if let Ok(c) = Config::from_toml(&text, "t") {
            let _ = validate(&c);
        }
    }
}
