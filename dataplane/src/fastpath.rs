//! The burst fast path for plain transit forwarding (the common case of a
//! DCI router: an untagged IPv4 / IPv6 unicast packet for a routed
//! destination behind a resolved gateway).
//!
//! [`Pipeline::fast_burst`] works on a whole received burst in stages, in
//! the manner of DPDK's l3fwd and VPP: it first checks every packet's
//! headers against what the fast path can do, then looks up all eligible
//! destinations in the FIB's trie level by level across the burst (the
//! memory reads of different packets overlap instead of waiting for each
//! other), then rewrites the Ethernet header from a pre-built adjacency and
//! decrements the TTL / Hop Limit. Everything it does not handle is left
//! to [`Pipeline::process`] untouched, which gives the same result for
//! those packets as before: the fast path decides only when the full
//! pipeline would forward the packet unchanged apart from the rewrite.
//!
//! A packet takes the slow path when any of these holds: VLAN tag; the
//! frame's destination MAC is not the ingress interface's; IPv4 options,
//! a bad IPv4 header checksum or a length mismatch; TTL / Hop Limit <= 1;
//! a source or destination that is multicast, broadcast, loopback,
//! unspecified, link-local or in 0.0.0.0/8 / ::/8; ICMPv6 (Neighbor
//! Discovery, FANN Hop Limit); a destination that may be one of the
//! router's own addresses, SIDs, End.MT Proxy Addresses or (IPv4) subnet
//! broadcast addresses (a small hash filter, so a collision only costs the
//! slow path), or a source that may be one of them (the full pipeline drops
//! a source that is one of the router's addresses as a martian); a destination an SR policy steers (H.Encaps); no route; a
//! gateway that is not resolved, a connected destination, or a VLAN
//! egress; a packet larger than the egress MTU; on a port with uRPF, a
//! source that fails the check (the sources of the burst are looked up in
//! a second batch; the slow path then drops the packet as `urpf-failed`).

use crate::counters::MAX_PORTS;
use crate::pipeline::Pipeline;
use crate::tables::{Fib, Urpf};
use crate::wire::checksum;
use crate::wire::ipv4::Ipv4Packet;
use crate::wire::ipv6::Ipv6Packet;
use std::net::{Ipv4Addr, Ipv6Addr};

/// `fast_burst` output for a packet it leaves to [`Pipeline::process`].
pub const SLOW: u16 = u16::MAX;

const FILTER_LOG2: u32 = 14;
const FILTER_WORDS: usize = (1 << FILTER_LOG2) / 64;

/// A FIB next hop ready for the fast path: the egress port and MTU and the
/// two MAC addresses of the new Ethernet header.
#[derive(Clone, Copy, Debug)]
struct FastAdj {
    port: u16,
    mtu: u16,
    macs: [u8; 12],
    /// The gateway's [`crate::nud::UsedBits`] bit.
    bit: u32,
}

/// What the fast path was built from, and the tables it built.
#[derive(Debug)]
pub(crate) struct FastState {
    /// (topology / SID table generation, multicast table version,
    /// adjacency generation).
    built_for: (u64, u64, u64),
    /// Per DPDK port: the MAC of its untagged interface.
    ingress: [Option<[u8; 6]>; MAX_PORTS],
    /// Per DPDK port: its untagged interface's uRPF mode, and the
    /// interface's index (what a strict check compares with).
    urpf: [(Urpf, u16); MAX_PORTS],
    /// Destinations that may be local (addresses, SIDs, Proxy Addresses,
    /// subnet broadcasts): one bit per hash value.
    special: Box<[u64; FILTER_WORDS]>,
    /// Per FIB route group: the adjacency of a single-path route, or the
    /// range of an ECMP route's slots in `slot_adj`.
    groups: Vec<FastGroup>,
    /// Per FIB group slot (ECMP routes only): its next hop's adjacency.
    slot_adj: Vec<Option<FastAdj>>,
    /// The FIB's ECMP hash seed.
    seed: u64,
}

/// A FIB route group ([`crate::tables::Group`]) for the fast path: `one`
/// is the adjacency of a route with one next hop (`n` = 1); an ECMP
/// route's `n` slots start at `start` in `FastState::slot_adj`. An
/// adjacency is None when the fast path cannot use that next hop (gateway
/// unresolved, connected route, VLAN egress).
#[derive(Clone, Copy, Debug)]
struct FastGroup {
    one: Option<FastAdj>,
    start: u32,
    n: u32,
}

