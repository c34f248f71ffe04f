-- policy.lua — the payments demo's policy: policies/payments.lua's rules
-- (lib/payments.lua, reached through the symlink lib -> ../../policies/lib)
-- with fast rungs, 1s / 2s / 4s, so the whole story fits in a minute.
local payments = require "payments"

return payments.define {
  name = "payments-demo",
  version = "1",
  ladder = { "1s", "2s", "4s" },
}
