//! The TOML configuration (serde), and its validation into a [`RouterConfig`].
//!
//! Validation is complete before anything starts: every error names the
//! field, the value and why (`port[1].rx_queues = 0: must be at least 1`).

use dataplane::tables::{Fib, Interface, NeighSource, Neighbours, NextHop, Route, Topology};
use dataplane::wire::params::Params;
use ipnet::IpNet;
use serde::Deserialize;
use std::collections::HashSet;
use std::net::IpAddr;

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    pub eal: EalSection,
    #[serde(default)]
    pub dataplane: DataplaneSection,
    #[serde(default)]
    pub mempool: MempoolSection,
    #[serde(default)]
    pub wire: WireSection,
    #[serde(default, rename = "port")]
    pub ports: Vec<PortSection>,
    #[serde(default, rename = "route")]
    pub routes: Vec<RouteSection>,
    #[serde(default, rename = "neighbour")]
    pub neighbours: Vec<NeighbourSection>,
    #[serde(default)]
    pub srv6: Option<Srv6Section>,
    #[serde(default)]
    pub fann: Option<FannSection>,
    #[serde(default)]
    pub multicast: Option<MulticastSection>,
    #[serde(default)]
    pub ingress_pe: Option<IngressPeSection>,
    #[serde(default, rename = "wan_notify")]
    pub wan_notify: Vec<WanNotifySection>,
    #[serde(default, rename = "cnp_auth")]
    pub cnp_auth: Vec<CnpAuthSection>,
    #[serde(default)]
    pub metrics: Option<MetricsSection>,
}

/// `[metrics]`: the counters for Prometheus ([`crate::metrics`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// Address and TCP port of the `GET /metrics` endpoint, e.g.
    /// "127.0.0.1:9464" or "[::1]:9464".
    pub listen: String,
}

/// `[[cnp_auth]]`: an outbound IPsec AH SA (RFC 4302, manual keys) for the
/// ICMPv6 Long-haul CNPs to the sources in `prefix` (draft-tian s.9).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CnpAuthSection {
    /// The sources (CNP destinations) this SA covers; the longest wins.
    pub prefix: String,
    /// Security Parameters Index, 256..=4294967295 (RFC 4302 s.2.4).
    pub spi: u32,
    /// "hmac-sha256-128" (default) or "hmac-sha512-256" (RFC 4868).
    #[serde(default = "d_ah_alg")]
    pub algorithm: String,
    /// The key as hexadecimal octets (32 for hmac-sha256-128, 64 for
    /// hmac-sha512-256, RFC 4868 s.2.1)...
    pub secret_hex: Option<String>,
    /// ...or as text of that many characters.
    pub secret: Option<String>,
}

fn d_ah_alg() -> String {
    dataplane::wire::ah::Algorithm::HmacSha256_128.name().into()
}

/// `[[wan_notify]]`: one ingress PE as this WAN node sees it
/// (draft-hu-acn-rocev2 s.4): its END.C or END.E SID, and which
/// notifications go there inside an outer IPv6 header.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WanNotifySection {
    /// The ingress PE's address. When it is one of `[fann] ingress_pes`,
    /// the FANN notifications for it are encapsulated toward `sid`
    /// (outer source: `[fann] node`).
    pub ingress_pe: String,
    /// Its END.C or END.E SID.
    pub sid: String,
    /// The RDMA senders reached through this PE (prefixes): the Long-haul
    /// CNPs for their flows are encapsulated toward `sid` (outer source:
    /// the port's `congestion.source_v6` or its own address).
    #[serde(default)]
    pub sources: Vec<String>,
    /// The outer IPv6 source addresses of the PE's SRv6 tunnels (prefixes;
    /// default: `ingress_pe` itself): a flow whose packets arrive in a
    /// tunnel from one of them has its Long-haul CNPs encapsulated toward
    /// `sid`, whatever its sender's prefix: the PE it came through.
    pub tunnel_sources: Option<Vec<String>>,
}

/// A validated `[[wan_notify]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct WanNotifyPlan {
    pub ingress_pe: std::net::Ipv6Addr,
    pub sid: std::net::Ipv6Addr,
    pub sources: Vec<IpNet>,
    pub tunnel_sources: Vec<ipnet::Ipv6Net>,
}

/// `[multicast]`: End.MT reverse-path aggregation
/// (draft-li-spring-rdma-multicast-over-srv6 s.5.3, s.8, s.9).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct MulticastSection {
    #[serde(default, rename = "group")]
    pub groups: Vec<GroupSection>,
    #[serde(default, rename = "route")]
    pub routes: Vec<MrouteSection>,
    /// MLD on the interfaces toward the listeners.
    pub mld: Option<MldSection>,
}

/// `[multicast.mld]`: the router side of MLD (RFC 9777, with MLDv1 hosts,
/// RFC 2710) on `interfaces`: the listeners it learns there join the
/// multicast routes' outgoing interfaces ([`dataplane::mld`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MldSection {
    pub interfaces: Vec<String>,
    /// Robustness Variable (RFC 9777 s.9.1), 1..=7.
    #[serde(default = "d_mld_robustness")]
    pub robustness: u8,
    /// Query Interval (s.9.2).
    #[serde(default = "d_mld_qi")]
    pub query_interval_s: u32,
    /// Query Response Interval (s.9.3), below the Query Interval.
    #[serde(default = "d_mld_qri")]
    pub query_response_interval_ms: u32,
    /// Last Listener Query Interval (s.9.8).
    #[serde(default = "d_mld_llqi")]
    pub last_listener_query_interval_ms: u32,
    /// (interface, multicast address) records at most.
    #[serde(default = "d_mld_groups")]
    pub max_groups: usize,
    /// Sources per record at most.
    #[serde(default = "d_mld_sources")]
    pub max_sources: usize,
    /// Of `interfaces`, those in MLDv1 compatibility mode (s.8.3.1: links
    /// with MLDv1 routers): MLDv1 queries, MLDv2 Reports ignored.
    #[serde(default)]
    pub v1_interfaces: Vec<String>,
}

fn d_mld_robustness() -> u8 {
    2
}
fn d_mld_qi() -> u32 {
    125
}
fn d_mld_qri() -> u32 {
    10_000
}
fn d_mld_llqi() -> u32 {
    1000
}
fn d_mld_groups() -> usize {
    4096
}
fn d_mld_sources() -> usize {
    64
}

/// A validated `[multicast.mld]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MldPlan {
    /// Interface indices MLD runs on.
    pub ifaces: Vec<u16>,
    /// Those in MLDv1 compatibility mode.
    pub v1_ifaces: Vec<u16>,
    pub cfg: dataplane::mld::MldConfig,
}

/// Check `[multicast.mld]` against the interfaces.
pub fn mld_plan(s: &MldSection, interfaces: &[Interface]) -> Result<MldPlan, String> {
    use dataplane::wire::mld::{MAX_QQI_S, MAX_RESP_MS};
    if s.interfaces.is_empty() {
        return Err("multicast.mld.interfaces = []: name at least one interface MLD runs on".into());
    }
    let mut ifaces = Vec::new();
    for (i, n) in s.interfaces.iter().enumerate() {
        let k = interfaces.iter().position(|x| x.name == *n).ok_or_else(|| format!("multicast.mld.interfaces[{i}] = {n:?}: no such interface"))? as u16;
        if ifaces.contains(&k) {
            return Err(format!("multicast.mld.interfaces[{i}] = {n:?}: listed twice"));
        }
        ifaces.push(k);
    }
    if !(1..=7).contains(&s.robustness) {
        return Err(format!("multicast.mld.robustness = {}: must be 1..=7 (it travels in the 3-bit QRV field, RFC 9777 s.5.1.8)", s.robustness));
    }
    if !(1..=MAX_QQI_S).contains(&s.query_interval_s) {
        return Err(format!("multicast.mld.query_interval_s = {}: must be 1..={MAX_QQI_S} (what QQIC can carry, s.5.1.9)", s.query_interval_s));
    }
    if !(1..=MAX_RESP_MS).contains(&s.query_response_interval_ms) || u64::from(s.query_response_interval_ms) >= u64::from(s.query_interval_s) * 1000 {
        return Err(format!("multicast.mld.query_response_interval_ms = {}: must be at least 1, at most {MAX_RESP_MS} (s.5.1.3) and below the query interval ({} s, s.9.3)", s.query_response_interval_ms, s.query_interval_s));
    }
    if !(1..=MAX_RESP_MS).contains(&s.last_listener_query_interval_ms) {
        return Err(format!("multicast.mld.last_listener_query_interval_ms = {}: must be 1..={MAX_RESP_MS} (s.5.1.3)", s.last_listener_query_interval_ms));
    }
    if !(1..=65536).contains(&s.max_groups) {
        return Err(format!("multicast.mld.max_groups = {}: must be 1..=65536", s.max_groups));
    }
    if !(1..=1024).contains(&s.max_sources) {
        return Err(format!("multicast.mld.max_sources = {}: must be 1..=1024", s.max_sources));
    }
    let cfg = dataplane::mld::MldConfig {
        robustness: s.robustness,
        query_interval_ns: u64::from(s.query_interval_s) * 1_000_000_000,
        query_response_ns: u64::from(s.query_response_interval_ms) * 1_000_000,
        last_listener_ns: u64::from(s.last_listener_query_interval_ms) * 1_000_000,
        max_groups: s.max_groups,
        max_sources: s.max_sources,
    };
    let mut v1_ifaces: Vec<u16> = Vec::new();
    for (i, n) in s.v1_interfaces.iter().enumerate() {
        let k = interfaces.iter().position(|x| x.name == *n).map(|k| k as u16).filter(|k| ifaces.contains(k));
        let Some(k) = k else {
            return Err(format!("multicast.mld.v1_interfaces[{i}] = {n:?}: not one of multicast.mld.interfaces"));
        };
        if v1_ifaces.contains(&k) {
            return Err(format!("multicast.mld.v1_interfaces[{i}] = {n:?}: listed twice"));
        }
        v1_ifaces.push(k);
    }
    if !v1_ifaces.is_empty() {
        // RFC 2710 s.3: the Maximum Response Delay is a 16-bit count of ms.
        for (k, v) in [("query_response_interval_ms", s.query_response_interval_ms), ("last_listener_query_interval_ms", s.last_listener_query_interval_ms)] {
            if v > u32::from(u16::MAX) {
                return Err(format!("multicast.mld.{k} = {v}: at most 65535 with v1_interfaces (an MLDv1 query's Maximum Response Delay has 16 bits, RFC 2710 s.3)"));
            }
        }
    }
    Ok(MldPlan { ifaces, v1_ifaces, cfg })
}

/// `[[multicast.route]]`: a static IPv6 multicast route, the underlay of
/// the RDMA multicast tree (draft-li s.3: PIM, static multicast routing or
/// SRv6 Replication segments between the source and the edge nodes).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MrouteSection {
    /// The group (IPv6 multicast, wider than link-local scope).
    pub group: String,
    /// Only packets from this source ((S,G)); absent: any source ((*,G)).
    pub source: Option<String>,
    /// The interface the group's packets must arrive on (RPF); absent: any.
    pub iif: Option<String>,
    /// The interfaces to replicate to (the arrival interface is skipped).
    #[serde(default)]
    pub oifs: Vec<String>,
}

/// `[[multicast.group]]`: one RDMA multicast group this node aggregates
/// the receivers' ACK / NAK / CNP for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSection {
    /// A name for logs and the CLI (default "group<i>").
    pub name: Option<String>,
    /// The Proxy Address: DA of the receivers' responses, SA upstream.
    pub proxy: String,
    /// The Designated QPN: DestQP of the receivers' responses (24 bits).
    pub designated_qpn: u32,
    /// The source host and its own QPN (DestQP of the upstream responses).
    pub source: String,
    pub source_qpn: u32,
    /// The first PSN the source sends (default 1).
    #[serde(default = "d_initial_psn")]
    pub initial_psn: u32,
    /// CNP aggregation window T in microseconds (default 50); with
    /// `cnp_window = "rtt"` the least T.
    #[serde(default = "d_cnp_window")]
    pub cnp_window_us: u64,
    /// "fixed" (default): T is `cnp_window_us`. "rtt": T follows the round
    /// trip measured below this node (s.5.3.3: "T MAY be adjusted
    /// dynamically"), between `cnp_window_us` and `cnp_window_max_us`.
    #[serde(default = "d_cnp_window_mode")]
    pub cnp_window: String,
    /// The greatest T of `cnp_window = "rtt"` (default 10000 µs).
    pub cnp_window_max_us: Option<u64>,
    /// "any" (default): End.MT here copies to every receiver its TLV
    /// names. "strict": only to the TLV receivers that are this group's
    /// `receivers` (address and QPN); the others are dropped. "learn": the
    /// group's receivers are the ones the End.MT TLV names (no
    /// `receivers` configured).
    #[serde(default = "d_tlv_receivers")]
    pub tlv_receivers: String,
    /// Per-branch CNP rate limit (default 100000/s, burst 16).
    #[serde(default = "d_mc_cnp_rate")]
    pub cnp_rate_per_s: u32,
    #[serde(default = "d_mc_cnp_burst")]
    pub cnp_burst: u32,
    /// A local End.MT SID ([srv6]) that also replicates to these receivers
    /// (control-plane provisioning: used when the SRH carries no End.MT TLV
    /// for this node, after the TLV's receivers otherwise).
    pub end_mt_sid: Option<String>,
    /// The receivers below this node (its branches at an edge node).
    #[serde(default)]
    pub receivers: Vec<ReceiverSection>,
    /// Hop-by-hop aggregation: downstream nodes holding the same group,
    /// one branch each, named by their `node_address`.
    #[serde(default)]
    pub child_nodes: Vec<String>,
    /// Hop-by-hop aggregation: this node's address as a branch of the next
    /// node up; the aggregated responses then go from it to the Proxy
    /// Address. Absent: this node is adjacent to the source.
    pub node_address: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiverSection {
    pub address: String,
    /// The receiver's own QPN (24 bits).
    pub qpn: u32,
}

fn d_initial_psn() -> u32 {
    1
}
fn d_cnp_window() -> u64 {
    50
}
fn d_cnp_window_mode() -> String {
    "fixed".into()
}
fn d_tlv_receivers() -> String {
    "any".into()
}
fn d_mc_cnp_rate() -> u32 {
    100_000
}
fn d_mc_cnp_burst() -> u32 {
    16
}

/// A validated multicast group.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupPlan {
    pub name: String,
    pub cfg: dataplane::multicast::GroupConfig,
    pub end_mt_sid: Option<std::net::Ipv6Addr>,
}


/// `[ingress_pe]`: react to FANN notifications and Long-haul CNPs addressed
/// to this node by moving the `[[srv6.policy]]`s (draft-hzh-fantel-wan-tunnel
/// s.4); the paths are described per policy (`elements`, `backup`, ...).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngressPeSection {
    /// The FANN originating nodes (and Long-haul CNP senders) to accept.
    pub known_nodes: Vec<String>,
    /// Where a copy of every accepted notification goes.
    pub controller: Option<String>,
    /// Source address of the copies (default: srv6.source).
    pub source: Option<String>,
    /// This node's IPv4 address, the source of the notifications to IPv4
    /// senders (`notify_senders`; FANN over UDP, s.5.2). Absent: IPv4
    /// senders are not told (`pe-sender-no-ipv4-source`).
    pub source_v4: Option<String>,
    /// FANN Hop Limit of the copies for the controller.
    #[serde(default = "d_fann_hop")]
    pub hop_limit: u8,
    /// Copies to the controller: at most this many per second, in bursts
    /// of `controller_burst` (RFC 4443 s.2.4 (f), FANN draft s.6).
    #[serde(default = "d_copy_pps")]
    pub controller_max_pps: u32,
    #[serde(default = "d_copy_burst")]
    pub controller_burst: u32,
    /// Events taken from each known node: at most this many per second,
    /// in bursts of `node_burst` (recoveries and CNP Resumes always pass).
    #[serde(default = "d_copy_pps")]
    pub node_max_pps: u32,
    #[serde(default = "d_copy_burst")]
    pub node_burst: u32,
    /// Re-originate FANN events that name a flow (and their recoveries)
    /// to the flow's sender too (s.4.1, s.4.2).
    #[serde(default)]
    pub notify_senders: bool,
    /// Interfaces notifications may arrive on (the WAN side); absent: any.
    /// With it, a customer device on another interface cannot pass a
    /// known node's address off as its own (FANN draft s.6).
    pub interfaces: Option<Vec<String>>,
    /// Move a policy to its backup lists when congestion leaves no primary
    /// list healthy and a backup list is (s.4.2), damped by the hold-down
    /// (`dataplane::fann::Failover`); false: congestion only reweights.
    #[serde(default = "d_true")]
    pub congestion_failover: bool,
    /// Back to the primary only after it has been healthy this long (and
    /// this long after the move); doubled for a move soon after a move
    /// back, up to `congestion_holddown_max_ms`.
    #[serde(default = "d_holddown_ms")]
    pub congestion_holddown_ms: u64,
    #[serde(default = "d_holddown_max_ms")]
    pub congestion_holddown_max_ms: u64,
    /// s.4.2 "Ingress PE should reduce the transmission rate of
    /// corresponding traffic": while congestion leaves a policy no healthy
    /// path, its traffic over a share of its rate is marked CE
    /// (`dataplane::srv6::PolicyMeter`).
    #[serde(default = "d_true")]
    pub congestion_rate_reduction: bool,
    /// The window over which each worker measures a policy's rate.
    #[serde(default = "d_rate_window_us")]
    pub congestion_rate_window_us: u64,
}

fn d_rate_window_us() -> u64 {
    1000
}

fn d_holddown_ms() -> u64 {
    1000
}
fn d_holddown_max_ms() -> u64 {
    60_000
}

fn d_copy_pps() -> u32 {
    1000
}
fn d_copy_burst() -> u32 {
    100
}

/// `[fann]`: Fast Network Notifications this node sends (draft-hzh-fantel-wan-tunnel).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FannSection {
    /// Control-plane (loopback) address: the Originating Node and the only
    /// source address of the notifications.
    pub node: String,
    pub ingress_pes: Vec<String>,
    /// Path ID per port name (16 octets as an IPv6 address), carried in the
    /// port's notifications (s.5.1.3), e.g. { wan = "fc00:0:11::1" }.
    #[serde(default)]
    pub path_ids: std::collections::BTreeMap<String, String>,
    /// "icmpv6" or "udp".
    #[serde(default = "d_fann_transport")]
    pub transport: String,
    #[serde(default = "d_fann_hop")]
    pub hop_limit: u8,
    #[serde(default = "d_interval")]
    pub interval_us: u64,
    #[serde(default = "d_buildup")]
    pub queue_buildup_bytes: u64,
    #[serde(default = "d_microburst")]
    pub microburst_bytes: u64,
    #[serde(default = "d_mb_window")]
    pub microburst_window_us: u64,
    #[serde(default = "d_fann_rate")]
    pub rate_pps: u32,
    #[serde(default = "d_fann_burst")]
    pub burst: u32,
    /// Link errors per second (the NIC's receive and transmit errors) that
    /// make a Signal degradation / link errors event; 0: never.
    #[serde(default = "d_link_errors")]
    pub link_errors_per_s: u64,
    /// Receive losses per second (missed, no buffer) that make a
    /// Performance degradation event; 0: never.
    #[serde(default = "d_packet_loss")]
    pub packet_loss_per_s: u64,
}

fn d_link_errors() -> u64 {
    10
}
fn d_packet_loss() -> u64 {
    100
}
fn d_fann_transport() -> String {
    "icmpv6".into()
}
fn d_fann_hop() -> u8 {
    64
}
fn d_buildup() -> u64 {
    16 << 20
}
fn d_microburst() -> u64 {
    1 << 20
}
fn d_mb_window() -> u64 {
    100
}
fn d_fann_rate() -> u32 {
    1000
}
fn d_fann_burst() -> u32 {
    50
}

/// `[srv6]`: this node's locator and local SIDs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Srv6Section {
    /// The node's SRv6 locator, e.g. "fc00:0:1::/48".
    pub locator: String,
    /// Source address of encapsulated packets (default: the first SID).
    pub source: Option<String>,
    #[serde(default, rename = "sid")]
    pub sids: Vec<SidSection>,
    /// H.Encaps / H.Encaps.Red: steer a prefix into an SR policy.
    #[serde(default, rename = "policy")]
    pub policies: Vec<PolicySection>,
    /// RFC 8754 HMAC keys (pre-shared), used to verify the SRH HMAC TLV of
    /// packets to SIDs configured `hmac_required`.
    #[serde(default, rename = "hmac_key")]
    pub hmac_keys: Vec<HmacKeySection>,
    /// Outer source prefixes END.C and END.E take notifications from (the
    /// SR domain's nodes); absent: any. A forged notification to END.C is
    /// a PAUSE toward the DC (RFC 8754 s.5.1 filters at the domain edge;
    /// this is the same check at the SID).
    pub notification_sources: Option<Vec<String>>,
}

/// `[[srv6.hmac_key]]`: one pre-shared HMAC key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HmacKeySection {
    /// The HMAC Key ID carried in the TLV (1..=4294967295).
    pub key_id: u32,
    /// Only "hmac-sha256" (RFC 8754 s.2.1.2 leaves the algorithm to the key).
    #[serde(default = "d_hmac_alg")]
    pub algorithm: String,
    /// The secret as hexadecimal octets (at least 16 octets)...
    pub secret_hex: Option<String>,
    /// ...or as text (at least 16 characters).
    pub secret: Option<String>,
    /// Octets of the HMAC field: 8, 16, 24 or 32 (default 32).
    #[serde(default = "d_hmac_len")]
    pub length: usize,
}

fn d_hmac_alg() -> String {
    "hmac-sha256".into()
}
fn d_hmac_len() -> usize {
    32
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySection {
    pub prefix: String,
    /// "encaps" (H.Encaps) or "encaps.red" (H.Encaps.Red).
    #[serde(default = "d_encaps")]
    pub mode: String,
    /// One or more SID lists (first SID first).
    pub segments: Vec<Vec<String>>,
    /// One weight per SID list (default: equal).
    #[serde(default)]
    pub weights: Vec<u32>,
    /// Ingress PE: per SID list, the network elements it traverses, each
    /// "node" or "node#port" (a node's IPv6 address, optionally one of its
    /// port IDs as FANN reports them).
    #[serde(default)]
    pub elements: Vec<Vec<String>>,
    /// Ingress PE: backup SID lists, used when every primary list has failed.
    #[serde(default)]
    pub backup: Vec<Vec<String>>,
    #[serde(default)]
    pub backup_weights: Vec<u32>,
    #[serde(default)]
    pub backup_elements: Vec<Vec<String>>,
    /// Headend of an RDMA multicast tree (draft-li s.5.2 step 1): one
    /// End.MT TLV per edge node in every SID list's SRH.
    #[serde(default)]
    pub end_mt: Vec<EndMtTlvSection>,
    /// An HMAC TLV (RFC 8754 s.2.1.2) under this `[[srv6.hmac_key]]`.
    pub hmac_key_id: Option<u32>,
    /// With `hmac_key_id`: set the pre-RFC 8754 H flag (0x08) too, which
    /// Linux's seg6 HMAC check needs to find the TLV.
    #[serde(default)]
    pub hmac_h_flag: bool,
}

/// `[[srv6.policy.end_mt]]`: the End.MT TLV of one edge node.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndMtTlvSection {
    /// The edge node's address (the TLV's Edge Node Address: its End.MT
    /// SID or node address, as the edge node matches it).
    pub edge: String,
    pub receivers: Vec<ReceiverSection>,
}

fn d_encaps() -> String {
    "encaps".into()
}

