-- expect: more than 16384 nodes
-- through recur.core, a few instructions a node: the cap, not the budget, stops it
local core = require "recur.core"
local g = core.graph()
local e = core.leaf(g, "x", 0)
for i = 1, 1e6 do e = core.op(g, "add", e, core.const(g, i)) end -- here
