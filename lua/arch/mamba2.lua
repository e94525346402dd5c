-- A Mamba-2-style selective scalar decay: the state space duality layer of
-- Dao and Gu, "Transformers are SSMs: Generalized Models and Efficient
-- Algorithms Through Structured State Space Duality" (ICML 2024,
-- arXiv:2405.21060), with a state of one value per channel (N = 1):
--
--   dt[t] = softplus(dt_proj(x[t]))                    step size, one per token
--   a[t]  = exp(-exp(A_log) * dt[t])                   scalar decay (A = -exp(A_log))
--   h[t]  = a[t] * h[t-1] + dt[t] * B[t] * x[t]
--   y[t]  = (C[t] * h[t] + Dskip * x[t]) * silu(z[t])  gated output
--
-- As in Mamba-2 the decay is one scalar per token (A times the identity),
-- and dt, B and C are input-dependent values shared by every channel: here
-- per-token projections over the whole width (the token stage, one fp32
-- value per token each), where Mamba-2 has one dt per head and B, C of N
-- values per group. The gate z is a projection of x, block-diagonal over
-- heads of 64 channels (weights [h][in][out]) where Mamba-2's is dense;
-- Dskip is the per-channel skip D. Each sequence starts from h[-1] = 0.
-- The backward is derived.
local R = require "recur"

local mamba2 = R.mixer("mamba2", { k = 64 })

-- Parameters: H*K*K + 5*D + 4 values.
local A_log = mamba2:param("A_log", "scalar",    R.const(math.log(4)))   -- A = -4
local wdt   = mamba2:param("wdt",   "channel",   R.normal(1))
local bdt   = mamba2:param("bdt",   "scalar",    R.const(math.log(math.exp(0.05) - 1)))  -- dt = 0.05 at x = 0
local wB    = mamba2:param("wB",    "channel",   R.normal(1))
local bB    = mamba2:param("bB",    "scalar",    R.const(1))
local wC    = mamba2:param("wC",    "channel",   R.normal(1))
local bC    = mamba2:param("bC",    "scalar",    R.const(1))
local Wz    = mamba2:param("Wz",    "blockdiag", R.normal_rsqrt_k())
local bz    = mamba2:param("bz",    "channel",   R.zeros())
local Dskip = mamba2:param("Dskip", "channel",   R.const(1))

-- per token: bias + (1/sqrt(D)) * sum_c w[c] * x[t,c]
local pdt = mamba2:token_project("dt", wdt, bdt, { scale = "rsqrt_d" })
local B   = mamba2:token_project("B",  wB,  bB,  { scale = "rsqrt_d" })
local C   = mamba2:token_project("C",  wC,  bC,  { scale = "rsqrt_d" })
local z   = mamba2:project("z", Wz, bz)

local x, h = mamba2.x, mamba2.h
local dt = R.softplus(pdt)

mamba2:recurrence { log_a = -R.exp(A_log) * dt,          -- one decay per token
                    b = dt * B * x }
mamba2:output((C * h + Dskip * x) * (z * R.sigmoid(z)))  -- silu(z) gate

return mamba2
