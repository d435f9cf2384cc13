#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pcap-frames.py OUTDIR PCAP...: write each frame of the captures to a file."""
import os
import struct
import sys


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        yield data[off:off + incl]
        off += incl


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for p in sys.argv[2:]:
        for fr in frames(p):
            with open(os.path.join(out, "f%05d" % n), "wb") as f:
                f.write(fr)
            n += 1


if __name__ == "__main__":
    main()
