//! Independent oracles for the RoCEv2, Long-haul CNP and PFC codecs:
//!
//! * scapy (`scapy.contrib.roce`, `scapy.contrib.mac_control`) builds RoCEv2
//!   datagrams that our parsers must read identically (fields and ICRC);
//! * scapy re-computes the ICRC / checksums of everything we emit, including
//!   packets whose ICRC we updated incrementally, and reads our PFC frames;
//! * tshark dissects a pcap of everything we emit without malformed-packet
//!   or bad-checksum expert info, and reads the same fields.
//!
//! The oracle script is `tests/oracle/scapy_roce.py`. Missing tools make the
//! tests fail with a message naming what to install.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use dataplane::wire::checksum;
use dataplane::wire::lhcnp::{
    self, Action, CnpInfo, ExtObject, Icmpv6LhCnpRepr, MetricType, ObjectData, Objects,
    RoceLhCnpRepr,
};
use dataplane::wire::params::Params;
use dataplane::wire::pfc::{self, FrameRepr, MacControlRepr, PfcRepr};
use dataplane::wire::roce::{
    self, opcode, Aeth, AethRepr, Bth, BthRepr, CnpRepr, IcrcLayout, IpHeader, IpUdpRepr, NakCode,
    Reth, RethRepr, Syndrome,
};

mod oracle_common;
use oracle_common::{hex, tshark, unhex};

fn script() -> PathBuf {
    oracle_common::oracle_script("scapy_roce.py")
}

fn python() -> Command {
    oracle_common::python("scapy.contrib.roce, scapy.contrib.mac_control")
}

