#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# host_bench.sh OUTDIR [--preset NAME] [MO_NAME=value ...]: the bench
# suite (run_bench.sh, next to this file) on the machine it runs on, no VM:
# a real NUMA or CXL machine booted into the vanilla kernel once and into
# the patched one once ("make host-bench" from a checkout; the lab runs it
# inside its guest as if that were the host). Writes
# OUTDIR/<host>-<variant>-<release>-<stamp>/:
#   bench.jsonl   the measurements (the same JSON lines as make bench)
#   bench.log     what run_bench.sh printed
#   facts.json    the machine: kernel, CPUs, memory nodes and tiers, DMA
#                 channels, the arguments, run_bench.sh's exit status
# "make host-report" merges such directories (a vanilla and a patched one,
# or several of each: rounds in the order they ran) into make bench's
# tables and plots.
#
# The engines are the ones this machine has: dcbm runs over the memcpy-
# capable dmaengine channels present (PTDMA, IOAT, DSA with a configured
# work queue, ...); swdma, the lab's software DMA engine, is never loaded
# here (MO_HOST=1). The settings: those of bench preset NAME (presets/NAME,
# read by preset.sh as make bench reads it; default hardware: bigger
# buffers and more repetitions than the lab's, compaction off, this
# machine's nodes), then the MO_*=value arguments, which override them
# (run_bench.sh lists them all). The targets are this machine's whatever
# the preset: MO_TO, up to two other memory nodes (the nearest in node 0's
# tier, the nearest in a lower tier: SLIT distance), and MO_TPUT_CPU, node
# 0's first CPU for the mover of tput and count (on a 2-socket machine,
# where it runs decides what a move crosses), unless the arguments say.
# MO_BENCH_BIN=path   mo_bench, if not next to this script's directory.
# Exit status: run_bench.sh's (0 every measurement verified), 2 if it
# cannot run here (not root, fewer than two memory nodes).

set -u
[ $# -ge 1 ] || { echo "usage: host_bench.sh OUTDIR [--preset NAME] [MO_NAME=value ...]" >&2; exit 2; }
OUTDIR=$1
shift
PRESET=hardware
if [ "${1:-}" = --preset ]; then
	PRESET=${2:-}
	shift $(($# < 2 ? $# : 2))
fi
HERE=$(cd "$(dirname "$0")" && pwd)
RB=$HERE/run_bench.sh
[ -f "$RB" ] || RB=$HERE/../suites/bench	# installed in the lab's guest
fail() { echo "host_bench: $*" >&2; exit 2; }
[ -f "$RB" ] || fail "run_bench.sh not found next to $0"
# The arguments first: a bad one changes nothing and writes nothing.
for _a in "$@"; do
	case $_a in
	MO_HOST=*|MO_JSONL=*|MO_SEND=*) fail "$_a: set by host_bench.sh itself, not an argument" ;;
	MO_[A-Z]*=*) ;;
	*) fail "argument '$_a' is not MO_NAME=value" ;;
	esac
done
# preset.sh reads the presets for make bench too (the one reader)
_err=$(sh "$HERE/preset.sh" "$PRESET" 2>&1 >/dev/null) || fail "$_err"
[ "$(id -u)" = 0 ] || fail "run as root: it changes sysfs settings (and puts them back)"

# json_str TEXT: TEXT made safe for a JSON string.
json_str() { printf '%s' "$1" | tr -d '"\\' | tr '\n\t' '  '; }

# ------------------------------------------------------------ the machine

