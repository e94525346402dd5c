# Combination scripts for tests/gen_combo_test.sh: mixers built from every
# leaf and function of the scripting library in log_a, b and the output,
# crossed with every axis of the variant grid, one variant per script.
#
#   awk -v dir=DIR -f cover.awk        writes DIR/cNNN.lua and prints the index
#
# The full product (in each of three places a function of 20 on two
# operands of 7 -- 8 in the output, h with them --, times 576 grid points)
# is far beyond what a test can generate, so the cases form a covering
# array: every pair of values that can interact appears together in at
# least one case that the templates can build (pairwise, the AETG greedy
# construction: each case is the best of 24 random candidates seeded with
# a pair not yet covered; 215 cases cover the 103 factor pairs' values,
# 285 value pairs that no buildable case can hold aside). Which pairs count:
#   - inside each place: function x operand, operand x operand (and the
#     output's form x the rest): every function meets every kind of leaf;
#   - every operand, the output's form and the spare declaration x every
#     grid axis: a leaf's code path under each kernel arrangement (the
#     unfused output gated by a projection was such a pair);
#   - every function x fused, shared_sfu and scan; grid axis x grid axis;
#   - the first operands of the three places with each other.
# Rows whose outcome is certain to be a refusal (a token projection in a
# fused variant, shared_sfu without one, an output that is not h without
# fused_output, an output not affine in h) cover nothing; a few of each
# are added on purpose, and a few whose outcome the index does not predict
# (an output over h twice, where folding decides).
#
# Index lines: NAME PREDICTION DESCRIPTION, PREDICTION "build", "refuse" or
# "any"; cNNN covering, rNNN refused on purpose, uNNN left to folding. The
# first lines are the greedy's first picks, which cover the most pairs:
# the sampled subset takes the index from its top.
#
# Deterministic: its own random numbers (Park-Miller), the same cases on
# every awk.

function rnd(n) { seed = (seed * 16807) % 2147483647; return seed % n }

function factor(name, vals,    i, k, a) {
	k = split(vals, a, " ")
	fname[nf] = name
	nv[nf] = k
	for (i = 1; i <= k; i++) val[nf, i - 1] = a[i]
	fidx[name] = nf
	nf++
}

function ispair(f1, f2) { npair++; pf1[npair] = fidx[f1]; pf2[npair] = fidx[f2] }

# the arity of a function value
function arity(fn) {
	if (fn == "where") return 3
	if (fn ~ /^(add|sub|mul|div|min|max|gt|lt)$/) return 2
	return 1
}

# operand b of a place is used only by binary and ternary functions
function used(r, f,    nm, pl) {
	nm = fname[f]
	if (nm !~ /_b$/) return 1
	pl = substr(nm, 1, length(nm) - 2)
	return arity(val[fidx[pl "_fn"], r[fidx[pl "_fn"]]]) > 1
}

function v(r, name) { return val[fidx[name], r[fidx[name]]] }

# how a function of operands a, b depends on h: none, lin (derivative
# free of h), step (gt, lt: a value over h whose derivative is 0), non,
# or ? (both operands h: folding decides)
function hdep(fn, a, b,    ha, hb) {
	ha = a == "h"
	hb = b == "h" && arity(fn) > 1
	if (!ha && !hb) return "none"
	if (ha && hb) return "?"
	if (fn ~ /^(gt|lt)$/) return "step"
	if (arity(fn) == 1) return fn ~ /^(id|neg)$/ ? "lin" : "non"
	if (fn ~ /^(add|sub|mul)$/) return "lin"
	if (fn == "div") return ha ? "lin" : "non"
	if (fn == "where") return hb ? "lin" : "non"
	return "non"
}

function ydep(r,    d, form) {
	d = hdep(v(r, "y_fn"), v(r, "y_a"), v(r, "y_b"))
	form = v(r, "y_form")
	if (d == "?") return d
	if (form == "raw") return d == "step" ? "none" : d
	if (form == "gate") return d == "none" ? "lin" : "non"   # h * F: dF/dh = F(h) where F steps
	return d == "non" ? "non" : "lin"
}

