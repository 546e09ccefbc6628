//! End.MT reverse path: ACK / NACK / CNP aggregation
//! (draft-li-spring-rdma-multicast-over-srv6-00 s.5.3, s.8, s.9).
//!
//! Pure Rust: no DPDK, no I/O, time injected as `u64` nanoseconds, and no
//! heap allocation on the per-response path once a group is installed
//! (branch state is a boxed slice, the lookup maps are preallocated hash
//! maps that are only read per packet).
//!
//! * [`psn`]: 24-bit PSN arithmetic (`psn_lt`, `psn_min`, ... modulo 2^24
//!   with a half window of 2^23).
//! * [`Group`]: one multicast group's per-branch state and the three
//!   aggregation rules; [`Group::on_response`] / [`Group::on_branch`] and
//!   [`Group::poll`] yield an [`Upstream`] response for the source.
//! * [`GroupTable`]: groups by id, and O(1) lookup from a received response
//!   to (group, branch).
//! * [`build_upstream`]: the RC response datagram a node sends upstream;
//!   [`parse_response`]: a receiver's (or child node's) response datagram
//!   into a [`ResponseKey`] and a [`Response`].
//!
//! # How a response is matched to a branch
//!
//! Group setup (s.5.1): every participant creates an RC QP *to the Proxy
//! Address* with the *Designated QPN* as its remote QPN. A receiver `Ri`
//! therefore sends its ACKs, NAKs and CNPs with IPv6 SA = `Ri`'s unicast
//! address, DA = Proxy Address and BTH DestQP = Designated QPN. A BTH has
//! no source-QP field: the receiver's own QPN (the one the End.MT TLV
//! carries and the downstream rewrite writes into DestQP) never appears in
//! its responses. A response is thus identified by the triple
//! [`ResponseKey`] `(SA, DA, DestQP)` = (receiver address, Proxy Address,
//! Designated QPN):
//!
//! * `(DA, DestQP)` names no group: not a multicast response, forward it
//!   as ordinary traffic ([`Lookup::NotMulticast`]).
//! * `(DA, DestQP)` names a group but SA is not one of its branches:
//!   dropped and counted as `mc-unknown-receiver` (s.9: "validate that
//!   reverse-path response messages originate from addresses within the
//!   expected downstream receiver set"); at a node below the top (with a
//!   `node_address`, see below) forwarded toward the next node up instead
//!   and counted as `mc-passed-up`: its route to the Proxy Address may
//!   pass here on its way to the node that has it as a branch, and the top
//!   node still drops what no node claims.
//! * otherwise: the (group, branch) pair.
//!
//! Consequently one receiver host can be a branch of a group only once
//! (two QPs of the same host in one group would be indistinguishable on the
//! reverse path) and `(Proxy Address, Designated QPN)` must be unique per
//! group; [`GroupTable::insert`] refuses both.
//!
//! # Draft wording and the InfiniBand RC fields
//!
//! | draft (s.5.3, s.8) | RC response field |
//! |---|---|
//! | "AckPSN" of an ACK | BTH PSN of an Acknowledge packet (opcode 0x11) whose AETH syndrome is ACK (`000ccccc`, credit count `c`). The draft's "AETH AckPSN field" does not exist: the AETH holds only syndrome and MSN; the acknowledged PSN is the BTH PSN. |
//! | "ePSN" of a NACK | BTH PSN of an Acknowledge packet whose AETH syndrome is NAK / PSN sequence error (`01100000`): the PSN the responder expected. IB semantics: such a NAK also acknowledges every PSN before it, so a branch's AckPSN becomes `ePSN - 1`. |
//! | branch without NACK: ePSN = AckPSN + 1 | kept literally: `effective ePSN = acked + 1` for every branch; after a NAK `acked = ePSN - 1`, so the rule holds for NAKed branches too. |
//! | MSN | AETH MSN (24 bits). Stored per branch (the last one seen); an upstream ACK / NAK carries the MSN of the branch that supplied its PSN (the minimum), so PSN and MSN stay consistent. |
//! | credits | AETH ACK credit code (5 bits, 31 = invalid/unlimited); upstream: the minimum code over branches (codes grow with the credit count, 31 sorts last), i.e. the most constrained receive queue. |
//! | RNR NAK (not in the draft) | syndrome `001ttttt` with PSN = the refused request: treated like a NAK for the ePSN rule (the branch's acked = PSN - 1) and forwarded with PSN = min ePSN and the RNR timer, once per retry: further branches refusing the same try (the PSN has not passed down again since) are `mc-nak-suppressed`. |
//! | other NAK codes (not in the draft) | invalid request, remote access / operational error: fatal for the responder's QP; forwarded unchanged (PSN and code) so the source sees what a unicast peer would have told it; counted. |
//! | CNP | opcode 0x81, BECN set, DestQP = the QP to slow down; upstream CNP DestQP = the source's QPN, PSN 0, 16 reserved octets. |
//! | "Initial value: 0" of AckPSN (s.8) | `GroupConfig::initial_psn - 1` (the PSN before the first one the source sends; with the default `initial_psn = 1` this is the draft's 0). A branch "that has not acked yet" sits at that value, so no upstream ACK goes out until every branch has acked something. |
//!
//! The upstream packet ([`build_upstream`]) is an ordinary RC response of the
//! source's own connection: IPv6 SA = Proxy Address, DA = source address,
//! UDP dst 4791, BTH DestQP = the source's QPN, PSN = the aggregated PSN,
//! AETH, ICRC. The source's RC stack therefore needs no multicast logic
//! (s.5.3: "rewrite CNP packet headers so that the source processes the CNP
//! as a standard RoCEv2 congestion notification").
//!
//! # Rules as implemented
//!
//! * ACK: an ACK with PSN `p` from branch `b` is accepted when it does not
//!   go back (`p >= acked[b]`, else `mc-stale-psn`), lies within the half
//!   window `[up, up + 2^23)` above the last upstream PSN `up` (else
//!   `mc-psn-out-of-window`; modulo 2^24 a PSN behind `up` cannot be told
//!   from one more than half the space ahead, so both land here) and,
//!   when the group has seen downstream data ([`Group::on_data`]), does not
//!   exceed the highest PSN sent (else `mc-psn-beyond-sent`, the "inflated
//!   AckPSN" attack of s.9). Then `acked[b] = p`, a pending NAK whose ePSN
//!   is `<= p` is cleared, and an upstream ACK with `min(acked)` goes out
//!   only when that minimum advances past the last upstream PSN. The
//!   upstream PSN therefore never moves backwards (mod 2^24), and all branch
//!   states stay within one half window above it, so the modular minimum is
//!   well defined.
//! * NACK (PSN sequence error) with ePSN `e`: accepted when
//!   `e > acked[b]` (else stale) and within the window (`e <= highest
//!   sent + 1`). `acked[b] = e - 1`, `epsn[b] = e`. The upstream NAK carries
//!   `min over branches of effective ePSN`; it is suppressed when that value
//!   is not beyond the last NAK forwarded (one NAK per retransmission point,
//!   like a responder that NAKs a sequence error once). It also
//!   acknowledges `min ePSN - 1` at the source, so the group's upstream PSN
//!   moves there. A branch's NAK whose ePSN did not go up (a smaller one
//!   did, for another branch) is remembered until its PSN passes down
//!   again (the source's go-back-N from the smaller ePSN carries it); if
//!   it has not when an ACK makes it the minimum (its retransmission was
//!   lost too), it goes up then, in place of that ACK. Only where the node
//!   sees the data (`highest sent` known).
//! * CNP: counted per branch (`CCount`) after a per-branch token bucket
//!   (s.9; over-rate CNPs are `mc-cnp-rate-limited`). At the end of every
//!   window `T` ([`Group::poll`], or a CNP arriving after the window end)
//!   one CNP goes upstream for the branch with the highest `CCount`
//!   (lowest index on a tie) if any branch counted one, and all counts
//!   reset. Windows are aligned to the group's start time; a late `poll`
//!   closes the window that contains the counts and starts the window
//!   containing `now`.
//!
//! # Aggregation levels (hop by hop)
//!
//! s.5.3 wants the responses "aggregated hop-by-hop at intermediate
//! nodes" and s.8 per-branch state at "each intermediate node (edge or
//! transit)", proportional to the node's downstream branches. A group at a
//! node has two kinds of branch:
//!
//! * receivers (`GroupConfig::receivers`), keyed by their address as
//!   above: an edge node's branches;
//! * child nodes (`GroupConfig::children`): downstream nodes that hold the
//!   same group and aggregate their own branches.
//!
//! The draft does not say what an intermediate node's aggregated response
//! looks like on the wire (only the node adjacent to the source is told to
//! write the minimum for the source). A node below the top sends it as one
//! of its parent's receivers would: from its own `node_address` to the
//! Proxy Address, DestQP = Designated QPN, the same ACK / NAK / CNP
//! formats. The parent lists that address among its `children` and
//! applies the same rules to it, so the three rules compose: the minimum
//! of minima is the minimum over every receiver, a NAK goes up when the
//! minimum ePSN moves, a CNP at most once per window and level. Only the
//! node adjacent to the source (no `node_address`) writes the response of
//! the source's own connection. A single level (the group only at that
//! node, every receiver a branch, the other nodes forwarding responses as
//! plain IPv6) remains possible. `dataplane/tests/sim_end_mt.rs` runs the
//! s.4.2 reference topology both ways.
//!
//! # In the router
//!
//! [`path`] wires the table into the [`Pipeline`](crate::pipeline::Pipeline):
//! responses to a Proxy Address are aggregated and the upstream response is
//! routed upstream ([`GroupConfig::upstream_dst`]); the group's data PSNs
//! are recorded; the worker polls the CNP windows. Worker 0 owns every group (one writer); the other
//! workers steer the groups' packets to it (`worker.rs`).

mod group;
pub mod path;
pub mod psn;
mod table;
mod upstream;

pub use group::{
    Branch, BranchView, Counter, Counters, Group, GroupConfig, GroupId, GroupView, NakKind, Receiver, Response,
    SetupError, TlvReceivers, Upstream, MAX_BRANCHES, MAX_TLV_RECEIVERS, N_COUNTERS,
};
pub use path::{drop_of, slot, upstream_kind, Slot};
pub use psn::{psn_add, psn_diff, psn_le, psn_lt, psn_max, psn_min, psn_sub, PSN_HALF, PSN_MASK};
pub use table::{GroupTable, Lookup, Verdict};
pub use upstream::{build_upstream, parse_response, upstream_len, ResponseKey};

#[cfg(test)]
mod tests;
