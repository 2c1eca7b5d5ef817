#!/bin/sh
# Install what the lab needs on a Debian 12 host (idempotent; run as root).
# Needs nothing but sh and apt: on a minimal Debian 12 run it first
# ("sh lab/setup.sh"), as it installs make itself.
# QEMU comes from bookworm-backports (10.x): Debian 12's own 7.2 crashes guests
# that patch kernel text under multi-threaded TCG (see README).
# Every failure ends with one line: what failed and what to do.
set -e
die() {
	echo "lab/setup.sh: error: $1; $2" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "must run as root (it runs apt-get install)" "run 'sudo sh lab/setup.sh'"
[ -r /etc/debian_version ] && command -v apt-get >/dev/null ||
	die "not a Debian system (no apt-get)" "install the packages listed in README.md by hand"
export DEBIAN_FRONTEND=noninteractive
QEMU_MIN=10
BP=/etc/apt/sources.list.d/bookworm-backports.sources
if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
	cat > "$BP" <<EOS || die "cannot write $BP" "check that / is writable"
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
fi
PKGS="make build-essential flex bison bc libelf-dev libssl-dev ccache cpio busybox-static
      libnuma-dev kmod xz-utils git rsync python3 python3-pytest python3-matplotlib
      python3-scipy python3-ply python3-git gcc-aarch64-linux-gnu xfsprogs e2fsprogs
      linux-source-6.12"
missing=
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
qemu_version() {
	qemu-system-x86_64 --version 2>/dev/null | sed -n 's/.*version \([0-9]*\)\..*/\1/p'
}
qv=$(qemu_version)
if [ -n "$missing" ] || [ "${qv:-0}" -lt $QEMU_MIN ]; then
	apt-get update -q -o Acquire::Retries=3 >/dev/null ||
		die "apt-get update failed" "check the network and /etc/apt/sources.list*, then run it again"
	if [ -n "$missing" ]; then
		# shellcheck disable=SC2086 # one word per package
		apt-get install -y -q --no-install-recommends $missing ||
			die "apt-get install of$missing failed" "see apt's message above"
	fi
	if [ "${qv:-0}" -lt $QEMU_MIN ]; then
		apt-get install -y -q --no-install-recommends -t bookworm-backports \
			qemu-system-x86 qemu-utils ||
			die "installing QEMU from bookworm-backports failed" "see apt's message above"
	fi
fi
qv=$(qemu_version)
[ "${qv:-0}" -ge $QEMU_MIN ] ||
	die "qemu-system-x86_64 is version ${qv:-missing}, the lab needs $QEMU_MIN or newer" \
		"remove the older QEMU from PATH or install qemu-system-x86 from bookworm-backports"
# The python3 on PATH may not be Debian's (pyenv): make sure the one the lab
# and checkpatch's spdxcheck.py run has what they import.
if ! python3 -c 'import ply, git, pytest, matplotlib, scipy' 2>/dev/null; then
	{ python3 -m pip install -q ply GitPython pytest matplotlib scipy 2>/dev/null ||
	  python3 -m pip install -q --break-system-packages ply GitPython pytest matplotlib scipy; } ||
		die "the python3 on PATH ($(command -v python3)) lacks ply/GitPython/pytest/matplotlib/scipy and pip could not install them" \
			"put Debian's /usr/bin/python3 first in PATH"
fi
[ -r /usr/src/linux-source-6.12.tar.xz ] ||
	die "/usr/src/linux-source-6.12.tar.xz is missing although linux-source-6.12 is installed" \
		"apt-get install --reinstall linux-source-6.12"
qemu-system-x86_64 --version | head -1
