-- expect: memory cap
local t = {}
for i = 1, 1e12 do t[i] = { i, i, i } end -- here