function uses_tok(r,    f, nm) {
	if (v(r, "spare") == "tok") return 1
	for (f = 0; f < nf; f++) {
		nm = fname[f]
		if (nm ~ /_(a|b)$/ && used(r, f) && val[f, r[f]] == "t") return 1
	}
	return 0
}

function y_is_h(r) { return v(r, "y_form") == "raw" && v(r, "y_fn") == "id" && v(r, "y_a") == "h" }

# build, refuse or any; why: every reason to refuse, space-separated
function predict(r,    tok, d) {
	tok = uses_tok(r)
	d = ydep(r)
	why = ""
	if (d == "non") why = why " nonaffine"
	if (v(r, "fused") == "true" && tok) why = why " fused_tok"
	if (v(r, "shared_sfu") == "true" && !tok) why = why " sfu_notok"
	if (v(r, "fused_output") == "false" && !y_is_h(r)) why = why " fo_false"
	if (why != "") return "refuse"
	return d == "?" ? "any" : "build"
}

function randrow(r, fix,    f) {
	for (f = 0; f < nf; f++)
		if (!(f in fix)) r[f] = rnd(nv[f])
}

function setv(r, fix, name, value,    f, i) {
	f = fidx[name]
	if (f in fix) return
	for (i = 0; i < nv[f]; i++)
		if (val[f, i] == value) { r[f] = i; return }
}

# nudges a random row towards one the templates build, changing only
# factors not in fix: a refusal covers nothing
function repair(r, fix,    f, nm, tries) {
	if (v(r, "fused_output") == "false") {
		setv(r, fix, "y_form", "raw"); setv(r, fix, "y_fn", "id"); setv(r, fix, "y_a", "h")
		if (!y_is_h(r)) setv(r, fix, "fused_output", "true")
	}
	for (tries = 0; ydep(r) == "non" || ydep(r) == "?"; tries++) {
		if (tries == 20) return
		for (f = 0; f < nf; f++)
			if (fname[f] ~ /^y_/ && !(f in fix)) r[f] = rnd(nv[f])
		if (v(r, "fused_output") == "false") {
			setv(r, fix, "y_form", "raw"); setv(r, fix, "y_fn", "id"); setv(r, fix, "y_a", "h")
		}
	}
	if (v(r, "fused") == "true") {
		setv(r, fix, "shared_sfu", "false")
		setv(r, fix, "spare", "none")
		for (f = 0; f < nf; f++) {
			nm = fname[f]
			if (nm ~ /_(a|b)$/ && !(f in fix) && val[f, r[f]] == "t") setv(r, fix, nm, "x")
		}
		if (uses_tok(r) || v(r, "shared_sfu") == "true") setv(r, fix, "fused", "false")
	}
	if (v(r, "shared_sfu") == "true" && !uses_tok(r)) setv(r, fix, "spare", "tok")
}

function key(f1, i1, f2, i2) { return f1 SUBSEP i1 SUBSEP f2 SUBSEP i2 }

# uncovered pairs the row covers (mark = 1: and covers them)
function gain(r, mark,    p, f1, f2, k, n) {
	n = 0
	for (p = 1; p <= npair; p++) {
		f1 = pf1[p]; f2 = pf2[p]
		if (!used(r, f1) || !used(r, f2)) continue
		k = key(f1, r[f1], f2, r[f2])
		if (k in need) { n++; if (mark) { delete need[k]; nneed-- } }
	}
	return n
}

function opnd(o) {
	if (o == "k") return "0.5"
	return o
}

function expr(fn, a, b) {
	a = opnd(a); b = opnd(b)
	if (fn == "id") return a
	if (fn == "neg") return "-" a
	if (fn == "add") return a " + " b
	if (fn == "sub") return a " - " b
	if (fn == "mul") return a " * " b
	if (fn == "div") return a " / " b
	if (fn == "where") return "R.where(" a ", " b ", " a ")"
	if (arity(fn) == 2) return "R." fn "(" a ", " b ")"
	return "R." fn "(" a ")"
}

function place(r, pl) { return expr(v(r, pl "_fn"), v(r, pl "_a"), v(r, pl "_b")) }

