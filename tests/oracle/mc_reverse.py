#!/usr/bin/env python3
"""Independent oracle for the End.MT reverse path
(draft-li-spring-rdma-multicast-over-srv6-00 s.5.3), driven by
tests/pcap_forwarding.rs (end_mt_reverse_path_aggregates_responses).

Usage:
  mc_reverse.py build DIR [wan [learn]]
      scapy writes DIR/dc-in.pcap: the receivers' RC responses to the Proxy
      Address (SA = receiver, DA = Proxy, BTH DestQP = Designated QPN, AETH,
      ICRC computed by scapy.contrib.roce) in this order:
        R1 ACK 5, R2 ACK 3, R3 ACK 4, R2 ACK 5, X (not a receiver) ACK 5,
        R1 ACK 5 with a corrupted ICRC, R3 NAK (PSN sequence error) ePSN 6,
        R1 CNP, R1 CNP, R2 CNP
      and DIR/wan-in.pcap: S1's data packet, PSN 7, SRv6-encapsulated to the
      router's End.MT SID with an End.MT TLV for another edge node only (the
      router replicates to its provisioned receivers).
      With `wan`, everything arrives on the WAN port instead: DIR/wan-in.pcap
      holds the data packet followed by the responses (to the WAN MAC) and
      DIR/dc-in.pcap is empty (the multi-worker steering test).
      With `learn` as well, the data packet's SRH also carries an End.MT
      TLV for the router's SID naming R1..R3 (QPNs 0x500..0x502): the
      router's group learns its receivers from it (tlv_receivers = "learn")
      and replicates to them.
  mc_reverse.py check PCAP [SRC DST DQPN]
      scapy dissects every frame (Ether / IPv6 / UDP / BTH / AETH or
      CNPPadding) and checks: SA = Proxy, DA = S1, BTH DestQP = S1's QPN
      (or SA = SRC, DA = DST, DestQP = DQPN: hop-by-hop aggregation, the
      router sending upstream as a receiver of the next node would),
      ICRC = the one scapy computes, UDP checksum = the one scapy computes.
      Prints one line per frame: `ACK <psn> <syndrome> <msn>`,
      `NAK <psn> <syndrome> <msn>` or `CNP becn=<b>`, followed by
      ` ICRC-ok UDP-ok` when both check; exits 1 on any failure.
"""
import socket
import struct
import sys

try:
    from scapy.all import Ether, IPv6, UDP, Raw, raw, wrpcap, rdpcap
    from scapy.layers.inet6 import (IPv6ExtHdrSegmentRouting,
                                    IPv6ExtHdrSegmentRoutingTLV)
    from scapy.contrib.roce import BTH, AETH, CNPPadding
except ImportError as e:  # pragma: no cover
    print("FATAL scapy >= 2.6 with contrib.roce is required (pip install scapy): %s" % e)
    sys.exit(3)

R_DC = "02:dc:00:00:00:01"
R_WAN = "02:dc:00:00:00:02"
GW = "02:00:00:00:02:02"
PROXY = "2001:db8:ff::1"
S1 = "2001:db8:3::5"
S1_QPN = 0x100
DESIGNATED_QPN = 1
SID = "fc00:0:1::a"
END_MT_TYPE = 124
RX = ["2001:db8:1::10", "2001:db8:1::11", "2001:db8:1::12"]
X = "2001:db8:1::99"


TO = R_DC


def resp(src, opcode, psn, syndrome=None, msn=0, bad_icrc=False):
    mac = "02:00:00:00:01:%02x" % (int(src.split(":")[-1], 16) & 0xff)
    p = (Ether(dst=TO, src=mac) /
         IPv6(src=src, dst=PROXY, hlim=64, tc=26 << 2) /
         UDP(sport=0xc001, dport=4791) /
         BTH(opcode=opcode, dqpn=DESIGNATED_QPN, psn=psn, becn=1 if opcode == 0x81 else 0))
    if opcode == 0x81:
        p = p / CNPPadding()
    else:
        p = p / AETH(syndrome=syndrome, msn=msn)
    b = bytearray(raw(p))
    if bad_icrc:
        b[-1] ^= 0xff
    return Ether(bytes(b))


def ack(src, psn, **kw):
    return resp(src, 0x11, psn, 0x1f, psn, **kw)


