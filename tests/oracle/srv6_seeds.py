#!/usr/bin/env python3
"""Seed packets (scapy) for the SRv6 behaviours of a node with locator
fc00:0:1::/48: End (::1), End.X (::2), End.DT4 (::4), End.DT6 (::6),
and H.Encaps / H.Encaps.Red of traffic to 10.0.9.0/24, plus IPv6 with a
Hop-by-Hop header and a fragment; the hostile-traffic test mutates them.

usage: srv6_seeds.py OUT.pcap DST_MAC
"""
import sys

from scapy.all import IP, UDP, Ether, IPv6, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrSegmentRouting, Raw, wrpcap
from scapy.contrib.roce import BTH

out, mac = sys.argv[1], sys.argv[2]
eth = Ether(src="02:00:00:00:02:02", dst=mac)
src = "2001:db8:2::2"


def srh(segs, sl, inner_nh):
    # Segment list in reverse order (RFC 8754): segs[0] is the last SID.
    return IPv6ExtHdrSegmentRouting(addresses=segs, segleft=sl, lastentry=len(segs) - 1, nh=inner_nh)


inner4 = IP(src="10.0.3.9", dst="10.0.1.2", ttl=9) / UDP(sport=1000, dport=2000) / Raw(b"dt4-inner" * 4)
inner6 = IPv6(src="2001:db8:3::9", dst="2001:db8:1::2", hlim=9) / UDP(sport=1000, dport=2000) / Raw(b"dt6-inner" * 4)
roce6 = IPv6(src="2001:db8:3::9", dst="2001:db8:1::2", tc=2) / UDP(sport=49152, dport=4791) / BTH(opcode=4, dqpn=0x123, psn=7) / Raw(b"\x00" * 32)
pkts = [
    # End: SL 2 -> 1, next SID fc00:0:11::1.
    eth / IPv6(src=src, dst="fc00:0:1::1", hlim=20) / srh(["fc00:0:12::1", "fc00:0:11::1", "fc00:0:1::1"], 2, 41) / inner6,
    # End.X toward the WAN neighbour.
    eth / IPv6(src=src, dst="fc00:0:1::2", hlim=20) / srh(["fc00:0:12::1", "fc00:0:1::2"], 1, 41) / inner6,
    # End.DT4 / End.DT6 at the end of the list (SL 0), and without an SRH.
    eth / IPv6(src=src, dst="fc00:0:1::4", hlim=20) / srh(["fc00:0:1::4", "fc00:0:11::1"], 0, 4) / inner4,
    eth / IPv6(src=src, dst="fc00:0:1::4", hlim=20, nh=4) / inner4,
    eth / IPv6(src=src, dst="fc00:0:1::6", hlim=20) / srh(["fc00:0:1::6", "fc00:0:11::1"], 0, 41) / inner6,
    eth / IPv6(src=src, dst="fc00:0:1::6", hlim=20, nh=41) / roce6,
    # Transit to be steered into the SR policy (H.Encaps).
    eth / IP(src="10.0.2.9", dst="10.0.9.7", ttl=30) / UDP(sport=49152, dport=4791) / BTH(opcode=4, dqpn=0x55, psn=1) / Raw(b"\x00" * 64),
    # Extension headers on transit and local traffic.
    eth / IPv6(src=src, dst="2001:db8:1::2", hlim=20) / IPv6ExtHdrHopByHop() / UDP(sport=1, dport=2) / Raw(b"hbh" * 10),
    eth / IPv6(src=src, dst="2001:db8:2::1", hlim=20) / IPv6ExtHdrFragment(nh=58, id=7, m=1, offset=0) / Raw(b"\x80\x00\x00\x00\x00\x01\x00\x01" + b"f" * 40),
]
wrpcap(out, pkts)
print(f"seeds={len(pkts)}")
