-- errgate.cli — the Lua half of `errgate policy check` and `errgate policy
-- test` (privileged: it reads case files; never reachable from a sandbox).
--
-- The C command loads the policy exactly as the gateway does (same VM,
-- sandbox, examples, lint, id with the file's SHA-256 prefix), then calls:
--   cli.check(pol[, opts])            -> report text, exit code
--       opts.ordering ("partition" | "key" | "none") goes to the lint;
--       "lint ok" when it finds no error or warning (its info notes follow);
--       exit 1 on any lint error
--   cli.test(pol, cases_path)         -> report text, exit code
--   cli.test_recorded(pol, jsonl)     -> report text, exit code
-- Case files are JSON lines, one case per line (blank lines and lines
-- starting with # are skipped):
--   {"name": "...", "failure": {...} | 503 | "timeout", "record": {...},
--    "ctx": {...}, "expect": "dlq" | {"action": .., "class": .., ...}}
-- the same shape as a policy's embedded examples; jitter is pinned the same
-- way, so delay_ms can be expected too.
-- test_recorded takes the records of a lane topic as the C side read them
-- (src/commands/lane_cases.h, one JSON object per line), rebuilds each recorded
-- failure (errgate.recorded), decides it again and prints, per record, the
-- lane coordinates, errgate.id, the failure, the decision recorded then and
-- by whom, the decision now, and "same", "CHANGED <what>" or "UNREADABLE
-- <why>"; then "<policy id>: N records, N same, N changed, N unreadable".
-- It exits 1 when any decision changed (a policy that raises on a record
-- counts as changed: the gateway would apply its fallback), else 0.
local json = require "errgate.json"
local examples = require "errgate.examples"
local lint = require "errgate.lint"
local recorded = require "errgate.recorded"

local cli = {}

-- table_text(header, rows) -> aligned columns, one row per line (the last
-- column is not padded).
local function table_text(header, rows)
  local widths = {}
  local function measure(r)
    for i, cell in ipairs(r) do widths[i] = math.max(widths[i] or 0, #cell) end
  end
  local function line(r)
    local cells = {}
    for i, cell in ipairs(r) do
      cells[i] = i < #r and cell .. (" "):rep(widths[i] - #cell) or cell
    end
    return table.concat(cells, "  ")
  end
  measure(header)
  for _, r in ipairs(rows) do measure(r) end
  local lines = { line(header) }
  for _, r in ipairs(rows) do lines[#lines + 1] = line(r) end
  return table.concat(lines, "\n")
end
cli.table_text = table_text

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

function cli.check(pol, opts)
  local out = { ("policy    %s"):format(pol.id), ("examples  %d passed"):format(#pol.examples) }
  if opts and opts.ordering then out[#out + 1] = ("ordering  %s"):format(opts.ordering) end
  local problems = lint.lint(pol, opts)
  local errors, serious = 0, 0
  for _, p in ipairs(problems) do
    if p.level ~= "info" then serious = serious + 1 end
  end
  -- "ok": nothing to fix (info findings are notes, listed after it)
  if serious == 0 then out[#out + 1] = "lint      ok" end
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
      local case, jerr = json.decode(line)
      local row
      if type(case) ~= "table" then
        row = { tostring(lineno), "-", "-", "-", "ERROR " .. tostring(jerr) }
      else
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

-- decision_text(d) -> "dlq permanent", "ladder transient rung 30s", ...
local function decision_text(d)
  local s = d.action or "?"
  if d.class then s = s .. " " .. d.class end
  if d.rung then s = s .. " rung " .. tostring(d.rung) end
  return s
end
cli.decision_text = decision_text

-- recorded_row(pinned_pol, line) -> row cells, outcome[, rebuilt]
-- One lane record's row. outcome: "same" | "changed" | "unreadable";
-- rebuilt is the note when the failure was pieced together from partial
-- headers.
function cli.recorded_row(pol, line)
  local c, why, label = recorded.decode(line)
  if not c then return { label, "-", "-", "-", "-", "-", "UNREADABLE " .. why }, "unreadable" end
  local f = describe_failure(c.failure)
  local decided = decision_text(c.decided)
  local by = c.decided.by or "-"
  local now, err = recorded.replay(pol, c)
  local note = c.rebuilt and ("; " .. c.rebuilt) or ""
  if not now then
    err = string.gsub(string.sub(err, 1, 300), "%s*\n%s*", " ") -- one table row
    return { c.lane, c.id, f, decided, by, "error", "CHANGED the policy raised: " .. err .. note }, "changed", c.rebuilt
  end
  local now_text = decision_text(now)
  if now.retries > 0 then
    local after = now.action == "retry" and " (still, after %d retries)" or " (after %d retries)"
    now_text = now_text .. after:format(now.retries)
  end
  local what = recorded.diff(c.decided, now)
  return { c.lane, c.id, f, decided, by, now_text, (what and "CHANGED " .. what or "same") .. note },
    what and "changed" or "same", c.rebuilt
end

function cli.test_recorded(pol, text)
  local pinned = examples.pin(pol)
  local rows, count = {}, { same = 0, changed = 0, unreadable = 0 }
  local rebuilt = 0
  -- the real gmatch and find: text is the whole lane (see errgate.recorded)
  for line in string.gmatch(tostring(text), "[^\n]+") do
    if string.find(line, "%S") then
      local row, outcome, note = cli.recorded_row(pinned, line)
      rows[#rows + 1] = row
      count[outcome] = count[outcome] + 1
      if note then rebuilt = rebuilt + 1 end
    end
  end
  local out = table_text({ "lane", "errgate.id", "failure", "decided then", "by", "would decide now", "result" }, rows)
  out = out .. ("\n%s: %d records, %d same, %d changed, %d unreadable"):format(
    pol.id, #rows, count.same, count.changed, count.unreadable)
  if rebuilt > 0 then out = out .. (" (%d rebuilt from partial headers)"):format(rebuilt) end
  return out, count.changed > 0 and 1 or 0
end

return cli
