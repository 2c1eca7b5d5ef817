# SPDX-License-Identifier: GPL-2.0
#
# lib_summary.sh, sourced by run_bench.sh (the bench suite): the human
# summary ("# " lines: one per part, tables at the end, or those of a saved
# file) and the file sent to the lab.

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

# summary_of_file FILE [BASE]: the summaries of a saved bench.jsonl
# (run_bench.sh --summary): one line per configuration and part, then the
# tables, with ratios against BASE (default: the first configuration set up).
summary_of_file() {
	[ -f "$1" ] || { echo "run_bench.sh: $1: no such file" >&2; exit 2; }
	base=${2:-$(sed -n 's/.*"mode":"config","config":"\([^"]*\)".*"absent":false.*/\1/p' "$1" | head -1)}
	for c in $(sed -n 's/.*"mode":"config","config":"\([^"]*\)".*"absent":false.*/\1/p' "$1" | awk '!seen[$0]++'); do
		for m in memcpy alias tput count latency compaction tiering; do
			grep "\"mode\":\"$m\",\"config\":\"$c\"" "$1" > "$WORK/m.jsonl"
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
	final_summary "$1" "$base"
}

# send_file FILE: FILE to the lab, base64 between @@MO-FILE markers
# (unless MO_SEND=0: on bare metal it stays where it is).
send_file() {
	[ "${MO_SEND:-1}" != 0 ] || return 0
	echo "@@MO-FILE-BEGIN bench.jsonl"
	base64 "$1"
	echo "@@MO-FILE-END bench.jsonl size=$(wc -c < "$1" | tr -d ' ') sha256=$(sha256sum "$1" | cut -d' ' -f1)"
}