/// xorshift64*: deterministic test data without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bool(&mut self) -> bool {
        self.next() & 1 == 1
    }
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        for x in a.iter_mut() {
            *x = self.next() as u8;
        }
        a
    }
    fn vec(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// One packet for the oracles.
struct Item {
    /// `roce` (IP datagram), `icmp6` (IPv6 packet), `eth` (Ethernet frame).
    kind: &'static str,
    bytes: Vec<u8>,
    fields: Vec<(&'static str, u64)>,
    what: String,
}

impl Item {
    fn line(&self) -> String {
        let mut s = format!("{} {}", self.kind, hex(&self.bytes));
        for (k, v) in &self.fields {
            s.push_str(&format!(" {k}={v}"));
        }
        s
    }
    /// Ethernet framing for the pcap.
    fn frame(&self) -> Vec<u8> {
        if self.kind == "eth" {
            return self.bytes.clone();
        }
        let mut f = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
        f.extend_from_slice(if self.bytes[0] >> 4 == 4 {
            &[0x08, 0x00]
        } else {
            &[0x86, 0xdd]
        });
        f.extend_from_slice(&self.bytes);
        f
    }
}

fn rand_ip(r: &mut Rng, v6: bool) -> IpHeader {
    if v6 {
        IpHeader::V6 {
            src: r.bytes(),
            dst: r.bytes(),
            traffic_class: r.next() as u8,
            flow_label: r.below(1 << 20) as u32,
            hop_limit: 1 + r.below(255) as u8,
        }
    } else {
        IpHeader::V4 {
            src: r.bytes(),
            dst: r.bytes(),
            tos: r.next() as u8,
            ttl: 1 + r.below(255) as u8,
            ident: r.next() as u16,
        }
    }
}

fn bth_fields(b: &BthRepr, icrc: u32) -> Vec<(&'static str, u64)> {
    vec![
        ("opcode", b.opcode.into()),
        ("dqpn", b.dest_qp.into()),
        ("psn", b.psn.into()),
        ("pkey", b.pkey.into()),
        ("becn", b.becn.into()),
        ("fecn", b.fecn.into()),
        ("e", b.ext.into()),
        ("icrc", icrc.into()),
    ]
}

fn info_fields(i: &CnpInfo, nobj: usize) -> Vec<(&'static str, u64)> {
    vec![
        ("level", i.congestion_level.into()),
        ("action", (i.action.to_flags() >> 6).into()),
        ("param", i.parameter.into()),
        ("srcqp", i.source_qp.into()),
        ("mtype", u8::from(i.metric_type).into()),
        ("mvalue", i.metric_value.into()),
        ("nobj", nobj as u64),
    ]
}

/// A random RoCEv2 datagram of ours: SEND, RDMA WRITE + RETH, ACK + AETH,
/// READ RESPONSE + AETH.
fn rand_roce(r: &mut Rng, v6: bool) -> (IpUdpRepr, Item) {
    let ipudp = IpUdpRepr {
        ip: rand_ip(r, v6),
        src_port: 49152 + r.below(16384) as u16,
        dst_port: 4791,
        udp_checksum: v6 || r.bool(),
    };
    let op = [
        opcode::SEND_ONLY,
        opcode::RDMA_WRITE_ONLY,
        opcode::RC_ACKNOWLEDGE,
        opcode::RDMA_READ_RESPONSE_ONLY,
    ][r.below(4) as usize];
    let mut bth = BthRepr::new(op, r.below(1 << 24) as u32, r.below(1 << 24) as u32);
    bth.pkey = if r.bool() { 0xffff } else { r.next() as u16 };
    bth.fecn = r.bool();
    bth.becn = r.bool();
    bth.solicited = r.bool();
    bth.ack_req = r.bool();
    let plen = r.below(500) as usize;
    let payload = r.vec(plen);
    let mut ext: Vec<u8> = vec![];
    let mut fields = vec![];
    if opcode::has_reth(op) {
        let reth = RethRepr {
            virtual_address: r.next(),
            rkey: r.next() as u32,
            dma_length: payload.len() as u32,
        };
        let mut b = [0u8; 16];
        reth.emit(&mut Reth::new_unchecked(&mut b[..]));
        ext.extend_from_slice(&b);
    }
    if opcode::has_aeth(op) {
        let syndrome = match r.below(3) {
            0 => Syndrome::Ack {
                credits: r.below(32) as u8,
            },
            1 => Syndrome::RnrNak {
                timer: r.below(32) as u8,
            },
            _ => Syndrome::Nak(NakCode::from(r.below(5) as u8)),
        };
        let a = AethRepr {
            syndrome,
            msn: r.below(1 << 24) as u32,
        };
        let mut b = [0u8; 4];
        a.emit(&mut Aeth::new_unchecked(&mut b[..]));
        ext.extend_from_slice(&b);
        fields.push(("syndrome", syndrome.to_octet().into()));
        fields.push(("msn", a.msn.into()));
    }
    let body: Vec<u8> = if op == opcode::RC_ACKNOWLEDGE {
        ext
    } else {
        [ext, payload].concat()
    };
    let hl = ipudp.header_len();
    let pl = roce::BTH_LEN + body.len() + roce::ICRC_LEN;
    let mut d = vec![0u8; hl + pl];
    ipudp.emit_headers(&mut d, pl).unwrap();
    let mut v = Bth::new_unchecked(&mut d[hl..]);
    bth.emit(&mut v);
    v.payload_mut().copy_from_slice(&body);
    ipudp.finish(&mut d).unwrap();
    let icrc = roce::icrc_stored(&d).unwrap();
    let mut f = bth_fields(&bth, icrc);
    f.extend(fields);
    (
        ipudp,
        Item {
            kind: "roce",
            bytes: d,
            fields: f,
            what: format!("RoCE opcode {op:#x} v6={v6}"),
        },
    )
}

const STEP4: CnpInfo = CnpInfo {
    congestion_level: 180,
    action: Action::RateReduce,
    parameter: 30,
    source_qp: 100,
    metric_type: MetricType::QueueDepthKb,
    metric_value: 130_000,
};

fn rand_info(r: &mut Rng) -> CnpInfo {
    let action = Action::from_flags(r.next() as u8);
    let metric_type = MetricType::from(r.next() as u8);
    CnpInfo {
        congestion_level: r.next() as u8,
        action,
        parameter: match action {
            Action::Notify => 0,
            Action::Pause => r.next() as u16,
            _ => r.below(101) as u16,
        },
        source_qp: r.next() as u32,
        metric_type,
        metric_value: if metric_type == MetricType::EcnMarkingPercent {
            r.below(101) as u32
        } else {
            r.below(1 << 24) as u32
        },
    }
}

/// Everything we emit, for scapy and tshark.
fn corpus() -> Vec<Item> {
    let p = Params::DEFAULT;
    let mut r = Rng(0x05ee_d0f0_cea1_1000);
    let mut items = vec![];

    // Random RoCEv2 traffic, IPv4 and IPv6.
    for i in 0..40 {
        let v6 = i % 2 == 1;
        let (_, it) = rand_roce(&mut r, v6);
        // End.MT-style rewrite with the incremental ICRC.
        let mut d = it.bytes.clone();
        let l = IcrcLayout::of(&d).unwrap();
        let new_qp = r.below(1 << 24) as u32;
        if v6 {
            let da: [u8; 16] = r.bytes();
            roce::rewrite_v6_dst_qpn(&mut d, &da, new_qp).unwrap();
        } else {
            // IPv4: DA and QPN via icrc_update; IPv4 header checksum per RFC 1624;
            // a UDP checksum, if any, is cleared (allowed for IPv4).
            let da: [u8; 4] = r.bytes();
            let q = l.bth_offset() + 5;
            let old_da = d[16..20].to_vec();
            let old_qp = d[q..q + 3].to_vec();
            let new_qpb = &new_qp.to_be_bytes()[1..];
            let ic = roce::icrc_update(
                roce::icrc_stored(&d).unwrap(),
                l.covered_len(),
                &[(16, &old_da, &da), (q, &old_qp, new_qpb)],
            );
            let hc = u16::from_be_bytes([d[10], d[11]]);
            let hc = checksum::update_bytes(hc, &old_da, &da);
            d[10..12].copy_from_slice(&hc.to_be_bytes());
            d[16..20].copy_from_slice(&da);
            d[q..q + 3].copy_from_slice(new_qpb);
            d[l.udp_offset() + 6] = 0;
            d[l.udp_offset() + 7] = 0;
            let o = l.icrc_offset();
            d[o..o + 4].copy_from_slice(&ic.to_le_bytes());
        }
        let mut f: Vec<_> = it
            .fields
            .iter()
            .filter(|(k, _)| *k != "dqpn" && *k != "icrc")
            .cloned()
            .collect();
        f.push(("dqpn", new_qp.into()));
        items.push(it);
        items.push(Item {
            kind: "roce",
            bytes: d,
            fields: f,
            what: format!("incremental rewrite v6={v6}"),
        });
    }

    // Standard CNPs.
    for v6 in [false, true] {
        let ipudp = IpUdpRepr {
            ip: rand_ip(&mut r, v6),
            src_port: 4791,
            dst_port: 4791,
            udp_checksum: v6,
        };
        let c = CnpRepr {
            pkey: 0xffff,
            dest_qp: r.below(1 << 24) as u32,
            fecn: false,
        };
        let mut buf = [0u8; 128];
        let n = roce::emit_cnp_datagram(&ipudp, &c, &mut buf).unwrap();
        let d = buf[..n].to_vec();
        let f = bth_fields(&c.bth(), roce::icrc_stored(&d).unwrap());
        items.push(Item {
            kind: "roce",
            bytes: d,
            fields: f,
            what: format!("CNP v6={v6}"),
        });
    }

    // Long-haul CNP, RoCEv2 format: step 4 of section 7, then random ones
    // with objects.
    let dev = "N1-dci-router";
    let path = [0xde, 0xad, 0xbe, 0xef, 0x01];
    let objs = [
        ExtObject {
            class_num: 247,
            data: ObjectData::Timestamp(0xe8f0_a1b2_c3d4_e5f6),
        },
        ExtObject {
            class_num: 247,
            data: ObjectData::DeviceId(dev),
        },
        ExtObject {
            class_num: 247,
            data: ObjectData::PathId(&path),
        },
    ];
    for k in 0..8 {
        let v6 = k % 2 == 1;
        let ip = if k == 0 {
            IpHeader::V4 {
                src: [10, 0, 0, 2],
                dst: [10, 0, 0, 1],
                tos: 0,
                ttl: 64,
                ident: 0,
            }
        } else {
            rand_ip(&mut r, v6)
        };
        let info = if k < 2 { STEP4 } else { rand_info(&mut r) };
        let nobj = if k < 2 { k } else { k % 4 };
        let repr = RoceLhCnpRepr {
            pkey: 0xffff,
            dest_qp: if k < 2 { 100 } else { r.below(1 << 24) as u32 },
            info,
            objects: Objects::List(&objs[..nobj]),
        };
        let ipudp = IpUdpRepr {
            ip,
            src_port: 4791,
            dst_port: 4791,
            udp_checksum: v6,
        };
        let mut buf = [0u8; 512];
        let n = lhcnp::emit_roce_datagram(&ipudp, &repr, &mut buf).unwrap();
        let d = buf[..n].to_vec();
        let mut f = bth_fields(&repr.bth(), roce::icrc_stored(&d).unwrap());
        f.extend(info_fields(&info, nobj));
        items.push(Item {
            kind: "roce",
            bytes: d,
            fields: f,
            what: format!("LH-CNP RoCEv2 #{k} v6={v6}"),
        });
    }

    // Long-haul CNP, ICMPv6 format.
    for k in 0..6 {
        let src: [u8; 16] = r.bytes();
        let dst: [u8; 16] = r.bytes();
        let info = if k < 2 { STEP4 } else { rand_info(&mut r) };
        let nobj = if k < 2 { 3 * k } else { k % 4 };
        let repr = Icmpv6LhCnpRepr {
            code: 0,
            info,
            objects: Objects::List(&objs[..nobj]),
        };
        let mut buf = [0u8; 512];
        let n = lhcnp::emit_icmpv6_packet(&src, &dst, 64, &repr, &p, &mut buf).unwrap();
        let mut f = vec![("type", u64::from(p.icmpv6_lhcnp_type)), ("code", 0)];
        f.extend(info_fields(&info, nobj));
        items.push(Item {
            kind: "icmp6",
            bytes: buf[..n].to_vec(),
            fields: f,
            what: format!("LH-CNP ICMPv6 #{k}"),
        });
    }

    // PFC and PAUSE.
    for k in 0..8 {
        let src: [u8; 6] = [0x02, 0, 0, 0, 0, k];
        let control = if k == 7 {
            MacControlRepr::Pause {
                quanta: r.next() as u16,
            }
        } else if k == 0 {
            MacControlRepr::Pfc(PfcRepr::pause(
                1 << 3,
                pfc::quanta_from_micros(100, 100_000_000_000),
            ))
        } else {
            MacControlRepr::Pfc(PfcRepr {
                class_enable: r.next() as u8,
                times: std::array::from_fn(|_| r.next() as u16),
            })
        };
        let fr = FrameRepr {
            dst: pfc::DST_MAC,
            src,
            control,
        };
        let mut buf = [0u8; 60];
        fr.emit(&mut buf).unwrap();
        let f = match control {
            MacControlRepr::Pause { quanta } => vec![("opcode", 1), ("quanta", quanta.into())],
            MacControlRepr::Pfc(p) => {
                const T: [&str; 8] = ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"];
                let mut f = vec![("opcode", 0x0101), ("cev", p.class_enable.into())];
                f.extend(T.iter().zip(p.times).map(|(k, t)| (*k, u64::from(t))));
                f
            }
        };
        items.push(Item {
            kind: "eth",
            bytes: buf.to_vec(),
            fields: f,
            what: format!("PFC/PAUSE #{k}"),
        });
    }
    items
}

fn run_check(items: &[Item]) -> Vec<String> {
    let mut child = python()
        .arg(script())
        .arg("check")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn python3");
    let input: String = items.iter().map(|i| i.line() + "\n").collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), items.len(), "oracle output: {lines:?}");
    lines
}