/// A policy's End.MT TLVs and HMAC key, checked field by field (`f` names
/// the field).
fn policy_extras(p: &PolicySection, f: &dyn Fn(&str) -> String, keys: &dataplane::wire::srh::HmacKeyTable, tlv_type: u8) -> Result<dataplane::srv6::SrhExtras, String> {
    use dataplane::wire::srh::{EndMtReceiver, EndMtRepr, END_MT_MAX_RECEIVERS};
    let mut end_mt: Vec<EndMtRepr> = Vec::with_capacity(p.end_mt.len());
    for (j, t) in p.end_mt.iter().enumerate() {
        let k = |x: &str| f(&format!("end_mt[{j}].{x}"));
        let edge: std::net::Ipv6Addr = t.edge.parse().map_err(|_| format!("{} = {:?}: not an IPv6 address", k("edge"), t.edge))?;
        // The edge node's unicast address, or its End.MT SID that is a
        // multicast group wider than link-local scope (draft-li s.6.1).
        if !unicast6(edge) && !dataplane::tables::routable_multicast6(&edge) {
            return Err(format!("{} = {edge}: an edge node's address: unicast, or a multicast group of wider than link-local scope (its End.MT SID)", k("edge")));
        }
        if let Some(o) = end_mt.iter().position(|x| x.edge_node_address == edge) {
            return Err(format!("{} = {edge}: end_mt[{o}] is the same edge node (one TLV per edge node, draft-li s.6)", k("edge")));
        }
        if t.receivers.is_empty() || t.receivers.len() > END_MT_MAX_RECEIVERS {
            return Err(format!("{} has {} entries: 1..={END_MT_MAX_RECEIVERS} (what one TLV's 8-bit Length holds)", k("receivers"), t.receivers.len()));
        }
        let mut receivers = Vec::with_capacity(t.receivers.len());
        for (r, x) in t.receivers.iter().enumerate() {
            let a: std::net::Ipv6Addr = x.address.parse().map_err(|_| format!("{} = {:?}: not an IPv6 address", k(&format!("receivers[{r}].address")), x.address))?;
            if !unicast6(a) {
                return Err(format!("{} = {a}: a receiver is a unicast host", k(&format!("receivers[{r}].address"))));
            }
            if x.qpn > 0xff_ffff {
                return Err(format!("{} = {}: a QPN has 24 bits", k(&format!("receivers[{r}].qpn")), x.qpn));
            }
            if receivers.iter().any(|y: &EndMtReceiver| y.address == a) {
                return Err(format!("{} = {a}: listed twice (it would get every packet twice)", k(&format!("receivers[{r}].address"))));
            }
            receivers.push(EndMtReceiver { address: a, qpn: x.qpn });
        }
        end_mt.push(EndMtRepr { tlv_type, edge_node_address: edge, receivers });
    }
    let hmac = match p.hmac_key_id {
        None => None,
        Some(id) => Some(keys.lookup(id).cloned().ok_or_else(|| format!("{} = {id}: no [[srv6.hmac_key]] with that key_id", f("hmac_key_id")))?),
    };
    if p.hmac_h_flag && hmac.is_none() {
        return Err(format!("{} = true: only with hmac_key_id", f("hmac_h_flag")));
    }
    Ok(dataplane::srv6::SrhExtras { end_mt, hmac, h_flag: p.hmac_h_flag })
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SidSection {
    pub sid: String,
    /// end | end.x | end.dt4 | end.dt6 | end.mt | end.c | end.e
    pub behaviour: String,
    /// end.x: the adjacency; end.c: the port toward the DC gateway.
    pub interface: Option<String>,
    /// end.c on a PE with several DC gateways: the interfaces toward them
    /// (instead of `interface`); a notification pauses the one its
    /// sender's route leaves by.
    #[serde(default)]
    pub interfaces: Vec<String>,
    pub via: Option<String>,
    /// end.c: PFC priority for the notifications (default 3), pause for
    /// notifications without a duration, and the watchdog.
    pub pfc_priority: Option<u8>,
    pub pause_us: Option<u32>,
    pub max_pause_ms: Option<u64>,
    /// end.mt: drop packets whose SRH HMAC TLV is missing or does not
    /// verify under a `[[srv6.hmac_key]]` (RFC 8754 s.2.1.2.1).
    #[serde(default)]
    pub hmac_required: bool,
    /// end.mt (edge node): receivers provisioned by the control plane, served
    /// after those of the End.MT TLV.
    #[serde(default)]
    pub receivers: Vec<ReceiverSection>,
    /// end.mt (tree-interior node, draft s.4.1): one copy of the packet to
    /// each of these downstream End.MT SIDs.
    #[serde(default)]
    pub downstream: Vec<String>,
    /// end.c: DSCP of the notification -> PFC priority, e.g. { 26 = 3 }.
    #[serde(default)]
    pub dscp_priority: std::collections::BTreeMap<String, u8>,
    /// end.c: priority of notifications about a RoCEv2 flow.
    pub rocev2_priority: Option<u8>,
    /// end.c: speed of the link to the DC gateway in Mb/s, the unit of the
    /// PAUSE quanta (512 bit times); default: the speed the NIC reports.
    pub pfc_link_mbps: Option<u64>,
}

/// A validated local SID.
#[derive(Debug, Clone, PartialEq)]
pub struct SidPlan {
    pub sid: std::net::Ipv6Addr,
    pub behaviour: String,
    pub iface: Option<u16>,
    pub via: Option<IpAddr>,
    pub pfc_priority: u8,
    pub pause_us: u32,
    pub max_pause_ms: u64,
    pub hmac_required: bool,
    pub receivers: Vec<(std::net::Ipv6Addr, u32)>,
    pub downstream: Vec<std::net::Ipv6Addr>,
    /// (DSCP, priority) entries.
    pub dscp_priority: Vec<(u8, u8)>,
    pub rocev2_priority: Option<u8>,
    /// end.c: `pfc_link_mbps` in bit/s.
    pub pfc_link_bps: Option<u64>,
    /// end.c: the interfaces toward the DC gateways (`interface` or
    /// `interfaces`).
    pub endc_ifaces: Vec<u16>,
}

#[derive(Debug, Clone)]
pub struct Srv6Plan {
    pub locator: ipnet::Ipv6Net,
    pub source: std::net::Ipv6Addr,
    pub sids: Vec<SidPlan>,
    pub policies: Vec<(IpNet, dataplane::srv6::SrPolicy)>,
    pub hmac_keys: dataplane::wire::srh::HmacKeyTable,
    /// The path descriptions of each policy (same order) for the ingress PE.
    pub pe_specs: Vec<dataplane::fann::PolicySpec>,
    /// `notification_sources` (None: any).
    pub notification_sources: Option<Vec<ipnet::Ipv6Net>>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct EalSection {
    /// EAL arguments used when the command line gives none.
    #[serde(default)]
    pub args: Vec<String>,
}

fn d_burst() -> usize {
    32
}
fn d_status() -> u64 {
    5000
}
fn d_icmp_rate() -> u32 {
    100
}
fn d_icmp_burst() -> u32 {
    10
}
fn d_solicit() -> u64 {
    1000
}
fn d_neigh_limit() -> usize {
    16384
}
/// RFC 4861 s.10 REACHABLE_TIME.
fn d_reachable() -> u64 {
    30_000
}
/// RFC 4861 s.10 MAX_UNICAST_SOLICIT / MAX_MULTICAST_SOLICIT.
fn d_probes() -> u32 {
    3
}
/// Linux's default gc_stale_time.
fn d_stale() -> u64 {
    60_000
}
/// RFC 7048 MAX_RETRANS_TIMER.
fn d_retry_max() -> u64 {
    60_000
}
fn d_queue_packets() -> u32 {
    dataplane::unres::HoldConfig::DEFAULT.per_neighbour
}
fn d_queue_ms() -> u64 {
    dataplane::unres::HoldConfig::DEFAULT.timeout_ns / 1_000_000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataplaneSection {
    /// CPU ids for worker threads; (port, rx queue) pairs are spread over them.
    #[serde(default)]
    pub worker_cores: Vec<usize>,
    /// Packets per RX burst (1..=256).
    #[serde(default = "d_burst")]
    pub burst_size: usize,
    /// Status line period; 0 disables it.
    #[serde(default = "d_status")]
    pub status_interval_ms: u64,
    /// ICMP error (Time Exceeded) rate limit per worker, packets per second.
    #[serde(default = "d_icmp_rate")]
    pub icmp_error_rate_pps: u32,
    #[serde(default = "d_icmp_burst")]
    pub icmp_error_burst: u32,
    /// Minimum interval between ARP requests / Neighbor Solicitations for one address.
    #[serde(default = "d_solicit")]
    pub neighbour_solicit_interval_ms: u64,
    /// Most neighbours learned from ARP / ND at once (static ones apart);
    /// beyond it new addresses are not learned (`neighbour-learn-refused`).
    #[serde(default = "d_neigh_limit")]
    pub neighbour_learn_limit: usize,
    /// Neighbour unreachability detection: a learned neighbour is
    /// REACHABLE this long (randomised 0.5x..1.5x) after it was last
    /// confirmed, then STALE; one in use is then probed (unicast) and
    /// deleted when `neighbour_probes`
    /// probes go unanswered; ECMP gateways are probed whether used or not,
    /// and ECMP routes leave out those that do not answer. 0: off.
    #[serde(default = "d_reachable")]
    pub neighbour_reachable_ms: u64,
    #[serde(default = "d_probes")]
    pub neighbour_probes: u32,
    /// A STALE learned neighbour nobody forwards to is deleted after this
    /// long, unless it is a route's gateway or an End.X next hop (Linux
    /// gc_stale_time). 0: kept.
    #[serde(default = "d_stale")]
    pub neighbour_stale_ms: u64,
    /// The longest gap between the solicitations of an ECMP gateway that
    /// stopped answering (the gap doubles from the solicit interval; RFC
    /// 7048 MAX_RETRANS_TIMER).
    #[serde(default = "d_retry_max")]
    pub neighbour_retry_max_ms: u64,
    /// Packets to a neighbour whose address is not known yet wait for it
    /// (ARP / ND), at most this many per neighbour (Linux unres_qlen);
    /// 0: dropped at once (`neighbour-miss`).
    #[serde(default = "d_queue_packets")]
    pub neighbour_queue_packets: u32,
    /// At most this many mbufs of such packets per worker (a chained frame
    /// counts its segments); by default 1024, or an
    /// eighth of `mempool.mbufs_per_socket` shared by the workers when
    /// that is less (at most a quarter).
    #[serde(default)]
    pub neighbour_queue_total: Option<usize>,
    /// How long such a packet waits (then `neighbour-timeout`).
    #[serde(default = "d_queue_ms")]
    pub neighbour_queue_ms: u64,
    /// End.MT replicas reference the received payload instead of copying it
    /// (when every port sends chained mbufs; otherwise full copies).
    #[serde(default = "d_true")]
    pub zero_copy_replication: bool,
    /// Seed of the ECMP flow hash; by default one derived from the
    /// interfaces' addresses, so that routers in a row split flows
    /// differently (no hash polarization).
    #[serde(default)]
    pub ecmp_seed: Option<u64>,
}

impl DataplaneSection {
    /// The packets one worker holds for unresolved neighbours at most.
    pub fn neighbour_queue_total(&self, mbufs_per_socket: u32) -> usize {
        let share = mbufs_per_socket as usize / 8 / self.worker_cores.len().max(1);
        self.neighbour_queue_total.unwrap_or_else(|| dataplane::unres::HoldConfig::DEFAULT.total.min(share).max(1))
    }
}

impl Default for DataplaneSection {
    fn default() -> Self {
        DataplaneSection {
            worker_cores: Vec::new(),
            burst_size: d_burst(),
            status_interval_ms: d_status(),
            icmp_error_rate_pps: d_icmp_rate(),
            icmp_error_burst: d_icmp_burst(),
            neighbour_solicit_interval_ms: d_solicit(),
            neighbour_learn_limit: d_neigh_limit(),
            neighbour_reachable_ms: d_reachable(),
            neighbour_probes: d_probes(),
            neighbour_stale_ms: d_stale(),
            neighbour_retry_max_ms: d_retry_max(),
            neighbour_queue_packets: d_queue_packets(),
            neighbour_queue_total: None,
            neighbour_queue_ms: d_queue_ms(),
            zero_copy_replication: true,
            ecmp_seed: None,
        }
    }
}

fn d_mbufs() -> u32 {
    16383
}
fn d_cache() -> u32 {
    256
}
fn d_room() -> u16 {
    2176
}
fn d_hdr_mbufs() -> u32 {
    8191
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MempoolSection {
    /// Mbufs per NUMA socket in use (2^n - 1 is most efficient).
    #[serde(default = "d_mbufs")]
    pub mbufs_per_socket: u32,
    /// Per-lcore cache (<= 512 and <= mbufs / 1.5).
    #[serde(default = "d_cache")]
    pub cache_size: u32,
    /// Data room per mbuf including the 128-byte headroom.
    #[serde(default = "d_room")]
    pub data_room: u16,
    /// Small mbufs per socket for End.MT zero-copy replicas (the private
    /// header, the reference to the shared payload and the ICRC tail of
    /// every copy); 0: take them from the main pool. Kept apart so the
    /// three allocations per copy stay in cache instead of walking the
    /// large packet pool.
    #[serde(default = "d_hdr_mbufs")]
    pub header_mbufs: u32,
}

impl Default for MempoolSection {
    fn default() -> Self {
        MempoolSection { mbufs_per_socket: d_mbufs(), cache_size: d_cache(), data_room: d_room(), header_mbufs: d_hdr_mbufs() }
    }
}

/// Overrides of the IANA-pending values (see `dataplane::wire::params`).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WireSection {
    pub icmpv6_lhcnp_type: Option<u8>,
    pub icmpv6_fann_type: Option<u8>,
    pub lhcnp_ext_class_num: Option<u8>,
    pub srh_tlv_end_mt: Option<u8>,
    pub behaviour_end_mt: Option<u16>,
    pub behaviour_end_c: Option<u16>,
    pub behaviour_end_e: Option<u16>,
    pub fann_udp_port: Option<u16>,
}

fn d_q() -> u16 {
    1
}
fn d_desc() -> u16 {
    1024
}
fn d_mtu() -> u16 {
    1500
}
fn d_true() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSection {
    pub name: String,
    /// A DPDK virtual device (`net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap`,
    /// `net_tap0,iface=dtap0`) or a PCI address (`0000:3b:00.0`).
    pub device: String,
    #[serde(default = "d_q")]
    pub rx_queues: u16,
    #[serde(default = "d_desc")]
    pub rx_desc: u16,
    #[serde(default = "d_desc")]
    pub tx_desc: u16,
    #[serde(default = "d_mtu")]
    pub mtu: u16,
    pub mac: Option<String>,
    #[serde(default = "d_true")]
    pub promiscuous: bool,
    #[serde(default)]
    pub addresses: Vec<String>,
    #[serde(default, rename = "vlan")]
    pub vlans: Vec<VlanSection>,
    /// Source address validation of arriving packets (BCP 38, RFC 3704):
    /// "off", "loose" (a route to the source exists) or "strict" (it
    /// leaves by this interface). Default "off".
    pub urpf: Option<String>,
    /// R_port: shape the egress to this rate through the deep-buffer queue
    /// (absent: no software queue, the NIC's own rate).
    pub rate_mbps: Option<u64>,
    /// Size of the deep-buffer egress queue in bytes (default
    /// [`PortSection::queue_bytes`]); only with `rate_mbps`.
    #[serde(rename = "queue_bytes")]
    pub queue_bytes_set: Option<u64>,
    /// Most packets that queue may hold (every one holds an mbuf). Default:
    /// an equal share of half of `mempool.mbufs_per_socket` among the
    /// shaped ports, so a queue of small packets cannot take the buffers
    /// every port receives into; all together at most half the pool.
    pub queue_packets: Option<u32>,
    /// Bytes each frame costs the link beyond its own, counted by the
    /// shaper (default: Ethernet's preamble, SFD, FCS and inter-frame gap,
    /// 24); only with `rate_mbps`.
    pub frame_overhead: Option<u32>,
    /// The share of the port (1..=100 %) the priority queue (notifications,
    /// ARP / ND) may take while data waits (default 10; 100: no bound).
    pub priority_percent: Option<u32>,
    /// The congestion-aware node on this egress port (Long-haul CNP).
    pub congestion: Option<CongestionSection>,
    /// Received PAUSE / PFC frames honoured on this port.
    pub pfc: Option<PfcSection>,
}

/// `[port.pfc]`: the port honours the PAUSE / PFC frames its neighbour
/// sends (802.3 Annex 31B, 802.1Qbb): the data of a paused priority waits
/// in the port's egress queue (which the port then has even without
/// `rate_mbps`), the other priorities keep leaving.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcSection {
    /// The priorities (0..=7) whose PFC pause is honoured.
    #[serde(default)]
    pub priorities: Vec<u8>,
    /// Honour 802.3x PAUSE (stops every priority).
    #[serde(default)]
    pub pause: bool,
    /// DSCP -> priority of untagged data, e.g. { 26 = 3 } (a tagged
    /// frame's PCP decides for it).
    #[serde(default)]
    pub dscp_priority: std::collections::BTreeMap<String, u8>,
    /// Priority of the DSCPs not in `dscp_priority`.
    #[serde(default)]
    pub default_priority: u8,
    /// Link speed in Mb/s, the unit of the pause quanta (512 bit times);
    /// default: the speed the NIC reports.
    pub link_mbps: Option<u64>,
    /// PFC watchdog: a priority paused without a break this long is
    /// released and its pauses ignored for `restore_ms` (absent: off).
    pub watchdog_ms: Option<u64>,
    /// Default: `watchdog_ms`.
    pub restore_ms: Option<u64>,
}

/// `[port.congestion]`: draft-tian-ccwg-long-haul-cnp on this egress port.
/// Defaults follow the draft's section 7 example where it gives numbers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CongestionSection {
    /// RTT_est in microseconds (changeable at runtime).
    pub rtt_est_us: u64,
    #[serde(default = "d_k_base")]
    pub k_base_bytes: u64,
    #[serde(default = "d_alpha")]
    pub alpha: f64,
    /// Default K_max / 2.
    pub k_min_bytes: Option<u64>,
    /// EMR threshold: fraction of packets CE-marked in an interval.
    #[serde(default = "d_v_ecn")]
    pub v_ecn: f64,
    /// QGR threshold in KB/ms.
    #[serde(default = "d_v_growth")]
    pub v_growth_kb_per_ms: f64,
    #[serde(default = "d_interval")]
    pub interval_us: u64,
    #[serde(default = "d_cnp_pps")]
    pub cnp_max_pps: u32,
    #[serde(default = "d_cnp_burst")]
    pub cnp_burst: u32,
    #[serde(default = "d_flows")]
    pub flows: usize,
    #[serde(default = "d_flow_idle")]
    pub flow_idle_ms: u64,
    #[serde(default)]
    pub zero_metrics: bool,
    #[serde(default = "d_true")]
    pub suppression: bool,
    #[serde(default)]
    pub adaptive: bool,
    /// "interval" (QD sampled when a monitoring interval closes) or
    /// "immediate" (at the first poll that sees QD above K_max).
    #[serde(default = "d_qd_trigger")]
    pub qd_trigger: String,
    /// "icmpv6" or "roce": the CNP format for sources no `source_format`
    /// prefix covers. IPv4 sources only take "roce" (s.4), and only where
    /// configured (s.10.5): with "icmpv6" here, IPv4 sources outside every
    /// `roce` prefix get no CNP.
    #[serde(default = "d_format")]
    pub format: String,
    /// Notify this many top-contributing flows per evaluation.
    #[serde(default = "d_top")]
    pub top_flows: u8,
    /// A flow whose source QP is unknown: "send" its CNP anyway (DestQP
    /// 0), "icmpv6-only" (no RoCEv2-format CNP, which names no QP a NIC
    /// could act on), or "skip".
    #[serde(default = "d_unknown_qp")]
    pub unknown_source_qp: String,
    /// Suppression's observation window (s.5.7), microseconds; default
    /// RTT_est.
    pub observation_window_us: Option<u64>,
    /// CNP source addresses (section 9: only the router's configured
    /// address); default: the address of the interface toward the
    /// flow's source.
    pub source_v4: Option<String>,
    pub source_v6: Option<String>,
    /// WAN P node in SRv6 tunnels: encapsulate CNPs toward the ingress PE's
    /// END.E SID (draft-hu-acn-rocev2 s.4.2).
    pub end_e_sid: Option<String>,
    /// Source QPs known from the operator (s.5.2: data packets carry only
    /// the destination QP); they win over what responses teach.
    #[serde(default)]
    pub source_qp: Vec<SourceQpSection>,
    /// CNP formats by source prefix (endpoints configured to accept the
    /// RoCEv2 format, s.10.5).
    #[serde(default)]
    pub source_format: Vec<SourceFormatSection>,
    /// RTT_est by active probing (s.5.3.1): `rtt_est_us` until the first
    /// answer, then the smallest round trip of the last `window` probes.
    pub rtt_probe: Option<RttProbeSection>,
    /// RTT_est by receiver reporting (s.5.3.1): the receivers' RC ACKs
    /// time this port's packets; `rtt_est_us` until the first, then the
    /// smallest round trip of the last `window_ms`.
    pub rtt_acks: Option<RttAcksSection>,
}

/// `[port.congestion.rtt_acks]`: RTT_est from the round trips between a
/// data packet with the AckReq bit leaving the port and the receiver's ACK
/// for it coming back.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttAcksSection {
    #[serde(default = "d_acks_window")]
    pub window_ms: u64,
    #[serde(default = "d_probe_timeout")]
    pub timeout_ms: u64,
    /// With `[fann]`: as `rtt_probe.degraded_us`.
    pub degraded_us: Option<u64>,
}

fn d_acks_window() -> u64 {
    10_000
}

/// `[port.congestion.rtt_probe]`: Echo Requests to `target` (the far end
/// of the port's WAN link, or the next router of the long-haul path) every
/// `interval_ms`; RTT_est follows the smallest round trip of the last
/// `window` of them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttProbeSection {
    pub target: String,
    #[serde(default = "d_probe_interval")]
    pub interval_ms: u64,
    #[serde(default = "d_probe_timeout")]
    pub timeout_ms: u64,
    #[serde(default = "d_probe_window")]
    pub window: usize,
    /// With `[fann]`: a round trip (the estimate) at or above this is a
    /// FANN Performance degradation event with Latency and Jitter
    /// metadata, to the ingress PEs.
    pub degraded_us: Option<u64>,
}

fn d_probe_interval() -> u64 {
    1000
}
fn d_probe_timeout() -> u64 {
    1000
}
fn d_probe_window() -> usize {
    10
}

/// `[[port.congestion.source_format]]`: the Long-haul CNP format the
/// sources in `prefix` accept.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceFormatSection {
    pub prefix: String,
    pub format: String,
}

/// The `prefix` of a `source_format` entry (`f`: the field's name for
/// errors): a prefix without host bits.
pub fn source_prefix(prefix: &str, f: &str) -> Result<IpNet, String> {
    let n: IpNet = prefix.parse().map_err(|_| format!("{f}.prefix = {prefix:?}: not a prefix (address/length)"))?;
    if n != n.trunc() {
        return Err(format!("{f}.prefix = {n}: host bits set (did you mean {}?)", n.trunc()));
    }
    Ok(n)
}

/// Validate one CNP format by source prefix (`f`: the field's name for
/// errors).
pub fn source_format(prefix: &str, format: &str, f: &str) -> Result<(IpNet, dataplane::congestion::CnpFormat), String> {
    use dataplane::congestion::CnpFormat;
    let n = source_prefix(prefix, f)?;
    let fmt = match format {
        "icmpv6" => CnpFormat::Icmpv6,
        "roce" => CnpFormat::Roce,
        other => return Err(format!("{f}.format = {other:?}: must be \"icmpv6\" or \"roce\"")),
    };
    if fmt == CnpFormat::Icmpv6 && n.addr().is_ipv4() {
        return Err(format!("{f}.format = \"icmpv6\": prefix {n} is IPv4, and IPv4 sources only take the RoCEv2 format (draft-tian s.4)"));
    }
    Ok((n, fmt))
}

/// `[[port.congestion.source_qp]]`: the source QP of the flow (source,
/// destination, dest_qp).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceQpSection {
    pub source: String,
    pub destination: String,
    pub dest_qp: u32,
    pub source_qp: u32,
}

/// A configured source QP: (source, destination, DestQP, source QP).
pub type SourceQp = (IpAddr, IpAddr, u32, u32);

/// Validate one configured source QP (`f`: the field's name for errors).
pub fn source_qp(source: &str, destination: &str, dest_qp: u32, src_qp: u32, f: &str) -> Result<SourceQp, String> {
    let a: IpAddr = source.parse().map_err(|_| format!("{f}.source = {source:?}: not an IP address"))?;
    let b: IpAddr = destination.parse().map_err(|_| format!("{f}.destination = {destination:?}: not an IP address"))?;
    if a.is_ipv4() != b.is_ipv4() {
        return Err(format!("{f}.destination = {b}: not the family of source {a}"));
    }
    for (k, v) in [("dest_qp", dest_qp), ("source_qp", src_qp)] {
        if v > 0x00ff_ffff {
            return Err(format!("{f}.{k} = {v}: a QPN has 24 bits (at most 16777215)"));
        }
    }
    Ok((a, b, dest_qp, src_qp))
}

fn d_k_base() -> u64 {
    64 * 1024
}
fn d_alpha() -> f64 {
    1.0
}
fn d_v_ecn() -> f64 {
    0.5
}
fn d_v_growth() -> f64 {
    1.0e9
}
fn d_interval() -> u64 {
    1000
}
fn d_cnp_pps() -> u32 {
    10_000
}
fn d_cnp_burst() -> u32 {
    100
}
fn d_flows() -> usize {
    65536
}
fn d_flow_idle() -> u64 {
    10_000
}
fn d_format() -> String {
    "icmpv6".into()
}
fn d_unknown_qp() -> String {
    "send".into()
}
fn d_qd_trigger() -> String {
    // s.5.4: "MUST trigger ... when ... QD exceeds K_max": at the first
    // poll that sees it, so an excursion inside one interval is not missed.
    "immediate".into()
}
fn d_top() -> u8 {
    1
}

/// A validated `[port.congestion]`.
#[derive(Debug, Clone)]
pub struct CongestionPlan {
    pub params: dataplane::congestion::PortParams,
    pub source_v4: Option<std::net::Ipv4Addr>,
    pub source_v6: Option<std::net::Ipv6Addr>,
    pub end_e_sid: Option<std::net::Ipv6Addr>,
    pub source_qps: Vec<SourceQp>,
    pub source_formats: Vec<(IpNet, dataplane::congestion::CnpFormat)>,
    /// No rate_mbps: R_port is the link speed, set once the port has
    /// started ([`congestion_params_at_link`]).
    pub rate_from_link: bool,
    /// RTT_est by active probing (`[port.congestion.rtt_probe]`).
    pub rtt_probe: Option<dataplane::rttprobe::ProbeConfig>,
    /// `[port.congestion.rtt_acks]` (the measurement is
    /// `params.ack_rtt`'s): its FANN Performance degradation threshold,
    /// ns (0: none).
    pub rtt_acks_degraded_ns: Option<u64>,
}

/// The fewest packets a shaped port's queue may be limited to.
const MIN_QUEUE_PACKETS: u32 = 64;
/// The most a frame may cost a shaped link beyond its bytes
/// (`port.frame_overhead`): Ethernet's 24 and room for the encapsulations
/// of a provider's link.
const MAX_FRAME_OVERHEAD: u32 = 256;

impl PortSection {
    /// The deep-buffer queue's size: as configured, else the default.
    pub fn queue_bytes(&self) -> u64 {
        self.queue_bytes_set.unwrap_or_else(d_queue_bytes)
    }
}

fn d_queue_bytes() -> u64 {
    64 << 20
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VlanSection {
    pub id: u16,
    #[serde(default)]
    pub addresses: Vec<String>,
    /// As the port's `urpf`; default: the port's.
    pub urpf: Option<String>,
}

fn parse_urpf(v: Option<&str>, field: &str, default: dataplane::tables::Urpf) -> Result<dataplane::tables::Urpf, String> {
    use dataplane::tables::Urpf;
    match v {
        None => Ok(default),
        Some("off") => Ok(Urpf::Off),
        Some("loose") => Ok(Urpf::Loose),
        Some("strict") => Ok(Urpf::Strict),
        Some(o) => Err(format!("{field} = {o:?}: must be \"off\", \"loose\" or \"strict\"")),
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSection {
    pub prefix: String,
    pub via: Option<String>,
    pub interface: Option<String>,
    /// ECMP: several next hops (instead of `via` / `interface`), each a
    /// flow's choice in proportion to its weight.
    #[serde(default)]
    pub nexthop: Vec<NexthopSection>,
}

/// One next hop of an ECMP route: `{ via = "...", interface = "...", weight = N }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NexthopSection {
    pub via: Option<String>,
    pub interface: Option<String>,
    #[serde(default = "d_weight")]
    pub weight: u16,
}

fn d_weight() -> u16 {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighbourSection {
    pub ip: String,
    pub mac: String,
    pub interface: String,
}

/// A port after validation.
#[derive(Debug, Clone)]
pub struct PortPlan {
    pub name: String,
    pub device: String,
    /// The name DPDK knows the device by (vdev name or PCI address).
    pub device_name: String,
    pub is_vdev: bool,
    pub rx_queues: u16,
    pub rx_desc: u16,
    pub tx_desc: u16,
    pub mtu: u16,
    pub mac: Option<[u8; 6]>,
    pub promiscuous: bool,
    /// The egress stage (shaper + deep buffer), when configured.
    pub egress: Option<dataplane::egress::EgressConfig>,
    /// The congestion-aware node on this port, when configured.
    pub congestion: Option<CongestionPlan>,
    /// Received PAUSE / PFC honoured, when configured.
    pub pfc: Option<dataplane::pfcrx::PfcRxConfig>,
    /// Link speed in bit/s as the NIC reported it at start-up (0: not
    /// known yet, or not started).
    pub link_bps: u64,
}

/// A validated configuration: everything needed to start, nothing unchecked.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    pub eal_args: Vec<String>,
    pub dataplane: DataplaneSection,
    pub mempool: MempoolSection,
    pub params: Params,
    pub ports: Vec<PortPlan>,
    /// Interfaces (MACs filled in from the device at start when not configured).
    pub interfaces: Vec<Interface>,
    pub fib: Fib,
    pub neighbours: Neighbours,
    pub srv6: Option<Srv6Plan>,
    pub fann: Option<crate::fann_agent::FannPlan>,
    /// End.MT reverse-path groups.
    pub multicast: Vec<GroupPlan>,
    pub ingress_pe: Option<dataplane::fann::PeConfig>,
    /// Ingress PEs' END.C / END.E SIDs for notifications (WAN node).
    pub wan_notify: Vec<WanNotifyPlan>,
    /// AH SAs of the Long-haul CNPs (`[[cnp_auth]]`), shared by the ports.
    pub cnp_auth: std::sync::Arc<dataplane::congestion::CnpAuth>,
    /// Static IPv6 multicast routes.
    pub mroutes: Vec<dataplane::tables::Mroute>,
    /// MLD (None: not configured).
    pub mld: Option<MldPlan>,
    /// The ICMP identifier of the RTT probes (random per start; None:
    /// no port probes).
    pub echo_probe_id: Option<u16>,
    /// `[metrics] listen`.
    pub metrics_listen: Option<std::net::SocketAddr>,
}

impl RouterConfig {
    /// (sender prefix, SID) pairs for the congestion-aware ports.
    pub fn notify_sids(&self) -> Vec<(IpNet, std::net::Ipv6Addr)> {
        self.wan_notify.iter().flat_map(|w| w.sources.iter().map(move |p| (*p, w.sid))).collect()
    }

    /// (tunnel source prefix, SID, ingress PE) for the congestion-aware
    /// ports; a flow's tunnel tag is 1 + its index here.
    pub fn tunnel_pe_list(&self) -> Vec<(ipnet::Ipv6Net, std::net::Ipv6Addr, std::net::Ipv6Addr)> {
        self.wan_notify.iter().flat_map(|w| w.tunnel_sources.iter().map(move |p| (*p, w.sid, w.ingress_pe))).collect()
    }

    /// (tunnel source prefix, SID) pairs for the congestion-aware ports.
    pub fn tunnel_pes(&self) -> Vec<(ipnet::Ipv6Net, std::net::Ipv6Addr)> {
        self.tunnel_pe_list().into_iter().map(|(p, s, _)| (p, s)).collect()
    }
    pub fn topology(&self) -> Topology {
        let mut t = Topology::new(self.interfaces.clone());
        t.mroutes = self.mroutes.clone();
        t.mld = self.mld.as_ref().map(|m| m.ifaces.clone()).unwrap_or_default();
        t.echo_probe_id = self.echo_probe_id;
        t
    }
    pub fn iface_index(&self, name: &str) -> Option<u16> {
        self.interfaces.iter().position(|i| i.name == name).map(|i| i as u16)
    }
}

pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut n = 0;
    for (i, part) in s.split([':', '-']).enumerate() {
        if i >= 6 || part.len() != 2 {
            return None;
        }
        out[i] = u8::from_str_radix(part, 16).ok()?;
        n += 1;
    }
    (n == 6).then_some(out)
}

/// A PCI address as DPDK's `-a` takes it: dddd:bb:dd.f or bb:dd.f.
pub fn is_pci(s: &str) -> bool {
    // dddd:bb:dd.f or bb:dd.f
    let b = s.as_bytes();
    let hex = |c: u8| c.is_ascii_hexdigit();
    match b.len() {
        12 => b[4] == b':' && b[7] == b':' && b[10] == b'.' && b.iter().enumerate().all(|(i, c)| [4, 7, 10].contains(&i) || hex(*c)),
        7 => b[2] == b':' && b[5] == b'.' && b.iter().enumerate().all(|(i, c)| [2, 5].contains(&i) || hex(*c)),
        _ => false,
    }
}

/// Parse TOML text into a validated configuration.
pub fn load_str(text: &str) -> Result<RouterConfig, String> {
    let f: FileConfig = toml::from_str(text).map_err(|e| format!("configuration: {e}"))?;
    validate(f)
}

pub fn load_file(path: &str) -> Result<RouterConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("configuration file {path}: {e}"))?;
    load_str(&text).map_err(|e| format!("{path}: {e}"))
}

