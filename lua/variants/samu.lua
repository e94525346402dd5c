-- The SAMU variant grid: chunk x prefix group x shared special functions,
-- 4 x 3 x 2 = 24 variants, named like the seed's rows. The controller
-- (u, v in fp32) runs in a pass of its own over whole tokens (fused = false);
-- the output y = h + omega*x is applied in the scan kernel (fused_output),
-- which also writes the backward's checkpoints (fused_write). shared_sfu
-- evaluates softplus(u) and sigmoid(v) once per token instead of per element.
-- The look-back forward (scan = "lookback"; "onepass": backward too) is offered
-- with shared_sfu, short chunks and prefix 32 or 64, where the hierarchical one is fastest.
local R = require "recur"
local samu = require "arch.samu"

return {
  R.variants {
    mixer        = samu,
    chunk        = { 8, 16, 32, 64 },
    prefix       = { 32, 64, 128 },
    fused        = { false },
    shared_sfu   = { true, false },
    fused_output = { true },
    fused_write  = { true },
  },
  R.variants {
    mixer        = samu,
    chunk        = { 8, 16 },
    prefix       = { 32, 64 },
    fused        = { false },
    shared_sfu   = { true },
    fused_output = { true },
    fused_write  = { true },
    scan         = { "lookback", "onepass" },
  },
}
