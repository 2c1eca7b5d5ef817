# Shared helpers for the guest suites (busybox sh): TAP output, sysfs and
# module handling, vmstat deltas. Sourced, not run.

MO=/sys/kernel/mm/migrate_offload
MODDIR=/lib/modules/$(uname -r)/kernel
BIN=$(cd "$(dirname "$0")/.." && pwd)
T_N=0
T_FAIL=0

t_ok() { T_N=$((T_N + 1)); echo "ok $T_N $*"; }
t_notok() { T_N=$((T_N + 1)); T_FAIL=$((T_FAIL + 1)); echo "not ok $T_N $*"; }
# t_check NAME CONDITION-COMMAND...: ok if the command succeeds.
# Returns 1 on failure, so that "t_check ... || show_why" works.
t_check() { _n=$1; shift; if "$@"; then t_ok "$_n"; else t_notok "$_n"; return 1; fi; }
t_diag() { echo "# $*"; }
t_done() { echo "1..$T_N"; [ "$T_FAIL" = 0 ]; exit $?; }

mod_path() {
	case $1 in
	swdma) echo "$MODDIR/drivers/dma/swdma.ko" ;;
	*) echo "$MODDIR/drivers/migrate_offload/$1.ko" ;;
	esac
}
mod_loaded() { [ -d "/sys/module/$1" ]; }
# A built-in "module" has a /sys/module directory (its parameters) but no
# initstate, and no .ko to load.
mod_builtin() { [ -d "/sys/module/$1" ] && [ ! -e "/sys/module/$1/initstate" ]; }
# mod_load MODULE [PARAM=VALUE...]: insmod; built in, set each parameter
# at run time, or require the value it was booted with (read-only ones).
mod_load() {
	_m=$1; shift
	if ! mod_builtin "$_m"; then
		insmod "$(mod_path "$_m")" "$@"
		return
	fi
	for _kv in "$@"; do
		_f=/sys/module/$_m/parameters/${_kv%%=*}
		[ "$(cat "$_f" 2>/dev/null)" = "${_kv#*=}" ] && continue
		echo "${_kv#*=}" > "$_f" 2>/dev/null && continue
		echo "# built-in $_m: cannot set ${_kv} (boot with $_m.${_kv})"
		return 1
	done
}
# Built in, there is nothing to unload: success.
mod_unload() { ! mod_loaded "$1" || mod_builtin "$1" || rmmod "$1"; }

# The test scope: ci (make test) or full (make test-full, and the default
# for a suite booted by hand); init.sh exports it from mo.scope=.
MO_SCOPE=${MO_SCOPE:-full}
# in_scope FULL CI: FULL in the full scope, CI in the ci scope (a count, a size).
in_scope() { if [ "$MO_SCOPE" = ci ]; then echo "$2"; else echo "$1"; fi; }
# reason_engines: sets REASON_ENGINES, the engines of the scope
# (lib/engines.list), OFF_ENGINE, the one that also runs the windows
# with a reason removed, and WHOLE_MATRIX (yes: the scope is on the
# list's matrix line, every reason with every engine); bails out of the
# suite if the scope has none.
# engines_line NAME: the words of lib/engines.list's NAME line(s).
engines_line() { sed -n "s/[ 	]*#.*//; s/^$1: *//p" "$BIN/lib/engines.list" 2>/dev/null; }
reason_engines() {
	REASON_ENGINES=$(engines_line "$MO_SCOPE")
	case " $(engines_line matrix) " in
	*" $MO_SCOPE "*) WHOLE_MATRIX=yes ;;
	*) WHOLE_MATRIX=no ;;
	esac
	OFF_ENGINE=$(for _e in $REASON_ENGINES; do [ $_e != none ] && echo $_e && break; done)
	if [ -z "$OFF_ENGINE" ]; then
		echo "Bail out! no engine but none for scope '$MO_SCOPE' in $BIN/lib/engines.list"
		exit 1
	fi
	t_diag "scope $MO_SCOPE: engines $REASON_ENGINES; reasons removed with $OFF_ENGINE"
}

