-- expect: (error object is a table value)
error(setmetatable({}, { __tostring = function() error("again") end })) -- here
