-- expect: b must not depend on h
local R = require "recur"
local m = R.mixer("bad")
m:recurrence { -- here
  log_a = -1,
  b = m.x * R.tanh(m.h),
}
