#!/bin/busybox sh
# The init of mkvm.sh's guest: network by QEMU's user-mode stack (the host
# is 10.0.2.2), the guest's wall clock on the console, then workerd, set
# up by the BINDERY_* variables the kernel command line gave init.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
for m in $(cat /etc/modules); do
  insmod "/lib/modules/$m" || echo "bindery-vm: insmod $m failed"
done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
echo "bindery-vm: network up"
# The clock the guest's kernel read from its RTC (QEMU -rtc base=...):
# the test checks that it is as far off as it asked.
echo "bindery-vm: clock $(date +%s)"
export BINDERY_STATE_DIR=/srv/state BINDERY_LIBRARY_ROOT=/srv/library
/bin/workerd run
echo "bindery-vm: workerd exited $?"
poweroff -f