function yexpr(r,    e, form) {
	e = place(r, "y")
	form = v(r, "y_form")
	if (form == "gate") return "h * (" e ")"
	if (form == "skip") return "h + (" e ")"
	return e
}

# does the script's text use leaf o
function has(text, o) { return text ~ ("(^|[^A-Za-z_])" o "([^A-Za-z_0-9]|$)") }

function emit(name, r, pred,    file, la, b, y, all, desc) {
	file = dir "/" name ".lua"
	la = place(r, "la"); b = place(r, "b"); y = yexpr(r)
	all = la " ; " b " ; " y
	desc = "log_a = " la " | b = " b " | y = " y " | spare " v(r, "spare") " | fused " v(r, "fused") \
	       " fused_output " v(r, "fused_output") " fused_write " v(r, "fused_write") " shared_sfu " v(r, "shared_sfu") \
	       " " v(r, "scan") " chunk " v(r, "chunk") " prefix " v(r, "prefix")
	print "-- " desc > file
	print "local R = require \"recur\"" > file
	print "local m = R.mixer(\"" name "\", { k = 64 })" > file
	print "local x, h, first = m.x, m.h, m.first" > file
	if (has(all, "c")) print "local c = m:param(\"c\", \"channel\", R.normal(0.5))" > file
	if (has(all, "s")) print "local s = m:param(\"s\", \"scalar\", R.const(0.3))" > file
	if (has(all, "p")) {
		print "local Wp = m:param(\"Wp\", \"blockdiag\", R.normal_rsqrt_k())" > file
		print "local bp = m:param(\"bp\", \"channel\", R.zeros())" > file
		print "local p = m:project(\"p\", Wp, bp)" > file
	}
	if (has(all, "t")) {
		print "local wt = m:param(\"wt\", \"channel\", R.normal(1))" > file
		print "local bt = m:param(\"bt\", \"scalar\", R.zeros())" > file
		print "local t = m:token_project(\"t\", wt, bt, { scale = \"rsqrt_d\" })" > file
	}
	if (v(r, "spare") == "tok") {
		print "m:token_project(\"u\", m:param(\"wu\", \"channel\", R.normal(1)), m:param(\"bu\", \"scalar\", R.zeros()))" > file
	} else if (v(r, "spare") == "proj") {
		print "m:project(\"q\", m:param(\"Wq\", \"blockdiag\", R.normal_rsqrt_k()), m:param(\"bq\", \"channel\", R.zeros()))" > file
	} else if (v(r, "spare") == "param") {
		print "m:param(\"pc\", \"channel\", R.zeros())" > file
		print "m:param(\"ps\", \"scalar\", R.zeros())" > file
	}
	print "m:recurrence { log_a = " la ", b = " b " }" > file
	print "m:output(" y ")" > file
	print "return R.variants { mixer = m, chunk = { " v(r, "chunk") " }, prefix = { " v(r, "prefix") " }," > file
	print "  fused = { " v(r, "fused") " }, fused_output = { " v(r, "fused_output") " }, fused_write = { " v(r, "fused_write") " }," > file
	print "  shared_sfu = { " v(r, "shared_sfu") " }, scan = { \"" v(r, "scan") "\" } }" > file
	close(file)
	printf "%s %s %s\n", name, pred, desc
}

function copyrow(dst, src,    f) { for (f = 0; f < nf; f++) dst[f] = src[f] }

