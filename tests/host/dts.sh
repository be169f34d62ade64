#!/usr/bin/env bash
# The board device trees (dts/): every .dts compiles with dtc (-I dts -O dtb, dtc's default
# checks) without a warning; the example board's forth,unimem-fabric node has what the binding
# (dts/bindings/forth,unimem-fabric.yaml) requires, and its sizes are the layout the GAS
# descriptor of its window has (`unimem-gas descriptor`), so the driver would accept it; a broken
# copy is warned about (the check can fail). One PASS/FAIL line per check (scripts/test.sh counts
# them); exits 1 if any failed. Installs dtc (device-tree-compiler) if it is missing.
source "$(dirname "$0")/../../scripts/lib/common.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failed=0
pass() { echo "PASS dts: $1"; }
fail() { echo "FAIL dts: $1"; failed=$((failed + 1)); }
command -v dtc >/dev/null || apt_install device-tree-compiler

dts=$UNIMEM_ROOT/dts
shopt -s nullglob
boards=("$dts"/*.dts)
[ ${#boards[@]} -gt 0 ] && pass "${#boards[@]} board device tree(s) in dts/" || fail "no .dts in dts/"
for f in "${boards[@]}"; do
  name=$(basename "$f" .dts)
  if dtc -I dts -O dtb -o "$tmp/$name.dtb" "$f" 2>"$tmp/$name.err"; then
    if [ -s "$tmp/$name.err" ]; then fail "$name.dts: dtc warns"; cat "$tmp/$name.err"
    else pass "$name.dts compiles without a warning"; fi
  else
    fail "$name.dts does not compile"; cat "$tmp/$name.err"
  fi
done

ex=$tmp/unimem-board-example.dtb
if [ -f "$ex" ]; then
  dtc -I dtb -O dts -o "$tmp/example.dts" "$ex" 2>/dev/null
  node=$(sed -n '/^\tunimem@/,/^\t};/p' "$tmp/example.dts")
  # prop NAME: the value of property NAME of the fabric node, as dtc prints it.
  prop() { sed -n "s/^\t\t$1 = \(.*\);$/\1/p" <<<"$node"; }
  [ "$(prop compatible)" = '"forth,unimem-fabric"' ] && pass "example: a forth,unimem-fabric node" ||
    fail "example: no forth,unimem-fabric node"
  [ "$(prop reg-names)" = '"doorbell\0gas"' ] && pass "example: reg-names doorbell, gas" ||
    fail "example: reg-names is '$(prop reg-names)'"
  read -r -a reg <<<"$(prop reg | tr -d '<>')"
  [ ${#reg[@]} = 8 ] && pass "example: two reg entries of 2+2 cells" || fail "example: reg is '$(prop reg)'"
  [ -n "$(prop forth,node-id)" ] && pass "example: forth,node-id" || fail "example: no forth,node-id"
  ints=$(prop interrupts | tr -d '<>' | wc -w)
  [ "$ints" -ge 3 ] && [ $((ints % 3)) = 0 ] && pass "example: $((ints / 3)) doorbell interrupts" ||
    fail "example: interrupts is '$(prop interrupts)'"
  # The window size and the optional sizes against the layout of a descriptor for that window.
  cells() { local v=0 c; for c in $(tr -d '<>' <<<"$1"); do v=$(( (v << 32) + c )); done; echo $v; }
  size=$(cells "${reg[6]} ${reg[7]}") count=$(cells "$(prop forth,node-count)")
  ctl=$(cells "$(prop forth,ctl-size)") part=$(cells "$(prop forth,partition-size)")
  if cargo build -q --release -p unimem-gas 2>"$tmp/cargo.err" &&
     out=$("$UNIMEM_ROOT/target/release/unimem-gas" descriptor --nodes "$count" --region-size "$size" \
       --ctl-size "$ctl" --out "$tmp/desc.bin" 2>&1); then
    if grep -q "node_count $count .* ctl_size $ctl partition_size $part " <<<"$out"; then
      pass "example: node count, ctl-size and partition-size are the descriptor's layout of its window"
    else fail "example: sizes (count $count, ctl $ctl, partition $part) are not the layout: $out"; fi
  else
    fail "example: no descriptor for its window: ${out:-$(tail -5 "$tmp/cargo.err")}"
  fi

  # A node with reg but no unit address: dtc must warn, and this test would fail on it.
  sed 's/^\tunimem@a0000000 {/\tunimem {/' "$tmp/example.dts" >"$tmp/broken.dts"
  if dtc -I dts -O dtb -o /dev/null "$tmp/broken.dts" 2>&1 | grep -q 'Warning (unit_address_vs_reg)'; then
    pass "negative: a node with reg and no unit address is warned about"
  else fail "negative: dtc did not warn about a node with reg and no unit address"; fi
fi
exit $((failed > 0))
