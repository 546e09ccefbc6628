//! Independent oracles for the SRH, FANN and IS-IS SRv6 wire code: scapy
//! (tests/oracle/scapy_srv6.py) builds and dissects, python's hmac module
//! computes RFC 8754 HMACs, tshark (tests/oracle/tshark_srv6.py) dissects
//! pcaps of our output.
//!
//! A missing python3 / scapy / tshark is a test FAILURE naming what to
//! install, never a silent skip.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::Ipv6Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use dataplane::wire::checksum;
use dataplane::wire::fann::{self, FlowId, Message, MessageRepr, Metadata, PacketRepr};
use dataplane::wire::isis::{
    EndSidRepr, LocatorEntryRepr, LocatorSubTlv, LocatorTlvRepr, SidStructure, Srv6CapsRepr,
};
use dataplane::wire::params::Params;
use dataplane::wire::srh::{
    EndMtReceiver, EndMtRepr, HmacKey, HmacKeyTable, HmacTlvRepr, Srh, SrhRepr, Tlv, TlvRepr,
};

const P: Params = Params::DEFAULT;

mod oracle_common;
use oracle_common::{hex, unhex};

fn oracle_dir() -> PathBuf {
    oracle_common::oracle_script("")
}

/// Run an oracle script; panic with install instructions if a tool is
/// missing.
fn run_py(script: &str, args: &[&str], stdin: &str) -> String {
    let path = oracle_dir().join(script);
    let child = Command::new("python3")
        .arg(&path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => panic!(
            "cannot run python3 ({e}): install python3 (apt-get install python3) and scapy \
             (pip install 'scapy>=2.6'); tshark too (apt-get install tshark)"
        ),
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        Some(0) => stdout,
        Some(3) => panic!(
            "oracle tool missing: {stdout}{stderr}\ninstall: pip install 'scapy>=2.6'; apt-get install tshark"
        ),
        _ => panic!("{script} {args:?} failed ({:?}):\n{stdout}\n{stderr}", out.status),
    }
}

/// One `key value...` line of an oracle block.
type Line = (String, Vec<String>);

/// Split oracle output into blocks, each opened by a line whose key is
/// `opener` and closed by `end`.
fn blocks(out: &str, opener: &str) -> Vec<Vec<Line>> {
    let mut v = Vec::new();
    let mut cur: Option<Vec<Line>> = None;
    for l in out.lines() {
        let mut it = l.split_whitespace().map(str::to_owned);
        let Some(k) = it.next() else { continue };
        let rest: Vec<String> = it.collect();
        if k == opener {
            cur = Some(vec![(k, rest)]);
        } else if k == "end" {
            v.extend(cur.take());
        } else if let Some(c) = cur.as_mut() {
            c.push((k, rest));
        }
    }
    v
}

fn get<'a>(b: &'a [Line], k: &str) -> Option<&'a [String]> {
    b.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_slice())
}

fn one(b: &[Line], k: &str) -> String {
    get(b, k).unwrap_or_else(|| panic!("no {k} in {b:?}"))[0].clone()
}

fn all<'a>(b: &'a [Line], k: &str) -> Vec<&'a [String]> {
    b.iter()
        .filter(|(kk, _)| kk == k)
        .map(|(_, v)| v.as_slice())
        .collect()
}


fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn ipv6_header(nh: u8, plen: usize, src: &Ipv6Addr, dst: &Ipv6Addr) -> Vec<u8> {
    let mut v = vec![0x60, 0, 0, 0];
    v.extend((plen as u16).to_be_bytes());
    v.push(nh);
    v.push(64);
    v.extend(src.octets());
    v.extend(dst.octets());
    v
}

fn udp(src: &Ipv6Addr, dst: &Ipv6Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut u = Vec::new();
    u.extend(sport.to_be_bytes());
    u.extend(dport.to_be_bytes());
    u.extend((len as u16).to_be_bytes());
    u.extend([0, 0]);
    u.extend(payload);
    let ph = checksum::pseudo_v6(&src.octets(), &dst.octets(), 17, len as u32);
    let mut c = !checksum::fold(checksum::combine(ph, checksum::sum(&u)));
    if c == 0 {
        c = 0xffff;
    }
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

fn ether(ipv6: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x86, 0xdd];
    f.extend(ipv6);
    f
}

