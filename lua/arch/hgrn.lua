-- HGRN, the hierarchically gated recurrent unit of Qin, Yang and Zhong,
-- "Hierarchically Gated Recurrent Neural Network for Sequence Modeling"
-- (NeurIPS 2023, arXiv:2311.04823), one layer of it:
--
--   lambda[t] = gamma + (1 - gamma) * sigmoid(f[t])   forget gate, bounded below by gamma
--   c[t]      = silu(i[t])                             input
--   h[t]      = lambda[t] * h[t-1] + (1 - lambda[t]) * c[t]
--   y[t]      = h[t] * sigmoid(g[t])                   output gate
--
-- with f, i, g linear in the layer's input. The lower bound gamma is the
-- paper's per-layer, per-channel bound (there the cumulative softmax of a
-- parameter over the layers; here the layer's own bound, gamma =
-- sigmoid(gam), a channel parameter): higher layers get bounds closer to
-- 1 and so longer memories. As in Griffin's recurrent block, whose RG-LRU
-- takes its x from a dense linear layer, the input projection i belongs to
-- the layer around the mixer: the mixer's x is i. The gates f and g are
-- projections of it, block-diagonal over heads of 64 channels (weights
-- [h][in][out]) where the paper's are dense. The paper's recurrence is
-- complex-valued and its output normalised before the gate; this is the
-- real-valued form, and the normalisation and the output projection
-- belong to the layer too. 1 - lambda is written (1 - gamma) *
-- sigmoid(-f), which does not cancel where lambda is near 1. Each sequence
-- starts from h[-1] = 0. The backward is derived.
local R = require "recur"

local hgrn = R.mixer("hgrn", { k = 64 })

-- Parameters: 2*H*K*K + 3*D values.
local Wf  = hgrn:param("Wf",  "blockdiag", R.normal_rsqrt_k())   -- forget gate, [H][K][K]
local bf  = hgrn:param("bf",  "channel",   R.zeros())
local Wg  = hgrn:param("Wg",  "blockdiag", R.normal_rsqrt_k())   -- output gate
local bg  = hgrn:param("bg",  "channel",   R.zeros())
local gam = hgrn:param("gam", "channel",   R.const(1))           -- lower bound sigmoid(1) = 0.73

local f = hgrn:project("f", Wf, bf)
local g = hgrn:project("g", Wg, bg)
local x = hgrn.x

local gamma  = R.sigmoid(gam)
local lambda = gamma + (1 - gamma) * R.sigmoid(f)        -- in (gamma, 1)
local c      = x * R.sigmoid(x)                          -- silu(i), i = x

hgrn:recurrence { log_a = R.log(lambda),
                  b = (1 - gamma) * R.sigmoid(-f) * c }  -- (1 - lambda) * c
hgrn:output(hgrn.h * R.sigmoid(g))                       -- y = h * sigmoid(g)

return hgrn
