-- expect: the script must return R.variants{...} or a list of them, not a number
local R = require "recur"
local m = R.mixer("bad")
return 42 -- here
