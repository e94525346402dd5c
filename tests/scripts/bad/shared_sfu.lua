-- expect: shared_sfu needs per-token shared expressions; mixer rglru has none
local R = require "recur"
local rglru = require "arch.rglru"
local grids = {}
grids[1] = R.variants { mixer = rglru, chunk = { 8 }, prefix = { 32 }, shared_sfu = { false, true } } -- here
return grids
