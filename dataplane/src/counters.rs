//! Counters: per port packets/bytes in and out, and every drop under a named
//! reason (VPP's per-node error counters are the model). Each worker owns its
//! counters (one writer); the control thread reads them for the status line,
//! `show counters` and the exit table, which therefore all agree.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! reasons {
    ($name:ident, $count:ident { $($var:ident => $s:literal,)* }) => {
        /// Why a packet was dropped, or what a local behaviour did with it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u16)]
        pub enum $name { $($var,)* }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var,)*];
            /// The counter's name as the CLI and telemetry show it.
            pub const fn name(self) -> &'static str {
                match self { $($name::$var => $s,)* }
            }
            pub fn from_name(s: &str) -> Option<$name> {
                match s { $($s => Some($name::$var),)* _ => None }
            }
        }
        pub const $count: usize = [$($s,)*].len();
    };
}

reasons!(Drop, N_DROPS {
    // L2
    Runt => "runt",
    NotForUs => "l2-not-for-us",
    UnknownEthertype => "unknown-ethertype",
    // Received MAC Control frames (PAUSE / PFC, pfcrx): too short, tagged
    // or not to the reserved address; an opcode other than PAUSE / PFC; a
    // port without `[port.pfc]`.
    MalformedMacControl => "malformed-mac-control",
    MacControlUnsupported => "mac-control-unsupported",
    PfcNotHonoured => "pfc-not-enabled",
    VlanUnknown => "vlan-unknown",
    MalformedArp => "malformed-arp",
    ArpNotForUs => "arp-not-for-us",
    // Another station claims one of the router's IPv4 addresses (RFC 5227
    // s.2.4, a conflicting ARP packet), within DEFEND_INTERVAL of the last
    // defence: not learned, not answered.
    ArpAddressConflict => "arp-address-conflict",
    MultiSeg => "multi-segment",
    // IPv4
    MalformedIpv4 => "malformed-ipv4",
    Ipv4Checksum => "ipv4-bad-checksum",
    Ipv4Options => "ipv4-options",
    Ipv4Martian => "ipv4-martian",
    // IPv6
    MalformedIpv6 => "malformed-ipv6",
    Ipv6Martian => "ipv6-martian",
    UrpfFailed => "urpf-failed",
    MalformedNd => "malformed-nd",
    NdAdvertOffLink => "nd-advert-off-link",
    // A Neighbor Advertisement for one of the router's own addresses:
    // another station has it (RFC 4862 s.5.4.4, "SHOULD log a system
    // management error"); not learned.
    NdAddressConflict => "nd-address-conflict",
    // ND (ICMPv6 133..=137) in a fragmented packet (RFC 6980 s.5: "MUST
    // silently ignore").
    NdFragmented => "nd-fragmented",
    NdAdvertUnsolicited => "nd-advert-unsolicited-unknown",
    // An advertisement without Target Link-Layer Address for an address
    // being resolved (RFC 4861 s.7.2.5: silently discarded).
    NdAdvertNoTargetLladdr => "nd-advert-no-target-lladdr",
    // forwarding
    TtlExpired => "ttl-expired",
    NoRoute => "no-route",
    NeighbourMiss => "neighbour-miss",
    NeighbourQueueFull => "neighbour-queue-full",
    NeighbourTimeout => "neighbour-timeout",
    MtuExceeded => "mtu-exceeded",
    TooManyFragments => "too-many-fragments",
    ReasmOverlap => "reassembly-overlap",
    ReasmTimeout => "reassembly-timeout",
    ReasmEvicted => "reassembly-evicted",
    ReasmMalformed => "reassembly-malformed",
    // An IPv6 first fragment without the whole header chain through the
    // upper-layer header (RFC 7112 s.5): Parameter Problem code 3.
    ReasmChainIncomplete => "reassembly-first-fragment-incomplete",
    // A tunnel packet reassembled at a decapsulating SID that no packet
    // buffer can hold (larger than the mempool's data room).
    ReasmTooLarge => "reassembly-too-large",
    // RFC 3168 s.5.3: a datagram some of whose fragments were CE and some
    // Not-ECT (it cannot carry the congestion indication).
    ReasmEcnMixed => "reassembly-ecn-mixed",
    MulticastNotRouted => "multicast-not-routed",
    // A multicast packet that arrived on another interface than its
    // route's RPF interface (`iif`).
    MrouteRpfFailed => "mroute-rpf-failed",
    // MLD (RFC 9777): Hop Limit not 1, or a query from a non-link-local
    // or a report from the unspecified address (s.5.1.14, s.5.2.13).
    MldInvalid => "mld-invalid",
    MldNotEnabled => "mld-not-enabled",
    MldRateLimited => "mld-rate-limited",
    // local
    LocalUnsupported => "local-unsupported",
    // An Echo Reply to this node that answers none of its RTT probes
    // (another identifier, or too short), and replies to them beyond the
    // per-worker rate (pipeline::ECHO_REPLY_RATE_PER_S).
    EchoReplyUnexpected => "echo-reply-unexpected",
    EchoReplyRateLimited => "echo-reply-rate-limited",
    MalformedIcmp => "malformed-icmp",
    IcmpRateLimited => "icmp-rate-limited",
    // resources
    NoHeadroom => "no-headroom",
    NoMbuf => "no-mbuf",
    TxFull => "tx-full",
    // The egress port's link is down: what was queued for it, and what
    // comes for it until the link is back.
    LinkDown => "link-down",
    QueueTailDrop => "queue-tail-drop",
    PriorityQueueFull => "priority-queue-full",
    HandoffFull => "handoff-full",
    CnpBuildFailed => "cnp-build-failed",
    // draft-tian s.9: the SA of an authenticated CNP has used every
    // sequence number (re-key it).
    CnpAhSeqExhausted => "lhcnp-ah-seq-exhausted",
    FannHopLimit => "fann-hop-limit-expired",
    // ingress PE (draft-hzh-fantel-wan-tunnel s.4): notifications to us
    FannUnknownSource => "fann-unknown-source",
    FannMalformed => "fann-malformed",
    FannDuplicate => "fann-duplicate",
    FannStateFull => "fann-state-full",
    // An event type the ingress PE does not know.
    FannUnknownEvent => "fann-unknown-event",
    // A known node's events over its rate limit at the ingress PE.
    FannRxRateLimited => "fann-rx-rate-limited",
    FannWrongInterface => "fann-wrong-interface",
    EventQueueFull => "event-queue-full",
    // Packets still queued when the router stopped (a shaped port's deep
    // queue, a hand-off ring), freed without being sent.
    ShutdownDiscard => "shutdown-discard",
    BadPort => "bad-port",
    // SRv6 (RFC 8754 / RFC 8986 / draft-li-spring-rdma-multicast-over-srv6)
    SrhRoutingType => "srh-bad-routing-type",
    SrhMalformed => "srh-malformed",
    SrhSlExceeds => "srh-sl-exceeds-last-entry",
    SrhNotASid => "srh-to-non-sid-address",
    SrhSlZero => "srh-sl-zero",
    Srv6NoSrh => "srv6-no-srh",
    SrhHmacMissing => "srh-hmac-missing",
    SrhHmacBad => "srh-hmac-bad",
    SrhHmacKeyUnknown => "srh-hmac-key-unknown",
    Srv6ChainTooLong => "srv6-sid-chain-too-long",
    DecapSlNonZero => "srv6-decap-sl-nonzero",
    DecapNextHeader => "srv6-decap-next-header",
    DecapCeNotEct => "decap-ce-not-ect",
    EndCNotNotification => "end-c-not-a-notification",
    EndENotNotification => "end-e-not-a-notification",
    NotificationSourceRefused => "notification-source-refused",
    EndCUnconfigured => "end-c-unconfigured",
    EndMtNoSrh => "endmt-no-srh",
    EndMtSlZero => "endmt-sl-zero",
    EndMtNoTlv => "endmt-no-tlv",
    EndMtTlvMalformed => "endmt-tlv-malformed",
    EndMtNotRoce => "endmt-inner-not-rocev2",
    EndMtFragment => "endmt-fragment",
    EndMtReceiverInTlv => "endmt-receiver-in-tlv",
    EndMtReceiverNotBranch => "endmt-receiver-not-branch",
    ReplicaInvalid => "replica-invalid",
    // End.MT reverse path (multicast::Counter drop reasons)
    McUnknownReceiver => "mc-unknown-receiver",
    McStalePsn => "mc-stale-psn",
    McPsnOutOfWindow => "mc-psn-out-of-window",
    McPsnBeyondSent => "mc-psn-beyond-sent",
    McCnpRateLimited => "mc-cnp-rate-limited",
    McUnsupportedOpcode => "mc-unsupported-opcode",
    McBadIcrc => "mc-bad-icrc",
    McMalformed => "mc-malformed",
});

