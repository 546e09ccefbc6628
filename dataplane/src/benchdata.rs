//! The forwarding benchmark's FIB and destinations, one definition for
//! `dcir-benchgen` (`make bench`'s inputs and router configurations),
//! `pipeline_bench` and `lpm_bench`.
//!
//! Destinations are spread over 10.10.0.0/16 and 2001:db8:a::/48 (low 16
//! bits of the prefix + a host part); the routes overlap (default routes,
//! aggregates, more specific prefixes down to /25 and /64), so the LPM does
//! real work. Every route leaves port "out" via one of two gateways.

use std::net::{Ipv4Addr, Ipv6Addr};

/// IPv4 routes: (prefix, length, gateway).
pub const ROUTES4: &[(&str, u8, &str)] = &[
    ("0.0.0.0", 0, "10.0.2.2"),
    ("10.0.0.0", 8, "10.0.2.3"),
    ("10.10.0.0", 16, "10.0.2.2"),
    ("10.10.128.0", 17, "10.0.2.3"),
    ("10.10.64.0", 18, "10.0.2.2"),
    ("10.10.7.0", 24, "10.0.2.3"),
    ("10.10.200.128", 25, "10.0.2.2"),
    ("192.0.2.0", 24, "10.0.2.3"),
];

/// IPv6 routes: (prefix, length, gateway).
pub const ROUTES6: &[(&str, u8, &str)] = &[
    ("::", 0, "2001:db8:2::2"),
    ("2001:db8::", 32, "2001:db8:2::3"),
    ("2001:db8:a::", 48, "2001:db8:2::2"),
    ("2001:db8:a:8000::", 49, "2001:db8:2::3"),
    ("2001:db8:a:4000::", 50, "2001:db8:2::2"),
    ("2001:db8:a:700::", 56, "2001:db8:2::3"),
    ("2001:db8:a:c880::", 57, "2001:db8:2::2"),
    ("2001:db8:a:1234::", 64, "2001:db8:2::3"),
];

/// The subnets of the two ports ("in", "out"), connected routes.
pub const CONNECTED4: &[(&str, u8)] = &[("10.0.1.0", 24), ("10.0.2.0", 24)];
pub const CONNECTED6: &[(&str, u8)] = &[("2001:db8:1::", 64), ("2001:db8:2::", 64)];

/// Destination `i` of the IPv4 input.
pub fn dst4(i: u32) -> Ipv4Addr {
    let h = (i.wrapping_mul(40503) ^ (i >> 3)) as u16;
    let [a, b] = h.to_be_bytes();
    Ipv4Addr::new(10, 10, a, b.max(1))
}

/// Destination `i` of the IPv6 input.
pub fn dst6(i: u32) -> Ipv6Addr {
    let h = (i.wrapping_mul(40503) ^ (i >> 3)) as u16;
    Ipv6Addr::new(0x2001, 0xdb8, 0xa, h, 0, 0, (i >> 16) as u16, (i as u16).max(1))
}

/// The routes as the `[[route]]` tables of a router configuration.
pub fn routes_toml() -> String {
    let mut t = String::from("# Overlapping prefixes: every destination of the input lies in one of the\n# /16 or /48 aggregates, some in more specific ones; plus default routes.\n");
    for (p, l, via) in ROUTES4.iter().chain(ROUTES6) {
        t += &format!("[[route]]\nprefix = \"{p}/{l}\"\nvia = \"{via}\"\n\n");
    }
    t
}
