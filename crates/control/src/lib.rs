//! The control plane: the declarative config ([`config::Config`], TOML; each section's serde type
//! is its feature's own config type), its whole-config validation ([`validate::validate`]), the
//! generic diff between a running config and a new one over the sections' config objects
//! ([`diff::diff`] → [`diff::Change`]s), their all-or-nothing application onto the switch
//! ([`apply::apply_changes`]), the registration point of features' sections, shows and `ctl`
//! commands ([`sections`]), the one place ports are opened from config ([`ports::open_port`]), the
//! [`controller::Controller`] that owns the running config and answers requests, the control
//! socket's JSON-lines protocol ([`protocol::Request`] / [`protocol::Response`]), the socket server
//! and client ([`server`]), the vppctl-like command words of `vecswitch ctl` ([`command`]) and the
//! plain-text tables it prints from the switch's typed answers ([`render`]).
//!
//! Every change, from a config file or from a socket request, goes the same way: edit a copy of the
//! running config, validate it whole, diff it against the running one, apply the changes on the
//! worker through `SwitchHandle::call`, and only then make it the running config. A rejected change
//! leaves the switch untouched. The whole change set runs in one `call`, between two poll
//! iterations, so no packet sees half of it.
#![forbid(unsafe_code)]

pub mod apply;
pub mod command;
pub mod config;
pub mod controller;
pub mod diff;
pub mod metrics;
pub mod ports;
pub mod ports_ctl;
#[cfg(test)]
mod proptests;
pub mod protocol;
pub mod render;
pub mod sections;
pub mod server;
pub mod switch_impl;
pub mod validate;
