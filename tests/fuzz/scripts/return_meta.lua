-- expect: malformed variant set
return setmetatable({}, { __name = "recur.variantset", -- here
  __index = function() while true do end end })
