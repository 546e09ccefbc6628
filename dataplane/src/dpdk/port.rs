//! Ethernet ports: virtual devices (`net_pcap0,...`, `net_tap0,...`) or PCI
//! devices, with RX/TX queues and descriptor counts from the configuration,
//! RSS across RX queues where the device supports it.

use super::{strerror, Mempool};
use std::ffi::CString;
use std::mem::MaybeUninit;

#[derive(Debug, Clone)]
pub struct PortConfig {
    /// DPDK device name: the vdev name (`net_pcap0`) or PCI address.
    pub device_name: String,
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub rx_desc: u16,
    pub tx_desc: u16,
    pub mtu: u16,
    pub mac: Option<[u8; 6]>,
    pub promiscuous: bool,
}

pub struct Port {
    pub id: u16,
    pub name: String,
    pub socket: i32,
    pub mac: [u8; 6],
    pub rss: bool,
    pub driver: String,
    pub speed_mbps: u32,
    /// The PMD sends chained (multi-segment) mbufs and the offload is
    /// enabled: End.MT replicas can share the payload (zero-copy).
    pub multi_seg_tx: bool,
    /// net_tap: its tap's interface index and name (see [`Port::link_known`]).
    tap_if: Option<(u32, String)>,
    started: bool,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct PortStats {
    pub ipackets: u64,
    pub opackets: u64,
    pub ibytes: u64,
    pub obytes: u64,
    pub imissed: u64,
    pub ierrors: u64,
    pub oerrors: u64,
    pub rx_nombuf: u64,
}

impl Port {
    /// The DPDK port id and NUMA socket of a device (before opening it), so
    /// its RX queues can take mbufs from a pool on the same socket.
    pub fn socket_of(device_name: &str) -> Result<(u16, i32), String> {
        let cname = CString::new(device_name).map_err(|_| "device name contains NUL".to_string())?;
        let mut id = 0u16;
        // SAFETY: valid C string and out pointer.
        let r = unsafe { dpdk_sys::rte_eth_dev_get_port_by_name(cname.as_ptr(), &mut id) };
        if r != 0 {
            return Err(format!("device {device_name:?} not found (is it in the EAL --vdev / -a arguments?)"));
        }
        // SAFETY: valid port id.
        Ok((id, unsafe { dpdk_sys::rte_eth_dev_socket_id(id) }))
    }

