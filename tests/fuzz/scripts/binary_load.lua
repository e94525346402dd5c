-- expect: attempt to load a binary chunk
local chunk = string.dump(function() return 1 end)
chunk = chunk:sub(1, 30) .. string.rep("\255", 64) .. chunk:sub(95)
local f = assert(load(chunk, "x", "b")) -- here
f()
