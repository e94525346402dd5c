-- expect: build  eight token projections (eight per-token values without shared_sfu), in the gates and the output
local R = require "recur"
local m = R.mixer("maxtok", { k = 64 })
local b, y = m.x, m.h
for i = 1, 8 do
  local u = m:token_project("u" .. i, m:param("w" .. i, "channel", R.normal(1)), m:param("b" .. i, "scalar", R.zeros()),
                            { scale = "rsqrt_d" })
  if i <= 4 then b = b * R.sigmoid(u) else y = y * R.sigmoid(u) end
end
m:recurrence { log_a = -R.softplus(m.x), b = b }
m:output(y)
return R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused_output = { true }, shared_sfu = { false, true },
                    scan = { "hierarchical", "onepass" } }
