-- RG-LRU's lines (lua/arch/rglru.lua) with heads of K channels, for the
-- decode step's other head sizes: RecurrentGemma's 256 (2B: width 2560 in
-- 10 heads, 9B: 4096 in 16), Griffin 7B's 176, and 16 and 128; 128 and 256
-- on tensor cores as well (mma = true). The scans
-- run the projections of heads other than 64 apart (tests/grids/apart.lua);
-- HEADS_K=K in the environment asks for a scan variant of one K with
-- apart = false instead, which the generator refuses at its line.
local R = require "recur"

local function rglru(k)
  local m = R.mixer("rglru" .. k, { k = k })
  local Wa, ba = m:param("Wa", "blockdiag", R.normal_rsqrt_k()), m:param("ba", "channel", R.zeros())
  local Wx, bx = m:param("Wx", "blockdiag", R.normal_rsqrt_k()), m:param("bx", "channel", R.zeros())
  local lam = m:param("lam", "channel", R.decay(0.9^2, 0.999^2))
  local log_a = -8 * R.sigmoid(m:project("pa", Wa, ba)) * R.softplus(lam)
  m:recurrence { log_a = log_a,
                 b = R.where(m.first, 1, R.sqrtb(1 - R.exp(2 * log_a))) * R.sigmoid(m:project("px", Wx, bx)) * m.x }
  m:output(m.h)
  return m
end

local K = tonumber(os.getenv("HEADS_K") or "0")
if K > 0 then return R.variants { mixer = rglru(K), chunk = { 8 }, prefix = { 32 }, fused = { true }, apart = { false } } end
local out = {}
for _, k in ipairs { 16, 128, 176, 256 } do
  local m = rglru(k)
  out[#out + 1] = R.decode { mixer = m }
  -- on tensor cores where the heads are a multiple of 64 channels
  if k % 64 == 0 then out[#out + 1] = R.decode { mixer = m, mma = true } end
end
return out
