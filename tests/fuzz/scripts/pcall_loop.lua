-- expect: instructions
-- a loop around pcall must not swallow the budget's error
while true do pcall(function() while true do end end) end -- here
