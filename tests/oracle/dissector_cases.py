#!/usr/bin/env python3
"""Frames for the test of tools/wireshark/dcirouter.lua, built here with
scapy and struct from the drafts' figures (not with dcirouter's encoders).

Usage: dissector_cases.py OUT.pcap
Writes the frames to OUT.pcap and prints one line per frame, tab-separated:
  N  WHAT  FIELD=VALUE ...  -FIELD ...  ~EXPERT ...
FIELD=VALUE: the tshark field must read VALUE (an integer in decimal, which
tshark may print in hex; a string; several occurrences joined by ",");
-FIELD: the field must be absent; ~EXPERT: an expert message containing
EXPERT must be present.
"""
import struct
import sys

try:
    from scapy.all import (IP, IPv6, UDP, Ether, Raw, raw, wrpcap,
                           IPv6ExtHdrSegmentRouting, ICMPv6EchoRequest)
    from scapy.contrib.roce import BTH
    from scapy.utils import checksum as inet_checksum
    from scapy.layers.inet6 import in6_chksum
except ImportError as e:  # pragma: no cover
    print("FATAL scapy >= 2.6 with contrib.roce is required: %s" % e)
    sys.exit(3)
import socket

MAC = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
LHCNP_TYPE, FANN_TYPE, EXT_CLASS, ENDMT_TLV, FANN_PORT = 200, 201, 247, 124, 49790


def body(level, action, param, srcqp, mtype, mvalue):
    """Long-haul CNP fixed body, s.6.1 (12 octets)."""
    return struct.pack("!BBHIB", level, action << 6, param, srcqp, mtype) + mvalue.to_bytes(3, "big")


def ext(objects):
    """RFC 4884 extension structure (version 2) with objects (class, ctype, data)."""
    objs = b""
    for cls, ct, data in objects:
        n = 4 + len(data)
        objs += struct.pack("!HBB", n, cls, ct) + data + b"\0" * ((4 - n % 4) % 4)
    hdr = bytearray(struct.pack("!BBH", 0x20, 0, 0)) + objs
    c = inet_checksum(bytes(hdr))
    hdr[2:4] = struct.pack("!H", c)
    return bytes(hdr)


def icmp6(src, dst, typ, code, payload, bad=False, srh=None):
    """IPv6 / [SRH] / ICMPv6 with the checksum over the final destination
    (RFC 8200 s.8.1), computed here by scapy's in6_chksum."""
    msg = bytearray(struct.pack("!BBH", typ, code, 0) + payload)
    ip = IPv6(src=src, dst=dst, nh=58 if srh is None else 43)
    if srh is None:
        pkt = ip / Raw(bytes(msg))
        c = in6_chksum(58, pkt[IPv6], bytes(msg))
    else:
        pkt = ip / srh / Raw(bytes(msg))
        c = in6_chksum(58, pkt[IPv6ExtHdrSegmentRouting], bytes(msg))
    if bad:
        c ^= 0x5a5a
    msg[2:4] = struct.pack("!H", c)
    pkt[Raw].load = bytes(msg)
    return Ether(**MAC) / pkt


def roce_lhcnp(ipcls, src, dst, dqpn, payload, e=True):
    ip = ipcls(src=src, dst=dst)
    bth = BTH(opcode=0x81, pkey=0xffff, becn=1, resv6=0x20 if e else 0, dqpn=dqpn, psn=0)
    # UDP checksum 0 over IPv4 (as RoCEv2 senders do), computed over IPv6.
    udp = UDP(sport=49152, dport=4791, chksum=0 if ipcls is IP else None)
    return Ether(**MAC) / ip / udp / bth / Raw(payload)


def fann_msg(hop, etype, sub, eid, ts, origin, bitmap, stack):
    """FANN fields from Version on (s.5.1.2: 37 octets, then the stack)."""
    return (struct.pack("!BBBBBIQ", 1, 0, hop, etype, sub, eid, ts)
            + socket.inet_pton(socket.AF_INET6, origin) + struct.pack("!I", bitmap) + stack)


def bit(i):
    return 0x80000000 >> i


