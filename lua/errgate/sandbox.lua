-- errgate.sandbox — loading policy and target files as untrusted text.
--
-- A policy file is code a domain team edits; it must not reach the process
-- (files, sockets, the FFI, the debug library), smuggle bytecode past the
-- verifier-less LuaJIT loader, change the runtime it shares a Lua state
-- with, nor outrun its CPU budget inside one C function. load_file() reads
-- the file, refuses bytecode (a chunk starting with ESC, checked here and
-- again by mode "t"), compiles it with the file name as chunk name, and
-- binds it to a fresh environment holding only: assert error ipairs next
-- pairs pcall xpcall select tonumber tostring type unpack rawequal rawget
-- setmetatable _VERSION, copies of string (without dump), table and math
-- whose functions that scan or call back are bounded (below), and a
-- `require`.
-- require(name): name must be words joined by single dots
-- (^[%w_]+(%.[%w_]+)*$, so there is one spelling per module and no path
-- trick); errgate.* names reach only the PUBLIC modules below, each as a
-- read-only view (reads see the module, writes raise, its metatable is
-- locked, nested tables are views too, only the listed fields are there).
-- The policy author's API is two modules: errgate.policy (define, is: the
-- policy is data that define() compiles) and errgate.duration (parse,
-- format: the one spelling of a time). Everything else a policy states is
-- a field of define's table (classify rules, retry schedules, route
-- entries, redact patterns, examples), so the modules that implement
-- those fields (backoff, schedule, failure, classify, decision, route,
-- redact, pattern) are the runtime's, not an API: a policy that requires
-- one is refused at load with what to write instead (REMOVED below),
-- and the runtime's own modules (runtime, sandbox, testing, cli, recorded,
-- where, lint, examples: they read files, load code or are the C side's)
-- cannot be reached under any name. Other names are modules of the
-- policy's own lib/ folder (lib/name.lua, lib/a/b.lua for "a.b"), loaded
-- the same way: text only, each in a sandbox env, once per load.
-- Bounded C functions: one C call cannot be interrupted by the count hook,
-- and the watchdog (src/lib/luavm.c) only makes the hook fire at the next VM
-- instruction, so each C function a policy can call must be short, or call
-- back into Lua code. find, match, gmatch and gsub refuse a pattern whose
-- worst-case cost on the subject is beyond errgate.pattern's budget (a
-- plain find too: #s * #needle); gsub's replacement function or table,
-- sort's comparator (and its default order) and foreach's function are
-- called through a Lua function, so the hook fires between two calls (a C
-- function such as pcall passed as a callback would otherwise run a whole
-- scan without one VM instruction). pcall nests at most 200 deep and an
-- xpcall handler runs after pcall has unwound (see xpcall below), so a
-- stopped call unwinds fast. Strings and tables cannot outgrow the
-- memory cap, and the allocator refuses growth past the deadline, so rep,
-- concat, format and friends end with an error there.
-- Left out on purpose: load, loadstring, loadfile, dofile, getfenv,
-- setfenv, getmetatable, rawset, collectgarbage, module, print, newproxy,
-- gcinfo, coroutine, os, io, ffi, debug, package, jit, bit. string.dump is
-- also removed from the real string table when this module loads, because
-- every string reaches it through ('').dump; the string metatable itself is
-- locked (__metatable) once hardened.
-- Error messages name the file in full: Lua shortens long chunk names to
-- "...tail", so the shortened prefix is swapped back for the path.
-- CPU and memory limits are the C core's (count hook with the JIT engine
-- off, a watchdog, custom allocator); a policy's pcall cannot swallow the
-- timeout (src/lib/luavm.c).
local pattern = require "errgate.pattern"

local sandbox = {}

-- the real functions, for this module's own (trusted) work and for the
-- guarded versions to call
local real_find, real_match, real_gmatch, real_gsub = string.find, string.match, string.gmatch, string.gsub
local real_sort, real_foreach, real_foreachi = table.sort, table.foreach, table.foreachi
local affordable, plain_affordable = pattern.affordable, pattern.plain_affordable
local type, error, tostring, next, pairs, ipairs, setmetatable =
  type, error, tostring, next, pairs, ipairs, setmetatable

string.dump = nil -- luacheck: ignore 122 (deliberate, see above: ("").dump must not reach it)

local real_require = require

local BASE = {
  "assert", "error", "ipairs", "next", "pairs", "pcall", "xpcall", "select",
  "tonumber", "tostring", "type", "unpack", "rawequal", "rawget", "setmetatable",
}

-- The errgate modules a sandboxed file may require, and the fields each
-- exports (anything else of the module reads as nil).
local function set(list)
  local t = {}
  for _, k in ipairs(list) do t[k] = true end
  return t
end
local PUBLIC = {
  ["errgate.policy"] = set { "define", "is" },
  ["errgate.duration"] = set { "parse", "format" },
}

