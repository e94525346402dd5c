-- The fuzz tests' grid: two variants, one per mixer, whose manifest has
-- every kind of entry (zeroed and plain workspaces of all three lives,
-- clusters, early launches, resident look-back, i32 args, expression
-- vars); generated in well under a second. tests/fuzz/manifests/base.json
-- is this grid's manifest (its script paths relative).
local R = require "recur"
local rglru = require "arch.rglru"
local samu = require "arch.samu"

return {
  R.variants { mixer = rglru, chunk = { 8 }, prefix = { 32 }, fused = { true }, scan = { "lookback" } },
  R.variants { mixer = samu, chunk = { 8 }, prefix = { 32 }, fused = { false }, shared_sfu = { true },
    fused_output = { true }, fused_write = { true }, scan = { "onepass" } },
}
