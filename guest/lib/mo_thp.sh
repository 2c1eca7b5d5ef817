# The THP settings of $THP as "FILE CHOICE" lines (thp_state), and back
# (thp_load SAVED). Sourced by init.sh, which puts the boot's back after
# every suite, and by a suite whose programs change them at
# once (each puts back what it found, which may be the other's change).
THP=${THP:-/sys/kernel/mm/transparent_hugepage}
thp_state() {
	for f in "$THP"/enabled "$THP"/defrag "$THP"/shmem_enabled \
		 "$THP"/hugepages-*/enabled "$THP"/hugepages-*/shmem_enabled; do
		[ -r "$f" ] && echo "$f $(sed -n 's/.*\[\(.*\)\].*/\1/p' "$f")"
	done
}
thp_load() { echo "$1" | while read -r _f _v; do [ -z "$_v" ] || echo "$_v" > "$_f"; done; }
