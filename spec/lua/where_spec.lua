-- where_spec.lua — errgate.where, the `--where` expression of `errgate
-- replay`: expressions and statement blocks, the read-only record view, the
-- sandbox, and one-line errors. (The CPU and memory bounds are the C VM's,
-- tested end to end in spec/e2e/test_replay.sh.)
local where = require "errgate.where"

local function rec()
  return { topic = "pay.dlq", partition = 2, offset = 9, timestamp = 1767323045678, key = "k1",
           headers = { ["error.code"] = "http_400", ["error.class"] = "permanent", trace = "t" } }
end

local function run(expr, r)
  local fn, err = where.compile(expr)
  assert(fn, err)
  return fn(r or rec())
end

describe("errgate.where", function()
  it("evaluates an expression against the record's headers and coordinates", function()
    assert.is_true(run('headers["error.code"] == "http_400"'))
    assert.is_false(run('headers["error.code"] == "http_503"'))
    assert.is_true(run('topic == "pay.dlq" and partition == 2 and offset == 9 and key == "k1"'))
    assert.is_true(run('timestamp > 1767323045000'))
    assert.is_true(run('record.headers.trace == "t" and record.offset == 9'))
  end)

  it("uses Lua truth: nil and false do not match, anything else does", function()
    assert.is_true(run('headers["error.code"]'))
    assert.is_false(run('headers["missing"]'))
    assert.is_true(run('0'))
  end)

  it("accepts a block of statements with a return", function()
    assert.is_true(run('local c = headers["error.code"] return c:match("^http_4") ~= nil'))
    assert.is_false(run('local n = 0 for _ in pairs(headers) do n = n + 1 end return n ~= 3'))
    assert.is_false(run('local x = 1'))
  end)

  it("sees no key when the record has none", function()
    local r = rec()
    r.key = nil
    assert.is_true(run('key == nil', r))
  end)

  it("keeps the record and the environment read-only", function()
    for _, expr in ipairs({ 'headers["error.code"] = "x"', 'topic = "x"', 'foo = 1', 'record.offset = 1',
                            '_G.x = 1' }) do
      local fn = assert(where.compile(expr))
      local ok, err = pcall(fn, rec())
      assert.is_false(ok, expr)
      assert.matches("read%-only", err, 1, false, expr)
    end
    assert.has_error(function() run('setmetatable(headers, nil)') end)
    local r = rec()
    pcall(assert(where.compile('(function() headers.trace = "changed" end)()')), r)
    assert.are.equal("t", r.headers.trace)
  end)

  it("does not leak one record into the next", function()
    local fn = assert(where.compile('key == "k1"'))
    assert.is_true(fn(rec()))
    local other = rec()
    other.key = "k2"
    assert.is_false(fn(other))
  end)

  it("runs in the policy sandbox", function()
    for _, name in ipairs({ "os", "io", "ffi", "debug", "load", "loadstring", "dofile", "require 'ffi'" }) do
      local fn = where.compile(name .. " ~= nil and " .. name)
      if fn then
        local ok, v = pcall(fn, rec())
        assert.is_true(not ok or v == false, name)
      end
    end
    assert.has_error(function() run('require("errgate.runtime")') end)
  end)

  it("refuses bad text with one line naming --where", function()
    local fn, err = where.compile('headers["error.code" ==')
    assert.is_nil(fn)
    assert.matches("^%-%-where:1: ", err)
    assert.is_nil(err:find("\n"))
    assert.are.equal("--where: the expression is empty", select(2, where.compile("  ")))
    assert.are.equal("--where: bytecode is refused", select(2, where.compile("\27LJ")))
  end)
end)
