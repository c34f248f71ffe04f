-- pairs over a module view to find a nested real table and write to it: refused at load
-- error: read-only
for k, v in pairs(require("errgate.backoff")) do
  if type(v) == "table" then v.evil = true end
end

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
