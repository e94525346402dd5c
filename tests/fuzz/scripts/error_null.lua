-- expect: (error object is a table value)
local ok, e = pcall(require("recur").mixer, 1)
error(setmetatable({}, getmetatable(e))) -- here
