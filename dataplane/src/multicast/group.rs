//! One multicast group's reverse-path state (draft s.8) and the ACK / NACK /
//! CNP aggregation rules (s.5.3), with the s.9 protections.

use std::net::Ipv6Addr;

use super::psn::{psn_add, psn_diff, psn_sub, PSN_HALF, PSN_MASK};
use crate::pipeline::TokenBucket;
use crate::wire::roce::{NakCode, Syndrome};

// ---------------------------------------------------------------- counters

macro_rules! counters {
    ($($var:ident => $s:literal,)*) => {
        /// Named per-group counters: events and drop reasons (VPP style).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Counter { $($var,)* }
        impl Counter {
            pub const ALL: &'static [Counter] = &[$(Counter::$var,)*];
            /// The counter's name as the CLI and telemetry would show it.
            pub const fn name(self) -> &'static str {
                match self { $(Counter::$var => $s,)* }
            }
        }
        /// Number of [`Counter`]s.
        pub const N_COUNTERS: usize = [$($s,)*].len();
    };
}

counters! {
    // responses received from branches
    AckIn => "mc-ack-in",
    NakIn => "mc-nak-in",
    RnrIn => "mc-rnr-nak-in",
    FatalNakIn => "mc-fatal-nak-in",
    CnpIn => "mc-cnp-in",
    // aggregated responses sent upstream (to the source or the next node up)
    AckUp => "mc-ack-up",
    NakUp => "mc-nak-up",
    RnrUp => "mc-rnr-nak-up",
    FatalNakUp => "mc-fatal-nak-up",
    CnpUp => "mc-cnp-up",
    AckRepeated => "mc-ack-repeated",
    // an ACK at the unchanged upstream PSN, sent because the most
    // constrained branch's credit count changed
    AckCreditUpdate => "mc-ack-credit-update",
    // absorbed without an upstream message
    NakSuppressed => "mc-nak-suppressed",
    // from an address that is no branch, at a node below the top (a
    // `node_address`): forwarded toward the next node up, which decides
    PassedUp => "mc-passed-up",
    // a round-trip sample of the adaptive window T (s.5.3.3): the time from
    // a new data PSN passing down to every branch having acknowledged it
    RttSample => "mc-rtt-sample",
    // drops
    UnknownReceiver => "mc-unknown-receiver",
    StalePsn => "mc-stale-psn",
    PsnOutOfWindow => "mc-psn-out-of-window",
    PsnBeyondSent => "mc-psn-beyond-sent",
    CnpRateLimited => "mc-cnp-rate-limited",
    UnsupportedOpcode => "mc-unsupported-opcode",
    BadIcrc => "mc-bad-icrc",
    Malformed => "mc-malformed",
}

/// A set of [`Counter`]s (one writer: the worker that owns the group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters([u64; N_COUNTERS]);

impl Default for Counters {
    fn default() -> Self {
        Counters([0; N_COUNTERS])
    }
}

impl Counters {
    #[inline]
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c as usize]
    }
    #[inline]
    pub(crate) fn inc(&mut self, c: Counter) {
        let v = &mut self.0[c as usize];
        *v = v.wrapping_add(1);
    }
    #[inline]
    pub(crate) fn add(&mut self, c: Counter, n: u64) {
        let v = &mut self.0[c as usize];
        *v = v.wrapping_add(n);
    }
    /// Every counter with its value.
    pub fn iter(&self) -> impl Iterator<Item = (Counter, u64)> + '_ {
        Counter::ALL.iter().map(move |&c| (c, self.get(c)))
    }
}

// ---------------------------------------------------------------- config

/// A group's source-side identity: the source host and its RC QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId {
    pub source: Ipv6Addr,
    /// The source's own (local) QPN: BTH DestQP of every upstream response.
    pub source_qpn: u32,
}

/// A downstream receiver (one branch at an edge node), as the End.MT TLV
/// or the control plane gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Receiver {
    pub addr: Ipv6Addr,
    /// The receiver's own QPN (written into DestQP downstream; never seen
    /// on the reverse path).
    pub qpn: u32,
}

/// Why a group configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupError {
    NoReceivers,
    TooManyReceivers,
    /// A QPN does not fit 24 bits (field name).
    QpnRange(&'static str),
    PsnRange,
    ZeroWindow,
    /// The adaptive window's ceiling is below its floor (`cnp_window_ns`).
    WindowRange,
    ZeroCnpRate,
    /// Two branches with the same receiver address (indistinguishable on the
    /// reverse path).
    DuplicateReceiver(Ipv6Addr),
    /// `node_address` is the Proxy Address, the source or a branch; or a
    /// child is the Proxy Address or the source.
    NodeAddress(Ipv6Addr),
    /// A receiver address is not a unicast address, or is the Proxy
    /// Address or the source.
    ReceiverAddress(Ipv6Addr),
    /// A group with this id is installed already.
    DuplicateGroup,
    /// Another group uses the same Proxy Address and Designated QPN.
    DuplicateProxy,
    /// The table is full.
    TableFull,
    /// Receivers learned for a group that does not learn them.
    NotLearning,
}

