# SPDX-License-Identifier: GPL-2.0
#
# lib_parts.sh, sourced by run_bench.sh (the bench suite): one function per
# part of the bench (part_*), each running mo_bench over the configurations
# set up (OK_CONFS) through run_part, which files its JSON lines and prints
# their summary.

# ------------------------------------------------------------ one part

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

# ----------------------------------------------------------- the parts

# part_ceiling: memcpy with one thread and one per CPU (the ceiling: the
# parallelism there is), and alias, under the first configuration.
part_ceiling() {
	use "$first" && run_part "$first" "memcpy" memcpy --size "$SIZE" --reps "$REPS" --from 0 --to "$TO1"
	# mo_bench takes up to 64 threads
	_nt=$(nproc)
	[ "$_nt" -gt 64 ] && _nt=64
	[ "$_nt" -gt 1 ] && use "$first" &&
		run_part "$first" "memcpy x$_nt" memcpy --size "$SIZE" --reps "$REPS" \
			--from 0 --to "$TO1" --threads "$_nt"
	# how much of a 2M figure is the emulator (see mo_bench --help, alias)
	run_part "$first" "alias" alias --size "$SIZE" --reps "$REPS"
}

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

# part_tput: the moves to every target (MO_TO), interleaved.
part_tput() {
	for to in $(echo "$TO" | tr ',' ' '); do
		SPLIT_TO=$to
		interleave "tput 0->$to" tput --size "$SIZE" --from 0 --to "$to" --folio "$FOLIO" \
			${MO_TPUT_CPU:+--cpu "$MO_TPUT_CPU"}
	done
}

# The same moves under a busy loop on every CPU (mo_bench tput --hog), for
# auto against none (the issue's goal: auto never below none on a busy
# machine) and mtcopy-2 (what a fixed threaded copy does there). Only the
# configurations the run has; none when auto is absent.
# auto and none both, or no part; never split (its records are the split
# goal's, per folio size).
part_hog() {
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
}

# Tiering: kswapd demotes, NUMA balancing promotes, under a moving hot
# set; without and with a busy loop on every CPU. Rotated passes like
# interleave(), one repetition each.
part_tiering() {
	[ -n "$OK_CONFS" ] || return 0
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
}

# part_count, part_latency, part_compaction: the full bench's other parts.
part_count() {
	interleave "count 0->$TO1" count --from 0 --to "$TO1" --folios "$COUNT" \
		${MO_TPUT_CPU:+--cpu "$MO_TPUT_CPU"}
}
part_latency() {
	interleave "latency 0->$TO1" latency --from 0 --to "$TO1" \
		--pages "$LAT_PAGES" --folios "$LAT_FOLIOS"
}
part_compaction() {
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
}

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

# part_profile: profile_one for every folio size and configuration, where
# the kernel has the series' tracepoints.
part_profile() {
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
}
