//! Forwarding state pushed by the control thread: interfaces and local
//! addresses, the FIB (longest-prefix match for IPv4 and IPv6) and the
//! neighbour table. Workers hold them as immutable `Arc` snapshots and swap
//! in a new one between bursts (see `worker`).

use ipnet::{Ipv4Net, Ipv6Net};
use crate::lpm::Lpm;
use prefix_trie::PrefixMap;
use rustc_hash::FxHashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub use crate::wire::ethernet::MacAddr;

/// A layer-3 interface: a port, optionally a VLAN on it, with addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub port: u16,
    pub vlan: Option<u16>,
    pub mac: MacAddr,
    pub mtu: u16,
    pub v4: Vec<Ipv4Net>,
    pub v6: Vec<Ipv6Net>,
    /// fe80::/64 address derived from the MAC (modified EUI-64).
    pub link_local: Ipv6Addr,
    /// Source address validation of what arrives here (BCP 38 / RFC 3704).
    pub urpf: Urpf,
}

/// Unicast reverse-path forwarding check on an interface (RFC 3704): does
/// the FIB know the packet's source address, and (strict) would it send
/// traffic to that source out of the interface the packet came in on?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Urpf {
    #[default]
    Off,
    /// Any route to the source, a default route included (s.2.3).
    Loose,
    /// The route to the source leaves by the arrival interface (s.2.2).
    Strict,
}

impl Urpf {
    /// Whether a packet that arrived on interface `iface` passes, given
    /// the interface of the FIB's route to its source (`None`: no route).
    #[inline]
    pub fn passes(self, route: Option<u16>, iface: u16) -> bool {
        match self {
            Urpf::Off => true,
            Urpf::Loose => route.is_some(),
            Urpf::Strict => route == Some(iface),
        }
    }
}

impl Interface {
    pub fn new(name: &str, port: u16, vlan: Option<u16>, mac: MacAddr, mtu: u16) -> Self {
        Interface {
            name: name.to_owned(),
            port,
            vlan,
            mac,
            mtu,
            v4: Vec::new(),
            v6: Vec::new(),
            link_local: eui64_link_local(&mac),
            urpf: Urpf::Off,
        }
    }
    /// The address to source IPv4 packets from on this interface.
    pub fn primary_v4(&self) -> Option<Ipv4Addr> {
        self.v4.first().map(|n| n.addr())
    }
    /// The address to source IPv6 packets from (a global one if any).
    pub fn primary_v6(&self) -> Ipv6Addr {
        self.v6.first().map(|n| n.addr()).unwrap_or(self.link_local)
    }
    /// The interface address on the same subnet as `peer`, if any.
    pub fn v4_for(&self, peer: Ipv4Addr) -> Option<Ipv4Addr> {
        self.v4.iter().find(|n| n.contains(&peer)).map(|n| n.addr()).or(self.primary_v4())
    }
    pub fn v6_for(&self, peer: Ipv6Addr) -> Ipv6Addr {
        if is_link_local(&peer) {
            return self.link_local;
        }
        self.v6.iter().find(|n| n.contains(&peer)).map(|n| n.addr()).unwrap_or(self.primary_v6())
    }
}

pub fn is_link_local(a: &Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// fe80::/64 with the modified EUI-64 interface identifier of `mac` (RFC 4291).
pub fn eui64_link_local(mac: &MacAddr) -> Ipv6Addr {
    let mut b = [0u8; 16];
    b[0] = 0xfe;
    b[1] = 0x80;
    b[8] = mac[0] ^ 0x02;
    b[9] = mac[1];
    b[10] = mac[2];
    b[11] = 0xff;
    b[12] = 0xfe;
    b[13] = mac[3];
    b[14] = mac[4];
    b[15] = mac[5];
    Ipv6Addr::from(b)
}

/// The solicited-node multicast address of `a` (RFC 4291 section 2.7.1).
pub fn solicited_node(a: &Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff00 | u16::from(o[13]), u16::from_be_bytes([o[14], o[15]]))
}

/// A static IPv6 multicast route (the underlay of draft-li s.3: "IP
/// multicast forwarding is available in the underlay between the source
/// and the edge nodes, using any combination of PIM, static multicast
/// routing, or SRv6 Replication segments"): packets to `group` (from
/// `source`, or from any source when None) that arrive on `iif` (the RPF
/// interface; None: any) are replicated out of each of `oifs`.
#[derive(Debug, Clone)]
pub struct Mroute {
    pub group: Ipv6Addr,
    pub source: Option<Ipv6Addr>,
    /// Interface index the group's packets must arrive on (RPF).
    pub iif: Option<u16>,
    /// Interface indices to replicate to (never the arrival interface).
    pub oifs: Vec<u16>,
    /// What the workers did with the route's packets; shared by the
    /// snapshots the route is in (the control thread hands a changed
    /// route's counters on to its successor, [`Mroute::keep_stats_of`]).
    pub stats: Arc<MrouteStats>,
}

/// A multicast route's counters: packets (and their bytes) replicated,
/// and packets that failed its RPF check. Every worker adds to them
/// (relaxed atomics; multicast takes the full pipeline).
#[derive(Debug, Default)]
pub struct MrouteStats {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    pub rpf_failed: AtomicU64,
}

impl Mroute {
    pub fn new(group: Ipv6Addr, source: Option<Ipv6Addr>, iif: Option<u16>, oifs: Vec<u16>) -> Mroute {
        Mroute { group, source, iif, oifs, stats: Arc::default() }
    }

    /// Give every route of `new` the counters of the route for the same
    /// (source, group) in `old`, if any: a route changed by MLD or at run
    /// time keeps counting where it was.
    pub fn keep_stats_of(new: &mut [Mroute], old: &[Mroute]) {
        for m in new.iter_mut() {
            if let Some(o) = old.iter().find(|o| o.group == m.group && o.source == m.source) {
                m.stats = o.stats.clone();
            }
        }
    }
}

/// Routes are equal when they route alike (their counters aside).
impl PartialEq for Mroute {
    fn eq(&self, o: &Mroute) -> bool {
        (self.group, self.source, self.iif, &self.oifs) == (o.group, o.source, o.iif, &o.oifs)
    }
}

impl Eq for Mroute {}

/// An IPv6 multicast address a router may forward: scope wider than
/// link-local (RFC 4291 s.2.7; RFC 7346: realm-local and wider); the
/// reserved scope F "must be treated the same as" global scope E.
pub fn routable_multicast6(a: &Ipv6Addr) -> bool {
    a.is_multicast() && (3..=0xf).contains(&(a.octets()[1] & 0x0f))
}

/// At most this many outgoing interfaces per multicast route.
pub const MAX_MROUTE_OIFS: usize = 32;