impl core::fmt::Display for SetupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SetupError::NoReceivers => write!(f, "receivers / children: the group has no branch"),
            SetupError::TooManyReceivers => write!(f, "receivers + children: more than {MAX_BRANCHES}"),
            SetupError::QpnRange(n) => write!(f, "{n}: QPN does not fit 24 bits"),
            SetupError::PsnRange => write!(f, "initial_psn: does not fit 24 bits"),
            SetupError::ZeroWindow => write!(f, "cnp_window_ns: must be > 0"),
            SetupError::WindowRange => write!(f, "cnp_window_max_ns: must not be below cnp_window_ns"),
            SetupError::ZeroCnpRate => write!(f, "cnp_rate_per_s / cnp_burst: must be > 0"),
            SetupError::DuplicateReceiver(a) => write!(f, "receivers / children: {a} appears twice"),
            SetupError::NodeAddress(a) => write!(f, "node_address / children: {a} is the Proxy Address, the source or (node_address) a branch"),
            SetupError::ReceiverAddress(a) => write!(f, "receivers: {a} is not a unicast address, or is the Proxy Address or the source"),
            SetupError::DuplicateGroup => write!(f, "id: group already installed"),
            SetupError::DuplicateProxy => {
                write!(f, "proxy/designated_qpn: used by another group")
            }
            SetupError::TableFull => write!(f, "group table full"),
            SetupError::NotLearning => write!(f, "tlv_receivers: the group does not learn its receivers"),
        }
    }
}

impl std::error::Error for SetupError {}

/// Most branches per group (a `u32` index in the lookup map; the End.MT TLV
/// itself carries at most 255 receivers per edge node).
pub const MAX_BRANCHES: usize = 1 << 16;

/// What End.MT at a node does with the receivers of an End.MT TLV for a
/// packet of a group held there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlvReceivers {
    /// Every TLV receiver gets its copy; those that are no branch of the
    /// group are counted (`mc-tlv-receiver-unknown`): their responses will
    /// be dropped as unknown receivers.
    #[default]
    Any,
    /// Copies only to the TLV receivers that are branches of the group,
    /// address and QPN (draft-li s.9: "If End.MT TLV contents are modified
    /// in transit, packets could be delivered to incorrect RDMA QPs"); the
    /// others are dropped as `endmt-receiver-not-branch`.
    Strict,
    /// The group's receivers are learned from the TLV (draft-li s.8: "Edge
    /// nodes additionally maintain the receiver information (addresses and
    /// QPNs) learned from the End.MT TLV or from control-plane
    /// provisioning"): when a TLV names another set of receivers than the
    /// group has, the group takes the TLV's set
    /// ([`super::GroupTable::learn_receivers`]; kept receivers keep their
    /// state, new ones join at the PSN the source was told). The group may
    /// start with no branch at all.
    Learn,
}

/// Static configuration of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    pub id: GroupId,
    /// The Proxy Address (s.2): DA of the receivers' (and child nodes')
    /// responses; SA of the responses the node adjacent to the source sends
    /// it, DA of those a node below sends up (`node_address`).
    pub proxy: Ipv6Addr,
    /// The Designated QPN (s.2): DestQP of the receivers' responses.
    pub designated_qpn: u32,
    /// Receivers below this node (an edge node's branches; also what
    /// End.MT replicates to when provisioned on a SID).
    pub receivers: Vec<Receiver>,
    /// Downstream aggregation nodes (hop-by-hop aggregation, s.5.3 / s.8:
    /// "each intermediate node (edge or transit)"): one branch each, keyed
    /// by the address it sends its aggregated responses from (its
    /// `node_address`). Never replication targets.
    pub children: Vec<Ipv6Addr>,
    /// This node's address as a branch of the next aggregation node up.
    /// `Some`: the upstream responses go from it to the Proxy Address with
    /// DestQP = Designated QPN, as a receiver's would (the node above holds
    /// the same group and lists this address in its `children`). `None`:
    /// this node is adjacent to the source, and they go from the Proxy
    /// Address to the source with DestQP = the source's QPN.
    pub node_address: Option<Ipv6Addr>,
    /// The first PSN the source sends. Every branch starts at
    /// `initial_psn - 1` ("AckPSN initial value 0" of s.8 with the default 1).
    pub initial_psn: u32,
    /// The CNP aggregation window T (s.5.3.3); with `cnp_window_max_ns`
    /// the least T the adaptive window takes.
    pub cnp_window_ns: u64,
    /// `Some(max)`: T is adjusted to the round trip observed below this
    /// node ("T MAY be adjusted dynamically based on observed network
    /// conditions", s.5.3.3), between `cnp_window_ns` and `max`; see
    /// [`Group::window_ns`]. `None`: T is `cnp_window_ns`.
    pub cnp_window_max_ns: Option<u64>,
    /// Per-branch CNP rate limit (s.9): sustained rate and burst.
    pub cnp_rate_per_s: u32,
    pub cnp_burst: u32,
    /// How the End.MT TLV's receivers relate to this group's `receivers`
    /// (see [`TlvReceivers`]).
    pub tlv_receivers: TlvReceivers,
    /// Upstream packets: P_Key, UDP source port, traffic class of ACK/NAK
    /// and of CNP, hop limit.
    pub pkey: u16,
    pub udp_src_port: u16,
    pub traffic_class: u8,
    pub cnp_traffic_class: u8,
    pub hop_limit: u8,
}

impl GroupConfig {
    /// A configuration with documented defaults: initial PSN 1, window
    /// T = 50 µs, CNP limit 100 000/s burst 16 per branch, default P_Key,
    /// UDP source port `0xC000 | (source_qpn & 0x3fff)`, DSCP 26 for ACK/NAK
    /// and DSCP 48 for CNP (common RoCEv2 defaults), hop limit 64.
    pub fn new(id: GroupId, proxy: Ipv6Addr, designated_qpn: u32, receivers: Vec<Receiver>) -> Self {
        GroupConfig {
            id,
            proxy,
            designated_qpn,
            receivers,
            children: Vec::new(),
            node_address: None,
            initial_psn: 1,
            cnp_window_ns: 50_000,
            cnp_window_max_ns: None,
            cnp_rate_per_s: 100_000,
            cnp_burst: 16,
            tlv_receivers: TlvReceivers::Any,
            pkey: crate::wire::roce::DEFAULT_PKEY,
            udp_src_port: 0xc000 | (id.source_qpn & 0x3fff) as u16,
            traffic_class: 26 << 2,
            cnp_traffic_class: 48 << 2,
            hop_limit: 64,
        }
    }