fn write_pcap(name: &str, frames: &[Vec<u8>]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dcirouter-oracle-srv6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let f = std::fs::File::create(&path).unwrap();
    let mut w = pcap_file::pcap::PcapWriter::new(f).unwrap();
    for (i, fr) in frames.iter().enumerate() {
        let pkt =
            pcap_file::pcap::PcapPacket::new(Duration::from_millis(i as u64), fr.len() as u32, fr);
        w.write_packet(&pkt).unwrap();
    }
    path
}

fn tshark(path: &std::path::Path) -> Vec<Vec<Line>> {
    let out = run_py("tshark_srv6.py", &[path.to_str().unwrap()], "");
    blocks(&out, "frame")
}

fn fields<'a>(b: &'a [Line], name: &str) -> Vec<&'a str> {
    all(b, "field")
        .into_iter()
        .filter(|v| v[0] == name)
        .map(|v| v[1].as_str())
        .collect()
}

fn assert_clean(frame: &[Line]) {
    let bad = all(frame, "bad");
    assert!(bad.is_empty(), "tshark complaints {bad:?} in {frame:?}");
}

// ---------------------------------------------------------------------------
// SRH
// ---------------------------------------------------------------------------

/// Our view of an SRH's TLVs as `(type, len, value hex)` lines like the
/// oracle's `tlv` lines.
fn our_tlv_lines(srh: &Srh<&[u8]>) -> Vec<(u8, String, String)> {
    srh.raw_tlvs()
        .map(|t| {
            if t.tlv_type == 0 {
                (0, "-".into(), "-".into())
            } else if t.tlv_type == 5 {
                (5, t.value.len().to_string(), "-".into())
            } else {
                let v = if t.value.is_empty() {
                    "-".into()
                } else {
                    hex(t.value)
                };
                (t.tlv_type, t.value.len().to_string(), v)
            }
        })
        .collect()
}

/// Compare a checked SRH with the fields scapy printed for it.
fn compare_srh(srh: &Srh<&[u8]>, b: &[Line]) {
    let ctx = format!("{:?}", get(b, "case"));
    assert_eq!(srh.next_header().to_string(), one(b, "nh"), "{ctx}");
    assert_eq!(srh.hdr_ext_len().to_string(), one(b, "len"), "{ctx}");
    assert_eq!(srh.routing_type().to_string(), one(b, "type"), "{ctx}");
    assert_eq!(srh.segments_left().to_string(), one(b, "segleft"), "{ctx}");
    assert_eq!(srh.last_entry().to_string(), one(b, "lastentry"), "{ctx}");
    assert_eq!(srh.flags().to_string(), one(b, "flags"), "{ctx}");
    assert_eq!(srh.tag().to_string(), one(b, "tag"), "{ctx}");
    let ours: Vec<Ipv6Addr> = srh.segments().collect();
    let theirs: Vec<Ipv6Addr> = all(b, "addr").iter().map(|v| a(&v[0])).collect();
    assert_eq!(ours, theirs, "{ctx}");
    let theirs_tlv: Vec<(u8, String, String)> = all(b, "tlv")
        .iter()
        .map(|v| (v[0].parse().unwrap(), v[1].clone(), v[2].clone()))
        .collect();
    assert_eq!(our_tlv_lines(srh), theirs_tlv, "{ctx}");
    let ours_hmac: Vec<(String, String, String)> = srh
        .tlvs(P.srh_tlv_end_mt)
        .filter_map(|t| match t.unwrap() {
            Tlv::Hmac(h) => Some((
                u8::from(h.d_flag()).to_string(),
                h.key_id().to_string(),
                if h.hmac().is_empty() {
                    "-".into()
                } else {
                    hex(h.hmac())
                },
            )),
            _ => None,
        })
        .collect();
    let theirs_hmac: Vec<(String, String, String)> = all(b, "hmac")
        .iter()
        .map(|v| (v[0].clone(), v[1].clone(), v[2].clone()))
        .collect();
    assert_eq!(ours_hmac, theirs_hmac, "{ctx}");
    let ours_mt: Vec<Vec<String>> = srh
        .end_mt_tlvs(P.srh_tlv_end_mt)
        .map(|t| {
            let t = t.unwrap();
            let mut v = vec![
                t.edge_node_address().to_string(),
                t.num_receivers().to_string(),
            ];
            v.extend(t.receivers().map(|r| format!("{}/{}", r.address, r.qpn)));
            v
        })
        .collect();
    let theirs_mt: Vec<Vec<String>> = all(b, "endmt").iter().map(|v| v.to_vec()).collect();
    assert_eq!(ours_mt, theirs_mt, "{ctx}");
    assert!(get(b, "endmt-bad").is_none(), "{ctx}");
}

