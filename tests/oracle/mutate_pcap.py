#!/usr/bin/env python3
"""Hostile traffic from good traffic: read a pcap, write one whose frames are
the distinct input frames (up to --max-distinct) each followed by --variants
mutants. Mutations (seeded, reproducible): byte flips and extreme values
(0x00, 0x01, 0x7f, 0x80, 0xff) in the headers, where the length, offset and
count fields are; truncation at any length, down to an empty frame; random
bytes appended; frames grown to jumbo size; and a few frames of pure noise.
Independent of dcirouter's code: scapy's raw pcap records, no dissection.

usage: mutate_pcap.py IN[,IN...] OUT SEED [--variants N] [--max-distinct M]
prints: frames=<written> distinct=<distinct inputs>
"""
import argparse
import random

from scapy.utils import PcapWriter, RawPcapReader

EXTREMES = (0x00, 0x01, 0x7F, 0x80, 0xFF)


def mutate(rng, fr):
    b = bytearray(fr)
    kind = rng.randrange(8)
    if kind <= 2 and b:
        # Flips and extreme values in the headers (first 160 octets).
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(min(len(b), 160))
            if rng.random() < 0.5:
                b[i] ^= 1 << rng.randrange(8)
            else:
                b[i] = rng.choice(EXTREMES)
        return bytes(b)
    if kind == 3 and b:
        # Two adjacent octets (a 16-bit length or offset) to an extreme.
        i = rng.randrange(max(1, min(len(b), 160) - 1))
        v = rng.choice((0, 1, 0x7FFF, 0x8000, 0xFFFF, len(b), len(b) + 1, len(b) - 15))
        b[i:i + 2] = (v & 0xFFFF).to_bytes(2, "big")
        return bytes(b[:len(fr)])
    if kind == 4:
        # Truncated anywhere, even to nothing.
        return bytes(b[:rng.randrange(len(b) + 1)])
    if kind == 5:
        # Trailing bytes the headers do not account for.
        return bytes(b) + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    if kind == 6:
        # Truncated headers plus a flip: a short frame that still looks right.
        n = min(len(b), rng.randrange(14, max(15, min(len(b), 120))))
        c = bytearray(b[:n])
        if n:
            c[rng.randrange(n)] ^= 0xFF
        return bytes(c)
    # Grown to a jumbo frame (net_pcap hands it over as a chain of mbufs
    # when it exceeds the data room).
    return bytes(b) + bytes(rng.randrange(256) for _ in range(rng.randint(1, 9000 - len(b) if len(b) < 9000 else 1)))


def main():
    ap = argparse.ArgumentParser(description="hostile traffic from good traffic")
    ap.add_argument("inputs", help="input pcaps, separated by commas")
    ap.add_argument("out")
    ap.add_argument("seed", type=int)
    ap.add_argument("--variants", type=int, default=20)
    ap.add_argument("--max-distinct", type=int, default=400)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    seen, distinct = set(), []
    for path in a.inputs.split(","):
        # Raw records: no dissection, the bytes as captured.
        for fr, _ in RawPcapReader(path):
            if fr not in seen:
                seen.add(fr)
                distinct.append(fr)
    distinct = distinct[:a.max_distinct]
    out = []
    for fr in distinct:
        out.append(fr)
        for _ in range(a.variants):
            out.append(mutate(rng, fr))
    # Noise: random frames, some addressed to broadcast.
    for k in range(200):
        n = rng.randrange(0, 200)
        noise = bytes(rng.randrange(256) for _ in range(n))
        if k % 2 and n >= 6:
            noise = b"\xff" * 6 + noise[6:]
        out.append(noise)
    w = PcapWriter(a.out, linktype=1, sync=False)
    for fr in out:
        w.write(fr)
    w.close()
    print(f"frames={len(out)} distinct={len(distinct)}")


if __name__ == "__main__":
    main()
