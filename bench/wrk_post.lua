-- wrk_post.lua — the handler-ceiling load: wrk POSTs one small JSON record
-- ({"id","mode":"ok"}, the shape of the benchmark's records) over keep-alive
-- connections, so the flaky handler answers 200 as fast as it can.
wrk.method = "POST"
wrk.body = '{"id":"wrk","mode":"ok"}'
wrk.headers["Content-Type"] = "application/json"
