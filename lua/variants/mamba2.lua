-- The Mamba-2-style grid (lua/arch/mamba2.lua): every chunk at prefix 32
-- and chunk 8 at prefixes 64 and 128, with and without shared special
-- functions (12 variants), and the look-back forward (and the one-pass
-- backward) with shared_sfu at chunks 8 and 16 (4 more). As SAMU's: dt, B
-- and C are token projections, computed in a pass of their own (fused =
-- false); the gated output is applied in the scan kernel (fused_output),
-- which writes the backward's checkpoints (fused_write); shared_sfu
-- evaluates softplus(dt) and the decay once per token instead of per
-- element. Chunks 16 and 32 at prefix 64 spill in ptxas (bwd_reduce, bwd_apply).
local R = require "recur"
local mamba2 = require "arch.mamba2"

local function set(chunk, prefix, sfu, scan)
  return R.variants {
    mixer        = mamba2,
    chunk        = chunk,
    prefix       = prefix,
    fused        = { false },
    shared_sfu   = sfu,
    fused_output = { true },
    fused_write  = { true },
    scan         = scan,
  }
end

return {
  set({ 8, 16, 32, 64 }, { 32 }, { true, false }, { "hierarchical" }),
  set({ 8 }, { 64, 128 }, { true, false }, { "hierarchical" }),
  set({ 8, 16 }, { 32 }, { true }, { "lookback", "onepass" }),
}
