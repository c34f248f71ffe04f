-- attack: loads cleanly, then hoards memory on its first decision and keeps it, so building the record's table for later decisions overflows the cap inside the C core's pushes; expect: loads; decisions on a record too large for what is left fall back to hold, the gateway keeps running
local policy = require "errgate.policy"
local hoard
return policy.define { name = "reload_decide_hoard", version = "1",
  classify = function(f, record)
    if record and not hoard then
      pcall(function() while true do hoard = { hoard } end end)
    end
    return "permanent"
  end,
  route = { permanent = "dlq", default = "dlq" } }
