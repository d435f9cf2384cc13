#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""telemetry-read.py SOCKET: read droce's counters through a DPDK process's
telemetry socket (the protocol Debian's dpdk-telemetry.py speaks) twice,
and require that the port's packet counters are there and moving, and
that the per-QP counters are there (and none for a QPN not in use)."""
import json
import socket
import sys
import time


def query(path, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    json.loads(s.recv(1024 * 12))           # greeting
    s.send(cmd.encode())
    reply = json.loads(s.recv(1024 * 64))
    s.close()
    return reply


def main():
    path = sys.argv[1]
    ports = query(path, "/droce/ports")["/droce/ports"]
    print("telemetry: droce ports", ports)
    # wait for traffic to start (the side channel, ARP, QP set-up first)
    for _ in range(100):
        first = query(path, "/droce/port/stats,0")["/droce/port/stats"]
        if first["rx_pkts"] > 0:
            break
        time.sleep(0.1)
    time.sleep(0.5)
    second = query(path, "/droce/port/stats,0")["/droce/port/stats"]
    q = query(path, "/droce/queue/stats,0.0")["/droce/queue/stats"]
    for k in ("nic_rx_pkts", "rx_pkts", "tx_pkts", "acks_tx",
              "drop_icrc", "retransmits",
              # mlx5's names for the recovery counters
              "out_of_sequence", "packet_seq_err", "local_ack_timeout_err",
              "duplicate_request", "roce_adp_retrans", "roce_adp_retrans_to"):
        print("telemetry: %-12s %d -> %d" % (k, first[k], second[k]))
    # per QP: the QPNs in use, each QP's counters, none for a QPN not in use
    qpns = query(path, "/droce/qps,0")["/droce/qps"]
    qp_rx = qp_tx = 0
    for n in qpns:
        st = query(path, "/droce/qp/stats,0.%d" % n)["/droce/qp/stats"]
        print("telemetry: QP 0x%x (queue %d) rx_pkts %d tx_pkts %d" %
              (st["qpn"], st["queue"], st["rx_pkts"], st["tx_pkts"]))
        qp_rx += st["rx_pkts"]
        qp_tx += st["tx_pkts"]
        # DCQCN's state: no CNP on a clean link, so the line rate
        if st.get("cc_limited") != 0 or not st.get("cc_rate_mbps"):
            qp_rx = -1 << 40
            print("telemetry: QP 0x%x cc state FAILED: %s" % (n, st))
    after = query(path, "/droce/port/stats,0")["/droce/port/stats"]
    unused = max(qpns, default=0) + 1000
    none = query(path, "/droce/qp/stats,0.%d" % unused)["/droce/qp/stats"]
    ok_qp = (len(qpns) > 0 and qp_rx > 0 and qp_rx <= after["rx_pkts"] and
             0 < qp_tx <= after["tx_pkts"] and none is None)
    print("telemetry: per-QP counters", "read" if ok_qp else "FAILED",
          "(QPs %s, no QP 0x%x: %s)" % ([hex(n) for n in qpns], unused, none))
    # receive filtering: how the NIC filters (net_memif has no filter of
    # its own and is never made promiscuous), and the transport's drops of
    # frames for other addresses, none of which a memif pair sees
    filt = [second.get(k) for k in ("rx_drop_mac", "rx_drop_mcast",
                                     "rx_drop_ip", "rx_drop_src",
                                     "drop_length")]
    ok_filt = second.get("rx_filter") == "nic_mac" and filt == [0] * 5
    print("telemetry: rx_filter %s, address and length drops %s" %
          (second.get("rx_filter"), filt))
    ok = (ok_filt and len(ports) == 1 and
          second["rx_pkts"] > first["rx_pkts"] > 0 and
          second["nic_rx_pkts"] >= second["rx_pkts"] and
          q["rx_pkts"] > 0 and q.get("nic_rx_pkts", 0) >= q["rx_pkts"] and
          ok_qp)
    print("telemetry:", "counters read and moving" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
