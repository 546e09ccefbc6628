//! Fixture helpers shared by the pipeline test files (each declares
//! `mod support;` and uses what it needs).
#![allow(dead_code)]

use dataplane::tables::{Interface, MacAddr, NextHop};

/// An interface with addresses given as "address/length", IPv4 or IPv6.
pub fn iface(name: &str, port: u16, vlan: Option<u16>, mac: MacAddr, mtu: u16, addrs: &[&str]) -> Interface {
    let mut i = Interface::new(name, port, vlan, mac, mtu);
    for a in addrs {
        if a.contains(':') {
            i.v6.push(a.parse().unwrap());
        } else {
            i.v4.push(a.parse().unwrap());
        }
    }
    i
}

/// A connected route out of interface `i`.
pub fn conn(i: u16) -> NextHop {
    NextHop { iface: i, gateway: None }
}

/// A route via gateway `gw` on interface `i`.
pub fn via(i: u16, gw: &str) -> NextHop {
    NextHop { iface: i, gateway: Some(gw.parse().unwrap()) }
}
