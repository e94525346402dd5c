-- expect: attempt to index a boolean value
local mt = getmetatable(io.stdout)
mt.__gc = function() while true do end end -- here
