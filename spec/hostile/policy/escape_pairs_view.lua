-- pairs over each module of the policy API, writing back every field it finds (a nested real table, a function): refused at load
-- error: read-only
for _, name in ipairs({ "errgate.policy", "errgate.duration" }) do
  local m = require(name)
  for k, v in pairs(m) do
    if type(v) == "table" then v.evil = true end
    m[k] = v
  end
end

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