reasons!(Local, N_LOCAL {
    FastPath => "fast-path-forwarded",
    ArpReply => "arp-reply-sent",
    ArpLearned => "arp-learned",
    // A broadcast ARP Announcement of an address another station claimed
    // (RFC 5227 s.2.4 (c)), at most once per DEFEND_INTERVAL per interface.
    ArpAddressDefended => "arp-address-defended",
    NdAdvert => "nd-advert-sent",
    NdLearned => "nd-learned",
    NdSourceOffLink => "nd-solicit-source-off-link",
    // An advertisement with Override clear naming another link-layer
    // address than the cached one: the cache is not changed (RFC 4861
    // s.7.2.5).
    NdAdvertNoOverride => "nd-advert-no-override",
    NeighbourLearnRefused => "neighbour-learn-refused",
    // A replaced snapshot the control thread had no room to take back,
    // freed by the worker itself between bursts (should stay 0).
    SnapshotFreedByWorker => "snapshot-freed-by-worker",
    // A RoCEv2 response or standard CNP another worker owns the congestion
    // stage for, not handed over because its ring was full (its source QP
    // is then learned from a later one; should stay 0).
    ResponseNotObserved => "response-not-observed",
    // A RoCEv2 data packet dropped as handoff-full on its way to another
    // worker's congestion-aware port that the owner could not be told of
    // (its ring of dropped packets was full too), so its flow's arrival
    // rate misses it (the ring holds 4096, emptied every owner loop: only
    // an owner far behind a flood of drops loses any).
    HandoffDropUnseen => "handoff-drop-unseen",
    EchoReply4 => "icmp-echo-reply",
    EchoReply6 => "icmpv6-echo-reply",
    TimeExceeded4 => "icmp-time-exceeded-sent",
    TimeExceeded6 => "icmpv6-time-exceeded-sent",
    Unreachable4 => "icmp-net-unreachable-sent",
    Unreachable6 => "icmpv6-no-route-sent",
    HostUnreachable4 => "icmp-host-unreachable-sent",
    AddrUnreachable6 => "icmpv6-address-unreachable-sent",
    FragNeeded4 => "icmp-frag-needed-sent",
    // RFC 8754 s.4.3.1.1 / RFC 8986 s.4.1.1 / RFC 8200 s.4.4: an SRH or
    // SID the packet cannot be processed with, answered.
    ParamProblem6 => "icmpv6-param-problem-sent",
    TooBig6 => "icmpv6-packet-too-big-sent",
    Fragmented4 => "ipv4-fragmented",
    Fragment4 => "ipv4-fragments-created",
    Fragment6 => "ipv6-fragments-created",
    // The router's own replies sent as fragments (an Echo Reply to a
    // reassembled request), and the fragments they became (part of the
    // two counts above).
    RepliesFragmented => "replies-fragmented",
    ReplyFragments => "reply-fragments-sent",
    ReasmFragment => "reassembly-fragments-in",
    Reassembled => "reassembled",
    ArpRequestSent => "arp-request-sent",
    NsSent => "nd-solicit-sent",
    SolicitStateFull => "neighbour-resolution-full",
    CeMarked => "ecn-ce-marked",
    CnpNotify => "lhcnp-notify-sent",
    CnpRateReduce => "lhcnp-rate-reduce-sent",
    CnpPause => "lhcnp-pause-sent",
    CnpResume => "lhcnp-resume-sent",
    // draft-tian s.9: ICMPv6 Long-haul CNPs sent with an IPsec AH, and
    // RoCEv2-format ones to a source an AH SA covers (that format has none).
    CnpAhProtected => "lhcnp-ah-protected",
    CnpRoceUnauthenticated => "lhcnp-roce-unauthenticated",
    Injected => "control-plane-sent",
    // RTT_est by active probing (rttprobe, control thread): Echo Requests
    // sent, replies that gave a round trip, probes given up, replies for a
    // probe answered or given up already or later than the timeout,
    // replies whose tag did not
    // verify, replies to probes sent before their next hop was resolved
    // (they may have waited for ARP / ND: no sample); times RTT_est moved,
    // and measured values the port's
    // configuration cannot take (K_max would pass the Pause threshold).
    RttProbeSent => "rtt-probe-sent",
    RttProbeAnswered => "rtt-probe-answered",
    RttProbeLost => "rtt-probe-lost",
    RttProbeLate => "rtt-probe-late",
    RttProbeForged => "rtt-probe-forged",
    RttProbeHeld => "rtt-probe-held",
    // A reply dated at or before its probe's send time (the worker's and
    // the control thread's clocks disagree): the probe is lost, no sample.
    RttProbeClockSkew => "rtt-probe-clock-skew",
    RttEstChanged => "rtt-est-changed",
    RttEstRefused => "rtt-est-refused",
    EndEForwarded => "end-e-forwarded",
    PfcPause => "pfc-pause-sent",
    PfcResume => "pfc-resume-sent",
    PfcCoalesced => "pfc-pause-coalesced",
    // A Resume from one notifying node while another node's pause on the
    // priority is still in force (END.C keeps pausing for it).
    PfcResumeHeld => "pfc-resume-held",
    // A Resume for a priority not paused, within a refresh interval of the
    // last RESUME sent for it: no frame.
    PfcResumeCoalesced => "pfc-resume-coalesced",
    // Received PAUSE / PFC frames that paused or resumed a priority of the
    // port (`[port.pfc]`), and those that named none it honours.
    PfcReceived => "pfc-received",
    PauseReceived => "pause-received",
    PfcReceivedIgnored => "pfc-received-ignored",
    // END.C with several interfaces: a notification that names no sender
    // (a FANN message without Flow ID) or one whose route leaves by none of
    // them, answered on every END.C interface.
    PfcEveryInterface => "pfc-on-every-interface",
    Srv6Encap => "srv6-h-encaps",
    // An IPv6 packet of at most 1280 octets whose tunnel MTU is below
    // 1280: the tunnel packet leaves as fragments (RFC 2473 s.7.1 (b)).
    Srv6EncapFragmented => "srv6-h-encaps-fragmented",
    Srv6Decap => "srv6-decap",
    // A tunnel packet its headend fragmented (RFC 2473 s.7.1), reassembled
    // at this tunnel exit's decapsulating SID.
    Srv6Reassembled => "srv6-tunnel-reassembled",
    Srv6End => "srv6-end",
    EndMtReplica => "endmt-replica-built",
    // Copies of a multicast packet sent by a multicast route.
    MrouteReplica => "mroute-replica-sent",
    MldReportReceived => "mld-report-received",
    MldQueryReceived => "mld-query-received",
    MldV1QueryHeard => "mld-v1-query-heard",
    MldV2QueryHeard => "mld-v2-query-heard",
    MldV2ReportIgnored => "mld-v2-report-ignored",
    MldQuerySent => "mld-query-sent",
    MldRecordIgnored => "mld-record-ignored",
    MldSsmExcludeIgnored => "mld-ssm-exclude-ignored",
    MldStateFull => "mld-state-full",
    EndMtZeroCopy => "endmt-replica-zero-copy",
    // End.MT reverse path (multicast::Counter events)
    McDataSeen => "mc-data-seen",
    McTlvReceiverUnknown => "mc-tlv-receiver-unknown",
    // A learning group took another receiver set from an End.MT TLV, or
    // refused one (tlv_receivers = "learn").
    McTlvLearned => "mc-tlv-learned",
    McTlvLearnRefused => "mc-tlv-learn-refused",
    McAckIn => "mc-ack-in",
    McNakIn => "mc-nak-in",
    McRnrIn => "mc-rnr-nak-in",
    McFatalNakIn => "mc-fatal-nak-in",
    McCnpIn => "mc-cnp-in",
    McAckUp => "mc-ack-up",
    McAckRepeated => "mc-ack-repeated",
    McAckCreditUpdate => "mc-ack-credit-update",
    McNakUp => "mc-nak-up",
    McRnrUp => "mc-rnr-nak-up",
    McFatalNakUp => "mc-fatal-nak-up",
    McCnpUp => "mc-cnp-up",
    McNakSuppressed => "mc-nak-suppressed",
    McPassedUp => "mc-passed-up",
    McRttSample => "mc-rtt-sample",
    PeNotification => "pe-notification-accepted",
    // END.C / END.E: a notification they decapsulated that is news for
    // this node's ingress PE too (a Long-haul CNP, a FANN message to this
    // node), handed to it; or refused as a direct one would be (a node
    // not in known_nodes, not from its own address, wrong interface).
    PeViaSid => "pe-notification-via-sid",
    PeViaSidRefused => "pe-notification-via-sid-refused",
    PeSwitchedToBackup => "pe-switched-to-backup",
    PeRestored => "pe-restored-primary",
    // Of pe-switched-to-backup: the moves congestion made (s.4.2), and
    // those that found the hold-down doubled (a flap damped).
    PeCongestionFailover => "pe-congestion-failover",
    PeHolddownRaised => "pe-holddown-raised",
    PeReweighted => "pe-reweighted",
    PeRateReduced => "pe-rate-reduced",
    PeRateRestored => "pe-rate-restored",
    // A new event found the PE's table of standing events full and took
    // the place of one on no policy's path (which changed nothing).
    PeEventEvicted => "pe-event-evicted-off-path",
    PeRateCeMarked => "pe-rate-ce-marked",
    PeRateOverNotEct => "pe-rate-over-not-ect",
    PeControllerCopy => "pe-controller-copy",
    PeSenderCopy => "pe-sender-notified",
    PeSenderCopyRateLimited => "pe-sender-notification-rate-limited",
    // An IPv4 sender (its Flow ID IPv4-mapped) that could not be told: the
    // PE has no IPv4 source address (`[ingress_pe] source_v4`).
    PeSenderNoIpv4Source => "pe-sender-no-ipv4-source",
    PeControllerCopyRateLimited => "pe-controller-copy-rate-limited",
    FannSent => "fann-sent",
    FannRateLimited => "fann-rate-limited",
    LinkChange => "link-state-change",
    NeighbourConfirmed => "neighbour-confirmed",
    NeighbourHeld => "neighbour-held",
    NeighbourReleased => "neighbour-released",
    NeighbourProbe => "neighbour-probe-sent",
    NeighbourUnreachable => "neighbour-unreachable",
    NeighbourExpired => "neighbour-expired",
    GatewayFailed => "ecmp-gateway-failed",
    GatewayRecovered => "ecmp-gateway-recovered",
});

