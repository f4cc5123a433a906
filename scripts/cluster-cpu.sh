#!/usr/bin/env bash
# The CPU each node spends per write, through a single node, a cluster's
# leader or one of its followers: docs/benchmarks.md, "CPU per write
# across the cluster".
#
#   scripts/cluster-cpu.sh DSS CLIENTS single|leader|follower [DURATION]
#
# Starts one node or three on loopback (--fsync always unless FSYNC says
# otherwise), runs `dss bench --op set` against the one asked for, and
# prints writes/s and each node's CPU time (utime+stime from /proc) over
# the window divided by the writes. Linux only; needs jq.
set -euo pipefail
dss=$1 clients=$2 target=$3 duration=${4:-8s}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
base=$((20000 + RANDOM % 20000))
leader=0
if [ "$target" = single ]; then
	"$dss" serve --listen 127.0.0.1:$base --data "$work/n1" --fsync "${FSYNC:-always}" --log-level warn 2>>"$work/log" &
	pids=($!)
	port=$base
	sleep 1
else
	peers="n1=127.0.0.1:$((base + 10)),n2=127.0.0.1:$((base + 11)),n3=127.0.0.1:$((base + 12))"
	for i in 0 1 2; do
		"$dss" serve --node-id n$((i + 1)) --listen 127.0.0.1:$((base + i)) \
			--cluster-listen 127.0.0.1:$((base + 10 + i)) --peers "$peers" \
			--data "$work/n$i" --fsync "${FSYNC:-always}" --log-level warn 2>>"$work/log" &
		pids+=($!)
	done
	name=
	for _ in $(seq 100); do
		name=$("$dss" cluster status --cluster-addr 127.0.0.1:$((base + 10)) --timeout 1s 2>/dev/null | awk 'NR==1 && $1=="leader:" {print $2}') || true
		[[ "$name" =~ ^n[123]$ ]] && break
		sleep 0.2
	done
	[[ "$name" =~ ^n[123]$ ]] || { echo "no leader elected" >&2; cat "$work/log" >&2; exit 1; }
	leader=$((${name#n} - 1))
	if [ "$target" = leader ]; then port=$((base + leader)); else port=$((base + (leader + 1) % 3)); fi
fi
declare -A before
for p in "${pids[@]}"; do before[$p]=$(ticks "$p"); done
out=$("$dss" bench --server 127.0.0.1:$port --op set --clients "$clients" --duration "$duration" --warmup 1s --json)
writes=$(jq '.requests' <<<"$out")
hz=$(getconf CLK_TCK)
line="target=$target clients=$clients writes/s=$(jq '.requests_per_second|floor' <<<"$out")"
for i in "${!pids[@]}"; do
	p=${pids[$i]}
	us=$(awk -v d=$(($(ticks "$p") - ${before[$p]})) -v hz="$hz" -v n="$writes" 'BEGIN{printf "%.1f", d / hz * 1e6 / n}')
	role=n$((i + 1))
	[ "$target" != single ] && [ "$i" = "$leader" ] && role="$role(leader)"
	line="$line $role=${us}us"
done
echo "$line"
