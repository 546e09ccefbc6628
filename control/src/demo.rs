//! `dcirouter demo`: the router on its embedded default configuration with
//! net_pcap virtual devices and generated traffic. It writes the input and
//! output pcaps (open them in Wireshark) and prints what the router did.

use crate::config;
use crate::gen::{self, L2};
use crate::router::{self, RunOptions};
use dataplane::counters::{Drop, Local};
/// A tunnel frame as the IPv6 fragments of its tunnel packet (for the
/// demo's tunnel exit and the tests).
pub use dataplane::frag::tunnel_fragments;
use dataplane::wire::ethernet::Mac;
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The headend policy's Proxy Address, and the RC SENDs the DC host sends it.
const HEADEND_PROXY: &str = "2001:db8:ff::1";
/// The outer source of the demo router's own H.Encaps (SRv6 policies).
const HEADEND_SRC: &str = "fc00:0:1::a";
const HEADEND_SENDS: u32 = 3;

/// What left the WAN port under the headend policy: (packets, End.MT TLVs
/// in the first one's SRH, receivers they name, whether the HMAC TLV (key
/// 9) ends its SRH and verifies under the demo's key).
pub fn headend_outcome(wan_out: &[Vec<u8>]) -> (usize, usize, usize, bool) {
    use dataplane::wire::srh::{HmacKey, HmacKeyTable, Srh, SrhRepr, TlvRepr};
    let sid: Ipv6Addr = "fc00:0:21::a".parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
    let ours: Vec<&Vec<u8>> = wan_out.iter().filter(|f| f.len() > 14 + 48 && f[12..14] == [0x86, 0xdd] && f[14 + 24..14 + 40] == sid.octets() && f[14 + 6] == 43).collect();
    let Some(first) = ours.first() else { return (0, 0, 0, false) };
    let Ok(sr) = Srh::new_checked(&first[14 + 40..]) else { return (ours.len(), 0, 0, false) };
    let Ok(r) = SrhRepr::parse(&sr, dataplane::wire::params::Params::DEFAULT.srh_tlv_end_mt) else { return (ours.len(), 0, 0, false) };
    let tlvs: Vec<&dataplane::wire::srh::EndMtRepr> = r.tlvs.iter().filter_map(|t| if let TlvRepr::EndMt(m) = t { Some(m) } else { None }).collect();
    let receivers = tlvs.iter().map(|t| t.receivers.len()).sum();
    let keys: HmacKeyTable = HmacKey::new(9, b"dcirouter demo srh secret", 32).into_iter().collect();
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&first[14 + 8..14 + 24]).unwrap_or([0; 16]));
    let last = matches!(r.tlvs.last(), Some(TlvRepr::Hmac(_)));
    let ok = last && sr.verify_hmac(&src, Some(&sid), &keys).is_ok();
    (ours.len(), tlvs.len(), receivers, ok)
}

/// The AH-protected Long-haul CNPs in the DC output: (frames with an AH,
/// how many verify under the demo's `[[cnp_auth]]` key, whether their
/// sequence numbers run 1, 2, 3, ...).
pub fn cnp_auth_outcome(dc_out: &[Vec<u8>]) -> (usize, usize, bool) {
    use dataplane::wire::ah::{verify_ipv6, AhKey, Algorithm, NEXT_HEADER_AH};
    let Ok(key) = AhKey::new(0x1000, Algorithm::HmacSha256_128, b"dcirouter demo Long-haul CNP key") else { return (0, 0, false) };
    let ah: Vec<&[u8]> = dc_out.iter().filter(|f| f.len() > 14 + 40 && f[12..14] == [0x86, 0xdd] && f[14 + 6] == NEXT_HEADER_AH).map(|f| &f[14..]).collect();
    let seqs: Vec<u32> = ah.iter().filter_map(|ip| verify_ipv6(ip, |spi| (spi == key.spi()).then_some(&key)).ok()).map(|v| v.seq).collect();
    let in_order = seqs.iter().enumerate().all(|(i, s)| *s as usize == i + 1);
    (ah.len(), seqs.len(), in_order)
}

/// The multicast group of the demo's static multicast route.
pub const MC_GROUP: &str = "ff3e::100";
/// The only source [`MC_GROUP`]'s static (S,G) route forwards.
pub const MC_SOURCE: &str = "2001:db8:3::2";
pub const ROUTER_DC_MAC: [u8; 6] = [0x02, 0xdc, 0, 0, 0, 0x01];
pub const ROUTER_WAN_MAC: [u8; 6] = [0x02, 0xdc, 0, 0, 0, 0x02];
pub const HOST_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x01, 0x02];
pub const WAN_GW_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x02, 0x02];

/// The embedded default configuration; `{dir}` is the output directory.
pub const DEFAULT_CONFIG: &str = r#"# dcirouter demo: two DC-side ports (two DC gateways) and a WAN-side port on net_pcap.
[dataplane]
status_interval_ms = 0
# Neighbour unreachability detection: ARP / ND solicitations 50 ms apart
# (1 s by default), so that the silent gateway below is found out within
# the demo's half second.
neighbour_solicit_interval_ms = 50

[mempool]
mbufs_per_socket = 5631
cache_size = 128

[[port]]
name = "dc"
device = "net_pcap0,rx_pcap={dir}/dc-in.pcap,tx_pcap={dir}/dc-out.pcap"
mac = "02:dc:00:00:00:01"
addresses = ["10.0.1.1/24", "2001:db8:1::1/64"]

[[port]]
name = "wan"
device = "net_pcap1,rx_pcap={dir}/wan-in.pcap,tx_pcap={dir}/wan-out.pcap"
mac = "02:dc:00:00:00:02"
addresses = ["10.0.2.1/24", "2001:db8:2::1/64"]
# A congested long-haul link: the WAN port drains at 20 Mb/s into a deep
# buffer, and the congestion-aware node (draft-tian-ccwg-long-haul-cnp)
# watches it: CE marking above K_min, Long-haul CNPs above K_max.
rate_mbps = 20
queue_bytes = 600000
# Its share of the pool: at most half of it is held in the ports' queues
# (this one, the second DC gateway's and the second WAN link's below).
queue_packets = 2047

[port.congestion]
rtt_est_us = 2000          # K_max = max(K_base, R_port * RTT_est / 8)
k_base_bytes = 65536
interval_us = 500
top_flows = 3            # the IPv6, the IPv4 and the tunnelled flow
format = "icmpv6"          # sources without a format of their own below

# RTT_est by active probing (s.5.3.1): Echo Requests to the WAN gateway
# every 100 ms, RTT_est the smallest round trip of the last 10. A replay
# answers none of them, so RTT_est stays at rtt_est_us here; on a live
# link it follows the link (`show congestion`).
[port.congestion.rtt_probe]
target = "2001:db8:2::2"
interval_ms = 100
timeout_ms = 150

# The DC's IPv4 hosts accept the RoCEv2 format (the only one for IPv4,
# s.4, and only for endpoints configured for it, s.10.5); without this
# they would get no Long-haul CNP, only CE marks.
[[port.congestion.source_format]]
prefix = "10.0.1.0/24"
format = "roce"

# The source QP of the IPv6 RoCEv2 flow, known to the operator: its
# Long-haul CNPs name it (the IPv4 flow's CNPs carry a Flow ID object).
[[port.congestion.source_qp]]
source = "2001:db8:1::2"
destination = "2001:db8:3::7"
dest_qp = 0x700
source_qp = 0x7001

# A second long-haul link, to the remote site 2001:db8:b::/48, whose
# RTT_est follows the round trips of the traffic it carries (draft-tian
# s.5.3.1, "receiver reporting"): the RoCEv2 data packets that ask for an
# ACK (BTH AckReq) are timed from leaving this port's queue to the
# receiver's ACK. Configured at 10 ms until the first round trip is
# measured; K_max = R_port x RTT_est / 8 follows.
[[port]]
name = "wan2"
device = "net_pcap3,rx_pcap={dir}/wan2-in.pcap,tx_pcap={dir}/wan2-out.pcap"
mac = "02:dc:00:00:00:04"
addresses = ["10.0.4.1/24", "2001:db8:4::1/64"]
rate_mbps = 1000
queue_bytes = 2000000
queue_packets = 128

[port.congestion]
rtt_est_us = 10000
k_base_bytes = 16384
format = "icmpv6"

[port.congestion.rtt_acks]
window_ms = 10000

# A second DC gateway: its hosts' traffic comes in here, so END.C below
# pauses this link, not 'dc', for notifications about them.
[[port]]
name = "dc2"
device = "net_pcap2,rx_pcap={dir}/dc2-in.pcap,tx_pcap={dir}/dc2-out.pcap"
mac = "02:dc:00:00:00:03"
addresses = ["10.0.6.1/24", "2001:db8:6::1/64"]
# The second gateway sends PFC PAUSE frames when its buffers for the
# lossless class fill (802.1Qbb): the RoCEv2 traffic toward it (DSCP 26,
# priority 3) then waits in this port's queue while other traffic passes.
# Its link is counted at 100 Mb/s here, so one PAUSE (65535 quanta) lasts
# 335 ms, long enough to see in the pcap's timestamps; END.C's PAUSE
# frames toward this gateway count their quanta at that speed too. Without
# link_mbps the quanta follow the speed the NIC reports.
queue_packets = 512
[port.pfc]
priorities = [3]
dscp_priority = { 26 = 3 }
link_mbps = 100

# The Long-haul CNPs to the IPv6 hosts carry an IPsec AH (draft-tian s.9,
# RFC 4302), which a source keyed as `ip xfrm state add src 2001:db8:1::1
# dst 2001:db8:1::2 proto ah spi 0x1000 auth-trunc 'hmac(sha256)'
# 0x<the key's 32 octets> 128` verifies.
[[cnp_auth]]
prefix = "2001:db8:1::/64"
spi = 0x1000
secret = "dcirouter demo Long-haul CNP key"

# The site behind the second WAN link.
[[route]]
prefix = "2001:db8:b::/48"
via = "2001:db8:4::2"

[[neighbour]]
ip = "2001:db8:4::2"
mac = "02:00:00:00:04:02"
interface = "wan2"

# The remote data centre, behind the WAN gateway.
[[route]]
prefix = "10.0.3.0/24"
via = "10.0.2.2"

[[route]]
prefix = "2001:db8:3::/48"
via = "2001:db8:2::2"

# A third site over two WAN gateways: ECMP, each flow (addresses,
# protocol, ports: RoCEv2's UDP source port) keeps one of them.
[[route]]
prefix = "10.0.7.0/24"
nexthop = [{ via = "10.0.2.2" }, { via = "10.0.2.3" }]

[[route]]
prefix = "2001:db8:7::/48"
nexthop = [{ via = "2001:db8:2::2" }, { via = "2001:db8:2::3", weight = 1 }]

# A fourth site over 10.0.2.2 and 10.0.2.9, a gateway that never answers
# ARP: the router resolves ECMP gateways by itself, and leaves out of the
# route one that does not answer (neighbour unreachability detection).
[[route]]
prefix = "10.0.12.0/24"
nexthop = [{ via = "10.0.2.2" }, { via = "10.0.2.9" }]

[[neighbour]]
ip = "10.0.2.3"
mac = "02:00:00:00:02:03"
interface = "wan"

[[neighbour]]
ip = "2001:db8:2::3"
mac = "02:00:00:00:02:03"
interface = "wan"

[[neighbour]]
ip = "10.0.2.2"
mac = "02:00:00:00:02:02"
interface = "wan"

[[neighbour]]
ip = "2001:db8:2::2"
mac = "02:00:00:00:02:02"
interface = "wan"

# End.MT receivers and the ingress PE that gets FANN notifications, in the DC.
[[neighbour]]
ip = "2001:db8:1::10"
mac = "02:00:00:00:01:10"
interface = "dc"

[[neighbour]]
ip = "2001:db8:1::11"
mac = "02:00:00:00:01:11"
interface = "dc"

[[neighbour]]
ip = "2001:db8:1::12"
mac = "02:00:00:00:01:12"
interface = "dc"

[[neighbour]]
ip = "2001:db8:1::99"
mac = "02:00:00:00:01:99"
interface = "dc"

# The host behind the second DC gateway.
[[neighbour]]
ip = "2001:db8:6::2"
mac = "02:00:00:00:06:02"
interface = "dc2"

# The SDN controller that gets a copy of every notification the ingress PE
# accepts.
[[neighbour]]
ip = "2001:db8:1::c"
mac = "02:00:00:00:01:0c"
interface = "dc"

# The WAN's SRv6 locators (R1..R4 and the egress PE) are behind the gateway.
[[route]]
prefix = "fc00::/16"
via = "2001:db8:2::2"

# SRv6: an End.MT SID (RDMA multicast edge node), END.E and END.C SIDs
# (notifications from the WAN: routed to the sender / turned into PFC).
[srv6]
locator = "fc00:0:1::/48"

[[srv6.sid]]
sid = "fc00:0:1::a"
behaviour = "end.mt"

# The second group's End.MT SID (one group per End.MT SID).
[[srv6.sid]]
sid = "fc00:0:1::b"
behaviour = "end.mt"

[[srv6.sid]]
sid = "fc00:0:1::e"
behaviour = "end.e"

# End.DT6: the exit of SRv6 tunnels from the WAN (the inner IPv6 packet is
# routed on; a tunnel packet its headend fragmented, RFC 2473 s.7.1, is
# reassembled here first).
[[srv6.sid]]
sid = "fc00:0:1::d6"
behaviour = "end.dt6"

# END.C toward both DC gateways (draft-hu s.4.1, "to upstream device"):
# a notification pauses the link its sender's route leaves by.
[[srv6.sid]]
sid = "fc00:0:1::c"
behaviour = "end.c"
interfaces = ["dc", "dc2"]

