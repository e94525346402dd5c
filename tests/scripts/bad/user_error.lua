-- expect: my own message
local function helper()
  error("my own message") -- here
end
helper()
