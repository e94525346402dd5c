# Sourced by the gen tests that assemble their modules (not a test of its
# own): ptxas with the results cached by PTX content, as ptx_lib.sh's
# ptxas_all caches the PTX checks'. ptxas is deterministic, so a module
# whose text, flags and ptxas version are unchanged gets the same log and
# status without the seconds ptxas takes; any change to one is a new key.
#   ptxas_cached PTXAS FLAGS FILE   prints what "PTXAS FLAGS FILE -o /dev/null"
#                                   prints and returns its status; cached in
#                                   $RECUR_PTXAS_CACHE (unset or "none": no
#                                   cache), under ptxas_cache_key's key.
#                                   Only acceptances are kept: a refusal is
#                                   compiled again on every run.
# ptxas_kernels LOG: one line per kernel of a "ptxas -v" log,
#   NAME regs=N stack=BYTES spill_stores=BYTES spill_loads=BYTES
# find_ptxas: ptxas's path into $ptxas (empty where none is found).
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
}
ptxas_cache_key() {
	{ printf '%s\n' "$1"; cat "$2"; } | sha256sum | cut -c1-64
}
ptxas_cached() {
	local cache=${RECUR_PTXAS_CACHE:-none} key log rc tmp
	if [ "$cache" = none ] || ! mkdir -p "$cache" 2> /dev/null; then
		# shellcheck disable=SC2086
		"$1" $2 "$3" -o /dev/null 2>&1
		return
	fi
	key=$(ptxas_cache_key "$2 $("$1" --version 2>&1 | tail -1)" "$3")
	if [ -f "$cache/$key.rc" ] && [ -f "$cache/$key.log" ]; then
		cat "$cache/$key.log"
		return "$(cat "$cache/$key.rc")"
	fi
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
ptxas_kernels() {
	awk '/Compiling entry function/ { k = $7; gsub(/[\x27]/, "", k) }
		/bytes stack frame/ { st = $1; ss = $5; sl = $9 }
		/Used [0-9]+ registers/ { printf "%s regs=%s stack=%s spill_stores=%s spill_loads=%s\n", k, $5, st, ss, sl }' "$1"
}
