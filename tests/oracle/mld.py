#!/usr/bin/env python3
"""Independent oracle for the router side of MLD (RFC 9777, RFC 2710),
driven by tests/pcap_forwarding.rs (mld_listeners_get_the_group).

Usage:
  mld.py build PCAP
      scapy's own MLD encoders write PCAP: what a host on the DC link
      (fe80::10, MAC 02:00:00:00:01:10) sends the router, in this order:
        1. MLDv2 Report to ff02::16: CHANGE_TO_EXCLUDE(ff0e::100, {}) and
           ALLOW_NEW_SOURCES(ff3e::200, {2001:db8:3::5});
        2. MLDv1 Report for ff0e::300 (to ff0e::300);
        3. MLDv1 Done for ff0e::300 (to ff02::2);
        4. the report of 1 with Hop Limit 2 (invalid, RFC 9777 s.5.2.13);
        5. the report of 1 with a wrong checksum;
        6. MLDv2 Report CHANGE_TO_EXCLUDE(ff3e::400, {}): an EXCLUDE-mode
           record for the SSM range (RFC 4604 s.2.2.1: ignored).
      Every message has Hop Limit 1 (but 4) and a Hop-by-Hop header with
      Router Alert 0.
  mld.py check PCAP
      scapy dissects every MLD query in PCAP and prints one line per query:
        QUERY <group|general> mrd=<ms> s=<0|1> qrv=<n> qqic=<n> nsrc=<n>
              src=<addr> dst=<addr> eth=<mac> hlim=<n> ra=<ok|bad> cksum=<ok|bad>
      (one line), `cksum` comparing the checksum with the one scapy
      computes, `ra` the Router Alert option (value 0) in the Hop-by-Hop
      header. Exits 1 when a query is not an MLDv2 query.
  mld.py check-v1 PCAP
      the same for a router in MLDv1 mode (RFC 9777 s.8.3.1): every query
      must be an MLDv1 query (RFC 2710 s.3, 24 octets), printed as
        QUERYV1 <group|general> mrd=<ms> src=... dst=... eth=... hlim=<n>
                ra=<ok|bad> cksum=<ok|bad>
      and the exit status is 1 when one is not.
"""
import sys

try:
    from scapy.all import Ether, IPv6, raw, wrpcap, rdpcap
    from scapy.layers.inet6 import (IPv6ExtHdrHopByHop, RouterAlert, ICMPv6MLReport2,
                                    ICMPv6MLDMultAddrRec, ICMPv6MLReport, ICMPv6MLDone,
                                    ICMPv6MLQuery2, ICMPv6MLQuery)
except ImportError as e:  # pragma: no cover
    print("FATAL scapy >= 2.6 is required (pip install scapy): %s" % e)
    sys.exit(3)

HOST_MAC = "02:00:00:00:01:10"
HOST_LL = "fe80::10"


def mcast_mac(addr):
    b = bytes(IPv6(dst=addr))[24 + 12:24 + 16]
    return "33:33:" + ":".join("%02x" % x for x in b)


def mld(dst, msg, hlim=1):
    return (Ether(dst=mcast_mac(dst), src=HOST_MAC) /
            IPv6(src=HOST_LL, dst=dst, hlim=hlim) /
            IPv6ExtHdrHopByHop(options=[RouterAlert(value=0)]) / msg)


def build(path):
    rep = ICMPv6MLReport2(records=[
        ICMPv6MLDMultAddrRec(rtype=4, dst="ff0e::100"),
        ICMPv6MLDMultAddrRec(rtype=5, dst="ff3e::200", sources=["2001:db8:3::5"]),
    ])
    frames = [
        mld("ff02::16", rep),
        mld("ff0e::300", ICMPv6MLReport(mladdr="ff0e::300")),
        mld("ff02::2", ICMPv6MLDone(mladdr="ff0e::300")),
        mld("ff02::16", rep.copy(), hlim=2),
    ]
    bad = rep.copy()
    bad.cksum = 0x1234
    frames.append(mld("ff02::16", bad))
    frames.append(mld("ff02::16", ICMPv6MLReport2(records=[ICMPv6MLDMultAddrRec(rtype=4, dst="ff3e::400")])))
    wrpcap(path, frames)


def check(path, v1=False):
    ok = True
    for f in rdpcap(path):
        if not f.haslayer(IPv6) or not f.haslayer(IPv6ExtHdrHopByHop):
            continue
        hbh = f[IPv6ExtHdrHopByHop]
        pl = hbh.payload
        if raw(pl)[:1] != b"\x82":
            continue
        want_cls = ICMPv6MLQuery if v1 else ICMPv6MLQuery2
        if type(pl) is not want_cls or (v1 and len(raw(pl)) != 24):
            print("NOT-%s %r" % ("MLDV1" if v1 else "MLDV2", pl))
            ok = False
            continue
        q = pl
        ra = any(isinstance(o, RouterAlert) and o.value == 0 for o in hbh.options)
        again = q.copy()
        again.cksum = None
        ip = f[IPv6]
        mine = IPv6(src=ip.src, dst=ip.dst, hlim=ip.hlim) / IPv6ExtHdrHopByHop(options=hbh.options) / again
        want = IPv6(raw(mine))[want_cls].cksum
        group = "general" if q.mladdr == "::" else q.mladdr
        if v1:
            print("QUERYV1 %s mrd=%d src=%s dst=%s eth=%s hlim=%d ra=%s cksum=%s" % (
                group, q.mrd, ip.src, ip.dst, f[Ether].dst, ip.hlim,
                "ok" if ra else "bad", "ok" if want == q.cksum else "bad"))
            continue
        print("QUERY %s mrd=%d s=%d qrv=%d qqic=%d nsrc=%d src=%s dst=%s eth=%s hlim=%d ra=%s cksum=%s" % (
            group, q.mrd, q.S, q.QRV, q.QQIC, q.sources_number, ip.src, ip.dst, f[Ether].dst, ip.hlim,
            "ok" if ra else "bad", "ok" if want == q.cksum else "bad"))
    return ok


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "build":
        build(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        sys.exit(0 if check(sys.argv[2]) else 1)
    elif len(sys.argv) == 3 and sys.argv[1] == "check-v1":
        sys.exit(0 if check(sys.argv[2], v1=True) else 1)
    else:
        print(__doc__)
        sys.exit(2)
