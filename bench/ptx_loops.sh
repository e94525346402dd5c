#!/usr/bin/env bash
# Instructions per trip of every loop of one kernel in a PTX file: the
# counts ROOFLINE.md quotes for a kernel's sweeps, re-measurable from the
# generated text (no GPU). A loop is a label with a later branch back to
# it (to its last such branch); nested loops are listed each with its whole
# body, inner loops' instructions counted once per trip of the outer text.
#   usage: bench/ptx_loops.sh FILE.ptx KERNEL
#   e.g.   bench/ptx_loops.sh out/ptx/rglru.fused_grouped_prefix32_lookback_chunk8.ptx rglru_bwd_apply
set -eu
[ $# -eq 2 ] || { echo "usage: $0 FILE.ptx KERNEL" >&2; exit 2; }
[ -r "$1" ] || { echo "$0: cannot read $1" >&2; exit 2; }
grep -q "^.visible .entry $2(" "$1" || { echo "$0: no kernel $2 in $1" >&2; exit 2; }
awk -v k="$2" '
	$0 ~ "^.visible .entry " k "\\(" { on = 1; n = 0; next }
	on && /^}/ { on = 0 }
	!on { next }
	{ line[++n] = $0 }
	/^\$L__BB[0-9_]+:/ { lab = $1; sub(":", "", lab); at[lab] = n }
	/bra(\.uni)?[ \t]+\$L__BB/ {
		t = $NF; sub(";", "", t)
		if (t in at && at[t] < n) {
			if (!(t in idx)) { idx[t] = ++nl; name[nl] = t; lo[nl] = at[t] }
			hi[idx[t]] = n   # the last branch back closes the loop
		}
	}
	END {
		printf "%-12s %6s %6s %5s %5s %5s %5s %5s %5s %6s %6s %4s %4s\n", "loop", "lines", "instr", "mma", "ex2", "tanh", "sqrt", "rsqrt", "lg2", "ldsm", "ld/st.s", "bar", "vote"
		for (i = 1; i <= nl; i++) {
			ins = mma = ex2 = th = sq = rs = lg = ls = sh = bar = vo = 0
			for (j = lo[i]; j <= hi[i]; j++) {
				s = line[j]
				if (s ~ /^[ \t]*(\/\/|\{|\$L__BB|\.pragma)/ || s ~ /^[ \t]*$/) continue
				ins++
				if (s ~ /mma\.sync/) mma++
				if (s ~ /ex2\.approx/) ex2++
				if (s ~ /tanh\.approx/) th++
				if (s ~ /[^r]sqrt\.approx/) sq++
				if (s ~ /rsqrt\.approx/) rs++
				if (s ~ /lg2\.approx/) lg++
				if (s ~ /ldmatrix/) ls++
				if (s ~ /(ld|st)\.shared/) sh++
				if (s ~ /bar\.sync/) bar++
				if (s ~ /vote\./) vo++
			}
			printf "%-12s %6d %6d %5d %5d %5d %5d %5d %5d %6d %6d %4d %4d\n", name[i], hi[i] - lo[i] + 1, ins, mma, ex2, th, sq, rs, lg, ls, sh, bar, vo
		}
	}' "$1"
