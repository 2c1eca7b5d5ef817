#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Suite "bench" (installed as suites/bench): runs mo_bench for every copy
# engine configuration the kernel offers, collects the JSON lines into one
# file and sends it to the lab (@@MO-FILE-BEGIN bench.jsonl ... base64 ...
# @@MO-FILE-END), with a short human summary as "# " lines and one TAP
# result: ok when every measurement verified its data.
# Its functions are in lib_configs.sh (the configurations, the settings
# put back), lib_parts.sh (one function per part) and lib_summary.sh (the
# "# " summaries, the file sent), beside this file.
#
# Every boot also runs "mo_bench alias" once: how much slower a copy between
# buffers 2M apart is than one shifted by a few pages (about 1 on hardware,
# 10x and more under QEMU TCG, whose software TLB is direct-mapped), and
# what two vCPUs copying half of every 2M period each gain over one.
#
# Arguments of the form MO_NAME=value (the lab's mo.args: a preset's,
# presets/, then BENCH_ARGS) become environment, the last one winning:
#   MO_BENCH=full|quick  quick: tput to node 1 only, 64 MiB, 2 reps, + memcpy
#                        and a shorter tiering part
#   MO_REPS=N            repetitions of each measurement (2); tput, count
#                        and latency run them interleaved: one repetition
#                        of every configuration, then the next
#   MO_SIZE_MB=N         tput/memcpy buffer in MiB (64)
#   MO_ENGINES=a,b,...   configurations (patched default: the "bench:" line
#                        of lib/engines.list, which the lab reads too;
#                        auto: the per-batch choice among the CPU,
#                        mtcopy with 2 threads and dcbm with 4 channels;
#                        split: auto with dcbm (4 channels) alone and
#                        debugfs auto_split=2, every batch split between
#                        the CPU and dcbm wherever the models cut it, to
#                        measure the split itself; each run's split
#                        batches are counted in a "splits" record;
#                        split-N: the same with N channels, measured
#                        against cpu and dcbm-N)
#   MO_FOLIO=list        tput folio sizes in KB (4,16,64,256,1024,2048)
#   MO_COUNT=list        count: numbers of 2M folios (1,8,16,32,64)
#   MO_LAT_PAGES=list    latency: 4K pages per call (1,8,32,128,512)
#   MO_LAT_FOLIOS=list   latency: 2M folios per call (1,4,16)
#   MO_COMPACT=list      configurations that also run compaction
#                        (none,cpu,dcbm-4,auto; "vanilla" always on vanilla;
#                        "off" for none)
#   MO_COMPACT_NODE=N    node to fragment and compact (1)
#   MO_COMPACT_TRIGGER=list  mo_bench compaction --trigger values, each run
#                        (compact: a full compaction of the node, then
#                        count its free 2M blocks: the same work for every
#                        configuration; hugepages: the
#                        hugepage request compacts, but the allocator defers
#                        compaction after a failure, so later runs of a boot
#                        may do little) (compact)
#   MO_FILL_PCT=P        compaction fill, percent of the node's MemFree (95)
#   MO_TO=list           tput targets (full 1,2; quick 1)
#   MO_TPUT_CPU=N        the tput and count mover pinned to CPU N (unpinned)
#   MO_HOG=0             no tput under a hog (default on when auto runs:
#                        tput to the first target with a busy loop on
#                        every CPU, for MO_HOG_ENGINES, default
#                        none,mtcopy-2,auto, those the run has)
#   MO_HOG_FOLIO=list    its folio sizes (MO_FOLIO)
#   MO_PROFILE=0         no phase profile (default on, patched kernels: one
#                        traced tput run per configuration and folio size
#                        under the mm_migrate_batch_phases,
#                        mm_migrate_folio_copy and mm_migrate_batch_copy
#                        tracepoints, summed into "profile" lines; its own
#                        throughput is reported as traced_gbps, apart)
#   MO_TIER=0            no tiering part (default on: mo_bench tiering
#                        without and with --hog, every configuration,
#                        MO_TIER_REPS passes rotated like the others)
#   MO_TIER_NODE=N       the fast node (0); its lower tier must exist
#   MO_TIER_LEAVE_MB=N   free memory left on it, the rest held by hugetlb
#                        pages while a run lasts (256); the working set is
#                        1.5x that
#   MO_TIER_SECONDS=S    measured window (full 20, quick 10)
#   MO_TIER_WARMUP=S     work before it (5)
#   MO_TIER_REPS=N       passes over the configurations (1)
#   MO_TIER_FOLIO=KB     folio size of the working set (4; 2048: THP)
#   MO_TIER_REASONS=list migrate_offload/reasons during the part (as found:
#                        the kernel's default keeps NUMA hinting promotions
#                        on the per-folio path; "all" offloads them too)
#   MO_TIER_SCAN_MS=N    NUMA balancing scan periods (mo_bench --scan-ms;
#                        default: as the kernel has them)
#   MO_TIER_HOT_MS=N     NUMA balancing hot_threshold_ms (default: as found)
#   MO_WQ_SCOPE=S        workqueue default_affinity_scope during the run
#                        (VM default: system, see below; keep: as found;
#                        a real machine, MO_HOST=1, keeps its own)
#   MO_JSONL=path        keep the collected file here
#                        (default /tmp/mo-bench.<pid>/bench.jsonl)
#   MO_SEND=0            do not print the file as base64 (bare metal)
#   MO_HOST=1            a real machine (host_bench.sh): dcbm only over the
#                        DMA channels present, never swdma, and only with
#                        MO_DCBM_UNTRUSTED_OK=1 (no provider is trusted yet);
#                        tiering without --squeeze
# Configuration names: none, cpu (built-in), mtcopy-<threads>,
# dcbm-<channels> (over swdma, loaded with nr_chans=4 when no other DMA
# provider module is loaded), or any other engine name as listed in
# /sys/kernel/mm/migrate_offload/engine.

