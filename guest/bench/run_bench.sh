#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Suite "bench" (installed as suites/bench): runs mo_bench for every copy
# engine configuration the kernel offers, collects the JSON lines into one
# file and sends it to the lab (@@MO-FILE-BEGIN bench.jsonl ... base64 ...
# @@MO-FILE-END), with a short human summary as "# " lines and one TAP
# result: ok when every measurement verified its data.
#
# Every boot also runs "mo_bench alias" once: how much slower a copy between
# buffers 2M apart is than one shifted by a few pages (about 1 on hardware,
# 10x and more under QEMU TCG, whose software TLB is direct-mapped), and
# what two vCPUs copying half of every 2M period each gain over one.
#
# Arguments of the form MO_NAME=value (the lab's mo.args) become environment:
#   MO_BENCH=full|quick  quick: tput to node 1 only, 64 MiB, 2 reps, + memcpy
#                        and a shorter tiering part
#   MO_REPS=N            repetitions of each measurement (2); tput, count
#                        and latency run them interleaved: one repetition
#                        of every configuration, then the next
#   MO_SIZE_MB=N         tput/memcpy buffer in MiB (64)
#   MO_ENGINES=a,b,...   configurations (patched default:
#                        none,cpu,mtcopy-1,mtcopy-2,dcbm-1,dcbm-4,auto,split,
#                        split-1;
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

# ----------------------------------------------------------- engine setup

mod_path() {
	case $1 in
	swdma) echo "$MODDIR/drivers/dma/swdma.ko" ;;
	*) echo "$MODDIR/drivers/migrate_offload/$1.ko" ;;
	esac
}

LOADED=
# load_mod NAME [ARGS]: load a module unless present; 0 if it is there.
load_mod() {
	_m=$1; shift
	[ -d "/sys/module/$_m" ] && return 0
	if [ -f "$(mod_path "$_m")" ]; then
		_err=$(insmod "$(mod_path "$_m")" "$@" 2>&1)
	else
		_err=$(modprobe "$_m" "$@" 2>&1)
	fi
	if [ -d "/sys/module/$_m" ]; then
		LOADED="$_m $LOADED"
		return 0
	fi
	MODERR="$_m: ${_err:-cannot load}"
	return 1
}

engine_active() { sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$MO/engine"; }

# write_sys FILE VALUE: write, with the error message in $WERR on failure.
write_sys() {
	WERR=$( { echo "$2" > "$1"; } 2>&1 ) && return 0
	WERR="echo $2 > $1: ${WERR:-failed}"
	return 1
}

# dcbm_load CHANNELS: dcbm loaded over a DMA provider, nr_chan set; or $WHY
# and returns 1.
dcbm_load() {
	# a DMA provider first: swdma, unless the machine has real ones
	# (on a real machine, MO_HOST=1: only the real ones)
	if ! ls /sys/class/dma 2>/dev/null | grep -q .; then
		[ "${MO_HOST:-0}" = 1 ] && {
			WHY="no dmaengine channel on this machine (/sys/class/dma is empty): dcbm needs a memcpy-capable provider that can stop a transfer (in 6.12: AMD PTDMA; dcbm refuses IOAT and DSA, which cannot)"
			return 1
		}
		load_mod swdma nr_chans=4 || { WHY=$MODERR; return 1; }
	fi
	# A real provider's terminate may not stop the hardware (AMD PTDMA's
	# does not: docs/hardware.md, "DMA providers"): on a real machine only
	# when the operator says so.
	if [ "${MO_HOST:-0}" = 1 ] && [ "${MO_DCBM_UNTRUSTED_OK:-0}" != 1 ]; then
		WHY="dcbm over this machine's DMA providers ($(for _c in /sys/class/dma/*; do basename "$(readlink -f "$_c/device/driver")"; done | sort -u | tr '\n' ' ')) is not trusted yet: a hung transfer may still write after dcbm gives up (docs/hardware.md); give MO_DCBM_UNTRUSTED_OK=1 on a test machine"
		return 1
	fi
	load_mod dcbm || { WHY=$MODERR; return 1; }
	write_sys /sys/module/dcbm/parameters/nr_chan "$1" || { WHY=$WERR; return 1; }
}

# configure CONF: select the engine configuration CONF; sets $ENGINE and
# $PARAMS, or $WHY and returns 1.
configure() {
	ENGINE=${1%%-*} PARAMS= WHY=
	if [ "$1" = vanilla ]; then
		[ -d $MO ] && { WHY="not a vanilla kernel"; return 1; }
		return 0
	fi
	[ -d $MO ] || { WHY="no $MO (vanilla kernel)"; return 1; }
	write_sys $MO/engine none || { WHY=$WERR; return 1; }
	case $1 in
	mtcopy-*)
		load_mod mtcopy || { WHY=$MODERR; return 1; }
		PARAMS="threads=${1#mtcopy-}"
		write_sys /sys/module/mtcopy/parameters/threads "${1#mtcopy-}" ||
			{ WHY=$WERR; return 1; }
		;;
	dcbm-*)
		dcbm_load "${1#dcbm-}" || return 1
		PARAMS="nr_chan=${1#dcbm-}"
		;;
	split|split-*)
		# the split itself: auto with dcbm alone (4 channels, or N for
		# split-N), cutting every batch where the models place a cut
		# (auto_split 2)
		[ -w "$MODBG/auto_split" ] || { WHY="no $MODBG/auto_split"; return 1; }
		# auto takes every engine registered: mtcopy out (loaded again
		# by the configurations that use it)
		if grep -q "^mtcopy " /proc/modules; then
			rmmod mtcopy || { WHY="mtcopy would not unload"; return 1; }
		fi
		_sc=4
		[ "$1" != split ] && _sc=${1#split-}
		dcbm_load "$_sc" || return 1
		ENGINE=auto PARAMS="dcbm nr_chan=$_sc, auto_split=2"
		;;
	auto)
		# auto chooses among the CPU and every engine there is, as the
		# bench's best fixed configurations have them: mtcopy with 2
		# threads, dcbm with 4 channels (where dcbm-N would be absent,
		# auto runs without it and says why in its parameters)
		load_mod mtcopy || { WHY=$MODERR; return 1; }
		write_sys /sys/module/mtcopy/parameters/threads 2 || { WHY=$WERR; return 1; }
		PARAMS="mtcopy threads=2"
		if dcbm_load 4; then
			PARAMS="$PARAMS, dcbm nr_chan=4"
		else
			PARAMS="$PARAMS, no dcbm: $WHY"
			WHY=
		fi
		;;
	*-*)
		WHY="unknown configuration '$1'"; return 1 ;;
	none|cpu) ;;
	*)
		load_mod "$1" 2>/dev/null ;;	# any other engine module
	esac
	if ! write_sys $MO/engine "$ENGINE"; then
		# the engine's own reason is in the kernel log (dcbm: "not using ...")
		WHY="$WERR; $(dmesg 2>/dev/null | grep -e "$ENGINE:" | tail -1 | sed 's/^\[[^]]*\] //')"
		return 1
	fi
	if [ "$(engine_active)" != "$ENGINE" ]; then
		WHY="selected $ENGINE, but the engine file says '$(engine_active)'"
		return 1
	fi
	if [ -w "$MODBG/auto_split" ]; then
		# only the split configuration forces splits; auto has the
		# kernel's default rule (1), whatever an earlier run left
		case $1 in split|split-*) _sp=2 ;; *) _sp=1 ;; esac
		write_sys "$MODBG/auto_split" "$_sp" || { WHY=$WERR; return 1; }
	fi
	case $1 in
	mtcopy-*) _p=/sys/module/mtcopy/parameters/threads ;;
	dcbm-*|split-*) _p=/sys/module/dcbm/parameters/nr_chan ;;
	*) _p= ;;
	esac
	if [ -n "$_p" ] && [ "$(cat $_p)" != "${1#*-}" ]; then
		WHY="$_p reads $(cat $_p), not ${1#*-}"
		return 1
	fi
	return 0
}

