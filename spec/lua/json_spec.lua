-- json_spec.lua — errgate.json: decodes what lua-cjson decodes, refuses what
-- it refuses (and what RFC 8259 forbids but lua-cjson lets through), and
-- never raises.
local json = require "errgate.json"
local cjson = require "cjson"

-- cjson's value with object members that are null removed (errgate.json's
-- reading of null in an object) and array nulls as json.null
local function as_errgate(v)
  if v == cjson.null then return json.null end
  if type(v) ~= "table" then return v end
  local t = {}
  for k, x in pairs(v) do
    if not (type(k) == "string" and x == cjson.null) then t[k] = as_errgate(x) end
  end
  return t
end

describe("errgate.json.decode", function()
  local valid = {
    '{}', '[]', '0', '-0', '12', '-3.25', '1e3', '2E-2', '6.02e+23', '"x"', 'true', 'false', '[null]',
    ' \t\r\n{ "a" : [ 1 , 2 , { "b" : null } ] } \n',
    '{"error": {"class": "semantic", "code": 42, "message": "IBAN checksum failed"}}',
    '{"a": 1, "a": 2}',
    '"\\" \\\\ \\/ \\b \\f \\n \\r \\t"',
    '"\\u0041\\u00e9\\u20ac\\ud83d\\ude00"',
    '"caf\195\169 \226\130\172 \240\159\152\128"',
    '[[[[[[[[[[1]]]]]]]]]]',
    '{"k": [true, false, null, "s", -1.5e-7]}',
    '"' .. string.rep("x", 5000) .. '"',
  }
  for _, s in ipairs(valid) do
    it("decodes " .. (#s > 60 and s:sub(1, 60) .. "..." or s) .. " as lua-cjson does", function()
      local got, err = json.decode(s)
      assert.is_nil(err)
      assert.are.same(as_errgate(cjson.decode(s)), got)
    end)
  end

  local invalid = {
    '', ' ', '{', '[1,]', '{"a":1,}', '{"a" 1}', '{a:1}', "{'a':1}", '[1 2]', '-', '.5', '"abc', '"\\x"',
    '"\\u12"', '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', 'tru', 'nul', '{} x', '[1]]',
  }
  for _, s in ipairs(invalid) do
    it(("refuses %q, as lua-cjson does, with a message and no error raised"):format(s), function()
      local ok, v, err = pcall(json.decode, s)
      assert.is_true(ok)
      assert.is_nil(v)
      assert.matches("^invalid JSON: .* at byte %d+$", err)
      assert.is_false((pcall(cjson.decode, s)))
    end)
  end

  -- RFC 8259 forbids these; lua-cjson's defaults let them through
  local lax = { '01', '-01', '1.', '+1', '"a\nb"', '"\1"', 'NaN', 'Infinity', '-Infinity', '0x10' }
  for _, s in ipairs(lax) do
    it(("refuses %q, which RFC 8259 forbids"):format(s), function()
      local v, err = json.decode(s)
      assert.is_nil(v)
      assert.matches("^invalid JSON: .* at byte %d+$", err)
    end)
  end

  it("refuses nesting deeper than MAX_DEPTH with a message, never a stack overflow", function()
    local deep = string.rep("[", json.MAX_DEPTH + 1) .. string.rep("]", json.MAX_DEPTH + 1)
    local v, err = json.decode(deep)
    assert.is_nil(v)
    assert.matches("nesting deeper than", err)
    local ok = json.decode(string.rep("[", json.MAX_DEPTH) .. string.rep("]", json.MAX_DEPTH))
    assert.is_table(ok)
    v, err = json.decode(string.rep("[", 1e6))
    assert.is_nil(v)
    assert.matches("nesting deeper than", err)
  end)

  it("names the byte where the document goes wrong", function()
    local _, err = json.decode('{"a": [1, 2,, 3]}')
    assert.are.equal("invalid JSON: unexpected character at byte 13", err)
  end)

  it("refuses what is not a string", function()
    assert.are.same({ nil, "invalid JSON: not a string" }, { json.decode(nil) })
    assert.are.same({ nil, "invalid JSON: not a string" }, { json.decode({}) })
  end)

  it("keeps json.null read-only", function()
    local v = json.decode("[null]")
    assert.are.equal(json.null, v[1])
    assert.has_error(function() v[1].x = 1 end)
    assert.are.equal("null", tostring(json.null))
  end)

  it("agrees with lua-cjson on 3,000 random documents", function()
    math.randomseed(20261124)
    local atoms = { "0", "-1", "2.5e3", "true", "false", "null", '"a"', '"\\u00e9"', '""', '"\\n"' }
    local function gen(depth)
      local r = math.random(depth > 4 and 1 or 3)
      if r == 1 then return atoms[math.random(#atoms)] end
      local parts = {}
      for i = 1, math.random(0, 4) do
        parts[i] = r == 2 and gen(depth + 1) or ('"k%d": %s'):format(math.random(3), gen(depth + 1))
      end
      return r == 2 and "[" .. table.concat(parts, ",") .. "]" or "{" .. table.concat(parts, ", ") .. "}"
    end
    local bad = 0
    for _ = 1, 3000 do
      local s = gen(0)
      if math.random(4) == 1 then -- damage one byte
        local i = math.random(#s)
        s = s:sub(1, i - 1) .. string.char(math.random(32, 126)) .. s:sub(i + 1)
      end
      local cok, cv = pcall(cjson.decode, s)
      local v = json.decode(s)
      if cok ~= (v ~= nil) or (cok and not pcall(assert.are.same, as_errgate(cv), v)) then
        bad = bad + 1
        print("# disagree: " .. s)
      end
    end
    assert.are.equal(0, bad)
  end)
end)
