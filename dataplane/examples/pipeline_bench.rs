//! Per-packet cost of the forwarding pipeline alone (no DPDK): IPv4 and IPv6
//! frames to 1024 destinations through a FIB with a few hundred routes.
//! `cargo run --release -p dataplane --example pipeline_bench`
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
    f.extend(std::iter::repeat(0xab).take(64));
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
    f.extend(std::iter::repeat(0xab).take(64));
    f
}

fn main() {
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
    let gw6: IpAddr = "2001:db8:2::2".parse().unwrap();
    for i in 0..256u32 {
        fib.insert4(format!("10.{}.{}.0/24", 16 + i / 256, i % 256).parse().unwrap(), NextHop { iface: 1, gateway: Some(gw4) });
        fib.insert6(format!("2001:db8:{:x}::/48", 0x100 + i).parse().unwrap(), NextHop { iface: 1, gateway: Some(gw6) });
    }
    fib.insert4("0.0.0.0/0".parse().unwrap(), NextHop { iface: 1, gateway: Some(gw4) });
    fib.insert6("::/0".parse().unwrap(), NextHop { iface: 1, gateway: Some(gw6) });
    let mut n = Neighbours::default();
    n.learn(1, gw4, [2, 0, 0, 0, 2, 2], NeighSource::Static);
    n.learn(1, gw6, [2, 0, 0, 0, 2, 2], NeighSource::Static);
    let mut p = Pipeline::new(topo, Arc::new(fib), Arc::new(n), Arc::new(WorkerCounters::default()), PipelineConfig::default());

    for (name, frames) in [
        ("ipv4", (0..1024u32).map(|i| frame4(Ipv4Addr::new(10, 16 + (i / 256) as u8 % 1, (i % 256) as u8, (i % 200) as u8 + 1))).collect::<Vec<_>>()),
        ("ipv6", (0..1024u32).map(|i| frame6(format!("2001:db8:{:x}::{:x}", 0x100 + i % 256, i + 1).parse().unwrap())).collect()),
    ] {
        let mut bufs: Vec<VecPacket> = frames.iter().map(|f| VecPacket::from_bytes(f)).collect();
        let iters = 2000;
        let t = Instant::now();
        let mut tx = 0u64;
        for _ in 0..iters {
            for (b, f) in bufs.iter_mut().zip(&frames) {
                // restore TTL/MACs cheaply: copy the first 64 bytes back
                b.data_mut()[..64].copy_from_slice(&f[..64]);
                if let Verdict::Tx(_) = p.process(b, 0, 1) {
                    tx += 1;
                }
            }
        }
        let n = (iters * frames.len()) as f64;
        println!("{name}: {:.1} ns/packet ({} forwarded of {}) per packet through Pipeline::process", t.elapsed().as_nanos() as f64 / n, tx, n);
        // The worker's way: bursts of 32 through the fast path.
        let t = Instant::now();
        let mut tx = 0u64;
        let mut out = [0u16; 32];
        for _ in 0..iters {
            for (bs, fs) in bufs.chunks_mut(32).zip(frames.chunks(32)) {
                for (b, f) in bs.iter_mut().zip(fs) {
                    b.data_mut()[..64].copy_from_slice(&f[..64]);
                }
                let mut views: [&mut [u8]; 32] = std::array::from_fn(|_| <&mut [u8]>::default());
                for (v, b) in views.iter_mut().zip(bs.iter_mut()) {
                    *v = b.data_mut();
                }
                tx += p.fast_burst(0, &mut views[..fs.len()], &mut out[..fs.len()]) as u64;
            }
        }
        println!("{name}: {:.1} ns/packet ({} forwarded of {}) in bursts of 32 through Pipeline::fast_burst", t.elapsed().as_nanos() as f64 / n, tx, n);
    }
}
