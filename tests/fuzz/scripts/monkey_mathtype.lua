-- expect: k (channels per head)
math.type = function() return "integer" end
local R = require "recur"
local m = R.mixer("m", { k = 1.5 }) -- here