/// Maximum number of DPDK ports a worker keeps counters for.
pub const MAX_PORTS: usize = 16;

/// A counter with one writer: the owning worker does a relaxed load and store
/// (no locked RMW on the packet path); readers do relaxed loads.
#[derive(Default)]
#[repr(transparent)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline(always)]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }
    /// For gauges (e.g. queue depth): overwrite.
    #[inline(always)]
    pub fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed);
    }
    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
pub struct PortCounters {
    pub rx_pkts: Counter,
    pub rx_bytes: Counter,
    pub tx_pkts: Counter,
    pub tx_bytes: Counter,
}

/// One worker's counters, cache-line aligned so workers never share a line.
#[repr(align(64))]
pub struct WorkerCounters {
    pub ports: [PortCounters; MAX_PORTS],
    pub drops: [Counter; N_DROPS],
    pub local: [Counter; N_LOCAL],
    pub bursts: Counter,
    pub busy_bursts: Counter,
    /// Egress queue depth in bytes of the ports this worker owns (gauge).
    pub queue_depth: [Counter; MAX_PORTS],
    /// Microbursts seen on the ports this worker owns (FANN, s.4: queue
    /// growth above a threshold within a short window).
    pub microbursts: [Counter; MAX_PORTS],
    /// The flow with the most bytes in the queue of each owned port (FANN
    /// Flow ID metadata), published by the owner about once per ms; the
    /// worker only ever `try_lock`s.
    pub top_flow: [parking_lot::Mutex<Option<crate::wire::fann::FlowId>>; MAX_PORTS],
    /// Each owned congestion-aware port as `show congestion` prints it,
    /// published by the owner about once per ms and when it stops; the
    /// worker only ever `try_lock`s while it runs.
    pub congestion: [parking_lot::Mutex<Option<crate::congestion::CongestionView>>; MAX_PORTS],
    /// `show flows`: the control thread asks the owner of a port for its
    /// top flows by writing `request number << 16 | count` here ...
    pub flows_request: [Counter; MAX_PORTS],
    /// ... and the owner answers here with the same request number, after
    /// a scan of its flow table in bounded steps.
    pub flows: [parking_lot::Mutex<(u64, Vec<crate::congestion::FlowView>)>; MAX_PORTS],
    /// CPU time the worker thread used in its poll loop (ns), set when it
    /// stops: the cost of what it did, without the time the OS gave other
    /// threads on its core.
    pub cpu_ns: Counter,
    /// Packets received per RX queue the worker polls, in the order of its
    /// `WorkerSpec::rx_queues` (how RSS spread the traffic).
    pub rx_queue_pkts: Box<[Counter]>,
    /// The neighbours this worker holds frames for (interface, address,
    /// frames), published after every look at them (at least every 50 ms
    /// while frames wait); the worker only ever `try_lock`s.
    pub waiting: parking_lot::Mutex<Vec<(u16, std::net::IpAddr, u32)>>,
    /// The End.MT reverse-path groups' state (`show multicast`), published
    /// by their owner worker about every 10 ms; the worker only ever
    /// `try_lock`s.
    pub groups: parking_lot::Mutex<Vec<crate::multicast::GroupView>>,
}

