-- RG-LRU at RecurrentGemma's heads of 256 channels (lua/arch/recurrentgemma.lua):
-- the block-diagonal projections run apart from the scans, on tensor cores
-- (templates/proj.c), and the scans read them; every scan kind, chunks 8 and
-- 16, prefix 32 (the fused K = 64 winners' neighbourhood). Its mixer is named
-- rglru, as lua/variants/rglru.lua's: generate each into a folder of its own.
-- Its decode steps sample from the same folder: rglru_decode_mma (the
-- projections on tensor cores; what python's step runs unpinned: 3.1x
-- faster at B = 256, D = 2560 on an H100) and rglru_decode (fp32).
local R = require "recur"
local rg = require "arch.recurrentgemma"

return {
  R.variants {
    mixer  = rg,
    chunk  = { 8, 16 },
    prefix = { 32, 64 },
    fused  = { true },
    scan   = { "hierarchical", "lookback", "onepass" },
  },
  -- the forward keeps no projection for the backward, which makes them
  -- again first (proj_fwd's kernel, the same bits): 4 bytes an element
  -- fewer held between the passes for a training step's layers, one
  -- projection kernel more in the backward (calibrate --saved-budget)
  R.variants {
    mixer     = rg,
    chunk     = { 8 },
    prefix    = { 32 },
    fused     = { true },
    scan      = { "lookback", "onepass" },
    recompute = { true },
  },
  -- a sequence's state: reset marks (packed documents), initial and final
  -- states (a prompt's state for the decode step, a row continuing from
  -- one); calls without one run the variants above; and the same keeping
  -- no projection (packed documents are where long rows train)
  R.variants {
    mixer     = rg,
    chunk     = { 8 },
    prefix    = { 32 },
    fused     = { true },
    scan      = { "lookback", "onepass" },
    resets    = { true },
    states    = { true },
    recompute = { false, true },
  },
  R.decode { mixer = rg },
  R.decode { mixer = rg, mma = true },
}
