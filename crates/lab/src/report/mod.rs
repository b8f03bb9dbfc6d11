//! Renderers for a [`RunResults`](crate::results::RunResults) document:
//!
//! - [`markdown`]: VSPERF-style result pages (`Metric | Result` per test, as `result_*.md`);
//! - [`csv`]: one row per result line, VSPERF column names ([`crate::results::COLUMNS`]);
//! - [`html`]: one self-contained page (no external JS/CSS) with inline SVG charts drawn by
//!   [`svg`]: throughput vs frame size per device (with the generator's calibrated limit),
//!   latency percentiles, loss vs offered load, back-to-back;
//! - [`summary`]: the side-by-side table (device × frame size, throughput per search policy,
//!   latency, the generator's limit) that Markdown and HTML put first;
//! - [`compare`](mod@compare): what regressed between two runs beyond a threshold;
//! - [`agree`](mod@agree): whether two runs give the same headline figures (ratio per cell,
//!   ±tolerance, overlapping intervals, rankings that flipped);
//! - [`l7`]: seed 004's application-traffic table (an L7 results document's `table`), as
//!   Markdown and as its own HTML page.

pub mod agree;
pub mod compare;
pub mod csv;
pub mod html;
pub mod l7;
pub mod markdown;
pub mod summary;
pub mod svg;

pub use agree::{agree, Agreement};
pub use compare::{compare, Comparison};

#[cfg(test)]
pub(crate) mod tests {
    use crate::results::RunResults;

    /// The full simulated demo run: every procedure, two devices, some tester-limited results.
    pub(crate) fn sample_run() -> RunResults {
        crate::demo::simulated_run(1, vec!["test".into()]).expect("demo run")
    }
}
