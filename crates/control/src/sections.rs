//! The control plane's registration point: one line per config section declares both a field of
//! [`Config`] (its TOML key and serde type) and its entry in [`SECTIONS`], which binds the
//! feature's [`Section`](vecswitch_switch::ctl::Section) (declared in its folder: validation,
//! config objects, `ctl` verbs) to that field — the [`config_sections!`] list below. Nothing else
//! in `crates/control` names a feature. A feature's `show` commands need no line here: they come
//! from [`vecswitch_switch::ctl::shows`] (the switch's own and each feature's `Feature::shows`).
//!
//! - [`SECTIONS`]: each `[[section]]` of the config, in validation order (ports first: the
//!   services refer to them). [`crate::validate::validate`] runs every section's validation;
//!   [`crate::diff::diff`] diffs the objects of all sections together; [`find_verb`] finds the
//!   section whose verb a `ctl` command names (`mtu p0 1500 check`): the words edit a copy of the
//!   running config, which then takes the same validate → diff → apply path as a file.
//! - [`find_action`]: a command that acts on the running switch without changing its config
//!   (`mac flush`), registered by its feature.
//! - [`find_show`]: a `show WORD` — the switch's registered shows, or one the controller answers
//!   itself ([`CONTROLLER_SHOWS`]: `config`, `version`).

use crate::config::SwitchConfig;
use crate::ports::{self, PortConfig};
use crate::ports_ctl;
use crate::protocol::VersionInfo;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use vecswitch_switch::ctl::{typed, Action, Show, VerbError, VerbInfo};
use vecswitch_switch::l2::config::{BridgeConfig, XconnectConfig};
use vecswitch_switch::nat44::ctl as nat44ctl;
use vecswitch_switch::object::{Obj, Validation};
use vecswitch_switch::{bond, firewall, ip, l2, mtu, nat44, vlan};

/// One config section, bound to its field of [`Config`].
#[derive(Debug, Clone, Copy)]
pub struct Section {
    /// The TOML key (`[[port]]`).
    pub key: &'static str,
    /// Whole-config validation of the section (errors into the [`Validation`]).
    pub validate: fn(&Config, &mut Validation),
    /// The section's config objects.
    pub objects: fn(&Config, &mut Vec<Obj>),
    /// Its `ctl` verbs.
    pub verbs: fn() -> Vec<VerbInfo>,
    /// Applies verb number `i` (of `verbs`) with its arguments to the section of a config.
    pub edit: fn(&mut Config, usize, &[String]) -> Result<(), VerbError>,
}

/// Whether a section is as an empty file leaves it (it is then not written back).
fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}

/// Whether two keys are the same (`==` on `&str` is not `const`).
const fn same_key(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// One entry of [`SECTIONS`]: `(path::SECTION)` binds a feature's `Section<T>` to
/// `Config::field` (its key must be the line's: checked at compile time); `{ validate, objects,
/// verbs, edit }` is a section written out (ports, or one that reads another section too).
macro_rules! section {
    ($field:ident, $key:tt, ($spec:path)) => {{
        const _: () = assert!(
            same_key($spec.key, $key),
            concat!("the Section bound to `", $key, "` has another key")
        );
        Section {
            key: $key,
            validate: |c, v| ($spec.validate)(&c.$field, v),
            objects: |c, o| ($spec.objects)(&c.$field, o),
            verbs: || $spec.verbs.iter().map(|v| v.info()).collect(),
            edit: |c, i, w| ($spec.verbs[i].apply)(&mut c.$field, w).map_err(VerbError::from),
        }
    }};
    ($field:ident, $key:tt, { $($body:tt)* }) => {
        Section { key: $key, $($body)* }
    };
}

/// `config_sections! { field: Type = "key" SECTION; ... }`, each line with its doc comment:
/// declares [`Config`] (the `[switch]` table, then one field per line, under its TOML key,
/// defaulted when absent and not written when default) and [`SECTIONS`] (one entry per line, in
/// the same order) from one list, so that a section's field and its binding cannot drift apart.
/// `SECTION` is `(path::SECTION)`, a feature's `Section<T>` over the field's type, or
/// `{ validate, objects, verbs, edit }` over the whole `Config`.
macro_rules! config_sections {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty = $key:tt $spec:tt ; )*) => {
        /// A whole switch configuration (one TOML file). Unknown keys are rejected
        /// (`deny_unknown_fields`), naming the key and the accepted ones.
        #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Config {
            /// Process-wide settings; optional.
            #[serde(default)]
            pub switch: SwitchConfig,
            $(
                $(#[$doc])*
                #[serde(default, rename = $key, skip_serializing_if = "is_default")]
                pub $field: $ty,
            )*
        }

        /// Every section, in validation order: one line each in [`config_sections!`].
        pub const SECTIONS: &[Section] = &[$(section!($field, $key, $spec)),*];
    };
}