# ------------------------------------------------------------- summaries

# AWK_JV: awk function jv(line, key): the value of "key" in a JSON line.
AWK_JV='
function jv(line, key,   k, i, s) {
	k = "\"" key "\":"
	i = index(line, k)
	if (!i) return ""
	s = substr(line, i + length(k))
	if (substr(s, 1, 1) == "\"") {
		s = substr(s, 2)
		return substr(s, 1, index(s, "\"") - 1)
	}
	match(s, /^[^,}]*/)
	return substr(s, 1, RLENGTH)
}
function kb(v) { v += 0; return v >= 1024 ? (v / 1024) "M" : v "K" }'

# summarize FILE LABEL: one line per part: means by folio size/count/batch.
summarize() {
	awk -v label="$2" "$AWK_JV"'
	{
		if (jv($0, "skipped") == "true") { skipped++; why = jv($0, "reason"); next }
		m = jv($0, "mode")
		if (m == "tput") { k = kb(jv($0, "folio_kb")); v = jv($0, "gbps") }
		else if (m == "count") { k = jv($0, "folios"); v = jv($0, "gbps") }
		else if (m == "latency") {
			k = (jv($0, "folio_kb") == 2048 ? "f" jv($0, "folios") : "p" jv($0, "pages"))
			v = jv($0, "first_usable_us")
		} else if (m == "memcpy") { k = "memcpy"; v = jv($0, "gbps") }
		else if (m == "alias") {
			printf "# %s: word copy %s %.1f ns/word%s\n", label, jv($0, "layout"),
				jv($0, "ns_per_word"), jv($0, "verified") == "true" ? "" : " DATA NOT VERIFIED"
			next
		}
		else if (m == "tiering") {
			printf "# %s: %.0f pages/s touched, demoted %.0f/s, promoted %.0f/s, kswapd %.2f s, task %.2f+%.2f s, hot on fast %.0f%%%s\n", \
				label, jv($0, "touch_per_s"), jv($0, "demote_per_s"), jv($0, "promote_per_s"), \
				jv($0, "kswapd_cpu_s"), jv($0, "app_user_s"), jv($0, "app_sys_s"), \
				jv($0, "hot_on_fast_pct"), jv($0, "verified") == "true" ? "" : " DATA NOT VERIFIED"
			next
		}
		else if (m == "compaction") {
			printf "# %s: %.2f s, 2M %s/%s, %s pages migrated, sys %.0f%%, writer sys %.0f%%", \
				label, jv($0, "wall_s"), jv($0, "huge_obtained"), jv($0, "huge_target"), \
				jv($0, "pgmigrate_success"), jv($0, "sys_pct"), jv($0, "writer_sys_pct")
			if (jv($0, "hog") == "true")
				printf ", hog %.3g/s (alone %.3g/s)", jv($0, "hog_per_s"), jv($0, "hog_base_per_s")
			printf "%s\n", jv($0, "verified") == "true" ? "" : " DATA NOT VERIFIED"
			next
		} else next
		if (!(k in n)) order[++nk] = k
		n[k]++; sum[k] += v
		if (jv($0, "verified") != "true") bad++
		if (m == "tput" || m == "count") {
			fs = jv($0, "folio_share")
			if (fs != "null" && fs != "" && (!(k in share) || fs + 0 < share[k]))
				share[k] = fs + 0
			nm += jv($0, "not_moved"); sb += jv($0, "stayed_behind")
		}
		unit = (m == "latency") ? "first usable us" : "GB/s"
	}
	END {
		if (nk) {
			printf "# %s %s:", label, unit
			for (i = 1; i <= nk; i++) {
				k = order[i]
				printf (unit == "GB/s" ? " %s %.3g" : " %s %.0f"), k, sum[k] / n[k]
				if ((k in share) && share[k] < 90) printf "(%.0f%% folios)", share[k]
			}
			if (nm) printf "; not_moved %d, stayed_behind %d", nm, sb
			if (bad) printf "; %d NOT VERIFIED", bad
			printf "\n"
		}
		if (skipped && !nk) printf "# %s: skipped: %s\n", label, why
		else if (skipped) printf "# %s: %d skipped (%s)\n", label, skipped, why
	}' "$1"
}

