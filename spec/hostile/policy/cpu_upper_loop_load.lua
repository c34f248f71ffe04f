-- string.upper of a 12 MB string in a loop at load (each call one VM instruction, long C work): refused at load
-- error: budget
local big = ("x"):rep(12 * 1024 * 1024)
for i = 1, 1e9 do local u = big:upper() end

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
