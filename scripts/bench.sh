#!/usr/bin/env bash
# Reproduces the performance figures of docs/benchmarks.md: dss against
# redis-server on the same machine, each server pinned to one CPU and the
# load generator to another.
#
#   scripts/bench.sh                 the default set (a few minutes)
#   scripts/bench.sh --full          every scenario (about 21 minutes)
#   scripts/bench.sh --only "throughput fanout"
#   scripts/bench.sh --only cluster  3 nodes against 1 with --fsync always, GET, failover
#   scripts/bench.sh --only pubsub_cluster  publish/subscribe across nodes against one node
#   scripts/bench.sh --only attach   dss attached to Mosquitto, beside Mosquitto + a
#                                    Go bridge + Redis and beside dss serve
#
# Options:
#   --full             run every scenario
#   --only LIST        run only these scenarios (see SCENARIOS below)
#   --runs N           repetitions of each measurement; medians are reported (default 3)
#   --duration D       measured seconds per run (default 10)
#   --out FILE         also write the markdown table to FILE
#   --keep             keep the work directory (raw JSON and CSV of every run)
#
# Environment: SERVER_CPU (default 0), LOAD_CPU (default 1), DSS_PORT
# (default 18830; a cluster's nodes take it and the next two), REDIS_PORT
# (default 16380), FLOOR_PORT (default 18900), CLUSTER_PORT (default 17946;
# the nodes' cluster listeners take it and the next two), TLS_PORT
# (default 18883), MQ_PORT (default 18850, Mosquitto's), WORK (default a
# new temporary directory).
#
# It installs redis-server, redis-tools, jq and mosquitto with apt-get when
# they are missing (as root), and builds dss, tools/tcpfloor and
# tools/redisbridge with the Go toolchain on PATH.
#
# Adding a scenario: write a function scenario_NAME that calls row (or
# rows) for every line of the table, and add NAME to SCENARIOS or FULL.
set -euo pipefail

SCENARIOS="throughput single_client pubsub_pair fanout"
FULL="$SCENARIOS go_floor pattern_watchers fsync connections_4096 idle_10k rss_1m startup_1m keys_10m expiry_spike cluster pubsub_cluster security attach"

RUNS=3
DURATION=10
OUT=""
KEEP=0
ONLY=""
while [ $# -gt 0 ]; do
	case "$1" in
	--full) ONLY="$FULL" ;;
	--only) ONLY="$2"; shift ;;
	--runs) RUNS="$2"; shift ;;
	--duration) DURATION="$2"; shift ;;
	--out) OUT="$2"; shift ;;
	--keep) KEEP=1 ;;
	-h | --help) sed -n '2,30p' "$0"; exit 0 ;;
	*) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
ONLY="${ONLY:-$SCENARIOS}"

SERVER_CPU="${SERVER_CPU:-0}"
LOAD_CPU="${LOAD_CPU:-1}"
DSS_PORT="${DSS_PORT:-18830}"
REDIS_PORT="${REDIS_PORT:-16380}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${WORK:-$(mktemp -d /tmp/dss-bench.XXXXXX)}"
DSS="$WORK/dss"
DSS_PID=""
FLOOR="$WORK/tcpfloor"
FLOOR_PORT="${FLOOR_PORT:-18900}"
FLOOR_PID=""
REDIS_PID=""
CLUSTER_PORT="${CLUSTER_PORT:-17946}"
CLUSTER_PIDS=(0 0 0)
TLS_PORT="${TLS_PORT:-18883}"
MQ_PORT="${MQ_PORT:-18850}"
MQ_PID=""
ATTACH_PID=""
BRIDGE="$WORK/redisbridge"
BRIDGE_PID=""

log() { echo "bench.sh: $*" >&2; }

cleanup() {
	stop_pid BRIDGE_PID
	stop_pid ATTACH_PID
	stop_pid MQ_PID
	stop_cluster
	stop_dss
	stop_floor
	stop_redis
	if [ "$KEEP" = 0 ]; then rm -rf "$WORK"; else log "raw results kept in $WORK"; fi
}
trap cleanup EXIT

# ---------------------------------------------------------------- setup

setup() {
	local missing=()
	command -v redis-server >/dev/null || missing+=(redis-server)
	command -v redis-benchmark >/dev/null || missing+=(redis-tools)
	command -v jq >/dev/null || missing+=(jq)
	command -v taskset >/dev/null || missing+=(util-linux)
	command -v openssl >/dev/null || missing+=(openssl)
	command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || missing+=(mosquitto)
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
	fi
	# A packaged redis may run as a service on the default port: ours use
	# their own port, so it does not matter, but it must not steal CPU.
	if [ "$(nproc)" -lt 2 ]; then
		log "warning: fewer than 2 CPUs; server and load share one"
	fi
	ulimit -n "$(ulimit -Hn)" || true
	log "building dss"
	(cd "$ROOT" && go build -o "$DSS" ./cmd/dss && go build -o "$FLOOR" ./tools/tcpfloor && go build -o "$BRIDGE" ./tools/redisbridge)
	log "work directory $WORK; server on CPU $SERVER_CPU, load on CPU $LOAD_CPU"
}

port_free() {
	if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
		log "port $1 is taken by another process: set DSS_PORT or REDIS_PORT"
		exit 1
	fi
}

wait_port() {
	local port=$1
	for _ in $(seq 1 200); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
		sleep 0.05
	done
	log "nothing listens on port $port"
	return 1
}