# End.MT reverse path (draft-li-spring-rdma-multicast-over-srv6 s.5.3):
# this node is adjacent to the source 2001:db8:3::2 of the group whose
# packets reach fc00:0:1::a. It aggregates the three receivers' ACK / NAK /
# CNP (sent to the Proxy Address with the Designated QPN) and answers the
# source like one unicast RC peer. Its CNP window T follows the round trip
# it measures below it (from a data PSN passing down to every receiver
# having acknowledged it), between 100 ms and 1 s (s.5.3.3: "T MAY be
# adjusted dynamically").
[[multicast.group]]
name = "rdma-mc"
proxy = "fc00:0:1::100"
designated_qpn = 0x777
source = "2001:db8:3::2"
source_qpn = 0x900
cnp_window_us = 100000
cnp_window = "rtt"
cnp_window_max_us = 1000000
receivers = [
  { address = "2001:db8:1::10", qpn = 0x500 },
  { address = "2001:db8:1::11", qpn = 0x501 },
  { address = "2001:db8:1::12", qpn = 0x502 },
]

# The RDMA multicast tree's underlay (s.3: "static multicast routing"):
# the group ff3e::100's packets from the tree's source 2001:db8:3::2 that
# arrive on the WAN (its RPF interface) are replicated onto the DC. The
# group is in the SSM range (ff3x::/32), so the route names its source
# (RFC 4607 s.5.1: nothing from a source nobody asked for).
[[multicast.route]]
group = "ff3e::100"
source = "2001:db8:3::2"
iif = "wan"
oifs = ["dc"]

# MLD (RFC 9777) on the DC port: the DC hosts say which groups they listen
# to, and from which sources; the router queries them and adds 'dc' to those
# groups' routes (no static route for them). A leave is queried twice, 100 ms
# apart, before the group is forgotten.
[multicast.mld]
interfaces = ["dc"]
last_listener_query_interval_ms = 100

# Hop-by-hop aggregation (s.5.3, s.8): for a second group this node is an
# edge node further down the tree. It aggregates its two receivers and
# answers the next node up as one of that node's receivers would: from its
# node address to the Proxy Address (routed over the WAN), DestQP = the
# Designated QPN. The node above lists 2001:db8:2::1 in its child_nodes.
# Its receivers are not configured: the group learns them from the End.MT
# TLV of the data reaching its SID fc00:0:1::b (s.8: "learned from the
# End.MT TLV or from control-plane provisioning").
[[multicast.group]]
name = "rdma-mc-edge"
proxy = "fc00:0:2::200"
designated_qpn = 0x778
source = "2001:db8:3::3"
source_qpn = 0x901
cnp_window_us = 100000
node_address = "2001:db8:2::1"
tlv_receivers = "learn"

# Ingress PE (draft-hzh-fantel-wan-tunnel Figure 2): traffic to DC2
# (10.0.9.0/24) goes H.Encaps over R1 -> R2 -> egress PE; when a FANN
# notification says a link or node of that path failed, over the backup
# R3 -> R4. Elements are "node" or "node#port" (FANN Egress Port ID).
[[srv6.policy]]
prefix = "10.0.9.0/24"
segments = [["fc00:0:11::1", "fc00:0:12::1", "fc00:0:1e::d4"]]
elements = [["fc00::1#2", "fc00::2"]]
backup = [["fc00:0:13::1", "fc00:0:14::1", "fc00:0:1e::d4"]]
backup_elements = [["fc00::3", "fc00::4"]]

# DC2's IPv6 prefix, whose primary path crosses R2 only (Figure 3): when
# R2 reports severe congestion, no primary path is left healthy while the
# backup R3 -> R4 is, and the ingress PE moves the policy there (s.4.2);
# it comes back only once R2 has been healthy for the hold-down (doubled
# for a policy that flaps between the two).
[[srv6.policy]]
prefix = "2001:db8:9::/48"
segments = [["fc00:0:12::1", "fc00:0:1e::d6"]]
elements = [["fc00::2"]]
backup = [["fc00:0:13::1", "fc00:0:14::1", "fc00:0:1e::d6"]]
backup_elements = [["fc00::3", "fc00::4"]]

# DC3's prefix has no path but through R2, and no backup: on R2's
# congestion the ingress PE cannot move its traffic, so it holds it to a
# share of its rate (s.4.2 "should reduce the transmission rate of
# corresponding traffic"): a quarter for severe congestion, the packets over
# it CE-marked (never dropped), so that the RoCEv2 senders slow down.
[[srv6.policy]]
prefix = "2001:db8:a::/48"
segments = [["fc00:0:12::1", "fc00:0:1e::d7"]]
elements = [["fc00::2"]]

# Headend of an RDMA multicast tree (draft-li s.5.2 step 1) for the DC host,
# an unmodified RoCE source: its RC packets to the Proxy Address
# 2001:db8:ff::1 leave with an SRH [the first edge node's End.MT SID, the
# Proxy Address], one End.MT TLV per edge node (the receivers and their
# QPNs) and an HMAC TLV under key 9 (s.9; with the H flag Linux looks for).
[[srv6.hmac_key]]
key_id = 9
secret = "dcirouter demo srh secret"
length = 32

[[srv6.policy]]
prefix = "2001:db8:ff::1/128"
segments = [["fc00:0:21::a", "2001:db8:ff::1"]]
hmac_key_id = 9
hmac_h_flag = true

[[srv6.policy.end_mt]]
edge = "fc00:0:21::a"
receivers = [ { address = "2001:db8:21::10", qpn = 0x600 }, { address = "2001:db8:21::11", qpn = 0x601 } ]

[[srv6.policy.end_mt]]
edge = "fc00:0:22::a"
receivers = [ { address = "2001:db8:22::10", qpn = 0x610 } ]

[ingress_pe]
known_nodes = ["fc00::1", "fc00::2", "fc00::3", "fc00::4"]
controller = "2001:db8:1::c"
congestion_holddown_ms = 1000
# The policies' rate is measured over 50 us windows (1 ms by default), so
# that the demo's short replay shows the limit at work.
congestion_rate_window_us = 50

# FANN: this node tells the ingress PE about congestion on its ports.
[fann]
node = "2001:db8:ff::1"   # a loopback: never a forwarding interface's address (s.6)
ingress_pes = ["2001:db8:1::99"]
interval_us = 5000
queue_buildup_bytes = 100000
# Path ID metadata per port (s.5.1.3): the SR path that leaves over it.
path_ids = { wan = "fc00:0:11::1" }

# That ingress PE has an END.E SID: the FANN notifications for it travel
# inside an outer IPv6 header to the SID (draft-hu-acn-rocev2 s.4.2).
# `sources = [prefixes]` would do the same for the Long-haul CNPs of the
# senders behind it; the demo keeps those plain to show both CNP formats.
[[wan_notify]]
ingress_pe = "2001:db8:1::99"
sid = "fc00:0:99::e"

[[route]]
prefix = "fc00:0:99::/48"
via = "2001:db8:1::99"

# A second ingress PE on the DC link sends RoCEv2 through this node inside
# its SRv6 tunnel (outer source: its own address, the default
# `tunnel_sources`). The Long-haul CNPs of that flow go back to the PE it
# came through, inside an outer IPv6 header to its END.E SID, which
# decapsulates them and routes them to the sender (draft-hu s.4.2).
[[wan_notify]]
ingress_pe = "2001:db8:1::98"
sid = "fc00:0:98::e"

[[neighbour]]
ip = "2001:db8:1::98"
mac = "02:00:00:00:01:98"
interface = "dc"

[[route]]
prefix = "fc00:0:98::/48"
via = "2001:db8:1::98"

# The DC behind that PE.
[[route]]
prefix = "2001:db8:8::/48"
via = "2001:db8:1::98"
"#;

pub const DEMO_EAL: &[&str] = &["--no-huge", "--no-pci", "--no-shconf", "-l", "0", "-m", "256", "--log-level", "lib.eal:error"];

pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) -> Result<(), String> {
    let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = PcapWriter::new(f).map_err(|e| format!("{}: {e}", path.display()))?;
    for (i, fr) in frames.iter().enumerate() {
        let ts = Duration::from_micros(i as u64 * 10);
        w.write_packet(&PcapPacket::new(ts, fr.len() as u32, fr)).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// [`read_pcap`] with each frame's timestamp (the time net_pcap sent it).
pub fn read_pcap_timed(path: &Path) -> Result<Vec<(Duration, Vec<u8>)>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r = PcapReader::new(f).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.map_err(|e| format!("{}: {e}", path.display()))?;
        out.push((p.timestamp, p.data.into_owned()));
    }
    Ok(out)
}

pub fn read_pcap(path: &Path) -> Result<Vec<Vec<u8>>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r = PcapReader::new(f).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        out.push(p.map_err(|e| format!("{}: {e}", path.display()))?.data.into_owned());
    }
    Ok(out)
}

/// Frames of one port's replay.
pub type Replay = Vec<Vec<u8>>;

