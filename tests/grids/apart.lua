-- RG-LRU (lua/arch/rglru_heads.lua) with heads of K channels, its
-- block-diagonal projections run apart from the scans (templates/proj.c),
-- in the three scan kinds: K from APART_K in the environment (default 256,
-- RecurrentGemma's; Griffin 7B has 176), or 64, beside which the fused
-- kernels of lua/variants/rglru.lua give the same math. The mixer is named
-- rglru at every K, so verify judges it by ref/'s RG-LRU: one K per folder.
local R = require "recur"

local k = tonumber(os.getenv("APART_K") or "256")
return R.variants { mixer = require "arch.rglru_heads" (k), chunk = { 8, 16 }, prefix = { 32 }, fused = { true },
                    apart = { true }, scan = { "hierarchical", "lookback", "onepass" } }
