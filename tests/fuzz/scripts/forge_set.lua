-- expect: field 'mixer' of the set is nil, expected table
return setmetatable({}, { __name = "recur.variantset" }) -- here
