#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""check-roce-pcap.py PCAP [MANIFEST]

Independent checks of the RoCEv2 frames droce writes:
 1. tshark -d udp.port==4791,infiniband decodes each one with the opcode
    the manifest names (when given), and reports no malformed packet and no
    expert warning or error;
 2. the ICRC of every IPv4 frame matches the one Scapy's scapy.contrib.roce
    computes, and that of every IPv6 frame (which Scapy cannot do) matches a
    plain zlib computation of IBTA A17's masked header.
Exit 0 all good, 1 a failure, 77 tshark or scapy missing.
"""
import shutil
import struct
import subprocess
import sys
import zlib

try:
    from scapy.layers.l2 import Ether
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.contrib.roce import BTH
except ImportError:
    print("scapy (python3-scapy) missing: skip")
    sys.exit(77)


def frames(path):
    with open(path, "rb") as f:
        d = f.read()
    magic = struct.unpack("<I", d[:4])[0]
    e = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(d):
        _, _, incl, _ = struct.unpack(e + "IIII", d[off:off + 16])
        off += 16
        yield d[off:off + incl]
        off += incl


def norm(name):
    """RC_SEND_LAST_WITH_IMMEDIATE and 'RC Send Last Immediate' -> same."""
    n = name.lower().replace("_", " ").replace(" with ", " ")
    n = n.replace("cmp swap", "compare swap")
    return "".join(n.split())


def tshark_check(pcap, manifest):
    if shutil.which("tshark") is None:
        print("tshark missing: skip")
        sys.exit(77)
    out = subprocess.run(
        ["tshark", "-n", "-r", pcap, "-d", "udp.port==4791,infiniband",
         "-T", "fields", "-E", "separator=|",
         "-e", "frame.number", "-e", "infiniband.bth.opcode",
         "-e", "_ws.malformed", "-e", "_ws.expert.severity",
         "-e", "_ws.expert", "-e", "frame.protocols", "-e", "_ws.col.Info"],
        capture_output=True, text=True, check=True).stdout
    bad = guessed = 0
    rows = [line.split("|") for line in out.splitlines() if line]
    for num, op, malformed, sev, expert, protos, info in rows:
        want = manifest.get(int(num))
        problem = None
        # Payloads are user bytes: Wireshark may guess an upper protocol
        # in them (IPoIB ethertype, SDP, iSER...) and find it malformed.
        # That says nothing of droce's headers, which decoded before it.
        after_ib = protos.split("infiniband", 1)[1] if "infiniband" in \
            protos else ""
        if (malformed or expert) and after_ib.strip(":"):
            guessed += 1
            malformed = expert = ""
        if malformed:
            problem = "malformed"
        elif expert:
            problem = "expert: " + expert
        elif want is not None:
            wop, wname = want
            if op == "" or int(op) != wop:
                problem = "opcode %s, want %d" % (op, wop)
            elif wop in (0x81, 0x1C, 0x1D) or 0xA0 <= wop <= 0xB7:
                # Wireshark 4.0 (Debian 12) names neither CNP nor IBTA
                # 1.5's FLUSH and ATOMIC WRITE ("Unknown OpCode"): the
                # number is checked, and that nothing is malformed. XRC
                # opcodes it names in the BTH ("Extended Reliable Connection (XRC)
                # - SEND First") but not in the Info column, and it
                # decodes no header after that BTH.
                pass
            elif not norm(info).startswith(norm(wname)):
                problem = "decoded as %r, want %s" % (info, wname)
        if problem:
            bad += 1
            print("tshark frame %s: %s" % (num, problem))
    print("tshark: %d frames decoded, %d problems (%d payloads taken for "
          "an upper protocol, ignored)" % (len(rows), bad, guessed))
    return bad, len(rows)


def icrc_v6(f):
    """IBTA A17.3.3 over an IPv6 frame (untagged or 802.1Q)."""
    l3 = 18 if f[12:14] == b"\x81\x00" else 14
    ip = bytearray(f[l3:])
    plen = struct.unpack(">H", ip[4:6])[0]
    body = ip[:40 + plen - 4]
    body[0] |= 0x0F
    body[1:4] = b"\xff\xff\xff"
    body[7] = 0xFF
    body[40 + 6:40 + 8] = b"\xff\xff"
    body[40 + 8 + 4] = 0xFF
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(body)) & 0xFFFFFFFF)


def icrc_rxe_flush(f, l3, end):
    """The ICRC Linux rxe (>= 6.2) puts on a FLUSH: after the masked
    headers its CRC runs over BTH, FETH and RETH again (its opcode table
    gives FLUSH no payload offset). droce sends it with
    DROCE_RXE_FLUSH_ICRC=1 and accepts it always."""
    ip = bytearray(f[l3:end - 4])
    if ip[0] >> 4 == 4:
        ip[1] = 0xFF
        ip[8] = 0xFF
        ip[10:12] = b"\xff\xff"
        udp = 20
    else:
        ip[0] |= 0x0F
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF
        udp = 40
    ip[udp + 6:udp + 8] = b"\xff\xff"
    ip[udp + 8 + 4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip))
    crc = zlib.crc32(f[l3 + udp + 8:end - 4], crc)
    return struct.pack("<I", crc & 0xFFFFFFFF)


def icrc_check(pcap):
    ok = bad = rxe_flush = 0
    for f in frames(pcap):
        p = Ether(f)
        if UDP not in p or p[UDP].dport != 4791:
            continue
        l3 = 18 if f[12:14] == b"\x81\x00" else 14
        if IP in p:
            want = p[BTH].compute_icrc(b"")
            end = l3 + p[IP].len
        elif IPv6 in p:
            want = icrc_v6(f)
            end = l3 + 40 + p[IPv6].plen
        else:
            continue
        wire = f[end - 4:end]
        if want == wire:
            ok += 1
        elif f[l3 + (20 if IP in p else 40) + 8] == 0x1C and \
                icrc_rxe_flush(f, l3, end) == wire:
            ok += 1
            rxe_flush += 1
        else:
            bad += 1
            print("ICRC mismatch: wire %s, independent %s" %
                  (wire.hex(), want.hex()))
    print("ICRC: %d verified independently, %d bad" % (ok, bad))
    if rxe_flush:
        print("ICRC: %d of them FLUSHes with Linux rxe's ICRC (not the "
              "spec's)" % rxe_flush)
    return bad, ok


def main():
    pcap = sys.argv[1]
    manifest = {}
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as m:
            for line in m:
                num, op, name, _ = line.split()
                manifest[int(num)] = (int(op, 16), name)
    tbad, tn = tshark_check(pcap, manifest)
    ibad, iok = icrc_check(pcap)
    if manifest and tn != len(manifest):
        print("tshark saw %d frames, manifest has %d" % (tn, len(manifest)))
        tbad += 1
    if tn == 0 or iok == 0:
        print("nothing checked")
        return 1
    return 1 if tbad or ibad else 0


if __name__ == "__main__":
    sys.exit(main())