/// The demo's traffic: what the DC host and the WAN sides send, the
/// replays of 'dc', 'wan' and 'wan2'.
pub fn traffic() -> (Replay, Replay, Replay) {
    let host4 = Ipv4Addr::new(10, 0, 1, 2);
    let host6: Ipv6Addr = "2001:db8:1::2".parse().unwrap();
    let r4 = Ipv4Addr::new(10, 0, 1, 1);
    let r6: Ipv6Addr = "2001:db8:1::1".parse().unwrap();
    let to_router = L2 { src: HOST_MAC, dst: ROUTER_DC_MAC };
    // The first packets of a new RoCEv2 QP to hosts on the WAN link the
    // router has not resolved yet: they wait for the ARP reply / NA (which
    // the WAN replay sends after the router has asked) instead of being
    // dropped.
    let mut dc = mld_reports();
    for psn in 0..UNRESOLVED_PACKETS {
        dc.push(gen::roce4(&to_router, host4, UNRESOLVED4, 49300, 0x7a0, psn, 64, 64));
        dc.push(gen::roce6(&to_router, host6, UNRESOLVED6.parse().unwrap(), 49300, 0x7a1, psn, 64, 64));
    }
    dc.extend(dc2_flows(&to_router, b"pe-before"));
    dc.extend(dc2_flows6(&to_router, b"pe6-before"));
    dc.extend([
        // The host resolves the router, then pings it.
        gen::arp_request(HOST_MAC, host4, r4),
        gen::neighbour_solicit(HOST_MAC, host6, r6),
        gen::echo4(&to_router, host4, r4, 0x1234, 1),
        gen::echo6(&to_router, host6, r6, 0x1234, 1),
    ]);
    // RoCEv2 flows to the remote DC over IPv4 and IPv6, 64 B and 1 KiB payloads.
    for i in 0..16u32 {
        let dst4 = Ipv4Addr::new(10, 0, 3, 2 + (i % 4) as u8);
        let dst6: Ipv6Addr = format!("2001:db8:3::{}", 2 + i % 4).parse().unwrap();
        let len = if i % 2 == 0 { 64 } else { 1024 };
        dc.push(gen::roce4(&to_router, host4, dst4, 49152 + i as u16, 0x100 + i, i, len, 64));
        dc.push(gen::roce6(&to_router, host6, dst6, 49152 + i as u16, 0x200 + i, i, len, 64));
    }
    // ECMP: 16 RoCEv2 flows per family (UDP source port = the QP's
    // entropy) to the third site, twice each.
    for pass in 0..2u32 {
        for i in 0..ECMP_FLOWS {
            dc.push(gen::roce4(&to_router, host4, Ipv4Addr::new(10, 0, 7, 5), 50000 + i as u16, 0x900 + i, pass, 64, 64));
            dc.push(gen::roce6(&to_router, host6, "2001:db8:7::5".parse().unwrap(), 50000 + i as u16, 0x980 + i, pass, 64, 64));
        }
    }
    // traceroute-style probes: TTL / hop limit 1 -> Time Exceeded.
    dc.push(gen::udp4(&to_router, host4, Ipv4Addr::new(10, 0, 3, 9), 40000, 33434, b"probe", 1));
    dc.push(gen::udp6(&to_router, host6, "2001:db8:3::9".parse().unwrap(), 40000, 33434, b"probe", 1));
    // No route.
    dc.push(gen::udp4(&to_router, host4, Ipv4Addr::new(192, 0, 2, 1), 40000, 9, b"nowhere", 64));
    dc.push(gen::udp6(&to_router, host6, "2001:db8:99::1".parse().unwrap(), 40000, 9, b"nowhere", 64));
    // Path MTU discovery: a full-size IPv4 packet (DF) into the SRv6
    // tunnel toward DC2, whose outer headers leave less than the WAN's
    // 1500 bytes, and a 1520-byte IPv6 packet over the plain WAN route.
    dc.push(gen::udp4(&to_router, host4, Ipv4Addr::new(10, 0, 9, 2), 40001, 9, &[0x5a; 1500 - 28], 64));
    dc.push(gen::udp6(&to_router, host6, "2001:db8:3::9".parse().unwrap(), 40001, 9, &[0x5a; 1520 - 48], 64));
    // The same IPv4 packet without DF: fragmented to the tunnel MTU, each
    // fragment in its own SRv6 packet (RFC 4459 s.3.4).
    let mut nodf = gen::udp4(&to_router, host4, Ipv4Addr::new(10, 0, 9, 2), 40002, 9, &[0x5b; 1500 - 28], 64);
    nodf[14 + 6] = 0;
    nodf[14 + 10..14 + 12].fill(0);
    let c = dataplane::wire::checksum::checksum(&nodf[14..34]);
    nodf[14 + 10..14 + 12].copy_from_slice(&c.to_be_bytes());
    dc.push(nodf);
    // A 3000-byte ping to the router over IPv4 and IPv6, fragmented by the
    // host for its 1500-byte link: reassembled, answered, the replies
    // fragmented.
    let big: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    dc.extend(gen::fragment4(&gen::echo4_data(&to_router, host4, r4, 0x1234, 2, &big), 1500, 0x3000));
    dc.extend(gen::fragment6(&gen::echo6_data(&to_router, host6, r6, 0x1234, 2, &big), 1500, 0x3001));
    // The multicast group from its source, but on the DC side: not its
    // RPF interface (a loop, or a spoofed source).
    dc.push(gen::udp6(&L2 { src: HOST_MAC, dst: [0x33, 0x33, 0, 0, 1, 0] }, MC_SOURCE.parse().unwrap(), MC_GROUP.parse().unwrap(), 40000, 5000, b"wrong-iif", 64));
    // Malformed: bad IPv4 header checksum, and a runt frame.
    let mut bad = gen::udp4(&to_router, host4, Ipv4Addr::new(10, 0, 3, 2), 1, 2, b"bad", 64);
    bad[24] ^= 0xff;
    dc.push(bad);
    dc.push(vec![0x02, 0xdc, 0, 0, 0, 1, 0x02, 0, 0, 0, 1]);

    // The End.MT receivers answer the group's data packet (PSN 1, from the
    // WAN): R3 first reports a sequence error (ePSN 1), then everyone
    // acknowledges PSN 1; R1 and R2 report congestion; the ingress PE,
    // which is not a receiver, sends an ACK too (dropped, counted).
    dc.extend(mc_responses());

    // Ingress PE, after the failure: the same flows to DC2, which the
    // router now steers onto the backup SID list. The replay is paced by
    // frames for another MAC (dropped as l2-not-for-us) so that the
    // control thread has handled R1's notification (in the WAN pcap, read
    // in the first loop) before these arrive.
    // Among them, the DC host's RC SENDs over the second WAN link, each
    // asking for an ACK (AckReq), whose ACKs come back in that link's
    // replay ACK_LAG_FRAMES frames later (RTT_est from ACKs).
    let filler = gen::udp4(&L2 { src: HOST_MAC, dst: OTHER_MAC }, host4, Ipv4Addr::new(10, 0, 9, 1), 1, 2, b"pace", 64);
    let mut timed = Vec::new();
    let mut paced = 0;
    for &(at, psn) in &ACK_SENDS {
        dc.extend(std::iter::repeat_n(filler.clone(), at - paced));
        paced = at;
        timed.push(dc.len());
        dc.push(gen::roce6(&to_router, host6, ack_host(), ACK_SPORT, ACK_DEST_QP, psn, 1024, 64));
    }
    dc.extend(std::iter::repeat_n(filler, PACING_FRAMES - paced));
    let wan2 = wan2_traffic(&timed);
    dc.extend(dc2_flows(&to_router, b"pe-after"));
    dc.extend(dc2_flows6(&to_router, b"pe6-after"));
    dc.extend(dc3_flows(&to_router));
    // The DC host as the source of an RDMA multicast tree: RC SENDs to the
    // Proxy Address (Designated QPN 1), which the headend policy
    // encapsulates with End.MT TLVs and an HMAC.
    for psn in 1..=HEADEND_SENDS {
        dc.push(gen::roce6(&to_router, host6, HEADEND_PROXY.parse().unwrap_or(Ipv6Addr::UNSPECIFIED), 0xc0de, 1, psn, 256, 64));
    }

    // A RoCEv2 burst (about 800 KB) that overruns the 20 Mb/s WAN port,
    // and in it a flow in the second PE's SRv6 tunnel.
    for i in 0..400u32 {
        dc.push(gen::roce6(&to_router, host6, "2001:db8:3::7".parse().unwrap(), 49200, 0x700, i, 960, 64));
        dc.push(gen::roce4(&to_router, host4, Ipv4Addr::new(10, 0, 3, 7), 49201, 0x701, i, 960, 64));
        dc.push(pe_tunnel_frame(i));
    }

    // From the WAN: RoCEv2 responses coming back to the DC host.
    let from_wan = L2 { src: WAN_GW_MAC, dst: ROUTER_WAN_MAC };
    let mut wan = Vec::new();
    for i in 0..8u32 {
        wan.push(gen::roce4(&from_wan, Ipv4Addr::new(10, 0, 3, 2), host4, 49152, 0x300 + i, i, 32, 63));
        wan.push(gen::roce6(&from_wan, "2001:db8:3::2".parse().unwrap(), host6, 49152, 0x300 + i, i, 32, 63));
    }
    // From the WAN: an SRv6-encapsulated RoCEv2 packet to our End.MT SID
    // with three receivers in the DC; a Long-haul CNP to our END.E SID (for
    // the DC host); Pause and Resume CNPs to our END.C SID.
    wan.push(end_mt_frame());
    wan.push(end_mt_edge_frame());
    wan.push(bad_srh_frame());
    wan.push(to_sid("fc00:0:1::e", &lhcnp(dataplane::wire::lhcnp::Action::RateReduce, 30)));
    wan.push(to_sid("fc00:0:1::c", &lhcnp(dataplane::wire::lhcnp::Action::Pause, 2000)));
    // A second WAN node (fc00:0:9::2) asks for a pause on the same
    // priority: the first node's Resume does not lift it (held), the
    // RESUME goes out once the second node's pause has run out. (Pauses of
    // 2 and 3 ms, both within one PAUSE frame's 65535 quanta at the 10 Gb/s
    // net_pcap reports, and long enough that neither runs out between
    // these consecutive frames on a loaded machine.)
    wan.push(outer6_from("fc00:0:9::2", "fc00:0:1::c", 41, &lhcnp(dataplane::wire::lhcnp::Action::Pause, 3000)));
    wan.push(to_sid("fc00:0:1::c", &lhcnp(dataplane::wire::lhcnp::Action::Resume, 50)));
    // A CNP for the host behind the second DC gateway: END.C pauses the
    // link toward it ('dc2') for 1 ms, and 'dc' not for it.
    wan.push(to_sid("fc00:0:1::c", &lhcnp_to(dataplane::wire::lhcnp::Action::Pause, 1000, DC2_HOST.parse().unwrap())));
    // A tunnel packet its headend fragmented (below a tunnel MTU of 1280),
    // the last fragment first: reassembled at the End.DT6 SID and its
    // inner packet routed to the DC host.
    let mut frags = fragmented_tunnel_packet();
    frags.rotate_right(1);
    wan.extend(frags);
    // Two RoCEv2 packets to the multicast group ff3e::100 (the tree's
    // underlay): replicated onto the DC.
    let to_group = L2 { src: WAN_GW_MAC, dst: [0x33, 0x33, 0, 0, 1, 0] };
    for psn in 0..2 {
        wan.push(gen::roce6(&to_group, MC_SOURCE.parse().unwrap(), MC_GROUP.parse().unwrap(), 49400, 0x1, psn, 128, 64));
    }
    // To the ingress PE: R1 reports its link toward R2 (port 2) down; and a
    // FANN from a node it does not know, which it drops and counts.
    wan.push(fann_link_failure("fc00::1", 2, 7));
    // R2 reports its port 1 (toward the egress PE) severely congested.
    wan.push(fann_congestion("fc00::2", 1, 11));
    wan.push(fann_link_failure("fc00::66", 1, 9));
    // The hosts the DC's first packets wait for answer, after 64 frames for
    // another station (so after the router has asked).
    let pace = gen::udp4(&L2 { src: UNRESOLVED_MAC, dst: OTHER_MAC }, UNRESOLVED4, Ipv4Addr::new(10, 0, 9, 1), 1, 2, b"pace", 64);
    wan.extend(std::iter::repeat_n(pace, WAN_PACING_FRAMES));
    wan.push(gen::arp_reply(UNRESOLVED_MAC, UNRESOLVED4, ROUTER_WAN_MAC, Ipv4Addr::new(10, 0, 2, 1)));
    wan.push(gen::neighbour_advert(&L2 { src: UNRESOLVED_MAC, dst: ROUTER_WAN_MAC }, UNRESOLVED6.parse().unwrap(), "2001:db8:2::1".parse().unwrap()));
    // The groups the DC host reported (the first frames of its replay),
    // after enough frames for another station that the control thread has
    // taken the reports: to MLD_ASM_GROUP from any source, to
    // MLD_SSM_GROUP from the source asked for and from another one.
    let pace = gen::udp4(&L2 { src: WAN_GW_MAC, dst: OTHER_MAC }, Ipv4Addr::new(10, 0, 3, 2), Ipv4Addr::new(10, 0, 9, 1), 1, 2, b"pace", 64);
    wan.extend(std::iter::repeat_n(pace, MLD_PACING_FRAMES));
    for (src, g, tag) in [(MLD_SOURCE, MLD_ASM_GROUP, "mld-any"), (MLD_SOURCE, MLD_SSM_GROUP, "mld-ssm"), (MLD_OTHER_SOURCE, MLD_SSM_GROUP, "mld-not-asked")] {
        let g: Ipv6Addr = g.parse().unwrap();
        let o = g.octets();
        for i in 0..2 {
            wan.push(gen::udp6(&L2 { src: WAN_GW_MAC, dst: [0x33, 0x33, o[12], o[13], o[14], o[15]] }, src.parse().unwrap(), g, 40000, 5000, format!("{tag}-{i}").as_bytes(), 64));
        }
    }
    // RoCEv2 for the host behind the second DC gateway, last (so its
    // PAUSE, the second frame of its replay, is surely in force): the
    // lossless class waits, DSCP 0 passes.
    wan.extend(dc2_roce(&from_wan));
    (dc, wan, wan2)
}

/// RTT_est from ACKs on 'wan2': the receiver behind it.
pub const ACK_HOST: &str = "2001:db8:b::2";
fn ack_host() -> Ipv6Addr {
    ACK_HOST.parse().unwrap_or(Ipv6Addr::UNSPECIFIED)
}
/// The receiver's QP (the data's DestQP) and the DC host's (the ACKs').
pub const ACK_DEST_QP: u32 = 0xb00;
pub const ACK_SENDER_QP: u32 = 0xb01;
const ACK_SPORT: u16 = 49500;
/// The DC host's RC SENDs to [`ACK_HOST`], every one with AckReq: (place
/// among the [`PACING_FRAMES`], PSN). PSN 2 twice: the receiver answers
/// the first with an RNR NAK, and the host sends it again.
pub const ACK_SENDS: [(usize, u32); 5] = [(10_000, 0), (30_000, 1), (50_000, 2), (60_000, 2), (70_000, 3)];
/// The receiver's answers, in the order of [`ACK_SENDS`]: AETH syndrome
/// (0x1f: ACK without credits; 0x2e: RNR NAK, bits 7-5 001, timer code
/// 14) and MSN.
const ACK_ANSWERS: [(u8, u32); 5] = [(0x1f, 1), (0x1f, 2), (0x2e, 2), (0x1f, 3), (0x1f, 4)];
/// Each answer comes this many frames of the WAN2 replay after its data
/// packet's place in the DC replay: the worker reads both 32 frames a
/// loop, so it is about ACK_LAG_FRAMES / 32 loops after the data left.
pub const ACK_LAG_FRAMES: usize = 4000;
pub const ROUTER_WAN2_MAC: [u8; 6] = [0x02, 0xdc, 0, 0, 0, 0x04];
pub const WAN2_GW_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x04, 0x02];

/// The DC host's RoCEv2 data packets to [`ACK_HOST`] with AckReq set in
/// `frames` (Ethernet, IPv6, UDP 4791, BTH).
pub fn ack_requests(frames: &[Vec<u8>]) -> usize {
    let host = ack_host().octets();
    frames.iter().filter(|f| f.len() > 14 + 40 + 8 + 12 && f[12..14] == [0x86, 0xdd] && f[14 + 6] == 17 && f[14 + 24..14 + 40] == host && f[14 + 42..14 + 44] == 4791u16.to_be_bytes() && f[14 + 48 + 8] & 0x80 != 0).count()
}

/// The second WAN link's replay: frames for another station, and the
/// receiver's answers placed [`ACK_LAG_FRAMES`] after the data packets at
/// `timed` (their indices in the DC replay).
fn wan2_traffic(timed: &[usize]) -> Vec<Vec<u8>> {
    let host6: Ipv6Addr = "2001:db8:1::2".parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
    let pace = gen::udp6(&L2 { src: WAN2_GW_MAC, dst: OTHER_MAC }, ack_host(), "2001:db8:4::9".parse().unwrap_or(Ipv6Addr::UNSPECIFIED), 1, 2, b"pace", 64);
    let from = L2 { src: WAN2_GW_MAC, dst: ROUTER_WAN2_MAC };
    let mut wan2 = Vec::new();
    for (&at, (&(_, psn), &(syndrome, msn))) in timed.iter().zip(ACK_SENDS.iter().zip(&ACK_ANSWERS)) {
        wan2.extend(std::iter::repeat_n(pace.clone(), (at + ACK_LAG_FRAMES).saturating_sub(wan2.len())));
        wan2.push(gen::roce6_ack(&from, ack_host(), host6, ACK_SPORT, ACK_SENDER_QP, psn, syndrome, msn, 64));
    }
    wan2
}

/// MLD in the demo: the DC host (fe80::2) listens to this group from any
/// source ...
pub const MLD_ASM_GROUP: &str = "ff0e::200";
/// ... to this one (source-specific multicast, RFC 4607) from
/// [`MLD_SOURCE`] only ...
pub const MLD_SSM_GROUP: &str = "ff3e::201";
/// ... and joins and leaves this one (MLDv1).
pub const MLD_LEFT_GROUP: &str = "ff0e::202";
pub const MLD_SOURCE: &str = "2001:db8:3::2";
pub const MLD_OTHER_SOURCE: &str = "2001:db8:3::4";
const MLD_PACING_FRAMES: usize = 50_000;

