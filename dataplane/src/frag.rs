//! IPv4 fragmentation: a router forwards an IPv4 packet that is larger
//! than the egress MTU and does not have DF set as fragments (RFC 791
//! s.3.2, RFC 1812 s.5.2.6 / s.4.2.2.7). RoCEv2 always sets DF, so this is
//! for the rest of the traffic a DCI router carries.
//!
//! The same happens at H.Encaps: an IPv4 packet without DF over the tunnel
//! MTU (the egress MTU less the outer headers) is fragmented before it is
//! encapsulated, each fragment in its own outer packet ("fragmentation of
//! the inner packet", RFC 4459 s.3.4). The tunnel's egress then forwards
//! ordinary IPv4 fragments, with no reassembly.
//!
//! How: the forwarding code that finds the packet too big records a
//! [`FragJob`] and answers [`Verdict::Replicate`]`(n)`, the verdict that
//! already turns one received packet into `n` new ones (End.MT). The worker
//! calls [`Pipeline::build_replica`] for each; for a fragmentation job that
//! writes fragment `i` into the fresh buffer as a frame just like the one
//! received (same L2 header), and then forwards it through the same
//! `ipv4` path as any packet, where it now fits: TTL, SRv6 policy and
//! encapsulation, neighbour, L2 rewrite all happen exactly once, in one
//! place. The original is freed afterwards.
//!
//! The router's own replies are fragmented the same way when they do not
//! fit the egress MTU (an echo reply to a reassembled request, see
//! [`crate::reasm`]): IPv4 as above with DF cleared, IPv6 with a Fragment
//! header after the IPv6 header (RFC 8200 s.4.5, the router being the
//! source). These fragments are sent as built, on the port the reply was
//! routed to.
//!
//! The fragments keep the Identification, the protocol and the addresses;
//! their offsets continue the original's (a fragment can be fragmented
//! again, the last one keeping the original's MF); every fragment but the
//! last carries a multiple of 8 payload octets. The first fragment keeps
//! all the options, the others only those with the copied flag (RFC 791
//! s.3.1). At most [`MAX_FRAGMENTS`] per packet: a packet that would need
//! more is dropped as `too-many-fragments`.

use crate::counters::{Drop, Local};
use crate::packet::PacketBuffer;
use crate::pipeline::{Pipeline, Verdict, L2};
use crate::wire::ipv4::{IpProtocol, Ipv4Packet};
use crate::wire::ipv6::{Ipv6FragmentHeader, Ipv6FragmentRepr, Ipv6Packet, FRAGMENT_HEADER_LEN};

/// The most fragments one packet is cut into. A 9000-octet jumbo frame
/// onto a 576-octet link needs 16; this bound keeps one packet from
/// emptying the mbuf pool.
pub const MAX_FRAGMENTS: usize = 64;

/// The fragmentation recorded for [`Pipeline::build_replica`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct FragJob {
    /// Number of fragments; 0 when the last packet was not fragmented.
    pub(crate) n: usize,
    /// The original frame's layers (its L2 header is reused).
    l2: L2,
    /// Header length of the first fragment (the original's) and of the
    /// others (only the copied options, padded).
    hl: usize,
    rest_hl: usize,
    /// Total length of the original.
    total: usize,
    /// Payload octets per fragment (a multiple of 8); the last takes the rest.
    chunk: usize,
    /// The options the later fragments carry, padded with End of Option
    /// List to a multiple of 4 octets (`rest_hl - 20` of them).
    copied: [u8; 40],
    /// IPv6 (the router's own datagram, fragmented with a Fragment header
    /// carrying `ident6`).
    v6: bool,
    ident6: u32,
    /// The router's own reply, already routed: send the fragments on this
    /// port as built.
    out: Option<u16>,
    /// The datagram is in this reassembly slot's buffer, not in the
    /// received packet.
    src_slot: Option<usize>,
    /// An SRv6 tunnel packet the headend fragments (not a reply).
    tunnel: bool,
}

impl Default for FragJob {
    fn default() -> Self {
        FragJob { n: 0, l2: L2::default(), hl: 20, rest_hl: 20, total: 0, chunk: 8, copied: [0; 40], v6: false, ident6: 0, out: None, src_slot: None, tunnel: false }
    }
}

/// The options of an IPv4 header that every fragment carries (copied flag
/// set, RFC 791 s.3.1), in order, and their length before padding. None
/// when the options are malformed.
fn copied_options(opts: &[u8]) -> Option<([u8; 40], usize)> {
    let mut out = [0u8; 40];
    let (mut i, mut n) = (0, 0);
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            t => {
                let len = usize::from(*opts.get(i + 1)?);
                if len < 2 || i + len > opts.len() {
                    return None;
                }
                if t & 0x80 != 0 {
                    out[n..n + len].copy_from_slice(&opts[i..i + len]);
                    n += len;
                }
                i += len;
            }
        }
    }
    Some((out, n))
}

