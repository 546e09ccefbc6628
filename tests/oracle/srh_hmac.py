#!/usr/bin/env python3
"""Independent oracle for the SRH HMAC TLV (RFC 8754 s.2.1.2) in front of
End.MT, driven by tests/pcap_forwarding.rs (end_mt_verifies_srh_hmac).

Usage:
  srh_hmac.py build OUT.pcap SID KEY_ID SECRET_HEX HMAC_LEN "ADDR,QPN;..."
      writes four frames to OUT.pcap, each an SRv6 packet (outer IPv6 S1 ->
      SID, SRH [Proxy, SID] SL 1 with an End.MT TLV for SID listing the
      receivers, inner RoCEv2 RC SEND to the Proxy Address; ICRC computed by
      scapy.contrib.roce):
        1. HMAC TLV with key KEY_ID and the correct HMAC
        2. the same with one HMAC bit flipped
        3. a correct HMAC but under a key ID the router does not know
        4. no HMAC TLV at all
      The HMAC is computed here with Python's hmac/hashlib over the RFC 8754
      s.2.1.2.1 text: IPv6 source address, Last Entry, Flags, HMAC Key ID,
      every Segment List entry; truncated to HMAC_LEN octets.
  srh_hmac.py check IN.pcap KEY_ID SECRET_HEX HMAC_LEN
      for every SRv6 frame in IN.pcap (what a headend sent), scapy dissects
      the SRH and prints one line:
        SRH src=<outer source> sl=<n> segs=<first SID first, comma-separated>
            endmt=<edge>=<addr>/<qpn>,...;... hmac=<ok|bad|none> last=<yes|no>
            inner=<inner IPv6 destination>
      `hmac` recomputes the HMAC here (the same text as above, from the
      outer source address) and compares it with the HMAC TLV's; `last`
      says whether the HMAC TLV ends the SRH (where Linux looks for it).
"""
import hashlib
import hmac
import socket
import struct
import sys

try:
    from scapy.all import Ether, IPv6, UDP, Raw, raw, wrpcap
    from scapy.layers.inet6 import (IPv6ExtHdrSegmentRouting,
                                    IPv6ExtHdrSegmentRoutingTLV)
    from scapy.contrib.roce import BTH
except ImportError as e:  # pragma: no cover
    print("FATAL scapy >= 2.6 with contrib.roce is required (pip install scapy): %s" % e)
    sys.exit(3)

END_MT_TYPE = 124
S1 = "2001:db8:5::1"
PROXY = "2001:db8:ff::1"
ROUTER_WAN_MAC = "02:dc:00:00:00:02"


def end_mt_tlv(edge, receivers):
    value = b"\x00\x00" + socket.inet_pton(socket.AF_INET6, edge)
    value += struct.pack("!B3x", len(receivers))
    for addr, qpn in receivers:
        value += socket.inet_pton(socket.AF_INET6, addr) + struct.pack("!I", qpn << 8)
    return IPv6ExtHdrSegmentRoutingTLV(type=END_MT_TYPE, len=len(value), value=value)


def hmac_tlv(key_id, mac):
    # RFC 8754 s.2.1.2: Type 5, Length, D flag + reserved (16 bits), HMAC Key
    # ID (32 bits), HMAC. Built by hand: scapy 2.6's
    # IPv6ExtHdrSegmentRoutingTLVHMAC emits a 25-octet TLV with Length 0.
    return IPv6ExtHdrSegmentRoutingTLV(type=5, len=6 + len(mac),
                                       value=struct.pack("!HI", 0, key_id) + mac)


def rfc8754_hmac(secret, key_id, last_entry, flags, segments, length):
    text = socket.inet_pton(socket.AF_INET6, S1)
    text += struct.pack("!BBI", last_entry, flags, key_id)
    for s in segments:
        text += socket.inet_pton(socket.AF_INET6, s)
    return hmac.new(secret, text, hashlib.sha256).digest()[:length]


