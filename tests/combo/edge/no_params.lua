-- expect: build sampled  a mixer without parameters: no gradients to reduce
local R = require "recur"
local m = R.mixer("noparam", { k = 64 })
m:recurrence { log_a = -R.softplus(m.x), b = m.x }
m:output(m.h)
return R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { true, false }, scan = { "hierarchical", "onepass" } }
