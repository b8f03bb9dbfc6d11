//! Capture on a port writes what it receives and is sent to a pcap file that reads back intact.

mod common;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_ports::pcap::PcapReader;
use vecswitch_switch::{Switch, SwitchConfig, SwitchError};

/// A temporary file path removed on drop (also when the test fails).
struct TempPath(std::path::PathBuf);
impl TempPath {
    fn new(tag: &str) -> TempPath {
        TempPath(std::env::temp_dir().join(format!(
            "vecswitch-switch-{tag}-{}.pcap",
            std::process::id()
        )))
    }
}
impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The frames of a pcap file.
fn frames_in(path: &std::path::Path) -> Vec<Vec<u8>> {
    PcapReader::open(path)
        .unwrap()
        .read_all()
        .unwrap()
        .into_iter()
        .map(|r| r.data)
        .collect()
}

/// A switch with loopback ports p0 and p1 cross-connected both ways, and the test's ends of them.
fn e_line() -> (Switch, LoopbackPort, LoopbackPort) {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 1024,
        mac_table_entries: 64,
        ..Default::default()
    });
    let (p0, peer0) = wire("p0");
    let (p1, peer1) = wire("p1");
    sw.add_port("p0", p0).unwrap();
    sw.add_port("p1", p1).unwrap();
    sw.add_xconnect("p0", "p1").unwrap();
    sw.add_xconnect("p1", "p0").unwrap();
    (sw, peer0, peer1)
}

#[test]
fn capture_writes_rx_and_tx_frames_up_to_count() {
    let (mut sw, mut peer0, mut peer1) = e_line();
    let rx_file = TempPath::new("rx");
    let tx_file = TempPath::new("tx");
    sw.capture("p0", &rx_file.0, None).unwrap();
    sw.capture("p1", &tx_file.0, Some(3)).unwrap();
    let mut tp = Pool::new(256);
    let frames: Vec<Vec<u8>> = (0..5)
        .map(|i| frame(mac(9), mac(i), 60 + i as usize))
        .collect();
    send(&mut peer0, &mut tp, &frames);
    while sw.poll_once() > 0 {}
    assert_eq!(
        drain(&mut peer1, &mut tp),
        frames,
        "capturing does not change forwarding"
    );
    let info = sw.show_ports()[1].capture.clone().unwrap();
    assert_eq!(
        (info.captured, info.limit, info.active),
        (3, Some(3), false)
    );
    let rx_info = sw.stop_capture("p0").unwrap();
    assert_eq!(rx_info.captured, 5);
    assert!(sw.show_ports()[0].capture.is_none());
    // A capture that reached its count stops taking frames at once, but its file is complete
    // only once the writer thread has finished: stop it before reading (on a loaded host the
    // writer had not written the header yet when the file was read).
    let tx_info = sw.stop_capture("p1").unwrap();
    assert_eq!(tx_info.captured, 3);

    let rx: Vec<Vec<u8>> = frames_in(&rx_file.0);
    assert_eq!(rx, frames);
    let tx: Vec<Vec<u8>> = frames_in(&tx_file.0);
    assert_eq!(tx, frames[..3].to_vec());
    assert_eq!(sw.show_buffers().in_use, 0);
}

#[test]
fn capture_errors_change_nothing() {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 64,
        mac_table_entries: 64,
        ..Default::default()
    });
    sw.add_port("p0", wire("p0").0).unwrap();
    let e = sw
        .capture("p0", "/nonexistent-dir/x.pcap", Some(1))
        .unwrap_err();
    assert!(matches!(e, SwitchError::Capture { .. }), "{e}");
    assert!(e.to_string().contains("/nonexistent-dir/x.pcap"), "{e}");
    assert!(matches!(
        sw.capture("p0", "/tmp/x.pcap", Some(0)),
        Err(SwitchError::InvalidValue { field: "count", .. })
    ));
    assert!(matches!(
        sw.capture("nope", "/tmp/x.pcap", None),
        Err(SwitchError::NoPort { .. })
    ));
    assert!(matches!(
        sw.stop_capture("p0"),
        Err(SwitchError::NoCapture { .. })
    ));
    assert!(sw.show_ports()[0].capture.is_none());
}

/// The worker never waits for the pcap writer (issue 14 item 1): with a writer that has not
/// taken anything yet (its queue full: a disk that stopped), every frame is still forwarded, and
/// the frames the capture could not queue are counted in `show ports` and `show errors`; what was
/// queued reaches the file once the writer runs, exactly those frames, in order.
#[test]
fn a_stalled_capture_writer_costs_counted_records_never_forwarded_frames() {
    use vecswitch_switch::capture::{PortCapture, CAPTURE_QUEUE_BATCHES};
    let (mut sw, mut peer0, mut peer1) = e_line();
    let file = TempPath::new("stalled");
    let out = std::fs::File::create(&file.0).unwrap();
    // Both halves; the writer is not run yet (as if stuck in a write).
    let (cap, writer) = PortCapture::new(out, &file.0, None).unwrap();
    sw.start_capture("p0", cap).unwrap();
    let mut tp = Pool::new(256);
    // One frame per poll: one batch each, so the queue's depth is reached.
    let n = CAPTURE_QUEUE_BATCHES + 100;
    let frames: Vec<Vec<u8>> = (0..n)
        .map(|i| frame(mac(9), mac(i as u32 + 1), 60 + i % 40))
        .collect();
    let mut forwarded = Vec::new();
    for f in &frames {
        send(&mut peer0, &mut tp, std::slice::from_ref(f));
        while sw.poll_once() > 0 {}
        forwarded.extend(drain(&mut peer1, &mut tp));
    }
    assert_eq!(forwarded, frames, "every frame forwarded, in order");
    let info = sw.show_ports()[0].capture.clone().unwrap();
    assert_eq!(
        (info.captured, info.dropped, info.written),
        (CAPTURE_QUEUE_BATCHES as u64, 100, 0)
    );
    assert!(info.active);
    let errors = sw.show_errors();
    let e = errors
        .iter()
        .find(|e| e.node == "port p0" && e.reason == "capture-dropped")
        .expect("show errors lists the dropped capture records");
    assert_eq!(e.count, 100);
    // The writer catches up off the worker; stopping completes the file.
    let handle = writer.spawn().unwrap();
    let mut cap = sw.take_capture("p0").unwrap();
    cap.finish(std::time::Duration::from_secs(10)).unwrap();
    handle.join().unwrap();
    assert_eq!(cap.info().written, CAPTURE_QUEUE_BATCHES as u64);
    let got: Vec<Vec<u8>> = frames_in(&file.0);
    assert_eq!(got, frames[..CAPTURE_QUEUE_BATCHES].to_vec());
    assert_eq!(sw.show_buffers().in_use, 0);
}
