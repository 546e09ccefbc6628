//! `dcirouter isis --config FILE`: the IS-IS TLVs an external IGP speaker
//! advertises for this node (RFC 9352, draft-hu-acn-rocev2 s.5.1): the
//! SRv6 Capabilities sub-TLV with the C-flag when END.C or END.E is
//! configured ("Before advertising END.E and END.C, PE nodes should first
//! inform other nodes whether they have the corresponding congestion
//! handling capabilities"), and the SRv6 Locator TLV with an End SID
//! sub-TLV for every local SID but End.X (advertised per adjacency): End,
//! End.DT4 and End.DT6 with their RFC 8986 codepoints, End.MT
//! (draft-li s.10, TBD1), END.C and END.E (draft-hu, TBD) with the
//! codepoints of `[params]`. Printed in hex and decoded.

use crate::config::RouterConfig;
use dataplane::wire::isis::{EndSidRepr, Ipv6ReachEntry, Ipv6ReachRepr, LocatorEntryRepr, LocatorSubTlv, LocatorTlvRepr, SidStructure, Srv6CapsRepr};
use std::fmt::Write;

/// RFC 8986 s.10.2 SRv6 Endpoint Behavior codepoints (without flavours).
pub const BEHAVIOR_END: u16 = 1;
pub const BEHAVIOR_END_DT6: u16 = 18;
pub const BEHAVIOR_END_DT4: u16 = 19;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
}

/// The TLVs as (name, bytes, decoded) for this configuration.
pub fn tlvs(cfg: &RouterConfig) -> Result<Vec<(String, Vec<u8>, String)>, String> {
    let s6 = cfg.srv6.as_ref().ok_or("no [srv6] section: nothing to advertise")?;
    let p = &cfg.params;
    let has_c = s6.sids.iter().any(|s| s.behaviour == "end.c" || s.behaviour == "end.e");
    let caps = Srv6CapsRepr::new(false, has_c, p);
    let caps_b = caps.to_bytes().map_err(|e| e.to_string())?;
    let mut out = vec![(
        "SRv6 Capabilities sub-TLV (type 25, in Router Capability TLV 242)".to_string(),
        caps_b,
        format!("flags {:#06x}: O={} C={} (C = congestion handling: END.C / END.E; flag bit {:#06x})", caps.flags, caps.o_flag(), caps.c_flag(p), p.isis_srv6_cap_c_flag),
    )];
    let loc_bits = s6.locator.prefix_len();
    // LB + LN is the locator, the function takes the rest: every bit of
    // a SID lies in one of them (RFC 8986 s.3.1: bits beyond L + F + A
    // must be zero, and the SIDs' function bits are in the low-order end).
    let structure = SidStructure { locator_block_len: loc_bits.min(48), locator_node_len: loc_bits.saturating_sub(48), function_len: 128 - loc_bits, argument_len: 0 };
    let mut subs = Vec::new();
    let mut decoded = String::new();
    for sid in &s6.sids {
        // RFC 9352 s.7.2: an End SID must fall within its locator (and
        // receivers ignore one that does not). The one the configuration
        // lets lie outside is an End.MT SID that is a multicast group,
        // which multicast routing reaches, not the IGP's locator.
        if !s6.locator.contains(&sid.sid) {
            let _ = writeln!(decoded, "  ({} {}: outside the locator, not advertised in it (RFC 9352 s.7.2){})", sid.sid, sid.behaviour.to_uppercase(), if sid.sid.is_multicast() { "; a multicast group, reached by multicast routing" } else { "" });
            continue;
        }
        let r = match sid.behaviour.as_str() {
            "end.c" => EndSidRepr::end_c(sid.sid, Some(structure), p),
            "end.e" => EndSidRepr::end_e(sid.sid, Some(structure), p),
            // draft-li s.10: End.MT's codepoint is TBD1 (`behaviour_end_mt`).
            "end.mt" => EndSidRepr::with_behavior(p.behaviour_end_mt, sid.sid, Some(structure)),
            // RFC 8986 s.10.2 (no flavours).
            "end" => EndSidRepr::with_behavior(BEHAVIOR_END, sid.sid, Some(structure)),
            "end.dt6" => EndSidRepr::with_behavior(BEHAVIOR_END_DT6, sid.sid, Some(structure)),
            "end.dt4" => EndSidRepr::with_behavior(BEHAVIOR_END_DT4, sid.sid, Some(structure)),
            // RFC 9352 s.8: an End.X SID belongs to an adjacency (End.X SID
            // sub-TLV in the IS reachability TLV), which the IGP speaker
            // that formed it advertises.
            _ => {
                let _ = writeln!(decoded, "  ({} {}: advertised with its adjacency, End.X SID sub-TLV 43 of RFC 9352 s.8, not in the locator)", sid.sid, sid.behaviour.to_uppercase());
                continue;
            }
        };
        let _ = writeln!(decoded, "  End SID sub-TLV: {} behaviour {} ({}), SID structure LB {} LN {} F {} A {}", sid.sid, r.behavior, sid.behaviour.to_uppercase(), structure.locator_block_len, structure.locator_node_len, structure.function_len, structure.argument_len);
        subs.push(LocatorSubTlv::EndSid(r));
    }
    // A TLV holds at most 255 octets of value: 9 End SIDs with their
    // structures do not fit in one. The End SIDs are spread over as many
    // Locator TLVs as they need, each with the same locator entry (IS-IS
    // carries several TLVs of one type in an LSP; RFC 9352 s.7.1 lets
    // the End SIDs of a locator go in any of its entries).
    let entry = |sub_tlvs: Vec<LocatorSubTlv>| LocatorTlvRepr {
        mt_id: 0,
        entries: vec![LocatorEntryRepr { metric: 0, flags: 0, algorithm: 0, loc_size: loc_bits, locator: s6.locator.network(), sub_tlvs }],
    };
    let mut parts: Vec<Vec<LocatorSubTlv>> = vec![Vec::new()];
    for sub in subs {
        let last = parts.last_mut().expect("one part at least");
        last.push(sub);
        if entry(last.clone()).buffer_len() > 2 + 255 && last.len() > 1 {
            let sub = last.pop().expect("just pushed");
            parts.push(vec![sub]);
        }
    }
    let mut lines = decoded.lines().filter(|l| l.contains("End SID sub-TLV"));
    let skipped: Vec<&str> = decoded.lines().filter(|l| !l.contains("End SID sub-TLV")).collect();
    let n = parts.len();
    for (i, part) in parts.into_iter().enumerate() {
        let mut d: Vec<&str> = lines.by_ref().take(part.len()).collect();
        if i + 1 == n {
            d.extend(skipped.iter().copied());
        }
        let loc = entry(part);
        let buf = loc.to_bytes().map_err(|e| format!("SRv6 Locator TLV {}: {e}", s6.locator))?;
        let name = if n == 1 { format!("SRv6 Locator TLV (type 27) {}", s6.locator) } else { format!("SRv6 Locator TLV (type 27) {}, part {} of {n}", s6.locator, i + 1) };
        out.push((name, buf, d.join("\n").trim_end().to_string()));
    }
    // RFC 9352 s.7.1: an algorithm-0 locator SHOULD be advertised in a
    // Prefix Reachability TLV as well, so that routers without SRv6
    // install a route to it; same metric as the locator entry.
    let reach = Ipv6ReachRepr { entries: vec![Ipv6ReachEntry { metric: 0, flags: 0, prefix_len: loc_bits, prefix: s6.locator.network(), sub_tlvs: Vec::new() }] };
    let buf = reach.to_bytes().map_err(|e| format!("IPv6 Reachability TLV {}: {e}", s6.locator))?;
    out.push((
        format!("IPv6 Reachability TLV (type 236) {}", s6.locator),
        buf,
        "the locator as a prefix, metric 0, for routers without SRv6 (RFC 9352 s.7.1; RFC 5308 s.2)".to_string(),
    ));
    Ok(out)
}

