-- The Lua canary of the attack corpus: if HAProxy (or anything) ever runs
-- this file, it leaves a marker named after the case. The harness fills in
-- MARKER_DIR and CASE_ID per case and proves it works with a direct haproxy -c.
local marker = "MARKER_DIR/lua-CASE_ID"
local f = io.open(marker, "w")
if f then
  f:write("lua canary of CASE_ID ran\n")
  f:close()
end
pcall(os.execute, "echo exec > " .. marker .. "-exec")