# splits: auto_model's count of the batches auto split with dcbm and timed
# (split and run; "chosen" also counts splits that could not run)
splits() {
	_n=$(awk '$1 == "split" && $2 == "dcbm" { n = $4 } END { print n + 0 }' \
		"$MODBG/auto_model" 2>/dev/null)
	echo "${_n:-0}"
}
# auto_choices LABEL: what auto's models held after a part and how many
# batches of each size class each engine (and the CPU) was chosen for: one
# "auto_choice" record per engine and class that was chosen or calibrated
# (configure() selects auto again before every part, which resets the
# counts), so that the report can say why auto was or was not as fast as
# the best fixed configuration.
auto_choices() {
	[ -r "$MODBG/auto_model" ] || return 0
	# the repetition of an interleaved part (null for the others); rows
	# by their column count: 8 for a model row (an engine may be named
	# "split"), 6 for a split line; a line of neither shape is counted
	awk -v part="$(json_str "$1")" -v rep="${_IREP:-null}" '
		# "split ENGINE RATIO_PCT SAMPLES CHOSEN CUT_PERMILLE": the
		# batches split with ENGINE (also counted in its classes)
		$1 == "split" && NF == 6 && $5 > 0 {
			printf "{\"mode\":\"auto_split_model\",\"config\":\"auto\",\"part\":\"%s\",\"rep\":%s,\"engine\":\"%s\",\"ratio_pct\":%s,\"samples\":%s,\"chosen\":%s,\"cut_permille\":%s}\n", \
				part, rep, $2, $3, $4, $5, $6
			next
		}
		/^#/ || ($1 == "split" && NF == 6) { next }
		NF != 8 { odd++; next }
		$6 + $7 > 0 {
			printf "{\"mode\":\"auto_choice\",\"config\":\"auto\",\"part\":\"%s\",\"rep\":%s,\"engine\":\"%s\",\"size_kb\":%s,\"batch_ns\":%s,\"folio_ns\":%s,\"samples\":%s,\"chosen\":%s,\"not_ready\":%s}\n", \
				part, rep, $1, $2, $3, $4, $6, $7, $8
		}
		END {
			if (odd)
				printf "{\"mode\":\"auto_model_unparsed\",\"config\":\"auto\",\"part\":\"%s\",\"lines\":%d}\n", part, odd
		}' "$MODBG/auto_model" 2>/dev/null
}

# run_part CONF LABEL MODE ARGS...: one mo_bench run, summarized.
run_part() {
	_conf=$1 _label=$2; shift 2
	_t=$(uptime_s)
	_s0=$(splits)
	"$MB" "$@" --config "$_conf" > "$WORK/part.jsonl" 2> "$WORK/part.err"
	_rc=$?
	# how many batches the split configuration did split (0: the models
	# never placed a cut inside a batch, and it measured auto with dcbm)
	case $_conf in split|split-*) true ;; *) false ;; esac &&
		emit "{\"mode\":\"splits\",\"config\":\"$_conf\",\"part\":\"$(json_str "$_label")\",${SPLIT_CELL:-}\"splits\":$(($(splits) - _s0))}"
	cat "$WORK/part.jsonl" >> "$J"
	[ "$_conf" = auto ] && auto_choices "$_label" >> "$J"
	NMEAS=$((NMEAS + $(grep -c . "$WORK/part.jsonl")))
	grep -v ': skipped: ' "$WORK/part.err" | sed 's/^/#   /' | head -20
	summarize "$WORK/part.jsonl" "$_conf $_label"
	if grep -q '"verified":false' "$WORK/part.jsonl"; then
		FAILED=$((FAILED + 1))
		echo "# $_conf $_label: data NOT verified"
	fi
	case $_rc in
	0|4) ;;
	*) FAILED=$((FAILED + 1)); echo "# $_conf $_label: mo_bench exited with $_rc" ;;
	esac
	emit "{\"mode\":\"part\",\"config\":\"$_conf\",\"part\":\"$(json_str "$_label")\",\"rc\":$_rc,\"seconds\":$(since "$_t")}"
	echo "#   ($(since "$_t") s, total $(since "$T_START") s)"
}

