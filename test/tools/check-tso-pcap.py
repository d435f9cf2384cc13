#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check-tso-pcap.py PCAP SRC_IP PAYLOAD

Checks, with tshark's own dissection, the TCP segments SRC_IP sent in a
capture of one connection whose PAYLOAD bytes left in one TSO WR:
 - the IPv4 header and TCP checksums are good (tshark validates them);
 - tshark's TCP analysis flags none of SRC_IP's segments (no
   retransmission, out-of-order, lost segment, bad window...), but for
   "window full" (a note: the sender used all the window it was given,
   which a sender of 64 KB at once may; reported, not a failure);
 - the data segments carry PAYLOAD bytes, each but the last the same size
   (the MSS), sequence numbers contiguous from the first, IPv4 lengths
   that match, IPv4 IDs one apart, PSH and FIN on the last segment only.
Exit 0 all good, 1 a failure.
"""
import subprocess
import sys


def tshark(path, flt, fields):
    cmd = ["tshark", "-r", path, "-o", "tcp.check_checksum:TRUE",
           "-o", "ip.check_checksum:TRUE", "-o", "tcp.relative_sequence_numbers:FALSE",
           "-Y", flt, "-T", "fields", "-E", "separator=,"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [line.split(",") for line in out.stdout.splitlines() if line]


def main():
    path, src, payload = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ok = True

    def fail(msg):
        nonlocal ok
        print("FAIL: " + msg)
        ok = False

    mine = "ip.src==%s && tcp" % src
    bad = tshark(path, mine + " && (ip.checksum.status != 1 || "
                 "tcp.checksum.status != 1)", ["frame.number"])
    if bad:
        fail("%d segments with a bad or unchecked checksum (frames %s)" %
             (len(bad), " ".join(b[0] for b in bad[:10])))
    flagged = tshark(path, mine + " && tcp.analysis.flags && "
                     "!tcp.analysis.window_full",
                     ["frame.number", "_ws.expert.message"])
    if flagged:
        fail("tshark's TCP analysis flags %d segments: %s" %
             (len(flagged), "; ".join(",".join(f) for f in flagged[:5])))
    full = tshark(path, mine + " && tcp.analysis.window_full",
                  ["frame.number"])
    if full:
        print("note: %d segments filled the receiver's window" % len(full))
    segs = tshark(path, mine + " && tcp.len > 0",
                  ["ip.id", "ip.len", "tcp.seq", "tcp.len", "tcp.hdr_len",
                   "tcp.flags.push", "tcp.flags.fin", "tcp.flags.cwr"])
    if not segs:
        fail("no data segment from %s" % src)
        return 1
    n = len(segs)
    total = sum(int(s[3]) for s in segs)
    mss = int(segs[0][3])
    print("%d data segments from %s, %d bytes, MSS %d" %
          (n, src, total, mss))
    if total != payload:
        fail("%d bytes in the segments, not %d" % (total, payload))
    if n != (payload + mss - 1) // mss:
        fail("%d segments, not %d" % (n, (payload + mss - 1) // mss))
    seq0, id0 = int(segs[0][2]), int(segs[0][0], 0)
    off = 0
    for i, s in enumerate(segs):
        ipid, iplen, seq, tlen, hl = (int(s[0], 0), int(s[1]), int(s[2]),
                                      int(s[3]), int(s[4]))
        last = i == n - 1
        psh, fin = s[5] in ("1", "True"), s[6] in ("1", "True")
        if seq != (seq0 + off) & 0xffffffff:
            fail("segment %d: sequence %d, not %d" % (i, seq, seq0 + off))
        if ipid != (id0 + i) & 0xffff:
            fail("segment %d: IP ID %#x, not %#x" % (i, ipid, id0 + i))
        if iplen != 20 + hl + tlen:
            fail("segment %d: IP length %d for %d bytes" % (i, iplen, tlen))
        if not last and tlen != mss:
            fail("segment %d: %d bytes, not the MSS %d" % (i, tlen, mss))
        if psh != last or fin != last:
            fail("segment %d: PSH %s FIN %s" % (i, psh, fin))
        off += tlen
    if ok:
        print("every segment right: checksums, sequence, IP ID and length, "
              "PSH and FIN "
              "on the last only; no tcp.analysis flag")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
