-- expect: attempt to perform arithmetic on a nil value (global 'undefined_thing')
local R = require "recur"
local m = R.mixer("bad")
local y = m.x * (undefined_thing + 1) -- here
