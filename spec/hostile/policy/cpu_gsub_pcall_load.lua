-- gsub over 4 MB with pcall (a C function) as the replacement, at load: refused at load
-- error: budget
local s = ("x"):rep(4 * 1024 * 1024)
for i = 1, 100 do s:gsub(".", pcall) end

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