/// The DC host's MLD messages: an MLDv2 Report (CHANGE_TO_EXCLUDE({}) for
/// [`MLD_ASM_GROUP`], ALLOW({MLD_SOURCE}) for [`MLD_SSM_GROUP`]), then an
/// MLDv1 Report and Done for [`MLD_LEFT_GROUP`].
fn mld_reports() -> Vec<Vec<u8>> {
    use dataplane::wire::mld::{self, RecordRepr, RecordType};
    let ll: Ipv6Addr = "fe80::2".parse().unwrap();
    let frame = |dst: Ipv6Addr, msg: Vec<u8>| {
        let o = dst.octets();
        let mut f = vec![0x33, 0x33, o[12], o[13], o[14], o[15]];
        f.extend_from_slice(&HOST_MAC);
        f.extend_from_slice(&[0x86, 0xdd]);
        f.extend_from_slice(&mld::packet(ll, dst, &msg));
        f
    };
    let p = |s: &str| -> Ipv6Addr { s.parse().unwrap() };
    vec![
        frame(
            mld::ALL_MLDV2_ROUTERS,
            mld::report_v2_message(&[
                RecordRepr { kind: RecordType::ToExclude, group: p(MLD_ASM_GROUP), sources: vec![] },
                RecordRepr { kind: RecordType::Allow, group: p(MLD_SSM_GROUP), sources: vec![p(MLD_SOURCE)] },
            ]),
        ),
        frame(p(MLD_LEFT_GROUP), mld::v1_message(mld::REPORT_V1, p(MLD_LEFT_GROUP))),
        frame(mld::ALL_ROUTERS, mld::v1_message(mld::DONE_V1, p(MLD_LEFT_GROUP))),
    ]
}

/// What MLD did in the demo, read back from the DC output: (General
/// Queries, specific queries for [`MLD_LEFT_GROUP`], copies to
/// [`MLD_ASM_GROUP`], copies to [`MLD_SSM_GROUP`] from [`MLD_SOURCE`],
/// copies from [`MLD_OTHER_SOURCE`]).
pub fn mld_outcome(dc_out: &[Vec<u8>]) -> (usize, usize, usize, usize, usize) {
    let p = |s: &str| -> [u8; 16] { s.parse::<Ipv6Addr>().map(|a| a.octets()).unwrap_or([0; 16]) };
    let v6 = |f: &&Vec<u8>| f.len() >= 14 + 48 && f[12..14] == [0x86, 0xdd];
    let query = |f: &&Vec<u8>| v6(f) && f.len() >= 14 + 72 && f[14 + 6] == 0 && f[14 + 40] == 58 && f[14 + 48] == dataplane::wire::mld::QUERY;
    let general = dc_out.iter().filter(|f| query(f) && f[14 + 56..14 + 72] == [0; 16]).count();
    let left = dc_out.iter().filter(|f| query(f) && f[14 + 56..14 + 72] == p(MLD_LEFT_GROUP)).count();
    let copies = |src: &str, g: &str| dc_out.iter().filter(|f| v6(f) && f[14 + 6] == 17 && f[14 + 8..14 + 24] == p(src) && f[14 + 24..14 + 40] == p(g)).count();
    (general, left, copies(MLD_SOURCE, MLD_ASM_GROUP), copies(MLD_SOURCE, MLD_SSM_GROUP), copies(MLD_OTHER_SOURCE, MLD_SSM_GROUP))
}

/// The copies of the static route's group ([`MC_GROUP`] from
/// [`MC_SOURCE`]) in the DC output.
pub fn mc_copies(dc_out: &[Vec<u8>]) -> usize {
    let p = |s: &str| -> [u8; 16] { s.parse::<Ipv6Addr>().map(|a| a.octets()).unwrap_or([0; 16]) };
    dc_out.iter().filter(|f| f.len() >= 14 + 40 && f[12..14] == [0x86, 0xdd] && f[14 + 8..14 + 24] == p(MC_SOURCE) && f[14 + 24..14 + 40] == p(MC_GROUP)).count()
}

/// Hosts on the WAN link that the router resolves only when the DC sends
/// to them ([`traffic`]), and the RoCEv2 packets sent to each before it
/// answers.
pub const UNRESOLVED4: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 7);
pub const UNRESOLVED6: &str = "2001:db8:2::7";
pub const UNRESOLVED_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x02, 0x07];
pub const UNRESOLVED_PACKETS: u32 = 4;
const WAN_PACING_FRAMES: usize = 64;

/// What became of the packets to [`UNRESOLVED4`] / [`UNRESOLVED6`], read
/// back from the WAN output: (ARP requests, Neighbor Solicitations for
/// them, their packets sent to the answered MAC in PSN order).
pub fn unresolved_outcome(wan_out: &[Vec<u8>]) -> (usize, usize, usize) {
    let t6: Ipv6Addr = UNRESOLVED6.parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
    let arp = wan_out.iter().filter(|f| f.len() >= 42 && f[12..14] == [8, 6] && f[20..22] == [0, 1] && f[38..42] == UNRESOLVED4.octets()).count();
    let ns = wan_out.iter().filter(|f| f.len() >= 14 + 64 && f[12..14] == [0x86, 0xdd] && f[14 + 40] == 135 && f[14 + 48..14 + 64] == t6.octets()).count();
    let mut psns = Vec::new();
    for f in wan_out.iter().filter(|f| f.len() > 14 + 60 && f[..6] == UNRESOLVED_MAC) {
        let (dst_ok, l4) = match f[12..14] {
            [8, 0] => (f[14 + 16..14 + 20] == UNRESOLVED4.octets(), 14 + 20),
            [0x86, 0xdd] => (f[14 + 24..14 + 40] == t6.octets(), 14 + 40),
            _ => (false, 0),
        };
        if dst_ok {
            // BTH PSN: octets 9..12 of the BTH after the 8-byte UDP header.
            psns.push((f[12] == 8, u32::from_be_bytes([0, f[l4 + 17], f[l4 + 18], f[l4 + 19]])));
        }
    }
    let in_order = [true, false].iter().all(|v4| psns.iter().filter(|p| p.0 == *v4).map(|p| p.1).eq(0..UNRESOLVED_PACKETS));
    (arp, ns, if in_order { psns.len() } else { 0 })
}

/// The group of the demo configuration as its receivers see it.
pub const MC_PROXY: &str = "fc00:0:1::100";
pub const MC_DESIGNATED_QPN: u32 = 0x777;
/// The second group (this node an edge node below the top, hop by hop)
/// and this node's address as a branch of the node above.
pub const MC_EDGE_PROXY: &str = "fc00:0:2::200";
pub const MC_EDGE_DESIGNATED_QPN: u32 = 0x778;
pub const MC_EDGE_NODE: &str = "2001:db8:2::1";

/// A receiver's RC response to the Proxy Address (DestQP = Designated QPN,
/// ICRC and UDP checksum filled), in a frame to the router's DC port.
pub fn mc_response(from: Ipv6Addr, r: dataplane::multicast::Upstream) -> Vec<u8> {
    mc_response_to(MC_PROXY, MC_DESIGNATED_QPN, from, r)
}

/// [`mc_response`] for the group of `proxy` and `designated_qpn`.
pub fn mc_response_to(proxy: &str, designated_qpn: u32, from: Ipv6Addr, r: dataplane::multicast::Upstream) -> Vec<u8> {
    use dataplane::multicast::{build_upstream, upstream_len, GroupConfig, GroupId, Receiver};
    let proxy: Ipv6Addr = proxy.parse().unwrap();
    // The writer of upstream responses with the roles mirrored: from the
    // receiver to the Proxy Address.
    let mirror = GroupConfig::new(GroupId { source: proxy, source_qpn: designated_qpn }, from, 0, vec![Receiver { addr: proxy, qpn: 0 }]);
    let mut f = ROUTER_DC_MAC.to_vec();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0x01, from.octets()[15]]);
    f.extend_from_slice(&[0x86, 0xdd]);
    let at = f.len();
    f.resize(at + upstream_len(&r), 0);
    let n = build_upstream(&r, &mirror, &mut f[at..]).expect("response");
    f.truncate(at + n);
    f
}

/// The demo receivers' responses (see `traffic`).
pub fn mc_responses() -> Vec<Vec<u8>> {
    use dataplane::multicast::{NakKind, Upstream};
    let r = |i: u16| Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0x10 + i);
    let ack = Upstream::Ack { psn: 1, msn: 1, credits: 31 };
    let cnp = Upstream::Cnp { branch: 0, ccount: 0 };
    vec![
        mc_response(r(2), Upstream::Nak { psn: 1, msn: 0, kind: NakKind::PsnSequenceError }),
        mc_response(r(0), ack),
        mc_response(r(1), ack),
        mc_response(r(2), ack),
        mc_response(r(0), cnp),
        mc_response(r(1), cnp),
        mc_response("2001:db8:1::99".parse().unwrap(), ack),
        // The second group (hop by hop): R1 and R2 acknowledge PSN 1; the
        // second ACK completes the minimum, which goes up to the next node.
        mc_response_to(MC_EDGE_PROXY, MC_EDGE_DESIGNATED_QPN, r(0), ack),
        mc_response_to(MC_EDGE_PROXY, MC_EDGE_DESIGNATED_QPN, r(1), ack),
    ]
}

/// Frames for another MAC that pace the DC replay (see [`traffic`]).
pub const PACING_FRAMES: usize = 100_000;
const OTHER_MAC: [u8; 6] = [0x02, 0xee, 0, 0, 0, 0x01];

/// The demo's ECMP gateway that never answers ARP.
pub const SILENT_GW: &str = "10.0.2.9";

/// The ARP requests for [`SILENT_GW`] in the WAN output, and whether the
/// router's FIB has it unreachable (left out of 10.0.12.0/24).
pub fn silent_gateway(wan_out: &[Vec<u8>], fib: &dataplane::tables::Fib) -> (usize, bool) {
    let gw: std::net::Ipv4Addr = SILENT_GW.parse().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED);
    // Ethernet, ARP request (opcode 1), target protocol address at 14 + 24.
    let asked = wan_out.iter().filter(|f| f.len() >= 42 && f[12..14] == [0x08, 0x06] && f[20..22] == [0, 1] && f[38..42] == gw.octets()).count();
    let on_wan = fib.ecmp_gateways().iter().find(|(_, g)| *g == std::net::IpAddr::V4(gw)).map(|(i, _)| *i);
    (asked, on_wan.is_some_and(|i| fib.is_unreachable(i, std::net::IpAddr::V4(gw))))
}

/// The gateways 64 flows to 10.0.12.0/24 take (UDP source ports 49152..),
/// as `route get` names them.
pub fn silent_route_spread(fib: &dataplane::tables::Fib) -> std::collections::BTreeMap<String, usize> {
    let mut on = std::collections::BTreeMap::new();
    for k in 0..64u16 {
        let pkt = crate::gen::udp4(&crate::gen::L2 { src: [0; 6], dst: [0; 6] }, [10, 0, 1, 2].into(), [10, 0, 12, 7].into(), 49152 + k, 4791, b"", 64);
        let gw = fib.route_ip(std::net::IpAddr::V4([10, 0, 12, 7].into()), &pkt[14..]).and_then(|h| fib.hop(h)).and_then(|nh| nh.gateway);
        *on.entry(gw.map_or_else(|| "-".to_string(), |g| g.to_string())).or_insert(0) += 1;
    }
    on
}

/// RoCEv2 flows per address family to the demo's ECMP route.
pub const ECMP_FLOWS: u32 = 16;

/// Of the frames to the demo's ECMP destinations (10.0.7.0/24,
/// 2001:db8:7::/48): how many flows (family, UDP source port) left by
/// each gateway MAC, and how many flows took more than one.
pub fn ecmp_split(frames: &[Vec<u8>]) -> (std::collections::BTreeMap<String, usize>, usize) {
    let mut flows: std::collections::BTreeMap<(bool, u16), std::collections::BTreeSet<[u8; 6]>> = Default::default();
    for f in frames {
        let (v6, sport) = match (f.get(12..14), f.len()) {
            (Some([0x08, 0x00]), n) if n >= 14 + 28 && f[14 + 16..14 + 19] == [10, 0, 7] && f[14 + 9] == 17 => (false, u16::from_be_bytes([f[34], f[35]])),
            (Some([0x86, 0xdd]), n) if n >= 14 + 48 && f[14 + 24..14 + 30] == [0x20, 0x01, 0x0d, 0xb8, 0, 7] && f[14 + 6] == 17 => (true, u16::from_be_bytes([f[54], f[55]])),
            _ => continue,
        };
        flows.entry((v6, sport)).or_default().insert(f[0..6].try_into().unwrap_or([0; 6]));
    }
    let mut per = std::collections::BTreeMap::new();
    for macs in flows.values() {
        for m in macs {
            *per.entry(Mac(*m).to_string()).or_insert(0) += 1;
        }
    }
    (per, flows.values().filter(|m| m.len() > 1).count())
}

/// Eight UDP flows from the DC host to DC2 (10.0.9.2..9), payload `tag`.
fn dc2_flows(to_router: &L2, tag: &[u8]) -> Vec<Vec<u8>> {
    (0..8u8).map(|i| gen::udp4(to_router, Ipv4Addr::new(10, 0, 1, 2), Ipv4Addr::new(10, 0, 9, 2 + i), 20000 + u16::from(i), 7000, tag, 64)).collect()
}

