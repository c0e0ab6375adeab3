#!/usr/bin/env bash
# `fhr-plan run` executes examples on a fresh manager and agrees with the
# prediction; its exit codes and errors for what cannot run; the memory
# guard and sizes-only simulation; --scale; EXPLAIN ANALYZE in text, JSON
# (fhr-run/1) and Perfetto traces, once or as the medians of --repeat;
# progress only on a terminal.
# usage: run_test.sh path/to/fhr-plan   (from the repository root)
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/out" "$work/err" 2>/dev/null | head -n 60; exit 1; }
run() { set +e; "$tool" run "$@" >"$work/out" 2>"$work/err"; code=$?; set -e; }

# Every example runs on simulated devices and exits as explain predicts; a
# run that does not fit in 64 MiB keeps sizes and fingerprints only (as one
# that does not fit in the machine's memory does: infeasible.fhr's 17 GiB
# plan on a CI machine), which keeps this test fast.
for example in examples/*.fhr; do
  set +e; "$tool" explain "$example" >/dev/null 2>&1; predicted=$?; set -e
  run --backend sim --memory-limit 64MiB "$example"
  [ "$code" = "$predicted" ] || fail "$example: exit $code, explain exits $predicted"
  ! grep -q DIFFERS "$work/out" || fail "$example: differences"
  [ ! -s "$work/err" ] || fail "$example: stderr not empty (progress off a terminal?)"
  grep -Eq "result: (completed|stopped) as predicted; [0-9]+ content checks" "$work/out" ||
    fail "$example: no agreement line"
  grep -Eq '^total: [0-9]+ runs? in [0-9.]+ (us|ms|s) wall; ' "$work/out" || fail "$example: no total line"
done
run --backend sim --memory-limit 2GiB examples/infeasible.fhr
[ "$code" = 1 ] || fail "infeasible: exit $code, expected 1"
grep -q 'plan "fits-with-headroom" on the simulated device backend (sizes only: the run does not fit in memory)' \
  "$work/out" || fail "infeasible: fits-with-headroom not sizes-only"
grep -q "stopped at line 18: plan 'load-all-keys' is infeasible in phase enter at step 170: Transition exceeds budget at cuda:0" \
  "$work/out" || fail "infeasible: stop line"
# 2 GiB reserved + 64 keys of 240 MiB + the 60 MiB ciphertext
grep -q 'peak charged at cuda:0: predicted 17468 MiB, measured 17468 MiB' "$work/out" ||
  fail "infeasible: fits-with-headroom peak"
grep -q 'completed as predicted; 129 content checks (fingerprints) passed' "$work/out" ||
  fail "infeasible: fingerprint checks"
# --scale: the same plan with every size divided by 64, real bytes, checked on content.
run --backend sim --plan fits-with-headroom --scale 64 examples/infeasible.fhr
[ "$code" = 0 ] || fail "scaled fits-with-headroom: exit $code"
# 2 GiB/64 + 64 keys of 240 MiB/64 + 60 MiB/64 = 32 MiB + 240 MiB + 960 KiB
grep -q 'peak charged at cuda:0: predicted 279488 KiB, measured 279488 KiB' "$work/out" ||
  fail "--scale 64: peak not divided"
grep -q 'completed as predicted; 129 content checks passed' "$work/out" || fail "--scale 64: content checks"

# Sizes-only on a run that fits, forced by the limit: the same verdicts and
# peaks as with real bytes, fingerprints checked.
run --backend sim examples/inference.fhr
cp "$work/out" "$work/bytes.out"
run --backend sim --memory-limit 1MiB examples/inference.fhr
[ "$code" = 0 ] || fail "sizes-only inference: exit $code"
diff <(grep 'peak charged' "$work/bytes.out") <(grep 'peak charged' "$work/out") ||
  fail "sizes-only inference: peaks differ from the real run"
grep -q 'result: completed as predicted; 9 content checks (fingerprints) passed' "$work/out" ||
  fail "sizes-only inference: checks"
grep -q 'result: completed as predicted; 9 content checks passed' "$work/bytes.out" ||
  fail "inference: checks"
# The actions as the runtime resolved them; drop names the location it frees.
grep -Eq '^ +27  enter 1 +ensure rotkey from pageable to cuda:0 ' "$work/bytes.out" || fail "ensure row"
grep -Eq '^ +32  exit 1 +drop rotkey at cuda:0 ' "$work/bytes.out" || fail "drop row: not 'drop ... at'"
# The shipped H200 profile's prediction (runtime/model/profiles/h200.json).
grep -q 'time: .* measured, 24.7 ms predicted' "$work/bytes.out" || fail "inference: predicted time"
grep -Eq '; 195\.0 MiB moved: .*pinned-device 30\.0 MiB in [0-9.]+ (us|ms) \([0-9.]+ GB/s\)' "$work/bytes.out" ||
  fail "inference: bytes and bandwidth per link"
# The key's load: its source's fill measured beside the profile's figure
# (the host's memory against the calibration's).
grep -Eq '^  source fills: 1 load, 120\.0 MiB in [0-9.]+ (us|ms) measured, 19\.6 ms predicted \([+-][0-9.]+%\): the host.s memory against the profile.s$' \
  "$work/bytes.out" || fail "inference: source fills"

# The default backend: cuda when the CUDA runtime reports a device, else sim.
run examples/inference.fhr
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  grep -q 'on the CUDA backend' "$work/out" || fail "default backend with a GPU"
else
  [ "$code" = 0 ] || fail "default backend: exit $code"
  grep -q 'on the simulated device backend' "$work/out" || fail "default backend without a GPU is not sim"
fi

# A module runs exactly as its source (lines come from the source map).
"$tool" compile examples/inference.fhr -o "$work/inference.fhrb"
run --backend sim "$work/inference.fhrb"
[ "$code" = 0 ] || fail "module: exit $code"
grep -Eq '^ +27  enter 1 +ensure rotkey from pageable to cuda:0' "$work/out" || fail "module: line 27 not named"

# One program or plan by name; an unknown name is bad input.
run --backend sim --program matvec examples/replicated-weights.fhr
[ "$code" = 0 ] || fail "--program matvec: exit $code"
[ "$(grep -c 'on the simulated device backend' "$work/out")" = 1 ] || fail "--program ran more than one"
run --backend sim --plan nope examples/inference.fhr
[ "$code" = 2 ] || fail "unknown plan: exit $code, expected 2"
grep -q 'no plan "nope" to run' "$work/err" || fail "unknown plan: message"

# CUDA locations on the host backend: bad input with a hint.
run --backend host examples/inference.fhr
[ "$code" = 2 ] || fail "host backend with cuda:0: exit $code, expected 2"
grep -q "cuda:0 is not available in this process (--backend sim stands in for CUDA devices)" "$work/err" ||
  fail "host backend: message"

# The memory guard: a run that needs more host memory than the machine has
# is refused on the host backend before anything is allocated (the
# prediction runs first, on the model); sim keeps sizes only instead.
cat >"$work/huge.fhr" <<'FHR'
value keys 1 TiB replicable source pageable
plan "load" { enter { ensure keys at pinned } }
FHR
run --backend host "$work/huge.fhr"
[ "$code" = 2 ] || fail "huge on host: exit $code, expected 2"
grep -q "predicted peaks add up to 2 TiB of host memory" "$work/err" || fail "huge: message"
run --backend sim "$work/huge.fhr"
[ "$code" = 0 ] || fail "huge on sim: exit $code, expected 0"
grep -q 'peak charged at pinned: predicted 1 TiB, measured 1 TiB' "$work/out" || fail "huge on sim: peak"

# A predicted failure: the run stops where the simulator said, exit 1.
cat >"$work/stops.fhr" <<'FHR'
budget pinned 1 MiB
value a 768 KiB replicable at pageable
value b 768 KiB replicable at pageable
program "too-big" {
  ensure a at pinned
  ensure b at pinned
}
FHR
run --backend host "$work/stops.fhr"
[ "$code" = 1 ] || fail "predicted failure: exit $code, expected 1"
grep -q "stopped at line 6: Transition exceeds budget at pinned" "$work/out" || fail "predicted failure: line"
grep -q "result: stopped as predicted" "$work/out" || fail "predicted failure: agreement"
# A value beyond what any location accounts (4 EiB): refused by the manager
# before its buffer is made, as explain predicts, on both host backends (the
# allocator's std::bad_alloc came first once: a fuzz smoke run found it).
for backend in sim host; do
  run --backend "$backend" tests/fuzz-regressions/value-beyond-accounting.fhr
  [ "$code" = 1 ] || fail "beyond accounting ($backend): exit $code, expected 1"
  grep -q "setup stopped: Transition exceeds budget at pageable (budget 4611686018427387904 B" "$work/out" ||
    fail "beyond accounting ($backend): the budget refusal"
  grep -q "result: stopped as predicted" "$work/out" || fail "beyond accounting ($backend): agreement"
done

# --format json (fhr-run/1) and --trace: figures that add up.
run --backend sim --memory-limit 1MiB --format json --trace "$work/trace.json" examples/evict-while-prefetch.fhr \
  examples/inference.fhr
[ "$code" = 0 ] || fail "json: exit $code"
python3 - "$work/out" "$work/trace.json" <<'PY' || fail "json or trace"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "fhr-run/1" and doc["backend"] == "sim" and doc["exit"] == 0, doc.get("schema")
assert [r["name"] for r in doc["runs"]] == ["next-level", "inference/rotate-scale/tile-0"]
total = 0
for run in doc["runs"]:
    assert run["agrees"] and run["completed"] and run["memory"] == "sizes-only" and run["differences"] == []
    moved = sum(s["bytes"] for s in run["steps"] if s["transfer"] != "none")
    assert moved == run["totals"]["bytes_moved"], (moved, run["totals"])
    assert sum(l["bytes"] for l in run["links"]) == moved
    for s in run["steps"]:
        p, m = s["predicted"]["duration_us"], s["measured"]["duration_us"]
        assert p is not None, s
        assert m is not None or s["phase"] == "reserve", s  # reservations are not timed
        assert s["error_us"] is None if m is None else abs(s["error_us"] - (m - p)) < 0.002, s
        assert s["predicted"]["result"] == s["measured"]["result"] == "done", s
        # The simulated devices have no copy engines that overlap: no windows compared.
        assert s["predicted"]["window_place"] is None and s["measured"]["window_place"] is None, s
    assert run["windows"] is None, run["windows"]
    last = max(s["predicted"]["commit_us"] for s in run["steps"])
    assert abs(run["totals"]["predicted_us"] - last) < 0.002
    total += moved
assert doc["totals"]["bytes_moved"] == total
# The loads' fills: none in evict-while-prefetch, inference's key's in the other.
assert doc["runs"][0]["totals"]["source_fills"] is None
fills = doc["runs"][1]["totals"]["source_fills"]
load = [s for s in doc["runs"][1]["steps"] if s["transfer"] == "load"]
assert fills["loads"] == len(load) == 1 and fills["bytes"] == load[0]["bytes"] == 125829120, fills
assert abs(fills["measured_us"] - load[0]["measured"]["source_load_us"]) < 0.002, fills
assert abs(fills["predicted_us"] - load[0]["predicted"]["source_load_us"]) < 0.002, fills
assert abs(fills["error_percent"] - (fills["measured_us"] / fills["predicted_us"] - 1) * 100) < 0.01, fills
evict = doc["runs"][0]
moves = [s for s in evict["steps"] if s["action"].startswith("move")]
ensures = [s for s in evict["steps"] if s["action"].startswith("ensure")]
assert len(moves) == 4 and len(ensures) == 4
assert all(s["link"] == "device-pinned" and s["bytes"] == 125829120 for s in moves), moves
assert all(s["link"] == "pinned-device" and s["predicted"]["engine"] == "cuda:0 in" for s in ensures)
assert evict["totals"]["bytes_moved"] == 8 * 125829120
drop = [s for s in doc["runs"][1]["steps"] if s["action"].startswith("drop")]
assert drop and all(" at cuda:0" in s["action"] and s["transfer"] == "none" for s in drop), drop
# The states the DMAs met (fhr/model/dma_history.hpp): the weight's staged
# copy after the setup's host work (the shipped profile's
# staged_after_host_work_us), the key's load none (after its own fill), the
# query cold after the key's load, its move back straight after that a
# follow-on (the shipped profile's dma_follow_on_us).
states = [(s["action"].split(" from ")[0], s["predicted"]["dma_state"], s["predicted"]["follow_on_us"],
           s["predicted"]["after_host_work_us"])
          for s in doc["runs"][1]["steps"] if s["transfer"] != "none"]
assert states == [("ensure weight", "after-host-work", 0.0, 74.296), ("ensure rotkey", "none", 0.0, 0.0),
                  ("move query", "cold-value", 0.0, 0.0), ("move query", "follow-on", 9.441, 0.0)], states

trace = json.load(open(sys.argv[2]))
events = trace["traceEvents"]
names = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "process_name"}
assert {p for p, _ in names} == {1, 2}, names
tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
def spans(pid, track):
    return [e for e in events if e["ph"] == "X" and e["pid"] == pid and tracks[(pid, e["tid"])] == track]
for pid in (1, 2):
    # four evictions, and inference's move of the query back to pinned
    assert len(spans(pid, "cuda:0 out")) == 5, (pid, len(spans(pid, "cuda:0 out")))
    assert len(spans(pid, "cuda:0 in")) == 4 + 3, (pid, len(spans(pid, "cuda:0 in")))
    assert len(spans(pid, "plans and programs")) == 2
    timed = "duration_us" if pid == 1 else "start_us"
    key = "predicted" if pid == 1 else "measured"
    assert len(spans(pid, "steps")) == sum(s[key][timed] is not None for r in doc["runs"] for s in r["steps"])
PY

# Sizes only, a simulated block is still address space of its size: a run
# of exbibytes cannot be reserved, and is refused before anything runs
# (it once ran and reported its setup refused: std::bad_alloc).
run --backend sim tests/golden/inputs/budget-above-limit.fhr
[ "$code" = 2 ] || fail "exbibytes: exit $code, expected 2"
grep -q "cannot run on the simulated device backend: the run's predicted peaks add up to 6000000 TiB, more than the simulated backend can reserve as address space even keeping sizes only (64 TiB)" \
  "$work/err" || fail "exbibytes: message"

# --overlap: the simulated devices get copy engines, and run compares the
# windows they form with explain's, step by step, in text and JSON.
run --backend sim --overlap --memory-limit 1MiB examples/evict-while-prefetch.fhr
[ "$code" = 0 ] || fail "--overlap: exit $code"
grep -q "overlap windows: 1 predicted, 1 formed, every step in its predicted place" "$work/out" ||
  fail "--overlap: no window line"
run --backend sim --overlap --memory-limit 1MiB --format json examples/evict-while-prefetch.fhr \
  examples/replicated-weights.fhr
[ "$code" = 0 ] || fail "--overlap json: exit $code"
python3 - "$work/out" <<'PY' || fail "--overlap json"
import json, sys
doc = json.load(open(sys.argv[1]))
evict, replicated = doc["runs"]
# The evictions open the window and the prefetches join it (the example's point).
places = [(s["action"].split(" ")[0], s["predicted"]["window_place"], s["measured"]["window_place"])
          for s in evict["steps"]]
assert places == [("move", "opens", "opens")] + [("move", "joins", "joins")] * 3 + \
    [("ensure", "joins", "joins")] * 4, places
assert evict["windows"] == {"predicted": 1, "ran": 1, "differing_steps": []}, evict["windows"]
# Four windows: the weights' copies to cuda:0, then to cuda:1, the inputs'
# moves to both devices, and the two moves between the devices.
assert replicated["windows"] == {"predicted": 4, "ran": 4, "differing_steps": []}, replicated["windows"]
opened = [s for s in replicated["steps"] if s["measured"]["window_place"] == "opens"]
assert len(opened) == 4, opened
PY
for other in host cuda; do
  run --backend "$other" --overlap examples/inference.fhr
  [ "$code" = 2 ] || fail "--overlap --backend $other: exit $code"
  grep -q "error: --overlap gives the simulated devices copy engines: it needs --backend sim" "$work/err" ||
    fail "--overlap --backend $other: message"
done

# --repeat: one report per unit; its steps' times are the medians of every
# run's, the rest (spans, totals) the run whose total is the median.
run --backend sim --memory-limit 1MiB --format json --repeat 4 --trace "$work/repeat-trace.json" \
  examples/evict-while-prefetch.fhr
[ "$code" = 0 ] || fail "--repeat json: exit $code"
python3 - "$work/out" "$work/repeat-trace.json" <<'PY' || fail "--repeat json"
import json, statistics, sys
doc = json.load(open(sys.argv[1]))
assert [r["name"] for r in doc["runs"]] == ["next-level"], [r["name"] for r in doc["runs"]]
run = doc["runs"][0]
repeated = run["repetitions"]
assert repeated["count"] == 4 and len(repeated["measured_us"]) == 4 and repeated["differing"] is False, repeated
totals = repeated["measured_us"]
# the representative: the lower median of the four totals, and its number
assert run["totals"]["measured_us"] == sorted(totals)[1], (run["totals"], totals)
assert totals[repeated["representative"] - 1] == run["totals"]["measured_us"], repeated
timed = 0
for s in run["steps"]:
    m = s["measured"]
    if m["duration_us"] is None:
        assert "repetitions" not in m, s
        continue
    timed += 1
    durations, loads = m["repetitions"]["duration_us"], m["repetitions"]["source_load_us"]
    assert len(durations) == len(loads) == 4, m
    assert abs(m["duration_us"] - statistics.median(durations)) < 0.002, m
    assert abs(m["source_load_us"] - statistics.median(loads)) < 0.002, m
    transfers = [d - l for d, l in zip(durations, loads)]
    assert abs(m["transfer_us"] - statistics.median(transfers)) < 0.002, m
    assert abs(s["error_us"] - (m["duration_us"] - s["predicted"]["duration_us"])) < 0.002, s
    # the host's work before the copy: allocating its destination (120 MiB
    # copies: stamped in every repetition), inside the step's span
    before = m["repetitions"]["before_copy_us"]
    assert len(before) == 4 and all(0 <= b <= d for b, d in zip(before, durations)), m
    assert abs(m["before_copy_us"] - statistics.median(before)) < 0.002, m
    p = s["predicted"]
    assert abs(p["before_copy_us"] - (p["allocation_us"] + p["source_load_us"])) < 0.002, p
assert timed == 8, timed
# the links' times: sums of the steps' medians
for link in run["links"]:
    steps = [s for s in run["steps"] if s["link"] == link["link"]]
    assert abs(link["measured_us"] - sum(s["measured"]["duration_us"] for s in steps)) < 0.01, link
# the trace holds one run: the representative's eight measured steps
trace = json.load(open(sys.argv[2]))
events = trace["traceEvents"]
tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
measured_steps = [e for e in events if e["ph"] == "X" and e["pid"] == 2 and tracks[(2, e["tid"])] == "steps"]
assert len(measured_steps) == 8, len(measured_steps)
PY
run --backend sim --repeat 3 examples/inference.fhr
[ "$code" = 0 ] || fail "--repeat text: exit $code"
grep -Eq '^  repeated 3 times: step times are medians, the rest is repetition [1-3] \(its total the median\); totals [0-9.]+ (us|ms|s) to [0-9.]+ (us|ms|s)$' \
  "$work/out" || fail "--repeat text: no repetitions line"
[ "$(grep -c 'on the simulated device backend' "$work/out")" = 1 ] || fail "--repeat text: more than one report"
grep -q 'result: completed as predicted; 9 content checks passed' "$work/out" || fail "--repeat text: checks"
run --backend sim examples/inference.fhr
! grep -q 'repeated' "$work/out" || fail "a single run reports repetitions"
# --check-content end: only the replicas left at the end (the weight at
# pageable and pinned, the query at pinned), said so in text and JSON; the
# default off the CUDA backend checks each installed replica too.
grep -q 'result: completed as predicted; 9 content checks passed$' "$work/out" || fail "default checks"
run --backend sim --check-content end examples/inference.fhr
grep -q 'result: completed as predicted; 3 content checks passed (at the end)$' "$work/out" ||
  fail "--check-content end: text"
for mode in transitions end; do
  run --backend sim --check-content "$mode" --format json examples/inference.fhr
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["runs"][0]; \
assert (r["content_checked"], r["content_checks"]) == (sys.argv[2], int(sys.argv[3])), r["content_checked"]' \
    "$work/out" "$mode" "$([ "$mode" = end ] && echo 3 || echo 9)" || fail "--check-content $mode: json"
done
run --backend sim --check-content never examples/inference.fhr
[ "$code" = 2 ] && grep -q "check-content" "$work/err" || fail "--check-content never: not refused"
for n in 0 101; do
  run --backend sim --repeat "$n" examples/inference.fhr
  [ "$code" = 2 ] && grep -q -- "--repeat must be from 1 to 100" "$work/err" || fail "--repeat $n"
done

# Sizes-only in JSON; bad options.
run --backend sim --memory-limit 1MiB --format json examples/infeasible.fhr
[ "$code" = 1 ] || fail "infeasible json: exit $code"
python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["exit"] == 1 and all(r["memory"] == "sizes-only" for r in doc["runs"])
load = doc["runs"][0]
assert not load["completed"] and load["agrees"] and load["stopped"]["line"] == 18, load["stopped"]
assert load["steps"][-1]["measured"]["result"] == "refused (plan)", load["steps"][-1]
assert load["totals"]["predicted_us"] is None  # preflight-refused: explained step by step, ran as one
evict = doc["runs"][1]
assert evict["totals"]["predicted_us"] is not None and evict["steps"][0]["predicted"]["result"] == "refused (plan)"
' "$work/out" || fail "infeasible json"
run --backend sim --scale 0 examples/inference.fhr
[ "$code" = 2 ] && grep -q -- "--scale must be at least 1" "$work/err" || fail "--scale 0"
run --backend sim --profile "$work/missing.json" examples/inference.fhr
[ "$code" = 2 ] && grep -q "cannot read link profile" "$work/err" || fail "--profile missing"

# Progress: on a terminal, a run that takes over a second shows its steps
# on stderr; off a terminal (every run above) nothing.
if command -v script >/dev/null; then
  cat >"$work/slow.fhr" <<'FHR'
value a 64 MiB replicable at pageable
program "slow" {
  for i in 0..40 {
    ensure a at pinned
    drop a at pinned
  }
}
FHR
  script -qec "$tool run --backend host $work/slow.fhr >$work/slow.out" "$work/tty" >/dev/null </dev/null
  grep -q 'fhr-plan run: program "slow": [0-9]* of 80 steps' "$work/tty" || {
    # Only a run slower than a second shows progress: a fast machine may not.
    t=$(sed -n 's/^total: 1 run in \([0-9.]*\) s wall.*/\1/p' "$work/slow.out")
    [ -z "$t" ] || awk -v t="$t" 'BEGIN { exit !(t < 1.5) }' || fail "progress: a run of $t s showed none"
  }
fi
echo "run: all checks passed"
