-- expect: unknown parameter kind "diagonal"
local R = require "recur"
local m = R.mixer("bad", {})
local w = m:param("w", "diagonal", R.zeros()) -- here