/// ECN-capable (ECT(0)) UDP packets from the DC host to DC3's prefix
/// (2001:db8:a::2..9), after R2's congestion notification: the ingress PE
/// holds them to a share of their rate.
pub const DC3_PACKETS: usize = 1200;
fn dc3_flows(to_router: &L2) -> Vec<Vec<u8>> {
    let host6: Ipv6Addr = "2001:db8:1::2".parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
    (0..DC3_PACKETS)
        .map(|i| {
            let mut f = gen::udp6(to_router, host6, Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 2 + (i % 8) as u16), 21000 + (i % 8) as u16, 7000, b"dc3", 64);
            f[14 + 1] |= 0x20;
            f
        })
        .collect()
}

/// Eight UDP flows from the DC host to DC2's IPv6 prefix
/// (2001:db8:9::2..9), payload `tag`.
fn dc2_flows6(to_router: &L2, tag: &[u8]) -> Vec<Vec<u8>> {
    let host6: Ipv6Addr = "2001:db8:1::2".parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
    (0..8u16).map(|i| gen::udp6(to_router, host6, Ipv6Addr::new(0x2001, 0xdb8, 9, 0, 0, 0, 0, 2 + i), 20000 + i, 7000, tag, 64)).collect()
}

/// A FANN congestion notification (ICMPv6, Sub-Type 3: severe) from `node`
/// about its port `port`, to the router's WAN address.
pub fn fann_congestion(node: &str, port: u32, id: u32) -> Vec<u8> {
    use dataplane::wire::fann::{event, Metadata};
    fann_event(node, event::CONGESTION, 3, id, Metadata { egress_port_id: Some(port), egress_tx_utilization: Some(95), ..Default::default() })
}

/// A FANN link-failure notification (ICMPv6) from `node` about its port
/// `port`, to the router's WAN address.
pub fn fann_link_failure(node: &str, port: u32, id: u32) -> Vec<u8> {
    use dataplane::wire::fann::{event, Metadata};
    fann_event(node, event::LINK_FAILURE, 0, id, Metadata { egress_port_id: Some(port), link_down: Some(true), ..Default::default() })
}

/// The host behind the second DC gateway (port 'dc2').
pub const DC2_HOST: &str = "2001:db8:6::2";
pub const DC2_HOST_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x06, 0x02];
pub const ROUTER_DC2_MAC: [u8; 6] = [0x02, 0xdc, 0x00, 0x00, 0x00, 0x03];

/// The second DC gateway's own MAC (the source of its PFC frames).
pub const DC2_GATEWAY_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x06, 0x01];
/// The WAN source of the RoCEv2 traffic to [`DC2_HOST`] that the gateway's
/// PFC PAUSE holds (DSCP 26) or lets pass (DSCP 0).
pub const DC2_SENDER: &str = "2001:db8:3::6";
/// RoCEv2 packets of each class to [`DC2_HOST`].
pub const DC2_PFC_PACKETS: u32 = 8;

/// What comes in from the second DC gateway: a ping from the host behind
/// it to the router's address on that link, and the gateway's PFC PAUSE
/// for priority 3, 65535 quanta (`[port.pfc]` of 'dc2').
pub fn dc2_traffic() -> Vec<Vec<u8>> {
    use dataplane::wire::pfc::{FrameRepr, MacControlRepr, PfcRepr, DST_MAC};
    let l2 = L2 { src: DC2_HOST_MAC, dst: ROUTER_DC2_MAC };
    let mut pause = vec![0u8; 60];
    let _ = FrameRepr { dst: DST_MAC, src: DC2_GATEWAY_MAC, control: MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff)) }.emit(&mut pause);
    vec![gen::echo6(&l2, DC2_HOST.parse().unwrap(), "2001:db8:6::1".parse().unwrap(), 0x62, 1), pause]
}

/// RoCEv2 from a WAN sender to the host behind the second gateway,
/// alternately DSCP 26 (priority 3, QP 0x626) and DSCP 0 (QP 0x600), both
/// ECT(0); the traffic class is not covered by the ICRC.
fn dc2_roce(from_wan: &L2) -> Vec<Vec<u8>> {
    let (src, dst): (Ipv6Addr, Ipv6Addr) = (DC2_SENDER.parse().unwrap(), DC2_HOST.parse().unwrap());
    let mut v = Vec::new();
    for psn in 0..DC2_PFC_PACKETS {
        for (qp, dscp) in [(0x626u32, 26u8), (0x600, 0)] {
            let mut f = gen::roce6(from_wan, src, dst, 49500, qp, psn, 256, 64);
            let tc = dscp << 2 | 2;
            f[14] = 0x60 | tc >> 4;
            f[15] = (f[15] & 0x0f) | tc << 4;
            v.push(f);
        }
    }
    v
}

/// The RoCEv2 packets to [`DC2_HOST`] in `dc2_out` with their pcap times:
/// (DSCP 26 times, DSCP 0 times).
pub fn dc2_roce_times(dc2_out: &[(Duration, Vec<u8>)]) -> (Vec<Duration>, Vec<Duration>) {
    let host: Ipv6Addr = DC2_HOST.parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
    let ours = |f: &[u8]| f.len() > 14 + 48 + 12 && f[12..14] == [0x86, 0xdd] && f[14 + 24..14 + 40] == host.octets() && f[14 + 6] == 17 && f[14 + 42..14 + 44] == [0x12, 0xb7];
    let dscp = |f: &[u8]| ((f[14] & 0x0f) << 2) | (f[15] >> 6);
    let (mut held, mut passed) = (Vec::new(), Vec::new());
    for (t, f) in dc2_out.iter().filter(|(_, f)| ours(f)) {
        match dscp(f) {
            26 => held.push(*t),
            0 => passed.push(*t),
            _ => {}
        }
    }
    (held, passed)
}

/// A FANN event (ICMPv6, Code 0) from `node`, sent from its own address to
/// the router's WAN address through the WAN gateway.
fn fann_event(node: &str, event_type: u8, event_subtype: u8, id: u32, metadata: dataplane::wire::fann::Metadata) -> Vec<u8> {
    use dataplane::wire::fann::{MessageRepr, CODE_EVENT};
    let node: Ipv6Addr = node.parse().expect("node");
    let m = MessageRepr { hop_limit: 8, event_type, event_subtype, event_id: id, timestamp: 1_767_225_600_000_000, originating_node: node, metadata };
    let ip = dataplane::fann::notification_packet(CODE_EVENT, &m, &node, &"2001:db8:2::1".parse().unwrap(), &dataplane::wire::params::Params::DEFAULT, false);
    let mut f = ROUTER_WAN_MAC.to_vec();
    f.extend_from_slice(&WAN_GW_MAC);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&ip);
    f
}

/// An ICMPv6 Long-haul CNP from a WAN node (fc00:0:9::1) to the DC host.
pub fn lhcnp(action: dataplane::wire::lhcnp::Action, parameter: u16) -> Vec<u8> {
    lhcnp_to(action, parameter, Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2))
}

/// [`lhcnp`] to the sender `dst`.
pub fn lhcnp_to(action: dataplane::wire::lhcnp::Action, parameter: u16, dst: Ipv6Addr) -> Vec<u8> {
    use dataplane::wire::lhcnp::{emit_icmpv6_packet, CnpInfo, Icmpv6LhCnpRepr, MetricType, Objects};
    let repr = Icmpv6LhCnpRepr {
        code: 0,
        info: CnpInfo { congestion_level: 180, action, parameter, source_qp: 0x100, metric_type: MetricType::QueueDepthKb, metric_value: 130000 },
        objects: Objects::NONE,
    };
    let mut buf = vec![0u8; 256];
    let src: Ipv6Addr = "fc00:0:9::1".parse().unwrap();
    let n = emit_icmpv6_packet(&src.octets(), &dst.octets(), 64, &repr, &dataplane::wire::params::Params::DEFAULT, &mut buf).expect("LH-CNP");
    buf.truncate(n);
    buf
}

fn outer6(dst: &str, nh: u8, payload: &[u8]) -> Vec<u8> {
    outer6_from("fc00:0:9::1", dst, nh, payload)
}

