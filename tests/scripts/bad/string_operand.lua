-- expect: R.exp: expected a number or an expression, got the string "x"
local R = require "recur"
local m = R.mixer("bad")
local y = m.h + R.exp("x") -- here
