-- The RG-LRU variant grid: chunk x prefix group x fusion, 4 x 3 x 2 = 24
-- variants, named like the seed's rows. Unfused variants compute the gates
-- in a separate pass and materialise a and b ([B, L, D] each).
local R = require "recur"

return R.variants {
  mixer  = require "arch.rglru",
  chunk  = { 8, 16, 32, 64 },
  prefix = { 32, 64, 128 },
  fused  = { true, false },
  rules  = {
    { "D % 64 == 0", "the width must be a multiple of 64 (heads of 64 channels)" },
  },
}