# final_summary FILE BASE: tput and count tables over all configurations,
# with ratios against configuration BASE.
final_summary() {
	echo "# summary (means over reps; ratios against $2)"
	awk -v base="$2" "$AWK_JV"'
		jv($0, "skipped") == "true" { next }
		{ m = jv($0, "mode"); c = jv($0, "config") }
		m == "tput" || m == "count" {
			k = (m == "tput") ? m (jv($0, "hog") == "true" ? " hog" : "") " 0->" jv($0, "to") : m
			col = (m == "tput") ? kb(jv($0, "folio_kb")) : jv($0, "folios")
			key = k SUBSEP c SUBSEP col
			if (!(key in n)) {
				if (!((k SUBSEP col) in seencol)) { seencol[k SUBSEP col] = 1; cols[k] = cols[k] " " col }
				if (!((k SUBSEP c) in seenconf)) { seenconf[k SUBSEP c] = 1; confs[k] = confs[k] " " c }
				if (!(k in seenk)) { seenk[k] = 1; ks[++nk] = k }
			}
			n[key]++; s[key] += jv($0, "gbps")
		}
		END {
			for (i = 1; i <= nk; i++) {
				k = ks[i]
				nc = split(confs[k], cl, " "); ncol = split(cols[k], co, " ")
				printf "# %-14s", k
				for (b = 1; b <= ncol; b++)
					printf " %12s", co[b] (k ~ /^count/ ? "x2M" : "")
				printf "   GB/s\n"
				for (a = 1; a <= nc; a++) {
					printf "#   %-12s", cl[a]
					for (b = 1; b <= ncol; b++) {
						key = k SUBSEP cl[a] SUBSEP co[b]
						bk = k SUBSEP base SUBSEP co[b]
						if (!(key in n)) { printf " %12s", "-"; continue }
						v = s[key] / n[key]
						if (cl[a] != base && (bk in n) && s[bk] > 0)
							cell = sprintf("%.3g(%.2fx)", v, v / (s[bk] / n[bk]))
						else
							cell = sprintf("%.3g", v)
						printf " %12s", cell
					}
					printf "\n"
				}
			}
		}' "$1"
}

# ------------------------------------------------------------------- main

if [ -n "${SUMMARY_ONLY:-}" ]; then
	[ -f "$SUMMARY_ONLY" ] || { echo "run_bench.sh: $SUMMARY_ONLY: no such file" >&2; exit 2; }
	base=${SUMMARY_BASE:-$(sed -n 's/.*"mode":"config","config":"\([^"]*\)".*"absent":false.*/\1/p' "$SUMMARY_ONLY" | head -1)}
	for c in $(sed -n 's/.*"mode":"config","config":"\([^"]*\)".*"absent":false.*/\1/p' "$SUMMARY_ONLY" | awk '!seen[$0]++'); do
		for m in memcpy alias tput count latency compaction tiering; do
			grep "\"mode\":\"$m\",\"config\":\"$c\"" "$SUMMARY_ONLY" > "$WORK/m.jsonl"
			if [ "$m" = tput ]; then
				for to in $(sed -n 's/.*"to":\([0-9]*\),.*/\1/p' "$WORK/m.jsonl" | sort -u); do
					grep "\"to\":$to," "$WORK/m.jsonl" | grep -v '"hog":true' > "$WORK/t.jsonl"
					summarize "$WORK/t.jsonl" "$c tput 0->$to"
					grep "\"to\":$to," "$WORK/m.jsonl" | grep '"hog":true' > "$WORK/t.jsonl"
					[ -s "$WORK/t.jsonl" ] && summarize "$WORK/t.jsonl" "$c tput hog 0->$to"
				done
			elif [ -s "$WORK/m.jsonl" ]; then
				summarize "$WORK/m.jsonl" "$c $m"
			fi
		done
	done
	final_summary "$SUMMARY_ONLY" "$base"
	rm -rf "$WORK"
	exit 0
fi

echo "TAP version 13"
NODES=$(ls -d /sys/devices/system/node/node* 2>/dev/null | sed 's,.*/node,,' | tr '\n' ',' | sed 's/,$//')
if [ -d $MO ]; then
	VARIANT=patched
	CONFS=$(echo "${MO_ENGINES:-none,cpu,mtcopy-1,mtcopy-2,dcbm-1,dcbm-4,auto,split,split-1}" | tr ',' ' ')
	COMPACT=$(echo "${MO_COMPACT:-none,cpu,dcbm-4,auto}" | tr ',' ' ')
	# put back at the end (and on INT/TERM): a real machine keeps its own
	OLD_ENGINE=$(engine_active) OLD_REASONS=$(cat $MO/reasons)
	OLD_SPLIT=$(cat "$MODBG/auto_split" 2>/dev/null || echo 1)
	write_sys $MO/engine none || echo "# bench: $WERR"
	write_sys $MO/reasons all || echo "# bench: $WERR"
	REASONS=$(cat $MO/reasons)
else
	VARIANT=vanilla
	CONFS=vanilla
	COMPACT=vanilla
	REASONS=
fi
[ "${MO_COMPACT:-}" = off ] && COMPACT=
# Settings a part changes outside mo_bench (which restores its own): put
# back at the end, and when the run is interrupted.
NRHP=$(for _f in /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages; do
	[ -e "$_f" ] && echo "$_f=$(cat "$_f")"; done)
