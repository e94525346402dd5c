-- expect: mixer name must be an identifier
string.match = function() return "x" end
getmetatable("").__index = { match = function() return "x" end }
local R = require "recur"
local m = R.mixer("../evil") -- here
