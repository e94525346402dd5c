-- expect: dynamic_per_token: shape expression "2*("
local R = require "recur"
local m = R.mixer("m", { dynamic_per_token = "2*(" }) -- here
