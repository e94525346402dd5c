-- RG-LRU, the real-gated linear recurrent unit of Griffin / RecurrentGemma,
-- written to be read line by line against spec/architectures.md ("RG-LRU").
-- The generator derives the whole backward from these lines.
--
-- A function of the head width K: the spec's and the seed's 64
-- (lua/arch/rglru.lua), RecurrentGemma 2B's and 9B's 256
-- (lua/arch/recurrentgemma.lua). Heads other than 64 run their
-- projections apart from the scans (R.variants' apart).
local R = require "recur"

local C = 8   -- the gate's constant

return function(K)
  local rglru = R.mixer("rglru", { k = K, controller = nil, dynamic_per_token = "2*D" })

  -- Parameters, in the spec's order: 2*H*K*K + 3*D values.
  local Wa  = rglru:param("Wa",  "blockdiag", R.normal_rsqrt_k())       -- [H][K][K], std 1/sqrt(K)
  local ba  = rglru:param("ba",  "channel",   R.zeros())                -- [D]
  local Wx  = rglru:param("Wx",  "blockdiag", R.normal_rsqrt_k())       -- [H][K][K]
  local bx  = rglru:param("bx",  "channel",   R.zeros())                -- [D]
  local lam = rglru:param("lam", "channel",   R.decay(0.9^2, 0.999^2))  -- a_param

  -- pa[t, h*K+j] = sum_i x[t, h*K+i] * Wa[h][i][j] + ba[h*K+j]   (px likewise)
  local pa = rglru:project("pa", Wa, ba)
  local px = rglru:project("px", Wx, bx)

  local x, first = rglru.x, rglru.first

  local r     = R.sigmoid(pa)                                  -- recurrence gate
  local i     = R.sigmoid(px)                                  -- input gate
  local log_a = -C * r * R.softplus(lam)
  local m     = R.where(first, 1, R.sqrtb(1 - R.exp(2 * log_a)))  -- m = 1 at a reset
  local b     = m * i * x

  rglru:recurrence { log_a = log_a, b = b }                    -- h = a * h_prev + b
  rglru:output(rglru.h)                                        -- y = h

  return rglru
end
