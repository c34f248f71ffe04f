-- errgate.sandbox — loading policy and target files as untrusted text.
--
-- A policy file is code a domain team edits; it must not reach the process
-- (files, sockets, the FFI, the debug library) nor smuggle bytecode past the
-- verifier-less LuaJIT loader. load_file() reads the file, refuses bytecode
-- (a chunk starting with ESC, checked here and again by mode "t"), compiles
-- it with the file name as chunk name, and binds it to a fresh environment
-- holding only: assert error ipairs next pairs pcall xpcall select tonumber
-- tostring type unpack rawequal rawget setmetatable _VERSION, copies of
-- string (without dump), table and math, and a `require` that hands out
-- errgate.* modules except the privileged ones (runtime, sandbox, testing:
-- they read files). Left out on purpose: load, loadstring, loadfile, dofile,
-- getfenv, setfenv, getmetatable, rawset, collectgarbage, module, print,
-- newproxy, gcinfo, coroutine, os, io, ffi, debug, package, jit, bit.
-- string.dump is also removed from the real string table when this module
-- loads, because every string reaches it through ('').dump.
-- Error messages name the file in full: Lua shortens long chunk names to
-- "...tail", so the shortened prefix is swapped back for the path.
-- CPU and memory limits are the C core's (count hook with the JIT engine
-- off, custom allocator); pcall inside a policy must not be able to swallow
-- those — a concern for the limits issue, noted here where the env is built.
local sandbox = {}

string.dump = nil -- deliberate, see above: ("").dump must not reach it

local real_require = require

local BASE = {
  "assert", "error", "ipairs", "next", "pairs", "pcall", "xpcall", "select",
  "tonumber", "tostring", "type", "unpack", "rawequal", "rawget", "setmetatable",
}
local PRIVILEGED = { ["errgate.runtime"] = true, ["errgate.sandbox"] = true, ["errgate.testing"] = true }

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

local function one_line(s)
  return (tostring(s):gsub("%s*\n%s*", " "))
end

-- safe_require(name) -> module
-- The `require` a sandboxed file sees: errgate.* modules only, never the
-- privileged ones, and only Lua source found on package.path (a C module
-- named errgate.* on package.cpath would be native code). Raises
-- "require 'x' is not allowed ...".
local function safe_require(name)
  if type(name) ~= "string" or not name:match("^errgate%.[%w_%.]+$") or PRIVILEGED[name] then
    error(("require '%s' is not allowed here (only errgate.* policy modules)"):format(tostring(name)), 2)
  end
  if package.loaded[name] == nil and not package.searchpath(name, package.path) then
    error(("require '%s': no such errgate module"):format(name), 2)
  end
  return real_require(name)
end

-- env() -> table
-- A fresh sandbox environment (see above). Each loaded file gets its own.
function sandbox.env()
  local e = {}
  for _, k in ipairs(BASE) do e[k] = _G[k] end
  e._VERSION = _VERSION
  e.string = copy(string)
  e.string.dump = nil
  e.table = copy(table)
  e.math = copy(math)
  e.require = safe_require
  e._G = e
  return e
end

-- short_name(chunkname) -> the prefix Lua puts in messages for chunkname.
local function short_name(chunkname)
  local _, err = loadstring("(", chunkname)
  return err:match("^(.-):1:") or chunkname
end

-- load_file(path) -> fn, fixmsg | nil, err
-- Reads path, refuses bytecode, compiles it as text and binds it to a fresh
-- sandbox env. fixmsg(msg) rewrites an error message raised by fn so it
-- names path in full, on one line. err is one line naming the file (and the
-- line, for syntax errors).
function sandbox.load_file(path)
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
  setfenv(fn, sandbox.env())
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
