-- expect: finite in float32
local R = require "recur"
local m = R.mixer("m")
m:recurrence { log_a = m.x * 1e300, b = m.x } -- here
