-- expect: the script must return R.variants{...} or a list of them, not a nil
local x = 1 -- here