#[test]
fn scapy_built_srhs_parse_identically() {
    let out = run_py("scapy_srv6.py", &["srh-build"], "");
    let cases = blocks(&out, "case");
    assert_eq!(cases.len(), 6, "{out}");
    let mut hmac_cases = 0;
    for b in &cases {
        let bytes = unhex(&one(b, "hex"));
        let srh = Srh::new_checked(&bytes[..]).unwrap_or_else(|e| panic!("{e} for {b:?}"));
        assert_eq!(srh.header_len(), bytes.len());
        compare_srh(&srh, b);
        // Repr round trip reproduces scapy's bytes exactly.
        let r = SrhRepr::parse(&srh, P.srh_tlv_end_mt).unwrap();
        assert_eq!(r.to_bytes().unwrap(), bytes, "{:?}", get(b, "case"));
        // HMACs computed by python's hmac module verify with ours.
        if let Some(k) = get(b, "key") {
            hmac_cases += 1;
            let key_id: u32 = k[0].parse().unwrap();
            let key = HmacKey::new(key_id, &unhex(&k[1]), k[2].parse().unwrap()).unwrap();
            let table: HmacKeyTable = [key.clone()].into_iter().collect();
            let src = a(&one(b, "src"));
            assert_eq!(
                srh.verify_hmac(&src, None, &table),
                Ok(()),
                "{:?}",
                get(b, "case")
            );
            let field = srh.hmac_tlv().unwrap().hmac().to_vec();
            assert_eq!(&srh.compute_hmac(&src, &key)[..field.len()], &field[..]);
            // A different source must not verify.
            assert!(srh.verify_hmac(&a("2001:db8::bad"), None, &table).is_err());
        }
    }
    assert_eq!(hmac_cases, 3);
    // End.MT lookup on the scapy-built multi-TLV SRH.
    let b = cases.iter().find(|b| one(b, "case") == "endmt").unwrap();
    let bytes = unhex(&one(b, "hex"));
    let srh = Srh::new_checked(&bytes[..]).unwrap();
    let t = srh
        .end_mt_tlv_for(P.srh_tlv_end_mt, &a("fc00::e2"))
        .unwrap()
        .unwrap();
    assert_eq!(
        t.receivers().collect::<Vec<_>>(),
        vec![EndMtReceiver {
            address: a("2001:db8:2::1"),
            qpn: 0xffffff
        }]
    );
}

/// A small deterministic generator (no extra dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn addr(&mut self) -> Ipv6Addr {
        let mut b = [0u8; 16];
        for x in b.iter_mut() {
            *x = self.next() as u8;
        }
        b[0] = 0x20;
        b[1] = 0x01;
        Ipv6Addr::from(b)
    }
}