#[test]
fn scapy_built_roce_parses_identically() {
    let mut seen = HashMap::new();
    for seed in [1u32, 2, 3] {
        let out = python()
            .arg(script())
            .args(["gen", &seed.to_string(), "80"])
            .output()
            .expect("run python3");
        assert!(
            out.status.success(),
            "gen failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.lines().count() == 80, "{text}");
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            assert_eq!(parts.next(), Some("roce"));
            let d = unhex(parts.next().unwrap());
            let f: HashMap<&str, u64> = parts
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap();
                    (k, v.parse().unwrap())
                })
                .collect();
            let l = IcrcLayout::of(&d).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(u64::from(l.ip_version), f["ver"]);
            assert_eq!(u64::from(roce::icrc_full(&d).unwrap()), f["icrc"], "{line}");
            assert_eq!(u64::from(roce::icrc_stored(&d).unwrap()), f["icrc"]);
            roce::icrc_check(&d).unwrap();
            let bth = Bth::new_checked(&d[l.bth_offset()..l.datagram_len]).unwrap();
            let b = BthRepr::parse(&bth).unwrap();
            let got = [
                ("opcode", u64::from(b.opcode)),
                ("se", b.solicited.into()),
                ("m", b.migreq.into()),
                ("pad", b.pad_count.into()),
                ("tver", b.tver.into()),
                ("pkey", b.pkey.into()),
                ("fecn", b.fecn.into()),
                ("becn", b.becn.into()),
                ("resv6", (u64::from(b.ext) << 5) | u64::from(bth.resv5())),
                ("dqpn", b.dest_qp.into()),
                ("a", b.ack_req.into()),
                ("psn", b.psn.into()),
            ];
            for (k, v) in got {
                assert_eq!(v, f[k], "{k} in {line}");
            }
            if let Some(s) = f.get("syndrome") {
                assert!(opcode::has_aeth(b.opcode));
                let a = AethRepr::parse(&Aeth::new_checked(bth.payload()).unwrap()).unwrap();
                assert_eq!(u64::from(a.syndrome.to_octet()), *s);
                assert_eq!(u64::from(a.msn), f["msn"]);
            }
            if let Some(va) = f.get("va") {
                assert!(opcode::has_reth(b.opcode));
                let x = RethRepr::parse(&Reth::new_checked(bth.payload()).unwrap()).unwrap();
                assert_eq!(
                    (
                        x.virtual_address,
                        u64::from(x.rkey),
                        u64::from(x.dma_length)
                    ),
                    (*va, f["rkey"], f["dmalen"])
                );
            }
            if b.opcode == opcode::CNP {
                let c = CnpRepr::parse(&bth).unwrap();
                assert_eq!(u64::from(c.dest_qp), f["dqpn"]);
            }
            // Incremental rewrite of the destination address and DestQPN on
            // scapy's packet equals a full recomputation.
            let mut e = d.clone();
            let q = l.bth_offset() + 5;
            let (da_off, da_len) = if l.ip_version == 4 { (16, 4) } else { (24, 16) };
            let old_da = e[da_off..da_off + da_len].to_vec();
            let new_da: Vec<u8> = old_da.iter().map(|x| x.wrapping_add(0x5a)).collect();
            let old_qp = e[q..q + 3].to_vec();
            let new_qp = [old_qp[2], 0x11, old_qp[0]];
            e[da_off..da_off + da_len].copy_from_slice(&new_da);
            e[q..q + 3].copy_from_slice(&new_qp);
            let inc = roce::icrc_update(
                roce::icrc_stored(&d).unwrap(),
                l.covered_len(),
                &[(da_off, &old_da, &new_da), (q, &old_qp, &new_qp)],
            );
            assert_eq!(inc, roce::icrc_full(&e).unwrap(), "{line}");
            // Corrupting an invariant octet must be caught.
            let mut c = d.clone();
            let last = l.icrc_offset() - 1;
            c[last] ^= 0x80;
            assert_eq!(roce::icrc_check(&c), Err(dataplane::wire::Error::Checksum));
            *seen.entry(b.opcode).or_insert(0) += 1;
        }
    }
    // The generator covered every kind.
    for op in [0x04, 0x0a, 0x11, 0x10, 0x81] {
        assert!(
            seen.get(&op).copied().unwrap_or(0) > 0,
            "no opcode {op:#x} among {seen:?}"
        );
    }
}

