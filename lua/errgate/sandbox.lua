-- errgate.sandbox — loading policy and target files as untrusted text.
--
-- A policy file is code a domain team edits; it must not reach the process
-- (files, sockets, the FFI, the debug library) nor smuggle bytecode past the
-- verifier-less LuaJIT loader. load_file() reads the file, refuses bytecode
-- (a chunk starting with ESC, checked here and again by mode "t"), compiles
-- it with the file name as chunk name, and binds it to a fresh environment
-- holding only: assert error ipairs next pairs pcall xpcall select tonumber
-- tostring type unpack rawequal rawget setmetatable _VERSION, copies of
-- string (without dump, pattern functions guarded), table and math, and a
-- `require` that hands out errgate.* modules except the privileged ones
-- (runtime, sandbox, testing, cli: they read files) and the modules of the
-- policy's own lib/ folder (lib/name.lua, lib/a/b.lua for "a.b"), which are
-- loaded the same way: text only, each in a sandbox env, once per load.
-- Pattern functions (find, match, gmatch, gsub) refuse a pattern whose
-- worst-case backtracking on the subject is beyond errgate.pattern's budget:
-- one C call cannot be interrupted by the count hook, so it is bounded
-- before it starts. Left out on purpose: load, loadstring, loadfile, dofile,
-- getfenv, setfenv, getmetatable, rawset, collectgarbage, module, print,
-- newproxy, gcinfo, coroutine, os, io, ffi, debug, package, jit, bit.
-- string.dump is also removed from the real string table when this module
-- loads, because every string reaches it through ('').dump.
-- Error messages name the file in full: Lua shortens long chunk names to
-- "...tail", so the shortened prefix is swapped back for the path.
-- CPU and memory limits are the C core's (count hook with the JIT engine
-- off, custom allocator); pcall inside a policy must not be able to swallow
-- those — a concern for the limits issue, noted here where the env is built.
local pattern = require "errgate.pattern"

local sandbox = {}

-- the real pattern function, for this module's own (trusted) messages
local real_gsub = string.gsub

string.dump = nil -- deliberate, see above: ("").dump must not reach it

local real_require = require

local BASE = {
  "assert", "error", "ipairs", "next", "pairs", "pcall", "xpcall", "select",
  "tonumber", "tostring", "type", "unpack", "rawequal", "rawget", "setmetatable",
}
local PRIVILEGED = { ["errgate.runtime"] = true, ["errgate.sandbox"] = true,
                     ["errgate.testing"] = true, ["errgate.cli"] = true,
                     ["errgate.recorded"] = true, ["errgate.where"] = true }

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

local function one_line(s)
  return (real_gsub(tostring(s), "%s*\n%s*", " "))
end

-- guarded(fn, name) -> a pattern function that refuses too costly patterns.
local function guarded(fn, name)
  return function(s, pat, init, plain, ...)
    if type(s) == "string" and type(pat) == "string" and not (name == "find" and plain) then
      if not pattern.affordable(pat, #s) then
        error(("string.%s: pattern %q is too costly on a %d-byte subject (cap the subject or simplify the pattern)")
          :format(name, pat, #s), 2)
      end
    end
    return fn(s, pat, init, plain, ...)
  end
end

local GUARDED_STRING = copy(string)
GUARDED_STRING.dump = nil
for _, name in ipairs({ "find", "match", "gmatch", "gsub" }) do
  GUARDED_STRING[name] = guarded(string[name], name)
end

-- harden()
-- Points the string metatable at the guarded functions too, so that method
-- calls (msg:find(p)) are bounded like string.find(msg, p). Called by the
-- C core once per Lua state; trusted errgate modules that run patterns on
-- long text hold the real functions from before (errgate.redact).
function sandbox.harden()
  getmetatable("").__index = GUARDED_STRING
end

-- new_require(libdir, loaded) -> the `require` a sandboxed file sees:
-- errgate.* modules (never the privileged ones, and only Lua source found on
-- package.path: a C module named errgate.* on package.cpath would be native
-- code), or modules of libdir (the policy's lib/ folder), each loaded once
-- into `loaded`. Raises "require 'x' is not allowed ..." otherwise.
local function new_require(libdir, loaded)
  local function req(name)
    if type(name) ~= "string" or not name:match("^[%w_]+[%w_%.]*$") or PRIVILEGED[name] then
      error(("require '%s' is not allowed here (only errgate.* and the policy's lib/ modules)"):format(tostring(name)), 2)
    end
    if name:match("^errgate%.") then
      if package.loaded[name] == nil and not package.searchpath(name, package.path) then
        error(("require '%s': no such errgate module"):format(name), 2)
      end
      return real_require(name)
    end
    if loaded[name] ~= nil then return loaded[name] end
    local path = libdir .. "/" .. name:gsub("%.", "/") .. ".lua"
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
  e.string = copy(GUARDED_STRING)
  e.table = copy(table)
  e.math = copy(math)
  e.require = new_require(libdir or ".", loaded or {})
  e._G = e
  return e
end

-- short_name(chunkname) -> the prefix Lua puts in messages for chunkname.
local function short_name(chunkname)
  local _, err = loadstring("(", chunkname)
  return err:match("^(.-):1:") or chunkname
end

-- load_file(path[, libdir, loaded]) -> fn, fixmsg | nil, err
-- Reads path, refuses bytecode, compiles it as text and binds it to a fresh
-- sandbox env whose require reaches libdir (default: lib/ beside path),
-- sharing `loaded` between the files of one load. fixmsg(msg) rewrites an
-- error message raised by fn so it names path in full, on one line. err is
-- one line naming the file (and the line, for syntax errors).
function sandbox.load_file(path, libdir, loaded)
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
  setfenv(fn, sandbox.env(libdir or ((path:match("^(.*)/[^/]*$") or ".") .. "/lib"), loaded))
  return fn, fixmsg
end

-- run_file(path) -> value | nil, err
-- load_file, then runs the chunk protected; value is its first return.
function sandbox.run_file(path)
  local fn, fixmsg = sandbox.load_file(path)
  if not fn then return nil, fixmsg end
  local ok, v = pcall(fn)
  if not ok then
    if type(v) ~= "string" then v = "error object of type " .. type(v) end
    return nil, fixmsg(v)
  end
  return v
end

return sandbox
