//! Fixture helpers shared by the pipeline test files (each declares
//! `mod support;` and uses what it needs).
#![allow(dead_code)]

use dataplane::tables::{Interface, MacAddr, NextHop};
use dataplane::wire::checksum;
use std::net::Ipv6Addr;

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

/// An Ethernet frame, with an 802.1Q tag `(pcp, vid)` when given.
pub fn eth(dst: MacAddr, src: MacAddr, tag: Option<(u8, u16)>, et: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    if let Some((pcp, vid)) = tag {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&((u16::from(pcp) << 13) | vid).to_be_bytes());
    }
    f.extend_from_slice(&et.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An ICMPv6 message (type, code, then `rest`) with its checksum for the
/// pseudo-header of `src` -> `dst`.
pub fn icmpv6(src: Ipv6Addr, dst: Ipv6Addr, ty: u8, code: u8, rest: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(rest);
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 58, m.len() as u32), checksum::sum(&m));
    let c = !checksum::fold(s);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// The solicited-node multicast group of `a` (RFC 4291 s.2.7.1).
pub fn solicited_node_of(a: Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::from([0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, o[13], o[14], o[15]])
}

/// The Neighbor Solicitation body (after type / code / checksum):
/// reserved, target, optional SLLAO.
pub fn ns_body(target: Ipv6Addr, sllao: Option<MacAddr>) -> Vec<u8> {
    let mut b = vec![0, 0, 0, 0];
    b.extend_from_slice(&target.octets());
    if let Some(m) = sllao {
        b.extend_from_slice(&[1, 1]);
        b.extend_from_slice(&m);
    }
    b
}

/// An IPv6 header (flow label 0) with traffic class `tc`, then `payload`.
pub fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, nh: u8, hop: u8, tc: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 40];
    h[0] = 0x60 | (tc >> 4);
    h[1] = tc << 4;
    h[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
    h[6] = nh;
    h[7] = hop;
    h[8..24].copy_from_slice(&src.octets());
    h[24..40].copy_from_slice(&dst.octets());
    h.extend_from_slice(payload);
    h
}

/// A UDP datagram with a valid checksum for `src` -> `dst`.
pub fn udp6(src: Ipv6Addr, dst: Ipv6Addr, sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let len = 8 + data.len();
    let mut u = vec![0u8; 8];
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    u.extend_from_slice(data);
    let s = checksum::combine(checksum::pseudo_v6(&src.octets(), &dst.octets(), 17, len as u32), checksum::sum(&u));
    let mut c = !checksum::fold(s);
    if c == 0 {
        c = 0xffff;
    }
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}
