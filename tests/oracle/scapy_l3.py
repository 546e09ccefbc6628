#!/usr/bin/env python3
"""Independent scapy oracle for dcirouter's L2/L3/L4 wire code (Ethernet and
VLAN tags, ARP, IPv4, IPv6 and its extension headers, UDP, ICMPv4, ICMPv6
including Neighbor Discovery).

Called by dataplane/tests/wire_oracle_l3.rs. Plain line protocol: one record
per line, ``<name> <hex> key=value key=value ...`` (values never contain
spaces). The keys are the same in both directions, so the Rust side compares
scapy's view of a frame with its own, key by key.

Subcommands
  build   scapy builds a set of Ethernet frames from given field values and
          prints each frame as hex with the fields scapy was given / sees.
  check   stdin: ``<name> <hex>`` per line, Ethernet frames emitted by the
          Rust code. For each, scapy dissects it, and for every IPv4 / UDP /
          ICMP / ICMPv6 checksum deletes the field, rebuilds the packet and
          compares; prints ``<name> - chk=ok|bad:<layer> key=value ...``.

If scapy is missing this prints ``MISSING ...`` and exits 3.
"""

import ipaddress
import sys

try:
    from scapy.all import Ether, Dot1Q, Dot1AD, ARP, IP, IPv6, UDP, ICMP, Raw, raw
    from scapy.layers.inet import IPOption_NOP, IPOption_RR, IPerror, UDPerror, ICMPerror
    from scapy.layers.inet6 import (
        IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, IPv6ExtHdrSegmentRouting, IPv6ExtHdrFragment,
        IPv6ExtHdrDestOpt, PadN, Pad1, ICMPv6EchoRequest, ICMPv6EchoReply, ICMPv6ND_NS,
        ICMPv6ND_NA, ICMPv6ND_RS, ICMPv6NDOptSrcLLAddr, ICMPv6NDOptDstLLAddr,
        ICMPv6TimeExceeded, ICMPv6DestUnreach, ICMPv6PacketTooBig, ICMPv6ParamProblem,
        IPerror6, _ICMPv6, in6_chksum,
    )
    from scapy.layers.ipsec import AH
except ImportError as e:  # pragma: no cover
    print("MISSING scapy (pip install 'scapy>=2.6'): %s" % e)
    sys.exit(3)

EXT = (IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, IPv6ExtHdrSegmentRouting, IPv6ExtHdrFragment,
       IPv6ExtHdrDestOpt, AH)


def ip(a):
    return str(ipaddress.ip_address(a))


