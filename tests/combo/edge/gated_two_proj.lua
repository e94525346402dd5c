-- expect: build  an unfused mixer with one projection in the gates and another only in the output, both fused and not
local R = require "recur"
local m = R.mixer("gated2", { k = 64 })
local Wa = m:param("Wa", "blockdiag", R.normal_rsqrt_k())
local ba = m:param("ba", "channel", R.zeros())
local Wg = m:param("Wg", "blockdiag", R.normal_rsqrt_k())
local bg = m:param("bg", "channel", R.zeros())
local pa, pg = m:project("pa", Wa, ba), m:project("pg", Wg, bg)
m:recurrence { log_a = -R.softplus(pa), b = m.x }
m:output(m.h * R.sigmoid(pg) + m.x * pg)
return R.variants { mixer = m, chunk = { 16 }, prefix = { 64 }, fused = { false, true }, fused_output = { true } }
