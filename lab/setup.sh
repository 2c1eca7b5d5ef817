#!/bin/sh
# Install what the lab needs on a Debian 12 host (idempotent; run as root).
# QEMU comes from bookworm-backports (10.x): Debian 12's own 7.2 crashes guests
# that patch kernel text under multi-threaded TCG (see README).
set -e
if [ "$(id -u)" != 0 ]; then
	echo "lab/setup.sh: must run as root (apt-get install)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
BP=/etc/apt/sources.list.d/bookworm-backports.sources
need_update=
if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
	cat > "$BP" <<EOS
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
	need_update=1
fi
PKGS="build-essential flex bison bc libelf-dev libssl-dev ccache cpio busybox-static
      libnuma-dev kmod xz-utils git rsync python3 python3-pytest python3-matplotlib
      python3-ply python3-git
      linux-source-6.12"
missing=
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
qemu_ok=
if command -v qemu-system-x86_64 >/dev/null; then
	v=$(qemu-system-x86_64 --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
	[ "${v:-0}" -ge 9 ] && qemu_ok=1
fi
if [ -n "$missing" ] || [ -z "$qemu_ok" ]; then
	apt-get update -q -o Acquire::Retries=3 >/dev/null
	[ -n "$missing" ] && apt-get install -y -q --no-install-recommends $missing
	[ -z "$qemu_ok" ] && apt-get install -y -q --no-install-recommends \
		-t bookworm-backports qemu-system-x86 qemu-utils
fi
# The python3 on PATH may not be Debian's (pyenv): make sure the one the lab
# and checkpatch's spdxcheck.py run has what they import.
if ! python3 -c 'import ply, git, pytest, matplotlib' 2>/dev/null; then
	python3 -m pip install -q ply GitPython pytest matplotlib 2>/dev/null ||
	python3 -m pip install -q --break-system-packages ply GitPython pytest matplotlib
fi
qemu-system-x86_64 --version | head -1
ls /usr/src/linux-source-6.12.tar.xz >/dev/null
