#!/usr/bin/env python3
"""Prints a loopback TCP port that was free a moment ago.

The port is chosen at random below the kernel's ephemeral range
(net.ipv4.ip_local_port_range), never by binding port 0: a port from that
range, released again before the service that needs it binds it, can
meanwhile become the source port of any outgoing connection, and the
service then fails with "address in use".

usage: free-port.py [--offset N]   also requires port+N free (and below the range)
"""
import random
import socket
import sys

LOWEST = 10000


def ephemeral_start():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
        return low if low > LOWEST + 1000 else 32768
    except (OSError, ValueError, IndexError):
        return 32768


def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def main():
    offset = int(sys.argv[2]) if len(sys.argv) == 3 and sys.argv[1] == "--offset" else 0
    highest = ephemeral_start() - 1 - offset
    if highest <= LOWEST:
        sys.exit(f"free-port.py: no room below the ephemeral range for an offset of {offset}")
    for _ in range(10000):
        port = random.randint(LOWEST, highest)
        if free(port) and (offset == 0 or free(port + offset)):
            print(port)
            return
    sys.exit("free-port.py: no free loopback port found")


main()