impl Pipeline {
    /// The IPv4 packet at `l2.l3` of `frame` (`total` octets, DF clear)
    /// does not fit `mtu`: record its fragmentation and ask for the
    /// fragments.
    pub(crate) fn fragment4(&mut self, frame: &[u8], l2: L2, total: usize, mtu: usize) -> Result<Verdict, Drop> {
        let ip = Ipv4Packet::new_unchecked(frame.get(l2.l3..l2.l3 + total).ok_or(Drop::MalformedIpv4)?);
        let hl = ip.header_len();
        let (copied, n_copied) = copied_options(ip.options()).ok_or(Drop::Ipv4Options)?;
        let rest_hl = 20 + n_copied.div_ceil(4) * 4;
        if mtu < hl + 8 {
            return Err(Drop::MtuExceeded);
        }
        let chunk = (mtu - hl) & !7;
        let n = (total - hl).div_ceil(chunk);
        // The fragments' offsets must stay within the 13-bit field.
        if usize::from(ip.frag_offset()) + (total - hl) > 0xffff {
            return Err(Drop::MalformedIpv4);
        }
        if n > MAX_FRAGMENTS {
            return Err(Drop::TooManyFragments);
        }
        self.frag = FragJob { n, l2, hl, rest_hl, total, chunk, copied, ..Default::default() };
        self.counters.local(Local::Fragmented4);
        Ok(Verdict::Replicate(n as u16))
    }

    /// A reply the router built (`frame`, routed to `port`, its IP header
    /// at `l3`) is larger than the egress `mtu`: send it as fragments.
    /// `src_slot`: the frame is that reassembly slot's buffer.
    pub(crate) fn fragment_local(&mut self, frame: &[u8], l3: usize, port: u16, mtu: usize, src_slot: Option<usize>) -> Result<Verdict, Drop> {
        let ip = frame.get(l3..).ok_or(Drop::ReplicaInvalid)?;
        let l2 = L2 { l3, ..Default::default() };
        if ip.first().is_some_and(|v| v >> 4 == 6) {
            let v = self.fragment6(ip, l3, 40, port, mtu, src_slot, false)?;
            self.counters.local(Local::RepliesFragmented);
            return Ok(v);
        }
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let v = self.fragment4(frame, l2, total, mtu)?;
        self.frag.out = Some(port);
        self.frag.src_slot = src_slot;
        self.counters.local(Local::RepliesFragmented);
        Ok(v)
    }

    /// An SRv6 tunnel packet the headend built (`frame`, routed to `port`,
    /// its outer IPv6 header at `l3`, `hl` octets of unfragmentable part:
    /// the outer header and its SRH) that the egress `mtu` cannot carry:
    /// its tunnel MTU is below the IPv6 minimum of 1280 and the inner
    /// packet is not over 1280, so the tunnel packet is fragmented (RFC
    /// 2473 s.7.1 (b)), the Fragment header after the SRH (RFC 8200 s.4.5;
    /// the tunnel's exit reassembles).
    pub(crate) fn fragment_tunnel6(&mut self, frame: &[u8], l3: usize, hl: usize, port: u16, mtu: usize) -> Result<Verdict, Drop> {
        let ip = frame.get(l3..).ok_or(Drop::ReplicaInvalid)?;
        let v = self.fragment6(ip, l3, hl, port, mtu, None, true)?;
        self.counters.local(Local::Srv6EncapFragmented);
        Ok(v)
    }

    /// Record the IPv6 fragmentation of `ip` (at `l3` in its frame, `hl`
    /// octets of unfragmentable part) for `port` and `mtu`.
    #[allow(clippy::too_many_arguments)]
    fn fragment6(&mut self, ip: &[u8], l3: usize, hl: usize, port: u16, mtu: usize, src_slot: Option<usize>, tunnel: bool) -> Result<Verdict, Drop> {
        let total = 40 + usize::from(u16::from_be_bytes([*ip.get(4).ok_or(Drop::ReplicaInvalid)?, *ip.get(5).ok_or(Drop::ReplicaInvalid)?]));
        if mtu < hl + FRAGMENT_HEADER_LEN + 8 || total > ip.len() || hl < 40 || hl > total {
            return Err(Drop::MtuExceeded);
        }
        let chunk = (mtu - hl - FRAGMENT_HEADER_LEN) & !7;
        let n = (total - hl).div_ceil(chunk);
        if n > MAX_FRAGMENTS {
            return Err(Drop::TooManyFragments);
        }
        self.frag_ident = self.frag_ident.wrapping_add(1);
        let l2 = L2 { l3, ..Default::default() };
        self.frag = FragJob { n, l2, hl, rest_hl: hl, total, chunk, v6: true, ident6: self.frag_ident, out: Some(port), src_slot, tunnel, ..Default::default() };
        Ok(Verdict::Replicate(n as u16))
    }

