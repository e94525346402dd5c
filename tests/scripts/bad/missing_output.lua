-- expect: mixer bad has no output: call m:output(y)
local R = require "recur"
local m = R.mixer("bad")
m:recurrence { log_a = -0.1, b = m.x }
return R.variants { -- here
  mixer = m,
  chunk = { 8 },
  prefix = { 32 },
}
