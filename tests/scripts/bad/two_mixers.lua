-- expect: an expression of mixer one is used with mixer two
local R = require "recur"
local one = R.mixer("one")
local two = R.mixer("two")
local function gate(e) return R.sigmoid(e) end
local y = two.x * gate(one.x) -- here
