//! The body of the generator fuzz target: `fuzz_targets/rx_signature.rs` calls it under libFuzzer
//! (nightly), and `crates/gen/tests/fuzz_corpus.rs` replays the checked-in corpus through it on
//! stable (this file is included there by path).

use vecswitch_gen::rx::find_signature;
use vecswitch_gen::signature::{self, Layout};
use vecswitch_gen::StreamAnalyzer;

/// A target: the name of its file under `fuzz_targets/` and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target of this crate.
pub const TARGETS: &[Target] = &[("rx_signature", rx_signature)];

/// Fuzzes the receive path: any bytes as a received frame go through `find_signature` (Ethernet,
/// VLAN tags, IPv4/IPv6, UDP, signature) and, when a signature is found, through the sequence and
/// timestamp extension and the stream analyzer, with the "frames sent" bound and the receive time
/// taken from the input too. Nothing may panic.
pub fn rx_signature(data: &[u8]) {
    if data.len() < 16 {
        let _ = find_signature(data);
        return;
    }
    let sent = u64::from_le_bytes(data[0..8].try_into().unwrap());
    let rx_ns = u64::from_le_bytes(data[8..16].try_into().unwrap());
    let mut an = StreamAnalyzer::new();
    // Feed the same frame a few times with shifting references to exercise wrap handling.
    for k in 0..3u64 {
        if let Ok(sig) = find_signature(&data[16..]) {
            let bits = sig.layout.seq_bits();
            let seq = signature::extend(
                sig.seq as u64,
                bits,
                an.next_expected().wrapping_add(k << 30),
            );
            let tx = match sig.layout {
                Layout::Full => sig.tx_ns,
                Layout::Compact => signature::extend_tx_time(sig.tx_ns as u32, rx_ns),
            };
            an.record(seq, tx, rx_ns, data.len(), sent);
        }
    }
    let _ = an.report();
}