    /// Look up the device by name and configure and start it. `pools[q]` is
    /// the mempool RX queue `q` allocates from.
    pub fn open(cfg: &PortConfig, pool: &Mempool) -> Result<Port, String> {
        let cname = CString::new(cfg.device_name.as_str()).map_err(|_| "device name contains NUL".to_string())?;
        let mut id = 0u16;
        // SAFETY: valid C string and out pointer.
        let r = unsafe { dpdk_sys::rte_eth_dev_get_port_by_name(cname.as_ptr(), &mut id) };
        if r != 0 {
            return Err(format!("device {:?} not found (is it in the EAL --vdev / -a arguments?)", cfg.device_name));
        }
        let mut info = MaybeUninit::<dpdk_sys::rte_eth_dev_info>::zeroed();
        // SAFETY: valid port id and out pointer.
        let r = unsafe { dpdk_sys::rte_eth_dev_info_get(id, info.as_mut_ptr()) };
        if r != 0 {
            return Err(format!("rte_eth_dev_info_get({id}): {}", strerror(r)));
        }
        // SAFETY: filled by the call above.
        let info = unsafe { info.assume_init() };
        if cfg.rx_queues > info.max_rx_queues || cfg.tx_queues > info.max_tx_queues {
            return Err(format!(
                "device {}: wants {} rx / {} tx queues, device supports {} / {}",
                cfg.device_name, cfg.rx_queues, cfg.tx_queues, info.max_rx_queues, info.max_tx_queues
            ));
        }
        let driver = if info.driver_name.is_null() {
            String::new()
        } else {
            // SAFETY: driver_name is a static C string.
            unsafe { std::ffi::CStr::from_ptr(info.driver_name).to_string_lossy().into_owned() }
        };

        let mut conf: dpdk_sys::rte_eth_conf = Default::default();
        // SAFETY: reading extern consts.
        let (rss_ip, rss_udp, rss_tcp, mq_rss) = unsafe {
            (dpdk_sys::DCIR_ETH_RSS_IP, dpdk_sys::DCIR_ETH_RSS_UDP, dpdk_sys::DCIR_ETH_RSS_TCP, dpdk_sys::DCIR_ETH_MQ_RX_RSS)
        };
        let rss_hf = (rss_ip | rss_udp | rss_tcp) & info.flow_type_rss_offloads;
        let rss = cfg.rx_queues > 1 && rss_hf != 0;
        if rss {
            conf.rxmode.mq_mode = mq_rss as _;
            conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
        }
        // SAFETY: reading an extern const.
        let multi_seg = unsafe { dpdk_sys::DCIR_ETH_TX_OFFLOAD_MULTI_SEGS };
        let multi_seg_capa = info.tx_offload_capa & multi_seg != 0;
        if multi_seg_capa {
            conf.txmode.offloads |= multi_seg;
        }
        // net_pcap and net_null do not advertise the offload but take chains:
        // net_pcap's TX reads every packet with rte_pktmbuf_read (a copy only
        // when it is not contiguous), net_null frees it whole (DPDK 22.11
        // drivers/net/pcap/pcap_ethdev.c, drivers/net/null/rte_eth_null.c).
        let multi_seg_tx = multi_seg_capa || matches!(driver.as_str(), "net_pcap" | "net_null");
        // SAFETY: plain FFI calls on a valid port.
        let r = unsafe { dpdk_sys::rte_eth_dev_configure(id, cfg.rx_queues, cfg.tx_queues, &conf) };
        if r != 0 {
            return Err(format!("rte_eth_dev_configure({}): {}", cfg.device_name, strerror(r)));
        }
        let (mut nrx, mut ntx) = (cfg.rx_desc, cfg.tx_desc);
        // SAFETY: valid port and out pointers.
        let r = unsafe { dpdk_sys::rte_eth_dev_adjust_nb_rx_tx_desc(id, &mut nrx, &mut ntx) };
        if r != 0 {
            return Err(format!("rte_eth_dev_adjust_nb_rx_tx_desc({}): {}", cfg.device_name, strerror(r)));
        }
        // SAFETY: plain FFI.
        let socket = unsafe { dpdk_sys::rte_eth_dev_socket_id(id) };
        let qsock = if socket < 0 { 0 } else { socket as u32 };
        for q in 0..cfg.rx_queues {
            // SAFETY: valid port, queue, pool.
            let r = unsafe { dpdk_sys::rte_eth_rx_queue_setup(id, q, nrx, qsock, std::ptr::null(), pool.as_ptr()) };
            if r != 0 {
                return Err(format!("rx queue {q} of {}: {}", cfg.device_name, strerror(r)));
            }
        }
        for q in 0..cfg.tx_queues {
            // SAFETY: valid port and queue.
            let r = unsafe { dpdk_sys::rte_eth_tx_queue_setup(id, q, ntx, qsock, std::ptr::null()) };
            if r != 0 {
                return Err(format!("tx queue {q} of {}: {}", cfg.device_name, strerror(r)));
            }
        }
        let mut promiscuous = cfg.promiscuous;
        if let Some(mac) = cfg.mac {
            let mut a = dpdk_sys::rte_ether_addr { addr_bytes: mac };
            // SAFETY: valid port and address.
            let r = unsafe { dpdk_sys::rte_eth_dev_default_mac_addr_set(id, &mut a) };
            if r != 0 {
                // Some devices cannot change their MAC; we still source
                // from the configured one, and run promiscuous so that
                // frames to it are received.
                eprintln!("note: {}: cannot set MAC ({}), using it in software only (promiscuous)", cfg.device_name, strerror(r));
                promiscuous = true;
            }
        }
        // SAFETY: valid port. MTU errors are reported but net_pcap ignores MTU.
        let r = unsafe { dpdk_sys::rte_eth_dev_set_mtu(id, cfg.mtu) };
        if r != 0 && r != -95 {
            eprintln!("note: {}: set_mtu({}) -> {}", cfg.device_name, cfg.mtu, strerror(r));
        }
        // SAFETY: valid port.
        let r = unsafe { dpdk_sys::rte_eth_dev_start(id) };
        if r != 0 {
            return Err(format!("rte_eth_dev_start({}): {}", cfg.device_name, strerror(r)));
        }
        if promiscuous {
            // SAFETY: valid port.
            let r = unsafe { dpdk_sys::rte_eth_promiscuous_enable(id) };
            // SAFETY: valid port.
            let m = unsafe { dpdk_sys::rte_eth_allmulticast_enable(id) };
            for (what, r) in [("promiscuous", r), ("all-multicast", m)] {
                // -ENOTSUP: a virtual device that receives every frame.
                if r != 0 && r != -95 {
                    eprintln!("warning: {}: cannot enable {what} mode ({}): frames to other addresses than the port's may not be received", cfg.device_name, strerror(r));
                }
            }
        }
        let mac = match cfg.mac {
            Some(m) => m,
            None => {
                let mut a = dpdk_sys::rte_ether_addr::default();
                // SAFETY: valid port and out pointer.
                unsafe { dpdk_sys::rte_eth_macaddr_get(id, &mut a) };
                a.addr_bytes
            }
        };
        let mut link = dpdk_sys::rte_eth_link::default();
        // SAFETY: valid port and out pointer.
        unsafe { dpdk_sys::rte_eth_link_get_nowait(id, &mut link) };
        Ok(Port {
            id,
            name: cfg.device_name.clone(),
            socket,
            mac,
            rss,
            driver: driver.clone(),
            speed_mbps: link.link_speed,
            multi_seg_tx,
            tap_if: if driver == "net_tap" { ifname(info.if_index).map(|n| (info.if_index, n)) } else { None },
            started: true,
        })
    }

