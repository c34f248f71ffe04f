-- attack: fills the state's memory to the cap at load time and keeps it, so every allocation the C core makes afterwards (refs, interned names, the record's table) fails; expect: refused at load (not enough memory), never an exit or a hang
local policy = require "errgate.policy"
local hoard
local pol = policy.define { name = "reload_memory_hoard", version = "1",
  classify = function(f, record) return record and "permanent" or "permanent" end,
  route = { permanent = "dlq", default = "dlq" } }
pcall(function() local s = {} for i = 1, 1e9 do s[i] = ("x"):rep(1000) .. i end hoard = s end)
pcall(function() while true do hoard = { hoard } end end)
return pol
