-- The RG-LRU variant grid: chunk x prefix group x fusion, 4 x 3 x 2 = 24
-- variants, named like the seed's rows. Unfused variants compute the gates
-- in a separate pass and materialise a and b ([B, L, D] each). The
-- look-back forward (scan = "lookback"; "onepass": backward too) is offered
-- where the hierarchical forward is fastest: fused gates, short chunks, prefix 32 or 64.
local R = require "recur"
local rglru = require "arch.rglru"

return {
  R.variants {
    mixer  = rglru,
    chunk  = { 8, 16, 32, 64 },
    prefix = { 32, 64, 128 },
    fused  = { true, false },
  },
  R.variants {
    mixer  = rglru,
    chunk  = { 8, 16 },
    prefix = { 32, 64 },
    fused  = { true },
    scan   = { "lookback", "onepass" },
  },
}
