#!/usr/bin/env python3
"""Independent scapy oracle for dcirouter's SRH / FANN / IS-IS SRv6 wire code.

Called by dataplane/tests/wire_oracle_srv6.rs. Plain line protocol (no JSON
dependency on the Rust side): every record is a block of lines
``key value...`` ending with ``end``.

Subcommands
  srh-build        scapy builds SRHs (TLVs incl. HMAC, PadN, Pad1, End.MT,
                   unknown); HMACs computed here with python's hmac module over
                   the RFC 8754 s.2.1.2.1 text. Prints each SRH and the fields
                   scapy sees.
  srh-parse        stdin: one line per SRH ``<hex> [<src> <keyid> <keyhex>
                   <len>]``; scapy dissects each and prints its fields, its own
                   re-serialisation and, given a key, the HMAC computed here.
  fann-check       stdin: one IPv6 packet (hex) per line carrying a FANN
                   message over ICMPv6 or UDP, or an IPv4 packet carrying one
                   over UDP; prints whether the ICMPv6 / UDP checksum scapy
                   computes equals the one in the packet (and for IPv4 the
                   header checksum), and the FANN fields decoded here from
                   the draft's layout.
  isis-lsp <pcap>  stdin: one top-level IS-IS TLV (hex) per line; scapy wraps
                   them in an L2 LSP (computing PDU length and checksum) over
                   802.3/LLC and writes a pcap for tshark.

scapy 2.8 caveat: IPv6ExtHdrSegmentRoutingTLVHMAC encodes Length as a
16-bit field (FieldLenField without fmt="B") holding len(HMAC) + 48, and
dissects len - 48 octets of HMAC, while RFC 8754 s.2.1.2 (and Linux,
seg6_hmac.c: tlvhdr.len = 38 for a 32-octet HMAC) define an 8-bit Length =
6 + len(HMAC). We therefore build and dissect HMAC TLVs with HMACTLVFixed
below, which is scapy's class with only those length expressions corrected.
"""

import hashlib
import hmac as pyhmac
import socket
import struct
import sys

try:
    from scapy.all import Ether, IP, IPv6, UDP, Raw, wrpcap, raw, conf  # noqa: F401
    from scapy.layers.inet6 import (
        IPv6ExtHdrSegmentRouting,
        IPv6ExtHdrSegmentRoutingTLV,
        IPv6ExtHdrSegmentRoutingTLVPad1,
        IPv6ExtHdrSegmentRoutingTLVPadN,
        in6_chksum,
    )
    from scapy.fields import BitField, ByteEnumField, FieldLenField, IntField, StrLenField
    from scapy.layers.l2 import LLC, Dot3
except ImportError as e:  # pragma: no cover
    print("MISSING scapy (pip install 'scapy>=2.6'): %s" % e)
    sys.exit(3)

conf.verb = 0

END_MT = 124  # Params::srh_tlv_end_mt default


class HMACTLVFixed(IPv6ExtHdrSegmentRoutingTLV):
    """RFC 8754 s.2.1.2 HMAC TLV with Length = 6 + len(HMAC)."""

    name = "SRH HMAC TLV (RFC 8754 lengths)"
    fields_desc = [
        ByteEnumField("type", 5, {5: "HMAC"}),
        FieldLenField("len", None, length_of="hmac", fmt="B", adjust=lambda _, x: x + 6),
        BitField("D", 0, 1),
        BitField("reserved", 0, 15),
        IntField("hmackeyid", 0),
        StrLenField("hmac", b"", length_from=lambda pkt: pkt.len - 6),
    ]


# Dissect type 5 with the corrected class.
IPv6ExtHdrSegmentRoutingTLV.registered_sr_tlv[5] = HMACTLVFixed


def a2b(a):
    return socket.inet_pton(socket.AF_INET6, a)


def srh_flags(p):
    return (p.unused1 << 7) | (p.protected << 6) | (p.oam << 5) | (p.alert << 4) | (p.hmac << 3) | p.unused2


