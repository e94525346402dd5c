-- Packed documents with a state each (lua/recur.lua: the option docs):
-- cu_seqlens [N + 1] over one row, with h0, hT, dhT and dh0 of [N][D], in
-- the form fla and flash-attn take; the same variants take the reset/h0
-- form (reset marks, a state per row). Both mixers, every scan kind, the
-- chunk and prefix of the seed's winners. Not part of all.lua:
-- recur gen lua/variants/docs.lua -o out/docs.
local R = require "recur"
local rglru, samu = require "arch.rglru", require "arch.samu"

return {
  R.variants {
    mixer  = rglru,
    chunk  = { 8, 16 },
    prefix = { 32 },
    fused  = { true },
    scan   = { "hierarchical", "lookback", "onepass" },
    docs   = { true },
  },
  R.variants {
    mixer        = samu,
    chunk        = { 8, 16 },
    prefix       = { 32 },
    shared_sfu   = { true },
    fused_output = { true },
    fused_write  = { true },
    scan         = { "hierarchical", "lookback", "onepass" },
    docs         = { true },
  },
}