def frame(sid, receivers, hmac_tlv, psn):
    tlvs = [end_mt_tlv(sid, receivers)]
    if hmac_tlv is not None:
        tlvs.append(hmac_tlv)
    segments = [PROXY, sid]
    srh = IPv6ExtHdrSegmentRouting(addresses=segments, segleft=1, lastentry=1,
                                   tlv_objects=tlvs, nh=41)
    inner = (IPv6(src=S1, dst=PROXY, hlim=64) / UDP(sport=0xc0de, dport=4791) /
             BTH(opcode=0x04, dqpn=1, psn=psn, ackreq=1) / Raw(bytes(range(64))))
    f = Ether(dst=ROUTER_WAN_MAC, src="02:00:00:00:02:02") / IPv6(src=S1, dst=sid, hlim=64, nh=43) / srh / inner
    b = raw(f)
    p = Ether(b)
    assert p[IPv6ExtHdrSegmentRouting].segleft == 1
    return b


def build(out, sid, key_id, secret_hex, length, spec):
    key_id, length = int(key_id), int(length)
    secret = bytes.fromhex(secret_hex)
    receivers = [(a, int(q, 0)) for a, q in (x.split(",") for x in spec.split(";"))]
    segments = [PROXY, sid]
    good = rfc8754_hmac(secret, key_id, 1, 0, segments, length)
    bad = bytes([good[0] ^ 0x01]) + good[1:]
    other = rfc8754_hmac(secret, key_id + 1, 1, 0, segments, length)
    frames = [
        frame(sid, receivers, hmac_tlv(key_id, good), 0x100),
        frame(sid, receivers, hmac_tlv(key_id, bad), 0x101),
        frame(sid, receivers, hmac_tlv(key_id + 1, other), 0x102),
        frame(sid, receivers, None, 0x103),
    ]
    wrpcap(out, [Ether(f) for f in frames])
    print("wrote %d frames, HMAC %s" % (len(frames), good.hex()))


def check(path, key_id, secret_hex, length):
    from scapy.all import rdpcap
    key_id, length = int(key_id), int(length)
    secret = bytes.fromhex(secret_hex)
    for f in rdpcap(path):
        if not f.haslayer(IPv6ExtHdrSegmentRouting):
            continue
        ip = f[IPv6]
        srh = f[IPv6ExtHdrSegmentRouting]
        end_mts, mac, last = [], None, "no"
        raw_srh = raw(srh)[:(srh.len + 1) * 8]
        # Walk the TLVs by hand (scapy's TLV classes differ across versions).
        off = 8 + 16 * (srh.lastentry + 1)
        while off < len(raw_srh):
            t = raw_srh[off]
            if t == 0:
                off += 1
                continue
            ln = raw_srh[off + 1]
            v = raw_srh[off + 2:off + 2 + ln]
            if t == END_MT_TYPE:
                edge = socket.inet_ntop(socket.AF_INET6, v[2:18])
                n = v[18]
                rs = []
                for i in range(n):
                    e = v[22 + 20 * i:22 + 20 * (i + 1)]
                    rs.append("%s/%#x" % (socket.inet_ntop(socket.AF_INET6, e[:16]), struct.unpack("!I", e[16:20])[0] >> 8))
                end_mts.append("%s=%s" % (edge, ",".join(rs)))
            elif t == 5:
                kid = struct.unpack("!I", v[2:6])[0]
                mac = (kid, v[6:])
                last = "yes" if off + 2 + ln == len(raw_srh) else "no"
            off += 2 + ln
        segs = list(reversed(srh.addresses))
        verdict = "none"
        if mac is not None:
            text = socket.inet_pton(socket.AF_INET6, ip.src)
            text += struct.pack("!BBI", raw_srh[4], raw_srh[5], mac[0])
            for a in srh.addresses:
                text += socket.inet_pton(socket.AF_INET6, a)
            want = hmac.new(secret, text, hashlib.sha256).digest()[:length]
            verdict = "ok" if mac[0] == key_id and mac[1] == want else "bad"
        inner = srh.payload
        print("SRH src=%s sl=%d segs=%s endmt=%s hmac=%s last=%s inner=%s" % (
            ip.src, srh.segleft, ",".join(segs), ";".join(end_mts), verdict, last,
            inner.dst if isinstance(inner, IPv6) else "-"))


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "build":
        build(*sys.argv[2:])
    elif len(sys.argv) == 6 and sys.argv[1] == "check":
        check(*sys.argv[2:])
    else:
        sys.exit("usage: srh_hmac.py build OUT.pcap SID KEY_ID SECRET_HEX HMAC_LEN SPEC | check IN.pcap KEY_ID SECRET_HEX HMAC_LEN")