    /// Check every field; the first problem is reported with its field.
    pub fn validate(&self) -> Result<(), SetupError> {
        if self.receivers.is_empty() && self.children.is_empty() && self.tlv_receivers != TlvReceivers::Learn {
            return Err(SetupError::NoReceivers);
        }
        if self.receivers.len() + self.children.len() > MAX_BRANCHES {
            return Err(SetupError::TooManyReceivers);
        }
        if self.id.source_qpn > PSN_MASK {
            return Err(SetupError::QpnRange("id.source_qpn"));
        }
        if self.designated_qpn > PSN_MASK {
            return Err(SetupError::QpnRange("designated_qpn"));
        }
        if self.initial_psn > PSN_MASK {
            return Err(SetupError::PsnRange);
        }
        if self.cnp_window_ns == 0 {
            return Err(SetupError::ZeroWindow);
        }
        if self.cnp_window_max_ns.is_some_and(|m| m < self.cnp_window_ns) {
            return Err(SetupError::WindowRange);
        }
        if self.cnp_rate_per_s == 0 || self.cnp_burst == 0 {
            return Err(SetupError::ZeroCnpRate);
        }
        for (i, r) in self.receivers.iter().enumerate() {
            if r.qpn > PSN_MASK {
                return Err(SetupError::QpnRange("receivers.qpn"));
            }
            self.receiver_address_ok(&r.addr)?;
            if self.receivers[..i].iter().any(|o| o.addr == r.addr) {
                return Err(SetupError::DuplicateReceiver(r.addr));
            }
        }
        for (i, c) in self.children.iter().enumerate() {
            if self.children[..i].contains(c) || self.receivers.iter().any(|r| r.addr == *c) {
                return Err(SetupError::DuplicateReceiver(*c));
            }
            if *c == self.proxy || *c == self.id.source {
                return Err(SetupError::NodeAddress(*c));
            }
        }
        if let Some(a) = self.node_address {
            if a == self.proxy || a == self.id.source || self.branch_addrs().any(|b| b == a) {
                return Err(SetupError::NodeAddress(a));
            }
        }
        Ok(())
    }

    /// A receiver address must be unicast, and neither the Proxy Address
    /// nor the source.
    fn receiver_address_ok(&self, a: &Ipv6Addr) -> Result<(), SetupError> {
        if a.is_unspecified() || a.is_multicast() || a.is_loopback() || *a == self.proxy || *a == self.id.source {
            return Err(SetupError::ReceiverAddress(*a));
        }
        Ok(())
    }

    /// The branch addresses, in branch order: the receivers, then the
    /// children.
    pub fn branch_addrs(&self) -> impl Iterator<Item = Ipv6Addr> + '_ {
        self.receivers.iter().map(|r| r.addr).chain(self.children.iter().copied())
    }

    /// Where the upstream responses go: the source, or (hop-by-hop, with a
    /// `node_address`) the Proxy Address, toward the next aggregation node.
    pub fn upstream_dst(&self) -> Ipv6Addr {
        match self.node_address {
            Some(_) => self.proxy,
            None => self.id.source,
        }
    }
}

// ---------------------------------------------------------------- messages

/// The NAK flavours of an AETH syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakKind {
    /// NAK, PSN sequence error: the PSN is the responder's ePSN.
    PsnSequenceError,
    /// Receiver Not Ready NAK with its 5-bit timer code.
    Rnr { timer: u8 },
    /// Any other NAK code (fatal for the responder's QP).
    Fatal(NakCode),
}

impl NakKind {
    pub fn syndrome(self) -> Syndrome {
        match self {
            NakKind::PsnSequenceError => Syndrome::Nak(NakCode::PsnSequenceError),
            NakKind::Rnr { timer } => Syndrome::RnrNak { timer: timer & 0x1f },
            NakKind::Fatal(c) => Syndrome::Nak(c),
        }
    }
}

/// A response received from a branch (the parsed content of an RC
/// Acknowledge packet or a CNP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Response {
    /// ACK: BTH PSN = acknowledged PSN, AETH MSN and credit code.
    Ack { psn: u32, msn: u32, credits: u8 },
    /// NAK or RNR NAK: BTH PSN (the ePSN for a sequence error), AETH MSN.
    Nak { psn: u32, msn: u32, kind: NakKind },
    /// CNP.
    Cnp,
}

impl Response {
    /// From the BTH PSN and the AETH syndrome + MSN of an Acknowledge packet.
    pub fn from_aeth(psn: u32, syndrome: Syndrome, msn: u32) -> Response {
        let psn = psn & PSN_MASK;
        let msn = msn & PSN_MASK;
        match syndrome {
            Syndrome::Ack { credits } => Response::Ack { psn, msn, credits: credits & 0x1f },
            Syndrome::RnrNak { timer } => Response::Nak { psn, msn, kind: NakKind::Rnr { timer } },
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                Response::Nak { psn, msn, kind: NakKind::PsnSequenceError }
            }
            Syndrome::Nak(c) => Response::Nak { psn, msn, kind: NakKind::Fatal(c) },
        }
    }
}

/// An aggregated response for the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Upstream {
    /// ACK with the minimum acknowledged PSN over the branches.
    Ack { psn: u32, msn: u32, credits: u8 },
    /// NAK: for a sequence error or RNR, the minimum effective ePSN over the
    /// branches; for a fatal NAK, the PSN the branch reported.
    Nak { psn: u32, msn: u32, kind: NakKind },
    /// The window's CNP, on behalf of the branch with the highest CCount.
    Cnp { branch: usize, ccount: u32 },
}

// ---------------------------------------------------------------- state

