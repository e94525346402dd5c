-- The HGRN variant grid (lua/arch/hgrn.lua): chunks 16 and 32 at prefix
-- 32, fused and unfused, with the hierarchical forward (4 variants), and
-- fused with the look-back forward and the one-pass backward (4 more). The
-- output gate is a projection, applied in the scan kernel (fused_output);
-- the unfused variants materialise a and b and run the gate's projection
-- again where the output (fwd_apply) or its derivative (bwd_reduce) needs
-- it. The output gate's derivative adds to RG-LRU's registers: elsewhere
-- ptxas spills (bwd_apply at chunk 8 and 64 and at prefix 64 and 128).
local R = require "recur"
local hgrn = require "arch.hgrn"

return {
  R.variants {
    mixer        = hgrn,
    chunk        = { 16, 32 },
    prefix       = { 32 },
    fused        = { true, false },
    fused_output = { true },
  },
  R.variants {
    mixer        = hgrn,
    chunk        = { 16, 32 },
    prefix       = { 32 },
    fused        = { true },
    fused_output = { true },
    scan         = { "lookback", "onepass" },
  },
}
