#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# bench-phases.sh [TP-BENCH] [OP:BYTES...]: the cost model of a message
# through lib/transport alone: instructions per message by phase and by
# side, from droce-tp-bench under callgrind (64 in flight, both ends on
# one core). Each side's turns run in their own functions in the bench
# (requester_progress, responder_receive, ...), and callgrind keeps every
# function's call chain apart (--separate-callers), so each instruction is
# charged to the innermost phase on its chain. A frame's transmit buffer
# counts with the phase that built the frame (the bench hands frames over
# by pointer: no PMD). Figures, never pass/fail.
# Needs valgrind and python3.
set -uo pipefail
tpb=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/app/droce-tp-bench}
shift || true
cases=${*:-WRITE:64 SEND:64 READ:64 FETCH_ADD:8}
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
command -v python3 >/dev/null || { echo "needs python3" >&2; exit 2; }
[ -x "$tpb" ] || { echo "no $tpb" >&2; exit 2; }
out=$(mktemp -d /tmp/droce-phases.XXXXXX)
trap 'rm -rf "$out"' EXIT

for c in $cases; do
	op=${c%%:*} size=${c#*:}
	valgrind --tool=callgrind --separate-callers=24 --compress-strings=no \
		--compress-pos=no --callgrind-out-file="$out/cg" \
		"$tpb" 0.2 "$op" "$size" 64 > "$out/log" 2>&1 || {
		echo "$op $size: droce-tp-bench failed" >&2; tail -3 "$out/log" >&2
		continue
	}
	msgs=$(awk '$1 == "posted" { print $2 + 0 }' "$out/log")
	python3 - "$out/cg" "$op" "$size" "${msgs:-0}" <<'EOF'
import sys

path, op, size, msgs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
# innermost phase first: the first rule with a function on the chain wins
RULES = [
    ("ICRC", ("droce_icrc", "icrc_fold", "icrc_v4_fold", "droce_icrc_hdr",
              "droce_wire_icrc_begin", "droce_wire_icrc_end")),
    ("payload gather", ("tp_sge_copy_out", "tp_sge_spans")),
    ("completion", ("tp_wqe_done", "tp_comp_retire", "tp_cq_commit",
                    "tp_cq_push", "tp_cq_slot")),
    ("completer (ACKs, responses in)", ("tp_comp_rx",)),
    ("responder: execute, place", ("tp_resp_rx_frame",)),
    ("responder: ACK/response out", ("tp_resp_progress",)),
    ("requester: build request", ("tp_req_progress",)),
    ("post", ("droce_qp_post_send", "droce_qp_post_recv")),
    ("poll", ("droce_cq_poll",)),
    ("receive: parse, validate, dispatch", ("droce_tp_rx_burst",
                                             "droce_wire_parse")),
    ("progress loop, timers", ("droce_tp_progress",)),
]
SIDES = (("requester", ("requester_progress", "requester_receive",
                        "requester_poll", "droce_qp_post_send")),
         ("responder", ("responder_progress", "responder_receive",
                        "responder_poll", "droce_qp_post_recv")))
cost = {}
fn, skip = None, False
with open(path) as f:
    for line in f:
        if line.startswith("fn="):
            fn = line[3:].rstrip("\n").split("'")
            continue
        if line.startswith("calls="):
            skip = True	# the next cost line is the call's, not fn's
            continue
        if not line[:1].isdigit() and line[:1] not in "+-*":
            continue
        if skip:
            skip = False
            continue
        if fn is None or not any(n.startswith("run") for n in fn):
            continue
        parts = line.split()
        if len(parts) < 2:
            continue
        n = int(parts[1])
        names = [x.split(".")[0] for x in fn]
        side = next((s for s, fs in SIDES if any(x in fs for x in names)),
                    "bench loop")
        phase = next((p for p, fs in RULES if any(x in fs for x in names)),
                     "bench loop")
        if side == "bench loop":
            phase = "bench loop"
        cost[(phase, side)] = cost.get((phase, side), 0) + n
if msgs <= 0:
    print(f"{op} {size}: no message count")
    sys.exit(0)
order = [p for p, _ in RULES] + ["bench loop"]
print(f"\n{op} {size} B, 64 in flight: instructions per message")
print(f"{'phase':34} {'requester':>10} {'responder':>10} {'both':>8}")
tot = {"requester": 0, "responder": 0, "bench loop": 0}
for p in order:
    r = cost.get((p, "requester"), 0) / msgs
    s = cost.get((p, "responder"), 0) / msgs
    b = cost.get((p, "bench loop"), 0) / msgs
    tot["requester"] += r
    tot["responder"] += s
    tot["bench loop"] += b
    if r + s + b >= 0.5:
        print(f"{p:34} {r:10.0f} {s:10.0f} {r + s + b:8.0f}")
print(f"{'total':34} {tot['requester']:10.0f} {tot['responder']:10.0f} "
      f"{sum(tot.values()):8.0f}")
EOF
done
