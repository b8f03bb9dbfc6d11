//! The control plane: the declarative config ([`config::Config`], TOML), its whole-config
//! validation ([`validate::validate`]), the diff between a running config and a new one
//! ([`diff::diff`] → [`diff::Change`]s) and its application onto a running switch
//! ([`apply`]), the control socket's JSON-lines protocol ([`protocol::Request`] /
//! [`protocol::Response`]), the server that answers it ([`server`]), the client side that `vecswitch
//! ctl` uses ([`client`]) and the plain-text tables it prints ([`render`]).
//!
//! Every change, from a config file or from a socket request, goes the same way: edit a copy of the
//! running config, validate it whole, diff it against the running one, apply the changes through
//! `SwitchHandle::call`, and only then make it the running config. A rejected change leaves the switch
//! untouched.
#![forbid(unsafe_code)]

pub mod config;
pub mod diff;
pub mod protocol;
pub mod validate;
