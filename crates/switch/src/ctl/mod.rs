//! What a feature registers for the control plane, from its own folder (issue 9): its `show`
//! commands, its config section and the `ctl` verbs that edit that section. `crates/control`
//! dispatches over these lists and names no feature.
//!
//! - [`Show`]: `show WORD [ARGS]` — the word (and aliases), the switch method that answers with a
//!   typed, `Serialize` value (as JSON on the socket), and the renderer `vecswitch ctl` uses to
//!   print that JSON read back into the same type as a [`Table`]. A feature lists its shows in
//!   [`Feature::shows`](crate::feature::Feature::shows); the switch's own shows (ports,
//!   interfaces, runtime, errors, buffers, trace) are
//!   [`builtin::SHOWS`]. [`shows`] iterates both, [`find_show`] looks a word up.
//! - [`Section`]: a config section (`[[subinterface]]`) as the feature's own serde type `T`: its
//!   whole-config validation, its [`ConfigObject`](crate::object::ConfigObject)s, and its
//!   [`Verb`]s — `ctl` commands (`subinterface add ...`) whose words edit a copy of the section;
//!   the control plane then validates, diffs and applies the edited config like a file. The
//!   control crate binds the section to its field of the config with one line
//!   (`crates/control/src/sections.rs`).
//! - [`Action`]: a `ctl` command that acts on the running switch without changing its config
//!   (`mac flush`): run on the worker like a show; a feature lists them in
//!   [`Feature::actions`](crate::feature::Feature::actions).
//! - [`Table`]: the aligned text table every renderer prints into.
//!
//! A feature's registrations live in its folder's `ctl.rs` (see `vlan/ctl.rs`, `bond/ctl.rs`,
//! `mtu/mod.rs`); docs/ARCHITECTURE.md has the worked example.

pub mod builtin;
pub mod table;

pub use table::{Align, Table};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::SwitchError;
use crate::feature::FEATURES;
use crate::object::{EditError, Obj, Validation};
use crate::runtime::Switch;

/// Why a `show` could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    /// The switch refused (an unknown bridge name, ...).
    #[error(transparent)]
    Switch(#[from] SwitchError),
    /// More words than the show takes.
    #[error("show {word}: {given:?}: takes {accepted}")]
    Args {
        word: &'static str,
        given: Vec<String>,
        accepted: String,
    },
    /// The answer could not be encoded as JSON.
    #[error("show {word}: cannot encode the answer: {source}")]
    Encode {
        word: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// A `show WORD [ARGS]` command.
#[derive(Debug, Clone, Copy)]
pub struct Show {
    /// The word (`show bond`; `"what":"bond"` on the socket).
    pub word: &'static str,
    /// Other words `ctl show` accepts for it.
    pub aliases: &'static [&'static str],
    /// Its optional arguments, in order, as shown in help (`["BRIDGE"]`); more are refused.
    pub args: &'static [&'static str],
    /// What it shows, for help.
    pub help: &'static str,
    /// The answer, on the worker: a typed value as JSON ([`json`]). `args` has at most
    /// `self.args.len()` words.
    pub run: fn(&Switch, &[String]) -> Result<Value, ShowError>,
    /// The text `ctl` prints, from the answer read back into its type ([`typed`]); `None` if the
    /// answer is not of that type (a switch of another version: `ctl` prints the JSON).
    pub render: fn(&Value) -> Option<String>,
}

impl Show {
    /// Whether `w` names this show.
    pub fn is(&self, w: &str) -> bool {
        self.word == w || self.aliases.contains(&w)
    }

    /// Runs the show after checking the number of arguments.
    pub fn answer(&self, sw: &Switch, args: &[String]) -> Result<Value, ShowError> {
        if args.len() > self.args.len() {
            return Err(ShowError::Args {
                word: self.word,
                given: args.to_vec(),
                accepted: self.args_help(),
            });
        }
        (self.run)(sw, args)
    }