#[test]
fn scapy_confirms_our_packets() {
    let items = corpus();
    let lines = run_check(&items);
    let bad: Vec<String> = items
        .iter()
        .zip(&lines)
        .filter(|(_, l)| *l != "ok")
        .map(|(i, l)| format!("{}: {l}\n  {}", i.what, i.line()))
        .collect();
    assert!(
        bad.is_empty(),
        "scapy disagrees on {} of {} packets:\n{}",
        bad.len(),
        items.len(),
        bad.join("\n")
    );

    // Negative controls: the oracle does notice a wrong ICRC, a wrong field,
    // a wrong ICMPv6 checksum and a wrong PFC time.
    let mut wrong = vec![];
    let first_roce = items.iter().find(|i| i.kind == "roce").unwrap();
    let mut b = first_roce.bytes.clone();
    let n = b.len();
    b[n - 1] ^= 1;
    wrong.push(Item {
        kind: "roce",
        bytes: b,
        fields: vec![],
        what: "bad ICRC".into(),
    });
    let mut f = first_roce.fields.clone();
    f.retain(|(k, _)| *k != "dqpn");
    f.push(("dqpn", 0x1000000));
    wrong.push(Item {
        kind: "roce",
        bytes: first_roce.bytes.clone(),
        fields: f,
        what: "bad dqpn".into(),
    });
    let icmp = items.iter().find(|i| i.kind == "icmp6").unwrap();
    let mut b = icmp.bytes.clone();
    b[43] ^= 1;
    wrong.push(Item {
        kind: "icmp6",
        bytes: b,
        fields: vec![],
        what: "bad ICMPv6 checksum".into(),
    });
    let eth = items.iter().find(|i| i.kind == "eth").unwrap();
    let mut b = eth.bytes.clone();
    b[25] ^= 1;
    wrong.push(Item {
        kind: "eth",
        bytes: b,
        fields: eth.fields.clone(),
        what: "bad PFC time".into(),
    });
    let lines = run_check(&wrong);
    for (i, l) in wrong.iter().zip(&lines) {
        assert!(l.starts_with("FAIL"), "oracle accepted {}: {l}", i.what);
    }
}