config_sections! {
    /// Ports, in order (`[[port]]`; their backends are the control plane's, `crate::ports`; their
    /// verbs edit the whole config: deleting a port asks what refers to it, `crate::ports_ctl`).
    ports: Vec<PortConfig> = "port" {
        validate: |c, v| ports::validate_ports(&c.ports, v),
        objects: |c, o| ports::port_objects(&c.ports, o),
        verbs: || ports_ctl::VERBS.iter().map(|v| v.info()).collect(),
        edit: |c, i, w| (ports_ctl::VERBS[i].apply)(c, w),
    };
    /// Link aggregation groups (`[[bond]]`).
    bonds: Vec<bond::config::BondConfig> = "bond" (bond::ctl::SECTION);
    /// VLAN sub-interfaces (`[[subinterface]]`).
    subinterfaces: Vec<vlan::SubInterfaceConfig> = "subinterface" (vlan::ctl::SECTION);
    /// E-Line cross-connects (`[[xconnect]]`).
    xconnects: Vec<XconnectConfig> = "xconnect" (l2::ctl::XCONNECTS);
    /// E-LAN bridge-domains (`[[bridge]]`).
    bridges: Vec<BridgeConfig> = "bridge" (l2::ctl::BRIDGES);
    /// Interface MTUs and the MTU check (`[[mtu]]`).
    mtu: Vec<mtu::MtuConfig> = "mtu" (mtu::SECTION);
    /// Routing: interface addresses, routes, static neighbours (`[ip]`).
    ip: ip::config::IpConfig = "ip" (ip::ctl::SECTION);
    /// NAT44 masquerade: interface roles and settings (`[nat44]`; its validation and objects read
    /// the `[ip]` addresses too).
    nat44: nat44::config::Nat44Config = "nat44" {
        validate: |c, v| nat44::config::validate(&c.nat44, &c.ip, v),
        objects: |c, o| nat44::config::objects(&c.nat44, &c.ip, o),
        verbs: || nat44ctl::VERBS.iter().map(|v| v.info()).collect(),
        edit: |c, i, w| (nat44ctl::VERBS[i].apply)(&mut c.nat44, w).map_err(VerbError::from),
    };
    /// Firewall ACLs per interface (`[[firewall]]`).
    firewall: Vec<firewall::config::FirewallConfig> = "firewall" (firewall::ctl::SECTION);
}

/// A registered verb: its section and its number there.
#[derive(Debug, Clone, Copy)]
pub struct FoundVerb {
    pub section: &'static Section,
    pub index: usize,
    pub info: VerbInfo,
}

/// Every registered verb, section by section.
pub fn verbs() -> impl Iterator<Item = FoundVerb> {
    SECTIONS.iter().flat_map(|s| {
        (s.verbs)()
            .into_iter()
            .enumerate()
            .map(move |(index, info)| FoundVerb {
                section: s,
                index,
                info,
            })
    })
}

/// The verb whose canonical name is `name` (`subinterface add`).
pub fn find_verb(name: &str) -> Option<FoundVerb> {
    verbs().find(|v| v.info.name() == name)
}

/// The verb the command `words` start with (the longest name that matches) and how many words
/// its name takes.
pub fn match_verb(words: &[&str]) -> Option<(FoundVerb, usize)> {
    verbs()
        .filter_map(|v| v.info.matches(words).map(|n| (v, n)))
        .max_by_key(|(_, n)| *n)
}

/// The action whose canonical name is `name` (`mac flush`): a command that acts on the running
/// switch without changing its config, registered by a feature
/// ([`vecswitch_switch::ctl::Action`]).
pub fn find_action(name: &str) -> Option<&'static Action> {
    vecswitch_switch::ctl::find_action(name)
}