def fields(p):
    """Flatten the fields the Rust dissector also reports."""
    f = {}
    e = p[Ether]
    f["eth.dst"] = e.dst.lower()
    f["eth.src"] = e.src.lower()
    t = e.type
    layer = e.payload
    i = 0
    while isinstance(layer, Dot1Q):  # Dot1AD is a subclass
        f["vlan%d.tpid" % i] = t
        f["vlan%d.pcp" % i] = layer.prio
        f["vlan%d.dei" % i] = layer.dei
        f["vlan%d.vid" % i] = layer.vlan
        t = layer.type
        layer = layer.payload
        i += 1
    f["eth.vlans"] = i
    f["eth.type"] = t
    if isinstance(layer, ARP):
        f["arp.op"] = layer.op
        f["arp.sha"] = layer.hwsrc.lower()
        f["arp.spa"] = ip(layer.psrc)
        f["arp.tha"] = layer.hwdst.lower()
        f["arp.tpa"] = ip(layer.pdst)
        return f
    if isinstance(layer, IP):
        f["ip.src"] = ip(layer.src)
        f["ip.dst"] = ip(layer.dst)
        f["ip.ttl"] = layer.ttl
        f["ip.proto"] = layer.proto
        f["ip.dscp"] = layer.tos >> 2
        f["ip.ecn"] = layer.tos & 3
        f["ip.id"] = layer.id
        f["ip.df"] = int(bool(layer.flags.DF))
        f["ip.mf"] = int(bool(layer.flags.MF))
        f["ip.frag"] = layer.frag * 8
        f["ip.len"] = layer.len
        f["ip.hlen"] = layer.ihl * 4
        f["ip.chksum"] = layer.chksum
        upper = layer.payload
    elif isinstance(layer, IPv6):
        f["ip6.src"] = ip(layer.src)
        f["ip6.dst"] = ip(layer.dst)
        f["ip6.tc"] = layer.tc
        f["ip6.fl"] = layer.fl
        f["ip6.hlim"] = layer.hlim
        f["ip6.nh"] = layer.nh
        f["ip6.plen"] = layer.plen
        total = len(raw(layer))
        upper = layer.payload
        nh = layer.nh
        count = 0
        while isinstance(upper, EXT):
            count += 1
            if isinstance(upper, (IPv6ExtHdrRouting, IPv6ExtHdrSegmentRouting)) and "rh.type" not in f:
                f["rh.type"] = upper.type
                f["rh.segleft"] = upper.segleft
            if isinstance(upper, IPv6ExtHdrFragment):
                f["frag.offset"] = upper.offset * 8
                f["frag.m"] = upper.m
                f["frag.id"] = upper.id
            if isinstance(upper, AH):
                f["ah.spi"] = upper.spi
                f["ah.seq"] = upper.seq
            nh = upper.nh
            upper = upper.payload
        f["ext.count"] = count
        f["ext.upper"] = nh
        f["ext.offset"] = total - len(raw(upper))
        frag = layer.getlayer(IPv6ExtHdrFragment)
        if nh == 17 and not isinstance(upper, UDP) and not (frag and frag.offset):
            upper = UDP(raw(upper))  # scapy leaves what follows AH undissected
    else:
        return f
    if isinstance(upper, UDP) and not isinstance(upper, UDPerror):
        f["udp.sport"] = upper.sport
        f["udp.dport"] = upper.dport
        f["udp.len"] = upper.len
        f["udp.chksum"] = upper.chksum
    elif isinstance(upper, ICMP) and not isinstance(upper, ICMPerror):
        f["icmp.type"] = upper.type
        f["icmp.code"] = upper.code
        f["icmp.chksum"] = upper.chksum
        if upper.type in (0, 8):
            f["icmp.id"] = upper.id
            f["icmp.seq"] = upper.seq
        if upper.type == 3 and upper.code == 4:
            f["icmp.mtu"] = upper.nexthopmtu
        if upper.type in (3, 11):
            f["icmp.quoted"] = len(raw(upper.payload))
    elif isinstance(upper, _ICMPv6):
        f["icmp6.type"] = upper.type
        f["icmp6.code"] = upper.code
        f["icmp6.chksum"] = upper.cksum
        if isinstance(upper, (ICMPv6EchoRequest, ICMPv6EchoReply)):
            f["icmp6.id"] = upper.id
            f["icmp6.seq"] = upper.seq
            f["icmp6.datalen"] = len(upper.data)
        if isinstance(upper, ICMPv6PacketTooBig):
            f["icmp6.mtu"] = upper.mtu
        if isinstance(upper, ICMPv6ParamProblem):
            f["icmp6.ptr"] = upper.ptr
        if isinstance(upper, (ICMPv6TimeExceeded, ICMPv6DestUnreach, ICMPv6PacketTooBig, ICMPv6ParamProblem)):
            f["icmp6.quoted"] = len(raw(upper.payload))
        if isinstance(upper, (ICMPv6ND_NS, ICMPv6ND_NA)):
            f["nd.target"] = ip(upper.tgt)
        if isinstance(upper, ICMPv6ND_NA):
            f["nd.flags"] = (upper.R << 7) | (upper.S << 6) | (upper.O << 5)
        if ICMPv6NDOptSrcLLAddr in upper:
            f["nd.sll"] = upper[ICMPv6NDOptSrcLLAddr].lladdr.lower()
        if ICMPv6NDOptDstLLAddr in upper:
            f["nd.tll"] = upper[ICMPv6NDOptDstLLAddr].lladdr.lower()
    return f


def line(name, data, f):
    kv = " ".join("%s=%s" % (k, v) for k, v in sorted(f.items()))
    return "%s %s %s" % (name, data.hex() if data is not None else "-", kv)


