//! Per-packet cost of the forwarding pipeline alone (no DPDK): IPv4 and IPv6
//! frames to 1024 destinations, per packet through `Pipeline::process` and
//! in bursts of 32 through `Pipeline::fast_burst` (as the worker), in two
//! FIBs: a few hundred /24 and /48 routes, and the overlapping routes and
//! destinations of `make bench` (dcir-benchgen: /8../25 and /32../64 with
//! defaults). Each figure is the best of ROUNDS rounds, net of restoring
//! the frames' first 64 bytes before each pass (measured alone).
//! `cargo run --release -p dataplane --example pipeline_bench`
use dataplane::benchdata;
use dataplane::counters::WorkerCounters;
use dataplane::packet::{PacketBuffer, VecPacket};
use dataplane::pipeline::{Pipeline, PipelineConfig, Verdict};
use dataplane::tables::{Fib, Interface, NeighSource, Neighbours, NextHop, Topology};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Instant;

fn frame4(dst: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 1, 2, 8, 0];
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&(20u16 + 8 + 64).to_be_bytes());
    h[8] = 64;
    h[9] = 17;
    h[12..16].copy_from_slice(&[10, 0, 1, 2]);
    h[16..20].copy_from_slice(&dst.octets());
    let c = dataplane::wire::checksum::checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&h);
    f.extend_from_slice(&[0x12, 0x34, 0x12, 0xb7, 0, 72, 0, 0]);
    f.extend(std::iter::repeat_n(0xab, 64));
    f
}

fn frame6(dst: Ipv6Addr) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 1, 2, 0x86, 0xdd];
    let mut h = [0u8; 40];
    h[0] = 0x60;
    h[4..6].copy_from_slice(&(8u16 + 64).to_be_bytes());
    h[6] = 17;
    h[7] = 64;
    h[8..24].copy_from_slice(&"2001:db8:1::2".parse::<Ipv6Addr>().unwrap().octets());
    h[24..40].copy_from_slice(&dst.octets());
    f.extend_from_slice(&h);
    f.extend_from_slice(&[0x12, 0x34, 0x12, 0xb7, 0, 72, 0, 0]);
    f.extend(std::iter::repeat_n(0xab, 64));
    f
}

const ROUNDS: usize = 7;
const ITERS: usize = 300;

fn pipeline(bench_routes: bool) -> Pipeline {
    let mut a = Interface::new("a", 0, None, [2, 0, 0, 0, 0, 1], 1500);
    a.v4.push("10.0.1.1/24".parse().unwrap());
    a.v6.push("2001:db8:1::1/64".parse().unwrap());
    let mut b = Interface::new("b", 1, None, [2, 0, 0, 0, 0, 2], 1500);
    b.v4.push("10.0.2.1/24".parse().unwrap());
    b.v6.push("2001:db8:2::1/64".parse().unwrap());
    let topo = Arc::new(Topology::new(vec![a, b]));
    let mut fib = Fib::default();
    fib.insert4("10.0.1.0/24".parse().unwrap(), NextHop { iface: 0, gateway: None });
    fib.insert4("10.0.2.0/24".parse().unwrap(), NextHop { iface: 1, gateway: None });
    fib.insert6("2001:db8:1::/64".parse().unwrap(), NextHop { iface: 0, gateway: None });
    fib.insert6("2001:db8:2::/64".parse().unwrap(), NextHop { iface: 1, gateway: None });
    let gw4: IpAddr = "10.0.2.2".parse().unwrap();
    let gw4b: IpAddr = "10.0.2.3".parse().unwrap();
    let gw6: IpAddr = "2001:db8:2::2".parse().unwrap();
    let gw6b: IpAddr = "2001:db8:2::3".parse().unwrap();
    if bench_routes {
        // dcir-benchgen's routes and gateways.
        for (p, l, via) in benchdata::ROUTES4 {
            fib.insert4(format!("{p}/{l}").parse().unwrap(), NextHop { iface: 1, gateway: Some(via.parse().unwrap()) });
        }
        for (p, l, via) in benchdata::ROUTES6 {
            fib.insert6(format!("{p}/{l}").parse().unwrap(), NextHop { iface: 1, gateway: Some(via.parse().unwrap()) });
        }
    } else {
        for i in 0..256u32 {
            fib.insert4(format!("10.{}.{}.0/24", 16 + i / 256, i % 256).parse().unwrap(), NextHop { iface: 1, gateway: Some(gw4) });
            fib.insert6(format!("2001:db8:{:x}::/48", 0x100 + i).parse().unwrap(), NextHop { iface: 1, gateway: Some(gw6) });
        }
        fib.insert4("0.0.0.0/0".parse().unwrap(), NextHop { iface: 1, gateway: Some(gw4) });
        fib.insert6("::/0".parse().unwrap(), NextHop { iface: 1, gateway: Some(gw6) });
    }
    let mut n = Neighbours::default();
    for g in [gw4, gw4b, gw6, gw6b] {
        n.learn(1, g, [2, 0, 0, 0, 2, 2], NeighSource::Static);
    }
    Pipeline::new(topo, Arc::new(fib), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default())
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Restore,
    Process,
    Fast,
}

