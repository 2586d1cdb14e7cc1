-- wrk script for iap-ledger `make bench`: POST /v1/purchases with pre-minted, distinct signed
-- transactions (each a new purchase for a new user: the verify → decide → append → render path).
-- usage: wrk -t2 -c32 -d10s --latency -s scripts/bench/post-purchase.lua http://127.0.0.1:PORT -- BODIES_FILE API_KEY THREADS SKIP
--   BODIES_FILE: one JSON body per line ({"userId":…,"signedTransaction":…}); make it with
--                iap-ledger-bench mint-purchases --count N --out BODIES_FILE
--   THREADS:     wrk's -t (each thread takes every THREADS-th line, so no body is sent twice)
--   SKIP:        lines already used by earlier runs (re-sending one would measure the duplicate path)
--   MAX:         optional cap of lines loaded per thread (memory), default 75000
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

function init(args)
  local threads = tonumber(args[3])
  local skip = tonumber(args[4])
  local max = tonumber(args[5] or "75000")
  bodies = {}
  local n = 0
  for line in io.lines(args[1]) do
    if n >= skip and (n - skip) % threads == thread_index and #bodies < max then
      bodies[#bodies + 1] = line
    end
    n = n + 1
  end
  assert(#bodies > 0, "no bodies left in " .. args[1] .. " after skipping " .. skip)
  headers = { ["Authorization"] = "Bearer " .. args[2], ["Content-Type"] = "application/json" }
  next_body = 1
end

function request()
  local body = bodies[next_body]
  next_body = next_body + 1
  if next_body > #bodies then next_body = 1 end  -- wraps only if the file was too short (reported)
  return wrk.format("POST", "/v1/purchases", headers, body)
end