NODE=/sys/devices/system/node
TIERS=/sys/devices/virtual/memory_tiering
mem_mb() { awk '/MemTotal:/ { print int($4 / 1024) }' "$NODE/node$1/meminfo" 2>/dev/null; }
in_list() {
	echo "$1" | awk -v n="$2" -F, '{
		for (i = 1; i <= NF; i++) {
			split($i, r, "-"); lo = r[1] + 0; hi = (r[2] == "" ? lo : r[2] + 0)
			if (n >= lo && n <= hi) found = 1
		}
	} END { exit !found }'
}
tier_of() {
	for _d in "$TIERS"/memory_tier*; do
		[ -e "$_d/nodelist" ] && in_list "$(cat "$_d/nodelist")" "$1" &&
			echo "${_d##*memory_tier}" && return
	done
	echo -1
}
MEMNODES=
for _n in "$NODE"/node[0-9]*; do
	_n=${_n##*node}
	[ "$(mem_mb "$_n")" -gt 0 ] 2>/dev/null && MEMNODES="$MEMNODES $_n"
done
# shellcheck disable=SC2086
[ $(echo $MEMNODES | wc -w) -ge 2 ] ||
	fail "memory nodes here:${MEMNODES:- none}; migration needs two (a NUMA or CXL machine, or numa=fake=2 on the kernel command line for a smoke test)"
case " $MEMNODES " in *" 0 "*) ;; *) fail "node 0 has no memory (memory nodes:$MEMNODES); the bench moves from node 0" ;; esac

# The targets: the nearest other node of node 0's tier and the nearest node
# of a lower one (by node 0's SLIT distances; ties: the lower number).
dist() { awk -v n="$1" '{ print $(n + 1) }' "$NODE/node0/distance" 2>/dev/null; }
T0=$(tier_of 0) SAME= LOWER= DSAME= DLOWER=
for _n in $MEMNODES; do
	[ "$_n" = 0 ] && continue
	_t=$(tier_of "$_n") _d=$(dist "$_n")
	_d=${_d:-999}
	if [ "$_t" = "$T0" ] || [ "$_t" = -1 ]; then
		if [ -z "$SAME" ] || [ "$_d" -lt "$DSAME" ]; then SAME=$_n DSAME=$_d; fi
	elif [ "$_t" -gt "$T0" ]; then
		if [ -z "$LOWER" ] || [ "$_d" -lt "$DLOWER" ]; then LOWER=$_n DLOWER=$_d; fi
	fi
done
TO=$(echo "$SAME $LOWER" | tr -s ' ' '\n' | grep . | tr '\n' ',' | sed 's/,$//')
[ -n "$TO" ] || TO=$(echo $MEMNODES | tr ' ' '\n' | grep -v '^0$' | head -1)

if [ -d /sys/kernel/mm/migrate_offload ]; then VARIANT=patched; else VARIANT=vanilla; fi
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
HOST=$(hostname 2>/dev/null || echo host)
DIR=$OUTDIR/$HOST-$VARIANT-$(uname -r)-$STAMP
mkdir -p "$DIR" || fail "cannot create $DIR"

# The preset's settings with this machine's targets, then the caller's
# arguments (last wins).
CPU0=$(cut -d, -f1 "$NODE/node0/cpulist" | cut -d- -f1)
ARGS="$(sh "$HERE/preset.sh" --host "$PRESET" "$TO" "$CPU0") $*"
case $(uname -r) in
*-mo-vanilla|*-mo-patched) ;;
*) echo "host_bench: warning: $(uname -r) is not a make deb kernel (-mo-vanilla, -mo-patched): a comparison needs both built from the same configuration" ;;
esac

nodes_json() {
	_sep=
	printf '['
	for _d in "$NODE"/node[0-9]*; do
		_n=${_d##*node}
		printf '%s{"node":%s,"mem_mb":%s,"cpus":"%s","tier":%s}' "$_sep" "$_n" \
			"$(mem_mb "$_n")" "$(cat "$NODE/node$_n/cpulist" 2>/dev/null)" "$(tier_of "$_n")"
		_sep=,
	done
	printf ']'
}
# Every dmaengine channel, with its device's driver (the provider).
dma_json() {
	_sep=
	printf '['
	for _c in /sys/class/dma/*; do
		[ -e "$_c" ] || continue
		_drv=$(basename "$(readlink -f "$_c/device/driver" 2>/dev/null)" 2>/dev/null)
		printf '%s{"chan":"%s","driver":"%s","numa_node":"%s"}' "$_sep" "${_c##*/}" \
			"$(json_str "${_drv:-?}")" "$(cat "$_c/device/numa_node" 2>/dev/null)"
		_sep=,
	done
	printf ']'
}
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)