# start_dss [serve flags...]: a fresh server; in memory unless the flags say
# otherwise.
start_dss() {
	stop_dss
	local flags=("$@")
	[ ${#flags[@]} -gt 0 ] || flags=(--in-memory)
	rm -rf "$WORK/dss-data"
	port_free "$DSS_PORT"
	taskset -c "$SERVER_CPU" "$DSS" serve --listen "127.0.0.1:$DSS_PORT" --log-level warn \
		--data "$WORK/dss-data" "${flags[@]}" 2>>"$WORK/dss.log" &
	DSS_PID=$!
	wait_port "$DSS_PORT"
}

# stop_pid VAR: stops the server whose PID the variable VAR holds, if
# any, waits for it and clears VAR.
stop_pid() {
	local -n server_pid=$1
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=""
	fi
}

stop_dss() { stop_pid DSS_PID; }

# The nodes of a 3-node cluster on this machine: node i (0-2) is n$((i+1)),
# MQTT on DSS_PORT+i, cluster listener on CLUSTER_PORT+i, all three on the
# server CPU.
cluster_peers() { echo "n1=127.0.0.1:$CLUSTER_PORT,n2=127.0.0.1:$((CLUSTER_PORT + 1)),n3=127.0.0.1:$((CLUSTER_PORT + 2))"; }

# start_node I [serve flags...]: starts node I on its data directory.
start_node() {
	local i=$1
	shift
	port_free "$((DSS_PORT + i))"
	taskset -c "$SERVER_CPU" "$DSS" serve --node-id "n$((i + 1))" --listen "127.0.0.1:$((DSS_PORT + i))" \
		--cluster-listen "127.0.0.1:$((CLUSTER_PORT + i))" --peers "$(cluster_peers)" \
		--data "$WORK/cluster-data/n$i" --log-level warn "$@" 2>>"$WORK/cluster.log" &
	CLUSTER_PIDS[i]=$!
	wait_port "$((DSS_PORT + i))"
}

# start_cluster [serve flags...]: a fresh 3-node cluster, once it has a leader.
start_cluster() {
	stop_cluster
	rm -rf "$WORK/cluster-data"
	local i
	for i in 0 1 2; do start_node "$i" "$@"; done
	cluster_leader >/dev/null
}

stop_cluster() {
	local i
	for i in 0 1 2; do
		if [ "${CLUSTER_PIDS[i]}" != 0 ]; then
			kill "${CLUSTER_PIDS[i]}" 2>/dev/null || true
			wait "${CLUSTER_PIDS[i]}" 2>/dev/null || true
			CLUSTER_PIDS[i]=0
		fi
	done
}

# cluster_leader: the index (0-2) of the leader, once one is known.
cluster_leader() {
	local i id
	for _ in $(seq 1 200); do
		for i in 0 1 2; do
			[ "${CLUSTER_PIDS[i]}" != 0 ] || continue
			id=$("$DSS" cluster status --cluster-addr "127.0.0.1:$((CLUSTER_PORT + i))" --timeout 1s 2>/dev/null |
				awk '/^leader:/ { print $2 }') || true
			case "$id" in n[123]) echo $((${id#n} - 1)); return 0 ;; esac
		done
		sleep 0.05
	done
	log "the cluster has no leader"
	return 1
}

# cluster_bench NAME NODE [bench flags...]: dss bench against node NODE.
cluster_bench() {
	local name=$1 node=$2
	shift 2
	taskset -c "$LOAD_CPU" "$DSS" bench --server "127.0.0.1:$((DSS_PORT + node))" --server-pid "${CLUSTER_PIDS[node]}" \
		--json "$@" >"$WORK/$name.json" 2>>"$WORK/bench.log" || {
		log "dss bench $name reported errors or timeouts: $(jq -c '{errors,timeouts,errors_by_kind}' "$WORK/$name.json" 2>/dev/null)"
	}
}

# start_floor: the bare server of tools/tcpfloor, 3 µs of work a request.
start_floor() {
	stop_floor
	port_free "$FLOOR_PORT"
	taskset -c "$SERVER_CPU" "$FLOOR" serve --addr "127.0.0.1:$FLOOR_PORT" --work 3us 2>>"$WORK/floor.log" &
	FLOOR_PID=$!
	wait_port "$FLOOR_PORT"
}

stop_floor() { stop_pid FLOOR_PID; }

# floor_load NAME CONNS WARMUP: tcpfloor's load generator on the load CPU
# against the running tcpfloor server; its JSON report in $WORK/NAME.json.
floor_load() {
	taskset -c "$LOAD_CPU" "$FLOOR" load --addr "127.0.0.1:$FLOOR_PORT" --conns "$2" \
		--warmup "$3" --duration "${DURATION}s" --server-pid "$FLOOR_PID" >"$WORK/$1.json" 2>>"$WORK/floor.log"
}

# start_redis [redis-server flags...]: a fresh redis without persistence
# unless the flags ask for it.
start_redis() {
	stop_redis
	rm -rf "$WORK/redis"
	mkdir -p "$WORK/redis"
	port_free "$REDIS_PORT"
	taskset -c "$SERVER_CPU" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$WORK/redis" --maxclients 20000 "$@" >>"$WORK/redis.log" 2>&1 &
	REDIS_PID=$!
	wait_port "$REDIS_PORT"
}

stop_redis() { stop_pid REDIS_PID; }

# dss_bench NAME [bench flags...]: runs dss bench on the load CPU against
# the running dss and leaves its JSON report in $WORK/NAME.json.
dss_bench() {
	local name=$1
	shift
	taskset -c "$LOAD_CPU" "$DSS" bench --server "127.0.0.1:$DSS_PORT" --server-pid "$DSS_PID" \
		--json "$@" >"$WORK/$name.json" 2>>"$WORK/bench.log" || {
		log "dss bench $name reported errors or timeouts: $(jq -c '{errors,timeouts,errors_by_kind}' "$WORK/$name.json" 2>/dev/null)"
	}
}

# j NAME FILTER: a number from a dss bench report.
j() { jq -r "$2 // empty" "$WORK/$1.json"; }

# cpu_ticks PID: utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
hz() { getconf CLK_TCK; }

# redis_bench NAME [redis-benchmark flags...]: runs redis-benchmark on the
# load CPU with --csv, and leaves the CSV in $WORK/NAME.csv and the redis
# server's CPU µs per request in $WORK/NAME.cpu. The flags must include -n.
redis_bench() {
	local name=$1
	shift
	local t0 t1 n
	n=$(printf '%s\n' "$@" | awk 'prev == "-n" { print } { prev = $0 }')
	local c0 c1
	times >"$WORK/times" # in this shell: a subshell would see no children
	c0=$(children_cpu)
	t0=$(cpu_ticks "$REDIS_PID")
	taskset -c "$LOAD_CPU" redis-benchmark -p "$REDIS_PORT" --csv "$@" >"$WORK/$name.csv" 2>/dev/null
	t1=$(cpu_ticks "$REDIS_PID")
	times >"$WORK/times"
	c1=$(children_cpu)
	awk -v d=$((t1 - t0)) -v hz="$(hz)" -v n="$n" 'BEGIN { printf "%.2f\n", d * 1e6 / hz / n }' >"$WORK/$name.cpu"
	# The CPU time redis-benchmark itself used, for comparison with dss bench.
	awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN { printf "%.2f\n", (b - a) * 1e6 / n }' >"$WORK/$name.selfcpu"
}

# children_cpu: user + system seconds of the finished child processes of
# the shell, from the output of bash's times builtin (its second line).
children_cpu() {
	awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); s += p[1] * 60 + p[2] } print s }' "$WORK/times"
}

# c NAME COLUMN: a field of the last line of a redis-benchmark CSV
# (rps, p50_latency_ms, p99_latency_ms, ...), latencies in µs.
c() {
	awk -F'","' -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); idx[h] = i } }
		NR > 1 { last = $0 } END { split(last, f, "\",\""); v = f[idx[col]]; gsub(/"/, "", v);
		if (col ~ /latency/) v = v * 1000; print v }' "$WORK/$1.csv"
}

# redis_rate: requests per second that redis-benchmark reaches for SET here,
# so that its runs last about as long as dss's.
redis_rate() {
	redis_bench calibrate -c 64 -P 1 -d 100 -r 10000 -t set -n 20000
	c calibrate rps | awk '{ printf "%d\n", $1 }'
}

