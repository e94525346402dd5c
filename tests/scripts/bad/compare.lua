-- expect: use R.gt(a, b) or R.lt(a, b)
local R = require "recur"
local m = R.mixer("bad")
if m.x < m.h then -- here
  print("never")
end
