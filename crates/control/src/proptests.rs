//! Property tests: for any two valid configs A and B, building A and then applying `diff(A, B)`
//! gives the same dataplane as building B directly, and ports whose backend did not change are
//! the same objects; any string sent as a request or a config gets an answer, never a panic.

use crate::apply::apply_changes;
use crate::apply::fake::{factory, Fake};
use crate::config::*;
use crate::diff::diff;
use crate::protocol::parse_request;
use crate::validate::validate;
use proptest::prelude::*;
use std::collections::HashMap;

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
/// one service; up to two bridges with random settings and static MACs; some xconnects.
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
        any::<bool>(),
    )
        .prop_map(|(ports, services, (b0, b1, learn, flood), macs, bidir)| {
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
                    });
                }
            }
            for (i, m) in macs {
                for b in bridges.iter_mut() {
                    if b.ports.iter().any(|p| p == PORTS[i]) {
                        let mac = format!("02:00:00:00:00:0{m}");
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
            c
        })
        .prop_filter("valid", |c| validate(c).is_ok())
}

/// The dataplane state without port identities.
fn shape(f: &Fake) -> String {
    let ports: Vec<String> = f
        .ports
        .iter()
        .map(|(n, (_, up))| format!("{n}:{up}"))
        .collect();
    format!("{ports:?} {:?} {:?} {:?}", f.bridges, f.xconnects, f.macs)
}

fn build(c: &Config) -> Fake {
    let mut f = Fake::default();
    apply_changes(
        &mut f,
        &diff(&Config::default(), c),
        &Config::default(),
        HashMap::new(),
        &*factory(),
    )
    .unwrap();
    f
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn diff_then_apply_equals_building_the_new_config(a in arb_config(), b in arb_config()) {
        let mut f = build(&a);
        let serials: HashMap<String, u64> =
            f.ports.iter().map(|(n, (p, _))| (n.clone(), p.stats().rx_packets)).collect();
        let changes = diff(&a, &b);
        apply_changes(&mut f, &changes, &a, HashMap::new(), &*factory())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{changes:#?}")))?;
        prop_assert_eq!(shape(&f), shape(&build(&b)));
        for p in &b.ports {
            if let Some(old) = a.port(p.name()) {
                if old.same_backend(p) {
                    prop_assert_eq!(f.ports[p.name()].0.stats().rx_packets, serials[p.name()], "{} re-created", p.name());
                }
            }
        }
        // And the way back.
        let back = diff(&b, &a);
        apply_changes(&mut f, &back, &b, HashMap::new(), &*factory()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(shape(&f), shape(&build(&a)));
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