# med NAME FIELD [csv]: the median of FIELD over the runs NAME.1 to
# NAME.RUNS, from dss bench's JSON or, with csv, redis-benchmark's CSV.
med() {
	local k
	for k in $(seq 1 "$RUNS"); do
		if [ "${3:-}" = csv ]; then c "$1.$k" "$2"; else j "$1.$k" "$2"; fi
	done | median
}
# share NAME BASE FIELD [csv]: the median over the runs of NAME.k's FIELD
# divided by BASE.k's, two decimals.
share() {
	local k
	for k in $(seq 1 "$RUNS"); do
		if [ "${4:-}" = csv ]; then
			awk -v a="$(c "$1.$k" "$3")" -v b="$(c "$2.$k" "$3")" 'BEGIN { print a / b }'
		else
			awk -v a="$(j "$1.$k" "$3")" -v b="$(j "$2.$k" "$3")" 'BEGIN { print a / b }'
		fi
	done | median | xargs printf %.2f
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# start_mosquitto: a fresh Mosquitto on MQ_PORT that admits anyone, with
# no bound on the messages in flight to a client (its default of 20 would
# hold back the responses of any state store behind it) and Nagle's
# algorithm off (its default leaves it on: each small response would wait
# for the delayed acknowledgement of the one before, 40 ms).
start_mosquitto() {
	stop_pid MQ_PID
	port_free "$MQ_PORT"
	local mq
	mq=$(command -v mosquitto || echo /usr/sbin/mosquitto)
	{
		echo "listener $MQ_PORT 127.0.0.1"
		echo "allow_anonymous true"
		echo "max_inflight_messages 0"
		echo "max_queued_messages 0"
		echo "set_tcp_nodelay true"
		echo "log_dest stderr"
		echo "log_type error"
		if [ "$(id -u)" = 0 ]; then echo "user root"; fi
	} >"$WORK/mosquitto.conf"
	taskset -c "$SERVER_CPU" "$mq" -c "$WORK/mosquitto.conf" 2>>"$WORK/mosquitto.log" &
	MQ_PID=$!
	wait_port "$MQ_PORT"
}

# start_attach: dss attach, in memory, to the running Mosquitto, once
# /readyz says it serves.
start_attach() {
	stop_pid ATTACH_PID
	local web=$((MQ_PORT + 1))
	port_free "$web"
	taskset -c "$SERVER_CPU" "$DSS" attach --broker "mqtt://127.0.0.1:$MQ_PORT" --in-memory --log-level warn \
		--http-listen "127.0.0.1:$web" 2>>"$WORK/attach.log" &
	ATTACH_PID=$!
	for _ in $(seq 1 200); do
		if "$DSS" ready --http "127.0.0.1:$web" --timeout 1s >/dev/null 2>&1; then return 0; fi
		sleep 0.05
	done
	log "dss attach is not ready"
	return 1
}

# start_bridge: Redis and tools/redisbridge, attached to the running
# Mosquitto.
start_bridge() {
	start_redis
	stop_pid BRIDGE_PID
	taskset -c "$SERVER_CPU" "$BRIDGE" --broker "mqtt://127.0.0.1:$MQ_PORT" --redis "127.0.0.1:$REDIS_PORT" 2>>"$WORK/bridge.log" &
	BRIDGE_PID=$!
	sleep 0.5
}

# stack_bench NAME PORT "PIDS" [bench flags...]: dss bench against the
# MQTT server on PORT, and the CPU time of every process of the server
# side (PIDS) per request sent, in $WORK/NAME.stackcpu.
stack_bench() {
	local name=$1 port=$2 pids=$3
	shift 3
	local t0=0 t1=0 p
	for p in $pids; do t0=$((t0 + $(cpu_ticks "$p"))); done
	taskset -c "$LOAD_CPU" "$DSS" bench --server "127.0.0.1:$port" --json "$@" >"$WORK/$name.json" 2>>"$WORK/bench.log" || {
		log "dss bench $name reported errors or timeouts: $(jq -c '{errors,timeouts,errors_by_kind}' "$WORK/$name.json" 2>/dev/null)"
	}
	for p in $pids; do t1=$((t1 + $(cpu_ticks "$p"))); done
	awk -v d=$((t1 - t0)) -v hz="$(hz)" -v n="$(j "$name" .sent)" 'BEGIN { if (n > 0) printf "%.2f\n", d * 1e6 / hz / n }' >"$WORK/$name.stackcpu"
}

# ---------------------------------------------------------------- table

TABLE="$WORK/table.md"

# row SCENARIO METRIC DSS REDIS [LOWER_IS_BETTER]: one line of the table.
row() {
	local ratio="n/a"
	if [ -n "$3" ] && [ -n "$4" ] && awk -v r="$4" 'BEGIN { exit !(r > 0) }'; then
		ratio=$(awk -v d="$3" -v r="$4" 'BEGIN { printf "%.2f", d / r }')
	fi
	printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "${3:-n/a}" "${4:-n/a}" "$ratio" >>"$TABLE"
}

fmt() { awk -v v="$1" -v p="${2:-1}" 'BEGIN { if (v == "") print ""; else printf "%.*f\n", p, v }'; }

# ---------------------------------------------------------------- scenarios

# SET and GET throughput, latency and server CPU per request: 64
# connections, one request in flight each, 100-byte values, 10,000 keys.
scenario_throughput() {
	local n i
	start_redis
	n=$(($(redis_rate) * DURATION))
	stop_redis
	for i in $(seq 1 "$RUNS"); do
		log "throughput run $i/$RUNS: dss"
		start_dss
		dss_bench "set.$i" --op set --clients 64 --inflight 1 --value-size 100 --keys 10000 --duration "${DURATION}s"
		dss_bench "get.$i" --op get --clients 64 --inflight 1 --value-size 100 --keys 10000 --duration "${DURATION}s"
		stop_dss
		log "throughput run $i/$RUNS: redis ($n requests per test)"
		start_redis
		redis_bench "rset.$i" -c 64 -P 1 -d 100 -r 10000 -t set -n "$n"
		redis_bench "rget.$i" -c 64 -P 1 -d 100 -r 10000 -t get -n "$n"
		stop_redis
		log "throughput run $i/$RUNS: redis at dss bench's pace (tcpfloor resp-load)"
		start_redis
		resp_load "rfast.$i" --conns 64 --keys 10000 --value-size 100
		stop_redis
	done
	local op r
	for op in set get; do
		r="r$op"
		local OP
		OP=$(echo "$op" | tr a-z A-Z)
		row "$OP, 64 conns" "requests/s" \
			"$(fmt "$(med "$op" .requests_per_second)" 0)" \
			"$(fmt "$(med "$r" rps csv)" 0)"
		row "$OP, 64 conns" "p50 latency µs" \
			"$(fmt "$(med "$op" .latency_us.p50)")" \
			"$(fmt "$(med "$r" p50_latency_ms csv)")"
		row "$OP, 64 conns" "p99 latency µs" \
			"$(fmt "$(med "$op" .latency_us.p99)")" \
			"$(fmt "$(med "$r" p99_latency_ms csv)")"
		row "$OP, 64 conns" "p99.9 / max latency µs (dss)" \
			"$(fmt "$(med "$op" '.latency_us."p99_9"')") / $(fmt "$(med "$op" .latency_us.max)")" ""
		row "$OP, 64 conns" "server CPU µs/request" \
			"$(fmt "$(med "$op" .server_cpu_us_per_request)")" \
			"$(fmt "$(for i in $(seq 1 "$RUNS"); do cat "$WORK/$r.$i.cpu"; done | median)")"
		row "$OP, 64 conns" "load generator CPU µs/request (dss bench; redis-benchmark)" \
			"$(fmt "$(med "$op" .client_cpu_us_per_request)")" \
			"$(fmt "$(for i in $(seq 1 "$RUNS"); do cat "$WORK/$r.$i.selfcpu"; done | median)")"
		if [ "$op" = get ]; then
			# redis-benchmark keeps Redis less busy than dss bench keeps
			# dss, and a server that waits between requests spends more
			# on each: Redis driven as fast, by an epoll loop in Go.
			row "GET, 64 conns: Redis driven by tcpfloor resp-load" "requests/s" \
				"$(fmt "$(med get .requests_per_second)" 0)" "$(fmt "$(med rfast .requests_per_second)" 0)"
			row "GET, 64 conns: Redis driven by tcpfloor resp-load" "server CPU µs/request" \
				"$(fmt "$(med get .server_cpu_us_per_request)")" "$(fmt "$(med rfast .server_cpu_us_per_request)")"
		fi
		row "$OP, 64 conns" "errors + timeouts (dss, all runs)" \
			"$(for i in $(seq 1 "$RUNS"); do j "$op.$i" '.errors + .timeouts'; done | awk '{ s += $1 } END { print s + 0 }')" ""
	done
}

# The round trip of one client with one request at a time.
scenario_single_client() {
	local i
	for i in $(seq 1 "$RUNS"); do
		log "single client run $i/$RUNS"
		start_dss
		dss_bench "one.$i" --op get --clients 1 --keys 10000 --duration 5s --warmup 1s
		stop_dss
		start_redis
		redis_bench "rone.$i" -c 1 -P 1 -d 100 -r 10000 -t set -n 10000
		redis_bench "rone.$i" -c 1 -P 1 -d 100 -r 10000 -t get -n 20000
		stop_redis
	done
	row "GET, 1 conn" "p50 round trip µs" \
		"$(fmt "$(med "one" .latency_us.p50)")" \
		"$(fmt "$(med "rone" p50_latency_ms csv)")"
	row "GET, 1 conn" "requests/s" \
		"$(fmt "$(med "one" .requests_per_second)" 0)" \
		"$(fmt "$(med "rone" rps csv)" 0)"
}

# One publisher and one subscriber with one message in flight, against
# Mosquitto on the same machine the same way: the round trip of a plain
# MQTT message through the broker (target: dss's p50 at most Mosquitto's),
# QoS 0 and 1.
scenario_pubsub_pair() {
	local i qos
	for i in $(seq 1 "$RUNS"); do
		log "pub/sub pair run $i/$RUNS"
		start_dss
		for qos in 0 1; do
			dss_bench "pair-q$qos.$i" --op pubsub --qos "$qos" --clients 1 --subscribers 1 --inflight 1 \
				--duration 5s --warmup 1s
		done
		stop_dss
		start_mosquitto
		for qos in 0 1; do
			taskset -c "$LOAD_CPU" "$DSS" bench --server "127.0.0.1:$MQ_PORT" --server-pid "$MQ_PID" \
				--op pubsub --qos "$qos" --clients 1 --subscribers 1 --inflight 1 --duration 5s --warmup 1s \
				--json >"$WORK/mpair-q$qos.$i.json" 2>>"$WORK/bench.log" ||
				log "dss bench against Mosquitto reported errors or timeouts"
		done
		stop_pid MQ_PID
	done
	for qos in 0 1; do
		local s="QoS $qos, 1 publisher, 1 subscriber, 1 in flight: dss / Mosquitto"
		row "$s" "publish to receipt p50 µs" \
			"$(fmt "$(med "pair-q$qos" .latency_us.p50)")" "$(fmt "$(med "mpair-q$qos" .latency_us.p50)")"
		row "$s" "messages/s" \
			"$(fmt "$(med "pair-q$qos" .requests_per_second)" 0)" "$(fmt "$(med "mpair-q$qos" .requests_per_second)" 0)"
		row "$s" "server CPU µs/message" \
			"$(fmt "$(med "pair-q$qos" .server_cpu_us_per_request)")" "$(fmt "$(med "mpair-q$qos" .server_cpu_us_per_request)")"
	done
}

# The Go floor: redis-benchmark's GET at 1 and 64 connections against
# Redis and against tools/tcpfloor resp-serve, a Go server that does
# nothing but answer (a goroutine per connection reading its net.Conn as
# Go's usual server does; the same with the reads and writes of
# internal/rawio, as dss makes them; and the connections read by
# internal/mqtt/readloop, as dss reads its own), beside dss bench's GET
# against dss, all in the same run: what any Go server costs a request on
# this machine, against which the single_client and throughput ratios can
# be read.
scenario_go_floor() {
	local i mode
	for i in $(seq 1 "$RUNS"); do
		log "go floor run $i/$RUNS: redis"
		start_redis
		go_floor_bench "gf-redis" "$i"
		resp_load "gf-redisfast.$i" --conns 64
		stop_redis
		for mode in goroutine rawio readloop; do
			log "go floor run $i/$RUNS: tcpfloor resp-serve --mode $mode"
			port_free "$FLOOR_PORT"
			taskset -c "$SERVER_CPU" "$FLOOR" resp-serve --addr "127.0.0.1:$FLOOR_PORT" --mode "$mode" \
				2>>"$WORK/floor.log" &
			FLOOR_PID=$!
			wait_port "$FLOOR_PORT"
			REDIS_PORT=$FLOOR_PORT REDIS_PID=$FLOOR_PID go_floor_bench "gf-$mode" "$i"
			REDIS_PORT=$FLOOR_PORT REDIS_PID=$FLOOR_PID resp_load "gf-${mode}fast.$i" --conns 64
			stop_floor
		done
		log "go floor run $i/$RUNS: dss"
		start_dss
		dss_bench "gf-dss1.$i" --op get --clients 1 --keys 10000 --duration "${DURATION}s" --warmup 1s
		dss_bench "gf-dss64.$i" --op get --clients 64 --inflight 1 --value-size 100 --keys 10000 --duration "${DURATION}s"
		stop_dss
	done
	local c name label
	for c in 1 64; do
		for name in goroutine rawio readloop dss; do
			label=$(floor_label "$name")
			local p50 rps cpu
			if [ "$name" = dss ]; then
				p50=$(med "gf-dss$c" .latency_us.p50)
				rps=$(med "gf-dss$c" .requests_per_second)
				cpu=$(med "gf-dss$c" .server_cpu_us_per_request)
			else
				p50=$(med "gf-$name$c" p50_latency_ms csv)
				rps=$(med "gf-$name$c" rps csv)
				cpu=$(for i in $(seq 1 "$RUNS"); do cat "$WORK/gf-$name$c.$i.cpu"; done | median)
			fi
			row "GET, $c conn: $label / Redis" "p50 latency µs" "$(fmt "$p50")" "$(fmt "$(med "gf-redis$c" p50_latency_ms csv)")"
			row "GET, $c conn: $label / Redis" "requests/s" "$(fmt "$rps" 0)" "$(fmt "$(med "gf-redis$c" rps csv)" 0)"
			row "GET, $c conn: $label / Redis" "server CPU µs/request" "$(fmt "$cpu")" \
				"$(fmt "$(for i in $(seq 1 "$RUNS"); do cat "$WORK/gf-redis$c.$i.cpu"; done | median)")"
		done
	done
	# At 64 connections, every server driven as fast as dss bench drives
	# dss (see scenario_throughput).
	for name in goroutine rawio readloop dss; do
		local label rps cpu
		label=$(floor_label "$name")
		if [ "$name" = dss ]; then
			rps=$(med gf-dss64 .requests_per_second) cpu=$(med gf-dss64 .server_cpu_us_per_request)
		else
			rps=$(med "gf-${name}fast" .requests_per_second) cpu=$(med "gf-${name}fast" .server_cpu_us_per_request)
		fi
		row "GET, 64 conns, at dss bench's pace (tcpfloor resp-load): $label / Redis" "requests/s" \
			"$(fmt "$rps" 0)" "$(fmt "$(med gf-redisfast .requests_per_second)" 0)"
		row "GET, 64 conns, at dss bench's pace (tcpfloor resp-load): $label / Redis" "server CPU µs/request" \
			"$(fmt "$cpu")" "$(fmt "$(med gf-redisfast .server_cpu_us_per_request)")"
	done
}

# resp_load NAME [flags...]: tcpfloor resp-load on the load CPU against
# the running Redis (REDIS_PORT, REDIS_PID); its JSON report in
# $WORK/NAME.json.
resp_load() {
	local name=$1
	shift
	taskset -c "$LOAD_CPU" "$FLOOR" resp-load --addr "127.0.0.1:$REDIS_PORT" --server-pid "$REDIS_PID" \
		--warmup 1s --duration "${DURATION}s" "$@" >"$WORK/$name.json"
}

# floor_label NAME: the label of a server of the Go floor's rows.
floor_label() {
	case $1 in
	goroutine) echo "Go floor, a goroutine per net.Conn" ;;
	rawio) echo "Go floor, a goroutine per connection, internal/rawio" ;;
	readloop) echo "Go floor, internal/mqtt/readloop and internal/rawio" ;;
	dss) echo "dss (dss bench)" ;;
	esac
}

