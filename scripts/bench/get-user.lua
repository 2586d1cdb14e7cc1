-- wrk script for iap-ledger `make bench`: GET /v1/users/{id} for a random seeded user.
-- usage: wrk -t2 -c64 -d10s --latency -s scripts/bench/get-user.lua http://127.0.0.1:PORT -- USERS_FILE API_KEY
--   USERS_FILE: one user id per line (ids with only [A-Za-z0-9._-], so no escaping is needed)
--   API_KEY:    a key with the read scope (iap-ledger keys create --name bench --scopes read,write)
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
end

function init(args)
  users = {}
  for line in io.lines(args[1]) do
    if #line > 0 then users[#users + 1] = line end
  end
  assert(#users > 0, "no users in " .. args[1])
  headers = { ["Authorization"] = "Bearer " .. args[2] }
  math.randomseed(12345 + (thread_index or 0))
end

function request()
  return wrk.format("GET", "/v1/users/" .. users[math.random(#users)], headers)
end