pub fn validate(f: FileConfig) -> Result<RouterConfig, String> {
    let err = |field: String, value: &dyn std::fmt::Display, why: &str| -> Result<RouterConfig, String> {
        Err(format!("{field} = {value}: {why}"))
    };
    let d = &f.dataplane;
    if d.burst_size == 0 || d.burst_size > 256 {
        return err("dataplane.burst_size".into(), &d.burst_size, "must be 1..=256");
    }
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut seen = HashSet::new();
    for (i, c) in d.worker_cores.iter().enumerate() {
        if *c >= ncpu.max(256) {
            return err(format!("dataplane.worker_cores[{i}]"), c, "no such CPU");
        }
        if !seen.insert(*c) {
            return err(format!("dataplane.worker_cores[{i}]"), c, "listed twice");
        }
    }
    if d.neighbour_learn_limit == 0 || d.neighbour_learn_limit > 1 << 20 {
        return err("dataplane.neighbour_learn_limit".into(), &d.neighbour_learn_limit, "must be 1..=1048576");
    }
    if d.neighbour_reachable_ms != 0 && !(100..=3_600_000).contains(&d.neighbour_reachable_ms) {
        return err("dataplane.neighbour_reachable_ms".into(), &d.neighbour_reachable_ms, "must be 0 (off) or 100..=3600000");
    }
    if d.neighbour_stale_ms != 0 && !(100..=86_400_000).contains(&d.neighbour_stale_ms) {
        return err("dataplane.neighbour_stale_ms".into(), &d.neighbour_stale_ms, "must be 0 (kept) or 100..=86400000");
    }
    if !(1..=10).contains(&d.neighbour_probes) {
        return err("dataplane.neighbour_probes".into(), &d.neighbour_probes, "must be 1..=10");
    }
    if !(50..=60_000).contains(&d.neighbour_solicit_interval_ms) {
        return err("dataplane.neighbour_solicit_interval_ms".into(), &d.neighbour_solicit_interval_ms, "must be 50..=60000 (the least gap between ARP requests / NS for one address, and between reachability probes, which the control thread sends every 50 ms)");
    }
    if d.neighbour_reachable_ms != 0 && !(d.neighbour_solicit_interval_ms..=3_600_000).contains(&d.neighbour_retry_max_ms) {
        return err("dataplane.neighbour_retry_max_ms".into(), &d.neighbour_retry_max_ms, &format!("must be neighbour_solicit_interval_ms ({})..=3600000 unless neighbour_reachable_ms = 0", d.neighbour_solicit_interval_ms));
    }
    if d.icmp_error_burst == 0 && d.icmp_error_rate_pps > 0 {
        return err("dataplane.icmp_error_burst".into(), &0, "must be >= 1 when icmp_error_rate_pps > 0");
    }
    if d.icmp_error_rate_pps == 0 && d.icmp_error_burst > 0 {
        return err("dataplane.icmp_error_rate_pps".into(), &0, &format!("with icmp_error_burst = {} the router would send that many ICMP errors ever; set both to 0 to send none", d.icmp_error_burst));
    }
    let m = &f.mempool;
    if m.mbufs_per_socket < 1024 {
        return err("mempool.mbufs_per_socket".into(), &m.mbufs_per_socket, "must be at least 1024");
    }
    if m.cache_size > 512 || f64::from(m.cache_size) * 1.5 > f64::from(m.mbufs_per_socket) {
        return err("mempool.cache_size".into(), &m.cache_size, "must be <= 512 and <= mbufs_per_socket / 1.5");
    }
    if m.data_room < 128 + 1518 {
        return err("mempool.data_room".into(), &m.data_room, "must hold 128 bytes of headroom and a 1518-byte frame (>= 1646)");
    }
    if m.header_mbufs != 0 && m.header_mbufs < 1024 {
        return err("mempool.header_mbufs".into(), &m.header_mbufs, "must be 0 (off) or at least 1024");
    }
    // Checked whether packets wait or not: a value out of range is one
    // either way, and a total with nothing waiting has no effect.
    if !(50..=60_000).contains(&d.neighbour_queue_ms) {
        return err("dataplane.neighbour_queue_ms".into(), &d.neighbour_queue_ms, "must be 50..=60000 (waiting packets are looked at every 50 ms)");
    }
    if let (0, Some(t)) = (d.neighbour_queue_packets, d.neighbour_queue_total) {
        return err("dataplane.neighbour_queue_total".into(), &t, "has no effect with neighbour_queue_packets = 0 (no packet waits)");
    }
    if d.neighbour_queue_packets > 0 {
        // Held packets are mbufs: the workers' shares must leave most of
        // the pool to traffic.
        let workers = d.worker_cores.len().max(1);
        let room = m.mbufs_per_socket as usize / 4;
        if let Some(t) = d.neighbour_queue_total {
            if t < d.neighbour_queue_packets as usize {
                return err("dataplane.neighbour_queue_total".into(), &t, &format!("must be at least neighbour_queue_packets ({})", d.neighbour_queue_packets));
            }
            if t.saturating_mul(workers) > room {
                return err("dataplane.neighbour_queue_total".into(), &t, &format!("x {workers} worker(s) must be at most a quarter of mempool.mbufs_per_socket ({room})"));
            }
        }
    }

    let mut params = Params::DEFAULT;
    let w = &f.wire;
    macro_rules! ovr {
        ($($f:ident),*) => { $( if let Some(v) = w.$f { params.$f = v; } )* };
    }
    ovr!(icmpv6_lhcnp_type, icmpv6_fann_type, lhcnp_ext_class_num, srh_tlv_end_mt, behaviour_end_mt, behaviour_end_c, behaviour_end_e, fann_udp_port);
    for (name, v) in [("wire.icmpv6_lhcnp_type", params.icmpv6_lhcnp_type), ("wire.icmpv6_fann_type", params.icmpv6_fann_type)] {
        if v < 128 {
            return err(name.into(), &v, "must be an ICMPv6 informational type (128..=255)");
        }
        if (128..=137).contains(&v) || v == 143 {
            return err(name.into(), &v, "is a type the router answers itself (Echo, MLD, Neighbor Discovery); the drafts' messages need their own");
        }
    }
    if [0, 4, 5].contains(&params.srh_tlv_end_mt) {
        return err("wire.srh_tlv_end_mt".into(), &params.srh_tlv_end_mt, "is an RFC 8754 TLV type (0 Pad1, 4 PadN, 5 HMAC)");
    }
    // RFC 8986 s.10.2 codepoints that a node advertises for other
    // behaviours (`dcirouter isis`: End, End.DT6, End.DT4; End.X with its
    // adjacency), the reserved 0 and Opaque: END.C / END.E / End.MT under
    // one of them would read as that behaviour.
    for (name, v) in [("wire.behaviour_end_mt", params.behaviour_end_mt), ("wire.behaviour_end_c", params.behaviour_end_c), ("wire.behaviour_end_e", params.behaviour_end_e)] {
        let taken = match v {
            0 => Some("reserved"),
            1 => Some("End"),
            5 => Some("End.X"),
            18 => Some("End.DT6"),
            19 => Some("End.DT4"),
            65535 => Some("Opaque"),
            _ => None,
        };
        if let Some(what) = taken {
            return err(name.into(), &v, &format!("is RFC 8986's SRv6 Endpoint Behavior codepoint for {what} (s.10.2); the drafts' behaviours need codepoints of their own (private use: 65280..=65534)"));
        }
    }
    for (name, v, other, ov) in [
        ("wire.behaviour_end_c", params.behaviour_end_c, "wire.behaviour_end_mt", params.behaviour_end_mt),
        ("wire.behaviour_end_e", params.behaviour_end_e, "wire.behaviour_end_mt", params.behaviour_end_mt),
        ("wire.behaviour_end_e", params.behaviour_end_e, "wire.behaviour_end_c", params.behaviour_end_c),
    ] {
        if v == ov {
            return err(name.into(), &v, &format!("must differ from {other}"));
        }
    }
    if params.icmpv6_lhcnp_type == params.icmpv6_fann_type {
        return err("wire.icmpv6_fann_type".into(), &params.icmpv6_fann_type, "must differ from wire.icmpv6_lhcnp_type");
    }
    if params.fann_udp_port == 0 || params.fann_udp_port == dataplane::wire::params::ROCEV2_UDP_PORT {
        return err("wire.fann_udp_port".into(), &params.fann_udp_port, "must be non-zero and not 4791");
    }

    if f.ports.is_empty() {
        return Err("port: at least one [[port]] is required".into());
    }
    if f.ports.len() > dataplane::counters::MAX_PORTS {
        return err("port".into(), &f.ports.len(), &format!("at most {} ports", dataplane::counters::MAX_PORTS));
    }
    // Ports with a software queue: shaped, or congestion-aware (drained at
    // the link speed when not shaped).
    let shaped_ports = f.ports.iter().filter(|p| p.rate_mbps.is_some() || p.congestion.is_some() || p.pfc.is_some()).count() as u32;
    let mut queued_mbufs = 0u64;
    let mut ports = Vec::new();
    let mut interfaces: Vec<Interface> = Vec::new();
    let mut names = HashSet::new();
    let mut devs = HashSet::new();
    let mut addrs: HashSet<IpAddr> = HashSet::new();
    // Connected subnets so far, with their interface: two interfaces
    // cannot share one (the later connected route would replace the other).
    let mut nets: Vec<(IpNet, String)> = Vec::new();
    for (i, p) in f.ports.iter().enumerate() {
        let fld = |s: &str| format!("port[{i}].{s}");
        if p.name.is_empty() || p.name.contains(char::is_whitespace) || p.name.contains('.') {
            return err(fld("name"), &format!("{:?}", p.name), "must be non-empty, without spaces or dots");
        }
        if !names.insert(p.name.clone()) {
            return err(fld("name"), &p.name, "duplicate port name");
        }
        let device_name = p.device.split(',').next().unwrap_or("").to_string();
        let is_vdev = device_name.starts_with("net_");
        if !is_vdev && !is_pci(&device_name) {
            return err(fld("device"), &p.device, "must be a DPDK virtual device (net_pcap0,...) or a PCI address (0000:3b:00.0)");
        }
        // One PCI function has several spellings: domain 0000 may be left
        // out, and the digits are hexadecimal in either case.
        let dev_key = if is_vdev {
            device_name.clone()
        } else if device_name.len() == 7 {
            format!("0000:{}", device_name.to_ascii_lowercase())
        } else {
            device_name.to_ascii_lowercase()
        };
        if !devs.insert(dev_key) {
            return err(fld("device"), &p.device, "device used by two ports");
        }
        if p.rx_queues == 0 || p.rx_queues > 64 {
            return err(fld("rx_queues"), &p.rx_queues, "must be 1..=64");
        }
        for (f2, v) in [("rx_desc", p.rx_desc), ("tx_desc", p.tx_desc)] {
            if !(64..=16384).contains(&v) || !v.is_power_of_two() {
                return err(fld(f2), &v, "must be a power of two in 64..=16384");
            }
        }
        if !(576..=9600).contains(&p.mtu) {
            return err(fld("mtu"), &p.mtu, "must be 576..=9600");
        }
        if usize::from(p.mtu) + 18 + 128 > usize::from(m.data_room) {
            return err(fld("mtu"), &p.mtu, "frame does not fit mempool.data_room (multi-segment RX is not enabled)");
        }
        let mac = match &p.mac {
            None => None,
            Some(s) => match parse_mac(s) {
                Some(mac) if mac[0] & 1 == 0 && mac != [0; 6] => Some(mac),
                _ => return err(fld("mac"), &format!("{s:?}"), "must be a unicast MAC like 02:00:00:00:00:01"),
            },
        };
        let port_id = i as u16; // provisional: the position; fixed up at start
        let mut ifc = Interface::new(&p.name, port_id, None, mac.unwrap_or([0; 6]), p.mtu);
        ifc.urpf = parse_urpf(p.urpf.as_deref(), &fld("urpf"), dataplane::tables::Urpf::Off)?;
        let port_urpf = ifc.urpf;
        parse_addrs(&p.addresses, &fld("addresses"), &mut ifc, &mut addrs, &mut nets)?;
        let ipv6_min = |ifc: &Interface| -> Result<(), String> {
            match ifc.v6.first() {
                Some(a) if p.mtu < 1280 => Err(format!("{} = {}: interface {} has IPv6 address {a}, and IPv6 needs an MTU of at least 1280 (RFC 8200 s.5)", fld("mtu"), p.mtu, ifc.name)),
                _ => Ok(()),
            }
        };
        ipv6_min(&ifc)?;
        let port_if = interfaces.len();
        interfaces.push(ifc);
        let mut vids = HashSet::new();
        for (j, v) in p.vlans.iter().enumerate() {
            let vf = format!("port[{i}].vlan[{j}]");
            if v.id == 0 || v.id >= 4095 {
                return err(format!("{vf}.id"), &v.id, "must be 1..=4094");
            }
            if !vids.insert(v.id) {
                return err(format!("{vf}.id"), &v.id, "duplicate VLAN on this port");
            }
            // The tag lengthens the frame, not the IP MTU (as a Linux VLAN
            // device inherits its parent's); the frame budget counts it.
            let mut vi = Interface::new(&format!("{}.{}", p.name, v.id), port_id, Some(v.id), mac.unwrap_or([0; 6]), p.mtu);
            vi.urpf = parse_urpf(v.urpf.as_deref(), &format!("{vf}.urpf"), port_urpf)?;
            parse_addrs(&v.addresses, &format!("{vf}.addresses"), &mut vi, &mut addrs, &mut nets)?;
            ipv6_min(&vi)?;
            interfaces.push(vi);
        }
        // The port's rate and queue before the congestion stage, whose
        // thresholds come from them (checked there, a rate over the range
        // overflowed and a queue over it was reported as shallower than
        // K_max).
        match p.rate_mbps {
            Some(0) => return err(fld("rate_mbps"), &0, "must be > 0 (omit it for an unshaped port)"),
            Some(r) if r > 1_600_000 => return err(fld("rate_mbps"), &r, "must be <= 1600000 (1.6 Tb/s)"),
            _ => {}
        }
        if (p.rate_mbps.is_some() || p.congestion.is_some() || p.pfc.is_some()) && (p.queue_bytes() < 64 * 1024 || p.queue_bytes() > (64u64 << 30)) {
            return err(fld("queue_bytes"), &p.queue_bytes(), "must be 64 KiB ..= 64 GiB");
        }
        let congestion = match &p.congestion {
            None => None,
            Some(c) => Some(congestion_plan(c, p, &fld("congestion"), &interfaces[port_if..])?),
        };
        let pfc = match &p.pfc {
            None => None,
            Some(c) => Some(pfc_plan(c, &fld("pfc"))?),
        };
        // A congestion-aware port without rate_mbps: its deep queue is
        // drained as fast as the NIC takes packets (TX backpressure), and
        // R_port is the link speed the NIC reports at start (issue 4:
        // "default: the link speed"). A port honouring PFC needs the queue
        // to hold the paused priorities in.
        let rate_mbps = match (p.rate_mbps, p.congestion.is_some() || pfc.is_some()) {
            (None, true) => Some(LINK_SPEED),
            (r, _) => r,
        };
        if let (None, Some(n)) = (p.rate_mbps, p.frame_overhead) {
            return err(fld("frame_overhead"), &n, "has no effect without rate_mbps (the port has no shaper)");
        }
        let egress = match rate_mbps {
            None => {
                // Without rate_mbps there is no software queue to size.
                if let Some(b) = p.queue_bytes_set {
                    return err(fld("queue_bytes"), &b, "has no effect without rate_mbps (the port has no software queue)");
                }
                if let Some(n) = p.queue_packets {
                    return err(fld("queue_packets"), &n, "has no effect without rate_mbps (the port has no software queue)");
                }
                if let Some(n) = p.priority_percent {
                    return err(fld("priority_percent"), &n, "has no effect without rate_mbps (the port has no software queue)");
                }
                None
            }
            Some(r) => {
                // LINK_SPEED: not shaped (rate 0: the NIC's line rate).
                // The rate and the queue were checked above.
                let r = if r == LINK_SPEED { 0 } else { r };
                let max_packets = match p.queue_packets {
                    Some(n) if n < MIN_QUEUE_PACKETS => {
                        return err(fld("queue_packets"), &n, &format!("must be at least {MIN_QUEUE_PACKETS}"));
                    }
                    Some(n) => n,
                    None => {
                        let share = m.mbufs_per_socket / 2 / shaped_ports.max(1);
                        if share < MIN_QUEUE_PACKETS {
                            return err(
                                "mempool.mbufs_per_socket".into(),
                                &m.mbufs_per_socket,
                                &format!("too few for {shaped_ports} shaped ports: half the pool, shared among their queues, must give each at least {MIN_QUEUE_PACKETS} packets"),
                            );
                        }
                        share
                    }
                };
                queued_mbufs += u64::from(max_packets);
                if queued_mbufs * 2 > u64::from(m.mbufs_per_socket) {
                    return err(
                        fld("queue_packets"),
                        &max_packets,
                        &format!(
                            "the shaped queues would hold {queued_mbufs} of mempool.mbufs_per_socket = {}: at most half (a quarter is for the hand-off rings, the rest for receiving)",
                            m.mbufs_per_socket
                        ),
                    );
                }
                Some(dataplane::egress::EgressConfig {
                    rate_bps: r * 1_000_000,
                    queue_bytes: p.queue_bytes(),
                    // 10 us at the port rate, at least one jumbo frame.
                    burst_bytes: (r * 1_000_000 / 8 / 100_000).max(9216),
                    max_packets: max_packets as usize,
                    priority_packets: 256,
                    frame_overhead: match p.frame_overhead {
                        None => dataplane::egress::ETHERNET_FRAME_OVERHEAD,
                        Some(n) if n > MAX_FRAME_OVERHEAD => return err(fld("frame_overhead"), &n, &format!("must be <= {MAX_FRAME_OVERHEAD} bytes")),
                        Some(n) => n,
                    },
                    priority_percent: match p.priority_percent {
                        None => dataplane::egress::DEFAULT_PRIORITY_PERCENT,
                        Some(n @ 1..=100) => n as u8,
                        Some(n) => return err(fld("priority_percent"), &n, "must be 1..=100 (the share of the port's bytes, in %)"),
                    },
                })
            }
        };
        ports.push(PortPlan {
            egress,
            congestion,
            pfc,
            name: p.name.clone(),
            device: p.device.clone(),
            device_name,
            is_vdev,
            rx_queues: p.rx_queues,
            rx_desc: p.rx_desc,
            tx_desc: p.tx_desc,
            mtu: p.mtu,
            mac,
            promiscuous: p.promiscuous,
            link_bps: 0,
        });
    }

    // draft-tian s.9: CNPs are sourced only from the router's configured
    // address, one of its interfaces'.
    for (i, p) in ports.iter().enumerate() {
        let Some(c) = &p.congestion else { continue };
        if let Some(v) = c.source_v4.filter(|v| !interfaces.iter().any(|x| x.v4.iter().any(|n| n.addr() == *v))) {
            return Err(format!("port[{i}].congestion.source_v4 = {v}: not an address of any interface (CNPs are sourced only from the router's own address, draft-tian s.9)"));
        }
        if let Some(v) = c.source_v6.filter(|v| !interfaces.iter().any(|x| x.v6.iter().any(|n| n.addr() == *v))) {
            return Err(format!("port[{i}].congestion.source_v6 = {v}: not an address of any interface (CNPs are sourced only from the router's own address, draft-tian s.9)"));
        }
    }
    // A NIC fills every RX descriptor with an mbuf when its port starts,
    // and its TX rings hold up to tx_desc each until the NIC is done with
    // them (DPDK l3fwd sizes its pool the same way); the pollers' caches
    // hold some more. Virtual devices fill no rings.
    let workers = d.worker_cores.len().max(1) as u64;
    let rings: u64 = ports.iter().filter(|p| !p.is_vdev).map(|p| u64::from(p.rx_queues) * u64::from(p.rx_desc) + workers * u64::from(p.tx_desc)).sum();
    let need = rings + (workers + 1) * u64::from(m.cache_size);
    if rings > 0 && need > u64::from(m.mbufs_per_socket) {
        return err(
            "mempool.mbufs_per_socket".into(),
            &m.mbufs_per_socket,
            &format!("the PCI ports' descriptor rings hold {rings} mbufs (rx_queues x rx_desc + one TX queue per worker x tx_desc, summed) and the caches {}: at least {need} are needed before a packet arrives; raise it or lower rx_desc / tx_desc", need - rings),
        );
    }
    // Connected routes from interface addresses.
    let mut fib = Fib::default();
    fib.bulk(|fib| {
        for (idx, ifc) in interfaces.iter().enumerate() {
            for n in &ifc.v4 {
                fib.insert4(n.trunc(), NextHop { iface: idx as u16, gateway: None });
            }
            for n in &ifc.v6 {
                fib.insert6(n.trunc(), NextHop { iface: idx as u16, gateway: None });
            }
        }
    });
    // Static routes in one batch: gateways resolve against the connected
    // routes compiled above.
    let mut fib2 = fib.clone();
    let mut static_routes = Vec::new();
    let iface_idx = |name: &str| interfaces.iter().position(|i| i.name == name).map(|i| i as u16);
    let mut seen_prefixes = HashSet::new();
    for (i, r) in f.routes.iter().enumerate() {
        let fld = |s: &str| format!("route[{i}].{s}");
        let prefix: IpNet = r.prefix.parse().map_err(|_| format!("{} = {:?}: not an IP prefix like 10.0.0.0/8", fld("prefix"), r.prefix))?;
        if prefix != prefix.trunc() {
            return Err(format!("{} = {prefix}: host bits set (did you mean {}?)", fld("prefix"), prefix.trunc()));
        }
        if !seen_prefixes.insert(prefix.trunc()) {
            return Err(format!("{} = {:?}: a second route to {}; give an ECMP route's next hops in one route's `nexthop` list", fld("prefix"), r.prefix, prefix.trunc()));
        }
        if let Some(ifc) = connected_owner(&interfaces, prefix) {
            return Err(format!("{} = {:?}: the connected subnet of interface {}; a static route would replace it", fld("prefix"), r.prefix, ifc.name));
        }
        // One next hop (`via` / `interface`), or an ECMP list (`nexthop`).
        let members: Vec<(String, Option<&String>, Option<&String>, u16)> = if r.nexthop.is_empty() {
            vec![(format!("route[{i}]"), r.via.as_ref(), r.interface.as_ref(), 1)]
        } else {
            if r.via.is_some() || r.interface.is_some() {
                return Err(format!("route[{i}] (prefix {}): give either via / interface or a nexthop list, not both", r.prefix));
            }
            r.nexthop.iter().enumerate().map(|(j, n)| (format!("route[{i}].nexthop[{j}]"), n.via.as_ref(), n.interface.as_ref(), n.weight)).collect()
        };
        let mut paths = Vec::new();
        for (at, via_s, dev, weight) in members {
            let via: Option<IpAddr> = match via_s {
                None => None,
                Some(s) => Some(s.parse().map_err(|_| format!("{at}.via = {s:?}: not an IP address"))?),
            };
            let nh = resolve_nexthop(&fib, &interfaces, prefix, via, dev.map(String::as_str), &iface_idx)
                .map_err(|why| format!("{at} (prefix {}{}): {why}", r.prefix, via_s.map(|v| format!(" via {v}")).unwrap_or_default()))?;
            if weight == 0 || weight > dataplane::tables::MAX_WEIGHT {
                return Err(format!("{at}.weight = {weight}: must be 1 to {}", dataplane::tables::MAX_WEIGHT));
            }
            if paths.iter().any(|(o, _)| *o == nh) {
                return Err(format!("{at} (prefix {}{}): the same next hop as an earlier one", r.prefix, via_s.map(|v| format!(" via {v}")).unwrap_or_default()));
            }
            paths.push((nh, weight));
        }
        let at = if r.nexthop.is_empty() { format!("route[{i}]") } else { format!("route[{i}].nexthop") };
        let route = Route::multipath(paths).map_err(|why| format!("{at} (prefix {}): {why}", r.prefix))?;
        static_routes.push((prefix, route));
    }
    fib2.bulk(|f| {
        for (prefix, route) in static_routes {
            f.insert(prefix, route);
        }
    });
    let mut fib = fib2;
    fib.set_seed(f.dataplane.ecmp_seed.unwrap_or_else(|| default_ecmp_seed(&interfaces)));
    let mut neighbours = Neighbours::default();
    for (i, n) in f.neighbours.iter().enumerate() {
        let fld = |s: &str| format!("neighbour[{i}].{s}");
        let ip: IpAddr = n.ip.parse().map_err(|_| format!("{} = {:?}: not an IP address", fld("ip"), n.ip))?;
        let mac = parse_mac(&n.mac).filter(|m| m[0] & 1 == 0 && *m != [0; 6]).ok_or_else(|| format!("{} = {:?}: not a unicast MAC", fld("mac"), n.mac))?;
        let idx = iface_idx(&n.interface).ok_or_else(|| format!("{} = {:?}: no such interface", fld("interface"), n.interface))?;
        if let Some(j) = f.neighbours[..i].iter().position(|o| o.interface == n.interface && o.ip.parse::<IpAddr>().ok() == Some(ip)) {
            return Err(format!("{} = {ip}: neighbour[{j}] is the same address on {:?}", fld("ip"), n.interface));
        }
        // A station on the interface's link: unicast, none of ours, on one
        // of its subnets (or IPv6 link-local).
        gateway_is_a_neighbour(&interfaces, ip, Some(idx)).map_err(|why| format!("{} = {ip} (interface {:?}): {why}", fld("ip"), n.interface))?;
        neighbours.learn(idx, ip, mac, NeighSource::Static);
    }

    let srv6 = match &f.srv6 {
        None => None,
        Some(s6) => Some(srv6_plan(s6, &interfaces, f.ingress_pe.is_some(), params.srh_tlv_end_mt)?),
    };
    let mut fann = match &f.fann {
        None => None,
        Some(fs) => Some(fann_plan(fs)?),
    };
    if let Some(fp) = &fann {
        // s.6: FANN comes from a control-plane (loopback) address, never
        // from a data-plane forwarding interface.
        if let Some(ifc) = interfaces.iter().find(|i| i.v6.iter().any(|n| n.addr() == fp.node)) {
            return Err(format!("fann.node = {}: the address of data-plane interface {:?}; FANN must come from a control-plane (loopback) address, not a forwarding interface (draft-hzh-fantel-wan-tunnel s.6)", fp.node, ifc.name));
        }
        for (name, _) in &fp.path_ids {
            if !f.ports.iter().any(|p| p.name == *name) {
                return Err(format!("fann.path_ids.{name}: no port named {name:?}"));
            }
        }
    }
    let multicast = match &f.multicast {
        None => Vec::new(),
        Some(m) => multicast_plan(m, srv6.as_ref())?,
    };
    // A node address is ours: an interface address, or one of the SRv6
    // locator / source (the node's own loopback-style addresses).
    for (i, g) in multicast.iter().enumerate() {
        if let Some(a) = g.cfg.node_address {
            let ours = interfaces.iter().any(|x| x.v6.iter().any(|n| n.addr() == a)) || srv6.as_ref().is_some_and(|s| s.locator.contains(&a) || s.source == a);
            if !ours {
                return Err(format!("multicast.group[{i}].node_address = {a}: not an address of this router (an interface address, or in the [srv6] locator)"));
            }
        }
    }
    let mroutes = match &f.multicast {
        None => Vec::new(),
        Some(m) => mroute_plan(&m.routes, &interfaces, srv6.as_ref())?,
    };
    let mld = match f.multicast.as_ref().and_then(|m| m.mld.as_ref()) {
        None => None,
        Some(s) => Some(mld_plan(s, &interfaces)?),
    };
    let ingress_pe = match &f.ingress_pe {
        None => None,
        Some(s) => Some(ingress_pe_plan(s, srv6.as_ref(), &interfaces)?),
    };
    if let Some(pe) = &ingress_pe {
        if let Some(ifc) = interfaces.iter().find(|i| i.v6.iter().any(|n| n.addr() == pe.source)) {
            return Err(format!("ingress_pe.source = {}: the address of data-plane interface {:?} (srv6.source when ingress_pe.source is absent); the FANN copies must come from a control-plane (loopback) address (draft-hzh-fantel-wan-tunnel s.6)", pe.source, ifc.name));
        }
    }
    let wan_notify = wan_notify_plan(&f.wan_notify, fann.as_ref())?;
    let cnp_auth = std::sync::Arc::new(cnp_auth_plan(&f.cnp_auth, &ports)?);
    if let Some(fp) = fann.as_mut() {
        fp.encap = wan_notify.iter().filter(|w| fp.ingress_pes.contains(&w.ingress_pe)).map(|w| (w.ingress_pe, w.sid)).collect();
    }
    // An RTT probe measures its port's link: its target must be routed
    // out of that port (ports are numbered by position until start).
    for (i, p) in ports.iter().enumerate() {
        if let Some(d) = p.congestion.as_ref().and_then(|c| c.rtt_acks_degraded_ns).filter(|&d| d > 0 && fann.is_none()) {
            return Err(format!("port[{i}].congestion.rtt_acks.degraded_us = {}: has no effect without [fann] (it is a FANN event)", d / 1000));
        }
        let Some(r) = p.congestion.as_ref().and_then(|c| c.rtt_probe) else { continue };
        if r.degraded_ns > 0 && fann.is_none() {
            return Err(format!("port[{i}].congestion.rtt_probe.degraded_us = {}: has no effect without [fann] (it is a FANN event)", r.degraded_ns / 1000));
        }
        let f = format!("port[{i}].congestion.rtt_probe.target = {}", r.target);
        if interfaces.iter().any(|x| x.v4.iter().any(|n| IpAddr::V4(n.addr()) == r.target) || x.v6.iter().any(|n| IpAddr::V6(n.addr()) == r.target)) {
            return Err(format!("{f}: an address of this router"));
        }
        match fib.lookup(r.target).and_then(|h| interfaces.get(usize::from(h.iface))) {
            None => return Err(format!("{f}: no route to it")),
            Some(x) if usize::from(x.port) != i => return Err(format!("{f}: routed out of port {:?}, not {:?}; the probe measures its own port's link", ports.get(usize::from(x.port)).map_or("?", |o| o.name.as_str()), p.name)),
            Some(_) => {}
        }
    }
    let echo_probe_id = ports.iter().any(|p| p.congestion.as_ref().is_some_and(|c| c.rtt_probe.is_some())).then(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(std::process::id()) as u16
    });
    let metrics_listen = match &f.metrics {
        None => None,
        Some(m) => {
            let a: std::net::SocketAddr = m.listen.parse().map_err(|_| format!("metrics.listen = {:?}: not an address and port (\"127.0.0.1:9464\", \"[::1]:9464\")", m.listen))?;
            if a.port() == 0 {
                return Err(format!("metrics.listen = {a}: port 0"));
            }
            Some(a)
        }
    };
    Ok(RouterConfig {
        metrics_listen,
        echo_probe_id,
        mroutes,
        mld,
        wan_notify,
        cnp_auth,
        ingress_pe,
        fann,
        multicast,
        srv6,
        eal_args: f.eal.args.clone(),
        dataplane: f.dataplane.clone(),
        mempool: f.mempool.clone(),
        params,
        ports,
        interfaces,
        fib,
        neighbours,
    })
}

/// Validate `[[cnp_auth]]` (needs the ports: an SA no congestion-aware
/// port would use is refused).
fn cnp_auth_plan(sas: &[CnpAuthSection], ports: &[PortPlan]) -> Result<dataplane::congestion::CnpAuth, String> {
    use dataplane::congestion::{CnpAuth, CnpSa, MAX_CNP_SAS};
    if sas.len() > MAX_CNP_SAS {
        return Err(format!("cnp_auth: {} entries, at most {MAX_CNP_SAS}", sas.len()));
    }
    if !sas.is_empty() && ports.iter().all(|p| p.congestion.is_none()) {
        return Err(format!("cnp_auth[0].prefix = {:?}: no port has [port.congestion], so the router sends no Long-haul CNP to authenticate", sas[0].prefix));
    }
    let mut out: Vec<CnpSa> = Vec::new();
    for (i, e) in sas.iter().enumerate() {
        let f = |k: &str| format!("cnp_auth[{i}].{k}");
        let (field, secret) = secret_octets(&e.secret_hex, &e.secret, &f)?;
        let sa = cnp_sa(&e.prefix, e.spi, &e.algorithm, field, &secret, &f)?;
        if out.iter().any(|o| o.prefix == sa.prefix) {
            return Err(format!("{} = {}: listed twice", f("prefix"), sa.prefix));
        }
        out.push(sa);
    }
    Ok(CnpAuth::new(out))
}

/// One `[[cnp_auth]]` SA (also `ctl cnp-auth add`): `f` names a field
/// in errors, `secret_field` the one the key came from (never its value).
pub fn cnp_sa(prefix: &str, spi: u32, algorithm: &str, secret_field: &str, secret: &[u8], f: &dyn Fn(&str) -> String) -> Result<dataplane::congestion::CnpSa, String> {
    use dataplane::wire::ah::{AhKey, Algorithm};
    let n: ipnet::Ipv6Net = prefix.parse().map_err(|_| format!("{} = {prefix:?}: not an IPv6 prefix (AH protects the ICMPv6 format, which is IPv6 only)", f("prefix")))?;
    if n.trunc() != n {
        return Err(format!("{} = {n}: host bits set (did you mean {}?)", f("prefix"), n.trunc()));
    }
    if spi < 256 {
        return Err(format!("{} = {spi}: SPIs 0..=255 are reserved (RFC 4302 s.2.4)", f("spi")));
    }
    let alg = Algorithm::from_name(algorithm).ok_or_else(|| format!("{} = {algorithm:?}: must be \"hmac-sha256-128\" or \"hmac-sha512-256\"", f("algorithm")))?;
    if secret.len() != alg.key_len() {
        return Err(format!("{} = <{} octets>: {} takes a key of exactly {} octets (RFC 4868 s.2.1)", f(secret_field), secret.len(), alg.name(), alg.key_len()));
    }
    let key = AhKey::new(spi, alg, secret).map_err(|err| format!("{}: {err}", f(secret_field)))?;
    Ok(dataplane::congestion::CnpSa::new(n, key))
}

/// A secret given as `secret_hex` or `secret` (exactly one): the field's
/// name and the octets. The value is never echoed in an error.
pub fn secret_octets(hex: &Option<String>, text: &Option<String>, f: &dyn Fn(&str) -> String) -> Result<(&'static str, Vec<u8>), String> {
    match (hex, text) {
        (Some(_), Some(_)) => Err(format!("{}: give secret_hex or secret, not both", f("secret"))),
        (None, None) => Err(format!("{}: missing (secret_hex or secret)", f("secret"))),
        (Some(h), None) => {
            let h: String = h.chars().filter(|c| !c.is_whitespace() && *c != ':').collect();
            if !h.len().is_multiple_of(2) || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("{} = <{} characters>: not hexadecimal octets", f("secret_hex"), h.len()));
            }
            Ok(("secret_hex", (0..h.len()).step_by(2).map(|j| u8::from_str_radix(&h[j..j + 2], 16).unwrap_or(0)).collect()))
        }
        (None, Some(s)) => Ok(("secret", s.as_bytes().to_vec())),
    }
}