fn random_srh(g: &mut Lcg, keys: &[HmacKey]) -> SrhRepr {
    let n = 1 + g.below(6) as usize;
    let segments: Vec<Ipv6Addr> = (0..n).map(|_| g.addr()).collect();
    let mut tlvs = Vec::new();
    for _ in 0..g.below(4) {
        tlvs.push(match g.below(5) {
            0 => TlvRepr::Pad1,
            1 => TlvRepr::PadN(g.below(6) as u8),
            2 => TlvRepr::EndMt(EndMtRepr {
                tlv_type: P.srh_tlv_end_mt,
                edge_node_address: g.addr(),
                receivers: (0..g.below(4))
                    .map(|_| EndMtReceiver {
                        address: g.addr(),
                        qpn: g.below(1 << 24) as u32,
                    })
                    .collect(),
            }),
            3 => TlvRepr::Other {
                tlv_type: 128 + g.below(100) as u8,
                value: (0..g.below(20)).map(|_| g.next() as u8).collect(),
            },
            _ => TlvRepr::Other {
                tlv_type: 6 + g.below(100) as u8,
                value: vec![],
            },
        });
    }
    if g.below(2) == 0 {
        let k = &keys[g.below(keys.len() as u64) as usize];
        tlvs.push(TlvRepr::Hmac(HmacTlvRepr::placeholder(k, g.below(2) == 0)));
    }
    let mut r = SrhRepr {
        next_header: [41, 4, 59, 58, 17][g.below(5) as usize],
        segments_left: g.below(n as u64 + 1) as u8,
        flags: g.next() as u8,
        tag: g.next() as u16,
        segments,
        tlvs,
    };
    r.pad();
    r
}

#[test]
fn scapy_parses_our_srhs() {
    let keys = vec![
        HmacKey::new(1, b"first key", 32).unwrap(),
        HmacKey::new(0xfedc_ba98, b"second, truncated", 8).unwrap(),
        HmacKey::new(42, &[0xaa; 100], 24).unwrap(),
    ];
    let table: HmacKeyTable = keys.iter().cloned().collect();
    let src = a("2001:db8:5::1");
    let mut reprs = vec![SrhRepr::for_path(
        41,
        &[a("fc00::e1"), a("fc00::e2"), a("2001:db8::99")],
        vec![
            TlvRepr::EndMt(EndMtRepr {
                tlv_type: P.srh_tlv_end_mt,
                edge_node_address: a("fc00::e1"),
                receivers: vec![
                    EndMtReceiver {
                        address: a("2001:db8:1::10"),
                        qpn: 0x000102,
                    },
                    EndMtReceiver {
                        address: a("2001:db8:1::11"),
                        qpn: 0xabcdef,
                    },
                ],
            }),
            TlvRepr::EndMt(EndMtRepr {
                tlv_type: P.srh_tlv_end_mt,
                edge_node_address: a("fc00::e2"),
                receivers: vec![EndMtReceiver {
                    address: a("2001:db8:2::1"),
                    qpn: 7,
                }],
            }),
            TlvRepr::Hmac(HmacTlvRepr::placeholder(&keys[0], false)),
        ],
    )];
    let mut g = Lcg(0x5eed);
    reprs.extend((0..60).map(|_| random_srh(&mut g, &keys)));

    let mut input = String::new();
    let mut emitted = Vec::new();
    for r in &reprs {
        let mut b = r.to_bytes().unwrap();
        let mut srh = Srh::new_checked(&mut b[..]).unwrap();
        let key = srh.hmac_tlv().map(|t| t.key_id());
        if key.is_some() {
            srh.fill_hmac(&src, &table).unwrap();
        }
        input.push_str(&hex(&b));
        if let Some(id) = key {
            let k = table.lookup(id).unwrap();
            let secret: &[u8] = match id {
                1 => b"first key",
                0xfedc_ba98 => b"second, truncated",
                _ => &[0xaa; 100],
            };
            input.push_str(&format!(" {src} {id} {} {}", hex(secret), k.len()));
        }
        input.push('\n');
        emitted.push(b);
    }
    let out = run_py("scapy_srv6.py", &["srh-parse"], &input);
    let cases = blocks(&out, "case");
    assert_eq!(cases.len(), reprs.len(), "{out}");
    let mut with_hmac = 0;
    for (b, bytes) in cases.iter().zip(&emitted) {
        assert_eq!(one(b, "hex"), hex(bytes));
        // scapy re-serialises to the same octets: it agrees on every length.
        assert_eq!(one(b, "rebuilt"), hex(bytes), "{b:?}");
        let srh = Srh::new_checked(&bytes[..]).unwrap();
        compare_srh(&srh, b);
        if let Some(h) = get(b, "hmac_computed") {
            with_hmac += 1;
            assert_eq!(h[0], hex(srh.hmac_tlv().unwrap().hmac()), "{b:?}");
        }
    }
    assert!(with_hmac >= 10, "only {with_hmac} HMAC cases");
}

