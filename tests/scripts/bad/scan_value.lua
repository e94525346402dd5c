-- expect: scan "blelloch" is not one of hierarchical, lookback, onepass
local R = require "recur"
return R.variants { -- here
  mixer = require "arch.rglru",
  chunk = { 8 },
  prefix = { 32 },
  scan = { "lookback", "blelloch" },
}
