# Sourced by the package tests: `check NAME CMD...` runs CMD, prints "ok - NAME" or
# "not ok - NAME" and counts it in $passed / $failed (which the caller reports).
passed=0
failed=0

check() {
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
    echo "ok - $name"
  else
    failed=$((failed + 1))
    echo "not ok - $name"
  fi
}
