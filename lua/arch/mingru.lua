-- minGRU, the minimal gated recurrent unit of Feng, Tung, Ahmed, Bengio and
-- Hajimirsadeghi, "Were RNNs All We Needed?" (2024, arXiv:2410.01201):
--
--   z[t]  = sigmoid(Linear_z(x[t]))                 update gate
--   h~[t] = Linear_h(x[t])                          candidate state
--   h[t]  = (1 - z[t]) * h[t-1] + z[t] * h~[t]
--
-- Neither gate reads h[t-1], so this is a diagonal linear recurrence
-- h = a * h_prev + b with a = 1 - z, written in log space without a
-- cancellation: log(1 - sigmoid(k)) = log(sigmoid(-k)) = -softplus(k).
-- The paper's linear layers are dense; here, as RG-LRU's gates, they are
-- block-diagonal over heads of 64 channels (the projections the templates
-- run on tensor cores), with the weight layout [h][in][out]. Each sequence
-- starts from h[-1] = 0, so its first step is h[0] = z[0] * h~[0], as in the
-- paper. The generator derives the whole backward from these lines.
local R = require "recur"

local mingru = R.mixer("mingru", { k = 64 })

-- Parameters: 2*H*K*K + 2*D values.
local Wz = mingru:param("Wz", "blockdiag", R.normal_rsqrt_k())   -- [H][K][K], std 1/sqrt(K)
local bz = mingru:param("bz", "channel",   R.zeros())            -- [D]
local Wh = mingru:param("Wh", "blockdiag", R.normal_rsqrt_k())   -- [H][K][K]
local bh = mingru:param("bh", "channel",   R.zeros())            -- [D]

-- pz[t, h*K+j] = sum_i x[t, h*K+i] * Wz[h][i][j] + bz[h*K+j]   (ph likewise)
local pz = mingru:project("pz", Wz, bz)
local ph = mingru:project("ph", Wh, bh)

local z = R.sigmoid(pz)                 -- update gate in (0, 1)

mingru:recurrence { log_a = -R.softplus(pz),   -- a = 1 - z
                    b = z * ph }               -- z * h~
mingru:output(mingru.h)                        -- y = h

return mingru