/// The interfaces and the router's own addresses.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    pub interfaces: Vec<Interface>,
    /// Static IPv6 multicast routes: (S,G) entries are matched before
    /// (*,G) ones.
    pub mroutes: Vec<Mroute>,
    /// Interfaces MLD runs on ([`crate::mld`]): MLD messages received
    /// elsewhere are dropped as `mld-not-enabled`.
    pub mld: Vec<u16>,
    /// The ICMP identifier of this router's RTT probes
    /// ([`crate::rttprobe`]): Echo Replies that carry it go to the control
    /// thread; None: no probes.
    pub echo_probe_id: Option<u16>,
    /// Our addresses; a router has a handful, so a scan of a short array
    /// beats hashing.
    local4: Vec<u32>,
    local6: Vec<u128>,
    /// Untagged interface per port (u16::MAX: none).
    untagged: Vec<u16>,
    /// (port, vlan) -> interface index for tagged interfaces.
    by_port_vlan: FxHashMap<(u16, u16), u16>,
}

impl Topology {
    pub fn new(interfaces: Vec<Interface>) -> Self {
        let mut t = Topology { interfaces, ..Default::default() };
        for (i, ifc) in t.interfaces.iter().enumerate() {
            for n in &ifc.v4 {
                t.local4.push(u32::from(n.addr()));
            }
            for n in &ifc.v6 {
                t.local6.push(u128::from(n.addr()));
            }
            t.local6.push(u128::from(ifc.link_local));
            match ifc.vlan {
                None => {
                    let p = usize::from(ifc.port);
                    if t.untagged.len() <= p {
                        t.untagged.resize(p + 1, u16::MAX);
                    }
                    t.untagged[p] = i as u16;
                }
                Some(v) => {
                    t.by_port_vlan.insert((ifc.port, v), i as u16);
                }
            }
        }
        t.local4.sort_unstable();
        t.local4.dedup();
        t.local6.sort_unstable();
        t.local6.dedup();
        t
    }
    #[inline]
    pub fn iface_of(&self, port: u16, vlan: Option<u16>) -> Option<u16> {
        match vlan {
            None => self.untagged.get(usize::from(port)).copied().filter(|i| *i != u16::MAX),
            Some(v) => self.by_port_vlan.get(&(port, v)).copied(),
        }
    }
    /// The multicast route for a packet from `src` to `group`: the (S,G)
    /// entry, else the (*,G) one.
    pub fn mroute(&self, src: &Ipv6Addr, group: &Ipv6Addr) -> Option<&Mroute> {
        let g = || self.mroutes.iter().filter(|m| m.group == *group);
        g().find(|m| m.source == Some(*src)).or_else(|| g().find(|m| m.source.is_none()))
    }

    #[inline]
    pub fn iface(&self, i: u16) -> Option<&Interface> {
        self.interfaces.get(usize::from(i))
    }
    #[inline]
    pub fn is_local4(&self, a: &Ipv4Addr) -> bool {
        let a = u32::from(*a);
        if self.local4.len() <= 32 {
            self.local4.contains(&a)
        } else {
            self.local4.binary_search(&a).is_ok()
        }
    }
    #[inline]
    pub fn is_local6(&self, a: &Ipv6Addr) -> bool {
        let a = u128::from(*a);
        if self.local6.len() <= 32 {
            self.local6.contains(&a)
        } else {
            self.local6.binary_search(&a).is_ok()
        }
    }
    /// `a` is the broadcast address of one of the attached IPv4 subnets
    /// (prefixes shorter than /31): no host's.
    pub fn is_subnet_broadcast4(&self, a: &Ipv4Addr) -> bool {
        self.interfaces.iter().any(|i| i.v4.iter().any(|n| n.prefix_len() < 31 && n.broadcast() == *a))
    }
    /// `a` is the Subnet-Router anycast address (the prefix with a zero
    /// interface identifier) of one of the attached IPv6 subnets (RFC 4291
    /// s.2.6.1: routers MUST support it; /127 and /128 have none).
    pub fn is_subnet_anycast6(&self, a: &Ipv6Addr) -> bool {
        self.interfaces.iter().any(|i| i.v6.iter().any(|n| n.prefix_len() < 127 && n.network() == *a))
    }
    /// True when `a` is one of our addresses or a multicast group we listen
    /// to (all-nodes, all-routers, our solicited-node groups, those of the
    /// Subnet-Router anycast addresses among them: on-link hosts resolve
    /// those too, RFC 4861 s.7.2.4).
    #[inline]
    pub fn accepts6(&self, a: &Ipv6Addr) -> bool {
        if self.is_local6(a) || self.is_subnet_anycast6(a) {
            return true;
        }
        let s = a.segments();
        if s[0] == 0xff02 {
            if *a == Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1) || *a == Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2) {
                return true;
            }
            if s[5] == 1 && s[6] & 0xff00 == 0xff00 {
                return self.local6.iter().any(|l| solicited_node(&Ipv6Addr::from(*l)) == *a)
                    || self.interfaces.iter().any(|i| i.v6.iter().any(|n| n.prefix_len() < 127 && solicited_node(&n.network()) == *a));
            }
        }
        false
    }
}

/// Where to send a packet that matched a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NextHop {
    /// Egress interface index.
    pub iface: u16,
    /// The gateway; `None` for a connected route (the destination itself is
    /// the neighbour).
    pub gateway: Option<IpAddr>,
}

/// Most next hops of one route, and the most a weight may be.
pub const MAX_PATHS: usize = 64;
pub const MAX_WEIGHT: u16 = 256;

/// A route's next hops: one, or several for (weighted) ECMP. A flow's
/// packets all take the same one, chosen by a hash of its addresses,
/// protocol and ports ([`flow_hash`]), in proportion to the weights.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Route(Vec<(NextHop, u16)>);

impl Route {
    /// A route with one next hop.
    pub fn single(nh: NextHop) -> Route {
        Route(vec![(nh, 1)])
    }
    /// A route over several next hops with their weights (each 1 to
    /// [`MAX_WEIGHT`], at most [`MAX_PATHS`] distinct next hops).
    pub fn multipath(paths: Vec<(NextHop, u16)>) -> Result<Route, String> {
        if paths.is_empty() {
            return Err("no next hop".into());
        }
        if paths.len() > MAX_PATHS {
            return Err(format!("{} next hops: at most {MAX_PATHS}", paths.len()));
        }
        for (i, (nh, w)) in paths.iter().enumerate() {
            if *w == 0 || *w > MAX_WEIGHT {
                return Err(format!("weight {w}: must be 1 to {MAX_WEIGHT}"));
            }
            if paths[..i].iter().any(|(o, _)| o == nh) {
                return Err(format!("next hop {} given twice", nh.gateway.map(|g| g.to_string()).unwrap_or_else(|| format!("interface #{}", nh.iface))));
            }
        }
        // Only the ratios count: one next hop has weight 1, and weights are
        // divided by their greatest common divisor (fewer slots).
        let gcd = |mut a: u16, mut b: u16| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let g = paths.iter().fold(0, |g, (_, w)| gcd(g, *w));
        Ok(Route(paths.into_iter().map(|(nh, w)| (nh, w / g)).collect()))
    }
    /// The first next hop (the only one of a single-path route).
    pub fn first(&self) -> &NextHop {
        &self.0[0].0
    }
    /// The next hops and their weights.
    pub fn paths(&self) -> &[(NextHop, u16)] {
        &self.0
    }
    pub fn is_multipath(&self) -> bool {
        self.0.len() > 1
    }
}

