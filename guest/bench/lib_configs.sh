# SPDX-License-Identifier: GPL-2.0
#
# lib_configs.sh, sourced by run_bench.sh (the bench suite): the engine
# configurations (modules loaded, each configuration selected and checked)
# and the machine settings the run changes and puts back.

# mod_path NAME: the module's file in this kernel's tree.
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

# configs_set_up: every configuration set up once (OK_CONFS: those that
# could be; the others are reported and dropped), a "config" record each.
configs_set_up() {
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
}

# use CONF: select it again before a part (another part may have changed it).
use() {
	configure "$1" && return 0
	echo "# $1: could not be selected again: $WHY"
	FAILED=$((FAILED + 1))
	return 1
}

# bench_configs: the configurations the bench runs by default, the
# "bench:" line of lib/engines.list (lab/molab/matrix.py reads the same
# line as BENCH_CONFIGS), read as mo_lib.sh's reason_engines reads a scope.
bench_configs() { sed -n 's/[ 	]*#.*//; s/^bench: *//p' "$ENGINE_LIST" 2>/dev/null; }

# settings_take: the variant, the configurations to run and those that
# also run compaction; the settings the run changes saved for put_back,
# the engine and reasons set for the run.
settings_take() {
	if [ -d $MO ]; then
		VARIANT=patched
		CONFS=$(echo "${MO_ENGINES:-$(bench_configs)}" | tr ',' ' ')
		if [ -z "$CONFS" ]; then
			echo "# bench: no configuration: MO_ENGINES unset and no \"bench:\" line in $ENGINE_LIST"
			FAILED=$((FAILED + 1))
		fi
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
}

# The lab's QEMU topology makes each vCPU its own LLC and node, so the
# default "cache" affinity scope of unbound workqueues runs a work item on
# the CPU that queued it: swdma's channels, which stand in for a device
# copying beside the CPUs, copied on the migrating CPU (a split's two parts
# then took turns on one vCPU). In a VM one pod spans the machine, for
# every configuration and both kernels; a real machine keeps its own.
WQS=/sys/module/workqueue/parameters/default_affinity_scope OLD_WQS=
# put_back: the settings as they were found (at the end, and when the run
# is interrupted).
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

# wq_scope_set: the workqueue scope of the run (MO_WQ_SCOPE), in a VM.
wq_scope_set() {
	if [ "${MO_HOST:-0}" != 1 ] && [ "${MO_WQ_SCOPE:-system}" != keep ] && [ -w $WQS ]; then
		OLD_WQS=$(cat $WQS)
		write_sys $WQS "${MO_WQ_SCOPE:-system}" || { echo "# bench: $WERR"; FAILED=$((FAILED + 1)); }
	fi
}

# engines_unload: no engine selected; the modules the run loaded unloaded.
engines_unload() {
	if [ -d $MO ]; then
		write_sys $MO/engine none
		for m in $LOADED; do rmmod "$m" 2>/dev/null; done
	fi
}
