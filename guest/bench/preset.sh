#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# preset.sh NAME: the settings of bench preset NAME (presets/NAME beside
# this file), one a line: MO_NAME=value for the bench suite, in the file's
# order, and ROUNDS=n (the lab's boots of each kernel) if the file has it.
# preset.sh --host NAME TARGETS CPU: the settings for a real machine
# (host_bench.sh): the MO_* lines on one line, "@targets" and "@cpu0"
# replaced by TARGETS and CPU (a setting whose value is then empty left
# out), MO_TO=@targets and MO_TPUT_CPU=@cpu0 added when the preset names
# neither (a real machine's nodes are not the VM's), ROUNDS left out.
#
# The one reader of the presets: host_bench.sh runs it for make host-bench,
# the lab for make bench (lab/molab/bench.py). A preset file holds comments
# (#), blank lines and NAME=value lines, the value without blanks; no
# value starts with @ but those two.
# Exit 2 with one line on stderr: an unknown preset (the line lists them)
# or a line that is not MO_NAME=value or ROUNDS=n.

HOST=
if [ "${1:-}" = --host ]; then
	HOST=1
	shift
fi
NAME=${1:-} TARGETS=${2:-} CPU=${3:-}
DIR=$(cd "$(dirname "$0")" && pwd)/presets

presets() { ls "$DIR" 2>/dev/null | grep -v '^\.' | tr '\n' ' ' | sed 's/ $//; s/ /, /g'; }
case $NAME in
'' | *[!a-z0-9_-]*) NAME=- ;;	# never a path
esac
if [ ! -f "$DIR/$NAME" ]; then
	echo "unknown preset '${1:-}' (presets: $(presets))" >&2
	exit 2
fi

set -f	# a value is never a pattern
n=0 lines=
while IFS= read -r _l || [ -n "$_l" ]; do
	n=$((n + 1))
	# shellcheck disable=SC2086 # split on blanks: one word or none
	set -- ${_l%%#*}
	[ $# = 0 ] && continue
	_k=${1%%=*}
	case $#:$1 in
	1:MO_?*=*)
		case $_k in *[!A-Z0-9_]*) _k= ;; esac
		# the machine's facts, for --host; no other value starts with @
		case ${1#*=} in @targets | @cpu0) ;; @*) _k= ;; esac ;;
	1:ROUNDS=[1-9]*)
		case ${1#ROUNDS=} in *[!0-9]*) _k= ;; esac ;;
	*) _k= ;;
	esac
	if [ -z "$_k" ]; then
		echo "preset $NAME, line $n: '$_l' is not MO_NAME=value or ROUNDS=n" >&2
		exit 2
	fi
	lines="$lines $1"
done < "$DIR/$NAME"

if [ -z "$HOST" ]; then
	for _s in $lines; do echo "$_s"; done
	exit 0
fi
out= to= cpu=
for _s in $lines; do
	case $_s in
	ROUNDS=*) continue ;;
	MO_TO=*) to=1 ;;
	MO_TPUT_CPU=*) cpu=1 ;;
	esac
	case ${_s#*=} in
	@targets) _s=${TARGETS:+${_s%%=*}=$TARGETS} ;;
	@cpu0) _s=${CPU:+${_s%%=*}=$CPU} ;;
	esac
	out="$out${_s:+ $_s}"
done
[ -n "$to" ] || out="$out${TARGETS:+ MO_TO=$TARGETS}"
[ -n "$cpu" ] || out="$out${CPU:+ MO_TPUT_CPU=$CPU}"
echo "${out# }"