/// The hash that keeps a flow on one ECMP next hop: over the IP packet
/// `ip` (IPv4 or IPv6 header first): source and destination address,
/// protocol, for IPv6 the Flow Label, and for TCP, UDP and SCTP the ports
/// (of an unfragmented IPv4 packet; IPv6 extension headers are not
/// walked, so an SRv6 packet hashes on its outer addresses and Flow
/// Label). RoCEv2's UDP source port carries the QP's entropy. `seed`
/// differs per router, so that consecutive routers do not split flows
/// the same way (hash polarization).
pub fn flow_hash(ip: &[u8], v6: bool, seed: u64) -> u64 {
    hash_flow(ip, v6, seed, false)
}

/// [`flow_hash`] of the fragments the router would cut IPv4 packet `ip`
/// into (they hash on the addresses only): where they go may differ from
/// where the whole packet would, and a packet is cut to fit their path.
pub fn fragments_hash(ip: &[u8], seed: u64) -> u64 {
    hash_flow(ip, false, seed, true)
}

#[inline]
fn hash_flow(ip: &[u8], v6: bool, seed: u64, as_fragment: bool) -> u64 {
    // Fixed-offset reads and four (IPv4: two) 64x64->128-bit multiplies
    // folded to 64 bits, as in wyhash: a few ns a packet, which matters
    // on the fast path, and every input bit reaches the high bits that
    // pick the slot.
    const K: [u64; 4] = [0xa076_1d64_78bd_642f, 0xe703_7ed1_a0b4_28db, 0x8ebc_6af0_9c88_c6e3, 0x5899_65cc_7537_4cc3];
    #[inline(always)]
    fn mum(a: u64, b: u64) -> u64 {
        let m = u128::from(a) * u128::from(b);
        (m as u64) ^ ((m >> 64) as u64)
    }
    let rd = |o: usize| u64::from_le_bytes(ip[o..o + 8].try_into().unwrap());
    let (x, proto, l4, label) = if v6 {
        if ip.len() < 40 {
            return 0;
        }
        let label = u64::from(u32::from_be_bytes([0, ip[1] & 0x0f, ip[2], ip[3]]));
        (mum(rd(8) ^ K[0], rd(16) ^ K[1]) ^ mum(rd(24) ^ K[2], rd(32) ^ K[3]), ip[6], 40, label)
    } else {
        if ip.len() < 20 {
            return 0;
        }
        let frag = as_fragment || u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
        (rd(12), if frag { 0 } else { ip[9] }, usize::from(ip[0] & 0x0f) * 4, 0)
    };
    let ports = match proto {
        6 | 17 | 132 => ip.get(l4..l4 + 4).map_or(0, |p| u64::from(u32::from_le_bytes(p.try_into().unwrap()))),
        _ => 0,
    };
    let tail = ports | (u64::from(proto) << 32) | (label << 40);
    mum(mum(x ^ seed ^ K[0], tail ^ K[1]) ^ K[2], (seed ^ K[3]) | 1)
}

/// Which of `n` slots a flow with hash `h` takes (hash-threshold, RFC
/// 2992: the hash space is cut into `n` regions; adding or removing a
/// next hop moves the flows of the regions whose bounds moved, fewer than
/// modulo-`n` would).
#[inline(always)]
pub fn slot_of(h: u64, n: u32) -> u32 {
    ((u128::from(h) * u128::from(n)) >> 64) as u32
}

/// A compiled route: `n` slots from `start` in [`Fib`]'s slot array, each
/// next hop repeated by its weight; its distinct next hops are `hops_n`
/// from `hops_start` in the group-hop array (for uRPF).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub start: u32,
    pub n: u32,
    hops_start: u32,
    hops_n: u32,
}

/// What [`Fib::compile`] builds: distinct next hops and routes (groups).
#[derive(Default)]
struct Compiled<'a> {
    hops: Vec<NextHop>,
    hop_ids: FxHashMap<NextHop, u32>,
    groups: Vec<Group>,
    group_ids: FxHashMap<&'a Route, u32>,
    slots: Vec<u32>,
    group_hops: Vec<u32>,
    /// Interfaces whose link is down (sorted).
    down: &'a [u16],
    /// Gateways that failed neighbour unreachability detection (sorted).
    failed: &'a [(u16, IpAddr)],
    /// Every gateway of an ECMP route (unsorted, repeats).
    ecmp_gateways: Vec<(u16, IpAddr)>,
}

impl<'a> Compiled<'a> {
    /// The group of route `r`, shared by every prefix with the same route.
    fn id(&mut self, r: &'a Route) -> u32 {
        if let Some(&g) = self.group_ids.get(r) {
            return g;
        }
        let (start, hops_start) = (self.slots.len(), self.group_hops.len());
        // Past 2^32 slots (millions of distinct ECMP routes) a route keeps
        // its first next hop only.
        // An ECMP route leaves out the next hops whose link is down or
        // whose gateway failed neighbour unreachability detection: it
        // prefers next hops that are up and reachable, then up ones (a
        // link that is down loses every packet; a silent gateway may only
        // be slow to answer), then reachable ones, and keeps them all when
        // none is either.
        if r.is_multipath() {
            self.ecmp_gateways.extend(r.paths().iter().filter_map(|(nh, _)| Some((nh.iface, nh.gateway?))));
        }
        let live: Vec<(NextHop, u16)> = if r.is_multipath() && !(self.down.is_empty() && self.failed.is_empty()) {
            let up = |nh: &NextHop| self.down.binary_search(&nh.iface).is_err();
            let reachable = |nh: &NextHop| nh.gateway.is_none_or(|g| self.failed.binary_search(&(nh.iface, g)).is_err());
            let keep = |f: &dyn Fn(&NextHop) -> bool| -> Vec<(NextHop, u16)> { r.paths().iter().filter(|(nh, _)| f(nh)).copied().collect() };
            [keep(&|nh| up(nh) && reachable(nh)), keep(&up), keep(&reachable)].into_iter().find(|v| !v.is_empty()).unwrap_or_default()
        } else {
            Vec::new()
        };
        let paths = if live.is_empty() { r.paths() } else { &live[..] };
        let total: usize = paths.iter().map(|(_, w)| usize::from(*w)).sum();
        let paths = if start + total >= u32::MAX as usize { &paths[..1] } else { paths };
        for (nh, w) in paths {
            let h = *self.hop_ids.entry(*nh).or_insert_with(|| {
                self.hops.push(*nh);
                (self.hops.len() - 1) as u32
            });
            self.slots.extend(std::iter::repeat_n(h, if paths.len() == 1 { 1 } else { usize::from(*w) }));
            self.group_hops.push(h);
        }
        self.groups.push(Group { start: start as u32, n: (self.slots.len() - start) as u32, hops_start: hops_start as u32, hops_n: (self.group_hops.len() - hops_start) as u32 });
        let g = (self.groups.len() - 1) as u32;
        self.group_ids.insert(r, g);
        g
    }
}