#[test]
fn scapy_detects_tampered_hmac() {
    // Negative control: the python HMAC must disagree once a segment changes
    // after the HMAC was filled.
    let key = HmacKey::new(3, b"k3", 32).unwrap();
    let table: HmacKeyTable = [key].into_iter().collect();
    let src = a("2001:db8::1");
    let r = SrhRepr::for_path(
        59,
        &[a("2001:db8::a"), a("2001:db8::b")],
        vec![TlvRepr::Hmac(HmacTlvRepr::placeholder(
            table.lookup(3).unwrap(),
            false,
        ))],
    );
    let mut b = r.to_bytes().unwrap();
    let mut srh = Srh::new_checked(&mut b[..]).unwrap();
    srh.fill_hmac(&src, &table).unwrap();
    srh.set_segment(0, &a("2001:db8::c")).unwrap();
    let line = format!("{} {src} 3 {} 32\n", hex(&b), hex(b"k3"));
    let out = run_py("scapy_srv6.py", &["srh-parse"], &line);
    let c = &blocks(&out, "case")[0];
    let srh = Srh::new_checked(&b[..]).unwrap();
    assert_ne!(one(c, "hmac_computed"), hex(srh.hmac_tlv().unwrap().hmac()));
    assert!(srh.verify_hmac(&src, None, &table).is_err());
}

// ---------------------------------------------------------------------------
// FANN
// ---------------------------------------------------------------------------

fn fann_reprs() -> Vec<PacketRepr> {
    let base = MessageRepr {
        hop_limit: 16,
        event_type: fann::event::CONGESTION,
        event_subtype: fann::event::CONGESTION_SEVERE,
        event_id: 0x0102_0304,
        timestamp: 1_750_000_000_123_456,
        originating_node: a("2001:db8:77::1"),
        metadata: Metadata {
            egress_port_id: Some(8),
            egress_tx_utilization: Some(0x5a),
            latency: Some(1000),
            signal_degradation: Some(10),
            ..Metadata::default()
        },
    };
    let all = Metadata {
        ingress_port_id: Some(1),
        egress_port_id: Some(2),
        ingress_timestamp: Some(3),
        egress_timestamp: Some(4),
        egress_tx_utilization: Some(95),
        packet_loss: Some(6),
        latency: Some(7),
        jitter: Some(8),
        queue_occupancy: Some(9000),
        buffer_occupancy: Some(10),
        signal_degradation: Some(11),
        link_down: Some(true),
        microburst: Some(true),
        flow_id: Some(FlowId {
            src: a("2001:db8:a::1"),
            dst: a("2001:db8:b::2"),
            src_port: 50000,
            dst_port: 4791,
            protocol: 17,
        }),
        path_id: Some(*b"SRv6-path-id-16B"),
    };
    vec![
        PacketRepr {
            msg_type: P.icmpv6_fann_type,
            code: fann::CODE_EVENT,
            message: base,
        },
        PacketRepr {
            msg_type: P.icmpv6_fann_type,
            code: fann::CODE_RECOVERY,
            message: MessageRepr {
                event_type: fann::event::RECOVERY,
                metadata: Metadata::default(),
                ..base
            },
        },
        PacketRepr {
            msg_type: P.icmpv6_fann_type,
            code: fann::CODE_EVENT,
            message: MessageRepr {
                event_type: fann::event::LINK_FAILURE,
                metadata: all,
                ..base
            },
        },
        PacketRepr {
            msg_type: P.icmpv6_fann_type,
            code: fann::CODE_EVENT,
            message: MessageRepr {
                metadata: Metadata {
                    flow_id: Some(FlowId {
                        src: a("2001:db8::1"),
                        dst: a("2001:db8::2"),
                        src_port: 1,
                        dst_port: 2,
                        protocol: 6,
                    }),
                    ..Metadata::default()
                },
                ..base
            },
        },
    ]
}