def rfc8754_hmac(src, lastentry, flags, keyid, addresses, key, length):
    """HMAC-SHA256 over RFC 8754 s.2.1.2.1 text, truncated to `length`."""
    text = a2b(src) + bytes([lastentry, flags]) + struct.pack("!I", keyid)
    text += b"".join(a2b(x) for x in addresses)
    return pyhmac.new(key, text, hashlib.sha256).digest()[:length]


def end_mt_value(edge, receivers):
    """End.MT TLV value (draft-li-spring-rdma-multicast-over-srv6-00 s.7.2)."""
    v = b"\x00\x00" + a2b(edge) + bytes([len(receivers), 0, 0, 0])
    for addr, qpn in receivers:
        v += a2b(addr) + qpn.to_bytes(3, "big") + b"\x00"
    return v


def decode_end_mt(value):
    if len(value) < 22:
        return None
    edge = socket.inet_ntop(socket.AF_INET6, value[2:18])
    n = value[18]
    if len(value) != 22 + 20 * n:
        return None
    rs = []
    for i in range(n):
        e = value[22 + 20 * i: 42 + 20 * i]
        rs.append("%s/%d" % (socket.inet_ntop(socket.AF_INET6, e[:16]), int.from_bytes(e[16:19], "big")))
    return edge, rs


def describe_srh(b, out):
    """Dissect SRH bytes with scapy and print the fields."""
    p = IPv6ExtHdrSegmentRouting(b)
    out.append("hex %s" % b.hex())
    out.append("nh %d" % p.nh)
    out.append("len %d" % p.len)
    out.append("type %d" % p.type)
    out.append("segleft %d" % p.segleft)
    out.append("lastentry %d" % p.lastentry)
    out.append("flags %d" % srh_flags(p))
    out.append("tag %d" % p.tag)
    for x in p.addresses:
        out.append("addr %s" % x)
    for t in p.tlv_objects:
        if isinstance(t, IPv6ExtHdrSegmentRoutingTLVPad1):
            out.append("tlv 0 - -")
        elif isinstance(t, IPv6ExtHdrSegmentRoutingTLVPadN):
            out.append("tlv 4 %d %s" % (t.len, bytes(t.padding).hex() or "-"))
        elif isinstance(t, HMACTLVFixed):
            out.append("tlv 5 %d -" % t.len)
            out.append("hmac %d %d %s" % (t.D, t.hmackeyid, bytes(t.hmac).hex() or "-"))
        else:
            v = bytes(t.value)
            out.append("tlv %d %d %s" % (t.type, t.len, v.hex() or "-"))
            if t.type == END_MT:
                d = decode_end_mt(v)
                if d is None:
                    out.append("endmt-bad")
                else:
                    out.append("endmt %s %d %s" % (d[0], len(d[1]), " ".join(d[1])))
    out.append("rebuilt %s" % raw(p).hex())
    return p