/// The forwarding information base: the routes (a prefix trie per family,
/// the RIB) and, compiled from them, the multibit-trie tables the packet path
/// looks up ([`crate::lpm::Lpm`]), which give a route's [`Group`] of
/// next-hop slots, with an array of distinct next hops.
/// Every change recompiles (use [`Fib::bulk`] to batch many changes).
#[derive(Debug, Clone)]
pub struct Fib {
    v4: PrefixMap<Ipv4Net, Route>,
    v6: PrefixMap<Ipv6Net, Route>,
    lpm4: Lpm,
    lpm6: Lpm,
    hops: Vec<NextHop>,
    groups: Vec<Group>,
    slots: Vec<u32>,
    group_hops: Vec<u32>,
    down: Vec<u16>,
    failed: Vec<(u16, IpAddr)>,
    ecmp_gateways: Vec<(u16, IpAddr)>,
    gateways: Vec<(u16, IpAddr)>,
    seed: u64,
    bulk: bool,
}

impl Default for Fib {
    fn default() -> Self {
        Fib {
            v4: PrefixMap::new(),
            v6: PrefixMap::new(),
            lpm4: Lpm::build(32, &mut []),
            lpm6: Lpm::build(128, &mut []),
            hops: Vec::new(),
            groups: Vec::new(),
            slots: Vec::new(),
            group_hops: Vec::new(),
            down: Vec::new(),
            failed: Vec::new(),
            ecmp_gateways: Vec::new(),
            gateways: Vec::new(),
            seed: 0,
            bulk: false,
        }
    }
}

impl Fib {
    /// Make many changes with one recompilation at the end.
    pub fn bulk<R>(&mut self, f: impl FnOnce(&mut Fib) -> R) -> R {
        self.bulk = true;
        let r = f(self);
        self.bulk = false;
        self.compile();
        r
    }
    fn changed(&mut self) {
        if !self.bulk {
            self.compile();
        }
    }
    /// The interfaces whose link is down: ECMP routes leave their next
    /// hops out (a route whose every next hop is down keeps them all).
    /// Returns whether that changed anything (then the tables are rebuilt).
    pub fn set_down(&mut self, mut ifaces: Vec<u16>) -> bool {
        ifaces.sort_unstable();
        ifaces.dedup();
        if ifaces == self.down {
            return false;
        }
        self.down = ifaces;
        self.changed();
        true
    }
    /// Whether interface `iface`'s link is down (see [`Fib::set_down`]).
    pub fn is_down(&self, iface: u16) -> bool {
        self.down.binary_search(&iface).is_ok()
    }
    /// The gateways (interface, address) that failed neighbour
    /// unreachability detection: ECMP routes leave their next hops out, as
    /// for a link that is down (Linux's `fib_multipath_use_neigh`).
    /// Returns whether that changed anything (then the tables are rebuilt).
    pub fn set_unreachable(&mut self, mut gws: Vec<(u16, IpAddr)>) -> bool {
        gws.sort_unstable();
        gws.dedup();
        if gws == self.failed {
            return false;
        }
        self.failed = gws;
        self.changed();
        true
    }
    /// Whether gateway `gw` behind `iface` failed neighbour unreachability
    /// detection (see [`Fib::set_unreachable`]).
    pub fn is_unreachable(&self, iface: u16, gw: IpAddr) -> bool {
        self.failed.binary_search(&(iface, gw)).is_ok()
    }
    /// The gateways set by [`Fib::set_unreachable`] (sorted).
    pub fn unreachable(&self) -> &[(u16, IpAddr)] {
        &self.failed
    }
    /// The gateways of the ECMP routes (sorted, each once): the next hops
    /// whose reachability matters to the choice of a path.
    pub fn ecmp_gateways(&self) -> &[(u16, IpAddr)] {
        &self.ecmp_gateways
    }
    /// The gateways of every route (sorted, each once).
    pub fn gateways(&self) -> &[(u16, IpAddr)] {
        &self.gateways
    }
    /// The ECMP hash seed ([`flow_hash`]).
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Rebuild the lookup tables from the routes.
    pub fn compile(&mut self) {
        let mut c = Compiled { down: &self.down, failed: &self.failed, ..Default::default() };
        let mut p4: Vec<(u128, u8, u32)> = self.v4.iter().map(|(p, r)| (u128::from(u32::from(p.network())) << 96, p.prefix_len(), c.id(r))).collect();
        let mut p6: Vec<(u128, u8, u32)> = self.v6.iter().map(|(p, r)| (u128::from(p.network()), p.prefix_len(), c.id(r))).collect();
        self.lpm4 = Lpm::build(32, &mut p4);
        self.lpm6 = Lpm::build(128, &mut p6);
        let Compiled { hops, groups, slots, group_hops, mut ecmp_gateways, .. } = c;
        ecmp_gateways.sort_unstable();
        ecmp_gateways.dedup();
        let mut gateways: Vec<(u16, IpAddr)> = hops.iter().filter_map(|nh| Some((nh.iface, nh.gateway?))).chain(ecmp_gateways.iter().copied()).collect();
        gateways.sort_unstable();
        gateways.dedup();
        self.gateways = gateways;
        self.ecmp_gateways = ecmp_gateways;
        self.hops = hops;
        self.groups = groups;
        self.slots = slots;
        self.group_hops = group_hops;
    }
    /// Add or replace the route to `p` (one next hop).
    pub fn insert4(&mut self, p: Ipv4Net, nh: NextHop) -> Option<Route> {
        self.insert(p.into(), Route::single(nh))
    }
    pub fn insert6(&mut self, p: Ipv6Net, nh: NextHop) -> Option<Route> {
        self.insert(p.into(), Route::single(nh))
    }
    /// Add or replace the route to `p` (one or more next hops; the
    /// families of `p` and the gateways are the caller's to match).
    pub fn insert(&mut self, p: ipnet::IpNet, r: Route) -> Option<Route> {
        let old = match p {
            ipnet::IpNet::V4(p) => self.v4.insert(p.trunc(), r),
            ipnet::IpNet::V6(p) => self.v6.insert(p.trunc(), r),
        };
        self.changed();
        old
    }
    pub fn remove4(&mut self, p: &Ipv4Net) -> Option<Route> {
        let r = self.v4.remove(&p.trunc());
        self.changed();
        r
    }
    pub fn remove6(&mut self, p: &Ipv6Net) -> Option<Route> {
        let r = self.v6.remove(&p.trunc());
        self.changed();
        r
    }
    /// Packet path: the index of the next hop (see [`Fib::hop`]) for `a`;
    /// `hash` gives the packet's [`flow_hash`], asked for only when the
    /// route has several next hops.
    #[inline(always)]
    pub fn route4(&self, a: Ipv4Addr, hash: impl FnOnce() -> u64) -> Option<u32> {
        self.pick(self.lpm4.lookup4(u32::from(a))?, hash)
    }
    #[inline(always)]
    pub fn route6(&self, a: Ipv6Addr, hash: impl FnOnce() -> u64) -> Option<u32> {
        self.pick(self.lpm6.lookup(u128::from(a))?, hash)
    }
    /// [`Fib::route4`] / [`Fib::route6`] for a packet: `dst` is where it
    /// goes, `pkt` the IP packet (header first, IPv4 or IPv6 by its
    /// version, without link-layer padding) that [`flow_hash`] reads with
    /// this FIB's seed.
    #[inline]
    pub fn route_ip(&self, dst: IpAddr, pkt: &[u8]) -> Option<u32> {
        let hash = || flow_hash(pkt, pkt.first().is_some_and(|b| b >> 4 == 6), self.seed);
        match dst {
            IpAddr::V4(a) => self.route4(a, hash),
            IpAddr::V6(a) => self.route6(a, hash),
        }
    }
    /// The next hop of group `g` for a flow with hash `hash()`.
    #[inline(always)]
    pub fn pick(&self, g: u32, hash: impl FnOnce() -> u64) -> Option<u32> {
        let g = *self.groups.get(g as usize)?;
        let k = if g.n <= 1 { 0 } else { slot_of(hash(), g.n) };
        self.slots.get((g.start + k) as usize).copied()
    }
    /// [`Fib::route6`]'s trie walk for a burst of destinations (bytes in
    /// network order): `out[i]` = [`Group`] index + 1 (see [`Fib::group`]),
    /// or 0 for no route.
    #[inline]
    pub fn route6_batch(&self, dst: &[[u8; 16]], out: &mut [u32]) {
        self.lpm6.lookup_batch(dst, out)
    }
    /// [`Fib::route6_batch`] for IPv4 (the address in the first 4 bytes).
    #[inline]
    pub fn route4_batch(&self, dst: &[[u8; 16]], out: &mut [u32]) {
        self.lpm4.lookup_batch(dst, out)
    }
    /// The compiled routes, indexed as the batch lookups give them.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }
    /// The next-hop index of each slot of the groups.
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }
    /// uRPF (RFC 3704) for a source whose route is group `g`: `iface`
    /// when one of the route's next hops leaves by it (strict mode
    /// accepts any of an ECMP route's interfaces, s.2.2), otherwise the
    /// first next hop's interface.
    #[inline]
    pub fn group_iface(&self, g: u32, iface: u16) -> Option<u16> {
        let g = *self.groups.get(g as usize)?;
        let hops = self.group_hops.get(g.hops_start as usize..(g.hops_start + g.hops_n) as usize)?;
        let first = self.hops.get(*hops.first()? as usize)?.iface;
        Some(if hops.iter().any(|&h| self.hops.get(h as usize).is_some_and(|nh| nh.iface == iface)) { iface } else { first })
    }
    /// [`Fib::group_iface`] for a source address.
    pub fn urpf_iface4(&self, a: Ipv4Addr, iface: u16) -> Option<u16> {
        self.group_iface(self.lpm4.lookup4(u32::from(a))?, iface)
    }
    pub fn urpf_iface6(&self, a: Ipv6Addr, iface: u16) -> Option<u16> {
        self.group_iface(self.lpm6.lookup(u128::from(a))?, iface)
    }
    #[inline(always)]
    pub fn hop(&self, i: u32) -> Option<&NextHop> {
        self.hops.get(i as usize)
    }
    /// The distinct next hops, indexed as [`Fib::route4`] returns them.
    pub fn hops(&self) -> &[NextHop] {
        &self.hops
    }
    /// The route's first next hop (the only one of a single-path route).
    #[inline]
    pub fn lookup4(&self, a: Ipv4Addr) -> Option<&NextHop> {
        self.route4(a, || 0).and_then(|i| self.hop(i))
    }
    #[inline]
    pub fn lookup6(&self, a: Ipv6Addr) -> Option<&NextHop> {
        self.route6(a, || 0).and_then(|i| self.hop(i))
    }
    /// [`Fib::lookup4`] or [`Fib::lookup6`] by the address's family.
    pub fn lookup(&self, a: IpAddr) -> Option<&NextHop> {
        match a {
            IpAddr::V4(a) => self.lookup4(a),
            IpAddr::V6(a) => self.lookup6(a),
        }
    }
    pub fn routes4(&self) -> impl Iterator<Item = (Ipv4Net, &Route)> {
        self.v4.iter()
    }
    pub fn routes6(&self) -> impl Iterator<Item = (Ipv6Net, &Route)> {
        self.v6.iter()
    }
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes used by the compiled lookup tables.
    pub fn lookup_memory(&self) -> usize {
        self.lpm4.memory() + self.lpm6.memory()
    }
}