# go_floor_bench NAME RUN: redis-benchmark's GET at 1 and 64 connections
# against the server at REDIS_PORT (REDIS_PID), as NAME1.RUN and NAME64.RUN.
go_floor_bench() {
	redis_bench "$1-fill" -c 1 -P 1 -d 100 -r 10000 -t set -n 10000
	redis_bench "${1}1.$2" -c 1 -P 1 -d 100 -r 10000 -t get -n $((4000 * DURATION))
	redis_bench "${1}64.$2" -c 64 -P 1 -d 100 -r 10000 -t get -n $((50000 * DURATION))
}

# One SET reaching 1,000 watchers of the key (target: 50 ms median).
scenario_fanout() {
	local i
	for i in $(seq 1 "$RUNS"); do
		log "fan-out run $i/$RUNS"
		start_dss
		dss_bench "fan.$i" --op keynotify --watchers 1000 --duration 5s --warmup 1s
		stop_dss
	done
	row "KEYNOTIFY, 1000 watchers" "all watchers notified, p50 ms" \
		"$(fmt "$(med "fan" '.keynotify.all_watchers_us.p50 / 1000')" 2)" ""
	row "KEYNOTIFY, 1000 watchers" "all watchers notified, p99 ms" \
		"$(fmt "$(med "fan" '.keynotify.all_watchers_us.p99 / 1000')" 2)" ""
	row "KEYNOTIFY, 1000 watchers" "deliveries/s" \
		"$(fmt "$(med "fan" '.keynotify.deliveries / .seconds')" 0)" ""
}

