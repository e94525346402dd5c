-- SAMU, the project's mixer built to the seed's footprint (3*D + 4
-- parameters, two fp32 controller coordinates per token, nothing
-- state-sized materialised), written to be read line by line against
-- spec/architectures.md ("SAMU"). Change it here and regenerate: the
-- backward is derived from these lines.
local R = require "recur"

local samu = R.mixer("samu", { k = 64, controller = "fp32_fused_coords", dynamic_per_token = "2" })

-- Parameters, in the spec's order: 3*D + 4 values.
local wu    = samu:param("wu",    "channel", R.normal(1))               -- controller weight of u
local wv    = samu:param("wv",    "channel", R.normal(1))               -- controller weight of v
local lam   = samu:param("lam",   "channel", R.decay(0.9^2, 0.999^2))   -- per-channel decay rate
local bu    = samu:param("bu",    "scalar",  R.zeros())
local bv    = samu:param("bv",    "scalar",  R.zeros())
local theta = samu:param("theta", "scalar",  R.const(math.log(8)))      -- log-temperature
local omega = samu:param("omega", "scalar",  R.const(0.5))              -- output skip scale

-- Controller: two coordinates per token from the whole token vector.
--   u[t] = bu + (1/sqrt(D)) * sum_c wu[c] * x[t,c]      (v likewise)
local u = samu:token_project("u", wu, bu, { scale = "rsqrt_d" })
local v = samu:token_project("v", wv, bv, { scale = "rsqrt_d" })

-- Shared special functions (once per token).
local s = R.softplus(u)                    -- decay strength >= 0
local g = R.sigmoid(v)                     -- write gate in (0, 1)

local x, h, first = samu.x, samu.h, samu.first

-- Per element.
local log_a = -R.exp(theta) * s * R.softplus(lam)
local m     = R.where(first, 1, R.sqrtb(1 - R.exp(2 * log_a)))   -- m = 1 at a reset

samu:recurrence { log_a = log_a, b = m * g * x }   -- h = a * h_prev + m * g * x
samu:output(h + omega * x)                          -- y = h + omega * x ("fused output")

return samu
