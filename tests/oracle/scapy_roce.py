#!/usr/bin/env python3
"""Independent oracle for dataplane/src/wire/{roce,lhcnp,pfc}.rs, built on
scapy (scapy.contrib.roce, scapy.contrib.mac_control) and plain struct code.

Usage:
  scapy_roce.py gen SEED COUNT
      scapy builds COUNT random RoCEv2 IP datagrams (IPv4 and IPv6; SEND,
      RDMA WRITE with RETH, ACK and read responses with AETH, CNP) and prints
      one line each: `roce <hex> key=value ...` with the fields as scapy
      dissects them. `icrc` is the ICRC as a number (the trailer read least
      significant octet first).
  scapy_roce.py check
      reads lines `<kind> <hex> [key=value ...]` on stdin and prints, for each,
      `ok` or `FAIL <reason>`. Kinds:
        roce   an IP datagram carrying RoCEv2: scapy recomputes the ICRC (and
               the IPv4 header / UDP checksums when non-zero) and must get the
               same octets; key=value fields are compared with scapy's
               dissection (opcode dqpn psn pkey becn fecn e syndrome msn) and,
               for a Long-haul CNP (opcode 0x81 with E set), with a struct
               decoding of the extension fields (level action param srcqp
               mtype mvalue nobj), including the RFC 4884 checksum.
        icmp6  an IPv6 packet carrying an ICMPv6 Long-haul CNP: scapy
               recomputes the ICMPv6 checksum; fields as above plus type code.
        eth    an Ethernet PAUSE or PFC frame (60 octets): scapy's MACControl
               layers must read opcode cev t0..t7 / quanta.
Exit status 0 unless the input could not be read; failures are reported per
line so that the caller can name them.
"""
import random
import struct
import sys

try:
    from scapy.all import IP, IPv6, UDP, Ether, Raw, raw
    from scapy.layers.inet6 import ICMPv6Unknown
    from scapy.utils import checksum as inet_checksum
    from scapy.contrib.roce import BTH, AETH, cnp
    from scapy.contrib.mac_control import (MACControlPause,
                                           MACControlClassBasedFlowControl)
except ImportError as e:  # pragma: no cover
    print("FATAL scapy >= 2.6 with contrib.roce is required "
          "(pip install scapy): %s" % e)
    sys.exit(3)

ROCE_PORT = 4791


def icrc_value(b):
    return struct.unpack("<I", b[-4:])[0]


def rand_v4(r):
    return "%d.%d.%d.%d" % tuple(r.randrange(1, 255) for _ in range(4))


def rand_v6(r):
    return ":".join("%x" % r.randrange(0, 0x10000) for _ in range(8))


def gen(seed, count):
    r = random.Random(seed)
    for i in range(count):
        if r.random() < 0.5:
            ip = IP(src=rand_v4(r), dst=rand_v4(r), tos=r.randrange(256),
                    ttl=r.randrange(1, 256), id=r.randrange(65536),
                    flags="DF")
        else:
            ip = IPv6(src=rand_v6(r), dst=rand_v6(r), tc=r.randrange(256),
                      fl=r.randrange(1 << 20), hlim=r.randrange(1, 256))
        udp = UDP(sport=r.randrange(49152, 65536), dport=ROCE_PORT)
        kind = r.choice(["send", "write", "ack", "readresp", "cnp"])
        dqpn = r.randrange(1 << 24)
        psn = r.randrange(1 << 24)
        flags = dict(fecn=r.randrange(2), becn=r.randrange(2),
                     pkey=r.choice([0xffff, r.randrange(65536)]))
        extra = {}
        if kind == "cnp":
            bth = cnp(dqpn)
            bth.fecn = flags["fecn"]
            bth.pkey = flags["pkey"]
            l4 = bth
        else:
            payload = bytes(r.randrange(256)
                            for _ in range(r.randrange(0, 600)))
            op = {"send": 0x04, "write": 0x0a, "ack": 0x11,
                  "readresp": 0x10}[kind]
            bth = BTH(opcode=op, dqpn=dqpn, psn=psn,
                      solicited=r.randrange(2), ackreq=r.randrange(2),
                      **flags)
            if kind == "write":
                va = r.randrange(1 << 64)
                rkey = r.randrange(1 << 32)
                dmalen = len(payload)
                extra.update(va=va, rkey=rkey, dmalen=dmalen)
                l4 = bth / Raw(struct.pack("!QII", va, rkey, dmalen) + payload)
            elif kind in ("ack", "readresp"):
                syn = r.choice([0x1f, r.randrange(32),
                                0x20 | r.randrange(32),
                                0x60 | r.randrange(5)])
                msn = r.randrange(1 << 24)
                extra.update(syndrome=syn, msn=msn)
                l4 = bth / AETH(syndrome=syn, msn=msn)
                if kind == "readresp":
                    l4 = l4 / Raw(payload)
            else:
                l4 = bth / Raw(payload)
        pkt = ip / udp / l4
        b = raw(pkt)
        p = (IP if b[0] >> 4 == 4 else IPv6)(b)
        t = p[BTH]
        fields = dict(opcode=t.opcode, se=t.solicited, m=t.migreq,
                      pad=t.padcount, tver=t.version, pkey=t.pkey,
                      fecn=t.fecn, becn=t.becn, resv6=t.resv6, dqpn=t.dqpn,
                      a=t.ackreq, psn=t.psn, icrc=icrc_value(b),
                      ver=b[0] >> 4)
        if t.haslayer(AETH):
            fields.update(syndrome=t[AETH].syndrome, msn=t[AETH].msn)
        fields.update(extra)
        print("roce " + b.hex() + " " +
              " ".join("%s=%d" % kv for kv in sorted(fields.items())))