# 1,000 watchers registered for patterns against 1,000 registered for
# keys, on the same server start (the order alternates between runs):
# each watcher for a key of its own (KEYNOTIFY <prefix>watch/<i>/k) or a
# pattern of its own (<prefix>watch/<i>/* PATTERN), 16 writers SETting
# those keys; and 1,000 watchers of one key or one pattern, one SET at a
# time to all of them. The target: patterns notified within the latency of
# keys (a share of about 1).
scenario_pattern_watchers() {
	local i kind order
	for i in $(seq 1 "$RUNS"); do
		order="key pattern"
		if [ $((i % 2)) = 0 ]; then order="pattern key"; fi
		for kind in $order; do
			log "pattern watchers run $i/$RUNS: $kind"
			local op=watch fop=keynotify
			if [ "$kind" = pattern ]; then op=watch:pattern fop=keynotify:pattern; fi
			start_dss
			dss_bench "watch-$kind.$i" --op "$op" --watchers 1000 --clients 16 --duration "${DURATION}s"
			dss_bench "wfan-$kind.$i" --op "$fop" --watchers 1000 --duration 5s --warmup 1s
			stop_dss
		done
	done
	local s="1,000 pattern watchers vs 1,000 exact-key watchers, a key each, 16 writers"
	row "$s" "SET to notification p50 µs: pattern / key" \
		"$(fmt "$(med watch-pattern .keynotify.each_delivery_us.p50)") / $(fmt "$(med watch-key .keynotify.each_delivery_us.p50)")" ""
	row "$s" "SET to notification p99 µs: pattern / key" \
		"$(fmt "$(med watch-pattern .keynotify.each_delivery_us.p99)") / $(fmt "$(med watch-key .keynotify.each_delivery_us.p99)")" ""
	row "$s" "p50 latency, pattern as a share of key (target about 1)" \
		"$(share watch-pattern watch-key .keynotify.each_delivery_us.p50)" ""
	row "$s" "p99 latency, pattern as a share of key" \
		"$(share watch-pattern watch-key .keynotify.each_delivery_us.p99)" ""
	row "$s" "notifications/s: pattern / key" \
		"$(fmt "$(med watch-pattern .requests_per_second)" 0) / $(fmt "$(med watch-key .requests_per_second)" 0)" ""
	row "$s" "notifications/s, pattern as a share of key" \
		"$(share watch-pattern watch-key .requests_per_second)" ""
	row "$s" "server CPU µs/notification: pattern / key" \
		"$(fmt "$(med watch-pattern .server_cpu_us_per_request)") / $(fmt "$(med watch-key .server_cpu_us_per_request)")" ""
	s="1,000 pattern watchers vs 1,000 exact-key watchers, one SET to all"
	row "$s" "all watchers notified, p50 ms: pattern / key" \
		"$(fmt "$(med wfan-pattern '.keynotify.all_watchers_us.p50 / 1000')" 2) / $(fmt "$(med wfan-key '.keynotify.all_watchers_us.p50 / 1000')" 2)" ""
	row "$s" "all watchers notified, p50 latency, pattern as a share of key (target about 1)" \
		"$(share wfan-pattern wfan-key .keynotify.all_watchers_us.p50)" ""
	row "$s" "all watchers notified, p99 ms: pattern / key" \
		"$(fmt "$(med wfan-pattern '.keynotify.all_watchers_us.p99 / 1000')" 2) / $(fmt "$(med wfan-key '.keynotify.all_watchers_us.p99 / 1000')" 2)" ""
	row "1,000 pattern watchers vs 1,000 exact-key watchers" "errors + timeouts + missing notifications (all runs)" \
		"$(for f in watch-key watch-pattern wfan-key wfan-pattern; do for i in $(seq 1 "$RUNS"); do j "$f.$i" '.errors + .timeouts'; done; done | awk '{ s += $1 } END { print s + 0 }')" ""
}

# SET with every change on disk before the response, and once a second.
scenario_fsync() {
	local mode i
	for i in $(seq 1 "$RUNS"); do
		log "fsync reference (in memory) run $i/$RUNS"
		start_dss
		dss_bench "fsync-mem.$i" --op set --clients 64 --duration "${DURATION}s"
		stop_dss
	done
	for mode in always everysec; do
		for i in $(seq 1 "$RUNS"); do
			log "fsync $mode run $i/$RUNS"
			start_dss --fsync "$mode"
			dss_bench "fsync-$mode.$i" --op set --clients 64 --duration "${DURATION}s"
			stop_dss
			start_redis --appendonly yes --appendfsync "$mode"
			redis_bench "rfsync-$mode.$i" -c 64 -P 1 -d 100 -r 10000 -t set -n 100000
			stop_redis
		done
		row "SET, fsync $mode" "requests/s" \
			"$(fmt "$(med "fsync-$mode" .requests_per_second)" 0)" \
			"$(fmt "$(med "rfsync-$mode" rps csv)" 0)"
		row "SET, fsync $mode" "requests/s as a share of dss in memory, same runs" \
			"$(awk -v a="$(med "fsync-$mode" .requests_per_second)" \
				-v b="$(med "fsync-mem" .requests_per_second)" \
				'BEGIN { printf "%.2f", a / b }')" ""
		row "SET, fsync $mode" "p99 latency µs" \
			"$(fmt "$(med "fsync-$mode" .latency_us.p99)")" \
			"$(fmt "$(med "rfsync-$mode" p99_latency_ms csv)")"
	done
}

# A 3-node cluster against a single node, all with --fsync always, every
# server process on the server CPU: SET throughput through the leader as
# a share of the single node's, GET (linearizable) through a follower,
# and the failover time: from SIGKILL of the leader to the first SET
# acknowledged through a survivor (dss set retries "unavailable"), over
# 5 kills per run.
scenario_cluster() {
	local i k leader follower start end
	: >"$WORK/failover.ms"
	for i in $(seq 1 "$RUNS"); do
		log "cluster run $i/$RUNS: single node"
		start_dss --fsync always
		dss_bench "c1-set.$i" --op set --clients 64 --duration "${DURATION}s"
		stop_dss
		log "cluster run $i/$RUNS: 3 nodes"
		start_cluster --fsync always
		leader=$(cluster_leader)
		follower=$(((leader + 1) % 3))
		cluster_bench "c3-set.$i" "$leader" --op set --clients 64 --duration "${DURATION}s"
		cluster_bench "c3-get.$i" "$follower" --op get --clients 64 --duration "${DURATION}s"
		for k in 1 2 3 4 5; do
			leader=$(cluster_leader)
			follower=$(((leader + 1) % 3))
			kill -9 "${CLUSTER_PIDS[leader]}"
			wait "${CLUSTER_PIDS[leader]}" 2>/dev/null || true
			CLUSTER_PIDS[leader]=0
			start=$(date +%s%N)
			"$DSS" set --server "127.0.0.1:$((DSS_PORT + follower))" --timeout 30s "failover-$k" x >/dev/null
			end=$(date +%s%N)
			echo $(((end - start) / 1000000)) >>"$WORK/failover.ms"
			start_node "$leader" --fsync always
		done
		stop_cluster
	done
	row "SET, 64 conns, fsync always" "requests/s: 3-node cluster / single node" \
		"$(fmt "$(med c3-set .requests_per_second)" 0) / $(fmt "$(med c1-set .requests_per_second)" 0)" ""
	row "SET, 64 conns, fsync always" "3 nodes as a share of 1 (goal: at least 0.5)" "$(share c3-set c1-set .requests_per_second)" ""
	row "SET, 64 conns, 3 nodes" "p99 latency µs" "$(fmt "$(med c3-set .latency_us.p99)")" ""
	row "GET, 64 conns, 3 nodes, through a follower" "requests/s" "$(fmt "$(med c3-get .requests_per_second)" 0)" ""
	row "GET, 64 conns, 3 nodes, through a follower" "p99 latency µs" "$(fmt "$(med c3-get .latency_us.p99)")" ""
	row "failover (SIGKILL of the leader)" "ms to the first acknowledged SET, median / max of $((RUNS * 5))" \
		"$(median <"$WORK/failover.ms") / $(sort -g "$WORK/failover.ms" | tail -1)" ""
}