# The lab's QEMU topology makes each vCPU its own LLC and node, so the
# default "cache" affinity scope of unbound workqueues runs a work item on
# the CPU that queued it: swdma's channels, which stand in for a device
# copying beside the CPUs, copied on the migrating CPU (a split's two parts
# then took turns on one vCPU). In a VM one pod spans the machine, for
# every configuration and both kernels; a real machine keeps its own.
WQS=/sys/module/workqueue/parameters/default_affinity_scope OLD_WQS=
put_back() {
	[ -n "$OLD_WQS" ] && { write_sys $WQS "$OLD_WQS" || echo "# bench: $WERR"; }
	if [ -d $MO ] && [ -n "${OLD_REASONS:-}" ]; then
		write_sys $MO/engine none
		write_sys $MO/reasons "$OLD_REASONS" || echo "# bench: $WERR"
		[ -w "$MODBG/auto_split" ] && { write_sys "$MODBG/auto_split" "$OLD_SPLIT" || echo "# bench: $WERR"; }
		[ "$OLD_ENGINE" = none ] || write_sys $MO/engine "$OLD_ENGINE" || echo "# bench: $WERR"
	fi
	for _kv in $NRHP; do
		[ "$(cat "${_kv%=*}")" = "${_kv##*=}" ] || write_sys "${_kv%=*}" "${_kv##*=}" ||
			echo "# bench: $WERR"
	done
}
trap 'put_back; exit 130' INT TERM
if [ "${MO_HOST:-0}" != 1 ] && [ "${MO_WQ_SCOPE:-system}" != keep ] && [ -w $WQS ]; then
	OLD_WQS=$(cat $WQS)
	write_sys $WQS "${MO_WQ_SCOPE:-system}" || { echo "# bench: $WERR"; FAILED=$((FAILED + 1)); }
fi
TIER_ON=1
[ "${MO_TIER:-1}" = 0 ] && TIER_ON=0
echo "# bench: $MODE, kernel $(uname -r) ($VARIANT), $(nproc) cpus, nodes $NODES, size ${SIZE} MiB, reps $REPS"
emit "{\"mode\":\"run\",\"bench\":\"$MODE\",\"variant\":\"$VARIANT\",\"kernel\":\"$(uname -r)\",\"cpus\":$(nproc),\"nodes\":\"$NODES\",\"size_mb\":$SIZE,\"reps\":$REPS,\"configs\":\"$(echo $CONFS | tr ' ' ',')\",\"reasons\":\"$(json_str "$REASONS")\",\"tier\":$TIER_ON,\"wq_scope\":\"$(cat $WQS 2>/dev/null)\"}"

# Set every configuration up once: absent ones are reported and dropped.
OK_CONFS=
for c in $CONFS; do
	if configure "$c"; then
		OK_CONFS="$OK_CONFS $c"
		emit "{\"mode\":\"config\",\"config\":\"$c\",\"engine\":\"$ENGINE\",\"absent\":false,\"params\":\"$(json_str "$PARAMS")\"}"
	else
		echo "# $c: absent: $WHY"
		emit "{\"mode\":\"config\",\"config\":\"$c\",\"engine\":\"$ENGINE\",\"absent\":true,\"reason\":\"$(json_str "$WHY")\"}"
	fi
done
[ -d $MO ] && write_sys $MO/engine none

# use CONF: select it again before a part (another part may have changed it).
use() {
	configure "$1" && return 0
	echo "# $1: could not be selected again: $WHY"
	FAILED=$((FAILED + 1))
	return 1
}

