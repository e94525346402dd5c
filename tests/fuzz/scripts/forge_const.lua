-- expect: not finite in float32
local core = require "recur.core"
local g = core.graph()
local p = core.const(g, 1e300) -- here
