# latencyproxy.py LISTEN_PORT TARGET_PORT DELAY_MS [ANSWERS_FILE]: a TCP
# proxy on 127.0.0.1 that forwards to TARGET_PORT and holds everything
# the target sends back DELAY_MS milliseconds before passing it on, as a
# server in a remote region does: each answer starts DELAY_MS late, one
# round trip per request, and then flows at full speed (the bytes behind
# the first are held the same time, not added up), so a client that keeps
# several requests in flight hides the delay and one that waits for each
# answer pays it every time. Requests go to the target at once.
#
# ANSWERS_FILE, when given, holds the number of answers held so far (a run
# of bytes from the target after bytes from the client), rewritten at each
# one, "0" once the proxy listens: how a script knows the proxy is up and
# that the traffic went through it. Used by scripts/s3-e2e.sh and
# bench/s3.sh with Debian's /usr/bin/python3; stops on SIGTERM.
import os, queue, socket, sys, threading, time

lport, rport, delay = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) / 1000
out = sys.argv[4] if len(sys.argv) > 4 else None
CHUNK = 256 << 10
HELD = 64  # chunks held per connection (16 MiB): the target waits beyond that
answers = [0]
lock = threading.Lock()


def count_answer(n=1):
    with lock:
        answers[0] += n
        if out:
            with open(out + ".tmp", "w") as f:
                f.write(str(answers[0]))
            # a reader sees the old count or the new one, never an empty file
            os.replace(out + ".tmp", out)


def close(*socks):
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


class Conn:
    def __init__(self, client, target):
        self.client, self.target = client, target
        self.asked = False  # the client has sent bytes the target has not answered yet
        self.held = queue.Queue(HELD)

    def up(self):
        # client -> target, at once
        try:
            while True:
                d = self.client.recv(CHUNK)
                if not d:
                    self.target.shutdown(socket.SHUT_WR)
                    return
                self.asked = True
                self.target.sendall(d)
        except OSError:
            close(self.client, self.target)

    def down_read(self):
        # target -> the hold, each chunk stamped with when it may leave
        try:
            while True:
                d = self.target.recv(CHUNK)
                if d and self.asked:
                    self.asked = False
                    count_answer()
                self.held.put((time.monotonic() + delay, d))
                if not d:
                    return
        except OSError:
            self.held.put((time.monotonic() + delay, b""))

    def down_write(self):
        # the hold -> client, each chunk when its time comes
        try:
            while True:
                due, d = self.held.get()
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if not d:
                    self.client.shutdown(socket.SHUT_WR)
                    break
                self.client.sendall(d)
        except OSError:
            pass
        close(self.client, self.target)


def serve(client):
    try:
        target = socket.create_connection(("127.0.0.1", rport))
    except OSError:
        close(client)
        return
    for s in (client, target):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c = Conn(client, target)
    for f in (c.up, c.down_read, c.down_write):
        threading.Thread(target=f, daemon=True).start()


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", lport))
srv.listen(512)
count_answer(0)  # "0": listening
while True:
    c, _ = srv.accept()
    serve(c)