# run_bench.sh --summary FILE [BASE]: print the summary of a saved file.
if [ "$1" = --summary ]; then
	SUMMARY_ONLY=$2 SUMMARY_BASE=$3
	shift $#
fi

for _a in "$@"; do
	case $_a in
	MO_[A-Z]*=*) export "$_a" ;;
	*) echo "# bench: ignoring argument '$_a'" ;;
	esac
done

MO=/sys/kernel/mm/migrate_offload
MODBG=/sys/kernel/debug/migrate_offload
MODDIR=/lib/modules/$(uname -r)/kernel
HERE=$(cd "$(dirname "$0")" && pwd)
# lib/ beside bench/ (a checkout) and beside suites/ (the guest)
ENGINE_LIST=$HERE/../lib/engines.list
# The suite's functions, bench/lib_*.sh: beside this file in a checkout
# (guest/bench/), in bench/ beside suites/ in the guest (guest/Makefile
# installs this file as suites/bench): $HERE/../bench is both.
for _l in lib_configs.sh lib_parts.sh lib_summary.sh; do
	if [ ! -f "$HERE/../bench/$_l" ]; then
		echo "# bench: $_l not found in $HERE/../bench (guest/Makefile installs it)"
		echo "not ok 1 bench"
		echo "1..1"
		exit 1
	fi
	. "$HERE/../bench/$_l"
done
MB=${MO_BENCH_BIN:-$(cd "$HERE/.." && pwd)/mo_bench}
[ -x "$MB" ] || MB=$(command -v mo_bench)
if [ -z "${SUMMARY_ONLY:-}" ] && [ ! -x "$MB" ]; then
	echo "# bench: mo_bench not found (next to suites/, or set MO_BENCH_BIN)"
	echo "not ok 1 bench"
	echo "1..1"
	exit 1
fi

