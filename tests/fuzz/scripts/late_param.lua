-- expect: declare its parameters and projections before R.variants
local R = require "recur"
local m = R.mixer("m")
m:recurrence { log_a = -R.softplus(m.x), b = m.x }
m:output(m.h)
local s = R.variants { mixer = m, chunk = { 8 }, prefix = { 32 } }
local late = m:param("late", "channel", R.zeros()) -- here
return s
