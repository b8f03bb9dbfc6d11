//! The API's contract: errors name field, value and what is accepted; replace semantics; ECMP.

use std::net::{Ipv4Addr, Ipv6Addr};

use vecswitch_fib::{FibError, Ip4Rib, Ip6Rib, MAX_ECMP};

#[test]
fn rejects_long_prefix_with_field_value_and_range() {
    let mut rib = Ip4Rib::new();
    let e = rib.add(Ipv4Addr::new(10, 0, 0, 0), 33, &[1]).unwrap_err();
    assert_eq!(
        e,
        FibError::PrefixLen {
            family: "IPv4",
            len: 33,
            max: 32
        }
    );
    assert_eq!(
        e.to_string(),
        "prefix length 33 is out of range for IPv4: accepted 0..=32"
    );
    let mut rib6 = Ip6Rib::new();
    let e = rib6.add(Ipv6Addr::UNSPECIFIED, 129, &[1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "prefix length 129 is out of range for IPv6: accepted 0..=128"
    );
}

#[test]
fn rejects_host_bits_and_names_the_network() {
    let mut rib = Ip4Rib::new();
    let e = rib.add(Ipv4Addr::new(10, 1, 2, 3), 16, &[1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "prefix address 10.1.2.3/16 has host bits set: the bits after the first 16 must be zero \
         (accepted: 10.1.0.0/16)"
    );
    let e = rib.remove(Ipv4Addr::new(0, 0, 0, 1), 0).unwrap_err();
    assert!(matches!(e, FibError::HostBits { len: 0, .. }));
    assert!(rib.is_empty());
}

#[test]
fn rejects_next_hop_counts() {
    let mut rib = Ip4Rib::new();
    let e = rib.add(Ipv4Addr::new(10, 0, 0, 0), 8, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "next hops for 10.0.0.0/8: 0 given, accepted 1..=8 (ECMP)"
    );
    let nine = [1; MAX_ECMP + 1];
    assert!(matches!(
        rib.add(Ipv4Addr::new(10, 0, 0, 0), 8, &nine),
        Err(FibError::NextHopCount {
            count: 9,
            max: 8,
            ..
        })
    ));
    let e = rib.remove(Ipv4Addr::new(10, 0, 0, 0), 8).unwrap_err();
    assert_eq!(e.to_string(), "route 10.0.0.0/8 is not in the table");
}

#[test]
fn add_replaces_and_lookup_follows() {
    let mut rib = Ip4Rib::new();
    rib.add(Ipv4Addr::new(10, 0, 0, 0), 8, &[1]).unwrap();
    rib.add(Ipv4Addr::new(10, 0, 0, 0), 8, &[2]).unwrap();
    assert_eq!(rib.len(), 1);
    assert_eq!(rib.get(Ipv4Addr::new(10, 0, 0, 0), 8), Some(&[2][..]));
    let mut fib = rib.build();
    assert_eq!(fib.routes(), 1);
    assert_eq!(fib.lookup(0x0a01_0203, 0), Some(2));
    assert_eq!(fib.lookup(0x0b00_0000, 0), None);
    fib.add(Ipv4Addr::new(0, 0, 0, 0), 0, &[9]).unwrap();
    fib.add(Ipv4Addr::new(10, 1, 2, 3), 32, &[7]).unwrap();
    assert_eq!(fib.lookup(0x0b00_0000, 0), Some(9));
    assert_eq!(fib.lookup(0x0a01_0203, 0), Some(7));
    assert_eq!(fib.lookup(0x0a01_0204, 0), Some(2));
    fib.remove(Ipv4Addr::new(10, 0, 0, 0), 8).unwrap();
    assert_eq!(fib.lookup(0x0a01_0204, 0), Some(9));
    assert_eq!(fib.lookup(0x0a01_0203, 0), Some(7));
    // The RIB it was built from is unchanged.
    assert_eq!(rib.len(), 1);
}

#[test]
fn ipv6_basic() {
    let mut rib = Ip6Rib::new();
    let p: Ipv6Addr = "2001:db8::".parse().unwrap();
    rib.add(p, 32, &[1]).unwrap();
    rib.add("2001:db8:1::".parse().unwrap(), 48, &[2]).unwrap();
    rib.add("2001:db8:1::5".parse().unwrap(), 128, &[3])
        .unwrap();
    let fib = rib.build();
    let k = |s: &str| u128::from(s.parse::<Ipv6Addr>().unwrap());
    assert_eq!(fib.lookup(k("2001:db8:2::1"), 0), Some(1));
    assert_eq!(fib.lookup(k("2001:db8:1::1"), 0), Some(2));
    assert_eq!(fib.lookup(k("2001:db8:1::5"), 0), Some(3));
    assert_eq!(fib.lookup(k("2001:db9::"), 0), None);
    let mut out = [None; 3];
    fib.lookup_batch(
        &[k("2001:db8:1::5"), k("::1"), k("2001:db8::")],
        &[0; 3],
        &mut out,
    );
    assert_eq!(out, [Some(3), None, Some(1)]);
}

#[test]
fn ecmp_keeps_a_flow_on_one_next_hop_and_spreads_flows() {
    use rand::{Rng, SeedableRng};
    let mut rib = Ip4Rib::new();
    let nhs = [10, 11, 12, 13, 14];
    rib.add(Ipv4Addr::new(10, 0, 0, 0), 8, &nhs).unwrap();
    let fib = rib.build();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
    let mut counts = [0usize; 5];
    let n = 50_000;
    for _ in 0..n {
        let hash: u32 = rng.gen();
        let dst = 0x0a00_0000 | (rng.gen::<u32>() & 0x00ff_ffff);
        let nh = fib.lookup(dst, hash).unwrap();
        // Same flow hash, same next hop, whatever the destination inside the route.
        assert_eq!(fib.lookup(0x0a12_3456, hash), Some(nh));
        let mut out = [None];
        fib.lookup_batch(&[dst], &[hash], &mut out);
        assert_eq!(out[0], Some(nh));
        counts[(nh - 10) as usize] += 1;
    }
    // Every next hop gets a fair share: each within 10 % of n/5.
    for (i, &c) in counts.iter().enumerate() {
        assert!(
            c.abs_diff(n / 5) < n / 50,
            "next hop {} got {c} of {n}: {counts:?}",
            nhs[i]
        );
    }
}
