-- wrk script for bench/: POST a body read from a file, report one JSON line.
--
-- Configured by environment variables (set by bench/loadgen.py):
--   BENCH_METHOD        HTTP method (default POST)
--   BENCH_BODY_FILE     file whose bytes are the request body (binary-safe)
--   BENCH_HEADERS       "Name: value" pairs separated by newlines
--   BENCH_COUNT_STATUS  "1" to count responses by status (2xx, 409, other); this adds a
--                       Lua call per response, so it is only turned on where counted

local threads = {}

wrk.method = os.getenv("BENCH_METHOD") or "POST"
local body_file = os.getenv("BENCH_BODY_FILE")
if body_file and body_file ~= "" then
  local f = assert(io.open(body_file, "rb"))
  wrk.body = f:read("*a")
  f:close()
end
for line in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^\n]+") do
  local name, value = string.match(line, "^([^:]+):%s*(.*)$")
  if name then wrk.headers[name] = value end
end

function setup(thread)
  table.insert(threads, thread)
end

if os.getenv("BENCH_COUNT_STATUS") == "1" then
  ok_2xx, st_409, st_other = 0, 0, 0
  function response(status, headers, body)
    if status >= 200 and status < 300 then
      ok_2xx = ok_2xx + 1
    elseif status == 409 then
      st_409 = st_409 + 1
    else
      st_other = st_other + 1
    end
  end
end

function done(summary, latency, requests)
  local c2, c409, cother = -1, -1, -1
  if os.getenv("BENCH_COUNT_STATUS") == "1" then
    c2, c409, cother = 0, 0, 0
    for _, t in ipairs(threads) do
      c2 = c2 + (t:get("ok_2xx") or 0)
      c409 = c409 + (t:get("st_409") or 0)
      cother = cother + (t:get("st_other") or 0)
    end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,' ..
    '"read_errors":%d,"write_errors":%d,"timeouts":%d,"status_errors":%d,' ..
    '"p50_us":%d,"p99_us":%d,"mean_us":%.1f,"ok_2xx":%d,"st_409":%d,"st_other":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.timeout, e.status, latency:percentile(50), latency:percentile(99), latency.mean,
    c2, c409, cother))
end
