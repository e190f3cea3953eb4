-- toolbench's workload runtime for wrk (adapters/wrk_workload.py): fixed text, run after the cell's
-- workload as the data W and toolbench's done() (wrk_done.lua). Each thread has one connection (-t C -c C), so its request() and
-- response() alternate: the thread is one user. It counts each response per request name into
-- tb_tally, which done() reads from every thread and writes to wrk_requests.json.
local COUNTS = 5 -- per name: total, ok, http, check, unanswered
local NULL = {}
local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
  thread:set("tb_user", #threads)
end

-- JSON, enough to take a value at a path: a body that is not JSON fails the check or the extract.
local function skip(s, i) return s:find("[^ \t\r\n]", i) or #s + 1 end
local ESCAPES = {['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t"}

local function utf8(code)
  if code < 0x80 then return string.char(code) end
  if code < 0x800 then return string.char(0xC0 + math.floor(code / 64), 0x80 + code % 64) end
  return string.char(0xE0 + math.floor(code / 4096), 0x80 + math.floor(code / 64) % 64, 0x80 + code % 64)
end

local function jstring(s, i)
  local out, j = {}, i + 1
  while true do
    local k = s:find('["\\]', j)
    if not k then error("json") end
    out[#out + 1] = s:sub(j, k - 1)
    if s:sub(k, k) == '"' then return table.concat(out), k + 1 end
    local e = s:sub(k + 1, k + 1)
    if e == "u" then
      local code = tonumber(s:sub(k + 2, k + 5), 16)
      if not code or #s:sub(k + 2, k + 5) ~= 4 then error("json") end
      out[#out + 1], j = utf8(code), k + 6
    else
      out[#out + 1], j = ESCAPES[e] or error("json"), k + 2
    end
  end
end

local decode
local function container(s, i, close, keyed)
  local out, n = {}, 0
  i = skip(s, i + 1)
  if s:sub(i, i) == close then return out, i + 1 end
  while true do
    local key
    if keyed then
      if s:sub(i, i) ~= '"' then error("json") end
      key, i = jstring(s, i)
      i = skip(s, i)
      if s:sub(i, i) ~= ":" then error("json") end
      i = i + 1
    else
      n = n + 1
      key = n
    end
    out[key], i = decode(s, i)
    i = skip(s, i)
    local d = s:sub(i, i)
    if d == close then return out, i + 1 end
    if d ~= "," then error("json") end
    i = skip(s, i + 1)
  end
end

decode = function(s, i)
  i = skip(s, i)
  local c = s:sub(i, i)
  if c == "{" then return container(s, i, "}", true) end
  if c == "[" then return container(s, i, "]", false) end
  if c == '"' then return jstring(s, i) end
  for word, value in pairs({["true"] = true, ["false"] = false, ["null"] = NULL}) do
    if s:sub(i, i + #word - 1) == word then return value, i + #word end
  end
  local num = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  if not num or not tonumber(num) then error("json") end
  return tonumber(num), i + #num
end

local function at(body, steps)
  local ok, value = pcall(decode, body, 1)
  if not ok then return nil end
  for _, step in ipairs(steps) do
    if type(value) ~= "table" then return nil end
    value = value[step]
  end
  if value == NULL then return nil end
  return value
end

local function text_of(value)
  if type(value) == "number" and value == math.floor(value) and math.abs(value) < 2 ^ 53 then
    return string.format("%d", value)
  end
  if type(value) == "number" then return string.format("%.17g", value) end
  if type(value) == "table" then return nil end
  return tostring(value)
end

-- The user: its data row, its variables, where it is in the sequence.
local user, vars, step, iteration, pending, armed, started
local rows, total_weight

local function decode_field(f)
  return (f:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

local function load_rows()
  local fh = assert(io.open(W.data.file, "rb"))
  local out = {}
  for line in fh:lines() do
    local row, col = {}, 1
    for field in (line .. "\t"):gmatch("([^\t]*)\t") do
      if W.data.columns[col] then row[W.data.columns[col]] = decode_field(field) end
      col = col + 1
    end
    out[#out + 1] = row
  end
  fh:close()
  assert(#out > 0, "no data rows")
  return out
end

local function take_row(index)
  for column, value in pairs(rows[index % #rows + 1]) do vars[column] = value end
end

function init(args)
  user = tb_user or 1
  vars, step, iteration, tb_tally = {}, 1, 0, {}
  for i = 1, #W.requests * COUNTS do tb_tally[i] = 0 end
  math.randomseed(os.time() * 1000 + user)
  total_weight = 0
  for _, r in ipairs(W.requests) do total_weight = total_weight + r.weight end
  if W.data then
    rows = load_rows()
    take_row(user - 1)
  end
end

local function count(index, what)
  tb_tally[(index - 1) * COUNTS + what] = tb_tally[(index - 1) * COUNTS + what] + 1
end

local function encode(s)
  return (s:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", c:byte()) end))
end

local function fill(text, how)
  return (text:gsub("%${([a-z][a-z0-9_]*)}", function(name) return how(vars[name] or "") end))
end

local function same(s) return s end
local function header_value(s) return (s:gsub("%c", "")) end -- no CR or LF: no header of its own

local function pick()
  local x = math.random() * total_weight
  for i, r in ipairs(W.requests) do
    x = x - r.weight
    if x < 0 then return i end
  end
  return #W.requests
end

local function next_index()
  local index
  if W.order == "sequence" then
    index = step
    step = step % #W.requests + 1
  else
    index = pick()
  end
  if index == 1 or W.order == "mix" then
    if W.data and W.data.per == "iteration" then take_row(user - 1 + iteration * W.users) end
    iteration = iteration + 1
  end
  return index
end

function delay()
  armed = true -- wrk asks delay() before each request it sends, and request() once before, to see its form
  if not started or not W.think then
    started = true
    return 0
  end
  return math.random(W.think.min_ms, W.think.max_ms)
end

function request()
  local index = pending or 1
  if armed then
    if pending then count(pending, 1); count(pending, 5) end -- sent, and no response came
    index = next_index()
    pending, armed = index, false
  end
  local r = W.requests[index]
  local path = fill(r.path, encode)
  local query = {}
  for _, kv in ipairs(r.query) do query[#query + 1] = encode(kv[1]) .. "=" .. encode(fill(kv[2], same)) end
  if #query > 0 then path = path .. "?" .. table.concat(query, "&") end
  local headers = {}
  for _, kv in ipairs(r.headers) do headers[kv[1]] = header_value(fill(kv[2], same)) end
  if W.close then headers["Connection"] = "close" end
  return wrk.format(r.method, path, headers, r.body and fill(r.body, same) or nil)
end

local function checked(r, status, body)
  local c = r.checks
  if c.status and next(c.status) and not c.status[status] then return false end
  if c.contains and not body:find(c.contains, 1, true) then return false end
  if c.max_bytes and #body > c.max_bytes then return false end
  if c.json and at(body, c.json) ~= c.equals then return false end
  return true
end

function response(status, headers, body)
  local index = pending
  if not index then return end
  pending = nil
  local r = W.requests[index]
  body = body or ""
  count(index, 1)
  local good = true
  for _, e in ipairs(r.extract) do
    local value = text_of(at(body, e.steps))
    vars[e.var] = value -- unset when the body has none
    if not value then good = false end
  end
  if r.checks and not (good and checked(r, status, body)) then
    count(index, 4)
  elseif not (r.checks and r.checks.status and next(r.checks.status)) and status >= 400 then
    count(index, 3)
  else
    count(index, 2)
  end
end

local function write_requests()
  local sums = {}
  for i = 1, #W.requests * COUNTS do sums[i] = 0 end
  for _, thread in ipairs(threads) do
    local tally = thread:get("tb_tally") or {}
    for i = 1, #W.requests * COUNTS do sums[i] = sums[i] + (tally[i] or 0) end
  end
  local parts = {}
  for i, r in ipairs(W.requests) do
    local base = (i - 1) * COUNTS
    parts[#parts + 1] = string.format('{"name": "%s", "total": %d, "ok": %d, "http": %d, "check": %d, ' ..
      '"unanswered": %d}', r.name, sums[base + 1], sums[base + 2], sums[base + 3], sums[base + 4], sums[base + 5])
  end
  local out = assert(io.open("wrk_requests.json", "w"))
  out:write('{"toolbench_wrk_requests": 1, "by_request": [', table.concat(parts, ", "), "]}\n")
  out:close()
end

-- toolbench's done() (wrk_done.lua, before this) writes wrk's own figures; this adds the names'.
local wrk_done = done
done = function(summary, latency, requests)
  wrk_done(summary, latency, requests)
  write_requests()
end