def main(out):
    frames, cases = [], []

    def add(frame, what, fields=None, absent=(), expert=()):
        frames.append(frame)
        cases.append(dict(frame=len(frames), what=what, fields=fields or {},
                          absent=list(absent), expert=list(expert)))

    # 1. ICMPv6 Long-haul CNP, Rate Reduce 30 %, the section 7 example's level.
    add(icmp6("2001:db8::9", "2001:db8:1::2", LHCNP_TYPE, 0, body(180, 2, 30, 0x123456, 1, 130000)),
        "ICMPv6 Long-haul CNP",
        {"lhcnp.type": 200, "lhcnp.code": 0, "lhcnp.level": 180, "lhcnp.action": 2,
         "lhcnp.parameter": 30, "lhcnp.source_qp": 0x123456, "lhcnp.metric_type": 1,
         "lhcnp.metric_value": 130000, "lhcnp.checksum.status": 1},
        absent=["lhcnp.ext.version", "fann.version", "icmpv6.type"])
    # 2. The same with a wrong checksum.
    add(icmp6("2001:db8::9", "2001:db8:1::2", LHCNP_TYPE, 0, body(180, 2, 30, 0x123456, 1, 130000), bad=True),
        "ICMPv6 Long-haul CNP, bad checksum",
        {"lhcnp.checksum.status": 2}, expert=["ICMPv6 checksum does not verify"])
    # 3. Pause 100 us with the three extension objects of s.6.1.1.
    objs = [(EXT_CLASS, 1, struct.pack("!Q", 0xe8f0a1b2c3d4e5f6)), (EXT_CLASS, 2, b"N1"),
            (EXT_CLASS, 3, bytes([1, 2, 3, 4, 5]))]
    add(icmp6("2001:db8::9", "2001:db8:1::2", LHCNP_TYPE, 0, body(200, 1, 100, 0x42, 3, 55) + ext(objs)),
        "ICMPv6 Long-haul CNP with extension objects",
        {"lhcnp.action": 1, "lhcnp.parameter": 100, "lhcnp.metric_type": 3, "lhcnp.metric_value": 55,
         "lhcnp.checksum.status": 1, "lhcnp.ext.version": 2, "lhcnp.ext.checksum.status": 1,
         "lhcnp.obj.ctype": [1, 2, 3], "lhcnp.obj.class": [247, 247, 247], "lhcnp.obj.length": [12, 6, 9],
         "lhcnp.obj.timestamp": 0xe8f0a1b2c3d4e5f6, "lhcnp.obj.device_id": "N1",
         "lhcnp.obj.path_id": "0102030405"})
    # 4. RoCEv2 format over IPv4, Resume 50 %, E bit set (s.6.2), ICRC by scapy.
    add(roce_lhcnp(IP, "10.0.0.9", "10.0.1.2", 0x000701, body(12, 3, 50, 0x701, 1, 27)),
        "RoCEv2 Long-haul CNP over IPv4",
        {"lhcnp.format": "RoCEv2 CNP with E bit (s.6.2)", "lhcnp.level": 12, "lhcnp.action": 3,
         "lhcnp.parameter": 50, "lhcnp.source_qp": 0x701, "lhcnp.metric_value": 27,
         "infiniband.bth.destqp": 0x701},
        absent=["lhcnp.ext.version"])
    # 5. RoCEv2 format over IPv6 with a Device Identifier object.
    add(roce_lhcnp(IPv6, "2001:db8::9", "2001:db8:1::2", 0x123, body(90, 0, 0, 0x123, 2, 4000) + ext([(EXT_CLASS, 2, b"node-7")])),
        "RoCEv2 Long-haul CNP over IPv6 with an object",
        {"lhcnp.action": 0, "lhcnp.parameter": 0, "lhcnp.metric_type": 2, "lhcnp.metric_value": 4000,
         "lhcnp.ext.checksum.status": 1, "lhcnp.obj.device_id": "node-7"})
    # 6. A standard CNP (E clear, 16 reserved octets) is not a Long-haul CNP.
    add(roce_lhcnp(IP, "10.0.0.9", "10.0.1.2", 0x55, b"\0" * 16, e=False),
        "standard RoCEv2 CNP", {"infiniband.bth.destqp": 0x55}, absent=["lhcnp.level"])
    # 7. Notify with a non-zero Parameter: flagged (s.6.1).
    add(icmp6("2001:db8::9", "2001:db8:1::2", LHCNP_TYPE, 0, body(10, 0, 7, 1, 0, 0)),
        "Notify with Parameter 7", {"lhcnp.action": 0, "lhcnp.parameter": 7},
        expert=["Parameter out of range for the action"])
    # 8. A Long-haul CNP behind an SRH (SL 1): the checksum uses Segment List[0].
    srh = IPv6ExtHdrSegmentRouting(nh=58, addresses=["2001:db8:1::2", "fc00:0:1::e"], segleft=1)
    add(icmp6("2001:db8::9", "fc00:0:1::e", LHCNP_TYPE, 0, body(50, 2, 10, 9, 1, 70), srh=srh),
        "Long-haul CNP behind an SRH", {"lhcnp.checksum.status": 1, "lhcnp.parameter": 10})
    # 9. FANN event over ICMPv6: congestion, severe, with five metadata items.
    flow = (socket.inet_pton(socket.AF_INET6, "2001:db8:1::2") + socket.inet_pton(socket.AF_INET6, "2001:db8:3::7")
            + struct.pack("!HHB", 49152, 4791, 17))
    stack = struct.pack("!I", 7) + struct.pack("!I", 95) + struct.pack("!I", 600000) + flow + socket.inet_pton(socket.AF_INET6, "fc00:0:11::1")
    bitmap = bit(1) | bit(4) | bit(8) | bit(13) | bit(14)
    m = fann_msg(8, 2, 3, 0xabcdef01, 1767225600123456, "fc00::1", bitmap, stack)
    add(icmp6("fc00::1", "2001:db8:1::99", FANN_TYPE, 0, m), "FANN event over ICMPv6",
        {"fann.type": 201, "fann.code": 0, "fann.checksum.status": 1, "fann.version": 1, "fann.hop_limit": 8,
         "fann.event_type": 2, "fann.event_subtype": 3, "fann.event_id": 0xabcdef01,
         "fann.timestamp": 1767225600123456, "fann.origin": "fc00::1", "fann.bitmap": bitmap,
         "fann.egress_port": 7, "fann.tx_util": 95, "fann.queue": 600000,
         "fann.flow.src": "2001:db8:1::2", "fann.flow.dst": "2001:db8:3::7", "fann.flow.sport": 49152,
         "fann.flow.dport": 4791, "fann.flow.proto": 17, "fann.path_id": "fc00:0:11::1"},
        absent=["lhcnp.level", "fann.ingress_port"])
    # 10. FANN recovery over UDP (s.5.2), link failure cleared, two items.
    m = fann_msg(64, 7, 1, 5, 1, "fc00::66", bit(0) | bit(11), struct.pack("!II", 3, 0))
    add(Ether(**MAC) / IPv6(src="fc00::66", dst="2001:db8:1::99") / UDP(sport=FANN_PORT, dport=FANN_PORT) / Raw(m),
        "FANN recovery over UDP",
        {"fann.event_type": 7, "fann.event_subtype": 1, "fann.event_id": 5, "fann.ingress_port": 3,
         "fann.link_down": 0, "fann.origin": "fc00::66"},
        absent=["fann.type"])
    # 11. A FANN whose bitmap announces an item the message lacks (s.6).
    m = fann_msg(8, 1, 0, 9, 1, "fc00::2", bit(1) | bit(8), struct.pack("!I", 1))
    add(icmp6("fc00::2", "2001:db8:1::99", FANN_TYPE, 0, m), "FANN with a short stack",
        {"fann.egress_port": 1}, absent=["fann.queue"], expert=["the bitmap implies 45 octets"])
    # 12. SRv6 with the End.MT TLV (s.7.2) after a PadN TLV, two receivers.
    tlv_val = (b"\0\0" + socket.inet_pton(socket.AF_INET6, "fc00:0:1::a") + bytes([2]) + b"\0\0\0"
               + socket.inet_pton(socket.AF_INET6, "2001:db8:1::10") + (0x500).to_bytes(3, "big") + b"\0"
               + socket.inet_pton(socket.AF_INET6, "2001:db8:1::11") + (0x501).to_bytes(3, "big") + b"\0")
    tlvs = bytes([4, 0]) + bytes([ENDMT_TLV, len(tlv_val)]) + tlv_val
    tlvs += bytes([4, (-(len(tlvs) + 2)) % 8]) + b"\0" * ((-(len(tlvs) + 2)) % 8)
    segs = [socket.inet_pton(socket.AF_INET6, a) for a in ("fc00:0:2::d6", "fc00:0:1::e")]
    hdr_len = (len(segs) * 16 + len(tlvs)) // 8
    srh = struct.pack("!BBBBBBH", 41, hdr_len, 4, 1, len(segs) - 1, 0, 0) + b"".join(segs) + tlvs
    inner = raw(IPv6(src="2001:db8:3::2", dst="2001:db8:1::10") / UDP(sport=49152, dport=4791)
                / BTH(opcode=4, dqpn=0x777, psn=1) / Raw(b"x" * 16))
    add(Ether(**MAC) / IPv6(src="fc00:0:9::1", dst="fc00:0:1::e", nh=43) / Raw(srh + inner),
        "SRv6 with the End.MT TLV",
        {"srv6_endmt.type": 124, "srv6_endmt.length": 62, "srv6_endmt.edge": "fc00:0:1::a", "srv6_endmt.num": 2,
         "srv6_endmt.receiver": ["2001:db8:1::10", "2001:db8:1::11"], "srv6_endmt.qpn": [0x500, 0x501]})
    # 13. Any other ICMPv6 type still goes to Wireshark's ICMPv6.
    add(Ether(**MAC) / IPv6(src="2001:db8::9", dst="2001:db8:1::2") / ICMPv6EchoRequest(id=7, seq=1),
        "ICMPv6 echo request", {"icmpv6.type": 128, "icmpv6.echo.identifier": 7}, absent=["lhcnp.type", "fann.type"])

    # 14. A truncated Neighbor Solicitation (no target address): malformed
    # for Wireshark's ICMPv6 dissector, whose verdict must stand (not a Lua
    # error from the wrapper around it).
    add(icmp6("fe80::1", "ff02::1:ff00:1", 135, 0, b"\0\0"), "truncated Neighbor Solicitation",
        {"icmpv6.type": 135}, absent=["lhcnp.type", "fann.type"], expert=["Malformed Packet (Exception occurred)"])

    wrpcap(out, frames)
    def show(v):
        return ",".join(show(x) for x in v) if isinstance(v, list) else str(v)
    for c in cases:
        cols = [str(c["frame"]), c["what"]]
        cols += ["%s=%s" % (k, show(v)) for k, v in c["fields"].items()]
        cols += ["-" + f for f in c["absent"]]
        cols += ["~" + e for e in c["expert"]]
        print("\t".join(cols))


if __name__ == "__main__":
    main(sys.argv[1])