/// A group's state as its owner worker last published it (`show
/// multicast`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupView {
    pub id: GroupId,
    /// The last PSN the source (or the next node up) was told is
    /// acknowledged by everyone.
    pub upstream_psn: u32,
    /// The ePSN of the last upstream sequence-error NAK still pending.
    pub upstream_nak: Option<u32>,
    pub highest_sent: Option<u32>,
    /// The CNP window T in force and the measured round trip (adaptive).
    pub window_ns: u64,
    pub srtt_ns: Option<u64>,
    pub branches: Vec<BranchView>,
}

/// One branch of a [`GroupView`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchView {
    pub addr: Ipv6Addr,
    /// The receiver's QPN (0 for a child node).
    pub qpn: u32,
    /// A downstream aggregation node, not a receiver.
    pub node: bool,
    pub acked: u32,
    /// The ePSN of a NAK not yet resolved by an ACK.
    pub nak_epsn: Option<u32>,
    /// CNPs counted in the current window.
    pub ccount: u32,
}

/// Per-branch state (s.8).
#[derive(Debug, Clone)]
pub struct Branch {
    /// The receiver, or for a child node its address (QPN 0).
    pub receiver: Receiver,
    /// A downstream aggregation node, not a receiver.
    pub node: bool,
    /// Last acknowledged PSN (an ACK's PSN, or ePSN - 1 after a NAK).
    acked: u32,
    /// ePSN of the NAK (sequence error or RNR) not yet resolved by an ACK.
    nak_epsn: Option<u32>,
    /// The sequence-error NAK at `nak_epsn` has not gone up (a smaller
    /// ePSN went up instead, or it was suppressed) and its PSN has not
    /// passed down since: it goes up once it is the minimum (see
    /// `Group::ack`). Only where the data path reports the data.
    nak_unanswered: bool,
    /// Last MSN seen.
    msn: u32,
    /// Last ACK credit code (31 = invalid/unlimited until the first ACK).
    credits: u8,
    /// CNPs counted in the current window.
    ccount: u32,
    cnp_bucket: TokenBucket,
    /// Re-acknowledged the upstream PSN in the current round (see
    /// `Group::ack`).
    dup: bool,
}

impl Branch {
    /// A branch that has acknowledged `acked` and nothing else yet.
    fn fresh(receiver: Receiver, node: bool, acked: u32, cfg: &GroupConfig) -> Branch {
        Branch {
            receiver,
            node,
            acked,
            nak_epsn: None,
            nak_unanswered: false,
            msn: 0,
            credits: 31,
            ccount: 0,
            cnp_bucket: TokenBucket::new(cfg.cnp_rate_per_s, cfg.cnp_burst),
            dup: false,
        }
    }

    pub fn acked(&self) -> u32 {
        self.acked
    }
    /// The ePSN of a pending NAK, if any.
    pub fn nak_epsn(&self) -> Option<u32> {
        self.nak_epsn
    }
    /// The effective ePSN (s.5.3.2): the NAK's ePSN, or acked + 1.
    pub fn epsn(&self) -> u32 {
        self.nak_epsn.unwrap_or(psn_add(self.acked, 1))
    }
    pub fn msn(&self) -> u32 {
        self.msn
    }
    pub fn credits(&self) -> u8 {
        self.credits
    }
    pub fn ccount(&self) -> u32 {
        self.ccount
    }
}

/// Most receivers one End.MT TLV names (its value, at most 255 octets,
/// holds 22 fixed octets and 20 per receiver): the room a learning group
/// keeps for its receivers.
pub const MAX_TLV_RECEIVERS: usize = crate::wire::srh::END_MT_MAX_RECEIVERS;

/// One multicast group at this node.
#[derive(Debug, Clone)]
pub struct Group {
    cfg: GroupConfig,
    /// Receivers first, then child nodes (a learning group's vector has
    /// room for [`MAX_TLV_RECEIVERS`] receivers, so learning never
    /// allocates).
    branches: Vec<Branch>,
    /// A learning group's next branch set is built here and swapped in;
    /// afterwards it holds the previous set ([`Group::previous_branches`]).
    spare: Vec<Branch>,
    /// A learning group's receiver addresses, sorted to find duplicates.
    scratch: Vec<u128>,
    /// Last PSN the source has been told is acknowledged by everyone (by an
    /// upstream ACK, or implied by an upstream NAK's ePSN - 1). All branch
    /// PSNs lie within the half window above it.
    up_psn: u32,
    /// Last ePSN sent in an upstream sequence-error NAK.
    up_nak: Option<u32>,
    /// The ePSN of the last upstream RNR NAK, until that PSN passes down
    /// again (the source's retry): one RNR NAK up per retry, however many
    /// branches refuse it.
    up_rnr: Option<u32>,
    /// Some branch may have `nak_unanswered` set: without one, the data
    /// path looks at no branch.
    nak_waiting: bool,
    /// `up_psn` went to the source (an ACK or a NAK was sent).
    up_told: bool,
    /// The credit code the last upstream ACK carried.
    up_credits: u8,
    /// Highest data PSN seen downstream, if the data path reports it.
    highest_sent: Option<u32>,
    window_start: u64,
    /// The window T in force: `cnp_window_ns`, or with an adaptive window
    /// the smoothed round trip within its bounds.
    window_ns: u64,
    /// Adaptive window: the data PSN being timed and when it passed down
    /// (one at a time, like a TCP sender's round-trip timing).
    rtt_probe: Option<(u32, u64)>,
    /// Adaptive window: smoothed round trip below this node (RFC 6298's
    /// SRTT, gain 1/8), ns.
    srtt_ns: Option<u64>,
    counters: Counters,
}

