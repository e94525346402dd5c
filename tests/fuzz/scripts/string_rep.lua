-- expect: memory cap
local s = string.rep("x", 1 << 30) -- here