BEGIN {
	seed = 20240529
	nf = 0; npair = 0; nref = 0; ninfeasible = 0
	FN = "id neg exp log sigmoid softplus sqrt sqrtb tanh recip rsqrt add sub mul div min max gt lt where"
	OP = "x first c s p t k"
	factor("la_fn", FN); factor("la_a", OP); factor("la_b", OP)
	factor("b_fn", FN); factor("b_a", OP); factor("b_b", OP)
	factor("y_form", "raw gate skip"); factor("y_fn", FN); factor("y_a", "h " OP); factor("y_b", "h " OP)
	factor("spare", "none tok proj param")
	factor("fused", "false true"); factor("fused_output", "false true"); factor("fused_write", "false true")
	factor("shared_sfu", "false true"); factor("scan", "hierarchical lookback onepass")
	factor("chunk", "8 16 32 64"); factor("prefix", "32 64 128")
	split("la b", pls, " ")
	for (i = 1; i <= 2; i++) {
		ispair(pls[i] "_fn", pls[i] "_a"); ispair(pls[i] "_fn", pls[i] "_b"); ispair(pls[i] "_a", pls[i] "_b")
	}
	split("y_form y_fn y_a y_b", yf, " ")
	for (i = 1; i <= 4; i++) for (j = i + 1; j <= 4; j++) ispair(yf[i], yf[j])
	split("fused fused_output fused_write shared_sfu scan chunk prefix", ax, " ")
	split("la_a la_b b_a b_b y_form y_a y_b spare", lf, " ")
	for (i = 1; i <= 8; i++) for (j = 1; j <= 7; j++) ispair(lf[i], ax[j])
	split("la_fn b_fn y_fn", ff, " ")
	for (i = 1; i <= 3; i++) { ispair(ff[i], "fused"); ispair(ff[i], "shared_sfu"); ispair(ff[i], "scan") }
	for (i = 1; i <= 7; i++) for (j = i + 1; j <= 7; j++) ispair(ax[i], ax[j])
	ispair("la_a", "b_a"); ispair("la_a", "y_a"); ispair("b_a", "y_a")
	ispair("spare", "la_a"); ispair("spare", "y_a")
	nneed = 0
	for (p = 1; p <= npair; p++)
		for (i = 0; i < nv[pf1[p]]; i++)
			for (j = 0; j < nv[pf2[p]]; j++) { need[key(pf1[p], i, pf2[p], j)] = 1; nneed++ }

	ncase = 0
	ncand = 24
	while (nneed > 0) {
		# the first uncovered pair, in a fixed order
		for (p = 1; p <= npair && !found; p++)
			for (i = 0; i < nv[pf1[p]] && !found; i++)
				for (j = 0; j < nv[pf2[p]] && !found; j++)
					if (key(pf1[p], i, pf2[p], j) in need) { found = 1; fp = p; fi = i; fj = j }
		found = 0
		best = -1
		for (c = 0; c < ncand * 8 && (best < 0 || c < ncand); c++) {
			split("", fix); split("", row)
			fix[pf1[fp]] = 1; fix[pf2[fp]] = 1
			row[pf1[fp]] = fi; row[pf2[fp]] = fj
			randrow(row, fix)
			repair(row, fix)
			if (predict(row) != "build" || !used(row, pf1[fp]) || !used(row, pf2[fp])) continue
			g = gain(row, 0)
			if (g > best) { best = g; copyrow(brow, row) }
		}
		if (best < 0) {   # no buildable case holds this pair: it needs none
			delete need[key(pf1[fp], fi, pf2[fp], fj)]; nneed--; ninfeasible++
			continue
		}
		gain(brow, 1)
		emit(sprintf("c%03d", ++ncase), brow, "build")
	}
	# refusals on purpose, two for each reason alone, and outcomes left to folding
	split("nonaffine fused_tok sfu_notok fo_false", rs, " ")
	for (k = 1; k <= 4; k++)
		for (n = 0; n < 2; n++) {
			do randrow(row, none); while (predict(row) != "refuse" || why != " " rs[k])
			emit(sprintf("r%03d", ++nref), row, "refuse")
		}
	split("add sub mul div min max gt lt where", bf, " ")
	for (k = 1; k <= 9; k++) {
		randrow(row, none)
		setv(row, none, "y_form", "raw"); setv(row, none, "y_fn", bf[k]); setv(row, none, "y_a", "h"); setv(row, none, "y_b", "h")
		setv(row, none, "fused_output", "true"); setv(row, none, "fused", "false"); setv(row, none, "shared_sfu", "false")
		emit(sprintf("u%03d", k), row, predict(row))
	}
	printf "# %d covering cases, %d refusals, %d left to folding; %d factor pairs, %d value pairs no buildable case holds\n", \
		ncase, nref, 9, npair, ninfeasible > "/dev/stderr"
}