def srh_build():
    out = []
    key = b"dcirouter-oracle-key"
    src = "2001:db8:aaaa::1"

    def emit(name, srh, extra=()):
        b = raw(srh)
        out.append("case %s" % name)
        describe_srh(b, out)
        out.extend(extra)
        out.append("end")

    # 1. Plain, three segments, O-bit style flag, tag.
    emit("plain", IPv6ExtHdrSegmentRouting(
        nh=41, segleft=2, tag=0xBEEF, oam=1,
        addresses=["2001:db8::3", "2001:db8::2", "2001:db8::1"]))

    # 2. PadN + Pad1 explicitly, unknown TLV, scapy pads the rest.
    emit("pads", IPv6ExtHdrSegmentRouting(
        nh=59, addresses=["2001:db8::9"],
        tlv_objects=[IPv6ExtHdrSegmentRoutingTLVPad1(),
                     IPv6ExtHdrSegmentRoutingTLVPadN(padding=b"\x00\x00\x00"),
                     IPv6ExtHdrSegmentRoutingTLV(type=200, len=3, value=b"abc")]))

    # 3. HMAC TLV (32 octets), computed here.
    addrs = ["2001:db8::30", "2001:db8::20", "2001:db8::10"]
    keyid = 0x01020304
    mac = rfc8754_hmac(src, len(addrs) - 1, 0, keyid, addrs, key, 32)
    emit("hmac32", IPv6ExtHdrSegmentRouting(
        nh=41, segleft=2, lastentry=2, addresses=addrs,
        tlv_objects=[IPv6ExtHdrSegmentRoutingTLVPadN(len=4, padding=b"\x00" * 4),
                     HMACTLVFixed(D=0, hmackeyid=keyid, hmac=mac)]),
        ["src %s" % src, "key %d %s 32" % (keyid, key.hex())])

    # 4. HMAC truncated to 16 octets, D set, reduced SRH (SL = LE + 1), flags.
    addrs = ["2001:db8::7", "2001:db8::6"]
    mac = rfc8754_hmac(src, 1, 0x20, 77, addrs, key, 16)
    emit("hmac16-reduced", IPv6ExtHdrSegmentRouting(
        nh=4, segleft=2, lastentry=1, oam=1, addresses=addrs,
        tlv_objects=[IPv6ExtHdrSegmentRoutingTLVPadN(len=4, padding=b"\x00" * 4),
                     HMACTLVFixed(D=1, hmackeyid=77, hmac=mac)]),
        ["src %s" % src, "key 77 %s 16" % key.hex()])

    # 5. Two End.MT TLVs (generic TLVs with values encoded here), then pad.
    v1 = end_mt_value("fc00::e1", [("2001:db8:1::10", 0x000102), ("2001:db8:1::11", 0xABCDEF)])
    v2 = end_mt_value("fc00::e2", [("2001:db8:2::1", 0xFFFFFF)])
    emit("endmt", IPv6ExtHdrSegmentRouting(
        nh=41, segleft=1, addresses=["fc00::e2", "fc00::e1"],
        tlv_objects=[IPv6ExtHdrSegmentRoutingTLV(type=END_MT, len=len(v1), value=v1),
                     IPv6ExtHdrSegmentRoutingTLV(type=END_MT, len=len(v2), value=v2)]))

    # 6. End.MT with zero receivers + HMAC over it.
    v3 = end_mt_value("fc00::e3", [])
    addrs = ["fc00::e3"]
    mac = rfc8754_hmac(src, 0, 0, 5, addrs, key, 32)
    emit("endmt0-hmac", IPv6ExtHdrSegmentRouting(
        nh=41, segleft=0, addresses=addrs,
        tlv_objects=[IPv6ExtHdrSegmentRoutingTLV(type=END_MT, len=len(v3), value=v3),
                     HMACTLVFixed(D=0, hmackeyid=5, hmac=mac)]),
        ["src %s" % src, "key 5 %s 32" % key.hex()])

    print("\n".join(out))


def srh_parse():
    out = []
    for i, line in enumerate(sys.stdin.read().split("\n")):
        parts = line.split()
        if not parts:
            continue
        b = bytes.fromhex(parts[0])
        out.append("case %d" % i)
        p = describe_srh(b, out)
        if len(parts) == 5:
            src, keyid, keyhex, length = parts[1], int(parts[2]), bytes.fromhex(parts[3]), int(parts[4])
            mac = rfc8754_hmac(src, p.lastentry, srh_flags(p), keyid, p.addresses, keyhex, length)
            out.append("hmac_computed %s" % mac.hex())
        out.append("end")
    print("\n".join(out))


# FANN (draft-hzh-fantel-wan-tunnel-03 s.5), decoded independently here.
FANN_SIZES = [4, 4, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4, 4, 37, 16]