impl Default for WorkerCounters {
    fn default() -> Self {
        WorkerCounters {
            ports: std::array::from_fn(|_| PortCounters::default()),
            drops: std::array::from_fn(|_| Counter::default()),
            local: std::array::from_fn(|_| Counter::default()),
            bursts: Counter::default(),
            busy_bursts: Counter::default(),
            queue_depth: std::array::from_fn(|_| Counter::default()),
            microbursts: std::array::from_fn(|_| Counter::default()),
            top_flow: std::array::from_fn(|_| parking_lot::Mutex::new(None)),
            congestion: std::array::from_fn(|_| parking_lot::Mutex::new(None)),
            flows_request: std::array::from_fn(|_| Counter::default()),
            flows: std::array::from_fn(|_| parking_lot::Mutex::new((0, Vec::new()))),
            waiting: parking_lot::Mutex::new(Vec::new()),
            groups: parking_lot::Mutex::new(Vec::new()),
            cpu_ns: Counter::default(),
            rx_queue_pkts: Box::new([]),
        }
    }
}

impl WorkerCounters {
    /// Counters of a worker that polls `n` RX queues.
    pub fn with_rx_queues(n: usize) -> Self {
        WorkerCounters { rx_queue_pkts: (0..n).map(|_| Counter::default()).collect(), ..WorkerCounters::default() }
    }
}

