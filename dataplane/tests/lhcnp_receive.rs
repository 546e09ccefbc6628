//! Receiving Long-haul CNPs (draft-tian-ccwg-long-haul-cnp-00 s.6) and the
//! IPsec AH that authenticates ICMPv6-format CNPs (s.9, RFC 4302), from a
//! review (building them was found right against scapy and tshark): each
//! test failed on the code before its fix, for the reason its doc comment
//! gives ("Was").

use std::net::IpAddr;
use std::process::Stdio;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use dataplane::congestion::{build_cnp, CnpFormat, CnpRequest};
use dataplane::wire::ah::{protect_ipv6, verify_ipv6, AhKey, Algorithm};
use dataplane::wire::lhcnp::{
    Action, CnpInfo, Icmpv6LhCnp, Icmpv6LhCnpRepr, MetricType, ICMP_FIXED_LEN,
};
use dataplane::wire::params::Params;

mod oracle_common;
use oracle_common::hex;

const OURS: &str = "2001:db8::2";
const SOURCE: &str = "2001:db8::1";

fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}

/// The section 7 step 4 instruction toward `SOURCE`, ICMPv6 format; with
/// `src_qp` None the router adds its flow-id extension object.
fn icmpv6_cnp(src_qp: Option<u32>) -> ([u8; 512], usize) {
    let r = CnpRequest {
        to: SOURCE.parse().unwrap(),
        flow_dst: "2001:db8::4".parse().unwrap(),
        dest_qp: 200,
        src_qp,
        info: CnpInfo {
            congestion_level: 180,
            action: Action::RateReduce,
            parameter: 30,
            source_qp: src_qp.unwrap_or(0),
            metric_type: MetricType::QueueDepthKb,
            metric_value: 130_000,
        },
        format: CnpFormat::Icmpv6,
        via: 0,
    };
    let mut buf = [0u8; 512];
    let n = build_cnp(&r, OURS.parse::<IpAddr>().unwrap(), &Params::DEFAULT, false, &mut buf).unwrap();
    (buf, n)
}

/// Rule: RFC 4302 s.3.3.3.2.1 (ICV Padding): "The content of the padding
/// field is arbitrarily selected by the sender. (The padding is arbitrary,
/// but need not be random to achieve security.) These padding bytes are
/// included in the ICV calculation, counted as part of the Payload Length,
/// and transmitted at the end of the ICV field"; over IPv6 HMAC-SHA-256-128
/// (RFC 4868) gives 12 + 16 = 28 octets, padded with 4 to 32 (s.2.2).
/// Was: `verify_ipv6` (ah.rs:254) refuses any AH whose padding octets are
/// not zero, and `AhKey::icv` (ah.rs:156-158) hashes the padding as zeros
/// instead of as sent, so an AH-protected CNP from a sender that pads with
/// anything else, with an ICV that scapy's IPsec code (and Linux, which
/// zeroes only the truncated ICV) verifies, is refused with `Checksum`
/// (the reference source then drops it as `Unauthenticated`).
#[test]
fn ah_padding_chosen_by_the_sender_is_covered_as_sent_and_accepted() {
    let alg = Algorithm::HmacSha256_128;
    let secret = [0x5au8; 32];
    let key = AhKey::new(0x1234, alg, &secret).unwrap();
    let (mut buf, n) = icmpv6_cnp(Some(100));
    let m = protect_ipv6(&mut buf, n, &key, 7).unwrap();
    let mut pkt = buf[..m].to_vec();
    assert_eq!(alg.header_len(), 32);
    let icv = 40 + 12..40 + 12 + 16;
    let pad = 40 + 12 + 16..40 + 32;
    // The sender's padding: 0xa5 (arbitrary, s.3.3.3.2.1), covered by the
    // ICV as transmitted; only the 16 ICV octets are zeroed (s.3.3.3.1) and
    // the mutable IPv6 fields (Appendix A.2).
    pkt[pad.clone()].fill(0xa5);
    let mut norm = pkt.clone();
    norm[0] &= 0xf0;
    norm[1..4].fill(0);
    norm[7] = 0;
    norm[icv.clone()].fill(0);
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&secret).unwrap();
    mac.update(&norm);
    let tag = mac.finalize().into_bytes();
    pkt[icv].copy_from_slice(&tag[..16]);

    // Independent oracle: scapy's IPsec code verifies this packet.
    let script = "import sys\n\
from scapy.all import IPv6\n\
from scapy.layers.ipsec import AH, SecurityAssociation\n\
b = bytes.fromhex(sys.argv[1])\n\
sa = SecurityAssociation(AH, spi=0x1234, auth_algo='SHA2-256-128', auth_key=bytes([0x5a])*32)\n\
try:\n    sa.decrypt(IPv6(b)); print('ok')\n\
except Exception as e:\n    print('bad', e)\n";
    let out = oracle_common::python("scapy.layers.ipsec")
        .args(["-c", script, &hex(&pkt)])
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok", "scapy verifies the sender's AH");

    let v = verify_ipv6(&pkt, |s| (s == 0x1234).then_some(&key));
    assert_eq!(v.map(|v| (v.spi, v.seq, v.next_header)), Ok((0x1234, 7, 58)));
}

/// Rule: draft s.6.1.1 takes the extension header from RFC 4884 ("Checksum
/// ... computed as specified in ... [RFC4884]", "to enable reuse of
/// existing ICMP extension parsing implementations"), and RFC 4884 s.7
/// defines that field: "An all-zero value means that no checksum was
/// transmitted." (tshark shows such a structure as "Checksum Status: Not
/// present", not as bad.)
/// Was: `Objects::parse` (lhcnp.rs:577, via `ExtStructure::verify_checksum`,
/// lhcnp.rs:384) verifies the sum whatever the field holds, so a Long-haul
/// CNP whose sender transmitted no extension checksum is refused as a whole
/// with `Checksum`, although its ICMPv6 checksum is good.
#[test]
fn extension_structure_without_checksum_is_accepted() {
    let (mut buf, n) = icmpv6_cnp(None);
    let (s, d) = (v6(OURS), v6(SOURCE));
    let msg = &mut buf[40..n];
    assert!(msg.len() > ICMP_FIXED_LEN, "the flow-id object follows the body");
    let ext = ICMP_FIXED_LEN;
    assert_ne!(&msg[ext + 2..ext + 4], &[0, 0], "a checksum was computed");
    // No checksum transmitted; the ICMPv6 checksum refreshed.
    msg[ext + 2] = 0;
    msg[ext + 3] = 0;
    Icmpv6LhCnp::new_unchecked(&mut msg[..]).fill_checksum(&s, &d);
    let m = Icmpv6LhCnp::new_checked(&buf[40..n]).unwrap();
    assert!(m.verify_checksum(&s, &d));
    let r = Icmpv6LhCnpRepr::parse(&m, &s, &d, &Params::DEFAULT);
    assert_eq!(r.map(|r| (r.info.action, r.info.parameter, r.objects.iter().count())), Ok((Action::RateReduce, 30, 1)));
}
