"""Independent check of dcirouter's output pcaps with scapy: every IPv4 header
checksum, UDP/ICMP/ICMPv6 checksum and RoCEv2 ICRC must equal what scapy
computes from scratch, and IPv4 / IPv6 fragments must reassemble (scapy's
defragment / defragment6) into a datagram whose UDP / ICMP / ICMPv6
checksum verifies. Prints one line per
packet and per reassembled datagram; exits 1 on a mismatch. A datagram whose
fragments are not all in the pcap (one was dropped, under a counter of its
own) is not reassembled: its line ends in [incomplete], for the caller to
judge."""
import sys
from scapy.all import rdpcap, defragment, defragment6, Ether, IP, IPv6, UDP, ICMP, ARP, IPv6ExtHdrFragment
from scapy.layers.inet6 import _ICMPv6, in6_chksum
from scapy.contrib.roce import BTH

bad = 0


def complete(frags):
    """(offset in octets, payload length, more-fragments) of each fragment:
    do they cover the datagram from 0 to its last fragment without a hole?
    (Overlaps and duplicates are not holes.)"""
    end = 0
    last_end = None
    for off, n, more in sorted(frags):
        if off > end:
            return False
        end = max(end, off + n)
        if not more:
            last_end = off + n
    return last_end is not None and last_end == end


def verdict(label, got, want):
    """'LABEL-ok', or 'BAD LABEL got != want' counted in `bad`."""
    global bad
    if got == want:
        return f"{label}-ok"
    bad += 1
    return f"BAD {label} {got:#x} != {want:#x}"


for path in sys.argv[1:]:
    for i, p in enumerate(rdpcap(path)):
        raw = bytes(p)
        q = Ether(raw)
        notes = []
        frag = (IP in q and (q[IP].flags.MF or q[IP].frag > 0)) or IPv6ExtHdrFragment in q
        for layer, field in ((IP, "chksum"), (UDP, "chksum"), (ICMP, "chksum")):
            if layer is not IP and frag:
                # Covers the whole datagram: checked after reassembly below.
                notes.append("fragment")
                break
            if layer in q:
                got = q[layer].getfieldval(field)
                if layer is UDP and got == 0 and IP in q:
                    notes.append("udp-chksum-0")
                    continue
                c = q.copy()
                del c[layer].chksum
                notes.append(verdict(layer.__name__, got, Ether(bytes(c))[layer].getfieldval(field)))
        # The first ICMPv6 layer only: one quoted inside an ICMPv6 error
        # is the offending packet as received, not the router's to check.
        for l in ([] if frag else [l for l in q.layers() if issubclass(l, _ICMPv6)][:1]):
            got = q[l].cksum
            c = q.copy()
            del c[l].cksum
            notes.append(verdict("ICMPv6", got, Ether(bytes(c))[l].cksum))
        # ICMPv6 types scapy does not know (Long-haul CNP, FANN) come out as
        # Raw: check their checksum with scapy's own pseudo-header sum.
        # Inside IPv6-in-IPv6 (notifications encapsulated toward an END.C /
        # END.E SID) the innermost IPv6 header is the one that counts.
        ip6 = q[IPv6] if IPv6 in q else None
        while ip6 is not None and isinstance(ip6.payload, IPv6):
            ip6 = ip6.payload
            notes.append("IPv6-in-IPv6")
        if ip6 is not None and not frag and ip6.nh == 58 and not any(issubclass(l, _ICMPv6) for l in q.layers()):
            body = bytearray(bytes(ip6.payload))
            got = int.from_bytes(body[2:4], "big")
            body[2:4] = b"\x00\x00"
            notes.append(verdict(f"ICMPv6-type{body[0]}", got, in6_chksum(58, ip6, bytes(body))))
        # A quoted packet inside an ICMP error (UDPerror / BTH) is cut
        # short and not the router's to check.
        if BTH in q and type(q[BTH].underlayer) is UDP:
            got = q[BTH].icrc
            c = q.copy()
            c[BTH].icrc = None
            notes.append(verdict("ICRC", got, Ether(bytes(c))[BTH].icrc))
        print(f"{path.split('/')[-1]}#{i}: {q.summary()} [{' '.join(notes)}]")
    # Fragments: reassemble the datagrams (RFC 791) and check them whole.
    frags = [p for p in rdpcap(path) if IP in p and (p[IP].flags.MF or p[IP].frag > 0)]
    if frags:
        n = {}
        for f in frags:
            n[f[IP].id] = n.get(f[IP].id, 0) + 1
        # A datagram is (source, destination, protocol, identification), as
        # scapy's defragment (and RFC 791) tell them apart.
        key = lambda f: (f[IP].src, f[IP].dst, f[IP].proto, f[IP].id)
        whole = []
        for k in sorted({key(f) for f in frags}):
            group = [f for f in frags if key(f) == k]
            if complete([(f[IP].frag * 8, len(bytes(f[IP].payload)), bool(f[IP].flags.MF)) for f in group]):
                whole.extend(group)
            else:
                print(f"{path.split('/')[-1]}: fragments of id {k[3]:#x} ({k[0]} -> {k[1]}): {len(group)} in the pcap, not the whole datagram [incomplete]")
        for p in (defragment(whole) if whole else []):
            ip = p[IP] if IP in p else None
            if ip is None or ip.flags.MF or ip.frag > 0:
                bad += 1
                print(f"{path.split('/')[-1]}: BAD fragments of id {ip.id if ip else '?'} do not reassemble")
                continue
            note = "no-udp"
            for layer in (UDP, ICMP):
                if layer in ip:
                    got = ip[layer].chksum
                    c = ip.copy()
                    del c[layer].chksum
                    note = verdict(layer.__name__, got, IP(bytes(c))[layer].chksum)
            print(f"{path.split('/')[-1]}: reassembled id={ip.id:#x} from {n.get(ip.id, 0)} fragments, {len(bytes(ip))} octets [{note}]")
    frags6 = [p for p in rdpcap(path) if IPv6ExtHdrFragment in p]
    # defragment6 takes the fragments of one datagram: group by ident.
    key6 = lambda p: (p[IPv6].src, p[IPv6].dst, p[IPv6ExtHdrFragment].id)
    for k in sorted({key6(p) for p in frags6}):
        ident = k[2]
        group = [p for p in frags6 if key6(p) == k]
        if not complete([(f[IPv6ExtHdrFragment].offset * 8, len(bytes(f[IPv6ExtHdrFragment].payload)), bool(f[IPv6ExtHdrFragment].m)) for f in group]):
            print(f"{path.split('/')[-1]}: IPv6 fragments of ident {ident:#x}: {len(group)} in the pcap, not the whole datagram [incomplete]")
            continue
        p = defragment6(group)
        ip6 = p[IPv6] if p is not None and IPv6 in p else None
        if ip6 is None or IPv6ExtHdrFragment in p:
            bad += 1
            print(f"{path.split('/')[-1]}: BAD IPv6 fragments of ident {ident:#x} do not reassemble")
            continue
        body = bytearray(bytes(ip6.payload))
        got = int.from_bytes(body[2:4], "big")
        body[2:4] = b"\x00\x00"
        note = verdict(f"nh{ip6.nh}-checksum", got, in6_chksum(ip6.nh, ip6, bytes(body)))
        print(f"{path.split('/')[-1]}: reassembled IPv6 ident={ident:#x} from {len(group)} fragments, {len(body)} octets of payload [{note}]")
sys.exit(1 if bad else 0)
