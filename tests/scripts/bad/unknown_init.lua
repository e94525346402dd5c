-- expect: unknown init the string "xavier" for parameter w
local R = require "recur"
local m = R.mixer("bad")
local w = m:param("w", "channel", "xavier") -- here