first=${OK_CONFS# }
first=${first%% *}
if [ -n "$first" ]; then
	# the ceiling: one thread, and one per CPU (the parallelism there is)
	use "$first" && run_part "$first" "memcpy" memcpy --size "$SIZE" --reps "$REPS" --from 0 --to "$TO1"
	# mo_bench takes up to 64 threads
	_nt=$(nproc)
	[ "$_nt" -gt 64 ] && _nt=64
	[ "$_nt" -gt 1 ] && use "$first" &&
		run_part "$first" "memcpy x$_nt" memcpy --size "$SIZE" --reps "$REPS" \
			--from 0 --to "$TO1" --threads "$_nt"
	# how much of a 2M figure is the emulator (see mo_bench --help, alias)
	run_part "$first" "alias" alias --size "$SIZE" --reps "$REPS"
fi

# rotate N WORD...: the words, starting from the (N mod count)-th.
rotate() {
	_k=$(($1 % ($# - 1)))
	shift
	while [ "$_k" -gt 0 ]; do
		_f=$1
		shift
		set -- "$@" "$_f"
		_k=$((_k - 1))
	done
	echo "$@"
}

# interleave LABEL MODE ARGS...: $REPS passes, each running one repetition
# of every configuration in an order rotated by one from the last pass.
# Speed under emulation drifts in phases of seconds to minutes (the same
# 2M move took 0.2 s or 1.5 s within one boot); interleaving spreads every
# configuration over all phases, and its position within the boot too.
interleave() {
	_lab=$1
	shift
	[ -n "$OK_CONFS" ] || return 0
	_r=0
	while [ "$_r" -lt "$REPS" ]; do
		for c in $(rotate "$_r" $OK_CONFS); do
			use "$c" || continue
			_IREP=$_r
			if [ "${c%%-*}" = split ] && [ "$1" = tput ]; then
				# a run per folio size (mo_bench takes the last
				# --folio), so that its splits are counted per cell
				for _f in $(echo "$FOLIO" | tr ',' ' '); do
					SPLIT_CELL="\"folio_kb\":$_f,\"to\":${SPLIT_TO:-0},\"rep\":$_r,"
					run_part "$c" "$_lab" "$@" --folio "$_f" --reps 1 --first-rep "$_r"
				done
				SPLIT_CELL=
				continue
			fi
			run_part "$c" "$_lab" "$@" --reps 1 --first-rep "$_r"
		done
		_r=$((_r + 1))
	done
	_IREP=
}

for to in $(echo "$TO" | tr ',' ' '); do
	SPLIT_TO=$to
	interleave "tput 0->$to" tput --size "$SIZE" --from 0 --to "$to" --folio "$FOLIO" \
		${MO_TPUT_CPU:+--cpu "$MO_TPUT_CPU"}
done

# The same moves under a busy loop on every CPU (mo_bench tput --hog), for
# auto against none (the issue's goal: auto never below none on a busy
# machine) and mtcopy-2 (what a fixed threaded copy does there). Only the
# configurations the run has; none when auto is absent.
# auto and none both, or no part; never split (its records are the split
# goal's, per folio size).
HOG_CONFS=
if [ "${MO_HOG:-1}" != 0 ]; then
	for c in $(echo "${MO_HOG_ENGINES:-none,mtcopy-2,auto}" | tr ',' ' '); do
		[ "${c%%-*}" = split ] && continue
		case " $OK_CONFS " in *" $c "*) HOG_CONFS="$HOG_CONFS $c" ;; esac
	done
	case " $HOG_CONFS " in *" auto "*" none "*|*" none "*" auto "*) ;; *) HOG_CONFS= ;; esac
fi
if [ -n "$HOG_CONFS" ]; then
	_all=$OK_CONFS
	OK_CONFS=$HOG_CONFS
	_n0=$(grep -c . "$J")
	interleave "tput hog 0->$TO1" tput --hog --size "$SIZE" --from 0 --to "$TO1" \
		--folio "${MO_HOG_FOLIO:-$FOLIO}" ${MO_TPUT_CPU:+--cpu "$MO_TPUT_CPU"}
	OK_CONFS=$_all
	# every tput record of the part says it ran under hogs (a mo_bench
	# that ignored --hog would put them among the throughput cells)
	_untagged=$(tail -n +$((_n0 + 1)) "$J" | grep '"mode":"tput"' | grep -vc '"hog":true')
	if [ "$_untagged" != 0 ]; then
		echo "# tput hog: $_untagged record(s) without \"hog\":true"
		FAILED=$((FAILED + 1))
	fi
fi

# Tiering: kswapd demotes, NUMA balancing promotes, under a moving hot
# set; without and with a busy loop on every CPU. Rotated passes like
# interleave(), one repetition each.
if [ $TIER_ON = 1 ] && [ -n "$OK_CONFS" ]; then
	case $MODE in quick) _ts=${MO_TIER_SECONDS:-10} ;; *) _ts=${MO_TIER_SECONDS:-20} ;; esac
	_targs="--from ${MO_TIER_NODE:-0} --leave ${MO_TIER_LEAVE_MB:-256} --seconds $_ts --warmup ${MO_TIER_WARMUP:-5} --folio ${MO_TIER_FOLIO:-4}"
	[ -n "${MO_TIER_SCAN_MS:-}" ] && _targs="$_targs --scan-ms $MO_TIER_SCAN_MS"
	[ -n "${MO_TIER_HOT_MS:-}" ] && _targs="$_targs --hot-ms $MO_TIER_HOT_MS"
	# the guest's own tmpfs pages pushed down first (mo_bench --squeeze):
	# never on a real machine, whose other tenants it would reclaim
	[ "${MO_HOST:-0}" = 1 ] || _targs="$_targs --squeeze"
	# The migration reasons as the kernel had them (its default leaves NUMA
	# hinting promotions on the per-folio path), unless MO_TIER_REASONS.
	[ -d $MO ] && write_sys $MO/reasons "${MO_TIER_REASONS:-$OLD_REASONS}"
	_r=0
	while [ "$_r" -lt "${MO_TIER_REPS:-1}" ]; do
		for hog in "" --hog; do
			for c in $(rotate "$_r" $OK_CONFS); do
				use "$c" || continue
				# shellcheck disable=SC2086
				run_part "$c" "tiering${hog:+ hog}" tiering $_targs $hog --reps 1 --first-rep "$_r"
			done
		done
		_r=$((_r + 1))
	done
	[ -d $MO ] && write_sys $MO/reasons all
fi

if [ "$MODE" = full ]; then
	interleave "count 0->$TO1" count --from 0 --to "$TO1" --folios "$COUNT" \
		${MO_TPUT_CPU:+--cpu "$MO_TPUT_CPU"}
	interleave "latency 0->$TO1" latency --from 0 --to "$TO1" \
		--pages "$LAT_PAGES" --folios "$LAT_FOLIOS"
	for trig in $(echo "$CTRIG" | tr ',' ' '); do
		for hog in "" --hog; do
			for c in $OK_CONFS; do
				case " $COMPACT " in *" $c "*) ;; *) continue ;; esac
				use "$c" || continue
				run_part "$c" "compaction $trig${hog:+ hog}" compaction \
					--node "$CNODE" --fill-pct "$FILL" --trigger "$trig" $hog
			done
		done
	done
