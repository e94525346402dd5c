-- expect: build sampled  issue 29's crash: an unfused output gated by a projection (fwd_apply and bwd_reduce read the gates from memory and run the projection)
local R = require "recur"
local m = R.mixer("gated", { k = 64 })
local Wg = m:param("Wg", "blockdiag", R.normal_rsqrt_k())
local bg = m:param("bg", "channel", R.zeros())
local lam = m:param("lam", "channel", R.decay(0.9 ^ 2, 0.999 ^ 2))
local pg = m:project("pg", Wg, bg)
m:recurrence { log_a = -R.softplus(lam), b = m.x }
m:output(m.h * R.sigmoid(pg))
return R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { false }, fused_output = { true },
                    scan = { "hierarchical", "lookback", "onepass" } }
