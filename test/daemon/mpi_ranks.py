# SPDX-License-Identifier: BSD-3-Clause
"""mpi_ranks.py: an N-rank MPI job's own check, run by mpi-ranks.sh. Every
pair of ranks exchanges messages of many sizes (1 byte to 64 KB, and one
of 3 MB) both ways, each byte derived from (sender, receiver, index, its
offset); then an alltoall of 4 KB blocks, an alltoallv of blocks of
different sizes, an allreduce (sum and max of a vector) and a bcast. Each
rank compares every byte it received with what its sender must have
sent, prints one line, 'rank R: ok' or what was wrong (where a wrong
block starts and ends, its addresses, whether it is zeros), and exits 0
only when all of it held."""
import ctypes
import sys

import mpi4py
mpi4py.rc.thread_level = "single"
from mpi4py import MPI  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
bad = []

# 1 B to 64 KB: the small and eager sizes, both sides of a page and of
# the MTU, and a few in between; the last one rendezvous for sure
SIZES = [1, 2, 3, 7, 8, 63, 64, 65, 255, 256, 1000, 1023, 1024, 1025,
         2047, 2048, 4095, 4096, 4097, 8191, 8192, 8193, 12345, 16384,
         32767, 32768, 50000, 65535, 65536, 3 * 1024 * 1024 + 17]
BLOCK = 4096
SHIFT = [bytes((x + s * 37) & 0xff for x in range(256)) for s in range(256)]


def pattern(src, dst, idx, n):
    """the bytes src sends dst as its message idx: different for every
    (sender, receiver, index), and each 4 KB block of it different from
    the others (its number, mixed with the seed, in its first 4 bytes),
    so that a block delivered twice, or at the wrong offset, shows"""
    seed = (src * 131 + dst * 31 + idx * 7 + 1) & 0xff
    row = bytes((seed + k * 13 + (k >> 8) * 5) & 0xff for k in range(BLOCK))
    out = []
    for b in range((n + BLOCK - 1) // BLOCK):
        mark = (b * 2654435761 + seed * 0x01010101) & 0xffffffff
        out.append(mark.to_bytes(4, "little") +
                   row[4:].translate(SHIFT[b & 0xff]))
    return b"".join(out)[:n]


def address(buf):
    """where a writable buffer's bytes are (a wrong block's addresses
    tell a page or an MTU apart)"""
    return ctypes.addressof(ctypes.c_char.from_buffer(buf)) if len(buf) else 0


def check(got, want, what, base=None):
    """compare got with want; on a difference, say where it starts and
    ends, how many bytes differ, and what came instead (base: the
    received bytes' address)"""
    if got == want:
        return True
    n = min(len(got), len(want))
    wrong = [k for k in range(n) if got[k] != want[k]]
    if not wrong:
        bad.append(f"{what}: {len(got)} bytes, want {len(want)}")
        return False
    k = wrong[0]
    zero = all(got[i] == 0 for i in wrong)
    bad.append(f"{what}: {len(got)} bytes, {len(wrong)} wrong from {k} "
               f"to {wrong[-1]}{' (zeros)' if zero else ''}, got "
               f"{bytes(got[k:k + 8]).hex()} want {bytes(want[k:k + 8]).hex()}"
               + (f", at 0x{base + k:x}-0x{base + wrong[-1]:x}"
                  if base is not None else ""))
    return False


# pairwise: every ordered pair (a, b), a != b, each size once, the ranks
# paired round by round (a round-robin tournament) so that each talks to
# one peer at a time and nothing waits in a cycle
players = size + size % 2
for r in range(players - 1):
    # the circle method: player players - 1 stays, the others turn
    peer = None
    if rank == players - 1:
        peer = r
    elif rank == r:
        peer = players - 1
    else:
        # i and -i around r meet
        peer = (2 * r - rank) % (players - 1)
    if peer >= size or peer == rank:
        continue
    for idx, n in enumerate(SIZES):
        out = pattern(rank, peer, idx, n)
        got = bytearray(n)
        req = comm.Irecv(got, source=peer, tag=idx)
        comm.Send(out, dest=peer, tag=idx)
        req.Wait()
        if not check(bytes(got), pattern(peer, rank, idx, n),
                     f"from rank {peer} message {idx}", address(got)):
            break

# alltoall: block j of rank i's buffer goes to rank j
blk = 4096
out = b"".join(pattern(rank, j, 1000, blk) for j in range(size))
got = bytearray(blk * size)
comm.Alltoall(out, got)
for j in range(size):
    if not check(bytes(got[j * blk:(j + 1) * blk]), pattern(j, rank, 1000, blk),
                 f"alltoall block from rank {j}", address(got) + j * blk):
        break


# alltoallv: rank i sends rank j (i + 2 j) * 1000 + 1 bytes
def vlen(i, j):
    return (i + 2 * j) * 1000 + 1


scounts = [vlen(rank, j) for j in range(size)]
rcounts = [vlen(j, rank) for j in range(size)]
sdispl = [sum(scounts[:j]) for j in range(size)]
rdispl = [sum(rcounts[:j]) for j in range(size)]
out = b"".join(pattern(rank, j, 2000, scounts[j]) for j in range(size))
got = bytearray(sum(rcounts))
comm.Alltoallv([out, (scounts, sdispl), MPI.BYTE],
               [got, (rcounts, rdispl), MPI.BYTE])
for j in range(size):
    part = bytes(got[rdispl[j]:rdispl[j] + rcounts[j]])
    if not check(part, pattern(j, rank, 2000, rcounts[j]),
                 f"alltoallv block from rank {j}", address(got) + rdispl[j]):
        break

# allreduce
vec = [rank * 1000 + k for k in range(4096)]
total = comm.allreduce(sum(vec), op=MPI.SUM)
want = sum(r * 1000 * 4096 + 4096 * 4095 // 2 for r in range(size))
if total != want:
    bad.append(f"allreduce sum {total}, want {want}")
top = comm.allreduce(max(vec), op=MPI.MAX)
if top != (size - 1) * 1000 + 4095:
    bad.append(f"allreduce max {top}")

# bcast of a buffer from the last rank
n = 200000
buf = bytearray(pattern(size - 1, size, 3000, n)) if rank == size - 1 \
    else bytearray(n)
comm.Bcast(buf, root=size - 1)
check(bytes(buf), pattern(size - 1, size, 3000, n), "bcast", address(buf))

# one write: the ranks share mpirun's output, and print() writes each
# argument apart
verdict = "ok" if not bad else "FAILED: " + "; ".join(bad)
sys.stdout.write(f"rank {rank}: {verdict}\n")
sys.stdout.flush()
sys.exit(1 if bad else 0)