/// How a neighbour entry came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighSource {
    Static,
    Learned,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighbour {
    pub mac: MacAddr,
    pub source: NeighSource,
}

/// A hash map whose keys senders choose (learned neighbours, addresses
/// being resolved): foldhash with a random seed per process and map, so a
/// sender cannot pick keys that collide (FxHash, used for the configured
/// tables, is a fixed multiply anyone can invert).
pub type KeyedMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// IP -> MAC per interface.
#[derive(Debug, Clone, Default)]
pub struct Neighbours {
    map: KeyedMap<(u16, IpAddr), Neighbour>,
    // Packet-path copies keyed by plain integers (cheaper to hash than IpAddr).
    v4: KeyedMap<(u16, u32), MacAddr>,
    v6: KeyedMap<(u16, u128), MacAddr>,
    /// Entries with `NeighSource::Learned`.
    learned: usize,
}

/// What [`Neighbours::learn_bounded`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learned {
    /// A new entry, or a changed MAC.
    Changed,
    /// Already so (or a static entry, which learning never replaces).
    Unchanged,
    /// A new address while `limit` learned entries exist: not added.
    Full,
}

impl Neighbours {
    #[inline]
    pub fn get(&self, iface: u16, ip: IpAddr) -> Option<&Neighbour> {
        self.map.get(&(iface, ip))
    }
    /// Packet path: the MAC of an IPv4 neighbour.
    #[inline]
    pub fn mac4(&self, iface: u16, ip: Ipv4Addr) -> Option<MacAddr> {
        self.v4.get(&(iface, u32::from(ip))).copied()
    }
    #[inline]
    pub fn mac6(&self, iface: u16, ip: Ipv6Addr) -> Option<MacAddr> {
        self.v6.get(&(iface, u128::from(ip))).copied()
    }
    #[inline]
    pub fn mac(&self, iface: u16, ip: IpAddr) -> Option<MacAddr> {
        match ip {
            IpAddr::V4(a) => self.mac4(iface, a),
            IpAddr::V6(a) => self.mac6(iface, a),
        }
    }
    fn index(&mut self, iface: u16, ip: IpAddr, mac: Option<MacAddr>) {
        match (ip, mac) {
            (IpAddr::V4(a), Some(m)) => {
                self.v4.insert((iface, u32::from(a)), m);
            }
            (IpAddr::V6(a), Some(m)) => {
                self.v6.insert((iface, u128::from(a)), m);
            }
            (IpAddr::V4(a), None) => {
                self.v4.remove(&(iface, u32::from(a)));
            }
            (IpAddr::V6(a), None) => {
                self.v6.remove(&(iface, u128::from(a)));
            }
        }
    }
    /// Insert or refresh; a learned entry never replaces a static one.
    /// Returns true when the table changed.
    pub fn learn(&mut self, iface: u16, ip: IpAddr, mac: MacAddr, source: NeighSource) -> bool {
        self.learn_bounded(iface, ip, mac, source, usize::MAX) == Learned::Changed
    }
    /// [`Neighbours::learn`] that adds a new learned address only while
    /// fewer than `limit` learned entries exist (static entries do not
    /// count and are never refused; a known address may change its MAC).
    pub fn learn_bounded(&mut self, iface: u16, ip: IpAddr, mac: MacAddr, source: NeighSource, limit: usize) -> Learned {
        let old = match self.map.get(&(iface, ip)) {
            Some(n) if n.source == NeighSource::Static && source == NeighSource::Learned => return Learned::Unchanged,
            Some(n) if n.mac == mac && n.source == source => return Learned::Unchanged,
            Some(n) => Some(n.source),
            None if source == NeighSource::Learned && self.learned >= limit => return Learned::Full,
            None => None,
        };
        self.learned -= usize::from(old == Some(NeighSource::Learned));
        self.learned += usize::from(source == NeighSource::Learned);
        self.map.insert((iface, ip), Neighbour { mac, source });
        self.index(iface, ip, Some(mac));
        Learned::Changed
    }
    /// Make the entry exactly `n` (replaying a change: here a learned
    /// entry may replace a static one).
    pub fn set(&mut self, iface: u16, ip: IpAddr, n: Neighbour) {
        let old = self.map.insert((iface, ip), n);
        self.learned -= usize::from(old.is_some_and(|o| o.source == NeighSource::Learned));
        self.learned += usize::from(n.source == NeighSource::Learned);
        self.index(iface, ip, Some(n.mac));
    }
    pub fn remove(&mut self, iface: u16, ip: IpAddr) -> Option<Neighbour> {
        self.index(iface, ip, None);
        let n = self.map.remove(&(iface, ip));
        self.learned -= usize::from(n.is_some_and(|n| n.source == NeighSource::Learned));
        n
    }
    /// Learned (not static) entries.
    pub fn learned_len(&self) -> usize {
        self.learned
    }
    pub fn iter(&self) -> impl Iterator<Item = (&(u16, IpAddr), &Neighbour)> {
        self.map.iter()
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nh(i: u16) -> NextHop {
        NextHop { iface: i, gateway: None }
    }

    #[test]
    fn lpm_prefers_longest() {
        let mut f = Fib::default();
        f.insert4("0.0.0.0/0".parse().unwrap(), nh(0));
        f.insert4("10.0.0.0/8".parse().unwrap(), nh(1));
        f.insert4("10.1.2.0/24".parse().unwrap(), nh(2));
        assert_eq!(f.lookup4("10.1.2.3".parse().unwrap()).unwrap().iface, 2);
        assert_eq!(f.lookup4("10.1.3.3".parse().unwrap()).unwrap().iface, 1);
        assert_eq!(f.lookup4("192.0.2.1".parse().unwrap()).unwrap().iface, 0);
        f.remove4(&"0.0.0.0/0".parse().unwrap());
        assert!(f.lookup4("192.0.2.1".parse().unwrap()).is_none());
        // Host bits in a configured prefix are ignored.
        f.insert6("2001:db8::1/32".parse().unwrap(), nh(3));
        f.insert6("2001:db8:1::/48".parse().unwrap(), nh(4));
        assert_eq!(f.lookup6("2001:db8:1::5".parse().unwrap()).unwrap().iface, 4);
        assert_eq!(f.lookup6("2001:db8:2::5".parse().unwrap()).unwrap().iface, 3);
        assert!(f.lookup6("2001:db9::".parse().unwrap()).is_none());
        assert_eq!(f.len(), 4);
    }

    fn gw(i: u16, g: &str) -> NextHop {
        NextHop { iface: i, gateway: Some(g.parse().unwrap()) }
    }

    #[test]
    fn multipath_routes_are_validated() {
        assert!(Route::multipath(vec![]).unwrap_err().contains("no next hop"));
        assert!(Route::multipath(vec![(gw(1, "10.1.0.2"), 0)]).unwrap_err().contains("weight 0"));
        assert!(Route::multipath(vec![(gw(1, "10.1.0.2"), 257)]).unwrap_err().contains("weight 257"));
        let e = Route::multipath(vec![(gw(1, "10.1.0.2"), 1), (gw(1, "10.1.0.2"), 3)]).unwrap_err();
        assert!(e.contains("10.1.0.2 given twice"), "{e}");
        let many: Vec<_> = (0..65).map(|k| (gw(1, &format!("10.1.0.{k}")), 1)).collect();
        assert!(Route::multipath(many).unwrap_err().contains("at most 64"));
        // The same gateway on two interfaces is two next hops.
        assert!(Route::multipath(vec![(gw(1, "10.1.0.2"), 1), (gw(2, "10.1.0.2"), 1)]).is_ok());
        // Only ratios count: weights divided by their GCD; one next hop
        // has weight 1 (a single-path route, never hashed).
        let r = Route::multipath(vec![(gw(1, "10.1.0.2"), 256), (gw(2, "10.2.0.2"), 128)]).unwrap();
        assert_eq!(r.paths().iter().map(|p| p.1).collect::<Vec<_>>(), vec![2, 1]);
        let r = Route::multipath(vec![(gw(1, "10.1.0.2"), 5)]).unwrap();
        assert_eq!(r, Route::single(gw(1, "10.1.0.2")));
        assert!(!r.is_multipath());
    }

    #[test]
    fn ecmp_groups_share_slots_by_weight() {
        let mut f = Fib::default();
        let r = Route::multipath(vec![(gw(1, "10.1.0.2"), 1), (gw(2, "10.2.0.2"), 3)]).unwrap();
        f.insert("10.9.0.0/16".parse().unwrap(), r.clone());
        f.insert("10.8.0.0/16".parse().unwrap(), r.clone());
        f.insert4("10.7.0.0/16".parse().unwrap(), gw(2, "10.2.0.2"));
        // Two prefixes with one route share one group of 4 slots; the
        // single path is a group of 1; next hops are not repeated.
        assert_eq!(f.hops().len(), 2);
        let mut g: Vec<Group> = f.groups().to_vec();
        g.sort_by_key(|g| g.n);
        assert_eq!(g.iter().map(|g| g.n).collect::<Vec<_>>(), vec![1, 4]);
        // Slots by weight: over the hash space, 1/4 and 3/4.
        let mut on = [0usize; 3];
        for k in 0..4000u64 {
            let h = k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let hop = f.route4("10.9.1.1".parse().unwrap(), || h).unwrap();
            on[usize::from(f.hop(hop).unwrap().iface)] += 1;
            // The same hash, the same next hop, through either prefix.
            assert_eq!(f.route4("10.8.1.1".parse().unwrap(), || h), Some(hop));
        }
        assert_eq!(on[0], 0);
        assert!((900..=1100).contains(&on[1]) && on[1] + on[2] == 4000, "{on:?}");
        // The hash is asked for only for an ECMP route.
        assert!(f.route4("10.7.1.1".parse().unwrap(), || unreachable!()).is_some());
        // lookup4 gives the first next hop; uRPF accepts any member's interface.
        assert_eq!(f.lookup4("10.9.1.1".parse().unwrap()), Some(&gw(1, "10.1.0.2")));
        assert_eq!(f.urpf_iface4("10.9.1.1".parse().unwrap(), 2), Some(2));
        assert_eq!(f.urpf_iface4("10.9.1.1".parse().unwrap(), 3), Some(1));
        assert_eq!(f.urpf_iface4("10.7.1.1".parse().unwrap(), 1), Some(2));
        assert_eq!(f.urpf_iface4("192.0.2.1".parse().unwrap(), 1), None);
        // Replacing the route by a single path removes its group.
        let old = f.insert4("10.9.0.0/16".parse().unwrap(), gw(1, "10.1.0.2")).unwrap();
        assert_eq!(old, r);
        assert_eq!(f.routes4().filter(|(_, r)| r.is_multipath()).count(), 1);
    }

    #[test]
    fn ecmp_routes_leave_out_next_hops_whose_link_is_down() {
        let mut f = Fib::default();
        f.insert("10.9.0.0/16".parse().unwrap(), Route::multipath(vec![(gw(1, "10.1.0.2"), 1), (gw(2, "10.2.0.2"), 1), (gw(3, "10.3.0.2"), 2)]).unwrap());
        f.insert4("10.8.0.0/16".parse().unwrap(), gw(2, "10.2.0.2"));
        let spread = |f: &Fib| {
            let mut on = [0usize; 4];
            for k in 0..1000u64 {
                let hop = f.route4("10.9.1.1".parse().unwrap(), || k.wrapping_mul(0x9e37_79b9_7f4a_7c15)).unwrap();
                on[usize::from(f.hop(hop).unwrap().iface)] += 1;
            }
            on
        };
        assert!(spread(&f).iter().skip(1).all(|&n| n > 150), "{:?}", spread(&f));
        assert!(!f.set_down(vec![]), "nothing changed");
        assert!(f.set_down(vec![3, 2, 3]));
        assert!(f.is_down(2) && f.is_down(3) && !f.is_down(1));
        assert_eq!(spread(&f), [0, 1000, 0, 0], "only the live next hop");
        // uRPF follows the live next hops; a single-path route keeps its
        // next hop (no other way to go).
        assert_eq!(f.urpf_iface4("10.9.1.1".parse().unwrap(), 3), Some(1));
        assert_eq!(f.lookup4("10.8.1.1".parse().unwrap()).unwrap().iface, 2);
        // Every next hop down: all kept.
        assert!(f.set_down(vec![1, 2, 3]));
        assert!(spread(&f).iter().skip(1).all(|&n| n > 150));
        assert!(f.set_down(vec![2]));
        let on = spread(&f);
        assert_eq!(on[2], 0);
        assert!(on[1] > 200 && on[3] > 500, "1:2 over the two live ones: {on:?}");
        assert!(f.set_down(vec![]));
        assert!(spread(&f)[2] > 150, "back when the link comes up");
    }

    #[test]
    fn ecmp_routes_leave_out_gateways_that_failed_unreachability_detection() {
        let mut f = Fib::default();
        f.insert("10.9.0.0/16".parse().unwrap(), Route::multipath(vec![(gw(1, "10.1.0.2"), 1), (gw(1, "10.1.0.3"), 1), (gw(2, "10.2.0.2"), 1)]).unwrap());
        f.insert4("10.8.0.0/16".parse().unwrap(), gw(1, "10.1.0.3"));
        let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
        assert_eq!(f.ecmp_gateways(), &[(1, ip("10.1.0.2")), (1, ip("10.1.0.3")), (2, ip("10.2.0.2"))][..], "single-path gateways are not listed");
        let spread = |f: &Fib| {
            let mut on = std::collections::BTreeMap::new();
            for k in 0..1200u64 {
                let hop = f.route4("10.9.1.1".parse().unwrap(), || k.wrapping_mul(0x9e37_79b9_7f4a_7c15)).unwrap();
                *on.entry(f.hop(hop).unwrap().gateway.unwrap().to_string()).or_insert(0usize) += 1;
            }
            on
        };
        assert_eq!(spread(&f).len(), 3);
        assert!(!f.set_unreachable(vec![]), "nothing changed");
        assert!(f.set_unreachable(vec![(1, ip("10.1.0.3")), (1, ip("10.1.0.3"))]));
        assert!(f.is_unreachable(1, ip("10.1.0.3")) && !f.is_unreachable(1, ip("10.1.0.2")) && !f.is_unreachable(2, ip("10.1.0.3")));
        let on = spread(&f);
        assert_eq!(on.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["10.1.0.2", "10.2.0.2"], "{on:?}");
        assert!(on.values().all(|&n| n > 400), "{on:?}");
        // A single-path route keeps its gateway.
        assert_eq!(f.lookup4("10.8.1.1".parse().unwrap()).unwrap().gateway, Some(ip("10.1.0.3")));
        // Link 2 down leaves 10.1.0.2; with link 1 down too, the reachable
        // ones (every link is down); all three unreachable: all kept.
        assert!(f.set_down(vec![2]));
        assert_eq!(spread(&f).keys().collect::<Vec<_>>(), ["10.1.0.2"]);
        assert!(f.set_down(vec![1, 2]));
        assert_eq!(spread(&f).keys().collect::<Vec<_>>(), ["10.1.0.2", "10.2.0.2"], "reachable ones when every link is down");
        assert!(f.set_down(vec![]));
        assert!(f.set_unreachable(vec![(1, ip("10.1.0.2")), (1, ip("10.1.0.3")), (2, ip("10.2.0.2"))]));
        assert_eq!(spread(&f).len(), 3, "none reachable: all kept");
        // Up but silent beats reachable behind a link that is down.
        assert!(f.set_unreachable(vec![(1, ip("10.1.0.2")), (1, ip("10.1.0.3"))]));
        assert!(f.set_down(vec![2]));
        assert_eq!(spread(&f).keys().collect::<Vec<_>>(), ["10.1.0.2", "10.1.0.3"], "up (silent) beats reachable behind a down link");
    }

    #[test]
    fn flow_hash_reads_addresses_protocol_ports_and_the_flow_label() {
        let mut v4 = [0u8; 28];
        v4[0] = 0x45;
        v4[9] = 17;
        v4[12..20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        v4[20..24].copy_from_slice(&[0xc0, 0x00, 0x12, 0xb7]);
        let h = flow_hash(&v4, false, 0);
        let mut other = v4;
        other[21] = 1; // another UDP source port
        assert_ne!(flow_hash(&other, false, 0), h);
        other = v4;
        other[8] = 9; // TTL, checksum, length, ECN: not part of the flow
        other[1] = 3;
        other[10] = 0x55;
        assert_eq!(flow_hash(&other, false, 0), h);
        assert_ne!(flow_hash(&v4, false, 7), h, "the seed changes the split");
        // A fragment hashes on its addresses and not its protocol or
        // ports, so that all fragments of a datagram take one path.
        let mut frag = v4;
        frag[6] = 0x20; // MF
        let mut later = v4;
        later[7] = 0xb9; // offset, and no ports at offset 20
        later[20..24].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(flow_hash(&frag, false, 0), flow_hash(&later, false, 0));
        // What the router's own fragments of a whole packet will hash to.
        assert_eq!(fragments_hash(&v4, 5), flow_hash(&frag, false, 5));
        assert_ne!(fragments_hash(&v4, 5), flow_hash(&v4, false, 5));
        let mut v6 = [0u8; 48];
        v6[0] = 0x60;
        v6[6] = 17;
        v6[8] = 0x20;
        v6[24] = 0x20;
        v6[39] = 1;
        let h6 = flow_hash(&v6, true, 0);
        let mut fl = v6;
        fl[3] = 5; // Flow Label
        assert_ne!(flow_hash(&fl, true, 0), h6);
        fl = v6;
        fl[41] = 9; // port
        assert_ne!(flow_hash(&fl, true, 0), h6);
        fl = v6;
        fl[7] = 3; // Hop Limit
        fl[1] = 0xb0; // Traffic Class
        assert_eq!(flow_hash(&fl, true, 0), h6);
    }

    #[test]
    fn link_local_and_solicited_node() {
        let mac = [0x02, 0x00, 0x00, 0xaa, 0xbb, 0xcc];
        assert_eq!(eui64_link_local(&mac), "fe80::ff:feaa:bbcc".parse::<Ipv6Addr>().unwrap());
        let a: Ipv6Addr = "2001:db8::1:2:3".parse().unwrap();
        assert_eq!(solicited_node(&a), "ff02::1:ff02:3".parse::<Ipv6Addr>().unwrap());
    }

    #[test]
    fn topology_local_and_groups() {
        let mut i = Interface::new("p0", 0, None, [2, 0, 0, 0, 0, 1], 1500);
        i.v4.push("10.0.0.1/24".parse().unwrap());
        i.v6.push("2001:db8::1/64".parse().unwrap());
        let t = Topology::new(vec![i]);
        assert!(t.is_local4(&"10.0.0.1".parse().unwrap()));
        assert!(!t.is_local4(&"10.0.0.2".parse().unwrap()));
        assert!(t.accepts6(&"ff02::1:ff00:1".parse().unwrap()));
        assert!(!t.accepts6(&"ff02::1:ff00:2".parse().unwrap()));
        assert!(t.accepts6(&"fe80::ff:fe00:1".parse().unwrap()));
        assert_eq!(t.iface_of(0, None), Some(0));
        assert_eq!(t.iface_of(0, Some(5)), None);
    }

    #[test]
    fn sender_keyed_maps_hash_with_their_own_seeds() {
        use std::hash::BuildHasher;
        let (a, b) = (Neighbours::default(), Neighbours::default());
        let k = (1u16, u128::from(Ipv6Addr::LOCALHOST));
        assert_ne!(a.v6.hasher().hash_one(k), b.v6.hasher().hash_one(k));
        // A snapshot (clone) keeps its table's seed, so it finds its keys.
        let mut n = Neighbours::default();
        n.learn(1, IpAddr::V6(Ipv6Addr::LOCALHOST), [2; 6], NeighSource::Learned);
        let c = n.clone();
        assert_eq!(c.mac(1, IpAddr::V6(Ipv6Addr::LOCALHOST)), Some([2; 6]));
    }

    #[test]
    fn learned_entries_are_bounded() {
        let mut n = Neighbours::default();
        let ip = |i: u8| IpAddr::from([10, 0, 0, i]);
        assert!(n.learn(0, ip(100), [9; 6], NeighSource::Static));
        for i in 1..=3 {
            assert_eq!(n.learn_bounded(0, ip(i), [i; 6], NeighSource::Learned, 3), Learned::Changed);
        }
        assert_eq!(n.learned_len(), 3);
        // Full: a new address is refused, a known one may move, statics
        // are neither counted nor refused.
        assert_eq!(n.learn_bounded(0, ip(4), [4; 6], NeighSource::Learned, 3), Learned::Full);
        assert!(n.get(0, ip(4)).is_none() && n.mac(0, ip(4)).is_none());
        assert_eq!(n.learn_bounded(0, ip(2), [7; 6], NeighSource::Learned, 3), Learned::Changed);
        assert_eq!(n.mac(0, ip(2)), Some([7; 6]));
        assert_eq!(n.learn_bounded(0, ip(2), [7; 6], NeighSource::Learned, 3), Learned::Unchanged);
        assert_eq!(n.learn_bounded(0, ip(5), [5; 6], NeighSource::Static, 3), Learned::Changed);
        assert_eq!(n.learn_bounded(0, ip(100), [8; 6], NeighSource::Learned, 3), Learned::Unchanged);
        assert_eq!((n.len(), n.learned_len()), (5, 3));
        // Room again after a removal; a learned entry made static stops
        // counting.
        n.remove(0, ip(1));
        assert_eq!(n.learned_len(), 2);
        assert_eq!(n.learn_bounded(0, ip(3), [3; 6], NeighSource::Static, 3), Learned::Changed);
        assert_eq!(n.learned_len(), 1);
        assert_eq!(n.learn_bounded(0, ip(4), [4; 6], NeighSource::Learned, 3), Learned::Changed);
        assert_eq!(n.learn_bounded(0, ip(6), [6; 6], NeighSource::Learned, 3), Learned::Changed);
        assert_eq!(n.learn_bounded(0, ip(7), [6; 6], NeighSource::Learned, 3), Learned::Full);
        n.remove(0, ip(3));
        assert_eq!(n.learned_len(), 3, "removing a static entry frees no learned room");
    }

    #[test]
    fn static_neighbour_wins() {
        let mut n = Neighbours::default();
        let ip: IpAddr = "10.0.0.2".parse().unwrap();
        assert!(n.learn(0, ip, [1; 6], NeighSource::Static));
        assert!(!n.learn(0, ip, [2; 6], NeighSource::Learned));
        assert_eq!(n.get(0, ip).unwrap().mac, [1; 6]);
        assert!(n.learn(0, "10.0.0.3".parse().unwrap(), [3; 6], NeighSource::Learned));
        assert!(!n.learn(0, "10.0.0.3".parse().unwrap(), [3; 6], NeighSource::Learned));
    }
}