-- Modules policies could require before the API was cut to the two above
-- (none of the shipped policies, examples or specs' policies used them),
-- and what to write instead. Requiring one is an error naming this text.
local REMOVED = {
  ["errgate.backoff"] = "write the delays as a schedule in define's retry section "
    .. "(retry = { fast = { attempts = 3, base = \"100ms\", jitter = \"full\" } })",
  ["errgate.schedule"] = "write schedules and ladders in define's retry section "
    .. "(retry = { slow = \"5s x3, 1m\", rungs = { ladder = { \"30s\", \"5m\" } } })",
  ["errgate.failure"] = "read the failure classify and route functions receive (failure.kind, .status, .code, "
    .. ".message, .body, .retry_after_ms)",
  ["errgate.classify"] = "write classify rules in define's classify section "
    .. "(classify = { { status = 503, class = \"transient\" }, { class = \"permanent\" } })",
  ["errgate.decision"] = "return a route entry; define builds the decision "
    .. "(route = { permanent = { action = \"dlq\", reason = \"bad_input\" } })",
  ["errgate.route"] = "write route entries in define's route section, or return one from a route function",
  ["errgate.redact"] = "list the patterns to hide in define's redact section (redact = { \"acct%-%d+\" }); "
    .. "secrets are redacted always",
  ["errgate.pattern"] = "it is gone: the sandbox refuses a pattern too costly for its subject by itself",
}

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

local function one_line(s)
  return (real_gsub(tostring(s), "%s*\n%s*", " "))
end

-- read-only views -------------------------------------------------------

local real_of = {}    -- view -> the table it shows
local fields_of = {}  -- view of a module -> the fields it exports
local view_of = {}    -- table -> its view (module tables live as long as the state)
local module_view_of = {}  -- module table -> its view

local function refuse(_, k)
  error(("cannot assign '%s': errgate modules are read-only"):format(tostring(k)), 2)
end

-- view(t[, fields]) -> a read-only proxy of t: reading k gives t[k] (a view
-- of it when it is a table), only the keys in fields when given; writing
-- raises; its metatable is locked.
local function view(t, fields)
  local cache = fields and module_view_of or view_of
  local v = cache[t]
  if v then return v end
  v = setmetatable({}, {
    __index = function(_, k)
      if fields and not fields[k] then return nil end
      local x = t[k]
      if type(x) == "table" then return view(x) end
      return x
    end,
    __newindex = refuse,
    __metatable = false,
  })
  cache[t], real_of[v], fields_of[v] = v, t, fields
  return v
end

-- pairs, ipairs and next of the env: a view iterates the table it shows
-- (values that are tables as views; a module view its exported fields).
local function view_next(v, k)
  local t, fields = real_of[v], fields_of[v]
  local x
  repeat
    k, x = next(t, k)
  until k == nil or not fields or fields[k]
  if type(x) == "table" then x = view(x) end
  return k, x
end
local function view_inext(v, i)
  i = i + 1
  local x = v[i]
  if x ~= nil then return i, x end
end
local function env_pairs(t)
  if real_of[t] then return view_next, t, nil end
  return pairs(t)
end
local function env_ipairs(t)
  if real_of[t] then return view_inext, t, 0 end
  return ipairs(t)
end
local function env_next(t, k)
  if real_of[t] then return view_next(t, k) end
  return next(t, k)
end

-- guarded string and table functions ------------------------------------

local function too_costly(name, pat, len)
  if #pat > 60 then pat = pat:sub(1, 60) .. "..." end
  error(("string.%s: pattern %q is too costly on a %d-byte subject (cap the subject or simplify the pattern)")
    :format(name, pat, len), 3)
end

local function find(s, pat, init, plain)
  if type(s) == "string" and type(pat) == "string" then
    if plain then
      if not plain_affordable(pat, #s) then too_costly("find", pat, #s) end
    elseif not affordable(pat, #s) then
      too_costly("find", pat, #s)
    end
  end
  return real_find(s, pat, init, plain)
end

local function match(s, pat, init)
  if type(s) == "string" and type(pat) == "string" and not affordable(pat, #s) then too_costly("match", pat, #s) end
  return real_match(s, pat, init)
end

local function gmatch(s, pat)
  if type(s) == "string" and type(pat) == "string" and not affordable(pat, #s) then too_costly("gmatch", pat, #s) end
  return real_gmatch(s, pat)
end

-- gsub's replacement: a function or table is reached through a Lua function
local function gsub(s, pat, repl, n)
  if type(s) == "string" and type(pat) == "string" and not affordable(pat, #s) then too_costly("gsub", pat, #s) end
  local tr = type(repl)
  if tr == "function" then
    local f = repl
    repl = function(...) return f(...) end
  elseif tr == "table" then
    local t = repl
    repl = function(k) return t[k] end
  end
  return real_gsub(s, pat, repl, n)
end

-- xpcall(f, handler, ...): the handler runs after pcall has unwound, as a
-- plain call. LuaJIT runs a real xpcall handler as an error handler: one
-- that raises (as any Lua code does once the deadline has passed: the hook
-- raises at every instruction) is called again for its own error, forever,
-- so the call never ends. Without the debug library the handler cannot
-- tell the difference (it cannot look at the stack of the error anyway).
-- pcall(f, ...): at most PCALL_DEPTH nested (deeper: false and a message,
-- as for an error). LuaJIT's own pcall nests as deep as the Lua stack,
-- tens of thousands of frames, and a call stopped by its deadline unwinds
-- them one raise at a time (a second and more). The count restarts with
-- each call from the C core (its call epoch), so a call stopped half-way
-- does not leave it high; without the C core (specs) it is never reset.
local real_pcall = pcall
local PCALL_DEPTH = 200
local call_epoch = debug.getregistry()["errgate.call_epoch"]
local depth, depth_epoch = 0, nil
local function leave(ok, ...)
  depth = depth - 1
  return ok, ...
end
local function pcall(f, ...)
  if call_epoch then
    local e = call_epoch()
    if e ~= depth_epoch then depth, depth_epoch = 0, e end
  end
  if depth >= PCALL_DEPTH then return false, "pcall nested more than " .. PCALL_DEPTH .. " deep" end
  depth = depth + 1
  return leave(real_pcall(f, ...))
end

local function after_pcall(handler, ok, ...)
  if ok then return true, ... end
  return false, handler((...))
end
local function xpcall(f, handler, ...)
  return after_pcall(handler, pcall(f, ...))
end

local function less(a, b) return a < b end

local function sort(t, cmp)
  if cmp == nil then return real_sort(t, less) end
  if type(cmp) ~= "function" then return real_sort(t, cmp) end -- the real error
  return real_sort(t, function(a, b) return cmp(a, b) end)
end

-- foreach(t, f) / foreachi(t, f): f through a Lua function
local function through_lua(real)
  return function(t, f)
    if type(f) ~= "function" then return real(t, f) end
    return real(t, function(k, v) return f(k, v) end)
  end
end

local GUARDED_STRING = copy(string)
GUARDED_STRING.dump = nil
GUARDED_STRING.find, GUARDED_STRING.match, GUARDED_STRING.gmatch, GUARDED_STRING.gsub = find, match, gmatch, gsub

local GUARDED_TABLE = copy(table)
GUARDED_TABLE.sort = sort
if real_foreach then GUARDED_TABLE.foreach = through_lua(real_foreach) end
if real_foreachi then GUARDED_TABLE.foreachi = through_lua(real_foreachi) end

-- harden()
-- Points the string metatable at the guarded functions too, so that method
-- calls (msg:find(p)) are bounded like string.find(msg, p), and locks it.
-- Called by the C core once per Lua state; trusted errgate modules that
-- run patterns on long text hold the real functions from before
-- (errgate.redact).
function sandbox.harden()
  local mt = debug.getmetatable("")
  mt.__index = GUARDED_STRING
  mt.__metatable = false
end

-- valid_name(name) -> boolean: words of [%w_] joined by single dots.
local function valid_name(name)
  if type(name) ~= "string" or #name > 200 then return false end
  for part in real_gmatch(name .. ".", "([^.]*)%.") do
    if not real_find(part, "^[%w_]+$") then return false end
  end
  return true
end

-- new_require(libdir, loaded) -> the `require` a sandboxed file sees (see
-- the top of this file), lib/ modules loaded once each into `loaded`.
-- Raises "require 'x' is not allowed ..." otherwise.
local function new_require(libdir, loaded)
  local function req(name)
    if not valid_name(name) then
      local why = "require '%s' is not allowed here (a module name is words joined by single dots)"
      error(why:format(tostring(name)), 2)
    end
    if real_find(name, "^errgate%.") then
      local fields = PUBLIC[name]
      if not fields and REMOVED[name] then
        error(("require '%s': %s is no longer offered to policies (the policy API is errgate.policy and "
          .. "errgate.duration): %s"):format(name, name, REMOVED[name]), 2)
      end
      if not fields then
        error(("require '%s' is not allowed here (a policy may require errgate.policy, errgate.duration and "
          .. "its lib/ modules)"):format(name), 2)
      end
      return view(real_require(name), fields)
    end
    if loaded[name] ~= nil then return loaded[name] end
    local path = libdir .. "/" .. real_gsub(name, "%.", "/") .. ".lua"
    local fh = io.open(path, "rb")
    if not fh then
      error(("require '%s' is not allowed here (only errgate.* modules and the policy's lib/ folder, which has no %s)")
        :format(name, path), 2)
    end
    fh:close()
    local fn, fixmsg = sandbox.load_file(path, libdir, loaded)
    if not fn then
      error(("require '%s': %s"):format(name, fixmsg), 2)
    end
    local ok, v = pcall(fn)
    if not ok then error(fixmsg(v), 2) end
    if v == nil then v = true end
    loaded[name] = v
    return v
  end
  return req
end

-- env(libdir, loaded) -> table
-- A fresh sandbox environment (see above). Each loaded file gets its own.
function sandbox.env(libdir, loaded)
  local e = {}
  for _, k in ipairs(BASE) do e[k] = _G[k] end
  e._VERSION = _VERSION
  e.pairs, e.ipairs, e.next, e.pcall, e.xpcall = env_pairs, env_ipairs, env_next, pcall, xpcall
  e.string = copy(GUARDED_STRING)
  e.table = copy(GUARDED_TABLE)
  e.math = copy(math)
  e.require = new_require(libdir or ".", loaded or {})
  e._G = e
  return e
end

-- config_env() -> table
-- The environment of a gateway config file (src/lib/config.c, every -c of
-- every command): what a policy's env holds (base functions, guarded
-- string and table, math) without `require`, plus os.getenv, os.time,
-- os.clock, os.date and os.difftime. Nothing that runs a process, writes
-- or reads a file, or loads code: a config is data with a little logic.
-- A name of the standard library that is left out is an error naming it
-- (not a nil to call), so an operator reads why at once.
local CONFIG_ALLOWS = "a config may use the base functions, string, table, math, os.getenv, os.time, os.clock, "
  .. "os.date and os.difftime"
local CONFIG_REFUSED = set { "io", "require", "load", "loadstring", "loadfile", "dofile", "package", "debug",
                             "ffi", "jit", "module", "getfenv", "setfenv", "collectgarbage", "newproxy",
                             "coroutine", "print", "gcinfo", "rawset", "getmetatable", "bit" }
local function refusing(t, prefix, names)
  return setmetatable(t, {
    __index = function(_, k)
      if names == nil or names[k] then
        error(("%s%s is not available in a config (%s)"):format(prefix, tostring(k), CONFIG_ALLOWS), 2)
      end
    end,
    __metatable = false,
  })
end

function sandbox.config_env()
  local e = sandbox.env()
  e.require = nil
  e.os = refusing({ getenv = os.getenv, time = os.time, clock = os.clock, date = os.date, difftime = os.difftime },
                  "os.")
  e.string = refusing(e.string, "string.", set { "dump" })
  return refusing(e, "", CONFIG_REFUSED)
end

-- short_name(chunkname) -> the prefix Lua puts in messages for chunkname.
local function short_name(chunkname)
  local _, err = loadstring("(", chunkname)
  return err:match("^(.-):1:") or chunkname
end

-- load_file(path[, libdir, loaded, env]) -> fn, fixmsg | nil, err
-- Reads path, refuses bytecode, compiles it as text and binds it to env,
-- else to a fresh sandbox env whose require reaches libdir (default: lib/
-- beside path), sharing `loaded` between the files of one load. fixmsg(msg) rewrites an
-- error message raised by fn so it names path in full, on one line. err is
-- one line naming the file (and the line, for syntax errors).
function sandbox.load_file(path, libdir, loaded, env)
  if type(path) ~= "string" then return nil, "load: path must be a string" end
  local fh, oerr = io.open(path, "rb")
  if not fh then return nil, "cannot open " .. one_line(oerr) end
  local src = fh:read("*a")
  fh:close()
  if not src then return nil, path .. ": cannot read" end
  if src:sub(1, 1) == "\27" then return nil, path .. ": bytecode is refused (load Lua source text)" end
  local chunkname = "@" .. path
  local short = short_name(chunkname)
  local function fixmsg(msg)
    msg = one_line(msg)
    if msg:sub(1, #short + 1) == short .. ":" then
      return path .. msg:sub(#short + 1)
    end
    if msg:sub(1, #path) ~= path then return path .. ": " .. msg end
    return msg
  end
  local fn, cerr = loadstring(src, chunkname, "t")
  if not fn then return nil, fixmsg(cerr) end
  setfenv(fn, env or sandbox.env(libdir or ((path:match("^(.*)/[^/]*$") or ".") .. "/lib"), loaded))
  return fn, fixmsg
end

-- run_file(path[, env]) -> value | nil, err
-- load_file (in env when given), then runs the chunk protected; value is
-- its first return.
function sandbox.run_file(path, env)
  local fn, fixmsg = sandbox.load_file(path, nil, nil, env)
  if not fn then return nil, fixmsg end
  local ok, v = pcall(fn)
  if not ok then
    if type(v) ~= "string" then v = "error object of type " .. type(v) end
    return nil, fixmsg(v)
  end
  return v
end

return sandbox