impl WorkerCounters {
    #[inline(always)]
    pub fn dropped(&self, r: Drop) {
        self.drops[r as usize].add(1);
    }
    #[inline(always)]
    pub fn drop_n(&self, r: Drop, n: u64) {
        self.drops[r as usize].add(n);
    }
    #[inline(always)]
    pub fn local(&self, l: Local) {
        self.local[l as usize].add(1);
    }
    #[inline(always)]
    pub fn local_n(&self, l: Local, n: u64) {
        self.local[l as usize].add(n);
    }
}

/// A plain snapshot of counters, summed over workers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub rx_pkts: [u64; MAX_PORTS],
    pub rx_bytes: [u64; MAX_PORTS],
    pub tx_pkts: [u64; MAX_PORTS],
    pub tx_bytes: [u64; MAX_PORTS],
    pub drops: Vec<u64>,
    pub local: Vec<u64>,
}

impl Snapshot {
    pub fn sum<'a>(workers: impl IntoIterator<Item = &'a WorkerCounters>) -> Snapshot {
        let mut s = Snapshot { drops: vec![0; N_DROPS], local: vec![0; N_LOCAL], ..Default::default() };
        for w in workers {
            for p in 0..MAX_PORTS {
                s.rx_pkts[p] += w.ports[p].rx_pkts.get();
                s.rx_bytes[p] += w.ports[p].rx_bytes.get();
                s.tx_pkts[p] += w.ports[p].tx_pkts.get();
                s.tx_bytes[p] += w.ports[p].tx_bytes.get();
            }
            for (i, c) in w.drops.iter().enumerate() {
                s.drops[i] += c.get();
            }
            for (i, c) in w.local.iter().enumerate() {
                s.local[i] += c.get();
            }
        }
        s
    }
    pub fn total_rx(&self) -> u64 {
        self.rx_pkts.iter().sum()
    }
    pub fn total_tx(&self) -> u64 {
        self.tx_pkts.iter().sum()
    }
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
    pub fn drop_count(&self, r: Drop) -> u64 {
        self.drops[r as usize]
    }
    pub fn local_count(&self, l: Local) -> u64 {
        self.local[l as usize]
    }
}

/// CPU time of the calling thread in ns (`CLOCK_THREAD_CPUTIME_ID`); 0 if
/// the clock is unavailable.
pub fn thread_cpu_ns() -> u64 {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clk: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into `ts`.
    if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for r in Drop::ALL {
            assert!(seen.insert(r.name()), "duplicate {}", r.name());
            assert_eq!(Drop::from_name(r.name()), Some(*r));
        }
        for l in Local::ALL {
            assert!(seen.insert(l.name()));
        }
        assert_eq!(Drop::NoRoute.name(), "no-route");
    }

    #[test]
    fn snapshot_sums_workers() {
        let a = WorkerCounters::default();
        let b = WorkerCounters::default();
        a.dropped(Drop::NoRoute);
        b.drop_n(Drop::NoRoute, 2);
        a.ports[1].rx_pkts.add(5);
        b.ports[1].rx_pkts.add(7);
        let s = Snapshot::sum([&a, &b]);
        assert_eq!(s.drop_count(Drop::NoRoute), 3);
        assert_eq!(s.rx_pkts[1], 12);
        assert_eq!(s.total_drops(), 3);
    }
}