# The machine-wide settings the bench changes: saved, put back after it
# (also when interrupted), and any that did not come back are reported.
SETTINGS="/proc/sys/kernel/numa_balancing /sys/kernel/mm/numa/demotion_enabled
/sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/migrate_offload/reasons
/proc/sys/vm/percpu_pagelist_high_fraction
$(ls /sys/kernel/mm/transparent_hugepage/hugepages-*/enabled /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null)"
SAVED=$DIR/.settings
: > "$SAVED"
for _f in $SETTINGS; do
	[ -r "$_f" ] || continue
	# a choice file ("always [madvise] never") is written back as its choice
	_v=$(sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$_f")
	echo "$_f ${_v:-$(cat "$_f")}" >> "$SAVED"
done
put_back() {
	NOT_BACK=
	while read -r _f _v; do
		_now=$(sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$_f")
		_now=${_now:-$(cat "$_f")}
		[ "$_now" = "$_v" ] && continue
		echo "$_v" > "$_f" 2>/dev/null
		_now=$(sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$_f")
		_now=${_now:-$(cat "$_f")}
		[ "$_now" = "$_v" ] || NOT_BACK="$NOT_BACK $_f=$_now(was $_v)"
		echo "host_bench: $_f was left at a changed value; put back${NOT_BACK:+ (failed)}"
	done < "$SAVED"
}
trap 'put_back; exit 130' INT TERM

# ---------------------------------------------------------------- the run

echo "host_bench: $VARIANT kernel $(uname -r), $(nproc) CPUs, memory nodes$MEMNODES, targets $TO; results in $DIR"
T0S=$(date +%s)
# shellcheck disable=SC2086 # ARGS is split into words on purpose
# bench.log gets everything; the "# " summary lines are shown as they come
# (a long run stays visibly alive)
{ MO_HOST=1 MO_SEND=0 MO_JSONL=$DIR/bench.jsonl sh "$RB" $ARGS 2>&1; echo $? > "$DIR/.rc"; } |
	while IFS= read -r _l; do
		echo "$_l" >> "$DIR/bench.log"
		case $_l in "# "*|"ok "*|"not ok "*) echo "$_l" ;; esac
	done
RC=$(cat "$DIR/.rc" 2>/dev/null || echo 1)
rm -f "$DIR/.rc"
T1S=$(date +%s)
put_back
trap - INT TERM
rm -f "$SAVED"

cat > "$DIR/facts.json" <<EOF
{"kind":"host-bench","variant":"$VARIANT","release":"$(json_str "$(uname -r)")",
 "uname":"$(json_str "$(uname -a)")","cmdline":"$(json_str "$(cat /proc/cmdline)")",
 "hostname":"$(json_str "$HOST")","cpu_model":"$(json_str "$CPU")","cpus":$(nproc),
 "nodes":$(nodes_json),"targets":"$TO","dma_channels":$(dma_json),
 "engines":"$(json_str "$(cat /sys/kernel/mm/migrate_offload/engine 2>/dev/null)")",
 "preset":"$PRESET","args":"$(json_str "$ARGS")","started":"$STAMP","seconds":$((T1S - T0S)),
 "lru_gen":"$(json_str "$(cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null)")",
 "thp":"$(json_str "$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)")",
 "min_free_kbytes":"$(cat /proc/sys/vm/min_free_kbytes)",
 "watermark_scale_factor":"$(cat /proc/sys/vm/watermark_scale_factor 2>/dev/null)",
 "swap_kb":"$(awk '/SwapTotal/ { print $2 }' /proc/meminfo)",
 "governor":"$(json_str "$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null)")",
 "not_put_back":"$(json_str "${NOT_BACK:-}")",
 "kit_commit":"$(json_str "${MO_KIT_COMMIT:-}")","rc":$RC}
EOF
echo "host_bench: run_bench.sh exited $RC after $((T1S - T0S)) s; $DIR/{bench.jsonl,bench.log,facts.json}"
exit $RC
