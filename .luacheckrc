-- .luacheckrc — the house style of errgate's Lua, checked by `make lint`
-- (Debian lua-check: `luacheck .`).
--
-- The runtime (lua/errgate/) runs in plain LuaJIT; the busted specs add
-- busted's globals. Policy files run in errgate.sandbox's environment, so
-- they are checked against exactly what it provides (stds.errgate_sandbox
-- below, kept in step with BASE and the copied libraries in
-- lua/errgate/sandbox.lua): a policy that reaches for `os` or `print` is
-- flagged here before the loader refuses it. Gateway configs are plain Lua
-- with the standard libraries (os.getenv is handy there).

std = "luajit"
max_line_length = 120

stds.errgate_sandbox = {
  read_globals = {
    "assert", "error", "ipairs", "next", "pairs", "pcall", "xpcall", "select",
    "tonumber", "tostring", "type", "unpack", "rawequal", "rawget", "setmetatable",
    "_VERSION", "require",
    string = { fields = { "byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match", "rep",
                          "reverse", "sub", "upper" } },
    table = { fields = { "concat", "foreach", "foreachi", "getn", "insert", "maxn", "move", "remove", "sort" } },
    math = { fields = { "abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cosh", "deg", "exp", "floor",
                        "fmod", "frexp", "huge", "ldexp", "log", "log10", "max", "min", "modf", "pi", "pow",
                        "rad", "random", "randomseed", "sin", "sinh", "sqrt", "tan", "tanh" } },
  },
}

include_files = { "lua/**/*.lua", "policies/**/*.lua", "examples/**/*.lua", "spec/lua/**/*.lua",
                  "spec/fixtures/**/*.lua", "spec/hostile/**/*.lua" }
exclude_files = {
  -- a syntax error is what this fixture is for (e2e/test_bad_input)
  "spec/fixtures/policies/syntax_error.lua",
}

files["spec/lua"] = { std = "+busted" }
files["policies"] = { std = "errgate_sandbox" }
files["examples/payments/policy.lua"] = { std = "errgate_sandbox" }
files["spec/fixtures/policies"] = { std = "errgate_sandbox" }

-- spec/hostile/ holds policies and Lua targets that are bad on purpose
-- (escapes from the sandbox, CPU and memory bombs, metamethod tricks; see
-- spec/hostile/README.md): reaching for forbidden globals, unused
-- arguments, unreachable code and long description lines are their point.
-- They are still parsed, so a hostile file that stops being valid Lua (and
-- would then be refused for the wrong reason) fails the lint.
files["spec/hostile"] = { only = { "011" } }
