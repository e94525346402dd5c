-- expect: the grid has 96 variants
local R = require "recur"
return R.variants { -- here
  mixer = require "arch.samu",
  chunk = { 8, 16, 32, 64 }, prefix = { 32, 64, 128 }, fused = { true, false },
  fused_output = { true, false }, fused_write = { true, false },
}