# Ordinary MQTT messages across the nodes of a cluster against one node:
# 64 publishers (one message in flight each, to the first subscriber), 1 or
# 100 subscribers that each receive every message, QoS 0 and 1. On one
# node publishers and subscribers share the server; in the 3-node cluster
# the publishers are on n1 and the subscribers on n2 (every node on the
# server CPU). The CPU per message is the publishers' node's plus the
# subscribers' node's, against the single node's (goal: at most 2).
scenario_pubsub_cluster() {
	local i qos subs name
	for i in $(seq 1 "$RUNS"); do
		log "pubsub run $i/$RUNS: single node"
		start_dss
		for qos in 0 1; do
			for subs in 1 100; do
				dss_bench "ps1-q$qos-s$subs.$i" --op pubsub --qos "$qos" --clients 64 --inflight 1 \
					--subscribers "$subs" --duration "${DURATION}s"
			done
		done
		stop_dss
		log "pubsub run $i/$RUNS: 3 nodes, publishers on n1, subscribers on n2"
		start_cluster
		for qos in 0 1; do
			for subs in 1 100; do
				name="ps3-q$qos-s$subs.$i"
				taskset -c "$LOAD_CPU" "$DSS" bench --op pubsub --qos "$qos" --clients 64 --inflight 1 \
					--subscribers "$subs" --duration "${DURATION}s" \
					--server "127.0.0.1:$DSS_PORT" --server-pid "${CLUSTER_PIDS[0]}" \
					--sub-server "127.0.0.1:$((DSS_PORT + 1))" --sub-server-pid "${CLUSTER_PIDS[1]}" \
					--json >"$WORK/$name.json" 2>>"$WORK/bench.log" || {
					log "dss bench $name reported errors or timeouts: $(jq -c '{errors,timeouts,errors_by_kind}' "$WORK/$name.json" 2>/dev/null)"
				}
				# The CPU of both nodes per message, for the rows below.
				jq '.server_cpu_us_per_request + .pubsub.receiver_cpu_us_per_message' "$WORK/$name.json" >"$WORK/$name.cpu"
			done
		done
		stop_cluster
	done
	local k
	for qos in 0 1; do
		for subs in 1 100; do
			local s="QoS $qos, 64 publishers, $subs subscriber(s)"
			row "$s" "messages/s: across nodes / one node" \
				"$(fmt "$(med "ps3-q$qos-s$subs" .requests_per_second)" 0) / $(fmt "$(med "ps1-q$qos-s$subs" .requests_per_second)" 0)" ""
			row "$s" "publish to receipt p50 µs: across nodes / one node" \
				"$(fmt "$(med "ps3-q$qos-s$subs" .latency_us.p50)") / $(fmt "$(med "ps1-q$qos-s$subs" .latency_us.p50)")" ""
			row "$s" "publish to receipt p99 µs: across nodes / one node" \
				"$(fmt "$(med "ps3-q$qos-s$subs" .latency_us.p99)") / $(fmt "$(med "ps1-q$qos-s$subs" .latency_us.p99)")" ""
			row "$s" "server CPU µs/message: publishers' node + subscribers' node / one node" \
				"$(fmt "$(med "ps3-q$qos-s$subs" .server_cpu_us_per_request)") + $(fmt "$(med "ps3-q$qos-s$subs" .pubsub.receiver_cpu_us_per_message)") / $(fmt "$(med "ps1-q$qos-s$subs" .server_cpu_us_per_request)")" ""
			row "$s" "CPU per message across nodes as a share of one node's (goal: at most 2)" \
				"$(for k in $(seq 1 "$RUNS"); do awk -v a="$(cat "$WORK/ps3-q$qos-s$subs.$k.cpu")" -v b="$(j "ps1-q$qos-s$subs.$k" .server_cpu_us_per_request)" 'BEGIN { print a / b }'; done | median | xargs printf %.2f)" ""
			row "$s" "messages lost + errors + timeouts (all runs, across nodes / one node)" \
				"$(for k in $(seq 1 "$RUNS"); do j "ps3-q$qos-s$subs.$k" '.pubsub.lost + .errors + .timeouts'; done | awk '{ s += $1 } END { print s + 0 }') / $(for k in $(seq 1 "$RUNS"); do j "ps1-q$qos-s$subs.$k" '.pubsub.lost + .errors + .timeouts'; done | awk '{ s += $1 } END { print s + 0 }')" ""
		done
	done
}

# Many busy connections, against the peak (64 connections) measured just
# before on the same server start. tcpfloor, a bare epoll server doing 3
# µs of work per request, shows what the kernel leaves any server here.
scenario_connections_4096() {
	local i
	for i in $(seq 1 "$RUNS"); do
		log "4,096 connections run $i/$RUNS"
		start_dss
		dss_bench "peak.$i" --op set --clients 64 --duration "${DURATION}s"
		dss_bench "conns.$i" --op set --clients 4096 --duration "${DURATION}s" --warmup 5s --timeout 30s
		stop_dss
		start_redis
		redis_bench "rpeak.$i" -c 64 -P 1 -d 100 -r 10000 -t set -n 300000
		redis_bench "rconns.$i" -c 4096 -P 1 -d 100 -r 10000 -t set -n 300000
		stop_redis
		start_floor
		floor_load "fpeak.$i" 64 2s
		floor_load "fconns.$i" 4096 5s
		stop_floor
	done
	row "SET, 4096 conns" "requests/s" "$(fmt "$(med conns .requests_per_second)" 0)" "$(fmt "$(med rconns rps csv)" 0)"
	row "SET, 4096 conns" "requests/s as a share of 64 conns, same server start" \
		"$(share conns peak .requests_per_second)" "$(share rconns rpeak rps csv)"
	row "SET, 4096 conns" "p99 latency µs" "$(fmt "$(med conns .latency_us.p99)")" "$(fmt "$(med rconns p99_latency_ms csv)")"
	row "SET, 4096 conns" "server CPU µs/request" "$(fmt "$(med conns .server_cpu_us_per_request)")" ""
	row "SET, 4096 conns" "load generator CPU µs/request (dss bench)" "$(fmt "$(med conns .client_cpu_us_per_request)")" ""
	row "tcpfloor, 4096 conns" "requests/s as a share of 64 conns, same server start" "$(share fconns fpeak .requests_per_second)" ""
	row "tcpfloor, 64 / 4096 conns" "requests/s" "$(fmt "$(med fpeak .requests_per_second)" 0) / $(fmt "$(med fconns .requests_per_second)" 0)" ""
	row "tcpfloor, 64 / 4096 conns" "server CPU µs/request" \
		"$(fmt "$(med fpeak .server_cpu_us_per_request)") / $(fmt "$(med fconns .server_cpu_us_per_request)")" ""
}

# Memory of 10,000 idle connections: MQTT 5 connections with a keep
# alive of 60 s and one subscription each (dss bench --op idle) held by
# dss and by Mosquitto, RUNS times each, and in the same runs what the
# machine and Go cost for a bare TCP connection (tcpfloor idle-serve: a
# goroutine blocked in a read; a net.Conn in an epoll instance of the
# server's, no goroutine; a bare descriptor in one), and Redis's
# connections (redis-benchmark -I, not MQTT) for comparison.
scenario_idle_10k() {
	local i mode growth r0 r1 rb
	growth() { jq -r '(.server_rss_end_bytes - .server_rss_start_bytes) / 1048576' "$WORK/$1.json"; }
	per_conn() { jq -r '(.server_rss_end_bytes - .server_rss_start_bytes) / .connections / 1024' "$WORK/$1.json"; }
	for i in $(seq 1 "$RUNS"); do
		log "10,000 idle connections, run $i/$RUNS: dss"
		start_dss
		dss_bench "idle.$i" --op idle --clients 10000 --duration 5s --timeout 30s
		stop_dss
		log "10,000 idle connections, run $i/$RUNS: Mosquitto"
		start_mosquitto
		taskset -c "$LOAD_CPU" "$DSS" bench --server "127.0.0.1:$MQ_PORT" --server-pid "$MQ_PID" --json \
			--op idle --clients 10000 --duration 5s --timeout 30s >"$WORK/mqidle.$i.json" 2>>"$WORK/bench.log" ||
			log "dss bench against Mosquitto reported errors"
		stop_pid MQ_PID
		for mode in goroutine netconn epoll; do
			log "10,000 idle connections, run $i/$RUNS: tcpfloor, $mode"
			stop_floor
			port_free "$FLOOR_PORT"
			taskset -c "$SERVER_CPU" "$FLOOR" idle-serve --addr "127.0.0.1:$FLOOR_PORT" --mode "$mode" 2>>"$WORK/floor.log" &
			FLOOR_PID=$!
			wait_port "$FLOOR_PORT"
			taskset -c "$LOAD_CPU" "$FLOOR" idle-load --addr "127.0.0.1:$FLOOR_PORT" --conns 10000 --hold 5s \
				--server-pid "$FLOOR_PID" >"$WORK/fidle-$mode.$i.json" 2>>"$WORK/floor.log"
			stop_floor
		done
	done
	local dss mq k
	dss=$(for k in $(seq 1 "$RUNS"); do growth "idle.$k"; done | median)
	mq=$(for k in $(seq 1 "$RUNS"); do growth "mqidle.$k"; done | median)
	row "10,000 idle MQTT 5 conns, keep alive 60 s, 1 subscription each" "server RSS growth MiB; reference: Mosquitto (goal: ratio ≤ 2)" \
		"$(fmt "$dss")" "$(fmt "$mq")"
	row "10,000 idle MQTT 5 conns, keep alive 60 s, 1 subscription each" "server RSS growth KiB per connection; reference: Mosquitto" \
		"$(fmt "$(for k in $(seq 1 "$RUNS"); do per_conn "idle.$k"; done | median)" 2)" \
		"$(fmt "$(for k in $(seq 1 "$RUNS"); do per_conn "mqidle.$k"; done | median)" 2)"
	row "tcpfloor, 10,000 idle TCP conns" "RSS growth KiB per connection: goroutine in a read / net.Conn, no goroutine / bare epoll" \
		"$(for mode in goroutine netconn epoll; do fmt "$(for k in $(seq 1 "$RUNS"); do per_conn "fidle-$mode.$k"; done | median)" 2; done | paste -sd/ | sed 's|/| / |g')" ""
	log "10,000 idle connections: Redis"
	start_redis
	r0=$(rss_kb "$REDIS_PID")
	taskset -c "$LOAD_CPU" redis-benchmark -p "$REDIS_PORT" -c 10000 -I >/dev/null 2>&1 &
	rb=$!
	sleep 8
	r1=$(rss_kb "$REDIS_PID")
	kill "$rb" 2>/dev/null || true
	wait "$rb" 2>/dev/null || true
	stop_redis
	row "10,000 idle conns; reference: Redis (redis-benchmark -I)" "server RSS growth MiB" \
		"$(fmt "$dss")" \
		"$(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.1f", (b - a) / 1024 }')"
}

