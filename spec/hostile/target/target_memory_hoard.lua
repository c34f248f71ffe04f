-- attack: the handler fills its state's memory to the cap and keeps it, so building the next record's table overflows inside the C core's pushes; expect: failures of kind lua, never an exit
local hoard
return function(record)
  if not hoard then
    pcall(function() local s = {} for i = 1, 1e9 do s[i] = ("x"):rep(100000) .. i end hoard = s end)
    pcall(function() while true do hoard = { hoard } end end)
  end
  return { status = 500 }
end