def samples():
    m1, m2 = "02:00:00:00:00:01", "02:00:00:00:00:02"
    a4, b4 = "192.0.2.1", "198.51.100.7"
    a6, b6 = "2001:db8::1", "2001:db8:0:1::2"
    ll1, ll2 = "fe80::1", "fe80::2"
    udp_in_ip = IP(src="10.0.0.1", dst="10.0.0.2", ttl=1, id=77) / UDP(sport=5000, dport=4791) / Raw(b"quoted!!")
    udp_in_ip6 = IPv6(src=a6, dst=b6, hlim=1) / UDP(sport=5000, dport=4791) / Raw(b"quoted!!")
    yield "eth_ipv4_udp", Ether(dst=m2, src=m1) / IP(src=a4, dst=b4, ttl=64, tos=0xb8 | 2, id=0x1234, flags="DF") / UDP(sport=49152, dport=4791) / Raw(b"hello, world")
    yield "dot1q_ipv4_udp_odd", Ether(dst=m2, src=m1) / Dot1Q(prio=5, dei=1, vlan=100) / IP(src=a4, dst=b4, ttl=3, tos=3, flags="MF", frag=185) / UDP(sport=1, dport=2) / Raw(b"odd")
    yield "qinq_ipv6_udp", Ether(dst=m2, src=m1) / Dot1AD(prio=3, vlan=10) / Dot1Q(prio=7, vlan=4094) / IPv6(src=a6, dst=b6, tc=0x2e << 2 | 1, fl=0xabcde, hlim=200) / UDP(sport=7, dport=4791) / Raw(bytes(range(33)))
    yield "ipv4_options_icmp_echo", Ether(dst=m2, src=m1) / IP(src=a4, dst=b4, options=[IPOption_RR(routers=["1.2.3.4"]), IPOption_NOP()]) / ICMP(type=8, id=0x4242, seq=9) / Raw(b"ping-data")
    yield "ipv4_icmp_echo_reply", Ether(dst=m2, src=m1) / IP(src=b4, dst=a4, ttl=255) / ICMP(type=0, id=1, seq=65535) / Raw(b"")
    yield "ipv4_icmp_time_exceeded", Ether(dst=m2, src=m1) / IP(src=a4, dst="10.0.0.1") / ICMP(type=11, code=0) / udp_in_ip
    yield "ipv4_icmp_frag_needed", Ether(dst=m2, src=m1) / IP(src=a4, dst="10.0.0.1") / ICMP(type=3, code=4, nexthopmtu=1400) / udp_in_ip
    yield "arp_request", Ether(dst="ff:ff:ff:ff:ff:ff", src=m1) / ARP(op=1, hwsrc=m1, psrc="10.0.0.1", hwdst="00:00:00:00:00:00", pdst="10.0.0.2")
    yield "arp_reply_vlan", Ether(dst=m1, src=m2) / Dot1Q(vlan=33) / ARP(op=2, hwsrc=m2, psrc="10.0.0.2", hwdst=m1, pdst="10.0.0.1")
    yield "ipv6_ext_chain_udp", Ether(dst=m2, src=m1) / IPv6(src=a6, dst=b6) / IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\x00" * 4)]) / IPv6ExtHdrRouting(type=0, segleft=1, addresses=["2001:db8::99"]) / IPv6ExtHdrFragment(offset=0, m=1, id=0xdeadbeef) / IPv6ExtHdrDestOpt(options=[Pad1(), Pad1(), PadN(optdata=b"\x00\x00")]) / UDP(sport=1234, dport=4791) / Raw(b"x" * 20)
    yield "ipv6_srh_udp", Ether(dst=m2, src=m1) / IPv6(src=a6, dst="fc00:0:1::1") / IPv6ExtHdrSegmentRouting(addresses=["fc00:0:3::1", "fc00:0:2::1", "fc00:0:1::1"], segleft=2) / UDP(sport=4000, dport=4791) / Raw(b"roce")
    # scapy computes no UDP checksum under AH: do it here.
    u = UDP(sport=9, dport=9) / Raw(b"ah")
    u.chksum = in6_chksum(17, IPv6(src=a6, dst=b6) / u, raw(u))
    yield "ipv6_ah_udp", Ether(dst=m2, src=m1) / IPv6(src=a6, dst=b6) / AH(nh=17, payloadlen=4, spi=0x1000, seq=5, icv=b"\xaa" * 12) / u
    yield "ipv6_later_fragment", Ether(dst=m2, src=m1) / IPv6(src=a6, dst=b6) / IPv6ExtHdrFragment(nh=17, offset=185, m=0, id=7) / Raw(b"fragment-payload")
    yield "icmp6_echo_request", Ether(dst=m2, src=m1) / IPv6(src=a6, dst=b6) / ICMPv6EchoRequest(id=0x1111, seq=2, data=b"abcdefg")
    yield "icmp6_echo_reply_hbh", Ether(dst=m2, src=m1) / IPv6(src=b6, dst=a6) / IPv6ExtHdrHopByHop() / ICMPv6EchoReply(id=3, seq=4, data=b"")
    yield "icmp6_ns", Ether(dst="33:33:ff:00:00:02", src=m1) / IPv6(src=ll1, dst="ff02::1:ff00:2", hlim=255) / ICMPv6ND_NS(tgt="2001:db8::2") / ICMPv6NDOptSrcLLAddr(lladdr=m1)
    yield "icmp6_ns_dad", Ether(dst="33:33:ff:00:00:02", src=m1) / IPv6(src="::", dst="ff02::1:ff00:2", hlim=255) / ICMPv6ND_NS(tgt="2001:db8::2")
    yield "icmp6_na", Ether(dst=m1, src=m2) / IPv6(src=ll2, dst=ll1, hlim=255) / ICMPv6ND_NA(R=1, S=1, O=0, tgt="2001:db8::2") / ICMPv6NDOptDstLLAddr(lladdr=m2)
    yield "icmp6_rs", Ether(dst="33:33:00:00:00:02", src=m1) / IPv6(src=ll1, dst="ff02::2", hlim=255) / ICMPv6ND_RS() / ICMPv6NDOptSrcLLAddr(lladdr=m1)
    yield "icmp6_time_exceeded", Ether(dst=m2, src=m1) / IPv6(src="2001:db8::fe", dst=a6) / ICMPv6TimeExceeded(code=0) / udp_in_ip6
    yield "icmp6_dest_unreach", Ether(dst=m2, src=m1) / IPv6(src="2001:db8::fe", dst=a6) / ICMPv6DestUnreach(code=3) / udp_in_ip6
    yield "icmp6_packet_too_big", Ether(dst=m2, src=m1) / IPv6(src="2001:db8::fe", dst=a6) / ICMPv6PacketTooBig(mtu=1280) / udp_in_ip6
    yield "icmp6_param_problem", Ether(dst=m2, src=m1) / IPv6(src="2001:db8::fe", dst=a6) / ICMPv6ParamProblem(code=1, ptr=40) / udp_in_ip6