/// One pass over the frames ITERS times: ns per packet and packets forwarded.
fn pass(p: &mut Pipeline, bufs: &mut [VecPacket], frames: &[Vec<u8>], mode: Mode) -> (f64, u64) {
    let t = Instant::now();
    let mut tx = 0u64;
    let mut out = [0u16; 32];
    for _ in 0..ITERS {
        for (bs, fs) in bufs.chunks_mut(32).zip(frames.chunks(32)) {
            // Restore TTL and MACs: the first 64 bytes.
            for (b, f) in bs.iter_mut().zip(fs) {
                b.data_mut()[..64].copy_from_slice(&f[..64]);
            }
            match mode {
                Mode::Restore => {
                    std::hint::black_box(&mut *bs);
                }
                Mode::Process => {
                    for b in bs.iter_mut() {
                        if let Verdict::Tx(_) = p.process(b, 0, 1) {
                            tx += 1;
                        }
                    }
                }
                Mode::Fast => {
                    let mut views: [&mut [u8]; 32] = std::array::from_fn(|_| <&mut [u8]>::default());
                    for (v, b) in views.iter_mut().zip(bs.iter_mut()) {
                        *v = b.data_mut();
                    }
                    tx += p.fast_burst(0, &mut views[..fs.len()], &mut out[..fs.len()]) as u64;
                }
            }
        }
    }
    (t.elapsed().as_nanos() as f64 / (ITERS * frames.len()) as f64, tx)
}

fn main() {
    let only = std::env::args().nth(1);
    let scenarios: [(&str, bool, bool); 4] = [("ipv4 /24s", false, false), ("ipv6 /48s", true, false), ("ipv4 make-bench", false, true), ("ipv6 make-bench", true, true)];
    println!("| FIB and traffic | Pipeline::process ns/pkt | fast_burst ns/pkt | forwarded (process / fast) |");
    println!("|---|---:|---:|---|");
    for (name, v6, bench_routes) in scenarios {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let mut p = pipeline(bench_routes);
        let frames: Vec<Vec<u8>> = (0..1024u32)
            .map(|i| match (v6, bench_routes) {
                (false, false) => frame4(Ipv4Addr::new(10, 16, (i % 256) as u8, (i % 200) as u8 + 1)),
                (true, false) => frame6(format!("2001:db8:{:x}::{:x}", 0x100 + i % 256, i + 1).parse().unwrap()),
                (false, true) => frame4(benchdata::dst4(i)),
                (true, true) => frame6(benchdata::dst6(i)),
            })
            .collect();
        let mut bufs: Vec<VecPacket> = frames.iter().map(|f| VecPacket::from_bytes(f)).collect();
        let (mut base, mut proc_, mut fast) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
        let (mut tp, mut tf) = (0, 0);
        for _ in 0..ROUNDS {
            base = base.min(pass(&mut p, &mut bufs, &frames, Mode::Restore).0);
            let (ns, t) = pass(&mut p, &mut bufs, &frames, Mode::Process);
            proc_ = proc_.min(ns);
            tp = t;
            let (ns, t) = pass(&mut p, &mut bufs, &frames, Mode::Fast);
            fast = fast.min(ns);
            tf = t;
        }
        let n = (ITERS * frames.len()) as u64;
        println!("| {name} | {:.1} | {:.1} | {tp} / {tf} of {n} |", proc_ - base, fast - base);
    }
}