/// The action the command `words` start with and how many words its name takes.
pub fn match_action(words: &[&str]) -> Option<(&'static Action, usize)> {
    vecswitch_switch::ctl::actions()
        .filter_map(|a| a.info().matches(words).map(|n| (a, n)))
        .max_by_key(|(_, n)| *n)
}

/// A show the controller answers from its own state.
#[derive(Debug, Clone, Copy)]
pub struct ControllerShow {
    pub word: &'static str,
    pub help: &'static str,
    pub render: fn(&Value) -> Option<String>,
}

/// `show config` and `show version`.
pub const CONTROLLER_SHOWS: &[ControllerShow] = &[
    ControllerShow {
        word: "config",
        help: "the running config, as TOML",
        render: |v| typed::<Config>(v).and_then(|c| toml::to_string(&c).ok()),
    },
    ControllerShow {
        word: "version",
        help: "version, config file, uptime, changes applied",
        render: |v| typed::<VersionInfo>(v).map(|v| crate::render::version(&v)),
    },
];

/// A `show WORD`, found.
#[derive(Debug, Clone, Copy)]
pub enum FoundShow {
    /// Answered by the switch, on the worker.
    Switch(&'static Show),
    /// Answered by the controller.
    Controller(&'static ControllerShow),
}

impl FoundShow {
    /// The canonical word (`"what"` on the socket).
    pub fn word(&self) -> &'static str {
        match self {
            FoundShow::Switch(s) => s.word,
            FoundShow::Controller(s) => s.word,
        }
    }
    /// The text `ctl` prints for its answer.
    pub fn render(&self, data: &Value) -> Option<String> {
        match self {
            FoundShow::Switch(s) => (s.render)(data),
            FoundShow::Controller(s) => (s.render)(data),
        }
    }
    /// `show WORD [ARG]`, for help.
    pub fn usage(&self) -> String {
        match self {
            FoundShow::Switch(s) => s.usage(),
            FoundShow::Controller(s) => format!("show {}", s.word),
        }
    }
    /// What it shows.
    pub fn help(&self) -> &'static str {
        match self {
            FoundShow::Switch(s) => s.help,
            FoundShow::Controller(s) => s.help,
        }
    }
}

/// Every show, the switch's then the controller's.
pub fn shows() -> impl Iterator<Item = FoundShow> {
    vecswitch_switch::ctl::shows()
        .map(FoundShow::Switch)
        .chain(CONTROLLER_SHOWS.iter().map(FoundShow::Controller))
}

/// The show named `w` (word or alias).
pub fn find_show(w: &str) -> Option<FoundShow> {
    vecswitch_switch::ctl::find_show(w)
        .map(FoundShow::Switch)
        .or_else(|| {
            CONTROLLER_SHOWS
                .iter()
                .find(|s| s.word == w)
                .map(FoundShow::Controller)
        })
}

/// The canonical words of every show (`ports, interfaces, ...`), for error messages.
pub fn show_words() -> String {
    shows().map(|s| s.word()).collect::<Vec<_>>().join(", ")
}

