-- errgate.cli — the Lua half of `errgate policy check` and `errgate policy
-- test` (privileged: it reads case files; never reachable from a sandbox).
--
-- The C command loads the policy exactly as the gateway does (same VM,
-- sandbox, examples, lint, id with the file's SHA-256 prefix), then calls:
--   cli.check(pol)              -> report text, exit code
--   cli.test(pol, cases_path)   -> report text, exit code
-- Case files are JSON lines, one case per line (blank lines and lines
-- starting with # are skipped):
--   {"name": "...", "failure": {...} | 503 | "timeout", "record": {...},
--    "ctx": {...}, "expect": "dlq" | {"action": .., "class": .., ...}}
-- the same shape as a policy's embedded examples; jitter is pinned the same
-- way, so delay_ms can be expected too.
local cjson = require "cjson.safe"
local examples = require "errgate.examples"
local lint = require "errgate.lint"

local cli = {}

-- table_text(rows, header) -> aligned columns, one row per line.
local function table_text(header, rows)
  local widths = {}
  for _, r in ipairs({ header, unpack(rows) }) do
    for i, cell in ipairs(r) do widths[i] = math.max(widths[i] or 0, #cell) end
  end
  local lines = {}
  for _, r in ipairs({ header, unpack(rows) }) do
    local cells = {}
    for i, cell in ipairs(r) do
      cells[i] = i < #r and cell .. (" "):rep(widths[i] - #cell) or cell
    end
    lines[#lines + 1] = table.concat(cells, "  ")
  end
  return table.concat(lines, "\n")
end

local function describe_failure(f)
  if type(f) ~= "table" then return tostring(f) end
  local s = f.status and ("http " .. tostring(f.status)) or tostring(f.kind)
  if f.class_hint then s = s .. " class=" .. f.class_hint end
  if f.code then s = s .. " code=" .. f.code end
  return s
end

local function describe_expect(e)
  local parts = {}
  for _, k in ipairs({ "action", "class", "code", "reason", "delay_ms" }) do
    if e[k] ~= nil then parts[#parts + 1] = (k == "action" and "" or k .. "=") .. tostring(e[k]) end
  end
  return table.concat(parts, " ")
end

function cli.check(pol)
  local out = { ("policy    %s"):format(pol.id), ("examples  %d passed"):format(#pol.examples) }
  local problems = lint.lint(pol)
  local errors = 0
  if #problems == 0 then out[#out + 1] = "lint      ok" end
  for _, p in ipairs(problems) do
    out[#out + 1] = ("lint      %s: %s"):format(p.level, p.message)
    if p.level == "error" then errors = errors + 1 end
  end
  return table.concat(out, "\n"), errors > 0 and 1 or 0
end

function cli.test(pol, path)
  local fh, err = io.open(path, "rb")
  if not fh then return "cannot open " .. tostring(err), 2 end
  local pinned = examples.pin(pol)
  local rows, bad, n = {}, 0, 0
  local lineno = 0
  for line in fh:lines() do
    lineno = lineno + 1
    if line:match("%S") and not line:match("^%s*#") then
      n = n + 1
      local case, jerr = cjson.decode(line)
      local row
      if type(case) ~= "table" then
        row = { tostring(lineno), "-", "-", "-", "ERROR invalid JSON: " .. tostring(jerr) }
      else
        if case.failure == cjson.null then case.failure = nil end
        local ok, compiled = pcall(examples.compile, { case })
        if not ok then
          row = { tostring(lineno), case.name and tostring(case.name) or "-", "-", "-", "ERROR " .. tostring(compiled) }
        else
          local ex = compiled[1]
          local d, mismatch = examples.check(pinned, ex)
          local label = ex.name or describe_failure(ex.failure)
          if not d then
            row = { tostring(lineno), label, describe_expect(ex.expect), "-", "ERROR decide raised: " .. mismatch }
          else
            row = { tostring(lineno), label, describe_expect(ex.expect),
                    describe_expect({ action = d.action, class = d.class, code = d.code, reason = d.reason }),
                    mismatch and ("MISMATCH " .. mismatch) or "ok" }
          end
        end
      end
      if row[5] ~= "ok" then bad = bad + 1 end
      rows[#rows + 1] = row
    end
  end
  fh:close()
  local text = table_text({ "line", "case", "expected", "decided", "result" }, rows)
  text = text .. ("\n%s: %d cases, %d passed, %d mismatched"):format(pol.id, n, n - bad, bad)
  return text, bad > 0 and 1 or 0
end

return cli