fn outer6_from(src: &str, dst: &str, nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = ROUTER_WAN_MAC.to_vec();
    f.extend_from_slice(&WAN_GW_MAC);
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    f.push(nh);
    f.push(64);
    f.extend_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(&dst.parse::<Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(payload);
    f
}

/// The ingress PE on the DC link whose SRv6 tunnel carries [`TUNNEL_SENDER`]'s
/// flow through the router (`[[wan_notify]]` with its END.E SID
/// [`TUNNEL_PE_SID`]).
pub const TUNNEL_PE: &str = "2001:db8:1::98";
pub const TUNNEL_PE_SID: &str = "fc00:0:98::e";
pub const TUNNEL_SENDER: &str = "2001:db8:8::2";

/// RoCEv2 (960 B payload, PSN `psn`) from [`TUNNEL_SENDER`] to
/// 2001:db8:3::8, in [`TUNNEL_PE`]'s SRv6 tunnel to the egress PE's SID
/// fc00:0:e::1 (SRH of one segment), from the PE's MAC to the router's.
pub fn pe_tunnel_frame(psn: u32) -> Vec<u8> {
    use dataplane::wire::srh::SrhRepr;
    let egress: Ipv6Addr = "fc00:0:e::1".parse().unwrap();
    let inner = gen::roce6(&L2 { src: [0; 6], dst: [0; 6] }, TUNNEL_SENDER.parse().unwrap(), "2001:db8:3::8".parse().unwrap(), 49210, 0x710, psn, 960, 64);
    let mut srh = SrhRepr::for_path(41, &[egress], vec![]).to_bytes().expect("SRH");
    srh.extend_from_slice(&inner[14..]);
    let mut f = ROUTER_DC_MAC.to_vec();
    f.extend_from_slice(&[2, 0, 0, 0, 1, 0x98, 0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend_from_slice(&(srh.len() as u16).to_be_bytes());
    f.extend_from_slice(&[43, 64]);
    f.extend_from_slice(&TUNNEL_PE.parse::<Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(&egress.octets());
    f.extend(srh);
    f
}

/// The Long-haul CNPs in `frames` inside an outer IPv6 header to `sid`
/// whose inner CNP goes to `sender`.
pub fn cnps_toward_sid(frames: &[Vec<u8>], sid: &str, sender: &str) -> usize {
    let (sid, sender) = (sid.parse::<Ipv6Addr>().map(|a| a.octets()), sender.parse::<Ipv6Addr>().map(|a| a.octets()));
    let (Ok(sid), Ok(sender)) = (sid, sender) else { return 0 };
    frames
        .iter()
        .filter(|f| f.len() > 54 + 41 && f[12..14] == [0x86, 0xdd] && f[14 + 6] == 41 && f[14 + 24..14 + 40] == sid && f[54 + 6] == 58 && f[54 + 24..54 + 40] == sender && f[54 + 40] == dataplane::wire::params::Params::DEFAULT.icmpv6_lhcnp_type)
        .count()
}

/// A frame from the WAN gateway carrying `inner` in an outer IPv6 header to `sid`.
pub fn to_sid(sid: &str, inner: &[u8]) -> Vec<u8> {
    outer6(sid, 41, inner)
}

/// The End.DT6 SID of the demo, the exit of a tunnel whose packet arrives
/// fragmented.
pub const DT6_SID: &str = "fc00:0:1::d6";
/// The fragments of [`fragmented_tunnel_packet`].
pub const DT6_FRAGMENTS: usize = 2;

/// The inner packets of [`fragmented_tunnel_packet`] in `dc_out`: whole
/// (1400 octets of IPv6), from the WAN host's port 40100, to the DC host.
pub fn tunnel_exit_outcome(dc_out: &[Vec<u8>]) -> usize {
    let host: Ipv6Addr = "2001:db8:1::2".parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
    dc_out.iter().filter(|f| f.len() == 14 + 1400 && f[12..14] == [0x86, 0xdd] && f[14 + 6] == 17 && f[14 + 24..14 + 40] == host.octets() && f[54..56] == 40100u16.to_be_bytes()).count()
}

/// A 1400-octet UDP/IPv6 packet from a WAN host to the DC host, in a tunnel
/// to [`DT6_SID`] whose headend sent it as [`DT6_FRAGMENTS`] fragments.
pub fn fragmented_tunnel_packet() -> Vec<Vec<u8>> {
    let inner = gen::udp6(&L2 { src: [0; 6], dst: [0; 6] }, "2001:db8:3::2".parse().unwrap(), "2001:db8:1::2".parse().unwrap(), 40100, 5001, &[0x7e; 1352], 64);
    tunnel_fragments(&to_sid(DT6_SID, &inner[14..]), 704, 0xd6d6_0001)
}

/// An SRv6 frame (from the WAN) to the END.E SID whose SRH says Segments
/// Left 5 of a one-segment list: the router answers with an ICMPv6
/// Parameter Problem (code 0) pointing at the Segments Left field.
pub fn bad_srh_frame() -> Vec<u8> {
    use dataplane::wire::srh::SrhRepr;
    let sid: Ipv6Addr = "fc00:0:1::e".parse().unwrap();
    let mut srh = SrhRepr::for_path(41, &[sid], vec![]).to_bytes().expect("SRH");
    srh[3] = 5;
    let inner = gen::udp6(&L2 { src: [0; 6], dst: [0; 6] }, "fc00:0:9::1".parse().unwrap(), "2001:db8:1::2".parse().unwrap(), 40000, 9, b"bad-srh", 64);
    srh.extend_from_slice(&inner[14..]);
    outer6("fc00:0:1::e", 43, &srh)
}

/// An SRv6 frame (from the WAN) to the End.MT SID fc00:0:1::a carrying a 1 KiB
/// RoCEv2 packet and an End.MT TLV with receivers 2001:db8:1::10..12
/// (QPNs 0x500..0x502).
pub fn end_mt_frame() -> Vec<u8> {
    end_mt_frame_for("fc00:0:1::a", (0..3u32).map(|i| (format!("2001:db8:1::{:x}", 0x10 + i), 0x500 + i)), "2001:db8:3::2", MC_PROXY, MC_DESIGNATED_QPN)
}

/// The second group's data (source 2001:db8:3::3, PSN 1) to the End.MT SID
/// fc00:0:1::b, whose TLV names the receivers the group learns:
/// 2001:db8:1::10 and ::11 (QPNs 0x510, 0x511).
pub fn end_mt_edge_frame() -> Vec<u8> {
    end_mt_frame_for("fc00:0:1::b", (0..2u32).map(|i| (format!("2001:db8:1::{:x}", 0x10 + i), 0x510 + i)), "2001:db8:3::3", MC_EDGE_PROXY, MC_EDGE_DESIGNATED_QPN)
}

fn end_mt_frame_for(sid: &str, receivers: impl Iterator<Item = (String, u32)>, source: &str, proxy: &str, designated_qpn: u32) -> Vec<u8> {
    use dataplane::wire::srh::{EndMtReceiver, EndMtRepr, SrhRepr, TlvRepr};
    let sid_a: Ipv6Addr = sid.parse().unwrap();
    let receivers = receivers.map(|(a, qpn)| EndMtReceiver { address: a.parse().unwrap(), qpn }).collect();
    let tlv = TlvRepr::EndMt(EndMtRepr { tlv_type: dataplane::wire::params::Params::DEFAULT.srh_tlv_end_mt, edge_node_address: sid_a, receivers });
    let srh = SrhRepr::for_path(41, &[sid_a, "fc00:0:2::1".parse().unwrap()], vec![tlv]).to_bytes().expect("SRH");
    // The inner RoCEv2 packet from the source to the group's Proxy Address.
    let inner = gen::roce6(&L2 { src: [0; 6], dst: [0; 6] }, source.parse().unwrap(), proxy.parse().unwrap(), 49300, designated_qpn, 1, 1024, 64);
    let mut payload = srh;
    payload.extend_from_slice(&inner[14..]);
    outer6(sid, 43, &payload)
}

/// One line describing a frame the router sent.
pub fn describe(f: &[u8]) -> String {
    if f.len() < 14 {
        return format!("runt ({} bytes)", f.len());
    }
    let et = u16::from_be_bytes([f[12], f[13]]);
    let p = &f[14..];
    match et {
        0x0806 if p.len() >= 28 => {
            let op = u16::from_be_bytes([p[6], p[7]]);
            let spa = Ipv4Addr::new(p[14], p[15], p[16], p[17]);
            let tpa = Ipv4Addr::new(p[24], p[25], p[26], p[27]);
            if op == 2 { format!("ARP reply {spa} is-at {}", dataplane::wire::ethernet::Mac([p[8], p[9], p[10], p[11], p[12], p[13]])) } else { format!("ARP who-has {tpa} tell {spa}") }
        }
        0x0800 if p.len() >= 20 => {
            let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
            let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
            let hl = usize::from(p[0] & 0xf) * 4;
            let later = u16::from_be_bytes([p[6], p[7]]) & 0x1fff != 0;
            let what = match p[9] {
                n if later => format!("proto {n} data"),
                1 if p.len() > hl => match p[hl] {
                    0 => "ICMP echo reply".to_string(),
                    8 => "ICMP echo request".to_string(),
                    11 => "ICMP time exceeded".to_string(),
                    3 if p.len() >= hl + 8 && p[hl + 1] == 4 => format!("ICMP fragmentation needed, next-hop MTU {}", u16::from_be_bytes([p[hl + 6], p[hl + 7]])),
                    3 if p.len() > hl + 1 && p[hl + 1] == 0 => "ICMP destination unreachable, net unreachable".to_string(),
                    3 if p.len() > hl + 1 => format!("ICMP destination unreachable (code {})", p[hl + 1]),
                    t => format!("ICMP type {t}"),
                },
                17 if p.len() >= hl + 20 && u16::from_be_bytes([p[hl + 2], p[hl + 3]]) == 4791 && p[hl + 8] == 0x81 && p[hl + 12] & 0x20 != 0 => "Long-haul CNP (RoCEv2, E=1)".to_string(),
                17 if p.len() >= hl + 20 && u16::from_be_bytes([p[hl + 2], p[hl + 3]]) == 4791 => format!("RoCEv2 DestQP {:#x}{}", u32::from_be_bytes([0, p[hl + 13], p[hl + 14], p[hl + 15]]), if p[1] & 3 == 3 { " CE" } else { "" }),
                17 => "UDP".to_string(),
                n => format!("proto {n}"),
            };
            format!("IPv4 {src} -> {dst} ttl {} {what}{}", p[8], ipv4_fragment(p))
        }
        0x86dd if p.len() >= 40 => {
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&p[8..24]).unwrap());
            let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&p[24..40]).unwrap());
            let what = match p[6] {
                44 if p.len() >= 48 => {
                    let fo = u16::from_be_bytes([p[42], p[43]]);
                    let kind = if fo & 0xfff8 == 0 && p[40] == 58 && p.len() > 48 && p[48] == 129 { " (ICMPv6 echo reply)" } else { "" };
                    format!("fragment{kind} of {} octets at offset {}{}, next header {}", p.len() - 48, fo & 0xfff8, if fo & 1 != 0 { ", M" } else { "" }, p[40])
                }
                58 if p.len() > 40 && p[40] == dataplane::wire::params::Params::DEFAULT.icmpv6_lhcnp_type => "Long-haul CNP (ICMPv6)".to_string(),
                51 => match dataplane::wire::ipv6::upper_layer(p) {
                    Some((n, at)) if n.0 == 58 && p.get(at) == Some(&dataplane::wire::params::Params::DEFAULT.icmpv6_lhcnp_type) => format!("Long-haul CNP (ICMPv6) with IPsec AH (SPI {:#x})", u32::from_be_bytes([p[44], p[45], p[46], p[47]])),
                    Some((n, _)) => format!("IPsec AH, next header {}", n.0),
                    None => "IPsec AH (malformed)".to_string(),
                },
                58 if p.len() > 48 && p[40] == dataplane::wire::params::Params::DEFAULT.icmpv6_fann_type => {
                    let mut md = String::new();
                    if let Ok(pk) = dataplane::wire::fann::Packet::new_checked(&p[40..]) {
                        let m = pk.message();
                        if m.check_len().is_ok() {
                            if let Some(f) = m.flow_id() {
                                md += &format!(", Flow ID {} port {} -> {} udp/{}", f.src, f.src_port, f.dst, f.dst_port);
                            }
                            if let Some(id) = m.path_id() {
                                md += &format!(", Path ID {}", Ipv6Addr::from(id));
                            }
                        }
                    }
                    format!("FANN {} (event type {} sub-type {}){md}", if p[41] == 1 { "recovery" } else { "event" }, p[47], p[48])
                }
                58 if p.len() > 40 => match p[40] {
                    128 => "ICMPv6 echo request".to_string(),
                    129 => "ICMPv6 echo reply".to_string(),
                    3 => "ICMPv6 time exceeded".to_string(),
                    1 if p.len() > 41 && p[41] == 0 => "ICMPv6 destination unreachable, no route".to_string(),
                    1 if p.len() > 41 => format!("ICMPv6 destination unreachable (code {})", p[41]),
                    2 if p.len() >= 48 => format!("ICMPv6 packet too big, MTU {}", u32::from_be_bytes([p[44], p[45], p[46], p[47]])),
                    4 if p.len() >= 48 => format!("ICMPv6 parameter problem, code {}{}, pointer {}", p[41], match p[41] {
                        0 => " (erroneous header field)",
                        4 => " (SR upper-layer header error)",
                        _ => "",
                    }, u32::from_be_bytes([p[44], p[45], p[46], p[47]])),
                    135 => "ICMPv6 neighbor solicitation".to_string(),
                    136 => "ICMPv6 neighbor advertisement".to_string(),
                    t => format!("ICMPv6 type {t}"),
                },
                17 if p.len() >= 48 + 16 && u16::from_be_bytes([p[42], p[43]]) == 4791 && p[48] == 0x11 => {
                    let psn = u32::from_be_bytes([0, p[57], p[58], p[59]]);
                    let kind = match p[60] >> 5 {
                        0 => "ACK",
                        3 => "NAK",
                        1 => "RNR NAK",
                        _ => "reserved",
                    };
                    format!("RC {kind} PSN {psn} DestQP {:#x}", u32::from_be_bytes([0, p[53], p[54], p[55]]))
                }
                17 if p.len() >= 48 + 12 && u16::from_be_bytes([p[42], p[43]]) == 4791 && p[48] == 0x81 && p[52] & 0x20 == 0 => {
                    format!("RoCEv2 CNP DestQP {:#x}", u32::from_be_bytes([0, p[53], p[54], p[55]]))
                }
                17 if p.len() >= 48 + 12 && u16::from_be_bytes([p[42], p[43]]) == 4791 => format!("RoCEv2 DestQP {:#x}{}", u32::from_be_bytes([0, p[53], p[54], p[55]]), if (p[1] >> 4) & 3 == 3 { " CE" } else { "" }),
                17 => "UDP".to_string(),
                43 if p.len() >= 48 && p[42] == 4 => {
                    // H.Encaps: the SRH's segment list, first SID first.
                    let n = usize::from(p[44]) + 1;
                    let sids: Vec<String> = (0..n).rev().filter_map(|i| p.get(48 + 16 * i..64 + 16 * i)).map(|b| Ipv6Addr::from(<[u8; 16]>::try_from(b).unwrap_or([0; 16])).to_string()).collect();
                    let inner = 48 + 16 * n;
                    if p[40] == 41 {
                        let idst = p.get(inner + 24..inner + 40).map(|b| Ipv6Addr::from(<[u8; 16]>::try_from(b).unwrap_or([0; 16])).to_string()).unwrap_or_default();
                        format!("SRv6 H.Encaps SID list [{}] (inner IPv6 to {idst})", sids.join(", "))
                    } else {
                        let idst = p.get(inner + 16..inner + 20).map(|b| Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string()).unwrap_or_default();
                        format!("SRv6 H.Encaps SID list [{}] (inner IPv4 to {idst}{})", sids.join(", "), ipv4_fragment(p.get(inner..).unwrap_or(&[])))
                    }
                }
                41 if p.len() >= 80 => {
                    // A notification wrapped toward an END.C / END.E SID.
                    let mut inner = f[..14].to_vec();
                    inner.extend_from_slice(&p[40..]);
                    format!("IPv6-in-IPv6 to SID: {}", describe(&inner))
                }
                0 if p.len() >= 48 + 8 && p[40] == 58 && p[48] == dataplane::wire::mld::QUERY => {
                    let g = Ipv6Addr::from(<[u8; 16]>::try_from(&p[56..72.min(p.len())]).unwrap_or([0; 16]));
                    let mrd = dataplane::wire::mld::decode_max_resp(u16::from_be_bytes([p[52], p[53]]));
                    if g.is_unspecified() { format!("MLDv2 General Query (Router Alert), max response {mrd} ms") } else { format!("MLDv2 Multicast Address Specific Query for {g} (Router Alert), max response {mrd} ms") }
                }
                n => format!("next header {n}"),
            };
            format!("IPv6 {src} -> {dst} hlim {} {what}", p[7])
        }
        0x8808 if p.len() >= 20 && p[0..2] == [0x01, 0x01] => {
            let q = u16::from_be_bytes([p[4 + 2 * 3], p[5 + 2 * 3]]);
            if q == 0 { "PFC RESUME priority 3".to_string() } else { format!("PFC PAUSE priority 3, {q} quanta") }
        }
        _ => format!("ethertype {et:#06x}"),
    }
}

/// The PFC frames (MAC Control, opcode 0x0101) in a pcap: (PAUSE, RESUME),
/// a RESUME being a frame whose priority-3 quanta are 0.
pub fn pfc_frames(frames: &[Vec<u8>]) -> (usize, usize) {
    let q: Vec<u16> = frames.iter().filter(|f| f.len() >= 60 && f[12..14] == [0x88, 0x08] && f[14..16] == [0x01, 0x01]).map(|f| u16::from_be_bytes([f[14 + 4 + 6], f[14 + 5 + 6]])).collect();
    (q.iter().filter(|&&x| x > 0).count(), q.iter().filter(|&&x| x == 0).count())
}

/// ", fragment of N octets at offset O[, MF]" for an IPv4 fragment
/// (`ip` starts at its header), empty otherwise.
fn ipv4_fragment(ip: &[u8]) -> String {
    let Some(h) = ip.get(..20) else { return String::new() };
    let fo = u16::from_be_bytes([h[6], h[7]]);
    if fo & 0x3fff == 0 {
        return String::new();
    }
    let len = usize::from(u16::from_be_bytes([h[2], h[3]])).saturating_sub(usize::from(h[0] & 0xf) * 4);
    format!(", fragment of {len} octets at offset {}{}", (fo & 0x1fff) * 8, if fo & 0x2000 != 0 { ", MF" } else { "" })
}

