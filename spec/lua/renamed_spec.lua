-- renamed_spec.lua — durations are named without a unit (base, max,
-- max_elapsed, retry_after_cap, a route entry's delay); the old names with
-- _ms are still read for one release, give the same policy, and each one
-- is a lint warning saying exactly what to write instead (errgate.renamed).
local policy = require "errgate.policy"
local lint = require "errgate.lint"
local cli = require "errgate.cli"

local function define(retry, route)
  return policy.define {
    name = "p", version = 1,
    classify = { { status = 503, class = "transient" }, { status = 429, class = "slow" }, { class = "permanent" } },
    retry = retry, route = route,
  }
end

local NEW = define(
  { fast = { attempts = 3, base = "100ms", max = "2s", max_elapsed = "1m", retry_after_cap = "30s", jitter = "none" },
    rungs = { ladder = { "30s", "5m" }, retry_after_cap = "2h" } },
  { transient = { retry = "fast" }, slow = { ladder = "rungs" },
    permanent = { action = "hold", delay = "1500ms" }, default = "dlq" })
local OLD = define(
  { fast = { attempts = 3, base_ms = 100, max_ms = "2s", max_elapsed_ms = 60000, retry_after_cap_ms = "30s",
             jitter = "none" },
    rungs = { ladder = { "30s", "5m" }, retry_after_cap_ms = 7200000 } },
  { transient = { retry = "fast" }, slow = { ladder = "rungs" },
    permanent = { action = "hold", delay_ms = 1500 }, default = "dlq" })

describe("durations named without a unit", function()
  it("compile the same schedules and route under the old names", function()
    assert.are.same(NEW.schedules, OLD.schedules)
    for _, status in ipairs({ 503, 429, 400 }) do
      for attempt = 1, 4 do
        local ctx = { attempt = attempt, class_attempts = attempt - 1, last_class = attempt > 1 and "transient" or nil }
        local f = { kind = "http", status = status }
        assert.are.same(NEW:decide(f, nil, ctx), OLD:decide(f, nil, ctx))
      end
    end
    assert.are.equal(1500, OLD:decide({ kind = "http", status = 400 }).delay_ms)
  end)

  it("note nothing for the new names", function()
    assert.are.same({}, NEW.deprecations)
    for _, f in ipairs(lint.lint(NEW)) do assert.are_not.equal("warning", f.level, f.message) end
  end)

  it("say, for each old name, exactly what to write instead, as lint warnings", function()
    assert.are.same({
      "retry.fast: `base_ms` is deprecated: write `base = \"100ms\"`",
      "retry.fast: `max_elapsed_ms` is deprecated: write `max_elapsed = \"1m\"`",
      "retry.fast: `max_ms` is deprecated: write `max = \"2s\"`",
      "retry.fast: `retry_after_cap_ms` is deprecated: write `retry_after_cap = \"30s\"`",
      "retry.rungs: `retry_after_cap_ms` is deprecated: write `retry_after_cap = \"2h\"`",
      "route.permanent: `delay_ms` is deprecated: write `delay = \"1s500ms\"`",
    }, OLD.deprecations)
    local warnings = {}
    for _, f in ipairs(lint.lint(OLD)) do
      if f.level == "warning" then warnings[#warnings + 1] = f.message end
    end
    assert.are.same(OLD.deprecations, warnings)
    assert.is_nil(lint.errors(OLD)) -- a warning: the policy still loads
    local text, code = cli.check(OLD)
    assert.are.equal(0, code)
    assert.matches("warning: retry%.fast: `base_ms` is deprecated: write `base = \"100ms\"`", text)
  end)

  it("are read from a route function's entry too, without a note at decide time", function()
    local p = policy.define { name = "f", version = 1, classify = { { class = "x" } },
      route = function() return { action = "hold", delay_ms = 250 } end }
    assert.are.equal(250, p:decide({ kind = "http", status = 500 }).delay_ms)
  end)
end)