/// Validate `[[wan_notify]]` (needs the `[fann]` plan to know its PEs).
fn wan_notify_plan(w: &[WanNotifySection], fann: Option<&crate::fann_agent::FannPlan>) -> Result<Vec<WanNotifyPlan>, String> {
    use std::net::Ipv6Addr;
    let mut out: Vec<WanNotifyPlan> = Vec::new();
    for (i, e) in w.iter().enumerate() {
        let f = |k: &str| format!("wan_notify[{i}].{k}");
        let addr = |k: &str, v: &str| -> Result<Ipv6Addr, String> {
            let a: Ipv6Addr = v.parse().map_err(|_| format!("{} = {v:?}: not an IPv6 address", f(k)))?;
            // Link-local: unique on one link only (RFC 4007), no address
            // of a PE or SID across the WAN.
            if !unicast6(a) {
                return Err(format!("{} = {a}: must be a unicast address of wider than link-local scope", f(k)));
            }
            Ok(a)
        };
        let ingress_pe = addr("ingress_pe", &e.ingress_pe)?;
        let sid = addr("sid", &e.sid)?;
        if out.iter().any(|o| o.ingress_pe == ingress_pe) {
            return Err(format!("{} = {ingress_pe}: listed twice", f("ingress_pe")));
        }
        let mut sources = Vec::new();
        for (j, p) in e.sources.iter().enumerate() {
            let n: IpNet = p.parse().map_err(|_| format!("{}[{j}] = {p:?}: not a prefix (address/length)", f("sources")))?;
            if n.trunc() != n {
                return Err(format!("{}[{j}] = {p}: host bits set (did you mean {}?)", f("sources"), n.trunc()));
            }
            if let Some(o) = out.iter().find(|o| o.sources.contains(&n)) {
                return Err(format!("{}[{j}] = {n}: also behind ingress PE {}", f("sources"), o.ingress_pe));
            }
            sources.push(n);
        }
        let mut tunnel_sources = Vec::new();
        match &e.tunnel_sources {
            None => tunnel_sources.push(ipnet::Ipv6Net::from(ingress_pe)),
            Some(t) => {
                for (j, p) in t.iter().enumerate() {
                    let n: ipnet::Ipv6Net = p.parse().map_err(|_| format!("{}[{j}] = {p:?}: not an IPv6 prefix (address/length)", f("tunnel_sources")))?;
                    if n.trunc() != n {
                        return Err(format!("{}[{j}] = {p}: host bits set (did you mean {}?)", f("tunnel_sources"), n.trunc()));
                    }
                    if n.network().is_multicast() || (n.network().is_unspecified() && n.prefix_len() == 128) {
                        return Err(format!("{}[{j}] = {n}: a tunnel's source is a unicast address", f("tunnel_sources")));
                    }
                    if tunnel_sources.contains(&n) {
                        return Err(format!("{}[{j}] = {n}: listed twice", f("tunnel_sources")));
                    }
                    tunnel_sources.push(n);
                }
            }
        }
        for (j, n) in tunnel_sources.iter().enumerate() {
            if let Some(o) = out.iter().find(|o| o.tunnel_sources.contains(n)) {
                let what = if e.tunnel_sources.is_some() { format!("{}[{j}] = {n}", f("tunnel_sources")) } else { format!("{} = {ingress_pe} (the default tunnel_sources)", f("ingress_pe")) };
                return Err(format!("{what}: also the tunnel source of ingress PE {}", o.ingress_pe));
            }
        }
        let fann_pe = fann.is_some_and(|p| p.ingress_pes.contains(&ingress_pe));
        if sources.is_empty() && tunnel_sources.is_empty() && !fann_pe {
            return Err(format!("{} = {ingress_pe}: not in [fann] ingress_pes, no sources and no tunnel_sources: nothing would use sid {sid}", f("ingress_pe")));
        }
        out.push(WanNotifyPlan { ingress_pe, sid, sources, tunnel_sources });
    }
    let n: usize = out.iter().map(|o| o.tunnel_sources.len()).sum();
    if n > dataplane::node::MAX_TUNNEL_PES {
        return Err(format!("wan_notify: {n} tunnel_sources in all; at most {}", dataplane::node::MAX_TUNNEL_PES));
    }
    Ok(out)
}

fn fann_plan(f: &FannSection) -> Result<crate::fann_agent::FannPlan, String> {
    let node: std::net::Ipv6Addr = f.node.parse().map_err(|_| format!("fann.node = {:?}: not an IPv6 address", f.node))?;
    if !unicast6(node) {
        return Err(format!("fann.node = {node}: must be a unicast address of this node"));
    }
    let mut pes = Vec::new();
    for (i, a) in f.ingress_pes.iter().enumerate() {
        let pe: std::net::Ipv6Addr = a.parse().map_err(|_| format!("fann.ingress_pes[{i}] = {a:?}: not an IPv6 address"))?;
        if !unicast6(pe) || pe == node {
            return Err(format!("fann.ingress_pes[{i}] = {pe}: must be the unicast address of another node"));
        }
        if pes.contains(&pe) {
            return Err(format!("fann.ingress_pes[{i}] = {pe}: listed twice (it would get every notification twice)"));
        }
        pes.push(pe);
    }
    if pes.is_empty() {
        return Err("fann.ingress_pes = []: name at least one ingress PE".into());
    }
    let udp = match f.transport.as_str() {
        "icmpv6" => false,
        "udp" => true,
        o => return Err(format!("fann.transport = {o:?}: must be \"icmpv6\" or \"udp\"")),
    };
    if f.hop_limit == 0 {
        return Err("fann.hop_limit = 0: must be >= 1".into());
    }
    if f.interval_us == 0 || f.interval_us > 10_000_000 {
        return Err(format!("fann.interval_us = {}: must be 1..=10000000", f.interval_us));
    }
    if f.microburst_window_us == 0 || f.microburst_window_us > 10_000_000 {
        return Err(format!("fann.microburst_window_us = {}: must be 1..=10000000", f.microburst_window_us));
    }
    if f.queue_buildup_bytes < 2048 {
        // The event clears below half of it: a smaller one could never clear.
        return Err(format!("fann.queue_buildup_bytes = {}: must be at least 2048 (the event clears when the queue falls below half of it)", f.queue_buildup_bytes));
    }
    // A notification goes to every ingress PE or waits: the node's burst
    // must hold one for each.
    if f.rate_pps == 0 || (f.burst as usize) < pes.len() {
        return Err(format!("fann.rate_pps = {}, burst = {}: the rate must be >= 1 and the burst at least the number of ingress PEs ({}), as a notification goes to every PE at once", f.rate_pps, f.burst, pes.len()));
    }
    let mut path_ids = Vec::new();
    for (name, v) in &f.path_ids {
        let a: std::net::Ipv6Addr = v.parse().map_err(|_| format!("fann.path_ids.{name} = {v:?}: a Path ID is 16 octets written as an IPv6 address (e.g. the SID list's first SID)"))?;
        path_ids.push((name.clone(), a.octets()));
    }
    Ok(crate::fann_agent::FannPlan {
        node,
        ingress_pes: pes,
        encap: Vec::new(),
        path_ids,
        udp,
        detector: dataplane::fann::DetectorConfig {
            node,
            hop_limit: f.hop_limit,
            link_bps: 0,
            interval_ns: f.interval_us * 1000,
            queue_buildup_bytes: f.queue_buildup_bytes,
            microburst_bytes: f.microburst_bytes,
            microburst_window_ns: f.microburst_window_us * 1000,
            microburst_external: true,
            path_id: None,
            link_errors_per_s: f.link_errors_per_s,
            packet_loss_per_s: f.packet_loss_per_s,
            // Per port, from its RTT probe (`degraded_us`), at start.
            latency_degraded_ns: 0,
            rate_pps: f.rate_pps,
            burst: f.burst,
            epoch_ns: 0, // the router sets it when it starts its clock
        },
    })
}

/// Validate `[[multicast.group]]`: every field with its value.
/// Validate `[[multicast.route]]`.
pub fn mroute_plan(routes: &[MrouteSection], interfaces: &[Interface], srv6: Option<&Srv6Plan>) -> Result<Vec<dataplane::tables::Mroute>, String> {
    use dataplane::tables::{routable_multicast6, Mroute, MAX_MROUTE_OIFS};
    let mut out: Vec<Mroute> = Vec::new();
    for (i, r) in routes.iter().enumerate() {
        let f = |k: &str| format!("multicast.route[{i}].{k}");
        let group: std::net::Ipv6Addr = r.group.parse().map_err(|_| format!("{} = {:?}: not an IPv6 address", f("group"), r.group))?;
        if !routable_multicast6(&group) {
            return Err(format!("{} = {group}: must be an IPv6 multicast group of wider than link-local scope (scope 3 and above, e.g. ff3e::/16 or ff05::/16)", f("group")));
        }
        let source = match &r.source {
            None => None,
            Some(v) => {
                let a: std::net::Ipv6Addr = v.parse().map_err(|_| format!("{} = {v:?}: not an IPv6 address", f("source")))?;
                if !unicast6(a) {
                    return Err(format!("{} = {a}: must be a unicast address", f("source")));
                }
                Some(a)
            }
        };
        let iface = |k: String, n: &str| interfaces.iter().position(|x| x.name == n).map(|x| x as u16).ok_or_else(|| format!("{k} = {n:?}: no such interface"));
        let iif = match &r.iif {
            None => None,
            Some(n) => Some(iface(f("iif"), n)?),
        };
        let mut oifs = Vec::new();
        for (j, n) in r.oifs.iter().enumerate() {
            let o = iface(format!("{}[{j}]", f("oifs")), n)?;
            if oifs.contains(&o) {
                return Err(format!("{}[{j}] = {n:?}: listed twice", f("oifs")));
            }
            if iif == Some(o) {
                return Err(format!("{}[{j}] = {n:?}: the route's iif (a packet never goes back out where it came in)", f("oifs")));
            }
            oifs.push(o);
        }
        if oifs.len() > MAX_MROUTE_OIFS {
            return Err(format!("{}: {} interfaces, at most {MAX_MROUTE_OIFS}", f("oifs"), oifs.len()));
        }
        // RFC 4607 s.5.1: a packet to an SSM group is dropped unless a
        // receiver asked for its source; a route that copies the group
        // from any source would forward what nobody asked for. (A route
        // with no outgoing interface only lets the local End.MT SID have
        // the group.)
        if source.is_none() && !oifs.is_empty() && dataplane::mld::is_ssm(&group) {
            return Err(format!("{} = {group}: an SSM group (ff3x::/32) is forwarded only from the source a receiver asked for (RFC 4607 s.5.1): set source", f("group")));
        }
        let local = srv6.is_some_and(|s| s.sids.iter().any(|x| x.sid == group && x.behaviour == "end.mt"));
        if oifs.is_empty() && !local {
            return Err(format!("{} = []: name the interfaces to replicate to (or make the group a local end.mt SID)", f("oifs")));
        }
        if out.iter().any(|m| m.group == group && m.source == source) {
            return Err(format!("{} = {group}: a route for this group{} is configured twice", f("group"), source.map(|s| format!(" from {s}")).unwrap_or_default()));
        }
        out.push(Mroute::new(group, source, iif, oifs));
    }
    Ok(out)
}

fn multicast_plan(m: &MulticastSection, srv6: Option<&Srv6Plan>) -> Result<Vec<GroupPlan>, String> {
    use dataplane::multicast::{GroupConfig, GroupId, Receiver, TlvReceivers, MAX_BRANCHES, PSN_MASK};
    use std::net::Ipv6Addr;
    let unicast = |a: &Ipv6Addr| !(a.is_unspecified() || a.is_multicast() || a.is_loopback());
    let mut out: Vec<GroupPlan> = Vec::new();
    for (i, g) in m.groups.iter().enumerate() {
        let f = |k: &str| format!("multicast.group[{i}].{k}");
        let addr = |k: &str, v: &str| -> Result<Ipv6Addr, String> {
            let a: Ipv6Addr = v.parse().map_err(|_| format!("{} = {v:?}: not an IPv6 address", f(k)))?;
            if !unicast(&a) {
                return Err(format!("{} = {a}: must be a unicast address", f(k)));
            }
            Ok(a)
        };
        let name = g.name.clone().unwrap_or_else(|| format!("group{i}"));
        if name.is_empty() {
            return Err(format!("{} = \"\": must not be empty", f("name")));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(format!("{} = {name:?}: used by another group", f("name")));
        }
        let proxy = addr("proxy", &g.proxy)?;
        let source = addr("source", &g.source)?;
        for (k, v) in [("designated_qpn", g.designated_qpn), ("source_qpn", g.source_qpn)] {
            if v > PSN_MASK {
                return Err(format!("{} = {v}: a QPN has 24 bits (at most {PSN_MASK})", f(k)));
            }
        }
        if g.initial_psn > PSN_MASK {
            return Err(format!("{} = {}: a PSN has 24 bits (at most {PSN_MASK})", f("initial_psn"), g.initial_psn));
        }
        if g.cnp_window_us == 0 || g.cnp_window_us > 10_000_000 {
            return Err(format!("{} = {}: must be 1..=10000000 (10 s)", f("cnp_window_us"), g.cnp_window_us));
        }
        let cnp_window_max_us = match (g.cnp_window.as_str(), g.cnp_window_max_us) {
            ("fixed", None) => None,
            ("fixed", Some(m)) => return Err(format!("{} = {m}: only with cnp_window = \"rtt\"", f("cnp_window_max_us"))),
            ("rtt", m) => {
                let m = m.unwrap_or(10_000.max(g.cnp_window_us));
                if m < g.cnp_window_us || m > 10_000_000 {
                    return Err(format!("{} = {m}: must be cnp_window_us ({})..=10000000 (10 s)", f("cnp_window_max_us"), g.cnp_window_us));
                }
                Some(m)
            }
            (v, _) => return Err(format!("{} = {v:?}: must be \"fixed\" or \"rtt\"", f("cnp_window"))),
        };
        if g.cnp_rate_per_s == 0 {
            return Err(format!("{} = 0: must be >= 1", f("cnp_rate_per_s")));
        }
        if g.cnp_burst == 0 {
            return Err(format!("{} = 0: must be >= 1", f("cnp_burst")));
        }
        if g.tlv_receivers == "learn" {
            // The receivers come from the End.MT TLVs this node processes.
            if !g.receivers.is_empty() {
                return Err(format!("{} has {} entries: with tlv_receivers = \"learn\" the receivers are learned from the End.MT TLV, not configured", f("receivers"), g.receivers.len()));
            }
            if !srv6.is_some_and(|s| s.sids.iter().any(|x| x.behaviour == "end.mt")) {
                return Err(format!("{} = \"learn\": needs an end.mt SID in [srv6] (the receivers are learned from its End.MT TLVs)", f("tlv_receivers")));
            }
        } else if g.receivers.is_empty() && g.child_nodes.is_empty() {
            return Err(format!("{} = []: a group needs at least one receiver or child node", f("receivers")));
        }
        if g.receivers.len() + g.child_nodes.len() > MAX_BRANCHES {
            return Err(format!("{} and child_nodes have {} entries: at most {MAX_BRANCHES}", f("receivers"), g.receivers.len() + g.child_nodes.len()));
        }
        let mut receivers: Vec<Receiver> = Vec::with_capacity(g.receivers.len());
        for (j, r) in g.receivers.iter().enumerate() {
            let a = addr(&format!("receivers[{j}].address"), &r.address)?;
            if a == proxy || a == source {
                return Err(format!("{} = {a}: is the group's proxy or source address", f(&format!("receivers[{j}].address"))));
            }
            if receivers.iter().any(|x| x.addr == a) {
                return Err(format!("{} = {a}: listed twice (responses are told apart by receiver address)", f(&format!("receivers[{j}].address"))));
            }
            if r.qpn > PSN_MASK {
                return Err(format!("{} = {}: a QPN has 24 bits (at most {PSN_MASK})", f(&format!("receivers[{j}].qpn")), r.qpn));
            }
            receivers.push(Receiver { addr: a, qpn: r.qpn });
        }
        let mut children: Vec<Ipv6Addr> = Vec::with_capacity(g.child_nodes.len());
        for (j, v) in g.child_nodes.iter().enumerate() {
            let k = format!("child_nodes[{j}]");
            let a = addr(&k, v)?;
            if a == proxy || a == source {
                return Err(format!("{} = {a}: is the group's proxy or source address", f(&k)));
            }
            if children.contains(&a) || receivers.iter().any(|r| r.addr == a) {
                return Err(format!("{} = {a}: listed twice among receivers and child_nodes (responses are told apart by address)", f(&k)));
            }
            children.push(a);
        }
        let node_address = match &g.node_address {
            None => None,
            Some(v) => {
                let a = addr("node_address", v)?;
                if a == proxy || a == source || children.contains(&a) || receivers.iter().any(|r| r.addr == a) {
                    return Err(format!("{} = {a}: is the group's proxy or source address or one of its branches; it is this node's own address as its parent's branch", f("node_address")));
                }
                Some(a)
            }
        };
        let end_mt_sid = match &g.end_mt_sid {
            None => None,
            Some(v) => {
                let a: Ipv6Addr = v.parse().map_err(|_| format!("{} = {v:?}: not an IPv6 address", f("end_mt_sid")))?;
                let ok = srv6.is_some_and(|s| s.sids.iter().any(|x| x.sid == a && x.behaviour == "end.mt"));
                if !ok {
                    return Err(format!("{} = {a}: not an end.mt SID of [srv6]", f("end_mt_sid")));
                }
                Some(a)
            }
        };
        let mut cfg = GroupConfig::new(GroupId { source, source_qpn: g.source_qpn }, proxy, g.designated_qpn, receivers);
        cfg.children = children;
        cfg.node_address = node_address;
        cfg.initial_psn = g.initial_psn;
        cfg.cnp_window_ns = g.cnp_window_us * 1000;
        cfg.cnp_window_max_ns = cnp_window_max_us.map(|m| m * 1000);
        cfg.tlv_receivers = match g.tlv_receivers.as_str() {
            "any" => TlvReceivers::Any,
            "strict" => TlvReceivers::Strict,
            "learn" => TlvReceivers::Learn,
            v => return Err(format!("{} = {v:?}: must be \"any\", \"strict\" or \"learn\"", f("tlv_receivers"))),
        };
        cfg.cnp_rate_per_s = g.cnp_rate_per_s;
        cfg.cnp_burst = g.cnp_burst;
        cfg.validate().map_err(|e| format!("multicast.group[{i}] ({name}): {e}"))?;
        if let Some(o) = out.iter().find(|o| o.cfg.proxy == proxy && o.cfg.designated_qpn == g.designated_qpn) {
            return Err(format!("{} = {proxy} with designated_qpn {}: used by group {:?} too", f("proxy"), g.designated_qpn, o.name));
        }
        if let Some(o) = out.iter().find(|o| end_mt_sid.is_some() && o.end_mt_sid == end_mt_sid) {
            // Its receivers get every packet the SID replicates: a second
            // group's would get the first group's data (s.9).
            return Err(format!("{} = {}: already the End.MT SID of group {:?} (one group per End.MT SID)", f("end_mt_sid"), end_mt_sid.map_or(String::new(), |a| a.to_string()), o.name));
        }
        if let Some(o) = out.iter().find(|o| o.cfg.id == cfg.id) {
            return Err(format!("{} = {source} with source_qpn {}: the same source QP as group {:?}", f("source"), g.source_qpn, o.name));
        }
        out.push(GroupPlan { name, cfg, end_mt_sid });
    }
    Ok(out)
}

fn ingress_pe_plan(s: &IngressPeSection, srv6: Option<&Srv6Plan>, interfaces: &[Interface]) -> Result<dataplane::fann::PeConfig, String> {
    let Some(s6) = srv6 else {
        return Err("ingress_pe: needs [srv6] with at least one [[srv6.policy]] to steer".into());
    };
    if s6.policies.is_empty() {
        return Err("ingress_pe: needs at least one [[srv6.policy]] to steer".into());
    }
    let mut known = Vec::new();
    for (i, a) in s.known_nodes.iter().enumerate() {
        let n: std::net::Ipv6Addr = a.parse().map_err(|_| format!("ingress_pe.known_nodes[{i}] = {a:?}: not an IPv6 address"))?;
        if n.is_unspecified() || n.is_multicast() {
            return Err(format!("ingress_pe.known_nodes[{i}] = {n}: must be a unicast address"));
        }
        known.push(n);
    }
    if known.is_empty() {
        return Err("ingress_pe.known_nodes = []: name the nodes whose notifications to accept".into());
    }
    let controller = match &s.controller {
        None => None,
        Some(a) => {
            let c: std::net::Ipv6Addr = a.parse().map_err(|_| format!("ingress_pe.controller = {a:?}: not an IPv6 address"))?;
            if c.is_unspecified() || c.is_multicast() {
                return Err(format!("ingress_pe.controller = {c}: must be a unicast address"));
            }
            Some(c)
        }
    };
    let source = match &s.source {
        None => s6.source,
        Some(a) => {
            let v: std::net::Ipv6Addr = a.parse().map_err(|_| format!("ingress_pe.source = {a:?}: not an IPv6 address"))?;
            if !unicast6(v) {
                return Err(format!("ingress_pe.source = {v}: must be a unicast address of this node"));
            }
            v
        }
    };
    let source_v4 = match &s.source_v4 {
        None => None,
        // Only the notifications to the senders come from it.
        Some(a) if !s.notify_senders => return Err(format!("ingress_pe.source_v4 = {a}: has no effect without notify_senders = true (only the notifications to IPv4 senders come from it)")),
        Some(a) => {
            let v: std::net::Ipv4Addr = a.parse().map_err(|_| format!("ingress_pe.source_v4 = {a:?}: not an IPv4 address"))?;
            if !interfaces.iter().any(|i| i.v4.iter().any(|n| n.addr() == v)) {
                return Err(format!("ingress_pe.source_v4 = {v}: not an address of any interface (the senders' answers would not come back)"));
            }
            Some(v)
        }
    };
    if s.hop_limit == 0 {
        return Err("ingress_pe.hop_limit = 0: must be >= 1".into());
    }
    if s.controller_max_pps == 0 || s.controller_burst == 0 {
        return Err(format!("ingress_pe.controller_max_pps = {}, controller_burst = {}: both must be >= 1", s.controller_max_pps, s.controller_burst));
    }
    let ifaces = match &s.interfaces {
        None => None,
        Some(v) if v.is_empty() => return Err("ingress_pe.interfaces = []: name the interfaces notifications arrive on, or leave it out (any)".into()),
        Some(v) => {
            let mut out = Vec::new();
            for (i, n) in v.iter().enumerate() {
                let k = interfaces.iter().position(|x| x.name == *n).ok_or_else(|| format!("ingress_pe.interfaces[{i}] = {n:?}: no such interface"))?;
                out.push(k as u16);
            }
            Some(out)
        }
    };
    if s.congestion_holddown_ms == 0 || s.congestion_holddown_ms > 3_600_000 {
        return Err(format!("ingress_pe.congestion_holddown_ms = {}: must be 1..=3600000 (a hold-down of 0 would let a policy flap)", s.congestion_holddown_ms));
    }
    if s.congestion_holddown_max_ms < s.congestion_holddown_ms || s.congestion_holddown_max_ms > 3_600_000 {
        return Err(format!("ingress_pe.congestion_holddown_max_ms = {}: must be congestion_holddown_ms ({}) ..= 3600000", s.congestion_holddown_max_ms, s.congestion_holddown_ms));
    }
    if !(1..=1_000_000).contains(&s.node_max_pps) {
        return Err(format!("ingress_pe.node_max_pps = {}: must be 1..=1000000 (events a second from one node)", s.node_max_pps));
    }
    if !(1..=100_000).contains(&s.node_burst) {
        return Err(format!("ingress_pe.node_burst = {}: must be 1..=100000", s.node_burst));
    }
    if !(10..=1_000_000).contains(&s.congestion_rate_window_us) {
        return Err(format!("ingress_pe.congestion_rate_window_us = {}: must be 10..=1000000 (the window over which a policy's rate is measured)", s.congestion_rate_window_us));
    }
    Ok(dataplane::fann::PeConfig {
        failover: dataplane::fann::Failover { on_congestion: s.congestion_failover, holddown_ns: s.congestion_holddown_ms * 1_000_000, holddown_max_ns: s.congestion_holddown_max_ms * 1_000_000, reduce_rate: s.congestion_rate_reduction, rate_window_ns: s.congestion_rate_window_us * 1000 },
        interfaces: ifaces,
        policies: s6.pe_specs.iter().cloned().enumerate().map(|(i, p)| (i as u32, p)).collect(),
        known_nodes: known,
        controller,
        source,
        source_v4,
        hop_limit: s.hop_limit,
        copy_max_pps: s.controller_max_pps,
        copy_burst: s.controller_burst,
        node_max_pps: s.node_max_pps,
        node_burst: s.node_burst,
        notify_senders: s.notify_senders,
    })
}

/// "node" or "node#port".
fn parse_element(v: &str, field: &str) -> Result<dataplane::fann::Element, String> {
    let (n, port) = match v.split_once('#') {
        Some((n, p)) => (n, Some(p.parse::<u32>().map_err(|_| format!("{field} = {v:?}: the port after '#' must be a number (0..=4294967295)"))?)),
        None => (v, None),
    };
    let node = n.parse().map_err(|_| format!("{field} = {v:?}: not \"node\" or \"node#port\" with an IPv6 node address"))?;
    Ok(dataplane::fann::Element { node, port })
}

/// The path descriptions of a set of SID lists.
fn path_specs(f: &dyn Fn(&str) -> String, key: &str, segments: &[Vec<std::net::Ipv6Addr>], weights: &[u32], elements: &[Vec<String>], elements_key: &str) -> Result<Vec<dataplane::fann::PathSpec>, String> {
    if !elements.is_empty() && elements.len() != segments.len() {
        return Err(format!("{} = {elements:?}: one element list per SID list of {} ({} lists)", f(elements_key), f(key), segments.len()));
    }
    let mut out = Vec::new();
    for (j, sids) in segments.iter().enumerate() {
        let mut els = Vec::new();
        for (k, e) in elements.get(j).map(|v| v.as_slice()).unwrap_or(&[]).iter().enumerate() {
            els.push(parse_element(e, &format!("{}[{j}][{k}]", f(elements_key)))?);
        }
        out.push(dataplane::fann::PathSpec { segments: sids.clone(), weight: weights.get(j).copied().unwrap_or(1), elements: els });
    }
    Ok(out)
}

pub const BEHAVIOURS: &[&str] = &["end", "end.x", "end.dt4", "end.dt6", "end.mt", "end.c", "end.e"];

/// A unicast IPv6 address a node can have (not unspecified, loopback,
/// multicast or link-local).
fn unicast6(a: std::net::Ipv6Addr) -> bool {
    !(a.is_unspecified() || a.is_loopback() || a.is_multicast() || a.is_unicast_link_local())
}