fn summarize(frames: &[Vec<u8>]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for f in frames {
        let d = describe(f);
        // Group RoCEv2 data by family and direction, keep the rest verbatim.
        let key = if d.contains("RoCEv2 DestQP") {
            let head = d.split(" RoCEv2").next().unwrap_or(&d);
            let head = head.split(" ttl").next().unwrap_or(head).split(" hlim").next().unwrap_or(head);
            format!("{head} RoCEv2 data{}", if d.ends_with(" CE") { ", CE-marked" } else { "" })
        } else if d.contains("SRv6 H.Encaps") && !d.contains("fragment") {
            // Group the encapsulated flows by SID list; the router's own
            // encapsulations come from its H.Encaps source.
            let head = d.split(" (inner").next().unwrap_or(&d);
            if d.starts_with(&format!("IPv6 {HEADEND_SRC} ")) {
                format!("{head} (this router's H.Encaps, inner {})", if d.contains("inner IPv6") { "IPv6" } else { "IPv4" })
            } else {
                format!("{} (in transit: another PE's SRv6 tunnel)", head.replacen("SRv6 H.Encaps SID list", "SRv6 SID list", 1))
            }
        } else if d.contains("Long-haul CNP") {
            // Group without the hop limits / TTLs (also an inner header's).
            d.split(' ').fold((String::new(), false), |(mut o, skip), w| {
                if skip {
                    return (o, false);
                }
                if w == "hlim" || w == "ttl" {
                    return (o, true);
                }
                if !o.is_empty() {
                    o.push(' ');
                }
                o.push_str(w);
                (o, false)
            }).0
        } else {
            d
        };
        match counts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => counts.push((key, 1)),
        }
    }
    let mut o = String::new();
    for (k, n) in counts {
        let _ = writeln!(o, "    {n:>3} x {k}");
    }
    o
}

/// Wireshark dissectors (Lua) for the Long-haul CNP, FANN and the End.MT
/// TLV: the demo leaves a copy next to its pcaps.
pub const WIRESHARK_DISSECTOR: &str = include_str!("../../tools/wireshark/dcirouter.lua");