engine_active() { sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$MO/engine"; }
engine_set() { echo "$1" > "$MO/engine"; }

param() { cat "/sys/module/$1/parameters/$2"; }
# param_rejects MODULE PARAM VALUE: the write fails and the value stays.
param_rejects() {
	[ -e "/sys/module/$1/parameters/$2" ] || { t_diag "no $1.$2"; return 1; }
	_old=$(param "$1" "$2")
	if printf '%s' "$3" > "/sys/module/$1/parameters/$2" 2>/dev/null; then
		t_diag "$1.$2 accepted '$3'"
		return 1
	fi
	[ "$(param "$1" "$2")" = "$_old" ] || { t_diag "$1.$2 changed to $(param "$1" "$2")"; return 1; }
}

# vm COUNTER: its value in /proc/vmstat. A counter that is absent (a kernel
# without the series' counters) would read as 0 and every delta as "nothing
# happened": bail out of the suite instead (stderr reaches the console).
vm() {
	awk -v k="$1" '$1 == k { print $2; found = 1 } END { exit !found }' /proc/vmstat && return
	echo "Bail out! /proc/vmstat has no $1" >&2
	echo "no-counter-$1"
	return 1
}

# kv FILE KEY: the value of KEY=value lines in FILE.
kv() { sed -n "s/^$2=//p" "$1"; }

# tap_passed FILE: the TAP 13 output of a test program in FILE ran and
# passed: a plan "1..N", N results, every one "ok" and none with a SKIP
# directive ("ok 3 name # SKIP why", as the kselftest harness prints it: a
# skip exits 0 there). Prints one diagnostic line with the counts.
tap_passed() {
	awk '
	/^1\.\.[0-9]+/ { plan = substr($1, 4) + 0; planned = 1 }
	/^not ok/ { fail++; next }
	/^ok / { if ($0 ~ /[ \t]#[ \t]*[Ss][Kk][Ii][Pp]/) skip++; else pass++ }
	END {
		printf "# tap: %d passed, %d failed, %d skipped, plan %s\n",
			pass, fail, skip, planned ? plan : "none"
		exit !(planned && pass > 0 && !fail && !skip && pass == plan)
	}' "$1"
}

# MO_<NAME>=<value> arguments (the lab's mo.args) become environment.
for _a in "$@"; do
	case $_a in
	MO_[A-Z]*=*) export "$_a" ;;
	esac
done

# dcbm_trace_on, then dcbm_trace_off FILE: the dcbm:dcbm_batch events in
# between (one per batch dcbm got channels for) go to FILE, one per line:
# "folios=.. bytes=.. runs=.. descriptors=.. ...". Fails without the event.
DCBM_EV=/sys/kernel/tracing/events/dcbm/dcbm_batch
dcbm_trace_on() {
	[ -e /sys/kernel/tracing/trace ] || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
	[ -e $DCBM_EV/enable ] || return 1
	echo 1 > /sys/kernel/tracing/tracing_on
	echo > /sys/kernel/tracing/trace && echo 1 > $DCBM_EV/enable
}
dcbm_trace_off() {
	echo 0 > $DCBM_EV/enable 2>/dev/null
	grep -o 'dcbm_batch: .*' /sys/kernel/tracing/trace | sed 's/^dcbm_batch: //' > "$1"
}
# dcbm_batches FILE PATTERN: how many of FILE's events match PATTERN
# (e.g. "folios=1 bytes=2097152 runs=4 descriptors=32 ").
dcbm_batches() { grep -c -e "$2" "$1"; }

# auto_model ENGINE COLUMN: a column of /sys/kernel/debug/migrate_offload/
# auto_model (3 batch_ns, 4 folio_ns, 6 samples, 7 chosen, 8 not_ready)
# summed over the engine's rows (one per folio size); 0 without rows.
auto_model() {
	awk -v e="$1" -v c="$2" '$1 == e { s += $c } END { print s + 0 }' \
		/sys/kernel/debug/migrate_offload/auto_model
}
