-- expect: mixer bad has no recurrence
local R = require "recur"
local m = R.mixer("bad")
m:output(m.h)
return R.variants { mixer = m, chunk = { 8 }, prefix = { 32 } } -- here
