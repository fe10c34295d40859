#!/usr/bin/env bash
# One cable down and up again on ibsim: ibsm (sftree, incremental) brings a
# full 3-level fat tree up on a fresh ibsim as the daemon does, then ibsim's
# console unlinks and relinks three cables in turn (a leaf's uplink in the
# last pod, an aggregation switch's uplink there, a leaf's uplink in the
# first pod); the switches trap and ibsm's sweep loop answers. Prints, per
# event, when the console command went in and the daemon's SUBNET UP line
# for the sweep that answered it (its total, phases and LFT blocks sent).
#
#   make build
#   integration/experiments/linkdown/ibsim.sh [radix, default 56] [bin dir, default bin]
set -euo pipefail
radix=${1:-56}
bin=$(cd "${2:-bin}" && pwd)
d=$(mktemp -d /tmp/ibsm-linkdown-ibsim.XXXX)
net=$d/ft3-$radix.net
"$bin/ibsm" topo fat-tree --radix "$radix" --levels 3 > "$net"
# ibsim's flags for this fabric, from the file's header.
flags=$(sed -n 's/^# ibsim [^:]*: ibsim \(.*\) <file>$/\1/p' "$net")
sock=ibsmld_$$
mkfifo "$d/console"
IBSIM_SOCKNAME=$sock ibsim $flags "$net" < "$d/console" > "$d/ibsim.out" 2>&1 &
ibsim_pid=$!
exec 3> "$d/console" # held open: at EOF on stdin ibsim's console spins
ibsm_pid=
cleanup() {
	[ -n "$ibsm_pid" ] && kill "$ibsm_pid" 2> /dev/null && wait "$ibsm_pid" 2> /dev/null
	kill "$ibsim_pid" 2> /dev/null && wait "$ibsim_pid" 2> /dev/null
	rm -rf "$d"
}
trap cleanup EXIT
for _ in $(seq 1 1500); do grep -q "@$sock:ctl@" /proc/net/unix && break; sleep 0.2; done
cat > "$d/ibsm.hcl" <<HCL
fabric {
  transport = "ibsim"
  socket    = "$sock"
}

sm {
  state_dir      = "$d/state"
  mad_window     = 128
  plugin_timeout = "300s"
}

plugin "routing_engine" "sftree" {
  path = "$bin/ibsm-plugin-sftree"
  config {
    incremental = true
  }
}

plugin "lid_assigner" "sequential" {
  path = "$bin/ibsm-plugin-sequential"
}

plugin "vl_assigner" "single" {
  path = "$bin/ibsm-plugin-single"
}

routing {
  engine       = "sftree"
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
HCL
"$bin/ibsm" run --config "$d/ibsm.hcl" > "$d/ibsm.log" 2>&1 &
ibsm_pid=$!
# waitup n: until the daemon has logged n SUBNET UP lines (2 minutes).
waitup() {
	for _ in $(seq 1 1200); do
		[ "$(grep -c 'SUBNET UP' "$d/ibsm.log")" -ge "$1" ] && return 0
		sleep 0.1
	done
	echo "no SUBNET UP line $1 in 2 minutes; the daemon's log:" >&2
	tail -20 "$d/ibsm.log" >&2
	return 1
}
waitup 1
grep -m1 "SUBNET UP" "$d/ibsm.log"
sleep 8 # the bring-up's ports settle Active
last=$((radix * radix / 2 - 100)) # a leaf in the last pods
up=$((radix / 2 + 1))             # its first uplink
n=1
for cmd in "Unlink \"ft3-leaf-$last\"[$up]" "ReLink \"ft3-leaf-$last\"[$up]" \
	"Unlink \"ft3-spine-$last\"[$((up + 1))]" "ReLink \"ft3-spine-$last\"[$((up + 1))]" \
	"Unlink \"ft3-leaf-1\"[$up]" "ReLink \"ft3-leaf-1\"[$up]"; do
	n=$((n + 1))
	echo "$(date -u +%T.%N | cut -c1-12) console: $cmd"
	echo "$cmd" >&3
	waitup $n
	grep "SUBNET UP" "$d/ibsm.log" | tail -1
	sleep 6
done
