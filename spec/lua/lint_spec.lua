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
    assert.are.same({ "warning: route 'permanent' is reached only by an explicit class from the service"
                      .. " (no classify rule returns it)" },
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

  describe("ladders and ordering", function()
    local function laddered(route)
      return policy.define { name = "lad", version = "1",
        classify = { { status = 503, class = "transient" }, { status = 429, class = "throttled" },
          { class = "unknown" } },
        retry = { quick = { attempts = 1, base = 10 }, provider = { ladder = { "30s", "5m" } } },
        route = route or { transient = { retry = "quick", exhausted = { ladder = "provider" } },
                           throttled = { ladder = "provider" }, default = "dlq" } }
    end
    local PART = 'refused under ordering="partition"'

    it("refuses each ladder route under ordering partition, naming route and ladder", function()
      local pol = laddered()
      assert.are.same({
        "error: route 'throttled' uses ladder 'provider': " .. PART,
        "error: route 'transient' uses ladder 'provider': " .. PART,
      }, levels(lint.lint(pol, { ordering = "partition" })))
      assert.are.equal("route 'throttled' uses ladder 'provider': " .. PART .. "; and 1 more",
        lint.errors(pol, { ordering = "partition" }))
    end)

    it("says the same as info without an ordering, and lint.errors(pol) stays clean", function()
      local pol = laddered()
      local found = lint.lint(pol)
      assert.are.equal(2, #found)
      for _, p in ipairs(found) do
        assert.are.equal("info", p.level)
        assert.matches("^route '%a+' uses ladder 'provider': would be " .. PART:gsub("%p", "%%%0"), p.message)
      end
      assert.is_nil(lint.errors(pol))
      assert.is_nil(lint.errors(pol, {}))
    end)

    it("has nothing to say under ordering none, and an info under key", function()
      local pol = laddered()
      assert.are.same({}, lint.lint(pol, { ordering = "none" }))
      local key = lint.lint(pol, { ordering = "key" })
      assert.are.same({ "info", "info" }, { key[1].level, key[2].level })
      assert.matches("key behaves as none for ladders", key[1].message)
      assert.is_nil(lint.errors(pol, { ordering = "key" }))
    end)

    it("leaves policies without ladders alone under partition", function()
      assert.are.same({}, lint.lint(assert(rt.load_policy("policies/default.lua")), { ordering = "partition" }))
    end)

    it("warns about a route function in a policy with ladders under partition", function()
      local pol = laddered(function() return { ladder = "provider" } end)
      local found = levels(lint.lint(pol, { ordering = "partition" }))
      assert.are.same({ "info: classify or route is a function: class/route coverage not checked",
        "warning: the route function may return ladder 'provider': it must not under ordering=\"partition\""
          .. " (ctx.ordering tells it)" },
        found)
      assert.is_nil(lint.errors(pol, { ordering = "partition" }))
      assert.are.equal("info", lint.lint(pol)[2].level)
    end)

    it("refuses bad opts", function()
      local pol = laddered()
      assert.has_error(function() lint.lint(pol, { ordering = "strict" }) end,
        'lint: opts.ordering must be "partition", "key" or "none", got strict')
      assert.has_error(function() lint.errors(pol, "partition") end, "lint: opts must be a table, got string")
    end)

    it("the runtime loads a laddered policy (load and reload lint without an ordering)", function()
      local pol = assert(rt.load_policy("policies/payments.lua"))
      assert.are.equal("payments@1", pol.id)
      assert.matches("^route 'throttled' uses ladder 'provider': " .. PART:gsub("%p", "%%%0"),
        lint.errors(pol, { ordering = "partition" }))
    end)
  end)
end)

describe("errgate.runtime known_classes (operator overrides are checked against it)", function()
  it("lists the classes classify rules return and the route table names, default aside", function()
    local pol = def({ { explicit = true }, { status = 503, class = "transient" }, { class = "unknown" } },
                    { transient = "hold", permanent = "dlq", default = "dlq" })
    assert.same({ "permanent", "transient", "unknown" }, rt.known_classes(pol))
  end)
  it("is empty (any class) when classify is a function", function()
    local pol = def(function() return "x", "y" end, { x = "dlq", default = "dlq" })
    assert.same({}, rt.known_classes(pol))
  end)
end)