/// A node with one local SID of every behaviour (End.X included, which
/// is not advertised in the locator): what the tests of this command give
/// it.
pub const EVERY_SID_EXAMPLE: &str = r#"
[[port]]
name = "p"
device = "net_null0"
addresses = ["10.0.0.1/24", "2001:db8::1/64"]
[srv6]
locator = "fc00:0:1::/48"
[[srv6.sid]]
sid = "fc00:0:1::c"
behaviour = "end.c"
interface = "p"
[[srv6.sid]]
sid = "fc00:0:1::e"
behaviour = "end.e"
[[srv6.sid]]
sid = "fc00:0:1::1"
behaviour = "end"
[[srv6.sid]]
sid = "fc00:0:1::a"
behaviour = "end.mt"
[[srv6.sid]]
sid = "fc00:0:1::d6"
behaviour = "end.dt6"
[[srv6.sid]]
sid = "fc00:0:1::d4"
behaviour = "end.dt4"
[[srv6.sid]]
sid = "fc00:0:1::b"
behaviour = "end.x"
interface = "p"
via = "2001:db8::2"
"#;

pub fn print(cfg: &RouterConfig) -> Result<(), String> {
    for (name, b, d) in tlvs(cfg)? {
        println!("{name}\n  hex: {}\n{}{}", hex(&b), if d.starts_with("  ") { "" } else { "  " }, d);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane::wire::isis::{LocatorTlv, Srv6CapsTlv};

    #[test]
    fn local_sids_are_advertised_with_their_codepoints() {
        let cfg = crate::config::load_str(EVERY_SID_EXAMPLE).unwrap();
        let t = tlvs(&cfg).unwrap();
        let caps = Srv6CapsTlv::new_checked(&t[0].1[..]).unwrap();
        assert!(caps.c_flag(&cfg.params));
        let loc = LocatorTlvRepr::parse(&LocatorTlv::new_checked(&t[1].1[..]).unwrap()).unwrap();
        let sids: Vec<(u16, std::net::Ipv6Addr)> = loc.entries[0]
            .sub_tlvs
            .iter()
            .filter_map(|s| match s {
                LocatorSubTlv::EndSid(e) => Some((e.behavior, e.sid)),
                _ => None,
            })
            .collect();
        let a = |x: &str| x.parse::<std::net::Ipv6Addr>().unwrap();
        assert_eq!(
            sids,
            vec![
                (cfg.params.behaviour_end_c, a("fc00:0:1::c")),
                (cfg.params.behaviour_end_e, a("fc00:0:1::e")),
                (1, a("fc00:0:1::1")),
                (cfg.params.behaviour_end_mt, a("fc00:0:1::a")),
                (18, a("fc00:0:1::d6")),
                (19, a("fc00:0:1::d4")),
            ],
            "every local SID but End.X, with its codepoint"
        );
        assert!(t[1].2.contains("END.C") && t[1].2.contains("END.E") && t[1].2.contains("behaviour 65280 (END.MT)"), "{}", t[1].2);
        assert!(t[1].2.contains("fc00:0:1::b END.X: advertised with its adjacency"), "{}", t[1].2);
    }

    /// A TLV's value holds at most 255 octets, and an End SID sub-TLV with
    /// its SID Structure takes 28 of them (16 for the locator entry): 20
    /// End SIDs go in three Locator TLVs of the same locator, every one
    /// within 255 octets and checked by the decoder, together all 20 in
    /// order. Was: one Locator TLV for every SID, so from 9 SIDs on
    /// `dcirouter isis` failed with "bad length" and printed nothing.
    #[test]
    fn many_sids_are_spread_over_several_locator_tlvs() {
        let mut t = String::from("[[port]]\nname = \"p\"\ndevice = \"net_null0\"\naddresses = [\"10.0.0.1/24\"]\n[srv6]\nlocator = \"fc00:0:1::/48\"\n");
        for i in 1..=20 {
            t.push_str(&format!("[[srv6.sid]]\nsid = \"fc00:0:1::{i:x}\"\nbehaviour = \"end\"\n"));
        }
        let cfg = crate::config::load_str(&t).unwrap();
        let out = tlvs(&cfg).unwrap();
        assert_eq!(out.len(), 1 + 3 + 1, "{:?}", out.iter().map(|o| &o.0).collect::<Vec<_>>());
        let mut sids = Vec::new();
        for (i, (name, b, d)) in out[1..4].iter().enumerate() {
            assert!(name.ends_with(&format!("part {} of 3", i + 1)), "{name}");
            assert!(b.len() <= 2 + 255 && usize::from(b[1]) + 2 == b.len(), "{name}: {} octets", b.len());
            let loc = LocatorTlvRepr::parse(&LocatorTlv::new_checked(&b[..]).unwrap()).unwrap();
            assert_eq!((loc.entries.len(), loc.entries[0].locator, loc.entries[0].loc_size), (1, "fc00:0:1::".parse().unwrap(), 48));
            for s in &loc.entries[0].sub_tlvs {
                if let LocatorSubTlv::EndSid(e) = s {
                    sids.push(e.sid);
                    assert!(d.contains(&e.sid.to_string()), "{name}: {d}");
                }
            }
        }
        let want: Vec<std::net::Ipv6Addr> = (1..=20u16).map(|i| std::net::Ipv6Addr::new(0xfc00, 0, 1, 0, 0, 0, 0, i)).collect();
        assert_eq!(sids, want);
    }

    /// The C-flag announces the congestion handling END.E needs as well
    /// (draft s.5.1: "Before advertising END.E and END.C"); a node with
    /// neither does not set it.
    #[test]
    fn c_flag_with_end_e_alone_and_not_without_either() {
        let cfg = |b: &str| crate::config::load_str(&format!("[[port]]\nname = \"p\"\ndevice = \"net_null0\"\naddresses = [\"10.0.0.1/24\"]\n[srv6]\nlocator = \"fc00:0:1::/48\"\n[[srv6.sid]]\nsid = \"fc00:0:1::e\"\nbehaviour = \"{b}\"\n")).unwrap();
        for (b, c) in [("end.e", true), ("end", false)] {
            let cfg = cfg(b);
            let t = tlvs(&cfg).unwrap();
            assert_eq!(Srv6CapsTlv::new_checked(&t[0].1[..]).unwrap().c_flag(&cfg.params), c, "{b}");
        }
    }

    #[test]
    fn srv6_config_errors_name_the_field() {
        let base = "[[port]]\nname = \"p\"\ndevice = \"net_null0\"\n[srv6]\nlocator = \"fc00:0:1::/48\"\n[[srv6.sid]]\n";
        let e = crate::config::load_str(&format!("{base}sid = \"fc00:0:2::1\"\nbehaviour = \"end\"\n")).unwrap_err();
        assert!(e.contains("srv6.sid[0].sid = fc00:0:2::1") && e.contains("outside the locator"), "{e}");
        let e = crate::config::load_str(&format!("{base}sid = \"fc00:0:1::1\"\nbehaviour = \"end.q\"\n")).unwrap_err();
        assert!(e.contains("srv6.sid[0].behaviour") && e.contains("end.q"), "{e}");
    }
}
