# SPDX-License-Identifier: BSD-3-Clause
"""mpi_check.py: a 2-rank MPI job's own check, run by mpi-pair.sh. A
ping-pong of 200 messages from 1 byte to 64 KB (rank 1 sends each back
reversed; rank 0 compares every byte) and an allreduce (sum and max of a
vector); each rank prints one line, 'ok' or what was wrong, and exits 0
only when all of it held."""
import sys

import mpi4py
mpi4py.rc.thread_level = "single"
from mpi4py import MPI  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
bad = []
if size != 2:
    bad.append(f"size {size}, want 2")
peer = 1 - rank
for i in range(200):
    n = 1 + (i * 997) % 65536
    buf = bytearray((i + j) % 251 for j in range(n))
    if rank == 0:
        comm.Send(buf, dest=peer, tag=i)
        back = bytearray(n)
        comm.Recv(back, source=peer, tag=i)
        if back != buf[::-1]:
            bad.append(f"ping-pong {i} ({n} bytes) came back wrong")
            break
    else:
        got = bytearray(n)
        comm.Recv(got, source=peer, tag=i)
        if got != buf:
            bad.append(f"ping-pong {i} ({n} bytes) arrived wrong")
            break
        comm.Send(got[::-1], dest=peer, tag=i)
vec = [rank * 1000 + k for k in range(4096)]
total = comm.allreduce(sum(vec), op=MPI.SUM)
want = sum(r * 1000 * 4096 + 4096 * 4095 // 2 for r in range(size))
if total != want:
    bad.append(f"allreduce sum {total}, want {want}")
top = comm.allreduce(max(vec), op=MPI.MAX)
if top != (size - 1) * 1000 + 4095:
    bad.append(f"allreduce max {top}")
# one write: the ranks share mpirun's output, and print() writes each
# argument apart
verdict = "ok" if not bad else "FAILED: " + "; ".join(bad)
sys.stdout.write(f"rank {rank}: ping-pong and allreduce {verdict}\n")
sys.stdout.flush()
sys.exit(1 if bad else 0)
