#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Turn the recorded protocol fixtures into seed inputs for protocol_fuzz.

Usage: make_protocol_seeds.py OUTDIR
Writes one seed per tests/data/protocol/*.txt in the input layout described
at the top of tests/fuzz/protocol_fuzz.cpp, but the sysbench_* recordings:
they repeat a few commands hundreds of times, and a seed of 100-300 KB would
raise libFuzzer's input size (and slow every run) for no new shape.
"""
import glob
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "data", "protocol")


def convert(path):
    out = bytearray([0x02])  # keep packets, default caps
    for line in open(path):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        tag = parts[1]
        if tag == "connect":
            out += bytes([0x80, 0x81])
        elif tag == "close":
            out += bytes([0x82])
        else:
            data = bytes.fromhex(parts[2])
            ctl = (1 if tag in ("S", "TS") else 0) | (2 if tag.startswith("T") else 0)
            # Long reads are split: lengths are 16-bit in the seed layout.
            for off in range(0, len(data), 0xFFFF):
                piece = data[off:off + 0xFFFF]
                out += bytes([ctl]) + struct.pack("<H", len(piece)) + piece
    return bytes(out)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*.txt"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name.startswith("sysbench_"):
            continue
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(convert(path))


if __name__ == "__main__":
    main()
