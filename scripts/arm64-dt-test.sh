#!/usr/bin/env bash
# Device-tree binding of unimem_eusrvmem on arm64 (issue 15), without a QEMU that has
# ivshmem-flat: boots the arm64 kernel under qemu-system-aarch64 -M virt (TCG) with virt's own
# device tree plus a no-map reserved-memory carve-out of guest RAM as the GAS window (a GAS
# descriptor put at its start by QEMU's generic loader, made by `unimem-gas descriptor`), another
# no-map page as the doorbell register block, SPIs nothing raises, and forth,unimem-fabric nodes.
# Boot 1: the driver binds through the device tree, sysfs shows the DT's and the descriptor's
# values, a pattern written into a partition through /dev/eusrvmem reads back, a doorbell lands
# in the register block (read by the host through QEMU's monitor), a second node is refused,
# unbind/bind and rmmod are clean. Boot 2: malformed nodes are each refused with their error and
# nothing stays bound. One PASS/FAIL line per check; exits 1 if any failed. Not in the default
# tests. --sabotage leaves the descriptor out of boot 1, to see the checks fail.
# Usage: scripts/arm64-dt-test.sh [--sabotage] [--help]. Output: build/arm64-dt/ (consoles).
source "$(dirname "$0")/lib/common.sh"
export UNIMEM_ARCH=arm64
sabotage=false
for a in "$@"; do
  case $a in
    -h|--help) sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --sabotage) sabotage=true ;;
    *) die "unknown argument $a (see --help)" ;;
  esac
done

command -v dtc >/dev/null || apt_install device-tree-compiler
# The kernel, modules and arm64 user space (unimem-gas for the guest), toolchains included.
"$UNIMEM_ROOT/scripts/build-arm64.sh"
work=$UNIMEM_BUILD/arm64-dt
rm -rf "$work"; mkdir -p "$work"
kdir=$("$UNIMEM_ROOT/scripts/build-kernel.sh")
# The host's unimem-gas writes the descriptor.
cargo build --release -p unimem-gas >>"$work/userspace.log" 2>&1 ||
  { tail -30 "$work/userspace.log" >&2; die "host unimem-gas build failed"; }
gas_arm64=$(userspace_bin)/unimem-gas
gas_host=$UNIMEM_ROOT/target/release/unimem-gas

# Guest physical layout (virt's RAM starts at 0x40000000; 512 MiB): the GAS window and the
# doorbell pages are carved out of the upper half, away from the kernel, initrd and DTB.
MEM=512
GAS=0x50000000 GAS_SIZE=$((64 << 20)) MBOX=0x54000000
NODES=4 VECTORS=4 CTL=$((2 << 20))
"$gas_host" descriptor --nodes $NODES --vectors $VECTORS --region-size $GAS_SIZE --ctl-size $CTL \
  --generation 24301 --out "$work/desc.bin" >"$work/desc.txt" 2>&1 || { cat "$work/desc.txt" >&2; die "no descriptor"; }
PART=$(sed -n 's/.*partition_size \([0-9]*\).*/\1/p' "$work/desc.txt")
[ -n "$PART" ] || die "no partition size in: $(cat "$work/desc.txt")"
hex() { printf '0x%x' "$1"; }
# doorbell page N of the carve-out.
page() { hex $((MBOX + $1 * 0x1000)); }

machine=(-M "virt,gic-version=3" -cpu max -smp 1 -m "$MEM")
qemu-system-aarch64 "${machine[@]}" -machine dumpdtb="$work/virt.dtb" -display none >/dev/null 2>&1 ||
  die "qemu-system-aarch64 could not dump virt's device tree"
dtc -q -I dtb -O dts -o "$work/virt.dts" "$work/virt.dtb"

