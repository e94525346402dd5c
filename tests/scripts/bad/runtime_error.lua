-- expect: attempt to call a nil value (field 'cosh')
local R = require "recur"
local m = R.mixer("bad")
local y = R.cosh(m.x) -- here
