-- expect: field 'init' of parameter 1 of mixer toy is nil, expected string
local R = require "recur"
local s = R.variants { mixer = require "modules.toy", chunk = { 8 }, prefix = { 32 } } -- here
s.mixer.params[1].init = nil
return s