    /// Whether the link state can be read: net_tap reads its tap's flags by
    /// interface name in the router's network namespace, so once the tap
    /// is moved into another namespace it reads "down" whatever the link
    /// is. Such a port's link state is unknown, and taken as up.
    pub fn link_known(&self) -> bool {
        let Some((ix, name)) = &self.tap_if else { return true };
        ifname(*ix).as_ref() == Some(name)
    }

    /// Link status right now (non-blocking); up when unknown
    /// ([`Port::link_known`]) or when the driver cannot read it now (a
    /// failed read is no link down: its traffic would all be dropped as
    /// `link-down`).
    pub fn link_up(&self) -> bool {
        if !self.link_known() {
            return true;
        }
        let mut link = dpdk_sys::rte_eth_link::default();
        // SAFETY: valid port and out pointer.
        if unsafe { dpdk_sys::rte_eth_link_get_nowait(self.id, &mut link) } != 0 {
            return true;
        }
        link.link_status() != 0
    }

    /// Hand received PAUSE / PFC frames to the router instead of acting on
    /// them in the NIC (`[port.pfc]`, [`crate::pfcrx`]): link-level flow
    /// control off (`RTE_ETH_FC_NONE`: the NIC neither pauses its TX nor
    /// sends PAUSE), MAC Control frames forwarded to the host
    /// (`mac_ctrl_frame_fwd`). Err(errno) when the driver cannot (virtual
    /// devices: -ENOTSUP; they deliver every frame anyway).
    pub fn forward_mac_control(&self) -> Result<(), i32> {
        let mut fc = dpdk_sys::rte_eth_fc_conf::default();
        // SAFETY: valid port and out pointer.
        let r = unsafe { dpdk_sys::rte_eth_dev_flow_ctrl_get(self.id, &mut fc) };
        if r != 0 {
            return Err(r);
        }
        fc.mode = dpdk_sys::RTE_ETH_FC_NONE;
        fc.mac_ctrl_frame_fwd = 1;
        // SAFETY: valid port and configuration.
        match unsafe { dpdk_sys::rte_eth_dev_flow_ctrl_set(self.id, &mut fc) } {
            0 => Ok(()),
            e => Err(e),
        }
    }

    /// Link speed in bit/s (0 when unknown).
    pub fn link_bps(&self) -> u64 {
        let mut link = dpdk_sys::rte_eth_link::default();
        // SAFETY: valid port and out pointer.
        unsafe { dpdk_sys::rte_eth_link_get_nowait(self.id, &mut link) };
        u64::from(link.link_speed) * 1_000_000
    }

    pub fn stats(&self) -> PortStats {
        self.try_stats().unwrap_or_default()
    }

    /// The port's counters, or None when the driver could not read them
    /// (a reading of zeros would look like counters that went back).
    pub fn try_stats(&self) -> Option<PortStats> {
        let mut s = dpdk_sys::rte_eth_stats::default();
        // SAFETY: valid port and out pointer.
        if unsafe { dpdk_sys::rte_eth_stats_get(self.id, &mut s) } != 0 {
            return None;
        }
        Some(PortStats {
            ipackets: s.ipackets,
            opackets: s.opackets,
            ibytes: s.ibytes,
            obytes: s.obytes,
            imissed: s.imissed,
            ierrors: s.ierrors,
            oerrors: s.oerrors,
            rx_nombuf: s.rx_nombuf,
        })
    }

    /// Stop and close the device; its queues give their mbufs back.
    pub fn close(&mut self) {
        if self.started {
            // SAFETY: valid port, no worker uses it any more.
            unsafe {
                dpdk_sys::rte_eth_dev_stop(self.id);
                dpdk_sys::rte_eth_dev_close(self.id);
            }
            self.started = false;
        }
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        self.close();
    }
}

/// Receive up to `out.len()` packets.
#[inline(always)]
pub fn rx_burst(port: u16, queue: u16, out: &mut [*mut dpdk_sys::rte_mbuf]) -> usize {
    // SAFETY: the caller owns queue `queue` of `port` on this thread.
    unsafe { usize::from(dpdk_sys::rte_eth_rx_burst(port, queue, out.as_mut_ptr(), out.len() as u16)) }
}

/// Transmit; returns how many the NIC took (the rest still belong to the caller).
#[inline(always)]
pub fn tx_burst(port: u16, queue: u16, pkts: &mut [*mut dpdk_sys::rte_mbuf]) -> usize {
    // SAFETY: the caller owns queue `queue` of `port` on this thread.
    unsafe { usize::from(dpdk_sys::rte_eth_tx_burst(port, queue, pkts.as_mut_ptr(), pkts.len() as u16)) }
}

/// The name of interface `ix` in this network namespace.
fn ifname(ix: u32) -> Option<String> {
    extern "C" {
        fn if_indextoname(ifindex: u32, ifname: *mut std::ffi::c_char) -> *mut std::ffi::c_char;
    }
    if ix == 0 {
        return None;
    }
    let mut buf = [0 as std::ffi::c_char; 16];
    // SAFETY: buf holds IF_NAMESIZE (16) bytes; on success it is a C string.
    let p = unsafe { if_indextoname(ix, buf.as_mut_ptr()) };
    (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}
