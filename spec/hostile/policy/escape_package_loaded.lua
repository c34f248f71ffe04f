-- package.loaded to reach privileged modules: refused at load
-- error: package
local rt = package.loaded["errgate.runtime"]

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