# node NAME PAGE [PROPERTY LINES...]: a forth,unimem-fabric node on doorbell page PAGE, four SPIs
# of its own; the properties are the given lines (defaults: the whole good node).
node() {
  local name=$1 p=$2; shift 2
  local spi=$((200 + 4 * p))
  echo "	/* $name */"
  echo "	unimem@$(printf %x $((MBOX + p * 0x1000))) {"
  echo '		compatible = "forth,unimem-fabric";'
  if [ $# = 0 ]; then
    set -- "reg = <0x0 $(page "$p") 0x0 0x1000>, <0x0 $GAS 0x0 $(hex $GAS_SIZE)>;" \
      'reg-names = "doorbell", "gas";' \
      "interrupts = <0 $spi 1>, <0 $((spi + 1)) 1>, <0 $((spi + 2)) 1>, <0 $((spi + 3)) 1>;" \
      'forth,node-id = <1>;' "forth,node-count = <$NODES>;" \
      "forth,ctl-size = /bits/ 64 <$(hex $CTL)>;" "forth,partition-size = /bits/ 64 <$(hex "$PART")>;"
  fi
  printf '\t\t%s\n' "$@"
  echo "	};"
}
# good PAGE, with one property line replaced (sed expression) or removed.
variant() { node "$1" "$2" | sed -e "$3"; }
tree() {
  cat "$work/virt.dts"
  cat <<EOF
/ {
	reserved-memory {
		#address-cells = <2>;
		#size-cells = <2>;
		ranges;
		gas@${GAS#0x} { reg = <0x0 $GAS 0x0 $(hex $GAS_SIZE)>; no-map; };
		doorbells@${MBOX#0x} { reg = <0x0 $MBOX 0x0 0x10000>; no-map; };
	};
EOF
  cat
  echo "};"
}
# Boot 1: the node, and a second valid one (same window) that must be refused while it is bound.
{ node good 0; node second 1; } | tree >"$work/good.dts"
# Boot 2: one defect each.
{
  variant no-node-id 1 '/forth,node-id/d'
  variant small-window 2 "s|<0x0 $GAS 0x0 $(hex $GAS_SIZE)>|<0x0 $GAS 0x0 $(hex $((GAS_SIZE / 2)))>|"
  variant no-descriptor 3 "s|<0x0 $GAS 0x0 $(hex $GAS_SIZE)>|<0x0 $(hex $((GAS + 0x100000))) 0x0 $(hex $((GAS_SIZE / 2)))>|"
  variant node-id-out-of-range 4 "s|forth,node-id = <1>|forth,node-id = <$NODES>|"
  variant partition-size-mismatch 5 "s|partition-size = /bits/ 64 <[^>]*>|partition-size = /bits/ 64 <$(hex $((PART * 2)))>|"
  variant no-interrupts 6 '/interrupts = /d'
  variant small-doorbell 7 's|0x0 0x1000>, <|0x0 0x8>, <|'
  variant no-reg-names 8 '/reg-names/d'
  variant malformed-node-count 9 "s|forth,node-count = <$NODES>|forth,node-count = /bits/ 64 <$NODES>|"
  variant ctl-size-one-cell 10 "s|forth,ctl-size = /bits/ 64 <\\([^>]*\\)>|forth,ctl-size = <\\1>|"
} | tree >"$work/bad.dts"
for t in good bad; do
  dtc -q -I dts -O dtb -o "$work/$t.dtb" "$work/$t.dts" || die "dtc failed on $work/$t.dts"
done

# The initramfs: the step runner, the module, unimem-gas and its arm64 libraries.
root=$work/root
mkdir -p "$root/proc" "$root/sys" "$root/dev" "$root/bin" "$root/lib"
aarch64-linux-gnu-gcc -static -O2 -Wall -Wextra -Werror -o "$root/init" "$UNIMEM_ROOT/tests/arm64/dt-init.c"
cp "$(modules_out)/eusrvmem/unimem_eusrvmem.ko" "$root/"
cp "$gas_arm64" "$root/bin/"
for lib in $(aarch64-linux-gnu-readelf -d "$gas_arm64" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
  src=$(find /usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu /usr/aarch64-linux-gnu/lib -maxdepth 1 -name "$lib" 2>/dev/null | head -1)
  [ -n "$src" ] || die "no arm64 $lib for unimem-gas"
  cp -L "$src" "$root/lib/$lib"
done
ln -s lib "$root/lib64"
mknod "$root/dev/console" c 5 1

DEV=/sys/bus/platform/devices DRV=/sys/bus/platform/drivers/unimem_eusrvmem SYS=/sys/class/misc/eusrvmem
dev() { printf '%x.unimem' $((MBOX + $1 * 0x1000)); }
G="/bin/unimem-gas"
R="--len 1048576"
cat >"$work/good.steps" <<EOF
load /unimem_eusrvmem.ko
driver $DEV/$(dev 0)
driver $DEV/$(dev 1)
cat $SYS/node_id
cat $SYS/node_count
cat $SYS/partition_size
cat $SYS/ctl_size
cat $SYS/gas_size
cat $SYS/gas_phys
cat $SYS/vectors
cat $SYS/generation
cat $SYS/doorbell_counts
count /proc/interrupts unimem_doorbell
count /proc/iomem $(hex $MBOX | cut -c3-)-
exists /dev/eusrvmem
run $G info
run $G write --node 2 $R --seed 7
run $G verify --node 2 $R --seed 7
run $G verify --node 2 $R --seed 8
run $G verify --node 3 $R --seed 7
run $G ring --node 2 --vector 3
run $G ring --node $NODES --vector 0
write $DRV/unbind $(dev 0)
exists /dev/eusrvmem
count /proc/interrupts unimem_doorbell
count /proc/iomem $(hex $MBOX | cut -c3-)-
write $DRV/bind $(dev 1)
driver $DEV/$(dev 1)
run $G verify --node 2 $R --seed 7
run $G ring --node 3 --vector 1
write $DRV/unbind $(dev 1)
write $DRV/bind $(dev 0)
driver $DEV/$(dev 0)
unload unimem_eusrvmem
exists /dev/eusrvmem
exists $DRV
count /proc/interrupts unimem_doorbell
EOF
{
  echo "load /unimem_eusrvmem.ko"
  for p in 1 2 3 4 5 6 7 8 9 10; do echo "driver $DEV/$(dev "$p")"; done
  echo "exists /dev/eusrvmem"
  echo "exists $SYS"
  echo "count /proc/interrupts unimem_doorbell"
  echo "unload unimem_eusrvmem"
} >"$work/bad.steps"

# boot NAME [ADDRESS...]: boots with NAME.dtb and NAME.steps; after the guest powered off,
# reads the 32-bit words at the guest physical ADDRESSes through QEMU's monitor
# ("xp ADDRESS: VALUE" lines in NAME.xp).
boot() {
  local name=$1 cpio=$work/$1.cpio.gz loader=()
  shift
  cp "$work/$name.steps" "$root/steps"
  (cd "$root" && find . | cpio -o -H newc --quiet) | gzip >"$cpio"
  if [ "$name" != good ] || ! "$sabotage"; then
    loader=(-device "loader,file=$work/desc.bin,addr=$GAS,force-raw=on")
  fi
  log "arm64 device-tree test: boot '$name' (console: $work/$name.console)"
  rm -f "$work/$name.mon"
  timeout "${UNIMEM_ARM64_BOOT_TIMEOUT:-600}" qemu-system-aarch64 "${machine[@]}" -display none \
    -no-reboot -no-shutdown -serial "file:$work/$name.console" \
    -monitor "unix:$work/$name.mon,server=on,wait=off" -dtb "$work/$name.dtb" "${loader[@]}" \
    -kernel "$kdir/$(kernel_image_path)" -initrd "$cpio" \
    -append "console=ttyAMA0 rdinit=/init panic=-1 loglevel=1" &
  local qemu=$!
  python3 - "$work/$name.mon" "${UNIMEM_ARM64_BOOT_TIMEOUT:-600}" "$qemu" "$@" >"$work/$name.xp" 2>"$work/$name.monitor.log" <<'PY' || true
import os, re, socket, sys, time
path, limit, qemu, addrs = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4:]
deadline = time.time() + limit

def alive():
    try:
        with open("/proc/%s/stat" % qemu) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False

def cmd(s, c):
    """Sends c (if any); returns what the monitor answered up to its prompt (or a pause)."""
    if c:
        s.sendall(c.encode() + b"\n")
    out = b""
    while not out.endswith(b"(qemu) ") and time.time() < deadline:
        try:
            d = s.recv(4096)
        except socket.timeout:
            if not out:
                raise TimeoutError("no answer to %r" % c)
            break
        if not d:
            raise ConnectionError("monitor closed")
        out += d
    sys.stderr.write("%.1f %r -> %r\n" % (time.time(), c, out[-120:]))
    return out.decode(errors="replace")

# Waits for the guest to power off (-no-shutdown keeps QEMU), reads the words, quits QEMU.
# A connection that fails is made again while QEMU runs.
while time.time() < deadline and alive():
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(2)
            s.connect(path)
            cmd(s, "")
            while "VM status: paused (shutdown)" not in cmd(s, "info status"):
                if time.time() > deadline:
                    raise TimeoutError("the guest did not power off")
                time.sleep(0.5)
            for a in addrs:
                m = re.search(r"[0-9a-f]+: (0x[0-9a-f]+)", cmd(s, "xp /1wx " + a))
                print("xp %s: %s" % (a, m.group(1) if m else "?"))
            # Closing right after "quit" can lose it: read until QEMU closes the connection.
            s.sendall(b"quit\n")
            s.settimeout(10)
            try:
                while s.recv(4096):
                    pass
            except OSError:
                pass
            break
    except (OSError, ConnectionError) as e:
        sys.stderr.write("%.1f monitor: %s\n" % (time.time(), e))
        time.sleep(0.2)
PY
  # QEMU quits when told to; if the monitor never answered, it is stopped here.
  for _ in $(seq 50); do kill -0 "$qemu" 2>/dev/null || break; sleep 0.2; done
  kill "$qemu" 2>/dev/null || true
  wait "$qemu" || true
  tr -d '\r' <"$work/$name.console" >"$work/$name.log"
}

fails=0
pass() { echo "PASS arm64-dt: $1"; }
fail() { echo "FAIL arm64-dt: $1"; fails=$((fails + 1)); }
# expect NAME LINE WHAT: the console of boot NAME has the line "dt-test: LINE" after the line the
# previous expect of that boot found (checks follow the steps in order).
declare -A at=()
expect() {
  local n
  n=$(awk -v from="${at[$1]:-0}" -v want="dt-test: $2" 'NR > from && $0 == want {print NR; exit}' "$work/$1.log")
  if [ -n "$n" ]; then at[$1]=$n; pass "$3"; else
    fail "$3: no 'dt-test: $2' (got: $(awk -v from="${at[$1]:-0}" -v want="dt-test: ${2%%: *}:" \
      'NR > from && index($0, want) == 1 {print; exit}' "$work/$1.log"))"
  fi
}
# kmsg NAME DEVICE TEXT WHAT: the kernel log of boot NAME has a message of DEVICE containing TEXT.
kmsg() {
  if grep -F "dt-test: kmsg: unimem_eusrvmem $2: " "$work/$1.log" | grep -qF -- "$3"; then pass "$4"; else
    fail "$4: no kernel message '$3' from $2"
  fi
}
clean() {
  if grep -Eq 'Oops|BUG:|WARNING:|Kernel panic|Call trace|refcount_t|nonexistent resource' "$work/$1.log"; then
    fail "$1: the kernel reported a problem (see $work/$1.log)"
    grep -E -A5 'Oops|BUG:|WARNING:|Kernel panic|Call trace|refcount_t|nonexistent resource' "$work/$1.log" | head -30 >&2
  else pass "$1: no oops, BUG or WARNING in the kernel log"; fi
  expect "$1" "done" "$1: the guest ran every step and powered off"
}

db0=$(hex $((MBOX + 0xc))) db1=$(hex $((MBOX + 0x1000 + 0xc)))
boot good "$db0" "$db1"
expect good 'load unimem_eusrvmem: ok' "good: module loads"
kmsg good "$(dev 0)" "bound through the device tree: node 1 of $NODES: GAS $GAS+$(hex $GAS_SIZE)" \
  "good: bound through the device tree (dmesg)"
kmsg good "$(dev 1)" "another fabric device is already bound" "good: a second fabric node is refused with a clear error"
expect good "driver $DEV/$(dev 0): unimem_eusrvmem" "good: the node is bound to unimem_eusrvmem"
expect good "driver $DEV/$(dev 1): none" "good: the second node is not bound"
expect good "cat $SYS/node_id: 1" "good: node_id is the DT's forth,node-id"
expect good "cat $SYS/node_count: $NODES" "good: node_count from the descriptor"
expect good "cat $SYS/partition_size: $PART" "good: partition_size from the descriptor"
expect good "cat $SYS/ctl_size: $CTL" "good: ctl_size from the descriptor"
expect good "cat $SYS/gas_size: $GAS_SIZE" "good: gas_size is the DT's window"
expect good "cat $SYS/gas_phys: $GAS" "good: gas_phys is the DT's window"
expect good "cat $SYS/vectors: $VECTORS" "good: one doorbell per DT interrupt"
expect good "cat $SYS/generation: 0x5eed" "good: the descriptor's generation"
expect good "cat $SYS/doorbell_counts: 0 0 0 0" "good: no doorbell interrupt (nothing raises the SPIs)"
expect good "count /proc/interrupts unimem_doorbell: $VECTORS" "good: one IRQ per doorbell"
expect good "count /proc/iomem $(hex $MBOX | cut -c3-)-: 1" "good: the doorbell block is claimed in /proc/iomem"
expect good "exists /dev/eusrvmem: yes" "good: /dev/eusrvmem exists"
expect good "run $G info: exit 0" "good: unimem-gas info"
expect good "run $G write --node 2 $R --seed 7: exit 0" "good: pattern written into node 2's partition"
expect good "run $G verify --node 2 $R --seed 7: exit 0" "good: the pattern reads back"
expect good "run $G verify --node 2 $R --seed 8: exit 1" "good: negative: another seed does not verify"
expect good "run $G verify --node 3 $R --seed 7: exit 1" "good: negative: node 3's partition does not have it"
expect good "run $G ring --node 2 --vector 3: exit 0" "good: ring node 2 vector 3"
expect good "run $G ring --node $NODES --vector 0: exit 1" "good: negative: ringing node $NODES (no such node) fails"
expect good "write $DRV/unbind $(dev 0): ok" "good: unbind"
expect good "exists /dev/eusrvmem: no" "good: /dev/eusrvmem gone at unbind"
expect good "count /proc/interrupts unimem_doorbell: 0" "good: IRQs freed at unbind"
expect good "count /proc/iomem $(hex $MBOX | cut -c3-)-: 0" "good: the doorbell block is released at unbind"
expect good "write $DRV/bind $(dev 1): ok" "good: the second node binds once the first is unbound"
expect good "driver $DEV/$(dev 1): unimem_eusrvmem" "good: the second node is bound"
expect good "run $G verify --node 2 $R --seed 7: exit 0" "good: the pattern is still in the window"
expect good "run $G ring --node 3 --vector 1: exit 0" "good: ring node 3 vector 1 through the second node"
expect good "write $DRV/bind $(dev 0): ok" "good: the first node binds again (its doorbell block was released)"
expect good "driver $DEV/$(dev 0): unimem_eusrvmem" "good: the first node is bound again"
expect good 'unload unimem_eusrvmem: ok' "good: rmmod"
expect good "exists /dev/eusrvmem: no" "good: /dev/eusrvmem gone at rmmod"
expect good "exists $DRV: no" "good: the platform driver is unregistered"
expect good "count /proc/interrupts unimem_doorbell: 0" "good: IRQs freed at rmmod"
clean good
# The doorbell register block is guest RAM here: the host reads what the driver wrote there.
if grep -qxF "xp $db0: 0x00020003" "$work/good.xp"; then
  pass "good: ring wrote (2 << 16) | 3 to the first node's DOORBELL register"
else fail "good: first node's DOORBELL register: $(head -1 "$work/good.xp")"; fi
if grep -qxF "xp $db1: 0x00030001" "$work/good.xp"; then
  pass "good: ring wrote (3 << 16) | 1 to the second node's DOORBELL register"
else fail "good: second node's DOORBELL register: $(tail -1 "$work/good.xp")"; fi

boot bad
expect bad 'load unimem_eusrvmem: ok' "bad: module loads (no node binds)"
bad_case() {
  kmsg bad "$(dev "$1")" "$3" "bad: $2 refused: $3"
  expect bad "driver $DEV/$(dev "$1"): none" "bad: $2 left unbound"
}
bad_case 1 no-node-id "property 'forth,node-id' (this node's id) is missing"
bad_case 2 small-window "is smaller than the descriptor's region ($(hex $GAS_SIZE) bytes)"
bad_case 3 no-descriptor "no valid GAS descriptor at the start of the region: BadMagic"
bad_case 4 node-id-out-of-range "forth,node-id $NODES is not a node of the GAS descriptor ($NODES nodes)"
bad_case 5 partition-size-mismatch "forth,partition-size is $(hex $((PART * 2))) in the device tree but $(hex "$PART") in the GAS descriptor"
bad_case 6 no-interrupts "no doorbell interrupts in the device tree"
bad_case 7 small-doorbell "cannot claim and map the doorbell registers (at least 16 bytes)"
bad_case 8 no-reg-names "no 'gas' entry in reg (reg-names)"
bad_case 9 malformed-node-count "property 'forth,node-count' is malformed: it must be one 32-bit value"
bad_case 10 ctl-size-one-cell "property 'forth,ctl-size' is malformed: it must be one 64-bit value"
expect bad "exists /dev/eusrvmem: no" "bad: no /dev/eusrvmem"
expect bad "exists $SYS: no" "bad: no sysfs directory"
expect bad "count /proc/interrupts unimem_doorbell: 0" "bad: no IRQ left requested"
expect bad 'unload unimem_eusrvmem: ok' "bad: rmmod"
clean bad

if [ "$fails" = 0 ]; then log "arm64 device-tree test passed"; else
  log "arm64 device-tree test: $fails checks failed (consoles: $work/good.log, $work/bad.log)"; fi
[ "$fails" = 0 ]
