-- lint_spec.lua — errgate.lint: class/route coverage of a defined policy,
-- and the runtime refusing to load a policy with lint errors.
local policy = require "errgate.policy"
local lint = require "errgate.lint"
local rt = require "errgate.runtime"

local function def(classify, route)
  return policy.define { name = "l", version = "1", classify = classify, route = route }
end

local function levels(problems)
  local out = {}
  for _, p in ipairs(problems) do out[#out + 1] = p.level .. ": " .. p.message end
  return out
end

describe("errgate.lint", function()
  it("passes a policy whose every classified class is routed", function()
    local pol = def({ { status = 503, class = "transient" }, { class = "unknown" } },
                    { transient = "hold", default = "dlq" })
    assert.are.same({}, lint.lint(pol))
    assert.is_nil(lint.errors(pol))
  end)

  it("exempts the catch-all class: falling to default is its purpose", function()
    local pol = def({ { class = "whatever" } }, { default = "dlq" })
    assert.are.same({}, lint.lint(pol))
  end)

  it("reports a classified class without a route as an error", function()
    local pol = def({ { status = 404, class = "gone" }, { status = 409, class = "dup" }, { class = "unknown" } },
                    { dup = "ignore", default = "dlq" })
    assert.are.same({ "error: class 'gone' (classify rule 1) has no route: it would fall to route.default" },
                    levels(lint.lint(pol)))
    assert.matches("class 'gone'", lint.errors(pol))
  end)

  it("warns about routes only an explicit class can reach", function()
    local pol = def({ { explicit = true }, { class = "unknown" } }, { permanent = "dlq", default = "hold" })
    assert.are.same({ "warning: route 'permanent' is reached only by an explicit class from the service (no classify rule returns it)" },
                    levels(lint.lint(pol)))
    assert.is_nil(lint.errors(pol))
  end)

  it("says what it cannot check when classify or route is a function", function()
    local pol = def(function() return "x" end, { default = "dlq" })
    assert.are.equal("info", lint.lint(pol)[1].level)
  end)

  it("the shipped default policy lints clean", function()
    local pol = assert(rt.load_policy("policies/default.lua"))
    assert.are.same({}, lint.lint(pol))
  end)

  it("the runtime refuses to load a policy with lint errors, naming the file", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write([[return require("errgate.policy").define { name = "x", version = "1",
      classify = { { status = 404, class = "gone" }, { class = "unknown" } }, route = { default = "dlq" } }]])
    f:close()
    local pol, err = rt.load_policy(path)
    os.remove(path)
    assert.is_nil(pol)
    assert.are.equal(path .. ": lint: class 'gone' (classify rule 1) has no route: it would fall to route.default", err)
  end)
end)
