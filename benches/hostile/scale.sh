#!/usr/bin/env bash
# Growth of a tick on hostile trees: instructions (callgrind) of one tick
# of each shape at N and 2N nodes, and their ratio (linear is about 2).
#
#   benches/hostile/scale.sh AIDO [N...]    (default N: 16000 32000 64000)
#
# AIDO is an `aido` binary (target/release/aido). Each shape is written to
# a temporary directory as a tree (plus a db or inputs); a tick's cost is
# `aido run --ticks k` less `--ticks k-1` (reading, compiling and printing
# are linear in N and cancel out but for the printing of one more db).
set -euo pipefail
aido=${1:?usage: scale.sh AIDO [N...]}
shift
sizes=("${@:-16000 32000 64000}")
read -r -a sizes <<<"${sizes[*]}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# n copies of a form, one a line.
times() { local i; for ((i = 0; i < $1; i++)); do printf '%s\n' "$2"; done; }

# n waits started once :stop is set, beside n selectors whose first child
# is FIRST and whose second is a wait.
started_then_selectors() {
  echo '[:parallel {:policy :sequence}'
  echo '[:sequence [:present? {:key :stop}] [:parallel {:policy :sequence}'
  times "$1" '[:wait {:ticks 5}]'; echo ']]'
  times "$1" "[:selector $2 [:wait {:ticks 5}]]"; echo ']'
}

# shape NAME N: writes $dir/NAME.edn (and NAME.inputs.edn) and prints the
# tick to measure (the k of `--ticks k` less `--ticks k-1`).
shape() {
  local name=$1 n=$2 f=$dir/$1.edn
  case $name in
  end-loop) # n one-tick waits started and ended in every tick
    { echo '[:loop {:count 2} [:parallel {:mode :success :how-many 1}'
      times "$n" '[:wait {:ticks 1}]'; echo ']]'; } >"$f"; echo 2 ;;
  end-all) # n waits started in tick 1, all ending in tick 2
    { echo '[:parallel {:policy :sequence}'; times "$n" '[:wait {:ticks 1}]'; echo ']'; } >"$f"; echo 2 ;;
  start-all) # one wait in tick 1, n waits started in tick 2
    { echo '[:sequence [:wait {:ticks 1}] [:parallel {:policy :sequence}'
      times "$n" '[:wait {:ticks 5}]'; echo ']]'; } >"$f"; echo 2 ;;
  halt-all) # n waits halted at once (one subtree) in tick 2
    { echo '[:selector [:present? {:key :stop}] [:parallel {:policy :sequence}'
      times "$n" '[:wait {:ticks 5}]'; echo ']]'; } >"$f"
    echo '[nil {:stop true}]' >"$dir/$name.inputs.edn"; echo 2 ;;
  halt-each) # n selectors each halting its own wait in tick 2
    { echo '[:parallel {:policy :sequence}'
      times "$n" '[:selector [:present? {:key :stop}] [:wait {:ticks 5}]]'; echo ']'; } >"$f"
    echo '[nil {:stop true}]' >"$dir/$name.inputs.edn"; echo 2 ;;
  halt-noted) # tick 2: n waits start, then n selectors each halt its wait
    # (running since tick 1), one subtree each
    started_then_selectors "$n" '[:present? {:key :stop}]' >"$f"
    echo '[nil {:stop true}]' >"$dir/$name.inputs.edn"; echo 2 ;;
  halt-idle) # tick 2: n waits start, then n selectors each pass by an idle wait
    started_then_selectors "$n" '[:success]' >"$f"
    echo '[nil {:stop true}]' >"$dir/$name.inputs.edn"; echo 2 ;;
  continue-all) # n waits running on from tick 2 to 3
    { echo '[:parallel {:policy :sequence}'; times "$n" '[:wait {:ticks 5}]'; echo ']'; } >"$f"; echo 3 ;;
  wide-sequence)
    { echo '[:sequence'; times "$n" '[:success]'; echo ']'; } >"$f"; echo 2 ;;
  wide-selector)
    { echo '[:selector'; times "$n" '[:failure]'; echo ']'; } >"$f"; echo 2 ;;
  *) echo "unknown shape $name" >&2; return 1 ;;
  esac
}

cost() { # NAME K: instructions of `aido run` with K ticks
  local name=$1 k=$2 args=("$dir/$1.edn" --ticks "$2")
  [[ -f $dir/$name.inputs.edn ]] && args+=(--inputs "$dir/$name.inputs.edn")
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$aido" run "${args[@]}" 2>&1 >/dev/null |
    awk '/Collected :/ {print $NF}'
}

shapes=(${SHAPES:-end-loop end-all start-all halt-all halt-each halt-noted halt-idle continue-all wide-sequence wide-selector})
printf '%-14s %8s %16s %6s\n' shape N 'instructions' ratio
for name in "${shapes[@]}"; do
  prev=
  for n in "${sizes[@]}"; do
    k=$(shape "$name" "$n")
    a=$(cost "$name" $((k - 1))); b=$(cost "$name" "$k")
    tick=$((b - a))
    ratio=${prev:+$(awk -v a="$tick" -v b="$prev" 'BEGIN {printf "%.2f", a / b}')}
    printf '%-14s %8d %16d %6s\n' "$name" "$n" "$tick" "${ratio:--}"
    prev=$tick
  done
done
