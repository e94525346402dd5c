# Sourced by the gen tests of the state options (gen_state_test.sh,
# gen_docs_test.sh): ptxas over some modules, the refusals and the spills.
#   ptxas_report FILE...   sets ptxas (empty: none found), rej (the modules
#                          ptxas refuses) and spills (MODULE:BYTES of the
#                          largest spill stores of each that spills)
# shellcheck source=tests/ptxas_cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/ptxas_cache.sh"
ptxas_report() {
	ptxas=${PTXAS:-$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null)}
	rej="" spills=""
	[ -n "$ptxas" ] || return 0
	local f log s
	for f in "$@"; do
		log=$(ptxas_cached "$ptxas" "-arch=sm_90 -v" "$f") || rej="$rej $(basename "$f")"
		s=$(echo "$log" | grep -o '[0-9]* bytes spill stores' | awk '$1 > m { m = $1 } END { print m + 0 }')
		[ "$s" -gt 0 ] && spills="$spills $(basename "$f" .ptx):$s"
	done
	return 0
}
