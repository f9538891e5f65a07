#!/usr/bin/env bash
# CI: every distribution as users install it (issue 24). For the core and each plugins/*/ distribution:
#   1. deptry: every import (lazy ones too) declared by the distribution that makes it; a missing, unused or
#      transitive-only dependency fails (each pyproject.toml's [tool.deptry] says what is known good, and why)
#   2. python -m build (wheel and sdist) and twine check
#   3. the built wheel alone in a fresh, bare virtual environment, resolving only its declared dependencies
#      (no test lock, no editable install; the core's wheel stands in for `cotk-repro`, which a plugin requires),
#      then that distribution's smoke path there, as a user runs it
#   4. the core's wheel in a bare Python 3.13 venv: the demo (the core metrics' matrix under every Python,
#      3.13 included, is tests/test_cross_machine.py's, in the suite: it builds a venv per Python itself)
# torch comes only as the CPU build: a constraint `torch==<requirements/torch.txt's version>+cpu`; where the
# configured index has no such wheel, set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu. The bare venvs
# are filled by uv (pip's find-links passed on). uv's and pip's caches are reused. Each stage prints its time.
#   bash scripts/ci-dists.sh [DIST...]      (default: cotk-repro and every plugins/*/)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cotk-repro-dists.XXXXXX")
trap '{ [ -z "${py313_pid:-}" ] || kill "$py313_pid" 2>/dev/null; } || true; rm -rf "$WORK"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1
unset PYTHONPATH  # the bare venvs see their own site-packages only
export COTK_REPRO_BUILTINS_ONLY=  # a user's plugins load
# byte code kept, as a user's Python keeps it (these machines set PYTHONDONTWRITEBYTECODE, and uv writes none: each
# smoke process compiled torch and transformers again, ~6 s of CPU apiece), under $WORK: no source tree gets any
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$WORK/pycache"
SECONDS=0

stage() { printf '\n== %s (%ds)\n' "$*" "$SECONDS"; }
fail() { echo "ci-dists: $*" >&2; exit 1; }

torch_version=$(sed -n 's/^torch==\([^ #]*\).*/\1/p' requirements/torch.txt)
[ -n "$torch_version" ] || fail "requirements/torch.txt pins no torch==VERSION"
echo "torch==${torch_version%+cpu}+cpu" >"$WORK/torch-cpu.txt"
pip_extra=()
[ -z "${TORCH_INDEX_URL:-}" ] || pip_extra=(--extra-index-url "$TORCH_INDEX_URL")

