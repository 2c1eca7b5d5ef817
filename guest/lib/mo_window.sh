# Trace windows for suites that drive a migration reason for real
# (tiering, reasons): around each action, /proc/vmstat before and after
# and the migrate:mm_migrate_pages and migrate:mm_migrate_batch_copy
# events in between; then the checks that the action's migrations of a
# reason went through the selected engine's batch copy, or, with the
# reason removed from migrate_offload/reasons, did not.
# Sourced after mo_lib.sh. The suite sets TR (tracefs), EVM and EVB (the
# two events' directories), W (a scratch directory), HAVE_EVB (yes when
# the batch event exists; no: counters only) and MO.

snap() { cat /proc/vmstat > "$1"; }
# delta FROM TO COUNTER: its rise; pgdemote sums every pgdemote_* counter.
delta() {
	awk -v k="$3" 'FNR == 1 { f++ }
		(k == "pgdemote" ? ($1 ~ /^pgdemote_/) : ($1 == k)) { v[f] += $2; seen[f] = 1 }
		END { if (!seen[1] || !seen[2]) { print "no-counter-" k; exit 1 } print v[2] - v[1] }' "$1" "$2"
}
# Two counter windows around the events' window: before/after hold it
# (a migration copies its batch before its mm_migrate_pages event, so one
# whose event falls inside has its copy counted even when it was under way
# at an edge: "at least" checks), before_in/after_in lie within it (every
# copy counted has its batch event inside: "at most" checks). NUMA
# balancing keeps migrating through both edges; with one window between
# the two, KASAN's slowness showed copied +1181 for 1182 pages migrated.
window_start() {
	echo 0 > $TR/tracing_on
	echo > $TR/trace
	snap $W/before
	# batch events first: a migration whose mm_migrate_pages event is in
	# the window must have its batch event there too
	[ $HAVE_EVB = yes ] && echo 1 > $EVB/enable
	echo 1 > $EVM/enable
	echo 1 > $TR/tracing_on
	# a batch copy under way as the events came on is counted before
	# before_in, not after it
	usleep 500000 2>/dev/null || sleep 1
	snap $W/before_in
}
# window_end: OVERRUN holds the events the trace buffer lost.
window_end() {
	snap $W/after_in
	echo 0 > $EVM/enable
	[ $HAVE_EVB = yes ] && echo 0 > $EVB/enable
	snap $W/after
	cat $TR/trace > $W/trace
	_ov=$(awk '$1 == "overrun:" { s += $2 } $1 == "commit" && $2 == "overrun:" { s += $3 }
		$1 == "dropped" && $2 == "events:" { s += $3 } END { print s + 0 }' $TR/per_cpu/cpu*/stats)
	[ "$_ov" = 0 ] || t_diag "trace buffer overran: $_ov events lost"
	OVERRUN=$_ov
}
# tcalc NAME EVENT FIELD FILTER [NAME EVENT FIELD FILTER ...]: in one pass
# over the window's trace (a CMA window holds tens of thousands of events,
# and each pass costs seconds under emulation), for each quadruple, over
# the EVENT lines (k=v fields) that match FILTER (an awk condition on
# f["key"]; f["pid"] and f["comm"] are the task's pid and name), the sum
# of FIELD, or with FIELD "n" their number, with "max_folios" the largest
# folios; printed as NAME=VALUE lines, one per quadruple, in their order.
tcalc() {
	_tc_prog= _tc_names= _tc_i=0
	while [ $# -ge 4 ]; do
		_tc_i=$((_tc_i + 1))
		case $3 in
		n) _tc_acc="v[$_tc_i]++" ;;
		max_folios) _tc_acc="if (f[\"folios\"] + 0 > v[$_tc_i]) v[$_tc_i] = f[\"folios\"] + 0" ;;
		*) _tc_acc="v[$_tc_i] += f[\"$3\"]" ;;
		esac
		_tc_prog="$_tc_prog
		if (index(\$0, \"$2:\") && ($4)) { $_tc_acc }"
		_tc_names="$_tc_names $1"
		shift 4
	done
	[ $# = 0 ] || { echo "tcalc: arguments come in fours (NAME EVENT FIELD FILTER), $# left" >&2; return 1; }
	awk -v names="$_tc_names" '
	!/^#/ {
		split("", f)
		for (i = 1; i <= NF; i++) {
			if ((p = index($i, "=")) > 1) f[substr($i, 1, p - 1)] = substr($i, p + 1)
			else if (i > 1 && !("pid" in f) && $i ~ /^\[[0-9]+\]$/ && match($(i - 1), /-[0-9]+$/)) {
				f["pid"] = substr($(i - 1), RSTART + 1)
				f["comm"] = substr($(i - 1), 1, RSTART - 1)
			}
		}
		'"$_tc_prog"'
	}
	END { k = split(names, nm, " "); for (j = 1; j <= k; j++) print nm[j] "=" v[j] + 0 }' $W/trace
}
# teval NAME EVENT FIELD FILTER ...: tcalc's values as shell variables (the
# names must start with "_"). A tcalc that fails or misses a value is a
# failed test and returns 1: the caller then judges nothing of the window
# (its variables may hold an earlier window's values).
teval() {
	_te_n=$(($# / 4))
	if _te_out=$(tcalc "$@") &&
	   [ "$(printf '%s\n' "$_te_out" | grep -c '^_[a-z0-9_]*=-\{0,1\}[0-9][0-9]*$')" = $_te_n ]; then
		eval "$_te_out"
		return 0
	fi
	t_notok "the trace window read back ($_te_n values from $W/trace)"
	return 1
}
# tsum EVENT FIELD FILTER: one tcalc quadruple, its value alone.
tsum() { tcalc x "$1" "$2" "$3" | sed 's/^x=//'; }
mig() { tsum mm_migrate_pages nr_succeeded "$1"; }
bce() { tsum mm_migrate_batch_copy "$@"; }

# Rows of the reason x engine matrix the lab prints (lab/molab/matrix.py):
# mrow ENGINE REASON on|off MIGRATED BATCHED ENGINE_PAGES CPU_PAGES, one
# per window; bytes_row ENGINE REASONS FILE, what the test program that
# ran under those reasons (comma separated) verified, from its output FILE
# (bytes_checked=, bad_bytes=; absent values are reported as -1). Each
# row goes to the console and to MO_OUTDIR/matrix.rows, which the guest's
# init sends back whole (a kernel message can split a console line).
_row() { echo "# $*"; [ -z "$MO_OUTDIR" ] || echo "$*" >> "$MO_OUTDIR/matrix.rows"; }
mrow() { _row "@@MO-ROW engine=$1 reason=$2 batched=$3 migrated=$4 batch_pages=$5 engine_pages=$6 cpu_pages=$7"; }
bytes_row() {
	_row "@@MO-BYTES engine=$1 reasons=$2 bytes=$(kv "$3" bytes_checked | tail -1 | grep . || echo -1) bad=$(kv "$3" bad_bytes | tail -1 | grep . || echo -1)"
}

# (Locals start with "_" but never "_n": t_check uses that one.)
# batch_checks ENGINE REASON STEP [MIN]: with REASON batched, the window
# proves the batch copy for it. STEP: what the migration was, for the
# names; MIN: pages the action must have migrated (default 1). With
# WIN_PID set, only that task's events count (the suite's shell writing
# to a compact or CMA file, not direct compaction meanwhile); with WIN_COMM,
# only the events of tasks of that name (a test program's threads). DCBM_EP adds
# up dcbm's engine pages (for its own counter).
win_sel() {
	echo "f[\"reason\"] == \"$1\"${WIN_PID:+ && f[\"pid\"] == \"$WIN_PID\"}${WIN_COMM:+ && f[\"comm\"] == \"$WIN_COMM\"}"
}
batch_checks() {
	_e=$1 _r=$2 _s=$3 _min=${4:-1}
	_sel=$(win_sel $_r)
	# The matrix counts only the selected engine's batches.
	_sele="$_sel && f[\"engine\"] == \"$_e\""
	_B=mm_migrate_batch_copy
	teval _mig mm_migrate_pages nr_succeeded "$_sel" _all mm_migrate_pages nr_succeeded 1 \
		_n1 $_B n 1 _nev $_B n "$_sel" _pg $_B pages "$_sel" _ep $_B engine_pages "$_sel" \
		_cpu $_B cpu_pages "$_sel" _mx $_B max_folios "$_sel" _en $_B n "$_sele" \
		_lp $_B lost "$_sel" _po $_B poisoned "$_sel" _spg $_B pages "$_sele" \
		_sep $_B engine_pages "$_sele" _scpu $_B cpu_pages "$_sele" || return 1
	_cp=$(delta $W/before $W/after pgmigrate_batch_copied)
	_fb=$(delta $W/before $W/after pgmigrate_batch_fallback)
	# Copies thrown away (a folio that failed after its batch copy and was
	# copied again per folio) do not count as the batch path taken.
	# wasted copies are subtracted from an "at least": count them inside
	_wa=$(delta $W/before_in $W/after_in pgmigrate_batch_wasted) || _wa=$_cp
	if [ $_e = none ]; then
		mrow $_e $_r on "$_mig" "$_pg" 0 "$_cpu"
		t_diag "$_s: $_mig pages migrated (reason $_r), batch copied $_cp, $_n1 batch events"
		t_check "none: $_s migrated pages (reason $_r: $_mig >= $_min)" [ "$_mig" -ge "$_min" ]
		t_check "none: $_s not batched (pgmigrate_batch_copied +$_cp, no batch event)" \
			[ "$_cp" = 0 -a "$_n1" = 0 ]
		return
	fi
	if [ $HAVE_EVB = no ]; then
		# Counters alone: every page of the window's migrations copied
		# in the batch step, and the reason migrated pages.
		t_diag "$_s: $_mig pages migrated (reason $_r) of $_all; batch copied $_cp"
		t_check "$_e: $_s batched (counters: copied $_cp - wasted $_wa >= migrated $_all, $_mig >= $_min)" \
			[ "$_mig" -ge "$_min" -a $((_cp - _wa)) -ge "$_all" ]
		return
	fi
	mrow $_e $_r on "$_mig" "$_spg" "$_sep" "$_scpu"
	t_diag "$_s: $_mig pages migrated (reason $_r); $_nev batch events: $_pg pages, engine $_e $_ep, cpu $_cpu, at most $_mx folios; pgmigrate_batch_copied +$_cp, fallback +$_fb"
	t_check "$_e: $_s went through the batch copy ($_pg batched pages >= $_mig migrated >= $_min)" \
		[ "$_mig" -ge "$_min" -a "$_pg" -ge "$_mig" -a "$OVERRUN" = 0 ]
	t_check "$_e: $_s batches run by engine $_e ($_en of $_nev events)" \
		[ "$_nev" -gt 0 -a "$_en" = "$_nev" ]
	t_check "$_e: $_s counted (pgmigrate_batch_copied +$_cp - wasted $_wa >= $_mig)" \
		[ $((_cp - _wa)) -ge "$_mig" ]
	[ "$_e" = dcbm ] && DCBM_EP=$((${DCBM_EP:-0} + _ep))
	_lp=$((_lp + _po))
	t_check "$_e: $_s nothing lost or poisoned ($_lp)" [ "$_lp" = 0 ]
	if [ $_e = cpu ]; then
		t_check "cpu: $_s copied by the CPU ($_cpu of $_pg pages)" [ "$_cpu" = "$_pg" -a "$_ep" = 0 ]
	else
		# An engine may leave a few pairs to the CPU (a busy channel),
		# never most of them (ENGINE_SHARE percent, default 90; a suite
		# that migrates from several tasks at once may lower it); and the
		# fallback counter says how many.
		_sh=${ENGINE_SHARE:-90}
		t_check "$_e: $_s copied by the engine itself ($_ep engine pages of $_pg, $_cpu cpu; at least $_sh%)" \
			[ "$_ep" -gt 0 -a $((_ep * 100)) -ge $((_pg * _sh)) -a $((_ep + _cpu)) = "$_pg" ]
		t_check "$_e: $_s CPU fallback counted (pgmigrate_batch_fallback +$_fb >= $_cpu)" \
			[ "$_fb" -ge "$_cpu" ]
	fi
	# The reasons that migrate one folio at a time while a task waits.
	case $_r in
	numa_misplaced|memory_failure)
		t_check "$_e: $_s batches hold one folio each (at most $_mx)" [ "$_mx" = 1 ] ;;
	esac
}
# filter_checks ENGINE REASON STEP [MIN]: REASON not batched, its
# migrations (at least MIN pages) go on.
filter_checks() {
	_e=$1 _r=$2 _s=$3 _min=${4:-1}
	_B=mm_migrate_batch_copy _is="f[\"reason\"] == \"$_r\"" _isnt="f[\"reason\"] != \"$_r\""
	teval _mig mm_migrate_pages nr_succeeded "$(win_sel $_r)" \
		_othm mm_migrate_pages nr_succeeded "$_isnt" _nev $_B n "$_is" _oth $_B pages "$_isnt" \
		_rpg $_B pages "$_is" _rep $_B engine_pages "$_is" _rcpu $_B cpu_pages "$_is" || return 1
	# at most: copies whose events are inside the window
	_cp=$(delta $W/before_in $W/after_in pgmigrate_batch_copied)
	if [ $HAVE_EVB = no ]; then
		t_diag "$_s, $_r not in reasons: $_mig pages migrated, $_othm by other reasons; batch copied $_cp"
		t_check "$_e: $_s with $_r removed not batched (copied $_cp, other reasons migrated $_othm)" \
			[ "$_mig" -ge "$_min" -a "$_cp" -le "$_othm" ]
		return
	fi
	t_check "$_e: $_s reasons reads back without $_r" sh -c "! grep -qw $_r $MO/reasons"
	mrow $_e $_r off "$_mig" "$_rpg" "$_rep" "$_rcpu"
	t_diag "$_s, $_r not in reasons: $_mig pages migrated; $_nev batch events of $_r; other reasons batched $_oth pages; pgmigrate_batch_copied +$_cp"
	t_check "$_e: $_s still migrates with $_r removed from reasons ($_mig pages >= $_min)" [ "$_mig" -ge "$_min" ]
	t_check "$_e: $_s not batched with $_r removed ($_nev events; copied $_cp <= $_oth of other reasons)" \
		[ "$_nev" = 0 -a "$_cp" -le "$_oth" -a "$OVERRUN" = 0 ]
}
# checks ENGINE on|off REASON STEP [MIN]: batch_checks or filter_checks.
checks() { if [ $2 = on ]; then batch_checks $1 $3 "$4" $5; else filter_checks $1 $3 "$4" $5; fi; }
# without REASON: the reasons of ALL (the suite's "all" read back from
# migrate_offload/reasons) but REASON, comma separated.
without() { echo "${ALL:?}" | awk -v x="$1" -F, '{ s = ""; for (i = 1; i <= NF; i++) if ($i != x) s = s (s == "" ? "" : ",") $i; print s }'; }
# modes ENGINE: "on", and "off" too with OFF_ENGINE (lib/mo_lib.sh): the
# reason filter is the core's, tried before any engine is called, so one
# engine shows it.
modes() { if [ $1 = "$OFF_ENGINE" ]; then echo on off; else echo on; fi; }
