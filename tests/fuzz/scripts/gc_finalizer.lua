-- expect: finalizers
local t = setmetatable({}, { __gc = function() while true do end end }) -- here
