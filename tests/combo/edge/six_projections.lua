-- expect: build  six block-diagonal projections, the most whose backward fits a block's shared memory, and sixteen parameters
local R = require "recur"
local m = R.mixer("sixproj", { k = 64 })
local b = m.x
for i = 1, 6 do
  local p = m:project("p" .. i, m:param("W" .. i, "blockdiag", R.normal_rsqrt_k()), m:param("b" .. i, "channel", R.zeros()))
  b = b * R.sigmoid(p)
end
local lam = m:param("lam", "channel", R.decay(0.9 ^ 2, 0.999 ^ 2))
local unused = m:param("Wu", "blockdiag", R.normal_rsqrt_k())   -- no projection: its gradient is zero
local s1 = m:param("s1", "scalar", R.const(1))
local s2 = m:param("s2", "scalar", R.const(0.5))
m:recurrence { log_a = -s1 * R.softplus(lam), b = b }
m:output(m.h + s2 * m.x)
return R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { true, false }, fused_output = { true } }