def end_mt_tlv(edge, receivers):
    value = b"\x00\x00" + socket.inet_pton(socket.AF_INET6, edge)
    value += struct.pack("!B3x", len(receivers))
    for addr, qpn in receivers:
        value += socket.inet_pton(socket.AF_INET6, addr) + struct.pack("!I", qpn << 8)
    return IPv6ExtHdrSegmentRoutingTLV(type=END_MT_TYPE, len=len(value), value=value)


def data(psn, learn=False):
    payload = bytes((i * 7 + 5) & 0xff for i in range(128))
    inner = (IPv6(src=S1, dst=PROXY, hlim=64) / UDP(sport=0xc100, dport=4791) /
             BTH(opcode=0x04, dqpn=DESIGNATED_QPN, psn=psn, ackreq=1) / Raw(payload))
    tlvs = [end_mt_tlv("fc00:0:7::10", [("2001:db8:7::1", 0x42)])]
    if learn:
        tlvs.append(end_mt_tlv(SID, [(a, 0x500 + i) for i, a in enumerate(RX)]))
    srh = IPv6ExtHdrSegmentRouting(addresses=[PROXY, SID], segleft=1, lastentry=1,
                                   tlv_objects=tlvs, nh=41)
    return Ether(dst=R_WAN, src=GW) / IPv6(src=S1, dst=SID, hlim=64, nh=43) / srh / inner


def build(d, wan=False, learn=False):
    global TO
    if wan:
        TO = R_WAN
    frames = [
        ack(RX[0], 5), ack(RX[1], 3), ack(RX[2], 4), ack(RX[1], 5),
        ack(X, 5), ack(RX[0], 5, bad_icrc=True),
        resp(RX[2], 0x11, 6, 0x60, 5),
        resp(RX[0], 0x81, 0), resp(RX[0], 0x81, 0), resp(RX[1], 0x81, 0),
    ]
    if wan:
        wrpcap(d + "/dc-in.pcap", [])
        wrpcap(d + "/wan-in.pcap", [data(7, learn)] + frames)
    else:
        wrpcap(d + "/dc-in.pcap", frames)
        wrpcap(d + "/wan-in.pcap", [data(7)])
    print("OK %d" % len(frames))


def expected_icrc(ip6):
    q = IPv6(raw(ip6))
    q[BTH].icrc = None
    return raw(q)[-4:]


def same(a, b):
    return socket.inet_pton(socket.AF_INET6, a) == socket.inet_pton(socket.AF_INET6, b)


def check(path, src=None, dst=None, dqpn=None):
    src = src or PROXY
    dst = dst or S1
    dqpn = S1_QPN if dqpn is None else dqpn
    fails = []
    for i, f in enumerate(rdpcap(path)):
        if IPv6 not in f or BTH not in f:
            fails.append("frame %d: not RoCEv2 over IPv6" % i)
            continue
        ip, bth = f[IPv6], f[BTH]
        if not same(ip.src, src) or not same(ip.dst, dst):
            fails.append("frame %d: %s -> %s" % (i, ip.src, ip.dst))
        if bth.dqpn != dqpn:
            fails.append("frame %d: dqpn %#x" % (i, bth.dqpn))
        if bth.opcode == 0x11 and AETH in f:
            a = f[AETH]
            kind = "ACK" if a.syndrome >> 5 == 0 else "NAK"
            line = "%s %d %#04x %d" % (kind, bth.psn, a.syndrome, a.msn)
        elif bth.opcode == 0x81 and CNPPadding in f:
            line = "CNP becn=%d" % bth.becn
        else:
            fails.append("frame %d: opcode %#x" % (i, bth.opcode))
            continue
        ok = True
        if raw(ip)[-4:] != expected_icrc(ip):
            fails.append("frame %d: ICRC %s, scapy computes %s" % (i, raw(ip)[-4:].hex(), expected_icrc(ip).hex()))
            ok = False
        else:
            line += " ICRC-ok"
        q = IPv6(raw(ip))
        q[UDP].chksum = None
        want = IPv6(raw(q))[UDP].chksum
        if want != ip[UDP].chksum:
            fails.append("frame %d: UDP checksum %#x, scapy computes %#x" % (i, ip[UDP].chksum, want))
            ok = False
        else:
            line += " UDP-ok"
        print(line)
    for x in fails:
        print("FAIL", x)
    if fails:
        sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], "wan" in sys.argv[3:], "learn" in sys.argv[3:])
    elif sys.argv[1] == "check":
        if len(sys.argv) > 3:
            check(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5], 0))
        else:
            check(sys.argv[2])
    else:
        sys.exit("usage: mc_reverse.py build DIR | check PCAP [SRC DST DQPN]")