# redis_fill COUNT PREFIX [PX_MS]: stores COUNT keys PREFIX%012d with
# 100-byte values through redis-cli --pipe.
redis_fill() {
	local v
	v=$(printf 'v%.0s' $(seq 1 100))
	awk -v n="$1" -v p="$2" -v v="$v" -v px="${3:-}" 'BEGIN {
		for (i = 0; i < n; i++) {
			k = sprintf("%s%012d", p, i)
			if (px != "") printf "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$100\r\n%s\r\n$2\r\nPX\r\n$%d\r\n%s\r\n", length(k), k, v, length(px), px
			else printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$100\r\n%s\r\n", length(k), k, v
		}
	}' | taskset -c "$LOAD_CPU" redis-cli -p "$REDIS_PORT" --pipe >/dev/null
}

# Resident memory with 1,000,000 keys of 100 bytes.
scenario_rss_1m() {
	log "1,000,000 keys: memory"
	start_dss
	local d0 d1 r0 r1
	d0=$(rss_kb "$DSS_PID")
	# 16-byte keys (key:000000 and six digits), as redis_fill writes them.
	dss_bench fill1m --op fill --keys 1000000 --key-prefix key:000000 --clients 64 --timeout 30s
	sleep 5
	d1=$(rss_kb "$DSS_PID")
	stop_dss
	start_redis
	r0=$(rss_kb "$REDIS_PID")
	redis_fill 1000000 "key:"
	sleep 5
	r1=$(rss_kb "$REDIS_PID")
	stop_redis
	row "1M keys, 100 B values" "server RSS MiB, 5 s after the fill (empty server)" \
		"$(awk -v b="$d1" -v a="$d0" 'BEGIN { printf "%.0f (%.0f)", b / 1024, a / 1024 }')" \
		"$(awk -v b="$r1" -v a="$r0" 'BEGIN { printf "%.0f (%.0f)", b / 1024, a / 1024 }')"
	row "1M keys, 100 B values" "fill requests/s (dss bench fill; redis-cli --pipe)" "$(fmt "$(j fill1m .requests_per_second)" 0)" ""
}

# Time to start on a data directory with 1,000,000 keys: from exec until
# the MQTT port accepts, after a graceful stop (journal and snapshot as the
# server left them), and the server's own figure for the recovery.
scenario_startup_1m() {
	log "1,000,000 keys: time to start"
	local i t0 t1 took
	start_dss --fsync everysec
	dss_bench start1m-fill --op fill --keys 1000000 --key-prefix key:000000 --clients 64 --timeout 30s
	stop_dss
	for i in $(seq 1 "$RUNS"); do
		port_free "$DSS_PORT"
		t0=$(date +%s%N)
		taskset -c "$SERVER_CPU" "$DSS" serve --listen "127.0.0.1:$DSS_PORT" --log-level info \
			--data "$WORK/dss-data" 2>"$WORK/start1m.$i.log" &
		DSS_PID=$!
		wait_port "$DSS_PORT"
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000000)) >"$WORK/start1m.$i.ms"
		took=$(sed -n 's/.*msg="state recovered".*keys=\([0-9]*\) took=\([^ ]*\).*/\1 keys in \2/p' "$WORK/start1m.$i.log")
		log "start $i: $(cat "$WORK/start1m.$i.ms") ms to listen; recovered $took"
		stop_dss
	done
	row "start with 1M keys (--data)" "ms from exec to listening" \
		"$(for i in $(seq 1 "$RUNS"); do cat "$WORK/start1m.$i.ms"; done | median)" ""
}

# GET latency over 10,000,000 keys: at 64 connections (the server's
# throughput) and for one client at a time (the round trip, without
# queueing), each measured RUNS times over one fill.
scenario_keys_10m() {
	local i
	log "10,000,000 keys: filling dss (slow: one request at a time per connection)"
	start_dss
	dss_bench fill10m --op fill --keys 10000000 --key-prefix key: --clients 64 --inflight 1 --timeout 60s
	for i in $(seq 1 "$RUNS"); do
		log "10,000,000 keys: dss run $i/$RUNS"
		dss_bench "get10m.$i" --op get --keys 10000000 --key-prefix key: --no-preload --clients 64 --duration "${DURATION}s"
		dss_bench "one10m.$i" --op get --keys 10000000 --key-prefix key: --no-preload --clients 1 --duration 5s --warmup 1s
	done
	local rss
	rss=$(rss_kb "$DSS_PID")
	stop_dss
	log "10,000,000 keys: filling redis"
	start_redis
	redis_fill 10000000 "key:"
	for i in $(seq 1 "$RUNS"); do
		log "10,000,000 keys: redis run $i/$RUNS"
		redis_bench "rget10m.$i" -c 64 -P 1 -r 10000000 -n 300000 GET 'key:__rand_int__'
		redis_bench "rone10m.$i" -c 1 -P 1 -r 10000000 -n 20000 GET 'key:__rand_int__'
	done
	local rrss
	rrss=$(rss_kb "$REDIS_PID")
	stop_redis
	row "GET, 10M keys" "requests/s" "$(fmt "$(med get10m .requests_per_second)" 0)" "$(fmt "$(med rget10m rps csv)" 0)"
	row "GET, 10M keys" "p50 / p99 latency µs" "$(fmt "$(med get10m .latency_us.p50)") / $(fmt "$(med get10m .latency_us.p99)")" \
		"$(fmt "$(med rget10m p50_latency_ms csv)") / $(fmt "$(med rget10m p99_latency_ms csv)")"
	row "GET, 10M keys, 1 conn" "p50 round trip µs" "$(fmt "$(med one10m .latency_us.p50)")" "$(fmt "$(med rone10m p50_latency_ms csv)")"
	row "GET, 10M keys" "hits (dss)" "$(j get10m.1 '.outcomes.GET.ok')/$(j get10m.1 .requests)" ""
	row "GET, 10M keys" "server RSS MiB" "$(awk -v v="$rss" 'BEGIN { printf "%.0f", v / 1024 }')" "$(awk -v v="$rrss" 'BEGIN { printf "%.0f", v / 1024 }')"
}

