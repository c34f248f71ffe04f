-- table.concat of 64 parts of 2 MB (a 128 MB string) at load: refused at load
-- error: memory
local part = ("x"):rep(2 * 1024 * 1024)
local t = {}
for i = 1, 64 do t[i] = part end
local s = table.concat(t)

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