def decode_fann(m, out):
    """m: the FANN fields from Version on."""
    if len(m) < 37:
        out.append("fann-bad short")
        return
    ver, _res, hop, et, es = m[0], m[1], m[2], m[3], m[4]
    eid = struct.unpack("!I", m[5:9])[0]
    ts = struct.unpack("!Q", m[9:17])[0]
    origin = socket.inet_ntop(socket.AF_INET6, m[17:33])
    bitmap = struct.unpack("!I", m[33:37])[0]
    out.append("fann %d %d %d %d %d %d %s %d" % (ver, hop, et, es, eid, ts, origin, bitmap))
    pos = 37
    for bit in range(32):
        if bitmap & (0x80000000 >> bit):
            if bit >= len(FANN_SIZES):
                out.append("fann-bad reserved-bit %d" % bit)
                return
            n = FANN_SIZES[bit]
            out.append("item %d %s" % (bit, m[pos:pos + n].hex()))
            pos += n
    if pos != len(m):
        out.append("fann-bad length %d != %d" % (pos, len(m)))


def fann_check():
    out = []
    for i, line in enumerate(sys.stdin.read().split("\n")):
        line = line.strip()
        if not line:
            continue
        b = bytes.fromhex(line)
        out.append("case %d" % i)
        if b[0] >> 4 == 4:
            pkt = IP(b)
            c = pkt.copy()
            c.chksum = None
            out.append("ipcksum %s" % ("ok" if IP(raw(c)).chksum == pkt.chksum else "bad"))
            if pkt.proto == 17:
                u = pkt[UDP]
                c = pkt.copy()
                c[UDP].chksum = None
                comp = IP(raw(c))[UDP].chksum
                out.append("proto udp %d %d" % (u.sport, u.dport))
                out.append("udplen %d" % u.len)
                out.append("cksum %s %d %d" % ("ok" if u.chksum == comp else "bad", u.chksum, comp))
                decode_fann(bytes(u.payload), out)
            else:
                out.append("proto other %d" % pkt.proto)
            out.append("end")
            continue
        pkt = IPv6(b)
        l4 = bytes(pkt.payload)
        out.append("plen %d %d" % (pkt.plen, len(l4)))
        if pkt.nh == 58:
            found = struct.unpack("!H", l4[2:4])[0]
            zeroed = l4[:2] + b"\x00\x00" + l4[4:]
            comp = in6_chksum(58, pkt, zeroed)
            out.append("proto icmpv6 %d %d" % (l4[0], l4[1]))
            out.append("cksum %s %d %d" % ("ok" if found == comp else "bad", found, comp))
            decode_fann(l4[4:], out)
        elif pkt.nh == 17:
            u = pkt[UDP]
            found = u.chksum
            c = pkt.copy()
            c[UDP].chksum = None
            comp = IPv6(raw(c))[UDP].chksum
            out.append("proto udp %d %d" % (u.sport, u.dport))
            out.append("udplen %d" % u.len)
            out.append("cksum %s %d %d" % ("ok" if found == comp else "bad", found, comp))
            decode_fann(bytes(u.payload), out)
        else:
            out.append("proto other %d" % pkt.nh)
        out.append("end")
    print("\n".join(out))


def isis_lsp(path):
    from scapy.contrib.isis import ISIS_CommonHdr, ISIS_L2_LSP, ISIS_GenericTlv

    tlvs = []
    for line in sys.stdin.read().split("\n"):
        line = line.strip()
        if not line:
            continue
        b = bytes.fromhex(line)
        tlvs.append(ISIS_GenericTlv(type=b[0], len=b[1], val=b[2:]))
    lsp = (Dot3(dst="01:80:c2:00:00:15", src="02:00:00:00:00:01")
           / LLC(dsap=0xFE, ssap=0xFE, ctrl=3)
           / ISIS_CommonHdr()
           / ISIS_L2_LSP(lifetime=1200, lspid="1720.1600.1001.00-00", seqnum=1, typeblock=0x03, tlvs=tlvs))
    wrpcap(path, [lsp])
    print("ok %d" % len(raw(lsp)))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    cmd = sys.argv[1]
    if cmd == "srh-build":
        srh_build()
    elif cmd == "srh-parse":
        srh_parse()
    elif cmd == "fann-check":
        fann_check()
    elif cmd == "isis-lsp":
        isis_lsp(sys.argv[2])
    else:
        print("unknown command %s" % cmd)
        sys.exit(2)


if __name__ == "__main__":
    main()