dists=("$@")
if [ ${#dists[@]} -eq 0 ]; then
  dists=(cotk-repro)
  for p in plugins/*/; do [ -f "$p/pyproject.toml" ] && dists+=("$(basename "$p")"); done
fi
folder() { if [ "$1" = cotk-repro ]; then echo "$ROOT"; else echo "$ROOT/plugins/$1"; fi; }
module() { echo "${1//-/_}"; }

# -- 1. deptry -----------------------------------------------------------------------------------------------
stage "deptry"
"$PY" -m deptry --version >/dev/null 2>&1 || fail "deptry is not installed (it is in the test extra: bash scripts/setup.sh)"
bad=()
for d in "${dists[@]}"; do
  echo "-- deptry $d"
  (cd "$(folder "$d")" && "$PY" -m deptry "$(module "$d")" --no-ansi) || bad+=("$d")
done
[ ${#bad[@]} -eq 0 ] || fail "deptry found undeclared or unused dependencies in: ${bad[*]}"

# -- 2. build + twine check ----------------------------------------------------------------------------------
stage "build and twine check"
# build's isolated environments filled by uv where the test venv has it (the same backend, the same wheel: its
# files compared equal; 3.7 s for the core where pip took 9.8 s)
build_with=()
"$PY" -m uv --version >/dev/null 2>&1 && build_with=(--installer uv)
for d in "${dists[@]}"; do
  out="$WORK/dist/$d"
  "$PY" -m build "${build_with[@]}" --outdir "$out" "$(folder "$d")" >"$WORK/build-$d.log" 2>&1 \
    || { tail -30 "$WORK/build-$d.log" >&2; fail "python -m build failed for $d"; }
  ls "$out"/*.whl "$out"/*.tar.gz >/dev/null || fail "$d: build made no wheel or no sdist"
  "$PY" -m twine check --strict "$out"/* || fail "twine check failed for $d"
done
core_wheel() {
  [ -d "$WORK/dist/cotk-repro" ] || { "$PY" -m build "${build_with[@]}" --wheel --outdir "$WORK/dist/cotk-repro" "$ROOT" \
      >"$WORK/build-cotk-repro.log" 2>&1 || fail "python -m build failed for cotk-repro"; }
  ls "$WORK"/dist/cotk-repro/cotk_repro-*.whl
}

# -- 3. each wheel alone in a bare venv, and its smoke path --------------------------------------------------
# uv fills the bare venvs (the same resolution from the same declared ranges as pip, in a fraction of the
# time on an empty cache); it reads pip's find-links (where the CPU torch wheel may lie) from pip's config
uv_links=()
for link in ${PIP_FIND_LINKS:-$("$PY" -m pip config get global.find-links 2>/dev/null || true)}; do
  uv_links+=(--find-links "$link")
done
install_into() {  # install_into VENV REQUIREMENT... (uv where the test venv has it, else the venv's pip)
  local v=$1; shift
  if "$PY" -m uv --version >/dev/null 2>&1; then
    "$PY" -m uv pip install -q --python "$v/bin/python" "${uv_links[@]}" "$@"
  else
    "$v/bin/python" -m pip install -q "$@"
  fi
}
bare_venv() {  # bare_venv NAME REQUIREMENT... : a fresh venv with only these (and what they declare)
  local name=$1; shift
  local v="$WORK/venv-$name"
  "$PY" -m venv "$v" >&2
  install_into "$v" -c "$WORK/torch-cpu.txt" "${pip_extra[@]}" "$@" >&2 \
    || fail "installing $* into a bare venv failed"
  local cuda
  cuda=$("$v/bin/python" -m pip list --format=freeze 2>/dev/null | grep -iE '^nvidia-|^torch==' | grep -v '+cpu$' || true)
  if [ -n "$cuda" ]; then
    echo "$cuda" >&2
    fail "$name: a CUDA torch or an nvidia package came in; only the CPU build may"
  fi
  echo "$v"
}
cli() { local v=$1; shift; (cd "$SMOKE" && env -u PYTHONPATH HOME="$SMOKE/home" PATH="$v/bin:$PATH" cotk-repro "$@"); }

# -- 4. the core under Python 3.13 (the README's first command there; the lock's Python is 3.11) -----------------
# its wheel in a bare 3.13 venv: `cotk-repro demo --no-serve` (its docker step takes a local image with Python
# 3.13, cotk-repro-base:trixie from scripts/base-image.sh, else the venv runtime, and says which). The core
# metrics' matrix under every Python is not run again here: the suite's
# test_cross_machine_core_metrics_hash_alike_under_every_python runs the same workers in the same per-Python venvs
# (this stage ran that test under 3.13, whose only part was orchestrating them: 72 s for nothing new).
# PYTHON313=PATH names the interpreter (default: python3.13 on PATH, else pyenv's newest 3.13).
# It runs beside the distributions' loop (its demo waits on a Docker build and git; the loop is one process at
# a time), its output kept in a log and printed after the loop's.
py313_stage() {
  stage "cotk-repro under Python 3.13"
  py313=
  # the first candidate that runs as 3.13 (pyenv's shim on PATH may run another version, or none)
  for c in "${PYTHON313:-}" "$(command -v python3.13 || true)" \
           $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3 2>/dev/null | sort -rV); do
    if [ -n "$c" ] && [ -x "$c" ] && [ "$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = 3.13 ]; then
      py313=$c; break
    fi
  done
  [ -n "$py313" ] || fail "no Python 3.13 interpreter (set PYTHON313=PATH, or install one with pyenv)"
  echo "-- $py313"
  v="$WORK/venv-py313"
  "$py313" -m venv "$v"
  install_into "$v" "$(core_wheel)" \
    || fail "installing the core's wheel into a Python 3.13 venv failed"
  SMOKE="$WORK/smoke-py313"
  mkdir -p "$SMOKE/home"
  cli "$v" demo --no-serve
  rm -rf "$v"
}
py313_pid=
if [[ " ${dists[*]} " == *" cotk-repro "* ]]; then
  core_wheel >/dev/null  # built once, before the two use it
  py313_stage >"$WORK/py313.log" 2>&1 &
  py313_pid=$!
fi

smoke_dist() {  # smoke_dist DIST: its wheel alone in a bare venv, its smoke path, its plugins load
  local d=$1 v wheel
  stage "$d: its wheel alone in a bare venv"
  SMOKE="$WORK/smoke-$d"
  mkdir -p "$SMOKE/home"
  wheel=$(ls "$WORK"/dist/"$d"/*.whl)
  case "$d" in
    cotk-repro) v=$(bare_venv "$d" "$wheel") ;;
    cotk-repro-templates) v=$(bare_venv "$d" "$(core_wheel)" "$wheel[torch]") ;;
    *) v=$(bare_venv "$d" "$(core_wheel)" "$wheel") ;;
  esac
  echo "-- $("$v/bin/python" -m pip list --format=freeze | wc -l) distributions installed"
  cli "$v" --version
  case "$d" in
    cotk-repro)
      cli "$v" demo --no-serve --runtime venv --trust-remote-code
      image=${COTK_REPRO_BASE_IMAGE:-cotk-repro-base:bookworm}
      if docker image inspect "$image" >/dev/null 2>&1; then
        cli "$v" demo --no-serve --runtime docker --base-image "$image"
      else
        echo "-- no Docker engine or no base image $image: the docker demo is left out"
      fi
      ;;
    cotk-repro-templates)
      cli "$v" init lm-tiny --template lm-gru
      git -C "$SMOKE/lm-tiny" add -A
      git -C "$SMOKE/lm-tiny" -c user.name=ci -c user.email=ci@cotk-repro.invalid commit -qm start
      (cd "$SMOKE/lm-tiny" && env -u PYTHONPATH HOME="$SMOKE/home" PATH="$v/bin:$PATH" cotk-repro run)
      ;;
    cotk-repro-lm)
      "$v/bin/python" "$ROOT/scripts/ci_tiny_gpt2.py" "$SMOKE/tiny-gpt2" "$ROOT"/tests/fixtures/cotk-small/mscoco/*.txt
      printf 'a man rides a horse on the beach .\ntwo dogs play in the snow .\n' >"$SMOKE/hyp.txt"
      cli "$v" evaluate -m fluency -o "fluency.model=$SMOKE/tiny-gpt2" --hyps "$SMOKE/hyp.txt" --json
      # a language model as a system: the hf generator on the same tiny model, greedy, one line per input
      cli "$v" generate --generator hf -g "hf.model=$SMOKE/tiny-gpt2" -g hf.max_new_tokens=4 \
        --inputs "$SMOKE/hyp.txt" --out "$SMOKE/generated.txt" --json
      [ "$(wc -l <"$SMOKE/generated.txt")" -eq 2 ] || fail "$d: generate wrote no line per input"
      ;;
    cotk-repro-summarizers)
      cp -r "$ROOT/examples/summarization" "$SMOKE/summarization"
      cli "$v" compare summarization/benchmark.toml --out "$SMOKE/report"
      ;;
    cotk-repro-example)
      printf 'a b c\n' >"$SMOKE/hyp.txt"
      cli "$v" evaluate -m toy-metric --hyps "$SMOKE/hyp.txt" --json
      cli "$v" evaluate -m distinct -t toy-tokenizer --hyps "$SMOKE/hyp.txt" --json
      ;;
    *)
      echo "-- $d: no smoke path of its own; its plugin must load"
      ;;
  esac
  # every distribution's plugins load (none BROKEN) where users install them
  cli "$v" plugins --json >"$SMOKE/plugins.json"
  "$v/bin/python" - "$SMOKE/plugins.json" <<'EOF' || fail "$d: a plugin is BROKEN in its bare venv"
import json, sys
broken = [p for p in json.load(open(sys.argv[1])) if str(p.get("status", "")).upper() == "BROKEN"]
for p in broken:
    print(f"BROKEN {p['name']}: {p.get('error')}", file=sys.stderr)
sys.exit(1 if broken else 0)
EOF
  rm -rf "$v"  # disk: a lane's bare venvs one at a time
}

# two lanes of distributions at once (and the 3.13 stage beside them): each smoke path is one process at a time
# that waits on installs, a Docker build or git; the heaviest two (the core's demos, the lm plugin's torch and
# transformers) in different lanes. Each lane's output is kept in a log and printed in order after all end.
ordered=()
for d in cotk-repro cotk-repro-lm cotk-repro-templates "${dists[@]}"; do
  [[ " ${dists[*]} " == *" $d "* && " ${ordered[*]-} " != *" $d "* ]] && ordered+=("$d")
done
# (errexit holds in the lane's subshell: a failing command ends the lane; a `smoke_dist ... ||` would switch it off)
lane() { local d; for d in "$@"; do smoke_dist "$d"; done; }
lane_a=() lane_b=()
for i in "${!ordered[@]}"; do
  if (( i % 2 == 0 )); then lane_a+=("${ordered[$i]}"); else lane_b+=("${ordered[$i]}"); fi
done
lane "${lane_a[@]}" >"$WORK/lane-a.log" 2>&1 &
lane_a_pid=$!
lane_b_pid=
if [ ${#lane_b[@]} -gt 0 ]; then
  lane "${lane_b[@]}" >"$WORK/lane-b.log" 2>&1 &
  lane_b_pid=$!
fi
lanes_rc=0
wait "$lane_a_pid" || lanes_rc=$?
[ -z "$lane_b_pid" ] || wait "$lane_b_pid" || lanes_rc=$?
cat "$WORK/lane-a.log"
[ -z "$lane_b_pid" ] || cat "$WORK/lane-b.log"
[ "$lanes_rc" -eq 0 ] || fail "a distribution's smoke path failed (its log is above)"

if [ -n "$py313_pid" ]; then
  py313_rc=0
  wait "$py313_pid" || py313_rc=$?
  cat "$WORK/py313.log"
  [ "$py313_rc" -eq 0 ] || fail "the Python 3.13 stage failed (its log is above)"
fi
stage "every distribution passed"