pub fn run(out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let dir: PathBuf = out.canonicalize().map_err(|e| e.to_string())?;
    let (dc, wan, wan2) = traffic();
    let dc2 = dc2_traffic();
    write_pcap(&dir.join("dc-in.pcap"), &dc)?;
    write_pcap(&dir.join("dc2-in.pcap"), &dc2)?;
    write_pcap(&dir.join("wan-in.pcap"), &wan)?;
    write_pcap(&dir.join("wan2-in.pcap"), &wan2)?;
    let wan2_pacing = wan2.iter().filter(|f| f.get(..6) == Some(&OTHER_MAC[..])).count();
    let text = DEFAULT_CONFIG.replace("{dir}", &dir.display().to_string());
    std::fs::write(dir.join("demo.toml"), &text).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("dcirouter.lua"), WIRESHARK_DISSECTOR).map_err(|e| e.to_string())?;
    let cfg = config::load_str(&text)?;
    let holddown_ms = cfg.ingress_pe.as_ref().map_or(0, |p| p.failover.holddown_ns / 1_000_000);
    let wan2_start = cfg.ports.iter().find(|p| p.name == "wan2").and_then(|p| p.congestion.as_ref()).map_or((0, 0), |c| (c.params.rtt_est_ns, c.params.k_max()));
    println!("== dcirouter demo: DC ports 'dc' (10.0.1.1/24, 2001:db8:1::1/64) and 'dc2' (10.0.6.1/24, 2001:db8:6::1/64, a second DC gateway), WAN port 'wan' (10.0.2.1/24, 2001:db8:2::1/64)");
    println!("   input: {} frames from the DC host, {} from the host behind the second gateway, {} from the WAN (written to {})", dc.len(), dc2.len(), wan.len(), dir.display());
    let eal: Vec<String> = DEMO_EAL.iter().map(|s| s.to_string()).collect();
    let opts = RunOptions { exit_when_idle: Some(Duration::from_millis(500)), duration: Some(Duration::from_secs(30)), ctl_socket: None, quiet: false };
    let rep = router::run(cfg, &eal, &opts)?;
    let dc_out = read_pcap(&dir.join("dc-out.pcap"))?;
    let wan_out = read_pcap(&dir.join("wan-out.pcap"))?;
    let wan2_out = read_pcap(&dir.join("wan2-out.pcap"))?;
    let dc2_timed = read_pcap_timed(&dir.join("dc2-out.pcap"))?;
    let dc2_out: Vec<Vec<u8>> = dc2_timed.iter().map(|(_, f)| f.clone()).collect();
    println!("\n== what the router sent");
    println!("  on 'dc' ({}/dc-out.pcap, {} frames):", dir.display(), dc_out.len());
    print!("{}", summarize(&dc_out));
    println!("  on 'dc2' ({}/dc2-out.pcap, {} frames):", dir.display(), dc2_out.len());
    print!("{}", summarize(&dc2_out));
    println!("  on 'wan' ({}/wan-out.pcap, {} frames):", dir.display(), wan_out.len());
    print!("{}", summarize(&wan_out));
    println!("  on 'wan2' ({}/wan2-out.pcap, {} frames):", dir.display(), wan2_out.len());
    print!("{}", summarize(&wan2_out));
    let c = &rep.counters;
    println!("\n== in short");
    println!(
        "  forwarded {} packets (the burst fast path routed {} received packets, including ones later tail-dropped on a shaped port); answered ARP {} / ND {} / ping {} + {}; ICMP errors: Time Exceeded {} + {}, unreachable (no route) {} + {}, fragmentation needed {}, packet too big {}; fragmentation: {} IPv4 packets cut into {} fragments (transit without DF and the router's own replies), {} IPv6 reply fragments; datagrams to the router reassembled {}; dropped: no-route {}, ipv4-bad-checksum {}, runt {}",
        c.total_tx() - (c.local_count(Local::ArpReply) + c.local_count(Local::NdAdvert) + c.local_count(Local::EchoReply4) + c.local_count(Local::EchoReply6) + c.local_count(Local::TimeExceeded4) + c.local_count(Local::TimeExceeded6) + c.local_count(Local::Unreachable4) + c.local_count(Local::Unreachable6) + c.local_count(Local::FragNeeded4) + c.local_count(Local::TooBig6) + c.local_count(Local::ArpRequestSent) + c.local_count(Local::NsSent) + c.local_count(Local::CnpRateReduce) + c.local_count(Local::CnpPause) + c.local_count(Local::CnpNotify) + c.local_count(Local::CnpResume) + c.local_count(Local::McAckUp) + c.local_count(Local::McNakUp) + c.local_count(Local::McRnrUp) + c.local_count(Local::McFatalNakUp) + c.local_count(Local::McCnpUp) + c.local_count(Local::MldQuerySent) + c.local_count(Local::RttProbeSent) + c.local_count(Local::FannSent) + c.local_count(Local::PeControllerCopy) + c.local_count(Local::PfcPause) + c.local_count(Local::PfcResume) + c.local_count(Local::ParamProblem6) + c.local_count(Local::ReplyFragments).saturating_sub(c.local_count(Local::RepliesFragmented))),
        c.local_count(Local::FastPath),
        c.local_count(Local::ArpReply),
        c.local_count(Local::NdAdvert),
        c.local_count(Local::EchoReply4),
        c.local_count(Local::EchoReply6),
        c.local_count(Local::TimeExceeded4),
        c.local_count(Local::TimeExceeded6),
        c.local_count(Local::Unreachable4),
        c.local_count(Local::Unreachable6),
        c.local_count(Local::FragNeeded4),
        c.local_count(Local::TooBig6),
        c.local_count(Local::Fragmented4),
        c.local_count(Local::Fragment4),
        c.local_count(Local::Fragment6),
        c.local_count(Local::Reassembled),
        c.drop_count(Drop::NoRoute),
        c.drop_count(Drop::Ipv4Checksum),
        c.drop_count(Drop::Runt)
    );
    // The thresholds and triggers as the port's worker reported them.
    for (id, v) in &rep.congestion {
        let name = crate::display::port_name(&rep.port_names, *id);
        let s = &v.stats;
        println!(
            "  congestion on '{name}' ({} Mb/s, RTT_est {} ms: K_min {} KiB, K_max {} KiB): peak queue {} KiB; {} packets CE-marked, {} tail-dropped; second-level triggers (evaluations every {} us): QD > K_max {}, EMR > V_ecn {}, QGR > V_growth {}; reaction from the packet that crossed K_max to the first CNP: p50 {:.0} us, max {:.0} us over {} crossings; Long-haul CNPs sent: rate-reduce {}, pause {}, notify {}, resume {}, of them {} with Source QP 0 (the flow's source QP unknown) (not sent: for want of a format the source is configured for {}, held back without a known source QP {}, not built {}); held back by the per-flow limit of one per RTT_est {}; flows learned {} (see `show congestion` / `show flows` on a running router)",
            v.params.rate_bps / 1_000_000,
            v.params.rtt_est_ns as f64 / 1e6,
            s.k_min / 1024,
            s.k_max / 1024,
            v.queue.max_depth_bytes / 1024,
            s.marked,
            v.queue.tail_drops,
            v.params.interval_ns / 1000,
            s.trigger_qd,
            s.trigger_emr,
            s.trigger_qgr,
            v.reaction.p50_ns as f64 / 1e3,
            v.reaction.max_ns as f64 / 1e3,
            v.reaction.count,
            s.cnp_rate_reduce,
            s.cnp_pause,
            s.cnp_notify,
            s.cnp_resume,
            s.source_qp_unknown,
            s.format_unconfigured,
            s.source_qp_unknown_skipped,
            s.cnp_not_built,
            s.rate_limited,
            v.flows_live
        );
    }
    println!(
        "  RTT_est by active probing (draft-tian s.5.3.1, [port.congestion.rtt_probe] on 'wan'): {} Echo Requests from 2001:db8:2::1 to the WAN gateway 2001:db8:2::2, 100 ms apart (in wan-out.pcap); a replay answers none ({} given up after 150 ms), so RTT_est stayed at the configured 2 ms; against a live peer it follows the smallest round trip of the last 10 (`make test`: tap_netns rtt_est_follows_echo_probes_to_the_linux_host_behind_the_port)",
        c.local_count(Local::RttProbeSent),
        c.local_count(Local::RttProbeLost)
    );
    if let Some((_, v)) = rep.congestion.iter().find(|(id, _)| crate::display::port_name(&rep.port_names, *id) == "wan2") {
        let a = v.ack_rtt.unwrap_or_default();
        println!(
            "  RTT_est from the receivers' ACKs (draft-tian s.5.3.1 \"receiver reporting\", [port.congestion.rtt_acks] on 'wan2', a second long-haul link at 1 Gb/s): the DC host sent {} RC SENDs to {ACK_HOST} asking for an ACK (in wan2-out.pcap), answered in the replay {ACK_LAG_FRAMES} frames later; {} timed from leaving the queue to their ACK, {} round trips measured (the smallest {:.1} us: the replay's pace), {} abandoned (the RNR NAK for PSN 2) and {} not timed (PSN 2 sent again, whose ACK may answer the first: Karn's rule); RTT_est went from the configured {} ms to {:.1} us ({} step(s)), and K_max from {} KiB to {} KiB (R_port x RTT_est / 8)",
            ack_requests(&wan2_out),
            a.timed,
            a.samples,
            a.estimate_ns as f64 / 1e3,
            a.discarded,
            a.retransmissions_skipped,
            wan2_start.0 / 1_000_000,
            v.params.rtt_est_ns as f64 / 1e3,
            c.local_count(Local::RttEstChanged),
            wan2_start.1 / 1024,
            v.stats.k_max / 1024
        );
    }
    println!(
        "  SRv6 tunnel exit (RFC 2473 s.7.1): a 1400-octet packet whose tunnel headend sent it as {DT6_FRAGMENTS} fragments (wan-in.pcap, `ipv6.frag`) reassembled at End.DT6 SID {DT6_SID} {} time(s), its inner packet routed to the DC host {} time(s) (dc-out.pcap, `udp.srcport == 40100`)",
        c.local_count(Local::Srv6Reassembled),
        tunnel_exit_outcome(&dc_out)
    );
    println!(
        "  WAN P node (draft-hu s.4): the RoCEv2 flow from {TUNNEL_SENDER} came in the SRv6 tunnel of ingress PE {TUNNEL_PE}; {} of its Long-haul CNPs went back to that PE, inside an outer IPv6 header to its END.E SID {TUNNEL_PE_SID} (in dc-out.pcap)",
        cnps_toward_sid(&dc_out, TUNNEL_PE_SID, TUNNEL_SENDER)
    );
    println!(
        "  SRv6: End.MT replicas {}; END.E forwarded {}; END.C PFC pause {} / resume {} (a node's Resume held while another node's pause stood: {}); ICMPv6 Parameter Problem for a bad SRH (Segments Left past the list, RFC 8754 s.4.3.1.1) {}; FANN notifications sent {}; notifications through END.C / END.E that this node's ingress PE took as well {}, and refused by it (an originating node not in known_nodes or not the sender, another interface, its event queue full) {}",
        c.local_count(Local::EndMtReplica),
        c.local_count(Local::EndEForwarded),
        c.local_count(Local::PfcPause),
        c.local_count(Local::PfcResume),
        c.local_count(Local::PfcResumeHeld),
        c.local_count(Local::ParamProblem6),
        c.local_count(Local::FannSent),
        c.local_count(Local::PeViaSid),
        c.local_count(Local::PeViaSidRefused)
    );
    let (p1, r1) = pfc_frames(&dc_out);
    let (p2, r2) = pfc_frames(&dc2_out);
    println!(
        "  END.C with two DC gateways (draft-hu s.4.1): PFC PAUSE / RESUME frames on 'dc' {p1} / {r1} (notifications for 2001:db8:1::2), on 'dc2' {p2} / {r2} (the CNP for {DC2_HOST}, behind the second gateway); paused every END.C link for a notification naming no sender here {}",
        c.local_count(Local::PfcEveryInterface)
    );
    {
        use std::sync::atomic::Ordering::Relaxed;
        let (held, passed) = dc2_roce_times(&dc2_timed);
        let (pfc_in, held_so_far) = rep.pfc.iter().map(|(_, p)| (p.pfc_frames.load(Relaxed), p.held_packets.load(Relaxed))).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
        let gap = match (held.first(), passed.first()) {
            (Some(h), Some(p)) => format!("the first of the held left {} ms after the first at DSCP 0", ms(h.saturating_sub(*p))),
            _ => "not every class left".to_string(),
        };
        let order = if !held.is_empty() && !passed.is_empty() && held.iter().min() >= passed.iter().max() { "every one after" } else { "not every one after" };
        println!(
            "  PFC from the second DC gateway (802.1Qbb, [port.pfc] on 'dc2'): {pfc_in} PAUSE frame(s) received for priority 3 (65535 quanta, 335 ms at the 100 Mb/s configured); of the RoCEv2 packets from {DC2_SENDER} to {DC2_HOST}, {} at DSCP 26 (priority 3) waited in the queue ({held_so_far} set aside) while the {} at DSCP 0 passed them: {gap}, {order} the last at DSCP 0 (pfc-received {})",
            held.len(),
            passed.len(),
            c.local_count(Local::PfcReceived)
        );
    }
    let mc_in = [Local::McAckIn, Local::McNakIn, Local::McRnrIn, Local::McFatalNakIn, Local::McCnpIn].iter().map(|l| c.local_count(*l)).sum::<u64>()
        + [Drop::McUnknownReceiver, Drop::McStalePsn, Drop::McPsnOutOfWindow, Drop::McPsnBeyondSent, Drop::McCnpRateLimited, Drop::McUnsupportedOpcode, Drop::McBadIcrc, Drop::McMalformed].iter().map(|d| c.drop_count(*d)).sum::<u64>();
    println!(
        "  End.MT reverse path (groups rdma-mc, proxy {MC_PROXY}, and rdma-mc-edge, proxy {MC_EDGE_PROXY}): {mc_in} receiver responses in (ACK {}, NAK {}, CNP {}; unknown receiver {} dropped); aggregated responses up: ACK {}, NAK {}, CNP {} (NAK suppressed {})",
        c.local_count(Local::McAckIn),
        c.local_count(Local::McNakIn),
        c.local_count(Local::McCnpIn),
        c.drop_count(Drop::McUnknownReceiver),
        c.local_count(Local::McAckUp),
        c.local_count(Local::McNakUp),
        c.local_count(Local::McCnpUp),
        c.local_count(Local::McNakSuppressed)
    );
    let (signed, verified, in_order) = cnp_auth_outcome(&dc_out);
    println!(
        "  Long-haul CNPs authenticated (draft-tian s.9, IPsec AH hmac-sha256-128, SPI 0x1000, for 2001:db8:1::/64): {} sent ({signed} in dc-out.pcap), {verified} of them verify under the demo key, sequence numbers {}; RoCEv2-format CNPs to covered sources (no AH in that format) {}",
        c.local_count(Local::CnpAhProtected),
        if in_order { "1, 2, 3, ... without a gap" } else { "OUT OF ORDER" },
        c.local_count(Local::CnpRoceUnauthenticated)
    );
    let (sent, tlvs, receivers, hmac) = headend_outcome(&wan_out);
    println!(
        "  End.MT headend (draft-li s.5.2 step 1, for the DC host, an unmodified RoCE source): {HEADEND_SENDS} RC SENDs to the Proxy Address {HEADEND_PROXY}; {sent} left for End.MT SID fc00:0:21::a with {tlvs} End.MT TLVs naming {receivers} receivers, HMAC TLV (key 9) {}",
        if hmac { "last in the SRH and verified" } else { "MISSING OR WRONG" }
    );
    // The groups' state at exit: the CNP window in force, and for rdma-mc
    // (cnp_window = "rtt") the round trip it measured below.
    let windows: Vec<String> = rep
        .groups
        .iter()
        .map(|g| {
            let rtt = g.srtt_ns.map_or_else(|| "no round trip measured".to_string(), |s| format!("round trip below {:.1} us", s as f64 / 1000.0));
            format!("source {} QPN {:#x}: upstream PSN {}, T {} us ({rtt})", g.id.source, g.id.source_qpn, g.upstream_psn, g.window_ns / 1000)
        })
        .collect();
    println!(
        "  End.MT CNP windows at exit ({} round trip(s) timed; rdma-mc's T follows them within 100 ms ..= 1 s, here the floor, the demo's receivers answering at once): {}",
        c.local_count(Local::McRttSample),
        windows.join("; ")
    );
    println!(
        "  IP multicast (the End.MT tree's underlay, static route for ({MC_SOURCE}, {MC_GROUP}) from 'wan' to 'dc'): {} copies sent on 'dc' to 33:33:00:00:01:00 (Hop Limit - 1); refused by the RPF check (the group's packets from 'dc') {}",
        mc_copies(&dc_out),
        c.drop_count(Drop::MrouteRpfFailed)
    );
    let (general, left, any, ssm, other) = mld_outcome(&dc_out);
    // The host's MLD messages as dc-in.pcap has them (behind the Router
    // Alert option): Reports (MLDv2 143, MLDv1 131) and Done (132).
    let dc_in = read_pcap(&dir.join("dc-in.pcap"))?;
    let mld_in = |t: u8| dc_in.iter().filter(|f| f.len() >= 14 + 49 && f[12..14] == [0x86, 0xdd] && f[14 + 6] == 0 && f[14 + 40] == 58 && f[14 + 48] == t).count();
    let (reports, dones) = (mld_in(143) + mld_in(131), mld_in(132));
    println!(
        "  MLD on 'dc' (RFC 9777; no static route for these groups): the DC host's {reports} reports and {dones} Done ({} MLD messages taken in); the router sent {general} General Query(ies) and {left} Multicast Address Specific Queries for {MLD_LEFT_GROUP} after its MLDv1 Done (then forgot it); copied onto 'dc' from the WAN: {any} packets to {MLD_ASM_GROUP} (any source), {ssm} to {MLD_SSM_GROUP} from {MLD_SOURCE} (the source asked for), {other} from {MLD_OTHER_SOURCE} (not asked for; multicast-not-routed {})",
        c.local_count(Local::MldReportReceived),
        c.drop_count(Drop::MulticastNotRouted)
    );
    let (per, split) = ecmp_split(&wan_out);
    println!(
        "  ECMP (10.0.7.0/24 and 2001:db8:7::/48 over the gateways 10.0.2.2 / 2001:db8:2::2 and 10.0.2.3 / 2001:db8:2::3): {} RoCEv2 flows sent twice each; flows per gateway MAC {per:?}; flows whose packets took two gateways: {split}",
        2 * ECMP_FLOWS
    );
    let (asked, unreachable) = silent_gateway(&wan_out, &rep.fib);
    println!(
        "  neighbour reachability: the ECMP gateway {SILENT_GW} (10.0.12.0/24 over 10.0.2.2 and {SILENT_GW}) was asked {asked} times (ARP requests in wan-out.pcap) and never answered: {}; 64 flows to 10.0.12.0/24 would leave via {:?}",
        if unreachable { "marked unreachable" } else { "not marked unreachable" },
        silent_route_spread(&rep.fib)
    );
    // Hop by hop: what went up for rdma-mc-edge, read back from the WAN pcap
    // (from the node address to the Proxy Address, DestQP = Designated QPN).
    let (node, eproxy): (Ipv6Addr, Ipv6Addr) = (MC_EDGE_NODE.parse().unwrap_or(Ipv6Addr::UNSPECIFIED), MC_EDGE_PROXY.parse().unwrap_or(Ipv6Addr::UNSPECIFIED));
    let hop: Vec<String> = wan_out
        .iter()
        .filter(|f| f.len() >= 14 + 60 && f[12..14] == [0x86, 0xdd] && f[14 + 8..14 + 24] == node.octets() && f[14 + 24..14 + 40] == eproxy.octets() && f[14 + 48] == dataplane::wire::roce::opcode::RC_ACKNOWLEDGE)
        .map(|f| format!("ACK PSN {} DestQP {:#x}", u32::from_be_bytes([0, f[14 + 57], f[14 + 58], f[14 + 59]]), u32::from_be_bytes([0, f[14 + 53], f[14 + 54], f[14 + 55]])))
        .collect();
    println!("  End.MT hop by hop (group rdma-mc-edge: this node is an edge node below the one adjacent to the source): up from {node} to the Proxy Address {eproxy}, as a receiver of the next node: {hop:?}");
    let learned: Vec<String> = rep
        .groups
        .iter()
        .filter(|g| g.id.source_qpn == 0x901)
        .flat_map(|g| g.branches.iter().filter(|b| !b.node).map(|b| format!("{} QPN {:#x}", b.addr, b.qpn)))
        .collect();
    println!(
        "  End.MT receivers learned (group rdma-mc-edge, tlv_receivers = \"learn\", s.8): from the End.MT TLV for fc00:0:1::b {} time(s), refused {}: {learned:?}",
        c.local_count(Local::McTlvLearned),
        c.local_count(Local::McTlvLearnRefused)
    );
    // The ingress PE: which SID list the DC2 flows took before and after
    // R1's link-failure notification, read back from the WAN pcap.
    let first_sid = |tag: &[u8]| -> Vec<String> {
        let mut v: Vec<String> = wan_out.iter().filter(|f| f.len() > 54 && f[20] == 43 && f.windows(tag.len()).any(|w| w == tag)).map(|f| Ipv6Addr::from(<[u8; 16]>::try_from(&f[38..54]).unwrap_or([0; 16])).to_string()).collect();
        v.dedup();
        v
    };
    println!(
        "  ingress PE: {} DC2 packets before R1's notification left via {:?}, {} after it via {:?}; notifications accepted {}, unknown-source dropped {}, switched to backup {}; copies to the controller 2001:db8:1::c: {}",
        wan_out.iter().filter(|f| f.windows(9).any(|w| w == b"pe-before")).count(),
        first_sid(b"pe-before"),
        wan_out.iter().filter(|f| f.windows(8).any(|w| w == b"pe-after")).count(),
        first_sid(b"pe-after"),
        c.local_count(Local::PeNotification),
        c.drop_count(Drop::FannUnknownSource),
        c.local_count(Local::PeSwitchedToBackup),
        c.local_count(Local::PeControllerCopy)
    );
    println!(
        "  ingress PE, congestion (s.4.2): {} packets to 2001:db8:9::/48 before R2's congestion notification left via {:?}, {} after it via {:?} (its only primary path crosses R2, the backup R3 -> R4 does not); moves on congestion {}, back to the primary only once R2 has been healthy for the hold-down ({} ms, doubled for each flap: {} so far)",
        wan_out.iter().filter(|f| f.windows(10).any(|w| w == b"pe6-before")).count(),
        first_sid(b"pe6-before"),
        wan_out.iter().filter(|f| f.windows(9).any(|w| w == b"pe6-after")).count(),
        first_sid(b"pe6-after"),
        c.local_count(Local::PeCongestionFailover),
        holddown_ms,
        c.local_count(Local::PeHolddownRaised)
    );
    let dc3: Ipv6Addr = "2001:db8:a::".parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
    let dc3_out = wan_out.iter().filter(|f| f.len() > 14 + 40 + 40 + 40 && f[12..14] == [0x86, 0xdd] && f[14 + 6] == 43 && f[14 + 80 + 24..14 + 80 + 30] == dc3.octets()[..6]).count();
    println!(
        "  ingress PE, rate (s.4.2): DC3's prefix 2001:db8:a::/48 has no path but through R2 and no backup; after R2's severe congestion the PE held it to 25 % of its rate (pe-rate-reduced {}): of the {DC3_PACKETS} ECN-capable packets the DC host sent it, {dc3_out} left encapsulated (the WAN port's deep buffer tail-drops what it has no room for), {} of them CE-marked by the PE as over the share (pe-rate-ce-marked), none dropped by it",
        c.local_count(Local::PeRateReduced),
        c.local_count(Local::PeRateCeMarked)
    );
    let (arp, ns, sent) = unresolved_outcome(&wan_out);
    println!(
        "  address resolution: the first {UNRESOLVED_PACKETS} RoCEv2 packets each to {UNRESOLVED4} and {UNRESOLVED6} (on the WAN link, not resolved yet) waited for the router's ARP request ({arp} sent) and NS ({ns} sent) to be answered, then {sent} of them left in PSN order with the answered MAC (neighbour-held {}, -released {}, -timeout {}, -queue-full {}; dropped for want of an address: neighbour-miss {})",
        c.local_count(Local::NeighbourHeld),
        c.local_count(Local::NeighbourReleased),
        c.drop_count(Drop::NeighbourTimeout),
        c.drop_count(Drop::NeighbourQueueFull),
        c.drop_count(Drop::NeighbourMiss)
    );
    println!(
        "  ({} frames for another MAC pace the DC replay so the control thread reacts first, {} the WAN's and {} the second WAN's: l2-not-for-us {})",
        PACING_FRAMES,
        WAN_PACING_FRAMES + MLD_PACING_FRAMES,
        wan2_pacing,
        c.drop_count(Drop::NotForUs)
    );
    println!("  mempool: {} of {} mbufs in use after shutdown", rep.mempool_in_use_after, rep.mempool_size);
    println!(
        "  open the pcaps in Wireshark, with the dissectors of the drafts' messages (display filters lhcnp, fann, srv6_endmt): wireshark -X lua_script:{d}/dcirouter.lua {d}/dc-out.pcap",
        d = dir.display()
    );
    Ok(())
}
