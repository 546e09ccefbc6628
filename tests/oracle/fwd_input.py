"""Build the input pcap for tests/pcap_forwarding.rs with scapy (independent of
our encoders). Usage: fwd_input.py OUT.pcap"""
import sys
from scapy.all import Ether, Dot1Q, IP, IPv6, UDP, ICMP, ARP, ICMPv6EchoRequest, Raw, wrpcap
from scapy.contrib.roce import BTH

R_DC = "02:dc:00:00:00:01"
HOST = "02:00:00:00:01:02"
e = lambda: Ether(src=HOST, dst=R_DC)
pkts = [
    e() / IP(src="10.0.1.2", dst="10.0.3.5", ttl=64) / UDP(sport=1000, dport=2000) / Raw(b"P0-ipv4-forward"),
    e() / IPv6(src="2001:db8:1::2", dst="2001:db8:3::5", hlim=64) / UDP(sport=1000, dport=2000) / Raw(b"P1-ipv6-forward"),
    e() / IP(src="10.0.1.2", dst="10.0.3.6", ttl=64, tos=2) / UDP(sport=49152, dport=4791, chksum=0) / BTH(opcode=4, dqpn=0x123, psn=7) / Raw(b"P2" + bytes(range(62))),
    Ether(src=HOST, dst=R_DC) / Dot1Q(vlan=100, prio=3) / IP(src="10.0.100.2", dst="10.0.3.7", ttl=64) / UDP(sport=1000, dport=2000) / Raw(b"P3-vlan100-to-untagged"),
    e() / IP(src="10.0.1.2", dst="10.0.4.9", ttl=64) / UDP(sport=1000, dport=2000) / Raw(b"P4-untagged-to-vlan200"),
    e() / IP(src="10.0.1.2", dst="192.0.2.1") / UDP() / Raw(b"P5-no-route"),
    e() / IPv6(src="2001:db8:1::2", dst="2001:db8:99::1") / UDP() / Raw(b"P6-no-route6"),
    e() / IP(src="10.0.1.2", dst="10.0.3.5", ttl=1) / UDP(sport=40000, dport=33434) / Raw(b"P7-ttl1"),
    e() / IP(src="10.0.1.2", dst="10.0.3.5", chksum=0x1234) / UDP() / Raw(b"P8-bad-checksum"),
    None,  # P9 truncated, built below
    Ether(src=HOST, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=HOST, psrc="10.0.1.2", pdst="10.0.1.1"),
    e() / IP(src="10.0.1.2", dst="10.0.1.1") / ICMP(type=8, id=0x77, seq=3) / Raw(b"P11-ping"),
    e() / IPv6(src="2001:db8:1::2", dst="2001:db8:3::5", hlim=1) / UDP(sport=40000, dport=33434) / Raw(b"P12-hlim1"),
    None,  # P13 runt
    e() / Raw(b"\x00" * 46),  # P14 unknown ethertype (set below)
    Ether(src=HOST, dst=R_DC) / Dot1Q(vlan=999) / IP(src="10.0.1.2", dst="10.0.3.5") / UDP() / Raw(b"P15-unknown-vlan"),
    e() / IPv6(src="2001:db8:1::2", dst="2001:db8:1::1") / ICMPv6EchoRequest(id=5, seq=9, data=b"P16-ping6"),
    # Over the wan port's MTU of 1300: Fragmentation Needed / Packet Too Big.
    e() / IP(src="10.0.1.2", dst="10.0.3.5", flags="DF") / UDP(sport=1000, dport=2000) / Raw(b"P17-df-too-big" + bytes(1400 - 42)),
    e() / IPv6(src="2001:db8:1::2", dst="2001:db8:3::5") / UDP(sport=1000, dport=2000) / Raw(b"P18-too-big6" + bytes(1400 - 60)),
    # Over the MTU without DF: fragmented (2828 octets: 1280 + 1280 + 248 of payload).
    e() / IP(src="10.0.1.2", dst="10.0.3.5", id=0x1919, flags=0) / UDP(sport=1000, dport=2000) / Raw(b"P19-fragment-me" + bytes(i % 251 for i in range(2800 - 15))),
]
trunc = bytes(e() / IP(src="10.0.1.2", dst="10.0.3.5", len=200) / UDP() / Raw(b"P9-truncated"))
pkts[9] = Ether(trunc)
pkts[13] = Raw(bytes.fromhex("02dc00000001020000000102"))
pkts[14] = Ether(src=HOST, dst=R_DC, type=0x88B5) / Raw(b"\x00" * 46)
wrpcap(sys.argv[1], [p if not isinstance(p, Raw) else p for p in pkts])