fn srv6_plan(s: &Srv6Section, interfaces: &[Interface], has_ingress_pe: bool, end_mt_tlv_type: u8) -> Result<Srv6Plan, String> {
    let hmac_keys = hmac_key_table(&s.hmac_keys)?;
    let locator: ipnet::Ipv6Net = s.locator.parse().map_err(|_| format!("srv6.locator = {:?}: not an IPv6 prefix like fc00:0:1::/48", s.locator))?;
    if locator != locator.trunc() {
        return Err(format!("srv6.locator = {locator}: host bits set (did you mean {}?)", locator.trunc()));
    }
    let mut sids: Vec<SidPlan> = Vec::new();
    for (i, e) in s.sids.iter().enumerate() {
        let f = |k: &str| format!("srv6.sid[{i}].{k}");
        let sid: std::net::Ipv6Addr = e.sid.parse().map_err(|_| format!("{} = {:?}: not an IPv6 address", f("sid"), e.sid))?;
        let b0 = e.behaviour.to_ascii_lowercase();
        // An End.MT SID may be the multicast group the edge node receives
        // the tree's packets on (draft-li s.5.1: "Each edge node MUST be
        // configured to receive IP multicast traffic addressed to" it).
        let mt_group = b0 == "end.mt" && dataplane::tables::routable_multicast6(&sid);
        if sid.is_multicast() && !mt_group {
            return Err(format!("{} = {sid}: a multicast SID must be an end.mt SID of wider than link-local scope (behaviour is {b0})", f("sid")));
        }
        if !locator.contains(&sid) && !mt_group {
            return Err(format!("{} = {sid}: outside the locator {locator}", f("sid")));
        }
        if let Some(x) = interfaces.iter().find(|x| x.v6.iter().any(|n| n.addr() == sid)) {
            return Err(format!("{} = {sid}: an address of interface {:?}; packets to it (ND, ping) would be taken as SRv6", f("sid"), x.name));
        }
        if sids.iter().any(|x| x.sid == sid) {
            return Err(format!("{} = {sid}: configured twice", f("sid")));
        }
        let b = e.behaviour.to_ascii_lowercase();
        if !BEHAVIOURS.contains(&b.as_str()) {
            return Err(format!("{} = {:?}: must be one of {}", f("behaviour"), e.behaviour, BEHAVIOURS.join(", ")));
        }
        let iface = match &e.interface {
            None => None,
            Some(n) => Some(interfaces.iter().position(|x| x.name == *n).ok_or_else(|| format!("{} = {n:?}: no such interface", f("interface")))? as u16),
        };
        let via: Option<IpAddr> = match &e.via {
            None => None,
            Some(v) => Some(v.parse().map_err(|_| format!("{} = {v:?}: not an IP address", f("via")))?),
        };
        if b == "end.x" && (iface.is_none() || via.is_none()) {
            return Err(format!("{}: end.x needs interface and via", f("behaviour")));
        }
        // Fields that another behaviour would silently ignore are refused.
        if let (Some(v), true) = (&e.via, b != "end.x") {
            return Err(format!("{} = {v:?}: only end.x has a next hop (behaviour is {b})", f("via")));
        }
        if let (Some(n), true) = (&e.interface, b != "end.x" && b != "end.c") {
            return Err(format!("{} = {n:?}: only end.x and end.c have an interface (behaviour is {b})", f("interface")));
        }
        if b != "end.c" {
            for (k, set) in [("pfc_priority", e.pfc_priority.is_some()), ("pause_us", e.pause_us.is_some()), ("max_pause_ms", e.max_pause_ms.is_some())] {
                if set {
                    return Err(format!("{}: applies to end.c only (behaviour is {b})", f(k)));
                }
            }
        }
        if let Some(IpAddr::V4(v)) = via {
            // End.X forwards the IPv6 packet: its next hop is an IPv6 neighbour.
            return Err(format!("{} = {v}: end.x forwards IPv6, the next hop must be an IPv6 address", f("via")));
        }
        // RFC 8986 s.4.2: the Layer-3 adjacency, a neighbour on the
        // interface.
        if let (Some(v), Some(i)) = (via, iface) {
            gateway_is_a_neighbour(interfaces, v, Some(i)).map_err(|why| format!("{} = {v}: {why}", f("via")))?;
        }
        let mut endc_ifaces = Vec::new();
        for (j, n) in e.interfaces.iter().enumerate() {
            if b != "end.c" {
                return Err(format!("{}[{j}] = {n:?}: only end.c has interfaces (behaviour is {b})", f("interfaces")));
            }
            let k = interfaces.iter().position(|x| x.name == *n).ok_or_else(|| format!("{}[{j}] = {n:?}: no such interface", f("interfaces")))? as u16;
            if endc_ifaces.contains(&k) {
                return Err(format!("{}[{j}] = {n:?}: listed twice", f("interfaces")));
            }
            endc_ifaces.push(k);
        }
        if endc_ifaces.len() > dataplane::endc::MAX_ENDC_IFACES {
            return Err(format!("{}: {} interfaces, at most {}", f("interfaces"), endc_ifaces.len(), dataplane::endc::MAX_ENDC_IFACES));
        }
        if b == "end.c" {
            match (iface, endc_ifaces.is_empty()) {
                (None, true) => return Err(format!("{}: end.c needs interface (the port toward the DC gateway) or interfaces (one per DC gateway)", f("behaviour"))),
                (Some(_), false) => return Err(format!("{}: give interface or interfaces, not both", f("interfaces"))),
                (Some(i), true) => endc_ifaces.push(i),
                (None, false) => {}
            }
        }
        if b == "end.c" && sids.iter().any(|x| x.behaviour == "end.c") {
            return Err(format!("{} = end.c: one END.C SID per node", f("behaviour")));
        }
        let pfc_priority = e.pfc_priority.unwrap_or(3);
        if pfc_priority > 7 {
            return Err(format!("{} = {pfc_priority}: must be 0..=7", f("pfc_priority")));
        }
        let pause_us = e.pause_us.unwrap_or(200);
        if pause_us == 0 {
            return Err(format!("{} = 0: must be >= 1", f("pause_us")));
        }
        let max_pause_ms = e.max_pause_ms.unwrap_or(10);
        if !(1..=60_000).contains(&max_pause_ms) {
            return Err(format!("{} = {max_pause_ms}: must be 1..=60000 (the watchdog needs a limit)", f("max_pause_ms")));
        }
        if u64::from(pause_us) > max_pause_ms * 1000 {
            return Err(format!("{} = {pause_us}: longer than max_pause_ms = {max_pause_ms}, which would end every pause early", f("pause_us")));
        }
        if b != "end.mt" {
            if e.hmac_required {
                return Err(format!("{} = true: only end.mt SIDs verify the SRH HMAC (behaviour is {b})", f("hmac_required")));
            }
            if !e.receivers.is_empty() {
                return Err(format!("{}: only end.mt SIDs have receivers (behaviour is {b})", f("receivers")));
            }
            if !e.downstream.is_empty() {
                return Err(format!("{}: only end.mt SIDs have downstream SIDs (behaviour is {b})", f("downstream")));
            }
        }
        if e.hmac_required && s.hmac_keys.is_empty() {
            return Err(format!("{} = true: no [[srv6.hmac_key]] is configured", f("hmac_required")));
        }
        let mut receivers = Vec::new();
        for (j, r) in e.receivers.iter().enumerate() {
            let a: std::net::Ipv6Addr = r.address.parse().map_err(|_| format!("{}[{j}].address = {:?}: not an IPv6 address", f("receivers"), r.address))?;
            if r.qpn > 0x00ff_ffff {
                return Err(format!("{}[{j}].qpn = {}: a QPN has 24 bits (at most 16777215)", f("receivers"), r.qpn));
            }
            if receivers.iter().any(|x: &(std::net::Ipv6Addr, u32)| x.0 == a) {
                return Err(format!("{}[{j}].address = {a}: listed twice", f("receivers")));
            }
            receivers.push((a, r.qpn));
        }
        let mut downstream = Vec::new();
        for (j, d) in e.downstream.iter().enumerate() {
            let a: std::net::Ipv6Addr = d.parse().map_err(|_| format!("{}[{j}] = {d:?}: not an IPv6 SID", f("downstream")))?;
            if a == sid {
                return Err(format!("{}[{j}] = {a}: the SID itself (a replication loop)", f("downstream")));
            }
            if downstream.contains(&a) {
                return Err(format!("{}[{j}] = {a}: listed twice (its subtree would get every packet twice)", f("downstream")));
            }
            downstream.push(a);
        }
        let mut dscp_priority = Vec::new();
        for (k, v) in &e.dscp_priority {
            let d = k.parse::<u8>().ok().filter(|d| *d < 64).ok_or_else(|| format!("{}.{k:?} = {v}: the key must be a DSCP 0..=63", f("dscp_priority")))?;
            if *v > 7 {
                return Err(format!("{}.{k} = {v}: must be 0..=7", f("dscp_priority")));
            }
            dscp_priority.push((d, *v));
        }
        if let Some(p) = e.rocev2_priority.filter(|p| *p > 7) {
            return Err(format!("{} = {p}: must be 0..=7", f("rocev2_priority")));
        }
        if b != "end.c" && (!dscp_priority.is_empty() || e.rocev2_priority.is_some()) {
            return Err(format!("{} = {b}: dscp_priority / rocev2_priority apply to end.c only", f("behaviour")));
        }
        let pfc_link_bps = match e.pfc_link_mbps {
            None => None,
            Some(_) if b != "end.c" => return Err(format!("{} = {b}: pfc_link_mbps applies to end.c only", f("behaviour"))),
            Some(m) if !(1..=1_600_000).contains(&m) => return Err(format!("{} = {m}: must be 1..=1600000 (Mb/s)", f("pfc_link_mbps"))),
            Some(m) => Some(m * 1_000_000),
        };
        sids.push(SidPlan { sid, behaviour: b, iface, via, pfc_priority, pause_us, max_pause_ms, hmac_required: e.hmac_required, receivers, downstream, dscp_priority, rocev2_priority: e.rocev2_priority, pfc_link_bps, endc_ifaces });
    }
    // A downstream SID that is local would hand every copy back to this
    // node: a replication loop (A -> B -> A, or A -> A).
    for (i, x) in sids.iter().enumerate() {
        for (j, d) in x.downstream.iter().enumerate() {
            if sids.iter().any(|y| y.sid == *d) {
                return Err(format!("srv6.sid[{i}].downstream[{j}] = {d}: a local SID of this node (a replication loop)"));
            }
        }
    }
    let source = match &s.source {
        Some(a) => {
            let v: std::net::Ipv6Addr = a.parse().map_err(|_| format!("srv6.source = {a:?}: not an IPv6 address"))?;
            if !unicast6(v) {
                return Err(format!("srv6.source = {v}: must be a unicast address of this node"));
            }
            v
        }
        // Not a multicast End.MT SID: the source of H.Encaps, the node
        // address and the PE copies must be one host's.
        None => sids.iter().map(|x| x.sid).find(|a| !a.is_multicast()).unwrap_or(locator.addr()),
    };
    let mut policies = Vec::new();
    let mut pe_specs = Vec::new();
    for (i, p) in s.policies.iter().enumerate() {
        let f = |k: &str| format!("srv6.policy[{i}].{k}");
        let prefix: IpNet = p.prefix.parse().map_err(|_| format!("{} = {:?}: not an IP prefix", f("prefix"), p.prefix))?;
        if prefix.trunc() != prefix {
            return Err(format!("{} = {prefix}: host bits set (did you mean {}?)", f("prefix"), prefix.trunc()));
        }
        if let Some(j) = policies.iter().position(|(q, _): &(IpNet, _)| *q == prefix) {
            return Err(format!("{} = {prefix}: srv6.policy[{j}] steers the same prefix (one policy per prefix; a policy has several SID lists)", f("prefix")));
        }
        if !has_ingress_pe {
            for (k, set) in [("elements", !p.elements.is_empty()), ("backup", !p.backup.is_empty()), ("backup_weights", !p.backup_weights.is_empty()), ("backup_elements", !p.backup_elements.is_empty())] {
                if set {
                    return Err(format!("{}: only used by [ingress_pe] (FANN fail-over), which is not configured", f(k)));
                }
            }
        }
        let mode = match p.mode.as_str() {
            "encaps" => dataplane::srv6::EncapMode::Encaps,
            "encaps.red" => dataplane::srv6::EncapMode::EncapsRed,
            o => return Err(format!("{} = {o:?}: must be \"encaps\" or \"encaps.red\"", f("mode"))),
        };
        if !p.weights.is_empty() && p.weights.len() != p.segments.len() {
            return Err(format!("{} = {:?}: one weight per SID list ({} lists)", f("weights"), p.weights, p.segments.len()));
        }
        if p.segments.is_empty() {
            return Err(format!("{} = []: at least one SID list", f("segments")));
        }
        if let Some(j) = p.weights.iter().position(|w| *w == 0) {
            return Err(format!("{}[{j}] = 0: weights must be >= 1", f("weights")));
        }
        let mut lists = Vec::new();
        for (j, l) in p.segments.iter().enumerate() {
            if l.is_empty() {
                return Err(format!("{}[{j}] = []: a SID list needs at least one SID", f("segments")));
            }
            if l.len() > 128 {
                return Err(format!("{}[{j}]: {} SIDs, at most 128", f("segments"), l.len()));
            }
            let mut sids = Vec::new();
            for (k, a) in l.iter().enumerate() {
                sids.push(a.parse::<std::net::Ipv6Addr>().map_err(|_| format!("{}[{j}][{k}] = {a:?}: not an IPv6 SID", f("segments")))?);
            }
            lists.push((sids, p.weights.get(j).copied().unwrap_or(1)));
        }
        let primary = path_specs(&f, "segments", &lists.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>(), &p.weights, &p.elements, "elements")?;
        let extras = policy_extras(p, &f, &hmac_keys, end_mt_tlv_type)?;
        let pol = dataplane::srv6::SrPolicy::new(source, mode, lists).and_then(|x| x.with_extras(extras)).map_err(|e| format!("srv6.policy[{i}]: {e}"))?;
        if !p.backup_weights.is_empty() && p.backup_weights.len() != p.backup.len() {
            return Err(format!("{} = {:?}: one weight per backup SID list ({} lists)", f("backup_weights"), p.backup_weights, p.backup.len()));
        }
        if let Some(w) = p.backup_weights.iter().find(|w| **w == 0) {
            return Err(format!("{} = {w}: weights must be >= 1", f("backup_weights")));
        }
        let mut backup_lists = Vec::new();
        for (j, l) in p.backup.iter().enumerate() {
            let mut sids = Vec::new();
            for (k, a) in l.iter().enumerate() {
                sids.push(a.parse::<std::net::Ipv6Addr>().map_err(|_| format!("{}[{j}][{k}] = {a:?}: not an IPv6 SID", f("backup")))?);
            }
            if sids.is_empty() {
                return Err(format!("{}[{j}] = []: a backup SID list needs at least one SID", f("backup")));
            }
            backup_lists.push(sids);
        }
        // The backup lists must build as a policy of the same source, mode
        // and SRH extras (the ingress PE switches to them at run time).
        for (j, l) in backup_lists.iter().enumerate() {
            dataplane::srv6::SrPolicy::new(source, mode, vec![(l.clone(), 1)]).and_then(|x| x.with_extras(pol.extras().clone())).map_err(|e| format!("{}[{j}]: {e}", f("backup")))?;
        }
        let backup = if backup_lists.is_empty() {
            if !p.backup_elements.is_empty() {
                return Err(format!("{} = {:?}: no backup SID lists to describe", f("backup_elements"), p.backup_elements));
            }
            None
        } else {
            Some(path_specs(&f, "backup", &backup_lists, &p.backup_weights, &p.backup_elements, "backup_elements")?)
        };
        pe_specs.push(dataplane::fann::PolicySpec { name: p.prefix.clone(), primary, backup });
        policies.push((prefix, pol));
    }
    let notification_sources = match &s.notification_sources {
        None => None,
        Some(v) if v.is_empty() => return Err("srv6.notification_sources = []: name the prefixes of the nodes that send notifications, or leave it out (any)".into()),
        Some(v) => {
            let mut out = Vec::with_capacity(v.len());
            for (i, t) in v.iter().enumerate() {
                let n: ipnet::Ipv6Net = t.parse().map_err(|_| format!("srv6.notification_sources[{i}] = {t:?}: not an IPv6 prefix like fc00::/16"))?;
                if n.trunc() != n {
                    return Err(format!("srv6.notification_sources[{i}] = {n}: host bits set (did you mean {}?)", n.trunc()));
                }
                out.push(n);
            }
            Some(out)
        }
    };
    Ok(Srv6Plan { locator, source, sids, policies, hmac_keys, pe_specs, notification_sources })
}

fn hmac_key_table(keys: &[HmacKeySection]) -> Result<dataplane::wire::srh::HmacKeyTable, String> {
    let mut t = dataplane::wire::srh::HmacKeyTable::new();
    let mut seen = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let f = |x: &str| format!("srv6.hmac_key[{i}].{x}");
        if k.key_id == 0 {
            return Err(format!("{} = 0: key IDs start at 1", f("key_id")));
        }
        if seen.contains(&k.key_id) {
            return Err(format!("{} = {}: configured twice", f("key_id"), k.key_id));
        }
        seen.push(k.key_id);
        if !k.algorithm.eq_ignore_ascii_case("hmac-sha256") {
            return Err(format!("{} = {:?}: only \"hmac-sha256\" is implemented", f("algorithm"), k.algorithm));
        }
        if ![8, 16, 24, 32].contains(&k.length) {
            return Err(format!("{} = {}: must be 8, 16, 24 or 32 octets", f("length"), k.length));
        }
        let (field, secret) = secret_octets(&k.secret_hex, &k.secret, &f)?;
        if secret.len() < 16 {
            return Err(format!("{} = <{} octets>: at least 16 octets", f(field), secret.len()));
        }
        let key = dataplane::wire::srh::HmacKey::new(k.key_id, &secret, k.length).map_err(|e| format!("{}: {e}", f("secret")))?;
        t.insert(key);
    }
    Ok(t)
}

/// `PortParams::validate` names its own fields (ns, internal policy
/// names); say it in the configuration's and the management socket's
/// terms instead: `interval_ns = 0` becomes `interval_us = 0`, the queue
/// depth is `queue_bytes`, and so on. `port`, `queue_bytes`: for the
/// derived checks.
pub fn congestion_error_in_config_terms(why: &str, port: &str, queue_bytes: u64) -> String {
    let Some((field, rest)) = why.split_once(" = ") else { return why.to_string() };
    let (value, reason) = rest.split_once(": ").unwrap_or((rest, ""));
    let scaled = |div: u64| value.parse::<u64>().map_or(value.to_string(), |v| if v % div == 0 { (v / div).to_string() } else { format!("{:.3}", v as f64 / div as f64) });
    let (key, v) = match field {
        "rate_bps" => ("rate_mbps", scaled(1_000_000)),
        "rtt_est_ns" => ("rtt_est_us", scaled(1000)),
        "interval_ns" => ("interval_us", scaled(1000)),
        "flow_idle_timeout_ns" => ("flow_idle_ms", scaled(1_000_000)),
        "policy.observation_window_ns" => ("observation_window_us", scaled(1000)),
        "cnp_port_max_pps" => ("cnp_max_pps", value.to_string()),
        "cnp_port_burst" => ("cnp_burst", value.to_string()),
        "flow_capacity" => ("flows", value.to_string()),
        "policy.top_flows" => ("top_flows", value.to_string()),
        "policy.buffer_bytes" => return format!("queue_bytes = {value} (port {port}): the queue must be deeper than K_max ({})", reason.trim_start_matches("must exceed ").trim_end_matches(" (or be 0)")),
        "policy.pause_at" => return format!("queue_bytes = {queue_bytes} (port {port}): the Pause threshold, 90 % of the queue, must lie above K_max (a deeper queue, or a smaller rtt_est_us / alpha / k_base_bytes)"),
        "adaptive.k_min_floor_frac" => return format!("adaptive = true: K_min must be above a quarter of K_max for the adaptive policy to lower it (raise k_min_bytes or leave it out) [{field} = {value}]"),
        _ => return why.to_string(),
    };
    let reason = reason.replace("at most 10 s", "at most 10 s (10000000 us)");
    format!("{key} = {v}: {reason}")
}

/// Validate `[port.pfc]` (`at` = "port[i].pfc").
fn pfc_plan(c: &PfcSection, at: &str) -> Result<dataplane::pfcrx::PfcRxConfig, String> {
    let err = |field: String, value: &dyn std::fmt::Display, why: &str| -> Result<dataplane::pfcrx::PfcRxConfig, String> { Err(format!("{field} = {value}: {why}")) };
    let mut mask = 0u8;
    for &p in &c.priorities {
        if p > 7 {
            return err(format!("{at}.priorities"), &p, "a priority is 0..=7");
        }
        if mask & (1 << p) != 0 {
            return err(format!("{at}.priorities"), &p, "given twice");
        }
        mask |= 1 << p;
    }
    if mask == 0 && !c.pause {
        return err(format!("{at}.priorities"), &"[]", "honours nothing: name the priorities whose PFC frames hold traffic, or set pause = true");
    }
    // IEEE 802.3 Annex 31D: "When MAC Control PFC operation has been
    // enabled, MAC Control PAUSE operation shall be disabled" (switches
    // and NIC MACs make the two exclusive). Honouring both, a PAUSE with
    // time 0 would also lift the PFC pauses in force.
    if mask != 0 && c.pause {
        return err(format!("{at}.pause"), &true, "with PFC priorities honoured, 802.3x PAUSE must be off (IEEE 802.3 Annex 31D): one or the other per port");
    }
    if c.default_priority > 7 {
        return err(format!("{at}.default_priority"), &c.default_priority, "must be 0..=7");
    }
    let mut cfg = dataplane::pfcrx::PfcRxConfig::with_default_priority(mask, c.pause, c.default_priority);
    for (k, v) in &c.dscp_priority {
        let d = k.parse::<u8>().ok().filter(|d| *d < 64).ok_or_else(|| format!("{at}.dscp_priority.{k:?} = {v}: the key must be a DSCP 0..=63"))?;
        if *v > 7 {
            return err(format!("{at}.dscp_priority.{k}"), v, "must be 0..=7");
        }
        cfg.dscp_priority[usize::from(d)] = *v;
    }
    cfg.link_bps = match c.link_mbps {
        None => 0,
        Some(m) if !(1..=1_600_000).contains(&m) => return err(format!("{at}.link_mbps"), &m, "must be 1..=1600000 (Mb/s)"),
        Some(m) => m * 1_000_000,
    };
    match (c.watchdog_ms, c.restore_ms) {
        (None, Some(r)) => return err(format!("{at}.restore_ms"), &r, "has no effect without watchdog_ms"),
        (None, None) => {}
        (Some(w), r) => {
            if !(1..=60_000).contains(&w) {
                return err(format!("{at}.watchdog_ms"), &w, "must be 1..=60000");
            }
            let r = r.unwrap_or(w);
            if !(1..=600_000).contains(&r) {
                return err(format!("{at}.restore_ms"), &r, "must be 1..=600000");
            }
            cfg.watchdog_ns = w * 1_000_000;
            cfg.restore_ns = r * 1_000_000;
        }
    }
    Ok(cfg)
}

fn congestion_plan(c: &CongestionSection, p: &PortSection, f: &str, ifaces: &[Interface]) -> Result<CongestionPlan, String> {
    use dataplane::congestion::{AdaptivePolicy, CnpFormat, Policy, PortParams, UnknownSourceQp};
    let e = |k: &str, v: &dyn std::fmt::Display, why: &str| Err(format!("{f}.{k} = {v}: {why}"));
    // Without rate_mbps, R_port is the link speed, known once the port has
    // started ([`congestion_params_at_link`]); checked here at K_base.
    let rate = p.rate_mbps.unwrap_or(0);
    if c.rtt_est_us == 0 || c.rtt_est_us > 10_000_000 {
        return e("rtt_est_us", &c.rtt_est_us, "must be 1..=10000000");
    }
    if c.interval_us == 0 || c.interval_us > 10_000_000 {
        return e("interval_us", &c.interval_us, "must be 1..=10000000");
    }
    if c.flow_idle_ms == 0 || c.flow_idle_ms > 86_400_000 {
        return e("flow_idle_ms", &c.flow_idle_ms, "must be 1..=86400000");
    }
    if c.observation_window_us.is_some_and(|w| w > 10_000_000) {
        return e("observation_window_us", &c.observation_window_us.unwrap_or(0), "must be at most 10000000 (10 s)");
    }
    let format = match c.format.as_str() {
        "icmpv6" => CnpFormat::Icmpv6,
        "roce" => CnpFormat::Roce,
        other => return e("format", &format!("{other:?}"), "must be \"icmpv6\" or \"roce\""),
    };
    let qd_immediate = match c.qd_trigger.as_str() {
        "interval" => false,
        "immediate" => true,
        other => return e("qd_trigger", &format!("{other:?}"), "must be \"interval\" or \"immediate\""),
    };
    let unknown_source_qp = match c.unknown_source_qp.as_str() {
        "send" => UnknownSourceQp::Send,
        "icmpv6-only" => UnknownSourceQp::Icmpv6Only,
        "skip" => UnknownSourceQp::Skip,
        other => return e("unknown_source_qp", &format!("{other:?}"), "must be \"send\", \"icmpv6-only\" or \"skip\""),
    };
    let source_v4 = match &c.source_v4 {
        None => None,
        Some(a) => {
            let v: std::net::Ipv4Addr = a.parse().map_err(|_| format!("{f}.source_v4 = {a:?}: not an IPv4 address"))?;
            if v.is_unspecified() || v.is_broadcast() || v.is_multicast() || v.is_loopback() {
                return Err(format!("{f}.source_v4 = {v}: must be a unicast address of this router"));
            }
            Some(v)
        }
    };
    let source_v6 = match &c.source_v6 {
        None => None,
        Some(a) => {
            let v: std::net::Ipv6Addr = a.parse().map_err(|_| format!("{f}.source_v6 = {a:?}: not an IPv6 address"))?;
            if !unicast6(v) {
                return Err(format!("{f}.source_v6 = {v}: must be a unicast address of this router"));
            }
            Some(v)
        }
    };
    let end_e_sid = match &c.end_e_sid {
        None => None,
        Some(a) => {
            let v: std::net::Ipv6Addr = a.parse().map_err(|_| format!("{f}.end_e_sid = {a:?}: not an IPv6 address (an SRv6 SID)"))?;
            if !unicast6(v) {
                return Err(format!("{f}.end_e_sid = {v}: an SRv6 SID is a unicast address"));
            }
            Some(v)
        }
    };
    let params = PortParams {
        rate_bps: rate * 1_000_000,
        rtt_est_ns: c.rtt_est_us * 1000,
        k_base_bytes: c.k_base_bytes,
        alpha: c.alpha,
        k_min_bytes: c.k_min_bytes,
        v_ecn: c.v_ecn,
        v_growth_kb_per_ms: c.v_growth_kb_per_ms,
        interval_ns: c.interval_us * 1000,
        cnp_port_max_pps: c.cnp_max_pps,
        cnp_port_burst: c.cnp_burst,
        flow_capacity: c.flows,
        flow_idle_timeout_ns: c.flow_idle_ms * 1_000_000,
        zero_metrics: c.zero_metrics,
        suppression: c.suppression,
        qd_immediate,
        adaptive: c.adaptive.then(AdaptivePolicy::default),
        default_format: format,
        policy: Policy {
            top_flows: c.top_flows,
            unknown_source_qp,
            buffer_bytes: p.queue_bytes(),
            observation_window_ns: c.observation_window_us.unwrap_or(0).saturating_mul(1000),
            ..Policy::default()
        },
        ack_rtt: match &c.rtt_acks {
            None => None,
            Some(a) => Some(rtt_acks_plan(a, c.rtt_probe.is_some(), &format!("{f}.rtt_acks"))?),
        },
    };
    // Without rate_mbps the rules that hang on K_max (so on R_port) wait
    // for the link speed (checked at start); the others are checked here,
    // at the smallest rate.
    let check = if p.rate_mbps.is_some() { params } else { PortParams { rate_bps: 1, ..params } };
    let by_k_max = |why: &str| ["k_min_bytes", "policy.buffer_bytes", "policy.pause_at", "adaptive.k_min_floor_frac"].iter().any(|k| why.starts_with(k));
    match check.validate() {
        Err(why) if p.rate_mbps.is_some() || !by_k_max(&why) => {
            let m = congestion_error_in_config_terms(&why, &p.name, p.queue_bytes());
            // queue_bytes and rate_mbps are the port's keys.
            let at = if m.starts_with("queue_bytes") || m.starts_with("rate_mbps") { f.trim_end_matches(".congestion") } else { f };
            return Err(format!("{at}.{m}"));
        }
        _ => {}
    }
    k_base_holds_a_frame(c.k_base_bytes, p.mtu).map_err(|why| format!("{f}.{why}"))?;
    let mut source_qps: Vec<SourceQp> = Vec::with_capacity(c.source_qp.len());
    for (i, q) in c.source_qp.iter().enumerate() {
        let fq = format!("{f}.source_qp[{i}]");
        let e = source_qp(&q.source, &q.destination, q.dest_qp, q.source_qp, &fq)?;
        if let Some(j) = source_qps.iter().position(|o| (o.0, o.1, o.2) == (e.0, e.1, e.2)) {
            return Err(format!("{fq}: flow {} -> {} dest_qp {} already has source_qp[{j}]", e.0, e.1, e.2));
        }
        source_qps.push(e);
    }
    let mut source_formats: Vec<(IpNet, CnpFormat)> = Vec::with_capacity(c.source_format.len());
    for (i, s) in c.source_format.iter().enumerate() {
        let fs = format!("{f}.source_format[{i}]");
        let e = source_format(&s.prefix, &s.format, &fs)?;
        if let Some(j) = source_formats.iter().position(|o| o.0 == e.0) {
            return Err(format!("{fs}.prefix = {}: already source_format[{j}]", e.0));
        }
        source_formats.push(e);
    }
    let rtt_probe = match &c.rtt_probe {
        None => None,
        Some(r) => Some(rtt_probe_plan(r, &p.name, ifaces, &format!("{f}.rtt_probe"))?),
    };
    let rtt_acks_degraded_ns = c.rtt_acks.as_ref().map(|a| a.degraded_us.unwrap_or(0) * 1000);
    Ok(CongestionPlan { params, source_v4, source_v6, end_e_sid, source_qps, source_formats, rate_from_link: p.rate_mbps.is_none(), rtt_probe, rtt_acks_degraded_ns })
}

/// Validate `[port.congestion.rtt_acks]` (`probe`: the port has
/// `rtt_probe` too).
fn rtt_acks_plan(a: &RttAcksSection, probe: bool, f: &str) -> Result<dataplane::congestion::AckRttParams, String> {
    if probe {
        return Err(format!("{f}: RTT_est follows one measurement; this port has [port.congestion.rtt_probe] as well (keep one)"));
    }
    if !(10..=3_600_000).contains(&a.window_ms) {
        return Err(format!("{f}.window_ms = {}: must be 10..=3600000", a.window_ms));
    }
    if !(1..=10_000).contains(&a.timeout_ms) {
        return Err(format!("{f}.timeout_ms = {}: must be 1..=10000", a.timeout_ms));
    }
    if a.degraded_us.is_some_and(|d| !(1..=10_000_000).contains(&d)) {
        return Err(format!("{f}.degraded_us = {}: must be 1..=10000000", a.degraded_us.unwrap_or(0)));
    }
    Ok(dataplane::congestion::AckRttParams { window_ns: a.window_ms * 1_000_000, timeout_ns: a.timeout_ms * 1_000_000 })
}

/// Validate `[port.congestion.rtt_probe]` of port `name`, whose
/// interfaces (the port's and its VLANs') are `ifaces`: the probes come
/// from their address of the target's family, one whose subnet holds the
/// target if there is one.
fn rtt_probe_plan(r: &RttProbeSection, name: &str, ifaces: &[Interface], f: &str) -> Result<dataplane::rttprobe::ProbeConfig, String> {
    let target: IpAddr = r.target.parse().map_err(|_| format!("{f}.target = {:?}: not an IP address", r.target))?;
    let unicast = match target {
        IpAddr::V4(a) => !(a.is_unspecified() || a.is_broadcast() || a.is_multicast() || a.is_loopback() || a.is_link_local()),
        IpAddr::V6(a) => unicast6(a),
    };
    if !unicast {
        return Err(format!("{f}.target = {target}: must be a routable unicast address (not link-local, multicast, loopback or unspecified)"));
    }
    if !(10..=60_000).contains(&r.interval_ms) {
        return Err(format!("{f}.interval_ms = {}: must be 10..=60000", r.interval_ms));
    }
    if !(1..=60_000).contains(&r.timeout_ms) {
        return Err(format!("{f}.timeout_ms = {}: must be 1..=60000", r.timeout_ms));
    }
    if !(1..=dataplane::rttprobe::MAX_WINDOW).contains(&r.window) {
        return Err(format!("{f}.window = {}: must be 1..={}", r.window, dataplane::rttprobe::MAX_WINDOW));
    }
    let source = match target {
        IpAddr::V4(t) => {
            let nets: Vec<ipnet::Ipv4Net> = ifaces.iter().flat_map(|i| i.v4.iter().copied()).collect();
            nets.iter().find(|n| n.contains(&t)).or(nets.first()).map(|n| IpAddr::V4(n.addr()))
        }
        IpAddr::V6(t) => {
            let nets: Vec<ipnet::Ipv6Net> = ifaces.iter().flat_map(|i| i.v6.iter().copied()).collect();
            nets.iter().find(|n| n.contains(&t)).or(nets.first()).map(|n| IpAddr::V6(n.addr()))
        }
    };
    let source = source.ok_or_else(|| format!("{f}.target = {target}: port {name} has no {} address to send the probes from", if target.is_ipv4() { "IPv4" } else { "IPv6" }))?;
    if r.degraded_us.is_some_and(|d| !(1..=10_000_000).contains(&d)) {
        return Err(format!("{f}.degraded_us = {}: must be 1..=10000000", r.degraded_us.unwrap_or(0)));
    }
    Ok(dataplane::rttprobe::ProbeConfig { target, source, interval_ns: r.interval_ms * 1_000_000, timeout_ns: r.timeout_ms * 1_000_000, window: r.window, degraded_ns: r.degraded_us.unwrap_or(0) * 1000 })
}

/// Stands for "the link speed" where a port has no rate_mbps but a
/// congestion-aware node (never a valid rate_mbps).
const LINK_SPEED: u64 = u64::MAX;

/// The congestion parameters of port `port` (index `i`) once it has
/// started: R_port is the link speed the NIC reports (`link_bps`) when the
/// configuration gave no rate_mbps; checked as the configuration's are,
/// errors naming the field. Unchanged when rate_mbps was given.
pub fn congestion_params_at_link(plan: &CongestionPlan, port: &PortPlan, i: usize, queue_bytes: u64, link_bps: u64) -> Result<dataplane::congestion::PortParams, String> {
    if !plan.rate_from_link {
        return Ok(plan.params);
    }
    if link_bps == 0 || link_bps >= u64::from(u32::MAX) * 1_000_000 {
        return Err(format!("port[{i}].rate_mbps = (absent) (port {}): R_port is the link speed, which the NIC does not report (link down?); set rate_mbps", port.name));
    }
    let params = dataplane::congestion::PortParams { rate_bps: link_bps, ..plan.params };
    params.validate().map_err(|why| {
        let m = congestion_error_in_config_terms(&why, &port.name, queue_bytes);
        let at = if m.starts_with("queue_bytes") || m.starts_with("rate_mbps") { format!("port[{i}]") } else { format!("port[{i}].congestion") };
        format!("{at}.{m} (R_port = the link speed, {} Mb/s)", link_bps / 1_000_000)
    })?;
    Ok(params)
}

/// s.5.3.2: K_base "SHOULD correspond to at least one maximum-sized
/// RoCEv2 frame": the largest frame the port sends is its MTU plus the
/// Ethernet header and an 802.1Q tag.
pub fn k_base_holds_a_frame(k_base: u64, mtu: u16) -> Result<(), String> {
    let frame = u64::from(mtu) + 18;
    if k_base < frame {
        return Err(format!("k_base_bytes = {k_base}: must hold at least one maximum-sized frame of the port, MTU {mtu} + 18 (Ethernet header, 802.1Q tag) = {frame} bytes (s.5.3.2)"));
    }
    Ok(())
}

fn parse_addrs(list: &[String], field: &str, ifc: &mut Interface, seen: &mut HashSet<IpAddr>, nets: &mut Vec<(IpNet, String)>) -> Result<(), String> {
    for (k, a) in list.iter().enumerate() {
        let net: IpNet = a.parse().map_err(|_| format!("{field}[{k}] = {a:?}: not an address with prefix length like 10.0.0.1/24"))?;
        let ip = net.addr();
        if ip.is_multicast() || ip.is_unspecified() || ip.is_loopback() {
            return Err(format!("{field}[{k}] = {a:?}: not a unicast address"));
        }
        // RFC 1122 s.3.2.1.3, RFC 6890: "this network" (0/8), the limited
        // broadcast address and the reserved 240/4 are no host's.
        if let IpAddr::V4(v) = ip {
            if v.octets()[0] == 0 || v.octets()[0] >= 240 {
                return Err(format!("{field}[{k}] = {a:?}: not an assignable address (0.0.0.0/8, 240.0.0.0/4 and 255.255.255.255 are reserved, RFC 6890)"));
            }
        }
        if let IpNet::V4(n) = net {
            if n.prefix_len() < 31 && (n.addr() == n.network() || n.addr() == n.broadcast()) {
                return Err(format!("{field}[{k}] = {a:?}: is the network or broadcast address of its subnet"));
            }
        }
        if !seen.insert(ip) {
            return Err(format!("{field}[{k}] = {a:?}: address configured twice"));
        }
        if net.prefix_len() == 0 {
            return Err(format!("{field}[{k}] = {a:?}: a /0 subnet would make every address directly attached"));
        }
        // The same subnet on two interfaces: one connected route would
        // replace the other (nested subnets are fine: longest match).
        // Link-local subnets are per interface.
        let subnet = net.trunc();
        let link_local = matches!(ip, IpAddr::V6(v) if v.is_unicast_link_local());
        if let Some((_, name)) = nets.iter().find(|(o, name)| !link_local && *name != ifc.name && *o == subnet) {
            return Err(format!("{field}[{k}] = {a:?}: its subnet {subnet} is already connected on interface {name:?}"));
        }
        nets.push((subnet, ifc.name.clone()));
        match net {
            IpNet::V4(n) => ifc.v4.push(n),
            IpNet::V6(n) => ifc.v6.push(n),
        }
    }
    Ok(())
}