/// Every config object of `c`, section by section, in config order.
pub fn objects(c: &Config) -> Vec<Obj> {
    let mut out = Vec::new();
    for s in SECTIONS {
        (s.objects)(c, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    //! The worked example of docs/ARCHITECTURE.md end to end: the `mtu` feature's section, show
    //! and ctl command, through the controller onto the real switch.
    use crate::apply::testing::{factory, switch};
    use crate::command::parse_words;
    use crate::config::{Config, PortConfig};
    use crate::controller::Controller;
    use crate::protocol::Request;
    use crate::render::render;
    use std::sync::{Arc, Mutex};

    const CFG: &str = r#"
[[port]]
name = "p0"
type = "af_packet"
interface = "veth0"
[[port]]
name = "p1"
type = "af_packet"
interface = "veth1"
[[mtu]]
interface = "p0"
mtu = 1500
check = true
"#;

    fn start() -> (Controller, Arc<Mutex<vecswitch_switch::Switch>>) {
        struct Shared(Arc<Mutex<vecswitch_switch::Switch>>);
        impl crate::controller::Worker for Shared {
            fn run(&self, job: crate::controller::Job) -> Result<(), vecswitch_switch::WorkerGone> {
                let mut sw = self.0.lock().unwrap();
                job(&mut sw);
                Ok(())
            }
        }
        let sw = Arc::new(Mutex::new(switch()));
        let c = Controller::start(
            Box::new(Shared(Arc::clone(&sw))),
            Arc::from(factory()),
            Config::from_toml(CFG, "t").unwrap(),
            None,
        )
        .unwrap();
        (c, sw)
    }

    fn ctl(c: &mut Controller, line: &str) -> Result<serde_json::Value, String> {
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        let req = parse_words(&words, std::path::Path::new("/")).map_err(|e| e.to_string())?;
        let r = c.handle(req);
        if r.ok {
            Ok(r.data.unwrap_or_default())
        } else {
            Err(r.error.unwrap())
        }
    }

    /// (MTU, output features) of interface `name`.
    fn iface(sw: &Mutex<vecswitch_switch::Switch>, name: &str) -> (u16, Vec<String>) {
        let i = sw
            .lock()
            .unwrap()
            .show_interfaces()
            .into_iter()
            .find(|i| i.name == name)
            .unwrap();
        (i.mtu, i.output_features)
    }

    #[test]
    fn mtu_section_show_and_ctl_end_to_end() {
        let (mut c, sw) = start();
        // The config section reached the switch.
        assert_eq!(iface(&sw, "p0"), (1500, vec!["mtu-check".to_string()]));
        assert_eq!(iface(&sw, "p1").1, Vec::<String>::new());
        // `show interfaces` (registered show) has the MTU column.
        let req = Request::Show {
            what: "interfaces".into(),
            args: vec![],
        };
        let data = ctl(&mut c, "show interfaces").unwrap();
        let text = render(&req, &data);
        // The MTU column is right-aligned: the value ends where the header does.
        let head = text.lines().next().unwrap();
        let end = head.find(" MTU").unwrap() + " MTU".len();
        let p0 = text.lines().nth(1).unwrap();
        assert!(
            p0.starts_with("p0 ") && p0.contains(" main (port 0) "),
            "{text}"
        );
        assert_eq!(p0[..end].rsplit(' ').next(), Some("1500"), "{text}");
        assert!(p0.ends_with("mtu-check"), "{text}");
        // The registered ctl command: an edit of the running config, applied in place.
        let r = ctl(&mut c, "mtu p0 9000 nocheck").unwrap();
        assert_eq!(r["changes"], serde_json::json!(["set mtu 9000 on p0"]));
        assert_eq!(iface(&sw, "p0"), (9000, vec![]));
        let r = ctl(&mut c, "mtu p1 1400 check").unwrap();
        assert_eq!(
            r["changes"],
            serde_json::json!(["set mtu 1400 on p1 (checked)"])
        );
        assert_eq!(c.running().mtu.len(), 2);
        assert!(c.running().to_toml().contains("[[mtu]]"));
        // Refusals name field, value and what is accepted; nothing changes.
        let e = ctl(&mut c, "mtu p0 10").unwrap_err();
        assert!(
            e.contains("mtu[0].mtu = 10") && e.contains("68 to 65535"),
            "{e}"
        );
        let e = ctl(&mut c, "mtu p0 big").unwrap_err();
        assert!(
            e.contains("BYTES = \"big\"") && e.contains("68..=65535"),
            "{e}"
        );
        let e = ctl(&mut c, "mtu ghost 1500").unwrap_err();
        assert!(e.contains("mtu[2].interface = \"ghost\""), "{e}");
        assert_eq!(iface(&sw, "p0"), (9000, vec![]));
        // A port re-created keeps its MTU settings (the object depends on the port).
        let mut new = c.running().clone();
        if let PortConfig::AfPacket(a) = &mut new.ports[1] {
            a.interface = "veth7".into();
        }
        let ch: Vec<String> = c
            .set_config(new)
            .unwrap()
            .iter()
            .map(|c| c.describe())
            .collect();
        assert_eq!(
            ch,
            [
                "set mtu 9000 (default) on p1",
                "delete port p1",
                "add af_packet port p1",
                "set mtu 1400 on p1 (checked)"
            ]
        );
        assert_eq!(iface(&sw, "p1"), (1400, vec!["mtu-check".to_string()]));
        // Back to the default.
        ctl(&mut c, "mtu p1 default").unwrap();
        assert_eq!(iface(&sw, "p1"), (9000, vec![]));
    }
    /// The fields of [`Config`] as serde sees them, in order (read from its `Deserialize`: a
    /// deserializer that only records the field list `deserialize_struct` is given).
    fn config_fields() -> &'static [&'static str] {
        use serde::de::{self, Visitor};
        struct Fields(&'static [&'static str]);
        impl<'de> de::Deserializer<'de> for &mut Fields {
            type Error = de::value::Error;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                Err(de::Error::custom("not a struct"))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                self.0 = fields;
                Err(de::Error::custom("fields recorded"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
                identifier ignored_any
            }
        }
        let mut f = Fields(&[]);
        let _ = <Config as serde::Deserialize>::deserialize(&mut f);
        f.0
    }

    /// One example of each section, by key (a section added without one fails the test below).
    const EXAMPLES: &[(&str, &str)] = &[
        (
            "port",
            "[[port]]\nname = \"p0\"\ntype = \"af_packet\"\ninterface = \"veth0\"\n",
        ),
        (
            "bond",
            "[[bond]]\nname = \"lag0\"\nmode = \"lacp\"\nmembers = [\"p0\"]\n",
        ),
        (
            "subinterface",
            "[[subinterface]]\nparent = \"p0\"\nid = 7\nencap = \"dot1q 7\"\n",
        ),
        ("xconnect", "[[xconnect]]\nports = [\"p0\", \"p1\"]\n"),
        ("bridge", "[[bridge]]\nname = \"br0\"\nports = [\"p0\"]\n"),
        ("mtu", "[[mtu]]\ninterface = \"p0\"\nmtu = 1500\n"),
        (
            "ip",
            "[ip]\naddress = [{ interface = \"p0\", address = \"10.0.0.1/24\" }]\n",
        ),
        ("nat44", "[nat44]\ninside = [\"p0\"]\n"),
        (
            "firewall",
            "[[firewall]]\ninterface = \"p0\"\ndefault-action = \"deny\"\n",
        ),
    ];

    /// A section's field and its `SECTIONS` entry cannot drift: `Config`'s fields are `switch`
    /// and the sections' keys, in order; each section's example parses into the field its entry
    /// reads (the entry makes config objects from it, and only from it), is written back under
    /// its key and reads back equal; an unknown key is refused naming it.
    #[test]
    fn every_section_is_its_field_of_config() {
        use super::SECTIONS;
        let keys: Vec<&str> = std::iter::once("switch")
            .chain(SECTIONS.iter().map(|s| s.key))
            .collect();
        assert_eq!(config_fields(), keys.as_slice());
        for s in SECTIONS {
            let text = EXAMPLES
                .iter()
                .find(|(k, _)| *k == s.key)
                .unwrap_or_else(|| panic!("no example of section `{}` in EXAMPLES", s.key))
                .1;
            let c = Config::from_toml(text, "t").unwrap_or_else(|e| panic!("{}: {e}", s.key));
            assert_ne!(c, Config::default(), "{}", s.key);
            for other in SECTIONS {
                let keys = |c: &Config| {
                    let mut objs = Vec::new();
                    (other.objects)(c, &mut objs);
                    objs.iter().map(|o| o.key()).collect::<Vec<_>>()
                };
                let (mine, none) = (keys(&c), keys(&Config::default()));
                assert_eq!(
                    mine == none,
                    other.key != s.key,
                    "section `{}` from the example of `{}`: {mine:?}",
                    other.key,
                    s.key
                );
            }
            let back = c.to_toml();
            let dotted = format!("{}.", s.key);
            assert!(
                back.lines()
                    .filter(|l| l.starts_with('['))
                    .map(|l| l.trim_matches(['[', ']']))
                    .any(|t| t == s.key || t.starts_with(&dotted)),
                "{}: {back}",
                s.key
            );
            assert_eq!(Config::from_toml(&back, "t").unwrap(), c, "{back}");
        }
        let e = Config::from_toml("[[bonds]]\nname = \"x\"\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bonds") && e.contains("f.toml") && e.contains("subinterface"),
            "{e}"
        );
    }

    /// Every registered verb is reachable from `ctl`: its names are unique and no built-in
    /// command shadows them (each name, with an argument, parses to an edit of that verb); every
    /// show word is unique across the switch's and the controller's shows.
    #[test]
    fn every_verb_and_show_is_reachable() {
        let mut names = std::collections::HashSet::new();
        for v in super::verbs() {
            for n in v.info.names {
                assert!(names.insert(*n), "verb {n:?} registered twice");
                let mut words: Vec<String> = n.split(' ').map(String::from).collect();
                words.push("x".into());
                match parse_words(&words, std::path::Path::new("/")) {
                    Ok(Request::Edit { verb, args }) => {
                        assert_eq!((verb.as_str(), args.len()), (v.info.name(), 1), "{n}")
                    }
                    other => panic!("`{n} x` is not the verb's edit: {other:?}"),
                }
            }
        }
        assert!(names.len() >= 7, "{names:?}");
        let mut words = std::collections::HashSet::new();
        for s in super::shows() {
            assert!(words.insert(s.word()), "show {:?} twice", s.word());
            assert_eq!(super::find_show(s.word()).map(|f| f.word()), Some(s.word()));
        }
    }

    /// A feature registered only from its folder (`bond/ctl.rs`: section, verbs, shows) reaches
    /// `ctl` end to end: the verbs edit the running config through validate → diff → apply, the
    /// shows are answered by the switch and printed by the feature's renderer, and a refused verb
    /// changes nothing.
    #[test]
    fn bond_verbs_and_shows_from_the_feature_folder() {
        let (mut c, sw) = start();
        let r = ctl(&mut c, "bond add lag0 lacp hash l34 p0 p1").unwrap();
        assert_eq!(
            r["changes"],
            serde_json::json!([
                "add bond lag0 mode Lacp hash L34 lacp-rate Fast",
                "add port p0 to bond lag0",
                "add port p1 to bond lag0"
            ]),
            "{r}"
        );
        assert_eq!(c.running().bonds.len(), 1);
        assert_eq!(sw.lock().unwrap().show_bond()[0].members.len(), 2);
        let show = |c: &mut Controller, line: &str| {
            let words: Vec<String> = line.split_whitespace().map(String::from).collect();
            let req = parse_words(&words, std::path::Path::new("/")).unwrap();
            render(&req, &ctl(c, line).unwrap())
        };
        let text = show(&mut c, "show bonds");
        assert!(text.starts_with("Bond  Mode  Hash"), "{text}");
        assert!(text.contains("lag0  lacp  l34"), "{text}");
        assert_eq!(show(&mut c, "show lacp").lines().count(), 3);
        // Refused by validation (p0 is a member already): nothing changes.
        let e = ctl(&mut c, "bond add lag1 lacp p0").unwrap_err();
        assert!(e.contains("bond[1].members[0] = \"p0\""), "{e}");
        let e = ctl(&mut c, "bond member del lag0 p7").unwrap_err();
        assert!(e.contains("PORT = \"p7\""), "{e}");
        assert_eq!(c.running().bonds.len(), 1);
        // A service names the bond like a port (the interfaces every section defines).
        ctl(&mut c, "bridge add br0").unwrap();
        ctl(&mut c, "bridge member add br0 lag0").unwrap();
        let e = ctl(&mut c, "bridge member add br0 lag9").unwrap_err();
        assert!(e.contains("interfaces are: lag0, p0, p1"), "{e}");
        ctl(&mut c, "bridge del br0").unwrap();
        ctl(&mut c, "bond member del lag0 p1").unwrap();
        assert_eq!(sw.lock().unwrap().show_bond()[0].members.len(), 1);
        ctl(&mut c, "bond del lag0").unwrap();
        assert!(sw.lock().unwrap().show_bond().is_empty());
        assert!(c.running().bonds.is_empty());
    }

    /// The ip section's verbs and `show ip …` / `show ip6 …` end to end on the real switch.
    #[test]
    fn ip_verbs_and_shows_end_to_end() {
        let (mut c, sw) = start();
        let show = |c: &mut Controller, line: &str| {
            let w: Vec<&str> = line.split_whitespace().collect();
            let req = Request::Show {
                what: w[1].into(),
                args: w[2..].iter().map(|s| s.to_string()).collect(),
            };
            let data = ctl(c, line).unwrap();
            render(&req, &data)
        };
        for line in [
            "ip address add p1 10.1.0.1/24",
            "ip address add p1 2001:db8:1::1/64",
            "ip route add 192.168.0.0/16 via 10.1.0.2",
            "ip route add 2001:db8:ff::/48 via 2001:db8:1::2",
            "ip neighbor add p1 10.1.0.2 02:00:00:00:00:0b",
            "ip set allow_options false",
        ] {
            ctl(&mut c, line).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        assert!(!sw.lock().unwrap().ip_settings().allow_options);
        assert!(c.running().to_toml().contains("allow_options = false"));
        let t = show(&mut c, "show ip fib");
        assert!(t.starts_with("3 routes, 3 matched"), "{t}");
        assert!(
            t.contains("192.168.0.0/16") && t.contains("via 10.1.0.2 p1"),
            "{t}"
        );
        let t = show(&mut c, "show ip fib 192.168.1.1/32");
        assert!(t.contains("1 matched") && t.contains("static"), "{t}");
        let t = show(&mut c, "show ip6 fib 2001:db8::/32 0 1");
        assert!(
            t.contains("showing 1 from 0") && t.contains("2001:db8:1::/64"),
            "{t}"
        );
        let t = show(&mut c, "show ip6 interfaces");
        assert!(
            t.contains("fe80::fe:ff:fe00:1") && t.contains("2001:db8:1::1/64"),
            "{t}"
        );
        let t = show(&mut c, "show ip neighbors");
        assert!(
            t.contains("02:00:00:00:00:0b") && t.contains("static"),
            "{t}"
        );
        // Refusals name field, value and what is accepted; nothing changes.
        let e = ctl(&mut c, "ip route add 192.168.0.1/16 via 10.1.0.2").unwrap_err();
        assert!(
            e.contains("ip.route[2].prefix") && e.contains("host bits"),
            "{e}"
        );
        let e = ctl(&mut c, "ip set allow_optoins true").unwrap_err();
        assert!(e.contains("allow_optoins"), "{e}");
        let e = ctl(&mut c, "ip set arp_pending 5000").unwrap_err();
        assert!(
            e.contains("ip.arp_pending") && e.contains("0 to 1024"),
            "{e}"
        );
        let e = ctl(&mut c, "show ip fib 10.0.0.0/33").unwrap_err();
        assert!(e.contains("10.0.0.0/33"), "{e}");
        let e = ctl(&mut c, "show ip routing").unwrap_err();
        assert!(e.contains("neighbors"), "{e}");
        // And removed again.
        ctl(&mut c, "ip route del 192.168.0.0/16").unwrap();
        ctl(&mut c, "ip neighbor del p1 10.1.0.2").unwrap();
        let f = sw.lock().unwrap().show_ip_fib(0, None, 0, 10).unwrap();
        assert_eq!(f.routes, 2);
        assert_eq!(
            sw.lock().unwrap().show_ip_neighbors(0, 10).unwrap().total,
            0
        );
    }

    const NAT_FW: &str = r#"
[[port]]
name = "p0"
type = "af_packet"
interface = "veth0"
[[port]]
name = "p1"
type = "af_packet"
interface = "veth1"
[ip]
address = [
  { interface = "p0", address = "10.0.0.1/24" },
  { interface = "p1", address = "198.51.100.1/24" },
]
[nat44]
inside = ["p0"]
outside = ["p1"]
[nat44.settings]
udp_s = 120
[[firewall]]
interface = "p1"
default-action = "deny"
[[firewall]]
interface = "p0"
default-action = "deny"
rules = [
  { src = "10.0.0.66/32", action = "deny" },
  { proto = "tcp", dport = "80", action = "permit-reflect" },
  { proto = "udp", dport = "53", action = "permit-reflect" },
]
"#;

    /// NAT44 and the firewall from the config file onto the real switch, their shows through
    /// the registry, and their validation errors.
    #[test]
    fn nat44_and_firewall_sections_and_shows_end_to_end() {
        struct Shared(Arc<Mutex<vecswitch_switch::Switch>>);
        impl crate::controller::Worker for Shared {
            fn run(&self, job: crate::controller::Job) -> Result<(), vecswitch_switch::WorkerGone> {
                let mut sw = self.0.lock().unwrap();
                job(&mut sw);
                Ok(())
            }
        }
        let sw = Arc::new(Mutex::new(switch()));
        let mut c = Controller::start(
            Box::new(Shared(Arc::clone(&sw))),
            Arc::from(factory()),
            Config::from_toml(NAT_FW, "t").unwrap(),
            None,
        )
        .unwrap();
        let s = sw.lock().unwrap().show_nat44_summary();
        assert_eq!(s.inside_interfaces, vec!["p0".to_string()]);
        assert_eq!(
            s.outside_interfaces,
            vec![("p1".to_string(), "198.51.100.1".parse().unwrap())]
        );
        assert_eq!(s.settings.udp_s, 120);
        let fw = sw.lock().unwrap().show_firewall();
        assert_eq!(fw.acls.len(), 2);
        assert_eq!(fw.acls.iter().map(|a| a.rules.len()).sum::<usize>(), 3);
        for (line, want) in [
            ("show nat44 summary", "outside: p1 (198.51.100.1)"),
            ("show nat44", "0 sessions (0 shown)"),
            ("show firewall", "permit-reflect"),
        ] {
            let words: Vec<String> = line.split_whitespace().map(String::from).collect();
            let req = parse_words(&words, std::path::Path::new("/")).unwrap();
            let data = ctl(&mut c, line).unwrap();
            let text = render(&req, &data);
            assert!(text.contains(want), "{line}: {text}");
        }
        let e = ctl(&mut c, "show nat44 everything").unwrap_err();
        assert!(e.contains("sessions or summary"), "{e}");
        // The verbs registered from the feature folders: an accepted edit reaches the switch, a
        // rejected one (refused by the whole-config validation) leaves it as it was.
        ctl(&mut c, "firewall rule add p0 proto udp dport 123 permit").unwrap();
        ctl(&mut c, "nat44 set udp_s 60").unwrap();
        // (One lock at a time: a guard lives to the end of its statement.)
        let before_fw = sw.lock().unwrap().show_firewall();
        let before = (before_fw, sw.lock().unwrap().show_nat44_summary());
        let p0 = before.0.acls.iter().find(|a| a.interface == "p0").unwrap();
        assert_eq!(p0.rules.len(), 4);
        assert_eq!(before.1.settings.udp_s, 60);
        let e = ctl(&mut c, "firewall rule add p0 dport 22 deny").unwrap_err();
        assert!(e.contains("firewall[1].rules[4]"), "{e}");
        let e = ctl(&mut c, "nat44 set max_sessions 0").unwrap_err();
        assert!(e.contains("nat44.settings.max_sessions"), "{e}");
        let e = ctl(&mut c, "nat44 interface p9 inside").unwrap_err();
        assert!(e.contains("p9"), "{e}");
        // (One lock at a time: a guard lives to the end of its statement.)
        let after_fw = sw.lock().unwrap().show_firewall();
        let after = (after_fw, sw.lock().unwrap().show_nat44_summary());
        assert_eq!(after, before);
        // The round trip through TOML keeps both sections.
        let again = Config::from_toml(&c.running().to_toml(), "t").unwrap();
        assert_eq!(again.nat44, c.running().nat44);
        assert_eq!(again.firewall, c.running().firewall);
        // Validation: an outside interface without an address, a port range without tcp/udp.
        let bad = NAT_FW
            .replace(r#"outside = ["p1"]"#, r#"outside = ["p1", "p0"]"#)
            .replace(r#"inside = ["p0"]"#, "inside = []")
            .replace(
                r#"{ src = "10.0.0.66/32", action = "deny" }"#,
                r#"{ dport = "22", action = "deny" }"#,
            );
        let cfg = Config::from_toml(&bad, "t").unwrap();
        let mut no_p0_addr = cfg.clone();
        no_p0_addr.ip.address.retain(|a| a.interface != "p0");
        let e = crate::validate::validate(&no_p0_addr)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nat44.outside[1]"), "{e}");
        assert!(e.contains("firewall[1].rules[0]"), "{e}");
    }
}
