-- expect: k (channels per head) must be an integer from 1 to
local R = require "recur"
local m = R.mixer("m", { k = math.maxinteger }) -- here
