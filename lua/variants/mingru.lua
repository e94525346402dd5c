-- The minGRU variant grid (lua/arch/mingru.lua): chunk x prefix group x
-- fusion, 3 x 2 x 2 = 12 variants, and the look-back forward (and the
-- one-pass backward) with fused gates at prefix 32, 4 more. Its two
-- block-diagonal projections are RG-LRU's structure: the unfused variants
-- compute the gates in a pass of their own and materialise a and b. The
-- look-back forward at chunk 8 (which keeps fp16 step maps) spills 4 bytes
-- in ptxas: chunks 16 and 32 instead.
local R = require "recur"
local mingru = require "arch.mingru"

return {
  R.variants {
    mixer  = mingru,
    chunk  = { 8, 16, 32 },
    prefix = { 32, 64 },
    fused  = { true, false },
  },
  R.variants {
    mixer  = mingru,
    chunk  = { 16, 32 },
    prefix = { 32 },
    fused  = { true },
    scan   = { "lookback", "onepass" },
  },
}