    /// Write fragment `i` of the recorded job into `copy` (fresh, empty)
    /// from the `original` frame and forward it. Returns the egress port.
    pub(crate) fn build_fragment<Q: PacketBuffer>(&mut self, i: usize, original: &[u8], copy: &mut Q, now_ns: u64) -> Result<u16, Drop> {
        let job = self.frag;
        if i >= job.n {
            return Err(Drop::ReplicaInvalid);
        }
        let l3 = job.l2.l3;
        let src = match job.src_slot {
            Some(s) => self.reasm.data(s),
            None => original,
        };
        let orig = src.get(..l3 + job.total).ok_or(Drop::ReplicaInvalid)?;
        let payload = &orig[l3 + job.hl..];
        let at = i * job.chunk;
        let len = job.chunk.min(payload.len() - at);
        if job.v6 {
            // The unfragmentable part: the IPv6 header, and a tunnel
            // packet's SRH (whose Next Header then names the Fragment
            // header).
            let hl = job.hl;
            if !copy.set_len(l3 + hl + FRAGMENT_HEADER_LEN + len) {
                return Err(Drop::NoHeadroom);
            }
            let d = copy.data_mut();
            d[..l3 + hl].copy_from_slice(&orig[..l3 + hl]);
            let nh_at = if hl > 40 { l3 + 40 } else { l3 + 6 };
            let next_header = IpProtocol(d[nh_at]);
            d[nh_at] = IpProtocol::IPV6_FRAG.0;
            Ipv6Packet::new_unchecked(&mut d[l3..]).set_payload_len((hl - 40 + FRAGMENT_HEADER_LEN + len) as u16);
            // The Fragment header (RFC 8200 s.4.5).
            let f = Ipv6FragmentRepr { next_header, frag_offset: at as u16, more_frags: i + 1 < job.n, ident: job.ident6 };
            f.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut d[l3 + hl..l3 + hl + FRAGMENT_HEADER_LEN]));
            d[l3 + hl + FRAGMENT_HEADER_LEN..].copy_from_slice(&payload[at..at + len]);
            self.counters.local(Local::Fragment6);
            if !job.tunnel {
                self.counters.local(Local::ReplyFragments);
            }
            return job.out.ok_or(Drop::ReplicaInvalid);
        }
        let hl = if i == 0 { job.hl } else { job.rest_hl };
        if !copy.set_len(l3 + hl + len) {
            return Err(Drop::NoHeadroom);
        }
        let (mf, offset) = {
            let ip = Ipv4Packet::new_unchecked(&orig[l3..]);
            (ip.more_frags(), ip.frag_offset())
        };
        {
            let d = copy.data_mut();
            d[..l3 + 20].copy_from_slice(&orig[..l3 + 20]);
            if i == 0 {
                d[l3 + 20..l3 + hl].copy_from_slice(&orig[l3 + 20..l3 + hl]);
            } else {
                d[l3 + 20..l3 + hl].copy_from_slice(&job.copied[..hl - 20]);
            }
            d[l3 + hl..].copy_from_slice(&payload[at..at + len]);
            let mut ip = Ipv4Packet::new_unchecked(&mut d[l3..]);
            ip.set_header_len(hl);
            ip.set_total_len((hl + len) as u16);
            ip.set_more_frags(mf || i + 1 < job.n);
            // In octets here; `at` is a multiple of 8.
            ip.set_frag_offset(offset + at as u16);
            if job.out.is_some() {
                ip.set_dont_frag(false);
            }
            ip.fill_checksum();
        }
        if let Some(port) = job.out {
            self.counters.local(Local::Fragment4);
            self.counters.local(Local::ReplyFragments);
            return Ok(port);
        }
        // Forward it like any received packet; it fits the MTU now.
        match self.ipv4(copy, job.l2, now_ns.max(1))? {
            Verdict::Tx(port) => {
                self.counters.local(Local::Fragment4);
                Ok(port)
            }
            _ => Err(Drop::ReplicaInvalid),
        }
    }
}

/// The IPv6 fragments a tunnel headend sends for `frame` (Ethernet, then
/// an outer IPv6 header without extension headers): a Fragment header
/// with Identification `ident` after the outer header, `chunk` octets
/// (rounded down to a multiple of 8, at least 8) of the tunnel packet's
/// payload each (RFC 2473 s.7.1, RFC 8200 s.4.5). For demos and tests of a
/// tunnel exit; empty when `frame` is shorter than its headers.
pub fn tunnel_fragments(frame: &[u8], chunk: usize, ident: u32) -> Vec<Vec<u8>> {
    let Some(payload) = frame.get(14 + 40..) else { return Vec::new() };
    let chunk = chunk.max(8) & !7;
    let n = payload.len().div_ceil(chunk);
    payload
        .chunks(chunk)
        .enumerate()
        .map(|(i, part)| {
            let mut f = frame[..14 + 40].to_vec();
            f[14 + 6] = IpProtocol::IPV6_FRAG.0;
            f[14 + 4..14 + 6].copy_from_slice(&((FRAGMENT_HEADER_LEN + part.len()) as u16).to_be_bytes());
            f.extend_from_slice(&[frame[14 + 6], 0]);
            f.extend_from_slice(&(((i * chunk) as u16) | u16::from(i + 1 < n)).to_be_bytes());
            f.extend_from_slice(&ident.to_be_bytes());
            f.extend_from_slice(part);
            f
        })
        .collect()
}