/// IPv6 + FANN packets: ICMPv6, UDP, and ICMPv6 behind an SRH (whose
/// pseudo-header uses the final destination, RFC 8200 s.8.1).
fn fann_packets() -> Vec<(Vec<u8>, MessageRepr, &'static str)> {
    let src = a("2001:db8:77::1");
    let dst = a("2001:db8::100");
    let mut v = Vec::new();
    for r in fann_reprs() {
        let icmp = r.to_bytes(&src, &dst);
        let mut p = ipv6_header(58, icmp.len(), &src, &dst);
        p.extend(&icmp);
        v.push((p, r.message, "icmpv6"));

        let payload = r.message.to_bytes();
        let u = udp(&src, &dst, 40000, P.fann_udp_port, &payload);
        let mut p = ipv6_header(17, u.len(), &src, &dst);
        p.extend(&u);
        v.push((p, r.message, "udp"));
    }
    // ICMPv6 FANN inside IPv6 + SRH: DA is the active segment, checksum over
    // Segment List[0].
    let r = &fann_reprs()[0];
    let path = [a("fc00::1"), dst];
    let srh = SrhRepr::for_path(58, &path, vec![]).to_bytes().unwrap();
    let icmp = r.to_bytes(&src, &dst);
    let mut p = ipv6_header(43, srh.len() + icmp.len(), &src, &path[0]);
    p.extend(&srh);
    p.extend(&icmp);
    v.push((p, r.message, "icmpv6-srh"));
    v
}

fn our_items(m: &MessageRepr) -> Vec<(String, String)> {
    let b = m.to_bytes();
    let msg = Message::new_checked(&b[..]).unwrap();
    msg.items()
        .map(|(bit, i)| (bit.to_string(), hex(i)))
        .collect()
}

#[test]
fn scapy_validates_fann_checksums_and_layout() {
    let pkts: Vec<_> = fann_packets()
        .into_iter()
        .filter(|(_, _, k)| *k != "icmpv6-srh")
        .collect();
    let input: String = pkts.iter().map(|(p, _, _)| hex(p) + "\n").collect();
    let out = run_py("scapy_srv6.py", &["fann-check"], &input);
    let cases = blocks(&out, "case");
    assert_eq!(cases.len(), pkts.len(), "{out}");
    for (c, (p, m, kind)) in cases.iter().zip(&pkts) {
        let ctx = format!("{kind} {c:?}");
        assert_eq!(get(c, "cksum").unwrap()[0], "ok", "{ctx}");
        let plen = get(c, "plen").unwrap();
        assert_eq!(plen[0], plen[1], "{ctx}");
        assert_eq!(plen[0], (p.len() - 40).to_string(), "{ctx}");
        let proto = get(c, "proto").unwrap();
        if *kind == "icmpv6" {
            assert_eq!(proto[0], "icmpv6");
            assert_eq!(proto[1], P.icmpv6_fann_type.to_string());
        } else {
            assert_eq!(proto[0], "udp");
            assert_eq!(proto[2], P.fann_udp_port.to_string());
        }
        let f = get(c, "fann").unwrap();
        let expect = [
            "1".to_string(),
            m.hop_limit.to_string(),
            m.event_type.to_string(),
            m.event_subtype.to_string(),
            m.event_id.to_string(),
            m.timestamp.to_string(),
            m.originating_node.to_string(),
            m.metadata.bitmap().to_string(),
        ];
        assert_eq!(f, &expect[..], "{ctx}");
        let theirs: Vec<(String, String)> = all(c, "item")
            .iter()
            .map(|v| (v[0].clone(), v[1].clone()))
            .collect();
        assert_eq!(our_items(m), theirs, "{ctx}");
        assert!(get(c, "fann-bad").is_none(), "{ctx}");
    }
    // Negative control: a flipped checksum bit is caught.
    let mut bad = pkts[0].0.clone();
    bad[40 + 2] ^= 0x01;
    let out = run_py("scapy_srv6.py", &["fann-check"], &(hex(&bad) + "\n"));
    assert_eq!(get(&blocks(&out, "case")[0], "cksum").unwrap()[0], "bad");
}