    /// `no argument`, `at most [BRIDGE]`.
    pub fn args_help(&self) -> String {
        if self.args.is_empty() {
            "no argument".into()
        } else {
            format!("at most [{}]", self.args.join("] ["))
        }
    }

    /// `show WORD [ARG]...`, for help.
    pub fn usage(&self) -> String {
        let mut u = format!("show {}", self.word);
        for a in self.args {
            u.push_str(&format!(" [{a}]"));
        }
        u
    }
}

/// A typed answer as JSON (for [`Show::run`]).
pub fn json<T: Serialize>(word: &'static str, v: T) -> Result<Value, ShowError> {
    serde_json::to_value(v).map_err(|source| ShowError::Encode { word, source })
}

/// `data` read back as a `T`, if it is one (for [`Show::render`]).
pub fn typed<T: DeserializeOwned>(data: &Value) -> Option<T> {
    T::deserialize(data).ok()
}

/// `[OFFSET] [LIMIT]` of a paged show (`show ip fib`, `show mac`) from `words` (at most two):
/// `(offset, limit)`, the limit `default_limit` when not given.
pub fn page_args(words: &[String], default_limit: usize) -> Result<(usize, usize), ShowError> {
    let bad = |field: &'static str, value: String, accepted: &'static str| {
        ShowError::Switch(SwitchError::InvalidValue {
            field,
            value,
            accepted,
        })
    };
    let number = |s: &String, field| {
        s.parse()
            .map_err(|_| bad(field, s.clone(), "a whole number (entries)"))
    };
    if words.len() > 2 {
        return Err(bad(
            "arguments",
            words.join(" "),
            "at most OFFSET and LIMIT",
        ));
    }
    let offset = words.first().map_or(Ok(0), |s| number(s, "OFFSET"))?;
    let limit = words
        .get(1)
        .map_or(Ok(default_limit), |s| number(s, "LIMIT"))?;
    Ok((offset, limit))
}

/// Every registered show: the switch's own ([`builtin::SHOWS`]), then each feature's, in
/// [`FEATURES`] order.
pub fn shows() -> impl Iterator<Item = &'static Show> {
    builtin::SHOWS
        .iter()
        .chain(FEATURES.iter().flat_map(|f| f.shows().iter()))
}

/// The show named `w` (its word or an alias).
pub fn find_show(w: &str) -> Option<&'static Show> {
    shows().find(|s| s.is(w))
}

/// Why a verb's words were refused, where the words are right but the running config has no such
/// thing (an [`EditError`] names a fixed set of what is accepted; these name the running
/// config's). Each names the field, the value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerbError {
    /// The words themselves.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// A name or value the running config does not have (`bridge = "nope": the name of a
    /// bridge-domain; bridges are: br0`).
    #[error("{field} = {value:?}: {accepted}")]
    Value {
        field: &'static str,
        value: String,
        accepted: String,
    },
    /// Something the config still refers to, which the verb would delete.
    #[error("{field} = {value:?}: {accepted}; it is {users}: remove that first")]
    InUse {
        field: &'static str,
        value: String,
        accepted: &'static str,
        /// What refers to it ([`Validation::users`]).
        users: String,
    },
}

/// A `ctl` verb that edits a feature's config section `T`: `subinterface add uni0 20 dot1q 20`.
/// Its errors are `E`: an [`EditError`], or a [`VerbError`] for a verb that names what the running
/// config has.
#[derive(Debug)]
pub struct Verb<T: 'static, E: 'static = EditError> {
    /// Its names: the words it starts with, canonical first (the `verb` on the socket), e.g.
    /// `["subinterface add", "sub-interface add"]`.
    pub names: &'static [&'static str],
    /// Its arguments, for help (`PARENT ID ENCAP [tag-rewrite REWRITE]`).
    pub usage: &'static str,
    /// What it does, for help.
    pub help: &'static str,
    /// Parses the arguments (the words after the name) into the feature's typed config and puts
    /// it into (or takes it out of) a copy of the running section. Errors name the argument, the
    /// value and what is accepted; the edited config is then validated whole.
    pub apply: fn(&mut T, &[String]) -> Result<(), E>,
}

