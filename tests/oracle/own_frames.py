#!/usr/bin/env python3
"""What a router emits, even when provoked by hostile traffic, checked with
scapy:

* every frame's source MAC is one of the router's (--macs);
* every outer IPv4 header has a correct checksum (the router drops a bad
  one rather than forwarding it; its own headers are computed);
* every PFC frame (EtherType 0x8808, all of them the router's own) is an
  IEEE 802.1Qbb frame as scapy's MAC Control dissector reads it: to
  01:80:c2:00:00:01, opcode 0x0101, at least one priority enabled, no
  pause time on a priority that is not enabled, padded to 60 octets;
* the frames the router originates (innermost IP source in --own, a list
  of addresses and prefixes; quoted packets inside ICMP errors do not
  count) are written to OUT, for check_output.py to verify their L4
  checksums and ICRCs.

usage: own_frames.py OUT --macs M1,M2 --own A,P/len,... IN.pcap...
prints: frames=<all> own=<written> pfc=<n> bad-ipv4=<n> bad-mac=<n> bad-pfc=<n>;
exits 1 on any bad
"""
import argparse
import ipaddress
import sys

from scapy.all import IP, IPv6, Ether, rdpcap, wrpcap
from scapy.contrib.mac_control import MACControlClassBasedFlowControl


def pfc_problem(q, raw):
    """Why a PFC frame is not one, or None."""
    if MACControlClassBasedFlowControl not in q:
        return "not dissected as PFC"
    c = q[MACControlClassBasedFlowControl]
    if q.dst.lower() != "01:80:c2:00:00:01":
        return f"destination {q.dst}"
    if c._op_code != 0x0101:
        return f"opcode {c._op_code:#x}"
    en = [int(getattr(c, f"c{i}_enabled")) for i in range(8)]
    t = [int(getattr(c, f"c{i}_pause_time")) for i in range(8)]
    if not any(en):
        return "no priority enabled"
    if any(t[i] and not en[i] for i in range(8)):
        return f"pause time on a priority not enabled: {en} {t}"
    if len(raw) != 60:
        return f"length {len(raw)}"
    return None


def main():
    ap = argparse.ArgumentParser(description="what a router emits")
    ap.add_argument("out")
    ap.add_argument("--macs", required=True)
    ap.add_argument("--own", required=True)
    ap.add_argument("inputs", nargs="+")
    a = ap.parse_args()
    out, inputs = a.out, a.inputs
    macs = set(a.macs.lower().split(","))
    own = [ipaddress.ip_network(x, strict=False) for x in a.own.split(",")]
    total = bad_ip = bad_mac = pfc = bad_pfc = 0
    kept = []
    for path in inputs:
        for p in rdpcap(path):
            total += 1
            q = Ether(bytes(p))
            if q.src.lower() not in macs:
                bad_mac += 1
                print(f"{path}: frame {total}: source MAC {q.src} is not the router's")
            if q.type == 0x8808:
                pfc += 1
                why = pfc_problem(q, bytes(p))
                if why:
                    bad_pfc += 1
                    print(f"{path}: frame {total}: bad PFC: {why}")
            ips = [l for l in q.iterpayloads() if type(l) in (IP, IPv6)]
            if ips and type(ips[0]) is IP:
                c = ips[0].copy()
                del c.chksum
                want = IP(bytes(c)).chksum
                if ips[0].chksum != want:
                    bad_ip += 1
                    print(f"{path}: frame {total}: IPv4 header checksum {ips[0].chksum:#x} != {want:#x}")
            if ips:
                src = ipaddress.ip_address(ips[-1].src)
                if any(src in n for n in own if n.version == src.version):
                    kept.append(p)
    wrpcap(out, kept)
    print(f"frames={total} own={len(kept)} pfc={pfc} bad-ipv4={bad_ip} bad-mac={bad_mac} bad-pfc={bad_pfc}")
    sys.exit(1 if bad_ip or bad_mac or bad_pfc else 0)


if __name__ == "__main__":
    main()