def ext_check(ext, expect):
    """Decode an RFC 4884 extension structure with struct; verify it."""
    if not ext:
        return 0, None
    if len(ext) < 8:
        return None, "extension structure too short"
    if ext[0] >> 4 != 2:
        return None, "extension version %d" % (ext[0] >> 4)
    if inet_checksum(ext) != 0:
        return None, "extension checksum"
    n = 0
    at = 4
    while at < len(ext):
        length, cls, ctype = struct.unpack("!HBB", ext[at:at + 4])
        if length < 4 or at + ((length + 3) & ~3) > len(ext):
            return None, "object length %d" % length
        n += 1
        at += (length + 3) & ~3
    return n, None


def body_check(body, f):
    if len(body) < 12:
        return "body too short"
    level, aflags, param, srcqp, mtype = struct.unpack("!BBHIB", body[:9])
    mvalue = int.from_bytes(body[9:12], "big")
    got = dict(level=level, action=aflags >> 6, param=param, srcqp=srcqp,
               mtype=mtype, mvalue=mvalue)
    if aflags & 0x3f:
        return "reserved action flag bits set"
    for k, v in got.items():
        if k in f and f[k] != v:
            return "%s: scapy/struct %d, claimed %d" % (k, v, f[k])
    n, err = ext_check(body[12:], f)
    if err:
        return err
    if "nobj" in f and f["nobj"] != n:
        return "objects: %d, claimed %d" % (n, f["nobj"])
    return None


def compare(got, f, keys):
    for k in keys:
        if k in f and k in got and int(got[k]) != f[k]:
            return "%s: scapy %d, claimed %d" % (k, int(got[k]), f[k])
    return None


def check_roce(b, f):
    ipcls = IP if b[0] >> 4 == 4 else IPv6
    p = ipcls(b)
    if not p.haslayer(UDP) or p[UDP].dport != ROCE_PORT:
        return "not RoCEv2 (UDP 4791)"
    if not p.haslayer(BTH):
        return "scapy found no BTH"
    # Recompute the ICRC (and checksums) with scapy and compare octets.
    q = ipcls(b)
    q[BTH].icrc = None
    if ipcls is IP:
        q[IP].chksum = None
    if p[UDP].chksum != 0:
        q[UDP].chksum = None
    r = raw(q)
    if r[-4:] != b[-4:]:
        return "ICRC: scapy %08x, ours %08x" % (icrc_value(r), icrc_value(b))
    if r != b:
        return "checksums differ from scapy's: %s vs %s" % (r.hex(), b.hex())
    t = p[BTH]
    got = dict(opcode=t.opcode, dqpn=t.dqpn, psn=t.psn, pkey=t.pkey,
               becn=t.becn, fecn=t.fecn, e=t.resv6 >> 5,
               icrc=icrc_value(b))
    if t.haslayer(AETH):
        got.update(syndrome=t[AETH].syndrome, msn=t[AETH].msn)
    err = compare(got, f, ["opcode", "dqpn", "psn", "pkey", "becn", "fecn",
                           "e", "syndrome", "msn", "icrc"])
    if err:
        return err
    if t.opcode == 0x81 and t.resv6 & 0x20:
        # Long-haul CNP: everything between BTH and ICRC is ours.
        udp_payload = bytes(p[UDP].payload)
        return body_check(udp_payload[12:-4], f)
    return None


def check_icmp6(b, f):
    p = IPv6(b)
    if p.nh != 58:
        return "not ICMPv6"
    m = bytes(p.payload)
    # scapy dissects an unknown ICMPv6 type as Raw: rebuild the message as
    # ICMPv6Unknown and let scapy compute its checksum.
    q = IPv6(b)
    q.remove_payload()
    icmp = ICMPv6Unknown(m)
    icmp.cksum = None
    q = q / icmp
    r = raw(q)
    if r != b:
        return "ICMPv6 checksum: scapy %s, ours %s" % (r[42:44].hex(),
                                                       b[42:44].hex())
    if "type" in f and m[0] != f["type"]:
        return "type %d" % m[0]
    if "code" in f and m[1] != f["code"]:
        return "code %d" % m[1]
    return body_check(m[4:], f)


def check_eth(b, f):
    if len(b) != 60:
        return "frame length %d, want 60" % len(b)
    p = Ether(b)
    if p.type != 0x8808:
        return "ethertype %04x" % p.type
    if p.dst != "01:80:c2:00:00:01":
        return "destination %s" % p.dst
    if p.haslayer(MACControlClassBasedFlowControl):
        c = p[MACControlClassBasedFlowControl]
        cev = sum(getattr(c, "c%d_enabled" % i) << i for i in range(8))
        got = dict(opcode=0x0101, cev=cev)
        for i in range(8):
            got["t%d" % i] = getattr(c, "c%d_pause_time" % i)
        return compare(got, f, ["opcode", "cev"] + ["t%d" % i for i in range(8)])
    if p.haslayer(MACControlPause):
        got = dict(opcode=1, quanta=p[MACControlPause].pause_time)
        return compare(got, f, ["opcode", "quanta"])
    return "scapy found no PAUSE/PFC layer"


def check():
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        kind, hexs = parts[0], parts[1]
        f = {}
        for kv in parts[2:]:
            k, v = kv.split("=", 1)
            f[k] = int(v, 0)
        try:
            b = bytes.fromhex(hexs)
            err = {"roce": check_roce, "icmp6": check_icmp6,
                   "eth": check_eth}[kind](b, f)
        except Exception as e:  # a dissection crash is a failure too
            err = "exception %r" % (e,)
        print("ok" if err is None else "FAIL " + err)
        sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "gen":
        gen(int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) >= 2 and sys.argv[1] == "check":
        check()
    else:
        print(__doc__)
        sys.exit(2)