/// A verb without its section type: what help and the command-line parser need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerbInfo {
    pub names: &'static [&'static str],
    pub usage: &'static str,
    pub help: &'static str,
}

impl VerbInfo {
    /// The canonical name (`subinterface add`).
    pub fn name(&self) -> &'static str {
        self.names.first().copied().unwrap_or("")
    }

    /// How many of `words` the verb's name takes, if they start with one of its names.
    pub fn matches(&self, words: &[&str]) -> Option<usize> {
        self.names
            .iter()
            .map(|n| n.split(' ').collect::<Vec<_>>())
            .filter(|n| words.len() >= n.len() && words[..n.len()] == n[..])
            .map(|n| n.len())
            .max()
    }
}

impl<T, E> Verb<T, E> {
    /// Without its section type.
    pub const fn info(&self) -> VerbInfo {
        VerbInfo {
            names: self.names,
            usage: self.usage,
            help: self.help,
        }
    }
}

/// A feature's config section, over its own serde type `T` (`Vec<SubInterfaceConfig>`), its
/// verbs' errors `E` ([`Verb`]).
#[derive(Debug)]
pub struct Section<T: 'static, E: 'static = EditError> {
    /// The TOML key (`subinterface` for `[[subinterface]]`).
    pub key: &'static str,
    /// Whole-config validation of the section; the interfaces and services the sections before
    /// it defined are in the [`Validation`].
    pub validate: fn(&T, &mut Validation),
    /// The section's config objects, in config order.
    pub objects: fn(&T, &mut Vec<Obj>),
    /// The `ctl` verbs that edit it.
    pub verbs: &'static [Verb<T, E>],
}

/// A `ctl` command that acts on the running switch without changing its config (`mac flush BRIDGE
/// [PORT]`): run on the worker like a show, answered with a typed value as JSON. A feature lists
/// its actions in [`Feature::actions`](crate::feature::Feature::actions).
#[derive(Debug, Clone, Copy)]
pub struct Action {
    /// Its names, canonical first (`"action"` on the socket): `["mac flush"]`.
    pub names: &'static [&'static str],
    /// Its arguments, for help (`BRIDGE [PORT]`).
    pub usage: &'static str,
    /// What it does, for help.
    pub help: &'static str,
    /// Runs it on the worker; errors name the argument, the value and what is accepted.
    pub run: fn(&mut Switch, &[String]) -> Result<Value, ShowError>,
    /// The text `ctl` prints for its answer ([`typed`]); `None`: the JSON is printed.
    pub render: fn(&Value) -> Option<String>,
}

impl Action {
    /// Without how it runs: what help and the command-line parser need.
    pub const fn info(&self) -> VerbInfo {
        VerbInfo {
            names: self.names,
            usage: self.usage,
            help: self.help,
        }
    }
}

/// Every registered action, in [`FEATURES`] order.
pub fn actions() -> impl Iterator<Item = &'static Action> {
    FEATURES.iter().flat_map(|f| f.actions().iter())
}

/// The action whose canonical name is `name` (`mac flush`).
pub fn find_action(name: &str) -> Option<&'static Action> {
    actions().find(|a| a.info().name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_aliases_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for s in shows() {
            for w in std::iter::once(&s.word).chain(s.aliases) {
                assert!(seen.insert(*w), "show word {w:?} registered twice");
            }
        }
        assert!(find_show("ports").is_some());
        assert!(find_show("int").is_some_and(|s| s.word == "interfaces"));
        assert!(find_show("nothing").is_none());
    }

    #[test]
    fn verb_names_match_leading_words() {
        let v = VerbInfo {
            names: &["subinterface add", "sub-interface add"],
            usage: "",
            help: "",
        };
        assert_eq!(v.matches(&["sub-interface", "add", "p0"]), Some(2));
        assert_eq!(v.matches(&["subinterface"]), None);
        assert_eq!(v.matches(&["subinterface", "del", "x"]), None);
        assert_eq!(v.name(), "subinterface add");
    }
}