fi

# ------------------------------------------------------- phase profile

TR=/sys/kernel/tracing
PEVS="mm_migrate_batch_phases mm_migrate_folio_copy mm_migrate_batch_copy"
# profile_one CONF FOLIO_KB: one traced tput run of CONF at FOLIO_KB; the
# events of its timed move (between mo_bench's "move begin" and "move end"
# trace markers, mo_bench's own) summed into one "profile" JSON line. The
# line fails the run unless the events cover the move (pages), every page
# unmapped was copied (batch or per-folio copy), the phases fit in the
# move's time, no event was lost and the data verified.
profile_one() {
	echo > $TR/trace
	for _e in $PEVS; do echo 1 > $TR/events/migrate/$_e/enable || FAILED=$((FAILED + 1)); done
	# dcbm's own steps, where its module is loaded (it fires only for dcbm)
	_dbe=$TR/events/dcbm/dcbm_batch/enable
	[ -e $_dbe ] && echo 1 > $_dbe
	# mtcopy's helpers: queued by the mover, and how many ran before it
	# had taken their chunks itself. Both events or neither (the filters
	# need mtcopy loaded): one alone would read as "no helpers".
	_wqe="workqueue_queue_work workqueue_execute_start" _wqt=1
	for _w in $_wqe; do
		echo 'function.function == mtcopy_work_fn' > $TR/events/workqueue/$_w/filter 2>/dev/null ||
			_wqt=0
	done
	if [ $_wqt = 1 ]; then
		for _w in $_wqe; do echo 1 > $TR/events/workqueue/$_w/enable; done
	fi
	"$MB" tput --size "$SIZE" --from 0 --to "$TO1" --folio "$2" --reps 1 \
		--first-rep "$REPS" --config "$1" > "$WORK/prof.jsonl" 2> "$WORK/prof.err"
	_rc=$?
	for _e in $PEVS; do echo 0 > $TR/events/migrate/$_e/enable; done
	[ -e $_dbe ] && echo 0 > $_dbe
	for _w in $_wqe; do
		echo 0 > $TR/events/workqueue/$_w/enable 2>/dev/null
		echo 0 > $TR/events/workqueue/$_w/filter 2>/dev/null
	done
	_lost=$(awk '/^# entries-in-buffer/ { split($3, a, "/"); print a[2] - a[1] }' $TR/trace)
	# the mover's events, and the helpers' starts (in their kworkers)
	grep -e " mo_bench-[0-9]* " -e "workqueue_execute_start: .*function mtcopy_work_fn" \
		$TR/trace > "$WORK/prof.trace"
	_tp=$(grep '"mode":"tput"' "$WORK/prof.jsonl" | head -1)
	_gb=$(echo "$_tp" | awk "$AWK_JV"'{ v = jv($0, "gbps"); print v == "" ? "null" : v }')
	_sec=$(echo "$_tp" | awk "$AWK_JV"'{ v = jv($0, "seconds"); print v == "" ? "null" : v }')
	# the pages that really moved (not those that stayed behind)
	_moved=$(echo "$_tp" | awk "$AWK_JV"'{ print jv($0, "pages") - jv($0, "stayed_behind") }')
	_ver=$(echo "$_tp" | awk "$AWK_JV"'{ v = jv($0, "verified"); print v == "" ? "false" : v }')
	[ "$_rc" = 0 ] || _ver=false
	[ "$_ver" = true ] || { FAILED=$((FAILED + 1)); echo "# $1 profile ${2}K: data NOT verified (exit $_rc)"; sed 's/^/#   /' "$WORK/prof.err" | head -5; }
	awk -v conf="$1" -v eng="$ENGINE" -v kb="$2" -v size=$((SIZE * 1048576)) -v wqt=$_wqt \
	    -v lost="${_lost:-null}" -v gb="$_gb" -v sec="$_sec" -v ver="$_ver" '
	function f(name,   i) {
		for (i = 1; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2) + 0
		return 0
	}
	/tracing_mark_write: mo_bench: move begin/ { on = 1; marks++; next }
	/tracing_mark_write: mo_bench: move end/ { on = 0; marks++; next }
	!on { next }
	/mm_migrate_batch_phases:/ { nb++; pg += f("pages"); un += f("unmap_ns"); fl += f("flush_ns")
		cp += f("copy_ns"); mv += f("move_ns") }
	/mm_migrate_folio_copy:/ { nf++; fp += f("pages"); fn += f("ns") }
	/mm_migrate_batch_copy:/ { nc++; bn += f("ns"); be += f("engine_ns")
		bp += f("engine_pages") + f("cpu_pages"); ep += f("engine_pages") }
	# a helper the mover queued ("work struct=P"), started ("work struct P:")
	/workqueue_queue_work:/ { if (match($0, /work struct=[^ ]*/)) { q[substr($0, RSTART + 12, RLENGTH - 12)] = 1; hq++ } }
	/workqueue_execute_start:/ { if (match($0, /work struct [^ :]*/) && (substr($0, RSTART + 12, RLENGTH - 12) in q)) hr++ }
	/dcbm_batch:/ { db++; df += f("folios"); dd += f("descriptors"); dpl += f("plan_ns")
		dsu += f("submit_ns"); dwa += f("wait_ns"); dte += f("teardown_ns") }
	END {
		printf "{\"mode\":\"profile\",\"config\":\"%s\",\"engine\":\"%s\",\"folio_kb\":%d,\"size_bytes\":%d,", conf, eng, kb, size
		printf "\"markers\":%d,\"seconds\":%s,\"batches\":%d,\"pages\":%d,\"unmap_ns\":%.0f,\"flush_ns\":%.0f,\"copy_ns\":%.0f,\"move_ns\":%.0f,", marks, sec, nb, pg, un, fl, cp, mv
		printf "\"folio_copies\":%d,\"folio_copy_pages\":%d,\"folio_copy_ns\":%.0f,", nf, fp, fn
		printf "\"batch_copies\":%d,\"batch_copy_pages\":%d,\"engine_pages\":%d,\"batch_copy_ns\":%.0f,\"engine_ns\":%.0f,", nc, bp, ep, bn, be
		printf "\"dcbm_batches\":%d,\"dcbm_folios\":%d,\"dcbm_descriptors\":%d,\"dcbm_plan_ns\":%.0f,\"dcbm_submit_ns\":%.0f,\"dcbm_wait_ns\":%.0f,\"dcbm_teardown_ns\":%.0f,", db, df, dd, dpl, dsu, dwa, dte
		if (wqt) printf "\"helpers_queued\":%d,\"helpers_ran\":%d,", hq, hr
		else printf "\"helpers_queued\":null,\"helpers_ran\":null,"
		printf "\"lost_events\":%s,\"traced_gbps\":%s,\"verified\":%s}\n", lost, gb, ver
	}' "$WORK/prof.trace" > "$WORK/prof.line"
	cat "$WORK/prof.line" >> "$J"
	NMEAS=$((NMEAS + 1))
	[ "${_lost:-x}" = 0 ] || { FAILED=$((FAILED + 1)); echo "# $1 profile ${2}K: ${_lost:-unknown} trace events lost"; }
	# The checks and the human line: shares of the summed phase times.
	awk -v conf="$1" -v fkb="$2" -v want="${_moved:-1}" "$AWK_JV"'{
		u = jv($0, "unmap_ns"); f = jv($0, "flush_ns"); c = jv($0, "copy_ns") + jv($0, "folio_copy_ns")
		m = jv($0, "move_ns") - jv($0, "folio_copy_ns"); t = u + f + jv($0, "copy_ns") + jv($0, "move_ns")
		pg = jv($0, "pages") + 0; cpg = jv($0, "batch_copy_pages") + jv($0, "folio_copy_pages")
		if (jv($0, "markers") != 2) why = why " markers " jv($0, "markers") " (want 2)"
		if (pg < want || want < 1) why = why " phase events cover " pg " of " want " moved pages"
		if (cpg < pg) why = why " " cpg " pages copied of " pg " unmapped"
		if (m < 0) why = why " per-folio copies longer than the move phase"
		if (t <= 0 || t > jv($0, "seconds") * 1e9) why = why " phases " t " ns for a move of " jv($0, "seconds") " s"
		if (why != "") { printf "# %s profile %sK: INCONSISTENT:%s\n", conf, fkb, why; exit 1 }
		printf "# %s profile %sK: unmap %.0f%% flush %.0f%% copy %.0f%% move %.0f%%; copy %.2f GB/s, at most %.2fx from a free copy\n",
			conf, fkb, 100 * u / t, 100 * f / t, 100 * c / t, 100 * m / t,
			(c > 0 ? cpg * 4096 / c : 0), (c < t ? t / (t - c) : 0)
	}' "$WORK/prof.line" || FAILED=$((FAILED + 1))
}