impl Group {
    /// After a change of this group's configuration (a branch added or
    /// removed, another window or rate), take over where `old` stood, so
    /// that the source's PSN space goes on: the upstream state and the
    /// kept branches' state are kept; a new branch joins as having
    /// acknowledged what the source was told. Removing a receiver that is
    /// gone thus lets the group's acknowledgements advance again. Nothing
    /// is taken over when the initial PSN changed (a new stream).
    pub fn carry_over(&mut self, old: &Group) {
        if old.cfg.initial_psn != self.cfg.initial_psn || old.cfg.id != self.cfg.id {
            return;
        }
        self.up_psn = old.up_psn;
        self.up_nak = old.up_nak;
        self.up_rnr = old.up_rnr;
        self.nak_waiting = old.nak_waiting;
        self.up_told = old.up_told;
        self.up_credits = old.up_credits;
        self.highest_sent = old.highest_sent;
        self.window_start = old.window_start;
        self.counters = old.counters.clone();
        if let Some(max) = self.cfg.cnp_window_max_ns {
            self.rtt_probe = old.rtt_probe;
            self.srtt_ns = old.srtt_ns;
            if let Some(s) = self.srtt_ns {
                self.window_ns = s.clamp(self.cfg.cnp_window_ns, max);
            }
        }
        for b in self.branches.iter_mut() {
            // The same receiver QP (address and QPN) or child node; a new
            // QPN at an address is a new QP and joins afresh.
            match old.branches.iter().find(|o| o.receiver == b.receiver && o.node == b.node) {
                Some(o) => {
                    b.acked = o.acked;
                    b.nak_epsn = o.nak_epsn;
                    b.msn = o.msn;
                    b.credits = o.credits;
                    b.ccount = o.ccount;
                    b.dup = o.dup;
                }
                None => b.acked = old.up_psn,
            }
        }
    }

    /// A learning group ([`TlvReceivers::Learn`]) takes `n` receivers
    /// (`get(r)`) as its receiver branches, in that order, children after
    /// them: a kept receiver (same address and QPN; `old_index` finds its
    /// branch by address) keeps its state, a new one joins having
    /// acknowledged what the source was told (as in
    /// [`Group::carry_over`]). Everything else of the group goes on. No
    /// allocation: the set is built in room kept for it and swapped in;
    /// the previous branches are then [`Group::previous_branches`].
    /// Refused, the group unchanged, when the set is not valid
    /// ([`GroupConfig::validate`]'s rules) or the group does not learn.
    pub(crate) fn relearn(&mut self, n: usize, get: impl Fn(usize) -> Option<Receiver>, old_index: impl Fn(&Ipv6Addr) -> Option<usize>) -> Result<(), SetupError> {
        if self.cfg.tlv_receivers != TlvReceivers::Learn {
            return Err(SetupError::NotLearning);
        }
        if n > MAX_TLV_RECEIVERS || n + self.cfg.children.len() > self.spare.capacity() {
            return Err(SetupError::TooManyReceivers);
        }
        self.scratch.clear();
        for r in 0..n {
            let x = get(r).ok_or(SetupError::NoReceivers)?;
            let a = x.addr;
            if x.qpn > PSN_MASK {
                return Err(SetupError::QpnRange("receivers.qpn"));
            }
            self.cfg.receiver_address_ok(&a)?;
            if self.cfg.node_address == Some(a) {
                return Err(SetupError::NodeAddress(a));
            }
            if self.cfg.children.contains(&a) {
                return Err(SetupError::DuplicateReceiver(a));
            }
            self.scratch.push(u128::from(a));
        }
        self.scratch.sort_unstable();
        if let Some(w) = self.scratch.windows(2).find(|w| w[0] == w[1]) {
            return Err(SetupError::DuplicateReceiver(Ipv6Addr::from(w[0])));
        }
        let old_receivers = self.cfg.receivers.len();
        self.spare.clear();
        for r in 0..n {
            let x = get(r).ok_or(SetupError::NoReceivers)?;
            let kept = old_index(&x.addr).and_then(|i| self.branches.get(i)).filter(|o| !o.node && o.receiver == x);
            let b = match kept {
                Some(o) => o.clone(),
                None => Branch::fresh(x, false, self.up_psn, &self.cfg),
            };
            self.spare.push(b);
        }
        self.spare.extend(self.branches[old_receivers..].iter().cloned());
        std::mem::swap(&mut self.branches, &mut self.spare);
        self.cfg.receivers.clear();
        self.cfg.receivers.extend(self.branches[..n].iter().map(|b| b.receiver));
        Ok(())
    }

    /// The branches before the last [`Group::relearn`].
    pub(crate) fn previous_branches(&self) -> &[Branch] {
        &self.spare
    }

    /// Set up a group at time `now` (the first CNP window starts then).
    /// Allocates; not for the per-packet path.
    pub fn new(cfg: GroupConfig, now: u64) -> Result<Group, SetupError> {
        cfg.validate()?;
        let mut cfg = cfg;
        let start = psn_sub(cfg.initial_psn, 1);
        let learn = cfg.tlv_receivers == TlvReceivers::Learn;
        let room = if learn { MAX_TLV_RECEIVERS.max(cfg.receivers.len()) + cfg.children.len() } else { 0 };
        let mut branches = Vec::with_capacity(room.max(cfg.receivers.len() + cfg.children.len()));
        let children = cfg.children.iter().map(|&addr| (Receiver { addr, qpn: 0 }, true));
        branches.extend(cfg.receivers.iter().map(|&r| (r, false)).chain(children).map(|(receiver, node)| Branch::fresh(receiver, node, start, &cfg)));
        if learn {
            cfg.receivers.reserve(MAX_TLV_RECEIVERS.saturating_sub(cfg.receivers.len()));
        }
        Ok(Group {
            branches,
            spare: Vec::with_capacity(room),
            scratch: Vec::with_capacity(if learn { MAX_TLV_RECEIVERS } else { 0 }),
            up_psn: start,
            up_nak: None,
            up_rnr: None,
            nak_waiting: false,
            up_told: false,
            up_credits: 31,
            highest_sent: None,
            window_start: now,
            window_ns: cfg.cnp_window_ns,
            rtt_probe: None,
            srtt_ns: None,
            counters: Counters::default(),
            cfg,
        })
    }

