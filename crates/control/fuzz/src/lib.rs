//! The body of the control fuzz target: `fuzz_targets/control_request.rs` calls it under
//! libFuzzer (nightly), and `crates/control/tests/fuzz_corpus.rs` replays the checked-in corpus
//! through it on stable (this file is included there by path).

use vecswitch_control::protocol::{encode_request, parse_request};

/// A target: the name of its file under `fuzz_targets/` and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target of this crate.
pub const TARGETS: &[Target] = &[("control_request", control_request)];

/// One line from the control socket (any peer in the socket's group can send it), as the server
/// hands it to `parse_request`: never panic; a refusal names what was wrong; a request that
/// parses encodes to one line that parses back to the same request.
pub fn control_request(data: &[u8]) {
    // The server reads lines as UTF-8 and refuses the rest before parsing.
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    match parse_request(line) {
        Ok(r) => {
            let wire = encode_request(&r);
            assert!(!wire.contains('\n'), "encoded request spans lines: {wire}");
            match parse_request(&wire) {
                Ok(again) => assert_eq!(again, r, "{wire}"),
                Err(e) => panic!("{line:?} parsed but its encoding {wire} does not: {e}"),
            }
        }
        Err(e) => assert!(!e.to_string().is_empty(), "empty error for {line:?}"),
    }
}