if [ -d $MO ] && [ "${MO_PROFILE:-1}" != 0 ]; then
	if [ -e $TR/events/migrate/mm_migrate_batch_phases/enable ] ||
	   mount -t tracefs tracefs $TR 2>/dev/null && [ -e $TR/events/migrate/mm_migrate_batch_phases/enable ]; then
		# "7 (expanded: 1408)" before first use: the number alone
		_obuf=$(cut -d' ' -f1 $TR/buffer_size_kb) _oon=$(cat $TR/tracing_on)
		echo 16384 > $TR/buffer_size_kb
		echo 1 > $TR/tracing_on
		for f in $(echo "$FOLIO" | tr ',' ' '); do
			for c in $OK_CONFS; do
				use "$c" && profile_one "$c" "$f"
			done
		done
		echo "$_obuf" > $TR/buffer_size_kb
		echo "$_oon" > $TR/tracing_on
	else
		# the series has it: a patched kernel without it is a failure
		echo "# profile: no mm_migrate_batch_phases tracepoint in this kernel (tracefs and trace events needed; MO_PROFILE=0 to go without)"
		FAILED=$((FAILED + 1))
		emit "{\"mode\":\"profile\",\"skipped\":true,\"reason\":\"no mm_migrate_batch_phases tracepoint\"}"
	fi
fi

# ---------------------------------------------------------------- the end

if [ -d $MO ]; then
	write_sys $MO/engine none
	for m in $LOADED; do rmmod "$m" 2>/dev/null; done
fi
put_back
trap - INT TERM

final_summary "$J" "$first"

echo "# $NMEAS measurement lines, $(since "$T_START") s in all; file: $J"
if [ "${MO_SEND:-1}" != 0 ]; then
	echo "@@MO-FILE-BEGIN bench.jsonl"
	base64 "$J"
	echo "@@MO-FILE-END bench.jsonl size=$(wc -c < "$J" | tr -d ' ') sha256=$(sha256sum "$J" | cut -d' ' -f1)"
fi
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
