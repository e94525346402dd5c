-- expect: stack overflow
local function f(n) return 1 + f(n + 1) end -- here
return f(1)