#[test]
fn tshark_dissects_srh_and_fann_cleanly() {
    let keys: HmacKeyTable = [HmacKey::new(9, b"tshark", 32).unwrap()]
        .into_iter()
        .collect();
    let src = a("2001:db8:1::1");
    let mut frames = Vec::new();
    let mut expect_srh = Vec::new();
    // SRH frames: No Next Header payload, and one carrying an inner IPv6/UDP.
    let mut g = Lcg(7);
    let ks = [HmacKey::new(9, b"tshark", 32).unwrap()];
    for i in 0..12 {
        let mut r = random_srh(&mut g, &ks);
        r.next_header = if i % 2 == 0 { 59 } else { 41 };
        if r.segments_left as usize >= r.segments.len() {
            r.segments_left = 0;
        }
        let mut b = r.to_bytes().unwrap();
        let mut srh = Srh::new_checked(&mut b[..]).unwrap();
        if srh.hmac_tlv().is_some() {
            srh.fill_hmac(&src, &keys).unwrap();
        }
        let da = srh.active_segment().unwrap();
        let mut payload = b.clone();
        if r.next_header == 41 {
            let isrc = a("2001:db8:c::1");
            let idst = a("2001:db8:d::1");
            let u = udp(&isrc, &idst, 1000, 2000, b"inner payload");
            payload.extend(ipv6_header(17, u.len(), &isrc, &idst));
            payload.extend(u);
        }
        let mut p = ipv6_header(43, payload.len(), &src, &da);
        p.extend(&payload);
        frames.push(ether(&p));
        expect_srh.push(r);
    }
    let fanns = fann_packets();
    for (p, _, _) in &fanns {
        frames.push(ether(p));
    }
    let path = write_pcap("srh_fann.pcap", &frames);
    let out = tshark(&path);
    assert_eq!(out.len(), frames.len());
    for (f, r) in out.iter().zip(&expect_srh) {
        assert_clean(f);
        assert!(one(f, "protocols").contains("ipv6.routing"), "{f:?}");
        assert_eq!(fields(f, "ipv6.routing.type"), vec!["4"]);
        assert_eq!(
            fields(f, "ipv6.routing.segleft"),
            vec![r.segments_left.to_string()]
        );
        assert_eq!(
            fields(f, "ipv6.routing.srh.last_entry"),
            vec![(r.segments.len() - 1).to_string()]
        );
        let addrs: Vec<Ipv6Addr> = fields(f, "ipv6.routing.srh.addr")
            .iter()
            .map(|s| a(s))
            .collect();
        assert_eq!(addrs, r.segments, "{f:?}");
        if r.next_header == 41 {
            assert!(one(f, "protocols").contains("ipv6:udp"), "{f:?}");
            assert_eq!(fields(f, "udp.checksum.status"), vec!["1"], "{f:?}");
        }
    }
    for (f, (_, _, kind)) in out[expect_srh.len()..].iter().zip(&fanns) {
        assert_clean(f);
        match *kind {
            "udp" => {
                assert_eq!(fields(f, "udp.checksum.status"), vec!["1"], "{f:?}");
                assert_eq!(fields(f, "udp.dstport"), vec![P.fann_udp_port.to_string()]);
            }
            _ => {
                assert_eq!(
                    fields(f, "icmpv6.checksum.status"),
                    vec!["1"],
                    "{kind} {f:?}"
                );
                assert_eq!(
                    fields(f, "icmpv6.type"),
                    vec![P.icmpv6_fann_type.to_string()]
                );
            }
        }
    }

    // Negative control: tshark must flag a bad ICMPv6 checksum.
    let mut bad = fanns[0].0.clone();
    bad[42] ^= 0x80;
    let path = write_pcap("bad.pcap", &[ether(&bad)]);
    let out = tshark(&path);
    assert!(
        !all(&out[0], "bad").is_empty(),
        "tshark did not flag {out:?}"
    );
}

