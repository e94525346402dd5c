-- Variants taking per-token reset marks (packed documents): the forms the
-- calibration picks among at the seed's shapes, for both mixers, each
-- scan kind, with resets = { true } (lua/recur.lua: the option). Not part
-- of all.lua: recur gen lua/variants/resets.lua -o out/resets.
local R = require "recur"

return {
  R.variants {
    mixer  = require "arch.rglru",
    chunk  = { 8, 16 },
    prefix = { 32, 64 },
    fused  = { true },
    scan   = { "hierarchical", "lookback", "onepass" },
    resets = { true },
  },
  R.variants {
    mixer        = require "arch.samu",
    chunk        = { 8, 16 },
    prefix       = { 32, 64 },
    shared_sfu   = { true },
    fused_output = { true },
    fused_write  = { true },
    scan         = { "hierarchical", "lookback", "onepass" },
    resets       = { true },
  },
}
