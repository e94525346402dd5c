-- expect: stack overflow
local t = setmetatable({}, { __index = function(t, k) return t[k] end }) -- here
return t.x
