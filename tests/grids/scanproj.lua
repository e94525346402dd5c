-- RecurrentGemma's RG-LRU (heads of 256, lua/arch/recurrentgemma.lua) with
-- the forward's projections inside fwd_scan (scan_proj, templates/
-- scan_proj.c; --sm sm_90a) beside the same variants with proj_fwd: the
-- two forms of each scan kind, whose y and projections should agree bit
-- for bit; from heads of 128, scan_proj's persistent form too (proj_ahead).
-- K from SCANPROJ_K in the environment (default 256; 64, 128).
-- The mixer is named rglru at every K: one K per folder.
local R = require "recur"

local k = tonumber(os.getenv("SCANPROJ_K") or "256")
local m = k == 256 and require "arch.recurrentgemma" or require "arch.rglru_heads" (k)
local grid = {
  R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { true }, apart = { true },
               scan_proj = { true, false }, scan = { "lookback", "onepass" } },
  R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { true }, apart = { true },
               scan_proj = { true }, scan = { "onepass" }, resets = { true }, states = { true } },
}
if k >= 128 then
  grid[#grid + 1] = R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { true }, apart = { true },
                                 scan_proj = { true }, proj_ahead = { true }, scan = { "lookback", "onepass" } }
  grid[#grid + 1] = R.variants { mixer = m, chunk = { 8 }, prefix = { 32 }, fused = { true }, apart = { true },
                                 scan_proj = { true }, proj_ahead = { true }, scan = { "onepass" }, resets = { true },
                                 states = { true } }
end
return grid