def build():
    for name, p in samples():
        data = raw(p)
        print(line(name, data, fields(Ether(data))))


def recheck(p):
    """Delete each checksum scapy knows, rebuild, and compare."""
    bad = []
    for cls, fld in ((IP, "chksum"), (UDP, "chksum"), (ICMP, "chksum"), (_ICMPv6, "cksum")):
        layer = p.getlayer(cls)
        if layer is None or isinstance(layer, (IPerror, UDPerror, ICMPerror, IPerror6)):
            continue
        if cls is UDP and layer.chksum == 0 and IP in p:
            continue  # "no checksum" over IPv4
        ours = getattr(layer, fld)
        q = p.copy()
        setattr(q.getlayer(cls), fld, None)
        theirs = getattr(Ether(raw(q)).getlayer(cls), fld)
        if ours != theirs:
            bad.append("%s:ours=%#06x,scapy=%#06x" % (cls.__name__, ours, theirs))
    return "ok" if not bad else "bad:" + ";".join(bad)


def check():
    for l in sys.stdin:
        l = l.strip()
        if not l:
            continue
        name, hx = l.split()[:2]
        data = bytes.fromhex(hx)
        p = Ether(data)
        f = fields(p)
        f["chk"] = recheck(p)
        if raw(p) != data:
            f["rebuild"] = "differs"
        print(line(name, None, f))


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "build":
        build()
    elif cmd == "check":
        check()
    else:
        print("usage: scapy_l3.py build|check", file=sys.stderr)
        sys.exit(2)