/// The interface whose connected subnet `prefix` is, if any (a static
/// route to it would replace the connected route).
pub fn connected_owner(interfaces: &[Interface], prefix: IpNet) -> Option<&Interface> {
    let p = prefix.trunc();
    interfaces.iter().find(|i| i.v4.iter().map(|n| IpNet::V4(n.trunc())).chain(i.v6.iter().map(|n| IpNet::V6(n.trunc()))).any(|n| n == p))
}

/// The ECMP hash seed when the configuration gives none: a hash of the
/// interfaces' addresses, which differ from router to router.
fn default_ecmp_seed(interfaces: &[Interface]) -> u64 {
    // FNV-1a over the addresses and prefix lengths: a fixed algorithm, so
    // the same seed at every start and with every build.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for i in interfaces {
        let v4 = i.v4.iter().map(|n| (n.addr().octets().to_vec(), n.prefix_len()));
        let v6 = i.v6.iter().map(|n| (n.addr().octets().to_vec(), n.prefix_len()));
        for (a, len) in v4.chain(v6) {
            for b in a.into_iter().chain([len]) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
    h
}

/// Work out the egress interface of a route: given explicitly, or from the
/// connected subnet that contains the gateway.
pub fn resolve_nexthop(
    fib: &Fib,
    interfaces: &[Interface],
    prefix: IpNet,
    via: Option<IpAddr>,
    interface: Option<&str>,
    iface_idx: &dyn Fn(&str) -> Option<u16>,
) -> Result<NextHop, String> {
    let explicit = match interface {
        None => None,
        Some(n) => Some(iface_idx(n).ok_or_else(|| format!("interface {n:?}: no such interface"))?),
    };
    if let Some(v) = via {
        let fam_ok = matches!((prefix, v), (IpNet::V4(_), IpAddr::V4(_)) | (IpNet::V6(_), IpAddr::V6(_)));
        if !fam_ok {
            return Err(format!("via {v}: address family differs from the prefix"));
        }
    }
    if let Some(g) = via {
        gateway_is_a_neighbour(interfaces, g, explicit).map_err(|why| format!("via {g}: {why}"))?;
    }
    let iface = match (explicit, via) {
        (Some(i), _) => i,
        (None, Some(IpAddr::V4(g))) => connected4(fib, g).ok_or_else(|| format!("via {g}: not on any connected subnet; give interface = \"...\""))?,
        (None, Some(IpAddr::V6(g))) => connected6(fib, g).ok_or_else(|| format!("via {g}: not on any connected subnet; give interface = \"...\""))?,
        (None, None) => return Err("needs via, interface, or both".into()),
    };
    if usize::from(iface) >= interfaces.len() {
        return Err(format!("interface index {iface} out of range"));
    }
    Ok(NextHop { iface, gateway: via })
}

/// A gateway is a neighbour: a unicast address that is none of the
/// router's own, not a subnet's network or broadcast address, on a subnet
/// of the interface given (a link-local one only with its interface, RFC
/// 4007 s.6: it is unique on its link alone). `Err`: the reason, for the
/// caller to put after the field and value it names.
pub fn gateway_is_a_neighbour(interfaces: &[Interface], g: IpAddr, explicit: Option<u16>) -> Result<(), String> {
    let own = |i: &Interface| i.v4.iter().any(|n| IpAddr::V4(n.addr()) == g) || i.v6.iter().any(|n| IpAddr::V6(n.addr()) == g);
    if let Some(o) = interfaces.iter().find(|i| own(i)) {
        return Err(format!("an address of this router (interface {:?}); a gateway is a neighbour", o.name));
    }
    let link_local = match g {
        IpAddr::V4(a) => {
            if a.is_multicast() || a.is_broadcast() || a.is_unspecified() || a.is_loopback() {
                return Err("not a unicast address".to_string());
            }
            if let Some(n) = interfaces.iter().flat_map(|i| i.v4.iter()).find(|n| n.prefix_len() < 31 && (a == n.network() || a == n.broadcast())) {
                return Err(format!("the network or broadcast address of subnet {}, not a host", n.trunc()));
            }
            false
        }
        IpAddr::V6(a) => {
            if a.is_multicast() || a.is_unspecified() || a.is_loopback() {
                return Err("not a unicast address".to_string());
            }
            a.is_unicast_link_local()
        }
    };
    match explicit.and_then(|i| interfaces.get(usize::from(i))) {
        None if link_local => Err("a link-local gateway is unique only on its link; give interface = \"...\"".to_string()),
        Some(i) if !link_local && !i.v4.iter().any(|n| matches!(g, IpAddr::V4(a) if n.contains(&a))) && !i.v6.iter().any(|n| matches!(g, IpAddr::V6(a) if n.contains(&a))) => {
            Err(format!("not on a subnet of interface {:?}", i.name))
        }
        _ => Ok(()),
    }
}

fn connected4(fib: &Fib, g: std::net::Ipv4Addr) -> Option<u16> {
    fib.lookup4(g).filter(|n| n.gateway.is_none()).map(|n| n.iface)
}
fn connected6(fib: &Fib, g: std::net::Ipv6Addr) -> Option<u16> {
    fib.lookup6(g).filter(|n| n.gateway.is_none()).map(|n| n.iface)
}

#[cfg(test)]
mod tests_common {
    pub const GOOD: &str = r#"
[dataplane]
worker_cores = [0]
[[port]]
name = "dc"
device = "net_pcap0,rx_pcap=a.pcap,tx_pcap=b.pcap"
mac = "02:00:00:00:00:01"
addresses = ["10.0.1.1/24", "2001:db8:1::1/64"]
[[port]]
name = "wan"
device = "0000:3b:00.0"
rx_queues = 4
addresses = ["10.0.2.1/24"]
[[port.vlan]]
id = 100
addresses = ["10.0.3.1/24"]
[[route]]
prefix = "192.0.2.0/24"
via = "10.0.2.2"
[[route]]
prefix = "2001:db8:99::/48"
interface = "dc"
[[neighbour]]
ip = "10.0.2.2"
mac = "02:00:00:00:00:22"
interface = "wan"
"#;
}

#[cfg(test)]
mod tests {
    use super::tests_common::GOOD;
    use super::*;
    use dataplane::multicast::TlvReceivers;

    /// `[port.pfc]`: the honoured priorities and the DSCP map; the port
    /// gets an unshaped egress queue to hold paused data in; every bad
    /// value is named.
    #[test]
    fn pfc_honoured_on_a_port() {
        let pfc = |t: &str| GOOD.replacen("addresses = [\"10.0.2.1/24\"]", &format!("addresses = [\"10.0.2.1/24\"]\n[port.pfc]\n{t}"), 1);
        let c = load_str(&pfc("priorities = [3, 4]\ndscp_priority = { 26 = 3, 46 = 5 }\ndefault_priority = 1\nlink_mbps = 25000")).unwrap();
        let p = c.ports[1].pfc.unwrap();
        assert_eq!((p.priorities, p.pause, p.link_bps), (0b0001_1000, false, 25_000_000_000));
        assert_eq!((p.dscp_priority[26], p.dscp_priority[46], p.dscp_priority[0], p.dscp_priority[63]), (3, 5, 1, 1));
        assert_eq!(c.ports[1].egress.map(|e| e.rate_bps), Some(0), "an unshaped queue for the paused data");
        assert!(c.ports[0].pfc.is_none() && c.ports[0].egress.is_none());
        let w = load_str(&pfc("priorities = [3]\nwatchdog_ms = 200")).unwrap().ports[1].pfc.unwrap();
        assert_eq!((w.watchdog_ns, w.restore_ns), (200_000_000, 200_000_000), "restoration defaults to the detection time");
        assert_eq!(p.watchdog_ns, 0, "off unless configured");
        let c = load_str(&pfc("pause = true")).unwrap();
        assert_eq!((c.ports[1].pfc.unwrap().priorities, c.ports[1].pfc.unwrap().pause, c.ports[1].pfc.unwrap().link_bps), (0, true, 0));
        for (t, e) in [
            ("priorities = [8]", "port[1].pfc.priorities = 8: a priority is 0..=7"),
            ("priorities = [3, 3]", "port[1].pfc.priorities = 3: given twice"),
            ("priorities = []", "port[1].pfc.priorities = []: honours nothing"),
            ("priorities = [3]\npause = true", "port[1].pfc.pause = true: with PFC priorities honoured, 802.3x PAUSE must be off (IEEE 802.3 Annex 31D)"),
            ("priorities = [3]\ndefault_priority = 9", "port[1].pfc.default_priority = 9: must be 0..=7"),
            ("priorities = [3]\ndscp_priority = { 64 = 3 }", "port[1].pfc.dscp_priority.\"64\" = 3: the key must be a DSCP 0..=63"),
            ("priorities = [3]\ndscp_priority = { 26 = 8 }", "port[1].pfc.dscp_priority.26 = 8: must be 0..=7"),
            ("priorities = [3]\nlink_mbps = 0", "port[1].pfc.link_mbps = 0: must be 1..=1600000 (Mb/s)"),
            ("priorities = [3]\nquanta = 5", "unknown field `quanta`"),
            ("priorities = [3]\nrestore_ms = 5", "port[1].pfc.restore_ms = 5: has no effect without watchdog_ms"),
            ("priorities = [3]\nwatchdog_ms = 0", "port[1].pfc.watchdog_ms = 0: must be 1..=60000"),
            ("priorities = [3]\nwatchdog_ms = 100\nrestore_ms = 0", "port[1].pfc.restore_ms = 0: must be 1..=600000"),
        ] {
            let got = load_str(&pfc(t)).unwrap_err();
            assert!(got.contains(e), "{t}: {got}");
        }
    }

    #[test]
    fn urpf_per_port_and_vlan() {
        use dataplane::tables::Urpf;
        let c = load_str(&GOOD.replacen("name = \"wan\"", "name = \"wan\"\nurpf = \"strict\"", 1).replacen("id = 100", "id = 100\nurpf = \"loose\"", 1)).unwrap();
        let u: Vec<(String, Urpf)> = c.interfaces.iter().map(|i| (i.name.clone(), i.urpf)).collect();
        assert_eq!(u, vec![("dc".into(), Urpf::Off), ("wan".into(), Urpf::Strict), ("wan.100".into(), Urpf::Loose)]);
        let c = load_str(&GOOD.replacen("name = \"wan\"", "name = \"wan\"\nurpf = \"strict\"", 1)).unwrap();
        assert_eq!(c.interfaces[2].urpf, Urpf::Strict, "a VLAN takes its port's");
    }

    #[test]
    fn ecmp_routes_and_their_errors() {
        let ecmp = r#"
[[route]]
prefix = "198.51.100.0/24"
nexthop = [{ via = "10.0.2.2" }, { via = "10.0.3.2", weight = 3 }, { via = "10.0.1.9", interface = "dc" }]
"#;
        let c = load_str(&format!("{GOOD}{ecmp}")).unwrap();
        let (_, r) = c.fib.routes4().find(|(p, _)| p.to_string() == "198.51.100.0/24").unwrap();
        let got: Vec<(u16, String, u16)> = r.paths().iter().map(|(nh, w)| (nh.iface, nh.gateway.unwrap().to_string(), *w)).collect();
        assert_eq!(got, vec![(1, "10.0.2.2".into(), 1), (2, "10.0.3.2".into(), 3), (0, "10.0.1.9".into(), 1)]);
        // The default seed comes from the addresses: two routers differ,
        // one router keeps it; a configured one wins.
        let other = load_str(&format!("{GOOD}{ecmp}").replace("10.0.1.1/24", "10.0.1.2/24")).unwrap();
        assert_ne!(c.fib.seed(), other.fib.seed());
        assert_eq!(c.fib.seed(), load_str(&format!("{GOOD}{ecmp}")).unwrap().fib.seed());
        let seeded = load_str(&format!("{GOOD}{ecmp}").replacen("worker_cores = [0]", "worker_cores = [0]\necmp_seed = 42", 1)).unwrap();
        assert_eq!(seeded.fib.seed(), 42);
        let err = |extra: &str| load_str(&format!("{GOOD}{extra}")).unwrap_err();
        let e = err("[[route]]\nprefix = \"198.51.100.0/24\"\nvia = \"10.0.2.2\"\nnexthop = [{ via = \"10.0.3.2\" }]\n");
        assert!(e.contains("route[2] (prefix 198.51.100.0/24): give either via / interface or a nexthop list"), "{e}");
        let e = err("[[route]]\nprefix = \"198.51.100.0/24\"\nnexthop = [{ via = \"10.0.2.2\" }, { via = \"10.0.3.2\", weight = 0 }]\n");
        assert!(e.contains("route[2].nexthop[1].weight = 0: must be 1 to 256"), "{e}");
        let e = err("[[route]]\nprefix = \"198.51.100.0/24\"\nnexthop = [{ via = \"10.0.2.2\" }, { via = \"172.16.0.1\" }]\n");
        assert!(e.contains("route[2].nexthop[1] (prefix 198.51.100.0/24 via 172.16.0.1): via 172.16.0.1: not on any connected subnet"), "{e}");
        let e = err("[[route]]\nprefix = \"198.51.100.0/24\"\nnexthop = [{ via = \"10.0.2.2\" }, { via = \"10.0.2.2\" }]\n");
        assert!(e.contains("route[2].nexthop[1] (prefix 198.51.100.0/24 via 10.0.2.2): the same next hop as an earlier one"), "{e}");
        let e = err("[[route]]\nprefix = \"10.0.3.0/24\"\nvia = \"10.0.2.2\"\n");
        assert!(e.contains("route[2].prefix = \"10.0.3.0/24\": the connected subnet of interface wan.100"), "{e}");
        let e = err("[[route]]\nprefix = \"198.51.100.0/24\"\nnexthop = [{ via = \"x\" }]\n");
        assert!(e.contains("route[2].nexthop[0].via = \"x\": not an IP address"), "{e}");
        let e = err("[[route]]\nprefix = \"192.0.2.0/24\"\nvia = \"10.0.3.2\"\n");
        assert!(e.contains("route[2].prefix = \"192.0.2.0/24\": a second route to 192.0.2.0/24"), "{e}");
        let e = err("[[route]]\nprefix = \"192.0.2.1/24\"\nvia = \"10.0.3.2\"\n");
        assert!(e.contains("route[2].prefix = 192.0.2.1/24: host bits set (did you mean 192.0.2.0/24?)"), "{e}");
        let e = err("[[route]]\nprefix = \"198.51.100.0/24\"\nnexthop = [{ via = \"10.0.2.2\", cost = 1 }]\n");
        assert!(e.contains("cost"), "{e}");
    }

    #[test]
    fn good_config_validates() {
        let c = load_str(GOOD).unwrap();
        assert_eq!(c.ports.len(), 2);
        assert!(c.ports[0].is_vdev);
        assert_eq!(c.ports[0].device_name, "net_pcap0");
        assert_eq!(c.ports[1].device_name, "0000:3b:00.0");
        assert_eq!(c.interfaces.len(), 3);
        assert_eq!(c.interfaces[2].name, "wan.100");
        assert_eq!(c.fib.lookup4("192.0.2.7".parse().unwrap()).unwrap().iface, 1);
        assert_eq!(c.fib.lookup4("10.0.3.9".parse().unwrap()).unwrap().iface, 2);
        assert_eq!(c.neighbours.len(), 1);
    }

    #[test]
    fn shaped_queues_hold_at_most_a_share_of_the_mempool() {
        let shaped = |a: &str, b: &str, extra: &str| {
            GOOD.replacen("[dataplane]", &format!("[mempool]\nmbufs_per_socket = 8192\n{extra}\n[dataplane]"), 1)
                .replacen("rx_queues = 4", &format!("rx_queues = 4\nrate_mbps = 1000\n{b}"), 1)
                .replacen("addresses = [\"10.0.1.1/24\", \"2001:db8:1::1/64\"]", &format!("addresses = [\"10.0.1.1/24\", \"2001:db8:1::1/64\"]\nrate_mbps = 1000\n{a}"), 1)
        };
        // Default: half the pool, shared by the two shaped ports.
        let c = load_str(&shaped("", "", "")).unwrap();
        let caps: Vec<usize> = c.ports.iter().map(|p| p.egress.as_ref().unwrap().max_packets).collect();
        assert_eq!(caps, vec![2048, 2048]);
        // Explicit, within half the pool.
        let c = load_str(&shaped("queue_packets = 3000", "queue_packets = 1096", "")).unwrap();
        let caps: Vec<usize> = c.ports.iter().map(|p| p.egress.as_ref().unwrap().max_packets).collect();
        assert_eq!(caps, vec![3000, 1096]);
        let e = load_str(&shaped("queue_packets = 3000", "queue_packets = 1097", "")).unwrap_err();
        assert!(e.contains("port[1].queue_packets = 1097") && e.contains("4097 of mempool.mbufs_per_socket = 8192: at most half"), "{e}");
        let e = load_str(&shaped("queue_packets = 10", "", "")).unwrap_err();
        assert!(e.contains("port[0].queue_packets = 10") && e.contains("at least 64"), "{e}");
        // The smallest pool still gives each of two shaped queues 256.
        // (The PCI port's rings made small enough to fit it.)
        let small = shaped("", "", "").replacen("mbufs_per_socket = 8192", "mbufs_per_socket = 1024", 1).replace("rate_mbps = 1000", "rate_mbps = 1000\nqueue_bytes = 65536").replacen("rx_queues = 4", "rx_queues = 1\nrx_desc = 128\ntx_desc = 128", 1);
        let e = load_str(&small).unwrap();
        assert_eq!(e.ports[0].egress.as_ref().unwrap().max_packets, 256);
    }

    fn bad(patch: (&str, &str)) -> String {
        let t = GOOD.replacen(patch.0, patch.1, 1);
        assert_ne!(t, GOOD, "patch did not apply: {patch:?}");
        load_str(&t).unwrap_err()
    }

    #[test]
    fn errors_name_field_value_and_reason() {
        let e = bad(("rx_queues = 4", "rx_queues = 0"));
        assert!(e.contains("port[1].rx_queues = 0") && e.contains("must be"), "{e}");
        let e = bad(("02:00:00:00:00:01", "zz:00:00:00:00:01"));
        assert!(e.contains("port[0].mac") && e.contains("zz:00"), "{e}");
        let e = bad(("via = \"10.0.2.2\"", "via = \"172.16.0.1\""));
        assert!(e.contains("route[0]") && e.contains("172.16.0.1") && e.contains("connected"), "{e}");
        let e = bad(("10.0.1.1/24", "10.0.1.1/33"));
        assert!(e.contains("port[0].addresses[0]") && e.contains("10.0.1.1/33"), "{e}");
        let e = bad(("device = \"0000:3b:00.0\"", "device = \"eth0\""));
        assert!(e.contains("port[1].device = eth0"), "{e}");
        let e = bad(("id = 100", "id = 4095"));
        assert!(e.contains("port[1].vlan[0].id = 4095"), "{e}");
        let e = bad(("interface = \"wan\"", "interface = \"nope\""));
        assert!(e.contains("neighbour[0].interface") && e.contains("nope"), "{e}");
        let e = bad(("worker_cores = [0]", "worker_cores = [0, 0]"));
        assert!(e.contains("dataplane.worker_cores[1] = 0") && e.contains("twice"), "{e}");
        let e = bad(("[dataplane]", "[dataplane]\nbogus = 1"));
        assert!(e.contains("bogus"), "{e}");
        let e = bad(("name = \"dc\"", "name = \"dc\"\nurpf = \"strong\""));
        assert!(e.contains("port[0].urpf = \"strong\": must be \"off\", \"loose\" or \"strict\""), "{e}");
        let e = bad(("id = 100", "id = 100\nurpf = \"x\""));
        assert!(e.contains("port[1].vlan[0].urpf = \"x\""), "{e}");
        for v in ["0", "1048577"] {
            let e = bad(("[dataplane]", &format!("[dataplane]\nneighbour_learn_limit = {v}")));
            assert!(e.contains(&format!("dataplane.neighbour_learn_limit = {v}")) && e.contains("1..=1048576"), "{e}");
        }
        let e = bad(("addresses = [\"10.0.2.1/24\"]", "addresses = [\"10.0.1.1/24\"]"));
        assert!(e.contains("configured twice"), "{e}");
        for v in ["50", "3600001"] {
            let e = bad(("[dataplane]", &format!("[dataplane]\nneighbour_reachable_ms = {v}")));
            assert!(e.contains(&format!("dataplane.neighbour_reachable_ms = {v}: must be 0 (off) or 100..=3600000")), "{e}");
        }
        let e = bad(("[dataplane]", "[dataplane]\nneighbour_queue_packets = 64\nneighbour_queue_total = 10"));
        assert!(e.contains("dataplane.neighbour_queue_total = 10: must be at least neighbour_queue_packets (64)"), "{e}");
        let e = bad(("[dataplane]", "[dataplane]\nneighbour_queue_total = 100000"));
        assert!(e.contains("dataplane.neighbour_queue_total = 100000: x 1 worker(s) must be at most a quarter of mempool.mbufs_per_socket (4095)"), "{e}");
        for v in ["0", "60001"] {
            let e = bad(("[dataplane]", &format!("[dataplane]\nneighbour_queue_ms = {v}")));
            assert!(e.contains(&format!("dataplane.neighbour_queue_ms = {v}: must be 50..=60000")), "{e}");
        }
        for v in ["999", "3600001"] {
            let e = bad(("[dataplane]", &format!("[dataplane]\nneighbour_retry_max_ms = {v}")));
            assert!(e.contains(&format!("dataplane.neighbour_retry_max_ms = {v}: must be neighbour_solicit_interval_ms (1000)..=3600000")), "{e}");
        }
        for v in ["99", "86400001"] {
            let e = bad(("[dataplane]", &format!("[dataplane]\nneighbour_stale_ms = {v}")));
            assert!(e.contains(&format!("dataplane.neighbour_stale_ms = {v}: must be 0 (kept) or 100..=86400000")), "{e}");
        }
        for v in ["0", "11"] {
            let e = bad(("[dataplane]", &format!("[dataplane]\nneighbour_probes = {v}")));
            assert!(e.contains(&format!("dataplane.neighbour_probes = {v}: must be 1..=10")), "{e}");
        }
        let e = bad(("[dataplane]", "[dataplane]\nneighbour_solicit_interval_ms = 20"));
        assert!(e.contains("dataplane.neighbour_solicit_interval_ms = 20: must be 50..=60000"), "{e}");
    }

    /// s.5.3.2: K_base holds at least one maximum-sized frame of the port.
    #[test]
    fn k_base_holds_a_frame_of_the_port() {
        let with = |extra: &str, k: u64| load_str(&GOOD.replacen("addresses = [\"10.0.2.1/24\"]\n", &format!("addresses = [\"10.0.2.1/24\"]\nrate_mbps = 1000\n{extra}[port.congestion]\nrtt_est_us = 100\nk_base_bytes = {k}\n"), 1));
        assert!(with("", 1518).is_ok(), "MTU 1500 + 18");
        let e = with("", 1517).unwrap_err();
        assert!(e.contains("port[1].congestion.k_base_bytes = 1517: must hold at least one maximum-sized frame of the port, MTU 1500 + 18"), "{e}");
        let e = with("mtu = 1280\n", 1297).unwrap_err();
        assert!(e.contains("k_base_bytes = 1297") && e.contains("MTU 1280") && e.contains("1298 bytes"), "{e}");
        assert!(with("mtu = 1280\n", 1298).is_ok());
    }

    #[test]
    fn source_formats_validate() {
        use dataplane::congestion::CnpFormat;
        let with = |entries: &str| load_str(&GOOD.replacen("addresses = [\"10.0.2.1/24\"]\n", &format!("addresses = [\"10.0.2.1/24\"]\nrate_mbps = 1000\n[port.congestion]\nrtt_est_us = 100\n{entries}"), 1));
        let e = |p: &str, f: &str| format!("[[port.congestion.source_format]]\nprefix = \"{p}\"\nformat = \"{f}\"\n");
        let c = with(&(e("10.1.0.0/16", "roce") + &e("2001:db8:1::/48", "icmpv6"))).unwrap();
        let plan = c.ports[1].congestion.as_ref().unwrap();
        assert_eq!(plan.source_formats, vec![("10.1.0.0/16".parse().unwrap(), CnpFormat::Roce), ("2001:db8:1::/48".parse().unwrap(), CnpFormat::Icmpv6)]);
        for (entries, want) in [
            (e("10.1.0.0/16", "icmpv6"), "port[1].congestion.source_format[0].format = \"icmpv6\": prefix 10.1.0.0/16 is IPv4"),
            (e("10.1.0.1/16", "roce"), "port[1].congestion.source_format[0].prefix = 10.1.0.1/16: host bits set (did you mean 10.1.0.0/16?)"),
            (e("10.1.0.0", "roce"), "port[1].congestion.source_format[0].prefix = \"10.1.0.0\": not a prefix"),
            (e("10.1.0.0/16", "udp"), "port[1].congestion.source_format[0].format = \"udp\": must be"),
            (e("10.1.0.0/16", "roce") + &e("10.1.0.0/16", "roce"), "port[1].congestion.source_format[1].prefix = 10.1.0.0/16: already source_format[0]"),
        ] {
            let err = with(&entries).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn cnp_auth_validates_and_never_echoes_the_key() {
        use dataplane::wire::ah::Algorithm;
        let cong = GOOD.replacen("addresses = [\"10.0.2.1/24\"]\n", "addresses = [\"10.0.2.1/24\"]\nrate_mbps = 1000\n[port.congestion]\nrtt_est_us = 100\n", 1);
        let sa = |prefix: &str, spi: &str, rest: &str| format!("[[cnp_auth]]\nprefix = \"{prefix}\"\nspi = {spi}\n{rest}");
        let key32 = "secret_hex = \"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"\n";
        let c = load_str(&(cong.clone() + &sa("2001:db8:1::/48", "0x1000", key32) + &sa("2001:db8::/32", "4097", &format!("algorithm = \"hmac-sha512-256\"\nsecret = \"{}\"\n", "k".repeat(64))))).unwrap();
        let sas = c.cnp_auth.sas();
        assert_eq!(sas.len(), 2);
        assert_eq!((sas[0].key.spi(), sas[0].key.algorithm()), (0x1000, Algorithm::HmacSha256_128), "hmac-sha256-128 by default");
        assert_eq!((sas[1].key.spi(), sas[1].key.algorithm()), (4097, Algorithm::HmacSha512_256));
        assert_eq!(c.cnp_auth.for_destination("2001:db8:1::9".parse().unwrap()).map(|s| s.key.spi()), Some(0x1000));
        assert!(load_str(&cong).unwrap().cnp_auth.is_empty());
        for (text, want) in [
            (sa("10.1.0.0/16", "4096", key32), "cnp_auth[0].prefix = \"10.1.0.0/16\": not an IPv6 prefix"),
            (sa("2001:db8:1::1/48", "4096", key32), "cnp_auth[0].prefix = 2001:db8:1::1/48: host bits set"),
            (sa("2001:db8:1::/48", "255", key32), "cnp_auth[0].spi = 255: SPIs 0..=255 are reserved"),
            (sa("2001:db8:1::/48", "4096", &format!("algorithm = \"hmac-md5\"\n{key32}")), "cnp_auth[0].algorithm = \"hmac-md5\": must be"),
            (sa("2001:db8:1::/48", "4096", "secret = \"short but secret!\"\n"), "cnp_auth[0].secret = <17 octets>: hmac-sha256-128 takes a key of exactly 32 octets"),
            (sa("2001:db8:1::/48", "4096", &format!("algorithm = \"hmac-sha512-256\"\n{key32}")), "cnp_auth[0].secret_hex = <32 octets>: hmac-sha512-256 takes a key of exactly 64 octets"),
            (sa("2001:db8:1::/48", "4096", "secret_hex = \"zz\"\n"), "cnp_auth[0].secret_hex = <2 characters>: not hexadecimal octets"),
            (sa("2001:db8:1::/48", "4096", ""), "cnp_auth[0].secret: missing"),
            (sa("2001:db8:1::/48", "4096", key32) + &sa("2001:db8:1::/48", "4097", key32), "cnp_auth[1].prefix = 2001:db8:1::/48: listed twice"),
        ] {
            let e = load_str(&(cong.clone() + &text)).unwrap_err();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains("0a0b0c") && !e.contains("short but"), "the key is never printed: {e}");
        }
        let e = load_str(&(GOOD.to_string() + &sa("2001:db8:1::/48", "4096", key32))).unwrap_err();
        assert!(e.contains("cnp_auth[0].prefix = \"2001:db8:1::/48\": no port has [port.congestion]"), "{e}");
    }

    #[test]
    fn configured_source_qps_validate() {
        let with = |entries: &str| {
            GOOD.replacen("addresses = [\"10.0.2.1/24\"]\n", &format!("addresses = [\"10.0.2.1/24\"]\nrate_mbps = 1000\n[port.congestion]\nrtt_est_us = 100\n{entries}"), 1)
        };
        let q = |s: &str, d: &str, dq: &str, sq: &str| format!("[[port.congestion.source_qp]]\nsource = \"{s}\"\ndestination = \"{d}\"\ndest_qp = {dq}\nsource_qp = {sq}\n");
        let c = load_str(&with(&(q("2001:db8:1::2", "2001:db8:3::7", "0x100", "0x900") + &q("10.0.1.2", "10.0.3.7", "7", "9")))).unwrap();
        let plan = c.ports[1].congestion.as_ref().unwrap();
        assert_eq!(plan.source_qps, vec![("2001:db8:1::2".parse().unwrap(), "2001:db8:3::7".parse().unwrap(), 0x100, 0x900), ("10.0.1.2".parse().unwrap(), "10.0.3.7".parse().unwrap(), 7, 9)]);
        let e = load_str(&with(&q("2001:db8:1::2", "10.0.3.7", "1", "2"))).unwrap_err();
        assert!(e.contains("port[1].congestion.source_qp[0].destination = 10.0.3.7") && e.contains("family"), "{e}");
        // What to do for flows whose source QP is still unknown.
        use dataplane::congestion::UnknownSourceQp;
        let unknown = |v: &str| load_str(&with(&format!("unknown_source_qp = \"{v}\"\n"))).map(|c| c.ports[1].congestion.as_ref().unwrap().params.policy.unknown_source_qp);
        assert_eq!(plan.params.policy.unknown_source_qp, UnknownSourceQp::Send, "sent by default");
        assert_eq!(unknown("icmpv6-only"), Ok(UnknownSourceQp::Icmpv6Only));
        assert_eq!(unknown("skip"), Ok(UnknownSourceQp::Skip));
        let e = unknown("never").unwrap_err();
        assert!(e.contains("port[1].congestion.unknown_source_qp = \"never\": must be \"send\", \"icmpv6-only\" or \"skip\""), "{e}");
        let e = load_str(&with(&q("nope", "10.0.3.7", "1", "2"))).unwrap_err();
        assert!(e.contains("port[1].congestion.source_qp[0].source = \"nope\": not an IP address"), "{e}");
        let e = load_str(&with(&q("10.0.1.2", "10.0.3.7", "1", "16777216"))).unwrap_err();
        assert!(e.contains("port[1].congestion.source_qp[0].source_qp = 16777216") && e.contains("24 bits"), "{e}");
        let e = load_str(&with(&(q("10.0.1.2", "10.0.3.7", "1", "2") + &q("10.0.1.2", "10.0.3.7", "1", "3")))).unwrap_err();
        assert!(e.contains("port[1].congestion.source_qp[1]") && e.contains("already has source_qp[0]"), "{e}");
    }

    const MC: &str = r#"
[srv6]
locator = "fc00:0:1::/48"
[[srv6.sid]]
sid = "fc00:0:1::10"
behaviour = "end.mt"
[[multicast.group]]
name = "g1"
proxy = "2001:db8:ff::1"
designated_qpn = 1
source = "2001:db8:5::1"
source_qpn = 256
cnp_window_us = 20
end_mt_sid = "fc00:0:1::10"
receivers = [ { address = "2001:db8:2::10", qpn = 0x11 }, { address = "2001:db8:2::11", qpn = 0x12 } ]
"#;

    fn bad_mc(patch: (&str, &str)) -> String {
        let base = format!("{GOOD}{MC}");
        let t = base.replacen(patch.0, patch.1, 1);
        assert_ne!(t, base, "patch did not apply: {patch:?}");
        load_str(&t).unwrap_err()
    }

    #[test]
    fn notification_sources_validate() {
        let c = load_str(&format!("{GOOD}{MC}").replacen("locator = \"fc00:0:1::/48\"", "locator = \"fc00:0:1::/48\"\nnotification_sources = [\"fc00:0:9::/48\"]", 1)).unwrap();
        assert_eq!(c.srv6.as_ref().unwrap().notification_sources, Some(vec!["fc00:0:9::/48".parse().unwrap()]));
        assert_eq!(crate::router::sid_table(&c).unwrap().notification_sources, Some(vec!["fc00:0:9::/48".parse().unwrap()]));
        for (v, want) in [("[]", "srv6.notification_sources = []"), ("[\"10.0.0.0/8\"]", "srv6.notification_sources[0] = \"10.0.0.0/8\": not an IPv6 prefix"), ("[\"fc00::1/16\"]", "srv6.notification_sources[0] = fc00::1/16: host bits set")] {
            let e = bad_mc(("locator = \"fc00:0:1::/48\"", &format!("locator = \"fc00:0:1::/48\"\nnotification_sources = {v}")));
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn mld_validates() {
        const ML: &str = "[multicast.mld]\ninterfaces = [\"dc\"]\n";
        let c = load_str(&format!("{GOOD}{ML}")).unwrap();
        let m = c.mld.clone().expect("MLD planned");
        assert_eq!(m.ifaces, vec![0]);
        assert_eq!(m.cfg, dataplane::mld::MldConfig::default(), "RFC 9777 s.9 defaults");
        assert_eq!(c.topology().mld, vec![0], "the workers know where MLD runs");
        assert!(m.v1_ifaces.is_empty(), "MLDv2 by default");
        let v1 = load_str(&format!("{GOOD}[multicast.mld]\ninterfaces = [\"wan\", \"dc\"]\nv1_interfaces = [\"dc\"]\n")).unwrap();
        assert_eq!(v1.mld.map(|m| (m.ifaces, m.v1_ifaces)), Some((vec![1, 0], vec![0])));
        let bad = |patch: (&str, &str)| {
            let base = format!("{GOOD}{ML}");
            let t = base.replacen(patch.0, patch.1, 1);
            assert_ne!(t, base, "patch did not apply: {patch:?}");
            load_str(&t).unwrap_err()
        };
        let ifs = "interfaces = [\"dc\"]";
        for (patch, want) in [
            ((ifs, "interfaces = []"), "multicast.mld.interfaces = []"),
            ((ifs, "interfaces = [\"dc\", \"nope\"]"), "multicast.mld.interfaces[1] = \"nope\": no such interface"),
            ((ifs, "interfaces = [\"dc\", \"dc\"]"), "multicast.mld.interfaces[1] = \"dc\": listed twice"),
            ((ifs, "interfaces = [\"dc\"]\nrobustness = 0"), "multicast.mld.robustness = 0: must be 1..=7"),
            ((ifs, "interfaces = [\"dc\"]\nrobustness = 8"), "multicast.mld.robustness = 8: must be 1..=7"),
            ((ifs, "interfaces = [\"dc\"]\nquery_interval_s = 0"), "multicast.mld.query_interval_s = 0: must be 1..=31744"),
            ((ifs, "interfaces = [\"dc\"]\nquery_interval_s = 40000"), "multicast.mld.query_interval_s = 40000: must be 1..=31744"),
            ((ifs, "interfaces = [\"dc\"]\nquery_interval_s = 5\nquery_response_interval_ms = 5000"), "multicast.mld.query_response_interval_ms = 5000: must be at least 1, at most 8387584 (s.5.1.3) and below the query interval (5 s"),
            ((ifs, "interfaces = [\"dc\"]\nlast_listener_query_interval_ms = 0"), "multicast.mld.last_listener_query_interval_ms = 0: must be 1..=8387584"),
            ((ifs, "interfaces = [\"dc\"]\nmax_groups = 0"), "multicast.mld.max_groups = 0: must be 1..=65536"),
            ((ifs, "interfaces = [\"dc\"]\nmax_sources = 5000"), "multicast.mld.max_sources = 5000: must be 1..=1024"),
            ((ifs, "interfaces = [\"dc\"]\nquerier = true"), "unknown field `querier`"),
            ((ifs, "interfaces = [\"dc\"]\nv1_interfaces = [\"wan\"]"), "multicast.mld.v1_interfaces[0] = \"wan\": not one of multicast.mld.interfaces"),
            ((ifs, "interfaces = [\"dc\"]\nv1_interfaces = [\"dc\", \"dc\"]"), "multicast.mld.v1_interfaces[1] = \"dc\": listed twice"),
            ((ifs, "interfaces = [\"dc\"]\nv1_interfaces = [\"dc\"]\nquery_response_interval_ms = 70000"), "multicast.mld.query_response_interval_ms = 70000: at most 65535 with v1_interfaces"),
        ] {
            let e = bad(patch);
            assert!(e.contains(want), "{patch:?}: {e}");
        }
    }

    #[test]
    fn multicast_routes_validate() {
        const MR: &str = "[[multicast.route]]\ngroup = \"ff1e::100\"\niif = \"wan\"\noifs = [\"dc\"]\n";
        let c = load_str(&format!("{GOOD}{MC}{MR}")).unwrap();
        assert_eq!(c.mroutes, vec![dataplane::tables::Mroute::new("ff1e::100".parse().unwrap(), None, Some(1), vec![0])]);
        assert_eq!(c.topology().mroutes, c.mroutes, "the workers' topology carries them");
        let bad = |patch: (&str, &str)| {
            let base = format!("{GOOD}{MC}{MR}");
            let t = base.replacen(patch.0, patch.1, 1);
            assert_ne!(t, base, "patch did not apply: {patch:?}");
            load_str(&t).unwrap_err()
        };
        for (patch, want) in [
            (("group = \"ff1e::100\"", "group = \"2001:db8::1\""), "multicast.route[0].group = 2001:db8::1: must be an IPv6 multicast group"),
            (("group = \"ff1e::100\"", "group = \"ff02::100\""), "multicast.route[0].group = ff02::100: must be an IPv6 multicast group of wider than link-local scope"),
            (("group = \"ff1e::100\"", "group = \"ff00::100\""), "multicast.route[0].group = ff00::100: must be an IPv6 multicast group"),
            (("group = \"ff1e::100\"", "group = \"nope\""), "multicast.route[0].group = \"nope\": not an IPv6 address"),
            (("group = \"ff1e::100\"", "group = \"ff3e::100\""), "multicast.route[0].group = ff3e::100: an SSM group (ff3x::/32) is forwarded only from the source a receiver asked for (RFC 4607 s.5.1): set source"),
            (("iif = \"wan\"", "iif = \"wan\"\nsource = \"ff3e::1\""), "multicast.route[0].source = ff3e::1: must be a unicast address"),
            (("iif = \"wan\"", "iif = \"lo\""), "multicast.route[0].iif = \"lo\": no such interface"),
            (("oifs = [\"dc\"]", "oifs = [\"dc\", \"x\"]"), "multicast.route[0].oifs[1] = \"x\": no such interface"),
            (("oifs = [\"dc\"]", "oifs = [\"dc\", \"dc\"]"), "multicast.route[0].oifs[1] = \"dc\": listed twice"),
            (("oifs = [\"dc\"]", "oifs = [\"wan\"]"), "multicast.route[0].oifs[0] = \"wan\": the route's iif"),
            (("oifs = [\"dc\"]", "oifs = []"), "multicast.route[0].oifs = []"),
            (("oifs = [\"dc\"]\n", "oifs = [\"dc\"]\n[[multicast.route]]\ngroup = \"ff1e::100\"\noifs = [\"dc\"]\n"), "multicast.route[1].group = ff1e::100: a route for this group is configured twice"),
            (("sid = \"fc00:0:1::10\"\nbehaviour = \"end.mt\"", "sid = \"fc00:0:1::10\"\nbehaviour = \"end.mt\"\n[[srv6.sid]]\nsid = \"ff3e::7\"\nbehaviour = \"end\""), "srv6.sid[1].sid = ff3e::7: a multicast SID must be an end.mt SID"),
        ] {
            let e = bad(patch);
            assert!(e.contains(want), "{patch:?}: {e}");
        }
        // An SSM group is routed from a named source, and a group that is
        // a local End.MT SID needs no outgoing interface (an edge node
        // only; an SSM group too, since nothing is forwarded).
        let ok = format!("{GOOD}{MC}{MR}").replacen("oifs = [\"dc\"]\n", "oifs = [\"dc\"]\n[[multicast.route]]\ngroup = \"ff3e::100\"\nsource = \"2001:db8:5::1\"\noifs = [\"dc\"]\n", 1)
            + "[[multicast.route]]\ngroup = \"ff3e::7\"\n";
        let ok = ok.replacen("behaviour = \"end.mt\"", "behaviour = \"end.mt\"\n[[srv6.sid]]\nsid = \"ff3e::7\"\nbehaviour = \"end.mt\"", 1);
        let c = load_str(&ok).unwrap();
        assert_eq!(c.mroutes.len(), 3);
        // The default srv6.source is a SID that is one host's address, not
        // a multicast End.MT SID listed first.
        let first = ok.replacen("[[srv6.sid]]\nsid = \"fc00:0:1::10\"", "[[srv6.sid]]\nsid = \"ff3e::9\"\nbehaviour = \"end.mt\"\n[[srv6.sid]]\nsid = \"fc00:0:1::10\"", 1);
        assert_ne!(first, ok);
        assert_eq!(load_str(&first).unwrap().srv6.unwrap().source, "fc00:0:1::10".parse::<std::net::Ipv6Addr>().unwrap());
        assert_eq!(c.mroutes[1].source, Some("2001:db8:5::1".parse().unwrap()));
        assert!(c.mroutes[2].oifs.is_empty());
    }

    #[test]
    fn multicast_groups_validate() {
        let c = load_str(&format!("{GOOD}{MC}")).unwrap();
        assert_eq!(c.multicast.len(), 1);
        let g = &c.multicast[0];
        assert_eq!(g.name, "g1");
        assert_eq!(g.cfg.cnp_window_ns, 20_000);
        assert_eq!(g.cfg.id.source_qpn, 256);
        assert_eq!(g.cfg.receivers[1].qpn, 0x12);
        assert_eq!(g.end_mt_sid, Some("fc00:0:1::10".parse().unwrap()));
        let e = bad_mc(("proxy = \"2001:db8:ff::1\"", "proxy = \"ff02::1\""));
        assert!(e.contains("multicast.group[0].proxy = ff02::1") && e.contains("unicast"), "{e}");
        let e = bad_mc(("designated_qpn = 1", "designated_qpn = 16777216"));
        assert!(e.contains("multicast.group[0].designated_qpn = 16777216") && e.contains("24 bits"), "{e}");
        let e = bad_mc(("cnp_window_us = 20", "cnp_window_us = 0"));
        assert!(e.contains("multicast.group[0].cnp_window_us = 0"), "{e}");
        assert_eq!(g.cfg.cnp_window_max_ns, None, "a fixed window by default");
        let rtt = |extra: &str| load_str(&format!("{GOOD}{MC}").replacen("cnp_window_us = 20\n", &format!("cnp_window_us = 20\n{extra}\n"), 1));
        let c = rtt("cnp_window = \"rtt\"").unwrap();
        assert_eq!(c.multicast[0].cfg.cnp_window_max_ns, Some(10_000_000), "ceiling 10 ms by default");
        let c = rtt("cnp_window = \"rtt\"\ncnp_window_max_us = 2000").unwrap();
        assert_eq!((c.multicast[0].cfg.cnp_window_ns, c.multicast[0].cfg.cnp_window_max_ns), (20_000, Some(2_000_000)));
        let e = rtt("cnp_window = \"rtt\"\ncnp_window_max_us = 19").unwrap_err();
        assert!(e.contains("multicast.group[0].cnp_window_max_us = 19: must be cnp_window_us (20)"), "{e}");
        let e = rtt("cnp_window_max_us = 2000").unwrap_err();
        assert!(e.contains("multicast.group[0].cnp_window_max_us = 2000: only with cnp_window = \"rtt\""), "{e}");
        assert_eq!(g.cfg.tlv_receivers, TlvReceivers::Any, "every TLV receiver by default");
        assert_eq!(rtt("tlv_receivers = \"strict\"").unwrap().multicast[0].cfg.tlv_receivers, TlvReceivers::Strict);
        let e = rtt("tlv_receivers = \"learn\"").unwrap_err();
        assert!(e.contains("multicast.group[0].receivers has 2 entries: with tlv_receivers = \"learn\" the receivers are learned from the End.MT TLV"), "{e}");
        let learn = format!("{GOOD}{MC}").replacen("receivers = [ { address = \"2001:db8:2::10\", qpn = 0x11 }, { address = \"2001:db8:2::11\", qpn = 0x12 } ]", "tlv_receivers = \"learn\"", 1);
        let c = load_str(&learn).unwrap();
        assert_eq!((c.multicast[0].cfg.tlv_receivers, c.multicast[0].cfg.receivers.len()), (TlvReceivers::Learn, 0));
        let e = load_str(&learn.replacen("behaviour = \"end.mt\"", "behaviour = \"end\"", 1)).unwrap_err();
        assert!(e.contains("tlv_receivers = \"learn\": needs an end.mt SID in [srv6]"), "{e}");
        let e = rtt("tlv_receivers = \"some\"").unwrap_err();
        assert!(e.contains("multicast.group[0].tlv_receivers = \"some\": must be \"any\", \"strict\" or \"learn\""), "{e}");
        let e = rtt("cnp_window = \"auto\"").unwrap_err();
        assert!(e.contains("multicast.group[0].cnp_window = \"auto\": must be \"fixed\" or \"rtt\""), "{e}");
        let e = bad_mc(("qpn = 0x12", "qpn = 0x1000000"));
        assert!(e.contains("multicast.group[0].receivers[1].qpn = 16777216"), "{e}");
        let e = bad_mc(("2001:db8:2::11", "2001:db8:2::10"));
        assert!(e.contains("multicast.group[0].receivers[1].address = 2001:db8:2::10") && e.contains("twice"), "{e}");
        let e = bad_mc(("source = \"2001:db8:5::1\"", "source = \"nope\""));
        assert!(e.contains("multicast.group[0].source = \"nope\""), "{e}");
        let e = bad_mc(("end_mt_sid = \"fc00:0:1::10\"", "end_mt_sid = \"fc00:0:1::11\""));
        assert!(e.contains("multicast.group[0].end_mt_sid = fc00:0:1::11") && e.contains("end.mt"), "{e}");
        let second = MC.split("[[multicast.group]]").nth(1).unwrap().replace("\"g1\"", "\"g2\"").replace("2001:db8:ff::1", "2001:db8:ff::2").replace("2001:db8:2::1", "2001:db8:2::2");
        let e = load_str(&format!("{GOOD}{MC}[[multicast.group]]{second}")).unwrap_err();
        assert!(e.contains("multicast.group[1].end_mt_sid = fc00:0:1::10: already the End.MT SID of group \"g1\""), "{e}");
        let e = bad_mc(("receivers = [ { address = \"2001:db8:2::10\", qpn = 0x11 }, { address = \"2001:db8:2::11\", qpn = 0x12 } ]", "receivers = []"));
        assert!(e.contains("multicast.group[0].receivers = []"), "{e}");
        // Hop by hop: child nodes and the node address.
        let hop = |v: &str| format!("{GOOD}{MC}").replacen("receivers = [", &format!("{v}\nreceivers = ["), 1);
        let e = load_str(&hop("node_address = \"2001:db8:64::4\"")).unwrap_err();
        assert!(e.contains("multicast.group[0].node_address = 2001:db8:64::4: not an address of this router"), "{e}");
        let c = load_str(&hop("child_nodes = [\"2001:db8:41::1\", \"2001:db8:42::2\"]\nnode_address = \"fc00:0:1::99\"")).unwrap();
        let g = &c.multicast[0].cfg;
        assert_eq!(g.children, vec!["2001:db8:41::1".parse::<std::net::Ipv6Addr>().unwrap(), "2001:db8:42::2".parse().unwrap()]);
        assert_eq!(g.node_address, Some("fc00:0:1::99".parse().unwrap()));
        let e = load_str(&hop("child_nodes = [\"2001:db8:2::10\"]")).unwrap_err();
        assert!(e.contains("multicast.group[0].child_nodes[0] = 2001:db8:2::10") && e.contains("twice"), "{e}");
        let e = load_str(&hop("child_nodes = [\"ff02::2\"]")).unwrap_err();
        assert!(e.contains("multicast.group[0].child_nodes[0] = ff02::2") && e.contains("unicast"), "{e}");
        let e = load_str(&hop("node_address = \"2001:db8:ff::1\"")).unwrap_err();
        assert!(e.contains("multicast.group[0].node_address = 2001:db8:ff::1") && e.contains("own address"), "{e}");
        let e = load_str(&hop("node_address = \"2001:db8:2::11\"")).unwrap_err();
        assert!(e.contains("multicast.group[0].node_address = 2001:db8:2::11"), "{e}");
        // A transit node: child nodes only.
        let t = format!("{GOOD}{MC}").replacen("receivers = [ { address = \"2001:db8:2::10\", qpn = 0x11 }, { address = \"2001:db8:2::11\", qpn = 0x12 } ]", "child_nodes = [\"2001:db8:41::1\"]", 1);
        let c = load_str(&t).unwrap();
        assert!(c.multicast[0].cfg.receivers.is_empty());
        assert_eq!(c.multicast[0].cfg.children.len(), 1);
        // a second group on the same (proxy, designated QPN)
        let g2 = "\n[[multicast.group]]\nname = \"g2\"\nproxy = \"2001:db8:ff::1\"\ndesignated_qpn = 1\nsource = \"2001:db8:5::1\"\nsource_qpn = 257\nreceivers = [ { address = \"2001:db8:2::12\", qpn = 1 } ]\n";
        let e = load_str(&format!("{GOOD}{MC}{g2}")).unwrap_err();
        assert!(e.contains("multicast.group[1].proxy = 2001:db8:ff::1") && e.contains("\"g1\""), "{e}");
    }

    #[test]
    fn shipped_configs_validate() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().map(|x| x == "toml").unwrap_or(false) {
                load_file(p.to_str().unwrap()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                n += 1;
            }
        }
        assert!(n >= 3, "configs/ holds {n} examples");
    }

    const SRV6: &str = r#"
[srv6]
locator = "fc00:0:1::/48"
[[srv6.hmac_key]]
key_id = 7
secret_hex = "00112233445566778899aabbccddeeff"
length = 16
[[srv6.sid]]
sid = "fc00:0:1::10"
behaviour = "end.mt"
hmac_required = true
receivers = [{ address = "2001:db8:9::1", qpn = 0x1234 }, { address = "2001:db8:9::2", qpn = 0x1235 }]
downstream = ["fc00:0:2::10"]
"#;

    #[test]
    fn srv6_end_mt_provisioning_and_hmac_keys() {
        let c = load_str(&format!("{GOOD}{SRV6}")).unwrap();
        let t = crate::router::sid_table(&c).unwrap();
        match t.get(&"fc00:0:1::10".parse().unwrap()) {
            Some(dataplane::srv6::Behaviour::EndMT { receivers_extra, hmac_required, downstream }) => {
                assert!(*hmac_required);
                assert_eq!(receivers_extra, &vec![("2001:db8:9::1".parse().unwrap(), 0x1234), ("2001:db8:9::2".parse().unwrap(), 0x1235)]);
                assert_eq!(downstream, &vec!["fc00:0:2::10".parse::<std::net::Ipv6Addr>().unwrap()]);
            }
            o => panic!("{o:?}"),
        }
        let k = t.hmac_keys().lookup(7).expect("key 7 installed");
        assert_eq!(k.len(), 16);
        // The key is the configured one: RFC 4231 style check against an
        // independent HMAC-SHA256 of the same input.
        let secret: Vec<u8> = (0..16u8).map(|i| i * 0x11).collect();
        let d = k.digest(&[b"abc"]);
        let mut m = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(&secret).unwrap();
        hmac::Mac::update(&mut m, b"abc");
        assert_eq!(&d[..], &hmac::Mac::finalize(m).into_bytes()[..]);

        let bad = |from: &str, to: &str| {
            let t = format!("{GOOD}{SRV6}").replacen(from, to, 1);
            load_str(&t).unwrap_err()
        };
        let e = bad("key_id = 7", "key_id = 0");
        assert!(e.contains("srv6.hmac_key[0].key_id = 0"), "{e}");
        let e = bad("length = 16", "length = 12");
        assert!(e.contains("srv6.hmac_key[0].length = 12"), "{e}");
        let e = bad("00112233445566778899aabbccddeeff", "0011zz");
        assert!(e.contains("srv6.hmac_key[0].secret_hex") && !e.contains("0011zz"), "the secret is never echoed: {e}");
        let e = bad("00112233445566778899aabbccddeeff", "0011");
        assert!(e.contains("at least 16 octets"), "{e}");
        let e = bad("qpn = 0x1234", "qpn = 0x1234567");
        assert!(e.contains("srv6.sid[0].receivers[0].qpn = 19088743"), "{e}");
        let e = bad("\"2001:db8:9::2\"", "\"2001:db8:9::1\"");
        assert!(e.contains("srv6.sid[0].receivers[1].address = 2001:db8:9::1") && e.contains("twice"), "{e}");
        let e = bad("[\"fc00:0:2::10\"]", "[\"fc00:0:1::10\"]");
        assert!(e.contains("srv6.sid[0].downstream[0] = fc00:0:1::10") && e.contains("loop"), "{e}");
        let e = bad("behaviour = \"end.mt\"", "behaviour = \"end\"");
        assert!(e.contains("srv6.sid[0].hmac_required = true") && e.contains("end.mt"), "{e}");
        let e = bad("[[srv6.hmac_key]]\nkey_id = 7\nsecret_hex = \"00112233445566778899aabbccddeeff\"\nlength = 16\n", "");
        assert!(e.contains("srv6.sid[0].hmac_required = true") && e.contains("no [[srv6.hmac_key]]"), "{e}");
    }

    const PE: &str = r#"
[srv6]
locator = "fc00:0:a::/48"
source = "fc00:0:a::"
[[srv6.sid]]
sid = "fc00:0:a::c"
behaviour = "end.c"
interface = "dc"
pfc_priority = 2
rocev2_priority = 4
dscp_priority = { 26 = 3, 46 = 5 }
[[srv6.policy]]
prefix = "10.0.9.0/24"
segments = [["fc00:0:1::1", "fc00:0:2::1", "fc00:0:e::d4"], ["fc00:0:3::1", "fc00:0:e::d4"]]
weights = [3, 1]
elements = [["fc00::1#2", "fc00::2"], ["fc00::3"]]
backup = [["fc00:0:5::1", "fc00:0:e::d4"]]
backup_elements = [["fc00::5"]]
[ingress_pe]
known_nodes = ["fc00::1", "fc00::2", "fc00::3", "fc00::5"]
controller = "2001:db8:1::c"
"#;

    fn pe_bad(patch: (&str, &str)) -> String {
        let base = format!("{GOOD}{PE}");
        let t = base.replacen(patch.0, patch.1, 1);
        assert_ne!(t, base, "patch did not apply: {patch:?}");
        load_str(&t).unwrap_err()
    }

    #[test]
    fn wan_notify_validates_and_feeds_fann_and_congestion() {
        let fann = "[fann]\nnode = \"fc00::9\"\ningress_pes = [\"fc00::a\", \"fc00::b\"]\n";
        let w = "[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\nsources = [\"2001:db8:1::/48\", \"10.1.0.0/16\"]\n[[wan_notify]]\ningress_pe = \"fc00::c\"\nsid = \"fc00:0:c::e\"\nsources = [\"2001:db8:7::/48\"]\n";
        let c = load_str(&format!("{GOOD}{fann}{w}")).unwrap();
        assert_eq!(c.wan_notify.len(), 2);
        assert_eq!(c.fann.as_ref().unwrap().encap, vec![("fc00::a".parse().unwrap(), "fc00:0:a::c".parse().unwrap())], "only PEs FANN notifies");
        let ns = c.notify_sids();
        assert_eq!(ns.len(), 3);
        assert!(ns.contains(&("10.1.0.0/16".parse().unwrap(), "fc00:0:a::c".parse().unwrap())));
        assert!(ns.contains(&("2001:db8:7::/48".parse().unwrap(), "fc00:0:c::e".parse().unwrap())));
        let err = |t: &str| load_str(&format!("{GOOD}{fann}{t}")).unwrap_err();
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"nope\"\n");
        assert!(e.contains("wan_notify[0].sid = \"nope\": not an IPv6 address"), "{e}");
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::d\"\nsid = \"fc00:0:d::c\"\ntunnel_sources = []\n");
        assert!(e.contains("wan_notify[0].ingress_pe = fc00::d") && e.contains("nothing would use"), "{e}");
        // Tunnel sources: the PE's address by default, or the prefixes given.
        let c = load_str(&format!("{GOOD}{fann}[[wan_notify]]\ningress_pe = \"fc00::d\"\nsid = \"fc00:0:d::c\"\n[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\ntunnel_sources = [\"fc00:a::/48\", \"fc00::a/128\"]\n")).unwrap();
        let tp = |s: &str| s.parse::<ipnet::Ipv6Net>().unwrap();
        let a6 = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap();
        assert_eq!(c.tunnel_pe_list(), vec![(tp("fc00::d/128"), a6("fc00:0:d::c"), a6("fc00::d")), (tp("fc00:a::/48"), a6("fc00:0:a::c"), a6("fc00::a")), (tp("fc00::a/128"), a6("fc00:0:a::c"), a6("fc00::a"))]);
        assert_eq!(c.tunnel_pes().len(), 3);
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\ntunnel_sources = [\"10.0.0.0/8\"]\n");
        assert!(e.contains("wan_notify[0].tunnel_sources[0] = \"10.0.0.0/8\": not an IPv6 prefix"), "{e}");
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\ntunnel_sources = [\"fc00:a::1/48\"]\n");
        assert!(e.contains("wan_notify[0].tunnel_sources[0] = fc00:a::1/48: host bits set"), "{e}");
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\ntunnel_sources = [\"ff00::/8\"]\n");
        assert!(e.contains("wan_notify[0].tunnel_sources[0] = ff00::/8: a tunnel's source is a unicast address"), "{e}");
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\ntunnel_sources = [\"fc00:b::/48\"]\n[[wan_notify]]\ningress_pe = \"fc00::b\"\nsid = \"fc00:0:b::c\"\ntunnel_sources = [\"fc00:b::/48\"]\n");
        assert!(e.contains("wan_notify[1].tunnel_sources[0] = fc00:b::/48: also the tunnel source of ingress PE fc00::a"), "{e}");
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\ntunnel_sources = [\"fc00::b/128\"]\n[[wan_notify]]\ningress_pe = \"fc00::b\"\nsid = \"fc00:0:b::c\"\n");
        assert!(e.contains("wan_notify[1].ingress_pe = fc00::b (the default tunnel_sources): also the tunnel source of ingress PE fc00::a"), "{e}");
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\nsources = [\"2001:db8:1::5/48\"]\n");
        assert!(e.contains("wan_notify[0].sources[0] = 2001:db8:1::5/48: host bits set"), "{e}");
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"ff02::1\"\n");
        assert!(e.contains("wan_notify[0].sid = ff02::1: must be a unicast address"), "{e}");
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\n[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::e\"\n");
        assert!(e.contains("wan_notify[1].ingress_pe = fc00::a: listed twice"), "{e}");
        let e = err("[[wan_notify]]\ningress_pe = \"fc00::a\"\nsid = \"fc00:0:a::c\"\nsources = [\"10.0.0.0/8\"]\n[[wan_notify]]\ningress_pe = \"fc00::b\"\nsid = \"fc00:0:b::e\"\nsources = [\"10.0.0.0/8\"]\n");
        assert!(e.contains("wan_notify[1].sources[0] = 10.0.0.0/8: also behind ingress PE fc00::a"), "{e}");
        // The node's burst holds a notification to every PE.
        let e = load_str(&format!("{GOOD}{fann}burst = 1\n")).unwrap_err();
        assert!(e.contains("fann.rate_pps = 1000, burst = 1") && e.contains("number of ingress PEs (2)"), "{e}");
        assert!(load_str(&format!("{GOOD}{fann}burst = 2\n")).is_ok());
        // Path IDs per port.
        let c = load_str(&format!("{GOOD}{fann}path_ids = {{ wan = \"fc00:0:11::1\" }}\n")).unwrap();
        assert_eq!(c.fann.unwrap().path_ids, vec![("wan".to_string(), "fc00:0:11::1".parse::<std::net::Ipv6Addr>().unwrap().octets())]);
        let e = load_str(&format!("{GOOD}{fann}path_ids = {{ wan = \"x\" }}\n")).unwrap_err();
        assert!(e.contains("fann.path_ids.wan = \"x\""), "{e}");
        let e = load_str(&format!("{GOOD}{fann}path_ids = {{ nope = \"fc00::1\" }}\n")).unwrap_err();
        assert!(e.contains("fann.path_ids.nope: no port named"), "{e}");
        // FANN draft s.6: from a control-plane address, never a forwarding
        // interface's.
        let e = load_str(&format!("{GOOD}{}", fann.replace("fc00::9", "2001:db8:1::1"))).unwrap_err();
        assert!(e.contains("fann.node = 2001:db8:1::1: the address of data-plane interface \"dc\"") && e.contains("s.6"), "{e}");
    }

    #[test]
    fn ingress_pe_and_end_c_mapping_validate() {
        let c = load_str(&format!("{GOOD}{PE}")).unwrap();
        let pe = c.ingress_pe.as_ref().unwrap();
        assert_eq!(pe.controller, Some("2001:db8:1::c".parse().unwrap()));
        assert_eq!(pe.source, "fc00:0:a::".parse::<std::net::Ipv6Addr>().unwrap(), "default: srv6.source");
        assert_eq!(pe.known_nodes.len(), 4);
        let (idx, spec) = &pe.policies[0];
        assert_eq!(*idx, 0);
        assert_eq!(spec.primary.len(), 2);
        assert_eq!(spec.primary[0].weight, 3);
        assert_eq!(spec.primary[0].elements, vec![dataplane::fann::Element { node: "fc00::1".parse().unwrap(), port: Some(2) }, dataplane::fann::Element { node: "fc00::2".parse().unwrap(), port: None }]);
        let b = spec.backup.as_ref().unwrap();
        assert_eq!(b[0].segments[0], "fc00:0:5::1".parse::<std::net::Ipv6Addr>().unwrap());
        assert_eq!(b[0].weight, 1);
        let sid = &c.srv6.as_ref().unwrap().sids[0];
        assert_eq!((sid.pfc_priority, sid.rocev2_priority), (2, Some(4)));
        assert_eq!(sid.dscp_priority, vec![(26, 3), (46, 5)]);
        // PAUSE quanta: at the speed the NIC reported, not at the port's
        // shaped rate; 100 Gb/s while unknown; the configured speed first.
        let endc_bps = |c: &RouterConfig| crate::router::sid_table(c).unwrap().endc[0].1.link_bps;
        assert_eq!(endc_bps(&c), 100_000_000_000);
        let shaped = load_str(&format!("{GOOD}{PE}").replacen("name = \"dc\"", "name = \"dc\"\nrate_mbps = 10000", 1)).unwrap();
        assert!(shaped.ports[0].egress.is_some());
        assert_eq!(endc_bps(&shaped), 100_000_000_000, "not the shaped rate");
        let mut c2 = shaped.clone();
        for p in c2.ports.iter_mut() {
            p.link_bps = 25_000_000_000;
        }
        assert_eq!(endc_bps(&c2), 25_000_000_000);
        let c3 = load_str(&format!("{GOOD}{PE}").replace("rocev2_priority = 4", "rocev2_priority = 4\npfc_link_mbps = 40000")).unwrap();
        assert_eq!(c3.srv6.as_ref().unwrap().sids[0].pfc_link_bps, Some(40_000_000_000));
        let mut c4 = c3.clone();
        for p in c4.ports.iter_mut() {
            p.link_bps = 25_000_000_000;
        }
        assert_eq!(endc_bps(&c4), 40_000_000_000);
    }

    #[test]
    fn end_c_takes_one_interface_per_dc_gateway() {
        let many = format!("{GOOD}{PE}").replacen("end.c\"\ninterface = \"dc\"", "end.c\"\ninterfaces = [\"dc\", \"wan.100\"]", 1);
        let c = load_str(&many).unwrap();
        assert_eq!(c.srv6.as_ref().unwrap().sids[0].endc_ifaces, vec![0, 2]);
        let mut c2 = c.clone();
        c2.ports[1].link_bps = 25_000_000_000;
        let t = crate::router::sid_table(&c2).unwrap();
        assert_eq!(t.endc.iter().map(|(i, e)| (*i, e.link_bps, e.default_priority)).collect::<Vec<_>>(), vec![(0, 100_000_000_000, 2), (2, 25_000_000_000, 2)], "each link's own speed, the SID's settings");
        let one = load_str(&format!("{GOOD}{PE}")).unwrap();
        assert_eq!(one.srv6.as_ref().unwrap().sids[0].endc_ifaces, vec![0]);
        for (patch, want) in [
            ("interfaces = [\"dc\", \"nope\"]", "srv6.sid[0].interfaces[1] = \"nope\": no such interface"),
            ("interfaces = [\"dc\", \"dc\"]", "srv6.sid[0].interfaces[1] = \"dc\": listed twice"),
            ("interface = \"dc\"\ninterfaces = [\"wan\"]", "srv6.sid[0].interfaces: give interface or interfaces, not both"),
            ("interfaces = []", "srv6.sid[0].behaviour: end.c needs interface (the port toward the DC gateway) or interfaces"),
        ] {
            let e = load_str(&format!("{GOOD}{PE}").replacen("end.c\"\ninterface = \"dc\"", &format!("end.c\"\n{patch}"), 1)).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        let e = load_str(&format!("{GOOD}[srv6]\nlocator = \"fc00:0:a::/48\"\n[[srv6.sid]]\nsid = \"fc00:0:a::1\"\nbehaviour = \"end\"\ninterfaces = [\"dc\"]\n")).unwrap_err();
        assert!(e.contains("srv6.sid[0].interfaces[0] = \"dc\": only end.c has interfaces (behaviour is end)"), "{e}");
    }

    #[test]
    fn ingress_pe_errors_name_field_and_value() {
        let e = pe_bad(("\"fc00::1#2\"", "\"fc00::1#x\""));
        assert!(e.contains("srv6.policy[0].elements[0][0] = \"fc00::1#x\""), "{e}");
        let e = pe_bad(("\"fc00::3\"]]", "\"nonsense\"]]"));
        assert!(e.contains("srv6.policy[0].elements[1][0] = \"nonsense\""), "{e}");
        let e = pe_bad(("elements = [[\"fc00::1#2\", \"fc00::2\"], [\"fc00::3\"]]", "elements = [[\"fc00::1\"]]"));
        assert!(e.contains("srv6.policy[0].elements") && e.contains("one element list per SID list"), "{e}");
        let e = pe_bad(("backup = [[\"fc00:0:5::1\", \"fc00:0:e::d4\"]]", "backup = [[\"fc00:0:5::1\", \"zz\"]]"));
        assert!(e.contains("srv6.policy[0].backup[0][1] = \"zz\""), "{e}");
        let e = pe_bad(("backup = [[\"fc00:0:5::1\", \"fc00:0:e::d4\"]]\n", ""));
        assert!(e.contains("srv6.policy[0].backup_elements") && e.contains("no backup SID lists"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\nsource = \"2001:db8:1::1\""));
        assert!(e.contains("ingress_pe.source = 2001:db8:1::1: the address of data-plane interface \"dc\""), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\nnotify_senders = true\nsource_v4 = \"10.9.9.9\""));
        assert!(e.contains("ingress_pe.source_v4 = 10.9.9.9: not an address of any interface"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\nnotify_senders = true\nsource_v4 = \"2001:db8:1::1\""));
        assert!(e.contains("ingress_pe.source_v4 = \"2001:db8:1::1\": not an IPv4 address"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\ninterfaces = [\"wan\", \"nope\"]"));
        assert!(e.contains("ingress_pe.interfaces[1] = \"nope\": no such interface"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\ninterfaces = []"));
        assert!(e.contains("ingress_pe.interfaces = []"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\ncontroller_max_pps = 0"));
        assert!(e.contains("ingress_pe.controller_max_pps = 0"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\nnode_max_pps = 0"));
        assert!(e.contains("ingress_pe.node_max_pps = 0: must be 1..=1000000"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\nnode_burst = 0"));
        assert!(e.contains("ingress_pe.node_burst = 0: must be 1..=100000"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\ncongestion_holddown_ms = 0"));
        assert!(e.contains("ingress_pe.congestion_holddown_ms = 0"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\ncongestion_holddown_ms = 5000\ncongestion_holddown_max_ms = 2000"));
        assert!(e.contains("ingress_pe.congestion_holddown_max_ms = 2000") && e.contains("congestion_holddown_ms (5000)"), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"2001:db8:1::c\"\ncongestion_rate_window_us = 5"));
        assert!(e.contains("ingress_pe.congestion_rate_window_us = 5: must be 10..=1000000"), "{e}");
        let e = pe_bad(("known_nodes = [\"fc00::1\"", "known_nodes = [\"fc00::zz\""));
        assert!(e.contains("ingress_pe.known_nodes[0] = \"fc00::zz\""), "{e}");
        let e = pe_bad(("controller = \"2001:db8:1::c\"", "controller = \"ff02::1\""));
        assert!(e.contains("ingress_pe.controller = ff02::1"), "{e}");
        let e = pe_bad(("known_nodes = [\"fc00::1\", \"fc00::2\", \"fc00::3\", \"fc00::5\"]", "known_nodes = []"));
        assert!(e.contains("ingress_pe.known_nodes = []"), "{e}");
        let e = pe_bad(("dscp_priority = { 26 = 3, 46 = 5 }", "dscp_priority = { 64 = 3 }"));
        assert!(e.contains("srv6.sid[0].dscp_priority.\"64\" = 3") && e.contains("DSCP"), "{e}");
        let e = pe_bad(("dscp_priority = { 26 = 3, 46 = 5 }", "dscp_priority = { 26 = 8 }"));
        assert!(e.contains("srv6.sid[0].dscp_priority.26 = 8"), "{e}");
        let e = pe_bad(("rocev2_priority = 4", "rocev2_priority = 9"));
        assert!(e.contains("srv6.sid[0].rocev2_priority = 9"), "{e}");
        let e = pe_bad(("rocev2_priority = 4", "pfc_link_mbps = 0"));
        assert!(e.contains("srv6.sid[0].pfc_link_mbps = 0"), "{e}");
        // No policy to steer.
        let t = format!("{GOOD}\n[ingress_pe]\nknown_nodes = [\"fc00::1\"]\n");
        assert!(load_str(&t).unwrap_err().contains("ingress_pe: needs [srv6]"));
    }

    #[test]
    fn pci_and_mac_parsing() {
        assert!(is_pci("0000:3b:00.0"));
        assert!(is_pci("3b:00.1"));
        assert!(!is_pci("0000:3b:00"));
        assert_eq!(parse_mac("02:00:00:aa:bb:cc"), Some([2, 0, 0, 0xaa, 0xbb, 0xcc]));
        assert_eq!(parse_mac("02:00:00:aa:bb"), None);
    }
}

#[cfg(test)]
#[path = "config_checks.rs"]
mod checks;

#[cfg(test)]
mod refusals {
    use super::tests_common::GOOD;
    use super::*;

    pub(super) fn refused(text: &str, want: &[&str]) {
        let e = load_str(text).err().unwrap_or_else(|| panic!("accepted:\n{text}"));
        for w in want {
            assert!(e.contains(w), "{e:?} lacks {w:?}");
        }
    }

    const SRV6: &str = "[srv6]\nlocator = \"fc00:0:1::/48\"\n";

    #[test]
    fn fields_another_behaviour_would_ignore_are_refused() {
        refused(&format!("{GOOD}{SRV6}[[srv6.sid]]\nsid = \"fc00:0:1::1\"\nbehaviour = \"end\"\nvia = \"2001:db8:1::2\"\n"), &["srv6.sid[0].via", "only end.x"]);
        refused(&format!("{GOOD}{SRV6}[[srv6.sid]]\nsid = \"fc00:0:1::1\"\nbehaviour = \"end.dt6\"\ninterface = \"dc\"\n"), &["srv6.sid[0].interface = \"dc\"", "only end.x and end.c"]);
        refused(&format!("{GOOD}{SRV6}[[srv6.sid]]\nsid = \"fc00:0:1::1\"\nbehaviour = \"end.mt\"\npause_us = 100\n"), &["srv6.sid[0].pause_us", "end.c only"]);
        refused(&format!("{GOOD}{SRV6}[[srv6.sid]]\nsid = \"fc00:0:1::1\"\nbehaviour = \"end.x\"\ninterface = \"wan\"\nvia = \"10.0.2.2\"\n"), &["srv6.sid[0].via = 10.0.2.2", "IPv6"]);
        refused(&format!("{GOOD}{SRV6}[[srv6.sid]]\nsid = \"fc00:0:1::c\"\nbehaviour = \"end.c\"\ninterface = \"dc\"\npause_us = 20000\nmax_pause_ms = 10\n"), &["srv6.sid[0].pause_us = 20000", "max_pause_ms = 10"]);
        refused(&format!("{GOOD}{SRV6}[[srv6.policy]]\nprefix = \"10.9.0.0/16\"\nsegments = [[\"fc00:0:2::1\"]]\nbackup = [[\"fc00:0:3::1\"]]\n"), &["srv6.policy[0].backup", "[ingress_pe]"]);
        refused(&format!("{GOOD}[[port]]\nname = \"x\"\ndevice = \"net_null0\"\nqueue_bytes = 1000000\n"), &["port[2].queue_bytes = 1000000", "without rate_mbps"]);
        refused(&format!("{GOOD}[[port]]\nname = \"x\"\ndevice = \"net_null0\"\nqueue_packets = 1\n"), &["port[2].queue_packets = 1", "without rate_mbps"]);
        refused(&format!("{GOOD}[[port]]\nname = \"x\"\ndevice = \"net_null0\"\nframe_overhead = 24\n"), &["port[2].frame_overhead = 24", "without rate_mbps"]);
        refused(&format!("{GOOD}[[port]]\nname = \"x\"\ndevice = \"net_null0\"\npriority_percent = 20\n"), &["port[2].priority_percent = 20", "without rate_mbps"]);
    }

    #[test]
    fn the_priority_queue_takes_a_tenth_of_a_busy_port_unless_told_otherwise() {
        let port = |extra: &str| format!("{GOOD}[[port]]\nname = \"x\"\ndevice = \"net_null0\"\nrate_mbps = 1000\n{extra}");
        let pct = |extra: &str| load_str(&port(extra)).unwrap().ports[2].egress.expect("shaped").priority_percent;
        assert_eq!(pct(""), 10);
        assert_eq!(pct("priority_percent = 1\n"), 1);
        assert_eq!(pct("priority_percent = 100\n"), 100);
        refused(&port("priority_percent = 0\n"), &["port[2].priority_percent = 0", "1..=100"]);
        refused(&port("priority_percent = 101\n"), &["port[2].priority_percent = 101", "1..=100"]);
    }

    #[test]
    fn the_shaper_counts_ethernet_overhead_unless_told_otherwise() {
        let port = |extra: &str| format!("{GOOD}[[port]]\nname = \"x\"\ndevice = \"net_null0\"\nrate_mbps = 1000\n{extra}");
        let overhead = |extra: &str| load_str(&port(extra)).unwrap().ports[2].egress.expect("shaped").frame_overhead;
        assert_eq!(overhead(""), 24, "preamble + SFD 8, FCS 4, inter-frame gap 12");
        assert_eq!(overhead("frame_overhead = 0\n"), 0);
        assert_eq!(overhead("frame_overhead = 256\n"), 256);
        refused(&port("frame_overhead = 257\n"), &["port[2].frame_overhead = 257", "<= 256"]);
    }

    #[test]
    fn headend_policies_with_end_mt_tlvs_and_hmac_validate() {
        const KEY: &str = "[[srv6.hmac_key]]\nkey_id = 7\nsecret_hex = \"00112233445566778899aabbccddeeff\"\nlength = 16\n";
        let pol = |extra: &str| format!("{GOOD}{SRV6}{KEY}[[srv6.policy]]\nprefix = \"2001:db8:ff::1/128\"\nsegments = [[\"fc00:0:2::a\", \"2001:db8:ff::1\"]]\n{extra}");
        let ok = pol("hmac_key_id = 7\n[[srv6.policy.end_mt]]\nedge = \"fc00:0:2::a\"\nreceivers = [{ address = \"2001:db8:9::1\", qpn = 0x42 }]\n");
        let c = load_str(&ok).unwrap();
        let x = c.srv6.as_ref().expect("[srv6]").policies[0].1.extras();
        assert_eq!((x.end_mt.len(), x.end_mt[0].receivers[0].qpn, x.hmac.as_ref().map(|k| k.key_id())), (1, 0x42, Some(7)));
        refused(&pol("hmac_key_id = 8\n"), &["srv6.policy[0].hmac_key_id = 8", "no [[srv6.hmac_key]]"]);
        refused(&pol("[[srv6.policy.end_mt]]\nedge = \"nope\"\nreceivers = [{ address = \"2001:db8:9::1\", qpn = 1 }]\n"), &["srv6.policy[0].end_mt[0].edge = \"nope\"", "IPv6"]);
        refused(&pol("[[srv6.policy.end_mt]]\nedge = \"fc00:0:2::a\"\nreceivers = []\n"), &["srv6.policy[0].end_mt[0].receivers has 0 entries", "1..=11"]);
        refused(&pol("[[srv6.policy.end_mt]]\nedge = \"fc00:0:2::a\"\nreceivers = [{ address = \"ff02::1\", qpn = 1 }]\n"), &["srv6.policy[0].end_mt[0].receivers[0].address = ff02::1", "unicast"]);
        refused(&pol("[[srv6.policy.end_mt]]\nedge = \"fc00:0:2::a\"\nreceivers = [{ address = \"2001:db8:9::1\", qpn = 0x1000000 }]\n"), &["srv6.policy[0].end_mt[0].receivers[0].qpn = 16777216", "24 bits"]);
        let twice = "[[srv6.policy.end_mt]]\nedge = \"fc00:0:2::a\"\nreceivers = [{ address = \"2001:db8:9::1\", qpn = 1 }]\n";
        refused(&pol(&format!("{twice}{twice}")), &["srv6.policy[0].end_mt[1].edge = fc00:0:2::a", "end_mt[0]"]);
        refused(&pol("mode = \"encaps.red\"\nhmac_key_id = 7\n").replace("segments = [[\"fc00:0:2::a\", \"2001:db8:ff::1\"]]", "segments = [[\"fc00:0:2::a\"]]"), &["srv6.policy[0]", "H.Encaps.Red of one SID pushes no SRH"]);
    }

    #[test]
    fn replication_loops_and_overlaps_are_refused() {
        refused(
            &format!("{GOOD}{SRV6}[[srv6.sid]]\nsid = \"fc00:0:1::a\"\nbehaviour = \"end.mt\"\ndownstream = [\"fc00:0:1::b\"]\n[[srv6.sid]]\nsid = \"fc00:0:1::b\"\nbehaviour = \"end.mt\"\ndownstream = [\"fc00:0:1::a\"]\n"),
            &["srv6.sid[0].downstream[0] = fc00:0:1::b", "replication loop"],
        );
        refused(&format!("{GOOD}{SRV6}[[srv6.policy]]\nprefix = \"10.9.1.0/16\"\nsegments = [[\"fc00:0:2::1\"]]\n"), &["srv6.policy[0].prefix = 10.9.1.0/16", "host bits", "10.9.0.0/16"]);
        refused(
            &format!("{GOOD}{SRV6}[[srv6.policy]]\nprefix = \"10.9.0.0/16\"\nsegments = [[\"fc00:0:2::1\"]]\n[[srv6.policy]]\nprefix = \"10.9.0.0/16\"\nsegments = [[\"fc00:0:3::1\"]]\n"),
            &["srv6.policy[1].prefix = 10.9.0.0/16", "srv6.policy[0]"],
        );
        refused(&GOOD.replace("addresses = [\"10.0.2.1/24\"]", "addresses = [\"10.0.1.9/24\"]"), &["port[1].addresses[0] = \"10.0.1.9/24\"", "10.0.1.0/24 is already connected", "\"dc\""]);
        // Nested subnets on two interfaces are fine (longest match).
        load_str(&GOOD.replace("addresses = [\"10.0.2.1/24\"]", "addresses = [\"10.0.2.1/24\", \"10.0.0.1/16\"]")).unwrap();
        refused(&GOOD.replace("addresses = [\"10.0.2.1/24\"]", "addresses = [\"10.0.2.1/0\"]"), &["port[1].addresses[0] = \"10.0.2.1/0\"", "/0"]);
        refused(&format!("{GOOD}{SRV6}[[srv6.policy]]\nprefix = \"10.9.0.0/16\"\nsegments = [[\"fc00:0:2::1\"], [\"fc00:0:3::1\"]]\nweights = [1, 0]\n"), &["srv6.policy[0].weights[1] = 0", ">= 1"]);
        refused(&format!("{GOOD}{SRV6}[[srv6.policy]]\nprefix = \"10.9.0.0/16\"\nsegments = [[]]\n"), &["srv6.policy[0].segments[0] = []"]);
        refused(&format!("{GOOD}[[neighbour]]\nip = \"10.0.2.2\"\nmac = \"02:00:00:00:00:23\"\ninterface = \"wan\"\n"), &["neighbour[1].ip = 10.0.2.2", "neighbour[0]"]);
    }

    #[test]
    fn addresses_and_codepoints_that_cannot_work_are_refused() {
        refused(&format!("{GOOD}[metrics]\nlisten = \"9464\"\n"), &["metrics.listen = \"9464\"", "not an address and port"]);
        refused(&format!("{GOOD}[metrics]\nlisten = \"127.0.0.1:0\"\n"), &["metrics.listen = 127.0.0.1:0", "port 0"]);
        assert_eq!(load_str(&format!("{GOOD}[metrics]\nlisten = \"[::1]:9464\"\n")).unwrap().metrics_listen, Some("[::1]:9464".parse().unwrap()));
        refused(&format!("{GOOD}{SRV6}source = \"::\"\n"), &["srv6.source = ::", "unicast"]);
        refused(&format!("{GOOD}[fann]\nnode = \"::1\"\ningress_pes = [\"fc00::a\"]\n"), &["fann.node = ::1", "unicast"]);
        refused(&format!("{GOOD}[fann]\nnode = \"fc00::9\"\ningress_pes = [\"fc00::a\", \"fc00::a\"]\n"), &["fann.ingress_pes[1] = fc00::a", "twice"]);
        refused(&format!("{GOOD}[fann]\nnode = \"fc00::9\"\ningress_pes = [\"fc00::a\"]\nqueue_buildup_bytes = 1\n"), &["fann.queue_buildup_bytes = 1", "2048"]);
        refused(&format!("{GOOD}[fann]\nnode = \"fc00::9\"\ningress_pes = [\"fc00::a\"]\ninterval_us = 18446744073709552\n"), &["fann.interval_us = 18446744073709552", "1..=10000000"]);
        refused(&format!("{GOOD}[wire]\nicmpv6_fann_type = 135\n"), &["wire.icmpv6_fann_type = 135", "Neighbor Discovery"]);
        refused(&format!("{GOOD}[wire]\nsrh_tlv_end_mt = 5\n"), &["wire.srh_tlv_end_mt = 5", "HMAC"]);
        refused(&format!("{GOOD}[wire]\nbehaviour_end_e = 65281\n"), &["wire.behaviour_end_e = 65281", "wire.behaviour_end_c"]);
        // RFC 8986 codepoints of behaviours `dcirouter isis` advertises
        // (an END.C advertised as 1 read as End; was accepted).
        refused(&format!("{GOOD}[wire]\nbehaviour_end_c = 1\n"), &["wire.behaviour_end_c = 1", "End (s.10.2)"]);
        refused(&format!("{GOOD}[wire]\nbehaviour_end_mt = 18\n"), &["wire.behaviour_end_mt = 18", "End.DT6"]);
        refused(&format!("{GOOD}[wire]\nbehaviour_end_e = 65535\n"), &["wire.behaviour_end_e = 65535", "Opaque"]);
        refused(&format!("{GOOD}[wire]\nbehaviour_end_e = 0\n"), &["wire.behaviour_end_e = 0", "reserved"]);
        refused(&GOOD.replace("worker_cores = [0]", "worker_cores = [0]\nicmp_error_rate_pps = 0"), &["dataplane.icmp_error_rate_pps = 0", "set both to 0"]);
        refused(&GOOD.replace("worker_cores = [0]", "worker_cores = [0]\nneighbour_reachable_ms = 0\nneighbour_solicit_interval_ms = 0"), &["dataplane.neighbour_solicit_interval_ms = 0", "50..=60000"]);
    }

    #[test]
    fn congestion_errors_name_the_configuration_keys() {
        let port = GOOD.replace("rx_queues = 4\n", "rx_queues = 4\nrate_mbps = 100000\n");
        refused(&format!("{port}[port.congestion]\nrtt_est_us = 10000\ninterval_us = 0\n"), &["port[1].congestion.interval_us = 0", "1..=10000000"]);
        refused(&format!("{port}[port.congestion]\nrtt_est_us = 10000\nqd_trigger = \"soon\"\n"), &["port[1].congestion.qd_trigger = \"soon\"", "\"interval\" or \"immediate\""]);
        // [port.congestion.rtt_probe]: from the port's address of the
        // target's family (the one whose subnet holds it, if any); the
        // target must be routed out of this port.
        let probe = |t: &str| format!("{port}[port.congestion]\nrtt_est_us = 1000\n[port.congestion.rtt_probe]\n{t}");
        let c = load_str(&probe("target = \"192.0.2.9\"\n")).unwrap();
        let r = c.ports[1].congestion.as_ref().unwrap().rtt_probe.unwrap();
        assert_eq!((r.target, r.source, r.interval_ns, r.timeout_ns, r.window), ("192.0.2.9".parse().unwrap(), "10.0.2.1".parse().unwrap(), 1_000_000_000, 1_000_000_000, 10), "the defaults");
        assert!(c.echo_probe_id.is_some() && c.topology().echo_probe_id == c.echo_probe_id);
        assert_eq!(load_str(&port).unwrap().echo_probe_id, None, "no probes, no identifier");
        let c = load_str(&probe("target = \"10.0.3.5\"\ninterval_ms = 10\ntimeout_ms = 60000\nwindow = 64\n")).unwrap();
        let r = c.ports[1].congestion.as_ref().unwrap().rtt_probe.unwrap();
        assert_eq!((r.source, r.interval_ns, r.timeout_ns, r.window), ("10.0.3.1".parse().unwrap(), 10_000_000, 60_000_000_000, 64), "the VLAN's address for a target on its subnet");
        refused(&probe("target = \"nope\"\n"), &["port[1].congestion.rtt_probe.target = \"nope\"", "not an IP address"]);
        refused(&probe("target = \"224.0.0.5\"\n"), &["port[1].congestion.rtt_probe.target = 224.0.0.5", "routable unicast"]);
        refused(&probe("target = \"fe80::1\"\n"), &["port[1].congestion.rtt_probe.target = fe80::1", "link-local"]);
        refused(&probe("target = \"10.0.2.2\"\ninterval_ms = 5\n"), &["port[1].congestion.rtt_probe.interval_ms = 5", "10..=60000"]);
        refused(&probe("target = \"10.0.2.2\"\ntimeout_ms = 0\n"), &["port[1].congestion.rtt_probe.timeout_ms = 0", "1..=60000"]);
        refused(&probe("target = \"10.0.2.2\"\nwindow = 65\n"), &["port[1].congestion.rtt_probe.window = 65", "1..=64"]);
        refused(&probe("target = \"2001:db8:99::5\"\n"), &["port[1].congestion.rtt_probe.target = 2001:db8:99::5", "port wan has no IPv6 address"]);
        refused(&probe("target = \"10.0.1.5\"\n"), &["port[1].congestion.rtt_probe.target = 10.0.1.5", "routed out of port \"dc\", not \"wan\""]);
        refused(&probe("target = \"10.0.2.1\"\n"), &["port[1].congestion.rtt_probe.target = 10.0.2.1", "an address of this router"]);
        refused(&probe("target = \"198.51.100.1\"\n"), &["port[1].congestion.rtt_probe.target = 198.51.100.1", "no route"]);
        refused(&probe("target = \"10.0.2.2\"\nwindows = 3\n"), &["unknown field `windows`"]);
        refused(&probe("target = \"10.0.2.2\"\ndegraded_us = 0\n"), &["port[1].congestion.rtt_probe.degraded_us = 0", "1..=10000000"]);
        refused(&probe("target = \"10.0.2.2\"\ndegraded_us = 5000\n"), &["port[1].congestion.rtt_probe.degraded_us = 5000", "without [fann]"]);
        let c = load_str(&format!("{}[fann]\nnode = \"fc00::9\"\ningress_pes = [\"fc00::a\"]\n", probe("target = \"10.0.2.2\"\ndegraded_us = 5000\n"))).unwrap();
        assert_eq!(c.ports[1].congestion.as_ref().unwrap().rtt_probe.unwrap().degraded_ns, 5_000_000);
        // [port.congestion.rtt_acks]: one measurement per port.
        let acks = |t: &str| format!("{port}[port.congestion]\nrtt_est_us = 1000\n[port.congestion.rtt_acks]\n{t}");
        let c = load_str(&acks("")).unwrap();
        let plan = c.ports[1].congestion.as_ref().unwrap();
        assert_eq!((plan.params.ack_rtt, plan.rtt_acks_degraded_ns), (Some(dataplane::congestion::AckRttParams { window_ns: 10_000_000_000, timeout_ns: 1_000_000_000 }), Some(0)), "the defaults");
        assert_eq!(load_str(&port).unwrap().ports[1].congestion.as_ref().map(|p| p.params.ack_rtt), None);
        refused(&acks("window_ms = 5\n"), &["port[1].congestion.rtt_acks.window_ms = 5", "10..=3600000"]);
        refused(&acks("timeout_ms = 10001\n"), &["port[1].congestion.rtt_acks.timeout_ms = 10001", "1..=10000"]);
        refused(&acks("degraded_us = 0\n"), &["port[1].congestion.rtt_acks.degraded_us = 0", "1..=10000000"]);
        refused(&acks("degraded_us = 5000\n"), &["port[1].congestion.rtt_acks.degraded_us = 5000", "without [fann]"]);
        refused(&acks("windows = 3\n"), &["unknown field `windows`"]);
        refused(&format!("{}[port.congestion.rtt_probe]\ntarget = \"10.0.2.2\"\n", acks("")), &["port[1].congestion.rtt_acks", "[port.congestion.rtt_probe] as well"]);
        let c = load_str(&format!("{}[fann]\nnode = \"fc00::9\"\ningress_pes = [\"fc00::a\"]\n", acks("window_ms = 500\ndegraded_us = 5000\n"))).unwrap();
        let plan = c.ports[1].congestion.as_ref().unwrap();
        assert_eq!((plan.params.ack_rtt.unwrap().window_ns, plan.rtt_acks_degraded_ns), (500_000_000, Some(5_000_000)));
        // A queue no deeper than K_max (125 MB at 100 Gb/s and 10 ms).
        refused(&format!("{}[port.congestion]\nrtt_est_us = 10000\n", port.replace("rate_mbps = 100000\n", "rate_mbps = 100000\nqueue_bytes = 67108864\n")), &["port[1].queue_bytes = 67108864 (port wan)", "deeper than K_max"]);
        // Without rate_mbps (R_port = the link speed, known at start): the
        // rules that do not hang on K_max are checked now; those that do,
        // and the parameters, once the link speed is known.
        let link = format!("{GOOD}[port.congestion]\nrtt_est_us = 10000\n");
        let c = load_str(&link).unwrap();
        let plan = c.ports[1].congestion.as_ref().unwrap();
        assert!(plan.rate_from_link);
        assert_eq!(c.ports[1].egress.map(|e| e.rate_bps), Some(0), "a queue, not shaped");
        refused(&link.replace("rtt_est_us = 10000\n", "rtt_est_us = 10000\nv_ecn = 2.0\n"), &["port[1].congestion.v_ecn = 2", "fraction"]);
        let at = |mbps: u64| congestion_params_at_link(plan, &c.ports[1], 1, c.ports[1].egress.unwrap().queue_bytes, mbps * 1_000_000);
        assert_eq!(at(40_000).map(|p| (p.rate_bps, p.k_max())), Ok((40_000_000_000, 50_000_000)));
        let e = at(100_000).unwrap_err();
        assert!(e.contains("port[1].queue_bytes = 67108864 (port wan)") && e.contains("(R_port = the link speed, 100000 Mb/s)"), "{e}");
        assert!(at(0).unwrap_err().contains("port[1].rate_mbps = (absent) (port wan)"));
        let e = congestion_error_in_config_terms("policy.observation_window_ns = 20000000000: must be at most 10 s (0: RTT_est)", "wan", 1 << 20);
        assert!(e.starts_with("observation_window_us = 20000000: must be at most 10 s"), "{e}");
        let e = congestion_error_in_config_terms("flow_idle_timeout_ns = 0: must be positive", "wan", 1 << 20);
        assert_eq!(e, "flow_idle_ms = 0: must be positive");
    }
}