MODE=${MO_BENCH:-full}
case $MODE in
quick)
	REPS=${MO_REPS:-2}; SIZE=${MO_SIZE_MB:-64}; TO=${MO_TO:-1} ;;
full)
	REPS=${MO_REPS:-2}; SIZE=${MO_SIZE_MB:-64}; TO=${MO_TO:-1,2} ;;
*)
	echo "# bench: MO_BENCH must be full or quick, not '$MODE'"
	echo "not ok 1 bench"
	echo "1..1"
	exit 1 ;;
esac
TO1=${TO%%,*}
FOLIO=${MO_FOLIO:-4,16,64,256,1024,2048}
COUNT=${MO_COUNT:-1,8,16,32,64}
LAT_PAGES=${MO_LAT_PAGES:-1,8,32,128,512}
LAT_FOLIOS=${MO_LAT_FOLIOS:-1,4,16}
CNODE=${MO_COMPACT_NODE:-1}
CTRIG=${MO_COMPACT_TRIGGER:-compact}
FILL=${MO_FILL_PCT:-95}

WORK=/tmp/mo-bench.$$
mkdir -p "$WORK"
J=${MO_JSONL:-$WORK/bench.jsonl}
if [ -z "${SUMMARY_ONLY:-}" ]; then
	mkdir -p "$(dirname "$J")"
	: > "$J"
fi
FAILED=0
NMEAS=0

uptime_s() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }'; }
T_START=$(uptime_s)

# json_str TEXT: TEXT made safe for a JSON string.
json_str() { printf '%s' "$1" | tr -d '"\\' | tr '\n\t' '  '; }
emit() { echo "$1" >> "$J"; }

# ------------------------------------------------------------------- main

if [ -n "${SUMMARY_ONLY:-}" ]; then
	summary_of_file "$SUMMARY_ONLY" "$SUMMARY_BASE"
	rm -rf "$WORK"
	exit 0
fi

echo "TAP version 13"
NODES=$(ls -d /sys/devices/system/node/node* 2>/dev/null | sed 's,.*/node,,' | tr '\n' ',' | sed 's/,$//')
settings_take
trap 'put_back; exit 130' INT TERM
wq_scope_set
TIER_ON=1
[ "${MO_TIER:-1}" = 0 ] && TIER_ON=0
echo "# bench: $MODE, kernel $(uname -r) ($VARIANT), $(nproc) cpus, nodes $NODES, size ${SIZE} MiB, reps $REPS"
emit "{\"mode\":\"run\",\"bench\":\"$MODE\",\"variant\":\"$VARIANT\",\"kernel\":\"$(uname -r)\",\"cpus\":$(nproc),\"nodes\":\"$NODES\",\"size_mb\":$SIZE,\"reps\":$REPS,\"configs\":\"$(echo $CONFS | tr ' ' ',')\",\"reasons\":\"$(json_str "$REASONS")\",\"tier\":$TIER_ON,\"wq_scope\":\"$(cat $WQS 2>/dev/null)\"}"

configs_set_up

# The parts (lib_parts.sh), each over the configurations set up.
first=${OK_CONFS# }
first=${first%% *}
[ -n "$first" ] && part_ceiling
part_tput
part_hog
[ $TIER_ON = 1 ] && part_tiering
if [ "$MODE" = full ]; then
	part_count
	part_latency
	part_compaction
fi
[ -d $MO ] && [ "${MO_PROFILE:-1}" != 0 ] && part_profile

# ---------------------------------------------------------------- the end

engines_unload
put_back
trap - INT TERM

final_summary "$J" "$first"

echo "# $NMEAS measurement lines, $(since "$T_START") s in all; file: $J"
send_file "$J"
if [ "$FAILED" = 0 ] && [ "$NMEAS" -gt 0 ]; then
	echo "ok 1 bench"
	rc=0
else
	echo "# $FAILED part(s) failed or did not verify their data"
	echo "not ok 1 bench"
	rc=1
fi
echo "1..1"
exit $rc
