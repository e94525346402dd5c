-- expect: unexpected symbol near '='
local R = require "recur"
local y = = 3 -- here
