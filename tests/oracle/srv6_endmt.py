#!/usr/bin/env python3
"""Independent oracle for End.MT (draft-li-spring-rdma-multicast-over-srv6-00),
driven by dataplane/tests/srv6_unit.rs (oracle_scapy_end_mt).

Usage:
  srv6_endmt.py build SID "ADDR,QPN;ADDR,QPN;..."
      scapy builds an Ethernet frame: outer IPv6 (S1 -> SID) / SRH (segment
      list [Proxy, SID], SL 1, an End.MT TLV for another edge node and one
      for SID with the given receivers) / inner IPv6 (S1 -> Proxy) / UDP 4791
      / BTH (RC SEND ONLY, DestQPN = Designated QPN 1) / payload, the ICRC
      computed by scapy.contrib.roce. Prints the frame as hex.
  srv6_endmt.py check ORIGINAL_HEX
      reads lines `ADDR,QPN,FRAME_HEX` (one per replica) on stdin; for each,
      scapy dissects the replica and checks: inner IPv6 DA = ADDR, BTH DestQPN
      = QPN, the ICRC equals the one scapy computes, the UDP checksum equals
      the one scapy computes, and every other field (source, PSN, opcode,
      payload) equals the original inner packet's. Prints `OK n` or FAIL lines
      and exits 1 on any failure.
"""
import sys

try:
    from scapy.all import Ether, IPv6, UDP, Raw, raw
    from scapy.layers.inet6 import (IPv6ExtHdrSegmentRouting,
                                    IPv6ExtHdrSegmentRoutingTLV)
    from scapy.contrib.roce import BTH
except ImportError as e:  # pragma: no cover
    print("FATAL scapy >= 2.6 with contrib.roce is required (pip install scapy): %s" % e)
    sys.exit(3)
import socket
import struct

END_MT_TYPE = 124
S1 = "2001:db8:5::1"
PROXY = "2001:db8:ff::1"
DESIGNATED_QPN = 1


def end_mt_tlv(edge, receivers):
    value = b"\x00\x00" + socket.inet_pton(socket.AF_INET6, edge)
    value += struct.pack("!B3x", len(receivers))
    for addr, qpn in receivers:
        value += socket.inet_pton(socket.AF_INET6, addr) + struct.pack("!I", qpn << 8)
    return IPv6ExtHdrSegmentRoutingTLV(type=END_MT_TYPE, len=len(value), value=value)


def inner_packet():
    payload = bytes((i * 13 + 1) & 0xff for i in range(256))
    return (IPv6(src=S1, dst=PROXY, hlim=64, tc=0x02) /
            UDP(sport=0xc0de, dport=4791) /
            BTH(opcode=0x04, dqpn=DESIGNATED_QPN, psn=0x123456, ackreq=1) /
            Raw(payload))


def build(sid, spec):
    receivers = []
    for item in spec.split(";"):
        a, q = item.split(",")
        receivers.append((a, int(q)))
    tlvs = [end_mt_tlv("fc00:0:7::10", [("2001:db8:7::1", 0x42)]),
            end_mt_tlv(sid, receivers)]
    srh = IPv6ExtHdrSegmentRouting(addresses=[PROXY, sid], segleft=1,
                                   lastentry=1, tlv_objects=tlvs, nh=41)
    frame = (Ether(dst="02:00:00:00:00:10", src="00:11:22:00:00:02") /
             IPv6(src=S1, dst=sid, hlim=64, nh=43) / srh / inner_packet())
    b = raw(frame)
    # Sanity: scapy parses it back with the SRH and the BTH.
    p = Ether(b)
    assert p[IPv6ExtHdrSegmentRouting].segleft == 1
    assert p[BTH].dqpn == DESIGNATED_QPN
    print(b.hex())


def expected_icrc(ip6):
    q = IPv6(raw(ip6))
    q[BTH].icrc = None
    return raw(q)[-4:]


def check(orig_hex):
    orig = Ether(bytes.fromhex(orig_hex))
    inner = orig[IPv6ExtHdrSegmentRouting].payload
    assert isinstance(inner, IPv6), inner
    fails, n = [], 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        addr, qpn, fhex = line.split(",")
        qpn = int(qpn)
        n += 1
        f = Ether(bytes.fromhex(fhex))
        ip = f[IPv6]
        if IPv6ExtHdrSegmentRouting in f:
            fails.append("%s: replica still has an SRH" % addr)
            continue
        if socket.inet_pton(socket.AF_INET6, ip.dst) != socket.inet_pton(socket.AF_INET6, addr):
            fails.append("%s: DA %s" % (addr, ip.dst))
        if f[BTH].dqpn != qpn:
            fails.append("%s: dqpn %#x want %#x" % (addr, f[BTH].dqpn, qpn))
        got = raw(ip)[-4:]
        want = expected_icrc(ip)
        if got != want:
            fails.append("%s: ICRC %s, scapy computes %s" % (addr, got.hex(), want.hex()))
        q = IPv6(raw(ip))
        q[UDP].chksum = None
        if IPv6(raw(q))[UDP].chksum != ip[UDP].chksum:
            fails.append("%s: UDP checksum %#x, scapy computes %#x" % (addr, ip[UDP].chksum, IPv6(raw(q))[UDP].chksum))
        for fld in ("opcode", "psn", "pkey", "ackreq"):
            if getattr(f[BTH], fld) != getattr(inner[BTH], fld):
                fails.append("%s: BTH %s changed" % (addr, fld))
        if ip.src != inner.src or ip.plen != inner.plen or raw(f[BTH].payload) != raw(inner[BTH].payload):
            fails.append("%s: source / length / payload changed" % addr)
        if ip.hlim != inner.hlim - 1:
            fails.append("%s: hop limit %d" % (addr, ip.hlim))
    for x in fails:
        print("FAIL", x)
    if fails:
        sys.exit(1)
    print("OK %d" % n)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        sys.exit("usage: srv6_endmt.py build SID SPEC | check HEX")
