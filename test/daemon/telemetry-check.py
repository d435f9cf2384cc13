#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""telemetry-check.py SOCKET...: after every application is gone, each
droced's telemetry shows no application attached, every one that
attached detached, QPs reclaimed from the killed ones, and the port with
no QP left (/droce/qps holds only QP1, the daemon's own GSI QP)."""
import json
import socket
import sys
import time


def query(path, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    json.loads(s.recv(1024 * 12))
    s.send(cmd.encode())
    reply = json.loads(s.recv(1024 * 64))
    s.close()
    return reply[cmd.split(",")[0]]


def main():
    ok = True
    for path in sys.argv[1:]:
        # a slow machine may still be tearing the last ones down
        for _ in range(100):
            st = query(path, "/droced/stats")
            qps = query(path, "/droce/qps,0")
            if st["apps"] == 0 and qps == [1]:
                break
            time.sleep(0.2)
        print(path, "stats", st, "qps", qps)
        if st["apps"] != 0 or st["attached"] != st["detached"]:
            print("FAIL: applications still attached")
            ok = False
        if st["reclaimed_qps"] < 1:
            print("FAIL: no QP reclaimed from the killed application")
            ok = False
        # QP1 is the daemon's (the connection manager's), not an app's
        left = [q for q in qps if q != 1]
        if left:
            print("FAIL: QPs left on the port:", left)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
