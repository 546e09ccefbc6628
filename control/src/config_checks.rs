//! Configuration checks of `control::config::load_str` that an operator
//! expects (from a review; each test failed on the code before its fix,
//! "Was:" says what it did). `GOOD` is the configuration of the unit
//! tests: port "dc" (vdev, 10.0.1.1/24, 2001:db8:1::1/64), port "wan"
//! (PCI, 4 RX queues, 10.0.2.1/24) with VLAN 100 (10.0.3.1/24), two
//! routes and a static neighbour.
//!
//! The product rule (README "Configuration reference", DESIGN.md invariant
//! 5): "a bad configuration stops start-up with a message that names the
//! field and value (and why); nothing is started". Each test below feeds
//! a configuration an experienced network operator (or the RFC cited)
//! would call wrong, and expects `load_str` to refuse it with the field
//! and the value in the message. No DPDK / EAL is needed: `load_str` only
//! parses and validates.

use super::load_str;
use super::refusals::refused;
use super::tests_common::GOOD;

/// `GOOD` with the first occurrence of `from` replaced by `to` (panics
/// when `from` is absent, so a test cannot silently test GOOD itself).
fn edit(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "test bug: {from:?} not in GOOD");
    GOOD.replacen(from, to, 1)
}

#[test]
fn baseline_is_accepted() {
    // Documents that the base configuration is valid, so every failure
    // below is about the one edit it makes.
    load_str(GOOD).unwrap();
}

/// Documents an important behaviour that holds: a typo in a key of a
/// table (`adresses`) is an error naming the key, not a silently ignored
/// field (every section is `deny_unknown_fields`).
#[test]
fn unknown_key_in_a_table_is_refused() {
    refused(&edit("addresses = [\"10.0.2.1/24\"]", "adresses = [\"10.0.2.1/24\"]"), &["adresses"]);
}

// ---------------------------------------------------------------- MTU --

/// RFC 8200 s.5: "IPv6 requires that every link in the Internet have an
/// MTU of 1280 octets or greater"; an interface with an IPv6 address and a
/// smaller MTU cannot carry IPv6 (and RFC 8201 PMTUD will never go below
/// 1280). Was: `mtu` is checked against 576..=9600 whatever the
/// address families, so `mtu = 1000` with 2001:db8:1::1/64 is accepted.
#[test]
fn ipv6_interface_with_mtu_below_1280_is_refused() {
    let cfg = edit("mac = \"02:00:00:00:00:01\"", "mac = \"02:00:00:00:00:01\"\nmtu = 1000");
    refused(&cfg, &["port[0]", "1000"]);
}

/// IEEE 802.1Q: the 4-octet tag enlarges the frame (1522 octets max for a
/// 1500-octet payload), not the IP MTU; Linux VLAN devices and router
/// sub-interfaces inherit the parent's MTU. The frame budget already counts
/// the tag (`mtu + 18 + 128 <= data_room`). Was: the code
/// (config.rs, `Interface::new(.., p.mtu - 4)`) gives every VLAN
/// interface the port's MTU minus 4, undocumented: a 1500-byte packet to a
/// VLAN on a 1500 port gets Fragmentation Needed / Packet Too Big with
/// 1496. On a 1280 port the VLAN's IPv6 MTU silently becomes 1276, below
/// the RFC 8200 minimum.
#[test]
fn vlan_interface_mtu_is_the_ports_ip_mtu() {
    let c = load_str(GOOD).unwrap();
    let vlan = c.interfaces.iter().find(|i| i.name == "wan.100").expect("wan.100");
    let port = c.interfaces.iter().find(|i| i.name == "wan").expect("wan");
    assert_eq!(vlan.mtu, port.mtu, "VLAN wan.100 has IP MTU {} on a port of MTU {}", vlan.mtu, port.mtu);
}

// ------------------------------------------------------ addressing --

/// RFC 1122 s.3.2.1.3 / RFC 6890: 0.0.0.0/8 ("this network") and
/// 255.255.255.255 (limited broadcast) are not assignable unicast
/// addresses; 240.0.0.0/4 is reserved. Was: the code (`parse_addrs`) only
/// refuses multicast, unspecified and loopback, and the network /
/// broadcast address of subnets shorter than /31, so all of these are
/// accepted as interface addresses.
#[test]
fn reserved_ipv4_interface_addresses_are_refused() {
    let accepted: Vec<&str> = ["0.1.2.3/8", "255.255.255.255/32", "240.0.0.1/24"]
        .into_iter()
        .filter(|a| load_str(&edit("addresses = [\"10.0.2.1/24\"]", &format!("addresses = [\"10.0.2.1/24\", \"{a}\"]"))).is_ok())
        .collect();
    assert!(accepted.is_empty(), "accepted as interface addresses: {accepted:?}");
}

