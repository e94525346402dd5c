-- expect: attempt to index a boolean value
local core = require "recur.core"
local mt = getmetatable(core.graph())
mt.__gc = function() while true do end end -- here
