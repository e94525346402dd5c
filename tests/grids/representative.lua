-- The representative grid of the default test suite: 10 of the 64 variants
-- of lua/variants/all.lua, chosen so that every template path is generated
-- and every PTX check (tests/ptxas_test.sh, tests/ptx_structure_test.sh)
-- meets each case it distinguishes. The full grid stays checked by
-- `ctest -C Full -L full` and by main.sh on out/ptx.
--
--  RG-LRU (block-diagonal projections on tensor cores)
--   1 fused_grouped_prefix32_hierarchical_chunk8  hierarchical forward with
--     fused gates (fwd_reduce's tanh.approx); chunk 8: pass A is the
--     backward's only forward sweep, 16-bit h maps, the reverse step's
--     dproj fragments; prefix 32: 8-byte row stores in bwd_apply
--   2 fused_grouped_prefix32_lookback_chunk8      look-back forward that
--     keeps fp16 step maps behind an overflow vote (one of the two)
--   3 fused_grouped_prefix32_onepass_chunk8       one-pass backward, and
--     the other forward with kept fp16 maps
--   4 fused_grouped_prefix64_onepass_chunk16      one-pass at prefix 64,
--     chunk 16: a look-back forward that keeps no maps; 16-bit h maps
--     without chunk 8's reverse-step limit; 4-byte row stores (mma order)
--   5 grouped_prefix128_hierarchical_chunk16      unfused: gates in a pass
--     of their own, a and b materialized; prefix 128 (4-byte row stores)
--   6 fused_grouped_prefix64_hierarchical_chunk64 the largest chunk (most
--     registers per lane), fp32 h maps in the backward
--  SAMU (per-token fp32 controller, token stage)
--   7 ..._shared_sfu_grouped_prefix32_hierarchical_chunk8   hierarchical,
--     token values shared per token
--   8 ..._grouped_prefix128_hierarchical_chunk32  without shared_sfu: the
--     controller's softplus per element; prefix 128, chunk 32
--   9 ..._shared_sfu_grouped_prefix64_lookback_chunk16      look-back forward
--  10 ..._shared_sfu_grouped_prefix32_onepass_chunk8        one-pass backward
--     that finishes the token stage itself (tok_tail)
local R = require "recur"
local rglru = require "arch.rglru"
local samu = require "arch.samu"

local function rg(chunk, prefix, fused, scan)
  return R.variants { mixer = rglru, chunk = { chunk }, prefix = { prefix }, fused = { fused }, scan = { scan } }
end
local function sa(chunk, prefix, shared_sfu, scan)
  return R.variants { mixer = samu, chunk = { chunk }, prefix = { prefix }, fused = { false },
    shared_sfu = { shared_sfu }, fused_output = { true }, fused_write = { true }, scan = { scan } }
end

return {
  rg(8, 32, true, "hierarchical"),
  rg(8, 32, true, "lookback"),
  rg(8, 32, true, "onepass"),
  rg(16, 64, true, "onepass"),
  rg(16, 128, false, "hierarchical"),
  rg(64, 64, true, "hierarchical"),
  sa(8, 32, true, "hierarchical"),
  sa(32, 128, false, "hierarchical"),
  sa(16, 64, true, "lookback"),
  sa(8, 32, true, "onepass"),
}
