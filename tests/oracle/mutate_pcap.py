#!/usr/bin/env python3
"""Hostile traffic from good traffic: read a pcap, write one whose frames are
the distinct input frames (up to --max-distinct) each followed by --variants
mutants. Mutations (seeded, reproducible): byte flips and extreme values
(0x00, 0x01, 0x7f, 0x80, 0xff) in the headers, where the length, offset and
count fields are; truncation at any length, down to an empty frame; random
bytes appended; frames grown to jumbo size; and a few frames of pure noise.
Independent of dcirouter's code: plain pcap records, no parsing.

usage: mutate_pcap.py IN[,IN...] OUT SEED [--variants N] [--max-distinct M]
prints: frames=<written> distinct=<distinct inputs>
"""
import random
import struct
import sys

EXTREMES = (0x00, 0x01, 0x7F, 0x80, 0xFF)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise SystemExit(f"{path}: not a little-endian pcap (magic {magic:#x})")
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        off += 16
        frames.append(data[off:off + incl])
        off += incl
    return data[:24], frames


def write_pcap(path, header, frames):
    # Snap length 65535 and Ethernet link type, whatever the input said.
    header = header[:16] + struct.pack("<II", 65535, 1)
    with open(path, "wb") as f:
        f.write(header)
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(fr), len(fr)))
            f.write(fr)


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
    args = sys.argv[1:]
    opts = {"--variants": 20, "--max-distinct": 400}
    pos = []
    i = 0
    while i < len(args):
        if args[i] in opts:
            opts[args[i]] = int(args[i + 1])
            i += 2
        else:
            pos.append(args[i])
            i += 1
    src, dst, seed = pos[0], pos[1], int(pos[2])
    rng = random.Random(seed)
    # Several inputs may be given, separated by commas.
    header, frames = None, []
    for path in src.split(","):
        h, f = read_pcap(path)
        header = header or h
        frames += f
    seen, distinct = set(), []
    for fr in frames:
        if fr not in seen:
            seen.add(fr)
            distinct.append(fr)
    distinct = distinct[:opts["--max-distinct"]]
    out = []
    for fr in distinct:
        out.append(fr)
        for _ in range(opts["--variants"]):
            out.append(mutate(rng, fr))
    # Noise: random frames, some addressed to broadcast.
    for k in range(200):
        n = rng.randrange(0, 200)
        noise = bytes(rng.randrange(256) for _ in range(n))
        if k % 2 and n >= 6:
            noise = b"\xff" * 6 + noise[6:]
        out.append(noise)
    write_pcap(dst, header, out)
    print(f"frames={len(out)} distinct={len(distinct)}")


if __name__ == "__main__":
    main()
