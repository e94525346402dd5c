-- expect: a manifest holds each variant once
local R = require "recur"
local toy = require "modules.toy"
return { R.variants { mixer = toy, chunk = { 8 }, prefix = { 32 } },
         R.variants { mixer = toy, chunk = { 8, 16 }, prefix = { 32 } } } -- here
