# byteproxy.py LISTEN_PORT TARGET_PORT COUNT_FILE: a TCP proxy on
# 127.0.0.1 that forwards to TARGET_PORT and keeps in COUNT_FILE the bytes
# the target has sent back (headers included): how much of an object a
# command really transfers. Used by scripts/s3-e2e.sh and bench/s3.sh.
import socket, sys, threading
lport, rport, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
total = [0]
lock = threading.Lock()
def pipe(a, b, count):
    try:
        while True:
            d = a.recv(65536)
            if not d: break
            if count:
                with lock:
                    total[0] += len(d)
                    open(out, "w").write(str(total[0]))
            b.sendall(d)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", lport)); srv.listen(16)
open(out, "w").write("0")
while True:
    c, _ = srv.accept()
    s = socket.create_connection(("127.0.0.1", rport))
    threading.Thread(target=pipe, args=(c, s, False), daemon=True).start()
    threading.Thread(target=pipe, args=(s, c, True), daemon=True).start()
