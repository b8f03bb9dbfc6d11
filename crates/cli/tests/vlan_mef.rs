//! The MEF examples (`examples/mef-*.toml`) loaded the way `vecswitch run` loads a config —
//! parsed, validated, diffed against an empty switch and applied — over loopback ports named as
//! the examples' ports, then checked with frames built from bytes: the EVPL's C-tag in at the UNI
//! leaves the ENNI with the S-tag pushed, and the far side's ENNI translates the S-VLAN. Bad
//! sub-interface configs are refused whole, the switch untouched.

use std::collections::HashMap;
use std::path::PathBuf;

use vecswitch_buffer::Pool;
use vecswitch_control::apply::apply_changes;
use vecswitch_control::config::Config;
use vecswitch_control::diff::diff;
use vecswitch_control::ports::PortOpenError;
use vecswitch_control::validate::validate;
use vecswitch_ports::loopback::{packet_from_bytes, pair, LoopbackPort};
use vecswitch_ports::Port;
use vecswitch_switch::{Switch, SwitchConfig};

const Q: u16 = 0x8100;
const AD: u16 = 0x88a8;

fn example(name: &str) -> Config {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let c = Config::from_toml(&text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    validate(&c).unwrap_or_else(|e| panic!("{name} does not validate: {e}"));
    c
}

/// A switch with `cfg` applied, its ports loopback pairs named as the config's; the test's ends
/// by port name.
fn load(cfg: &Config) -> (Switch, HashMap<String, LoopbackPort>) {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 1024,
        mac_table_entries: 1024,
        ..Default::default()
    });
    let mut prebuilt: HashMap<String, Box<dyn Port>> = HashMap::new();
    let mut peers = HashMap::new();
    for p in &cfg.ports {
        let (a, b) = pair(p.name(), &format!("{}-peer", p.name()));
        prebuilt.insert(p.name().to_string(), Box::new(a));
        peers.insert(p.name().to_string(), b);
    }
    let factory =
        |p: &vecswitch_control::config::PortConfig| -> Result<Box<dyn Port>, PortOpenError> {
            panic!("every port is prebuilt, asked for {}", p.name())
        };
    apply_changes(&mut sw, &diff(&Config::default(), cfg), prebuilt, &factory)
        .unwrap_or_else(|e| panic!("apply: {e}"));
    (sw, peers)
}

fn frame(tags: &[(u16, u16)]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    for &(tpid, vid) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    f.extend_from_slice(&[0x5a; 46]);
    f
}

/// Sends `f` into port `from`, runs the switch, returns what port `to` sent (and checks that no
/// other port sent anything).
fn through(
    sw: &mut Switch,
    peers: &mut HashMap<String, LoopbackPort>,
    from: &str,
    f: &[u8],
) -> Vec<(String, Vec<u8>)> {
    let mut pool = Pool::new(256);
    let h = packet_from_bytes(&mut pool, f).unwrap();
    assert_eq!(peers.get_mut(from).unwrap().tx_burst(&mut pool, &[h]), 1);
    pool.free(h);
    while sw.poll_once() > 0 {}
    let mut out = Vec::new();
    for (name, p) in peers.iter_mut() {
        let mut hs = Vec::new();
        p.rx_burst(&mut pool, &mut hs, 16);
        for &h in &hs {
            let mut v = Vec::new();
            pool.copy_out(h, &mut v);
            out.push((name.clone(), v));
        }
        pool.free_bulk(&hs);
    }
    out
}

