-- Variants taking a sequence state (lua/recur.lua: the options resets and
-- states): the forms the calibration picks among at the seed's shapes, for
-- both mixers and every scan kind. resets = { true }: per-token reset
-- marks (packed documents); states = { true }: initial and final states
-- (h0, hT, dhT, dh0), with and without marks; map = { true }: and the
-- row's map (map_loga, map_h), at one chunk and prefix for every scan
-- kind. Not part of all.lua:
-- recur gen lua/variants/state.lua -o out/state.
local R = require "recur"
local rglru, samu = require "arch.rglru", require "arch.samu"

return {
  R.variants {
    mixer  = rglru,
    chunk  = { 8, 16 },
    prefix = { 32, 64 },
    fused  = { true },
    scan   = { "hierarchical", "lookback", "onepass" },
    resets = { true },
  },
  R.variants {
    mixer  = rglru,
    chunk  = { 8, 16 },
    prefix = { 32, 64 },
    fused  = { true },
    scan   = { "hierarchical", "lookback", "onepass" },
    resets = { false, true },
    states = { true },
  },
  R.variants {
    mixer  = rglru,
    chunk  = { 8 },
    prefix = { 32 },
    fused  = { true },
    scan   = { "hierarchical", "lookback", "onepass" },
    resets = { false, true },
    states = { true },
    map    = { true },
  },
  R.variants {
    mixer        = samu,
    chunk        = { 8, 16 },
    prefix       = { 32, 64 },
    shared_sfu   = { true },
    fused_output = { true },
    fused_write  = { true },
    scan         = { "hierarchical", "lookback", "onepass" },
    resets       = { true },
  },
  R.variants {
    mixer        = samu,
    chunk        = { 8, 16 },
    prefix       = { 32, 64 },
    shared_sfu   = { true },
    fused_output = { true },
    fused_write  = { true },
    scan         = { "hierarchical", "lookback", "onepass" },
    resets       = { false, true },
    states       = { true },
  },
  R.variants {
    mixer        = samu,
    chunk        = { 8 },
    prefix       = { 32 },
    shared_sfu   = { true },
    fused_output = { true },
    fused_write  = { true },
    scan         = { "hierarchical", "lookback", "onepass" },
    resets       = { false, true },
    states       = { true },
    map          = { true },
  },
}
