-- expect: more than 1024 variants
-- the generator copies a mixer's graph for each variant: their number is bounded
local R = require "recur"
local sets = {}
for i = 1, 17 do
  local m = R.mixer("m" .. i)
  m:recurrence { log_a = -R.softplus(m.x), b = m.x * i }
  m:output(m.h)
  sets[i] = R.variants { mixer = m, chunk = { 8, 16, 32, 64 }, prefix = { 32, 64 }, fused = { true, false },
                         fused_output = { true, false }, fused_write = { true, false } }
end
return sets
