-- expect: leaf index out of range
local core = require "recur.core"
local g = core.graph()
local p = core.leaf(g, "param", 1 << 40) -- here
