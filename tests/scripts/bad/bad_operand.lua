-- expect: operand of *: expected a number or an expression, got boolean true
local R = require "recur"
local m = R.mixer("bad")
local y = m.x * true -- here
