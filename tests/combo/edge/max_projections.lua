-- expect: refuse sampled  eight block-diagonal projections, the most a mixer may declare: bwd_apply would need 290 KB of shared memory
local R = require "recur"
local m = R.mixer("maxproj", { k = 64 })
local b = m.x
for i = 1, 8 do
  local p = m:project("p" .. i, m:param("W" .. i, "blockdiag", R.normal_rsqrt_k()), m:param("b" .. i, "channel", R.zeros()))
  b = b * R.sigmoid(p)
end
m:recurrence { log_a = -R.softplus(m.x), b = b }
m:output(m.h)
return R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { true, false } }
