-- RG-LRU at RecurrentGemma's heads of 256 channels (lua/arch/recurrentgemma.lua):
-- the block-diagonal projections run apart from the scans, on tensor cores
-- (templates/proj.c), and the scans read them; every scan kind, chunks 8 and
-- 16, prefix 32 (the fused K = 64 winners' neighbourhood). Its mixer is named
-- rglru, as lua/variants/rglru.lua's: generate each into a folder of its own.
local R = require "recur"

return R.variants {
  mixer  = require "arch.recurrentgemma",
  chunk  = { 8, 16 },
  prefix = { 32, 64 },
  fused  = { true },
  scan   = { "hierarchical", "lookback", "onepass" },
}
