#!/bin/sh
# /init of the lab's initramfs (busybox sh). Runs the suites named on the
# kernel command line and frames their output for the lab (lab/molab/console.py):
#
#   mo.run=a,b,c     suites to run, in order
#   mo.args=ARGS     arguments for every suite (quote with "..." for spaces)
#   mo.shell=1       a shell on the console (make shell): at once, no suites,
#                    without mo.run; after the suites with it. Leaving it
#                    powers off, after @@MO-SHELL-EXIT rc=<its exit status>
#   mo.tty=COLSxROWS the size of the terminal the shell is used from
#
#   @@MO-BEGIN <suite>  ... TAP ...  @@MO-END <suite> rc=<exit code> t=<secs>
#   @@MO-FILE-BEGIN <name> ... base64 ... @@MO-FILE-END <name> size=.. sha256=..
#   @@MO-STATE <start|end> tainted=<n> debug_locks=<0|1|-> kmemleak=<on|off|->
#   @@MO-DONE
#
# A suite is /opt/mo/suites/<name> or /opt/mo/<name>. It gets MO_OUTDIR, a
# fresh directory: every file left there is sent back as <suite>/<file>.
# "kunit" is built in: the lab reads the KTAP the kernel printed during boot.

export PATH=/opt/mo/bin:/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /dev/shm /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm 2>/dev/null
[ -d /sys/fs/cgroup ] && mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
hostname mo-guest

# The value of a kernel command line parameter: name="a b" or name=a.
param() {
	sed -n "s/^.* $1=\"\([^\"]*\)\".*\$/\1/p; t; s/^.* $1=\([^ ]*\).*\$/\1/p" <<EOF
 $(cat "${MO_CMDLINE:-/proc/cmdline}")
EOF
}

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# Seconds elapsed since $1 (a /proc/uptime value), with two decimals.
elapsed() {
	awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }'
}

sendfile() {	# sendfile FILE NAME
	echo "@@MO-FILE-BEGIN $2"
	base64 "$1"
	echo "@@MO-FILE-END $2 size=$(wc -c < "$1") sha256=$(sha256sum "$1" | cut -d' ' -f1)"
}

# The kernel's health, before the suites and after: the lab fails a run in
# which the kernel got tainted or lockdep/kmemleak switched themselves off.
state() {	# state PHASE [KMEMLEAK]
	dl=$(sed -n 's/^ *debug_locks: *//p' /proc/lockdep_stats 2>/dev/null)
	echo "@@MO-STATE $1 tainted=$(cat /proc/sys/kernel/tainted)" \
		"debug_locks=${dl:--} kmemleak=${2:--}"
}

# Each suite starts from the boot's THP settings (thp_state). A suite killed
# mid-run, or concurrent programs that put back what they saw in the wrong
# order, must not hand their folio sizes to the next suite (hmm-tests failed
# on a 64K mTHP an earlier suite left on).
. /opt/mo/lib/mo_thp.sh
# thp_restore SUITE: put back what SUITE changed, saying what it was.
thp_restore() {
	thp_state | while read -r f v; do
		want=$(echo "$THP0" | awk -v f="$f" '$1 == f { print $2 }')
		if [ -n "$want" ] && [ "$v" != "$want" ]; then
			echo "molab guest: $1 left $f at $v (boot: $want): put back"
			echo "$want" > "$f"
		fi
	done
}

# The shell of mo.shell=1, as root on the console with the lab's programs
# on PATH; returns when it exits. The lab (lab/molab/shell.py) feeds piped
# commands after each prompt it sees: PS1 and PS2 are what it looks for.
mo_shell() {
	MO_OUTDIR=/tmp/mo-out/shell
	mkdir -p "$MO_OUTDIR"
	export MO_OUTDIR PATH="/opt/mo:/opt/mo/suites:/opt/mo/selftests:$PATH"
	export PS1='mo-guest:\w# ' PS2='mo-guest:> '
	# A serial line has no size: busybox would assume 80x24.
	size=$(param 'mo\.tty')
	case "$size" in
	[0-9]*x[0-9]*) stty cols "${size%x*}" rows "${size#*x}" 2>/dev/null ;;
	esac
	echo "molab shell: suites (/opt/mo/suites) and programs (/opt/mo," \
		"/opt/mo/selftests) on PATH, helpers: . /opt/mo/lib/mo_lib.sh," \
		"files to the host: mo-sendfile FILE; exit or Ctrl-D powers off"
	cd /root 2>/dev/null || cd /
	# cttyhack: the console as controlling tty, so that Ctrl-C reaches
	# the command (setsid: a session of its own to hold it).
	setsid cttyhack sh
	echo "@@MO-SHELL-EXIT rc=$?"
}

MO_RUN=$(param 'mo\.run')
MO_ARGS=$(param 'mo\.args')
MO_SHELL=$(param 'mo\.shell')
# ci (make test) or full (make test-full; also without mo.scope): how much
# of each suite runs (lib/mo_lib.sh).
MO_SCOPE=$(param 'mo\.scope')
export MO_ARGS MO_SCOPE="${MO_SCOPE:-full}"

echo "molab guest: kernel $(uname -r), $(nproc) cpus, nodes: $(ls -d /sys/devices/system/node/node* 2>/dev/null | sed 's,.*/node,,' | tr '\n' ' ')"
if [ "$MO_SHELL" = 1 ] && [ -z "$MO_RUN" ]; then
	mo_shell
	sync
	poweroff -f
fi
echo "molab guest: suites '$MO_RUN' args '$MO_ARGS' scope $MO_SCOPE"
state start
THP0=$(thp_state)

for suite in $(echo "$MO_RUN" | tr ',' ' '); do
	case "$suite" in
	kunit) continue ;;	# read from the boot log by the lab
	esac
	prog=
	if [ -x "/opt/mo/suites/$suite" ]; then
		prog="/opt/mo/suites/$suite"
	elif [ -x "/opt/mo/$suite" ]; then
		prog="/opt/mo/$suite"
	fi
	echo "@@MO-BEGIN $suite"
	if [ -z "$prog" ]; then
		echo "@@MO-END $suite rc=127 missing"
		continue
	fi
	MO_OUTDIR="/tmp/mo-out/$suite"
	mkdir -p "$MO_OUTDIR"
	export MO_OUTDIR MO_SUITE="$suite"
	t0=$(uptime_s)
	# shellcheck disable=SC2086 # MO_ARGS is split into words on purpose
	(cd /tmp && exec "$prog" $MO_ARGS) < /dev/null 2>&1
	rc=$?
	t=$(elapsed "$t0")
	for f in "$MO_OUTDIR"/*; do
		[ -f "$f" ] && sendfile "$f" "$suite/${f##*/}"
	done
	echo "@@MO-END $suite rc=$rc t=$t"
	thp_restore "$suite"
done

kml=-
if [ -e /sys/kernel/debug/kmemleak ]; then
	echo "@@MO-BEGIN kmemleak"
	# A scan is refused (EPERM) once kmemleak has disabled itself.
	kml=off
	if echo scan > /sys/kernel/debug/kmemleak; then
		sleep 6
		echo scan > /sys/kernel/debug/kmemleak && kml=on
	fi
	cat /sys/kernel/debug/kmemleak
	echo "@@MO-END kmemleak rc=0"
fi
state end $kml

echo "@@MO-DONE"
if [ "$MO_SHELL" = 1 ]; then
	mo_shell
fi
sync
poweroff -f
