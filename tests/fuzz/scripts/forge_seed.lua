-- expect: unknown node kind 'seed'
local core = require "recur.core"
local g = core.graph()
local p = core.leaf(g, "seed", 0) -- here