# worst_second NAME prints the highest p99 (µs) of the whole seconds of
# the measured window of dss bench's result NAME: not the warm-up, nor
# the last responses that come in after the window (a handful, whose p99
# is the generator's shutdown, not the server's).
worst_second() {
	jq -r '.timeline[(.warmup_seconds | floor):((.warmup_seconds + .seconds) | round)]
		| [.[].p99_ns // 0] | max / 1000' "$WORK/$1.json"
}

# GET latency while 100,000 keys expire within a few seconds: they are
# stored with PX 8s as fast as the server takes them, then GETs on other
# keys run for 15 seconds; the timeline's worst second shows the spike.
scenario_expiry_spike() {
	log "expiry spike"
	start_dss
	dss_bench exp-base --op get --keys 10000 --clients 64 --duration 5s --warmup 1s
	dss_bench exp-fill --op fill --keys 100000 --key-prefix exp: --px 8s --clients 64 --timeout 30s
	dss_bench exp-spike --op get --keys 10000 --no-preload --clients 64 --duration 15s --warmup 0s
	stop_dss
	local p99 worst
	p99=$(j exp-base .latency_us.p99)
	worst=$(worst_second exp-spike)
	row "GET while 100k keys expire" "p99 latency µs: before / while expiring" \
		"$(fmt "$p99") / $(fmt "$(j exp-spike .latency_us.p99)")" ""
	row "GET while 100k keys expire" "worst second's p99 µs: before / while expiring" \
		"$(fmt "$(worst_second exp-base)") / $(fmt "$worst")" ""
	row "GET while 100k keys expire" "worst second's p99 while expiring / p99 before (target ≤ 2)" \
		"$(awk -v a="$worst" -v b="$p99" 'BEGIN { printf "%.2f", a / b }')" ""
	row "GET while 100k keys expire" "p99.9 / max latency µs: before / while expiring" \
		"$(fmt "$(j exp-base '.latency_us."p99_9"')") / $(fmt "$(j exp-base .latency_us.max)"); $(fmt "$(j exp-spike '.latency_us."p99_9"')") / $(fmt "$(j exp-spike .latency_us.max)")" ""
}

# Authorization and TLS through authenticated connections (the redis
# column holds the comparison each row names): server CPU per request with
# a policy against users only (target: at most 1.05), and TLS against
# plain TCP, both with the policy.
scenario_security() {
	local i pw=bench-pw
	printf '%s\n' "$pw" | "$DSS" passwd "$WORK/users" bench
	cp "$ROOT/internal/server/testdata/bench-policy.yaml" "$WORK/policy.yaml"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
	local auth=(--in-memory --users "$WORK/users")
	local login=(--username bench)
	local load=(--clients 64 --inflight 1 --value-size 100 --keys 10000 --duration "${DURATION}s")
	for i in $(seq 1 "$RUNS"); do
		log "security run $i/$RUNS: users only"
		start_dss "${auth[@]}"
		DSS_PASSWORD=$pw dss_bench "users-set.$i" --op set "${login[@]}" "${load[@]}"
		DSS_PASSWORD=$pw dss_bench "users-get.$i" --op get "${login[@]}" "${load[@]}"
		log "security run $i/$RUNS: users and a policy"
		start_dss "${auth[@]}" --policy "$WORK/policy.yaml"
		DSS_PASSWORD=$pw dss_bench "policy-set.$i" --op set "${login[@]}" "${load[@]}"
		DSS_PASSWORD=$pw dss_bench "policy-get.$i" --op get "${login[@]}" "${load[@]}"
		log "security run $i/$RUNS: users and a policy over TLS"
		port_free "$TLS_PORT"
		start_dss "${auth[@]}" --policy "$WORK/policy.yaml" --tls-listen "127.0.0.1:$TLS_PORT" \
			--tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem"
		DSS_PASSWORD=$pw dss_bench "tls-set.$i" --op set "${login[@]}" "${load[@]}" --server "127.0.0.1:$TLS_PORT" --ca "$WORK/cert.pem"
		DSS_PASSWORD=$pw dss_bench "tls-get.$i" --op get "${login[@]}" "${load[@]}" --server "127.0.0.1:$TLS_PORT" --ca "$WORK/cert.pem"
		stop_dss
	done
	local op OP
	for op in set get; do
		OP=$(echo "$op" | tr a-z A-Z)
		row "$OP, 64 conns: policy / users only" "server CPU µs/request (target ratio ≤ 1.05)" \
			"$(fmt "$(med "policy-$op" .server_cpu_us_per_request)" 2)" \
			"$(fmt "$(med "users-$op" .server_cpu_us_per_request)" 2)"
		row "$OP, 64 conns: policy / users only" "requests/s" \
			"$(fmt "$(med "policy-$op" .requests_per_second)" 0)" \
			"$(fmt "$(med "users-$op" .requests_per_second)" 0)"
		row "$OP, 64 conns: TLS / plain TCP (with the policy)" "requests/s" \
			"$(fmt "$(med "tls-$op" .requests_per_second)" 0)" \
			"$(fmt "$(med "policy-$op" .requests_per_second)" 0)"
		row "$OP, 64 conns: TLS / plain TCP (with the policy)" "server CPU µs/request" \
			"$(fmt "$(med "tls-$op" .server_cpu_us_per_request)" 2)" \
			"$(fmt "$(med "policy-$op" .server_cpu_us_per_request)" 2)"
		row "$OP, 64 conns: users, policy, TLS" "errors + timeouts (all runs)" \
			"$(for i in $(seq 1 "$RUNS"); do for m in users policy tls; do j "$m-$op.$i" '.errors + .timeouts'; done; done | awk '{ s += $1 } END { print s + 0 }')" ""
	done
}

# The state store of a broker already running: dss attached to Mosquitto,
# beside the glue plants build (Mosquitto, a Go bridge, Redis), and beside
# dss serve as the broker itself; 64 connections, one request in flight
# each, 100-byte values, 10,000 keys. The server side (every one of its
# processes) runs on the server CPU; its CPU time is counted over the whole
# run of dss bench, per request sent.
scenario_attach() {
	local i op
	for i in $(seq 1 "$RUNS"); do
		for op in set get; do
			log "attach run $i/$RUNS, $op: dss serve"
			start_dss
			stack_bench "serve-$op.$i" "$DSS_PORT" "$DSS_PID" --op "$op" --clients 64 --inflight 1 --value-size 100 --keys 10000 --duration "${DURATION}s"
			stop_dss
			log "attach run $i/$RUNS, $op: Mosquitto + dss attach"
			start_mosquitto
			start_attach
			stack_bench "attach-$op.$i" "$MQ_PORT" "$MQ_PID $ATTACH_PID" --op "$op" --clients 64 --inflight 1 --value-size 100 --keys 10000 --duration "${DURATION}s"
			stop_pid ATTACH_PID
			stop_pid MQ_PID
			log "attach run $i/$RUNS, $op: Mosquitto + redisbridge + Redis"
			start_mosquitto
			start_bridge
			stack_bench "bridge-$op.$i" "$MQ_PORT" "$MQ_PID $BRIDGE_PID $REDIS_PID" --op "$op" --clients 64 --inflight 1 --value-size 100 --keys 10000 --duration "${DURATION}s"
			stop_pid BRIDGE_PID
			stop_redis
			stop_pid MQ_PID
		done
	done
	local OP
	for op in set get; do
		OP=$(echo "$op" | tr a-z A-Z)
		row "$OP, 64 conns, through Mosquitto: dss attach / bridge + Redis" "requests/s" \
			"$(fmt "$(med "attach-$op" .requests_per_second)" 0)" \
			"$(fmt "$(med "bridge-$op" .requests_per_second)" 0)"
		row "$OP, 64 conns, through Mosquitto: dss attach / bridge + Redis" "p50 latency µs" \
			"$(fmt "$(med "attach-$op" .latency_us.p50)")" \
			"$(fmt "$(med "bridge-$op" .latency_us.p50)")"
		row "$OP, 64 conns, through Mosquitto: dss attach / bridge + Redis" "p99 latency µs" \
			"$(fmt "$(med "attach-$op" .latency_us.p99)")" \
			"$(fmt "$(med "bridge-$op" .latency_us.p99)")"
		row "$OP, 64 conns, through Mosquitto: dss attach / bridge + Redis" "server side CPU µs/request (all its processes)" \
			"$(fmt "$(for i in $(seq 1 "$RUNS"); do cat "$WORK/attach-$op.$i.stackcpu"; done | median)")" \
			"$(fmt "$(for i in $(seq 1 "$RUNS"); do cat "$WORK/bridge-$op.$i.stackcpu"; done | median)")"
		row "$OP, 64 conns: dss attach to Mosquitto / dss serve" "requests/s" \
			"$(fmt "$(med "attach-$op" .requests_per_second)" 0)" \
			"$(fmt "$(med "serve-$op" .requests_per_second)" 0)"
		row "$OP, 64 conns: dss attach to Mosquitto / dss serve" "server side CPU µs/request" \
			"$(fmt "$(for i in $(seq 1 "$RUNS"); do cat "$WORK/attach-$op.$i.stackcpu"; done | median)")" \
			"$(fmt "$(for i in $(seq 1 "$RUNS"); do cat "$WORK/serve-$op.$i.stackcpu"; done | median)")"
		row "$OP, 64 conns: attach, bridge, serve" "errors + timeouts (all runs)" \
			"$(for i in $(seq 1 "$RUNS"); do for m in attach bridge serve; do j "$m-$op.$i" '.errors + .timeouts'; done; done | awk '{ s += $1 } END { print s + 0 }')" ""
	done
}

# ---------------------------------------------------------------- main

setup
{
	echo "| scenario | metric | dss | redis | dss/redis |"
	echo "|---|---|---|---|---|"
} >"$TABLE"
for s in $ONLY; do
	if ! declare -F "scenario_$s" >/dev/null; then
		log "unknown scenario $s (known: $FULL)"
		exit 2
	fi
	"scenario_$s"
done
{
	echo
	echo "$(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(uname -sr);" \
		"server on CPU $SERVER_CPU, load on CPU $LOAD_CPU; medians of $RUNS runs of ${DURATION}s;" \
		"$(redis-server --version | awk '{ print $1, $3 }'); dss $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)."
} >>"$TABLE"
cat "$TABLE"
if [ -n "$OUT" ]; then cp "$TABLE" "$OUT"; fi
