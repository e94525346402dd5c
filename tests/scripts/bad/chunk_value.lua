-- expect: chunk 7 is not one of 8, 16, 32, 64
local R = require "recur"
return R.variants { -- here
  mixer = require "arch.rglru",
  chunk = { 8, 7 },
  prefix = { 32 },
}
