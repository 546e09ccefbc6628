//! dcirouter data plane.
//!
//! * [`wire`]: packet formats, pure Rust, no DPDK types.
//! * behaviour modules written against [`packet::PacketBuffer`].
//! * [`dpdk`] (feature `dpdk`): EAL, pools, ports, `Mbuf`, workers.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod wire;
pub mod counters;
pub mod packet;
pub mod tables;
pub mod nud;
pub mod unres;
pub mod neighpub;
#[cfg(feature = "dpdk")]
pub mod dpdk;
pub mod pipeline;
pub mod frag;
pub mod reasm;
pub mod fastpath;
pub mod srv6;
#[cfg(feature = "dpdk")]
pub mod worker;
pub mod lpm;
pub mod congestion;
pub mod egress;
pub mod pfcrx;
pub mod classify;
pub mod node;
pub mod sim;
pub mod sim6;
pub mod multicast;
pub mod mld;
pub mod endc;
pub mod rttprobe;
pub mod fann;
pub mod sim_wan;
pub mod hostinfo;
pub mod benchdata;

/// Reads a worker's clock (ns) off the packet path, where the poll
/// loop's time, taken before the burst was received, is too early: the
/// date of a probe's Echo Reply or of the ACK that ends a timed round trip.
pub type ReadClock = std::sync::Arc<dyn Fn() -> u64 + Send + Sync>;
