-- sandbox_spec.lua — rt.load_policy / rt.load_target: text only, sandboxed,
-- one-line errors naming file and line.
local rt = require "errgate.runtime"

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))

local function write(name, src)
  local path = dir .. "/" .. name
  local fh = assert(io.open(path, "wb"))
  fh:write(src)
  fh:close()
  return path
end

local MINIMAL = [[
local policy = require "errgate.policy"
return policy.define { name = "p", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" } }
]]

describe("the sandbox", function()
  teardown(function() os.execute("rm -rf '" .. dir .. "'") end)

  it("loads a minimal policy", function()
    local pol, err = rt.load_policy(write("ok.lua", MINIMAL))
    assert.is_nil(err)
    assert.are.equal("p@1", rt.policy_id(pol))
    assert.are.equal("dlq", rt.decide(pol, { kind = "http", status = 500 }, {}, {}).action)
  end)

  it("offers only the allowed globals", function()
    local names = {
      "os", "io", "ffi", "debug", "package", "jit", "bit", "coroutine", "load", "loadstring",
      "dofile", "loadfile", "getfenv", "setfenv", "getmetatable", "rawset", "collectgarbage",
      "module", "print", "newproxy", "gcinfo",
    }
    local path = write("probe.lua", [[
      local names = ...
      return function()
        local seen = {}
        for _, n in ipairs(]] .. "{'" .. table.concat(names, "','") .. "'}" .. [[) do
          if _G[n] ~= nil then seen[#seen + 1] = n end
        end
        return seen, type(string.format), type(table.concat), type(math.floor),
          type(setmetatable), type(pcall), string.dump, ("").dump
      end
    ]])
    local target = assert(rt.load_target(path))
    local seen, fmt, concat, floor, smt, pc, dump1, dump2 = target({})
    assert.are.same({}, seen)
    assert.are.same({ "function", "function", "function", "function", "function" }, { fmt, concat, floor, smt, pc })
    assert.is_nil(dump1)
    assert.is_nil(dump2)
  end)

  it("removes string.dump from the real string table too", function()
    assert.is_nil(string.dump)
    assert.is_nil(("").dump)
  end)

  it("keeps each file's globals and library copies to itself", function()
    local path = write("leak.lua", "leaked_global = 1; string.upper = nil; return function() return 1 end")
    assert.is_function(rt.load_target(path))
    assert.is_nil(rawget(_G, "leaked_global"))
    assert.is_function(string.upper)
  end)

  it("refuses os and io with an error naming the file and line", function()
    local path = write("os.lua", "local x = 1\nlocal t = os.time()\n")
    local pol, err = rt.load_policy(path)
    assert.is_nil(pol)
    assert.are.equal(path .. ":2: attempt to index global 'os' (a nil value)", err)
    local _, err2 = rt.load_policy(write("io.lua", "return io.open('/etc/passwd')"))
    assert.matches(":1: attempt to index global 'io'", err2)
  end)

  it("lets require reach errgate modules only", function()
    assert.is_function(rt.load_target(write("req_ok.lua",
      "local d = require 'errgate.duration'; return function() return d.parse('5s') end")))
    for _, mod in ipairs({ "ffi", "os", "cjson.safe", "errgate.testing", "errgate.runtime", "errgate.sandbox",
                              "errgate.cli", "errgate.recorded", "errgate.where" }) do
      local pol, err = rt.load_policy(write("req.lua", "\n\nlocal m = require '" .. mod .. "'"))
      assert.is_nil(pol)
      assert.matches(":3: require '" .. mod:gsub("%p", "%%%0") .. "' is not allowed", err)
    end
  end)

  it("offers policies two modules, errgate.policy and errgate.duration, read-only", function()
    assert.is_function(rt.load_target(write("req_api.lua", [[
      local p, d = require 'errgate.policy', require 'errgate.duration'
      assert(type(p.define) == "function" and type(p.is) == "function")
      assert(d.parse("1m30s") == 90000 and d.format(90000) == "1m30s")
      assert(not pcall(function() d.parse = nil end))
      return function() return 1 end]])))
  end)

  it("refuses a module the policy API no longer offers, saying what to write instead", function()
    local instead = {
      ["errgate.backoff"] = "retry section", ["errgate.schedule"] = "retry section",
      ["errgate.failure"] = "failure classify and route functions receive",
      ["errgate.classify"] = "classify section", ["errgate.decision"] = "return a route entry",
      ["errgate.route"] = "route section", ["errgate.redact"] = "redact section",
      ["errgate.pattern"] = "it is gone",
    }
    for mod, text in pairs(instead) do
      local pol, err = rt.load_policy(write("removed.lua", "\nlocal m = require '" .. mod .. "'"))
      assert.is_nil(pol)
      assert.matches(":2: require '" .. mod:gsub("%p", "%%%0") .. "': .- is no longer offered to policies", err)
      assert.is_truthy(err:find(text, 1, true), mod .. ": " .. err)
    end
  end)

  it("does not fall through to native modules for unknown errgate names", function()
    local pol, err = rt.load_policy(write("req_so.lua", "local m = require 'errgate.native_thing'"))
    assert.is_nil(pol)
    assert.matches(":1: require 'errgate%.native_thing' is not allowed", err)
  end)

  it("refuses bytecode", function()
    local fake = write("fake.luac", "\27LJ\2junk")
    local pol, err = rt.load_policy(fake)
    assert.is_nil(pol)
    assert.are.equal(fake .. ": bytecode is refused (load Lua source text)", err)
    local src = write("src.lua", MINIMAL)
    local real = dir .. "/real.luac"
    assert(os.execute(("luajit -b '%s' '%s'"):format(src, real)))
    local pol2, err2 = rt.load_policy(real)
    assert.is_nil(pol2)
    assert.matches("bytecode is refused", err2)
  end)

  it("reports a syntax error as file:line on one line", function()
    local path = write("syntax.lua", "local policy = require 'errgate.policy'\n\nlocal x = = 1\n")
    local pol, err = rt.load_policy(path)
    assert.is_nil(pol)
    assert.are.equal(path .. ":3: unexpected symbol near '='", err)
  end)

  it("names a long path in full, not Lua's shortened form", function()
    local sub = dir .. "/" .. ("very_long_directory_name_"):rep(4)
    assert(os.execute("mkdir -p '" .. sub .. "'"))
    local path = sub .. "/broken.lua"
    local fh = assert(io.open(path, "wb"))
    fh:write("error('boom')\n")
    fh:close()
    local _, err = rt.load_policy(path)
    assert.are.equal(path .. ":1: boom", err)
  end)

  it("refuses a policy file that returns a number", function()
    local path = write("num.lua", "return 42")
    local pol, err = rt.load_policy(path)
    assert.is_nil(pol)
    assert.are.equal(path .. ': must return require("errgate.policy").define{...}, got number', err)
  end)

  it("refuses a plain table that only looks like a policy", function()
    local _, err = rt.load_policy(write("table.lua", "return { decide = function() end }"))
    assert.matches("must return require%(\"errgate.policy\"%)%.define{%.%.%.}, got table", err)
  end)

  it("reports a define error naming the file and the field", function()
    local path = write("nodefault.lua", [[
local policy = require "errgate.policy"
return policy.define { name = "p", version = 1,
  classify = { { class = "unknown" } }, route = { permanent = "dlq" } }
]])
    local _, err = rt.load_policy(path)
    -- `return define{...}` is a tail call: no frame is left to name a line
    assert.are.equal(path .. ": policy 'p': route: default entry missing (every route table needs one)", err)
  end)

  it("reports a define error at the define call's line when it is not a tail call", function()
    local path = write("nodefault2.lua", [[
local policy = require "errgate.policy"
local p = policy.define { name = "p", version = 1,
  classify = { { class = "unknown" } }, route = { permanent = "dlq" } }
return p
]])
    local _, err = rt.load_policy(path)
    assert.are.equal(path .. ":2: policy 'p': route: default entry missing (every route table needs one)", err)
  end)

  it("reports a missing file", function()
    local pol, err = rt.load_policy(dir .. "/nope.lua")
    assert.is_nil(pol)
    assert.matches("^cannot open .*nope%.lua", err)
  end)

  it("reports a non-string error object", function()
    local path = write("errtable.lua", "error({})")
    local _, err = rt.load_policy(path)
    assert.are.equal(path .. ": error object of type table", err)
  end)

  it("loads a Lua target and refuses one that does not return a function", function()
    local fn = rt.load_target(write("target.lua", "return function(record) return record.offset + 1 end"))
    assert.are.equal(8, fn({ offset = 7 }))
    local nope, err = rt.load_target(write("target_bad.lua", "return {}"))
    assert.is_nil(nope)
    assert.matches("must return a function%(record%), got table", err)
  end)
end)

describe("the sandbox's lib/ modules and pattern guard", function()
  local libdir = os.tmpname()
  os.remove(libdir)
  assert(os.execute("mkdir -p '" .. libdir .. "/lib/team'"))
  local function put(name, src)
    local f = assert(io.open(libdir .. "/" .. name, "w"))
    f:write(src)
    f:close()
    return libdir .. "/" .. name
  end
  put("lib/codes.lua", "loads = (loads or 0) + 1\n"
    .. "return { retryable = { E42 = true }, os_seen = os ~= nil, count = function() return loads end }")
  put("lib/team/naming.lua",
    "local c = require 'codes'; return { upper = function(s) return s:upper() end, codes = c }")

  it("requires modules from the policy's own lib/ folder, sandboxed, loaded once", function()
    local target = rt.load_target(put("t.lua", [[
      local codes = require "codes"
      local naming = require "team.naming"
      return function() return { codes.retryable.E42, codes.os_seen, naming.codes == codes, naming.upper("x"),
        codes.count() } end]]))
    assert.is_function(target)
    assert.are.same({ true, false, true, "X", 1 }, target())
  end)

  it("refuses a lib name with no file, naming where it looked", function()
    local pol, err = rt.load_policy(put("p.lua", "local m = require 'nope'"))
    assert.is_nil(pol)
    assert.matches("require 'nope' is not allowed here.*lib/nope%.lua", err)
  end)

  it("refuses path tricks in module names", function()
    local pol, err = rt.load_policy(put("p2.lua", "local m = require '../codes'"))
    assert.is_nil(pol)
    assert.matches("is not allowed", err)
  end)

  it("refuses a pathological pattern on a long subject before running it", function()
    local f = rt.load_target(put("pat.lua", [[
      return function(s, p, plain) return pcall(string.find, s, p, 1, plain) end]]))
    local long = ("a"):rep(4096)
    local ok, err = f(long, ("a-"):rep(3) .. "b")
    assert.is_false(ok)
    assert.matches("too costly on a 4096%-byte subject", err)
    local ok2, err2 = f(long, ("a"):rep(3):gsub("a", "a-") .. "b")
    assert.is_false(ok2, err2)
    assert.is_true((f(long, "aaa", true)))              -- plain find: no pattern, no guard
    assert.is_true((f("E42: timeout", "^E%d+")))         -- ordinary patterns work
    assert.is_true((f(long, "a+$")))                     -- one quantifier on 4 KiB is fine
    assert.is_true(f(("x"):rep(100), "(.-)y(.-)z")) -- small subject, a few quantifiers
  end)

  it("guards gsub, match and gmatch the same way", function()
    local f = rt.load_target(put("pat2.lua", [[
      return function(fn, s, p) return pcall(string[fn], s, p, "") end]]))
    for _, fn in ipairs({ "gsub", "match", "gmatch" }) do
      local ok, err = f(fn, ("a"):rep(4096), "a-a-a-b")
      assert.is_false(ok, fn)
      assert.matches("string%." .. fn .. ": pattern", err)
    end
  end)
end)

describe("a config file (rt.load_config)", function()
  local cdir = os.tmpname()
  os.remove(cdir)
  assert(os.execute("mkdir -p '" .. cdir .. "'"))
  teardown(function() os.execute("rm -rf '" .. cdir .. "'") end)
  local function cfg(src)
    local path = cdir .. "/c.lua"
    local fh = assert(io.open(path, "wb"))
    fh:write(src)
    fh:close()
    return path
  end

  it("reads the environment and the clock, and returns its table", function()
    local t, err = rt.load_config(cfg([[
      return { home = os.getenv("HOME"), y = os.date("!%Y", os.time()), c = os.clock(),
               d = os.difftime(2, 1), s = string.format("%d", math.floor(2.5)), n = #table.concat({ "a" }) }
    ]]))
    assert.is_nil(err)
    assert.are.equal(os.getenv("HOME"), t.home)
    assert.are.equal(1, t.d)
    assert.are.equal("2", t.s)
  end)

  it("refuses what runs a process, touches a file or loads code, naming it", function()
    for _, case in ipairs {
      { "os.execute('true')", "os.execute" }, { "os.exit(1)", "os.exit" }, { "os.remove('x')", "os.remove" },
      { "os.rename('x', 'y')", "os.rename" }, { "os.tmpname()", "os.tmpname" }, { "io.open('x', 'w')", "io" },
      { "require('os')", "require" }, { "load('return 1')", "load" }, { "loadstring('return 1')", "loadstring" },
      { "dofile('x')", "dofile" }, { "loadfile('x')", "loadfile" }, { "package.loadlib('x', 'y')", "package" },
      { "debug.getinfo(1)", "debug" }, { "local _ = ffi.C", "ffi" }, { "jit.on()", "jit" },
      { "string.dump(print)", "string.dump" }, { "getmetatable('')", "getmetatable" },
      { "collectgarbage()", "collectgarbage" }, { "print(1)", "print" }, { "coroutine.create(print)", "coroutine" },
    } do
      local call, name = case[1], case[2]
      local t, err = rt.load_config(cfg(call .. "\nreturn {}"))
      assert.is_nil(t, call)
      assert.matches(name:gsub("%.", "%%.") .. " is not available in a config", err)
      assert.matches("^" .. cdir:gsub("%p", "%%%0") .. "/c%.lua:1: ", err)
    end
  end)

  it("refuses bytecode", function()
    local t, err = rt.load_config(cfg("\27LJ\2\0return {}"))
    assert.is_nil(t)
    assert.matches("bytecode is refused", err)
  end)

  it("cannot reach string.dump through a string", function()
    local t = rt.load_config(cfg("return { d = ('').dump }"))
    assert.is_nil(t.d)
  end)
end)
