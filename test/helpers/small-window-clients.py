# Hostile clients with a small receive window, as across a real network: node:net cannot set SO_RCVBUF, so they live here.
# Usage: small-window-clients.py HOST PORT CONNECTIONS RCVBUF, the bytes to send on each on stdin (read to its end).
# Opens every connection, sends the bytes on each, never reads a byte, prints "ready" and holds them until killed.
# A connection the server closes meanwhile (evicted at its cap) is left closed.
import socket
import sys
import time

host, port, count, rcvbuf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
payload = sys.stdin.buffer.read()
held = []
for _ in range(count):
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Before connect, so the window advertised in the handshake is already the small one.
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
    try:
        client.connect((host, port))
        client.sendall(payload)
    except OSError:
        client.close()
        continue
    held.append(client)
print("ready", flush=True)
while True:
    time.sleep(3600)