    pub fn config(&self) -> &GroupConfig {
        &self.cfg
    }
    pub fn id(&self) -> GroupId {
        self.cfg.id
    }
    pub fn branches(&self) -> &[Branch] {
        &self.branches
    }
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
    pub(crate) fn count(&mut self, c: Counter) {
        self.counters.inc(c);
    }
    /// The last PSN forwarded upstream as acknowledged.
    pub fn upstream_psn(&self) -> u32 {
        self.up_psn
    }
    /// The last ePSN forwarded in an upstream sequence-error NAK.
    pub fn upstream_nak(&self) -> Option<u32> {
        self.up_nak
    }
    pub fn highest_sent(&self) -> Option<u32> {
        self.highest_sent
    }
    /// The CNP window T in force. Fixed, it is `cnp_window_ns`. Adaptive
    /// (`cnp_window_max_ns`), it follows the round trip observed below this
    /// node: the time from a new data PSN passing down to every branch
    /// having acknowledged it, smoothed ([`Group::srtt_ns`]), within
    /// `cnp_window_ns ..= cnp_window_max_ns`. The source's rate control
    /// answers a CNP with data that reaches the receivers about one such
    /// round trip later; CNPs the receivers send in between report the
    /// congestion it already answered, so one upstream CNP per round trip
    /// is what the source can act on (the same reasoning as
    /// draft-tian-ccwg-long-haul-cnp's one CNP per flow per RTT).
    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }
    /// The smoothed round trip below this node, once one was measured
    /// (adaptive window only).
    pub fn srtt_ns(&self) -> Option<u64> {
        self.srtt_ns
    }

    /// The group's state into `v`, reusing its allocations.
    pub fn view_into(&self, v: &mut GroupView) {
        v.id = self.cfg.id;
        v.upstream_psn = self.up_psn;
        v.upstream_nak = self.up_nak;
        v.highest_sent = self.highest_sent;
        v.window_ns = self.window_ns;
        v.srtt_ns = self.srtt_ns;
        v.branches.clear();
        v.branches.extend(self.branches.iter().map(|b| BranchView { addr: b.receiver.addr, qpn: b.receiver.qpn, node: b.node, acked: b.acked, nak_epsn: b.nak_epsn, ccount: b.ccount }));
    }

    /// The branch of a receiver address (linear; [`super::GroupTable`] has
    /// the O(1) map).
    pub fn branch_index(&self, addr: &Ipv6Addr) -> Option<usize> {
        self.branches.iter().position(|b| b.receiver.addr == *addr)
    }

    /// Record a data packet's PSN on its way downstream at `now`; ACKs and
    /// NAKs beyond the highest PSN sent are then refused (s.9, inflated
    /// AckPSN). PSNs outside the half window above the upstream PSN are
    /// ignored. With an adaptive window, a new highest PSN is timed when no
    /// other is, and a retransmission at or below the timed PSN cancels the
    /// timing: its acknowledgement could answer either copy (Karn's rule).
    pub fn on_data(&mut self, psn: u32, now: u64) {
        let psn = psn & PSN_MASK;
        let d = psn_diff(psn, self.up_psn);
        if d >= PSN_HALF {
            return;
        }
        let retransmitted = self.highest_sent.is_some_and(|h| psn_diff(h, self.up_psn) >= d && psn_diff(h, self.up_psn) < PSN_HALF);
        // A branch's NAKed PSN passing down again is the retransmission
        // its NAK asked for (a NAKed PSN was sent before: a pass after the
        // NAK is a retransmission), and an RNR-refused PSN the source's
        // retry.
        self.take_unanswered(psn);
        if self.up_rnr == Some(psn) {
            self.up_rnr = None;
        }
        if !retransmitted {
            self.highest_sent = Some(psn);
            if self.cfg.cnp_window_max_ns.is_some() && self.rtt_probe.is_none() && d > 0 {
                self.rtt_probe = Some((psn, now));
            }
        } else if self.rtt_probe.is_some_and(|(p, _)| psn_diff(p, psn) < PSN_HALF) {
            self.rtt_probe = None;
        }
    }

    /// The upstream PSN moved: with an adaptive window, the timed PSN is
    /// acknowledged by every branch once it is at or below it. `sample`:
    /// by an ACK (a round trip measured); else by a NAK, after which the
    /// timing is dropped (a loss in flight).
    fn rtt_covered(&mut self, now: u64, sample: bool) {
        let (Some((p, t)), Some(max)) = (self.rtt_probe, self.cfg.cnp_window_max_ns) else { return };
        if psn_diff(self.up_psn, p) >= PSN_HALF {
            return;
        }
        self.rtt_probe = None;
        if !sample {
            return;
        }
        let r = now.saturating_sub(t);
        let s = match self.srtt_ns {
            None => r,
            Some(s) => s - s / 8 + r / 8,
        };
        self.srtt_ns = Some(s);
        self.window_ns = s.clamp(self.cfg.cnp_window_ns, max);
        self.counters.inc(Counter::RttSample);
    }

    /// A response from the receiver at `from` (linear branch lookup).
    /// Unknown receivers are dropped and counted.
    pub fn on_response(
        &mut self,
        from: &Ipv6Addr,
        resp: Response,
        now: u64,
    ) -> Result<Option<Upstream>, Counter> {
        match self.branch_index(from) {
            Some(b) => self.on_branch(b, resp, now),
            None => {
                self.counters.inc(Counter::UnknownReceiver);
                Err(Counter::UnknownReceiver)
            }
        }
    }

    /// A response from branch `branch`.
    ///
    /// `Ok(Some(up))`: send `up` upstream ([`GroupConfig::upstream_dst`]).
    /// `Ok(None)`: absorbed into the state. `Err(reason)`: dropped (already counted under `reason`).
    /// A CNP that arrives after the window end first closes the window, so
    /// it may return the window's CNP even when the arriving one is over
    /// its rate (counted as `mc-cnp-rate-limited`).
    pub fn on_branch(
        &mut self,
        branch: usize,
        resp: Response,
        now: u64,
    ) -> Result<Option<Upstream>, Counter> {
        if branch >= self.branches.len() {
            self.counters.inc(Counter::UnknownReceiver);
            return Err(Counter::UnknownReceiver);
        }
        let r = match resp {
            Response::Ack { psn, msn, credits } => {
                self.counters.inc(Counter::AckIn);
                self.ack(branch, psn & PSN_MASK, msn & PSN_MASK, credits & 0x1f, now)
            }
            Response::Nak { psn, msn, kind } => {
                self.counters.inc(match kind {
                    NakKind::PsnSequenceError => Counter::NakIn,
                    NakKind::Rnr { .. } => Counter::RnrIn,
                    NakKind::Fatal(_) => Counter::FatalNakIn,
                });
                self.nak(branch, psn & PSN_MASK, msn & PSN_MASK, kind, now)
            }
            Response::Cnp => {
                self.counters.inc(Counter::CnpIn);
                let up = self.roll(now);
                let b = &mut self.branches[branch];
                if b.cnp_bucket.take(now) {
                    b.ccount = b.ccount.saturating_add(1);
                    Ok(up)
                } else if up.is_some() {
                    self.counters.inc(Counter::CnpRateLimited);
                    Ok(up)
                } else {
                    Err(Counter::CnpRateLimited)
                }
            }
        };
        if let Err(c) = r {
            self.counters.inc(c);
        }
        r
    }

    /// Close the CNP window if it has ended at `now`: one CNP for the branch
    /// with the highest CCount (if any counted), all counts reset.
    pub fn poll(&mut self, now: u64) -> Option<Upstream> {
        self.roll(now)
    }

    /// When the current window ends.
    pub fn window_end(&self) -> u64 {
        self.window_start.saturating_add(self.window_ns)
    }

    // ---- rules

    /// Forward distance of `p` above the upstream PSN.
    #[inline]
    fn off(&self, p: u32) -> u32 {
        psn_diff(p, self.up_psn)
    }

    /// Validate a PSN reported by a branch: within the half window above the
    /// upstream PSN and not beyond the highest PSN sent + `slack`.
    fn check_window(&self, p: u32, slack: u32) -> Result<u32, Counter> {
        let d = self.off(p);
        if d >= PSN_HALF {
            return Err(Counter::PsnOutOfWindow);
        }
        if let Some(h) = self.highest_sent {
            let hd = self.off(h);
            if hd < PSN_HALF && d > hd + slack {
                return Err(Counter::PsnBeyondSent);
            }
        }
        Ok(d)
    }

    /// (offset of the minimum acked PSN above up_psn, its branch, min credits)
    fn min_acked(&self) -> (u32, usize, u8) {
        let mut best = (u32::MAX, 0usize, 31u8);
        for (i, b) in self.branches.iter().enumerate() {
            let d = self.off(b.acked);
            if d < best.0 {
                best.0 = d;
                best.1 = i;
            }
            best.2 = best.2.min(b.credits);
        }
        best
    }

    fn ack(&mut self, i: usize, psn: u32, msn: u32, credits: u8, now: u64) -> Result<Option<Upstream>, Counter> {
        let d = self.check_window(psn, 0)?;
        if d < self.off(self.branches[i].acked) {
            return Err(Counter::StalePsn);
        }
        // The receiver acknowledges again the PSN the source was already
        // told: it saw a retransmission, so the source may never have had
        // that ACK (lost upstream). Without an answer it would retry until
        // its QP fails (s.5.3.1: the node forwards an ACK with the
        // minimum). One repeat per retransmission: the first such ACK of a
        // round is answered, a branch repeating again starts a new round.
        if self.up_told && d == 0 && psn == self.branches[i].acked {
            if self.branches[i].dup {
                for b in self.branches.iter_mut() {
                    b.dup = false;
                }
            }
            let first = !self.branches.iter().any(|b| b.dup);
            let b = &mut self.branches[i];
            b.dup = true;
            b.msn = msn;
            b.credits = credits;
            if !first {
                return Ok(None);
            }
            let (_, mi, cr) = self.min_acked();
            self.up_credits = cr;
            self.counters.inc(Counter::AckRepeated);
            return Ok(Some(Upstream::Ack { psn: self.up_psn, msn: self.branches[mi].msn, credits: cr }));
        }
        let b = &mut self.branches[i];
        b.acked = psn;
        b.msn = msn;
        b.credits = credits;
        if let Some(e) = b.nak_epsn {
            // resolved once the ACK covers the NAK's ePSN
            if psn_diff(psn, e) < PSN_HALF {
                b.nak_epsn = None;
            }
        }
        let (min_off, mi, cr) = self.min_acked();
        if min_off == 0 {
            // s.5.3.1: "When an ACK is received ... The node MUST forward
            // an ACK upstream carrying an AckPSN equal to the minimum."
            // Repeating an unchanged minimum would tell the source nothing,
            // except when the most constrained receive queue's credits
            // changed (an end-to-end credit source would otherwise wait
            // for the next advance): then the minimum goes up again with
            // the new credit count.
            if self.up_told && cr != self.up_credits {
                self.up_credits = cr;
                self.counters.inc(Counter::AckCreditUpdate);
                return Ok(Some(Upstream::Ack { psn: self.up_psn, msn: self.branches[mi].msn, credits: cr }));
            }
            return Ok(None);
        }
        self.up_psn = psn_add(self.up_psn, min_off);
        self.up_credits = cr;
        self.up_told = true;
        self.rtt_covered(now, true);
        for b in self.branches.iter_mut() {
            b.dup = false;
        }
        if let Some(n) = self.up_nak {
            // Everyone has the NAK's ePSN now; forget it so that it can never
            // alias a later ePSN after the PSN space wraps.
            if psn_diff(self.up_psn, n) < PSN_HALF {
                self.up_nak = None;
            }
        }
        self.up_rnr = None;
        // s.5.3.2: the new minimum is a branch's NAK that never went up (a
        // smaller ePSN went up for another branch, and the PSN this one
        // asks for has not passed down since, e.g. its retransmission was
        // lost again): it goes up now, in place of the ACK it implies. A
        // receiver NAKs a sequence error once; without this the source
        // would wait for its ACK timeout.
        let e = psn_add(self.up_psn, 1);
        if self.take_unanswered(e) {
            self.up_nak = Some(e);
            self.counters.inc(Counter::NakUp);
            return Ok(Some(Upstream::Nak { psn: e, msn: self.branches[mi].msn, kind: NakKind::PsnSequenceError }));
        }
        self.counters.inc(Counter::AckUp);
        Ok(Some(Upstream::Ack { psn: self.up_psn, msn: self.branches[mi].msn, credits: cr }))
    }

    /// The branches whose unanswered NAK asks for `psn` are answered (it
    /// passed down, or goes up now): whether there was one.
    fn take_unanswered(&mut self, psn: u32) -> bool {
        if !self.nak_waiting {
            return false;
        }
        let (mut hit, mut left) = (false, false);
        for b in self.branches.iter_mut().filter(|b| b.nak_unanswered) {
            if b.nak_epsn == Some(psn) {
                b.nak_unanswered = false;
                hit = true;
            } else {
                left = true;
            }
        }
        self.nak_waiting = left;
        hit
    }

    fn nak(&mut self, i: usize, e: u32, msn: u32, kind: NakKind, now: u64) -> Result<Option<Upstream>, Counter> {
        let d = self.check_window(e, 1)?;
        if let NakKind::Fatal(_) = kind {
            // Forwarded with the code the branch reported and the smaller of
            // its PSN and the minimum ePSN (s.5.3.2; a NAK acknowledges
            // every PSN before its own, and other branches may not have
            // them); the state is untouched.
            self.branches[i].msn = msn;
            let (min_off, _, _) = self.min_acked();
            let min_epsn = psn_add(self.up_psn, min_off.saturating_add(1));
            let psn = if psn_diff(e, min_epsn) < PSN_HALF { min_epsn } else { e };
            self.counters.inc(Counter::FatalNakUp);
            return Ok(Some(Upstream::Nak { psn, msn, kind }));
        }
        // An ePSN must be beyond what the branch acknowledged.
        if d <= self.off(self.branches[i].acked) {
            return Err(Counter::StalePsn);
        }
        let tracks_data = self.highest_sent.is_some();
        let b = &mut self.branches[i];
        b.acked = psn_sub(e, 1);
        b.nak_epsn = Some(e);
        b.nak_unanswered = false;
        b.msn = msn;
        let (min_off, mi, _) = self.min_acked();
        let min_acked = psn_add(self.up_psn, min_off);
        let min_epsn = psn_add(min_acked, 1);
        let up_msn = self.branches[mi].msn;
        if kind == NakKind::PsnSequenceError {
            // Beyond the minimum this branch's ePSN does not go up now;
            // remember it until its PSN passes down again (the go-back-N
            // retransmission from the minimum carries it), see `ack`.
            self.branches[i].nak_unanswered = tracks_data && e != min_epsn;
            self.nak_waiting |= self.branches[i].nak_unanswered;
            if self.up_nak == Some(min_epsn) {
                self.counters.inc(Counter::NakSuppressed);
                return Ok(None);
            }
            self.up_nak = Some(min_epsn);
            self.up_psn = min_acked;
            self.up_told = true;
            for b in self.branches.iter_mut() {
                if b.nak_epsn == Some(min_epsn) {
                    b.nak_unanswered = false;
                }
            }
            self.counters.inc(Counter::NakUp);
        } else {
            // RNR NAK: every retry the source makes is refused anew, so each
            // one is forwarded, once: other branches refusing the same try
            // (the PSN has not passed down again since) add nothing.
            if tracks_data && self.up_rnr == Some(min_epsn) {
                self.counters.inc(Counter::NakSuppressed);
                return Ok(None);
            }
            self.up_rnr = Some(min_epsn);
            self.up_psn = min_acked;
            self.up_told = true;
            self.counters.inc(Counter::RnrUp);
        }
        self.rtt_covered(now, false);
        Ok(Some(Upstream::Nak { psn: min_epsn, msn: up_msn, kind }))
    }

    fn roll(&mut self, now: u64) -> Option<Upstream> {
        let t = self.window_ns;
        let elapsed = now.saturating_sub(self.window_start);
        if elapsed < t {
            return None;
        }
        self.window_start += (elapsed / t) * t;
        let mut best: Option<(usize, u32)> = None;
        for (i, b) in self.branches.iter_mut().enumerate() {
            if b.ccount > best.map_or(0, |x| x.1) {
                best = Some((i, b.ccount));
            }
            b.ccount = 0;
        }
        let (branch, ccount) = best?;
        self.counters.inc(Counter::CnpUp);
        Some(Upstream::Cnp { branch, ccount })
    }
}