/// Two `[[port]]`s on one PCI function: "3b:00.0" is the short form of
/// "0000:3b:00.0" (domain 0), and PCI addresses are hexadecimal, so
/// "0000:3B:00.0" is the same device too. Was: the code compares the
/// device strings (`devs.insert(device_name)`), so "device used by two
/// ports" is not detected; DPDK then fails (or probes the device once)
/// after EAL start.
#[test]
fn same_pci_device_in_two_spellings_is_refused() {
    let accepted: Vec<&str> = ["3b:00.0", "0000:3B:00.0"]
        .into_iter()
        .filter(|d| load_str(&format!("{GOOD}\n[[port]]\nname = \"wan2\"\ndevice = \"{d}\"\naddresses = [\"10.0.9.1/24\"]\n")).is_ok())
        .collect();
    assert!(accepted.is_empty(), "accepted as a second port beside 0000:3b:00.0: {accepted:?}");
}

// ----------------------------------------------------------- routes --

/// Operator expectation (Junos / Linux refuse or normalise, and the rest of
/// this configuration refuses it: `source_format.prefix`,
/// `srv6.policy.prefix`, `cnp_auth.prefix`, `wan_notify.sources` all say
/// "host bits set (did you mean ...?)"): a route prefix with host bits set
/// is a typo. Was: the code parses `route.prefix` and inserts it without
/// checking `prefix == prefix.trunc()`.
#[test]
fn route_prefix_with_host_bits_is_refused() {
    let cfg = edit("prefix = \"192.0.2.0/24\"", "prefix = \"192.0.2.1/24\"");
    refused(&cfg, &["route[0].prefix", "192.0.2.1/24"]);
}

/// A gateway is a neighbour, never one of the router's own addresses
/// (Linux: "Error: Nexthop has invalid gateway"). Was: the code
/// (`resolve_nexthop`) only looks for the connected subnet holding the
/// gateway, so `via` = the router's own 10.0.2.1 is accepted (packets for
/// 192.0.2.0/24 would be ARPed for our own address).
#[test]
fn route_via_own_address_is_refused() {
    let cfg = edit("via = \"10.0.2.2\"", "via = \"10.0.2.1\"");
    refused(&cfg, &["route[0]", "10.0.2.1"]);
}

/// RFC 1812 s.5.2.4.3 / RFC 919: a subnet's broadcast (and network)
/// address is not a host, so it cannot be a next hop. Was: the code accepts
/// `via = "10.0.2.255"` on 10.0.2.0/24.
#[test]
fn route_via_broadcast_address_of_the_subnet_is_refused() {
    let cfg = edit("via = \"10.0.2.2\"", "via = \"10.0.2.255\"");
    refused(&cfg, &["route[0]", "10.0.2.255"]);
}

/// A gateway must be reachable on the interface the route names (Linux:
/// "Nexthop has invalid gateway" unless `onlink`). Here 10.0.1.2 is on
/// dc's subnet but the route says `interface = "wan"`: ARP for it goes out
/// of the wrong link. Was: the code (`resolve_nexthop`): with an explicit
/// interface the gateway is not checked at all.
#[test]
fn route_gateway_on_another_interfaces_subnet_is_refused() {
    let cfg = edit("via = \"10.0.2.2\"", "via = \"10.0.1.2\"\ninterface = \"wan\"");
    refused(&cfg, &["route[0]", "10.0.1.2"]);
}

/// RFC 4291 s.2.5.6 / RFC 4007 s.6: a link-local address is unique only on
/// its link, so a link-local next hop needs its interface (Linux refuses
/// `via fe80::..` without `dev`). Was: the code resolves `via fe80::99`
/// through the connected fe80::/64 in the FIB, i.e. whichever interface's
/// fe80::/64 was inserted last, silently.
#[test]
fn link_local_gateway_without_interface_is_refused() {
    let cfg = edit("\"2001:db8:1::1/64\"]", "\"2001:db8:1::1/64\", \"fe80::1/64\"]")
        .replacen("addresses = [\"10.0.2.1/24\"]", "addresses = [\"10.0.2.1/24\", \"fe80::2/64\"]", 1)
        .replacen("prefix = \"2001:db8:99::/48\"\ninterface = \"dc\"", "prefix = \"2001:db8:99::/48\"\nvia = \"fe80::99\"", 1);
    refused(&cfg, &["route[1]", "fe80::99"]);
}

// ------------------------------------------------------- neighbours --

/// A static neighbour entry for one of the router's own addresses maps
/// our address to a foreign MAC (ARP/ND poisoning by configuration).
/// Was: the code checks only the interface name, the MAC and duplicates.
#[test]
fn static_neighbour_with_own_address_is_refused() {
    let cfg = edit("ip = \"10.0.2.2\"", "ip = \"10.0.2.1\"");
    refused(&cfg, &["neighbour[0].ip", "10.0.2.1"]);
}

/// RFC 1112 s.6.4 / RFC 2464 s.7: multicast (and broadcast) IP addresses
/// map to Ethernet addresses algorithmically; they have no neighbour
/// entry. Was: the code accepts `ip = "224.0.0.5"` with a unicast MAC.
#[test]
fn static_neighbour_with_multicast_address_is_refused() {
    let cfg = edit("ip = \"10.0.2.2\"", "ip = \"224.0.0.5\"");
    refused(&cfg, &["neighbour[0].ip", "224.0.0.5"]);
}

