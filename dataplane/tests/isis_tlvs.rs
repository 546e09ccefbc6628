//! The IS-IS SRv6 encodings (RFC 9352, draft-hu-acn-rocev2 s.5.1) in
//! `dataplane::wire::isis`, from a review: every test here failed on the
//! code before its fix; each states the rule it checks and what the code
//! did ("Was").
//!
//! The inputs are built octet by octet from the RFC 9352 figures (not by
//! our encoder), so that each test exercises exactly one rule. Where a
//! decoder is checked, tshark (Wireshark's IS-IS dissector, an independent
//! implementation) dissects the same octets first: it shows that the input
//! is well framed and, for the Locator, what a receiver reads. A missing
//! python3 / scapy / tshark is a test failure, never a skip.

use std::net::Ipv6Addr;

use dataplane::wire::isis::{
    EndSidRepr, EndSidSubTlv, EndSidTlv, LocatorEntryRepr, LocatorSubTlv, LocatorTlv,
    LocatorTlvRepr, SidStructure,
};
use dataplane::wire::params::Params;

mod oracle_common;

const P: Params = Params::DEFAULT;

/// tshark's view of one top-level IS-IS TLV: scapy (tests/oracle/
/// scapy_srv6.py isis-lsp) wraps it in an L2 LSP and writes a pcap, tshark
/// dissects it. Returns, per field name, its occurrences (tshark -T fields
/// joins them with ','), plus the expert items ("_ws.expert").
fn tshark_fields(tlv: &[u8], names: &[&str]) -> Vec<Vec<String>> {
    let dir = std::env::temp_dir().join(format!("dcirouter-isis-tlvs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // One file per input (the tests run in parallel).
    let path = dir.join(format!("{}.pcap", oracle_common::hex(tlv)));
    let mut child = oracle_common::python("scapy.contrib.isis")
        .arg(oracle_common::oracle_script("scapy_srv6.py"))
        .args(["isis-lsp", path.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut w = child.stdin.take().unwrap();
        writeln!(w, "{}", oracle_common::hex(tlv)).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && so.starts_with("ok"), "scapy isis-lsp failed: {so}");
    let mut cmd = oracle_common::tshark();
    cmd.arg("-r").arg(&path).args(["-T", "fields", "-E", "separator=|"]);
    for n in names.iter().chain(["_ws.expert"].iter()) {
        cmd.args(["-e", n]);
    }
    let out = cmd.stderr(std::process::Stdio::null()).output().unwrap();
    assert!(out.status.success(), "tshark failed on {}", path.display());
    let _ = std::fs::remove_file(&path);
    let line = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_string();
    line.split('|')
        .map(|f| if f.is_empty() { vec![] } else { f.split(',').map(str::to_owned).collect() })
        .collect()
}

/// tshark finds locator fc00:0:1:: with exactly these End SIDs, and no
/// malformed-packet or expert complaint: the input is well framed.
fn tshark_sees_well_framed_locator(tlv: &[u8], sids: &[&str]) {
    let f = tshark_fields(tlv, &["isis.lsp.srv6_locator.locator", "isis.lsp.srv6_end_sid.sid"]);
    assert_eq!(f[0], vec!["fc00:0:1::".to_string()], "tshark: {f:?}");
    assert_eq!(f[1], sids.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "tshark: {f:?}");
    assert!(f[2].is_empty(), "tshark complains about the test input: {f:?}");
}

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// SRv6 End SID sub-TLV (RFC 9352 s.7.2), type 5: Flags, Endpoint
/// Behavior, SID, Sub-sub-TLV-len, then the given SID Structure
/// sub-sub-TLVs (RFC 9352 s.9: type 1, length 4, LB / LN / Fun / Arg).
fn end_sid(behavior: u16, sid: Ipv6Addr, structures: &[[u8; 4]]) -> Vec<u8> {
    let mut subsub = Vec::new();
    for s in structures {
        subsub.extend([1, 4]);
        subsub.extend(s);
    }
    let mut v = vec![5, 0, 0];
    v.extend(behavior.to_be_bytes());
    v.extend(sid.octets());
    v.push(subsub.len() as u8);
    v.extend(subsub);
    v[1] = (v.len() - 2) as u8;
    v
}

/// SRv6 Locator TLV (RFC 9352 s.7.1), type 27, MT ID 0, one locator entry
/// (metric 10, flags 0, algorithm 0) whose Locator field is `loc` as given
/// (ceil(loc_size / 8) octets) and whose sub-TLVs are `subs`.
fn locator_tlv(loc_size: u8, loc: &[u8], subs: &[Vec<u8>]) -> Vec<u8> {
    assert_eq!(loc.len(), usize::from(loc_size).div_ceil(8), "test input");
    let sub: Vec<u8> = subs.concat();
    let mut v = vec![27, 0, 0, 0];
    v.extend(10u32.to_be_bytes());
    v.extend([0, 0, loc_size]);
    v.extend(loc);
    v.push(sub.len() as u8);
    v.extend(sub);
    v[1] = (v.len() - 2) as u8;
    v
}

const GOOD_STRUCTURE: [u8; 4] = [32, 16, 16, 0];

/// Rule: RFC 9352 s.9: "The SRv6 SID Structure Sub-Sub-TLV MUST NOT appear
/// more than once in its parent sub-TLV. If it appears more than once in
/// its parent sub-TLV, the parent sub-TLV MUST be ignored by the receiver."
/// Was: `EndSidTlv::check_len` (dataplane/src/wire/isis.rs, End SID
/// check_len) only checks each SID Structure's length and sum, so an End
/// SID with two SID Structures is accepted (`sid_structure()` silently
/// returns the first) and `LocatorEntry::end_sids()` yields it.
#[test]
fn end_sid_with_two_sid_structures_is_ignored() {
    let dup = end_sid(P.behaviour_end_c, a("fc00:0:1::c"), &[GOOD_STRUCTURE, [40, 8, 16, 0]]);
    let good = end_sid(P.behaviour_end_e, a("fc00:0:1::e"), &[GOOD_STRUCTURE]);
    let tlv = locator_tlv(48, &[0xfc, 0, 0, 0, 0, 1], &[dup.clone(), good]);
    tshark_sees_well_framed_locator(&tlv, &["fc00:0:1::c", "fc00:0:1::e"]);
    assert!(
        EndSidTlv::new_checked(&dup[..]).is_err(),
        "an End SID sub-TLV with two SID Structure sub-sub-TLVs was accepted: {dup:02x?}"
    );
    // In a locator, the End SID is ignored and the other one kept.
    let t = LocatorTlv::new_checked(&tlv[..]).expect("the locator itself is well formed");
    let e = t.entries().next().expect("one locator entry");
    let sids: Vec<(u16, Ipv6Addr)> = e.end_sids().map(|s| (s.behavior(), s.sid())).collect();
    assert_eq!(
        sids,
        vec![(P.behaviour_end_e, a("fc00:0:1::e"))],
        "the End SID with two SID Structures must be ignored"
    );
}

/// Rule: RFC 9352 s.9: the SRv6 SID Structure Sub-Sub-TLV "MUST NOT appear
/// more than once in its parent sub-TLV" (a sender-side MUST).
/// Was: `EndSidRepr::emit` emits every `EndSidSubTlv::Structure` of the
/// Repr, so a Repr with two SID Structures produces an End SID sub-TLV that
/// receivers must ignore (it refuses the other malformed cases: a structure
/// over 128 bits, an `Other` of type 1).
#[test]
fn end_sid_emit_refuses_two_sid_structures() {
    let s = SidStructure {
        locator_block_len: 32,
        locator_node_len: 16,
        function_len: 16,
        argument_len: 0,
    };
    let mut r = EndSidRepr::end_c(a("fc00:0:1::c"), Some(s), &P);
    r.sub_tlvs.push(EndSidSubTlv::Structure(s));
    let out = r.to_bytes();
    assert!(
        out.is_err(),
        "emitted an End SID sub-TLV with two SID Structure sub-sub-TLVs: {out:02x?}"
    );
}

/// Rule: RFC 9352 s.9: "If the sum of all four sizes advertised in the
/// SRv6 SID Structure Sub-Sub-TLV is larger than 128 bits, the parent
/// sub-TLV MUST be ignored by the receiver" -- the parent is the End SID
/// sub-TLV, not the Locator TLV (whose only whole-TLV discard rule is a
/// Loc-Size outside 1..=128, s.7.1).
/// Was: `LocatorTlv::check_len` calls `EndSidTlv::new_checked` on every
/// End SID and propagates its error, so one End SID whose SID Structure
/// sums to 132 bits makes the whole Locator TLV `Malformed`: the locator
/// and its valid End SIDs (here END.E) are lost with it.
#[test]
fn oversized_sid_structure_discards_only_its_end_sid() {
    let bad = end_sid(P.behaviour_end_c, a("fc00:0:1::c"), &[[100, 16, 16, 0]]);
    // The End SID on its own is invalid ...
    assert!(EndSidTlv::new_checked(&bad[..]).is_err());
    let good = end_sid(P.behaviour_end_e, a("fc00:0:1::e"), &[GOOD_STRUCTURE]);
    let tlv = locator_tlv(48, &[0xfc, 0, 0, 0, 0, 1], &[bad, good]);
    tshark_sees_well_framed_locator(&tlv, &["fc00:0:1::c", "fc00:0:1::e"]);
    // ... but the Locator TLV carrying it is not.
    let t = match LocatorTlv::new_checked(&tlv[..]) {
        Ok(t) => t,
        Err(e) => panic!("the whole Locator TLV was rejected ({e:?}) for one End SID's SID Structure: {tlv:02x?}"),
    };
    let e = t.entries().next().expect("one locator entry");
    assert_eq!(e.locator(), a("fc00:0:1::"));
    let sids: Vec<(u16, Ipv6Addr)> = e.end_sids().map(|s| (s.behavior(), s.sid())).collect();
    assert_eq!(sids, vec![(P.behaviour_end_e, a("fc00:0:1::e"))]);
}

/// Rule: RFC 9352 s.7.1, Locator: "The Locator is encoded in the minimal
/// number of octets for the given number of bits. Trailing bits MUST be set
/// to zero and ignored when received."
/// Was: `LocatorEntryRepr::emit` copies the first ceil(Loc-Size / 8) octets
/// of `locator` unmasked, so for a Loc-Size that is not a multiple of 8 the
/// bits past Loc-Size in the last octet go out as they are (0xff here,
/// where 0xf0 is due).
#[test]
fn locator_emit_zeroes_trailing_bits() {
    let r = LocatorTlvRepr {
        mt_id: 0,
        entries: vec![LocatorEntryRepr {
            metric: 10,
            flags: 0,
            algorithm: 0,
            loc_size: 36,
            locator: a("fc00:0:ffff::"),
            sub_tlvs: vec![],
        }],
    };
    let b = r.to_bytes().unwrap();
    // Type, Length, MT ID (2), Metric (4), Flags, Algorithm, Loc-Size, then
    // 5 octets of locator at offset 11.
    assert_eq!(b[10], 36);
    assert_eq!(
        &b[11..16],
        &[0xfc, 0x00, 0x00, 0x00, 0xf0],
        "bits 36..40 of the Locator must be zero on the wire: {b:02x?}"
    );
}

/// Rule: RFC 9352 s.7.1, Locator: "Trailing bits MUST be set to zero and
/// ignored when received."
/// Was: `LocatorEntry::locator()` (and so `LocatorEntryRepr::parse`) returns
/// the last octet as received, trailing bits included: Loc-Size 36 with
/// Locator octets fc 00 00 00 ff reads as fc00:0:ff00:: instead of the 36
/// bits fc00:0:f000:: (which is what tshark reads).
#[test]
fn locator_decode_ignores_trailing_bits() {
    let tlv = locator_tlv(36, &[0xfc, 0, 0, 0, 0xff], &[]);
    // Oracle: Wireshark's dissector masks the bits past Loc-Size.
    let f = tshark_fields(&tlv, &["isis.lsp.srv6_locator.locator_size", "isis.lsp.srv6_locator.locator"]);
    assert_eq!(f[0], vec!["36".to_string()], "tshark: {f:?}");
    assert!(f[2].is_empty(), "tshark complains about the test input: {f:?}");
    let oracle: Ipv6Addr = f[1][0].parse().unwrap();
    assert_eq!(oracle, a("fc00:0:f000::"), "tshark: {f:?}");
    let t = LocatorTlv::new_checked(&tlv[..]).unwrap();
    let e = t.entries().next().expect("one locator entry");
    assert_eq!(e.loc_size(), 36);
    assert_eq!(e.locator(), oracle, "trailing bits past Loc-Size must be ignored (tshark reads {oracle})");
    let r = LocatorTlvRepr::parse(&t).unwrap();
    assert_eq!(r.entries[0].locator, a("fc00:0:f000::"));
}

/// Rule: RFC 9352 s.7.2: "The SRv6 End SID MUST be a subnet of the
/// associated Locator. SRv6 End SIDs that are NOT a subnet of the
/// associated Locator MUST be ignored."
/// Was: `LocatorEntry::end_sids()` yields every well-formed End SID
/// sub-TLV of the entry whatever its SID, so an END.C SID fc00:0:2::c
/// advertised under locator fc00:0:1::/48 is handed to the receiver as one
/// of that locator's SIDs.
#[test]
fn end_sid_outside_its_locator_is_ignored() {
    let outside = end_sid(P.behaviour_end_c, a("fc00:0:2::c"), &[GOOD_STRUCTURE]);
    let inside = end_sid(P.behaviour_end_e, a("fc00:0:1::e"), &[GOOD_STRUCTURE]);
    let tlv = locator_tlv(48, &[0xfc, 0, 0, 0, 0, 1], &[outside, inside]);
    tshark_sees_well_framed_locator(&tlv, &["fc00:0:2::c", "fc00:0:1::e"]);
    let t = LocatorTlv::new_checked(&tlv[..]).expect("the locator itself is well formed");
    let e = t.entries().next().expect("one locator entry");
    let sids: Vec<Ipv6Addr> = e.end_sids().map(|s| s.sid()).collect();
    assert_eq!(sids, vec![a("fc00:0:1::e")], "an End SID outside fc00:0:1::/48 must be ignored");
}

/// Rule: RFC 9352 s.7.2: "The SRv6 End SID MUST be a subnet of the
/// associated Locator" (sender side).
/// Was: `LocatorEntryRepr::emit` / `LocatorTlvRepr::to_bytes` emit an End
/// SID sub-TLV whatever its SID, so a SID outside the entry's locator is
/// advertised (only `dcirouter isis` checks, the encoder does not).
#[test]
fn locator_emit_refuses_end_sid_outside_the_locator() {
    let r = LocatorTlvRepr {
        mt_id: 0,
        entries: vec![LocatorEntryRepr {
            metric: 10,
            flags: 0,
            algorithm: 0,
            loc_size: 48,
            locator: a("fc00:0:1::"),
            sub_tlvs: vec![LocatorSubTlv::EndSid(EndSidRepr::end_c(a("fc00:0:2::c"), None, &P))],
        }],
    };
    let out = r.to_bytes();
    assert!(
        out.is_err(),
        "emitted End SID fc00:0:2::c under locator fc00:0:1::/48: {out:02x?}"
    );
}