// ---------------------------------------------------------------------------
// IS-IS
// ---------------------------------------------------------------------------

#[test]
fn tshark_dissects_isis_srv6_tlvs() {
    // Router Capability TLV 242 (RFC 7981): Router ID, flags, sub-TLVs.
    let caps = Srv6CapsRepr::new(true, true, &P).to_bytes().unwrap();
    let mut cap_tlv = vec![242, 0];
    cap_tlv.extend([192, 0, 2, 1, 0]);
    cap_tlv.extend(&caps);
    cap_tlv[1] = (cap_tlv.len() - 2) as u8;

    let st = SidStructure {
        locator_block_len: 32,
        locator_node_len: 16,
        function_len: 16,
        argument_len: 0,
    };
    let loc = LocatorTlvRepr {
        mt_id: 0,
        entries: vec![LocatorEntryRepr {
            metric: 10,
            flags: 0,
            algorithm: 0,
            loc_size: 48,
            locator: a("fc00:0:1::"),
            sub_tlvs: vec![
                LocatorSubTlv::EndSid(EndSidRepr::end_c(a("fc00:0:1:e00c::"), Some(st), &P)),
                LocatorSubTlv::EndSid(EndSidRepr::end_e(a("fc00:0:1:e00e::"), Some(st), &P)),
            ],
        }],
    }
    .to_bytes()
    .unwrap();

    let dir = std::env::temp_dir().join(format!("dcirouter-oracle-srv6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("isis.pcap");
    let input = format!("{}\n{}\n", hex(&cap_tlv), hex(&loc));
    let out = run_py(
        "scapy_srv6.py",
        &["isis-lsp", path.to_str().unwrap()],
        &input,
    );
    assert!(out.starts_with("ok"), "{out}");
    let frames = tshark(&path);
    assert_eq!(frames.len(), 1);
    let f = &frames[0];
    assert_clean(f);
    assert!(one(f, "protocols").contains("isis"), "{f:?}");
    let m: BTreeMap<&str, Vec<&str>> = [
        "isis.lsp.srv6_cap.flags",
        "isis.lsp.srv6_cap.flags.o",
        "isis.lsp.srv6_locator.metric",
        "isis.lsp.srv6_locator.locator_size",
        "isis.lsp.srv6_locator.locator",
        "isis.lsp.srv6_end_sid.endpoint_function",
        "isis.lsp.srv6_end_sid.sid",
        "isis.lsp.srv6_end_sid.subsubclvs_length",
    ]
    .into_iter()
    .map(|k| (k, fields(f, k)))
    .collect();
    assert_eq!(m["isis.lsp.srv6_cap.flags.o"], vec!["1"], "{f:?}");
    let flags = m["isis.lsp.srv6_cap.flags"][0];
    assert_eq!(
        u16::from_str_radix(flags.trim_start_matches("0x"), 16).unwrap(),
        0x4000 | P.isis_srv6_cap_c_flag
    );
    assert_eq!(m["isis.lsp.srv6_locator.metric"], vec!["10"]);
    assert_eq!(m["isis.lsp.srv6_locator.locator_size"], vec!["48"]);
    assert_eq!(a(m["isis.lsp.srv6_locator.locator"][0]), a("fc00:0:1::"));
    let behaviours: Vec<u16> = m["isis.lsp.srv6_end_sid.endpoint_function"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(behaviours, vec![P.behaviour_end_c, P.behaviour_end_e]);
    let sids: Vec<Ipv6Addr> = m["isis.lsp.srv6_end_sid.sid"]
        .iter()
        .map(|s| a(s))
        .collect();
    assert_eq!(sids, vec![a("fc00:0:1:e00c::"), a("fc00:0:1:e00e::")]);
    assert_eq!(m["isis.lsp.srv6_end_sid.subsubclvs_length"], vec!["6", "6"]);
}
