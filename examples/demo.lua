-- demo.lua — the gateway config used by `make demo` (examples/demo.sh).
-- The broker address comes from ERRGATE_BOOTSTRAP, the handler's URL from
-- DEMO_TARGET_URL: a config is Lua, so it may read the environment.
return {
  group = "demo",
  source = { topics = { "orders" }, ordering = "key", max_inflight = 500 },
  target = { http = { url = os.getenv("DEMO_TARGET_URL") or "http://127.0.0.1:8080/",
                      timeout = "2s", concurrency = 32 } },
  policy = "../policies/default.lua",
  lanes = { dlq = "{topic}.dlq", quarantine = "{topic}.quarantine" },
  commit_interval = "200ms",
}