#[test]
fn mef_evpl_uni_to_enni_pushes_the_s_tag_and_pops_it_back() {
    let cfg = example("mef-evpl-uni-enni.toml");
    let (mut sw, mut peers) = load(&cfg);
    let names: Vec<String> = sw
        .show_subinterfaces()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["uni0.10", "enni0.300"]);
    // C-tag 10 in at the UNI, S-tag 300 over it out of the ENNI; and back.
    assert_eq!(
        through(&mut sw, &mut peers, "uni0", &frame(&[(Q, 10)])),
        [("enni0".to_string(), frame(&[(AD, 300), (Q, 10)]))]
    );
    assert_eq!(
        through(&mut sw, &mut peers, "enni0", &frame(&[(AD, 300), (Q, 10)])),
        [("uni0".to_string(), frame(&[(Q, 10)]))]
    );
    // Other C-VLANs are not this EVPL's: nothing leaves.
    assert!(through(&mut sw, &mut peers, "uni0", &frame(&[(Q, 11)])).is_empty());
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn mef_enni_far_side_translates_the_s_vlan() {
    let cfg = example("mef-evpl-enni-translate.toml");
    let (mut sw, mut peers) = load(&cfg);
    assert_eq!(
        through(&mut sw, &mut peers, "enni0", &frame(&[(AD, 300), (Q, 10)])),
        [("enni1".to_string(), frame(&[(AD, 400), (Q, 10)]))]
    );
    assert_eq!(
        through(&mut sw, &mut peers, "enni1", &frame(&[(AD, 400), (Q, 10)])),
        [("enni0".to_string(), frame(&[(AD, 300), (Q, 10)]))]
    );
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn bad_subinterface_configs_are_refused_whole_with_the_field_path() {
    let good = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/mef-evpl-uni-enni.toml"),
    )
    .unwrap();
    let cases = [
        // The same match twice on one parent.
        (
            good.clone() + "\n[[subinterface]]\nparent = \"uni0\"\nid = 11\nencap = \"dot1q 10\"\n",
            "subinterface[2].encap = \"dot1q 10\"",
        ),
        // Pop beyond the match.
        (
            good.replacen(
                "tag-rewrite = \"push dot1ad 300\"",
                "tag-rewrite = \"pop 2\"",
                1,
            ),
            "subinterface[0].tag-rewrite = \"pop 2\"",
        ),
        // A parent that is not a port.
        (
            good.clone()
                + "\n[[subinterface]]\nparent = \"uni0.10\"\nid = 1\nencap = \"dot1q 5\"\n",
            "subinterface[2].parent = \"uni0.10\"",
        ),
    ];
    for (text, path) in cases {
        let c = Config::from_toml(&text, "bad.toml").unwrap();
        let e = validate(&c).unwrap_err().to_string();
        assert!(e.contains(path), "expected {path} in: {e}");
    }
    // A bad encap word is refused by the parser, naming what is accepted.
    let e = Config::from_toml(
        &good.replacen("dot1q 10 exact-match", "dot1q 5000", 1),
        "bad.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("accepted `dot1q N`"), "{e}");
}

#[test]
fn a_reload_that_fails_in_the_switch_leaves_it_untouched() {
    // Past validation (diffed straight), a duplicate match reaches the switch, which refuses it:
    // the apply is undone and the switch is as it was.
    let cfg = example("mef-evpl-uni-enni.toml");
    let (mut sw, _peers) = load(&cfg);
    let before = (
        sw.show_subinterfaces(),
        sw.show_interfaces(),
        sw.show_ports().len(),
    );
    let mut bad = cfg.clone();
    let mut dup = bad.subinterfaces[0].clone();
    dup.id = 99;
    bad.subinterfaces.push(dup);
    let factory =
        |p: &vecswitch_control::config::PortConfig| -> Result<Box<dyn Port>, PortOpenError> {
            panic!("no port is added, asked for {}", p.name())
        };
    let e = apply_changes(&mut sw, &diff(&cfg, &bad), HashMap::new(), &factory).unwrap_err();
    assert!(e.to_string().contains("uni0.99"), "{e}");
    assert_eq!(
        (
            sw.show_subinterfaces(),
            sw.show_interfaces(),
            sw.show_ports().len()
        ),
        before
    );
}

/// A controller over a switch in this thread, started from the UNI/ENNI example (ports opened
/// as loopback ports), driven with `ctl` words.
fn controller() -> vecswitch_control::controller::Controller {
    use std::sync::{Arc, Mutex};
    use vecswitch_control::controller::{Controller, Local};
    let sw = Switch::new(SwitchConfig {
        buffers: 1024,
        mac_table_entries: 1024,
        ..Default::default()
    });
    let factory =
        |p: &vecswitch_control::config::PortConfig| -> Result<Box<dyn Port>, PortOpenError> {
            Ok(Box::new(pair(p.name(), "peer").0))
        };
    Controller::start(
        Box::new(Local(Mutex::new(sw))),
        Arc::new(factory),
        example("mef-evpl-uni-enni.toml"),
        None,
    )
    .unwrap()
}

fn ctl(c: &mut vecswitch_control::controller::Controller, line: &str) -> Result<String, String> {
    let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    let req = vecswitch_control::command::parse_words(&words, std::path::Path::new("/"))
        .map_err(|e| e.to_string())?;
    let r = c.handle(req.clone());
    match (r.ok, r.data, r.error) {
        (true, data, _) => Ok(vecswitch_control::render::render(
            &req,
            &data.unwrap_or(serde_json::Value::Null),
        )),
        (false, _, e) => Err(e.unwrap_or_default()),
    }
}

#[test]
fn ctl_adds_shows_and_deletes_sub_interfaces_and_refuses_bad_ones_whole() {
    let mut c = controller();
    let shown = ctl(&mut c, "show sub-interfaces").unwrap();
    assert!(
        shown.contains("uni0.10") && shown.contains("push dot1ad 300"),
        "{shown}"
    );
    assert!(shown.contains("dot1ad 300 inner-dot1q 10"), "{shown}");

    let out = ctl(
        &mut c,
        "subinterface add uni0 20 dot1q 20 tag-rewrite pop 1",
    )
    .unwrap();
    assert!(out.contains("add sub-interface uni0.20"), "{out}");
    assert!(ctl(&mut c, "show subinterfaces")
        .unwrap()
        .contains("uni0.20"));

    let before = ctl(&mut c, "show subinterfaces").unwrap();
    // The same match twice on a parent, pop beyond the match, an unknown parent: refused with
    // the field, the value and what is accepted; nothing changes.
    let e = ctl(&mut c, "subinterface add uni0 21 dot1q 20").unwrap_err();
    assert!(e.contains("subinterface[3].encap = \"dot1q 20\""), "{e}");
    let e = ctl(
        &mut c,
        "subinterface add uni0 22 dot1q 22 tag-rewrite pop 2",
    )
    .unwrap_err();
    assert!(e.contains("subinterface[3].tag-rewrite = \"pop 2\""), "{e}");
    let e = ctl(&mut c, "subinterface add nope 1 dot1q 5").unwrap_err();
    assert!(e.contains("subinterface[3].parent = \"nope\""), "{e}");
    let e = ctl(&mut c, "subinterface add uni0 1 dot1q 5000").unwrap_err();
    assert!(e.contains("encap = \"dot1q 5000\": `dot1q N`"), "{e}");
    assert_eq!(ctl(&mut c, "show subinterfaces").unwrap(), before);

    // Services name sub-interfaces like ports.
    ctl(&mut c, "xconnect add uni0.20 enni0 --both").unwrap();
    assert!(ctl(&mut c, "show xconnect").unwrap().contains("uni0.20"));
    assert!(
        ctl(&mut c, "subinterface del uni0.20").is_err(),
        "in use by the xconnect"
    );
    ctl(&mut c, "xconnect del uni0.20").unwrap();
    ctl(&mut c, "xconnect del enni0").unwrap();
    ctl(&mut c, "subinterface del uni0.20").unwrap();
    assert!(!ctl(&mut c, "show subinterfaces")
        .unwrap()
        .contains("uni0.20"));
    let e = ctl(&mut c, "subinterface del uni0.20").unwrap_err();
    assert!(e.contains("sub-interface"), "{e}");
    // In use by the EVPL: the running config keeps it only with its xconnect; deleting it alone
    // is refused by validation (the xconnect names it).
    let e = ctl(&mut c, "subinterface del uni0.10").unwrap_err();
    assert!(e.contains("xconnect[0]"), "{e}");
}
