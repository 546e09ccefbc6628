#!/usr/bin/env python3
"""Independent oracle for the IPsec AH (RFC 4302) on ICMPv6 Long-haul CNPs
(draft-tian-ccwg-long-haul-cnp s.9), driven by tests/pcap_forwarding.rs
(cnps_carry_an_ah_that_scapy_verifies) and the demo's checks.

Usage:
  ah_verify.py IN.pcap SPI ALGORITHM KEY_HEX [ICMPV6_TYPE]
      ALGORITHM is scapy's name: SHA2-256-128 or SHA2-512-256.
      For every IPv6 frame in IN.pcap whose Next Header is 51 (AH), scapy's
      own IPsec code (scapy.layers.ipsec.SecurityAssociation, which needs the
      `cryptography` package) checks the ICV under (SPI, ALGORITHM, KEY) and
      strips the AH; scapy then recomputes the ICMPv6 checksum of what was
      behind it. One line per frame:
        AH spi=<spi> seq=<n> icv=<ok|bad> next=<nh> icmp6type=<t>
           csum=<ok|bad> wrongkey=<rejected|accepted>
      `wrongkey` repeats the check with the key's first octet flipped, which
      must fail. Then a summary line:
        SUMMARY ah=<frames with AH> plain_icmp6=<ICMPv6 type ICMPV6_TYPE
           frames without AH>
      Exits 1 if a frame with AH carries another SPI.
"""
import sys

from scapy.all import IPv6, rdpcap, raw
from scapy.layers.inet6 import in6_chksum
from scapy.layers.ipsec import AH, SecurityAssociation


def icmp6_checksum_ok(ip6_bytes):
    """scapy computes the ICMPv6 checksum afresh over the same bytes."""
    p = IPv6(ip6_bytes)
    body = raw(p.payload)
    zeroed = body[:2] + b"\x00\x00" + body[4:]
    return in6_chksum(58, p, zeroed) == int.from_bytes(body[2:4], "big")


def main():
    path, spi, algo, key_hex = sys.argv[1], int(sys.argv[2], 0), sys.argv[3], sys.argv[4]
    cnp_type = int(sys.argv[5]) if len(sys.argv) > 5 else 200
    key = bytes.fromhex(key_hex)
    good = SecurityAssociation(AH, spi=spi, auth_algo=algo, auth_key=key)
    bad = SecurityAssociation(AH, spi=spi, auth_algo=algo, auth_key=bytes([key[0] ^ 1]) + key[1:])
    n_ah = n_plain = 0
    for f in rdpcap(path):
        if not f.haslayer(IPv6):
            continue
        ip = f[IPv6]
        if ip.nh == 58 and raw(ip.payload)[:1] == bytes([cnp_type]):
            n_plain += 1
            continue
        if ip.nh != 51:
            continue
        n_ah += 1
        ah = ip[AH]
        if ah.spi != spi:
            print(f"AH with SPI {ah.spi:#x}, expected {spi:#x}")
            sys.exit(1)
        try:
            plain = good.decrypt(IPv6(raw(ip)))
            icv = "ok"
        except Exception:
            plain = None
            icv = "bad"
        try:
            bad.decrypt(IPv6(raw(ip)))
            wrong = "accepted"
        except Exception:
            wrong = "rejected"
        nxt = t = csum = "-"
        if plain is not None:
            nxt = plain.nh
            body = raw(plain.payload)
            t = body[0] if body else "-"
            csum = "ok" if nxt == 58 and icmp6_checksum_ok(raw(plain)) else "bad"
        print(f"AH spi={ah.spi:#x} seq={ah.seq} icv={icv} next={nxt} icmp6type={t} csum={csum} wrongkey={wrong}")
    print(f"SUMMARY ah={n_ah} plain_icmp6={n_plain}")


if __name__ == "__main__":
    main()
