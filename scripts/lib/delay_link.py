#!/usr/bin/env python3
"""A link with added latency where the kernel has no netem: two TUN devices
and this relay, which forwards every IP packet from one to the other after
DELAY seconds (each way), in order.

    delay_link.py NAME_A NAME_B DELAY_SECONDS READY_FILE

Creates the TUN devices NAME_A and NAME_B in the current network namespace,
writes READY_FILE once they exist (the caller then moves them into the two
hosts' namespaces and gives them addresses; the open descriptors follow the
devices) and relays until killed. A userspace relay caps the rate (a few
hundred MB/s here at a 64 KiB MTU) and is meant for the small messages whose
latency the link is about; the rate-limited link uses tc instead.
"""
import collections
import fcntl
import os
import selectors
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    name_a, name_b, delay, ready = argv[1], argv[2], float(argv[3]), argv[4]
    fds = {"a": open_tun(name_a), "b": open_tun(name_b)}
    other = {"a": "b", "b": "a"}
    queues = {"a": collections.deque(), "b": collections.deque()}  # packets due out of that side
    with open(ready, "w") as f:
        f.write("ready\n")
    selector = selectors.DefaultSelector()
    for side, fd in fds.items():
        selector.register(fd, selectors.EVENT_READ, side)
    while True:
        now = time.monotonic()
        for side, queue in queues.items():
            while queue and queue[0][0] <= now:
                try:
                    os.write(fds[side], queue[0][1])
                except BlockingIOError:
                    break
                except OSError:
                    pass  # a device that is down drops the packet, like a wire
                queue.popleft()
        due = [q[0][0] for q in queues.values() if q]
        timeout = max(0.0, min(due) - time.monotonic()) if due else 1.0
        for key, _ in selector.select(timeout):
            side = key.data
            arrived = time.monotonic() + delay
            for _ in range(64):
                try:
                    packet = os.read(fds[side], 65536)
                except (BlockingIOError, OSError):
                    break
                queues[other[side]].append((arrived, packet))


if __name__ == "__main__":
    main(sys.argv)
