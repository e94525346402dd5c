-- The seed shapes' calibrated winners (bench/results/calibration_h200.json),
-- RG-LRU's and SAMU's, as one grid: the sets this experiment times.
local R = require "recur"
return {
  R.variants { mixer = require "arch.rglru", chunk = { 8 }, prefix = { 32 }, fused = { true }, scan = { "onepass" } },
  R.variants { mixer = require "arch.samu", chunk = { 8 }, prefix = { 32 }, fused = { false }, shared_sfu = { true },
    fused_output = { true }, fused_write = { true }, scan = { "onepass" } },
}