impl Default for FastState {
    fn default() -> Self {
        FastState {
            built_for: (u64::MAX, u64::MAX, u64::MAX),
            ingress: [None; MAX_PORTS],
            urpf: [(Urpf::Off, 0); MAX_PORTS],
            special: Box::new([0; FILTER_WORDS]),
            groups: Vec::new(),
            slot_adj: Vec::new(),
            seed: 0,
        }
    }
}

#[inline(always)]
fn hash6(a: &[u8; 16]) -> usize {
    let hi = u64::from_ne_bytes(a[0..8].try_into().unwrap());
    let lo = u64::from_ne_bytes(a[8..16].try_into().unwrap());
    ((hi ^ lo.rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FILTER_LOG2)) as usize
}

#[inline(always)]
fn hash4(a: u32) -> usize {
    ((u64::from(a) | (1 << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FILTER_LOG2)) as usize
}

impl FastState {
    #[inline(always)]
    fn maybe_special(&self, h: usize) -> bool {
        self.special[h >> 6] & (1 << (h & 63)) != 0
    }
    fn mark(&mut self, h: usize) {
        self.special[h >> 6] |= 1 << (h & 63);
    }
}

/// A source or destination IPv6 address the fast path leaves alone:
/// multicast, link-local, or in ::/8 (unspecified, loopback, IPv4-mapped
/// and -compatible).
#[inline(always)]
fn odd6(a: &[u8]) -> bool {
    a[0] == 0xff || a[0] == 0 || (a[0] == 0xfe && a[1] & 0xc0 == 0x80)
}

/// An IPv4 address the fast path leaves alone: 0.0.0.0/8, loopback,
/// multicast, reserved and broadcast.
#[inline(always)]
fn odd4(a: &[u8]) -> bool {
    a[0] == 0 || a[0] == 127 || a[0] >= 224
}

impl Pipeline {
    /// Rebuild the fast path's tables when a snapshot they depend on
    /// changed (cheap to call once per burst).
    pub(crate) fn fast_refresh(&mut self) {
        let key = (self.snap_gen, self.mc.version(), self.adj_gen);
        if self.fast.built_for == key {
            return;
        }
        let f = &mut self.fast;
        f.built_for = key;
        f.ingress = [None; MAX_PORTS];
        f.urpf = [(Urpf::Off, 0); MAX_PORTS];
        f.special.fill(0);
        for (i, ifc) in self.topo.interfaces.iter().enumerate() {
            let p = usize::from(ifc.port);
            if ifc.vlan.is_none() && p < MAX_PORTS && self.topo.iface_of(ifc.port, None) == Some(i as u16) {
                f.ingress[p] = Some(ifc.mac);
                f.urpf[p] = (ifc.urpf, i as u16);
            }
            for n in &ifc.v4 {
                f.mark(hash4(u32::from(n.addr())));
                f.mark(hash4(u32::from(n.broadcast())));
            }
            for n in &ifc.v6 {
                f.mark(hash6(&n.addr().octets()));
                // The Subnet-Router anycast address is ours too.
                f.mark(hash6(&n.network().octets()));
            }
            f.mark(hash6(&ifc.link_local.octets()));
        }
        for a in self.sids.sid_addrs().chain(self.mc.proxy_addrs()) {
            f.mark(hash6(&a.to_be_bytes()));
        }
        let adj: Vec<Option<FastAdj>> = self
            .adj
            .iter()
            .map(|e| {
                e.and_then(|(iface, mac, bit)| {
                    let ifc = self.topo.iface(iface).filter(|ifc| ifc.vlan.is_none())?;
                    let mut macs = [0u8; 12];
                    macs[..6].copy_from_slice(&mac);
                    macs[6..].copy_from_slice(&ifc.mac);
                    Some(FastAdj { port: ifc.port, mtu: ifc.mtu, macs, bit })
                })
            })
            .collect();
        let slots = self.fib.slots();
        let at = |s: u32| slots.get(s as usize).and_then(|&h| adj.get(h as usize).copied().flatten());
        f.groups.clear();
        f.slot_adj.clear();
        for g in self.fib.groups() {
            if g.n == 1 {
                f.groups.push(FastGroup { one: at(g.start), start: 0, n: 1 });
            } else {
                f.groups.push(FastGroup { one: None, start: f.slot_adj.len() as u32, n: g.n });
                f.slot_adj.extend((g.start..g.start + g.n).map(at));
            }
        }
        f.seed = self.fib.seed();
    }

    /// The adjacency of FIB result `hop` (group index + 1, 0 = no route)
    /// for the IP packet `ip` of `total` bytes, if the fast path can use
    /// it. Of an ECMP route, the next hop of the packet's flow hash, as
    /// the full pipeline picks it.
    #[inline(always)]
    fn fast_adj(&self, hop: u32, ip: &[u8], v6: bool, total: usize) -> Option<FastAdj> {
        let g = self.fast.groups.get(hop.checked_sub(1)? as usize)?;
        let a = if g.n == 1 {
            g.one?
        } else {
            let k = crate::tables::slot_of(crate::tables::flow_hash(ip.get(..total).unwrap_or(ip), v6, self.fast.seed), g.n);
            (*self.fast.slot_adj.get((g.start + k) as usize)?)?
        };
        (total <= usize::from(a.mtu)).then_some(a)
    }

    /// Forward what it can of a burst received on `port`, in place.
    ///
    /// `frames[i]` is packet i's first (only) segment; pass an empty slice
    /// for a packet to leave alone. At most 32 packets per call: any after
    /// the 32nd are left to the slow path. On return `out[i]` is the DPDK port to
    /// transmit packet i on (its Ethernet header and TTL / Hop Limit are
    /// rewritten), or [`SLOW`] when it is untouched and must go through
    /// [`Pipeline::process`]. Returns how many were forwarded.
    pub fn fast_burst(&mut self, port: u16, frames: &mut [&mut [u8]], out: &mut [u16]) -> usize {
        const B: usize = 32;
        out.fill(SLOW);
        let n = frames.len().min(out.len()).min(B);
        self.fast_refresh();
        let f = &self.fast;
        // With SR policies installed, a destination one of them steers
        // (H.Encaps) is left to the full pipeline.
        let sids = &*self.sids;
        let policies = sids.has_policies();
        let fann_port = sids.params.fann_udp_port.to_be_bytes();
        let Some(in_mac) = f.ingress.get(usize::from(port)).copied().flatten() else {
            return 0;
        };
        // Stage 1: which packets are eligible, and their keys.
        let mut idx6 = [0u8; B];
        let mut key6 = [[0u8; 16]; B];
        let mut n6 = 0;
        let mut idx4 = [0u8; B];
        let mut key4 = [[0u8; 16]; B];
        let mut n4 = 0;
        for (i, fr) in frames[..n].iter().enumerate() {
            let d: &[u8] = fr;
            if d.len() < 14 + 20 || d[0..6] != in_mac {
                continue;
            }
            match [d[12], d[13]] {
                [0x86, 0xdd] => {
                    if d.len() < 14 + 40 {
                        continue;
                    }
                    let ip = &d[14..];
                    let total = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
                    // ICMPv6 and FANN over UDP (their own Hop Limit) take
                    // the full pipeline.
                    // Octets after the datagram beyond a minimum frame's
                    // padding: the full pipeline cuts them off.
                    if ip[0] >> 4 != 6 || total > ip.len() || (total < ip.len() && d.len() > 60) || ip[7] <= 1 || ip[6] == 58 || (ip[6] == 17 && ip.get(42..44) == Some(&fann_port[..])) || odd6(&ip[8..24]) || odd6(&ip[24..40]) {
                        continue;
                    }
                    let dst: [u8; 16] = ip[24..40].try_into().unwrap();
                    // A source that may be ours is a martian for the slow path.
                    if f.maybe_special(hash6(&dst)) || f.maybe_special(hash6(ip[8..24].try_into().unwrap())) || (policies && sids.policy6(Ipv6Addr::from(dst)).is_some()) {
                        continue;
                    }
                    idx6[n6] = i as u8;
                    key6[n6] = dst;
                    n6 += 1;
                }
                [0x08, 0x00] => {
                    let ip = &d[14..];
                    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
                    if ip[0] != 0x45 || total < 20 || total > ip.len() || (total < ip.len() && d.len() > 60) || ip[8] <= 1 || odd4(&ip[12..16]) || odd4(&ip[16..20]) {
                        continue;
                    }
                    let dst = u32::from_be_bytes(ip[16..20].try_into().unwrap());
                    if f.maybe_special(hash4(dst)) || f.maybe_special(hash4(u32::from_be_bytes(ip[12..16].try_into().unwrap()))) || !checksum::ipv4_header20_ok(ip[..20].try_into().unwrap()) || (policies && sids.policy4(Ipv4Addr::from(dst)).is_some()) {
                        continue;
                    }
                    idx4[n4] = i as u8;
                    key4[n4][..4].copy_from_slice(&ip[16..20]);
                    n4 += 1;
                }
                _ => {}
            }
        }
        // uRPF (BCP 38): the sources of what is left, looked up in a batch
        // of their own; a packet that fails stays for the slow path.
        let (mode, in_iface) = f.urpf[usize::from(port)];
        if mode != Urpf::Off {
            let fib = &*self.fib;
            urpf_keep(fib, mode, in_iface, frames, 22, &mut idx6, &mut key6, &mut n6);
            urpf_keep(fib, mode, in_iface, frames, 26, &mut idx4, &mut key4, &mut n4);
        }
        // Stage 2: the FIB lookups of the burst, interleaved.
        let mut hop6 = [0u32; B];
        let mut hop4 = [0u32; B];
        self.fib.route6_batch(&key6[..n6], &mut hop6[..n6]);
        self.fib.route4_batch(&key4[..n4], &mut hop4[..n4]);
        // Stage 3: adjacency, MTU, rewrite.
        let mut done = 0;
        for (k, &i) in idx6[..n6].iter().enumerate() {
            let d = &mut *frames[usize::from(i)];
            let Some(a) = self.fast_adj(hop6[k], &d[14..], true, 40 + usize::from(u16::from_be_bytes([d[18], d[19]]))) else { continue };
            d[..12].copy_from_slice(&a.macs);
            self.used.mark(a.bit);
            Ipv6Packet::new_unchecked(&mut d[14..]).decrement_hop_limit();
            out[usize::from(i)] = a.port;
            done += 1;
        }
        for (k, &i) in idx4[..n4].iter().enumerate() {
            let d = &mut *frames[usize::from(i)];
            let Some(a) = self.fast_adj(hop4[k], &d[14..], false, usize::from(u16::from_be_bytes([d[16], d[17]]))) else { continue };
            d[..12].copy_from_slice(&a.macs);
            self.used.mark(a.bit);
            // TTL - 1, checksum updated incrementally (RFC 1624).
            Ipv4Packet::new_unchecked(&mut d[14..]).decrement_ttl_incremental();
            out[usize::from(i)] = a.port;
            done += 1;
        }
        done
    }
}

/// Keep of the `n` packets `idx` (destination keys `key`) those whose
/// source passes the arrival interface's uRPF check as the full pipeline
/// does it (`Pipeline::urpf`): loose, a route to the source exists;
/// strict, that route leaves by `iface`. The source is at byte `at` of the
/// frame (22: IPv6, 26: IPv4, whose key is the first 4 bytes). Sources
/// the check skips there (link-local, unspecified) never get here: the
/// fast path leaves them to the slow path.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn urpf_keep(fib: &Fib, mode: Urpf, iface: u16, frames: &[&mut [u8]], at: usize, idx: &mut [u8; 32], key: &mut [[u8; 16]; 32], n: &mut usize) {
    let m = *n;
    if m == 0 {
        return;
    }
    let mut src = [[0u8; 16]; 32];
    let len = if at == 22 { 16 } else { 4 };
    for (s, &i) in src.iter_mut().zip(&idx[..m]) {
        s[..len].copy_from_slice(&frames[usize::from(i)][at..at + len]);
    }
    let mut hop = [0u32; 32];
    if at == 22 {
        fib.route6_batch(&src[..m], &mut hop[..m]);
    } else {
        fib.route4_batch(&src[..m], &mut hop[..m]);
    }
    let mut w = 0;
    for k in 0..m {
        let route = hop[k].checked_sub(1).and_then(|g| fib.group_iface(g, iface));
        if mode.passes(route, iface) {
            idx[w] = idx[k];
            key[w] = key[k];
            w += 1;
        }
    }
    *n = w;
}