#[test]
fn tshark_dissects_our_packets() {
    use pcap_file::pcap::{PcapPacket, PcapWriter};
    let mut items = corpus();
    // Negative control: an IPv6 RoCE datagram with a wrong UDP checksum
    // must be the one and only problem found.
    let mut bad = items
        .iter()
        .find(|i| i.kind == "roce" && i.bytes[0] >> 4 == 6)
        .unwrap()
        .bytes
        .clone();
    bad[46] ^= 0x01;
    items.push(Item {
        kind: "roce",
        bytes: bad,
        fields: vec![],
        what: "NEGATIVE CONTROL".into(),
    });
    let dir = std::env::temp_dir().join(format!("wire_oracle_roce_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |path: &std::path::Path, items: &[Item]| {
        let file = std::fs::File::create(path).unwrap();
        let mut w = PcapWriter::new(file).unwrap();
        for (k, it) in items.iter().enumerate() {
            let f = it.frame();
            w.write_packet(&PcapPacket::new(
                std::time::Duration::from_millis(k as u64),
                f.len() as u32,
                &f,
            ))
            .unwrap();
        }
    };
    // `ours.pcap`: what we emit; `path` adds the negative control.
    let ours = dir.join("ours.pcap");
    write(&ours, &items[..items.len() - 1]);
    let path = dir.join("with_control.pcap");
    write(&path, &items);
    let fields = [
        "frame.number",
        "frame.protocols",
        "_ws.malformed",
        "_ws.expert.severity",
        "_ws.expert.message",
        "ip.checksum.status",
        "udp.checksum.status",
        "icmpv6.checksum.status",
        "infiniband.bth.opcode",
        "infiniband.bth.destqp",
        "infiniband.bth.psn",
        "infiniband.aeth.msn",
        "infiniband.invariant.crc",
        "macc.opcode",
        "macc.cbfc.enbv",
        "macc.pause_time",
        "macc.cbfc.pause_time.c0",
        "macc.cbfc.pause_time.c7",
    ];
    let mut cmd = tshark();
    cmd.arg("-r").arg(&path).args([
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        "-T",
        "fields",
        "-E",
        "separator=\t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), items.len(), "{text}");
    let col = |name: &str| fields.iter().position(|f| *f == name).unwrap();
    let mut problems = vec![];
    for (it, row) in items.iter().zip(&rows) {
        let get = |name: &str| row.get(col(name)).copied().unwrap_or("");
        let want = |k: &str| it.fields.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        let num = |s: &str| -> Option<u64> {
            let s = s.split(',').next()?;
            if let Some(h) = s.strip_prefix("0x") {
                u64::from_str_radix(h, 16).ok()
            } else {
                s.parse().ok()
            }
        };
        let mut p = vec![];
        if !get("_ws.malformed").is_empty() {
            p.push("malformed".to_string());
        }
        // Expert severities: note 0x400000, warning 0x600000, error 0x800000.
        for s in get("_ws.expert.severity")
            .split(',')
            .filter(|s| !s.is_empty())
        {
            if num(s).unwrap_or(u64::MAX) >= 0x60_0000 {
                p.push(format!("expert {s}: {}", get("_ws.expert.message")));
            }
        }
        for c in [
            "ip.checksum.status",
            "udp.checksum.status",
            "icmpv6.checksum.status",
        ] {
            // 0 = bad, 1 = good, 2 = unverified, 3 = not present.
            if get(c).split(',').any(|s| s == "0") {
                p.push(format!("{c} bad"));
            }
        }
        match it.kind {
            "roce" => {
                if !get("frame.protocols").contains("infiniband") {
                    p.push(format!("not dissected as RoCE: {}", get("frame.protocols")));
                }
                let v6 = it.bytes[0] >> 4 == 6;
                if v6 && get("udp.checksum.status") != "1" {
                    p.push(format!(
                        "IPv6 UDP checksum status {}",
                        get("udp.checksum.status")
                    ));
                }
                // tshark shows the trailer octets as a big-endian number.
                if let Some(v) = want("icrc") {
                    match num(get("infiniband.invariant.crc")) {
                        Some(t) if t == u64::from((v as u32).swap_bytes()) => {}
                        Some(t) => p.push(format!("invariant.crc {t:#x}, want trailer of {v:#x}")),
                        // tshark's InfiniBand dissector ends a CNP (opcode
                        // 0x81) at its padding and shows no ICRC; scapy
                        // recomputes those ICRCs (`scapy_confirms_our_packets`).
                        None if want("opcode") == Some(0x81) => {}
                        None => p.push(format!("tshark shows no invariant.crc (our ICRC {v:#x})")),
                    }
                }
                for (tf, k) in [
                    ("infiniband.bth.opcode", "opcode"),
                    ("infiniband.bth.destqp", "dqpn"),
                    ("infiniband.bth.psn", "psn"),
                    ("infiniband.aeth.msn", "msn"),
                ] {
                    if let Some(v) = want(k) {
                        if num(get(tf)) != Some(v) {
                            p.push(format!("{tf} = {:?}, want {v}", get(tf)));
                        }
                    }
                }
            }
            "icmp6" => {
                if get("icmpv6.checksum.status") != "1" {
                    p.push(format!(
                        "icmpv6 checksum status {:?}",
                        get("icmpv6.checksum.status")
                    ));
                }
            }
            _ => {
                if num(get("macc.opcode")) != want("opcode") {
                    p.push(format!("macc.opcode {:?}", get("macc.opcode")));
                }
                if let Some(q) = want("quanta") {
                    if num(get("macc.pause_time")) != Some(q) {
                        p.push(format!("pause_time {:?}", get("macc.pause_time")));
                    }
                } else {
                    for (tf, k) in [
                        ("macc.cbfc.enbv", "cev"),
                        ("macc.cbfc.pause_time.c0", "t0"),
                        ("macc.cbfc.pause_time.c7", "t7"),
                    ] {
                        if num(get(tf)) != want(k) {
                            p.push(format!("{tf} = {:?}, want {:?}", get(tf), want(k)));
                        }
                    }
                }
            }
        }
        if !p.is_empty() {
            problems.push(format!(
                "{} (frame {}): {}",
                it.what,
                get("frame.number"),
                p.join("; ")
            ));
        }
    }
    // The whole-capture expert summary must hold no errors or warnings.
    let out = tshark()
        .arg("-r")
        .arg(&ours)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-q",
            "-z",
            "expert",
        ])
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&out.stdout);
    if summary.contains("Errors (") || summary.contains("Warns (") {
        problems.push(format!("expert summary:\n{summary}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let control = problems
        .iter()
        .filter(|p| p.starts_with("NEGATIVE CONTROL"))
        .count();
    problems.retain(|p| !p.starts_with("NEGATIVE CONTROL"));
    assert!(
        problems.is_empty(),
        "tshark problems:\n{}",
        problems.join("\n")
    );
    assert_eq!(
        control, 1,
        "tshark did not flag the bad UDP checksum of the negative control"
    );
}
