-- expect: at most 1024
local R = require "recur"
local m = R.mixer("m")
local e = m.x
for i = 1, 2000 do e = e + i * m.x end
m:recurrence { log_a = -R.softplus(m.x), b = e } -- here