/// Operator expectation (Cisco "arp" refuses an address not on a connected
/// network of the interface): a static neighbour must be on one of its
/// interface's subnets; 10.0.1.5 is on dc's subnet, so an entry on "wan"
/// is never used (or misdirects). Was: the code accepts any address on any
/// existing interface.
#[test]
fn static_neighbour_off_the_interfaces_subnets_is_refused() {
    let cfg = edit("ip = \"10.0.2.2\"", "ip = \"10.0.1.5\"");
    refused(&cfg, &["neighbour[0]", "10.0.1.5"]);
}

// ------------------------------------------------- cores and pools --

/// DPDK (rte_eth_rx_queue_setup / rte_eth_dev_start on a physical NIC)
/// fills every RX descriptor with an mbuf from the pool; l3fwd sizes its
/// pool as ports x rxq x rxd + txd + bursts + caches. Port "wan" (PCI)
/// with 4 RX queues x 8192 descriptors needs 32768 mbufs before any
/// packet arrives; the pool has 16383. Was: the code checks each of
/// rx_desc, rx_queues and mbufs_per_socket on its own, never against
/// each other, so this passes validation and fails at port start.
#[test]
fn mempool_too_small_for_the_rx_rings_is_refused() {
    let cfg = edit("rx_queues = 4", "rx_queues = 4\nrx_desc = 8192");
    match load_str(&cfg) {
        Ok(_) => panic!("accepted: 4 x 8192 RX descriptors on a PCI port with mempool.mbufs_per_socket = 16383"),
        Err(e) => assert!(e.contains("mbufs_per_socket") || e.contains("rx_desc"), "message names neither field: {e}"),
    }
}

// ------------------------------------------------------------ SRv6 --

/// RFC 8986 s.3.1: a locator is a prefix; "fc00:0:1::5/48" has host bits
/// set, and the rest of this configuration refuses that elsewhere
/// (`srv6.policy.prefix`, `srv6.notification_sources`). Was: the code
/// (`srv6_plan`) parses the locator without checking it.
#[test]
fn srv6_locator_with_host_bits_is_refused() {
    let cfg = format!("{GOOD}\n[srv6]\nlocator = \"fc00:0:1::5/48\"\n[[srv6.sid]]\nsid = \"fc00:0:1::100\"\nbehaviour = \"end\"\n");
    refused(&cfg, &["srv6.locator", "fc00:0:1::5/48"]);
}

/// A local SID equal to an interface address: packets to the interface
/// address (ND, ping, BGP) would be taken as SRv6 behaviour, or the SID
/// never reached; operators expect "address already in use". Was: the code
/// checks SIDs against the locator and each other, never against the
/// interfaces' addresses.
#[test]
fn srv6_sid_equal_to_an_interface_address_is_refused() {
    let cfg = format!("{GOOD}\n[srv6]\nlocator = \"2001:db8:1::/48\"\n[[srv6.sid]]\nsid = \"2001:db8:1::1\"\nbehaviour = \"end\"\n");
    refused(&cfg, &["srv6.sid[0].sid", "2001:db8:1::1"]);
}

// ------------------------------------------------------ congestion --

/// draft-tian-ccwg-long-haul-cnp s.9: the Long-haul CNP source is "only the
/// router's configured address"; config.rs's own message says "must be a
/// unicast address of this router", and `ingress_pe.source_v4` is checked
/// against the interfaces. Was: the code (`congestion_plan`) accepts a
/// `source_v4` that is no address of this router (198.51.100.7).
#[test]
fn congestion_source_v4_not_an_address_of_this_router_is_refused() {
    let cfg = edit(
        "addresses = [\"10.0.2.1/24\"]",
        "addresses = [\"10.0.2.1/24\"]\nrate_mbps = 10000\n[port.congestion]\nrtt_est_us = 1000\nsource_v4 = \"198.51.100.7\"",
    );
    refused(&cfg, &["port[1].congestion.source_v4", "198.51.100.7"]);
}

/// RFC 8986 s.4.2: End.X forwards "to the Layer-3 adjacency" given by its
/// next hop, a neighbour on `interface`. Was: the code (`srv6_plan`) only
/// checks that `via` parses as IPv6: the router's own address on that
/// interface (2001:db8:1::1 on dc) is accepted as the adjacency.
#[test]
fn srv6_end_x_next_hop_equal_to_own_address_is_refused() {
    let cfg = format!("{GOOD}\n[srv6]\nlocator = \"fc00:0:1::/48\"\n[[srv6.sid]]\nsid = \"fc00:0:1::100\"\nbehaviour = \"end.x\"\ninterface = \"dc\"\nvia = \"2001:db8:1::1\"\n");
    refused(&cfg, &["srv6.sid[0].via", "2001:db8:1::1"]);
}
