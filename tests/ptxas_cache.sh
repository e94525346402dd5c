# Sourced by the gen tests that assemble their modules and by ptx_lib.sh
# (not a test of its own): ptxas with the results cached by PTX content, a
# kernel at a time. ptxas compiles each entry of a module apart (no call
# between them), so a module is compiled as its kernels, each a module of
# one (ptxas_split), and a kernel that several modules or tests share, or
# that an edit to another template left as it was, is compiled once.
# ptxas is deterministic: a kernel whose text, flags and ptxas version are
# unchanged gets the same log and status without the seconds ptxas takes;
# any change to one is a new key.
#   ptxas_cached PTXAS FLAGS FILE   prints what "PTXAS FLAGS FILE -o /dev/null"
#                                   prints, kernel by kernel (each one's log
#                                   has its own "gmem" line), and returns the
#                                   first non-zero status of its kernels;
#                                   cached in $RECUR_PTXAS_CACHE (unset or
#                                   "none": no cache), under ptxas_cache_key's
#                                   key of each kernel's module. Only
#                                   acceptances are kept: a refusal is
#                                   compiled again on every run. With
#                                   $PTXAS_RAN set, a line is added to that
#                                   file for each ptxas run (none: all cached).
# ptxas_split FILE DIR: FILE (a module as recur gen writes it) cut into its
#   kernels, DIR/NNN.ptx in order, each its header, its ".globl" line, the
#   module's declarations and the kernel, its labels and local stack
#   numbered 0 as in a module of one (gen/ptxjoin.h); prints how many, 0
#   where FILE has no ".globl" line before an entry (then it is compiled whole)
# ptxas_kernels LOG: one line per kernel of a "ptxas -v" log,
#   NAME regs=N stack=BYTES spill_stores=BYTES spill_loads=BYTES
# find_ptxas: ptxas's path into $ptxas (empty where none is found), and
#   its version line exported for ptxas_version.
# ptxas_version PTXAS: PTXAS's version line (part of every cache key), from
#   find_ptxas's export where it is that ptxas: asked once a test, not once
#   a kernel.
# ptxas_cache_key SALT FILE: the key of FILE's result, SALT the flags and
# ptxas's version ("FLAGS VERSION-LINE"); ptx_lib.sh's ptxas_all keys its
# results by it too, so the two share entries
# ptxas: found through $PTXAS, the PATH or /usr/local/cuda; empty if none
# (PTXAS=none: the checks without ptxas, which then report it skipped)
find_ptxas() {
	ptxas=${PTXAS:-}
	[ "$ptxas" != none ] || { ptxas=""; return; }
	[ -x "$ptxas" ] || ptxas=$(command -v ptxas || true)
	[ -x "$ptxas" ] || [ ! -x /usr/local/cuda/bin/ptxas ] || ptxas=/usr/local/cuda/bin/ptxas
	[ -n "$ptxas" ] && [ -x "$ptxas" ] || ptxas=""
	[ -z "$ptxas" ] || { PTXAS_VERSION_LINE=$("$ptxas" --version 2>&1 | tail -1); PTXAS_VERSION_OF=$ptxas; }
	export PTXAS_VERSION_OF PTXAS_VERSION_LINE
}
ptxas_version() {
	if [ -n "${PTXAS_VERSION_OF:-}" ] && [ "$PTXAS_VERSION_OF" = "$1" ]; then
		printf '%s\n' "$PTXAS_VERSION_LINE"
	else
		"$1" --version 2>&1 | tail -1
	fi
}
ptxas_cache_key() {
	{ printf '%s\n' "$1"; cat "$2"; } | sha256sum | cut -c1-64
}
ptxas_split() {
	awk -v dir="$2" '
		{ line[NR] = $0 }
		/^\t\/\/ \.globl\t/ { g[++ng] = NR }
		/^(\.visible )?\.entry / && !e1 { e1 = NR }
		END {
			if (!ng || !e1 || e1 < g[1]) { print 0; exit }
			for (k = 1; k <= ng; k++) {
				f = sprintf("%s/%03d.ptx", dir, k)
				for (i = 1; i < g[1]; i++) print line[i] > f
				print line[g[k]] > f
				for (i = g[1] + 1; i < e1; i++) print line[i] > f   # the declarations, then a blank line
				for (i = k == 1 ? e1 : g[k] + 1; i <= (k < ng ? g[k + 1] - 1 : NR); i++) {
					s = line[i]
					gsub(/\$L__BB[0-9]+_/, "$L__BB0_", s)
					gsub(/__local_depot[0-9]+/, "__local_depot0", s)
					print s > f
				}
				close(f)
			}
			print ng
		}' "$1"
}
# ptxas_cached_one PTXAS FLAGS FILE: ptxas_cached's of one module, whole
ptxas_cached_one() {
	local cache=${RECUR_PTXAS_CACHE:-none} key log rc tmp
	if [ "$cache" = none ] || ! mkdir -p "$cache" 2> /dev/null; then
		[ -z "${PTXAS_RAN:-}" ] || echo "$3" >> "$PTXAS_RAN"
		# shellcheck disable=SC2086
		"$1" $2 "$3" -o /dev/null 2>&1
		return
	fi
	key=$(ptxas_cache_key "$2 $(ptxas_version "$1")" "$3")
	if [ -f "$cache/$key.rc" ] && [ -f "$cache/$key.log" ]; then
		cat "$cache/$key.log"
		return "$(cat "$cache/$key.rc")"
	fi
	[ -z "${PTXAS_RAN:-}" ] || echo "$3" >> "$PTXAS_RAN"
	# shellcheck disable=SC2086
	log=$("$1" $2 "$3" -o /dev/null 2>&1)
	rc=$?
	printf '%s\n' "$log"
	if [ "$rc" = 0 ]; then   # whole files only: written aside, then renamed (tests run side by side)
		tmp=$cache/$key.$BASHPID
		printf '%s\n' "$log" > "$tmp.log" && echo 0 > "$tmp.rc" &&
			mv "$tmp.log" "$cache/$key.log" && mv "$tmp.rc" "$cache/$key.rc"
	fi
	return "$rc"
}
ptxas_cached() {
	local parts n f rc=0 one
	parts=$(mktemp -d) || { ptxas_cached_one "$@"; return; }
	n=$(ptxas_split "$3" "$parts")
	if [ "$n" = 0 ]; then
		ptxas_cached_one "$1" "$2" "$3"
		rc=$?
	else
		for f in "$parts"/*.ptx; do
			ptxas_cached_one "$1" "$2" "$f"
			one=$?
			[ "$rc" != 0 ] || rc=$one
		done
	fi
	rm -rf "$parts"
	return "$rc"
}
ptxas_kernels() {
	awk '/Compiling entry function/ { k = $7; gsub(/[\x27]/, "", k) }
		/bytes stack frame/ { st = $1; ss = $5; sl = $9 }
		/Used [0-9]+ registers/ { printf "%s regs=%s stack=%s spill_stores=%s spill_loads=%s\n", k, $5, st, ss, sl }' "$1"
}
# for the tests that run them through xargs or bash -c
export -f ptxas_cached ptxas_cached_one ptxas_split ptxas_cache_key ptxas_version
