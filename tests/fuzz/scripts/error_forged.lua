-- expect: (error object is a table value)
error(setmetatable({ where = 1 }, { __name = "recur.error" })) -- here
